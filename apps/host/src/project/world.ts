import { z } from 'zod';

/** Ids of worlds, devices and parameters: a letter, then letters, digits, `_` or `-`. */
export const ID_RE = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;
const Id = z.string().regex(ID_RE, 'an id: a letter, then letters, digits, _ or - (at most 64)');

/** A parameter: a fixed number, or a value with a distribution sim_trials samples from. */
export const Parameter = z.union([
  z.number(),
  z
    .object({
      value: z.number(),
      /** `normal` (value, sd), `uniform` (min, max), `fixed` (value); default: normal when sd is given, uniform with min and max, else fixed. */
      distribution: z.enum(['fixed', 'normal', 'uniform']).optional(),
      sd: z.number().nonnegative().optional(),
      min: z.number().optional(),
      max: z.number().optional(),
      unit: z.string().max(32).optional(),
      description: z.string().max(1000).optional(),
    })
    .strict(),
]);
export type Parameter = z.infer<typeof Parameter>;

/** A world: a validated document of the project (`worlds/<id>.json`) placing devices with parameters, in stated units. */
export const World = z
  .object({
    schema: z.literal('svc.world/1'),
    name: z.string().min(1).max(200),
    description: z.string().max(4000).optional(),
    units: z
      .object({
        length: z.enum(['m', 'mm', 'um', 'in']),
        time: z.enum(['s', 'ms']),
        mass: z.enum(['kg', 'g']).optional(),
      })
      .strict(),
    devices: z
      .array(
        z
          .object({
            id: Id,
            /** A device of the project's devices.json. */
            device: Id,
            position: z.array(z.number()).length(3).optional(),
            parameters: z.record(Id, z.union([z.number(), z.string().max(200), z.boolean()])).optional(),
          })
          .strict(),
      )
      .max(1000),
    parameters: z.record(Id, Parameter),
    /** What sim_trials computes each trial: output name → an arithmetic expression over parameter ids (and `<device>.<parameter>`). */
    simulation: z
      .object({ outputs: z.record(Id, z.string().min(1).max(2000)) })
      .strict()
      .optional(),
  })
  .strict();
export type World = z.infer<typeof World>;

/** A device the project describes (`devices.json`): what it is, the host unit that drives it, its parameters. */
export const Device = z
  .object({
    id: Id,
    kind: z.string().min(1).max(64),
    description: z.string().max(4000).optional(),
    /** The host unit (list_units) that drives it, when one does. */
    unit: z.string().min(1).max(64).optional(),
    parameters: z.record(Id, z.union([z.number(), z.string().max(200), z.boolean()])).optional(),
  })
  .strict();
export type Device = z.infer<typeof Device>;

export const DevicesFile = z.object({ devices: z.array(Device).max(1000) }).strict();

/** The issues of a failed parse as `path: message` lines. */
export function issues(err: z.ZodError): string[] {
  return err.issues.slice(0, 20).map((i) => `${i.path.length ? i.path.join('.') : '(document)'}: ${i.message}`);
}
