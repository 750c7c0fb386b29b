export * from './call.js';
export * from './catalogue.js';
export * from './endpoint.js';
export * from './names.js';
export * from './operations.js';
export * from './portable.js';
export * from './schemas.js';
export * from './search.js';
