/** The host's log: one JSON line per event on stderr (stdout belongs to the MCP protocol in `svc-host mcp`). */
export interface Log {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

const CREDENTIAL_RE = /svch_[0-9a-f]+/gi;

/** Writes to stderr (or `write`); a credential that slipped into a message is masked. */
export function createLog(opts: { silent?: boolean; write?: (line: string) => void } = {}): Log {
  const write = opts.write ?? ((line: string) => process.stderr.write(line));
  const emit = (level: string, msg: string, fields?: Record<string, unknown>) => {
    if (opts.silent) return;
    const line = JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields }).replace(CREDENTIAL_RE, 'svch_…');
    write(line + '\n');
  };
  return {
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
  };
}
