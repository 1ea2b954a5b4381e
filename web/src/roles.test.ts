import { describe, expect, it } from 'vitest';
import { atLeast, can, roleIn } from './roles';

describe('atLeast', () => {
  it('orders viewer < editor < admin < owner', () => {
    expect(atLeast('owner', 'admin')).toBe(true);
    expect(atLeast('admin', 'admin')).toBe(true);
    expect(atLeast('editor', 'admin')).toBe(false);
    expect(atLeast(undefined, 'viewer')).toBe(false);
  });
});

describe('can follows the spec’s x-required-role', () => {
  const cases: [Parameters<typeof can>[0], Parameters<typeof can>[1], boolean][] = [
    ['viewer', 'listReadings', true],
    ['viewer', 'postReadings', false],
    ['editor', 'postReadings', true],
    ['editor', 'createSensor', false],
    ['admin', 'createSensor', true],
    ['admin', 'updateFormulas', true],
    ['admin', 'projectAction', true],
    ['admin', 'createProject', false],
    ['admin', 'deleteProject', false],
    ['admin', 'listMembers', false],
    ['owner', 'listMembers', true],
    ['owner', 'deleteProject', true],
    [undefined, 'createToken', true], // any signed-in user
    [undefined, 'listProjects', false], // not a member
  ];
  for (const [role, op, want] of cases) {
    it(`${role ?? 'non-member'} ${want ? 'may' : 'may not'} ${op}`, () => expect(can(role, op)).toBe(want));
  }
});

describe('roleIn', () => {
  const me = {
    user: { id: 1, email: 'a@example.com', name: 'A', created_at: '2024-05-01T00:00:00.000Z' },
    token_id: 7,
    memberships: [
      { org_id: 1, org_name: 'One', role: 'owner' as const },
      { org_id: 2, org_name: 'Two', role: 'viewer' as const },
    ],
  };
  it('finds the membership', () => expect(roleIn(me, 2)).toBe('viewer'));
  it('is undefined elsewhere', () => expect(roleIn(me, 3)).toBeUndefined());
  it('is undefined before /me answers', () => expect(roleIn(undefined, 1)).toBeUndefined());
});
