/**
 * Storage faults are 503, never 500: the pet service (a real process) keeps its SQLite file on a
 * file system the test mounts and then breaks, a full tmpfs and an ext4 image the kernel turns
 * read-only after an error. Creates answer 503 service_unavailable with Retry-After, counted by
 * fault; reads keep working; the gateway stays ready; nothing acknowledged is lost; writes resume
 * once the fault clears. Where this machine cannot mount, the tests are skipped and say so loudly.
 */
import { rmSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestKeys, startGateway, type RunningGateway, type TestKeys } from "../../../testkit/gateway.ts";
import { fillUp, mountLoopExt4, mountRefusal, mountTmpfs, type Mounted } from "../../../testkit/mounts.ts";
import { freePort } from "../../../testkit/net.ts";
import { metricValue } from "../../../testkit/promql.ts";
import { checkHealth, spawnPetService } from "../../../testkit/pet-service.ts";

const refusal = await mountRefusal();
if (refusal) {
  console.error(
    `\n${"!".repeat(100)}\n!!! STORAGE FAULTS NOT TESTED: this machine does not let the tests mount file systems (${refusal}).\n` +
      `!!! Run npm run test:faults as root (or with CAP_SYS_ADMIN) to test a full disk and a read-only file system.\n${"!".repeat(100)}\n`,
  );
}

interface Answer {
  status: number;
  code?: string;
  retryAfter: string | null;
  id?: string;
}

