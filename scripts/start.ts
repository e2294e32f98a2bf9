/**
 * `npm start`: the pet service and the gateway together with embedded defaults, a signing key
 * pair and a demo key, then a curl line that works. Ctrl-C stops both cleanly.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { createKeyVerifier } from "../gateway/auth/jwt-verifier.ts";
import { watchRevocations } from "../gateway/auth/revocation-list.ts";
import { watchKeyChanges } from "../gateway/auth/key-changes.ts";
import { DOCS_PATH } from "../lib/http/docs.ts";
import { ensureKeyPair, issueKey } from "../keys/index.ts";
import { defaultKeysDir, legacyKeysDirNotice } from "../lib/keys-dir.ts";
import { isPostgresUrl } from "../pet-service/store/pets-db-url.ts";
import { systemClock } from "../lib/clock.ts";
import { ignoreStderrErrors, stderrLine } from "../lib/stderr-line.ts";

const env = { ...process.env };
const keysDir = env.KEYS_DIR || defaultKeysDir();
const legacyNotice = legacyKeysDirNotice(keysDir, env);
if (legacyNotice) process.stderr.write(`${legacyNotice}\n`);
const gatewayPort = Number(env.GATEWAY_PORT || 8080);
// The gateway finds the pet service wherever this run put it.
env.PET_SERVICE_ADDR ||= `127.0.0.1:${env.PET_SERVICE_PORT || 50051}`;
// The demo key lives beside the SQLite database (data/ by default), which git ignores; with a
// PostgreSQL URL in data/ (the URL's dirname made a "postgres:/user:password@host" directory).
const petsDb = env.PETS_DB || "data/pets.sqlite";
const demoKeyFile = path.join(isPostgresUrl(petsDb) ? "data" : path.dirname(petsDb), "demo-key");

// Ctrl-C at any moment, even while the key pair is made or the processes start, stops cleanly.
const children: ChildProcess[] = [];
let stopping = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => stopAll(0));
// Output that nobody takes any more (`npm start | head`) ends neither this process nor the services,
// which count the log lines they drop: Ctrl-C still stops both. Node's default, an unhandled
// 'error', ended this process alone, and left both running with nobody to stop them.
process.stdout.on("error", (err: NodeJS.ErrnoException) => stderrLine(`npm start: cannot write to stdout (${err.code ?? err.message}); the services run on`));
ignoreStderrErrors();

ensureKeyPair(keysDir);
const demoKey = reuseOrIssueDemoKey();
children.push(start("pet-service", "pet-service/main.ts"), start("gateway", "gateway/main.ts"));

await waitForGateway();
const base = `http://localhost:${gatewayPort}/v1`;
process.stdout.write(
  [
    "",
    "Pet Store API is running.",
    `  Base URL: ${base}`,
    `  Docs:     http://localhost:${gatewayPort}${DOCS_PATH}   (API reference: open it in a browser)`,
    `  Demo key: ${demoKey}   (plan pro, saved in ${demoKeyFile})`,
    // Both processes are spawned from this one's binary (the project's own runtime, node_modules/.bin/node).
    `  Node:     ${process.version}   (gateway and pet service)`,
    "",
    "Try:",
    `  curl -s -H "Authorization: Bearer ${demoKey}" ${base}/pets`,
    `  curl -s -X POST -H "Authorization: Bearer ${demoKey}" -H "Content-Type: application/json" -d '{"name":"Rex","categoryId":1}' ${base}/pets`,
    "",
    "Ctrl-C stops both processes.",
    "",
  ].join("\n"),
);

function start(name: string, entry: string): ChildProcess {
  const child = spawn(process.execPath, [entry], { env, stdio: ["ignore", "inherit", "inherit"] });
  child.on("exit", (code, signal) => {
    if (stopping) return;
    process.stderr.write(`${name} exited (${signal ?? code}); stopping.\n`);
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

/** Reuses the saved demo key while it still verifies (not expired, revoked or retired). */
function reuseOrIssueDemoKey(): string {
  const revocations = watchRevocations({ keysDir });
  const keyChanges = watchKeyChanges({ keysDir });
  const verifier = createKeyVerifier({ keysDir, clock: systemClock, revocations, keyChanges });
  try {
    const saved = readFileSync(demoKeyFile, "utf8").trim();
    verifier.verify(saved);
    return saved;
  } catch {
    const key = issueKey(keysDir, { plan: "pro", name: "demo (npm start)" });
    mkdirSync(path.dirname(demoKeyFile), { recursive: true });
    writeFileSync(demoKeyFile, `${key}\n`, { mode: 0o600 });
    return key;
  } finally {
    verifier.close();
    revocations.close();
    keyChanges.close();
  }
}

async function waitForGateway(): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline && !stopping) {
    try {
      if ((await fetch(`http://127.0.0.1:${gatewayPort}/readyz`)).status === 200) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  if (!stopping) {
    process.stderr.write("the gateway did not become ready within 30 s; stopping.\n");
    stopAll(1);
  }
}
