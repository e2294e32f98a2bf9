import { afterEach, describe, expect, it } from "vitest";
import { ConfigError } from "../../../lib/config.ts";
import { createLogger } from "../../../lib/logger.ts";

describe("createLogger and LOG_LEVEL", () => {
  const saved = process.env.LOG_LEVEL;
  afterEach(() => {
    if (saved === undefined) delete process.env.LOG_LEVEL;
    else process.env.LOG_LEVEL = saved;
  });

  it("treats an empty LOG_LEVEL as unset (info), like every other variable", () => {
    process.env.LOG_LEVEL = "";
    expect(createLogger("test").level).toBe("info");
  });

  it.each(["trace", "debug", "info", "warn", "error", "fatal", "silent"])("accepts LOG_LEVEL=%s", (level) => {
    process.env.LOG_LEVEL = level;
    expect(createLogger("test").level).toBe(level);
  });

  it.each(["verbose", " info", "3", "constructor"])("refuses LOG_LEVEL=%j with one line naming the variable", (level) => {
    process.env.LOG_LEVEL = level;
    expect(() => createLogger("test")).toThrowError(ConfigError);
    expect(() => createLogger("test")).toThrowError(/^invalid configuration: LOG_LEVEL /);
  });
});
