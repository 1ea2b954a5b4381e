import { describe, expect, it } from 'vitest';
import type { AlarmLevel, AlarmRule } from './api';
import { describeRule, levelColour, NO_COLOUR, reach, thresholdLines } from './alarms';
import type { Series } from './readings';

const levels: AlarmLevel[] = [
  { id: 2, name: 'Alert', rank: 2, colour: '#f2c94c' },
  { id: 4, name: 'Alarm', rank: 4, colour: '#eb5757' },
];

function rule(id: number, target: string, level: AlarmLevel, threshold: number, direction: 'above' | 'below' = 'above'): AlarmRule {
  return { id, sensor_id: 1, target, level_id: level.id, level: level.name, rank: level.rank, direction, threshold, deadband: 0, persistence: 1, active: false, created_at: '2024-05-01T00:00:00.000Z' };
}

const pressure: Series = { kind: 'output', id: 11, key: 'pressure', label: 'Pressure', unit: 'kPa' };
const freq: Series = { kind: 'input', id: 1, key: 'freq', label: 'Frequency', unit: 'Hz' };
const bare: Series = { kind: 'input', id: 7, key: '7', label: 'Input 7', unit: '' };

describe('thresholdLines', () => {
  it('puts each rule of a shown series on its unit’s axis, in its level’s colour', () => {
    const rules = [rule(1, 'pressure', levels[0]!, 150), rule(2, 'pressure', levels[1]!, 200), rule(3, 'freq', levels[0]!, 2500, 'below')];
    expect(thresholdLines(rules, levels, [freq, pressure])).toEqual([
      { scale: 'kPa', value: 150, colour: '#f2c94c', label: 'Alert > 150', level: 'Alert' },
      { scale: 'kPa', value: 200, colour: '#eb5757', label: 'Alarm > 200', level: 'Alarm' },
      { scale: 'Hz', value: 2500, colour: '#f2c94c', label: 'Alert < 2500', level: 'Alert' },
    ]);
  });
  it('writes the threshold with its output’s decimals', () => {
    expect(thresholdLines([rule(1, 'pressure', levels[0]!, 150)], levels, [{ ...pressure, decimals: 1 }])[0]!.label).toBe('Alert > 150.0');
  });
  it('draws no line for a rate rule, whose threshold is a rate, not a value', () => {
    expect(thresholdLines([{ ...rule(1, 'pressure', levels[0]!, 5), window: 86_400, per: 86_400 }, rule(2, 'pressure', levels[1]!, 200)], levels, [pressure]).map((t) => t.value)).toEqual([200]);
  });
  it('leaves out the rules of series not shown', () => {
    expect(thresholdLines([rule(1, 'pressure', levels[0]!, 150)], levels, [freq])).toEqual([]);
  });
  it('draws one line for two rules at one value and level', () => {
    const rules = [rule(1, 'pressure', levels[0]!, 150), { ...rule(2, 'pressure', levels[0]!, 150), direction: 'below' as const }];
    expect(thresholdLines(rules, levels, [pressure])).toHaveLength(1);
  });
  it('uses the scale of a series without a unit, and a grey for an unknown level', () => {
    const r = { ...rule(1, '7', levels[0]!, 3), level_id: 99 };
    expect(thresholdLines([r], levels, [bare])).toEqual([{ scale: 'value', value: 3, colour: NO_COLOUR, label: 'Alert > 3', level: 'Alert' }]);
  });
});

describe('levelColour', () => {
  it('finds the level', () => expect(levelColour(levels, 4)).toBe('#eb5757'));
  it('greys an unknown level', () => expect(levelColour(levels, undefined)).toBe(NO_COLOUR));
});

describe('describeRule', () => {
  const cases: [Parameters<typeof describeRule>[0], string][] = [
    [{ direction: 'above', threshold: 150, deadband: 0, persistence: 1 }, 'above 150'],
    [{ direction: 'below', threshold: -2.5, deadband: 0.5, persistence: 3 }, 'below -2.5, deadband 0.5, for 3 readings'],
    [{ direction: 'above', threshold: 5, deadband: 1, persistence: 1, window: 86_400, per: 86_400 }, 'rate above 5 per day over 1 d, deadband 1'],
    [{ direction: 'below', threshold: -0.5, deadband: 0, persistence: 2, window: 5_400, per: 3_600 }, 'rate below -0.5 per hour over 90 min, for 2 readings'],
    [{ direction: 'above', threshold: 1, deadband: 0, persistence: 1, window: 600 }, 'rate above 1 per day over 10 min'],
    [{ direction: 'above', threshold: 1, deadband: 0, persistence: 1, window: 86_400, per: 21_600 }, 'rate above 1 per 6 h over 1 d'],
  ];
  for (const [r, want] of cases) it(want, () => expect(describeRule(r)).toBe(want));
});

describe('reach', () => {
  const cases: [string, number | null, number | null, number[], [number, number] | null][] = [
    ['data alone', 20, 140, [], [20, 140]],
    ['a threshold above the data', 20, 140, [200], [20, 200]],
    ['thresholds on both sides', 20, 140, [-5, 150], [-5, 150]],
    ['a threshold inside', 20, 140, [100], [20, 140]],
    ['no data, a threshold', null, null, [100], [100, 100]],
    ['nothing', null, null, [], null],
  ];
  for (const [name, min, max, t, want] of cases) it(name, () => expect(reach(min, max, t)).toEqual(want));
});
