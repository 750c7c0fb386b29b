import { defineService } from '@svc/kit';
import { trading } from '@svc/proto';

/**
 * The trading service: for now a gRPC server with the standard health service only. Its HTTP routes
 * are declared in the route table and answer 501 until its issue lands.
 */
export const tradingService = defineService({
  name: 'trading',
  grpcServiceName: 'svc.trading.v1.TradingService',
  definition: trading.TradingServiceService,
  needs: [],
  async create() {
    return { handlers: {} };
  },
});
