import http2 from "node:http2";
import net from "node:net";
import tls from "node:tls";
import type { GrpcAddress } from "./grpc-target.ts";
import type { ConnectionSettings, PetServiceTls } from "./transport.ts";

/**
 * One HTTP/2 connection to one address of the pet service, kept up as grpc-js keeps a
 * subchannel under round_robin: connecting at once, again after a failure with exponential
 * backoff (jittered), and at once after a connection that was up goes away (GOAWAY, the peer
 * closed it, a keepalive ping unanswered). States, as grpc-js's pick_first child reports them:
 * "connecting" until the first connection is up or fails; "ready"; "failed" from a failure until
 * a connection is up again (sticky, reconnect attempts included: calls do not wait for it).
 */
export type ConnectionState = "connecting" | "ready" | "failed" | "closed";

const BACKOFF_MULTIPLIER = 1.6;
const BACKOFF_JITTER = 0.2;

export class Http2Connection {
  state: ConnectionState = "connecting";
  /** The session calls go on while ready. */
  session: http2.ClientHttp2Session | undefined;
  /** Why the last attempt failed or the connection went away (the message of UNAVAILABLE while nothing is ready). */
  lastError = "";
  readonly key: string;
  private backoffMs: number;
  private retryTimer: NodeJS.Timeout | undefined;
  private keepaliveTimer: NodeJS.Timeout | undefined;
  /** Calls in flight on `session`. */
  private active = 0;
  readonly address: GrpcAddress;
  private readonly authority: string;
  private readonly tuning: ConnectionSettings;
  private readonly tlsMaterial: (() => PetServiceTls) | undefined;
  /** Called on every change of state; `reresolve` when the peer's name may be worth resolving again. */
  private readonly onChange: (connection: Http2Connection, reresolve: boolean) => void;

  constructor(
    address: GrpcAddress,
    authority: string,
    tuning: ConnectionSettings,
    tlsMaterial: (() => PetServiceTls) | undefined,
    onChange: (connection: Http2Connection, reresolve: boolean) => void,
  ) {
    this.address = address;
    this.authority = authority;
    this.tuning = tuning;
    this.tlsMaterial = tlsMaterial;
    this.onChange = onChange;
    this.key = "path" in address ? `unix:${address.path}` : `${address.host}:${address.port}`;
    this.backoffMs = tuning.initialBackoffMs;
    this.connect();
  }

  /** Counts a call in flight on `session` (keepalive pings only while there are some, as grpc-js). */
  callStarted(): void {
    if (this.active++ === 0) {
      this.session?.ref();
      this.scheduleKeepalive();
    }
  }

  /** Ends what callStarted counted, unless `session` has since been replaced. */
  callEnded(session: http2.ClientHttp2Session): void {
    if (session === this.session && --this.active === 0) session.unref();
  }

  /** No new calls; calls in flight finish on their session. */
  close(): void {
    this.state = "closed";
    clearTimeout(this.retryTimer);
    clearTimeout(this.keepaliveTimer);
    this.session?.close();
  }

  /** Drops the connection at once (calls in flight fail). */
  destroy(): void {
    this.close();
    this.session?.destroy();
  }

