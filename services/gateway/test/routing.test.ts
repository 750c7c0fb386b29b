import { compileRoutes } from '@svc/gateway';

const table = [
  { method: 'get', path: '/accounts/me/chain', name: 'chain' },
  { method: 'get', path: '/accounts/:id', name: 'account' },
  { method: 'patch', path: '/accounts/:id', name: 'update' },
  { method: 'get', path: '/agents/:id/keys/:keyId', name: 'agentKey' },
  { method: 'post', path: '/drive/upload', name: 'upload' },
];
const lookup = compileRoutes(table);
const name = (method: string, path: string) => {
  const r = lookup(method, path);
  return r && 'route' in r ? r.route.name : r;
};

describe('compileRoutes', () => {
  test('the first route of the table wins, as in express', () => {
    expect(name('GET', '/accounts/me/chain')).toBe('chain');
    expect(name('GET', '/accounts/acct_1')).toBe('account');
    expect(name('PATCH', '/accounts/me')).toBe('update');
  });

  test('names and decodes path parameters', () => {
    expect(lookup('GET', '/agents/agt%5F1/keys/key_2')).toEqual({ route: table[3], params: { id: 'agt_1', keyId: 'key_2' } });
  });

  test('HEAD is served by GET; another method gets the path’s methods', () => {
    expect(name('HEAD', '/accounts/x')).toBe('account');
    expect(lookup('DELETE', '/accounts/x')).toEqual({ allowed: ['GET', 'PATCH'] });
    expect(lookup('GET', '/drive/upload')).toEqual({ allowed: ['POST'] });
  });

  test('unknown paths, extra segments and empty parameters find nothing', () => {
    expect(lookup('GET', '/nothing')).toBeUndefined();
    expect(lookup('GET', '/accounts/a/b')).toBeUndefined();
    expect(lookup('GET', '/accounts/')).toBeUndefined();
    expect(lookup('GET', '/agents//keys/k')).toBeUndefined();
  });

  test('a regex character in a literal segment matches only itself', () => {
    const dots = compileRoutes([{ method: 'get', path: '/openapi.json' }]);
    expect(dots('GET', '/openapi.json')).toBeDefined();
    expect(dots('GET', '/openapiXjson')).toBeUndefined();
  });

  test('a percent-encoding error is a 400, not a crash', () => {
    expect(() => lookup('GET', '/accounts/%E0%A4%A')).toThrow(expect.objectContaining({ kind: 'invalid_argument', code: 'invalid_request' }));
  });

  test('a table whose path starts with a parameter is refused', () => {
    expect(() => compileRoutes([{ method: 'get', path: '/:id' }])).toThrow(/literal segment/);
  });
});
