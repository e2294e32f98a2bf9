import { chromium, type Browser, type Page } from "playwright-core";

/** Debian's chromium (scripts/test-deps.sh, npm test's pretest, installs it when missing); CHROMIUM_PATH names another build. */
const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/**
 * Headless, no sandbox (tests run as root), and none of chromium's own traffic (component updates,
 * sync, field trials, QUIC probes): every request a test records is one the page made.
 */
const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: FLAGS });
}

/** What a page did while a test drove it: every request's URL, console errors, uncaught exceptions, failed requests. */
export interface PageRecord {
  requests: string[];
  errors: string[];
}

export function recordPage(page: Page): PageRecord {
  const record: PageRecord = { requests: [], errors: [] };
  page.on("request", (req) => record.requests.push(req.url()));
  page.on("console", (msg) => {
    if (msg.type() === "error") record.errors.push(`console: ${msg.text()}`);
  });
  page.on("pageerror", (err) => record.errors.push(`uncaught: ${err.message}`));
  page.on("requestfailed", (req) => record.errors.push(`request failed: ${req.url()} (${req.failure()?.errorText})`));
  return record;
}
