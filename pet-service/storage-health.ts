import type { Logger } from "../lib/logger.ts";
import { StorageUnavailableError } from "../lib/storage-faults.ts";
import type { PetStore } from "./store/pet-store.ts";

/**
 * The pet service's health follows its database. While the database cannot be reached:
 * - health (petstore.v1.PetService) is NOT_SERVING, so the gateway's /readyz and Kubernetes'
 *   readiness probe take the replica out of rotation;
 * - every call that needs the database fails at once with StorageUnavailableError (UNAVAILABLE),
 *   without waiting on a connection attempt: fail fast, never hang;
 * - the database is pinged every `downIntervalMs`, and the first answer puts everything back.
 * While it answers it is pinged every `upIntervalMs`, so an outage is noticed without traffic;
 * with traffic, the first call that finds it unreachable makes it pinged at once, and a failed
 * ping turns health NOT_SERVING.
 * Only "unreachable" stops calls: a full disk or a read-only database fails the writes that meet
 * it, and reads go on.
 */
export interface StorageHealth {
  /** Why the database cannot serve now ("database unreachable"), undefined while it can. */
  readonly downReason: string | undefined;
  /** `store` with every call failing fast while the database is unreachable, and reporting its faults here. */
  guard(store: PetStore): PetStore;
  /** Starts pinging (the first ping at once). */
  start(): void;
  /** Stops pinging; the state stays as it was. Idempotent. */
  stop(): void;
}

export interface StorageHealthOptions {
  store: Pick<PetStore, "ping">;
  logger: Logger;
  /** Told every change: true when the database serves again, false when it stops. */
  onChange(serving: boolean): void;
  upIntervalMs?: number;
  downIntervalMs?: number;
  /** A ping that takes longer counts as unreachable. */
  pingTimeoutMs?: number;
}

const UNREACHABLE = "database unreachable";

export function createStorageHealth(opts: StorageHealthOptions): StorageHealth {
  const { store, logger, onChange, upIntervalMs = 2_000, downIntervalMs = 500, pingTimeoutMs = 2_000 } = opts;
  let downReason: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  let running = false;
  let pinging = false;
  // unref: pinging alone never keeps the process alive.
  const schedule = (ms: number) => {
    clearTimeout(timer);
    timer = setTimeout(() => void ping(), ms).unref();
  };

  const setDown = (err: unknown) => {
    if (downReason) return;
    downReason = UNREACHABLE;
    logger.error({ err: causeOf(err) }, "database unreachable: not serving until it answers again");
    onChange(false);
    // Found by a call: ping on the down schedule from now on, not at the next healthy-schedule
    // ping (upIntervalMs away). A ping in flight reschedules when it ends.
    if (running && !pinging) schedule(downIntervalMs);
  };
  const setUp = () => {
    if (!downReason) return;
    downReason = undefined;
    logger.info("database reachable again: serving");
    onChange(true);
  };
  // One call's connection failing is not yet the database gone (a new pool connection can fail
  // alone: a name lookup or a reset while the others serve): a ping decides at once, and only its
  // failure stops calls. Before, one such failure took the replica out for downIntervalMs, and
  // with its peer just killed the gateways had nowhere to go (the compose kill test's 503s).
  const report = (err: unknown) => {
    if (err instanceof StorageUnavailableError && err.fault === "unreachable" && !downReason && !pinging) void ping();
  };

  const ping = async () => {
    let bound: NodeJS.Timeout | undefined;
    pinging = true;
    try {
      await Promise.race([
        store.ping(),
        new Promise((_, reject) => (bound = setTimeout(() => reject(new StorageUnavailableError("unreachable")), pingTimeoutMs))),
      ]);
      setUp();
    } catch (err) {
      if (err instanceof StorageUnavailableError) setDown(err);
      else logger.error({ err }, "database ping failed");
    } finally {
      clearTimeout(bound);
      pinging = false;
    }
    if (running) schedule(downReason ? downIntervalMs : upIntervalMs);
  };

  /** Runs a store call unless the database is known to be unreachable; reports its storage faults. */
  const gated = <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
    (...args: A): Promise<R> => {
      if (downReason) return Promise.reject(new StorageUnavailableError("unreachable"));
      return call(...args).catch((err: unknown) => {
        report(err);
        throw err;
      });
    };

  return {
    get downReason() {
      return downReason;
    },
    guard: (s) => ({
      create: gated(s.create.bind(s)),
      createOnce: gated(s.createOnce.bind(s)),
      list: gated(s.list.bind(s)),
      get: gated(s.get.bind(s)),
      ping: s.ping.bind(s),
      close: s.close.bind(s),
      pageTokenSecret: s.pageTokenSecret,
      schema: s.schema,
    }),
    start() {
      if (running) return;
      running = true;
      void ping();
    },
    stop() {
      running = false;
      clearTimeout(timer);
    },
  };
}

/** The driver's error behind a StorageUnavailableError, for the log. */
function causeOf(err: unknown): unknown {
  return err instanceof StorageUnavailableError && err.cause ? err.cause : err;
}
