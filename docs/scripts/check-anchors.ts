/**
 * After `vitepress build`: every link to an anchor (`#id`, `/page#id`) in the built pages must name an id that exists
 * on its target page, or the build fails. VitePress itself fails on links to missing pages; this adds the anchors.
 *   tsx docs/scripts/check-anchors.ts [distDir]
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function htmlFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) return htmlFiles(file);
    return name.endsWith('.html') ? [file] : [];
  });
}

/** The built file a site path names (cleanUrls: /a/b → a/b.html, /a/ → a/index.html). */
function fileOf(dist: string, sitePath: string): string | null {
  const clean = decodeURIComponent(sitePath).replace(/^\//, '');
  const candidates = clean === '' || clean.endsWith('/') ? [`${clean}index.html`] : [clean, `${clean}.html`, `${clean}/index.html`];
  for (const candidate of candidates) {
    const file = path.join(dist, candidate);
    if (existsSync(file) && statSync(file).isFile()) return file;
  }
  return null;
}

export function checkAnchors(dist: string): string[] {
  const publicDir = path.join(root, 'docs/public');
  // Pages VitePress built from markdown; files copied from docs/public (the Redoc page) are not checked.
  const pages = htmlFiles(dist).filter((file) => !existsSync(path.join(publicDir, path.relative(dist, file))));
  const ids = new Map<string, Set<string>>();
  const idsOf = (file: string) => {
    let set = ids.get(file);
    if (!set) {
      set = new Set([...readFileSync(file, 'utf8').matchAll(/\sid="([^"]+)"/g)].map((m) => decodeEntities(m[1]!)));
      ids.set(file, set);
    }
    return set;
  };
  const problems: string[] = [];
  for (const page of pages) {
    const html = readFileSync(page, 'utf8');
    for (const match of html.matchAll(/<a\s[^>]*href="([^"]*#[^"]*)"/g)) {
      const href = decodeEntities(match[1]!);
      if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('//')) continue; // another site
      const [target, fragment = ''] = href.split('#', 2) as [string, string?];
      if (fragment === '') continue;
      const file = target === '' ? page : fileOf(dist, target.startsWith('/') ? target : path.posix.join(path.posix.dirname(`/${path.relative(dist, page)}`), target));
      const where = path.relative(dist, page);
      if (!file) {
        problems.push(`${where}: ${href} — no such page`);
        continue;
      }
      if (existsSync(path.join(publicDir, path.relative(dist, file)))) continue; // an anchor inside a public file
      if (!idsOf(file).has(decodeURIComponent(fragment))) problems.push(`${where}: ${href} — no heading or element with id "${decodeURIComponent(fragment)}" on ${path.relative(dist, file)}`);
    }
  }
  return [...new Set(problems)];
}

function decodeEntities(text: string): string {
  return text.replace(/&amp;/g, '&').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const dist = path.resolve(process.argv[2] ?? path.join(root, 'dist/docs'));
  const problems = checkAnchors(dist);
  if (problems.length > 0) {
    console.error(`Dead anchors (${problems.length}):\n${problems.map((p) => `  ${p}`).join('\n')}`);
    process.exit(1);
  }
  console.log(`anchors: every #link in ${path.relative(process.cwd(), dist) || '.'} names an existing id`);
}
