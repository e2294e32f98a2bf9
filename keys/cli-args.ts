import { parseArgs, type ParseArgsOptionsConfig } from "node:util";
import { PLAN_NAMES, type PlanName } from "../lib/api-key-format.ts";
import { StorageUnavailableError } from "../lib/storage-faults.ts";
import { KeysError, UsageError } from "./errors.ts";
import { KeyConflictError, KeyNotFoundError, KeyValidationError } from "./operations/errors.ts";

/**
 * The command line's side of `npm run keys` (tools/keys.ts): its arguments, and what the
 * operations and the registry throw as it reports them (UsageError: exit 2; KeysError: exit 1).
 */

/** Parses one command's arguments; anything unexpected is a UsageError. */
export function parse(args: string[], options: ParseArgsOptionsConfig, positionals: string[]) {
  let parsed;
  // No option of this CLI is a single-dash one, so "-W3x…" is an argument: a kid (a JWK
  // thumbprint in base64url) may start with "-".
  const dashed = args.filter((a) => /^-[^-]/.test(a));
  try {
    parsed = parseArgs({ args: [...args.filter((a) => !dashed.includes(a)), "--", ...dashed], options, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message.split(". To specify")[0]!);
  }
  if (parsed.positionals.length !== positionals.length) {
    const expected = positionals.length ? positionals.join(" ") : "no arguments";
    throw new UsageError(`expected ${expected}; got ${JSON.stringify(parsed.positionals.join(" "))}`);
  }
  return { values: parsed.values as Record<string, string | boolean | undefined>, positionals: parsed.positionals };
}

export function positiveInt(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (!/^[1-9][0-9]{0,14}$/.test(text)) throw new UsageError(`${flag} must be a positive integer; got ${JSON.stringify(text)}`);
  return Number(text);
}

export function plan(text: string | undefined): PlanName {
  if (!(PLAN_NAMES as readonly (string | undefined)[]).includes(text)) {
    throw new UsageError(`--plan must be one of ${PLAN_NAMES.join(", ")}; got ${JSON.stringify(text ?? null)}`);
  }
  return text as PlanName;
}

/** The command line's flag for each field the operations name. */
const FLAGS: Readonly<Record<string, string>> = {
  plan: "--plan",
  perMinute: "--per-minute",
  perDay: "--per-day",
  expiresAt: "--expires-in",
  name: "--name",
  graceSeconds: "--grace",
};

/** An error the operations or the registry threw, as the command line reports it. */
export function cliError(err: unknown): unknown {
  if (err instanceof KeyValidationError) return new UsageError(err.details.map((d) => `${FLAGS[d.field] ?? d.field} ${d.message}`).join("; "));
  if (err instanceof KeyNotFoundError || err instanceof KeyConflictError) return new KeysError(err.message);
  if (err instanceof StorageUnavailableError) return new KeysError(`the key registry (KEYS_DB) cannot be used now (${err.fault}); try again`);
  return err;
}
