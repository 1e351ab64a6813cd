import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

// Every alert the server ships has a runbook entry (a heading named after it) on the observability page.
describe('alert runbook', () => {
  it('has an entry for every shipped alert', () => {
    const rules = parse(readFileSync(new URL('../server/deploy/prometheus/keyforge-alerts.yml', import.meta.url), 'utf8')) as {
      groups: { rules: { alert?: string }[] }[];
    };
    const alerts = rules.groups.flatMap((group) => group.rules.map((rule) => rule.alert)).filter((name): name is string => !!name);
    const page = readFileSync(new URL('../docs/operate/observability.md', import.meta.url), 'utf8');
    const entries = [...page.matchAll(/^### (Keyforge\w+)$/gm)].map((match) => match[1]);
    expect(alerts.length).toBeGreaterThan(0);
    expect(alerts.filter((alert) => !entries.includes(alert))).toEqual([]);
    expect(entries.filter((entry) => !alerts.includes(entry!))).toEqual([]);
  });
});
