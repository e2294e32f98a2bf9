import { context, propagation, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import * as grpc from "@grpc/grpc-js";
import { PET_SERVICE_NAME } from "../../proto/load.ts";
import { childSpan } from "../../lib/tracing/spans.ts";
import { isGrpcError, type CallContext, type PetClient } from "./pet-client.ts";

/**
 * `client` with each call in a CLIENT span (`petstore.v1.PetService/ListPets`, retries included)
 * whose trace context travels in the call's metadata, so the pet service continues the trace.
 * Outside the client implementation, so it holds for any PetClient. An unrecorded request (not
 * sampled, or no OTLP endpoint) gets no span of its own here: the request's span context is
 * passed on as it is, sampled flag included, at the cost of one header.
 */
export function tracePetClient(client: PetClient): PetClient {
  const traced = <Req, Res>(rpc: string, call: (request: Req, ctx: CallContext) => Promise<Res>) => {
    const name = `${PET_SERVICE_NAME}/${rpc}`;
    const attributes = { "rpc.system": "grpc", "rpc.service": PET_SERVICE_NAME, "rpc.method": rpc };
    return async (request: Req, ctx: CallContext): Promise<Res> => {
      const span = childSpan(name, attributes, SpanKind.CLIENT);
      const active = span ? trace.setSpan(context.active(), span) : context.active();
      const metadata: Record<string, string> = {};
      propagation.inject(active, metadata);
      const withTrace = { requestId: ctx.requestId, metadata };
      if (!span) return call(request, withTrace);
      try {
        const response = await context.with(active, () => call(request, withTrace));
        span.setAttribute("rpc.grpc.status_code", grpc.status.OK);
        return response;
      } catch (err) {
        if (isGrpcError(err)) span.setAttribute("rpc.grpc.status_code", err.code);
        span.setStatus({ code: SpanStatusCode.ERROR, message: isGrpcError(err) ? grpc.status[err.code] : "call failed" });
        throw err;
      } finally {
        span.end();
      }
    };
  };
  return {
    listPets: traced("ListPets", client.listPets.bind(client)),
    createPet: traced("CreatePet", client.createPet.bind(client)),
    getPet: traced("GetPet", client.getPet.bind(client)),
    checkHealth: (service, timeoutMs) => client.checkHealth(service, timeoutMs),
    close: () => client.close(),
  };
}
