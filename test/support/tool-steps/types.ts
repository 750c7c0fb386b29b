import type { TestStack } from '../stack';

/** What the steps of test/mcp/mcp-tools.test.ts share: the fixtures made so far. */
export interface State {
  accountId: string;
  orgId: string;
  otherAccountId: string;
  hostId: string;
  [k: string]: any;
}

export interface Step {
  tool: string;
  /** The valid call's arguments. */
  valid: (s: State) => Record<string, unknown>;
  /** An invalid call's arguments (default: without its required arguments, or with one it does not take). */
  invalid?: (s: State) => Record<string, unknown>;
  /** Records what later steps need from the valid call's result. */
  keep?: (s: State, body: any) => void;
  /** Setup through the HTTP API first (what no tool does: authority, a second fixture). */
  before?: (s: State, t: TestStack, key: string) => Promise<void>;
}
