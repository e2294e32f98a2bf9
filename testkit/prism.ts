import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import path from "node:path";
import { freePort } from "./net.ts";
import { until } from "./until.ts";

const PRISM_CLI = path.join(path.dirname(createRequire(import.meta.url).resolve("@stoplight/prism-cli/package.json")), "dist/index.js");

/** One finding of Prism's validator, from the `sl-violations` header of a proxied response. */
export interface Violation {
  location: string[];
  severity: string;
  code?: string | number;
  message: string;
}

export interface PrismProxy {
  /** Prism's address: the document's paths are served at its root (the description's `/v1` server is the upstream's). */
  url: string;
  stop(): Promise<void>;
}

/**
 * Stoplight Prism in validating-proxy mode in front of `upstream` (the gateway's /v1 base): every
 * request is forwarded unchanged, and Prism reports where the request or the response breaks the
 * description in the response's `sl-violations` header (`--errors false`: reported, never replaced).
 */
export async function startPrismProxy(document: string, upstream: string): Promise<PrismProxy> {
  const port = await freePort();
  const child = spawn(process.execPath, [PRISM_CLI, "proxy", document, upstream, "--host", "127.0.0.1", "--port", String(port), "--errors", "false"], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const url = `http://127.0.0.1:${port}`;
  try {
    await until(
      "prism listens",
      async () => {
        if (child.exitCode !== null) throw new Error(`prism exited (${child.exitCode}): ${stderr}`);
        return fetch(url).then(
          () => true,
          () => false,
        );
      },
      60_000,
      200,
    );
  } catch (err) {
    child.kill("SIGKILL");
    throw err;
  }
  return {
    url,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}

/** The violations Prism reported for one proxied exchange (none: []). */
export function violationsOf(res: Response): Violation[] {
  const header = res.headers.get("sl-violations");
  return header ? (JSON.parse(header) as Violation[]) : [];
}
