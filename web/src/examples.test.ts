import { describe, expect, it } from 'vitest';
import type { Sensor } from './api';
import { postExample } from './examples';

const sensor: Sensor = {
  id: 13,
  project_id: 2,
  name: 'PZ-01',
  description: '',
  created_at: '2024-05-01T00:00:00.000Z',
  updated_at: '2024-05-01T00:00:00.000Z',
  inputs: [
    { id: 105, key: 'freq', name: 'Frequency', unit: 'Hz' },
    { id: 106, key: 'temp', name: 'Temperature', unit: 'degC' },
  ],
  outputs: [],
  constants: {},
  constant_definitions: [],
  calibrations: {},
  formulas_version: 1,
};

describe('postExample', () => {
  const ex = postExample('http://127.0.0.1:8080', 1, sensor, new Date('2024-05-01T12:00:00.789Z'));
  it('posts to the sensor’s readings', () => expect(ex.url).toBe('http://127.0.0.1:8080/api/v1/org/1/proj/2/readings/13'));
  it('uses the sensor’s input IDs', () => {
    expect(JSON.parse(ex.json)).toEqual([{ datetime: '2024-05-01T12:00:00Z', inputs: { '105': 0, '106': 0 } }]);
  });
  it('keeps the token a shell variable', () => {
    expect(ex.curl).toContain('Bearer $TOKEN');
    expect(ex.curl).toContain(`-d '[{"datetime":"2024-05-01T12:00:00Z","inputs":{"105":0,"106":0}}]'`);
  });
  it('offers an ID to a sensor without a blueprint', () => {
    const bare = postExample('http://x', 1, { ...sensor, inputs: [] }, new Date(0));
    expect(JSON.parse(bare.json)[0].inputs).toEqual({ '1': 0 });
  });
});
