/**
 * deploy/compose.yaml under podman-compose: PostgreSQL, Redis, two pet-service replicas, the key
 * service and two gateways from the image deploy/Dockerfile builds, started as deploy/README.md
 * says (the key service first, the gateways' token made through its admin API). A key made
 * through the admin API through both gateways, and refused by both once revoked there; one
 * pet-service container killed under traffic (0 5xx: the gateways retry on the other replica),
 * every container stopped within its grace period with exit status 0, and nothing left behind.
 *
 * podman-compose 1.0.3 (Debian's) does not wait for `depends_on: condition: service_healthy`
 * and starts everything at once; podman runs no health check on its own without systemd. So
 * this test runs each service's compose health check itself (`podman healthcheck run`) until
 * all pass, which is what `docker compose up --wait` waits for.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../testkit/net.ts";
import { admin, http, newAdminToken, podman, setup, sh, uniqueName, until } from "./podman.ts";

const COMPOSE = "deploy/compose.yaml";
const project = uniqueName("pet-store-compose-test");
const label = `label=io.podman.compose.project=${project}`;

/** Everything podman-compose made for this project (it labels containers, networks and volumes). */
async function projectObjects() {
  const list = async (args: string[]) => (await podman(args)).stdout.split("\n").filter(Boolean).sort();
  return {
    containers: await list(["ps", "-a", "--filter", label, "--format", "{{.Names}}"]),
    volumes: await list(["volume", "ls", "--filter", label, "--format", "{{.Name}}"]),
    networks: await list(["network", "ls", "--filter", label, "--format", "{{.Name}}"]),
  };
}

async function removeProject() {
  const o = await projectObjects();
  for (const c of o.containers) await podman(["rm", "-f", "-t", "5", c], { allowFail: true });
  for (const v of o.volumes) await podman(["volume", "rm", "-f", v], { allowFail: true });
  for (const n of o.networks) await podman(["network", "rm", "-f", n], { allowFail: true });
}

const exitCode = async (c: string) => Number((await podman(["inspect", "--format", "{{.State.ExitCode}}", c])).stdout.trim());
const state = async (c: string) => (await podman(["inspect", "--format", "{{.State.Status}}", c])).stdout.trim();

