// Alarm rules and levels as the console shows them: a rule in words, a
// level's colour, and the threshold lines the chart draws.
import type { AlarmLevel, AlarmRule } from './api';
import { formatNumber, type Series } from './readings';

/** NO_COLOUR is for a level the console does not know (deleted since). */
export const NO_COLOUR = '#7f7f7f';

/** levelColour is the colour of the level with that id. */
export function levelColour(levels: readonly AlarmLevel[], id: number | undefined): string {
  return levels.find((l) => l.id === id)?.colour ?? NO_COLOUR;
}

/**
 * spanText says a number of seconds exactly, in the largest unit that
 * divides it: "1 d", "90 min", "45 s".
 */
export function spanText(seconds: number): string {
  for (const [unit, n] of [['d', 86_400], ['h', 3_600], ['min', 60]] as const) if (seconds % n === 0) return `${seconds / n} ${unit}`;
  return `${seconds} s`;
}

/** perText names a rate's unit of time: "day", "hour", else "6 h". */
export function perText(seconds: number): string {
  const names: Record<number, string> = { 60: 'minute', 3_600: 'hour', 86_400: 'day', 604_800: 'week' };
  return names[seconds] ?? spanText(seconds);
}

/** isRateRule tells a rule on the target's rate of change from one on its value. */
export function isRateRule(r: Pick<AlarmRule, 'window'>): boolean {
  return r.window !== undefined && r.window !== null;
}

/**
 * describeRule says a rule in words: "above 150, deadband 2, for 3
 * readings", or for a rate rule "rate above 5 per day over 1 d".
 */
export function describeRule(r: Pick<AlarmRule, 'direction' | 'threshold' | 'deadband' | 'persistence' | 'window' | 'per'>): string {
  let s = isRateRule(r) ? `rate ${r.direction} ${formatNumber(r.threshold)} per ${perText(r.per ?? 86_400)} over ${spanText(r.window!)}` : `${r.direction} ${formatNumber(r.threshold)}`;
  if (r.deadband > 0) s += `, deadband ${formatNumber(r.deadband)}`;
  if (r.persistence > 1) s += `, for ${r.persistence} readings`;
  return s;
}

/** A threshold line of the chart: a rule's threshold on the axis of its target's unit. */
export interface Threshold {
  /** The chart's scale: the target's unit (chart.ts scaleOf). */
  scale: string;
  value: number;
  colour: string;
  /** "Alert > 110"; a phone's narrow chart names the level alone. */
  label: string;
  level: string;
}

/**
 * thresholdLines are the lines of the rules whose target is one of the shown
 * series, each on that series' axis, in its level's colour. Two rules at
 * one value and level draw one line. A rate rule's threshold is a rate,
 * not a value of the axis: it draws none.
 */
export function thresholdLines(rules: readonly AlarmRule[], levels: readonly AlarmLevel[], shown: readonly Series[]): Threshold[] {
  const out: Threshold[] = [];
  const seen = new Set<string>();
  for (const r of rules) {
    if (isRateRule(r)) continue;
    const s = shown.find((x) => x.key === r.target);
    if (!s) continue;
    const scale = s.unit || 'value';
    const id = `${scale}|${r.threshold}|${r.level_id}`;
    if (seen.has(id)) continue;
    seen.add(id);
    out.push({ scale, value: r.threshold, colour: levelColour(levels, r.level_id), label: `${r.level} ${r.direction === 'above' ? '>' : '<'} ${formatNumber(r.threshold, s.decimals)}`, level: r.level });
  }
  return out;
}

/**
 * reach is the span an axis must show: its data's (min to max, null when
 * it has none) and its thresholds', so that a threshold far from the values
 * is still drawn, with the distance to it. Null when there is nothing.
 */
export function reach(min: number | null, max: number | null, thresholds: readonly number[]): [number, number] | null {
  const all = [min, max, ...thresholds].filter((v): v is number => v !== null && Number.isFinite(v));
  if (all.length === 0) return null;
  return [Math.min(...all), Math.max(...all)];
}
