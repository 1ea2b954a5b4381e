import { describe, expect, it } from 'vitest';
import type { Bucket } from './api';
import { bandColumns, chooseSource, describeInterval, maxPoints, RAW_LIMIT, seriesReadings, totalReadings } from './aggregates';
import type { Series } from './readings';

describe('chooseSource', () => {
  const cases: [number, 'raw' | 'aggregates'][] = [
    [0, 'raw'],
    [250, 'raw'],
    [RAW_LIMIT, 'raw'],
    [RAW_LIMIT + 1, 'aggregates'],
    [525_600, 'aggregates'],
  ];
  for (const [n, want] of cases) it(`${n} readings: ${want}`, () => expect(chooseSource(n)).toBe(want));
});

describe('maxPoints', () => {
  it('is the chart’s width', () => expect(maxPoints(1200.4, 4)).toBe(1200));
  it('stays within the endpoint’s values for many series', () => {
    const n = maxPoints(1200, 200);
    expect(n).toBe(249);
    expect(n * 4 * 200).toBeLessThanOrEqual(200_000);
  });
  it('counts a sensor without a blueprint as 20 series', () => expect(maxPoints(5000, 0)).toBe(2499));
  it('asks at least 2', () => expect(maxPoints(0, 4)).toBe(2));
});

const freq: Series = { kind: 'input', id: 1, key: 'freq', label: 'Frequency', unit: 'Hz' };
const pressure: Series = { kind: 'output', id: 11, key: 'pressure', label: 'Pressure', unit: 'kPa' };
const buckets: Bucket[] = [
  { datetime: '2024-05-01T00:00:00.000Z', count: 60, inputs: { '1': { avg: 2800, min: 2790, max: 2810, count: 60 } }, outputs: { '11': { avg: 140, min: 120, max: null, count: 6 } } },
  { datetime: '2024-05-01T01:00:00.000Z', count: 30, inputs: { '1': { avg: 2801, min: 2795, max: 2805, count: 30 } } },
];

describe('bandColumns', () => {
  it('gives each series its average, minimum and maximum per bucket', () => {
    expect(bandColumns(buckets, [freq, pressure])).toEqual({
      xs: [1714521600, 1714525200],
      avg: [
        [2800, 2801],
        [140, null],
      ],
      min: [
        [2790, 2795],
        [120, null],
      ],
      max: [
        [2810, 2805],
        [null, null],
      ],
      count: [
        [60, 30],
        [6, null],
      ],
    });
  });
  it('counts the readings', () => expect(totalReadings(buckets)).toBe(90));
  it('counts each series’ own readings: a sparse one has fewer', () => expect(seriesReadings(bandColumns(buckets, [freq, pressure]))).toEqual([90, 6]));
});

describe('describeInterval', () => {
  const cases: [string, string][] = [
    ['1m', '1 minute'],
    ['2h', '2 hours'],
    ['1d', '1 day'],
    ['14d', '14 days'],
    ['odd', 'odd'],
  ];
  for (const [i, want] of cases) it(i, () => expect(describeInterval(i)).toBe(want));
});
