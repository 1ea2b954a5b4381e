import { describe, expect, it } from 'vitest';
import type { AlarmLevel } from './api';
import { describeRule, levelColour, NO_COLOUR } from './alarms';

const levels: AlarmLevel[] = [
  { id: 2, name: 'Alert', rank: 2, colour: '#f2c94c' },
  { id: 4, name: 'Alarm', rank: 4, colour: '#eb5757' },
];

describe('levelColour', () => {
  it('finds the level', () => expect(levelColour(levels, 4)).toBe('#eb5757'));
  it('greys an unknown level', () => expect(levelColour(levels, undefined)).toBe(NO_COLOUR));
});

describe('describeRule', () => {
  const cases: [Parameters<typeof describeRule>[0], string][] = [
    [{ direction: 'above', threshold: 150, deadband: 0, persistence: 1 }, 'above 150'],
    [{ direction: 'below', threshold: -2.5, deadband: 0.5, persistence: 3 }, 'below -2.5, deadband 0.5, for 3 readings'],
  ];
  for (const [r, want] of cases) it(want, () => expect(describeRule(r)).toBe(want));
});

