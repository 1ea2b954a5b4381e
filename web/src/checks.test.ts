import { describe, expect, it } from 'vitest';
import { ApiError } from './api';
import { checkErrorField, describeCheck, type Check } from './checks';

describe('describeCheck', () => {
  const cases: [Check, string][] = [
    [{ target: 'pressure', kind: 'range', min: 0, max: 500 }, 'outside 0 to 500'],
    [{ target: 'pressure', kind: 'range', min: -10 }, 'below -10'],
    [{ target: 'pressure', kind: 'range', max: 500 }, 'above 500'],
    [{ target: 'pressure', kind: 'spike', bound: 20 }, 'a jump of more than 20 from both neighbours'],
    [{ target: 'pressure', kind: 'rate', bound: 5 }, 'a change of more than 5 per day from the reading before'],
    [{ target: 'pressure', kind: 'rate', bound: 0.5, per: 3600 }, 'a change of more than 0.5 per hour from the reading before'],
    [{ target: 'freq', kind: 'stuck', count: 10 }, 'the same value 10 times in a row'],
  ];
  for (const [c, want] of cases) it(want, () => expect(describeCheck(c)).toBe(want));
});

describe('checkErrorField', () => {
  const cases: [string, unknown, number, string | undefined][] = [
    ['the validator’s pointer into the check', new ApiError(400, 'invalid', 'bound: must be >= 0', { field: '/checks/2/bound' }), 2, 'bound'],
    ['a pointer into another check', new ApiError(400, 'invalid', 'bound: must be >= 0', { field: '/checks/0/bound' }), 2, undefined],
    ['the service’s index and the field named', new ApiError(400, 'invalid', 'check 1: a spike check needs bound, a finite number, 0 or more', { index: 1 }), 1, 'bound'],
    ['a range without bounds', new ApiError(400, 'invalid', 'check 0: a range check needs min, max or both, finite, min not above max', { index: 0 }), 0, 'min'],
    ['a target', new ApiError(400, 'invalid', 'check 0: target "x" is not one of the sensor\'s inputs or outputs', { index: 0 }), 0, 'target'],
    ['another check’s index', new ApiError(400, 'invalid', 'check 0: a stuck check needs count, 2 to 1000', { index: 0 }), 3, undefined],
    ['not the API’s error', new Error('network'), 0, undefined],
  ];
  for (const [name, err, index, want] of cases) it(name, () => expect(checkErrorField(err, index)).toBe(want));
});
