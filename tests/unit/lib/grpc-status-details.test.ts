/**
 * Details a peer sent that do not decode (a buggy or foreign gRPC server) must not turn an error
 * into a crash of the gateway's error handler: each reader gives "no details" instead.
 */
import * as grpc from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { errorInfoOf, fieldViolationsOf, retryDelayOf, STATUS_DETAILS_KEY } from "../../../lib/grpc-status-details.ts";
import { toApiError } from "../../../gateway/http/error-handler.ts";

const undecodable = () => {
  const metadata = new grpc.Metadata();
  metadata.set(STATUS_DETAILS_KEY, Buffer.from([0x1a, 0xff, 0x01])); // a length running past the end
  return Object.assign(new Error("3 INVALID_ARGUMENT: name is required"), { code: grpc.status.INVALID_ARGUMENT, details: "name is required", metadata });
};

describe("grpc status details that do not decode", () => {
  it("read as none", () => {
    expect(fieldViolationsOf(undecodable())).toEqual([]);
    expect(errorInfoOf(undecodable())).toBeUndefined();
    expect(retryDelayOf(undecodable())).toBeUndefined();
  });

  it("leave the gateway's Error body to the status and its message", () => {
    expect(toApiError(undecodable()).toBody()).toMatchObject({ code: "invalid_request", status: 400, message: "name is required" });
  });
});
