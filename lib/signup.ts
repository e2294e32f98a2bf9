import { z } from "zod";
import { invalidRequest } from "./http/errors.ts";

/**
 * The self-serve sign-up form (DESIGN, Usage history and the consumer's view): a name and an
 * e-mail address, recorded on the Free key (owner id, metadata), not verified. The gateway checks
 * it before asking the key service, which checks it again (it trusts no caller's input).
 */
export const SIGNUP_FORM = z.strictObject({
  name: z
    .string({ error: "is required: your name, 1 to 200 characters" })
    .trim()
    .min(1, "is required: your name, 1 to 200 characters")
    .max(200, "must be at most 200 characters")
    .regex(/^[^\p{Cc}]*$/u, "must not contain control characters"),
  // At most 200: the e-mail becomes the key's owner id. A plain shape check; nobody is mailed.
  email: z
    .string({ error: "is required: an e-mail address" })
    .trim()
    .max(200, "must be at most 200 characters")
    .regex(/^[^\s@\p{Cc}]+@[^\s@\p{Cc}]+\.[^\s@\p{Cc}]+$/u, "must be an e-mail address (name@example.com)"),
});

export type SignupForm = z.infer<typeof SIGNUP_FORM>;

/** The form from a request body, or a 400 `invalid_request` naming each bad field (`name`, `email`, `body`). */
export function parseSignupForm(body: unknown): SignupForm {
  const result = SIGNUP_FORM.safeParse(body);
  if (result.success) return result.data;
  const details = new Map<string, string>();
  for (const issue of result.error.issues) {
    const fields = issue.code === "unrecognized_keys" ? issue.keys : [issue.path.length === 0 ? "body" : issue.path.map(String).join(".")];
    for (const field of fields) if (!details.has(field)) details.set(field, issue.code === "unrecognized_keys" ? "is not a known field" : issue.message);
  }
  throw invalidRequest([...details].map(([field, message]) => ({ field, message })));
}
