import type { Step } from './types';

export const STEPS: Step[] = [];
