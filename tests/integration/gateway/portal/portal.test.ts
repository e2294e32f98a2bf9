/**
 * GET /portal as a key's holder sees it: the real gateway process (BAN_AFTER=3, SIGNUP off), a key
 * service and the pet service, the page opened in headless Chromium with every request recorded.
 * Screenshots go to $TMPDIR/petstore-portal-screenshots/ for a person to look at.
 */
import { mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PORTAL_CSP } from "../../../../gateway/portal/routes.ts";
import { launchChromium, recordPage, type PageRecord } from "../../../../testkit/browser.ts";
import { useGatewayProcess } from "../../../../testkit/gateway-process.ts";
import { keyIdOf, type TestIssueOptions } from "../../../../testkit/gateway.ts";
import { adminRequest } from "../../../../testkit/key-service.ts";
import { until } from "../../../../testkit/until.ts";

const { gateway, keys } = useGatewayProcess({ BAN_AFTER: "3", LOG_LEVEL: "info" });
let browser: Browser;
const BROWSER_TEST_TIMEOUT_MS = 120_000;
const SCREENSHOTS = path.join(tmpdir(), "petstore-portal-screenshots");
/** Every key a test pasted: none may be in a URL or a log line. */
const pasted: string[] = [];

beforeAll(async () => {
  mkdirSync(SCREENSHOTS, { recursive: true });
  browser = await launchChromium();
}, BROWSER_TEST_TIMEOUT_MS);

afterAll(async () => {
  await browser?.close();
});

const leaving = (record: PageRecord) => record.requests.filter((url) => !url.startsWith(`${gateway().url}/`) && !/^(data|blob):/.test(url));

async function issue(opts: TestIssueOptions): Promise<string> {
  const key = await keys().issue(opts);
  pasted.push(key);
  return key;
}

