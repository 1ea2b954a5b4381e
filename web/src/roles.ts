// What the signed-in user may do in an organization. The role each
// operation needs comes from the spec (src/gen/roles.ts), so the console
// offers exactly what the API would allow; the API still enforces it.
import type { components } from './gen/api';
import { requiredRole, type OperationId } from './gen/roles';

export type Role = components['schemas']['Role'];
type Me = components['schemas']['Me'];

/** The roles, lowest first; each includes the ones before it. */
export const ROLES: readonly Role[] = ['viewer', 'editor', 'admin', 'owner'];

export function atLeast(have: Role | undefined, need: Role): boolean {
  return have !== undefined && ROLES.indexOf(have) >= ROLES.indexOf(need);
}

/** can tells whether a user with role `have` in the organization may call op. */
export function can(have: Role | undefined, op: OperationId): boolean {
  const need = requiredRole[op];
  if (need === 'public' || need === 'user') return true;
  return atLeast(have, need);
}

/** roleIn is the user's role in an organization, or undefined when not a member. */
export function roleIn(me: Me | undefined, orgId: number): Role | undefined {
  return me?.memberships.find((m) => m.org_id === orgId)?.role;
}
