import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The layers of server/src import one way only (docs/architecture.md). Every relative import of every source file
// (type-only imports too: they couple the code just the same) is an arrow between two areas: a top folder of
// server/src, or a file at its top. An arrow may point to the same layer or a lower one, never up; and the arrows
// between areas, like those between files, must form no cycle, whatever the layers say.

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../server/src');

/**
 * Top to bottom. An area imports from its own layer or a lower one. Declare a new folder (or top-level file) here:
 * an area that is in no layer fails the test.
 */
const LAYERS: { name: string; areas: string[] }[] = [
  { name: 'entry points and the composition root', areas: ['main', 'worker', 'process-lifecycle', 'app', 'banner', 'openapi-lint'] },
  { name: 'transports: HTTP, REST, GraphQL, the operator CLI, scheduled jobs', areas: ['http', 'rest', 'graphql', 'cli', 'jobs'] },
  { name: 'the dependencies handed to transports', areas: ['deps'] },
  { name: 'infrastructure over the services', areas: ['metrics', 'ratelimit'] },
  { name: 'business logic', areas: ['services'] },
  { name: 'email templates', areas: ['email'] },
  { name: 'infrastructure', areas: ['db', 'generated', 'crypto', 'config', 'logger', 'session-cookie', 'data-dir'] },
  { name: 'rules and types that depend on nothing', areas: ['domain'] },
];

/** Transports of one layer that stand side by side: the public API, the management API and the jobs never import one another. */
const SEPARATE = ['rest', 'graphql', 'jobs'];


const layerOf = new Map(LAYERS.flatMap((layer, index) => layer.areas.map((area) => [area, index] as const)));

/** The area of a path under server/src: its top folder, or its own name (without extension) at the top level. */
function areaOf(file: string): string {
  const [first, ...rest] = path.relative(SRC, file).split(path.sep);
  return rest.length ? first : first.replace(/\.[cm]?[jt]sx?$/, '');
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'generated' ? [] : sourceFiles(full);
    return /\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

/** Every module specifier: `import … from`, `export … from`, side-effect `import '…'`, `import('…')`. */
export function specifiers(source: string): string[] {
  const found: string[] = [];
  for (const match of source.matchAll(/(?:^|[\s;])(?:import|export)\s[^'";]*?from\s*['"]([^'"]+)['"]/gm)) found.push(match[1]);
  for (const match of source.matchAll(/(?:^|[\s;])import\s*['"]([^'"]+)['"]/gm)) found.push(match[1]);
  for (const match of source.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) found.push(match[1]);
  return found;
}

/** The source file an import names (`./x.js` is `./x.ts`, `./x.tsx` or `./x/index.ts`), or the path as written. */
function resolveImport(from: string, specifier: string): string {
  const target = path.resolve(path.dirname(from), specifier);
  const bare = target.replace(/\.[cm]?js$/, '');
  return [`${bare}.ts`, `${bare}.tsx`, path.join(target, 'index.ts')].find(existsSync) ?? target;
}

type Import = { from: string; to: string };

/** Every relative import inside server/src, as paths relative to it. */
function imports(): Import[] {
  return sourceFiles(SRC).flatMap((file) =>
    specifiers(readFileSync(file, 'utf8'))
      .filter((specifier) => specifier.startsWith('.'))
      .map((specifier) => resolveImport(file, specifier))
      .filter((target) => target.startsWith(SRC + path.sep))
      .map((target) => ({ from: path.relative(SRC, file), to: path.relative(SRC, target) })),
  );
}

const area = (relative: string) => areaOf(path.join(SRC, relative));

/** The strongly connected components of more than one node (Tarjan): each is a set of nodes on a common cycle. */
export function cycles(edges: Iterable<[string, string]>): string[][] {
  const next = new Map<string, Set<string>>();
  for (const [from, to] of edges) {
    if (from === to) continue;
    if (!next.has(from)) next.set(from, new Set());
    if (!next.has(to)) next.set(to, new Set());
    next.get(from)!.add(to);
  }
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string) => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const to of next.get(node)!) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) low.set(node, Math.min(low.get(node)!, index.get(to)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1) found.push(component.sort());
  };
  for (const node of [...next.keys()].sort()) if (!index.has(node)) visit(node);
  return found.sort((a, b) => a[0].localeCompare(b[0]));
}

