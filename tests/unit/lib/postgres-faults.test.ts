import { describe, expect, it } from "vitest";
import { StorageUnavailableError } from "../../../lib/storage-faults.ts";
import { asStoreError, postgresFaultOf } from "../../../lib/postgres-faults.ts";

const withCode = (code: string, message = "x") => Object.assign(new Error(message), { code });

describe("PostgreSQL errors that waiting may cure", () => {
  it.each([
    [withCode("ECONNREFUSED"), "unreachable"],
    [withCode("ECONNRESET"), "unreachable"],
    [withCode("ENOTFOUND"), "unreachable"],
    [withCode("08006"), "unreachable"],
    [withCode("57P01"), "unreachable"],
    [withCode("57P03"), "unreachable"],
    [withCode("53300"), "unreachable"],
    [new Error("Connection terminated unexpectedly"), "unreachable"],
    [new Error("Connection terminated due to connection timeout"), "unreachable"],
    // pg-pool's wait for a pooled connection while all are in use: load, not an outage.
    [new Error("timeout exceeded when trying to connect"), "busy"],
    [new Error("Query read timeout"), "unreachable"],
    [withCode("53100"), "disk_full"],
    [withCode("25006"), "read_only"],
    [withCode("55P03"), "busy"],
    [withCode("57014"), "busy"],
    [withCode("40P01"), "busy"],
    [withCode("40001"), "busy"],
  ])("%s → %s", (err, fault) => {
    expect(postgresFaultOf(err)).toBe(fault);
    const mapped = asStoreError(err);
    expect(mapped).toBeInstanceOf(StorageUnavailableError);
    expect(mapped).toMatchObject({ fault, cause: err });
  });

  it.each([withCode("23505"), withCode("42P01"), withCode("22P02"), new Error("bug"), undefined, "text"])("%s is not one: kept as it is", (err) => {
    expect(postgresFaultOf(err)).toBeUndefined();
    expect(asStoreError(err)).toBe(err);
  });
});
