import http from "node:http";
import { Webhook } from "standardwebhooks";
import { listen } from "../lib/listen.ts";

/** What the receiver answers next: 200, 500, nothing (holds the request until told otherwise or closed). */
export type ReceiverMode = "ok" | "fail" | "hang";

export interface ReceivedWebhook {
  /** webhook-id: evt_<seq>. */
  id: string;
  seq: number;
  type: string;
  timestamp: string;
  data: any;
}

/**
 * A real webhook receiver on loopback that verifies every request's signature with the independent
 * `standardwebhooks` package (a request it cannot verify fails the test through `problems`) and
 * answers as `mode` says. `accepted` holds what it answered 2xx to, in arrival order.
 */
export interface WebhookReceiver {
  url: string;
  port: number;
  mode: ReceiverMode;
  /** Every verified request, answered or not. */
  received: ReceivedWebhook[];
  /** Those answered 200. */
  accepted: ReceivedWebhook[];
  /** Signature failures and malformed bodies. */
  problems: string[];
  /** Stops listening (connections refused) until start() again on the same port. */
  stop(): Promise<void>;
  start(): Promise<void>;
}

export async function startWebhookReceiver(secret: () => string, port = 0): Promise<WebhookReceiver> {
  const hanging = new Set<http.ServerResponse>();
  let server: http.Server | undefined;
  const receiver: WebhookReceiver = {
    url: "",
    port,
    mode: "ok",
    received: [],
    accepted: [],
    problems: [],
    async stop() {
      for (const res of hanging) res.destroy();
      hanging.clear();
      server?.closeAllConnections();
      await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
      server = undefined;
    },
    async start() {
      server = http.createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on("data", (c: Buffer) => chunks.push(c));
        req.on("end", () => {
          const body = Buffer.concat(chunks).toString("utf8");
          let message: ReceivedWebhook;
          try {
            const verified = new Webhook(secret()).verify(body, req.headers as Record<string, string>) as { type: string; timestamp: string; data: unknown };
            const id = String(req.headers["webhook-id"]);
            message = { id, seq: Number(id.replace(/^evt_/, "")), type: verified.type, timestamp: verified.timestamp, data: verified.data };
          } catch (err) {
            receiver.problems.push(`${(err as Error).message}: ${body.slice(0, 200)}`);
            res.writeHead(400).end();
            return;
          }
          receiver.received.push(message);
          if (receiver.mode === "hang") {
            hanging.add(res);
            res.on("close", () => hanging.delete(res));
            return;
          }
          if (receiver.mode === "fail") return void res.writeHead(500).end("no");
          receiver.accepted.push(message);
          res.writeHead(200).end("ok");
        });
      });
      receiver.port = await listen(server, receiver.port, "127.0.0.1");
      receiver.url = `http://127.0.0.1:${receiver.port}/hooks`;
    },
  };
  await receiver.start();
  return receiver;
}
