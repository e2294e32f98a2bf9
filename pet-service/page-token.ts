import { createHmac, timingSafeEqual } from "node:crypto";
import { PET_STATUSES, type PetStatus } from "./store/pet-store.ts";

/**
 * ListPets page tokens (AIP-158): where the next page starts (the last id served) and the status
 * filter the walk runs under, signed so a client can neither forge a position nor carry a token
 * over to another filter. Opaque to callers: base64url of
 *
 *   version (1 byte) · filter (1 byte: 0 = every status, 1.. = PET_STATUSES) · last id (int64, big-endian) · MAC (16 bytes)
 *
 * The MAC is HMAC-SHA256 (truncated to 128 bits) under a secret kept in the database, so every
 * replica on one database, and every restart, accepts the tokens of the others; tokens never
 * expire (a keyset position stays meaningful for ever).
 */
const VERSION = 1;
const PAYLOAD_BYTES = 10;
const MAC_BYTES = 16;
const TOKEN_BYTES = PAYLOAD_BYTES + MAC_BYTES;
/** base64url of TOKEN_BYTES, without padding. */
const TOKEN = /^[A-Za-z0-9_-]{35}$/;

export interface PagePosition {
  /** The next page holds pets with a greater id. */
  afterId: bigint;
  /** The filter the walk runs under; undefined = every status. */
  status?: PetStatus;
}

/** Why a token was refused, in words a caller can act on (the field is always page_token). */
export type TokenProblem = "malformed" | "not_issued" | "other_filter";

export interface PageTokens {
  encode(position: PagePosition): string;
  /** The position in `token`, if it is one of ours and was issued for `status`. */
  decode(token: string, status: PetStatus | undefined): { afterId: bigint } | { problem: TokenProblem };
}

export function createPageTokens(secret: Buffer): PageTokens {
  if (secret.length < 16) throw new RangeError("the page-token secret must have at least 16 bytes");
  const mac = (payload: Buffer) => createHmac("sha256", secret).update(payload).digest().subarray(0, MAC_BYTES);
  return {
    encode({ afterId, status }) {
      const payload = Buffer.alloc(PAYLOAD_BYTES);
      payload[0] = VERSION;
      payload[1] = filterCode(status);
      payload.writeBigInt64BE(afterId, 2);
      return Buffer.concat([payload, mac(payload)]).toString("base64url");
    },
    decode(token, status) {
      if (!TOKEN.test(token)) return { problem: "malformed" };
      const bytes = Buffer.from(token, "base64url");
      // Canonical only: base64url's last character carries two unused bits, and a token that
      // differs there must not pass for the original.
      if (bytes.length !== TOKEN_BYTES || bytes[0] !== VERSION || bytes.toString("base64url") !== token) return { problem: "malformed" };
      const payload = bytes.subarray(0, PAYLOAD_BYTES);
      if (!timingSafeEqual(mac(payload), bytes.subarray(PAYLOAD_BYTES))) return { problem: "not_issued" };
      if (payload[1] !== filterCode(status)) return { problem: "other_filter" };
      const afterId = payload.readBigInt64BE(2);
      // Signed by us, so never negative; checked anyway rather than trusted.
      return afterId < 0n ? { problem: "malformed" } : { afterId };
    },
  };
}

function filterCode(status: PetStatus | undefined): number {
  return status === undefined ? 0 : PET_STATUSES.indexOf(status) + 1;
}
