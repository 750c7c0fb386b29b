export { Svc } from './client.js';
export { DEFAULT_BASE_URL, type SvcOptions } from './config.js';
export * from './errors.js';
export type { components, paths } from './generated/openapi.js';
export { operations, resources } from './generated/operations.js';
export { parseEvents } from './sse.js';
export { type ResponseInfo, responseOf } from './transport.js';
export type * from './types.js';
