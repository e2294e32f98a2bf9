/**
 * `npm run -s keys -- <command>`: API-key tooling. Exit codes: 0 done, 1 failed, 2 bad usage;
 * errors are one line on stderr. `issue` prints the key alone on stdout (use `npm run -s` so
 * npm's own banner stays out of it).
 */
import { parseArgs, type ParseArgsOptionsConfig } from "node:util";
import jwt from "jsonwebtoken";
import { PLAN_NAMES, type PlanName } from "../lib/api-key-format.ts";
import { failOnOutputError } from "../lib/cli-output.ts";
import { ConfigError } from "../lib/config.ts";
import { legacyKeysDirNotice } from "../lib/keys-dir.ts";
import { loadKeysConfig, type KeysConfig } from "../keys/config.ts";
import { parseDuration } from "../keys/duration.ts";
import { KeysError, UsageError } from "../keys/errors.ts";
import { issueKey } from "../keys/issue.ts";
import { ensureKeyPair, listKeyPairs, retireKeyPair, rotateKeyPair } from "../keys/key-pairs.ts";
import { formatKeyTable, formatTable, listKeys } from "../keys/list.ts";
import { readIssued, readRevoked } from "../keys/registry.ts";
import { revokeKey } from "../keys/revoke.ts";
import { rollKey } from "../keys/roll.ts";
import { setPlan } from "../keys/set-plan.ts";
import { syncKeys } from "../keys/sync.ts";
import { formatUsage, keyUsage, lastUses } from "../keys/usage.ts";

const USAGE = `usage: npm run -s keys -- <command>

  init                  create the signing key pair in KEYS_DIR if it is missing
  issue --plan free|pro|business|enterprise [--per-minute N --per-day N]
        [--expires-in 30d|12h|15m|2s] [--name TEXT]
                        print a new key, alone, on stdout (limits: enterprise only, both required)
  revoke KEY_OR_KEY_ID  refuse the key on every gateway (file; and Redis when REDIS_URL is set)
  set-plan KEY_OR_ID --plan free|pro|business|enterprise [--per-minute N --per-day N]
                        change the key's plan or limits in place, on every gateway from its
                        next request; its counts carry over
  roll KEY_OR_ID [--grace 24h|15m|0s]
                        print a new key, alone: same key id, name, plan and counts; the old one
                        works until the grace period ends, then gets 401
  usage KEY_OR_ID [--json]
                        plan and limits in force, used and remaining per window, ban, last use
  sync                  publish KEYS_DIR's revocations and plan changes to Redis again
  list [--json]         issued keys: id, name, plan in force, limits, expiry, revoked, rolls,
                        last use (never the keys)
  rotate                add a signing pair and sign with it; keys of the old one keep verifying
  retire KID            remove a signing pair; the keys it signed stop verifying
  pairs [--json]        signing pairs

environment: KEYS_DIR (default data/keys/), REDIS_URL (optional, redis://...)
`;

const out = (text: string) => process.stdout.write(text);
const note = (text: string) => process.stderr.write(`${text}\n`);

