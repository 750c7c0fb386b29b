import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { CATALOGUE_FILE, CatalogueError, loadCatalogue, parseCatalogue } from '@svc/models';

/**
 * The catalogue file and its validator: the repository's file passes; a bad file is refused with a
 * message that names the entry and the field.
 */

const good = () => JSON.parse(fs.readFileSync(CATALOGUE_FILE, 'utf8'));
const modelAt = (c: any, id: string) => c.models.find((m: any) => m.id === id);
const familyAt = (c: any, id: string) => c.families.find((f: any) => f.id === id);

/** The message parseCatalogue throws for `c`, or '' when it accepts it. */
function refusal(c: unknown): string {
  try {
    parseCatalogue(c);
    return '';
  } catch (err) {
    expect(err).toBeInstanceOf(CatalogueError);
    return (err as Error).message;
  }
}

test("the repository's catalogue is valid: first-party first, one development model", () => {
  const c = loadCatalogue();
  expect(c.models[0]!.id).toBe('svc/first');
  expect(c.firstParty.id).toBe('svc/first');
  expect(c.development).toMatchObject({ id: 'svc/dev', useCases: ['development'], pricing: { inputPerMillion: 0, outputPerMillion: 0 } });
  expect(c.models.filter((m) => m.deprecated).length).toBeGreaterThanOrEqual(2);
  expect(new Set(c.models.map((m) => m.provider))).toEqual(new Set(['svc', 'openai', 'anthropic']));
});

test('a field of the wrong shape names the entry and the field', () => {
  const c = good();
  modelAt(c, 'openai/gpt-4o').pricing.inputPerMillion = -1;
  expect(refusal(c)).toMatch(
    /^invalid model catalogue:\n {2}catalogue\.json: models\[\d+\] \(openai\/gpt-4o\): pricing\.inputPerMillion: must be at least 0$/,
  );

  const d = good();
  modelAt(d, 'openai/gpt-4o').useCases = ['chat', 'poetry'];
  expect(refusal(d)).toMatch(/models\[\d+\] \(openai\/gpt-4o\): useCases\.1: must be one of "chat", /);

  const e = good();
  delete modelAt(e, 'anthropic/claude-opus-4').contextWindow;
  expect(refusal(e)).toMatch(/\(anthropic\/claude-opus-4\): contextWindow: a number is required/);

  const f = good();
  modelAt(f, 'svc/dev').pricing.currency = 'EUR';
  modelAt(f, 'svc/dev').colour = 'blue';
  const both = refusal(f);
  expect(both).toMatch(/\(svc\/dev\): pricing\.currency: /);
  expect(both).toMatch(/\(svc\/dev\): unknown field "colour"/);
});

test('a repeated model id or family id', () => {
  const c = good();
  c.models.push({ ...modelAt(c, 'openai/gpt-4o') });
  expect(refusal(c)).toMatch(/models\[\d+\] \(openai\/gpt-4o\): id: repeats the model id "openai\/gpt-4o"/);
  const d = good();
  d.families.push({ ...familyAt(d, 'claude-4') });
  expect(refusal(d)).toMatch(/families\[\d+\] \(claude-4\): id: repeats the family id "claude-4"/);
});

test('a family that does not exist, or that does not list its model', () => {
  const c = good();
  modelAt(c, 'openai/gpt-4o').family = 'gpt-5';
  expect(refusal(c)).toMatch(/\(openai\/gpt-4o\): family: names the family "gpt-5", which the catalogue does not have/);
  const d = good();
  familyAt(d, 'gpt-4o').members.push('openai/gpt-9');
  expect(refusal(d)).toMatch(/families\[\d+\] \(gpt-4o\): members\.2: names the model "openai\/gpt-9", which the catalogue does not have/);
  const e = good();
  familyAt(e, 'gpt-4o').members = ['openai/gpt-4o'];
  expect(refusal(e)).toMatch(/\(openai\/gpt-4o-mini\): family: names the family "gpt-4o", which does not list it/);
});

test('exactly one first-party model, listed first, and one development model', () => {
  const c = good();
  const second = { ...modelAt(c, 'svc/first'), id: 'svc/second' };
  c.models.push(second);
  familyAt(c, 'svc-first').members.push('svc/second');
  expect(refusal(c)).toMatch(/catalogue\.json: models: must hold exactly one first-party model .*found 2/);

  const d = good();
  d.models.push(d.models.shift());
  expect(refusal(d)).toMatch(/models\[0\] \(svc\/dev\): must be the first-party model \(svc\/first\)/);

  const e = good();
  const dev = modelAt(e, 'svc/dev');
  e.models = e.models.filter((m: any) => m !== dev);
  e.families = e.families.filter((f: any) => f.id !== 'svc-dev');
  expect(refusal(e)).toMatch(/models: must hold exactly one development model .*found 0/);

  const f = good();
  modelAt(f, 'svc/dev').useCases = ['development', 'chat'];
  modelAt(f, 'svc/dev').pricing.outputPerMillion = 1;
  expect(refusal(f)).toMatch(
    /\(svc\/dev\): useCases: of the development model must be \["development"\] only\n.*\(svc\/dev\): pricing: of the development model must be 0/,
  );
});

test('deprecation, limits and vision agree', () => {
  const c = good();
  modelAt(c, 'openai/gpt-4-turbo').replacedBy = 'openai/gpt-3';
  modelAt(c, 'openai/gpt-4o').replacedBy = 'openai/gpt-4.1';
  expect(refusal(c)).toMatch(/\(openai\/gpt-4o\): replacedBy: is for a deprecated model only/);
  expect(refusal(c)).toMatch(/\(openai\/gpt-4-turbo\): replacedBy: names "openai\/gpt-3", which the catalogue does not have/);

  const d = good();
  modelAt(d, 'openai/gpt-4o-mini').maxOutputTokens = 10_000_000;
  modelAt(d, 'anthropic/claude-3-5-haiku').capabilities.vision = true;
  expect(refusal(d)).toMatch(/\(openai\/gpt-4o-mini\): maxOutputTokens: must not exceed contextWindow/);
  expect(refusal(d)).toMatch(/\(anthropic\/claude-3-5-haiku\): capabilities\.vision: must be true exactly when modalities\.input holds "image"/);

  const e = good();
  modelAt(e, 'openai/gpt-4o').id = 'anthropic/gpt-4o';
  expect(refusal(e)).toMatch(/\(anthropic\/gpt-4o\): id: must start with its provider, "openai\/"/);
});

test('a file that is not there or not JSON', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'catalogue-'));
  try {
    const file = path.join(dir, 'catalogue.json');
    expect(() => loadCatalogue(file)).toThrow(/cannot be read/);
    fs.writeFileSync(file, '{"models": [');
    expect(() => loadCatalogue(file)).toThrow(/is not JSON/);
    fs.writeFileSync(file, JSON.stringify({ families: [], models: [] }));
    expect(() => loadCatalogue(file)).toThrow(/catalogue\.json: models: /);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
