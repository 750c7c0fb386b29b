import { type ContentDeps, driveOperations, identityOperations, type OperationHandler, threadOperations, tradingOperations } from '@svc/dispatch';

/**
 * The operations a front that serves tools registers with its dispatcher, beside the gRPC ones:
 * those the route table declares `local` (the caller's identity, drive content streamed between
 * the caller and the blob store, a thread's events and the account's order updates as lists).
 */
export function toolOperations(deps: ContentDeps & Parameters<typeof driveOperations>[0]): Record<string, OperationHandler> {
  return { ...driveOperations(deps), ...identityOperations(deps), ...threadOperations(deps), ...tradingOperations(deps) };
}
