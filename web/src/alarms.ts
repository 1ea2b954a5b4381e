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

/** describeRule says a rule in words: "above 150, deadband 2, for 3 readings". */
export function describeRule(r: Pick<AlarmRule, 'direction' | 'threshold' | 'deadband' | 'persistence'>): string {
  let s = `${r.direction} ${formatNumber(r.threshold)}`;
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
 * one value and level draw one line.
 */
export function thresholdLines(rules: readonly AlarmRule[], levels: readonly AlarmLevel[], shown: readonly Series[]): Threshold[] {
  const out: Threshold[] = [];
  const seen = new Set<string>();
  for (const r of rules) {
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
