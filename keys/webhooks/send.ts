import { signWebhook } from "./signing.ts";

export interface SendResult {
  /** The receiver's HTTP status; null when it gave none. */
  status: number | null;
  /** Why the attempt failed (null: delivered, a 2xx). Never the URL (it may carry credentials). */
  error: string | null;
}

/**
 * POSTs one signed delivery; at most `timeoutMs` for the receiver's status line and headers.
 * Redirects are not followed (a 3xx is a failure: the subscription's URL is what the operator gave).
 */
export async function sendWebhook(opts: { url: string; secret: string; id: string; timestampSeconds: number; body: string; timeoutMs: number }): Promise<SendResult> {
  const headers = { "content-type": "application/json", "user-agent": "petstore-key-service", ...signWebhook(opts.secret, opts.id, opts.timestampSeconds, opts.body) };
  const timeout = AbortSignal.timeout(opts.timeoutMs);
  try {
    const res = await fetch(opts.url, {
      method: "POST",
      headers,
      body: opts.body,
      redirect: "manual",
      signal: timeout,
    });
    // The body is not read: the status decides.
    await res.body?.cancel().catch(() => {});
    return res.status >= 200 && res.status < 300 ? { status: res.status, error: null } : { status: res.status, error: `HTTP ${res.status}` };
  } catch (err) {
    if (timeout.aborted) return { status: null, error: `timed out after ${opts.timeoutMs / 1000} s` };
    const cause = (err as { cause?: { code?: unknown } }).cause;
    return { status: null, error: typeof cause?.code === "string" ? `could not connect (${cause.code})` : "the request failed" };
  }
}
