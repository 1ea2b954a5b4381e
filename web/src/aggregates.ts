// Long ranges: the chart asks the aggregates endpoint first, and draws
// buckets (an average line in a min–max band) when the range holds more
// readings than are worth drawing one by one.
import type { Bucket } from './api';
import type { Series } from './readings';

/**
 * RAW_LIMIT is the most readings the chart loads and draws one by one: 5
 * pages of the API, a fraction of a second, and about as many points as a
 * chart is wide in device pixels. Beyond it every point would hide others,
 * and the buckets say the same with spikes kept (their min and max).
 */
export const RAW_LIMIT = 5000;

/** The aggregates endpoint's limit of values per response (openapi.yaml). */
const MAX_VALUES = 200_000;
/** The functions the chart asks for: fn=avg,min,max,count (each series' own count: a sparse input has fewer). */
export const FNS = ['avg', 'min', 'max', 'count'] as const;

/** chooseSource says how to draw a range holding `readings` readings. */
export function chooseSource(readings: number): 'raw' | 'aggregates' {
  return readings <= RAW_LIMIT ? 'raw' : 'aggregates';
}

/**
 * maxPoints is the max_points to ask: about the chart's width in CSS
 * pixels, kept within the endpoint's limit of values for `series` series
 * (a sensor without a blueprint is counted as 20).
 */
export function maxPoints(width: number, series: number): number {
  const n = series > 0 ? series : 20;
  const fit = Math.floor(MAX_VALUES / (FNS.length * n)) - 1;
  return Math.max(2, Math.min(Math.round(width), fit, 10_000));
}

/** totalReadings is how many readings the buckets hold. */
export function totalReadings(buckets: readonly Bucket[]): number {
  return buckets.reduce((n, b) => n + b.count, 0);
}

export interface BandColumns {
  /** Bucket starts, in seconds since the epoch. */
  xs: number[];
  avg: (number | null)[][];
  min: (number | null)[][];
  max: (number | null)[][];
  /** Per series its readings in each bucket. */
  count: (number | null)[][];
}

/**
 * bandColumns are the chart's columns of buckets: per series its average,
 * minimum and maximum, null where a bucket has no value of it.
 */
export function bandColumns(buckets: readonly Bucket[], series: readonly Series[]): BandColumns {
  const pick = (b: Bucket, s: Series, fn: (typeof FNS)[number]) => {
    const v = (s.kind === 'input' ? b.inputs : b.outputs)?.[String(s.id)]?.[fn];
    return typeof v === 'number' ? v : null;
  };
  return {
    xs: buckets.map((b) => Date.parse(b.datetime) / 1000),
    avg: series.map((s) => buckets.map((b) => pick(b, s, 'avg'))),
    min: series.map((s) => buckets.map((b) => pick(b, s, 'min'))),
    max: series.map((s) => buckets.map((b) => pick(b, s, 'max'))),
    count: series.map((s) => buckets.map((b) => pick(b, s, 'count'))),
  };
}

/** seriesReadings is how many readings of the buckets have a value of each series. */
export function seriesReadings(b: BandColumns): number[] {
  return b.count.map((col) => col.reduce<number>((n, c) => n + (c ?? 0), 0));
}

/** describeInterval spells the bucket width of X-Readings-Interval: "2h" is "2 hours". */
export function describeInterval(interval: string): string {
  const m = /^(\d+)([mhd])$/.exec(interval);
  if (!m) return interval;
  const n = Number(m[1]);
  const unit = { m: 'minute', h: 'hour', d: 'day' }[m[2] as 'm' | 'h' | 'd'];
  return `${n} ${unit}${n === 1 ? '' : 's'}`;
}
