import { UsageError } from "./errors.ts";

const UNIT_SECONDS = { s: 1, m: 60, h: 3_600, d: 86_400 } as const;
/** Keys live at most ~100 years; anything longer is a typo. */
const MAX_SECONDS = 100 * 365 * 86_400;

/** "30d", "12h", "15m", "2s" → seconds. Throws UsageError on anything else. */
export function parseDuration(text: string, flag = "--expires-in"): number {
  const match = /^([1-9][0-9]{0,9})([smhd])$/.exec(text);
  const seconds = match ? Number(match[1]) * UNIT_SECONDS[match[2] as keyof typeof UNIT_SECONDS] : NaN;
  if (!(seconds <= MAX_SECONDS)) {
    throw new UsageError(
      `${flag} must be a positive whole number followed by d, h, m or s (e.g. 30d, 12h, 15m, 2s), at most 100 years; got ${JSON.stringify(text)}`,
    );
  }
  return seconds;
}
