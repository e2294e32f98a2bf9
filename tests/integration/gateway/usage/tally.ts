/** What clients saw, by usage outcome, and a history's totals in the same shape. */
export type Tally = Record<"2xx" | "4xx" | "5xx" | "limited" | "banned" | "forbidden", number>;

export const emptyTally = (): Tally => ({ "2xx": 0, "4xx": 0, "5xx": 0, limited: 0, banned: 0, forbidden: 0 });

/** The outcome a response counts as: 429 by its code, 403 forbidden, else its status class. */
export function outcomeOf(status: number, code: string | undefined): keyof Tally {
  if (status === 429) return code === "api_key_banned" ? "banned" : "limited";
  if (status === 403) return "forbidden";
  return status >= 500 ? "5xx" : status >= 400 ? "4xx" : "2xx";
}

/** A history's buckets summed by outcome. */
export function historyTotals(history: { buckets: Tally[] }): Tally {
  const sum = emptyTally();
  for (const b of history.buckets) for (const k of Object.keys(sum) as (keyof Tally)[]) sum[k] += b[k];
  return sum;
}
