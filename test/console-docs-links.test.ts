import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DOCS } from '../console/src/lib/docs.js';

/**
 * Every documentation page the console names — the pages its panels point to (console/src/lib/docs.ts) and every
 * `docs/….md` reference anywhere in console/src, with its `#anchor` or quoted "Section" — exists, and so does the
 * section. And no console text sends the reader to the README for what the docs pages hold.
 */
const ROOT = path.resolve(import.meta.dirname, '..');
const CONSOLE_SRC = path.join(ROOT, 'console/src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) return sourceFiles(file);
    return /\.(ts|tsx)$/.test(name) ? [file] : [];
  });
}

/** The heading's anchor as VitePress makes it (@mdit-vue/shared's slugify), from the heading's text without markup. */
export function slugify(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/[\u0300-\u036F]/g, '')
    .replace(/[\u0000-\u001f]/g, '')
    .replace(/[\s~`!@#$%^&*()\-_+=[\]{}|\\;:"'“”‘’<>,.?/]+/g, '-')
    .replace(/-{2,}/g, '-')
    .replace(/^-+|-+$/g, '')
    .replace(/^(\d)/, '_$1')
    .toLowerCase();
}

/** The headings of a Markdown page (outside code blocks), as written and as anchors. */
function headings(file: string): { texts: Set<string>; anchors: Set<string> } {
  const texts = new Set<string>();
  const anchors = new Set<string>();
  let inCode = false;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) inCode = !inCode;
    const match = !inCode && /^#{1,6}\s+(.*?)\s*(?:\{#([\w-]+)\})?\s*$/.exec(line);
    if (!match) continue;
    texts.add(match[1]);
    anchors.add(match[2] ?? slugify(match[1].replace(/`/g, '').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')));
  }
  return { texts, anchors };
}

/** What is wrong with one reference (`docs/x.md`, with an optional `#anchor` or quoted section title), or null. */
function problem(page: string, anchor?: string, section?: string): string | null {
  const file = path.join(ROOT, page);
  if (!existsSync(file)) return `${page}: no such page`;
  const { texts, anchors } = headings(file);
  if (anchor && !anchors.has(anchor)) return `${page}#${anchor}: no such heading`;
  if (section && !texts.has(section)) return `${page} "${section}": no heading with this text`;
  return null;
}

describe('the documentation the console names', () => {
  it('the pages of console/src/lib/docs.ts exist', () => {
    const problems = Object.values(DOCS).map((page) => problem(page.path)).filter(Boolean);
    expect(problems).toEqual([]);
  });

  it('every docs/….md reference in console/src names an existing page and section', () => {
    const problems: string[] = [];
    let references = 0;
    for (const file of sourceFiles(CONSOLE_SRC)) {
      const text = readFileSync(file, 'utf8');
      for (const match of text.matchAll(/\b(docs\/[\w/.-]+\.md)(?:#([\w-]+))?(?: (?:›|>)? ?"([^"\n]+)")?/g)) {
        references += 1;
        const found = problem(match[1], match[2], match[3]);
        if (found) problems.push(`${path.relative(ROOT, file)}: ${found}`);
      }
    }
    expect(problems).toEqual([]);
    expect(references).toBeGreaterThan(10);
  });

  it('no console text points to README sections (the docs pages hold them)', () => {
    const offenders = sourceFiles(CONSOLE_SRC).filter((file) => /README/.test(readFileSync(file, 'utf8')));
    expect(offenders.map((file) => path.relative(ROOT, file))).toEqual([]);
  });

  it('the anchor check itself: a renamed heading or a missing page is reported', () => {
    expect(problem('docs/integrate/rest-api.md', 'rejection-codes-http-200-isvalid-false')).toBeNull();
    expect(problem('docs/integrate/rest-api.md', 'no-such-heading')).toMatch(/no such heading/);
    expect(problem('docs/integrate/nowhere.md')).toMatch(/no such page/);
    expect(problem('docs/integrate/management-api.md', undefined, 'Activity log')).toBeNull();
    expect(problem('docs/integrate/management-api.md', undefined, 'Activity journal')).toMatch(/no heading/);
  });
});
