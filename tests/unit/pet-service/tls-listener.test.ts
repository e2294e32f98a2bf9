import { describe, expect, it } from "vitest";
import { callerLabels, MAX_CALLER_LABELS } from "../../../pet-service/tls-listener.ts";

describe("the caller label", () => {
  it("names the first MAX_CALLER_LABELS callers and counts every later one as other, so a CA issuing many certificates cannot grow the series", () => {
    const labelOf = callerLabels();
    const names = Array.from({ length: MAX_CALLER_LABELS + 5 }, (_, i) => `service-${i}`);
    const labels = names.map(labelOf);
    expect(labels.slice(0, MAX_CALLER_LABELS)).toEqual(names.slice(0, MAX_CALLER_LABELS));
    expect(labels.slice(MAX_CALLER_LABELS)).toEqual(Array(5).fill("other"));
    // Known callers keep their label.
    expect(labelOf("service-0")).toBe("service-0");
    expect(new Set(names.map(labelOf)).size).toBe(MAX_CALLER_LABELS + 1);
  });
});
