import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkAnchors } from '../docs/scripts/check-anchors.js';

// `pnpm docs:build` runs this check over the built site: a link to an anchor that no element carries fails the build.
describe('docs anchor check', () => {
  const dist = mkdtempSync(path.join(tmpdir(), 'kf-docs-anchors-'));
  afterAll(() => rmSync(dist, { recursive: true, force: true }));
  mkdirSync(path.join(dist, 'operate'));
  writeFileSync(path.join(dist, 'operate/deployment.html'), '<h2 id="redis-shared-rate-limits">Redis</h2><a href="#redis-shared-rate-limits">here</a>');
  writeFileSync(
    path.join(dist, 'index.html'),
    [
      '<h1 id="keyforge">Keyforge</h1>',
      '<a href="#keyforge">top</a>',
      '<a href="/operate/deployment#redis-shared-rate-limits">redis</a>',
      '<a href="https://example.com/#anything">elsewhere</a>',
      '<a href="/operate/deployment#redis">renamed heading</a>',
      '<a href="#gone">missing here</a>',
      '<a href="/operate/nowhere#x">missing page</a>',
    ].join('\n'),
  );

  it('reports each dead anchor and nothing else', () => {
    expect(checkAnchors(dist).sort()).toEqual([
      'index.html: #gone — no heading or element with id "gone" on index.html',
      'index.html: /operate/deployment#redis — no heading or element with id "redis" on operate/deployment.html',
      'index.html: /operate/nowhere#x — no such page',
    ]);
  });
});
