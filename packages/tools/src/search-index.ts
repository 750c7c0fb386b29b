/**
 * The ranking behind search_tools (docs/mcp.md, "Search"): BM25 (MiniSearch's BM25+) over each
 * tool's name, title, description and parameter names, with the Porter stemmer, stop words and a
 * list of synonyms. Words are folded to lowercase whole ("JavaScript" is one word, "javascript");
 * only identifiers are split: a tool's snake_case name at its underscores, a parameter's camelCase
 * name at its humps. packages/tools/test/search-eval.json is the evaluation it is held to.
 */
import MiniSearch from 'minisearch';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const stem = require('stemmer') as (word: string) => string;

import type { JsonSchema } from './schemas.js';

/** What the index needs of a tool. */
export interface Searchable {
  name: string;
  title: string;
  description: string;
  inputSchema: JsonSchema;
  /** A weight on its score (the tools of the default surface, the everyday ones, are a little ahead). */
  prior?: number;
}

/** Words that tell no tool from another. */
const STOP_WORDS = new Set(
  (
    "a an the of to in on at for and or is are be it its my me i i'm we our you your this that these those with by from as " +
    "do does did can could would should will want need please some any all what whats what's which how much many there here " +
    'have has had get got s just now up about into out one'
  ).split(' '),
);

/**
 * Synonyms: a word (lowercase, before stemming) and the catalogue's word for the same thing. Applied
 * to the tools' text and to queries alike, so either spelling finds the other.
 */
const SYNONYMS: Readonly<Record<string, string>> = {
  website: 'site',
  websites: 'site',
  webpage: 'site',
  homepage: 'site',
  publish: 'deploy',
  published: 'deploy',
  ship: 'deploy',
  conversation: 'thread',
  conversations: 'thread',
  chat: 'thread',
  chats: 'thread',
  discussion: 'thread',
  buy: 'order',
  sell: 'order',
  purchase: 'order',
  directory: 'folder',
  directories: 'folder',
  llm: 'model',
  llms: 'model',
  assistant: 'agent',
  assistants: 'agent',
  bot: 'agent',
  todo: 'task',
  'to-do': 'task',
  balance: 'credit',
  javascript: 'code',
  js: 'code',
  typescript: 'code',
  execute: 'run',
  remove: 'delete',
  erase: 'delete',
  machine: 'host',
  machines: 'host',
  laptop: 'host',
  computer: 'host',
  device: 'host',
  exchange: 'venue',
  exchanges: 'venue',
  broker: 'venue',
  price: 'quote',
  recurring: 'schedule',
  remember: 'memory',
  recall: 'memory',
  shares: 'symbol',
  stock: 'symbol',
  stocks: 'symbol',
  ticker: 'symbol',
  chart: 'candle',
  upload: 'write',
  save: 'write',
  make: 'create',
  new: 'create',
  begin: 'create',
  start: 'create',
  show: 'list',
  view: 'list',
  display: 'list',
  doc: 'file',
  document: 'file',
  documents: 'file',
};

/**
 * Related words a query also looks for (at a lower weight): what a person asks for in other
 * terms than the catalogue's own ("file" is the drive's, "who am i" is whoami).
 */
const RELATED: Readonly<Record<string, string[]>> = {
  file: ['drive'],
  files: ['drive'],
  folder: ['drive'],
  storage: ['drive', 'usage'],
  who: ['whoami'],
  credit: ['credits'],
  shares: ['order'],
  price: ['candle'],
  script: ['code'],
  code: ['script'],
  reply: ['message', 'send'],
  tell: ['message', 'send'],
  say: ['message', 'send'],
  open: ['create', 'read'],
  add: ['create'],
  see: ['list', 'get', 'read'],
  list: ['get', 'read'],
  contents: ['read'],
  live: ['deploy'],
  cash: ['account'],
  equity: ['account'],
  hold: ['position'],
  holdings: ['position'],
  done: ['complete'],
  finished: ['complete'],
  connected: ['host'],
  profit: ['pnl'],
  loss: ['pnl'],
  market: ['venue', 'clock'],
  hours: ['clock', 'session'],
  every: ['schedule', 'cron'],
  daily: ['schedule', 'cron'],
  weekly: ['schedule', 'cron'],
  hourly: ['schedule', 'cron'],
  morning: ['schedule', 'cron'],
  store: ['memory', 'write'],
  value: ['memory'],
  saved: ['memory', 'get'],
  rename: ['update'],
  move: ['update'],
  current: ['whoami'],
  identity: ['whoami'],
  account: ['whoami'],
  undo: ['rollback', 'restore'],
  revert: ['rollback', 'restore'],
};

