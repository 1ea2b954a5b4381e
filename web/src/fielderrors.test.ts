import { describe, expect, it } from 'vitest';
import { ApiError } from './api';
import { errorPath, placeRefusal, type Place } from './fielderrors';

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

describe('placeRefusal', () => {
  // places records what each field's place was told.
  function places(...names: string[]) {
    const said = new Map<string, string[]>(names.map((n) => [n, ['old message']]));
    const map = new Map<string, Place>(
      names.map((n) => [
        n,
        {
          show: (err) => said.get(n)!.push(err instanceof Error ? err.message : String(err)),
          clear: () => said.set(n, []),
        },
      ]),
    );
    return { map, said: () => Object.fromEntries(said) };
  }
  const refusal = new ApiError(400, 'invalid', 'deadband must not be negative', { field: 'deadband' });
  const locate = (err: unknown) => errorPath(err)[0];

  it('clears every message and runs the work', async () => {
    const p = places('threshold', 'deadband');
    let ran = false;
    await placeRefusal(p.map, locate, async () => void (ran = true));
    expect(ran).toBe(true);
    expect(p.said()).toEqual({ threshold: [], deadband: [] });
  });

  it('shows a refusal next to the field it names, and says to look there', async () => {
    const p = places('threshold', 'deadband');
    await expect(placeRefusal(p.map, locate, () => Promise.reject(refusal))).rejects.toThrow('See the message next to the field.');
    expect(p.said()).toEqual({ threshold: [], deadband: ['deadband must not be negative'] });
  });

  it('passes on a refusal that names no field, or one the form has no place for', async () => {
    for (const err of [new ApiError(409, 'conflict', 'the rule changed meanwhile'), new ApiError(400, 'invalid', 'bad', { field: 'window' })]) {
      const p = places('threshold', 'deadband');
      await expect(placeRefusal(p.map, locate, () => Promise.reject(err))).rejects.toBe(err);
      expect(p.said()).toEqual({ threshold: [], deadband: [] });
    }
  });
});
