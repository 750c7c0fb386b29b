import type { ServiceName } from '@svc/kit';
import * as proto from '@svc/proto';

/** The proto definition and gRPC name of each service the route table can name. */
export const DEFINITIONS: Partial<Record<ServiceName, [Record<string, any>, string]>> = {
  keys: [proto.keys.KeysServiceService, 'svc.keys.v1.KeysService'],
  accounts: [proto.accounts.AccountsServiceService, 'svc.accounts.v1.AccountsService'],
  drive: [proto.drive.DriveServiceService, 'svc.drive.v1.DriveService'],
  agents: [proto.agents.AgentsServiceService, 'svc.agents.v1.AgentsService'],
  models: [proto.models.ModelsServiceService, 'svc.models.v1.ModelsService'],
  trading: [proto.trading.TradingServiceService, 'svc.trading.v1.TradingService'],
  profiles: [proto.profiles.ProfilesServiceService, 'svc.profiles.v1.ProfilesService'],
  mcp: [proto.mcp.McpServiceService, 'svc.mcp.v1.McpService'],
};
