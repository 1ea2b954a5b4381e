// Project: first the state of every sensor (the status board) and the
// current alarms, which follow it as it reads again; then the history, the
// levels, a new sensor and the organization's blueprints.
import { must, type Blueprint, type Project } from '../api';
import { allPages, id, orgName, orgRole, shared, type Ctx } from '../app';
import { action, field, h, section } from '../dom';
import { can } from '../roles';
import { href } from '../router';
import type { SensorStatus } from '../status';
import { formatDateTime } from '../time';
import { statusBoard } from './board';
import { blueprintsSection } from './blueprints';
import { alarmsSection } from './projectalarms';

export function projectPage(ctx: Ctx): HTMLElement {
  const org = id(ctx, 'org');
  const proj = id(ctx, 'proj');
  const role = orgRole(ctx, org);
  const path = { org_id: org, proj_id: proj };
  const header = h('div');

  void must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}', { params: { path } })).then(
    (project) => {
      ctx.setCrumbs([
        { label: orgName(ctx, org), path: `/org/${org}` },
        { label: project.name, path: `/org/${org}/proj/${proj}` },
      ]);
      header.replaceChildren(projectHeader(project, org));
    },
    () => undefined, // the board says what went wrong
  );

  // The board and the alarms both name the project's sensors: one read.
  const sensors = shared(() => allPages((cursor) => must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/sensors', { params: { path, query: { limit: 1000, cursor } } }))));
  const alarms = alarmsSection(ctx, path, role, sensors);
  // The alarms are read again when the board sees them change.
  let seen = '';
  const board = statusBoard(ctx, {
    org,
    project: proj,
    show: 'all',
    sensors,
    onRead(list: SensorStatus[]) {
      const now = JSON.stringify(list.map((s) => [s.sensor_id, s.level?.id, s.alarms, s.unacknowledged]));
      if (seen && now !== seen) alarms.refresh();
      seen = now;
    },
  });

  const newSensor = can(role, 'createSensor')
    ? section(async () => {
        const blueprints = await allPages((cursor) => must(ctx.api.GET('/api/v1/org/{org_id}/blueprints', { params: { path: { org_id: org }, query: { limit: 1000, cursor } } })));
        return createSensorForm(ctx, org, proj, blueprints, () => void board.refresh());
      })
    : undefined;

  return h(
    'div',
    null,
    header,
    h('h2', null, 'Status'),
    board.el,
    alarms.current,
    alarms.history,
    alarms.levels,
    newSensor ? [h('h2', null, 'New sensor'), newSensor.el] : null,
    blueprintsSection(ctx, org, role, () => void newSensor?.refresh()),
  );
}

function projectHeader(p: Project, org: number): HTMLElement {
  return h(
    'div',
    null,
    h('h1', null, p.name, ' ', h('span', { class: `badge ${p.state}`, 'data-testid': 'project-state' }, p.state)),
    p.description ? h('p', null, p.description) : null,
    // Two projects may share a name; the ID and creation date tell them apart.
    h('p', { class: 'muted', 'data-testid': 'project-id' }, `Project ${p.id} · created ${formatDateTime(p.created_at)} · `, h('a', { href: href(`/org/${org}/proj/${p.id}/audit`) }, 'Audit trail')),
    p.state === 'archived' ? h('p', { class: 'notice' }, 'This project is archived: its readings can be read, but posting new ones answers 409 until it is restored.') : null,
  );
}

function createSensorForm(ctx: Ctx, org: number, proj: number, blueprints: Blueprint[], created: () => void): HTMLElement {
  const name = h('input', { name: 'name', required: true, maxlength: 200, placeholder: 'PZ-01' });
  const description = h('input', { name: 'description', maxlength: 2000 });
  const blueprint = h(
    'select',
    { name: 'blueprint' },
    h('option', { value: '' }, 'none: any input ID'),
    blueprints.map((b) => h('option', { value: String(b.id) }, b.name)),
  );
  // The chosen blueprint's constants, to override its defaults.
  const constants = h('div', { class: 'inline' });
  const showConstants = () => {
    const b = blueprints.find((x) => String(x.id) === blueprint.value);
    constants.replaceChildren(
      ...(b?.constants ?? []).map((c) =>
        field(`${c.key}${c.unit ? ` (${c.unit})` : ''}`, h('input', { type: 'number', step: 'any', 'data-constant': c.key, placeholder: c.default !== undefined ? String(c.default) : 'no default' })),
      ),
    );
  };
  blueprint.addEventListener('change', showConstants);
  const button = h('button', { type: 'submit' }, 'Create sensor');
  const out = h('div');
  const form = h(
    'form',
    { class: 'card', 'aria-label': 'New sensor' },
    h('div', { class: 'inline' }, field('Name', name), field('Description', description), field('Blueprint', blueprint)),
    constants,
    button,
    out,
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void action(button, out, async () => {
      const values: Record<string, number> = {};
      for (const input of constants.querySelectorAll<HTMLInputElement>('input[data-constant]')) {
        if (input.value !== '') values[input.dataset['constant']!] = Number(input.value);
      }
      await must(
        ctx.api.POST('/api/v1/org/{org_id}/proj/{proj_id}/sensors', {
          params: { path: { org_id: org, proj_id: proj } },
          body: {
            name: name.value.trim(),
            description: description.value,
            blueprint_id: blueprint.value ? Number(blueprint.value) : undefined,
            constants: Object.keys(values).length ? values : undefined,
          },
        }),
      );
      form.reset();
      showConstants();
      created();
    });
  });
  return form;
}