/** A word as indexed and searched: null for a stop word, else its synonym's (or its own) stem. */
export function termOf(word: string): string | null {
  const w = word.toLowerCase();
  if (!w || STOP_WORDS.has(w)) return null;
  const s = stem(SYNONYMS[w] ?? w);
  return STEM_SYNONYMS.get(s) ?? s;
}

/** The synonyms by stem, so that each one's other forms ("chats", "publishing") are its synonyms too. */
const STEM_SYNONYMS = new Map(Object.entries(SYNONYMS).map(([w, to]) => [stem(w), stem(to)]));

/** Phrases that are one word of the catalogue's. */
const PHRASES: ReadonlyArray<[RegExp, string]> = [
  [/\broll(?:ing|ed)? back\b/g, 'rollback'],
  [/\bwho am i\b/g, 'whoami'],
  [/\bp ?& ?l\b/g, 'pnl'],
  [/\bto ?dos?\b/g, 'task'],
  [/\bkey[ -]value\b/g, 'memory'],
  // "Schedule …" and "remind me …" at the start ask for a new schedule.
  [/^\s*schedule\b/, 'create schedule'],
  [/\bremind me\b/g, 'create schedule'],
];

/** Words of ordinary text: lowercase whole words (no camelCase splitting), apostrophes kept inside. */
const textWords = (text: string): string[] =>
  PHRASES.reduce((t, [re, to]) => t.replace(re, to), text.toLowerCase()).match(/[a-z0-9]+(?:['’-][a-z0-9]+)*/g) ?? [];

/** An identifier's words: snake_case at underscores, camelCase at its humps. */
const identifierWords = (id: string): string => id.replace(/([a-z0-9])([A-Z])/g, '$1 $2').replace(/[_\-.]+/g, ' ');

const paramNames = (schema: JsonSchema): string =>
  Object.keys((schema.properties as Record<string, unknown> | undefined) ?? {})
    .map(identifierWords)
    .join(' ');

/** The weights of the fields: a word of the name counts most, of a parameter least. */
const BOOST = { name: 3, title: 1.5, description: 1.5, params: 0.3 };
/** A related word's weight beside the query's own words. */
const RELATED_WEIGHT = 0.6;

/** A BM25 index of tools: built once, searched with the query's words and their related words. */
export class ToolIndex<T extends Searchable> {
  private readonly index: MiniSearch<{ id: number }>;

  constructor(private readonly tools: readonly T[]) {
    this.index = new MiniSearch({
      fields: ['name', 'title', 'description', 'params'],
      tokenize: (text) => textWords(text).flatMap((w) => w.split(/['’]/)),
      processTerm: (term) => termOf(term),
    });
    this.index.addAll(
      tools.map((t, id) => ({
        id,
        name: `${identifierWords(t.name)} ${t.name}`,
        title: t.title,
        description: t.description,
        params: paramNames(t.inputSchema),
      })),
    );
  }

  /** Scores by tool position: the query's words, then (lower) their related words; an exact name first. */
  scores(query: string): Map<number, number> {
    const words = textWords(query).flatMap((w) => w.split(/['’]/));
    const out = new Map<number, number>();
    const add = (q: string, weight: number) => {
      if (!q) return;
      for (const r of this.index.search(q, { boost: BOOST, prefix: (t) => t.length >= 5, fuzzy: (t) => (t.length >= 7 ? 0.15 : false) })) {
        const id = r.id as number;
        out.set(id, (out.get(id) ?? 0) + r.score * weight * (this.tools[id]!.prior ?? 1));
      }
    };
    add(words.join(' '), 1);
    const own = new Set(words.map(termOf));
    const related = new Set(words.flatMap((w) => RELATED[w] ?? RELATED[SYNONYMS[w] ?? ''] ?? []).filter((r) => !own.has(termOf(r))));
    add([...related].join(' '), RELATED_WEIGHT);
    const exact = this.tools.findIndex((t) => t.name === query.trim().toLowerCase());
    if (exact >= 0) out.set(exact, (out.get(exact) ?? 0) + 1000);
    return out;
  }
}
