// The form that adds an item to one of a sensor's lists (its alarm rules,
// its validity checks) and edits one in place, with the API's refusal next
// to the field it is about.
import { action, errorBox, field, h, type Child } from './dom';
import { placeRefusal, type Place } from './fielderrors';

/** FieldOf lays out a field with the place of its messages under it. */
export type FieldOf<F extends string> = (name: F, label: string, input: HTMLElement, hint?: string) => HTMLElement;

export interface EditorOptions<F extends string, E> {
  /** label is the form's accessible name: "Alarm rule". */
  label: string;
  /** noun names the item in the title and the button: "New rule", "Add rule", "Save rule". */
  noun: string;
  /** errorId is the prefix of each field's message's test id: "error-" gives "error-threshold". */
  errorId: string;
  /** fields lays out the form's fields, each one that the API may name through field. */
  fields: (field: FieldOf<F>) => Child;
  /** save sends the form: a new item, or in place of editing. */
  save: (editing: E | undefined) => Promise<void>;
  /** locate is the field a refusal is about (of the item added or edited), or undefined. */
  locate: (err: unknown, editing: E | undefined) => F | undefined;
  /** reset sets what the form shows after its inputs are emptied (the fields a kind reads). */
  reset?: () => void;
  /** saved is called after a save went through. */
  saved: () => void;
}

export interface Editor<F extends string, E> {
  el: HTMLFormElement;
  /** wrapper is a field laid out by fields, with its message: to hide what a kind does not read. */
  wrapper(name: F): HTMLElement;
  /** edit turns the form to replacing item, under title; the caller fills the inputs. */
  edit(item: E, title: string): void;
}

/**
 * editor is a form that adds an item or, after edit, saves one in place,
 * Cancel taking it back to adding. A save's refusal shows next to the
 * field it names, or under the form when it names none.
 */
export function editor<F extends string, E>(opts: EditorOptions<F, E>): Editor<F, E> {
  const places = new Map<F, Place>();
  const wrappers = new Map<F, HTMLElement>();
  const fieldOf: FieldOf<F> = (name, label, input, hint) => {
    const slot = h('div', { class: 'field-error', 'data-testid': `${opts.errorId}${name}` });
    places.set(name, { show: (err) => slot.replaceChildren(errorBox(err)), clear: () => slot.replaceChildren() });
    const el = h('div', null, field(label, input, hint), slot);
    wrappers.set(name, el);
    return el;
  };
  const title = h('h3', null, `New ${opts.noun}`);
  const button = h('button', { type: 'submit' }, `Add ${opts.noun}`);
  const cancel = h('button', { type: 'button', class: 'link', hidden: true }, 'Cancel');
  const out = h('div');
  const el = h('form', { class: 'card', 'aria-label': opts.label }, title, h('div', { class: 'inline' }, opts.fields(fieldOf)), h('div', { class: 'actions' }, button, cancel), out);
  let editing: E | undefined;
  const reset = () => {
    editing = undefined;
    el.reset();
    opts.reset?.();
    title.textContent = `New ${opts.noun}`;
    button.textContent = `Add ${opts.noun}`;
    cancel.hidden = true;
  };
  cancel.addEventListener('click', reset);
  el.addEventListener('submit', (e) => {
    e.preventDefault();
    const item = editing;
    void action(button, out, async () => {
      await placeRefusal(places, (err) => opts.locate(err, item), () => opts.save(item));
      reset();
      opts.saved();
    });
  });
  return {
    el,
    wrapper: (name) => wrappers.get(name)!,
    edit(item, text) {
      editing = item;
      title.textContent = text;
      button.textContent = `Save ${opts.noun}`;
      cancel.hidden = false;
      el.scrollIntoView({ block: 'nearest' });
    },
  };
}
