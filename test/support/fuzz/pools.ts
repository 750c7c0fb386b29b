/**
 * The ids a tenant owns, gathered from every answer it got (`<prefix>_` + 26 base32 characters,
 * DESIGN §3): what a generated field that takes an id is filled with. Nothing here names an
 * operation, so the resources of operations added later are gathered the same way.
 */
export const ID_RE = /\b([a-z]{2,8})_[0-9a-z]{26}\b/g;

export class IdPool {
  private readonly byPrefix = new Map<string, Set<string>>();
  /** Ids never handed out (the credentials the fuzzer itself uses). */
  readonly protected = new Set<string>();

  /** Adds every id found in a text (an answer). */
  harvest(text: string): void {
    for (const m of text.matchAll(ID_RE)) {
      const set = this.byPrefix.get(m[1]!) ?? new Set<string>();
      set.add(m[0]);
      this.byPrefix.set(m[1]!, set);
    }
  }

  add(id: string): void {
    this.harvest(id);
  }

  forget(id: string): void {
    for (const set of this.byPrefix.values()) set.delete(id);
  }

  all(): string[] {
    return [...this.byPrefix.values()].flatMap((s) => [...s]).filter((id) => !this.protected.has(id));
  }

  /** Every id, the protected ones too (the other tenant's, as hostile input). */
  everything(): string[] {
    return [...this.byPrefix.values()].flatMap((s) => [...s]);
  }

  withPrefix(prefix: string): string[] {
    return [...(this.byPrefix.get(prefix) ?? [])].filter((id) => !this.protected.has(id));
  }

  has(id: string): boolean {
    return [...this.byPrefix.values()].some((s) => s.has(id));
  }
}

/** Field names that take an id without saying so by a pattern: the prefix their ids have. */
const NAME_HINTS: Array<[RegExp, string[]]> = [
  [/^(agent|grantee|agentIds?)/i, ['agt']],
  [/^(account|member|org)/i, ['acct']],
  [/^thread/i, ['thr']],
  [/^(file|item)/i, ['file', 'fld']],
  [/^(folder|parent)/i, ['fld']],
  [/^profile/i, ['prof']],
  [/^site/i, ['site']],
  [/^deployment/i, ['dep']],
  [/^order/i, ['ord']],
  [/^(key|query)/i, ['key']],
  [/^host/i, ['host']],
  [/^grant/i, ['grt']],
];

/** The prefixes a field of this name probably takes (none: not an id field). */
export function idPrefixesFor(name: string): string[] | null {
  if (!/(^id$|Id$|Ids$)/.test(name)) return null;
  for (const [re, prefixes] of NAME_HINTS) if (re.test(name)) return prefixes;
  return [];
}
