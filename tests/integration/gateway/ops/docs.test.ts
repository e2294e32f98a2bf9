import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOCS_CSP } from "../../../../lib/http/docs.ts";
import { launchChromium, recordPage, type PageRecord } from "../../../../testkit/browser.ts";
import { createTestKeys, startGateway, type RunningGateway, type TestKeys } from "../../../../testkit/gateway.ts";
import { startPetService, type RunningPetService } from "../../../../testkit/pet-service.ts";

// GET /docs as a reader sees it: the real gateway wiring and pet service, opened in headless
// Chromium (Debian's), with every request and console message recorded.
let pets: RunningPetService;
let keys: TestKeys;
let gateway: RunningGateway;
let browser: Browser;
// A browser on a shared, loaded machine: generous hang guards, no timing assertions.
const BROWSER_TEST_TIMEOUT_MS = 120_000;

beforeAll(async () => {
  pets = await startPetService();
  keys = await createTestKeys();
  gateway = await startGateway({ petServiceAddr: pets.address, keys });
  browser = await launchChromium();
}, BROWSER_TEST_TIMEOUT_MS);

afterAll(async () => {
  await browser?.close();
  await gateway?.close();
  await pets?.stop();
  await keys?.remove();
});

/** Opens /docs in a fresh page and waits until Swagger UI has rendered the operations. */
async function openDocs(): Promise<{ page: Page; record: PageRecord }> {
  const page = await browser.newPage();
  const record = recordPage(page);
  const response = await page.goto(`${gateway.url}/docs`);
  expect(response?.status()).toBe(200);
  await page.locator(".opblock").first().waitFor({ timeout: 60_000 });
  return { page, record };
}

/** Requests to anywhere but the gateway that served the page (data: and blob: URLs stay in the page). */
const leaving = (record: PageRecord) =>
  record.requests.filter((url) => !url.startsWith(`${gateway.url}/`) && !/^(data|blob):/.test(url));