  private connect(): void {
    if (this.state === "closed") return;
    if (this.state !== "failed") this.state = "connecting";
    const material = this.tlsMaterial?.();
    const socket = this.socket(material);
    const session = http2.connect(`${material ? "https" : "http"}://${this.authority}`, {
      createConnection: () => socket,
      // grpc-js's choice: Node's session memory cap degrades badly when reached.
      maxSessionMemory: Number.MAX_SAFE_INTEGER,
      settings: { enablePush: false },
    });
    session.unref();
    const timer = setTimeout(() => fail(`connection not established within ${this.tuning.connectTimeoutMs} ms`), this.tuning.connectTimeoutMs);
    timer.unref();
    let settled = false;
    const fail = (reason: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      session.destroy();
      this.failed(reason);
    };
    session.once("remoteSettings", () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (this.state === "closed") {
        session.close();
        return;
      }
      this.up(session);
    });
    session.on("error", (err: Error) => {
      this.lastError = err.message;
      fail(err.message);
    });
    session.once("close", () => fail(this.lastError || "connection closed"));
    // A TLS alert after the client's side of the handshake (TLS 1.3: the server refusing a missing
    // or unknown client certificate) errors the socket, and node:http2 neither reports it nor closes
    // the session built on it: end the session here, so the connection fails (or, once up, goes).
    socket.on("error", (err: Error) => {
      this.lastError = err.message;
      fail(err.message);
      session.destroy();
    });
  }

  private socket(material: PetServiceTls | undefined): net.Socket {
    const where = "path" in this.address ? { path: this.address.path } : { host: this.address.host, port: this.address.port };
    // The name the certificate must carry: the target's DNS name; for an IP (not a name SNI may
    // carry) Node checks the address against the certificate's IP entries.
    const name = material && (material.servername ?? this.authority.replace(/:\d+$/, "").replace(/^\[|\]$/g, ""));
    const socket = material
      ? tls.connect({
          ...where,
          ca: material.ca,
          ...(material.cert && { cert: material.cert }),
          ...(material.key && { key: material.key }),
          ...(name && !net.isIP(name) && { servername: name }),
          ALPNProtocols: ["h2"],
        })
      : net.connect(where);
    socket.setNoDelay(true);
    return socket;
  }

  private up(session: http2.ClientHttp2Session): void {
    this.session = session;
    this.state = "ready";
    this.backoffMs = this.tuning.initialBackoffMs;
    if (this.active > 0) session.ref();
    // After GOAWAY the session takes no new calls (those in flight finish): leave the rotation and
    // connect again at once, as grpc-js does; the name may now resolve to other replicas.
    const gone = (reason: string) => {
      if (this.session !== session) return;
      this.session = undefined;
      this.active = 0;
      clearTimeout(this.keepaliveTimer);
      this.keepaliveTimer = undefined;
      this.lastError = reason;
      if (this.state === "closed") return;
      this.state = "connecting";
      this.onChange(this, true);
      this.connect();
    };
    session.on("goaway", () => {
      gone("the pet service sent GOAWAY");
      session.close();
    });
    session.on("close", () => gone(this.lastError || "connection closed"));
    session.removeAllListeners("error");
    session.on("error", (err: Error) => {
      this.lastError = err.message;
    });
    this.onChange(this, false);
  }

  private failed(reason: string): void {
    this.lastError = reason;
    if (this.state === "closed") return;
    this.state = "failed";
    this.onChange(this, true);
    const pause = this.backoffMs * (1 + BACKOFF_JITTER * (Math.random() * 2 - 1));
    this.backoffMs = Math.min(this.backoffMs * BACKOFF_MULTIPLIER, this.tuning.maxBackoffMs);
    this.retryTimer = setTimeout(() => this.connect(), pause);
    this.retryTimer.unref();
  }

  private scheduleKeepalive(): void {
    if (this.keepaliveTimer || !(this.tuning.keepaliveTimeMs > 0)) return;
    const session = this.session;
    this.keepaliveTimer = setTimeout(() => {
      this.keepaliveTimer = undefined;
      if (this.session !== session || !session || this.active === 0) return;
      const timeout = setTimeout(() => {
        this.lastError = `keepalive ping not answered within ${this.tuning.keepaliveTimeoutMs} ms`;
        session.destroy();
      }, this.tuning.keepaliveTimeoutMs);
      timeout.unref();
      const sent = session.ping((err) => {
        clearTimeout(timeout);
        if (!err) this.scheduleKeepalive();
      });
      if (!sent) clearTimeout(timeout);
    }, this.tuning.keepaliveTimeMs);
    this.keepaliveTimer.unref();
  }
}
