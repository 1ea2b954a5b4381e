// Sign in with an API token. The token is typed or pasted into a password
// field and kept in sessionStorage; the form never submits, so the token
// cannot end up in a URL.
import { action, field, h } from '../dom';
import { looksLikeToken } from '../token';

export interface SigninOptions {
  notice?: string;
  signIn(token: string): Promise<void>;
}

export function signinPage(opts: SigninOptions): HTMLElement {
  const input = h('input', { type: 'password', name: 'token', autocomplete: 'off', spellcheck: 'false', required: true, placeholder: 'rdg_…', 'aria-label': 'API token' });
  const out = h('div', { 'aria-live': 'polite' });
  const button = h('button', { type: 'submit' }, 'Sign in');
  const form = h(
    'form',
    { class: 'card signin' },
    h('h1', null, 'Readings console'),
    opts.notice ? h('p', { class: 'notice' }, opts.notice) : null,
    h('p', null, 'Sign in with an API token: ', h('code', null, 'make run'), ' prints one, ', h('code', null, 'readings admin token create'), ' makes one, and so does your profile once you are in.'),
    field('API token', input, 'Kept in this tab only, until you sign out or close it.'),
    button,
    out,
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const token = input.value.trim();
    void action(button, out, async () => {
      if (!looksLikeToken(token)) throw new Error('That is not a token: a token is rdg_ followed by 43 letters and digits.');
      await opts.signIn(token);
    });
  });
  queueMicrotask(() => input.focus());
  return h('main', { class: 'narrow' }, form);
}
