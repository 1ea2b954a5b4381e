// The audit trail as the console shows it: which kinds a project's and an
// organization's trail hold, whom a change is about, and a change said in
// a line.
import type { components } from './gen/api';
import type { Schemas } from './api';

export type AuditEntry = Schemas['AuditEntry'];
export type AuditKind = NonNullable<components['parameters']['AuditKind']>[number];

/**
 * PROJECT_KINDS are the kinds of change a project's trail holds, with what
 * each is about; members, tokens and invitations are the organization's.
 */
export const PROJECT_KINDS: readonly { kind: AuditKind; label: string }[] = [
  { kind: 'formulas', label: 'formulas' },
  { kind: 'constants', label: 'constants' },
  { kind: 'calibrations', label: 'calibrations' },
  { kind: 'baselines', label: 'baselines' },
  { kind: 'links', label: 'links' },
  { kind: 'blueprint', label: 'blueprint' },
  { kind: 'rule', label: 'alarm rules' },
  { kind: 'level', label: 'alarm levels' },
  { kind: 'flag', label: 'flags' },
  { kind: 'checks', label: 'validity checks' },
  { kind: 'overwrite', label: 'overwrites' },
  { kind: 'delete', label: 'range deletes' },
  { kind: 'webhook', label: 'webhooks' },
];

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * ORG_KINDS are the kinds of change an organization's trail holds: its own
 * (who may see what) first, then every project's.
 */
export const ORG_KINDS: readonly { kind: AuditKind; label: string }[] = [
  { kind: 'member', label: 'members' },
  { kind: 'token', label: 'tokens' },
  { kind: 'invitation', label: 'invitations' },
  ...PROJECT_KINDS,
];

/**
 * subjectOf is the user a change of a member, a token or an accepted
 * invitation is about (its user_id, after or before), or undefined.
 */
export function subjectOf(e: Pick<AuditEntry, 'kind' | 'before' | 'after'>): number | undefined {
  if (e.kind !== 'member' && e.kind !== 'token' && e.kind !== 'invitation') return undefined;
  for (const v of [e.after, e.before]) {
    if (isObject(v) && typeof v['user_id'] === 'number') return v['user_id'];
  }
  return undefined;
}

const LONG = 200;

/** compact is a value as one line of JSON, cut at LONG characters. */
export function compact(v: unknown): string {
  const s = v === undefined ? '–' : JSON.stringify(v);
  return s.length > LONG ? `${s.slice(0, LONG - 1)}…` : s;
}

/**
 * changeLines say what an entry changed, a line a field: for two objects
 * each field whose value differs ("version: 1 → 2"), for two lists (a
 * sensor's checks) the items removed and added; else the fields of what
 * was before ("target was …") and of what is after ("reason: …"), or the
 * whole value when it is not an object.
 */
export function changeLines(e: Pick<AuditEntry, 'before' | 'after'>): string[] {
  const { before, after } = e;
  if ((Array.isArray(before) || before === undefined || before === null) && Array.isArray(after)) {
    const was = (before ?? []) as unknown[];
    const had = new Set(was.map((v) => JSON.stringify(v)));
    const has = new Set(after.map((v) => JSON.stringify(v)));
    const lines = [...was.filter((v) => !has.has(JSON.stringify(v))).map((v) => `removed: ${compact(v)}`), ...after.filter((v) => !had.has(JSON.stringify(v))).map((v) => `added: ${compact(v)}`)];
    return lines.length ? lines : ['no item changed'];
  }
  if (isObject(before) && isObject(after)) {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])];
    const changed = keys.filter((k) => JSON.stringify(before[k]) !== JSON.stringify(after[k]));
    if (changed.length === 0) return ['no field changed'];
    return changed.map((k) => `${k}: ${compact(before[k])} → ${compact(after[k])}`);
  }
  // A field without a value (a flag not cleared: cleared_at null) says nothing.
  const fields = (o: Record<string, unknown>) => Object.entries(o).filter(([, v]) => v !== null && v !== undefined);
  const lines: string[] = [];
  if (before !== undefined && before !== null) lines.push(...(isObject(before) ? fields(before).map(([k, v]) => `${k} was ${compact(v)}`) : [`before: ${compact(before)}`]));
  if (after !== undefined && after !== null) lines.push(...(isObject(after) ? fields(after).map(([k, v]) => `${k}: ${compact(v)}`) : [`after: ${compact(after)}`]));
  return lines;
}