describe("GET /docs in a browser", { timeout: BROWSER_TEST_TIMEOUT_MS }, () => {
  it("renders the five operations from /v1/openapi.json, getPet marked deprecated, with no console errors and no request leaving the gateway", async () => {
    const { page, record } = await openDocs();
    try {
      const summaries = await page.locator(".opblock-summary").evaluateAll((els) =>
        els.map((el) => [el.querySelector(".opblock-summary-method")?.textContent, el.querySelector("[data-path]")?.getAttribute("data-path")]),
      );
      expect(summaries).toEqual([
        ["GET", "/pets"],
        ["POST", "/pets"],
        ["GET", "/pets/{petId}"],
        ["GET", "/me"],
        ["GET", "/me/usage"],
      ]);
      for (const id of ["listPets", "createPet", "getPet"]) await expect(page.locator(`#operations-pets-${id}`).isVisible()).resolves.toBe(true);
      for (const id of ["getMe", "getMyUsage"]) await expect(page.locator(`#operations-me-${id}`).isVisible()).resolves.toBe(true);

      const deprecated = page.locator(".opblock-deprecated");
      expect(await deprecated.evaluateAll((els) => els.map((el) => el.id))).toEqual(["operations-pets-getPet"]);
      expect(await page.locator("#operations-pets-getPet").innerText()).toContain("Warning: Deprecated");
      expect(await page.locator("#operations-pets-listPets").innerText()).not.toContain("Deprecated");

      // Parameters are shown, with their constraints.
      const limit = page.locator('#operations-pets-listPets tr[data-param-name="limit"]');
      expect(await limit.innerText()).toMatch(/integer[\s\S]*query[\s\S]*Default value : 20/);
      // "*" marks a required parameter.
      // "*" marks a required parameter.
      const petId = await page.locator('#operations-pets-getPet tr[data-param-name="petId"]').innerText();
      expect(petId).toMatch(/^petId\s*\*\s+integer\(\$int64\)\s+\(path\)/);

      expect(record.requests).toContain(`${gateway.url}/v1/openapi.json`);
      expect(leaving(record)).toEqual([]);
      expect(record.errors).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it("documents paging on listPets: the cursor parameter and the Link response header", async () => {
    const { page, record } = await openDocs();
    try {
      const listPets = page.locator("#operations-pets-listPets");
      const parameters = await listPets.locator("tr[data-param-name]").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-param-name")));
      expect(parameters).toContain("cursor");
      expect(await listPets.locator('tr[data-param-name="cursor"]').innerText()).toMatch(/^cursor\s+string\s+\(query\)/);
      const headers = await listPets.locator('tr.response[data-code="200"] .headers td.header-col:first-child').allInnerTexts();
      expect(headers).toContain("Link");
      expect(record.errors).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it("tries listPets with a key from Authorize: 200 from this gateway, still nothing sent elsewhere", async () => {
    const key = await keys.issue({ plan: "free" });
    const created = await fetch(`${gateway.url}/v1/pets`, {
      method: "POST",
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
      body: JSON.stringify({ name: "Docs Dog", categoryId: 1 }),
    });
    expect(created.status).toBe(201);

    const { page, record } = await openDocs();
    try {
      await page.locator("button.authorize").first().click();
      const modal = page.locator(".modal-ux");
      await modal.locator("input").first().fill(key);
      await modal.locator("button.authorize").click();
      await modal.locator("button.btn-done").click();

      const listPets = page.locator("#operations-pets-listPets");
      await listPets.locator(".try-out__btn").click();
      await listPets.locator("button.execute").click();
      const status = listPets.locator(".live-responses-table tbody .response-col_status").first();
      await status.waitFor({ timeout: 60_000 });
      expect((await status.innerText()).trim()).toBe("200");
      expect(await listPets.locator(".live-responses-table").innerText()).toContain("Docs Dog");

      expect(record.requests.filter((url) => url.startsWith(`${gateway.url}/v1/pets?`))).toEqual([`${gateway.url}/v1/pets?limit=20`]);
      expect(leaving(record)).toEqual([]);
      expect(record.errors).toEqual([]);
    } finally {
      await page.close();
    }
  });
});

describe("GET /docs over HTTP", () => {
  it("serves the page with a CSP of its own: scripts, styles and fetches from this origin only; the API keeps default-src 'none'", async () => {
    const page = await fetch(`${gateway.url}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(page.headers.get("content-security-policy")).toBe(DOCS_CSP);
    for (const directive of ["default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"]) {
      expect(DOCS_CSP).toContain(directive);
    }
    const html = await page.text();
    // Every script and stylesheet is a path on this gateway: no CDN, no inline script.
    const sources = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(sources.length).toBeGreaterThanOrEqual(3);
    for (const src of sources) expect(src).toMatch(/^\/docs\//);
    expect(html).not.toMatch(/<script>[^<]/);

    const api = await fetch(`${gateway.url}/v1/openapi.json`);
    expect(api.headers.get("content-security-policy")).toBe("default-src 'none'; frame-ancestors 'none'");
  });

  it("serves swagger-ui-dist's own bundle, gzipped when the client accepts it", async () => {
    const plain = await fetch(`${gateway.url}/docs/swagger-ui-bundle.js`, { headers: { "Accept-Encoding": "identity" } });
    expect(plain.status).toBe(200);
    expect(plain.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(plain.headers.get("content-encoding")).toBeNull();
    const body = await plain.text();
    expect(body).toContain("SwaggerUIBundle");

    // fetch decodes gzip itself: the same text arrives, but fewer bytes crossed the wire.
    const zipped = await fetch(`${gateway.url}/docs/swagger-ui-bundle.js`, { headers: { "Accept-Encoding": "gzip" } });
    expect(zipped.headers.get("content-encoding")).toBe("gzip");
    expect(Number(zipped.headers.get("content-length"))).toBeLessThan(body.length / 2);
    expect(await zipped.text()).toBe(body);
  });

  it("serves nothing else of the package: not its demo index.html or initializer (they load the public Petstore), not source maps", async () => {
    for (const file of ["index.html", "swagger-initializer.js", "swagger-ui-bundle.js.map", "package.json", "../package.json"]) {
      const res = await fetch(`${gateway.url}/docs/${file}`);
      expect(res.status, file).toBe(404);
      expect(await res.json()).toMatchObject({ code: "not_found", status: 404 });
    }
    const slash = await fetch(`${gateway.url}/docs/`, { redirect: "manual" });
    expect(slash.status).toBe(301);
    expect(slash.headers.get("location")).toBe("/docs");
  });
});
