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
