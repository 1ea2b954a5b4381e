// The readings chart: uPlot, which draws tens of thousands of points on a
// canvas without a framework. One y scale per unit, so that kPa and Hz do
// not squash each other; the first two units get an axis each.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { formatNumber, type Series } from './readings';

export const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#7f7f7f', '#bcbd22'];

export interface ChartData {
  xs: number[];
  series: Series[];
  ys: (number | null)[][];
}

export function colorOf(index: number): string {
  return COLORS[index % COLORS.length]!;
}

/** drawChart draws data into el, replacing what it held, and follows el's width. */
export function drawChart(el: HTMLElement, data: ChartData, colorIndex: (s: Series) => number): () => void {
  el.replaceChildren();
  const units = [...new Set(data.series.map((s) => s.unit || 'value'))];
  const axes: uPlot.Axis[] = [{}];
  units.slice(0, 2).forEach((unit, i) =>
    axes.push({
      scale: unit,
      side: i === 0 ? 3 : 1,
      label: unit,
      grid: { show: i === 0 },
      size: 60,
      values: (_u, ticks) => ticks.map((t) => formatNumber(t)),
    }),
  );
  const width = () => Math.max(280, el.clientWidth);
  const height = () => (window.innerWidth < 600 ? 260 : 360);
  const plot = new uPlot(
    {
      width: width(),
      height: height(),
      scales: { x: { time: true }, ...Object.fromEntries(units.map((u) => [u, { auto: true }])) },
      series: [
        { label: 'Time' },
        ...data.series.map((s) => ({
          label: `${s.label}${s.unit ? ` (${s.unit})` : ''}`,
          scale: s.unit || 'value',
          stroke: colorOf(colorIndex(s)),
          width: 1.5,
          spanGaps: false,
          points: { show: data.xs.length <= 200 },
          value: (_u: uPlot, v: number | null) => (v === null || v === undefined ? '–' : formatNumber(v)),
        })),
      ],
      axes,
      legend: { live: true },
      cursor: { drag: { x: true, y: false } },
    },
    [data.xs, ...data.ys] as uPlot.AlignedData,
    el,
  );
  const resize = new ResizeObserver(() => plot.setSize({ width: width(), height: height() }));
  resize.observe(el);
  return () => {
    resize.disconnect();
    plot.destroy();
  };
}
