import { context, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';

/**
 * SQL spans named by what they do: `<OPERATION> <table>` (`SELECT keys.api_keys`,
 * `INSERT drive.items`, `BEGIN`), with the statement text in `db.query.text`, on PostgreSQL
 * (the pg instrumentation's spans, renamed: it names a prepared statement by its name, `svc_0`)
 * and on the embedded PGlite alike (spans of our own, which no instrumentation makes).
 */

const VERB = /^\s*(?:\/\*[\s\S]*?\*\/\s*)*([A-Za-z]+)/;
// The first table a statement names after its verb's keyword. A CTE (`WITH x AS (...)`) is
// named by the statement that follows its definitions.
const TABLE: Record<string, RegExp> = {
  SELECT: /\bFROM\s+(?:ONLY\s+)?("?[A-Za-z_][\w$]*"?(?:\."?[A-Za-z_][\w$]*"?)?)/i,
  DELETE: /\bDELETE\s+FROM\s+(?:ONLY\s+)?("?[A-Za-z_][\w$]*"?(?:\."?[A-Za-z_][\w$]*"?)?)/i,
  INSERT: /\bINSERT\s+INTO\s+("?[A-Za-z_][\w$]*"?(?:\."?[A-Za-z_][\w$]*"?)?)/i,
  UPDATE: /\bUPDATE\s+(?:ONLY\s+)?("?[A-Za-z_][\w$]*"?(?:\."?[A-Za-z_][\w$]*"?)?)/i,
};

export interface SqlSpanName {
  /** `SELECT keys.api_keys`, `BEGIN`, ... */
  name: string;
  operation: string;
  table?: string;
}

/**
 * The statement with what its parentheses hold blanked out, so that a table is found at its top
 * level only: not in `extract(epoch FROM at)` nor in a subquery (`FROM (SELECT …) s` names none).
 */
function topLevel(text: string): string {
  let depth = 0;
  let out = '';
  for (const ch of text) {
    if (ch === ')') depth = Math.max(0, depth - 1);
    out += depth > 0 ? ' ' : ch;
    if (ch === '(') depth++;
  }
  return out;
}

export function sqlSpanName(text: string): SqlSpanName {
  let operation = (VERB.exec(text)?.[1] ?? 'SQL').toUpperCase();
  let body = text;
  if (operation === 'WITH') {
    // The main statement: the first verb at depth 0 after the CTEs' parentheses.
    let depth = 0;
    let i = 0;
    for (; i < text.length; i++) {
      const ch = text[i];
      if (ch === '(') depth++;
      else if (ch === ')') depth--;
      else if (depth === 0 && /\s/.test(ch!)) {
        const m = /^\s+(SELECT|INSERT|UPDATE|DELETE)\b/i.exec(text.slice(i));
        if (m) {
          operation = m[1]!.toUpperCase();
          body = text.slice(i);
          break;
        }
      }
    }
    if (i === text.length) operation = 'WITH';
  }
  const re = TABLE[operation];
  const table = re ? re.exec(topLevel(body))?.[1]?.replace(/"/g, '') : undefined;
  return { name: table ? `${operation} ${table}` : operation, operation, table };
}

/** The attributes of a SQL span (OpenTelemetry's database conventions, old and new names). */
export function sqlSpanAttributes(text: string, n: SqlSpanName = sqlSpanName(text)): Record<string, string> {
  return {
    'db.system': 'postgresql',
    'db.system.name': 'postgresql',
    'db.query.text': text,
    'db.statement': text,
    'db.operation.name': n.operation,
    ...(n.table ? { 'db.collection.name': n.table } : {}),
  };
}

/** Renames a pg instrumentation span and adds the statement's attributes. */
export function nameSqlSpan(span: Span, text: string): void {
  const n = sqlSpanName(text);
  span.updateName(n.name);
  span.setAttributes(sqlSpanAttributes(text, n));
}

const tracer = trace.getTracer('svc-sql');

/**
 * Runs one statement of the embedded database inside a client span, only when a traced request
 * (or other traced work) is running: background statements with no parent stay untraced.
 */
export function withSqlSpan<T>(text: string, run: () => Promise<T>): Promise<T> {
  if (!trace.getSpan(context.active())) return run();
  const n = sqlSpanName(text);
  return tracer.startActiveSpan(n.name, { kind: SpanKind.CLIENT, attributes: sqlSpanAttributes(text, n) }, async (span) => {
    try {
      return await run();
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
      throw err;
    } finally {
      span.end();
    }
  });
}
