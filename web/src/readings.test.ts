import { describe, expect, it } from 'vitest';
import type { Reading, Sensor } from './api';
import { alignSeries, breakGaps, quantitiesOf, seriesFor, columns, formatNumber, loadRange, queryFromLink, seriesOf, stats, type Page, type ReadingsQuery } from './readings';

const path = '/api/v1/org/1/proj/1/readings/12';

describe('queryFromLink', () => {
  it('reads the service’s next link into typed parameters', () => {
    const q = queryFromLink(`${path}?datetime__gt=2024-05-01T12%3A10%3A00.000000Z&datetime__lt=2024-05-02T00%3A00%3A00.000Z&limit=1000&outputs=true&order=asc`, path);
    expect(q).toEqual({
      datetime__gt: '2024-05-01T12:10:00.000000Z',
      datetime__lt: '2024-05-02T00:00:00.000Z',
      limit: 1000,
      outputs: true,
      order: 'asc',
    });
  });
  it('keeps the flags and the as_of a next link carries', () => {
    expect(queryFromLink(`${path}?flags=true&as_of=2024-06-01T09%3A00%3A00Z&limit=10`, path)).toEqual({ flags: true, as_of: '2024-06-01T09:00:00Z', limit: 10 });
  });
  it('refuses a link to another sensor', () => {
    expect(() => queryFromLink('/api/v1/org/1/proj/1/readings/13?limit=1', path)).toThrow('not');
  });
  it('refuses a parameter it would drop', () => {
    expect(() => queryFromLink(`${path}?tz=UTC`, path)).toThrow('tz');
  });
});

function reading(datetime: string, inputs: Record<string, number>, outputs?: Record<string, number>): Reading {
  return { id: `12-${Date.parse(datetime)}`, datetime, inputs, outputs };
}

describe('loadRange', () => {
  const range = { from: new Date('2024-05-01T00:00:00Z'), to: new Date('2024-05-02T00:00:00Z') };

  it('follows next links until there is none, reporting progress', async () => {
    const asked: ReadingsQuery[] = [];
    const pages: Page[] = [
      { readings: [reading('2024-05-01T06:00:00.000Z', { '1': 1 })], link: `${path}?datetime__gt=2024-05-01T06%3A00%3A00.000000Z&datetime__lt=2024-05-02T00%3A00%3A00.000Z&limit=1000&outputs=true` },
      { readings: [reading('2024-05-01T12:00:00.000Z', { '1': 2 })], link: `${path}?datetime__gt=2024-05-01T12%3A00%3A00.000000Z&datetime__lt=2024-05-02T00%3A00%3A00.000Z&limit=1000&outputs=true` },
      { readings: [reading('2024-05-01T18:00:00.000Z', { '1': 3 })], link: null },
    ];
    const progress: number[] = [];
    const got = await loadRange({
      range,
      path,
      fetchPage: async (q) => {
        asked.push(q);
        return pages[asked.length - 1]!;
      },
      onProgress: (p) => progress.push(p.fraction),
    });
    expect(got.readings.map((r) => r.inputs['1'])).toEqual([1, 2, 3]);
    expect(got.truncated).toBe(false);
    expect(asked[0]).toEqual({ outputs: true, limit: 1000, datetime__gte: '2024-05-01T00:00:00.000Z', datetime__lt: '2024-05-02T00:00:00.000Z' });
    expect(asked[1]!.datetime__gt).toBe('2024-05-01T06:00:00.000000Z');
    expect(progress).toEqual([0.25, 0.5, 1]);
  });

  it('stops at the cap and says so', async () => {
    const link = `${path}?datetime__gt=2024-05-01T06%3A00%3A00.000000Z&limit=1000`;
    const got = await loadRange({
      range,
      path,
      max: 2,
      fetchPage: async () => ({ readings: [reading('2024-05-01T06:00:00.000Z', { '1': 1 })], link }),
    });
    expect(got).toMatchObject({ truncated: true });
    expect(got.readings).toHaveLength(2);
  });
});

