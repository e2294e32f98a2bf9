import net from "node:net";

/** One HTTP/1.1 response read off a raw socket. */
export interface RawResponse {
  status: number;
  /** Header names lower-cased; the last value wins. */
  headers: Record<string, string>;
  body: string;
  /** The whole response as received (latin1), status line included. */
  raw: string;
}

/**
 * Sends `request` byte for byte on a new TCP connection and reads one response until the server
 * closes it (send `Connection: close`, or something the server must refuse). fetch normalises,
 * validates or refuses what hostile-input tests need to send (overlong headers, bare `..`
 * segments, raw invalid bytes, conflicting framing headers); this does not.
 * Rejects when the connection ends without a complete status line: a dropped connection.
 */
export function rawRequest(baseUrl: string, request: string | Buffer, timeoutMs = 10_000): Promise<RawResponse> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = (err?: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const raw = Buffer.concat(chunks).toString("latin1");
      const parsed = parseResponse(raw);
      if (parsed) resolve(parsed);
      else reject(new Error(`connection ended without a response${err ? ` (${err.message})` : ""}: ${JSON.stringify(raw.slice(0, 200))}`));
    };
    const timer = setTimeout(() => finish(new Error(`no close within ${timeoutMs} ms`)), timeoutMs);
    socket.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      // Done as soon as a Content-Length-framed response is complete.
      const parsed = parseResponse(Buffer.concat(chunks).toString("latin1"));
      if (parsed && parsed.headers["content-length"] !== undefined) finish();
    });
    socket.on("end", () => finish());
    socket.on("close", () => finish());
    // EPIPE/ECONNRESET while still sending a refused body: the answer may already be in.
    socket.on("error", (err) => finish(err));
    socket.write(request);
  });
}

function parseResponse(raw: string): RawResponse | undefined {
  const headEnd = raw.indexOf("\r\n\r\n");
  if (headEnd < 0) return undefined;
  const [statusLine, ...headerLines] = raw.slice(0, headEnd).split("\r\n");
  const match = /^HTTP\/1\.[01] ([0-9]{3})/.exec(statusLine ?? "");
  if (!match) return undefined;
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const colon = line.indexOf(":");
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const bytes = Buffer.from(raw.slice(headEnd + 4), "latin1");
  const length = headers["content-length"];
  if (length !== undefined && bytes.length < Number(length)) return undefined;
  const body = (length !== undefined ? bytes.subarray(0, Number(length)) : bytes).toString("utf8");
  return { status: Number(match[1]), headers, body, raw };
}
