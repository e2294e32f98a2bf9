import { readFileSync } from "node:fs";
import * as grpc from "@grpc/grpc-js";
import { startOtlpReceiver } from "../testkit/otlp-receiver.ts";
import { createTestPki } from "../testkit/tls.ts";
import { LOG_LEVEL, type ScenarioKit } from "./scenario-kit.ts";
import type { Scenario } from "./scenario.ts";
import { startSqliteStack, tracedEnv, type Service } from "./stack.ts";

/**
 * Issue 21's rows: the full path, memory limiter, with tracing on (OTLP/HTTP protobuf to a sink in
 * this process, which answers without decoding) at a 1 % and a 100 % sampler, unset (the default)
 * and disabled altogether, and with mTLS on the hop (certificates made with openssl): each its own
 * pet service and gateway.
 */
export async function hopScenarios(kit: ScenarioKit): Promise<Scenario[]> {
  const variant = (name: string, petEnv: Record<string, string>, gatewayEnv: Record<string, string>, credentials?: grpc.ChannelCredentials) =>
    startSqliteStack({ dir: kit.dir, keys: kit.keyService.gatewayEnv, name, auth: kit.auth, seed: kit.settings.seed, logLevel: LOG_LEVEL, petEnv, gatewayEnv, ...(credentials && { credentials }), ...kit.profile });
  const row = (key: string, label: string, { front, pet }: { front: Service; pet: Service }) => kit.http(key, label, kit.list(front), front, false, true, pet);
  const scenarios: Scenario[] = [];
  if (kit.wanted("a-otel1") || kit.wanted("a-otel100")) {
    const sink = await startOtlpReceiver({ decode: false });
    kit.cleanUps.push(() => sink.close());
    const traced = (ratio: string) => tracedEnv(sink.url, ratio);
    if (kit.wanted("a-otel1")) {
      scenarios.push(row("a-otel1", "(a) full path, memory limiter, tracing on: OTLP/HTTP protobuf to a local sink, 1 % of requests sampled", await variant("otel1", traced("0.01"), traced("0.01"))));
    }
    if (kit.wanted("a-otel100")) {
      scenarios.push(row("a-otel100", "(a) full path, memory limiter, tracing on: every request sampled and exported (100 %)", await variant("otel100", traced("1"), traced("1"))));
    }
  }
  // Tracing unset and disabled, built as the rows above are: the four differ in their OTEL_* alone.
  if (kit.wanted("a-unset")) {
    scenarios.push(row("a-unset", "(a) full path, memory limiter, tracing unset (no endpoint, the default: a client's traceparent continued; wrk sends none)", await variant("unset", {}, {})));
  }
  if (kit.wanted("a-notrace")) {
    const off = { OTEL_SDK_DISABLED: "true" };
    scenarios.push(row("a-notrace", "(a) full path, memory limiter, tracing disabled (OTEL_SDK_DISABLED=true: no ids, no propagation, as before tracing)", await variant("notrace", off, off)));
  }
  if (kit.wanted("a-tls")) {
    const pki = await createTestPki();
    kit.cleanUps.push(() => pki.remove());
    const ca = await pki.ca("bench-ca");
    const [server, client] = await Promise.all([ca.issue("pet-service"), ca.issue("gateway")]);
    const stack = await variant(
      "tls",
      { PET_SERVICE_TLS_CERT: server.cert, PET_SERVICE_TLS_KEY: server.key, PET_SERVICE_TLS_CLIENT_CA: ca.cert },
      { PET_SERVICE_TLS_CA: ca.cert, PET_SERVICE_TLS_CLIENT_CERT: client.cert, PET_SERVICE_TLS_CLIENT_KEY: client.key },
      grpc.credentials.createSsl(readFileSync(ca.cert), readFileSync(client.key), readFileSync(client.cert)),
    );
    scenarios.push(row("a-tls", "(a) full path, memory limiter, mTLS on the gateway → pet service hop (client certificates, TLS 1.3)", stack));
  }
  return scenarios;
}