describe.skipIf(setup().skip !== null)("compose.yaml under podman-compose", () => {
  let keys: { key: string };
  let env: Record<string, string>;
  let gw1: number;
  let gw2: number;
  let adminUrl: string;
  const name = (service: string, n = 1) => `${project}_${service}_${n}`;
  const compose = (args: string[], timeoutMs = 180_000) => sh("podman-compose", ["-p", project, "-f", COMPOSE, ...args], { env: { ...env, ...setup().env }, timeoutMs });

  beforeAll(async () => {
    [gw1, gw2] = [await freePort(), await freePort()];
    const keysPort = await freePort();
    adminUrl = `http://127.0.0.1:${keysPort}`;
    env = {
      POSTGRES_PASSWORD: randomBytes(16).toString("hex"),
      KEYS_ADMIN_TOKEN: newAdminToken(),
      // Not made yet: the key service is started first (deploy/README.md, compose).
      KEYS_SERVICE_TOKEN: "later",
      GATEWAY_1_HOST_PORT: String(gw1),
      GATEWAY_2_HOST_PORT: String(gw2),
      REDIS_HOST_PORT: String(await freePort()),
      KEY_SERVICE_HOST_PORT: String(keysPort),
    };
    const t = Date.now();
    await compose(["up", "-d", "--no-build", "key-service"]);
    await until("the key service to be ready on its published loopback port", async () => (await fetch(`${adminUrl}/readyz`)).status === 200, 180_000, 1_000);
    const token = await admin(adminUrl, env.KEYS_ADMIN_TOKEN!, "POST", "/v1/admin-tokens", { name: "gateway", scopes: ["gateway"] });
    expect(token.status).toBe(201);
    env.KEYS_SERVICE_TOKEN = token.body.token as string;
    const issued = await admin(adminUrl, env.KEYS_ADMIN_TOKEN!, "POST", "/v1/keys", { name: "deploy-test", plan: "business" });
    expect(issued.status).toBe(201);
    keys = { key: issued.body.key as string };
    await compose(["up", "-d", "--no-build"]);
    // Healthy by compose's own health checks (podman runs each one's test command once).
    // A container is healthy from its first passing check on, as Docker counts it (unhealthy only
    // after `retries` failures in a row); one check at a time, each within its own timeout.
    const healthy = new Set<string>();
    let unhealthy: string[] = [];
    await until(
      "every compose health check to pass",
      async () => {
        const { containers } = await projectObjects();
        for (const c of containers.filter((x) => !healthy.has(x))) {
          if ((await podman(["healthcheck", "run", c], { allowFail: true })).code === 0) healthy.add(c);
        }
        unhealthy = containers.filter((c) => !healthy.has(c));
        return containers.length === 7 && unhealthy.length === 0;
      },
      300_000,
      2_000,
    ).catch(async (err: Error) => {
      const logs = [];
      for (const c of unhealthy) logs.push(`--- ${c}: ${await state(c)}\n${Object.values(await podman(["logs", "--tail", "15", c], { allowFail: true })).slice(1).join("").slice(-3000)}`);
      throw new Error(`${err.message}; unhealthy: ${unhealthy.join(", ")}\n${logs.join("\n")}`);
    });
    console.log(`deploy test: compose stack up and healthy in ${Math.round((Date.now() - t) / 1000)} s`);
  });

  afterAll(async () => {
    if (!env) return;
    await compose(["down", "-v", "-t", "30"]).catch((err: unknown) => console.warn(`podman-compose down: ${String(err)}`));
    await removeProject();
  });

  it("runs postgres, redis, two pet-service replicas, the key service and two gateways, each healthy", async () => {
    const { containers } = await projectObjects();
    expect(containers).toEqual(
      [name("gateway-1"), name("gateway-2"), name("key-service"), name("pet-service", 1), name("pet-service", 2), name("postgres"), name("redis")].sort(),
    );
  });

  it("serves a key made through the admin API on both gateways, and refuses it on both once revoked there", async () => {
    const made = await admin(adminUrl, env.KEYS_ADMIN_TOKEN!, "POST", "/v1/keys", { name: "deploy-revoke", plan: "free" });
    expect(made.status).toBe(201);
    const key = made.body.key as string;
    for (const port of [gw1, gw2]) await until(`gateway on ${port} to accept the new key`, async () => (await http(port, "GET", "/v1/pets?limit=1", key)).status === 200, 10_000, 100);
    expect((await admin(adminUrl, env.KEYS_ADMIN_TOKEN!, "POST", `/v1/keys/${String(made.body.id)}/revoke`)).status).toBe(200);
    const revokedAt = Date.now();
    for (const port of [gw1, gw2]) await until(`gateway on ${port} to refuse the revoked key`, async () => (await http(port, "GET", "/v1/pets?limit=1", key)).status === 401, 10_000, 50);
    console.log(`deploy test: compose: the revoked key refused by both gateways ${Date.now() - revokedAt} ms after the admin API answered`);
    // The admin API is published on loopback only; the token is required.
    expect((await fetch(`${adminUrl}/v1/keys`)).status).toBe(401);
  });

  it("answers a real key through both gateways, which share one quota and one database", async () => {
    const created = await http(gw1, "POST", "/v1/pets", keys.key, { name: "Rex", categoryId: 1 });
    expect(created.status).toBe(201);
    const pet = JSON.parse(created.text) as { id: number; name: string };
    const listed = await http(gw2, "GET", "/v1/pets?limit=100", keys.key);
    expect(listed.status).toBe(200);
    expect((JSON.parse(listed.text) as { id: number }[]).map((p) => p.id)).toContain(pet.id);
    const r1 = Number((await http(gw1, "GET", "/v1/pets?limit=1", keys.key)).headers.get("x-ratelimit-remaining"));
    const r2 = Number((await http(gw2, "GET", "/v1/pets?limit=1", keys.key)).headers.get("x-ratelimit-remaining"));
    expect(r2).toBe(r1 - 1);
    expect((await http(gw1, "GET", "/v1/pets", "not-a-key")).status).toBe(401);
  });

  it("runs node as uid 1000 under tini as PID 1 in every application container", async () => {
    for (const c of [name("gateway-1"), name("pet-service"), name("key-service")]) {
      const out = (
        await podman(["exec", c, "sh", "-c", 'for d in /proc/[0-9]*; do echo "$(sed -n "s/^Uid:\\t\\([0-9]*\\).*/\\1/p" $d/status) $(tr "\\0" " " <$d/cmdline)"; done'])
      ).stdout;
      const procs = out.split("\n").filter((l) => /\S+ \S/.test(l));
      expect(procs).toContainEqual(expect.stringMatching(/^1000 \/usr\/bin\/tini -- node /));
      expect(procs.filter((l) => / node (gateway|pet-service|keys)\/main\.ts/.test(l) && !l.includes("tini"))).toEqual([
        expect.stringMatching(/^1000 node /),
      ]);
      const pid1 = (await podman(["exec", c, "sh", "-c", 'tr "\\0" " " </proc/1/cmdline'])).stdout;
      expect(pid1).toMatch(/^\/usr\/bin\/tini -- node /);
    }
  });

  it("loses no request when a pet-service container is killed (the gateways retry on the other replica)", async () => {
    const total = 400;
    const statuses = new Map<number, number>();
    let sent = 0;
    let killed = false;
    const worker = async (w: number) => {
      for (;;) {
        const i = sent++;
        if (i >= total) return;
        if (i === Math.floor(total / 3) && !killed) {
          killed = true;
          await podman(["kill", name("pet-service", 1)]);
        }
        const port = i % 2 ? gw2 : gw1;
        const r =
          i % 5 === 0
            ? await fetch(`http://127.0.0.1:${port}/v1/pets`, {
                method: "POST",
                headers: { authorization: `Bearer ${keys.key}`, "content-type": "application/json", "idempotency-key": randomUUID() },
                body: JSON.stringify({ name: `Pet ${w}-${i}`, categoryId: 2 }),
                signal: AbortSignal.timeout(10_000),
              })
            : await fetch(`http://127.0.0.1:${port}/v1/pets?limit=5`, {
                headers: { authorization: `Bearer ${keys.key}` },
                signal: AbortSignal.timeout(10_000),
              });
        await r.arrayBuffer();
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      }
    };
    await Promise.all([0, 1, 2, 3].map(worker));
    const counts = Object.fromEntries(statuses);
    console.log(`deploy test: ${total} requests with ${name("pet-service", 1)} killed after ${Math.floor(total / 3)}: ${JSON.stringify(counts)}`);
    expect(killed).toBe(true);
    // On a failure, what the gateways and the surviving replica said about the 5xx.
    let said = "";
    if ([...statuses.keys()].some((s) => s >= 500)) {
      for (const g of [name("gateway-1"), name("gateway-2"), name("pet-service", 2)]) {
        const logs = await podman(["logs", g], { allowFail: true });
        const lines = `${logs.stdout}${logs.stderr}`.split("\n").filter((l) => /"status":5\d\d|"level":(40|50)/.test(l));
        said += `\n${g}:\n${lines.slice(0, 15).join("\n")}`;
      }
    }
    expect([...statuses.keys()].filter((s) => s >= 500), said).toEqual([]);
    expect((statuses.get(200) ?? 0) + (statuses.get(201) ?? 0)).toBe(total);
  });

  it("stops every container within its grace period with exit status 0, and down leaves nothing", async () => {
    // The killed replica may be running again (restart: unless-stopped); each one still up stops clean.
    const order = [name("gateway-1"), name("gateway-2"), name("pet-service", 1), name("pet-service", 2), name("key-service"), name("redis"), name("postgres")];
    const stopped: Record<string, string> = {};
    for (const c of order) {
      if ((await state(c)) !== "running") continue;
      const t = Date.now();
      await podman(["stop", "-t", "30", c], { timeoutMs: 60_000 });
      const seconds = (Date.now() - t) / 1000;
      stopped[c] = `${seconds.toFixed(1)} s, exit ${await exitCode(c)}`;
      expect({ c, exit: await exitCode(c) }).toEqual({ c, exit: 0 });
      expect(seconds).toBeLessThan(30);
    }
    console.log(`deploy test: compose stop: ${JSON.stringify(stopped)}`);
    expect(Object.keys(stopped)).toEqual(expect.arrayContaining([name("gateway-1"), name("gateway-2"), name("pet-service", 2), name("key-service"), name("redis"), name("postgres")]));
    await compose(["down", "-v", "-t", "30"]);
    const left = await projectObjects();
    // podman-compose 1.0.3's down keeps the project network: the test removes it (afterAll).
    expect({ containers: left.containers, volumes: left.volumes }).toEqual({ containers: [], volumes: [] });
  });
});
