import { z } from "zod";
import { withoutPasswords } from "./redact-url.ts";

/** A configuration error names the variable; main prints this one line and exits 1. */
export class ConfigError extends Error {
  readonly variable: string;

  constructor(variable: string, detail: string) {
    super(`invalid configuration: ${variable} ${detail}`);
    this.variable = variable;
    this.name = "ConfigError";
  }
}

/**
 * Parses the environment once with a zod object schema whose keys are variable names, and
 * freezes the result. The first offending variable is reported, with its value unless it is one
 * of `secrets`.
 */
export function parseEnv<S extends z.ZodObject>(schema: S, env: NodeJS.ProcessEnv, opts: { secrets?: readonly string[] } = {}): Readonly<z.infer<S>> {
  // Empty strings count as unset, as in most shells' `VAR= cmd`.
  const input = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ""));
  const result = schema.safeParse(input);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const variable = String(issue.path[0] ?? "environment");
    const given = env[variable];
    // A secret's value (an admin token) is never echoed, not even a wrong one.
    const got = given === undefined ? "null" : opts.secrets?.includes(variable) ? "a value, not shown: it is a secret" : JSON.stringify(withoutPasswords(given));
    throw new ConfigError(variable, `${issue.message} (got ${got})`);
  }
  return Object.freeze(result.data);
}

/**
 * For z.preprocess: a variable's text as a number only when it is written in decimal. Number()
 * (z.coerce) reads " " as 0 (GATEWAY_PORT=" " listened on a random port), "0x1f90" as 8080 and
 * "1e3" as 1000; those stay strings, so the number schema refuses them.
 */
export const decimalText = (value: unknown): unknown =>
  typeof value === "string" && /^-?[0-9]+(\.[0-9]+)?$/.test(value) ? Number(value) : value;

/** An integer written in decimal, min..max; each refusal says "must be <what>". */
export const integer = (fallback: number, what: string, min: number, max = Number.MAX_SAFE_INTEGER) =>
  z
    .preprocess(decimalText, z.number({ error: `must be ${what}` }).int(`must be ${what}`).min(min, `must be ${what}`).max(max, `must be ${what}`))
    .default(fallback);

/** A TCP port: an integer 0..65535 (0 picks a free port). */
export const port = (fallback: number) =>
  z
    .preprocess(
      decimalText,
      z.number({ error: "must be a port number" }).int("must be an integer port").min(0, "must be a port 0..65535").max(65535, "must be a port 0..65535"),
    )
    .default(fallback);

/** Runs a main function; a ConfigError becomes one line on stderr and exit code 1. */
export async function runMain(main: () => Promise<void>): Promise<void> {
  try {
    await main();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
}
