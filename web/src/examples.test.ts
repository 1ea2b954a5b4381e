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
  const latest = { id: '13-1', datetime: '2024-05-01T12:00:00.789Z', inputs: { '105': 2801.5, '106': 11.2 } };
  const ex = postExample('http://127.0.0.1:8080', 1, sensor, latest);
  it('posts to the sensor’s readings', () => expect(ex.url).toBe('http://127.0.0.1:8080/api/v1/org/1/proj/2/readings/13'));
  it('is the latest reading again, at its own datetime: posting it changes nothing', () => {
    expect(JSON.parse(ex.json)).toEqual([{ datetime: '2024-05-01T12:00:00.789Z', inputs: { '105': 2801.5, '106': 11.2 } }]);
    expect(ex.note).toContain('changes nothing');
  });
  it('keeps the token a shell variable', () => {
    expect(ex.curl).toContain('Bearer $TOKEN');
    expect(ex.curl).toContain(`-d '[{"datetime":"2024-05-01T12:00:00.789Z","inputs":{"105":2801.5,"106":11.2}}]'`);
  });
  it('names each input with a placeholder the API refuses, without a reading', () => {
    const first = postExample('http://x', 1, sensor);
    expect(JSON.parse(first.json)).toEqual([{ datetime: '<datetime, such as 2024-05-01T12:00:00Z>', inputs: { '105': '<freq in Hz>', '106': '<temp in degC>' } }]);
  });
  it('offers an ID to a sensor without a blueprint', () => {
    const bare = postExample('http://x', 1, { ...sensor, inputs: [] });
    expect(JSON.parse(bare.json)[0].inputs).toEqual({ '1': '<a number>' });
  });
});
