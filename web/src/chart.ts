// The readings chart: uPlot, which draws tens of thousands of points on a
// canvas without a framework. One y scale per unit, so that kPa and Hz do
// not squash each other, and every scale has its axis: no series is drawn
// against a scale the reader cannot see. Alarm thresholds are lines on the
// axis of their target's unit; buckets of a long range are an average line
// in a min–max band.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { reach, type Threshold } from './alarms';
import { breakGaps, formatNumber, type Series } from './readings';
import { formatDateTime, timeAxisLabels } from './time';

export const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#7f7f7f', '#bcbd22'];

export interface ChartData {
  xs: number[];
  series: Series[];
  /** Per series its values, or with band its buckets' averages. */
  ys: (number | null)[][];
  /** Per series the buckets' minima and maxima, drawn as a band around ys. */
  band?: { min: (number | null)[][]; max: (number | null)[][] };
  thresholds?: Threshold[];
}

export function colorOf(index: number): string {
  return COLORS[index % COLORS.length]!;
}

const scaleOf = (s: Series) => s.unit || 'value';

/**
 * fitLabels sizes a y axis to its widest tick label (uPlot's own recipe),
 * so that an axis per unit still leaves a phone room for the plot.
 */
function fitLabels(u: uPlot, values: string[] | null, axisIdx: number, cycleNum: number): number {
  const axis = u.axes[axisIdx]!;
  if (cycleNum > 1) return (axis as { _size?: number })._size ?? 40;
  let size = (axis.ticks?.size ?? 10) + (axis.gap ?? 5) + (axis.labelSize ?? 30);
  const longest = (values ?? []).reduce((a, v) => (v.length > a.length ? v : a), '');
  if (longest) {
    u.ctx.font = (axis.font as unknown as [string])[0]; // uPlot keeps [font, size] here once drawn
    size += u.ctx.measureText(longest).width / devicePixelRatio;
  }
  return Math.ceil(size);
}

let syncs = 0;

/**
 * drawChart draws data into el, replacing what it held, and follows el's
 * width. Every unit has an axis; since an axis takes room, a narrow el (a
 * phone) gets one chart per two units, an axis on each side, their cursors
 * in step, rather than one plot squeezed between four axes.
 */
export function drawChart(el: HTMLElement, data: ChartData, colorIndex: (s: Series) => number): () => void {
  const units = [...new Set(data.series.map(scaleOf))];
  const n = data.series.length;
  // One gap rule for all columns: a band breaks where its average does.
  const cols = breakGaps([data.xs, ...data.ys, ...(data.band ? [...data.band.min, ...data.band.max] : [])]);
  const sync = `readings-${++syncs}`;
  const width = () => {
    const style = getComputedStyle(el);
    return Math.max(240, el.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight));
  };
  const isNarrow = () => width() < 600;
  let plots: uPlot[] = [];
  let narrow = isNarrow();
  const build = () => {
    for (const p of plots) p.destroy();
    el.replaceChildren();
    narrow = isNarrow();
    const groups = narrow ? chunks(units, 2) : [units];
    const height = narrow ? 240 : 360;
    plots = groups.map((group) => {
      const idx = data.series.flatMap((s, i) => (group.includes(scaleOf(s)) ? [i] : []));
      const series = idx.map((i) => data.series[i]!);
      const band = data.band ? idx.flatMap((i) => [cols[n + i + 1]!, cols[2 * n + i + 1]!]) : [];
      const thresholds = (data.thresholds ?? []).filter((t) => group.includes(t.scale));
      const plot = new uPlot(
        options(series, group, colorIndex, { width: width(), height, points: data.xs.length <= 200 }, sync, !!data.band, thresholds),
        [cols[0], ...idx.map((i) => cols[i + 1]!), ...band] as uPlot.AlignedData,
        el,
      );
      // Which unit each axis measures, for the reader's tools and the end-to-end test.
      plot.root.querySelectorAll('.u-axis').forEach((axis, i) => axis.setAttribute('data-unit', i === 0 ? 'time' : group[i - 1]!));
      return plot;
    });
  };
  build();
  const resize = new ResizeObserver(() => {
    if (isNarrow() !== narrow) build();
    else for (const p of plots) p.setSize({ width: width(), height: p.height });
  });
  resize.observe(el);
  return () => {
    resize.disconnect();
    for (const p of plots) p.destroy();
  };
}

function chunks<T>(list: T[], n: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += n) out.push(list.slice(i, i + n));
  return out;
}

