import { describe, expect, it } from 'vitest';
import type { Sensor } from './api';
import { allValues, filterStatuses, needsAttention, shownValue, summarize, worstFirst, type SensorStatus } from './status';

const alarm = { id: 4, name: 'Alarm', rank: 4, colour: '#eb5757' };
const alert = { id: 2, name: 'Alert', rank: 2, colour: '#f2c94c' };

function st(id: number, name: string, more: Partial<SensorStatus> = {}): SensorStatus {
  return { sensor_id: id, sensor_name: name, project_id: 1, alarms: 0, unacknowledged: 0, overdue: false, ...more };
}

const board = [
  st(1, 'PZ-10'),
  st(2, 'PZ-2', { level: alert, alarms: 1, unacknowledged: 0 }),
  st(3, 'PZ-3', { level: alarm, alarms: 1, unacknowledged: 0 }),
  st(4, 'PZ-4', { level: alert, alarms: 2, unacknowledged: 1 }),
  st(5, 'PZ-5', { overdue: true }),
  st(6, 'PZ-9', { project_id: 2 }),
];

describe('worstFirst', () => {
  it('puts the most severe level first, then unacknowledged, then overdue, then names in natural order', () => {
    expect([...board].sort(worstFirst).map((s) => s.sensor_name)).toEqual(['PZ-3', 'PZ-4', 'PZ-2', 'PZ-5', 'PZ-9', 'PZ-10']);
  });
});

describe('filterStatuses', () => {
  const names = (f: Parameters<typeof filterStatuses>[1]) => filterStatuses(board, f, (id) => (id === 2 ? 'South dam' : 'North dam')).map((s) => s.sensor_name);
  it('shows everything worst first', () => expect(names({ text: '', show: 'all' })).toEqual(['PZ-3', 'PZ-4', 'PZ-2', 'PZ-5', 'PZ-9', 'PZ-10']));
  it('shows what needs someone', () => expect(names({ text: '', show: 'attention' })).toEqual(['PZ-3', 'PZ-4', 'PZ-2', 'PZ-5']));
  it('shows what is at a level', () => expect(names({ text: '', show: 'alarm' })).toEqual(['PZ-3', 'PZ-4', 'PZ-2']));
  it('finds by name, and by project', () => {
    expect(names({ text: 'pz-1', show: 'all' })).toEqual(['PZ-10']);
    expect(names({ text: 'south', show: 'all' })).toEqual(['PZ-9']);
  });
  it('counts an overdue sensor without its alarm yet as needing attention', () => expect(needsAttention(st(9, 'x', { overdue: true }))).toBe(true));
});

describe('summarize', () => {
  it('adds the sensors up by project, with the worst level', () => {
    const got = summarize(board);
    expect(got.get(1)).toEqual({ sensors: 5, inAlarm: 3, alarms: 4, unacknowledged: 1, overdue: 1, worst: alarm });
    expect(got.get(2)).toEqual({ sensors: 1, inAlarm: 0, alarms: 0, unacknowledged: 0, overdue: 0 });
  });
});

const piezometer = {
  inputs: [
    { id: 101, key: 'freq', name: 'Frequency', unit: 'Hz' },
    { id: 102, key: 'temp', name: 'Temperature', unit: 'degC' },
  ],
  outputs: [
    { id: 103, key: 'digits', name: 'Digits', unit: 'digit', formula: 'freq^2 / 1000' },
    { id: 104, key: 'pressure', name: 'Pressure', unit: 'kPa', formula: 'G * (R0 - digits)', decimals: 1 },
  ],
} as unknown as Sensor;

describe('shownValue', () => {
  const reading = { id: '1-1', datetime: '2024-05-01T12:00:00.000Z', inputs: { '101': 2800, '102': 11.3 }, outputs: { '103': 7840, '104': 116.04 } };
  it('is the last output, with its unit and decimals', () => {
    expect(shownValue(st(1, 'PZ', { reading }), piezometer)?.text).toBe('116.0 kPa');
  });
  it('is the first input without outputs', () => {
    const plain = { ...reading, inputs: { '7': 3.25 }, outputs: undefined };
    expect(shownValue(st(1, 'S', { reading: plain }), undefined)?.text).toBe('3.25');
  });
  it('is nothing without a reading', () => expect(shownValue(st(1, 'S'), piezometer)).toBeUndefined());
  it('lists every value for the tooltip', () => {
    expect(allValues(st(1, 'PZ', { reading }), piezometer)).toBe('freq 2800 Hz · temp 11.3 degC · digits 7840 digit · pressure 116.0 kPa');
  });
});
