import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ConfigError } from "../../../lib/config.ts";
import { batchedDestination, createLogger } from "../../../lib/logger.ts";

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

describe("batchedDestination", () => {
  afterEach(() => void vi.useRealTimers());

  it("holds a short line at most 10 ms, and keeps no timer while no line waits (an idle process wakes for nothing)", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "batched-"));
    const file = path.join(dir, "out.log");
    try {
      const destination = batchedDestination(file);
      await once(destination, "ready");
      vi.useFakeTimers();
      const log = pino({ base: null }, destination);
      expect(vi.getTimerCount()).toBe(0);

      log.info("first");
      log.info("second");
      // Under 4 KiB: both wait, on one timer.
      expect(vi.getTimerCount()).toBe(1);
      expect(readFileSync(file, "utf8")).toBe("");

      vi.advanceTimersByTime(10);
      expect(vi.getTimerCount()).toBe(0);
      await vi.waitFor(() => expect(readFileSync(file, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l).msg)).toEqual(["first", "second"]));
      expect(vi.getTimerCount()).toBe(0);

      log.info("third");
      expect(vi.getTimerCount()).toBe(1);
      destination.flushSync();
      expect(readFileSync(file, "utf8")).toContain('"msg":"third"');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
