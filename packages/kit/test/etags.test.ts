import { ifMatchPasses, ifNoneMatchPasses, parseEtags } from '@svc/kit';

const SHA = 'a'.repeat(64);

describe('conditional requests (RFC 9110)', () => {
  test('entity tag lists', () => {
    expect(parseEtags('*')).toBe('*');
    expect(parseEtags(`"a", W/"b" ,"c"`)).toEqual(['"a"', 'W/"b"', '"c"']);
    expect(parseEtags(SHA)).toEqual([`"${SHA}"`]);
  });

  test('If-Match compares strongly and needs a current version', () => {
    expect(ifMatchPasses(`"${SHA}"`, `"${SHA}"`)).toBe(true);
    expect(ifMatchPasses(`"x", "${SHA}"`, `"${SHA}"`)).toBe(true);
    expect(ifMatchPasses(`W/"${SHA}"`, `"${SHA}"`)).toBe(false);
    expect(ifMatchPasses('"other"', `"${SHA}"`)).toBe(false);
    expect(ifMatchPasses('*', `"${SHA}"`)).toBe(true);
    expect(ifMatchPasses('*', null)).toBe(false);
    expect(ifMatchPasses(`"${SHA}"`, null)).toBe(false);
  });

  test('If-None-Match: * passes only when nothing exists; tags compare weakly', () => {
    expect(ifNoneMatchPasses('*', null)).toBe(true);
    expect(ifNoneMatchPasses('*', `"${SHA}"`)).toBe(false);
    expect(ifNoneMatchPasses(`W/"${SHA}"`, `"${SHA}"`)).toBe(false);
    expect(ifNoneMatchPasses('"other"', `"${SHA}"`)).toBe(true);
  });
});
