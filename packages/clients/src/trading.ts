import { grpcServiceName, type Registry, type RpcClient } from '@svc/kit';
import { trading } from '@svc/proto';

export const tradingDefinition = trading.TradingServiceService;
export type TradingClient = RpcClient<typeof tradingDefinition>;

/** The trading service's client (the caller must declare trading in its catalogue `calls`). */
export const tradingClient = (registry: Registry): TradingClient => registry.client('trading', tradingDefinition, grpcServiceName('trading'));
