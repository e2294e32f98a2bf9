/**
 * `npm start`: the key service, the pet service and the gateway together with embedded defaults,
 * the gateway's admin token wired, a demo key, then a curl line that works. Ctrl-C stops all three
 * cleanly.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { DOCS_PATH } from "../lib/http/docs.ts";
import { PORTAL_PATH } from "../gateway/portal/routes.ts";
import { adminTokenFile as keyServiceAdminTokenFile } from "../keys/service-config.ts";
import { isPostgresUrl } from "../pet-service/store/pets-db-url.ts";
import { ignoreStderrErrors, stderrLine } from "../lib/stderr-line.ts";
import { defaultKeysDir, legacyKeysDirNotice } from "../lib/keys-dir.ts";
import { demoKey, gatewayToken, type AdminApi } from "./start-keys.ts";

const ROOT = path.resolve(import.meta.dirname, "..");
const env = { ...process.env };
// The key service's signing pairs: an older checkout's keys/ is still used, and the way out is said.
const legacyNotice = legacyKeysDirNotice(env.KEYS_DIR || defaultKeysDir(), env);
if (legacyNotice) stderrLine(legacyNotice);
const gatewayPort = Number(env.GATEWAY_PORT || 8080);
const keysPort = Number(env.KEYS_PORT || 8081);
const keysHost = env.KEYS_HOST || "127.0.0.1";
// The gateway dials the key service where it listens (a wildcard address is reached on loopback).
const keysDialHost = keysHost === "0.0.0.0" || keysHost === "::" ? "127.0.0.1" : keysHost.includes(":") ? `[${keysHost}]` : keysHost;
const keysUrl = `http://${keysDialHost}:${keysPort}`;
// The gateway finds the pet service wherever this run put it.
env.PET_SERVICE_ADDR ||= `127.0.0.1:${env.PET_SERVICE_PORT || 50051}`;
// The demo key lives beside the SQLite database (data/ by default), which git ignores; with a
// PostgreSQL URL in data/ (the URL's dirname made a "postgres:/user:password@host" directory).
const petsDb = env.PETS_DB || "data/pets.sqlite";
const demoKeyFile = path.join(isPostgresUrl(petsDb) ? "data" : path.dirname(petsDb), "demo-key");
// Where the key service writes the admin token it generates; the gateway's goes beside it.
const adminTokenFile = keyServiceAdminTokenFile(env.KEYS_DB || "data/keys.sqlite");
const gatewayTokenFile = path.join(path.dirname(adminTokenFile), "gateway-token");

// Ctrl-C at any moment, even while the processes start or the tokens are made, stops cleanly.
const children: ChildProcess[] = [];
let stopping = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => stopAll(0));
// Output that nobody takes any more (`npm start | head`) ends neither this process nor the services,
// which count the log lines they drop: Ctrl-C still stops them. Node's default, an unhandled
// 'error', ended this process alone, and left the services running with nobody to stop them.
process.stdout.on("error", (err: NodeJS.ErrnoException) => stderrLine(`npm start: cannot write to stdout (${err.code ?? err.message}); the services run on`));
ignoreStderrErrors();

children.push(start("key service", "keys/main.ts"));
if (await waitForReady("the key service", keysUrl)) {
  const wired = await wireKeys().catch((err: Error) => {
    stderrLine(`npm start: ${err.message}; stopping.`);
    stopAll(1);
  });
  if (wired && !stopping) {
    children.push(
      start("pet-service", "pet-service/main.ts"),
      // Without Redis the gateway's counts live in its memory: it publishes them to KEYS_DIR/usage.json for `keys usage`.
      start("gateway", "gateway/main.ts", { KEYS_URL: keysUrl, KEYS_SERVICE_TOKEN: wired.serviceToken, ...(!env.REDIS_URL && { KEYS_DIR: env.KEYS_DIR || defaultKeysDir() }) }),
    );
    if (await waitForReady("the gateway", `http://127.0.0.1:${gatewayPort}`)) printBanner(wired.demo);
  }
}

/** The gateway's token and the demo key, through the admin API with the key service's admin token. */
async function wireKeys(): Promise<{ serviceToken: string; demo: string }> {
  let token = env.KEYS_ADMIN_TOKEN;
  try {
    token ||= readFileSync(adminTokenFile, "utf8").trim();
  } catch {
    throw new Error(`cannot read the key service's admin token from ${adminTokenFile} (set KEYS_ADMIN_TOKEN, or KEYS_DB's folder is not where the key service wrote it)`);
  }
  const admin: AdminApi = { url: keysUrl, token };
  const [serviceToken, demo] = await Promise.all([gatewayToken(admin, gatewayTokenFile), demoKey(admin, demoKeyFile)]);
  return { serviceToken, demo };
}

