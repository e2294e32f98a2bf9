/**
 * `npm run -s keys -- <command>`: API-key tooling. Exit codes: 0 done, 1 failed, 2 bad usage;
 * errors are one line on stderr. `issue` prints the key alone on stdout (use `npm run -s` so
 * npm's own banner stays out of it).
 */
import { failOnOutputError } from "../lib/cli-output.ts";
import { ConfigError } from "../lib/config.ts";
import { keyState, type KeyRecord } from "../lib/key-record.ts";
import { legacyKeysDirNotice } from "../lib/keys-dir.ts";
import { withoutPasswords } from "../lib/redact-url.ts";
import { StorageUnavailableError } from "../lib/storage-faults.ts";
import { cliError, parse, plan, positiveInt } from "../keys/cli-args.ts";
import { loadKeysConfig, type KeysConfig } from "../keys/config.ts";
import { parseDuration } from "../keys/duration.ts";
import { KeysError, UsageError } from "../keys/errors.ts";
import { importKeysDir } from "../keys/import.ts";
import { ensureKeyPair, listKeyPairs, retireKeyPair, rotateKeyPair } from "../keys/key-pairs.ts";
import { formatKeyTable, formatTable, listKeys } from "../keys/list.ts";
import { createKeyOperations, type KeyOperations, type KeyPatch } from "../keys/operations/index.ts";
import { publishKeyRecord, withRedis } from "../keys/redis.ts";
import { openRegistry } from "../keys/registry/open.ts";
import type { KeyRegistry } from "../keys/registry/store.ts";
import { allKeys, findKey } from "../keys/resolve.ts";
import { syncKeys } from "../keys/sync.ts";
import { formatUsage, keyUsage, lastUses } from "../keys/usage.ts";

const USAGE = `usage: npm run -s keys -- <command>

  init                  create the signing key pair in KEYS_DIR if it is missing
  issue --plan free|pro|business|enterprise [--per-minute N --per-day N]
        [--expires-in 30d|12h|15m|2s] [--name TEXT]
                        print a new key, alone, on stdout (limits: enterprise only, both required)
  revoke KEY_OR_KEY_ID  refuse the key on every gateway (registry; and Redis when REDIS_URL is set)
  set-plan KEY_OR_ID --plan free|pro|business|enterprise [--per-minute N --per-day N]
                        change the key's plan or limits in place, on every gateway from its
                        next request; its counts carry over
  roll KEY_OR_ID [--grace 24h|15m|0s]
                        print a new key, alone: same key id, name, plan and counts; the old one
                        works until the grace period ends, then gets 401
  usage KEY_OR_ID [--json]
                        plan and limits in force, used and remaining per window, ban, last use
  sync                  publish every key's record in the registry to Redis again
  list [--json]         keys in the registry: id, name, plan in force, limits, expiry, revoked,
                        rolls, last use (never the keys)
  import [--from DIR]   bring a KEYS_DIR record of issued.jsonl, revoked.json and key-changes.json
                        into the registry (default: KEYS_DIR); running it again changes nothing
  rotate                add a signing pair and sign with it; keys of the old one keep verifying
  retire KID            remove a signing pair; the keys it signed stop verifying
  pairs [--json]        signing pairs

environment: KEYS_DIR (signing pairs; default data/keys/), KEYS_DB (the key registry: a SQLite
file, default data/keys.sqlite, or postgres://...), REDIS_URL (optional, redis://...)
`;

/** The events' actor for everything the command line does. */
const ACTOR = "cli";

const out = (text: string) => process.stdout.write(text);
const note = (text: string) => process.stderr.write(`${text}\n`);

/** What a command may use: the config, and the registry and operations on it, opened on first use. */
interface Context {
  config(): KeysConfig;
  registry(): Promise<KeyRegistry>;
  operations(): Promise<KeyOperations>;
}

/** KEYS_DB as messages show it: a URL without its password. */
const describeDb = (db: string) => withoutPasswords(db);

/** With REDIS_URL, publishes the key's record (every gateway from the key's next request); false without it. */
async function publish(config: KeysConfig, record: KeyRecord, what: string): Promise<boolean> {
  const url = config.REDIS_URL;
  if (!url) return false;
  await withRedis(url, (client) => publishKeyRecord(client, record)).catch((err: Error) => {
    throw new KeysError(
      `${record.id} is ${what} in the key registry (gateways following the key service get it from there), but Redis at ${withoutPasswords(url)} ` +
        `could not be updated (${err.message}); run \`npm run keys -- sync\` once Redis is reachable`,
    );
  });
  return true;
}

async function liveKey(ctx: Context, keyOrId: string): Promise<KeyRecord> {
  const now = Date.now();
  const record = await findKey(await ctx.registry(), ctx.config().KEYS_DIR, keyOrId, Math.floor(now / 1000));
  if (record.revokedAt === null && keyState(record, now) === "expired") throw new KeysError(`${record.id} has expired; issue a new key instead`);
  return record;
}

