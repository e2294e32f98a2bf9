import dgram from "node:dgram";

/**
 * A tiny authoritative DNS server on a loopback UDP port (RFC 1035 wire format), so tests can give
 * a gRPC client a `dns://127.0.0.1:PORT/name:port` target whose addresses they change while it
 * runs, without touching the machine's resolver or /etc/hosts. It answers A queries for the names
 * it was given (TTL 0), NOERROR with no records for other types of a known name (AAAA, TXT), and
 * NXDOMAIN for unknown names.
 */
export interface TestDnsServer {
  /** "127.0.0.1:PORT", the authority of a dns:// target. */
  address: string;
  /** Sets the IPv4 addresses a name resolves to ([] makes it NXDOMAIN). */
  set(name: string, ipv4: string[]): void;
  /** A queries received for `name` so far. */
  queries(name: string): number;
  close(): Promise<void>;
}

const TYPE_A = 1;

function readName(msg: Buffer, offset: number): { name: string; next: number } {
  const labels: string[] = [];
  let at = offset;
  while (msg[at]! > 0) {
    const len = msg[at]!;
    labels.push(msg.toString("ascii", at + 1, at + 1 + len));
    at += 1 + len;
  }
  return { name: labels.join(".").toLowerCase(), next: at + 1 };
}

export async function startDnsServer(): Promise<TestDnsServer> {
  const records = new Map<string, string[]>();
  const counts = new Map<string, number>();
  const socket = dgram.createSocket("udp4");
  socket.on("message", (query, peer) => {
    if (query.length < 17) return;
    const { name, next } = readName(query, 12);
    const type = query.readUInt16BE(next);
    const question = query.subarray(12, next + 4);
    const ips = records.get(name);
    if (type === TYPE_A) counts.set(name, (counts.get(name) ?? 0) + 1);
    const answers = type === TYPE_A && ips ? ips : [];
    const header = Buffer.alloc(12);
    header.writeUInt16BE(query.readUInt16BE(0), 0); // id
    // QR, opcode 0, AA, RD copied, RA; RCODE 3 (NXDOMAIN) for names we do not know.
    header.writeUInt16BE(0x8400 | (query.readUInt16BE(2) & 0x0100) | 0x0080 | (ips?.length ? 0 : 3), 2);
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(answers.length, 6);
    const records_ = answers.map((ip) => {
      const rr = Buffer.alloc(16);
      rr.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
      rr.writeUInt16BE(TYPE_A, 2);
      rr.writeUInt16BE(1, 4); // IN
      rr.writeUInt32BE(0, 6); // TTL 0: never cached
      rr.writeUInt16BE(4, 10);
      ip.split(".").forEach((octet, i) => rr.writeUInt8(Number(octet), 12 + i));
      return rr;
    });
    socket.send(Buffer.concat([header, question, ...records_]), peer.port, peer.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  return {
    address: `127.0.0.1:${socket.address().port}`,
    set: (name, ipv4) => void records.set(name.toLowerCase(), ipv4),
    queries: (name) => counts.get(name.toLowerCase()) ?? 0,
    close: () => new Promise((resolve) => socket.close(() => resolve())),
  };
}