/** Parses one command's arguments; anything unexpected is a UsageError. */
function parse(args: string[], options: ParseArgsOptionsConfig, positionals: string[]) {
  let parsed;
  // No option of this CLI is a single-dash one, so "-W3x…" is an argument: a kid (a JWK
  // thumbprint in base64url) may start with "-".
  const dashed = args.filter((a) => /^-[^-]/.test(a));
  try {
    parsed = parseArgs({ args: [...args.filter((a) => !dashed.includes(a)), "--", ...dashed], options, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message.split(". To specify")[0]!);
  }
  if (parsed.positionals.length !== positionals.length) {
    const expected = positionals.length ? positionals.join(" ") : "no arguments";
    throw new UsageError(`expected ${expected}; got ${JSON.stringify(parsed.positionals.join(" "))}`);
  }
  return { values: parsed.values as Record<string, string | boolean | undefined>, positionals: parsed.positionals };
}

function positiveInt(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (!/^[1-9][0-9]{0,14}$/.test(text)) throw new UsageError(`${flag} must be a positive integer; got ${JSON.stringify(text)}`);
  return Number(text);
}

function plan(text: string | undefined): PlanName {
  if (!(PLAN_NAMES as readonly (string | undefined)[]).includes(text)) {
    throw new UsageError(`--plan must be one of ${PLAN_NAMES.join(", ")}; got ${JSON.stringify(text ?? null)}`);
  }
  return text as PlanName;
}

const commands: Record<string, (args: string[], config: () => KeysConfig) => void | Promise<void>> = {
  init(args, config) {
    parse(args, {}, []);
    const dir = config().KEYS_DIR;
    const { kid, created } = ensureKeyPair(dir);
    out(created ? `created signing key pair ${kid} in ${dir}\n` : `signing key pair ${kid} already present in ${dir}\n`);
  },

  issue(args, config) {
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
    const token = issueKey(config().KEYS_DIR, {
      plan: plan(values.plan as string | undefined),
      perMinute: positiveInt("--per-minute", values["per-minute"] as string | undefined),
      perDay: positiveInt("--per-day", values["per-day"] as string | undefined),
      expiresInSeconds: expiresIn === undefined ? undefined : parseDuration(expiresIn),
      name: values.name as string | undefined,
    });
    out(`${token}\n`);
    note(`issued ${(jwt.decode(token) as { sub: string }).sub}`);
  },

  async revoke(args, config) {
    const { positionals } = parse(args, {}, ["KEY_OR_KEY_ID"]);
    if (positionals[0]!.trim() === "") throw new UsageError("revoke needs a key or a key id");
    const { KEYS_DIR, REDIS_URL } = config();
    const r = await revokeKey(KEYS_DIR, positionals[0]!, { redisUrl: REDIS_URL });
    const where = r.redis ? "revoked.json and Redis" : "revoked.json; REDIS_URL not set";
    out(`${r.alreadyRevoked ? "already revoked" : "revoked"} ${r.keyId} (${where})\n`);
  },

  async "set-plan"(args, config) {
    const { values, positionals } = parse(
      args,
      { plan: { type: "string" }, "per-minute": { type: "string" }, "per-day": { type: "string" } },
      ["KEY_OR_ID"],
    );
    const { KEYS_DIR, REDIS_URL } = config();
    const r = await setPlan(KEYS_DIR, positionals[0]!, {
      plan: plan(values.plan as string | undefined),
      perMinute: positiveInt("--per-minute", values["per-minute"] as string | undefined),
      perDay: positiveInt("--per-day", values["per-day"] as string | undefined),
      redisUrl: REDIS_URL,
    });
    const where = r.redis ? "key-changes.json and Redis: every gateway from the key's next request" : "key-changes.json; REDIS_URL not set: gateways apply it within about a second";
    out(`${r.keyId} now on plan ${r.plan} (${r.perMinute}/minute, ${r.perDay}/day) (${where})\n`);
  },

  async roll(args, config) {
    const { values, positionals } = parse(args, { grace: { type: "string" } }, ["KEY_OR_ID"]);
    const grace = values.grace as string | undefined;
    const { KEYS_DIR, REDIS_URL } = config();
    const r = await rollKey(KEYS_DIR, positionals[0]!, {
      ...(grace === undefined ? {} : { graceSeconds: grace === "0" || grace === "0s" ? 0 : parseDuration(grace, "--grace") }),
      redisUrl: REDIS_URL,
    });
    out(`${r.key}\n`);
    note(`rolled ${r.keyId} (generation ${r.generation}); the keys it replaces work until ${new Date(r.graceUntil * 1000).toISOString()}`);
    if (r.redisError) throw new KeysError(r.redisError);
  },

  async usage(args, config) {
    const { values, positionals } = parse(args, { json: { type: "boolean" } }, ["KEY_OR_ID"]);
    const { KEYS_DIR, REDIS_URL } = config();
    const u = await keyUsage(KEYS_DIR, positionals[0]!, { redisUrl: REDIS_URL });
    out(values.json ? `${JSON.stringify(u)}\n` : formatUsage(u));
  },

  async sync(args, config) {
    parse(args, {}, []);
    const { KEYS_DIR, REDIS_URL } = config();
    if (!REDIS_URL) throw new UsageError("sync publishes to Redis: set REDIS_URL");
    const r = await syncKeys(KEYS_DIR, { redisUrl: REDIS_URL });
    out(`published ${r.revocations} revocation(s) and ${r.changes} key change(s) to Redis\n`);
  },

  async list(args, config) {
    const { values } = parse(args, { json: { type: "boolean" } }, []);
    const { KEYS_DIR: dir, REDIS_URL } = config();
    const ids = readIssued(dir).map((k) => k.keyId);
    const keys = listKeys(dir, { lastUses: await lastUses(dir, ids, REDIS_URL) });
    if (values.json) out(`${JSON.stringify(keys, null, 2)}\n`);
    else if (keys.length === 0) out(`no keys issued in ${dir}\n`);
    else out(formatKeyTable(keys));
  },

  rotate(args, config) {
    parse(args, {}, []);
    const dir = config().KEYS_DIR;
    const { kid, previous } = rotateKeyPair(dir);
    out(`signing key pair ${kid} now signs new keys\n`);
    if (previous) note(`${previous} still verifies the keys it signed; retire it with: npm run keys -- retire ${previous}`);
  },

  retire(args, config) {
    const { positionals } = parse(args, {}, ["KID"]);
    const kid = positionals[0]!;
    const dir = config().KEYS_DIR;
    retireKeyPair(dir, kid);
    const now = Date.now() / 1000;
    const revoked = readRevoked(dir).revoked;
    const live = readIssued(dir).filter((k) => k.kid === kid && !(k.keyId in revoked) && (k.expiresAt ?? Infinity) > now);
    out(`retired ${kid}: ${live.length} unexpired key(s) it signed no longer verify\n`);
  },

  pairs(args, config) {
    const { values } = parse(args, { json: { type: "boolean" } }, []);
    const pairs = listKeyPairs(config().KEYS_DIR);
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
  try {
    const command = name === undefined ? undefined : commands[name];
    if (!command) throw new UsageError(name === undefined ? "missing command" : `unknown command ${JSON.stringify(name)}`);
    await command(args, () => {
      const config = loadKeysConfig();
      const legacy = legacyKeysDirNotice(config.KEYS_DIR);
      if (legacy) note(legacy);
      return config;
    });
    return 0;
  } catch (err) {
    const message = (err as Error).message.replace(/\s*\n\s*/g, " ");
    if (err instanceof UsageError) {
      note(`keys: ${message} (see: npm run keys -- help)`);
      return 2;
    }
    note(err instanceof KeysError || err instanceof ConfigError ? `keys: ${message}` : `keys: failed: ${message}`);
    return 1;
  }
}

failOnOutputError("keys");
process.exitCode = await main(process.argv.slice(2));
