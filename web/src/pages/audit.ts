// The audit trails: every change that alters what a project's history
// means, newest first, a page at a time with the API's cursor, filtered by
// kind and when the change was made (and, a project's, by sensor; a
// sensor's page links here with ?sensor=ID); and, for owners, the
// organization's, which adds its members, tokens and invitations to every
// project's changes.
import { ApiError, must, type Member, type Project, type Sensor } from '../api';
import { allPages, id, orgName, orgRole, type Ctx } from '../app';
import { changeLines, ORG_KINDS, PROJECT_KINDS, subjectOf, type AuditEntry, type AuditKind } from '../audit';
import { errorBox, field, h, table, type Child } from '../dom';
import { pagedList, type CursorPage } from '../pager';
import { can } from '../roles';
import { href } from '../router';
import { filterBounds, formatDateTime, zoneName } from '../time';

const AUDIT_PAGE = 50;

type AuditQuery = { limit: number; cursor?: string; sensor_id?: number; kind?: AuditKind[]; datetime__gte?: string; datetime__lte?: string };

// kind is a form array that is not exploded (the spec's style): kind=checks,flag, not kind=checks&kind=flag.
const querySerializer = { array: { style: 'form', explode: false } } as const;

interface TrailOptions {
  title: string;
  /** intro says what the trail holds. */
  intro: string;
  /** kinds are the kinds offered in the filter. */
  kinds: readonly { kind: AuditKind; label: string }[];
  /** sensor, on a project's trail, filters by sensor. */
  sensor?: HTMLSelectElement;
  read: (q: AuditQuery) => Promise<CursorPage<AuditEntry>>;
  /** where are the columns that say what a change is of (its sensor; its project too on the organization's trail). */
  where: { head: string[]; cells: (e: AuditEntry) => Child[] };
  /** who names a user. */
  who: (uid: number | undefined) => string;
}

/** auditTrail is a trail's page: its filter and its pages; start shows the first page of the filter. */
function auditTrail(opts: TrailOptions) {
  const kinds = opts.kinds.map(({ kind, label }) => ({ kind, box: h('input', { type: 'checkbox', name: 'kind', value: kind }), label }));
  const from = h('input', { name: 'from', placeholder: 'YYYY-MM-DD HH:MM', size: 16, spellcheck: 'false', autocomplete: 'off' });
  const to = h('input', { name: 'to', placeholder: 'YYYY-MM-DD HH:MM', size: 16, spellcheck: 'false', autocomplete: 'off' });
  const apply = h('button', { type: 'submit' }, 'Show changes');
  const out = h('div');
  const form = h(
    'form',
    { class: 'card', 'aria-label': 'Audit filter' },
    h('div', { class: 'inline controls' }, opts.sensor ? field('Sensor', opts.sensor) : null, field('From', from), field('To', to), apply, h('small', { class: 'muted' }, `Times of the change, in ${zoneName()}.`)),
    h('fieldset', { class: 'kinds' }, h('legend', null, 'Kinds (none ticked: every kind)'), kinds.map((k) => h('label', { class: 'pick' }, k.box, ` ${k.label}`))),
  );

  function filter(): AuditQuery {
    const q: AuditQuery = { limit: AUDIT_PAGE };
    if (opts.sensor?.value) q.sensor_id = Number(opts.sensor.value);
    const ticked = kinds.filter((k) => k.box.checked).map((k) => k.kind);
    if (ticked.length) q.kind = ticked;
    const b = filterBounds(from.value, to.value, 'changes');
    if (b.from) q.datetime__gte = b.from;
    if (b.to) q.datetime__lte = b.to;
    return q;
  }

  function row(e: AuditEntry): Child[] {
    const subject = subjectOf(e);
    return [
      h('span', { title: e.at }, formatDateTime(e.at)),
      opts.who(e.actor),
      ...opts.where.cells(e),
      h('span', null, h('code', null, e.kind), ` ${e.action}`, subject === undefined ? '' : ` of ${opts.who(subject)}`),
      h(
        'div',
        { class: 'change' },
        changeLines(e).map((l) => h('div', null, l)),
        h('details', null, h('summary', null, 'Before and after'), h('pre', null, JSON.stringify({ before: e.before, after: e.after }, null, 2))),
      ),
    ];
  }

  const list = pagedList<AuditQuery, AuditEntry>(opts.read, {
    noun: 'changes',
    testId: 'audit-page',
    table: (items) => table(['When', 'Who', ...opts.where.head, 'What', 'Change'], items.map(row), { 'aria-label': 'Audit trail' }),
    busy: apply,
    out,
  });
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void list.start(filter);
  });
  const el = h('div', null, h('h1', null, opts.title), h('p', { class: 'muted' }, opts.intro), form, out, list.el);
  return { el, form, out, start: () => list.start(filter) };
}

/** memberNames are the emails of the organization's members, by user id, for those who may read them (owners); else none. */
async function memberNames(ctx: Ctx, org: number): Promise<Map<number, string>> {
  if (!can(orgRole(ctx, org), 'listMembers')) return new Map();
  const members = await allPages((cursor) => must(ctx.api.GET('/api/v1/org/{org_id}/members', { params: { path: { org_id: org }, query: { limit: 1000, cursor } } }))).catch((): Member[] => []);
  return new Map(members.map((m) => [m.user_id, m.email]));
}

