import { z } from 'zod';

import { DisplayName } from './common.js';

/**
 * An agent's fields as the API takes them, declared once: the route table validates requests with
 * them and the agents service validates its gRPC input with the same ones.
 */
const noControl = (s: string) => !/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(s);

export const AgentName = DisplayName;
/** Free text; tabs and line breaks allowed, other control characters not. */
export const AgentDescription = z
  .string()
  .max(2000, 'must be at most 2000 characters')
  .refine(noControl, 'must not hold control characters')
  .describe('What the agent is for, for people choosing one (at most 2,000 characters).');
export const AgentModel = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9_.:/@-]+$/, 'may hold letters, digits and _ . : / @ - only')
  .describe('The model its runs use, an id from GET /models (default: the platform’s default model).');
export const AgentInstructions = z
  .string()
  .max(100_000, 'must be at most 100000 characters')
  .describe('The system instructions every run of the agent starts with.');
