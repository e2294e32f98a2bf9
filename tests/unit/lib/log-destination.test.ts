import { mkdtempSync, openSync, closeSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { batchedDestination } from "../../../lib/log-destination.ts";

describe("batchedDestination: one write per 4 KiB or 10 ms", () => {
  let dir: string;
  let file: string;
  let fd: number;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "batched-"));
    file = path.join(dir, "out.log");
    fd = openSync(file, "a");
  });
  afterEach(() => {
    vi.useRealTimers();
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  });
  const logged = () => readFileSync(file, "utf8").split("\n").filter(Boolean).map((l) => (JSON.parse(l) as { msg: string }).msg);

  it("holds a short line at most 10 ms, and keeps no timer while no line waits (an idle process wakes for nothing)", async () => {
    const destination = batchedDestination(fd);
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
    await vi.waitFor(() => expect(logged()).toEqual(["first", "second"]));
    expect(vi.getTimerCount()).toBe(0);

    log.info("third");
    expect(vi.getTimerCount()).toBe(1);
    destination.final();
    expect(logged()).toEqual(["first", "second", "third"]);
  });

  it("writes 4 KiB as soon as they wait, without the timer", async () => {
    const destination = batchedDestination(fd);
    vi.useFakeTimers();
    const log = pino({ base: null }, destination);
    const line = "x".repeat(500);
    for (let i = 0; i < 8; i++) log.info(line);
    // 8 lines of about 530 bytes: 4 KiB reached at the 8th; the timer never fires here.
    await vi.waitFor(() => expect(logged()).toHaveLength(8));
  });

  it("settle() writes what waits and resolves once it is written", async () => {
    const destination = batchedDestination(fd);
    const log = pino({ base: null }, destination);
    for (let i = 0; i < 3; i++) log.info(`line ${i}`);
    await destination.settle(10_000);
    expect(logged()).toEqual(["line 0", "line 1", "line 2"]);
    expect(destination.dropped).toBe(0);
  });
});
