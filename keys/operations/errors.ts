/** One refused field of a request: the admin API answers them as 400 `invalid_request` details. */
export interface FieldProblem {
  field: string;
  message: string;
}

/** The input names a key that cannot be (plan and limits that do not go together, a bad CIDR…). */
export class KeyValidationError extends Error {
  override name = "KeyValidationError";

  readonly details: readonly FieldProblem[];

  constructor(details: readonly FieldProblem[]) {
    super(details.map((d) => `${d.field}: ${d.message}`).join("; "));
    this.details = details;
  }
}

/** No key of that id in the registry (404). */
export class KeyNotFoundError extends Error {
  override name = "KeyNotFoundError";

  readonly keyId: string;

  constructor(keyId: string) {
    super(`no key ${JSON.stringify(keyId)} in the registry`);
    this.keyId = keyId;
  }
}

/** The key's state forbids the change: revoked (any change), expired (a roll) (409). */
export class KeyConflictError extends Error {
  override name = "KeyConflictError";
}

/** The Idempotency-Key was first used with another request body (422 idempotency_key_reused). */
export class IdempotencyKeyReusedError extends Error {
  override name = "IdempotencyKeyReusedError";

  constructor() {
    super("this Idempotency-Key was used with another request body");
  }
}
