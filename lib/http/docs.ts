import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { promisify } from "node:util";
import { gzip } from "node:zlib";
import express, { type Request, type Response } from "express";
import { getOrCreate } from "../get-or-create.ts";

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

interface Asset {
  type: string;
  /** Package files change only with the package; the page and its script with the process. */
  cacheControl: string;
  body: () => Promise<Buffer>;
}

const fromPackage = (file: string, type: string): Asset => ({ type, cacheControl: "public, max-age=3600", body: () => readFile(path.join(UI_DIR, file)) });
const inline = (text: string, type: string): Asset => ({ type, cacheControl: "no-cache", body: async () => Buffer.from(text) });

const PACKAGE_ASSETS: ReadonlyArray<[string, Asset]> = [
  ["/swagger-ui-bundle.js", fromPackage("swagger-ui-bundle.js", "text/javascript; charset=utf-8")],
  ["/swagger-ui.css", fromPackage("swagger-ui.css", "text/css; charset=utf-8")],
  ["/favicon-32x32.png", fromPackage("favicon-32x32.png", "image/png")],
];

interface Loaded {
  plain: Buffer;
  gzip: Buffer;
}

const gzipAsync = promisify(gzip);

/**
 * Read and compressed on first use (the bundle is 1.7 MB, about 0.5 MB gzipped), then kept. Both
 * run off the event loop, so the first visitor does not stall API requests.
 */
const loaded = new Map<Asset, Promise<Loaded>>();

function load(asset: Asset): Promise<Loaded> {
  return getOrCreate(loaded, asset, () => {
    const made = (async () => {
      const plain = await asset.body();
      return { plain, gzip: await gzipAsync(plain) };
    })();
    // A failed read (500 for this request) is tried again by the next one, not kept.
    made.catch(() => loaded.delete(asset));
    return made;
  });
}

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
    ["", inline(page(title), "text/html; charset=utf-8")],
    ["/init.js", inline(init(openapiPath), "text/javascript; charset=utf-8")],
    ...PACKAGE_ASSETS,
  ];
  const router = express.Router({ strict: true });
  router.get(`${DOCS_PATH}/`, (_req, res) => res.redirect(301, DOCS_PATH));
  for (const [name, asset] of assets) {
    router.get(`${DOCS_PATH}${name}`, async (req: Request, res: Response) => {
      const { plain, gzip } = await load(asset);
      const compressed = req.acceptsEncodings("gzip", "identity") === "gzip";
      res.setHeader("Content-Security-Policy", DOCS_CSP);
      res.setHeader("Cache-Control", asset.cacheControl);
      res.setHeader("Content-Type", asset.type);
      res.setHeader("Vary", "Accept-Encoding");
      if (compressed) res.setHeader("Content-Encoding", "gzip");
      res.setHeader("Content-Length", (compressed ? gzip : plain).length);
      res.end(req.method === "HEAD" ? undefined : compressed ? gzip : plain);
    });
  }
  return router;
}
