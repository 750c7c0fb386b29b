import { z } from 'zod';

import { defineSettings, type Kek, parseKeks } from '@svc/kit';

/**
 * The models service's settings (docs/models.md), declared by its module and checked when the stack
 * starts: a bad value stops it with `svc: invalid configuration: SVC_MODELS_FIRST_PARTY_URL: …`.
 * - SVC_MODELS_FIRST_PARTY_URL: the base URL of the OpenAI-compatible server that serves the
 *   first-party model in the cluster (vLLM, llama.cpp server, Ollama, TGI), e.g.
 *   `http://vllm.models.svc:8000/v1`; unset, the first-party model is unavailable (`not_configured`);
 * - SVC_MODELS_FIRST_PARTY_MODEL: the model's name on that server (e.g. `Qwen/Qwen2.5-7B-Instruct`);
 * - SVC_MODELS_KEK: the key-encryption keys of provider keys at rest, `<id>:<32 bytes base64>`,
 *   comma-separated, the first current; unset (the embedded stack), one is generated into
 *   `<SVC_DATA_DIR>/models-kek` (0600);
 * - SVC_MODELS_ALLOWED_HOSTS: hosts and networks (CIDR) a provider key's `baseUrl` may reach although
 *   they are private, loopback or link-local (an in-cluster model server), comma-separated;
 * - SVC_MODELS_FIRST_PARTY_KEY: the bearer key the first-party server wants, if any;
 * - SVC_MODELS_OPENAI_KEY, SVC_MODELS_ANTHROPIC_KEY: the platform's own keys for the providers: with
 *   one set, the provider's models are available to every account and paid with credits (an
 *   account's own key still goes first, and costs no credits);
 * - SVC_MODELS_OPENAI_URL, SVC_MODELS_ANTHROPIC_URL: where those platform keys are sent (default the
 *   providers' public APIs); the operator's choice, so not address-guarded.
 */
const HttpUrl = z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' });
const Secret = z.string().regex(/^[\x21-\x7e]{1,500}$/, 'must be 1 to 500 printable ASCII characters without spaces');

export const modelsSettingsSchema = defineSettings({
  SVC_MODELS_FIRST_PARTY_URL: HttpUrl.optional(),
  SVC_MODELS_FIRST_PARTY_MODEL: z
    .string()
    .max(200, 'must be at most 200 characters')
    .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces')
    .optional(),
  SVC_MODELS_KEK: z
    .string()
    .transform((value, ctx) => {
      try {
        return parseKeks(value);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
        return z.NEVER;
      }
    })
    .optional(),
  SVC_MODELS_ALLOWED_HOSTS: z
    .string()
    .transform((value) =>
      value
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.string().regex(/^[A-Za-z0-9.:-]+(\/\d{1,3})?$/, 'each entry must be a host name, an IP address or a CIDR network')))
    .optional(),
  SVC_MODELS_FIRST_PARTY_KEY: Secret.optional(),
  SVC_MODELS_OPENAI_KEY: Secret.optional(),
  SVC_MODELS_OPENAI_URL: HttpUrl.optional(),
  SVC_MODELS_ANTHROPIC_KEY: Secret.optional(),
  SVC_MODELS_ANTHROPIC_URL: HttpUrl.optional(),
});

export interface ModelsSettings {
  firstParty: { url?: string; model?: string; key?: string };
  /** The platform's own provider keys (and where they go), by provider. */
  providers: Record<string, { key?: string; url?: string } | undefined>;
  /** The operator's KEKs (SVC_MODELS_KEK), the first current; unset, a generated file's. */
  keks?: Kek[];
  /** Hosts and networks a custom baseUrl may reach although not public. */
  allowedHosts: string[];
}

export function modelsSettings(env: z.output<typeof modelsSettingsSchema>): ModelsSettings {
  return {
    firstParty: { url: env.SVC_MODELS_FIRST_PARTY_URL, model: env.SVC_MODELS_FIRST_PARTY_MODEL, key: env.SVC_MODELS_FIRST_PARTY_KEY },
    providers: {
      openai: { key: env.SVC_MODELS_OPENAI_KEY, url: env.SVC_MODELS_OPENAI_URL },
      anthropic: { key: env.SVC_MODELS_ANTHROPIC_KEY, url: env.SVC_MODELS_ANTHROPIC_URL },
    },
    keks: env.SVC_MODELS_KEK,
    allowedHosts: env.SVC_MODELS_ALLOWED_HOSTS ?? [],
  };
}
