import { z } from 'zod';

import { defineSettings } from '@svc/kit';

/**
 * The models service's settings (docs/models.md), declared by its module and checked when the stack
 * starts: a bad value stops it with `svc: invalid configuration: SVC_MODELS_FIRST_PARTY_URL: …`.
 * - SVC_MODELS_FIRST_PARTY_URL: the base URL of the OpenAI-compatible server that serves the
 *   first-party model in the cluster (vLLM, llama.cpp server, Ollama, TGI), e.g.
 *   `http://vllm.models.svc:8000/v1`; unset, the first-party model is unavailable (`not_configured`);
 * - SVC_MODELS_FIRST_PARTY_MODEL: the model's name on that server (e.g. `Qwen/Qwen2.5-7B-Instruct`).
 */
export const modelsSettingsSchema = defineSettings({
  SVC_MODELS_FIRST_PARTY_URL: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).optional(),
  SVC_MODELS_FIRST_PARTY_MODEL: z
    .string()
    .max(200, 'must be at most 200 characters')
    .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces')
    .optional(),
});

export interface ModelsSettings {
  firstParty: { url?: string; model?: string };
}

export function modelsSettings(env: z.output<typeof modelsSettingsSchema>): ModelsSettings {
  return { firstParty: { url: env.SVC_MODELS_FIRST_PARTY_URL, model: env.SVC_MODELS_FIRST_PARTY_MODEL } };
}
