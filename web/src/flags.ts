// Quality flags as the chart and the table show them: which flag each
// value carries, and the chart's columns with flagged values apart.
import type { Reading, Sensor } from './api';
import { valueOf, type Series } from './readings';

export type Flag = 'suspect' | 'rejected';

/**
 * Dependencies are, by output id, the ids of the inputs its formula reads,
 * through the outputs it names too.
 */
export type Dependencies = Map<number, Set<number>>;

const IDENT = /[A-Za-z_][A-Za-z0-9_]*/g;

/**
 * dependencies reads which inputs each output's formula uses, by the names
 * it writes: an input's key, or another output's key (followed). A
 * baseline (`freq0`) or a constant is not an input's value and is not
 * followed. The API flags inputs; an output is as trustworthy as the
 * inputs it is computed from, and no more.
 */
export function dependencies(sensor: Pick<Sensor, 'inputs' | 'outputs'>): Dependencies {
  const inputs = new Map(sensor.inputs.map((i) => [i.key, i.id]));
  const outputs = new Map(sensor.outputs.map((o) => [o.key, o]));
  const out: Dependencies = new Map();
  const visit = (key: string, seen: Set<string>): Set<number> => {
    const o = outputs.get(key)!;
    const known = out.get(o.id);
    if (known) return known;
    const ids = new Set<number>();
    if (seen.has(key)) return ids; // a cycle the API would refuse; stop rather than loop
    seen.add(key);
    for (const [name] of o.formula.matchAll(IDENT)) {
      const input = inputs.get(name);
      if (input !== undefined) ids.add(input);
      else if (outputs.has(name) && name !== key) for (const id of visit(name, seen)) ids.add(id);
    }
    out.set(o.id, ids);
    return ids;
  };
  for (const o of sensor.outputs) visit(o.key, new Set());
  return out;
}

/** worse is the stronger of two flags: rejected before suspect. */
function worse(a: Flag | undefined, b: Flag | undefined): Flag | undefined {
  return a === 'rejected' || b === 'rejected' ? 'rejected' : (a ?? b);
}

/**
 * flagOf is the flag on s's value in r: an input's own or its reading's
 * (`*`), an output's the worst of its reading's and of the inputs its
 * formula reads. Undefined when the value is not flagged.
 */
export function flagOf(r: Pick<Reading, 'flags'>, s: Pick<Series, 'kind' | 'id'>, deps: Dependencies): Flag | undefined {
  const flags = r.flags;
  if (!flags) return undefined;
  let flag: Flag | undefined = flags['*'];
  if (s.kind === 'input') return worse(flag, flags[String(s.id)]);
  for (const id of deps.get(s.id) ?? []) flag = worse(flag, flags[String(id)]);
  return flag;
}

export interface FlaggedColumns {
  xs: number[];
  /** Per series, the values its line joins: null where it has none or the value is rejected. */
  ys: (number | null)[][];
  /** Per series, its suspect values (on the line too), null elsewhere. */
  suspect: (number | null)[][];
  /** Per series, its rejected values, drawn apart from the line; only a read with flags=true has them. */
  rejected: (number | null)[][];
}

/**
 * flaggedColumns are the chart's columns of readings (x in seconds since
 * the epoch, uPlot's unit) with each series' flagged values also apart: a
 * suspect value stays on the line and is marked, a rejected one leaves the
 * line, so that a spike the engineer rejected neither draws nor stretches
 * it, and is drawn alone when shown at all.
 */
export function flaggedColumns(readings: readonly Reading[], series: readonly Series[], deps: Dependencies): FlaggedColumns {
  const n = readings.length;
  const col = () => series.map(() => new Array<number | null>(n).fill(null));
  const out: FlaggedColumns = { xs: new Array<number>(n), ys: col(), suspect: col(), rejected: col() };
  readings.forEach((r, i) => {
    out.xs[i] = Date.parse(r.datetime) / 1000;
    series.forEach((s, j) => {
      const v = valueOf(r, s);
      if (v === null) return;
      const flag = flagOf(r, s, deps);
      if (flag === 'rejected') out.rejected[j]![i] = v;
      else {
        out.ys[j]![i] = v;
        if (flag === 'suspect') out.suspect[j]![i] = v;
      }
    });
  });
  return out;
}

/** FlagCount is how many values of the shown series a flag marks. */
export interface FlagCount {
  suspect: number;
  rejected: number;
}

export function countFlags(c: Pick<FlaggedColumns, 'suspect' | 'rejected'>): FlagCount {
  const count = (cols: (number | null)[][]) => cols.reduce((n, col) => n + col.filter((v) => v !== null).length, 0);
  return { suspect: count(c.suspect), rejected: count(c.rejected) };
}

/**
 * selectedReadings are the first and the last reading whose datetimes fall
 * in [from, to] (seconds since the epoch, as the chart's x), so that a flag
 * set from a selection covers exactly the readings selected; undefined
 * when none does.
 */
export function selectedReadings(readings: readonly Pick<Reading, 'datetime'>[], from: number, to: number): { first: string; last: string; count: number } | undefined {
  let first: string | undefined;
  let last: string | undefined;
  let count = 0;
  for (const r of readings) {
    const x = Date.parse(r.datetime) / 1000;
    if (x < from || x > to) continue;
    if (first === undefined || Date.parse(r.datetime) < Date.parse(first)) first = r.datetime;
    if (last === undefined || Date.parse(r.datetime) > Date.parse(last)) last = r.datetime;
    count++;
  }
  return first === undefined || last === undefined ? undefined : { first, last, count };
}
