import { readFile } from "node:fs/promises";
import { promisify } from "node:util";
import { gzip } from "node:zlib";
import type { Request, RequestHandler, Response } from "express";
import { getOrCreate } from "../get-or-create.ts";

/** A file a page needs (the /docs and /portal pages): served as is, gzipped when the client accepts it. */
export interface Asset {
  type: string;
  /** Package files change only with the package; a page and its own script with the process. */
  cacheControl: string;
  body: () => Promise<Buffer>;
}

export const fromFile = (file: string, type: string): Asset => ({ type, cacheControl: "public, max-age=3600", body: () => readFile(file) });
export const fromText = (text: string, type: string): Asset => ({ type, cacheControl: "no-cache", body: async () => Buffer.from(text) });

interface Loaded {
  plain: Buffer;
  gzip: Buffer;
}

const gzipAsync = promisify(gzip);

/**
 * Read and compressed on first use (Swagger UI's bundle is 1.7 MB, about 0.5 MB gzipped), then
 * kept. Both run off the event loop, so the first visitor does not stall API requests.
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

/** GET (and HEAD) of one asset under the page's Content-Security-Policy. */
export function serveAsset(asset: Asset, csp: string): RequestHandler {
  return async (req: Request, res: Response) => {
    const { plain, gzip } = await load(asset);
    const compressed = req.acceptsEncodings("gzip", "identity") === "gzip";
    res.setHeader("Content-Security-Policy", csp);
    res.setHeader("Cache-Control", asset.cacheControl);
    res.setHeader("Content-Type", asset.type);
    res.setHeader("Vary", "Accept-Encoding");
    if (compressed) res.setHeader("Content-Encoding", "gzip");
    res.setHeader("Content-Length", (compressed ? gzip : plain).length);
    res.end(req.method === "HEAD" ? undefined : compressed ? gzip : plain);
  };
}
