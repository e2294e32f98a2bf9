import type { PrivateRedis } from "../testkit/redis-server.ts";
import type { KeyServiceProc } from "./key-service.ts";
import { encodeRequest, grpcFrame, methodPath, type PetMethod } from "./grpc-frame.ts";
import { h2load, openLoop, wrk, type HttpTarget, type LoadOptions } from "./load.ts";
import type { Scenario } from "./scenario.ts";
import { rawCall, type Service } from "./stack.ts";

/**
 * What the builders of `npm run bench`'s scenarios share (scenarios.ts, hop-scenarios.ts,
 * postgres-scenarios.ts): where the run lives, the key, the shared pet service, which scenarios
 * are wanted, and how a row is made of a front and the processes whose CPU it measures.
 */

/** Every process of the bench logs as production does. */
export const LOG_LEVEL = "info";
/** The body of every create the bench sends. */
export const NEW_PET = { name: "Bench pet", categoryId: 7, status: "pending" };

export interface KitOptions {
  dir: string;
  /** The key service every gateway follows (its own process). */
  keyService: KeyServiceProc;
  /** The Authorization header of a key that is never limited. */
  auth: Record<string, string>;
  /** The same, of a key with scopes (pets:read) and allowed networks (loopback among them). */
  scopedAuth: Record<string, string>;
  redis: PrivateRedis;
  settings: { connections: number; seed: number; clientWarmupCalls: number };
  profileDir?: string;
  /** Only these scenario keys (the processes of the others are not started either). */
  only?: string[];
}

export interface ScenarioKit extends KitOptions {
  /** The pet service every scenario shares unless it starts its own. */
  pet: Service;
  wanted(key: string): boolean;
  /** `--profile`'s directory, spread into the options of every process started. */
  profile: { profileDir?: string };
  loadOpts(pids: Record<string, number>, durationSeconds: number): LoadOptions;
  /** GET /v1/pets?limit=20, GET /v1/bench-noop (a 404 after the guard), POST /v1/pets through a front. */
  list(front: Service): HttpTarget;
  noop(front: Service): HttpTarget;
  create(front: Service): HttpTarget;
  /** A row driven by wrk (and open loop at a rate): its front, and the pet service (`petService`, the shared one unless given) and Redis when its requests go through them. */
  http(key: string, label: string, target: HttpTarget, front: Service, withRedis?: boolean, viaPet?: boolean, petService?: Service): Scenario;
  /** A row driven by h2load straight at a pet service: one request, checked to answer OK first. */
  grpcDirect(key: string, label: string, method: PetMethod, request: object, petService?: Service): Promise<Scenario>;
  /** What a builder created outside its processes, dropped after stopAll(). */
  cleanUps: (() => Promise<void>)[];
  /** Scenarios that could not run here, with the reason (shown under the table). */
  notMeasured: string[];
}

export function createKit(opts: KitOptions, pet: Service): ScenarioKit {
  const { auth, redis, settings, dir } = opts;
  const loadOpts = (pids: Record<string, number>, durationSeconds: number) => ({ durationSeconds, connections: settings.connections, pids, dir });
  const pids = (front: Service | undefined, uses: { pet: boolean; redis: boolean }, petService: Service) => ({
    ...(front && { front: front.proc.pid }),
    ...(uses.pet && { pet: petService.proc.pid }),
    ...(uses.redis && { redis: redis.process.pid! }),
  });
  return {
    ...opts,
    pet,
    wanted: (key) => !opts.only || opts.only.includes(key),
    profile: opts.profileDir ? { profileDir: opts.profileDir } : {},
    loadOpts,
    list: (s) => ({ url: `${s.address}/v1/pets?limit=20`, headers: auth, status: 200 }),
    noop: (s) => ({ url: `${s.address}/v1/bench-noop`, headers: auth, status: 404 }),
    create: (s) => ({
      url: `${s.address}/v1/pets`,
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify(NEW_PET),
      status: 201,
    }),
    http(key, label, target, front, withRedis = false, viaPet = true, petService = pet) {
      const measured = pids(front, { pet: viaPet, redis: withRedis }, petService);
      return {
        key,
        label,
        pids: measured,
        run: (seconds) => wrk(target, loadOpts(measured, seconds)),
        atRate: (rate, seconds) => openLoop(target, rate, loadOpts(measured, seconds)),
      };
    },
    async grpcDirect(key, label, method, request, petService = pet) {
      const bytes = encodeRequest(method, request);
      // h2load sees HTTP statuses only: ask once that the pet service answers it with OK.
      await rawCall(petService.address, method, bytes);
      const frame = grpcFrame(bytes);
      const measured = pids(undefined, { pet: true, redis: false }, petService);
      const url = `http://${petService.address}${methodPath(method)}`;
      return { key, label, pids: measured, run: (seconds) => h2load({ url, frame }, loadOpts(measured, seconds)) };
    },
    cleanUps: [],
    notMeasured: [],
  };
}
