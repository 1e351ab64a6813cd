import './setup';

export { BarChart, DoughnutChart, LineChart } from './Charts';
export { PALETTE } from './setup';
