import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';

/**
 * docs/guide/licensing-models.md, executed: every request of every recipe is taken from the page as written — a
 * ```graphql block (run with the vendor's API key) or a ```http block (`METHOD /path`, a blank line, the JSON body) — and
 * sent, in order, to a real app; the ```json block after it is the answer the page promises, checked as a subset of
 * the real one. `<!-- clock: ISO -->` moves the app's clock to the date the text names; placeholders are filled from
 * earlier answers (`<key>`, `<licenseId>`, `<sessionToken>`, and `<!-- capture name: path -->`), `<nonce>` from a
 * fresh GET /api/v1/nonce. A recipe whose answers drift from the page fails here.
 */
const PAGE = path.resolve(import.meta.dirname, '../docs/guide/licensing-models.md');
const START = '2026-06-01T12:00:00.000Z';

type Step =
  | { kind: 'graphql'; document: string; expected: unknown; captures: { name: string; path: string }[] }
  | { kind: 'http'; method: string; path: string; body: string; expected: unknown; captures: { name: string; path: string }[] }
  | { kind: 'clock'; at: string };

interface Recipe {
  name: string;
  steps: Step[];
}

/** The page's recipes: from each `<!-- recipe: name -->` to the next, its requests with their answers, in order. */
export function recipes(page: string): Recipe[] {
  const found: Recipe[] = [];
  const tokens = /<!-- recipe: ([\w-]+) -->|<!-- clock: (\S+) -->|<!-- capture (\w+): (\S+) -->|```(graphql|http)\n([\s\S]*?)\n```\s*```json\n([\s\S]*?)\n```/g;
  let pendingCaptures: { name: string; path: string }[] = [];
  for (const match of page.matchAll(tokens)) {
    if (match[1]) {
      found.push({ name: match[1], steps: [] });
      continue;
    }
    const recipe = found.at(-1);
    if (!recipe) throw new Error(`a request before the first <!-- recipe: … --> marker: ${match[0].slice(0, 80)}`);
    if (match[2]) recipe.steps.push({ kind: 'clock', at: match[2] });
    else if (match[3]) pendingCaptures.push({ name: match[3], path: match[4] });
    else {
      const expected = JSON.parse(match[7]);
      if (match[5] === 'graphql') recipe.steps.push({ kind: 'graphql', document: match[6], expected, captures: pendingCaptures });
      else {
        const [requestLine, ...rest] = match[6].split('\n');
        const [method, pathname] = requestLine.split(' ');
        recipe.steps.push({ kind: 'http', method, path: pathname, body: rest.join('\n').trim(), expected, captures: pendingCaptures });
      }
      pendingCaptures = [];
    }
  }
  return found;
}

/** A value by a dotted path; a segment `name[field=value]` picks the array element whose field has that value. */
function at(value: unknown, dotted: string): unknown {
  let current = value as any;
  for (const segment of dotted.split('.')) {
    const pick = /^(\w+)\[(\w+)=([^\]]+)\]$/.exec(segment);
    current = pick ? (current?.[pick[1]] as any[] | undefined)?.find((item) => String(item[pick[2]]) === pick[3]) : current?.[segment];
  }
  return current;
}

const page = readFileSync(PAGE, 'utf8');
const RECIPES = recipes(page);

let t: TestApp;
let clock: TestClock;
let apiKey: string;
let productId: string;

beforeAll(async () => {
  clock = new TestClock(Date.parse(START));
  t = await startTestApp({ clock });
  // The management calls go with an API key, as a vendor's back office makes them (a session's token would expire as
  // the clock moves on through the recipes).
  const { token } = await t.setupAdmin();
  apiKey = (await t.gql('mutation { createApiKey(input: { name: "back office", role: COMPANY_ADMIN }) { key } }', {}, { token })).data.createApiKey.key;
  const created = await t.gql('mutation { createProduct(input: { name: "Acme Studio" }) { product { id } } }', {}, { apiKey });
  expect(created.errors).toBeUndefined();
  productId = created.data.createProduct.product.id;
});
afterAll(async () => {
  await t?.close();
});

describe('docs/guide/licensing-models.md', () => {
  it('has the seven recipes, each with requests and answers', () => {
    expect(RECIPES.map((recipe) => recipe.name)).toEqual(['perpetual', 'subscription', 'trial', 'node-locked', 'floating', 'usage', 'team']);
    for (const recipe of RECIPES) expect(recipe.steps.filter((step) => step.kind !== 'clock').length, recipe.name).toBeGreaterThanOrEqual(3);
    // Every request block of the page belongs to a recipe and has its answer: none is skipped by the parser.
    const requestBlocks = page.match(/```(graphql|http)\n/g)!.length;
    expect(RECIPES.flatMap((recipe) => recipe.steps).filter((step) => step.kind !== 'clock')).toHaveLength(requestBlocks);
  });

  describe.each(RECIPES)('$name', (recipe) => {
    it('every request answers as the page says', async () => {
      clock.set(START);
      const values: Record<string, string> = { productId };
      const fill = async (text: string) => {
        let filled = text;
        if (filled.includes('<nonce>')) filled = filled.replace('<nonce>', await t.nonce());
        return filled.replace(/<(\w+)>/g, (placeholder, name: string) => {
          if (!(name in values)) throw new Error(`${recipe.name}: ${placeholder} is used before an answer gave it`);
          return values[name];
        });
      };
      const remember = (answer: any, captures: { name: string; path: string }[]) => {
        // The values later requests name: the key shown once, the license's id, a floating session's token.
        const walk = (value: any) => {
          if (!value || typeof value !== 'object') return;
          if (typeof value.key === 'string' && value.license?.id) values.key = value.key;
          if (value.license?.id) values.licenseId = value.license.id;
          if (typeof value.sessionToken === 'string') values.sessionToken = value.sessionToken;
          for (const child of Object.values(value)) walk(child);
        };
        walk(answer);
        for (const capture of captures) {
          const captured = at(answer, capture.path);
          if (typeof captured !== 'string') throw new Error(`${recipe.name}: nothing at ${capture.path} to capture as <${capture.name}>`);
          values[capture.name] = captured;
        }
      };

      for (const [index, step] of recipe.steps.entries()) {
        if (step.kind === 'clock') {
          clock.set(step.at);
          continue;
        }
        const where = `${recipe.name}, request ${index + 1}`;
        if (step.kind === 'graphql') {
          const answer = await t.gql(await fill(step.document), {}, { apiKey });
          expect(answer.errors, `${where}: ${JSON.stringify(answer)}`).toBeUndefined();
          expect(answer.data, `${where}: ${JSON.stringify(answer)}`).toMatchObject(step.expected as object);
          remember(answer.data, step.captures);
        } else {
          const response = await t.request(step.method, step.path, step.body ? JSON.parse(await fill(step.body)) : undefined);
          expect(response.status, `${where}: ${response.text}`).toBe(200);
          expect(response.json, where).toMatchObject(step.expected as object);
          remember(response.json, step.captures);
        }
      }
    });
  });
});
