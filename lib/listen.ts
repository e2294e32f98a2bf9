import type { AddressInfo, Server } from "node:net";

/**
 * Binds `server` to host:port (0 picks a free port) and resolves with the bound port; a bind
 * failure (EADDRINUSE, EACCES, an unknown host) rejects. Later errors are the caller's to handle.
 */
export function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}