const send = async (key: string, pathAndQuery: string, init: RequestInit = {}): Promise<number> => {
  const res = await fetch(`${gateway().url}${pathAndQuery}`, { ...init, headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json", ...init.headers } });
  await res.arrayBuffer();
  return res.status;
};

/** The key service's hourly history of a key, summed by outcome. */
async function reported(key: string): Promise<Record<string, number>> {
  const res = await adminRequest(keys().service.url, "GET", `/v1/keys/${keyIdOf(key)}/usage/history?granularity=hour`, { token: keys().service.adminToken });
  const sums: Record<string, number> = {};
  for (const bucket of res.body.buckets as Record<string, number>[]) for (const [field, n] of Object.entries(bucket)) if (field !== "start") sums[field] = (sums[field] ?? 0) + n;
  return sums;
}

/** Opens /portal at `width`, pastes `key` and waits for what the page shows: the overview or a message. */
async function paste(key: string, width = 1100): Promise<{ page: Page; record: PageRecord }> {
  const page = await browser.newPage({ viewport: { width, height: 900 } });
  const record = recordPage(page);
  expect((await page.goto(`${gateway().url}/portal`))?.status()).toBe(200);
  await page.locator("#key-input").fill(key);
  await page.locator("#key-form button[type=submit]").click();
  await page.locator("#overview:not([hidden]), #message:not([hidden])").first().waitFor({ timeout: 60_000 });
  return { page, record };
}

/** Chart.js's data on a canvas: each outcome's total; null when no chart is drawn there. */
const chartTotals = (page: Page, canvas: string) =>
  page.evaluate(
    `(() => { const c = Chart.getChart(${JSON.stringify(canvas)}); return c ? Object.fromEntries(c.data.datasets.map((d) => [d.label, d.data.reduce((a, b) => a + b, 0)])) : null; })()`,
  ) as Promise<Record<string, number> | null>;

const shot = (page: Page, name: string) => page.screenshot({ path: path.join(SCREENSHOTS, name), fullPage: true });

/** Nothing sent elsewhere, no key in a URL, and no console error but the browser's own line for each answer of `refusedWith` the page got. */
function expectClean(record: PageRecord, refusedWith?: number): void {
  expect(leaving(record)).toEqual([]);
  expect(record.errors.filter((e) => refusedWith === undefined || !e.endsWith(`the server responded with a status of ${refusedWith} (${refusedWith === 401 ? "Unauthorized" : refusedWith === 429 ? "Too Many Requests" : "Service Unavailable"})`))).toEqual([]);
  for (const key of pasted) expect(record.requests.filter((url) => url.includes(key) || url.includes(key.split(".")[2]!))).toEqual([]);
}

describe("/portal in a browser", { timeout: BROWSER_TEST_TIMEOUT_MS }, () => {
  it("shows the plan, limits, windows and both charts by outcome for a key with history; nothing leaves the gateway", async () => {
    const key = await issue({ plan: "business", name: "Portal Dog", scopes: ["pets:read"] });
    for (let i = 0; i < 5; i++) expect(await send(key, "/v1/pets?limit=1")).toBe(200);
    for (let i = 0; i < 2; i++) expect(await send(key, "/v1/pets?limit=0")).toBe(400);
    for (let i = 0; i < 3; i++) expect(await send(key, "/v1/pets", { method: "POST", body: JSON.stringify({ name: "Rex" }) })).toBe(403);
    await until("the gateway reported the key's requests", async () => {
      const sums = await reported(key);
      return sums["2xx"] === 5 && sums["4xx"] === 2 && sums.forbidden === 3;
    });

    const { page, record } = await paste(key);
    try {
      expect(await page.locator("#message").isVisible()).toBe(false);
      expect(await page.locator("#key-id").textContent()).toBe(keyIdOf(key));
      expect(await page.locator("#key-name").textContent()).toBe("Portal Dog");
      expect(await page.locator("#plan").textContent()).toBe("business");
      expect(await page.locator("#limits").textContent()).toBe("1,000 requests a minute, 100,000 a day");
      expect(await page.locator("#scopes").textContent()).toBe("pets:read");
      expect(await page.locator("#banned").textContent()).toBe("no");
      // The ten requests are in both windows; the page's own reads never count against the key's quota.
      expect(await page.locator("#window-minute .figures").textContent()).toBe("10 used of 1,000, 990 remaining");
      expect(await page.locator("#window-day .figures").textContent()).toBe("10 used of 100,000, 99,990 remaining");
      expect(await page.locator("#standing").isVisible()).toBe(false);

      for (const canvas of ["hours-chart", "days-chart"]) {
        expect(await page.locator(`#${canvas}`).isVisible()).toBe(true);
        const totals = await chartTotals(page, canvas);
        expect(totals).toMatchObject({ "4xx": 2, "5xx": 0, "limited (429)": 0, "banned (429)": 0, "forbidden (403)": 3 });
        // Its own 2xx, and the page's reads reported meanwhile.
        expect(totals!["2xx"]).toBeGreaterThanOrEqual(5);
      }
      expect(await page.locator("#hours-empty").isVisible()).toBe(false);
      await shot(page, "history.png");

      expect(record.requests.filter((url) => url.includes("/v1/"))).toEqual([
        `${gateway().url}/v1/me/usage?granularity=hour`,
        `${gateway().url}/v1/me/usage?granularity=day`,
        `${gateway().url}/v1/me`,
      ]);
      expect(record.requests).toContain(`${gateway().url}/portal/assets/chart.umd.min.js`);
      expectClean(record);
      // The key stays in the tab: a reload shows its usage again without pasting.
      await page.reload();
      await page.locator("#overview:not([hidden])").waitFor({ timeout: 60_000 });
      expect(await page.locator("#key-id").textContent()).toBe(keyIdOf(key));
      expect(await page.locator("#key-input").inputValue()).toBe("");
    } finally {
      await page.close();
    }
  });

  it("reads at a phone's width (360 px) without horizontal scrolling, charts included", async () => {
    const key = await issue({ plan: "pro", name: "A rather long key name that has to wrap on a small phone screen" });
    for (let i = 0; i < 3; i++) expect(await send(key, "/v1/pets?limit=1")).toBe(200);
    await until("the gateway reported the key's requests", async () => (await reported(key))["2xx"] === 3);
    const { page, record } = await paste(key, 360);
    try {
      expect(await page.locator("#hours-chart").isVisible()).toBe(true);
      const widths = (await page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")) as number[];
      expect(widths[0]).toBeLessThanOrEqual(widths[1]!);
      expect(widths[1]).toBe(360);
      const canvas = await page.locator("#hours-chart").boundingBox();
      expect(canvas!.width).toBeGreaterThan(250);
      expect(canvas!.x + canvas!.width).toBeLessThanOrEqual(360);
      await shot(page, "phone.png");
      expectClean(record);
    } finally {
      await page.close();
    }
  });

  it("says so when a key has no history yet", async () => {
    const key = await issue({ plan: "free", name: "Brand new" });
    const { page, record } = await paste(key);
    try {
      expect(await page.locator("#plan").textContent()).toBe("free");
      expect(await page.locator("#hours-empty").textContent()).toBe("No requests with this key in the last 48 hours.");
      expect(await page.locator("#days-empty").textContent()).toBe("No requests with this key in the last 30 days.");
      expect(await page.locator("#hours-chart").isVisible()).toBe(false);
      expect(await page.locator("#days-chart").isVisible()).toBe(false);
      expect(await page.locator("#last-used").textContent()).not.toBe("never");
      await shot(page, "empty.png");
      expectClean(record);
    } finally {
      await page.close();
    }
  });

  it("shows a banned key its plan, windows and history, with a notice that it is banned and until when", async () => {
    const key = await issue({ plan: "enterprise", perMinute: 2, perDay: 100, name: "Too eager" });
    await until("the key is banned", async () => (await send(key, "/v1/pets?limit=1")) === 429 && (await fetchCode(key)) === "api_key_banned");
    await until("the gateway reported the ban", async () => ((await reported(key)).banned ?? 0) > 0);
    const { page, record } = await paste(key);
    try {
      expect(await page.locator("#message").isVisible()).toBe(false);
      expect(await page.locator("#standing").isVisible()).toBe(true);
      expect(await page.locator("#standing-title").textContent()).toMatch(/^This key is banned until .+$/);
      expect(await page.locator("#standing-text").textContent()).toMatch(
        /^It kept sending requests while over its limit, so the API refuses all of them \(429 api_key_banned\) for 1[0-5] minutes\. Wait until then, and send more slowly after\.$/,
      );
      expect(await page.locator("#plan").textContent()).toBe("enterprise");
      expect(await page.locator("#banned").textContent()).toMatch(/^yes, until .+$/);
      expect(await page.locator("#window-minute .figures").textContent()).toBe("2 used of 2, 0 remaining");
      for (const canvas of ["hours-chart", "days-chart"]) {
        expect(await page.locator(`#${canvas}`).isVisible()).toBe(true);
        const totals = await chartTotals(page, canvas);
        expect(totals!["2xx"]).toBeGreaterThanOrEqual(2);
        expect(totals!["limited (429)"]).toBeGreaterThanOrEqual(2);
        expect(totals!["banned (429)"]).toBeGreaterThanOrEqual(1);
      }
      await shot(page, "banned.png");
      expectClean(record);
    } finally {
      await page.close();
    }
  });

  it("says a revoked key is not accepted", async () => {
    const key = await issue({ plan: "pro", name: "Revoked" });
    await keys().revoke(key);
    await until("the gateway refuses the revoked key", async () => (await send(key, "/v1/pets?limit=1")) === 401);
    const { page, record } = await paste(key);
    try {
      expect(await page.locator("#message-title").textContent()).toBe("This key is not accepted");
      expect(await page.locator("#message-text").textContent()).toBe("API key revoked. A revoked or expired key stays refused; ask for a new one.");
      expect(await page.locator("#overview").isVisible()).toBe(false);
      await shot(page, "revoked.png");
      expectClean(record, 401);
    } finally {
      await page.close();
    }
  });

  it("puts no key in the gateway's log", () => {
    expect(gateway().output()).toContain('"route":"/v1/me"');
    for (const key of pasted) {
      expect(gateway().output()).not.toContain(key);
      expect(gateway().output()).not.toContain(key.split(".")[2]);
    }
  });

  // Last: it stops the key service.
  it("says usage cannot be read while the key service is down (503), and still shows the key's plan and windows", async () => {
    const key = await issue({ plan: "pro", name: "Outage" });
    await keys().service.stop();
    const { page, record } = await paste(key);
    try {
      expect(await page.locator("#plan").textContent()).toBe("pro");
      const error = page.locator("#history-error");
      expect(await error.isVisible()).toBe(true);
      expect(await error.textContent()).toMatch(/^The key service is not answering: Usage cannot be read right now; try again in \d+ seconds\. Your key still works on the API\.$/);
      expect(await page.locator("#hours-chart").isVisible()).toBe(false);
      await shot(page, "key-service-down.png");
      expectClean(record, 503);
    } finally {
      await page.close();
    }
  });
});

async function fetchCode(key: string): Promise<string | undefined> {
  const res = await fetch(`${gateway().url}/v1/pets?limit=1`, { headers: { Authorization: `Bearer ${key}` } });
  return res.status === 429 ? ((await res.json()) as { code: string }).code : undefined;
}

describe("GET /portal over HTTP", () => {
  it("serves the page, its files and Chart.js's build under the portal's CSP: no inline script, every file from /portal/assets/", async () => {
    const page = await fetch(`${gateway().url}/portal`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(page.headers.get("content-security-policy")).toBe(PORTAL_CSP);
    for (const directive of ["default-src 'none'", "script-src 'self'", "connect-src 'self'", "form-action 'none'", "frame-ancestors 'none'"]) expect(PORTAL_CSP).toContain(directive);
    const html = await page.text();
    const sources = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(sources.filter((s) => s !== "/docs").every((s) => s!.startsWith("/portal/assets/"))).toBe(true);
    expect(html).not.toMatch(/<script>[^<]|<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/\sstyle="/);
    expect(html).toContain('<body data-signup="off">');

    const chart = await fetch(`${gateway().url}/portal/assets/chart.umd.min.js`, { headers: { "Accept-Encoding": "gzip" } });
    expect(chart.status).toBe(200);
    expect(chart.headers.get("content-encoding")).toBe("gzip");
    expect(chart.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(await chart.text()).toContain("window.Chart=");
    for (const file of ["portal.js", "portal.css", "favicon.svg"]) expect((await fetch(`${gateway().url}/portal/assets/${file}`)).status, file).toBe(200);
    for (const file of ["chart.umd.min.js.map", "../page/portal.js", "chart.js", "package.json"]) expect((await fetch(`${gateway().url}/portal/assets/${file}`)).status, file).toBe(404);
  });

  it("has no sign-up with SIGNUP off: POST /portal/signup answers 404", async () => {
    const res = await fetch(`${gateway().url}/portal/signup`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ name: "A", email: "a@example.com" }) });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ code: "not_found", status: 404 });
  });
});
