// Reading a range of readings page by page, following the Link header, and
// turning them into the columns a chart and a table need.
import type { paths } from './gen/api';
import type { Reading, Sensor } from './api';
import { nextLink } from './link';
import type { Range } from './time';

type ListReadings = paths['/api/v1/org/{org_id}/proj/{proj_id}/readings/{sensor_id}']['get'];
export type ReadingsQuery = NonNullable<ListReadings['parameters']['query']>;

/**
 * queryFromLink reads a rel="next" URL back into listReadings' query, so
 * that the next page goes through the generated client like the first. It
 * throws when the link points elsewhere or carries a parameter the spec does
 * not have: dropping a bound silently would load the wrong readings.
 */
export function queryFromLink(link: string, expectedPath: string): ReadingsQuery {
  const url = new URL(link, 'http://service.invalid');
  if (url.pathname !== expectedPath) {
    throw new Error(`the next page is at ${url.pathname}, not ${expectedPath}`);
  }
  const q: ReadingsQuery = {};
  for (const [name, value] of url.searchParams) {
    switch (name) {
      case 'datetime__gte':
      case 'datetime__gt':
      case 'datetime__lte':
      case 'datetime__lt':
        q[name] = value;
        break;
      case 'limit':
      case 'offset':
        q[name] = Number(value);
        break;
      case 'outputs':
        q.outputs = value === 'true';
        break;
      case 'flags':
        q.flags = value === 'true';
        break;
      case 'as_of':
        q.as_of = value;
        break;
      case 'order':
        if (value !== 'asc' && value !== 'desc') throw new Error(`the next page's order is ${value}`);
        q.order = value;
        break;
      default:
        throw new Error(`the next page has a parameter the console does not know: ${name}`);
    }
  }
  return q;
}

export interface Page {
  readings: Reading[];
  link: string | null;
}

export interface Progress {
  pages: number;
  readings: number;
  /** How much of the range is loaded, 0 to 1, from the last reading's datetime. */
  fraction: number;
}

export interface LoadOptions {
  range: Range;
  /** The path the Link header must point to: that of the first page. */
  path: string;
  fetchPage: (query: ReadingsQuery) => Promise<Page>;
  onProgress?: (p: Progress) => void;
  /** Stop after this many readings, to keep the browser's memory in bounds. */
  max?: number;
}

export interface Loaded {
  readings: Reading[];
  truncated: boolean;
}

export const PAGE_SIZE = 1000;

/** loadRange reads every reading of the range, oldest first, a page at a time. */
export async function loadRange(opts: LoadOptions): Promise<Loaded> {
  const { range, max = 500_000 } = opts;
  let query: ReadingsQuery = {
    outputs: true,
    limit: PAGE_SIZE,
    datetime__gte: range.from.toISOString(),
    datetime__lt: range.to.toISOString(),
  };
  const readings: Reading[] = [];
  const span = range.to.getTime() - range.from.getTime();
  for (let pages = 1; ; pages++) {
    const page = await opts.fetchPage(query);
    for (const r of page.readings) readings.push(r);
    const last = page.readings[page.readings.length - 1];
    const done = !page.link;
    const fraction = done || !last ? 1 : Math.min(1, Math.max(0, (Date.parse(last.datetime) - range.from.getTime()) / span));
    opts.onProgress?.({ pages, readings: readings.length, fraction });
    if (done) return { readings, truncated: false };
    if (readings.length >= max) return { readings, truncated: true };
    query = queryFromLink(page.link!, opts.path);
  }
}

/** nextFromHeaders is the next page's URL of a response. */
export function nextFromHeaders(headers: Headers): string | null {
  return nextLink(headers.get('Link'));
}

/** A series is one input or output of a sensor, as the chart and table show it. */
export interface Series {
  kind: 'input' | 'output';
  id: number;
  key: string;
  label: string;
  unit: string;
  /** The output's declared decimals, to show its values with. */
  decimals?: number;
}

/**
 * seriesOf lists a sensor's inputs then outputs. A sensor without a
 * blueprint accepts any input ID, so its series are the IDs its readings
 * (or aggregate buckets) use.
 */
