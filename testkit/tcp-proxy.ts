import net from "node:net";

/**
 * A TCP relay on a loopback port in front of a real server (PostgreSQL), that a test can cut and
 * restore: while cut, connections already open are reset and new ones refused, exactly what a
 * client sees when the server is down or the network to it fails. The server itself keeps
 * running, so tests on the shared machine never stop the machine's PostgreSQL.
 */
export interface TcpProxy {
  port: number;
  /** Resets every relayed connection and stops listening (new connections: ECONNREFUSED). */
  cut(): Promise<void>;
  /** Listens again on the same port. */
  restore(): Promise<void>;
  /**
   * Relayed connections stay open but nothing passes either way any more, and new ones are
   * accepted and left silent: a peer that hangs (a frozen machine, a black-holed network) rather
   * than one that is gone.
   */
  freeze(): void;
  /**
   * New connections are accepted and left silent, those already relayed go on: a server that
   * has become slow to take connections (a busy host, a DNS or network hiccup) but still serves.
   */
  stallNew(): void;
  close(): Promise<void>;
}

export interface TcpProxyOptions {
  /** Connections relayed at once, at most; more are reset at once (a server out of connection slots). */
  maxConnections?: number;
}

export async function startTcpProxy(target: { host: string; port: number }, options: TcpProxyOptions = {}): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  const pairs = new Set<[net.Socket, net.Socket]>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  };
  // Frozen or stalling, a new connection is accepted and left silent.
  let stalling = false;
  const server = net.createServer((client) => {
    if (stalling) {
      track(client);
      client.pause();
      return;
    }
    if (options.maxConnections !== undefined && pairs.size >= options.maxConnections) {
      client.resetAndDestroy();
      return;
    }
    const upstream = net.connect(target.port, target.host);
    track(client);
    track(upstream);
    client.pipe(upstream).pipe(client);
    const pair: [net.Socket, net.Socket] = [client, upstream];
    pairs.add(pair);
    client.once("close", () => pairs.delete(pair));
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
  });
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => {
        server.off("error", reject);
        resolve((server.address() as net.AddressInfo).port);
      });
    });
  const port = await listen(0);
  const cut = async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of sockets) socket.resetAndDestroy();
    await closed;
  };
  return {
    port,
    cut,
    restore: async () => void (await listen(port)),
    freeze: () => {
      stalling = true;
      for (const [client, upstream] of pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
      }
    },
    stallNew: () => void (stalling = true),
    close: async () => (server.listening ? cut() : undefined),
  };
}

/** `url` with its host and port replaced by the proxy's. */
export function viaProxy(url: string, proxy: TcpProxy): string {
  const u = new URL(url);
  u.hostname = "127.0.0.1";
  u.port = String(proxy.port);
  return u.toString();
}
