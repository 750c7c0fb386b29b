import fs from 'node:fs';
import path from 'node:path';

/** Folders never indexed (dependencies, VCS, the host's own data). */
const SKIP_DIRS = new Set(['node_modules', '.git', '.svc', 'dist', 'build', '.next', 'coverage', '__pycache__']);
const TEXT_EXT = new Set([
  '.ts',
  '.tsx',
  '.js',
  '.jsx',
  '.mjs',
  '.cjs',
  '.json',
  '.md',
  '.markdown',
  '.txt',
  '.yaml',
  '.yml',
  '.toml',
  '.py',
  '.css',
  '.html',
  '.csv',
]);
const CODE_EXT = ['.ts', '.tsx', '.js', '.jsx', '.mjs', '.cjs', '.json'];
const MAX_FILES = 20_000;
const MAX_TEXT = 1024 * 1024;

export type LinkKind = 'import' | 'link' | 'device' | 'reference';

export interface Link {
  from: string;
  to: string;
  kind: LinkKind;
  line: number;
}

interface FileNode {
  path: string;
  kind: string;
  size: number;
  mtimeMs: number;
  /** Lines of text (indexed files only). */
  lines: string[] | null;
  links: Link[];
  /** token → occurrences */
  terms: Map<string, number>;
}

/** A markdown link's path, %-decoded when it decodes (a malformed escape is kept as written). */
function safeDecode(s: string): string {
  try {
    return decodeURI(s);
  } catch {
    return s;
  }
}

const tokenize = (s: string) => s.toLowerCase().match(/[\p{L}\p{N}_]{2,}/gu) ?? [];

function kindOf(rel: string): string {
  const ext = path.extname(rel).toLowerCase();
  if (rel.startsWith('worlds/') && ext === '.json') return 'world';
  if (rel === 'devices.json') return 'devices';
  if (['.ts', '.tsx', '.js', '.jsx', '.mjs', '.cjs'].includes(ext)) return 'code';
  if (ext === '.md' || ext === '.markdown') return 'markdown';
  if (TEXT_EXT.has(ext)) return ext.slice(1);
  return 'other';
}

/**
 * An index of the project folder: its files, the links between them (JS/TS imports and requires,
 * markdown links, worlds' devices, `@ref path` mentions) and a full-text index. It is kept current
 * by a rescan of modification times before each query: files changed, added or removed since the
 * last one are indexed again (no watcher to lose events or leak).
 */
export class ProjectGraph {
  private readonly files = new Map<string, FileNode>();
  private scannedAt = 0;
  private scanning: Promise<void> | undefined;

  constructor(private readonly root: string) {}

  /** Brings the index up to date (concurrent callers share one rescan). */
  refresh(): Promise<void> {
    this.scanning ??= this.scan().finally(() => (this.scanning = undefined));
    return this.scanning;
  }

  private async scan(): Promise<void> {
    const seen = new Set<string>();
    const walk = async (dir: string, rel: string) => {
      let entries: fs.Dirent[];
      try {
        entries = await fs.promises.readdir(dir, { withFileTypes: true });
      } catch {
        return;
      }
      const files: string[] = [];
      const dirs: Array<[string, string]> = [];
      for (const e of entries) {
        const r = rel ? `${rel}/${e.name}` : e.name;
        // Symlinks are not followed: the index never reads outside the project.
        if (e.isDirectory()) {
          if (!SKIP_DIRS.has(e.name) && !e.name.startsWith('.')) dirs.push([path.join(dir, e.name), r]);
        } else if (e.isFile() && seen.size + files.length < MAX_FILES) files.push(r);
      }
      // A folder's files are looked at together (stat in parallel): a rescan is one pass of the tree.
      await Promise.all(
        files.map(async (r) => {
          seen.add(r);
          const st = await fs.promises.stat(path.join(this.root, r)).catch(() => null);
          if (!st) return;
          const known = this.files.get(r);
          if (known && known.mtimeMs === st.mtimeMs && known.size === st.size) return;
          this.files.set(r, await this.indexFile(r, st));
        }),
      );
      for (const [abs, r] of dirs) if (seen.size < MAX_FILES) await walk(abs, r);
    };
    await walk(this.root, '');
    for (const k of [...this.files.keys()]) if (!seen.has(k)) this.files.delete(k);
    this.scannedAt = Date.now();
  }

