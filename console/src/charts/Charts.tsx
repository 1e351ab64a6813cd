import type { ChartData, ChartOptions } from 'chart.js';
import { Bar, Doughnut, Line } from 'react-chartjs-2';
import { PALETTE } from './setup';

/**
 * The console's chart.js charts: one look everywhere. Each chart has an accessible name (canvas aria-label)
 * and a text summary for screen readers, since a canvas is opaque to them.
 */
interface BaseProps {
  label: string;
  labels: string[];
  height?: number;
}

interface Series {
  label: string;
  data: number[];
  color?: string;
}

const integerAxis = { beginAtZero: true, ticks: { precision: 0 }, grid: { color: '#f1f3f5' } };

function summary(label: string, labels: string[], series: Series[]) {
  return `${label}: ${series.map((s) => `${s.label} ${labels.map((l, i) => `${l} ${s.data[i] ?? 0}`).join(', ')}`).join('; ')}`;
}

export function BarChart({ label, labels, series, height = 260, horizontal = false, stacked = false }: BaseProps & { series: Series[]; horizontal?: boolean; stacked?: boolean }) {
  const data: ChartData<'bar'> = {
    labels,
    datasets: series.map((s, i) => ({ label: s.label, data: s.data, backgroundColor: s.color ?? PALETTE[i % PALETTE.length], borderRadius: 4, maxBarThickness: 36 })),
  };
  const options: ChartOptions<'bar'> = {
    indexAxis: horizontal ? 'y' : 'x',
    plugins: { legend: { display: series.length > 1, position: 'bottom' } },
    scales: horizontal
      ? { x: { ...integerAxis, stacked }, y: { grid: { display: false }, stacked } }
      : { y: { ...integerAxis, stacked }, x: { grid: { display: false }, stacked } },
  };
  return (
    <div style={{ position: 'relative', height }}>
      <Bar data={data} options={options} aria-label={label} role="img" fallbackContent={<p>{summary(label, labels, series)}</p>} />
    </div>
  );
}

export function LineChart({ label, labels, series, height = 260, fill = false }: BaseProps & { series: Series[]; fill?: boolean }) {
  const data: ChartData<'line'> = {
    labels,
    datasets: series.map((s, i) => {
      const color = s.color ?? PALETTE[i % PALETTE.length];
      return { label: s.label, data: s.data, borderColor: color, backgroundColor: `${color}22`, fill: fill && i === 0, cubicInterpolationMode: 'monotone', pointRadius: labels.length > 40 ? 0 : 3, borderWidth: 2 };
    }),
  };
  const options: ChartOptions<'line'> = {
    interaction: { mode: 'index', intersect: false },
    plugins: { legend: { display: series.length > 1, position: 'bottom' } },
    scales: { y: integerAxis, x: { grid: { display: false } } },
  };
  return (
    <div style={{ position: 'relative', height }}>
      <Line data={data} options={options} aria-label={label} role="img" fallbackContent={<p>{summary(label, labels, series)}</p>} />
    </div>
  );
}

/** The legend names each slice with its count ("Active · 1,204"), so the numbers are readable without hovering. */
export const legendLabels = (labels: string[], values: number[]) => labels.map((name, i) => `${name} · ${(values[i] ?? 0).toLocaleString('en-US')}`);

export function DoughnutChart({ label, labels, values, colors, height = 240 }: BaseProps & { values: number[]; colors?: string[] }) {
  const data: ChartData<'doughnut'> = {
    labels: legendLabels(labels, values),
    datasets: [{ label, data: values, backgroundColor: colors ?? labels.map((_, i) => PALETTE[i % PALETTE.length]), borderWidth: 2, borderColor: '#fff' }],
  };
  const options: ChartOptions<'doughnut'> = { cutout: '62%', plugins: { legend: { position: 'right', labels: { boxWidth: 12 } } } };
  return (
    <div style={{ position: 'relative', height }}>
      <Doughnut data={data} options={options} aria-label={label} role="img" fallbackContent={<p>{summary(label, labels, [{ label, data: values }])}</p>} />
    </div>
  );
}
