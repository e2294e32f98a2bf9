/**
 * gRPC target syntax (grpc/doc/naming.md) as PET_SERVICE_ADDR accepts it:
 *   host:port, [v6]:port        the name's addresses (DNS), round robin over all of them
 *   dns:///host:port, dns:host:port
 *   ipv4:a.b.c.d:port,…         a static list, round robin
 *   ipv6:[v6]:port,…
 *   unix:/path, unix:///path     a Unix socket
 * Parsed only to refuse a typo at start: grpc-js resolves the target itself.
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
