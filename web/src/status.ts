// The status board's rules: which sensor comes first, which need someone,
// what a project's sensors add up to, and which value a row shows.
import type { AlarmLevel, Schemas, Sensor } from './api';
import { formatNumber, seriesOf, valueOf, type Series } from './readings';

export type SensorStatus = Schemas['SensorStatus'];

/** needsAttention: a level reached, an alarm nobody acknowledged, or silence past its rule. */
export function needsAttention(s: SensorStatus): boolean {
  return s.level !== undefined || s.unacknowledged > 0 || s.overdue;
}

// One collator for every comparison: localeCompare with options makes one a call.
const names = new Intl.Collator('en', { numeric: true });

/**
 * worstFirst orders the board: the most severe level first, then the most
 * unacknowledged alarms, then overdue sensors (whose alarm the background
 * check raises within a minute), then the most alarms, then by name.
 */
export function worstFirst(a: SensorStatus, b: SensorStatus): number {
  return (
    (b.level?.rank ?? 0) - (a.level?.rank ?? 0) ||
    b.unacknowledged - a.unacknowledged ||
    Number(b.overdue) - Number(a.overdue) ||
    b.alarms - a.alarms ||
    names.compare(a.sensor_name, b.sensor_name) ||
    a.sensor_id - b.sensor_id
  );
}

export type Show = 'all' | 'attention' | 'alarm';

export interface BoardFilter {
  /** Words the sensor's name (or its project's) must hold, case aside. */
  text: string;
  show: Show;
}

/** filterStatuses keeps what the filter asks for, worst first. */
export function filterStatuses(list: readonly SensorStatus[], f: BoardFilter, projectName: (id: number) => string = () => ''): SensorStatus[] {
  const words = f.text.toLowerCase().split(/\s+/).filter(Boolean);
  return list
    .filter((s) => (f.show === 'all' ? true : f.show === 'alarm' ? s.level !== undefined : needsAttention(s)))
    .filter((s) => {
      const hay = `${s.sensor_name} ${projectName(s.project_id)}`.toLowerCase();
      return words.every((w) => hay.includes(w));
    })
    .sort(worstFirst);
}

export interface ProjectSummary {
  sensors: number;
  inAlarm: number;
  alarms: number;
  unacknowledged: number;
  overdue: number;
  /** The most severe level among the project's sensors, if any. */
  worst?: AlarmLevel;
}

/** summarize adds a list of statuses up by project. */
export function summarize(list: readonly SensorStatus[]): Map<number, ProjectSummary> {
  const out = new Map<number, ProjectSummary>();
  for (const s of list) {
    const p = out.get(s.project_id) ?? { sensors: 0, inAlarm: 0, alarms: 0, unacknowledged: 0, overdue: 0 };
    p.sensors++;
    p.alarms += s.alarms;
    p.unacknowledged += s.unacknowledged;
    if (s.overdue) p.overdue++;
    if (s.level) {
      p.inAlarm++;
      if (!p.worst || s.level.rank > p.worst.rank) p.worst = s.level;
    }
    out.set(s.project_id, p);
  }
  return out;
}

/** Without the sensor's definition (a token that may not list sensors), its readings name its inputs. */
const NO_BLUEPRINT: Pick<Sensor, 'inputs' | 'outputs'> = { inputs: [], outputs: [] };

/** The value a row of the board shows. */
export interface Shown {
  series: Series;
  text: string;
}

/**
 * shownValue is the value a board shows of a sensor: its last output (a
 * blueprint derives its outputs in order, the engineering quantity last:
 * pressure from digits from frequency), else its first input, with its
 * unit and the output's decimals. Undefined without a reading.
 */
export function shownValue(s: SensorStatus, sensor: Sensor | undefined): Shown | undefined {
  const r = s.reading;
  if (!r) return undefined;
  const all = seriesOf(sensor ?? NO_BLUEPRINT, [r]);
  const candidates = [...all.filter((x) => x.kind === 'output').reverse(), ...all.filter((x) => x.kind === 'input')];
  for (const series of candidates) {
    const v = valueOf(r, series);
    if (v !== null) return { series, text: `${formatNumber(v, series.decimals)}${series.unit ? ` ${series.unit}` : ''}` };
  }
  return undefined;
}

/** allValues says every value of the reading, for a row's tooltip. */
export function allValues(s: SensorStatus, sensor: Sensor | undefined): string {
  const r = s.reading;
  if (!r) return '';
  return seriesOf(sensor ?? NO_BLUEPRINT, [r])
    .map((x) => [x, valueOf(r, x)] as const)
    .filter(([, v]) => v !== null)
    .map(([x, v]) => `${x.key} ${formatNumber(v, x.decimals)}${x.unit ? ` ${x.unit}` : ''}`)
    .join(' · ');
}