/** userNames names a user: the signed-in one and, for owners, the members by email; others by id; no user is the service. */
function userNames(ctx: Ctx) {
  let names = new Map<number, string>([[ctx.me.user.id, ctx.me.user.email]]);
  return {
    name: (uid: number | undefined) => (uid === undefined ? 'the service' : (names.get(uid) ?? `user ${uid}`)),
    add(more: Map<number, string>) {
      names = new Map([...names, ...more]);
    },
  };
}

const sensorsOf = (ctx: Ctx, org: number, proj: number) =>
  allPages((cursor) => must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/sensors', { params: { path: { org_id: org, proj_id: proj }, query: { limit: 1000, cursor } } })));

export function auditPage(ctx: Ctx): HTMLElement {
  const org = id(ctx, 'org');
  const proj = id(ctx, 'proj');
  const path = { org_id: org, proj_id: proj };
  let sensors: Sensor[] = [];
  const users = userNames(ctx);
  const sensorName = (sid: number) => sensors.find((s) => s.id === sid)?.name ?? `sensor ${sid}`;
  const sensor = h('select', { name: 'sensor' }, h('option', { value: '' }, 'all sensors'));
  const trail = auditTrail({
    title: 'Audit trail',
    intro: 'Every change that alters what the project’s history means: formulas, constants, calibrations, baselines, links, alarm rules and levels, flags, validity checks, overwrites and range deletes, webhooks; who made it, when, and what it was before and after. A validity check’s flags are not listed one by one: the check that sets them is. With “as of” a sensor’s readings page draws the outputs as they were at any of these instants.',
    kinds: PROJECT_KINDS,
    sensor,
    read: (query) => must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/audit', { params: { path, query }, querySerializer })),
    where: { head: ['Sensor'], cells: (e) => [e.sensor_id ? h('a', { href: href(`/org/${org}/proj/${proj}/sensors/${e.sensor_id}`) }, sensorName(e.sensor_id)) : ''] },
    who: users.name,
  });

  void Promise.all([must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}', { params: { path } })), sensorsOf(ctx, org, proj), memberNames(ctx, org)]).then(
    ([project, got, members]) => {
      ctx.setCrumbs([{ label: orgName(ctx, org), path: `/org/${org}` }, { label: project.name, path: `/org/${org}/proj/${proj}` }, { label: 'Audit trail' }]);
      sensors = got;
      users.add(members);
      const wanted = new URLSearchParams(location.search).get('sensor') ?? '';
      sensor.replaceChildren(h('option', { value: '' }, 'all sensors'), ...sensors.map((s) => h('option', { value: String(s.id) }, `${s.name} (${s.id})`)));
      sensor.value = sensors.some((s) => String(s.id) === wanted) ? wanted : '';
      void trail.start();
    },
    (err) => trail.out.replaceChildren(errorBox(err)),
  );
  return trail.el;
}

/**
 * orgAuditPage is the organization's trail, for owners: the API refuses
 * anyone else, and the page then shows its refusal alone.
 */
export function orgAuditPage(ctx: Ctx): HTMLElement {
  const org = id(ctx, 'org');
  ctx.setCrumbs([{ label: orgName(ctx, org), path: `/org/${org}` }, { label: 'Audit trail' }]);
  const users = userNames(ctx);
  let projects: Project[] = [];
  // The names of the sensors of each project a page names, read once a project.
  const sensorNames = new Map<number, Map<number, string>>();
  const trail = auditTrail({
    title: 'Organization audit trail',
    intro: 'Every change in the organization: who became a member or left it, and each change of role; tokens created and revoked; invitations sent, revoked and accepted; and every project’s changes, as each project’s own trail lists them. Only owners read it.',
    kinds: ORG_KINDS,
    async read(query) {
      const page = await must(ctx.api.GET('/api/v1/org/{org_id}/audit', { params: { path: { org_id: org }, query }, querySerializer })).catch((err: unknown) => {
        // Refused (not an owner): nothing to filter, the API's message alone.
        if (err instanceof ApiError && err.status === 403) trail.form.hidden = true;
        throw err;
      });
      const unnamed = new Set(page.items.flatMap((e) => (e.project_id && e.sensor_id && !sensorNames.has(e.project_id) ? [e.project_id] : [])));
      await Promise.all(
        [...unnamed].map(async (p) => {
          // A project deleted since has its sensors named by id.
          const list = await sensorsOf(ctx, org, p).catch((): Sensor[] => []);
          sensorNames.set(p, new Map(list.map((s) => [s.id, s.name])));
        }),
      );
      return page;
    },
    where: {
      head: ['Project', 'Sensor'],
      cells(e) {
        if (!e.project_id) return ['', ''];
        const p = e.project_id;
        const project = h('a', { href: href(`/org/${org}/proj/${p}`) }, projects.find((x) => x.id === p)?.name ?? `project ${p}`);
        if (!e.sensor_id) return [project, ''];
        return [project, h('a', { href: href(`/org/${org}/proj/${p}/sensors/${e.sensor_id}`) }, sensorNames.get(p)?.get(e.sensor_id) ?? `sensor ${e.sensor_id}`)];
      },
    },
    who: users.name,
  });
  void Promise.all([
    allPages((cursor) => must(ctx.api.GET('/api/v1/org/{org_id}/projects', { params: { path: { org_id: org }, query: { limit: 1000, cursor } } }))).catch((): Project[] => []),
    memberNames(ctx, org),
  ]).then(([got, members]) => {
    projects = got;
    users.add(members);
    void trail.start();
  });
  return trail.el;
}
