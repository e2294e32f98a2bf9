/**
 * The API-key format, shared by the keys tooling (which writes it) and the gateway (which reads
 * it): the JWT's algorithm, issuer, audience and claims, how a token is verified against a set
 * of public keys, the KEYS_DIR layout, and the revocation list file.
 *
 * KEYS_DIR:
 *   public/<kid>.pem    EC P-256 public keys (the key service serves them as its JWKS to gateways)
 *   private/<kid>.pem   private keys (mode 0600, directory 0700; never on gateways)
 *   private/active      the kid that signs new keys
 *   issued.jsonl        one line per issued key, never the token
 *   revoked.json        revoked key ids with their expiry (REVOKED_FILE below)
 *   key-changes.json    plan overrides and rolls since issue (lib/key-changes.ts)
 * The last three are the record of the file era, before the key registry (keys/registry/): the
 * command line no longer writes them, `keys import` reads them.
 */
import { createPublicKey, type KeyObject } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import jwt from "jsonwebtoken";
import { z } from "zod";
import { readOptionalFile } from "./optional-file.ts";

export const PLAN_NAMES = ["free", "pro", "business", "enterprise"] as const;
export type PlanName = (typeof PLAN_NAMES)[number];

/** What a verified API key tells the gateway. */
export interface ApiKey {
  /** Stable key id (`sub` claim); quotas, bans and revocation hang on it. */
  keyId: string;
  plan: PlanName;
  /** Enterprise keys carry their own limits. */
  perMinute?: number;
  perDay?: number;
  /** Unix seconds; absent means the key does not expire. */
  expiresAt?: number;
  /** 0 for an issued key, n for the key the n-th `keys roll` printed (same keyId). */
  generation: number;
}

export type AuthFailure = "missing" | "malformed" | "invalid" | "expired" | "revoked" | "rolled";

/** Every authentication failure; the gateway maps each to 401 `unauthorized`. */
export class AuthError extends Error {
  readonly reason: AuthFailure;

  constructor(reason: AuthFailure, message: string) {
    super(message);
    this.reason = reason;
    this.name = "AuthError";
  }
}

/** JWT issuer and audience of API keys; the gateway rejects any other. */
export const KEY_ISSUER = "pet-store-keys";
export const KEY_AUDIENCE = "pet-store-api";

/** The only signature algorithm keys are signed with and the gateway accepts (pinned). */
export const KEY_ALGORITHM = "ES256";

/** Key ids (`sub`) and signing-key ids (`kid`): safe in file names, Redis keys and logs. */
export const KEY_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** The claims of an API key token (besides `iss`, `aud`, `iat` and the optional `exp`). */
export interface KeyClaims {
  sub: string;
  plan: PlanName;
  /** Enterprise keys only: requests per minute (`m`) and per day (`d`). */
  lim?: { m: number; d: number };
  /** Rolled keys only: the roll that made it (see ApiKey.generation). */
  gen?: number;
}

/** Longer bearer tokens are refused before any parsing (ours are ~350 bytes). */
export const MAX_TOKEN_LENGTH = 4096;

const positiveInt = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);
const claimsSchema = z
  .object({
    sub: z.string().regex(KEY_ID_PATTERN),
    plan: z.enum(PLAN_NAMES),
    lim: z.object({ m: positiveInt, d: positiveInt }).optional(),
    exp: positiveInt.optional(),
    gen: positiveInt.optional(),
  })
  .refine((c) => (c.plan === "enterprise") === (c.lim !== undefined), "lim is required for enterprise keys only");

/** A token whose signature, issuer, audience and claims checked out. */
export interface VerifiedToken {
  apiKey: Readonly<ApiKey>;
  kid: string;
  /** The public key that verified it; the token stops verifying when that key is retired or replaced. */
  key: KeyObject;
}

export interface KeyLookup {
  get(kid: string): KeyObject | undefined;
}

const invalid = () => new AuthError("invalid", "invalid API key");

/**
 * Checks a token's signature (ES256 only, key chosen by the header `kid`), issuer, audience
 * and claims. Expiry and revocation are the caller's: see `isExpired`. Throws only AuthError.
 */