  private async indexFile(rel: string, st: fs.Stats): Promise<FileNode> {
    const node: FileNode = { path: rel, kind: kindOf(rel), size: st.size, mtimeMs: st.mtimeMs, lines: null, links: [], terms: new Map() };
    if (!TEXT_EXT.has(path.extname(rel).toLowerCase()) || st.size > MAX_TEXT) return node;
    const text = await fs.promises.readFile(path.join(this.root, rel), 'utf8').catch(() => null);
    if (text === null) return node;
    node.lines = text.split(/\r?\n/);
    for (const tok of [...tokenize(text), ...tokenize(rel)]) node.terms.set(tok, (node.terms.get(tok) ?? 0) + 1);
    node.lines.forEach((line, i) => {
      const add = (to: string, kind: LinkKind) => node.links.push({ from: rel, to, kind, line: i + 1 });
      if (node.kind === 'code') {
        for (const m of line.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*)['"](\.{1,2}\/[^'"]+)['"]/g)) add(m[1]!, 'import');
      }
      if (node.kind === 'markdown') {
        for (const m of line.matchAll(/\]\(\s*<?([^)\s>#?]+)[^)]*\)/g)) if (!/^[a-z][a-z0-9+.-]*:/i.test(m[1]!)) add(m[1]!, 'link');
      }
      for (const m of line.matchAll(/@ref\s+([\w./-]+)/g)) add(m[1]!, 'reference');
    });
    if (node.kind === 'world') {
      try {
        const doc = JSON.parse(text) as { devices?: Array<{ device?: unknown }> };
        for (const d of doc.devices ?? [])
          if (typeof d.device === 'string') node.links.push({ from: rel, to: `device:${d.device}`, kind: 'device', line: 0 });
      } catch {
        // An invalid world has no device links (project_status names it).
      }
    }
    node.links = node.links.map((l) => ({ ...l, to: this.resolve(rel, l) }));
    return node;
  }

  /** A link's target as a project path (relative to the file), with code extensions and index files tried. */
  private resolve(from: string, l: Link): string {
    if (l.kind === 'device') return l.to;
    const base = l.kind === 'reference' && !l.to.startsWith('.') ? l.to : path.posix.join(path.posix.dirname(from), safeDecode(l.to));
    const norm = path.posix.normalize(base);
    if (norm.startsWith('..')) return `outside:${l.to}`;
    if (l.kind !== 'import' || (fs.existsSync(path.join(this.root, norm)) && fs.statSync(path.join(this.root, norm)).isFile())) return norm;
    const stem = norm.replace(/\.(js|mjs|cjs|jsx)$/, '');
    for (const cand of [...CODE_EXT.map((e) => stem + e), ...CODE_EXT.map((e) => `${norm}/index${e}`)]) {
      if (fs.existsSync(path.join(this.root, cand))) return cand;
    }
    return norm;
  }

  private allLinks(): Link[] {
    return [...this.files.values()].flatMap((f) => f.links);
  }

  private deviceLinks(id: string): Link[] {
    return this.allLinks().filter((l) => l.to === `device:${id}`);
  }

  /**
   * The graph around a file (its links out, the files linking to it, and what is reachable within
   * `depth` steps), or with no path a summary of every file.
   */
  async query(opts: { path?: string; depth?: number; kind?: string; limit?: number }) {
    await this.refresh();
    const limit = opts.limit ?? 200;
    if (!opts.path) {
      const files = [...this.files.values()].filter((f) => !opts.kind || f.kind === opts.kind).sort((a, b) => a.path.localeCompare(b.path));
      const links = this.allLinks();
      return {
        files: files
          .slice(0, limit)
          .map((f) => ({ path: f.path, kind: f.kind, size: f.size, linksOut: f.links.length, linksIn: links.filter((l) => l.to === f.path).length })),
        total: files.length,
        links: links.length,
        brokenLinks: links
          .filter((l) => !l.to.startsWith('device:') && !this.files.has(l.to))
          .map((l) => ({ from: l.from, to: l.to, line: l.line }))
          .sort((a, b) => a.from.localeCompare(b.from) || a.line - b.line)
          .slice(0, limit),
        indexedAt: new Date(this.scannedAt).toISOString(),
      };
    }
    const target = opts.path.startsWith('device:') ? opts.path : path.posix.normalize(opts.path);
    const node = this.files.get(target);
    if (!node && !target.startsWith('device:')) return null;
    const out = node?.links ?? [];
    const incoming = target.startsWith('device:') ? this.deviceLinks(target.slice(7)) : this.allLinks().filter((l) => l.to === target);
    const depth = Math.min(Math.max(opts.depth ?? 1, 1), 10);
    const reachable = new Map<string, number>();
    let frontier = [target];
    for (let d = 1; d <= depth && frontier.length; d++) {
      const next: string[] = [];
      for (const p of frontier) {
        for (const l of this.files.get(p)?.links ?? []) {
          if (l.to !== target && !reachable.has(l.to)) {
            reachable.set(l.to, d);
            next.push(l.to);
          }
        }
      }
      frontier = next;
    }
    return {
      path: target,
      kind: node?.kind ?? 'device',
      size: node?.size,
      links: out.map((l) => ({ to: l.to, kind: l.kind, line: l.line, exists: l.to.startsWith('device:') || this.files.has(l.to) })),
      backlinks: incoming.map((l) => ({ from: l.from, kind: l.kind, line: l.line })),
      reachable: [...reachable].map(([p, d]) => ({ path: p, depth: d })).slice(0, limit),
      indexedAt: new Date(this.scannedAt).toISOString(),
    };
  }

  /** Files matching every word of the query (text and path), best first, with the lines that match. */
  async search(query: string, limit = 20) {
    await this.refresh();
    const words = [...new Set(tokenize(query))];
    if (words.length === 0) return { query, results: [], total: 0 };
    const scored: Array<{ node: FileNode; score: number }> = [];
    for (const node of this.files.values()) {
      let score = 0;
      for (const w of words) {
        // A word matches itself and longer words it begins (`stage` finds `stages`).
        let hits = node.terms.get(w) ?? 0;
        if (!hits) for (const [t, n] of node.terms) if (t.startsWith(w)) hits += n;
        if (!hits) {
          score = 0;
          break;
        }
        score += 1 + Math.log(hits);
      }
      if (score > 0) scored.push({ node, score: score + (words.some((w) => node.path.toLowerCase().includes(w)) ? 1 : 0) });
    }
    scored.sort((a, b) => b.score - a.score || a.node.path.localeCompare(b.node.path));
    return {
      query,
      total: scored.length,
      results: scored.slice(0, limit).map(({ node, score }) => ({
        path: node.path,
        kind: node.kind,
        score: Number(score.toFixed(3)),
        matches: (node.lines ?? [])
          .map((text, i) => ({ line: i + 1, text: text.length > 200 ? text.slice(0, 200) + '…' : text }))
          .filter((l) => words.some((w) => l.text.toLowerCase().includes(w)))
          .slice(0, 5),
      })),
    };
  }

  stats() {
    return { files: this.files.size, links: this.allLinks().length, indexedAt: this.scannedAt ? new Date(this.scannedAt).toISOString() : null };
  }
}
