import { z } from 'zod';

import type { accounts } from '@svc/proto';

import { Nullable, route, Timestamp } from '../../route.js';
import { AccountParams } from './shared.js';

/** The account's Ed25519 signing key: get, rotate, sign a JSON payload, verify a signature. */

const Jwk = z
  .object({ kty: z.literal('OKP'), crv: z.literal('Ed25519'), x: z.string(), kid: z.string(), alg: z.literal('EdDSA'), use: z.literal('sig') })
  .meta({ id: 'Ed25519Jwk' });

export const SigningKey = z
  .object({
    id: z.string().describe('The current key id (kid).'),
    algorithm: z.literal('EdDSA'),
    publicKey: Jwk,
    createdAt: Timestamp,
    previous: z
      .array(z.object({ id: z.string(), publicKey: Jwk, createdAt: Timestamp, retiredAt: Timestamp, verifyUntil: Timestamp }))
      .describe('Retired keys still inside their grace period: they verify, they no longer sign.'),
    jwks: z.object({ keys: z.array(Jwk) }).describe('Every key that verifies now (a JWKS).'),
  })
  .meta({ id: 'SigningKey' });

const signingKeyJson = (res: accounts.GetSigningKeyResponse | accounts.RotateSigningKeyResponse) => {
  const cur = res.keys!.current!;
  const previous = res.keys!.previous.map((k) => ({
    id: k.id,
    publicKey: JSON.parse(k.jwkJson),
    createdAt: k.createdAt,
    retiredAt: k.retiredAt!,
    verifyUntil: k.verifyUntil!,
  }));
  const publicKey = JSON.parse(cur.jwkJson);
  return {
    id: cur.id,
    algorithm: 'EdDSA' as const,
    publicKey,
    createdAt: cur.createdAt,
    previous,
    jwks: { keys: [publicKey, ...previous.map((k) => k.publicKey)] },
  };
};

const SignBody = z
  .object({
    payload: z
      .unknown()
      .refine((v) => v !== undefined, 'is required')
      .describe('Any JSON value (at most 64 KiB).'),
  })
  .strict()
  .meta({ id: 'SignRequest' });

export const signingRoutes = [
  route({
    id: 'signingKey.get',
    method: 'get',
    path: '/accounts/:id/signing-key',
    summary: "The account's current Ed25519 public key (JWK) and the retired keys that still verify.",
    errors: ['account_not_found'],
    tag: 'signing',
    params: AccountParams,
    response: SigningKey,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'accounts.getSigningKey',
      request: (i) => ({ accountId: i.params.id }),
      response: signingKeyJson,
    },
  }),
  route({
    id: 'signingKey.rotate',
    method: 'post',
    effect: 'overwrites',
    path: '/accounts/:id/signing-key/rotate',
    summary: 'Make a new current signing key; the old public key verifies for the grace period.',
    errors: ['account_not_found'],
    tag: 'signing',
    params: AccountParams,
    query: z.object({
      gracePeriodHours: z.coerce
        .number()
        .int()
        .min(0)
        .max(8760)
        .optional()
        .describe('How long the old key still verifies. Default: settings.signing.gracePeriodHours (168).'),
    }),
    response: SigningKey,
    auth: 'key',
    principals: ['human', 'agent'],
    authority: true,
    handler: {
      rpc: 'accounts.rotateSigningKey',
      request: (i) => ({ accountId: i.params.id, gracePeriodHours: i.query.gracePeriodHours }),
      response: signingKeyJson,
    },
  }),
  route({
    id: 'signatures.sign',
    method: 'post',
    effect: 'creates',
    path: '/accounts/:id/signatures',
    summary: "Sign a JSON payload with the account's current key: a compact JWS (EdDSA, kid in the header).",
    errors: ['account_not_found'],
    tag: 'signing',
    params: AccountParams,
    body: SignBody,
    response: z.object({ signature: z.string(), keyId: z.string(), algorithm: z.literal('EdDSA') }).meta({ id: 'Signature' }),
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'accounts.sign',
      request: (i) => ({ accountId: i.params.id, payloadJson: JSON.stringify(i.body.payload) }),
      response: (res) => ({ signature: res.jws, keyId: res.keyId, algorithm: 'EdDSA' as const }),
    },
  }),
  route({
    id: 'signatures.verify',
    method: 'post',
    effect: 'reads',
    path: '/accounts/:id/signatures/verify',
    summary: "Verify a signature with the account's current key or a retired one inside its grace period.",
    errors: ['account_not_found'],
    tag: 'signing',
    params: AccountParams,
    body: z
      .object({ signature: z.string().min(1, 'is required').max(200_000).describe('The signature to check, as the sign operation returned it.') })
      .strict()
      .meta({ id: 'VerifySignatureRequest' }),
    response: z
      .object({
        valid: z.boolean(),
        keyId: Nullable(z.string()),
        payload: z.unknown().describe('The signed JSON value, when valid.'),
        reason: Nullable(z.enum(['malformed', 'unknown_key', 'key_expired', 'bad_signature'])),
      })
      .meta({ id: 'SignatureVerification' }),
    auth: 'key',
    principals: ['human', 'agent'],
    authority: false,
    handler: {
      rpc: 'accounts.verifySignature',
      request: (i) => ({ accountId: i.params.id, jws: i.body.signature }),
      response: (res) => {
        let payload: unknown = null;
        try {
          payload = res.payloadJson !== undefined ? JSON.parse(res.payloadJson) : null;
        } catch {
          payload = res.payloadJson;
        }
        return { valid: res.valid, keyId: res.keyId ?? null, payload, reason: res.reason ?? null };
      },
    },
  }),
];
