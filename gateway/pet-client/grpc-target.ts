import { isIP } from "node:net";

/**
 * gRPC target syntax (grpc/doc/naming.md) as PET_SERVICE_ADDR accepts it:
 *   host:port, [v6]:port        the name's addresses (DNS), round robin over all of them
 *   dns:///host:port, dns:host:port
 *   ipv4:a.b.c.d:port,…         a static list, round robin
 *   ipv6:[v6]:port,…
 *   unix:/path, unix:///path     a Unix socket
 *   dns://server:port/host:port  the name resolved by that DNS server
 * Checked at start to refuse a typo; parseGrpcTarget says what the client resolves.
 */
const HOST = "(?:[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?|\\[[0-9A-Fa-f:.]+\\])";
const PORT = "[0-9]{1,5}";
const IPV4 = "[0-9]{1,3}(?:\\.[0-9]{1,3}){3}";
const TARGET = new RegExp(
  [
    `^${HOST}:${PORT}$`,
    `^dns:(?:\\/\\/[^/\\s]*\\/)?${HOST}:${PORT}$`,
    `^ipv4:${IPV4}(?::${PORT})?(?:,${IPV4}(?::${PORT})?)*$`,
    `^ipv6:\\[[0-9A-Fa-f:.]+\\](?::${PORT})?(?:,\\[[0-9A-Fa-f:.]+\\](?::${PORT})?)*$`,
    "^unix:\\S+$",
  ].join("|"),
);

export function isGrpcTarget(value: string): boolean {
  return TARGET.test(value);
}

export const GRPC_TARGET_FORMS = "host:port, dns:///host:port, ipv4:h1:p1,h2:p2 or unix:/path";

/** One address a target names: a TCP host and port, or a Unix socket. */
export type GrpcAddress = { host: string; port: number } | { path: string };

/**
 * What a valid target (isGrpcTarget) names: a DNS name to resolve (with the DNS server of a
 * `dns://server/` authority, else the system's resolver), or a fixed list of addresses. An IP
 * literal needs no resolving. A missing port is 443, as in grpc-js.
 */
export type ParsedGrpcTarget =
  | { kind: "dns"; host: string; port: number; dnsServer?: string }
  | { kind: "static"; addresses: GrpcAddress[] };

const DEFAULT_PORT = 443;

/** "h:p", "[v6]:p" or "h" → host (brackets removed) and port. */
function hostPort(text: string): { host: string; port: number } {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  if (bracketed) return { host: bracketed[1]!, port: bracketed[2] ? Number(bracketed[2]) : DEFAULT_PORT };
  const colon = text.lastIndexOf(":");
  return colon < 0 ? { host: text, port: DEFAULT_PORT } : { host: text.slice(0, colon), port: Number(text.slice(colon + 1)) };
}

export function parseGrpcTarget(value: string): ParsedGrpcTarget {
  if (!isGrpcTarget(value)) throw new Error(`not a gRPC target (${GRPC_TARGET_FORMS}): ${value}`);
  if (value.startsWith("unix:")) return { kind: "static", addresses: [{ path: value.replace(/^unix:(\/\/(?=\/))?/, "") }] };
  if (value.startsWith("ipv4:") || value.startsWith("ipv6:")) {
    return { kind: "static", addresses: value.slice(5).split(",").map(hostPort) };
  }
  const dns = /^dns:(?:\/\/([^/]*)\/)?(.*)$/.exec(value);
  const { host, port } = hostPort(dns ? dns[2]! : value);
  if (isIP(host)) return { kind: "static", addresses: [{ host, port }] };
  return { kind: "dns", host, port, ...(dns?.[1] && { dnsServer: dns[1] }) };
}
