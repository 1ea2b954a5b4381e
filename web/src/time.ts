// Time ranges, ages and datetimes as the console shows and sends them.

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** formatAge says how long ago `then` was, as "3 min ago". */
export function formatAge(then: Date | string, now: Date = new Date()): string {
  const t = typeof then === 'string' ? new Date(then) : then;
  const ms = now.getTime() - t.getTime();
  if (Number.isNaN(ms)) return '';
  // A reading a little in the future is clock skew between logger and server.
  if (ms < -MINUTE) return `in ${spell(-ms)}`;
  if (ms < 10 * SECOND) return 'just now';
  return `${spell(ms)} ago`;
}

/** formatDuration says a length of time in its largest unit, rounded down: "2 h", "40 d". */
export function formatDuration(ms: number): string {
  return spell(ms);
}

function spell(ms: number): string {
  if (ms < MINUTE) return `${Math.floor(ms / SECOND)} s`;
  if (ms < HOUR) return `${Math.floor(ms / MINUTE)} min`;
  if (ms < DAY) return `${Math.floor(ms / HOUR)} h`;
  if (ms < 365 * DAY) return `${Math.floor(ms / DAY)} d`;
  return `${Math.floor(ms / (365 * DAY))} y`;
}

export interface Range {
  from: Date; // inclusive
  to: Date; // exclusive
}

export const PRESETS = [
  { id: '24h', label: '24 h to the latest reading', ms: DAY },
  { id: '7d', label: '7 days to the latest reading', ms: 7 * DAY },
  { id: '30d', label: '30 days to the latest reading', ms: 30 * DAY },
  { id: '365d', label: '365 days to the latest reading', ms: 365 * DAY },
] as const;

export type PresetId = (typeof PRESETS)[number]['id'];

/**
 * presetRange is the range of a preset ending at end: the sensor's latest
 * reading, so that a sensor that stopped sending a month ago opens on its
 * last readings rather than on an empty day. Its end is the next whole
 * second, so that a reading of that very second is in it.
 */
export function presetRange(id: PresetId, end: Date = new Date()): Range {
  const preset = PRESETS.find((p) => p.id === id);
  if (!preset) throw new Error(`unknown range preset ${id}`);
  const to = new Date(Math.floor(end.getTime() / SECOND) * SECOND + SECOND);
  return { from: new Date(to.getTime() - preset.ms), to };
}

/**
 * customRange reads two <input type="datetime-local"> values, which are in
 * the browser's time zone. It throws a sentence when they make no range.
 */
export function customRange(from: string, to: string): Range {
  const r = { from: fromLocalInput(from), to: fromLocalInput(to) };
  if (Number.isNaN(r.from.getTime())) throw new Error('write when the range starts as 2024-05-01 12:00');
  if (Number.isNaN(r.to.getTime())) throw new Error('write when the range ends as 2024-05-01 12:00');
  if (r.to <= r.from) throw new Error('the range must end after it starts');
  return r;
}

/**
 * filterBounds reads a filter's two optional datetimes, typed as the
 * console shows them, as ISO instants; what names the things filtered
 * ("events") in the sentence it throws when one cannot be read or the
 * two make no range.
 */
export function filterBounds(from: string, to: string, what: string): { from?: string; to?: string } {
  if (from && to) customRange(from, to); // throws when they make no range
  const bound = (s: string, end: string) => {
    const d = fromLocalInput(s);
    if (Number.isNaN(d.getTime())) throw new Error(`write when the ${what} ${end} as 2024-05-01 12:00, in ${zoneName()}`);
    return d.toISOString();
  };
  return { ...(from ? { from: bound(from, 'start') } : {}), ...(to ? { to: bound(to, 'end') } : {}) };
}

/**
 * fromLocalInput parses "2024-05-01 12:00" (or "2024-05-01T12:00", or with
 * seconds) as local time: the form every datetime of the console has.
 */
export function fromLocalInput(s: string): Date {
  const m = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?$/.exec(s.trim());
  if (!m) return new Date(NaN);
  const [y, mo, d, h, mi, sec, frac] = m.slice(1).map((x) => x ?? '0');
  return new Date(+y!, +mo! - 1, +d!, +h!, +mi!, +sec!, +frac!.padEnd(3, '0'));
}

/** toLocalText is d as a datetime field shows it: "2024-05-01 12:00", local, to the minute. */
export function toLocalText(d: Date): string {
  return toLocalInput(d).replace('T', ' ');
}

/**
 * toExactText is d as a datetime field shows it to the second, and to the
 * millisecond when it has one ("2024-05-01 12:00:05.250"): what
 * fromLocalInput reads back as the same instant.
 */
export function toExactText(d: Date): string {
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  const ms = d.getMilliseconds();
  return `${toLocalText(d)}:${p(d.getSeconds())}${ms ? `.${p(ms, 3)}` : ''}`;
}

/** toLocalInput is the value of a datetime-local input for d, to the minute. */
export function toLocalInput(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

/**
 * formatDateTime shows an API datetime in local time, to the second:
 * 2024-05-01 14:00:00. The chart's axis and legend use the same form, so
 * that a date reads the same everywhere.
 */
export function formatDateTime(when: string | Date | undefined): string {
  if (!when) return '';
  const d = new Date(when);
  if (Number.isNaN(d.getTime())) return String(when);
  return toLocalInput(d).replace('T', ' ') + ':' + String(d.getSeconds()).padStart(2, '0');
}

/**
 * timeAxisLabels are the chart's x tick labels for ticks in seconds, spaced
 * step seconds apart: the date on its own when ticks are days apart, else
 * the time, with the date under it on the first tick and where the day
 * changes. Same local forms as formatDateTime.
 */
export function timeAxisLabels(ticks: readonly number[], step: number): string[] {
  let lastDay = '';
  return ticks.map((t) => {
    const [day = '', time = ''] = formatDateTime(new Date(t * 1000)).split(' ');
    if (step >= DAY / SECOND) return day;
    const shown = step < MINUTE / SECOND ? time : time.slice(0, 5);
    if (day === lastDay) return shown;
    lastDay = day;
    return `${shown}\n${day}`;
  });
}

/**
 * zoneName names the browser's time zone, in which the console shows
 * datetimes: "Europe/Berlin". Not its UTC offset, which changes with summer
 * time and would be wrong beside datetimes of the other season.
 */
export function zoneName(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}
