// Validity checks as the console shows them: a check in words, and which
// field of the check form an API error is about.
import { ApiError, type Schemas } from './api';
import { perText } from './alarms';
import { formatNumber } from './readings';

/**
 * Check is a check as a client writes it and the API answers it: the
 * generated type makes `per` and `flag`, which have defaults, required
 * (openapi-typescript's reading of a default), but a request may leave
 * them out and the API answers `per` for a rate check alone.
 */
export type Check = Omit<Schemas['Check'], 'per' | 'flag'> & Partial<Pick<Schemas['Check'], 'per' | 'flag'>>;
export type CheckKind = Check['kind'];
export type CheckField = 'target' | 'kind' | 'min' | 'max' | 'bound' | 'per' | 'count' | 'flag';

export const CHECK_KINDS: readonly { kind: CheckKind; label: string }[] = [
  { kind: 'range', label: 'plausible range' },
  { kind: 'spike', label: 'spike' },
  { kind: 'rate', label: 'rate of change' },
  { kind: 'stuck', label: 'stuck value' },
];

/** The fields each kind of check reads; the others are not sent. */
export const CHECK_FIELDS: Record<CheckKind, readonly CheckField[]> = {
  range: ['min', 'max'],
  spike: ['bound'],
  rate: ['bound', 'per'],
  stuck: ['count'],
};

/**
 * describeCheck says what a check flags: "outside 0 to 500", "a jump of
 * more than 20 from both neighbours", "a change of more than 5 per day",
 * "the same value 10 times in a row".
 */
export function describeCheck(c: Check): string {
  const n = (v: number | undefined) => formatNumber(v ?? null);
  switch (c.kind) {
    case 'range':
      if (c.min !== undefined && c.max !== undefined) return `outside ${n(c.min)} to ${n(c.max)}`;
      if (c.min !== undefined) return `below ${n(c.min)}`;
      return `above ${n(c.max)}`;
    case 'spike':
      return `a jump of more than ${n(c.bound)} from both neighbours`;
    case 'rate':
      return `a change of more than ${n(c.bound)} per ${perText(c.per ?? 86_400)} from the reading before`;
    case 'stuck':
      return `the same value ${c.count ?? '?'} times in a row`;
  }
}

/**
 * checkErrorField is the field of the check at index (the one the form
 * adds or edits) that err is about, or undefined when it is about another
 * check or names no field. The request validator points at it
 * (/checks/2/bound); the service names the check (details.index) and the
 * field in its message.
 */
export function checkErrorField(err: unknown, index: number): CheckField | undefined {
  if (!(err instanceof ApiError)) return undefined;
  const field = err.details?.['field'];
  if (typeof field === 'string') {
    const m = /^\/checks\/(\d+)\/(\w+)/.exec(field);
    if (m) return Number(m[1]) === index ? (m[2] as CheckField) : undefined;
  }
  if (err.details?.['index'] !== index) return undefined;
  const named = /\b(target|bound|count|per)\b/.exec(err.message);
  if (named) return named[1] as CheckField;
  if (/\brange check\b/.test(err.message)) return 'min';
  if (/\bkind\b/.test(err.message)) return 'kind';
  return undefined;
}
