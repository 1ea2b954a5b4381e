// Colours the console gives meaning to: the alarm levels' own, which a
// series must never wear, and the text that stays readable on them.

/**
 * SERIES_COLOURS are cool and dark colours, none of them a red, orange,
 * yellow or grey: the default levels' colours (Maintenance grey, Alert
 * yellow, Action orange, Alarm red), so that a line is never read as an
 * alarm. seriesPalette drops any a project's own levels come near.
 */
export const SERIES_COLOURS = ['#1f77b4', '#2ca02c', '#17becf', '#9467bd', '#0b3c5d', '#6b8e23', '#00897b', '#5c6bc0', '#e377c2', '#7cb342'] as const;

/** NEAR is how close, in RGB distance, two colours read as the same on a chart. */
const NEAR = 60;

function rgb(hex: string): [number, number, number] {
  const m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(hex);
  if (!m) return [0, 0, 0];
  return [parseInt(m[1]!, 16), parseInt(m[2]!, 16), parseInt(m[3]!, 16)];
}

/** distance is the euclidean distance of two colours in RGB. */
export function distance(a: string, b: string): number {
  const [x, y] = [rgb(a), rgb(b)];
  return Math.hypot(x[0] - y[0], x[1] - y[1], x[2] - y[2]);
}

/**
 * seriesPalette is SERIES_COLOURS without those near one of levelColours
 * (a project may give its levels any colour). Should that leave fewer than
 * four, the nearest are kept: a chart needs colours more than it needs
 * them far from a level no rule of it uses.
 */
export function seriesPalette(levelColours: readonly string[]): string[] {
  const far = SERIES_COLOURS.filter((c) => levelColours.every((l) => distance(c, l) >= NEAR));
  if (far.length >= 4) return far;
  const nearest = (c: string) => Math.min(...levelColours.map((l) => distance(c, l)));
  return [...SERIES_COLOURS].sort((a, b) => nearest(b) - nearest(a)).slice(0, 4);
}

/** luminance is WCAG's relative luminance of a colour. */
export function luminance(hex: string): number {
  const [r, g, b] = rgb(hex).map((v) => {
    const c = v / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  }) as [number, number, number];
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

/** contrast is WCAG's contrast ratio of two colours, 1 to 21. */
export function contrast(a: string, b: string): number {
  const [la, lb] = [luminance(a), luminance(b)];
  return (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05);
}

export const DARK_TEXT = '#111111';
export const LIGHT_TEXT = '#ffffff';

/** textOn is the text colour, dark or white, that reads best on background. */
export function textOn(background: string): string {
  return contrast(DARK_TEXT, background) >= contrast(LIGHT_TEXT, background) ? DARK_TEXT : LIGHT_TEXT;
}

/** tint is colour mixed into white, `share` of it (0 to 1): a row's background. */
export function tint(colour: string, share = 0.16): string {
  const mix = rgb(colour).map((v) => Math.round(255 - (255 - v) * share));
  return `#${mix.map((v) => v.toString(16).padStart(2, '0')).join('')}`;
}
