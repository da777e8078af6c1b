import { BarChart, LineChart } from 'echarts/charts';
import { GridComponent, TooltipComponent } from 'echarts/components';
import * as echarts from 'echarts/core';
import { CanvasRenderer } from 'echarts/renderers';

echarts.use([LineChart, BarChart, GridComponent, TooltipComponent, CanvasRenderer]);

const charts = new WeakMap<HTMLElement, echarts.ECharts>();

function chartIn(element: HTMLElement): echarts.ECharts {
  let chart = charts.get(element);
  if (!chart) {
    chart = echarts.init(element, undefined, { renderer: 'canvas' });
    charts.set(element, chart);
    new ResizeObserver(() => chart!.resize()).observe(element);
  }
  return chart;
}

export function lineChart(element: HTMLElement, points: Array<{ at: string; concurrent: number }>, color: string): void {
  chartIn(element).setOption({
    animation: !matchMedia('(prefers-reduced-motion: reduce)').matches,
    grid: { left: 40, right: 12, top: 12, bottom: 28 },
    tooltip: { trigger: 'axis' },
    xAxis: { type: 'time' },
    yAxis: { type: 'value', minInterval: 1 },
    series: [{ type: 'line', showSymbol: false, areaStyle: { opacity: 0.15 }, color, data: points.map((p) => [p.at, p.concurrent]) }],
  });
}

export function barChart(element: HTMLElement, labels: string[], values: number[], color: string): void {
  chartIn(element).setOption({
    animation: !matchMedia('(prefers-reduced-motion: reduce)').matches,
    grid: { left: 120, right: 24, top: 8, bottom: 24 },
    tooltip: { trigger: 'axis', axisPointer: { type: 'shadow' } },
    xAxis: { type: 'value', minInterval: 1 },
    yAxis: { type: 'category', data: labels, inverse: true },
    series: [{ type: 'bar', data: values, color, label: { show: true, position: 'right' } }],
  });
}
