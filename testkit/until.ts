/** Polls `check` every `intervalMs` until it holds; fails naming `what` after `timeoutMs` (a hang guard, not a speed claim). */
export async function until(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 15_000,
  intervalMs = 25,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
