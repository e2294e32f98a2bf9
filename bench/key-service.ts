import { randomBytes } from "node:crypto";
import path from "node:path";
import type { PlanName } from "../lib/api-key-format.ts";
import type { Scope } from "../lib/key-record.ts";
import { freePort } from "../testkit/net.ts";
import { spawnNode, waitFor, type Proc } from "./processes.ts";

/** The key service as the bench runs it: its own process (`keys/main.ts`), SQLite registry in the run's folder. */
export interface KeyServiceProc {
  proc: Proc;
  url: string;
  /** Its bootstrap admin token (scope admin: the gateways' feed and the bench's own calls). */
  token: string;
  /** What a gateway needs to follow it. */
  gatewayEnv: Record<string, string>;
  /** The KEYS_DIR holding its signing pair. */
  keysDir: string;
}

export async function startKeyServiceProc(opts: { dir: string; name: string; redisUrl?: string; logLevel: string }): Promise<KeyServiceProc> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const token = `pskadm_${randomBytes(32).toString("base64url")}`;
  const keysDir = path.join(opts.dir, `${opts.name}-keys`);
  const proc = spawnNode(
    opts.name,
    "keys/main.ts",
    {
      KEYS_HOST: "127.0.0.1",
      KEYS_PORT: String(port),
      KEYS_DB: path.join(opts.dir, `${opts.name}.sqlite`),
      KEYS_DIR: keysDir,
      KEYS_ADMIN_TOKEN: token,
      LOG_LEVEL: opts.logLevel,
      ...(opts.redisUrl && { REDIS_URL: opts.redisUrl }),
    },
    opts.dir,
  );
  await waitFor(proc, "/readyz 200", async () => (await fetch(`${url}/readyz`)).status === 200);
  return { proc, url, token, keysDir, gatewayEnv: { KEYS_URL: url, KEYS_SERVICE_TOKEN: token } };
}

export interface NewKey {
  plan: PlanName;
  perMinute?: number;
  perDay?: number;
  name: string;
  scopes?: Scope[];
  allowedCidrs?: string[];
}

/** POST /v1/keys: the new key's id and token. */
export async function createKey(service: Pick<KeyServiceProc, "url" | "token">, body: NewKey): Promise<{ id: string; key: string }> {
  const res = await fetch(`${service.url}/v1/keys`, {
    method: "POST",
    headers: { authorization: `Bearer ${service.token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== 201) throw new Error(`POST /v1/keys answered ${res.status}: ${text}`);
  const { id, key } = JSON.parse(text) as { id: string; key: string };
  return { id, key };
}

/** POST /v1/keys/{id}/revoke. */
export async function revokeKey(service: Pick<KeyServiceProc, "url" | "token">, id: string): Promise<void> {
  const res = await fetch(`${service.url}/v1/keys/${id}/revoke`, { method: "POST", headers: { authorization: `Bearer ${service.token}` } });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`POST /v1/keys/${id}/revoke answered ${res.status}: ${text}`);
}
