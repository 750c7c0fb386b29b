/**
 * @svc/contract: the shared schemas of the public contract, below the route table (@svc/api
 * re-exports them) so that the services validate their gRPC input with the same schemas the
 * gateway validates requests with.
 */
export * from './accounts.js';
export * from './agents.js';
export * from './common.js';
export * from './drive.js';
export * from './models.js';
export * from './models-usage.js';
export * from './profiles.js';
export * from './threads.js';
export * from './trading.js';
export * from './trading-market.js';
