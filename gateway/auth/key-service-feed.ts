/**
 * The gateway's side of the key service (DESIGN, Key service: Gateways): the JWKS, then every
 * event of GET /v1/events from the start to the head (the first full load: from then on the
 * gateway can decide requests), then a long poll (wait=25) forever. Errors retry with backoff
 * (100 ms doubling to 2 s; to 500 ms before the first load) from the last event applied; whatever was loaded stays in force through
 * an outage. Nothing here is on a request's path.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { KeyEventJson, Page } from "../../lib/key-record.ts";
import type { Logger } from "../../lib/logger.ts";
import type { PublicKeySet } from "./jwks.ts";
import type { KeyState } from "./key-state.ts";
import { keyServiceEndpoint } from "./key-service-endpoint.ts";

export interface KeyServiceFeedOptions {
  /** KEYS_URL: the key service's base URL. */
  url: string;
  /** KEYS_SERVICE_TOKEN (scope `gateway`); without one the feed is refused and the gateway stays not ready. */
  token: string | undefined;
  state: KeyState;
  publicKeys: PublicKeySet;
  logger: Logger;
}

export interface KeyServiceFeed {
  /** Why requests cannot be decided yet (readiness), undefined once loaded. */
  notReady(): string | undefined;
  /** Whether the key service answered the feed's last request (loaded and following). */
  following(): boolean;
  close(): void;
}

const PAGE = 1000;
/** Seconds the key service holds a long poll when nothing new comes. */
const WAIT_SECONDS = 25;
/** How often the JWKS is fetched again besides when an event names an unknown kid. */
const JWKS_REFRESH_MS = 60_000;
const BACKOFF_MIN_MS = 100;
const BACKOFF_MAX_MS = 2_000;
/** Before the first load every /v1 request gets 503: retry sooner, to serve soon after the key service answers. */
const COLD_BACKOFF_MAX_MS = 500;

class FeedHttpError extends Error {
  readonly status: number;
  constructor(status: number, what: string) {
    super(`${what}: HTTP ${status}`);
    this.status = status;
  }
}

export function followKeyService(opts: KeyServiceFeedOptions): KeyServiceFeed {
  const { base, headers } = keyServiceEndpoint(opts);
  const stop = new AbortController();
  let after = 0;
  /** Why the last attempt failed; undefined while the key service answers. */
  let lastError: string | undefined;
  let jwksAt = 0;
  /** A kid the JWKS held did not name showed up in an event (or none was fetched yet): fetch before going on. */
  let jwksDue = true;
  let loggedRefusal = false;

  const getJson = async (path: string, what: string, timeoutMs: number): Promise<unknown> => {
    const res = await fetch(`${base}${path}`, { headers, signal: AbortSignal.any([stop.signal, AbortSignal.timeout(timeoutMs)]) });
    if (!res.ok) {
      await res.body?.cancel();
      throw new FeedHttpError(res.status, what);
    }
    return res.json();
  };

  const refreshJwks = async () => {
    if (!jwksDue && Date.now() - jwksAt < JWKS_REFRESH_MS) return;
    opts.publicKeys.replace(await getJson("/.well-known/jwks.json", "JWKS", 10_000));
    jwksAt = Date.now();
    jwksDue = false;
  };

  /** One page of events after `after`, applied; whether the head was reached. */
  const readPage = async (waitSeconds: number): Promise<boolean> => {
    const page = (await getJson(`/v1/events?after=${after}&limit=${PAGE}&wait=${waitSeconds}`, "events", (waitSeconds + 10) * 1000)) as Page<KeyEventJson>;
    if (!Array.isArray(page?.items)) throw new Error("events: not a page of events");
    for (const event of page.items) {
      opts.state.apply(event);
      after = event.seq;
      // A key signed by a pair the gateway has not seen yet: fetch the JWKS before its requests arrive.
      const kid = event.changes?.kid;
      if (typeof kid === "string" && !opts.publicKeys.has(kid)) jwksDue = true;
    }
    await refreshJwks();
    return page.nextCursor === null;
  };

  const run = async () => {
    let backoff = BACKOFF_MIN_MS;
    while (!stop.signal.aborted) {
      try {
        await refreshJwks();
        if (!opts.state.loaded()) {
          while (!(await readPage(0)));
          opts.state.markLoaded();
          lastError = undefined;
          opts.logger.info({ keys: opts.state.size(), seq: after }, "key state loaded from the key service");
        } else {
          await readPage(WAIT_SECONDS);
        }
        backoff = BACKOFF_MIN_MS;
        if (lastError !== undefined) opts.logger.info({ seq: after }, "key service answering again");
        lastError = undefined;
      } catch (err) {
        if (stop.signal.aborted) return;
        const refused = err instanceof FeedHttpError && (err.status === 401 || err.status === 403);
        const message = refused
          ? `the key service refused KEYS_SERVICE_TOKEN (HTTP ${(err as FeedHttpError).status}): set it to an admin token with the gateway scope`
          : `key service unreachable (${(err as Error).message})`;
        if (lastError === undefined || (refused && !loggedRefusal)) {
          opts.logger.warn({ url: base, loaded: opts.state.loaded() }, message);
          loggedRefusal ||= refused;
        }
        lastError = message;
        await sleep(backoff, undefined, { signal: stop.signal }).catch(() => {});
        backoff = Math.min(backoff * 2, opts.state.loaded() ? BACKOFF_MAX_MS : COLD_BACKOFF_MAX_MS);
      }
    }
  };
  void run();

  return {
    following: () => opts.state.loaded() && lastError === undefined,
    notReady: () => (opts.state.loaded() ? undefined : `key state not loaded from the key service at ${base} (${lastError ?? "loading"})`),
    close: () => stop.abort(),
  };
}
