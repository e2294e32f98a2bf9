import { readFileSync } from "node:fs";
import net from "node:net";
import { describe, expect, it } from "vitest";
import { freePort } from "../../../testkit/net.ts";

const ephemeralLow = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);

describe("freePort", () => {
  it("hands out distinct ports below the ephemeral range that a server can then listen on", async () => {
    const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
    expect(new Set(ports).size).toBe(20);
    for (const port of ports) expect(port).toBeLessThan(ephemeralLow);
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => server.once("error", reject).listen(ports[0], "127.0.0.1", resolve));
    await new Promise((resolve) => server.close(resolve));
  });
});