function printBanner(key: string): void {
  const base = `http://localhost:${gatewayPort}/v1`;
  const adminUrl = `http://localhost:${keysPort}`;
  const [tokenAt, tokenShell] = env.KEYS_ADMIN_TOKEN ? ["token: KEYS_ADMIN_TOKEN", "$KEYS_ADMIN_TOKEN"] : [`token in ${adminTokenFile}`, `$(cat ${adminTokenFile})`];
  process.stdout.write(
    [
      "",
      "Pet Store API is running.",
      `  Base URL:  ${base}`,
      `  Docs:      http://localhost:${gatewayPort}${DOCS_PATH}   (API reference: open it in a browser)`,
      `  Portal:    http://localhost:${gatewayPort}${PORTAL_PATH}   (a key's plan, limits and usage: paste the demo key)`,
      `  Demo key:  ${key}   (plan pro, saved in ${demoKeyFile})`,
      `  Admin API: ${adminUrl}   (key service; reference at ${DOCS_PATH}; ${tokenAt})`,
      // The processes are spawned from this one's binary (the project's own runtime, node_modules/.bin/node).
      `  Node:      ${process.version}   (gateway, pet service and key service)`,
      "",
      "Try:",
      `  curl -s -H "Authorization: Bearer ${key}" ${base}/pets`,
      `  curl -s -X POST -H "Authorization: Bearer ${key}" -H "Content-Type: application/json" -d '{"name":"Rex","categoryId":1}' ${base}/pets`,
      `  curl -s -H "Authorization: Bearer ${tokenShell}" ${adminUrl}/v1/keys`,
      "",
      "Ctrl-C stops all three processes.",
      "",
    ].join("\n"),
  );
}

/** `node <entry>` from this checkout (wherever npm start runs), with `extra` over the environment. */
function start(name: string, entry: string, extra: Record<string, string> = {}): ChildProcess {
  const child = spawn(process.execPath, [path.join(ROOT, entry)], { env: { ...env, ...extra }, stdio: ["ignore", "inherit", "inherit"] });
  child.on("exit", (code, signal) => {
    if (stopping) return;
    stderrLine(`${name} exited (${signal ?? code}); stopping.`);
    stopAll(1);
  });
  return child;
}

function stopAll(code: number): void {
  if (stopping) return;
  stopping = true;
  const running = children.filter((c) => c.exitCode === null && c.signalCode === null);
  let left = running.length;
  if (left === 0) process.exit(code);
  for (const child of running) {
    child.once("exit", () => --left === 0 && process.exit(code));
    child.kill("SIGTERM");
  }
}

/** Whether `url`/readyz answered 200 within 30 s; if not, everything is stopped. */
async function waitForReady(what: string, url: string): Promise<boolean> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline && !stopping) {
    try {
      if ((await fetch(`${url}/readyz`)).status === 200) return true;
    } catch {
      // Not listening yet.
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  if (!stopping) {
    stderrLine(`${what} did not become ready within 30 s; stopping.`);
    stopAll(1);
  }
  return false;
}
