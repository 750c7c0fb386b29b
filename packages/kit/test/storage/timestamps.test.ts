import pg from 'pg';

import { createPgSql, utcTimestamp } from '@svc/kit';

import { createDatabase, REAL } from '../../../../test/support/backends';

// pg's own parser of timestamptz (postgres-date), as it is before createPgSql puts ours in front of it.
const general = pg.types.getTypeParser(1184) as (s: string) => Date | number | null;

describe('timestamptz read digit by digit (storage/timestamps.ts)', () => {
  test("gives the general parser's Date for every UTC form PostgreSQL sends", () => {
    const samples: string[] = [];
    for (let i = 0; i < 2000; i++) {
      const d = new Date(Date.UTC(1000 + ((i * 7919) % 9000), i % 12, 1 + (i % 28), i % 24, (i * 7) % 60, (i * 13) % 60));
      const base = d.toISOString().slice(0, 19).replace('T', ' ');
      const fraction = String((i * 104729) % 1_000_000)
        .padStart(6, '0')
        .slice(0, i % 7)
        .replace(/0+$/, '');
      samples.push(`${base}${fraction ? `.${fraction}` : ''}+00`);
    }
    samples.push(
      '2026-11-30 01:02:03+00',
      '2026-11-30 01:02:03.4+00',
      '2026-11-30 01:02:03.45+00',
      '2026-11-30 01:02:03.999999+00',
      '1000-01-01 00:00:00+00',
      '9999-12-31 23:59:59.999999+00',
    );
    for (const s of samples) {
      const fast = utcTimestamp(s);
      expect([s, fast?.getTime()]).toEqual([s, (general(s) as Date).getTime()]);
    }
  });

  test('leaves every other form to the general parser', () => {
    for (const s of [
      '2026-11-30 01:02:03.456+05:30',
      '2026-11-30 01:02:03-08',
      '2026-11-30 01:02:03+00 BC',
      '0999-12-31 23:59:59+00',
      '0001-01-01 00:00:00+00',
      '12026-11-30 01:02:03+00',
      'infinity',
      '-infinity',
      '2026-11-30 01:02:03.+00',
      '2026-11-30 01:02:03.1234567+00',
      '2026-11-30T01:02:03+00',
      '2026-1a-30 01:02:03+00',
      '2026-11-30 01:02:0x+00',
      '2026-11-30 01:02:03.12x+00',
      '',
    ]) {
      expect([s, utcTimestamp(s)]).toEqual([s, undefined]);
    }
  });
});

(REAL.pg ? describe : describe.skip)('on PostgreSQL', () => {
  let db: Awaited<ReturnType<typeof createDatabase>>;
  beforeAll(async () => {
    db = await createDatabase(REAL.pg!);
  });
  afterAll(() => db.drop());

  const values = `VALUES ('2026-11-30 01:02:03.456789+00'::timestamptz), ('1999-12-31 23:59:59.999999+00'), ('2026-01-01 00:00:00+00'),
    ('0050-06-01 12:00:00+00'), ('2000-01-01 00:00:00+00 BC'), ('infinity'), (NULL)`;

  test('reads what the server sends as the general parser does, in a UTC session and in another zone', async () => {
    const utc = createPgSql(db.url, { settings: { timezone: 'UTC' } });
    const japan = createPgSql(db.url, { settings: { timezone: 'Japan' } });
    try {
      for (const sql of [utc, japan]) {
        const rows = await sql.query<{ t: Date | number | null; s: string | null }>(`SELECT t, t::text AS s FROM (${values}) v(t)`, []);
        expect(rows).toHaveLength(7);
        for (const { t, s } of rows) {
          const want = s === null ? null : general(s);
          expect([s, t instanceof Date ? t.getTime() : t]).toEqual([s, want instanceof Date ? want.getTime() : want]);
        }
      }
      expect((await japan.query<{ s: string }>(`SELECT '2026-11-30 01:02:03+00'::timestamptz::text AS s`))[0]!.s).toBe('2026-11-30 10:02:03+09');
    } finally {
      await Promise.all([utc.close(), japan.close()]);
    }
  });
});
