/** The charts of the dashboard: small, dependency-free, drawn without animation. */
export { barChart } from './bar-chart';
export { lineChart, type LineChartOptions } from './line-chart';
