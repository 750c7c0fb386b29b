import type { Rng } from './prng';

/**
 * A string that matches a regular expression, for the patterns the route table's schemas use
 * (`^acct_[0-9a-z]{26}$`, `^[A-Za-z0-9_.:-]+$`, alternations of literals): literals, escapes,
 * character classes, groups with `|`, and the quantifiers `? * + {n} {n,m}`. Lookarounds and
 * back-references are not generated (null: the caller tries other candidates).
 */
export function sampleRegex(source: string, rng: Rng): string | null {
  try {
    const p = new Parser(source, rng);
    const out = p.alternation();
    return p.done() ? out : null;
  } catch {
    return null;
  }
}

const CLASS_ESCAPES: Record<string, string> = {
  d: '0123456789',
  w: 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_',
  s: ' ',
};
const PRINTABLE = 'abcdefghijklmnopqrstuvwxyz0123456789';

class Parser {
  private i = 0;
  constructor(
    private readonly src: string,
    private readonly rng: Rng,
  ) {}

  done(): boolean {
    return this.i >= this.src.length;
  }

  /**
   * Scans (without generating) to the end of the alternation that starts here: the `)` that closes
   * it or the end of the source. Answers the extents of its top-level branches.
   */
  private scan(): Array<[number, number]> {
    const src = this.src;
    const branches: Array<[number, number]> = [];
    let from = this.i;
    let depth = 0;
    while (this.i < src.length) {
      const c = src[this.i]!;
      if (c === '\\') {
        this.i += 2;
        continue;
      }
      if (c === '[') {
        this.i++;
        if (src[this.i] === '^') this.i++;
        if (src[this.i] === ']') this.i++;
        while (this.i < src.length && src[this.i] !== ']') this.i += src[this.i] === '\\' ? 2 : 1;
        this.i++;
        continue;
      }
      if (c === '(') depth++;
      else if (c === ')') {
        if (depth === 0) break;
        depth--;
      } else if (c === '|' && depth === 0) {
        branches.push([from, this.i]);
        from = this.i + 1;
      }
      this.i++;
    }
    branches.push([from, this.i]);
    return branches;
  }

  /** One branch of the alternation that starts here, generated; the position moves past it all. */
  alternation(): string {
    const [a, b] = this.rng.pick(this.scan());
    const branch = new Parser(this.src.slice(a, b), this.rng);
    const out = branch.sequence();
    if (!branch.done()) throw new Error('unbalanced');
    return out;
  }

  sequence(): string {
    let out = '';
    while (this.i < this.src.length && this.src[this.i] !== '|' && this.src[this.i] !== ')') {
      const atom = this.atom();
      out += this.quantified(atom);
    }
    return out;
  }

  private quantified(atom: () => string): string {
    const c = this.src[this.i];
    let min = 1;
    let max = 1;
    if (c === '?' || c === '*' || c === '+') {
      this.i++;
      [min, max] = c === '?' ? [0, 1] : c === '*' ? [0, 3] : [1, 4];
    } else if (c === '{') {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(this.src.slice(this.i));
      if (m) {
        this.i += m[0].length;
        min = Number(m[1]);
        max = m[2] ? (m[3] ? Number(m[3]) : min + 3) : min;
        max = Math.min(max, min + 8);
      }
    }
    if (this.src[this.i] === '?') this.i++; // lazy
    let out = '';
    const n = this.rng.int(min, max);
    for (let k = 0; k < n; k++) out += atom();
    return out;
  }

  private atom(): () => string {
    const c = this.src[this.i++]!;
    if (c === '^' || c === '$') return () => '';
    if (c === '(') {
      if (this.src[this.i] === '?') {
        if (this.src[this.i + 1] !== ':') throw new Error('lookaround');
        this.i += 2;
      }
      const start = this.i;
      this.scan();
      const end = this.i;

      if (this.src[this.i++] !== ')') throw new Error('unclosed group');
      const inner = this.src.slice(start, end);
      return () => new Parser(inner, this.rng).alternation();
    }
    if (c === '[') {
      const chars = this.charClass();
      return () => this.rng.pick(chars);
    }
    if (c === '.') return () => this.rng.pick(PRINTABLE);
    if (c === '\\') {
      const e = this.src[this.i++]!;
      if (CLASS_ESCAPES[e]) return () => this.rng.pick(CLASS_ESCAPES[e]!);
      if (/\d/.test(e)) throw new Error('back-reference');
      const lit = this.escapeLiteral(e);
      return () => lit;
    }
    return () => c;
  }

  private escapeLiteral(e: string): string {
    if (e === 'x') {
      const hex = this.src.slice(this.i, this.i + 2);
      this.i += 2;
      return String.fromCharCode(parseInt(hex, 16));
    }
    if (e === 'u') {
      const hex = this.src.slice(this.i, this.i + 4);
      this.i += 4;
      return String.fromCharCode(parseInt(hex, 16));
    }
    return { n: '\n', t: '\t', r: '\r' }[e] ?? e;
  }

  private charClass(): string[] {
    let negate = false;
    if (this.src[this.i] === '^') {
      negate = true;
      this.i++;
    }
    const set = new Set<string>();
    let first = true;
    while (this.i < this.src.length && (this.src[this.i] !== ']' || first)) {
      first = false;
      let c = this.src[this.i++]!;
      if (c === '\\') {
        const e = this.src[this.i++]!;
        if (CLASS_ESCAPES[e]) {
          for (const x of CLASS_ESCAPES[e]!) set.add(x);
          continue;
        }
        c = this.escapeLiteral(e);
      }
      if (this.src[this.i] === '-' && this.src[this.i + 1] !== ']' && this.i + 1 < this.src.length) {
        this.i++;
        let to = this.src[this.i++]!;
        if (to === '\\') to = this.escapeLiteral(this.src[this.i++]!);
        for (let k = c.charCodeAt(0); k <= to.charCodeAt(0) && k - c.charCodeAt(0) < 512; k++) set.add(String.fromCharCode(k));
      } else set.add(c);
    }
    this.i++; // ]
    if (!negate) return [...set];
    const out = [...PRINTABLE].filter((x) => !set.has(x));
    if (!out.length) throw new Error('empty class');
    return out;
  }
}
