import { describe, expect, it } from "vitest";
import { parseDuration } from "../../../keys/duration.ts";
import { UsageError } from "../../../keys/errors.ts";

describe("parseDuration", () => {
  it.each([
    ["2s", 2],
    ["15m", 900],
    ["12h", 43_200],
    ["30d", 2_592_000],
    ["36500d", 36_500 * 86_400],
  ])("%s = %i seconds", (text, seconds) => expect(parseDuration(text)).toBe(seconds));

  it.each(["", "30", "d", "0d", "-1d", "1.5h", "30D", "30 d", " 30d", "1w", "1y", "2days", "36501d", "99999999999s"])(
    "rejects %j with a clear message",
    (text) => {
      expect(() => parseDuration(text)).toThrowError(UsageError);
      expect(() => parseDuration(text)).toThrowError(/--expires-in must be .*e\.g\. 30d, 12h, 15m, 2s/);
    },
  );
});
