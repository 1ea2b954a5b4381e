// Project, audit trail: every change that alters what the project's
// history means, newest first, a page at a time with the API's cursor,
// filtered by sensor, kind and when the change was made. A sensor's page
// links here with ?sensor=ID.
import { must, type Member, type Sensor } from '../api';
import { allPages, id, orgName, orgRole, type Ctx } from '../app';
import { changeLines, PROJECT_KINDS, type AuditEntry, type AuditKind } from '../audit';
import { action, field, h, table, type Child } from '../dom';
import { can } from '../roles';
import { href } from '../router';
import { filterBounds, formatDateTime, zoneName } from '../time';

const AUDIT_PAGE = 50;

type AuditQuery = { limit: number; cursor?: string; sensor_id?: number; kind?: AuditKind[]; datetime__gte?: string; datetime__lte?: string };

export function auditPage(ctx: Ctx): HTMLElement {
  const org = id(ctx, 'org');
  const proj = id(ctx, 'proj');
  const path = { org_id: org, proj_id: proj };
  const role = orgRole(ctx, org);
  let sensors: Sensor[] = [];
  // Owners may read the members, and so see who each user is; others see their own name and ids.
  let names = new Map<number, string>([[ctx.me.user.id, ctx.me.user.email]]);
  const userName = (uid: number | undefined) => (uid === undefined ? 'the service' : (names.get(uid) ?? `user ${uid}`));
  const sensorName = (sid: number | undefined) => (sid === undefined ? '' : (sensors.find((s) => s.id === sid)?.name ?? `sensor ${sid}`));

  const sensor = h('select', { name: 'sensor' }, h('option', { value: '' }, 'all sensors'));
  const kinds = PROJECT_KINDS.map(({ kind, label }) => ({ kind, box: h('input', { type: 'checkbox', name: 'kind', value: kind }), label }));
  const from = h('input', { name: 'from', placeholder: 'YYYY-MM-DD HH:MM', size: 16, spellcheck: 'false', autocomplete: 'off' });
  const to = h('input', { name: 'to', placeholder: 'YYYY-MM-DD HH:MM', size: 16, spellcheck: 'false', autocomplete: 'off' });
  const apply = h('button', { type: 'submit' }, 'Show changes');
  const out = h('div');
  const list = h('div');
  const form = h(
    'form',
    { class: 'card', 'aria-label': 'Audit filter' },
    h('div', { class: 'inline controls' }, field('Sensor', sensor), field('From', from), field('To', to), apply, h('small', { class: 'muted' }, `Times of the change, in ${zoneName()}.`)),
    h('fieldset', { class: 'kinds' }, h('legend', null, 'Kinds (none ticked: every kind)'), kinds.map((k) => h('label', { class: 'pick' }, k.box, ` ${k.label}`))),
  );
  let pages: AuditQuery[] = [];

  function filter(): AuditQuery {
    const q: AuditQuery = { limit: AUDIT_PAGE };
    if (sensor.value) q.sensor_id = Number(sensor.value);
    const ticked = kinds.filter((k) => k.box.checked).map((k) => k.kind);
    if (ticked.length) q.kind = ticked;
    const b = filterBounds(from.value, to.value, 'changes');
    if (b.from) q.datetime__gte = b.from;
    if (b.to) q.datetime__lte = b.to;
    return q;
  }

  async function show() {
    const query = pages[pages.length - 1]!;
    const pageNo = pages.length;
    // kind is a form array that is not exploded (the spec's style): kind=checks,flag, not kind=checks&kind=flag.
    const page = await must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/audit', { params: { path, query }, querySerializer: { array: { style: 'form', explode: false } } }));
    if (pages[pages.length - 1] !== query) return; // another page was asked for meanwhile
    const newer = h('button', { type: 'button', class: 'small', disabled: pageNo === 1 }, 'Newer');
    newer.addEventListener('click', () => {
      pages.pop();
      void run();
    });
    const older = h('button', { type: 'button', class: 'small', disabled: !page.next_cursor }, 'Older');
    older.addEventListener('click', () => {
      pages.push({ ...query, cursor: page.next_cursor });
      void run();
    });
    const first = (pageNo - 1) * AUDIT_PAGE + 1;
    list.replaceChildren(
      h('div', { class: 'inline pager' }, newer, h('span', { class: 'muted', 'data-testid': 'audit-page' }, page.items.length ? `Changes ${first}–${first + page.items.length - 1}, newest first (page ${pageNo})` : 'No changes.'), older),
      page.items.length ? table(['When', 'Who', 'Sensor', 'What', 'Change'], page.items.map(row), { 'aria-label': 'Audit trail' }) : '',
    );
  }

  function row(e: AuditEntry): Child[] {
    const lines = changeLines(e);
    return [
      h('span', { title: e.at }, formatDateTime(e.at)),
      userName(e.actor),
      e.sensor_id ? h('a', { href: href(`/org/${org}/proj/${proj}/sensors/${e.sensor_id}`) }, sensorName(e.sensor_id)) : '',
      h('span', null, h('code', null, e.kind), ` ${e.action}`),
      h(
        'div',
        { class: 'change' },
        lines.map((l) => h('div', null, l)),
        h('details', null, h('summary', null, 'Before and after'), h('pre', null, JSON.stringify({ before: e.before, after: e.after }, null, 2))),
      ),
    ];
  }

  const run = () => action(apply, out, show);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void action(apply, out, async () => {
      pages = [filter()];
      await show();
    });
  });

  const root = h(
    'div',
    null,
    h('h1', null, 'Audit trail'),
    h(
      'p',
      { class: 'muted' },
      'Every change that alters what the project’s history means: formulas, constants, calibrations, baselines, links, alarm rules and levels, flags, validity checks, overwrites and range deletes, webhooks; who made it, when, and what it was before and after. A validity check’s flags are not listed one by one: the check that sets them is. With “as of” a sensor’s readings page draws the outputs as they were at any of these instants.',
    ),
    form,
    out,
    list,
  );

  void Promise.all([
    must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}', { params: { path } })),
    allPages((cursor) => must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/sensors', { params: { path, query: { limit: 1000, cursor } } }))),
    can(role, 'listMembers') ? allPages((cursor) => must(ctx.api.GET('/api/v1/org/{org_id}/members', { params: { path: { org_id: org }, query: { limit: 1000, cursor } } }))).catch((): Member[] => []) : Promise.resolve<Member[]>([]),
  ]).then(
    ([project, got, members]) => {
      ctx.setCrumbs([{ label: orgName(ctx, org), path: `/org/${org}` }, { label: project.name, path: `/org/${org}/proj/${proj}` }, { label: 'Audit trail' }]);
      sensors = got;
      names = new Map([...names, ...members.map((m) => [m.user_id, m.email] as [number, string])]);
      const wanted = new URLSearchParams(location.search).get('sensor') ?? '';
      sensor.replaceChildren(h('option', { value: '' }, 'all sensors'), ...sensors.map((s) => h('option', { value: String(s.id) }, `${s.name} (${s.id})`)));
      sensor.value = sensors.some((s) => String(s.id) === wanted) ? wanted : '';
      pages = [filter()];
      void run();
    },
    (err) => void action(null, out, () => Promise.reject(err)),
  );
  return root;
}