/** A pet service on `dir`, a gateway in front of it, and the calls the tests make. */
async function serviceOn(dir: string, keys: TestKeys) {
  const port = await freePort();
  const dbPath = path.join(dir, "pets.sqlite");
  const start = () => spawnPetService({ dbPath, port, env: { METRICS_PORT: "0" } });
  let pets = await start();
  const gateway: RunningGateway = await startGateway({ petServiceAddr: pets.address, keys });
  const key = await keys.issue({ plan: "business" });
  const auth = { Authorization: `Bearer ${key}` };
  let n = 0;

  const create = async (name: string, idempotencyKey?: string): Promise<Answer> => {
    const res = await fetch(`${gateway.url}/v1/pets`, {
      method: "POST",
      headers: { ...auth, "Content-Type": "application/json", ...(idempotencyKey ? { "Idempotency-Key": idempotencyKey } : {}) },
      body: JSON.stringify({ name, categoryId: 7 }),
    });
    const body = (await res.json()) as { code?: string; id?: number };
    return { status: res.status, code: body.code, retryAfter: res.headers.get("retry-after"), id: body.id === undefined ? undefined : String(body.id) };
  };
  const names = async (): Promise<Map<string, string>> => {
    const res = await fetch(`${gateway.url}/v1/pets?limit=100`, { headers: auth });
    expect(res.status).toBe(200);
    return new Map(((await res.json()) as { id: number; name: string }[]).map((p) => [p.name, String(p.id)]));
  };
  return {
    pets: () => pets,
    gateway,
    create,
    names,
    nextName: (prefix: string) => `${prefix}-${++n}`,
    getPet: async (id: string) => (await fetch(`${gateway.url}/v1/pets/${id}`, { headers: auth })).status,
    ready: async () => (await fetch(`${gateway.url}/readyz`)).status,
    faults: async (fault: string) =>
      (await metricValue(`http://127.0.0.1:${pets.metricsPort}/metrics`, "pet_service_storage_faults_total", { fault })) ?? 0,
    /** kill -9 and start again on the same file and port: what was acknowledged must be there. */
    async crashAndRestart() {
      await pets.kill("SIGKILL");
      pets = await start();
      // The gateway answers 503 (Retry-After) until its channel has reconnected, as a client would
      // see during any restart; the checks below are about the data, so wait for that first.
      const deadline = Date.now() + 15_000;
      while ((await fetch(`${gateway.url}/v1/pets?limit=1`, { headers: auth })).status === 503 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async stop() {
      await gateway.close();
      await pets.stop();
    },
  };
}

/**
 * A pet service on a freshly mounted file system, five pets created (and acknowledged) on it,
 * then `breakIt`; everything torn down afterwards. The names of acknowledged and refused creates
 * are collected for the durability checks.
 */
function onBrokenDisk<M extends Mounted>(mount: () => Promise<M>, breakIt: (disk: M) => void) {
  const ctx = {
    disk: undefined as unknown as M,
    svc: undefined as unknown as Awaited<ReturnType<typeof serviceOn>>,
    acknowledged: new Map<string, string>(),
    refused: [] as string[],
  };
  let keys: TestKeys;
  beforeAll(async () => {
    keys = await createTestKeys();
    ctx.disk = await mount();
    ctx.svc = await serviceOn(ctx.disk.dir, keys);
    for (let i = 0; i < 5; i++) {
      const name = ctx.svc.nextName("before");
      const a = await ctx.svc.create(name);
      expect(a.status).toBe(201);
      ctx.acknowledged.set(name, a.id!);
    }
    breakIt(ctx.disk);
  });
  afterAll(async () => {
    await ctx.svc?.stop();
    await ctx.disk?.unmount();
    await keys?.remove();
  });
  return ctx;
}

function expectServiceUnavailable(answers: Answer[]): void {
  for (const a of answers) {
    expect(a.status, JSON.stringify(a)).toBe(503);
    expect(a.code).toBe("service_unavailable");
    expect(a.retryAfter).toBe("5");
  }
}

describe.skipIf(refusal !== undefined)("a full disk under the pet service (a 4 MiB tmpfs)", () => {
  let filler = "";
  const ctx = onBrokenDisk(
    () => mountTmpfs(4 << 20),
    (disk) => (filler = fillUp(disk.dir)),
  );

  it("refuses creates with 503 service_unavailable and Retry-After, sequential and concurrent, never 500", async () => {
    const sequential: Answer[] = [];
    for (let i = 0; i < 5; i++) {
      const name = ctx.svc.nextName("full");
      sequential.push(await ctx.svc.create(name, i % 2 ? `idem-${name}` : undefined));
      ctx.refused.push(name);
    }
    const names = Array.from({ length: 20 }, () => ctx.svc.nextName("full"));
    ctx.refused.push(...names);
    const concurrent = await Promise.all(names.map((name, i) => ctx.svc.create(name, i % 2 ? `idem-${name}` : undefined)));
    expectServiceUnavailable([...sequential, ...concurrent]);
    expect(await ctx.svc.faults("disk_full")).toBeGreaterThanOrEqual(25);
  });

  it("keeps serving reads, stays SERVING and ready", async () => {
    const listed = await ctx.svc.names();
    for (const [name, id] of ctx.acknowledged) expect(listed.get(name)).toBe(id);
    expect(await ctx.svc.getPet(ctx.acknowledged.values().next().value!)).toBe(200);
    expect(await checkHealth(ctx.svc.pets().address, "petstore.v1.PetService")).toBe("SERVING");
    expect(await ctx.svc.ready()).toBe(200);
  });

  it("writes resume by themselves once space is freed, and nothing acknowledged is lost across a kill -9", async () => {
    rmSync(filler);
    for (let i = 0; i < 5; i++) {
      const name = ctx.svc.nextName("after");
      const a = await ctx.svc.create(name);
      expect(a.status).toBe(201);
      ctx.acknowledged.set(name, a.id!);
    }
    await ctx.svc.crashAndRestart();
    const listed = await ctx.svc.names();
    for (const [name, id] of ctx.acknowledged) expect(listed.get(name), name).toBe(id);
    for (const name of ctx.refused) expect(listed.has(name), name).toBe(false); // a refused create stored nothing
  });
});

describe.skipIf(refusal !== undefined)("a file system turned read-only under the pet service (ext4 on a loop device)", () => {
  const ctx = onBrokenDisk(
    () => mountLoopExt4(32),
    (disk) => disk.failReadOnly(),
  );

  it("refuses creates with 503 service_unavailable and Retry-After, counted as read_only", async () => {
    const answers: Answer[] = [];
    for (let i = 0; i < 3; i++) {
      const name = ctx.svc.nextName("ro");
      answers.push(await ctx.svc.create(name));
      ctx.refused.push(name);
    }
    const names = Array.from({ length: 10 }, () => ctx.svc.nextName("ro"));
    ctx.refused.push(...names);
    answers.push(...(await Promise.all(names.map((name) => ctx.svc.create(name, `idem-${name}`)))));
    expectServiceUnavailable(answers);
    expect(await ctx.svc.faults("read_only")).toBeGreaterThanOrEqual(13);
  });

  it("keeps serving reads and stays ready", async () => {
    const listed = await ctx.svc.names();
    for (const [name, id] of ctx.acknowledged) expect(listed.get(name)).toBe(id);
    expect(await ctx.svc.ready()).toBe(200);
  });

  it("after the operator's repair (stop, e2fsck, mount, start) every acknowledged pet is there and writes work", async () => {
    await ctx.svc.pets().kill("SIGTERM");
    await ctx.disk.repairAndRemount();
    await ctx.svc.crashAndRestart(); // the process is already gone: this starts it again
    const listed = await ctx.svc.names();
    for (const [name, id] of ctx.acknowledged) expect(listed.get(name), name).toBe(id);
    for (const name of ctx.refused) expect(listed.has(name), name).toBe(false);
    expect((await ctx.svc.create(ctx.svc.nextName("repaired"))).status).toBe(201);
  });
});
