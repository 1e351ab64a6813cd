import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parser } from '@prometheus-io/lezer-promql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { createMetrics } from '../server/src/metrics/index.js';
import { startTestApp, type TestApp } from './support/harness.js';
import { itWith, needCommands } from './support/optional.js';

/**
 * The alert rules and the Grafana dashboard that ship in server/deploy (docs/operate/observability.md): the rules pass
 * `promtool check rules` and their unit tests, and every expression of both parses as PromQL and names only
 * metrics the service exports.
 */
const DEPLOY = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../server/deploy');
const RULES = path.join(DEPLOY, 'prometheus/keyforge-alerts.yml');
const RULE_TESTS = path.join(DEPLOY, 'prometheus/keyforge-alerts.test.yml');
const DASHBOARD = path.join(DEPLOY, 'grafana/keyforge-dashboard.json');
const promtool = needCommands('promtool');

let t: TestApp;
let exported: Set<string>;
beforeAll(async () => {
  t = await startTestApp();
  // Every family a server registers (Redis configured, so its gauge too); a histogram's series by their suffixes.
  const metrics = createMetrics({ db: t.deps.db, redisReachable: () => true, role: 'server' });
  exported = new Set(
    metrics.registry.getMetricsAsArray().flatMap((metric) => {
      const { name, type } = (metric as unknown as { name: string; type: string });
      return type === 'histogram' ? [`${name}_bucket`, `${name}_sum`, `${name}_count`] : [name];
    }),
  );
});
afterAll(() => t.close());

/** The metric names of a PromQL expression (its vector selectors), or throws where it does not parse. */
function metricNames(expr: string): string[] {
  const names: string[] = [];
  let error: number | null = null;
  parser.parse(expr).iterate({
    enter(node) {
      if (node.type.isError) error ??= node.from;
      if (node.name === 'VectorSelector') {
        const identifier = node.node.getChild('Identifier');
        if (identifier) names.push(expr.slice(identifier.from, identifier.to));
      }
    },
  });
  if (error !== null) throw new Error(`not PromQL at ${error}: ${expr}`);
  return names;
}

const ruleExpressions = () => (parseYaml(readFileSync(RULES, 'utf8')) as { groups: { rules: { alert: string; expr: string }[] }[] }).groups.flatMap((group) => group.rules);
const dashboardExpressions = () =>
  (JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: { title: string; targets: { expr: string }[] }[] }).panels.flatMap((panel) => panel.targets.map((target) => ({ title: panel.title, expr: target.expr })));

describe('alert rules', () => {
  itWith(promtool)('pass promtool check rules', () => {
    const result = spawnSync('promtool', ['check', 'rules', RULES], { encoding: 'utf8' });
    expect(result.status, result.stdout + result.stderr).toBe(0);
  });

  itWith(promtool)('pass their unit tests (promtool test rules): each alert fires when it should and not before', () => {
    const result = spawnSync('promtool', ['test', 'rules', RULE_TESTS], { encoding: 'utf8', cwd: path.dirname(RULE_TESTS) });
    expect(result.status, result.stdout + result.stderr).toBe(0);
    const tested = new Set([...readFileSync(RULE_TESTS, 'utf8').matchAll(/alertname: (\w+)/g)].map((match) => match[1]));
    expect([...tested].sort()).toEqual(ruleExpressions().map((rule) => rule.alert).sort());
  });

  it('cover what an operator must hear about', () => {
    expect(ruleExpressions().map((rule) => rule.alert)).toEqual(
      expect.arrayContaining(['KeyforgeExpiryRunLate', 'KeyforgeEmailBacklog', 'KeyforgeWebhookBacklog', 'KeyforgeHigh5xxRatio', 'KeyforgeDatabaseUnavailable', 'KeyforgeAuditVerificationBroken', 'KeyforgeRedisDown', 'KeyforgeValidateSlow']),
    );
  });

  it('name only metrics the service exports', () => {
    for (const rule of ruleExpressions()) {
      const names = metricNames(rule.expr);
      expect(names.length, rule.alert).toBeGreaterThan(0);
      for (const name of names) expect(exported.has(name), `${rule.alert}: ${name}`).toBe(true);
    }
  });
});

describe('Grafana dashboard', () => {
  it('parses, and every expression names only metrics the service exports', () => {
    const expressions = dashboardExpressions();
    expect(expressions.length).toBeGreaterThan(10);
    for (const { title, expr } of expressions) {
      const names = metricNames(expr);
      expect(names.length, title).toBeGreaterThan(0);
      for (const name of names) expect(exported.has(name), `${title}: ${name}`).toBe(true);
    }
  });

  it('shows every keyforge metric the service exports', () => {
    const shown = new Set(dashboardExpressions().flatMap(({ expr }) => metricNames(expr)).map((name) => name.replace(/_(bucket|sum|count)$/, '')));
    const ours = [...exported].filter((name) => name.startsWith('keyforge_') && !/_(bucket|sum|count)$/.test(name));
    expect(ours.filter((name) => !shown.has(name))).toEqual([]);
  });

  it('detects an expression naming a metric that does not exist', () => {
    expect(metricNames('rate(keyforge_no_such_metric_total[5m])').every((name) => exported.has(name))).toBe(false);
    expect(() => metricNames('sum(rate(keyforge_http_requests_total[5m])')).toThrow(/not PromQL/);
  });
});