const commands: Record<string, (args: string[], ctx: Context) => void | Promise<void>> = {
  init(args, ctx) {
    parse(args, {}, []);
    const dir = ctx.config().KEYS_DIR;
    const { kid, created } = ensureKeyPair(dir);
    out(created ? `created signing key pair ${kid} in ${dir}\n` : `signing key pair ${kid} already present in ${dir}\n`);
  },

  async issue(args, ctx) {
    const { values } = parse(
      args,
      {
        plan: { type: "string" },
        "per-minute": { type: "string" },
        "per-day": { type: "string" },
        "expires-in": { type: "string" },
        name: { type: "string" },
      },
      [],
    );
    const expiresIn = values["expires-in"] as string | undefined;
    const input = {
      plan: plan(values.plan as string | undefined),
      perMinute: positiveInt("--per-minute", values["per-minute"] as string | undefined),
      perDay: positiveInt("--per-day", values["per-day"] as string | undefined),
      expiresAt: expiresIn === undefined ? null : Date.now() + parseDuration(expiresIn) * 1000,
      name: values.name as string | undefined,
    };
    const { record, token } = await (await ctx.operations()).create(input, ACTOR);
    out(`${token}\n`);
    note(`issued ${record.id}`);
  },

  async revoke(args, ctx) {
    const { positionals } = parse(args, {}, ["KEY_OR_KEY_ID"]);
    if (positionals[0]!.trim() === "") throw new UsageError("revoke needs a key or a key id");
    const found = await findKey(await ctx.registry(), ctx.config().KEYS_DIR, positionals[0]!, Math.floor(Date.now() / 1000));
    const record = await (await ctx.operations()).revoke(found.id, ACTOR);
    const redis = await publish(ctx.config(), record, "revoked");
    out(`${found.revokedAt === null ? "revoked" : "already revoked"} ${record.id} (${redis ? "registry and Redis" : "registry; REDIS_URL not set"})\n`);
  },

  async "set-plan"(args, ctx) {
    const { values, positionals } = parse(
      args,
      { plan: { type: "string" }, "per-minute": { type: "string" }, "per-day": { type: "string" } },
      ["KEY_OR_ID"],
    );
    const patch: KeyPatch = { plan: plan(values.plan as string | undefined) };
    const perMinute = positiveInt("--per-minute", values["per-minute"] as string | undefined);
    const perDay = positiveInt("--per-day", values["per-day"] as string | undefined);
    if (perMinute !== undefined) patch.perMinute = perMinute;
    if (perDay !== undefined) patch.perDay = perDay;
    const found = await liveKey(ctx, positionals[0]!);
    const r = await (await ctx.operations()).update(found.id, patch, ACTOR);
    const redis = await publish(ctx.config(), r, "changed");
    const where = redis
      ? "registry and Redis: every gateway from the key's next request"
      : "registry; REDIS_URL not set: gateways following the key service apply it within about a second";
    out(`${r.id} now on plan ${r.plan} (${r.limits.perMinute}/minute, ${r.limits.perDay}/day) (${where})\n`);
  },

  async roll(args, ctx) {
    const { values, positionals } = parse(args, { grace: { type: "string" } }, ["KEY_OR_ID"]);
    const grace = values.grace as string | undefined;
    const graceSeconds = grace === undefined ? undefined : grace === "0" || grace === "0s" ? 0 : parseDuration(grace, "--grace");
    const found = await liveKey(ctx, positionals[0]!);
    const { record, token } = await (await ctx.operations()).roll(found.id, graceSeconds, ACTOR);
    // The new key is never lost: a Redis that cannot be reached is reported after it.
    out(`${token}\n`);
    const until = record.graceUntil[String(record.generation - 1)]!;
    note(`rolled ${record.id} (generation ${record.generation}); the keys it replaces work until ${new Date(until).toISOString()}`);
    await publish(ctx.config(), record, "rolled");
  },

  async usage(args, ctx) {
    const { values, positionals } = parse(args, { json: { type: "boolean" } }, ["KEY_OR_ID"]);
    const { KEYS_DIR, REDIS_URL } = ctx.config();
    const record = await findKey(await ctx.registry(), KEYS_DIR, positionals[0]!, Math.floor(Date.now() / 1000));
    const u = await keyUsage(record, KEYS_DIR, { redisUrl: REDIS_URL });
    out(values.json ? `${JSON.stringify(u)}\n` : formatUsage(u));
  },

  async sync(args, ctx) {
    parse(args, {}, []);
    const { REDIS_URL } = ctx.config();
    if (!REDIS_URL) throw new UsageError("sync publishes to Redis: set REDIS_URL");
    const r = await syncKeys(await ctx.registry(), { redisUrl: REDIS_URL, now: Date.now() });
    out(`published ${r.keys} key record(s) (${r.revoked} revoked) to Redis\n`);
  },

  async list(args, ctx) {
    const { values } = parse(args, { json: { type: "boolean" } }, []);
    const { KEYS_DIR, KEYS_DB, REDIS_URL } = ctx.config();
    const registry = await ctx.registry();
    const nowMs = Date.now();
    const records = await allKeys(registry, nowMs);
    const keys = await listKeys(registry, records, { nowMs, lastUses: await lastUses(KEYS_DIR, records.map((k) => k.id), REDIS_URL) });
    if (values.json) out(`${JSON.stringify(keys, null, 2)}\n`);
    else if (keys.length === 0) out(`no keys in the key registry ${describeDb(KEYS_DB)}\n`);
    else out(formatKeyTable(keys));
  },

  async import(args, ctx) {
    const { values } = parse(args, { from: { type: "string" } }, []);
    const dir = (values.from as string | undefined) ?? ctx.config().KEYS_DIR;
    const r = await importKeysDir(await ctx.registry(), dir, Date.now());
    out(`imported ${dir} into the key registry: ${r.created} new key(s), ${r.updated} updated, ${r.unchanged} already there\n`);
    if (r.skipped > 0) note(`${r.skipped} revoked key id(s) in revoked.json are not in issued.jsonl: nothing to import for them`);
  },

  rotate(args, ctx) {
    parse(args, {}, []);
    const dir = ctx.config().KEYS_DIR;
    const { kid, previous } = rotateKeyPair(dir);
    out(`signing key pair ${kid} now signs new keys\n`);
    if (previous) note(`${previous} still verifies the keys it signed; retire it with: npm run keys -- retire ${previous}`);
  },

  async retire(args, ctx) {
    const { positionals } = parse(args, {}, ["KID"]);
    const kid = positionals[0]!;
    const dir = ctx.config().KEYS_DIR;
    retireKeyPair(dir, kid);
    const now = Date.now();
    const live = (await allKeys(await ctx.registry(), now)).filter((k) => k.kid === kid && keyState(k, now) === "active");
    out(`retired ${kid}: ${live.length} unexpired key(s) it signed no longer verify\n`);
  },

  pairs(args, ctx) {
    const { values } = parse(args, { json: { type: "boolean" } }, []);
    const pairs = listKeyPairs(ctx.config().KEYS_DIR);
    const yesNo = (b: boolean) => (b ? "yes" : "no");
    if (values.json) out(`${JSON.stringify(pairs, null, 2)}\n`);
    else {
      out(
        formatTable(
          ["KID", "SIGNS NEW KEYS", "VERIFIES", "PRIVATE KEY HERE"],
          pairs.map((p) => [p.kid, yesNo(p.active), yesNo(p.verifies), yesNo(p.hasPrivateKey)]),
        ),
      );
    }
  },
};

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (name === "help" || name === "--help" || name === "-h") {
    out(USAGE);
    return 0;
  }
  let config: KeysConfig | undefined;
  let registry: Promise<KeyRegistry> | undefined;
  let operations: Promise<KeyOperations> | undefined;
  const ctx: Context = {
    config() {
      if (!config) {
        config = loadKeysConfig();
        const legacy = legacyKeysDirNotice(config.KEYS_DIR);
        if (legacy) note(legacy);
      }
      return config;
    },
    registry() {
      return (registry ??= openRegistry(ctx.config().KEYS_DB).catch((err: unknown) => {
        if (err instanceof StorageUnavailableError) throw err;
        throw new KeysError(`cannot open the key registry ${describeDb(ctx.config().KEYS_DB)} (KEYS_DB): ${(err as Error).message}`);
      }));
    },
    operations() {
      return (operations ??= ctx.registry().then((r) => createKeyOperations({ registry: r, keysDir: ctx.config().KEYS_DIR, clock: Date.now })));
    },
  };
  try {
    const command = name === undefined ? undefined : commands[name];
    if (!command) throw new UsageError(name === undefined ? "missing command" : `unknown command ${JSON.stringify(name)}`);
    await command(args, ctx);
    return 0;
  } catch (caught) {
    const err = cliError(caught) as Error;
    const message = err.message.replace(/\s*\n\s*/g, " ");
    if (err instanceof UsageError) {
      note(`keys: ${message} (see: npm run keys -- help)`);
      return 2;
    }
    note(err instanceof KeysError || err instanceof ConfigError ? `keys: ${message}` : `keys: failed: ${message}`);
    return 1;
  } finally {
    await registry?.then((r) => r.close()).catch(() => {});
  }
}

failOnOutputError("keys");
process.exitCode = await main(process.argv.slice(2));
