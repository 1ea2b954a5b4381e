import { describe, expect, it } from 'vitest';
import type { Reading } from './api';
import { countFlags, dependencies, flaggedColumns, flagOf, selectedReadings } from './flags';
import type { Series } from './readings';

// The piezometer: digits from freq, pressure from digits and a baseline; temp alone.
const sensor = {
  inputs: [
    { id: 1, key: 'freq', name: 'Frequency', unit: 'Hz' },
    { id: 2, key: 'temp', name: 'Temperature', unit: 'degC' },
  ],
  outputs: [
    { id: 11, key: 'digits', name: 'Digits', unit: 'digit', formula: 'freq^2 / 1000' },
    { id: 12, key: 'pressure', name: 'Pressure', unit: 'kPa', formula: 'G * (R0 - digits) + 0 * freq0' },
    { id: 13, key: 'corrected', name: 'Corrected', unit: 'kPa', formula: 'pressure + 0.1 * temp' },
  ],
} as Parameters<typeof dependencies>[0];

const freq: Series = { kind: 'input', id: 1, key: 'freq', label: 'Frequency', unit: 'Hz' };
const temp: Series = { kind: 'input', id: 2, key: 'temp', label: 'Temperature', unit: 'degC' };
const pressure: Series = { kind: 'output', id: 12, key: 'pressure', label: 'Pressure', unit: 'kPa' };
const corrected: Series = { kind: 'output', id: 13, key: 'corrected', label: 'Corrected', unit: 'kPa' };

describe('dependencies', () => {
  it('follows the outputs a formula names to the inputs, and not a baseline', () => {
    const deps = dependencies(sensor);
    expect([...deps.get(11)!]).toEqual([1]);
    expect([...deps.get(12)!]).toEqual([1]);
    expect([...deps.get(13)!].sort()).toEqual([1, 2]);
  });
});

describe('flagOf', () => {
  const deps = dependencies(sensor);
  const cases: [string, Reading['flags'], Series, string | undefined][] = [
    ['an unflagged value', undefined, freq, undefined],
    ['an input’s own flag', { '1': 'suspect' }, freq, 'suspect'],
    ['another input’s flag', { '2': 'suspect' }, freq, undefined],
    ['the whole reading’s flag', { '*': 'suspect' }, temp, 'suspect'],
    ['rejected over suspect', { '*': 'suspect', '1': 'rejected' }, freq, 'rejected'],
    ['an output of a flagged input', { '1': 'suspect' }, pressure, 'suspect'],
    ['an output that does not read the flagged input', { '2': 'rejected' }, pressure, undefined],
    ['an output through another output', { '2': 'suspect', '1': 'rejected' }, corrected, 'rejected'],
  ];
  for (const [name, flags, s, want] of cases) it(name, () => expect(flagOf({ flags }, s, deps)).toBe(want));
});

describe('flaggedColumns', () => {
  const deps = dependencies(sensor);
  const at = (m: number) => `2024-05-01T12:0${m}:00.000Z`;
  const readings: Reading[] = [
    { id: 'a', datetime: at(0), inputs: { '1': 2800, '2': 10 }, outputs: { '12': 116 } },
    { id: 'b', datetime: at(1), inputs: { '1': 2801, '2': 10 }, outputs: { '12': 115 }, flags: { '1': 'suspect' } },
    { id: 'c', datetime: at(2), inputs: { '1': 9999, '2': 10 }, outputs: { '12': -9000 }, flags: { '1': 'rejected' } },
    { id: 'd', datetime: at(3), inputs: { '2': 11 }, flags: { '*': 'rejected' } },
  ];
  const c = flaggedColumns(readings, [freq, temp, pressure], deps);
  it('keeps a suspect value on the line and marks it', () => {
    expect(c.ys[0]).toEqual([2800, 2801, null, null]);
    expect(c.suspect[0]).toEqual([null, 2801, null, null]);
    expect(c.suspect[2]).toEqual([null, 115, null, null]);
  });
  it('takes a rejected value off the line, to be drawn apart', () => {
    expect(c.rejected[0]).toEqual([null, null, 9999, null]);
    expect(c.rejected[2]).toEqual([null, null, -9000, null]);
    expect(c.ys[2]).toEqual([116, 115, null, null]);
  });
  it('rejects every value of a reading rejected whole', () => {
    expect(c.ys[1]).toEqual([10, 10, 10, null]);
    expect(c.rejected[1]).toEqual([null, null, null, 11]);
  });
  it('counts the marks', () => expect(countFlags(c)).toEqual({ suspect: 2, rejected: 3 }));
  it('puts x in seconds', () => expect(c.xs[1]).toBe(Date.parse(at(1)) / 1000));
});

describe('selectedReadings', () => {
  const readings = ['2024-05-01T12:00:00.000Z', '2024-05-01T12:01:00.250Z', '2024-05-01T12:02:00.500Z', '2024-05-01T12:03:00.000Z'].map((datetime) => ({ datetime }));
  const s = (iso: string) => Date.parse(iso) / 1000;
  it('names the first and last reading inside the span, to the millisecond', () => {
    expect(selectedReadings(readings, s('2024-05-01T12:00:30Z'), s('2024-05-01T12:02:30Z'))).toEqual({ first: '2024-05-01T12:01:00.250Z', last: '2024-05-01T12:02:00.500Z', count: 2 });
  });
  it('is undefined for a span without readings', () => {
    expect(selectedReadings(readings, s('2024-05-01T12:00:10Z'), s('2024-05-01T12:00:50Z'))).toBeUndefined();
  });
});
