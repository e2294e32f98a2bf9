/**
 * Allowed client networks of a key (DESIGN, Scopes and networks): IPv4 and IPv6 CIDRs, parsed
 * where they are written (the key service, the command line) and matched where they are enforced
 * (the gateway, on every request of a key that has some: a node:net BlockList, no allocation per
 * check beyond the address string).
 */
import { BlockList, isIP } from "node:net";

export interface Cidr {
  address: string;
  prefix: number;
  family: "ipv4" | "ipv6";
}

const MAPPED_IPV4 = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i;

/** `10.0.0.0/8`, `2001:db8::/32`; a bare address is the one host (/32, /128). Undefined when not a CIDR. */
export function parseCidr(text: string): Cidr | undefined {
  if (typeof text !== "string" || text.length > 64) return undefined;
  const slash = text.indexOf("/");
  const address = slash === -1 ? text : text.slice(0, slash);
  const version = isIP(address);
  if (version === 0) return undefined;
  const max = version === 4 ? 32 : 128;
  let prefix = max;
  if (slash !== -1) {
    const digits = text.slice(slash + 1);
    if (!/^\d{1,3}$/.test(digits)) return undefined;
    prefix = Number(digits);
    if (prefix > max) return undefined;
  }
  return { address, prefix, family: version === 4 ? "ipv4" : "ipv6" };
}

export const isValidCidr = (text: string): boolean => parseCidr(text) !== undefined;

/**
 * Whether a client address (as Express's req.ip gives it: IPv4, IPv6, or IPv4-mapped IPv6 from a
 * dual-stack listener) lies in one of `cidrs`. An IPv4-mapped address matches both its IPv4
 * networks and IPv6 networks written over ::ffff:0:0/96. Invalid entries match nothing; an
 * address that is not an IP is outside every network.
 */
export function createNetworkMatcher(cidrs: readonly string[]): (address: string) => boolean {
  const list = new BlockList();
  for (const text of cidrs) {
    const cidr = parseCidr(text);
    if (cidr) list.addSubnet(cidr.address, cidr.prefix, cidr.family);
  }
  return (address) => {
    const version = isIP(address);
    if (version === 4) return list.check(address, "ipv4");
    if (version !== 6) return false;
    if (list.check(address, "ipv6")) return true;
    const mapped = MAPPED_IPV4.exec(address);
    return mapped !== null && list.check(mapped[1]!, "ipv4");
  };
}
