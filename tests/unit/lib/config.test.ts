import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ConfigError, parseEnv, port } from "../../../lib/config.ts";

const schema = z.object({ SOME_PORT: port(50051), SOME_PATH: z.string().default("data/x") });

describe("parseEnv", () => {
  it("applies defaults and freezes the result", () => {
    const cfg = parseEnv(schema, {});
    expect(cfg).toEqual({ SOME_PORT: 50051, SOME_PATH: "data/x" });
    expect(Object.isFrozen(cfg)).toBe(true);
  });

  it("treats empty strings as unset", () => {
    expect(parseEnv(schema, { SOME_PORT: "" }).SOME_PORT).toBe(50051);
  });

  // Number() reads " " as 0 (a random port) and "0x1f90" as 8080: only decimal digits are a number here.
  it.each(["abc", "70000", "-1", "1.5", " ", "0x1f90", "1e3", "Infinity"])("names the variable for SOME_PORT=%j", (value) => {
    expect(() => parseEnv(schema, { SOME_PORT: value })).toThrowError(ConfigError);
    expect(() => parseEnv(schema, { SOME_PORT: value })).toThrowError(/^invalid configuration: SOME_PORT /);
  });

  it("shows a refused URL without its password", () => {
    const urls = z.object({ SOME_URL: z.url().refine((v) => v.startsWith("postgres://"), "must be postgres://") });
    const refused = (value: string) => {
      try {
        parseEnv(urls, { SOME_URL: value });
      } catch (err) {
        return (err as Error).message;
      }
      throw new Error("accepted");
    };
    const message = refused("mysql://app:s3cret@db:3306/pets?password=other");
    expect(message).toMatch(/^invalid configuration: SOME_URL must be postgres:\/\/ \(got "mysql:\/\/app:\*\*\*@db:3306\/pets\?password=\*\*\*"\)$/);
    expect(message).not.toMatch(/s3cret|other/);
  });
});
