import { describe, expect, it } from 'vitest';
import { ApiError } from './api';
import { errorPath } from './fielderrors';

describe('errorPath', () => {
  const cases: [string, ApiError | Error, string[]][] = [
    ['validator field', new ApiError(400, 'invalid', 'body field "/G/0/from": bad', { field: '/G/0/from' }), ['G', '0', 'from']],
    ['store field', new ApiError(400, 'invalid', 'target "x" is not one of the sensor\'s inputs or outputs (freq)', { field: 'target' }), ['target']],
    ['escaped pointer', new ApiError(400, 'invalid', 'x', { field: '/a~1b/c~0d' }), ['a/b', 'c~d']],
    ['formula error', new ApiError(400, 'invalid', 'output "pressure": unknown name "G2" (1:1)'), ['outputs', 'pressure']],
    ['unknown constant', new ApiError(400, 'invalid', 'constant "X" is not one of the sensor\'s constants (G, R0)'), ['constants', 'X']],
    ['cycle names no field', new ApiError(400, 'invalid', 'outputs a → b → a form a cycle'), []],
    ['not an API error', new Error('output "x": y'), []],
  ];
  for (const [name, err, want] of cases) {
    it(name, () => expect(errorPath(err)).toEqual(want));
  }
});
