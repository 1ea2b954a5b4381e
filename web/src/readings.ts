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
}

/**
 * seriesOf lists a sensor's inputs then outputs. A sensor without a
 * blueprint accepts any input ID, so its series are the IDs its readings
 * (or aggregate buckets) use.
 */
export function seriesOf(sensor: Sensor, readings: readonly { inputs: Record<string, unknown> }[] = []): Series[] {
  const out: Series[] = [];
  for (const i of sensor.inputs) out.push({ kind: 'input', id: i.id, key: i.key, label: i.name || i.key, unit: i.unit });
  for (const o of sensor.outputs) out.push({ kind: 'output', id: o.id, key: o.key, label: o.name || o.key, unit: o.unit });
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

/** formatNumber shows a value with up to 6 significant digits, without exponent noise for everyday sizes. */
export function formatNumber(v: number | null | undefined): string {
  if (v === null || v === undefined) return '';
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

/**
 * breakGaps returns the chart's columns with a row of nulls in the middle
 * of each gap (GAP_FACTOR): uPlot breaks a line at a null. With fewer
 * than three readings there is no spacing to judge by, and nothing breaks.
 */
export function breakGaps(cols: [number[], ...(number | null)[][]]): [number[], ...(number | null)[][]] {
  const [xs, ...ys] = cols;
  const steps: number[] = [];
  for (let i = 1; i < xs.length; i++) if (xs[i]! > xs[i - 1]!) steps.push(xs[i]! - xs[i - 1]!);
  if (steps.length < 2) return cols;
  steps.sort((a, b) => a - b);
  const limit = GAP_FACTOR * steps[Math.floor(steps.length / 2)]!;
  const outX: number[] = [];
  const outY = ys.map(() => [] as (number | null)[]);
  xs.forEach((x, i) => {
    if (i > 0 && x - xs[i - 1]! > limit) {
      outX.push((x + xs[i - 1]!) / 2);
      for (const y of outY) y.push(null);
    }
    outX.push(x);
    ys.forEach((y, j) => outY[j]!.push(y[i]!));
  });
  return [outX, ...outY];
}
