import dns from "node:dns";
import { status } from "@grpc/grpc-js";
import { parseGrpcTarget, type GrpcAddress, type ParsedGrpcTarget } from "./grpc-target.ts";
import { Http2Connection } from "./http2-connection.ts";
import { serviceError } from "./service-error.ts";
import type { ConnectionSettings, PetServiceTls } from "./transport.ts";

export interface ChannelOptions extends ConnectionSettings {
  tls?: () => PetServiceTls;
}

interface Waiter {
  resolve(connection: Http2Connection): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

/**
 * The pet service as grpc-js's channel sees it under round_robin: every address the target
 * resolves to, each with its own connection (http2-connection.ts); calls go to the ready ones in
 * turn. While none is ready but one is still connecting, or the name is being resolved again, a
 * call waits for it (until its deadline); when all have failed, a call fails at once with
 * UNAVAILABLE.
 *
 * A DNS name is resolved again when a connection fails or goes away (a replica restarted,
 * GOAWAY from max_connection_age, a keepalive ping unanswered), at most once per
 * minResolveIntervalMs while some connection is ready; with none ready, at once (grpc-js waits
 * out the interval, and a gateway that resolved the name before a second replica existed failed
 * every call until then once the first was gone). Addresses that left the answer are closed
 * (their calls in flight finish), new ones connected. A failed resolution keeps the addresses it had.
 */
export class Http2Channel {
  private connections: Http2Connection[] = [];
  /** The ready connections, in address order, and where round robin goes next. */
  private ready: Http2Connection[] = [];
  private next = 0;
  private readonly waiters = new Set<Waiter>();
  private readonly target: ParsedGrpcTarget;
  private readonly authority: string;
  private readonly options: ChannelOptions;
  private readonly resolver: dns.promises.Resolver | undefined;
  /** Why no connection can be had when none is ready (UNAVAILABLE's message). */
  private failure: string | undefined;
  private resolving = false;
  private lastResolvedAt = 0;
  private resolveTimer: NodeJS.Timeout | undefined;
  private resolveBackoffMs: number;
  private closed = false;

  constructor(address: string, options: ChannelOptions) {
    this.options = options;
    this.target = parseGrpcTarget(address);
    this.resolveBackoffMs = options.initialBackoffMs;
    if (this.target.kind === "dns") {
      this.authority = `${this.target.host}:${this.target.port}`;
      if (this.target.dnsServer) {
        this.resolver = new dns.promises.Resolver();
        this.resolver.setServers([this.target.dnsServer]);
      }
      void this.resolve();
    } else {
      const [first] = this.target.addresses;
      this.authority = first && "host" in first ? `${first.host.includes(":") ? `[${first.host}]` : first.host}:${first.port}` : "localhost";
      this.update(this.target.addresses);
    }
  }

