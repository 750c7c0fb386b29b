import fs from 'node:fs';
import path from 'node:path';

import { tempDir } from './backends';

/** A world of the sample project: a stage whose travel time depends on a noisy speed. */
export const BENCH_WORLD = {
  schema: 'svc.world/1',
  name: 'Bench',
  description: 'The lab bench: one stage moving a sample.',
  units: { length: 'mm', time: 's' },
  devices: [{ id: 'stage', device: 'stage-1', position: [0, 0, 0], parameters: { travel: 120 } }],
  parameters: {
    speed: { value: 20, sd: 2, min: 1, unit: 'mm/s' },
    load: { value: 1, min: 0.5, max: 1.5 },
    overhead: 0.25,
  },
  simulation: { outputs: { travelTime: 'stage.travel / speed * load + overhead', energy: 'load * stage.travel ^ 0.5' } },
};

/**
 * The sample project: svc-project.json, devices.json, two worlds, code that imports code, markdown
 * that links to code and docs, and a note with an @ref mention.
 */
export function sampleProject(): string {
  const root = tempDir('svc-project-');
  const files: Record<string, string> = {
    'svc-project.json': JSON.stringify({ name: 'Lab bench', description: 'A stage and a camera on a bench.' }),
    'devices.json': JSON.stringify({
      devices: [
        { id: 'stage-1', kind: 'stage', unit: 'sim-1', description: 'One-axis stage', parameters: { maxSpeed: 50 } },
        { id: 'camera-1', kind: 'camera', description: 'Overhead camera' },
      ],
    }),
    'worlds/bench.json': JSON.stringify(BENCH_WORLD, null, 2),
    'worlds/empty.json': JSON.stringify({ schema: 'svc.world/1', name: 'Empty', units: { length: 'm', time: 's' }, devices: [], parameters: {} }),
    'src/index.ts':
      "import { travel } from './lib/motion';\nimport config from './config.json';\nexport const run = () => travel(config.distance);\n",
    'src/lib/motion.ts':
      "import { clamp } from './util.js';\nexport function travel(d: number) {\n  return clamp(d, 0, 120); // calibrated stage travel\n}\n",
    'src/lib/util.ts': 'export const clamp = (x: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, x));\n',
    'src/config.json': '{"distance": 80}\n',
    'docs/README.md': '# Bench\n\nThe [entry point](../src/index.ts) moves the stage; see [setup](setup.md) and [the site](https://example.com/x).\n',
    'docs/setup.md': '# Setup\n\nCalibrate the stage before each run. Missing: [old notes](old.md).\n',
    'notes.txt': 'Calibration notes for the bench world. @ref worlds/bench.json\n',
  };
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), text);
  }
  return root;
}
