/** oidc-provider's types (an ES module package, loaded with import() from this CommonJS build). */
export type { Configuration, KoaContextWithOIDC, default as Provider } from 'oidc-provider' with { 'resolution-mode': 'import' };
