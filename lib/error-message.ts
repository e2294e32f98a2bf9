/** One line for an error a process reports before exiting (start-up failures, CLI commands). */
export function messageOf(err: unknown): string {
  // A host name with several addresses fails with an AggregateError whose own message is empty.
  if (err instanceof AggregateError && !err.message) return messageOf(err.errors[0]);
  return err instanceof Error ? err.message || String((err as { code?: unknown }).code ?? err.name) : String(err);
}
