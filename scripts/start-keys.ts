/**
 * What `npm start` asks of the key service it started, through the admin API: the gateway's admin
 * token (scope `gateway`) and the demo key, each saved in a file and reused on later starts while
 * the key service still accepts it.
 */
import { parseJwks } from "../lib/jwks.ts";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { KeyRecordJson } from "../lib/key-record.ts";
import { verifyTokenSignature } from "../lib/api-key-format.ts";

export interface AdminApi {
  /** The key service's base URL, e.g. http://127.0.0.1:8081. */
  url: string;
  /** An admin token with scope `admin`. */
  token: string;
}

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

async function call(api: AdminApi, method: string, pathname: string, opts: { token?: string; body?: unknown } = {}): Promise<Answer> {
  const res = await fetch(`${api.url}${pathname}`, {
    method,
    headers: {
      authorization: `Bearer ${opts.token ?? api.token}`,
      ...(opts.body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // Not JSON: the status says enough.
  }
  return { status: res.status, body };
}

/** Names the request and the key service's answer (its error code and message: never a token). */
function refused(method: string, pathname: string, answer: Answer): Error {
  const { code, message } = answer.body;
  return new Error(`the key service answered ${method} ${pathname} with ${answer.status}${code ? ` ${String(code)}: ${String(message)}` : ""}`);
}

const readSaved = (file: string): string | undefined => {
  try {
    return readFileSync(file, "utf8").trim() || undefined;
  } catch {
    return undefined;
  }
};

function save(file: string, secret: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${secret}\n`, { mode: 0o600 });
}

/**
 * The gateway's token: the one saved in `file` while the key service accepts it for the change
 * feed, else a new admin token with scope `gateway`, named `gateway` (`gateway-<time>` when that
 * name is taken), saved there (0600).
 */
export async function gatewayToken(api: AdminApi, file: string): Promise<string> {
  const saved = readSaved(file);
  if (saved) {
    const feed = await call(api, "GET", "/v1/events?limit=1", { token: saved });
    if (feed.status === 200) return saved;
    // Revoked, or made by another registry: replaced below. Anything else is the key service's trouble.
    if (feed.status !== 401 && feed.status !== 403) throw refused("GET", "/v1/events", feed);
  }
  let made = await call(api, "POST", "/v1/admin-tokens", { body: { name: "gateway", scopes: ["gateway"] } });
  // Names stay taken by revoked tokens: a replacement gets a name of its own.
  if (made.status === 409) made = await call(api, "POST", "/v1/admin-tokens", { body: { name: `gateway-${Date.now()}`, scopes: ["gateway"] } });
  if (made.status !== 201 || typeof made.body.token !== "string") throw refused("POST", "/v1/admin-tokens", made);
  save(file, made.body.token);
  return made.body.token;
}

/**
 * The demo key: the one saved in `file` while it still works (signed by a pair the key service
 * publishes, its newest generation, neither revoked nor expired), else a new pro key issued
 * through POST /v1/keys and saved there (0600).
 */
export async function demoKey(api: AdminApi, file: string): Promise<string> {
  const saved = readSaved(file);
  if (saved && (await stillWorks(api, saved))) return saved;
  const issued = await call(api, "POST", "/v1/keys", { body: { name: "demo (npm start)", plan: "pro" } });
  if (issued.status !== 201 || typeof issued.body.key !== "string") throw refused("POST", "/v1/keys", issued);
  save(file, issued.body.key);
  return issued.body.key;
}

async function stillWorks(api: AdminApi, token: string): Promise<boolean> {
  const jwks = await call(api, "GET", "/.well-known/jwks.json");
  if (jwks.status !== 200) throw refused("GET", "/.well-known/jwks.json", jwks);
  const keys = parseJwks(jwks.body);
  let verified;
  try {
    verified = verifyTokenSignature(token, keys, Math.floor(Date.now() / 1000));
  } catch {
    return false;
  }
  const record = await call(api, "GET", `/v1/keys/${encodeURIComponent(verified.apiKey.keyId)}`);
  if (record.status === 404) return false;
  if (record.status !== 200) throw refused("GET", "/v1/keys/{id}", record);
  const key = record.body as unknown as KeyRecordJson;
  return key.generation === verified.apiKey.generation && key.revokedAt === null && (key.expiresAt === null || Date.parse(key.expiresAt) > Date.now());
}
