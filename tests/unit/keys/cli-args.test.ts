import { describe, expect, it } from "vitest";
import { cliError, parse, positiveInt } from "../../../keys/cli-args.ts";
import { KeysError, UsageError } from "../../../keys/errors.ts";
import { KeyConflictError, KeyValidationError } from "../../../keys/operations/errors.ts";
import { StorageUnavailableError } from "../../../lib/storage-faults.ts";

describe("the command line's arguments and errors", () => {
  it("a refused field is named by its flag (exit 2); a conflict or a busy registry is exit 1", () => {
    const usage = cliError(
      new KeyValidationError([
        { field: "perMinute", message: "is required for the enterprise plan" },
        { field: "graceSeconds", message: "must be …" },
      ]),
    );
    expect(usage).toBeInstanceOf(UsageError);
    expect((usage as Error).message).toBe("--per-minute is required for the enterprise plan; --grace must be …");
    expect(cliError(new KeyConflictError("key_x is revoked"))).toBeInstanceOf(KeysError);
    expect((cliError(new StorageUnavailableError("busy")) as Error).message).toBe("the key registry (KEYS_DB) cannot be used now (busy); try again");
    const other = new Error("bug");
    expect(cliError(other)).toBe(other);
  });

  it("an argument starting with one dash is a positional (a kid may); counts and integers are checked", () => {
    expect(parse(["-W3x9Q"], {}, ["KID"]).positionals).toEqual(["-W3x9Q"]);
    expect(() => parse([], {}, ["KID"])).toThrowError(/expected KID/);
    expect(positiveInt("--per-day", "12")).toBe(12);
    expect(() => positiveInt("--per-day", "0")).toThrowError(/--per-day must be a positive integer/);
  });
});
