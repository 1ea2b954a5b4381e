import { describe, expect, it } from 'vitest';
import { contrast, distance, SERIES_COLOURS, seriesPalette, textOn, tint } from './colours';

// The levels every project starts with (migrations/00010_alarms.sql).
const DEFAULT_LEVELS = ['#8c8c8c', '#f2c94c', '#f2994a', '#eb5757'];

describe('seriesPalette', () => {
  it('keeps every series colour away from the default levels', () => {
    const palette = seriesPalette(DEFAULT_LEVELS);
    expect(palette).toEqual([...SERIES_COLOURS]);
    for (const c of palette) for (const l of DEFAULT_LEVELS) expect(distance(c, l), `${c} near ${l}`).toBeGreaterThanOrEqual(60);
  });
  it('drops a colour a project gave one of its levels', () => {
    const palette = seriesPalette([...DEFAULT_LEVELS, '#9b51e0']); // a purple level
    expect(palette).not.toContain('#9467bd');
    expect(palette.length).toBe(SERIES_COLOURS.length - 1);
  });
  it('keeps four colours whatever the levels', () => {
    expect(seriesPalette([...SERIES_COLOURS])).toHaveLength(4);
  });
});

describe('textOn', () => {
  const cases: [string, string][] = [
    ['#f2c94c', '#111111'], // Alert's yellow takes dark text
    ['#eb5757', '#111111'],
    ['#8c8c8c', '#111111'],
    ['#0b3c5d', '#ffffff'],
  ];
  for (const [bg, want] of cases) {
    it(`${bg} → ${want}, readable (WCAG AA)`, () => {
      expect(textOn(bg)).toBe(want);
      expect(contrast(textOn(bg), bg)).toBeGreaterThanOrEqual(4.5);
    });
  }
});

describe('tint', () => {
  it('mixes a colour into white', () => expect(tint('#eb5757', 0.16)).toBe('#fce4e4'));
  it('keeps the page’s text readable on it', () => {
    for (const l of DEFAULT_LEVELS) expect(contrast('#1d2430', tint(l))).toBeGreaterThanOrEqual(7);
  });
});
