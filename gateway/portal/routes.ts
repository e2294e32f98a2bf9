import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import express from "express";
import { fromFile, fromText, serveAsset, type Asset } from "../../lib/http/static-assets.ts";
import { signupHandler, type SignupDeps } from "./signup.ts";

/**
 * GET /portal (DESIGN, Usage history and the consumer's view): the key holder's page, its script
 * and stylesheet, and Chart.js's own UMD build from node_modules, all from this gateway. No key
 * and no quota to load the page: it calls /v1/me and /v1/me/usage with the key the holder pastes,
 * and those count like any request.
 */
export const PORTAL_PATH = "/portal";

/**
 * As /docs's policy (lib/http/docs.ts), tighter: images only from here (its icon; the charts are
 * drawn on a canvas), no form posting anywhere (the page's script sends its requests itself, so a
 * form can never put the key in an address), nothing from another origin, no inline script, no
 * framing.
 */
export const PORTAL_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join("; ");

/** The page's own files, read at start: they change with the process (no-cache), not with a package. */
const pageFile = (name: string) => readFileSync(new URL(`./page/${name}`, import.meta.url), "utf8");
const CHART_DIR = path.dirname(createRequire(import.meta.url).resolve("chart.js"));
const JS = "text/javascript; charset=utf-8";

export interface PortalDeps extends SignupDeps {
  /** SIGNUP: `open` shows the sign-up form and answers POST /portal/signup; `off` answers it 404. */
  signup: "off" | "open";
}

export function portalRouter(deps: PortalDeps): express.Router {
  // The page says whether sign-up is open in a data attribute: its script reads it (no inline script).
  const html = pageFile("portal.html").replace('<body data-signup="off">', `<body data-signup="${deps.signup}">`);
  const assets: ReadonlyArray<[string, Asset]> = [
    ["", fromText(html, "text/html; charset=utf-8")],
    ["/assets/portal.js", fromText(pageFile("portal.js"), JS)],
    ["/assets/portal.css", fromText(pageFile("portal.css"), "text/css; charset=utf-8")],
    ["/assets/favicon.svg", fromText(pageFile("favicon.svg"), "image/svg+xml")],
    // The minified UMD build defines window.Chart; its source map is not served.
    ["/assets/chart.umd.min.js", fromFile(path.join(CHART_DIR, "chart.umd.min.js"), JS)],
  ];
  const router = express.Router({ strict: true, caseSensitive: true });
  router.get(`${PORTAL_PATH}/`, (_req, res) => res.redirect(301, PORTAL_PATH));
  for (const [name, asset] of assets) router.get(`${PORTAL_PATH}${name}`, serveAsset(asset, PORTAL_CSP));
  if (deps.signup === "open") router.post(`${PORTAL_PATH}/signup`, ...signupHandler(deps));
  return router;
}