export function seriesOf(sensor: Pick<Sensor, 'inputs' | 'outputs'>, readings: readonly { inputs: Record<string, unknown> }[] = []): Series[] {
  const out: Series[] = [];
  for (const i of sensor.inputs) out.push({ kind: 'input', id: i.id, key: i.key, label: i.name || i.key, unit: i.unit });
  for (const o of sensor.outputs) out.push({ kind: 'output', id: o.id, key: o.key, label: o.name || o.key, unit: o.unit, decimals: o.decimals });
  if (sensor.inputs.length === 0) {
    const ids = new Set<number>();
    for (const r of readings) for (const id of Object.keys(r.inputs)) ids.add(Number(id));
    for (const id of [...ids].sort((a, b) => a - b)) out.push({ kind: 'input', id, key: String(id), label: `Input ${id}`, unit: '' });
  }
  return out;
}

export function valueOf(r: Reading, s: Series): number | null {
  const values = s.kind === 'input' ? r.inputs : r.outputs;
  const v = values?.[String(s.id)];
  return typeof v === 'number' ? v : null;
}

/**
 * columns are the chart's data: x in seconds since the epoch (uPlot's
 * unit; milliseconds survive as fractions), then one column per series,
 * null where a reading lacks the value.
 */
export function columns(readings: readonly Reading[], series: readonly Series[]): [number[], ...(number | null)[][]] {
  const xs = new Array<number>(readings.length);
  const ys = series.map(() => new Array<number | null>(readings.length));
  readings.forEach((r, i) => {
    xs[i] = Date.parse(r.datetime) / 1000;
    series.forEach((s, j) => {
      ys[j]![i] = valueOf(r, s);
    });
  });
  return [xs, ...ys];
}

export interface Stats {
  count: number;
  min: number | null;
  max: number | null;
  last: number | null;
}

export function stats(values: readonly (number | null)[]): Stats {
  let count = 0;
  let min: number | null = null;
  let max: number | null = null;
  let last: number | null = null;
  for (const v of values) {
    if (v === null) continue;
    count++;
    if (min === null || v < min) min = v;
    if (max === null || v > max) max = v;
    last = v;
  }
  return { count, min, max, last };
}

/**
 * formatNumber shows a value with its declared decimals, or else with up to
 * 6 significant digits, without exponent noise for everyday sizes.
 */
export function formatNumber(v: number | null | undefined, decimals?: number): string {
  if (v === null || v === undefined) return '';
  if (decimals !== undefined && Math.abs(v) < 1e15) return v.toFixed(decimals);
  if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v);
  const abs = Math.abs(v);
  if (abs !== 0 && (abs < 1e-4 || abs >= 1e9)) return v.toExponential(4);
  return String(Number(v.toPrecision(6)));
}

/**
 * GAP_FACTOR is the console's gap rule: where two consecutive readings are
 * more than GAP_FACTOR times the median spacing of the shown readings
 * apart, the chart's lines break instead of drawing a straight line across
 * the time nothing was read.
 */
export const GAP_FACTOR = 5;

/** A chart column: a value, null where the line breaks, undefined where the series has no value and the line goes on. */
export type Column = (number | null | undefined)[];

/**
 * breakGaps turns the chart's columns, null where a series has no value,
 * into what uPlot draws: each series' line runs across the readings that
 * lack it (undefined: a temperature logged every 10 minutes beside a
 * frequency logged every minute is one line, not 144 dots), and breaks
 * (null) only where that series itself was silent for more than
 * GAP_FACTOR times its own median spacing: at a row inside the gap, or
 * at a row added in its middle when there is none. A series with fewer
 * than three values has no spacing to judge by, and never breaks.
 * follow[j] names the column (index into ys) whose gaps column j takes,
 * so that a band breaks where its average does; by default each column
 * follows itself. A column that follows null never breaks: the flagged
 * points drawn apart from a line, which has none.
 */
