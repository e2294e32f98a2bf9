import { z } from "zod";

/** A query parameter that must be a decimal integer min..max (absent → `fallback`). */
export const queryInt = (min: number, max: number, fallback: number) =>
  z
    .string()
    .regex(/^[0-9]+$/, `must be an integer from ${min} to ${max}`)
    .transform(Number)
    .pipe(z.number().int().min(min, `must be an integer from ${min} to ${max}`).max(max, `must be an integer from ${min} to ${max}`))
    .optional()
    .transform((v) => v ?? fallback);

/** An opaque cursor from a previous page. */
export const cursorParam = z.string().min(1, "must not be empty").max(512, "is not a cursor from a previous page").optional();
