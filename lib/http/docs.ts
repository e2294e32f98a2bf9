import { createRequire } from "node:module";
import path from "node:path";
import express from "express";
import { fromFile, fromText, serveAsset, type Asset } from "./static-assets.ts";

/**
 * GET /docs: an API reference, rendered in the browser by Swagger UI from the description the
 * process serves (the gateway's /v1/openapi.json, the key service's /openapi.json). Every file
 * comes from the swagger-ui-dist package or from here: no CDN, and nothing on the page asks any
 * other host for anything.
 */
export const DOCS_PATH = "/docs";

const UI_DIR = path.dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));

/**
 * The JSON API's CSP is `default-src 'none'`; the page needs its own scripts, styles, images
 * (Swagger UI's icons are data: URIs) and fetches to this origin (the description, "Try it out").
 * Still no inline script, nothing from another origin, no framing.
 */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join("; ");

const page = (title: string) => `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<link rel="stylesheet" href="${DOCS_PATH}/swagger-ui.css">
<link rel="icon" type="image/png" sizes="32x32" href="${DOCS_PATH}/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="${DOCS_PATH}/swagger-ui-bundle.js"></script>
<script src="${DOCS_PATH}/init.js"></script>
</body>
</html>
`;

/**
 * Every operation expanded (parameters, responses and their headers visible without a click);
 * the validator badge off (it would send the description to validator.swagger.io); no URL bar
 * (the standalone layout's, which would fetch any URL a visitor types).
 */
const init = (openapiPath: string) => `window.ui = SwaggerUIBundle({
  url: ${JSON.stringify(openapiPath)},
  dom_id: "#swagger-ui",
  deepLinking: true,
  docExpansion: "full",
  defaultModelsExpandDepth: 1,
  displayOperationId: true,
  validatorUrl: null,
});
`;

const fromPackage = (file: string, type: string): Asset => fromFile(path.join(UI_DIR, file), type);

const PACKAGE_ASSETS: ReadonlyArray<[string, Asset]> = [
  ["/swagger-ui-bundle.js", fromPackage("swagger-ui-bundle.js", "text/javascript; charset=utf-8")],
  ["/swagger-ui.css", fromPackage("swagger-ui.css", "text/css; charset=utf-8")],
  ["/favicon-32x32.png", fromPackage("favicon-32x32.png", "image/png")],
];

export interface DocsPage {
  /** The page's title: "Pet Store API reference". */
  title: string;
  /** Where this process serves its OpenAPI description: "/v1/openapi.json". */
  openapiPath: string;
}

/**
 * The docs page and its files; no credentials, no quota (like the description itself). The only
 * files served: not the package's index.html and initializer, which load the public Petstore demo.
 */
export function docsRouter({ title, openapiPath }: DocsPage): express.Router {
  const assets: ReadonlyArray<[string, Asset]> = [
    ["", fromText(page(title), "text/html; charset=utf-8")],
    ["/init.js", fromText(init(openapiPath), "text/javascript; charset=utf-8")],
    ...PACKAGE_ASSETS,
  ];
  const router = express.Router({ strict: true });
  router.get(`${DOCS_PATH}/`, (_req, res) => res.redirect(301, DOCS_PATH));
  for (const [name, asset] of assets) {
    router.get(`${DOCS_PATH}${name}`, serveAsset(asset, DOCS_CSP));
  }
  return router;
}
