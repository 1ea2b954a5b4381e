// Where on a form an API error belongs. The request validator names the
// body field in details.field as a JSON pointer (/G/0/from), the store's
// checks by its name (target); the formula checks name it in the message
// (output "pressure": …).

import { ApiError } from './api';
import { errorBox } from './dom';

/**
 * errorPath is the path into the request body that err is about, as
 * segments (["outputs", "pressure"], ["G", "0", "from"]), or [] when it
 * names none.
 */
export function errorPath(err: unknown): string[] {
  if (!(err instanceof ApiError)) return [];
  const field = err.details?.['field'];
  if (typeof field === 'string' && field.startsWith('/')) {
    return field
      .slice(1)
      .split('/')
      .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  }
  if (typeof field === 'string' && field !== '') return [field];
  const m = /^(output|constant|input)s? "([^"]+)"/.exec(err.message);
  if (m) return [`${m[1]}s`, m[2]!];
  return [];
}

/**
 * showIn puts err next to its field when there is one, and returns what the
 * form's own message should say: err itself only when no field took it.
 */
export function showIn(slot: HTMLElement | undefined, err: unknown): unknown {
  if (!slot) return err;
  slot.replaceChildren(errorBox(err));
  return new Error('See the message next to the field.');
}
