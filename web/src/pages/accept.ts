// Accept an invitation: the one-time code (from the link's ?code= or
// pasted) makes a new user a member and signs this tab in with their first
// token. An invitation to an email that has an account is that account's to
// accept, signed in: with this tab's session, or with a token given here.
import { action, field, h } from '../dom';
import { tokenField } from './signin';

export interface AcceptOptions {
  code: string;
  signedIn: boolean;
  /** accept as a new user, who is signed in with their first token */
  accept(code: string, name: string): Promise<void>;
  /** accept as the user of token, or of this tab's session when token is empty */
  acceptAs(code: string, token: string): Promise<void>;
}

const CODE = /^inv_[0-9A-Za-z]{43}$/;

export function acceptPage(opts: AcceptOptions): HTMLElement {
  const code = h('input', { name: 'code', autocomplete: 'off', spellcheck: 'false', required: true, placeholder: 'inv_…', value: opts.code, 'aria-label': 'Invitation code' });
  const checkedCode = (): string => {
    const c = code.value.trim();
    if (!CODE.test(c)) throw new Error('That is not an invitation code: a code is inv_ followed by 43 letters and digits.');
    return c;
  };
  const head = h('div', { class: 'card signin' }, h('h1', null, 'Join an organization'), field('Invitation code', code));

  if (opts.signedIn) {
    const out = h('div', { 'aria-live': 'polite' });
    const button = h('button', { type: 'submit' }, 'Accept');
    const form = h(
      'form',
      { class: 'card signin', 'aria-label': 'Accept invitation' },
      h('p', null, 'You are signed in: accepting adds the organization to your account, and your tokens reach it from then on. The invitation must be addressed to your email.'),
      button,
      out,
    );
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      void action(button, out, async () => opts.acceptAs(checkedCode(), ''));
    });
    queueMicrotask(() => (opts.code ? button : code).focus());
    return h('main', { class: 'narrow' }, head, form);
  }

  const name = h('input', { name: 'name', maxlength: 200, placeholder: 'Grace Hopper', 'aria-label': 'Your name' });
  const newOut = h('div', { 'aria-live': 'polite' });
  const newButton = h('button', { type: 'submit' }, 'Accept and sign in');
  const newForm = h(
    'form',
    { class: 'card signin', 'aria-label': 'Accept invitation' },
    h('h2', null, 'New here'),
    h('p', null, 'Accepting makes you a member and signs you in with your first API token; your profile shows it and makes more.'),
    field('Your name', name),
    newButton,
    newOut,
  );
  newForm.addEventListener('submit', (e) => {
    e.preventDefault();
    void action(newButton, newOut, async () => opts.accept(checkedCode(), name.value.trim()));
  });

  const token = tokenField();
  const userOut = h('div', { 'aria-live': 'polite' });
  const userButton = h('button', { type: 'submit' }, 'Sign in and accept');
  const userForm = h(
    'form',
    { class: 'card signin', 'aria-label': 'Accept with your account' },
    h('h2', null, 'Already have an account'),
    h('p', null, 'An invitation to an email that has an account is accepted by that account: sign in with one of its API tokens. No new token is made.'),
    token.field,
    userButton,
    userOut,
  );
  userForm.addEventListener('submit', (e) => {
    e.preventDefault();
    void action(userButton, userOut, async () => opts.acceptAs(checkedCode(), token.read()));
  });
  queueMicrotask(() => (opts.code ? name : code).focus());
  return h('main', { class: 'narrow' }, head, newForm, userForm);
}
