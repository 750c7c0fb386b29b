/**
 * HTTP conditional requests (RFC 9110 §13.1): the entity tags of an If-Match / If-None-Match
 * value and whether a request passes them. One set of rules for every service.
 */

/**
 * The entity tags of an If-Match / If-None-Match value: `*`, or a list of tags. Weak tags keep
 * their W/ prefix (they never match strongly). A bare value is taken as a quoted one (a client
 * that forgot the quotes).
 */
export function parseEtags(header: string): '*' | string[] {
  const v = header.trim();
  if (v === '*') return '*';
  const out: string[] = [];
  const re = /\s*(W\/)?("[^"]*"|[^\s,]+)\s*(?:,|$)/gy;
  let m: RegExpExecArray | null;
  while (re.lastIndex < v.length && (m = re.exec(v))) {
    let tag = m[2]!;
    if (!tag.startsWith('"')) tag = `"${tag}"`;
    out.push((m[1] ?? '') + tag);
  }
  return out;
}

/** If-Match: strong comparison; `*` needs a current version. */
export function ifMatchPasses(header: string, current: string | null): boolean {
  const tags = parseEtags(header);
  if (current === null) return false;
  if (tags === '*') return true;
  return tags.some((t) => !t.startsWith('W/') && t === current);
}

/** If-None-Match: weak comparison; `*` passes only when nothing exists. */
export function ifNoneMatchPasses(header: string, current: string | null): boolean {
  const tags = parseEtags(header);
  if (current === null) return true;
  if (tags === '*') return false;
  const bare = (t: string) => t.replace(/^W\//, '');
  return !tags.some((t) => bare(t) === bare(current));
}