export function verifyTokenSignature(token: string, keys: KeyLookup, nowSeconds: number): VerifiedToken {
  if (typeof token !== "string" || token.length > MAX_TOKEN_LENGTH) throw new AuthError("malformed", "malformed API key");
  let header: jwt.JwtHeader | undefined;
  try {
    header = jwt.decode(token, { complete: true })?.header;
  } catch {
    header = undefined;
  }
  if (!header) throw new AuthError("malformed", "malformed API key");
  const key = header.alg === KEY_ALGORITHM && typeof header.kid === "string" ? keys.get(header.kid) : undefined;
  if (!key) throw invalid();

  let payload: unknown;
  try {
    payload = jwt.verify(token, key, {
      algorithms: [KEY_ALGORITHM],
      issuer: KEY_ISSUER,
      audience: KEY_AUDIENCE,
      // Expiry is checked by `isExpired`, against the same clock, for fresh and cached tokens.
      ignoreExpiration: true,
      clockTimestamp: nowSeconds,
    });
  } catch {
    throw invalid();
  }
  const claims = claimsSchema.safeParse(payload);
  if (!claims.success) throw invalid();
  const { sub, plan, lim, exp, gen } = claims.data;
  const apiKey: ApiKey = { keyId: sub, plan, generation: gen ?? 0 };
  if (lim) Object.assign(apiKey, { perMinute: lim.m, perDay: lim.d });
  if (exp !== undefined) apiKey.expiresAt = exp;
  return { apiKey: Object.freeze(apiKey), kid: header.kid!, key };
}

export const isExpired = (apiKey: ApiKey, nowSeconds: number): boolean =>
  apiKey.expiresAt !== undefined && nowSeconds >= apiKey.expiresAt;

// KEYS_DIR layout (see the module comment).
export const publicKeyDir = (keysDir: string): string => path.join(keysDir, "public");
export const publicKeyPath = (keysDir: string, kid: string): string => path.join(publicKeyDir(keysDir), `${kid}.pem`);
export const privateKeyDir = (keysDir: string): string => path.join(keysDir, "private");
export const privateKeyPath = (keysDir: string, kid: string): string => path.join(privateKeyDir(keysDir), `${kid}.pem`);
export const activeKidPath = (keysDir: string): string => path.join(privateKeyDir(keysDir), "active");
export const issuedFilePath = (keysDir: string): string => path.join(keysDir, "issued.jsonl");
export const revokedFilePath = (keysDir: string): string => path.join(keysDir, "revoked.json");

/** Parses a PEM public key; throws unless it is an EC P-256 (ES256) public key. */
export function parsePublicKey(pem: string | Buffer): KeyObject {
  const key = createPublicKey(pem);
  if (key.asymmetricKeyType !== "ec" || key.asymmetricKeyDetails?.namedCurve !== "prime256v1") {
    throw new Error("not an EC P-256 public key");
  }
  return key;
}

/**
 * Reads every valid `<kid>.pem` in KEYS_DIR/public. A missing directory is an empty set;
 * unreadable or foreign files are skipped (they verify nothing). Other directory errors throw.
 * The files are a few hundred bytes each, so they are read synchronously.
 */
export function loadPublicKeys(keysDir: string): Map<string, KeyObject> {
  const dir = publicKeyDir(keysDir);
  const keys = new Map<string, KeyObject>();
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return keys;
    throw err;
  }
  for (const name of names.sort()) {
    const kid = name.endsWith(".pem") ? name.slice(0, -".pem".length) : "";
    if (!KEY_ID_PATTERN.test(kid)) continue;
    try {
      keys.set(kid, parsePublicKey(readFileSync(path.join(dir, name))));
    } catch {
      // Not a P-256 public key (or vanished meanwhile): it verifies nothing.
    }
  }
  return keys;
}

/** KEYS_DIR/revoked.json of the file era, read by `keys import` (gateways follow the key service). */
const revokedFileSchema = z.object({
  revoked: z.record(
    z.string(),
    z.object({
      /** Unix seconds. */
      revokedAt: z.number().int(),
      /** Unix seconds; null when the key never expires. Entries are pruned after expiry. */
      expiresAt: z.number().int().nullable(),
    }),
  )
    // Own entries only, for every reader: a key id such as "constructor" is not revoked.
    .transform((revoked) => Object.assign(Object.create(null) as typeof revoked, revoked)),
});
export type RevokedFile = z.infer<typeof revokedFileSchema>;
export type RevokedEntry = RevokedFile["revoked"][string];

/** Parses revoked.json; throws on anything else. */
export function parseRevokedFile(text: string): RevokedFile {
  return revokedFileSchema.parse(JSON.parse(text));
}

/** Reads revoked.json; a missing file is an empty list. */
export function readRevokedFile(keysDir: string): RevokedFile {
  const text = readOptionalFile(revokedFilePath(keysDir));
  return text === undefined ? { revoked: Object.create(null) as RevokedFile["revoked"] } : parseRevokedFile(text);
}
