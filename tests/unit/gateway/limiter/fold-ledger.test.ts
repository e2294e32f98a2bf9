/** The fold ledger's counts per window, and its bounds: subjects whose admissions left every window, and an LRU cap. */
import { describe, expect, it } from "vitest";
import { createFoldLedger } from "../../../../gateway/limiter/fold-ledger.ts";
import { windowsForLimits } from "../../../../gateway/quota/plans.ts";

const T0 = Date.UTC(2030, 0, 1);
const W = windowsForLimits({ perMinute: 10, perDay: 1000 });

function setup(maxSubjects = 100) {
  let now = T0;
  const ledger = createFoldLedger({ clock: () => now, maxSubjects });
  return { ledger, advance: (ms: number) => (now += ms) };
}

describe("fold ledger", () => {
  it("takes each window's admissions still in it, once", () => {
    const { ledger, advance } = setup();
    ledger.add("s", W);
    ledger.add("s", W);
    advance(61_000);
    ledger.add("s", W);
    expect(ledger.take("s")).toEqual({ windows: W, counts: [1, 3] });
    expect(ledger.take("s")).toBeUndefined();
    expect(ledger.size()).toBe(0);
  });

  it("restores a fold that did not run, to be taken again", () => {
    const { ledger } = setup();
    ledger.restore("s", { windows: W, counts: [2, 5] });
    expect(ledger.take("s")).toEqual({ windows: W, counts: [2, 5] });
  });

  it("forgets a subject once its admissions left the longest window", () => {
    const { ledger, advance } = setup();
    ledger.add("old", W);
    advance(86_400_000 + 24 * 60_000); // a day and one of its buckets
    expect(ledger.take("old")).toBeUndefined();
    ledger.add("old", W);
    advance(86_400_000 + 24 * 60_000);
    ledger.add("new", W); // admissions sweep expired subjects at the LRU end
    expect(ledger.subjects()).toEqual(["new"]);
  });

  it("keeps at most maxSubjects, the least recently admitted dropped first", () => {
    const { ledger } = setup(2);
    for (const s of ["a", "b", "a", "c"]) ledger.add(s, W);
    expect(ledger.subjects()).toEqual(["a", "c"]);
  });
});
