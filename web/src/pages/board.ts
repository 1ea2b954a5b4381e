// The status board: every sensor of a project (or the organization) with
// its most severe current level, its unacknowledged alarms, whether it is
// overdue and its last reading, worst first, tinted by level, filtered,
// and read again every POLL_SECONDS while the tab is visible. On a phone
// each row is a card (style.css), the worst on top.
import { allPages, type Ctx } from '../app';
import { must, type Sensor } from '../api';
import { tint } from '../colours';
import { h, table, type Child } from '../dom';
import { href } from '../router';
import { allValues, filterStatuses, needsAttention, shownValue, type SensorStatus, type Show } from '../status';
import { formatAge, formatDateTime } from '../time';
import { levelBadge } from './sensoralarms';

/** How often the board reads the statuses again: a little slower than the overdue check (10 s by default). */
export const POLL_SECONDS = 15;

export interface BoardOptions {
  org: number;
  /** The project's board; without, the organization's (a project column, no values). */
  project?: number;
  projectName?: (id: number) => string;
  show: Show;
  /** Called with every read of the statuses, the first included. */
  onRead?: (list: SensorStatus[]) => void;
  /** The project's sensors, when the page reads them for more than the board. */
  sensors?: () => Promise<Sensor[]>;
}

/** statusBoard is the board's element and a way to read it again now; it stops reading once taken off the page. */
export function statusBoard(ctx: Ctx, opts: BoardOptions): { el: HTMLElement; refresh: () => Promise<void> } {
  const text = h('input', { type: 'search', name: 'find', placeholder: 'name', 'aria-label': 'Find sensors', autocomplete: 'off' });
  const show = h(
    'select',
    { name: 'show', 'aria-label': 'Show' },
    h('option', { value: 'all' }, 'all sensors'),
    h('option', { value: 'attention' }, 'needing attention'),
    h('option', { value: 'alarm' }, 'at an alarm level'),
  );
  show.value = opts.show;
  const summary = h('p', { class: 'board-summary', 'data-testid': 'board-summary', 'aria-live': 'polite' });
  const updated = h('span', { class: 'muted', 'data-testid': 'board-updated' });
  const body = h('div', { class: 'board-body' }, h('p', { class: 'muted' }, 'Loading…'));
  const compare = h('a', { class: 'button-link', hidden: true, 'data-testid': 'compare-selected' }, 'Compare the selected sensors');
  const el = h(
    'section',
    { class: 'board', 'aria-label': 'Status board' },
    h('div', { class: 'inline board-controls' }, h('label', { class: 'field' }, h('span', null, 'Find'), text), h('label', { class: 'field' }, h('span', null, 'Show'), show), opts.project ? compare : null, updated),
    summary,
    body,
  );

  let statuses: SensorStatus[] = [];
  let sensors = new Map<number, Sensor>();
  let rendered = false;
  const selected = new Set<number>();

  // The sensors' definitions (units, decimals) for the values shown; a token
  // that may not list them (limited to some sensors) still sees the board.
  async function definitions(): Promise<void> {
    if (!opts.project) return;
    const path = { org_id: opts.org, proj_id: opts.project };
    const read = opts.sensors ?? (() => allPages((cursor) => must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/sensors', { params: { path, query: { limit: 1000, cursor } } }))));
    const list = await read().catch(() => []);
    sensors = new Map(list.map((s) => [s.id, s]));
  }

  function fetchStatuses(): Promise<SensorStatus[]> {
    return opts.project
      ? allPages((cursor) => must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/status', { params: { path: { org_id: opts.org, proj_id: opts.project! }, query: { limit: 1000, cursor } } })))
      : allPages((cursor) => must(ctx.api.GET('/api/v1/org/{org_id}/status', { params: { path: { org_id: opts.org }, query: { limit: 1000, cursor } } })));
  }

  async function read(): Promise<void> {
    const list = await fetchStatuses();
    if (opts.project && list.some((s) => !sensors.has(s.sensor_id))) await definitions(); // a sensor added meanwhile
    showStatuses(list);
  }

  function showStatuses(list: SensorStatus[]): void {
    if (!rendered) el.dataset['readMs'] = String(Math.round(performance.now()));
    statuses = list;
    updated.textContent = `Updated ${formatDateTime(new Date()).slice(11)}, every ${POLL_SECONDS} s`;
    render();
    opts.onRead?.(list);
  }

  function render(): void {
    const now = new Date();
    const shown = filterStatuses(statuses, { text: text.value, show: show.value as Show }, opts.projectName);
    const atLevel = statuses.filter((s) => s.level).length;
    const unacknowledged = statuses.reduce((n, s) => n + s.unacknowledged, 0);
    const overdue = statuses.filter((s) => s.overdue).length;
    summary.replaceChildren(
      h('strong', null, `${atLevel} at an alarm level`),
      ' · ',
      h(unacknowledged ? 'strong' : 'span', { class: unacknowledged ? 'unacked-text' : '' }, `${unacknowledged} unacknowledged`),
      ' · ',
      `${overdue} overdue`,
      ' · ',
      `${statuses.length} ${statuses.length === 1 ? 'sensor' : 'sensors'}`,
      shown.length !== statuses.length ? `, ${shown.length} shown` : '',
    );
    if (statuses.length === 0) {
      body.replaceChildren(h('p', { class: 'muted' }, opts.project ? 'No sensors yet.' : 'No sensors in the active projects.'));
    } else if (shown.length === 0) {
      body.replaceChildren(h('p', { class: 'muted', 'data-testid': 'board-empty' }, show.value === 'all' ? 'No sensor matches.' : 'Nothing needs attention: every sensor is at rest, acknowledged and reporting.'));
    } else {
      body.replaceChildren(boardTable(shown, now));
    }
    if (!rendered) {
      rendered = true;
      // From the page's load to the first board on screen (the frame after
      // it is built), for the end-to-end test's report.
      el.dataset['builtMs'] = String(Math.round(performance.now()));
      requestAnimationFrame(() =>
        setTimeout(() => {
          el.dataset['renderedMs'] = String(Math.round(performance.now()));
          performance.mark('status-board-rendered');
        }),
      );
    }
  }

  function boardTable(shown: SensorStatus[], now: Date): HTMLElement {
    const head = ['Sensor', ...(opts.project ? [] : ['Project']), 'Level', 'Alarms', 'Overdue', 'Last reading', ...(opts.project ? ['Value', 'Compare'] : [])];
    const rows = shown.map((s) => {
      const base = `/org/${opts.org}/proj/${s.project_id}/sensors/${s.sensor_id}`;
      const sensor = sensors.get(s.sensor_id);
      const value = shownValue(s, sensor);
      const cells: Child[] = [];
      cells.push(h('span', { class: 'board-name' }, h('a', { href: href(base + '/readings') }, s.sensor_name), ' ', h('a', { class: 'muted small-link', href: href(base), 'aria-label': `Setup of ${s.sensor_name}` }, 'setup')));
      if (!opts.project) cells.push(h('a', { href: href(`/org/${opts.org}/proj/${s.project_id}`) }, opts.projectName?.(s.project_id) ?? `project ${s.project_id}`));
      cells.push(s.level ? levelBadge(s.level.name, s.level.colour) : h('span', { class: 'muted' }, 'at rest'));
      cells.push(alarmsCell(s));
      cells.push(s.overdue ? h('span', { class: 'badge overdue' }, `overdue${s.overdue_after ? `, rule ${spell(s.overdue_after)}` : ''}`) : '');
      cells.push(s.reading ? h('span', { title: formatDateTime(s.reading.datetime), 'data-testid': 'age' }, formatAge(s.reading.datetime, now)) : h('span', { class: 'muted' }, 'no readings'));
      if (opts.project) {
        cells.push(value ? h('span', { class: 'board-value', title: allValues(s, sensor) }, value.text) : '');
        const box = h('input', { type: 'checkbox', 'aria-label': `Select ${s.sensor_name} to compare`, checked: selected.has(s.sensor_id) });
        box.addEventListener('change', () => {
          if (box.checked) selected.add(s.sensor_id);
          else selected.delete(s.sensor_id);
          updateCompare();
        });
        cells.push(box);
      }
      return { cells, s };
    });
    const t = table(
      head,
      rows.map((r) => r.cells),
      { 'aria-label': 'Status board', class: opts.project ? 'board-table barred' : 'board-table barred org' },
    );
    // Each row wears its level: a tint of its colour, and a bar of it
    // (--bar, style.css: beside the row on a desktop, the card on a phone).
    t.querySelectorAll<HTMLTableRowElement>('tbody tr').forEach((tr, i) => {
      const s = rows[i]!.s;
      tr.dataset['sensor'] = String(s.sensor_id);
      if (s.level) {
        tr.style.cssText = `background:${tint(s.level.colour)};--bar:${s.level.colour}`;
        tr.dataset['level'] = s.level.name;
      } else if (needsAttention(s)) {
        tr.style.cssText = 'background:#f1f2f4;--bar:#8c8c8c';
      }
    });
    return t;
  }

  function updateCompare(): void {
    compare.hidden = selected.size < 1;
    compare.setAttribute('href', href(`/org/${opts.org}/proj/${opts.project}/compare?sensors=${[...selected].join(',')}`));
    compare.textContent = `Compare the ${selected.size} selected`;
  }

  text.addEventListener('input', render);
  show.addEventListener('change', render);

  // Poll while on the page and visible; read again at once when shown again.
  let timer: ReturnType<typeof setInterval> | undefined;
  const tick = () => {
    if (!el.isConnected) {
      clearInterval(timer);
      document.removeEventListener('visibilitychange', onVisible);
      return;
    }
    if (document.visibilityState === 'visible') void read().catch(() => undefined);
  };
  const onVisible = () => {
    if (document.visibilityState === 'visible' && el.isConnected) void read().catch(() => undefined);
  };
  // The definitions and the statuses at once: the first board waits for the slower.
  void Promise.all([definitions(), fetchStatuses()])
    .then(([, list]) => showStatuses(list))
    .catch((err: unknown) => body.replaceChildren(h('p', { class: 'error', role: 'alert' }, err instanceof Error ? err.message : String(err))))
    .finally(() => {
      timer = setInterval(tick, POLL_SECONDS * 1000);
      document.addEventListener('visibilitychange', onVisible);
    });
  return { el, refresh: read };
}

function alarmsCell(s: SensorStatus): Child {
  if (s.alarms === 0) return h('span', { class: 'muted' }, 'none');
  return h(
    'span',
    null,
    `${s.alarms}`,
    s.unacknowledged ? [' · ', h('span', { class: 'badge unacked' }, `${s.unacknowledged} unacknowledged`)] : h('span', { class: 'muted' }, ' · acknowledged'),
  );
}

/** spell says a rule's seconds in the largest whole unit: "1 h", "90 min". */
function spell(seconds: number): string {
  if (seconds % 86400 === 0) return `${seconds / 86400} d`;
  if (seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}
