import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The layers of server/src import one way only (README "Architecture"): transports (http, rest,
// graphql) and jobs call services; services never reach back into a transport or a job; domain/ depends on
// nothing of ours; email/ (templates) is neutral. Every relative import of every source file is checked.

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../server/src');

/** The area of a file under server/src: its top folder, or its own name (without extension) at the top level. */
function areaOf(file: string): string {
  const [first, ...rest] = path.relative(SRC, file).split(path.sep);
  return rest.length ? first : first.replace(/\.[cm]?tsx?$/, '');
}

/** area → the areas it must not import. `*` means anything of ours outside itself. */
const FORBIDDEN: Record<string, string[] | '*'> = {
  services: ['jobs', 'http', 'graphql', 'rest', 'app', 'process-lifecycle', 'main', 'worker', 'cli'],
  graphql: ['http', 'rest', 'jobs'],
  rest: ['graphql', 'jobs'],
  domain: '*',
  email: ['jobs', 'http', 'graphql', 'rest'],
  ratelimit: ['http', 'graphql', 'rest', 'jobs'],
  metrics: ['http', 'graphql', 'rest', 'jobs'],
  deps: ['http', 'graphql', 'rest'],
  'session-cookie': '*',
  config: ['http', 'graphql', 'rest', 'jobs', 'services', 'deps'],
};

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

/** The backwards imports of server/src: `file → imported file` for each relative import that breaks a rule. */
function violations(): string[] {
  const found: string[] = [];
  for (const file of sourceFiles(SRC)) {
    const from = areaOf(file);
    const rule = FORBIDDEN[from] ?? [];
    for (const specifier of specifiers(readFileSync(file, 'utf8'))) {
      if (!specifier.startsWith('.')) continue;
      const target = path.resolve(path.dirname(file), specifier);
      if (!target.startsWith(SRC + path.sep)) continue;
      const to = areaOf(target);
      if (to === from) continue;
      if (from === 'http' && to === 'graphql' && path.relative(SRC, target) !== path.join('graphql', 'handler.js')) {
        found.push(`${path.relative(SRC, file)} → ${path.relative(SRC, target)} (http reaches GraphQL only through graphql/handler)`);
      }
      if (rule === '*' || rule.includes(to)) found.push(`${path.relative(SRC, file)} → ${path.relative(SRC, target)} (${from} must not import ${to})`);
    }
  }
  return found;
}

describe('import boundaries of server/src', () => {
  it('has no backwards imports', () => {
    expect(violations()).toEqual([]);
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
    // The areas the rules speak of exist, so a renamed folder cannot silently disable a rule.
    const areas = new Set(sourceFiles(SRC).map(areaOf));
    for (const area of Object.keys(FORBIDDEN)) expect(areas, area).toContain(area);
  });
});
