/**
 * Self-serve sign-up (SIGNUP=open) end to end: the portal's form in headless Chromium → the gateway
 * process's POST /portal/signup → the key service's POST /v1/signups with the gateway's token → a
 * Free key shown once, which works on /v1/pets; five a day from one address, then 429.
 */
import { mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SIGNUPS_PER_ADDRESS_PER_DAY } from "../../../../keys/signups/signups.ts";
import { launchChromium, recordPage, type PageRecord } from "../../../../testkit/browser.ts";
import { useGatewayProcess } from "../../../../testkit/gateway-process.ts";
import { keyIdOf } from "../../../../testkit/gateway.ts";
import { adminRequest } from "../../../../testkit/key-service.ts";

const { gateway, keys } = useGatewayProcess({ SIGNUP: "open" });
let browser: Browser;
const BROWSER_TEST_TIMEOUT_MS = 120_000;
/** Where portal.test.ts saves its screenshots too. */
const SCREENSHOTS = path.join(tmpdir(), "petstore-portal-screenshots");

beforeAll(async () => {
  browser = await launchChromium();
}, BROWSER_TEST_TIMEOUT_MS);

afterAll(async () => {
  await browser?.close();
});

/** Requests to anywhere but the gateway that served the page. */
const leaving = (record: PageRecord) => record.requests.filter((url) => !url.startsWith(`${gateway().url}/`) && !/^(data|blob):/.test(url));

const signUp = (body: unknown) =>
  fetch(`${gateway().url}/portal/signup`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });

async function openPortal(): Promise<{ page: Page; record: PageRecord }> {
  const context = await browser.newContext({ viewport: { width: 360, height: 800 } });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: gateway().url });
  const page = await context.newPage();
  const record = recordPage(page);
  expect((await page.goto(`${gateway().url}/portal`))?.status()).toBe(200);
  await page.locator("#signup-form").waitFor({ state: "visible", timeout: 60_000 });
  // No key yet: nothing to refresh or forget.
  expect(await page.locator("#refresh").isVisible()).toBe(false);
  return { page, record };
}

async function submitForm(page: Page, name: string, email: string): Promise<void> {
  await page.locator("#signup-name").fill(name);
  await page.locator("#signup-email").fill(email);
  await page.locator("#signup-form button[type=submit]").click();
}

describe("sign-up on /portal with SIGNUP=open", { timeout: BROWSER_TEST_TIMEOUT_MS }, () => {
  it("issues a Free key in the page, shown once with a copy button; the key works on /v1/pets and is in no address and no log line", async () => {
    const { page, record } = await openPortal();
    try {
      await submitForm(page, "Grace Hopper", "grace@example.com");
      const shown = page.locator("#new-key");
      await shown.waitFor({ state: "visible", timeout: 30_000 });
      const key = (await shown.textContent())!.trim();
      expect(key).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
      expect(await page.locator("#signup-form").isVisible()).toBe(false);
      mkdirSync(SCREENSHOTS, { recursive: true });
      await page.screenshot({ path: path.join(SCREENSHOTS, "signup.png"), fullPage: true });

      await page.locator("#copy-key").click();
      await expect.poll(() => page.locator("#copy-status").textContent()).toBe("Copied.");
      expect(await page.evaluate("navigator.clipboard.readText()")).toBe(key);

      // The key is a Free key of the key service, owned by the e-mail, and it works at once.
      const record_ = await adminRequest(keys().service.url, "GET", `/v1/keys/${keyIdOf(key)}`, { token: keys().service.adminToken });
      expect(record_.body).toMatchObject({ plan: "free", name: "Grace Hopper", ownerId: "grace@example.com", metadata: { signup: true } });
      const pets = await fetch(`${gateway().url}/v1/pets?limit=1`, { headers: { Authorization: `Bearer ${key}` } });
      expect(pets.status).toBe(200);
      expect(pets.headers.get("x-ratelimit-limit")).toBe("60");

      // "Show its usage" reads the new key's own page.
      await page.locator("#use-key").click();
      await page.locator("#overview:not([hidden])").waitFor({ timeout: 30_000 });
      expect(await page.locator("#plan").textContent()).toBe("free");
      expect(await page.locator("#key-name").textContent()).toBe("Grace Hopper");

      // Shown once: the page again has the form, not the key.
      await page.reload();
      await page.locator("#signup-form").waitFor({ state: "visible" });
      expect(await page.locator("#signup-result").isVisible()).toBe(false);
      expect(await page.content()).not.toContain(key);

      expect(record.requests).toContain(`${gateway().url}/portal/signup`);
      expect(record.requests.filter((url) => url.includes(key))).toEqual([]);
      expect(leaving(record)).toEqual([]);
      expect(record.errors, record.requests.join("\n")).toEqual([]);
      expect(gateway().output()).not.toContain(key);
      expect(gateway().output()).not.toContain(key.split(".")[2]);
    } finally {
      await page.context().close();
    }
  });

  it("refuses a bad form with 400 naming the fields, and the page says what to fix", async () => {
    const res = await signUp({ name: "", email: "nobody", plan: "enterprise" });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { code: string; details: { field: string }[] };
    expect(body.code).toBe("invalid_request");
    expect(body.details.map((d: { field: string }) => d.field).sort()).toEqual(["email", "name", "plan"]);
    expect((await fetch(`${gateway().url}/portal/signup`, { method: "POST", body: "name=x" })).status).toBe(415);

    const { page } = await openPortal();
    try {
      await submitForm(page, "Linus", "not-an-address");
      const error = page.locator("#signup-error");
      await error.waitFor({ state: "visible", timeout: 30_000 });
      expect(await error.textContent()).toContain("E-mail must be an e-mail address");
    } finally {
      await page.context().close();
    }
  });

  it(`answers the sign-up past ${SIGNUPS_PER_ADDRESS_PER_DAY} a day from one address with 429 and Retry-After; the page says try again later`, async () => {
    // The first test's sign-up was the first of this address today.
    for (let i = 2; i <= SIGNUPS_PER_ADDRESS_PER_DAY; i++) expect((await signUp({ name: `User ${i}`, email: `user${i}@example.com` })).status).toBe(201);
    const refused = await signUp({ name: "One too many", email: "more@example.com" });
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ code: "rate_limited", status: 429 });
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);

    const { page } = await openPortal();
    try {
      await submitForm(page, "Still More", "still@example.com");
      const error = page.locator("#signup-error");
      await error.waitFor({ state: "visible", timeout: 30_000 });
      expect(await error.textContent()).toMatch(/^Too many sign-ups from your address today; try again in \d+ (hours|minutes|seconds)\.$/);
    } finally {
      await page.context().close();
    }
  });

  it("answers 503 with Retry-After while the key service is down", async () => {
    await keys().service.stop();
    const res = await signUp({ name: "Later", email: "later@example.com" });
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("5");
    expect(((await res.json()) as { code: string }).code).toBe("service_unavailable");
  });

  // Last: it spends the address's anonymous quota.
  it("counts each try against the client address's anonymous quota (60 a minute): a flood gets 429 at the gateway", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 70; i++) {
      const res = await signUp({ name: "", email: "" });
      await res.arrayBuffer();
      statuses.push(res.status);
      if (res.status === 429) {
        expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
        break;
      }
    }
    expect(statuses.at(-1)).toBe(429);
    expect(statuses.slice(0, -1).every((s) => s === 400)).toBe(true);
    expect(statuses.length).toBeLessThanOrEqual(61);
  });
});
