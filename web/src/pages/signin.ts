// Sign in with an API token. The token is typed or pasted into a password
// field and kept in sessionStorage; the form never submits, so the token
// cannot end up in a URL.
import { action, field, h } from '../dom';
import { looksLikeToken } from '../token';

export interface SigninOptions {
  notice?: string;
  signIn(token: string): Promise<void>;
}

/** tokenField is a field for an API token, and read, which returns the token typed or throws why it is not one. */
export function tokenField(): { field: HTMLElement; input: HTMLInputElement; read(): string } {
  const input = h('input', { type: 'password', name: 'token', autocomplete: 'off', spellcheck: 'false', required: true, placeholder: 'rdg_…', 'aria-label': 'API token' });
  return {
    field: field('API token', input, 'Kept in this tab only, until you sign out or close it.'),
    input,
    read() {
      const token = input.value.trim();
      if (!looksLikeToken(token)) throw new Error('That is not a token: a token is rdg_ followed by 43 letters and digits.');
      return token;
    },
  };
}

export function signinPage(opts: SigninOptions): HTMLElement {
  const token = tokenField();
  const out = h('div', { 'aria-live': 'polite' });
  const button = h('button', { type: 'submit' }, 'Sign in');
  const form = h(
    'form',
    { class: 'card signin' },
    h('h1', null, 'Readings console'),
    opts.notice ? h('p', { class: 'notice' }, opts.notice) : null,
    h('p', null, 'Sign in with an API token: ', h('code', null, 'make run'), ' prints one, ', h('code', null, 'readings admin token create'), ' makes one, and so does your profile once you are in.'),
    token.field,
    button,
    out,
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void action(button, out, async () => opts.signIn(token.read()));
  });
  queueMicrotask(() => token.input.focus());
  return h('main', { class: 'narrow' }, form);
}