  /** A ready connection in round-robin order, waiting (at most until `deadline`) while the first connections are being made. */
  pick(deadline: number): Http2Connection | Promise<Http2Connection> {
    const { ready } = this;
    if (ready.length > 0) {
      if (this.next >= ready.length) this.next = 0;
      return ready[this.next++]!;
    }
    if (this.closed) return Promise.reject(serviceError(status.UNAVAILABLE, "the client is closed"));
    if (this.failure !== undefined) return Promise.reject(serviceError(status.UNAVAILABLE, this.failure));
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        timer: setTimeout(() => {
          this.waiters.delete(waiter);
          reject(serviceError(status.DEADLINE_EXCEEDED, "Deadline exceeded while waiting for a connection"));
        }, Math.max(0, deadline - Date.now())),
      };
      this.waiters.add(waiter);
    });
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.resolveTimer);
    for (const c of this.connections) c.close();
    this.connections = [];
    this.settle();
  }

  private update(addresses: GrpcAddress[]): void {
    const byKey = new Map(this.connections.map((c) => [c.key, c]));
    const next: Http2Connection[] = [];
    for (const address of addresses) {
      const key = "path" in address ? `unix:${address.path}` : `${address.host}:${address.port}`;
      const kept = byKey.get(key);
      byKey.delete(key);
      if (next.some((c) => c.key === key)) continue;
      next.push(kept ?? new Http2Connection(address, this.authority, this.options, this.options.tls, (c, reresolve) => this.changed(c, reresolve)));
    }
    for (const gone of byKey.values()) gone.close();
    this.connections = next;
    this.settle();
  }

  private changed(_connection: Http2Connection, reresolve: boolean): void {
    if (reresolve) this.reresolve(!this.connections.some((c) => c.state === "ready"));
    this.settle();
  }

  /** Recomputes the ready list and what waiting calls get, from the connections' states. */
  private settle(): void {
    this.ready = this.connections.filter((c) => c.state === "ready");
    if (this.ready.length > 0) {
      this.failure = undefined;
      for (const w of this.waiters) {
        clearTimeout(w.timer);
        w.resolve(this.ready[this.next++ % this.ready.length]!);
      }
      this.waiters.clear();
      return;
    }
    const waiting = this.connections.some((c) => c.state === "connecting") || this.resolving;
    if (this.closed) this.failure = "the client is closed";
    else if (waiting) this.failure = undefined;
    else if (this.connections.length > 0) {
      const last = this.connections.find((c) => c.lastError)?.lastError ?? "";
      this.failure = `No connection established. Last error: ${last}`;
    } else this.failure ??= `Name resolution failed for target ${this.describe()}`;
    if (this.failure === undefined) return;
    for (const w of this.waiters) {
      clearTimeout(w.timer);
      w.reject(serviceError(status.UNAVAILABLE, this.failure));
    }
    this.waiters.clear();
  }

  private describe(): string {
    return this.target.kind === "dns" ? `dns:${this.target.host}:${this.target.port}` : "static addresses";
  }

  /** Resolves the name again now, or when minResolveIntervalMs since the last resolution has passed; `urgent`: now. */
  private reresolve(urgent = false): void {
    if (this.target.kind !== "dns" || this.resolving || this.closed) return;
    if (this.resolveTimer && !urgent) return;
    clearTimeout(this.resolveTimer);
    this.resolveTimer = undefined;
    const wait = urgent ? 0 : this.lastResolvedAt + this.options.minResolveIntervalMs - Date.now();
    if (wait <= 0) void this.resolve();
    else {
      this.resolveTimer = setTimeout(() => {
        this.resolveTimer = undefined;
        void this.resolve();
      }, wait);
      this.resolveTimer.unref();
    }
  }

  private async resolve(): Promise<void> {
    if (this.target.kind !== "dns" || this.closed) return;
    const { host, port } = this.target;
    this.resolving = true;
    this.lastResolvedAt = Date.now();
    let addresses: GrpcAddress[] | undefined;
    let error = "";
    try {
      addresses = (await this.lookup(host)).map((ip) => ({ host: ip, port }));
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
    }
    this.resolving = false;
    if (this.closed) return;
    if (addresses && addresses.length > 0) {
      this.resolveBackoffMs = this.options.initialBackoffMs;
      this.update(addresses);
      return;
    }
    // Keep what the last answer gave; with nothing yet, calls fail at once until a lookup succeeds.
    if (this.connections.length === 0) this.failure = `Name resolution failed for target ${this.describe()}${error ? `: ${error}` : ""}`;
    this.settle();
    clearTimeout(this.resolveTimer);
    this.resolveTimer = setTimeout(() => {
      this.resolveTimer = undefined;
      void this.resolve();
    }, this.resolveBackoffMs);
    this.resolveTimer.unref();
    this.resolveBackoffMs = Math.min(this.resolveBackoffMs * 1.6, this.options.maxBackoffMs);
  }

  /** Every address of `host`: with a DNS server of the target's own, its A and AAAA records; else the system's lookup (as grpc-js). */
  private async lookup(host: string): Promise<string[]> {
    if (!this.resolver) return (await dns.promises.lookup(host, { all: true })).map((a) => a.address);
    const answers = await Promise.allSettled([this.resolver.resolve4(host), this.resolver.resolve6(host)]);
    const found = answers.flatMap((a) => (a.status === "fulfilled" ? a.value : []));
    if (found.length === 0 && answers[0].status === "rejected") throw answers[0].reason;
    return found;
  }
}
