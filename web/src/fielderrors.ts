// Where on a form an API error belongs. The request validator names the
// body field in details.field as a JSON pointer (/G/0/from); the formula
// checks name it in the message (output "pressure": …).

import { ApiError } from './api';

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
  const m = /^(output|constant|input)s? "([^"]+)"/.exec(err.message);
  if (m) return [`${m[1]}s`, m[2]!];
  return [];
}
