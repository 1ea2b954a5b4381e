import { describe, expect, it } from 'vitest';
import { changeLines, compact, subjectOf } from './audit';

describe('changeLines', () => {
  const cases: [string, { before?: unknown; after?: unknown }, string[]][] = [
    ['the fields that changed', { before: { version: 1, outputs: { pressure: 'G * (R0 - digits)' } }, after: { version: 2, outputs: { pressure: 'G * (R0 - digits) - 100' } } }, ['version: 1 → 2', 'outputs: {"pressure":"G * (R0 - digits)"} → {"pressure":"G * (R0 - digits) - 100"}']],
    ['a creation', { after: { flag: 'rejected', reason: 'spike' } }, ['flag: "rejected"', 'reason: "spike"']],
    ['a creation, its empty fields left out', { before: null, after: { flag: 'suspect', cleared_at: null } }, ['flag: "suspect"']],
    ['a deletion', { before: { target: 'pressure' } }, ['target was "pressure"']],
    ['a field added', { before: { a: 1 }, after: { a: 1, b: 2 } }, ['b: – → 2']],
    ['lists: the items removed and added', { before: [{ max: 500 }, { bound: 100 }], after: [{ max: 400 }, { bound: 100 }] }, ['removed: {"max":500}', 'added: {"max":400}']],
    ['a first list', { before: null, after: [{ max: 500 }] }, ['added: {"max":500}']],
    ['the same list', { before: [1], after: [1] }, ['no item changed']],
    ['a list before, an object after (a flag cleared)', { before: [{ id: 3 }], after: { reason: 'Reviewed', cleared: 1 } }, ['before: [{"id":3}]', 'reason: "Reviewed"', 'cleared: 1']],
    ['nothing', {}, []],
    ['the same', { before: { a: 1 }, after: { a: 1 } }, ['no field changed']],
  ];
  for (const [name, e, want] of cases) it(name, () => expect(changeLines(e)).toEqual(want));
});

describe('compact', () => {
  it('cuts a long value', () => {
    const s = compact({ text: 'x'.repeat(300) });
    expect(s).toHaveLength(200);
    expect(s.endsWith('…')).toBe(true);
  });
});

describe('subjectOf', () => {
  const cases: [string, Parameters<typeof subjectOf>[0], number | undefined][] = [
    ['a role changed', { kind: 'member', before: { user_id: 2, role: 'viewer' }, after: { user_id: 2, role: 'editor' } }, 2],
    ['a member removed', { kind: 'member', before: { user_id: 3, role: 'admin' } }, 3],
    ['a token', { kind: 'token', after: { id: 9, user_id: 4, name: 'logger 7', prefix: 'rdg_ab' } }, 4],
    ['an invitation accepted', { kind: 'invitation', after: { id: 1, user_id: 5, role: 'editor' } }, 5],
    ['an invitation revoked: nobody yet', { kind: 'invitation', before: { id: 1 } }, undefined],
    ['a project’s change', { kind: 'flag', after: { user_id: 2 } }, undefined],
  ];
  for (const [name, e, want] of cases) it(name, () => expect(subjectOf(e)).toBe(want));
});
