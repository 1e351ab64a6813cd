// Summarises a V8 .cpuprofile (from `BENCH_CPU_PROF=1 pnpm bench`): where the server's CPU time goes.
// Usage: pnpm exec tsx bench/cpuprofile.ts <file.cpuprofile> [requests served, to print µs per request] [regex...]
// Each regex prints the share of samples with a matching frame ("name url:line") anywhere on the stack.
// Percentages are of busy time (idle excluded). "self" is time in the function itself; "inclusive" counts
// a sample once for every package (or function) anywhere on its stack.
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
const profile = JSON.parse(readFileSync(process.argv[2], 'utf8')) as { nodes: Node[]; samples: number[]; timeDeltas: number[] };
const requests = Number(process.argv[3] ?? 0);
const patterns = process.argv.slice(4).map((p) => new RegExp(p));
const matched = new Map<string, number>();
const top = 25;

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

/** The package (or server file, or node internal module) a frame belongs to. */
function owner({ url, functionName }: Node['callFrame']): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\/(?!.*node_modules\/)/.exec(url);
  if (pkg) return pkg[1];
  const own = /\/server\/dist\/(.+)$/.exec(url);
  if (own) return `keyforge:${own[1]}`;
  if (url.startsWith('node:')) return url.replace(/^node:internal\//, 'node:');
  return url;
}
const frameName = ({ functionName, url, lineNumber }: Node['callFrame']) =>
  `${functionName || '(anonymous)'} ${url ? `${url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/server\/dist\//, 'dist/')}:${lineNumber + 1}` : ''}`;

const self = new Map<string, number>();
const selfOwner = new Map<string, number>();
const inclOwner = new Map<string, number>();
const inclFrame = new Map<string, number>();
const add = (map: Map<string, number>, key: string, us: number) => map.set(key, (map.get(key) ?? 0) + us);
let busy = 0;
let idle = 0;

profile.samples.forEach((id, i) => {
  const us = profile.timeDeltas[i] ?? 0;
  const leaf = byId.get(id)!;
  if (leaf.callFrame.functionName === '(idle)') return void (idle += us);
  busy += us;
  add(self, frameName(leaf.callFrame), us);
  add(selfOwner, owner(leaf.callFrame), us);
  const owners = new Set<string>();
  const frames = new Set<string>();
  for (let n: Node | undefined = leaf; n; n = byId.get(parent.get(n.id) ?? -1)) {
    owners.add(owner(n.callFrame));
    frames.add(frameName(n.callFrame));
  }
  for (const o of owners) add(inclOwner, o, us);
  for (const f of frames) add(inclFrame, f, us);
  for (const p of patterns) if ([...frames].some((f) => p.test(f))) add(matched, p.source, us);
});

const pct = (us: number) => `${((100 * us) / busy).toFixed(1).padStart(5)}%` + (requests ? ` ${(us / requests).toFixed(1).padStart(6)} µs/req` : '');
const print = (title: string, map: Map<string, number>, n = top) => {
  console.log(`\n${title}`);
  for (const [key, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, n)) console.log(`  ${pct(us)}  ${key}`);
};
console.log(`busy ${(busy / 1e6).toFixed(1)} s, idle ${(idle / 1e6).toFixed(1)} s` + (requests ? `; ${(busy / requests).toFixed(1)} µs of CPU per request (startup included)` : ''));
print('self time by package / file', selfOwner, 20);
print('inclusive time by package / file (a sample counts once per package on its stack)', inclOwner, 25);
print('self time by function', self);
print('inclusive time by function', inclFrame, top);
if (patterns.length) print('samples with a frame matching', new Map(patterns.map((p) => [p.source, matched.get(p.source) ?? 0])));
