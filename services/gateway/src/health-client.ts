import * as grpc from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';

type HealthClient = grpc.Client & {
  check(req: { service: string }, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res: { status: string }) => void): void;
};

const Ctor = grpc.makeClientConstructor(healthService as unknown as grpc.ServiceDefinition, 'Health');
const clients = new Map<string, HealthClient>();

/** Asks a service's standard gRPC health service whether it is SERVING. */
export function checkHealth(address: string, timeoutMs = 1500): Promise<{ ok: boolean; error?: string }> {
  let c = clients.get(address);
  if (!c) {
    c = new Ctor(address, grpc.credentials.createInsecure()) as unknown as HealthClient;
    clients.set(address, c);
  }
  return new Promise((resolve) => {
    c!.check({ service: '' }, { deadline: Date.now() + timeoutMs }, (err, res) => {
      if (err) resolve({ ok: false, error: err.details || err.message });
      else resolve(res.status === 'SERVING' ? { ok: true } : { ok: false, error: res.status });
    });
  });
}

export function closeHealthClients(): void {
  for (const c of clients.values()) c.close();
  clients.clear();
}
