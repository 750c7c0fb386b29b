/**
 * Names for prepared statements (sql.ts on PostgreSQL, pglite-prepared.ts on the embedded
 * database): a query is prepared once per connection and then only bound and executed
 * (PostgreSQL skips parsing and planning it; the client sends less).
 * Bounded: the first MAX_PREPARED distinct texts get names, later ones run unprepared, so SQL
 * built at run time cannot grow every connection's statement cache without end.
 */
const MAX_PREPARED = 500;

export function statementNames(): { (text: string): string | undefined; disable(text: string): void } {
  const names = new Map<string, string>();
  const nameOf = (text: string) => {
    let name = names.get(text);
    if (name === undefined && names.size < MAX_PREPARED) names.set(text, (name = `svc_${names.size}`));
    return name || undefined;
  };
  return Object.assign(nameOf, { disable: (text: string) => void names.set(text, '') });
}
