// Accept an invitation: the one-time code (from the link's ?code= or
// pasted) is exchanged for membership and a first token, which signs this
// tab in. The page needs no token, as the invitee has none yet.
import { action, field, h } from '../dom';

export interface AcceptOptions {
  code: string;
  accept(code: string, name: string): Promise<void>;
}

const CODE = /^inv_[0-9A-Za-z]{43}$/;

export function acceptPage(opts: AcceptOptions): HTMLElement {
  const code = h('input', { name: 'code', autocomplete: 'off', spellcheck: 'false', required: true, placeholder: 'inv_…', value: opts.code, 'aria-label': 'Invitation code' });
  const name = h('input', { name: 'name', maxlength: 200, placeholder: 'Grace Hopper', 'aria-label': 'Your name' });
  const out = h('div', { 'aria-live': 'polite' });
  const button = h('button', { type: 'submit' }, 'Accept and sign in');
  const form = h(
    'form',
    { class: 'card signin', 'aria-label': 'Accept invitation' },
    h('h1', null, 'Join an organization'),
    h('p', null, 'You were invited to the readings service. Accepting makes you a member and signs you in with your first API token; your profile shows it and makes more.'),
    field('Invitation code', code),
    field('Your name', name, 'Used if you are new here; otherwise your name stays as it is.'),
    button,
    out,
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const c = code.value.trim();
    void action(button, out, async () => {
      if (!CODE.test(c)) throw new Error('That is not an invitation code: a code is inv_ followed by 43 letters and digits.');
      await opts.accept(c, name.value.trim());
    });
  });
  queueMicrotask(() => (opts.code ? name : code).focus());
  return h('main', { class: 'narrow' }, form);
}
