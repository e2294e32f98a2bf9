/** The key service as operators run it (`node keys/main.ts`), killed with -9 while a webhook delivery is in flight: delivery resumes after the restart. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, expect, it } from "vitest";
import { generateAdminToken } from "../../../../keys/admin-tokens/tokens.ts";
import { adminRequest, spawnKeyService, type KeyServiceProcess } from "../../../../testkit/key-service.ts";
import { freePort } from "../../../../testkit/net.ts";
import { until } from "../../../../testkit/until.ts";
import { startWebhookReceiver, type WebhookReceiver } from "../../../../testkit/webhook-receiver.ts";

const dir = mkdtempSync(path.join(tmpdir(), "petstore-keys-kill-"));
const running: KeyServiceProcess[] = [];
let receiver: WebhookReceiver | undefined;

afterAll(async () => {
  for (const p of running) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
  await Promise.all(running.map((p) => p.exited));
  await receiver?.stop();
  rmSync(dir, { recursive: true, force: true });
});

it("kill -9 mid-delivery: after a restart the event is delivered (same webhook-id), then the ones after it, in order", { timeout: 60_000 }, async () => {
  const token = generateAdminToken();
  const env = { KEYS_DB: path.join(dir, "keys.sqlite"), KEYS_DIR: path.join(dir, "keys"), KEYS_ADMIN_TOKEN: token, KEYS_PORT: String(await freePort()) };
  const spawn = async () => {
    const p = await spawnKeyService(env);
    running.push(p);
    return p;
  };
  const first = await spawn();
  let secret = "";
  receiver = await startWebhookReceiver(() => secret);
  const made = await adminRequest(first.url, "POST", "/v1/webhooks", { token, body: { url: receiver.url, events: ["key.created"] } });
  secret = made.body.secret;
  receiver.mode = "hang";
  const a = await adminRequest(first.url, "POST", "/v1/keys", { token, body: { name: "in-flight", plan: "free" } });
  await until("the delivery is in flight", () => receiver!.received.length === 1);
  first.child.kill("SIGKILL");
  expect(await first.exited).toBeNull();
  receiver.mode = "ok";
  const second = await spawn();
  const b = await adminRequest(second.url, "POST", "/v1/keys", { token, body: { name: "after", plan: "free" } });
  await until("both delivered", () => receiver!.accepted.length >= 2, 30_000);
  expect(receiver.accepted.map((m) => m.data.id)).toEqual([a.body.id, b.body.id]);
  expect(receiver.accepted[0]!.id).toBe(receiver.received[0]!.id);
  expect(receiver.problems).toEqual([]);
  const deliveries = await adminRequest(second.url, "GET", `/v1/webhooks/${made.body.id}/deliveries`, { token });
  expect(deliveries.body.items.map((d: { status: number }) => d.status)).toEqual([200, 200]);
  // Nothing of the secret in the service's log lines.
  expect(first.output() + second.output()).not.toContain(secret.slice(6));
});
