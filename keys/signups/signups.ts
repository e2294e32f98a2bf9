import { isIP } from "node:net";
import type { Clock } from "../../lib/clock.ts";
import type { SignupForm } from "../../lib/signup.ts";
import { DAY_MS, dayOf } from "../../lib/usage-history.ts";
import type { CreatedKey, KeyOperations } from "../operations/index.ts";
import type { KeyRegistry } from "../registry/store.ts";

/**
 * Self-serve sign-up (DESIGN, Usage history and the consumer's view): a Free key with the default
 * scopes for a name and an e-mail address, asked for by a gateway on behalf of a client address.
 * At most SIGNUPS_PER_ADDRESS_PER_DAY per address and UTC day, counted in the registry, so every
 * key-service replica and restart sees the same count.
 */
export const SIGNUPS_PER_ADDRESS_PER_DAY = 5;

export interface SignupRequest extends SignupForm {
  /** The client's address as the gateway resolved it (TRUST_PROXY). */
  clientAddress: string;
}

/** The address has had its sign-ups for the UTC day; `retryAfterSeconds` runs to the next UTC midnight. */
export class SignupLimitError extends Error {
  readonly retryAfterSeconds: number;
  constructor(retryAfterSeconds: number) {
    super(`at most ${SIGNUPS_PER_ADDRESS_PER_DAY} sign-ups per client address per UTC day`);
    this.name = "SignupLimitError";
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/**
 * What one address counts as: an IPv4 address itself (IPv4-mapped IPv6 included), an IPv6
 * address by its /64, the smallest network one subscriber is usually given (else one client
 * would have 2^64 addresses to sign up from). Undefined when `address` is not an IP address.
 */
export function signupAddress(address: string): string | undefined {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (mapped) return mapped[1];
  const version = isIP(address);
  if (version === 4) return address;
  if (version !== 6) return undefined;
  // Expand "::" to its zero groups, then keep the first four groups.
  const [head = "", tail] = address.toLowerCase().split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const groups = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill("0"), ...right];
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ""))
    .join(":")}::/64`;
}

export interface Signups {
  /** Throws SignupLimitError past the address's sign-ups of the day, and what operations.create throws. */
  signUp(request: SignupRequest, actor: string): Promise<CreatedKey>;
}

export function createSignups(deps: { registry: KeyRegistry; operations: KeyOperations; clock: Clock }): Signups {
  return {
    async signUp({ name, email, clientAddress }, actor) {
      const now = deps.clock();
      const day = new Date(now).toISOString().slice(0, 10);
      // Counted before the key is made: a create that then fails has spent one of the day's five.
      const counted = await deps.registry.countSignup(signupAddress(clientAddress) ?? clientAddress, day, SIGNUPS_PER_ADDRESS_PER_DAY);
      if (!counted) throw new SignupLimitError(Math.ceil((dayOf(now) + DAY_MS - now) / 1000));
      return deps.operations.create({ name, plan: "free", ownerId: email, metadata: { name, email, signup: true } }, actor);
    },
  };
}
