import * as grpc from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { errorInfoOf, retryDelayOf } from "../../../lib/grpc-status-details.ts";
import {
  fieldViolationsOf,
  internal,
  invalidArgument,
  notFound,
  STATUS_DETAILS_KEY,
  storageUnavailable,
} from "../../../pet-service/grpc-errors.ts";

/** A length-delimited protobuf field (tag byte, one-byte length), enough for these short messages. */
const field = (tag: number, value: Buffer | string) => {
  const bytes = Buffer.from(value);
  return Buffer.concat([Buffer.from([tag, bytes.length]), bytes]);
};

describe("grpc errors", () => {
  it("INVALID_ARGUMENT carries google.rpc.Status with a google.rpc.BadRequest, in the googleapis wire format", () => {
    const error = invalidArgument([{ field: "name", description: "name is required" }]);
    expect(error.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(error.details).toBe("name is required");

    const violation = field(0x0a, Buffer.concat([field(0x0a, "name"), field(0x12, "name is required")]));
    const any = Buffer.concat([field(0x0a, "type.googleapis.com/google.rpc.BadRequest"), field(0x12, violation)]);
    const status = Buffer.concat([Buffer.from([0x08, 3]), field(0x12, "name is required"), field(0x1a, any)]);
    expect(error.metadata.get(STATUS_DETAILS_KEY)).toEqual([status]);
  });

  it("joins several violations into one message and reads them back", () => {
    const violations = [
      { field: "name", description: "name is required" },
      { field: "category_id", description: "category_id is required" },
    ];
    const error = invalidArgument(violations);
    expect(error.details).toBe("name is required; category_id is required");
    expect(fieldViolationsOf(error)).toEqual(violations);
  });

  it("NOT_FOUND and INTERNAL carry no details; INTERNAL says nothing about internals", () => {
    expect(notFound("pet 5 not found")).toMatchObject({ code: grpc.status.NOT_FOUND, details: "pet 5 not found" });
    expect(internal()).toMatchObject({ code: grpc.status.INTERNAL, details: "internal error" });
    expect(fieldViolationsOf(internal())).toEqual([]);
  });

  it("a storage fault is UNAVAILABLE with the fault in ErrorInfo and a RetryInfo, and nothing of the driver", () => {
    const error = storageUnavailable("disk_full");
    expect(error.code).toBe(grpc.status.UNAVAILABLE);
    expect(error.details).toBe("storage unavailable: the database's disk is full; retry later");
    expect(errorInfoOf(error)).toEqual({ reason: "STORAGE_UNAVAILABLE", domain: "petstore.v1", metadata: { fault: "disk_full" } });
    expect(retryDelayOf(error)).toBe(5_000);
    expect(retryDelayOf(notFound("x"))).toBeUndefined();
  });

  it("advises a shorter wait for an unreachable database (a restart or failover) than for faults an operator must clear", () => {
    expect(retryDelayOf(storageUnavailable("unreachable"))).toBe(2_000);
    for (const fault of ["busy", "read_only", "io_error"] as const) expect(retryDelayOf(storageUnavailable(fault))).toBe(5_000);
  });
});