/** Each cycle with the imports that make it (the arrows between its members), for a failure that says what to move. */
function describeCycles(found: string[][], edges: Import[], nodeOf: (file: string) => string): string[] {
  return found.map((members) => {
    const inside = edges.filter((edge) => nodeOf(edge.from) !== nodeOf(edge.to) && members.includes(nodeOf(edge.from)) && members.includes(nodeOf(edge.to)));
    return `${members.join(' ⇄ ')}:\n${inside.map((edge) => `    ${edge.from} → ${edge.to}`).join('\n')}`;
  });
}


/** Imports that point up a layer, between separate transports, or from http into GraphQL other than through its handler. */
function backwardImports(all: Import[]): string[] {
  const found: string[] = [];
  for (const { from, to } of all) {
    const [a, b] = [area(from), area(to)];
    if (a === b) continue;
    if (from.startsWith(`http${path.sep}`) && b === 'graphql' && to !== path.join('graphql', 'handler.ts')) {
      found.push(`${from} → ${to} (http reaches GraphQL only through graphql/handler)`);
    }
    if (SEPARATE.includes(a) && SEPARATE.includes(b)) found.push(`${from} → ${to} (${a} and ${b} never import one another)`);
    const [up, down] = [layerOf.get(a), layerOf.get(b)];
    if (up !== undefined && down !== undefined && down < up) found.push(`${from} → ${to} (${a} must not import ${b}, a higher layer: ${LAYERS[down].name})`);
  }
  return found;
}

describe('import boundaries of server/src', () => {
  const all = imports();

  it('every area has a layer, and every layer names areas that exist', () => {
    const areas = new Set([...sourceFiles(SRC).map(areaOf), ...all.map((edge) => area(edge.to))]);
    expect([...areas].filter((name) => !layerOf.has(name)), 'areas in no layer: add each to LAYERS').toEqual([]);
    // So that a renamed folder cannot silently disable a rule.
    expect([...layerOf.keys()].filter((name) => !areas.has(name)), 'LAYERS names areas that do not exist').toEqual([]);
  });

  it('has no import that points up a layer', () => {
    expect(backwardImports(all)).toEqual([]);
  });

  it('has no cycle between areas (top folders and top-level files)', () => {
    const found = cycles(all.map((edge) => [area(edge.from), area(edge.to)]));
    expect(describeCycles(found, all, area)).toEqual([]);
  });

  it('has no cycle between files', () => {
    const found = cycles(all.map((edge) => [edge.from, edge.to]));
    expect(describeCycles(found, all, (file) => file)).toEqual([]);
  });

  it('the checks can fail: a cycle, an upward import and a forbidden sideways import are each caught', () => {
    expect(cycles([['a', 'b'], ['b', 'c'], ['c', 'a'], ['c', 'd'], ['d', 'd']])).toEqual([['a', 'b', 'c']]);
    expect(cycles([['a', 'b'], ['b', 'c']])).toEqual([]);
    const planted: Import[] = [
      { from: path.join('services', 'x.ts'), to: path.join('graphql', 'y.ts') },
      { from: path.join('domain', 'x.ts'), to: 'config.ts' },
      { from: path.join('rest', 'v1', 'x.ts'), to: path.join('graphql', 'y.ts') },
      { from: path.join('graphql', 'x.ts'), to: path.join('services', 'y.ts') },
    ];
    expect(backwardImports(planted)).toEqual([
      expect.stringContaining('services must not import graphql, a higher layer'),
      expect.stringContaining('domain must not import config, a higher layer'),
      expect.stringContaining('rest and graphql never import one another'),
    ]);
  });

  it('the scan sees every import form (so an empty list above means something)', () => {
    const sample = [
      "import { a } from '../jobs/x.js';",
      "import type { B } from '../http/y.js';",
      "export { c } from '../graphql/z.js';",
      "export * from '../rest/w.js';",
      "import '../jobs/side-effect.js';",
      "const m = await import('../http/lazy.js');",
      'import {\n  d,\n  e,\n} from "../jobs/multi.js";',
    ].join('\n');
    expect(specifiers(sample)).toEqual(expect.arrayContaining(['../jobs/x.js', '../http/y.js', '../graphql/z.js', '../rest/w.js', '../jobs/side-effect.js', '../http/lazy.js', '../jobs/multi.js']));
    expect(specifiers(sample)).toHaveLength(7);
    // Imports resolve to the files they name, so `../config.js` counts as the area `config`.
    expect(all.some((edge) => edge.to === 'config.ts')).toBe(true);
    expect(all.length).toBeGreaterThan(300);
  });
});
