// The readings chart: uPlot, which draws tens of thousands of points on a
// canvas without a framework. One y scale per unit, so that kPa and Hz do
// not squash each other, and every scale has its axis, all on the left: no
// series is drawn against a scale the reader cannot see, and several
// sensors of one unit share one axis. Alarm thresholds are lines on the
// axis of their target's unit, named in a margin right of the plot, never
// over the data; buckets of a long range are an average line in a min–max
// band. Flagged values are marked apart: a suspect one with a triangle on
// its line, a rejected one (shown only when asked for) as a cross off it.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { reach, type Threshold } from './alarms';
import { textOn } from './colours';
import { breakGaps, formatNumber, type Series } from './readings';
import { formatDateTime, timeAxisLabels } from './time';

export interface ChartData {
  xs: number[];
  series: Series[];
  /** Per series its values, or with band its buckets' averages; null where it has none. */
  ys: (number | null)[][];
  /** Per series the buckets' minima and maxima, drawn as a band around ys. */
  band?: { min: (number | null)[][]; max: (number | null)[][] };
  thresholds?: Threshold[];
  /** Per series its suspect values (on its line) and its rejected values (off it), null elsewhere. */
  flags?: { suspect: (number | null)[][]; rejected: (number | null)[][] };
}

export interface ChartOptions {
  /**
   * onSelect is called when the reader drags across the chart: from and to
   * in seconds since the epoch, zoom to show just that span, clear to
   * drop the selection. Without it, a drag zooms.
   */
  onSelect?: (from: number, to: number, zoom: () => void, clear: () => void) => void;
  /**
   * onUnselect is called when a double click zooms back out: uPlot drops
   * the span drawn with it, and the page must drop what it offered for it.
   */
  onUnselect?: () => void;
}

export const scaleOf = (s: Series) => s.unit || 'value';

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

const LABEL_FONT = '600 12px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
const LABEL_PAD = 4; // CSS pixels around a threshold's name
const LABEL_HEIGHT = 18;

/** gutterWidth is the margin right of the plot that names thresholds: the widest name, padded. */
function gutterWidth(thresholds: Threshold[]): number {
  if (thresholds.length === 0) return 0;
  const ctx = document.createElement('canvas').getContext('2d');
  if (!ctx) return 90;
  ctx.font = LABEL_FONT;
  return Math.ceil(Math.max(...thresholds.map((t) => ctx.measureText(t.label).width)) + 2 * LABEL_PAD + 10);
}

let syncs = 0;

/**
 * drawChart draws data into el, replacing what it held, and follows el's
 * width. Every unit has an axis; since an axis takes room, a narrow el (a
 * phone) gets one chart per unit, their cursors in step, each with the
 * width of the screen but its one axis, rather than a plot squeezed
 * between several; its thresholds are named by their level alone.
 */
