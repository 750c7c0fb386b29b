// Moved to @svc/contract (the shared schemas, below the route table); the route files import it from here.
export * from '@svc/contract';
