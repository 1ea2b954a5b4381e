import { describe, expect, it } from 'vitest';
import { cursorPaging, pageLabel, type CursorPage, type PageView } from './pager';

type Q = { limit: number; cursor?: string; kind?: string };

// list answers a query as the API would, from items 1..total: a cursor is the last item's number.
function list(total: number) {
  const asked: Q[] = [];
  const read = async (q: Q): Promise<CursorPage<number>> => {
    asked.push(q);
    const from = q.cursor ? Number(q.cursor) : 0;
    const items = Array.from({ length: Math.max(0, Math.min(q.limit, total - from)) }, (_, i) => from + i + 1);
    return from + q.limit < total ? { items, next_cursor: String(from + q.limit) } : { items };
  };
  return { read, asked };
}

function shown() {
  const views: PageView<number>[] = [];
  return { views, show: (v: PageView<number>) => void views.push(v), last: () => views[views.length - 1]! };
}

describe('cursorPaging', () => {
  it('goes older with the cursor of the page shown and back newer with the query before', async () => {
    const { read, asked } = list(5);
    const s = shown();
    const p = cursorPaging(read, s.show);
    await p.start({ limit: 2, kind: 'flag' });
    expect(s.last()).toEqual({ items: [1, 2], page: 1, first: 1, newer: false, older: true });
    await p.older();
    expect(s.last()).toEqual({ items: [3, 4], page: 2, first: 3, newer: true, older: true });
    await p.older();
    expect(s.last()).toEqual({ items: [5], page: 3, first: 5, newer: true, older: false });
    expect(asked[2]).toEqual({ limit: 2, kind: 'flag', cursor: '4' }); // the filter kept
    await p.older(); // the last page: nothing to read
    expect(asked).toHaveLength(3);
    await p.newer();
    expect(s.last()).toMatchObject({ items: [3, 4], page: 2 });
    expect(asked[3]).toEqual({ limit: 2, kind: 'flag', cursor: '2' });
    await p.newer();
    await p.newer(); // the first page: nothing to read
    expect(s.last()).toMatchObject({ items: [1, 2], page: 1, newer: false });
    expect(asked).toHaveLength(5);
  });

  it('starts over with a new query', async () => {
    const { read } = list(5);
    const s = shown();
    const p = cursorPaging(read, s.show);
    await p.start({ limit: 2 });
    await p.older();
    await p.start({ limit: 3 });
    expect(s.last()).toEqual({ items: [1, 2, 3], page: 1, first: 1, newer: false, older: true });
  });

  it('shows only the page asked for last', async () => {
    const answers: ((page: CursorPage<number>) => void)[] = [];
    const s = shown();
    const p = cursorPaging<Q, number>(() => new Promise((resolve) => answers.push(resolve)), s.show);
    const slow = p.start({ limit: 2, kind: 'flag' });
    const fast = p.start({ limit: 2, kind: 'checks' });
    answers[1]!({ items: [7] });
    await fast;
    answers[0]!({ items: [1, 2], next_cursor: '2' });
    await slow;
    expect(s.views.map((v) => v.items)).toEqual([[7]]);
  });

  it('keeps the page shown when the next cannot be read, so that Older can be tried again', async () => {
    const { read: good, asked } = list(5);
    let fail = false;
    const s = shown();
    const p = cursorPaging<Q, number>((q) => (fail ? Promise.reject(new Error('the service did not answer')) : good(q)), s.show);
    await p.start({ limit: 2 });
    fail = true;
    await expect(p.older()).rejects.toThrow('the service did not answer');
    fail = false;
    await p.older();
    expect(s.last()).toMatchObject({ items: [3, 4], page: 2 });
    expect(asked.map((q) => q.cursor)).toEqual([undefined, '2']);
  });

  it('reads the page shown again, or the first one', async () => {
    const { read, asked } = list(5);
    const s = shown();
    const p = cursorPaging(read, s.show);
    await p.again(() => ({ limit: 2 }));
    expect(s.last()).toMatchObject({ items: [1, 2], page: 1 });
    await p.older();
    await p.again(() => ({ limit: 99 }));
    expect(s.last()).toMatchObject({ items: [3, 4], page: 2 });
    expect(asked.map((q) => [q.limit, q.cursor])).toEqual([
      [2, undefined],
      [2, '2'],
      [2, '2'],
    ]);
  });
});

describe('pageLabel', () => {
  const cases: [string, Parameters<typeof pageLabel>[1], string][] = [
    ['the first page', { items: [1, 2, 3], page: 1, first: 1 }, 'Changes 1–3, newest first (page 1)'],
    ['a later page', { items: Array(50).fill(0), page: 2, first: 51 }, 'Changes 51–100, newest first (page 2)'],
    ['none', { items: [], page: 1, first: 1 }, 'No changes.'],
  ];
  for (const [name, v, want] of cases) it(name, () => expect(pageLabel('changes', v)).toBe(want));
});