export function drawChart(el: HTMLElement, data: ChartData, colour: (s: Series) => string, opts: ChartOptions = {}): () => void {
  // The units with thresholds first: what the rules watch is what is read first.
  const watched = new Set((data.thresholds ?? []).map((t) => t.scale));
  const units = [...new Set(data.series.map(scaleOf))].sort((a, b) => Number(watched.has(b)) - Number(watched.has(a)));
  const n = data.series.length;
  // Each band column breaks where its series' average does.
  // Flagged points are points, whose columns never break.
  const flagged = data.flags ? [...data.flags.suspect, ...data.flags.rejected] : [];
  const follow = [...data.series.map((_, i) => i), ...(data.band ? [...data.series.map((_, i) => i), ...data.series.map((_, i) => i)] : []), ...flagged.map(() => null)];
  const cols = breakGaps(data.xs, [...data.ys, ...(data.band ? [...data.band.min, ...data.band.max] : []), ...flagged], follow);
  const flagBase = 1 + n + (data.band ? 2 * n : 0); // the first suspect column in cols
  const sync = `readings-${++syncs}`;
  const width = () => {
    const style = getComputedStyle(el);
    return Math.max(240, el.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight));
  };
  const isNarrow = () => width() < 600;
  let plots: uPlot[] = [];
  let narrow = isNarrow();
  // A drag selects a span; the page decides what to do with it.
  const select = opts.onSelect
    ? (u: uPlot) => {
        if (u.select.width <= 0) return;
        const from = u.posToVal(u.select.left, 'x');
        const to = u.posToVal(u.select.left + u.select.width, 'x');
        const clear = () => {
          for (const p of plots) p.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
        };
        opts.onSelect!(from, to, () => {
          clear();
          for (const p of plots) p.setScale('x', { min: from, max: to });
        }, clear);
      }
    : undefined;
  const build = () => {
    for (const p of plots) p.destroy();
    el.replaceChildren();
    narrow = isNarrow();
    const groups = narrow ? units.map((u) => [u]) : [units];
    const height = narrow ? 220 : 380;
    plots = groups.map((group) => {
      const idx = data.series.flatMap((s, i) => (group.includes(scaleOf(s)) ? [i] : []));
      const series = idx.map((i) => data.series[i]!);
      const band = data.band ? idx.flatMap((i) => [cols[n + i + 1]!, cols[2 * n + i + 1]!]) : [];
      const thresholds = (data.thresholds ?? []).filter((t) => group.includes(t.scale)).map((t) => (narrow ? { ...t, label: t.level } : t));
      const marks = data.flags ? [...idx.map((i) => cols[flagBase + i]!), ...idx.map((i) => cols[flagBase + n + i]!)] : [];
      const columns = [cols[0], ...idx.map((i) => cols[i + 1]!), ...band, ...marks] as uPlot.AlignedData;
      const plot = new uPlot(options(series, group, colour, { width: width(), height, points: data.xs.length <= 200 }, sync, !!data.band, thresholds, !!data.flags, select), columns, el);
      // Which unit each axis measures, for the reader's tools and the end-to-end test.
      plot.root.querySelectorAll('.u-axis').forEach((axis, i) => axis.setAttribute('data-unit', i === 0 ? 'time' : (group[i - 1] ?? 'thresholds')));
      // A band's minimum and maximum are in its average's legend entry.
      const rows = plot.root.querySelectorAll<HTMLElement>('.u-legend .u-series');
      rows.forEach((row, i) => {
        if (i > series.length) row.hidden = true;
      });
      showLatest(plot);
      if (opts.onUnselect) plot.over.addEventListener('dblclick', opts.onUnselect);
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

/**
 * showLatest sets the legend, when the cursor is not over the plot, to
 * each series' latest value rather than a row of dashes.
 */
function showLatest(u: uPlot): void {
  const latest = () => {
    const idxs = u.data.map((col) => {
      for (let i = col.length - 1; i >= 0; i--) if (col[i] !== null && col[i] !== undefined) return i;
      return null;
    });
    u.setLegend({ idxs }, false);
  };
  latest();
  u.hooks.setLegend = [
    ...(u.hooks.setLegend ?? []),
    () => {
      if (u.legend.idx == null) latest();
    },
  ];
}

/**
 * options are uPlot's for series whose units are `units`, an axis each on
 * the left; with band, each series' minimum and maximum follow the series,
 * in that order. Each axis reaches its thresholds, so that a threshold far
 * from the values is still seen, with the distance to it.
 */
function options(
  series: Series[],
  units: string[],
  colour: (s: Series) => string,
  size: { width: number; height: number; points: boolean },
  sync: string,
  band: boolean,
  thresholds: Threshold[],
  flags: boolean,
  select: ((u: uPlot) => void) | undefined,
): uPlot.Options {
  const gutter = gutterWidth(thresholds);
  const axes: uPlot.Axis[] = [
    {
      size: 48,
      space: 90,
      values: (_u, ticks, _axis, _space, step) => timeAxisLabels(ticks, step),
    },
    ...units.map((unit, i): uPlot.Axis => {
      // An axis of one series wears its colour, so that the reader sees which line it measures.
      const own = series.filter((s) => scaleOf(s) === unit);
      const stroke = own.length === 1 ? colour(own[0]!) : undefined;
      return {
        scale: unit,
        side: 3,
        label: unit,
        grid: { show: i === 0 },
        size: fitLabels,
        labelSize: 20,
        gap: 4,
        ...(stroke ? { stroke } : {}),
        values: (_u, ticks) => ticks.map((t) => formatNumber(t)),
      };
    }),
    // The margin where thresholds are named: an axis with nothing drawn.
    ...(gutter ? [{ scale: units[0], side: 1, size: gutter, grid: { show: false }, ticks: { show: false }, values: (_u: uPlot, ticks: number[]) => ticks.map(() => '') } as uPlot.Axis] : []),
  ];
  const k = series.length;
  const value = (s: Series) => (_u: uPlot, v: number | null) => (v === null || v === undefined ? '–' : formatNumber(v, s.decimals));
  // With flags, the value under the cursor says its flag, and a rejected
  // one, off the line, is still read there: at the reading the cursor is
  // on, which uPlot's legend would pass by for the nearest value on the line.
  const flagBase = 1 + k + (band ? 2 * k : 0);
  const flaggedValue = (s: Series, i: number) => (u: uPlot, v: number | null, _sidx: number, idx: number | null) => {
    const at = (col: number, j: number | null | undefined) => (j === null || j === undefined ? undefined : u.data[col]?.[j]);
    const here = u.cursor.idx;
    const rejected = at(flagBase + k + i, here);
    if (rejected !== null && rejected !== undefined && (at(1 + i, here) === null || at(1 + i, here) === undefined)) return `${formatNumber(rejected, s.decimals)} rejected`;
    if (v === null || v === undefined) return '–';
    const suspect = at(flagBase + i, idx);
    return suspect !== null && suspect !== undefined ? `${formatNumber(v, s.decimals)} suspect` : formatNumber(v, s.decimals);
  };
  // In bucket mode the average's entry carries the bucket's minimum and maximum.
  const bucketValue = (s: Series, i: number) => (u: uPlot, v: number | null, _sidx: number, idx: number | null) => {
    if (v === null || v === undefined || idx === null) return '–';
    const lo = u.data[k + 1 + 2 * i]?.[idx];
    const hi = u.data[k + 2 + 2 * i]?.[idx];
    const f = (x: number | null | undefined) => formatNumber(x ?? null, s.decimals);
    return lo === null || lo === undefined || hi === null || hi === undefined ? f(v) : `${f(v)} (min ${f(lo)}, max ${f(hi)})`;
  };
  return {
    width: size.width,
    height: size.height,
    padding: [12, gutter ? 0 : null, 0, null],
    scales: { x: { time: true }, ...Object.fromEntries(units.map((u) => [u, { auto: true, range: reaching(thresholds.filter((t) => t.scale === u).map((t) => t.value)) }])) },
    series: [
      { label: 'Time', value: (_u: uPlot, v: number | null) => (v === null || v === undefined ? '–' : formatDateTime(new Date(v * 1000))) },
      // An input is a wide translucent line and an output a thin one on
      // top: an output that follows an input's shape on its own axis
      // (digits = freq² / 1000) runs inside it instead of hiding it.
      ...series.map((s, i) => ({
        label: `${s.label}${s.unit ? ` (${s.unit})` : ''}`,
        scale: scaleOf(s),
        stroke: s.kind === 'input' && !band ? colour(s) + 'aa' : colour(s),
        width: s.kind === 'input' && !band ? 3.5 : 1.75,
        spanGaps: false,
        points: { show: size.points && !band },
        value: band ? bucketValue(s, i) : flags ? flaggedValue(s, i) : value(s),
      })),
      ...(band
        ? series.flatMap((s) =>
            (['min', 'max'] as const).map((fn) => ({ label: `${s.label} ${fn}`, scale: scaleOf(s), stroke: colour(s) + '66', width: 1, spanGaps: false, points: { show: false }, value: value(s) })),
          )
        : []),
      // The flagged values: no line and no uPlot points (drawMarks draws
      // them); the rejected ones still stretch their axis to be seen.
      ...(flags
        ? (['suspect', 'rejected'] as const).flatMap((flag) =>
            series.map((s) => ({ label: `${s.label} ${flag}`, scale: scaleOf(s), stroke: colour(s), paths: () => null, spanGaps: false, points: { show: false }, value: value(s) })),
          )
        : []),
    ],
    // uPlot fills between the two series of a band: max (above) and min.
    bands: band ? series.map((s, i) => ({ series: [k + 2 + 2 * i, k + 1 + 2 * i] as [number, number], fill: colour(s) + '33' })) : [],
    axes,
    legend: { live: true },
    cursor: { drag: { x: true, y: false, setScale: !select }, sync: { key: sync } },
    hooks: {
      draw: [(u: uPlot) => drawThresholds(u, thresholds), ...(flags ? [(u: uPlot) => drawMarks(u, series, flagBase, colour)] : [])],
      ...(select ? { setSelect: [select] } : {}),
    },
  };
}

/** reaching is a scale's range that holds its data and the values of its thresholds. */
function reaching(values: number[]): uPlot.Range.Function {
  return (_u, min, max) => {
    const r = reach(min, max, values);
    return r ? (uPlot.rangeNum(r[0], r[1], 0.1, true) as uPlot.Range.MinMax) : [0, 1];
  };
}

/**
 * drawThresholds draws each threshold across the plot, dashed, in its
 * level's colour, and names it in the margin right of the plot, on a chip
 * of that colour with text that reads on it: never over the data. Names
 * that would overlap are moved apart, each tied to its line.
 */
function drawThresholds(u: uPlot, thresholds: Threshold[]): void {
  const { ctx } = u;
  const { left, top, width, height } = u.bbox;
  const px = devicePixelRatio;
  const shown = thresholds
    .map((t) => ({ t, y: Math.round(u.valToPos(t.value, t.scale, true)) }))
    .filter(({ y }) => y >= top && y <= top + height)
    .sort((a, b) => a.y - b.y);
  const h = LABEL_HEIGHT * px;
  let next = -Infinity;
  const placed = shown.map((s) => {
    const at = Math.max(s.y, next);
    next = at + h + 2 * px;
    return { ...s, at };
  });
  // Pushed past the plot's bottom: move the lot up.
  const over = placed.length ? placed[placed.length - 1]!.at + h / 2 - (top + height) : 0;
  if (over > 0) for (const p of placed) p.at = Math.max(top + h / 2, p.at - over);
  for (const { t, y, at } of placed) {
    ctx.save();
    ctx.strokeStyle = t.colour;
    ctx.lineWidth = 2 * px;
    ctx.setLineDash([8 * px, 4 * px]);
    ctx.beginPath();
    ctx.moveTo(left, y);
    ctx.lineTo(left + width, y);
    ctx.stroke();
    ctx.setLineDash([]);
    const x = left + width + 4 * px;
    if (at !== y) {
      ctx.lineWidth = 1 * px;
      ctx.beginPath();
      ctx.moveTo(left + width, y);
      ctx.lineTo(x, at);
      ctx.stroke();
    }
    ctx.font = LABEL_FONT.replace('12px', `${12 * px}px`);
    const w = ctx.measureText(t.label).width + 2 * LABEL_PAD * px;
    ctx.fillStyle = t.colour;
    ctx.beginPath();
    ctx.roundRect(x, at - h / 2, w, h, 3 * px);
    ctx.fill();
    ctx.fillStyle = textOn(t.colour);
    ctx.textAlign = 'left';
    ctx.textBaseline = 'middle';
    ctx.fillText(t.label, x + LABEL_PAD * px, at + 0.5 * px);
    ctx.restore();
  }
}

/** MARK_SIZE is a flag mark's radius in CSS pixels: larger than uPlot's points, so that it reads apart. */
const MARK_SIZE = 6;
/** SUSPECT_FILL is the suspect values' tint, as the readings table has it. */
const SUSPECT_FILL = '#fff3c4';

/**
 * drawMarks draws each series' flagged values: a suspect one as a tinted
 * triangle on its line (uPlot's own points are circles), a rejected one as
 * a cross, both outlined in the series' colour on a white halo so that
 * they read over the lines. It notes on the chart how many of each it
 * drew, for the reader's tools and the end-to-end test.
 */
function drawMarks(u: uPlot, series: Series[], base: number, colour: (s: Series) => string): void {
  const { ctx } = u;
  const px = devicePixelRatio;
  const { left, top, width, height } = u.bbox;
  const drawn = { suspect: 0, rejected: 0 };
  const xs = u.data[0];
  series.forEach((s, i) => {
    for (const flag of ['suspect', 'rejected'] as const) {
      const col = u.data[base + (flag === 'rejected' ? series.length : 0) + i];
      if (!col) continue;
      for (let j = 0; j < col.length; j++) {
        const v = col[j];
        if (v === null || v === undefined) continue;
        const x = u.valToPos(xs[j]!, 'x', true);
        const y = u.valToPos(v, scaleOf(s), true);
        if (x < left || x > left + width || y < top || y > top + height) continue;
        ctx.save();
        markPath(ctx, flag, x, y, MARK_SIZE * px);
        ctx.lineJoin = 'round';
        ctx.lineWidth = 5 * px;
        ctx.strokeStyle = '#ffffff';
        ctx.stroke();
        if (flag === 'suspect') {
          ctx.fillStyle = SUSPECT_FILL;
          ctx.fill();
        }
        ctx.lineWidth = 2.25 * px;
        ctx.strokeStyle = colour(s);
        ctx.stroke();
        ctx.restore();
        drawn[flag]++;
      }
    }
  });
  u.root.dataset['suspect'] = String(drawn.suspect);
  u.root.dataset['rejected'] = String(drawn.rejected);
}

/** markPath traces a flag's mark at (x, y) of radius r: a triangle for suspect, a cross for rejected. */
function markPath(ctx: CanvasRenderingContext2D, flag: 'suspect' | 'rejected', x: number, y: number, r: number): void {
  ctx.beginPath();
  if (flag === 'suspect') {
    ctx.moveTo(x, y - 1.15 * r);
    ctx.lineTo(x + r, y + 0.75 * r);
    ctx.lineTo(x - r, y + 0.75 * r);
    ctx.closePath();
    return;
  }
  ctx.moveTo(x - r, y - r);
  ctx.lineTo(x + r, y + r);
  ctx.moveTo(x + r, y - r);
  ctx.lineTo(x - r, y + r);
}

/** markIcon is a flag's mark as the chart draws it, for the legend beside the chart. */
export function markIcon(flag: 'suspect' | 'rejected'): HTMLCanvasElement {
  const size = 16;
  const px = devicePixelRatio || 1;
  const canvas = document.createElement('canvas');
  canvas.width = size * px;
  canvas.height = size * px;
  canvas.className = 'mark';
  canvas.setAttribute('aria-hidden', 'true');
  canvas.style.width = canvas.style.height = `${size}px`;
  const ctx = canvas.getContext('2d');
  if (ctx) {
    markPath(ctx, flag, (size / 2) * px, (size / 2) * px, MARK_SIZE * px);
    if (flag === 'suspect') {
      ctx.fillStyle = SUSPECT_FILL;
      ctx.fill();
    }
    ctx.lineJoin = 'round';
    ctx.lineWidth = 2 * px;
    ctx.strokeStyle = '#1d2430';
    ctx.stroke();
  }
  return canvas;
}
