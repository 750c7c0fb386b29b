import { SignJWT } from 'jose';

import { DomainError, type Principal, PrincipalSigner, requireHuman } from '@svc/kit';

const SECRET = 'x'.repeat(40);
const P: Principal = { kind: 'human', userId: 'acct_a', accountId: 'acct_a', keyId: 'key_a', channel: 'api' };

describe('PrincipalSigner', () => {
  test('a signed principal verifies to itself', async () => {
    const s = new PrincipalSigner(SECRET);
    const { token, expiresAt } = await s.sign(P);
    expect(expiresAt).toBeGreaterThan(Date.now());
    expect(await s.verify(token)).toEqual(P);
  });

  test('a token signed with another secret, an unsigned one, a tampered one and an expired one are refused', async () => {
    const s = new PrincipalSigner(SECRET);
    const forged = await new PrincipalSigner('y'.repeat(40)).sign(P);
    await expect(s.verify(forged.token)).rejects.toThrow(DomainError);
    const [h, , sig] = (await s.sign(P)).token.split('.');
    const payload = Buffer.from(
      JSON.stringify({ p: { ...P, accountId: 'acct_victim' }, iss: 'svc-gateway', aud: 'svc-services', exp: 9e9 }),
    ).toString('base64url');
    await expect(s.verify(`${h}.${payload}.${sig}`)).rejects.toThrow(/no valid principal/);
    const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${payload}.`;
    await expect(s.verify(none)).rejects.toThrow(DomainError);
    const expired = await new SignJWT({ p: P })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer('svc-gateway')
      .setAudience('svc-services')
      .setExpirationTime(Math.floor(Date.now() / 1000) - 10)
      .sign(new TextEncoder().encode(SECRET));
    await expect(s.verify(expired)).rejects.toThrow(DomainError);
  });

  test('authority needs a person', () => {
    expect(() => requireHuman(P)).not.toThrow();
    try {
      requireHuman({ ...P, kind: 'agent', agentId: 'agt_x' });
      throw new Error('expected a refusal');
    } catch (err) {
      expect((err as DomainError).code).toBe('human_principal_required');
      expect((err as DomainError).httpStatus).toBe(403);
    }
  });
});
