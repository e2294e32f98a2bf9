/**
 * A URL (PETS_DB, REDIS_URL) as logs and messages show it: a password before the @ or given as
 * `?password=` (node-postgres takes it there too, and prefers it) is masked. Other text, a SQLite
 * path for one, comes back unchanged. Text, not URL parsing: a malformed URL is masked as well.
 */
export function withoutPasswords(text: string): string {
  return text.replace(/(\/\/[^/@:]*:)[^/@]*@/g, "$1***@").replace(/([?&]password=)[^&]*/gi, "$1***");
}
