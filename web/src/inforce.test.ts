import { describe, expect, it } from 'vitest';
import type { Sensor } from './api';
import { inForce } from './inforce';

const sensor = (calibrations: Sensor['calibrations'], constants: Sensor['constants'] = { G: 0.12 }): Sensor => ({
  id: 1,
  project_id: 1,
  name: 'PZ-01',
  description: '',
  created_at: '2026-01-01T00:00:00Z',
  updated_at: '2026-01-01T00:00:00Z',
  inputs: [],
  outputs: [],
  constants,
  constant_definitions: [],
  calibrations,
  formulas_version: 1,
});

describe('inForce', () => {
  const now = new Date('2026-11-23T12:00:00Z');
  const cases: [string, Sensor, ReturnType<typeof inForce>][] = [
    ['the undated value without calibrations', sensor({}), { value: 0.12 }],
    ['a calibration dated yesterday', sensor({ G: [{ from: '2026-11-22T00:00:00Z', value: 0.125 }] }), { value: 0.125, since: '2026-11-22T00:00:00Z' }],
    ['the latest of those past', sensor({ G: [{ from: '2026-01-01T00:00:00Z', value: 0.11 }, { from: '2026-06-01T00:00:00+02:00', value: 0.13 }] }), { value: 0.13, since: '2026-06-01T00:00:00+02:00' }],
    ['not one dated tomorrow', sensor({ G: [{ from: '2026-11-24T00:00:00Z', value: 0.2 }] }), { value: 0.12 }],
    ['a calibration exactly now', sensor({ G: [{ from: '2026-11-23T12:00:00Z', value: 0.3 }] }), { value: 0.3, since: '2026-11-23T12:00:00Z' }],
    ['nothing without a value or calibration', sensor({}, {}), undefined],
  ];
  for (const [name, s, want] of cases) {
    it(name, () => expect(inForce(s, 'G', now)).toEqual(want));
  }
});
