import { readChallenge, recheckVerdict } from '../../dist/sites/domain-rules.js';

const challenge = { name: '_svc-challenge.www.example.com', value: `svc-verify=${'a'.repeat(32)}` };

describe('custom domain rules: what a TXT answer says, and what a re-check does with it', () => {
  test('found only on an exact record; another token or none is absent; a failed lookup is unknown', () => {
    expect(readChallenge({ records: ['v=spf1 -all', ` ${challenge.value} `] }, challenge)).toEqual({ outcome: 'found', error: null });
    expect(readChallenge({ records: [`svc-verify=${'b'.repeat(32)}`] }, challenge)).toMatchObject({
      outcome: 'absent',
      error: expect.stringContaining('another token'),
    });
    expect(readChallenge({ records: [] }, challenge)).toMatchObject({ outcome: 'absent', error: expect.stringContaining('no TXT record') });
    expect(readChallenge({ error: 'no TXT record yet', absent: true }, challenge)).toEqual({ outcome: 'absent', error: 'no TXT record yet' });
    expect(readChallenge({ error: 'failed (ETIMEOUT)', absent: false }, challenge)).toEqual({ outcome: 'unknown', error: 'failed (ETIMEOUT)' });
  });

  test('the grace period starts at the first absence, is not moved by failures, ends a grace period later', () => {
    const t0 = new Date('2026-01-01T00:00:00Z');
    const at = (ms: number) => new Date(t0.getTime() + ms);
    const grace = 1000;
    expect(recheckVerdict('absent', null, t0, grace)).toEqual({ missingSince: t0, lapsed: false });
    expect(recheckVerdict('absent', t0, at(999), grace)).toEqual({ missingSince: t0, lapsed: false });
    expect(recheckVerdict('absent', t0, at(1000), grace)).toEqual({ missingSince: t0, lapsed: true });
    // A failure neither starts, resets nor ends it.
    expect(recheckVerdict('unknown', null, at(5000), grace)).toEqual({ missingSince: null, lapsed: false });
    expect(recheckVerdict('unknown', t0, at(5000), grace)).toEqual({ missingSince: t0, lapsed: false });
    // Found: the absence is forgotten.
    expect(recheckVerdict('found', t0, at(5000), grace)).toEqual({ missingSince: null, lapsed: false });
    // No grace: the first absence ends it.
    expect(recheckVerdict('absent', null, t0, 0)).toEqual({ missingSince: t0, lapsed: true });
  });
});
