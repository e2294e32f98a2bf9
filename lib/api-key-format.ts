/** What a verified API key tells the gateway. */
export const PLAN_NAMES = ["free", "pro", "business", "enterprise"] as const;
export type PlanName = (typeof PLAN_NAMES)[number];

export interface ApiKey {
  /** Stable key id (`sub` claim); quotas, bans and revocation hang on it. */
  keyId: string;
  plan: PlanName;
  /** Enterprise keys carry their own limits. */
  perMinute?: number;
  perDay?: number;
  /** Unix seconds; absent means the key does not expire. */
  expiresAt?: number;
}

export type AuthFailure = "missing" | "malformed" | "invalid" | "expired" | "revoked";

/** Every authentication failure; the gateway maps each to 401 `unauthorized`. */
export class AuthError extends Error {
  constructor(
    readonly reason: AuthFailure,
    message: string,
  ) {
    super(message);
    this.name = "AuthError";
  }
}

/** Verifies a bearer token; throws AuthError. Synchronous so a cache hit costs no tick. */
export interface KeyVerifier {
  verify(token: string): ApiKey;
  close(): void;
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
}