export function breakGaps(xs: readonly number[], ys: readonly (number | null)[][], follow: readonly (number | null)[] = ys.map((_, j) => j)): [number[], ...Column[]] {
  // Each leading column's gaps, as the indexes of their two ends.
  const gapsOf = new Map<number, [number, number][]>();
  for (const lead of new Set(follow)) {
    if (lead === null) continue;
    const y = ys[lead] ?? [];
    const present: number[] = [];
    xs.forEach((_, i) => {
      if (y[i] !== null && y[i] !== undefined) present.push(i);
    });
    const steps: number[] = [];
    for (let i = 1; i < present.length; i++) steps.push(xs[present[i]!]! - xs[present[i - 1]!]!);
    const gaps: [number, number][] = [];
    if (steps.length >= 2) {
      const limit = GAP_FACTOR * [...steps].sort((a, b) => a - b)[Math.floor(steps.length / 2)]!;
      for (let i = 1; i < present.length; i++) if (steps[i - 1]! > limit) gaps.push([present[i - 1]!, present[i]!]);
    }
    gapsOf.set(lead, gaps);
  }
  // A gap with a row inside breaks there; one without gets a row in its
  // middle, which every other column spans.
  const out: Column[] = ys.map((y) => y.map((v) => (v === null ? undefined : v)));
  const added = new Map<number, Set<number>>(); // index of the row before → columns breaking there
  ys.forEach((_, j) => {
    const lead = follow[j];
    for (const [a, b] of lead === null || lead === undefined ? [] : (gapsOf.get(lead) ?? [])) {
      if (b - a > 1) out[j]![a + 1] = null;
      else added.set(a, (added.get(a) ?? new Set()).add(j));
    }
  });
  if (added.size === 0) return [[...xs], ...out];
  const outX: number[] = [];
  const outY: Column[] = ys.map(() => []);
  xs.forEach((x, i) => {
    outX.push(x);
    out.forEach((col, j) => outY[j]!.push(col[i]));
    const breaking = added.get(i);
    if (breaking) {
      outX.push((x + xs[i + 1]!) / 2);
      out.forEach((_, j) => outY[j]!.push(breaking.has(j) ? null : undefined));
    }
  });
  return [outX, ...outY];
}

/**
 * alignSeries puts tables of their own x (one sensor's readings each, for a
 * chart of several sensors) on one x: every x of any table, in order, a
 * column per table's column, null where that table has no row.
 */
export function alignSeries(tables: readonly { xs: readonly number[]; ys: readonly (number | null)[][] }[]): { xs: number[]; ys: (number | null)[][] } {
  const xs = [...new Set(tables.flatMap((t) => t.xs))].sort((a, b) => a - b);
  const at = new Map(xs.map((x, i) => [x, i]));
  const ys: (number | null)[][] = [];
  for (const t of tables) {
    for (const col of t.ys) {
      const out = new Array<number | null>(xs.length).fill(null);
      t.xs.forEach((x, i) => {
        out[at.get(x)!] = col[i] ?? null;
      });
      ys.push(out);
    }
  }
  return { xs, ys };
}

/** A quantity the chosen sensors have: a key, with its unit. */
export interface Quantity {
  key: string;
  unit: string;
  label: string;
}

/**
 * quantitiesOf lists the keys of the sensors' inputs and outputs, each once
 * with the unit and name of the first sensor that has it: outputs first,
 * then those most sensors have.
 */
export function quantitiesOf(sensors: readonly Pick<Sensor, 'inputs' | 'outputs'>[]): Quantity[] {
  const seen = new Map<string, Quantity & { n: number; output: boolean }>();
  for (const s of sensors) {
    for (const x of seriesOf(s)) {
      const q = seen.get(x.key);
      if (q) q.n++;
      else seen.set(x.key, { key: x.key, unit: x.unit, label: x.label, n: 1, output: x.kind === 'output' });
    }
  }
  return [...seen.values()].sort((a, b) => Number(b.output) - Number(a.output) || b.n - a.n || a.key.localeCompare(b.key)).map(({ key, unit, label }) => ({ key, unit, label }));
}

/** seriesFor is a sensor's series of key, labelled with the sensor's name, or undefined when it has none. */
export function seriesFor(sensor: Sensor, key: string): Series | undefined {
  const s = seriesOf(sensor).find((x) => x.key === key);
  return s && { ...s, label: sensor.name };
}