const sensor: Sensor = {
  id: 12,
  project_id: 1,
  name: 'PZ',
  description: '',
  created_at: '',
  updated_at: '',
  inputs: [{ id: 101, key: 'freq', name: 'Frequency', unit: 'Hz' }],
  outputs: [{ id: 103, key: 'digits', name: 'Digits', unit: 'digit', formula: 'freq^2 / 1000' }],
  constants: {},
  constant_definitions: [],
  calibrations: {},
  formulas_version: 1,
};

describe('columns', () => {
  it('makes seconds and one column per series, null where missing', () => {
    const readings = [reading('2024-05-01T00:00:00.500Z', { '101': 2800 }, { '103': 7840 }), reading('2024-05-01T00:01:00.000Z', { '101': 2700 })];
    const [xs, freq, digits] = columns(readings, seriesOf(sensor));
    expect(xs).toEqual([1714521600.5, 1714521660]);
    expect(freq).toEqual([2800, 2700]);
    expect(digits).toEqual([7840, null]);
  });
});

describe('seriesOf', () => {
  it('lists inputs then outputs', () => expect(seriesOf(sensor).map((s) => `${s.kind}:${s.id}`)).toEqual(['input:101', 'output:103']));
  it('finds the inputs of a sensor without a blueprint in its readings', () => {
    const bare = { ...sensor, inputs: [], outputs: [] };
    const got = seriesOf(bare, [reading('2024-05-01T00:00:00.000Z', { '7': 1, '2': 3 }), reading('2024-05-01T00:00:01.000Z', { '2': 4 })]);
    expect(got.map((s) => s.id)).toEqual([2, 7]);
  });
});

describe('stats', () => {
  it('skips nulls', () => expect(stats([null, 3, 1, null, 2, null])).toEqual({ count: 3, min: 1, max: 3, last: 2 }));
  it('is empty for no values', () => expect(stats([null])).toEqual({ count: 0, min: null, max: null, last: null }));
});

describe('formatNumber', () => {
  const cases: [number | null, string][] = [
    [7840, '7840'],
    [139.2, '139.2'],
    [0.1 + 0.2, '0.3'],
    [-784.0000001, '-784'],
    [1e-7, '1.0000e-7'],
    [null, ''],
  ];
  for (const [v, want] of cases) it(`${v} → ${want}`, () => expect(formatNumber(v)).toBe(want));
  it('shows an output’s declared decimals', () => {
    expect(formatNumber(115.159775, 1)).toBe('115.2');
    expect(formatNumber(115, 2)).toBe('115.00');
    expect(formatNumber(7840.4, 0)).toBe('7840');
  });
});

