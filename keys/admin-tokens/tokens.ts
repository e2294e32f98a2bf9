import { createHash, randomBytes, randomUUID } from "node:crypto";

/**
 * Admin tokens: opaque random strings, `pskadm_` + 32 random bytes in base64url (43 characters).
 * The registry keeps only their SHA-256: a token is shown once, when it is made.
 */
export const ADMIN_TOKEN_PATTERN = /^pskadm_[A-Za-z0-9_-]{43}$/;

export const ADMIN_SCOPES = ["keys:read", "keys:write", "webhooks:read", "webhooks:write", "gateway", "admin"] as const;
export type AdminScope = (typeof ADMIN_SCOPES)[number];

export const generateAdminToken = (): string => `pskadm_${randomBytes(32).toString("base64url")}`;

export const hashAdminToken = (token: string): string => createHash("sha256").update(token).digest("hex");

export const newAdminTokenId = (): string => `adm_${randomUUID().replaceAll("-", "").slice(0, 16)}`;

/** Whether a token with `granted` may do what needs any one of `needed`; `admin` implies every scope. */
export const allowsAny = (granted: readonly string[], needed: readonly AdminScope[]): boolean =>
  granted.includes("admin") || needed.some((scope) => granted.includes(scope));
