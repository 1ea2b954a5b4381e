// Newer and Older over an API's cursor, for the lists the console reads
// newest first a page at a time (the alarm history, the audit trails). The
// API pages forward only: going back is reading the page before's query
// again, so the queries that led to the page shown are kept on a stack.
import { action, h } from './dom';

export interface CursorPage<T> {
  items: T[];
  next_cursor?: string;
}

export interface PageQuery {
  limit: number;
  cursor?: string;
}

/** PageView is a page as shown: its items, its number, its first item's place in the list, and whether pages lie either side. */
export interface PageView<T> {
  items: T[];
  page: number;
  first: number;
  newer: boolean;
  older: boolean;
}

export interface CursorPaging<Q> {
  /** start reads the first page of q. */
  start(q: Q): Promise<void>;
  /** older reads the page after the one shown; nothing when it is the last. */
  older(): Promise<void>;
  /** newer reads the page before the one shown; nothing on the first. */
  newer(): Promise<void>;
  /** again reads the page shown again, or the first page of first() when none was asked for yet. */
  again(first: () => Q): Promise<void>;
}

/**
 * cursorPaging reads pages with read and passes each to show. Only the
 * page asked for last is shown: an answer that comes after another page
 * was asked for is dropped. A page that cannot be read leaves the one
 * shown where it was, so that Older or Newer can be tried again.
 */
export function cursorPaging<Q extends PageQuery, T>(read: (q: Q) => Promise<CursorPage<T>>, show: (v: PageView<T>) => void): CursorPaging<Q> {
  let pages: Q[] = [];
  let next: string | undefined; // the cursor after the page shown

  async function go(to: Q[]): Promise<void> {
    const was = { pages, next };
    pages = to;
    next = undefined;
    const query = to[to.length - 1]!;
    let page: CursorPage<T>;
    try {
      page = await read(query);
    } catch (err) {
      if (pages === to) ({ pages, next } = was);
      throw err;
    }
    if (pages !== to) return; // another page was asked for meanwhile
    next = page.next_cursor;
    const n = to.length;
    show({ items: page.items, page: n, first: (n - 1) * query.limit + 1, newer: n > 1, older: next !== undefined });
  }

  return {
    start: (q) => go([q]),
    async older() {
      const shown = pages[pages.length - 1];
      if (!shown || next === undefined) return;
      await go([...pages, { ...shown, cursor: next }]);
    },
    async newer() {
      if (pages.length < 2) return;
      await go(pages.slice(0, -1));
    },
    again: (first) => go(pages.length ? [...pages] : [first()]),
  };
}

/** pageLabel says which part of the list a page holds: "Changes 51–100, newest first (page 2)", or "No changes." */
export function pageLabel(noun: string, v: Pick<PageView<unknown>, 'items' | 'page' | 'first'>): string {
  if (v.items.length === 0) return `No ${noun}.`;
  return `${noun.charAt(0).toUpperCase()}${noun.slice(1)} ${v.first}–${v.first + v.items.length - 1}, newest first (page ${v.page})`;
}

export interface PagedListOptions<T> {
  /** noun names the items in the page's label: "changes". */
  noun: string;
  /** testId marks the label, for the end-to-end test. */
  testId: string;
  /** table lays a page's items out; called only with some. */
  table: (items: T[]) => HTMLElement;
  /** busy is disabled while a page loads: the filter's button. */
  busy: HTMLButtonElement | null;
  /** out is where a page that cannot be read says why. */
  out: HTMLElement;
}

/**
 * pagedList shows a list read newest first a page at a time: Newer and
 * Older either side of a label that says which items the page holds,
 * then the page's table. start and again return whether the page was read.
 */
export function pagedList<Q extends PageQuery, T>(
  read: (q: Q) => Promise<CursorPage<T>>,
  opts: PagedListOptions<T>,
): { el: HTMLElement; start(first: () => Q): Promise<boolean>; again(first: () => Q): Promise<boolean> } {
  const el = h('div');
  const run = (work: () => Promise<void>) => action(opts.busy, opts.out, work);
  const paging = cursorPaging<Q, T>(read, (v) => {
    const newer = h('button', { type: 'button', class: 'small', disabled: !v.newer }, 'Newer');
    newer.addEventListener('click', () => void run(paging.newer));
    const older = h('button', { type: 'button', class: 'small', disabled: !v.older }, 'Older');
    older.addEventListener('click', () => void run(paging.older));
    el.replaceChildren(h('div', { class: 'inline pager' }, newer, h('span', { class: 'muted', 'data-testid': opts.testId }, pageLabel(opts.noun, v)), older), v.items.length ? opts.table(v.items) : '');
  });
  return {
    el,
    start: (first) => run(() => paging.start(first())),
    again: (first) => run(() => paging.again(first)),
  };
}
