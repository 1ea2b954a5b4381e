// A dozen lines instead of a framework: h() builds elements, and the pages
// re-render a section when its data changes.

export type Child = Node | string | number | null | undefined | false | Child[];
type Props = Record<string, unknown>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props?: Props | null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') {
      el.addEventListener(k.slice(2).toLowerCase(), v as EventListener);
    } else if (k === 'style') {
      el.style.cssText = String(v); // CSSOM, which the console's CSP allows, unlike a style attribute
    } else if (k === 'value' && (el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement || el instanceof HTMLSelectElement)) {
      el.value = String(v); // the live value, not the default the attribute sets
    } else {
      el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  append(el, children);
  return el;
}

function append(parent: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(parent, c);
    else parent.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** errorText is what the console shows for err: the API's message as it wrote it. */
export function errorText(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}

export function errorBox(err: unknown): HTMLElement {
  return h('p', { class: 'error', role: 'alert' }, errorText(err));
}

/**
 * section renders load()'s result into its own element and can redo it:
 * a page is a few sections that each refresh after their own actions.
 */
export function section(load: () => Promise<Child>): { el: HTMLElement; refresh: () => Promise<void> } {
  const el = h('div', { class: 'section-body' }, h('p', { class: 'muted' }, 'Loading…'));
  let generation = 0;
  const refresh = async () => {
    const mine = ++generation;
    try {
      const content = await load();
      if (mine !== generation) return; // a later refresh won
      el.replaceChildren();
      append(el, [content]);
    } catch (err) {
      if (mine !== generation) return;
      el.replaceChildren(errorBox(err));
    }
  };
  void refresh();
  return { el, refresh };
}

/** copyButton copies text to the clipboard and says so. */
export function copyButton(text: string, label = 'Copy', what = 'text'): HTMLButtonElement {
  const b = h('button', { type: 'button', class: 'copy', title: `Copy ${what}`, 'aria-label': `Copy ${what}`, 'data-copy': text }, label);
  b.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(text);
      flash(b, 'Copied');
    } catch {
      // Clipboard access needs a secure context and permission; fall back to selecting.
      flash(b, 'Select and copy');
    }
  });
  return b;
}

function flash(b: HTMLButtonElement, text: string): void {
  const before = b.textContent;
  b.textContent = text;
  setTimeout(() => (b.textContent = before), 1500);
}

/**
 * action runs a form's or button's work with the button disabled, showing
 * the API's message in out when it fails. It returns whether it succeeded.
 */
export async function action(button: HTMLButtonElement | null, out: HTMLElement, work: () => Promise<void>): Promise<boolean> {
  out.replaceChildren();
  if (button) button.disabled = true;
  try {
    await work();
    return true;
  } catch (err) {
    out.replaceChildren(errorBox(err));
    return false;
  } finally {
    if (button) button.disabled = false;
  }
}

let hints = 0;

/**
 * field labels an input. A hint is tied to it with aria-describedby rather
 * than put in the label, so that the input's name stays just the label.
 */
export function field(label: string, input: HTMLElement, hint?: Child): HTMLElement {
  if (!hint) return h('label', { class: 'field' }, h('span', null, label), input);
  const hintId = `hint-${++hints}`;
  input.setAttribute('aria-describedby', hintId);
  return h('div', { class: 'field' }, h('label', null, h('span', null, label), input), h('small', { class: 'muted', id: hintId }, hint));
}

/**
 * table lays rows out under head. Each cell carries its column's name, so
 * that on a phone (style.css) a row becomes a card of labelled lines rather
 * than columns cut off at the screen's edge.
 */
export function table(head: string[], rows: Child[][], attrs?: Props): HTMLElement {
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      attrs ?? null,
      h('thead', null, h('tr', null, head.map((c) => h('th', null, c)))),
      h('tbody', null, rows.map((r) => h('tr', null, r.map((c, i) => h('td', { 'data-label': head[i] || null }, c))))),
    ),
  );
}
