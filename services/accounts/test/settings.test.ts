import { DEFAULT_SETTINGS, mergePatch, validateSettings } from '@svc/accounts';
import { DomainError } from '@svc/kit';

const refusal = (doc: unknown) => {
  try {
    validateSettings(doc);
  } catch (err) {
    if (err instanceof DomainError) return { status: err.httpStatus, code: err.code, message: err.message };
    throw err;
  }
  return undefined;
};

test('a number that overflowed to Infinity (1e400) is refused naming its field, by PUT and by PATCH', () => {
  const patch = JSON.parse('{"hosts":{"callTimeoutMs":1e400}}');
  expect(patch.hosts.callTimeoutMs).toBe(Infinity);
  const expected = { status: 400, code: 'invalid_settings', message: 'settings.hosts.callTimeoutMs: must be a finite number' };
  expect(refusal(patch)).toEqual(expected);
  expect(refusal(mergePatch(DEFAULT_SETTINGS, patch))).toEqual(expected);
  expect(refusal({ signing: { gracePeriodHours: -Infinity } })?.message).toBe('settings.signing.gracePeriodHours: must be a finite number');
  expect(refusal({ hosts: { callTimeoutMs: 6000 } })).toBeUndefined();
});