/**
 * options are uPlot's for series whose units are `units`, an axis each, on
 * alternate sides; with band, each series' minimum and maximum follow the
 * series, in that order. Each axis reaches its thresholds, so that a
 * threshold far from the values is still seen, with the distance to it.
 */
function options(
  series: Series[],
  units: string[],
  colorIndex: (s: Series) => number,
  size: { width: number; height: number; points: boolean },
  sync: string,
  band: boolean,
  thresholds: Threshold[],
): uPlot.Options {
  const axes: uPlot.Axis[] = [
    {
      size: 48,
      space: 90,
      values: (_u, ticks, _axis, _space, step) => timeAxisLabels(ticks, step),
    },
    ...units.map((unit, i): uPlot.Axis => {
      // An axis of one series wears its colour, so that the reader sees which line it measures.
      const own = series.filter((s) => scaleOf(s) === unit);
      const color = own.length === 1 ? colorOf(colorIndex(own[0]!)) : undefined;
      return {
        scale: unit,
        side: i % 2 === 0 ? 3 : 1,
        label: unit,
        grid: { show: i === 0 },
        size: fitLabels,
        labelSize: 20,
        gap: 4,
        ...(color ? { stroke: color } : {}),
        values: (_u, ticks) => ticks.map((t) => formatNumber(t)),
      };
    }),
  ];
  const value = (_u: uPlot, v: number | null) => (v === null || v === undefined ? '–' : formatNumber(v));
  const k = series.length;
  return {
    width: size.width,
    height: size.height,
    scales: { x: { time: true }, ...Object.fromEntries(units.map((u) => [u, { auto: true, range: reaching(thresholds.filter((t) => t.scale === u).map((t) => t.value)) }])) },
    series: [
      { label: 'Time', value: (_u: uPlot, v: number | null) => (v === null || v === undefined ? '–' : formatDateTime(new Date(v * 1000))) },
      ...series.map((s) => ({
        label: `${s.label}${band ? ' avg' : ''}${s.unit ? ` (${s.unit})` : ''}`,
        scale: scaleOf(s),
        stroke: colorOf(colorIndex(s)),
        width: 1.5,
        spanGaps: false,
        points: { show: size.points && !band },
        value,
      })),
      ...(band
        ? series.flatMap((s) =>
            (['min', 'max'] as const).map((fn) => ({ label: `${s.label} ${fn}`, scale: scaleOf(s), stroke: colorOf(colorIndex(s)) + '66', width: 1, spanGaps: false, points: { show: false }, value })),
          )
        : []),
    ],
    // uPlot fills between the two series of a band: max (above) and min.
    bands: band ? series.map((s, i) => ({ series: [k + 2 + 2 * i, k + 1 + 2 * i] as [number, number], fill: colorOf(colorIndex(s)) + '33' })) : [],
    axes,
    legend: { live: true },
    cursor: { drag: { x: true, y: false }, sync: { key: sync } },
    hooks: { draw: [(u: uPlot) => drawThresholds(u, thresholds)] },
  };
}

/** reaching is a scale's range that holds its data and the values of its thresholds. */
function reaching(values: number[]): uPlot.Range.Function {
  return (_u, min, max) => {
    const r = reach(min, max, values);
    return r ? (uPlot.rangeNum(r[0], r[1], 0.1, true) as uPlot.Range.MinMax) : [0, 1];
  };
}

/** drawThresholds draws each threshold across the plot, dashed, in its level's colour, named at its right end. */
function drawThresholds(u: uPlot, thresholds: Threshold[]): void {
  const { ctx } = u;
  const { left, top, width, height } = u.bbox;
  const px = devicePixelRatio;
  for (const t of thresholds) {
    const y = Math.round(u.valToPos(t.value, t.scale, true));
    if (y < top || y > top + height) continue;
    ctx.save();
    ctx.strokeStyle = t.colour;
    ctx.fillStyle = t.colour;
    ctx.lineWidth = 2 * px;
    ctx.setLineDash([8 * px, 4 * px]);
    ctx.beginPath();
    ctx.moveTo(left, y);
    ctx.lineTo(left + width, y);
    ctx.stroke();
    ctx.font = `${12 * px}px system-ui, sans-serif`;
    ctx.textAlign = 'right';
    ctx.textBaseline = 'bottom';
    ctx.fillText(t.label, left + width - 4 * px, y - 3 * px);
    ctx.restore();
  }
}
