// Where on a form an API error belongs. The request validator names the
// body field in details.field as a JSON pointer (/G/0/from), the store's
// checks by its name (target); the formula checks name it in the message
// (output "pressure": …).

import { ApiError } from './api';
import { errorBox } from './dom';

/** What a form says of a refusal shown next to its field. */
const SEE_FIELD = 'See the message next to the field.';

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
  return new Error(SEE_FIELD);
}

/** Place is where a field's message goes: under it, on a form. */
export interface Place {
  show(err: unknown): void;
  clear(): void;
}

/**
 * placeRefusal runs a form's work after clearing every field's message. A
 * refusal that locate ties to a field with a place is shown there, and the
 * error thrown on says to look there; any other goes on as it came, for
 * the form's own message.
 */
export async function placeRefusal<F>(places: ReadonlyMap<F, Place>, locate: (err: unknown) => F | undefined, work: () => Promise<void>): Promise<void> {
  for (const p of places.values()) p.clear();
  try {
    await work();
  } catch (err) {
    const at = locate(err);
    const place = at === undefined ? undefined : places.get(at);
    if (!place) throw err;
    place.show(err);
    throw new Error(SEE_FIELD);
  }
}
