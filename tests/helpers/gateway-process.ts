import type { ChildProcess } from "node:child_process";
import { freePort } from "./net.js";
import { launchTsx } from "./process.js";

/** The real gateway process (`node --import tsx gateway/main.ts`), as operators run it. */
export interface GatewayProcess {
  url: string;
  child: ChildProcess;
  /** Everything it wrote on stdout (JSON logs) and stderr so far. */
  output(): string;
  exited: Promise<number | null>;
}

export async function spawnGateway(env: Record<string, string>): Promise<GatewayProcess> {
  const port = await freePort();
  const { child, output, exited } = launchTsx("gateway/main.ts", { GATEWAY_HOST: "127.0.0.1", GATEWAY_PORT: String(port), ...env });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`gateway exited at start: ${output()}`);
    try {
      await fetch(`${url}/healthz`);
      break;
    } catch {
      if (Date.now() > deadline) throw new Error(`gateway did not listen: ${output()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return { url, child, output, exited: exited.then((e) => e.code) };
}
