/**
 * What PETS_DB names, without loading either store: the config check and `npm start` ask too.
 * A postgres:// (postgresql://) URL names a PostgreSQL database; any other URL scheme names
 * nothing we serve; anything else is a SQLite file path.
 */
const POSTGRES_URL = /^postgres(?:ql)?:\/\//i;
const ANY_URL = /^[a-z][a-z0-9+.-]*:\/\//i;

export function isPostgresUrl(petsDb: string): boolean {
  return POSTGRES_URL.test(petsDb);
}

/** A URL of a scheme other than postgres(ql)://: refused (`mysql://…` is no file path either). */
export function isOtherUrl(petsDb: string): boolean {
  return ANY_URL.test(petsDb) && !isPostgresUrl(petsDb);
}
