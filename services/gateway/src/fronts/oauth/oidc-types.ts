/** oidc-provider's types (an ES module package, loaded with import() from this CommonJS build). */
export type { Configuration, default as Provider, KoaContextWithOIDC } from 'oidc-provider' with { 'resolution-mode': 'import' };