describe('breakGaps', () => {
  it('never breaks a column that follows null, nor adds a row for it', () => {
    // Column 0 has a gap between 120 and 1000 with no row inside: a row is
    // added there, where column 1 (points) has nothing, and column 1's own
    // spacing breaks nothing.
    const xs = [0, 60, 120, 1000, 1060];
    const [gx, line, points] = breakGaps(xs, [[1, 2, 3, 4, 5], [null, 9, null, null, 9]], [0, null]);
    expect(gx).toEqual([0, 60, 120, 560, 1000, 1060]);
    expect(line).toEqual([1, 2, 3, null, 4, 5]);
    expect(points).toEqual([undefined, 9, undefined, undefined, undefined, 9]);
  });
  it('breaks the line where readings are more than GAP_FACTOR median spacings apart', () => {
    // Every 60 s, then nothing for a month, then every 60 s again.
    const xs = [0, 60, 120, 180, 180 + 30 * 86400, 240 + 30 * 86400, 300 + 30 * 86400];
    const ys = [1, 2, 3, 4, 5, 6, 7];
    const [gx, gy] = breakGaps(xs, [ys]);
    expect(gx).toEqual([0, 60, 120, 180, 180 + 15 * 86400, 180 + 30 * 86400, 240 + 30 * 86400, 300 + 30 * 86400]);
    expect(gy).toEqual([1, 2, 3, 4, null, 5, 6, 7]);
  });
  it('keeps uneven spacing within the factor', () => {
    expect(breakGaps([0, 60, 120, 400, 460], [[1, 2, 3, 4, 5]])).toEqual([[0, 60, 120, 400, 460], [1, 2, 3, 4, 5]]);
  });
  it('judges nothing from fewer than three readings', () => {
    expect(breakGaps([0, 1e6], [[1, 2]])).toEqual([[0, 1e6], [1, 2]]);
  });
  it('draws a sparse series across the readings that lack it', () => {
    // Frequency every minute, temperature every 10: temperature is one line
    // (undefined is spanned), not 144 dots between nulls.
    const xs = Array.from({ length: 31 }, (_, i) => i * 60);
    const freq = xs.map((_, i) => 2800 + i);
    const temp = xs.map((_, i) => (i % 10 === 0 ? 11 + i / 10 : null));
    const [gx, gf, gt] = breakGaps(xs, [freq, temp]);
    expect(gx).toEqual(xs);
    expect(gf).toEqual(freq);
    expect(gt!.filter((v) => v === null)).toEqual([]);
    expect(gt!.filter((v) => v !== undefined)).toEqual([11, 12, 13, 14]);
  });
  it('breaks each series at its own silence, not at another’s', () => {
    // Both every minute; b is silent from 10 to 20 min, a is not.
    const xs = Array.from({ length: 31 }, (_, i) => i * 60);
    const a = xs.map((_, i) => i);
    const b = xs.map((_, i) => (i > 10 && i < 20 ? null : i));
    const [gx, ga, gb] = breakGaps(xs, [a, b]);
    expect(gx).toEqual(xs); // a row inside the gap carries the break: none added
    expect(ga).toEqual(a); // a goes on through b's gap
    expect(gb!.flatMap((v, i) => (v === null ? [i] : []))).toEqual([11]);
    expect(gb!.slice(12, 20).every((v) => v === undefined)).toBe(true);
  });
  it('breaks a band where its average breaks', () => {
    const xs = [0, 60, 120, 180, 10000, 10060];
    const avg = [1, 2, 3, 4, 5, 6];
    const [gx, gAvg, gMin] = breakGaps(xs, [avg, avg.map((v) => v - 1)], [0, 0]);
    expect(gx).toHaveLength(7);
    expect(gAvg![4]).toBeNull();
    expect(gMin![4]).toBeNull();
  });
});

describe('alignSeries', () => {
  it('puts the readings of two sensors on one time axis, null where one has none', () => {
    const got = alignSeries([
      { xs: [0, 60, 120], ys: [[1, 2, 3]] },
      { xs: [30, 60], ys: [[7, 8]] },
    ]);
    expect(got).toEqual({ xs: [0, 30, 60, 120], ys: [[1, null, 2, 3], [null, 7, 8, null]] });
  });
});

describe('quantitiesOf', () => {
  const plain = { ...sensor, id: 13, name: 'Logger', inputs: [{ id: 201, key: 'level', name: 'Water level', unit: 'm' }], outputs: [] };
  it('lists each key once, outputs first, then the most common', () => {
    expect(quantitiesOf([sensor, { ...sensor, id: 14 }, plain]).map((q) => `${q.key} (${q.unit})`)).toEqual(['digits (digit)', 'freq (Hz)', 'level (m)']);
  });
});

describe('seriesFor', () => {
  it('is the sensor’s series of the key, named after the sensor', () => {
    expect(seriesFor(sensor, 'digits')).toEqual({ kind: 'output', id: 103, key: 'digits', label: 'PZ', unit: 'digit', decimals: undefined });
  });
  it('is undefined for a key the sensor lacks', () => expect(seriesFor(sensor, 'pressure')).toBeUndefined());
});
