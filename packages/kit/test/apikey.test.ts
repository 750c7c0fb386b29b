import { generateApiKey, generateHostCredential, redactSecrets } from '@svc/kit';

test('redactSecrets cuts every key and host credential out of a text, and leaves the rest', () => {
  const key = generateApiKey();
  const host = generateHostCredential();
  const url = `/api/api-keys?cursor=${key}&x=${host.toUpperCase()}&name=svc_short`;
  expect(redactSecrets(url)).toBe('/api/api-keys?cursor=svc_[redacted]&x=SVCH_[redacted]&name=svc_short');
  expect(redactSecrets('/me')).toBe('/me');
  // The same text twice in a row (a global regex must not keep state between calls).
  expect(redactSecrets(key)).toBe('svc_[redacted]');
  expect(redactSecrets(key)).toBe('svc_[redacted]');
});
