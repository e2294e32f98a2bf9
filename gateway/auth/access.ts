/**
 * What a verified key may do (DESIGN, Scopes and networks): GET (and HEAD) needs `pets:read`,
 * anything else `pets:write`; a key with allowed networks is refused from any other client
 * address. Decided from the key's in-memory state (key-state.ts): no I/O on the request's path.
 */
import type { Scope } from "../../lib/key-record.ts";
import type { KeyEntry } from "./key-state.ts";

export type AccessDenial = { reason: "network" } | { reason: "scope"; scope: Scope };

export const requiredScope = (method: string): Scope => (method === "GET" || method === "HEAD" ? "pets:read" : "pets:write");

/** Undefined when the key allows the request. */
export function accessDenial(entry: KeyEntry, method: string, clientAddress: string | undefined): AccessDenial | undefined {
  if (entry.allowsAddress && !entry.allowsAddress(clientAddress ?? "")) return { reason: "network" };
  const scope = requiredScope(method);
  return entry.scopes.has(scope) ? undefined : { reason: "scope", scope };
}

/** RFC 6750 §3.1: the challenge of a token that lacks the scope. */
export const insufficientScopeChallenge = (scope: Scope): string => `Bearer error="insufficient_scope", scope="${scope}"`;
