// Alarm rules and levels as the console shows them: a rule in words and a
// level's colour.
import type { AlarmLevel, AlarmRule } from './api';
import { formatNumber } from './readings';

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
