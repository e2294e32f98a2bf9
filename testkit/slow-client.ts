import net from "node:net";

/**
 * A client that sends its request too slowly, on a real socket: `head` at once, then `drip` every
 * `everyMs` for as long as the server keeps the connection open. Resolves when the server closes
 * it, with how long after the connection was established that was and what the server said.
 */
export interface SlowClient {
  /** Resolves once the TCP connection is established. */
  connected: Promise<void>;
  closed: Promise<{ afterMs: number; response: string }>;
  destroy(): void;
}

export function slowClient(baseUrl: string, head: string, drip: string, everyMs: number): SlowClient {
  const { hostname, port } = new URL(baseUrl);
  const socket = net.connect(Number(port), hostname);
  let started = performance.now();
  let response = "";
  let timer: NodeJS.Timeout | undefined;
  socket.setEncoding("latin1");
  socket.on("data", (chunk: string) => (response += chunk));
  socket.on("error", () => {}); // the server resets a connection it gives up on: that is the point
  const connected = new Promise<void>((resolve, reject) => {
    socket.once("connect", () => {
      started = performance.now(); // the server's clock starts here too, not while the SYN waited in a backlog
      if (head) socket.write(head);
      timer = setInterval(() => {
        if (socket.writable) socket.write(drip);
      }, everyMs);
      resolve();
    });
    socket.once("close", () => reject(new Error("closed before connecting")));
  });
  const closed = new Promise<{ afterMs: number; response: string }>((resolve) =>
    socket.once("close", () => {
      clearInterval(timer);
      resolve({ afterMs: performance.now() - started, response });
    }),
  );
  return { connected, closed, destroy: () => socket.destroy() };
}
