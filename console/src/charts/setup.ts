import {
  ArcElement,
  BarElement,
  CategoryScale,
  Chart,
  Filler,
  Legend,
  LinearScale,
  LineElement,
  PointElement,
  Tooltip,
} from 'chart.js';

// Register only what the console draws (keeps the bundle small).
Chart.register(ArcElement, BarElement, CategoryScale, LinearScale, LineElement, PointElement, Filler, Legend, Tooltip);
Chart.defaults.font.family = 'Inter, system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
Chart.defaults.color = '#495057';
Chart.defaults.maintainAspectRatio = false;
// Respect the user's (or the test browser's) reduced-motion setting: no animated transitions.
if (typeof window !== 'undefined' && window.matchMedia?.('(prefers-reduced-motion: reduce)').matches) Chart.defaults.animation = false;

/** Series colours (Mantine palette). */
export const PALETTE = ['#4c6ef5', '#12b886', '#fab005', '#fa5252', '#7950f2', '#15aabf', '#fd7e14', '#e64980', '#82c91e', '#868e96'];
