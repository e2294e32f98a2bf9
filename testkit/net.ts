import { readFileSync } from "node:fs";
import net from "node:net";

/**
 * Ports are picked below the kernel's ephemeral range: a port the kernel hands out for `listen(0)`
 * comes from the same range as the local ports of outgoing connections (every Redis, PostgreSQL
 * and HTTP client the tests open), so between our check and the child process's bind, a connect()
 * could take it (seen in CI as EADDRINUSE). Below that range only listeners compete, and a random
 * pick makes two test files choosing the same port at the same moment unlikely.
 */
const LOWEST = 20_000;
const ephemeralLow = (() => {
  try {
    return Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]) || 32_768;
  } catch {
    return 32_768;
  }
})();
/** Ports this process has handed out: never twice, even once their first user has let them go. */
const handedOut = new Set<number>();

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.unref();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** A TCP port that was free on loopback a moment ago, outside the range connections take theirs from. */
export async function freePort(): Promise<number> {
  const span = Math.max(1, ephemeralLow - LOWEST);
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = LOWEST + Math.floor(Math.random() * span);
    if (handedOut.has(port) || !(await bindable(port))) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error(`no free port found between ${LOWEST} and ${ephemeralLow}`);
}
