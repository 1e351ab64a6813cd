import { spawnSync } from 'node:child_process';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';

/** One metric family of a scrape, as parse-prometheus-text-format reads the exposition. */
export interface Family {
  name: string;
  help: string;
  type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED';
  metrics: { value?: string; labels?: Record<string, string>; buckets?: Record<string, string>; count?: string; sum?: string }[];
}

export interface Scrape {
  text: string;
  /** Metric families with their type and help. */
  families: Map<string, Family>;
  /** Every sample series by its own name (`x_count`, `x_bucket` of a histogram too), with its labels. */
  samples: Map<string, Family>;
}

/**
 * GETs a /metrics endpoint and parses the exposition with parse-prometheus-text-format. That parser folds a
 * histogram's labelled series into one, so the samples are parsed a second time without the TYPE lines: each
 * series (`_bucket`, `_sum`, `_count`) then keeps its labels.
 */
export async function scrape(url: string, token?: string): Promise<Scrape> {
  const response = await fetch(url, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`scrape of ${url} answered ${response.status}: ${text}`);
  // Families of one name are merged: without TYPE lines, a histogram's labelled series come interleaved.
  const byName = (parsed: unknown[]) => {
    const map = new Map<string, Family>();
    for (const family of parsed as Family[]) {
      const known = map.get(family.name);
      if (known) known.metrics.push(...family.metrics);
      else map.set(family.name, family);
    }
    return map;
  };
  const untyped = text.split('\n').filter((line) => !line.startsWith('# TYPE ')).join('\n');
  return { text, families: byName(parsePrometheusTextFormat(text)), samples: byName(parsePrometheusTextFormat(untyped)) };
}

/**
 * The value of the series `name` (a counter, a gauge, or a histogram's `x_count`) summed over its samples whose labels
 * include `labels`. 0 when no such sample exists (a counter not yet moved).
 */
export function valueOf(scraped: Scrape, name: string, labels: Record<string, string> = {}): number {
  const series = scraped.samples.get(name);
  if (!series) return 0;
  return series.metrics
    .filter((metric) => Object.entries(labels).every(([key, value]) => metric.labels?.[key] === value))
    .reduce((sum, metric) => sum + Number(metric.value), 0);
}

/** `promtool check metrics` on an exposition: Prometheus's own lint of names, types and help. null when it passes. */
export function promtoolMetricsLint(text: string): string | null {
  const result = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  return result.status === 0 ? null : `exit ${result.status}: ${result.stdout}${result.stderr}`;
}
