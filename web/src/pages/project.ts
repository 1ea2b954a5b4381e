// Project: its sensors with their latest reading, and the organization's
// blueprints that sensors are made from.
import { must, type Blueprint, type Latest, type Project, type Sensor } from '../api';
import { allPages, id, orgName, orgRole, type Ctx } from '../app';
import { action, field, h, section, table } from '../dom';
import { formatNumber, seriesOf, valueOf } from '../readings';
import { can } from '../roles';
import { href } from '../router';
import { formatAge, formatDateTime } from '../time';
import { blueprintsSection } from './blueprints';
import { alarmsSection } from './projectalarms';

export function projectPage(ctx: Ctx): HTMLElement {
  const org = id(ctx, 'org');
  const proj = id(ctx, 'proj');
  const role = orgRole(ctx, org);
  const path = { org_id: org, proj_id: proj };
  const header = h('div');

  const sensors = section(async () => {
    const [project, list, latest, blueprints] = await Promise.all([
      must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}', { params: { path } })),
      allPages((cursor) => must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/sensors', { params: { path, query: { limit: 1000, cursor } } }))),
      allPages((cursor) => must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/latest', { params: { path, query: { limit: 1000, cursor, outputs: true } } }))),
      allPages((cursor) => must(ctx.api.GET('/api/v1/org/{org_id}/blueprints', { params: { path: { org_id: org }, query: { limit: 1000, cursor } } }))),
    ]);
    ctx.setCrumbs([
      { label: orgName(ctx, org), path: `/org/${org}` },
      { label: project.name, path: `/org/${org}/proj/${proj}` },
    ]);
    header.replaceChildren(projectHeader(project));
    return h(
      'div',
      null,
      sensorTable(org, list, latest, blueprints),
      can(role, 'createSensor') ? createSensorForm(ctx, org, proj, blueprints, () => sensors.refresh()) : null,
    );
  });

  return h(
    'div',
    null,
    header,
    h('h2', null, 'Sensors'),
    sensors.el,
    alarmsSection(ctx, path, role),
    blueprintsSection(ctx, org, role, () => sensors.refresh()),
  );
}

function projectHeader(p: Project): HTMLElement {
  return h(
    'div',
    null,
    h('h1', null, p.name, ' ', h('span', { class: `badge ${p.state}`, 'data-testid': 'project-state' }, p.state)),
    p.description ? h('p', null, p.description) : null,
    // Two projects may share a name; the ID and creation date tell them apart.
    h('p', { class: 'muted', 'data-testid': 'project-id' }, `Project ${p.id} · created ${formatDateTime(p.created_at)}`),
    p.state === 'archived' ? h('p', { class: 'notice' }, 'This project is archived: its readings can be read, but posting new ones answers 409 until it is restored.') : null,
  );
}

function sensorTable(org: number, sensors: Sensor[], latest: Latest[], blueprints: Blueprint[]): HTMLElement {
  if (sensors.length === 0) return h('p', { class: 'muted' }, 'No sensors yet.');
  const latestOf = new Map(latest.map((l) => [l.sensor_id, l.reading]));
  const blueprintName = new Map(blueprints.map((b) => [b.id, b.name]));
  const now = new Date();
  const rows = sensors.map((s) => {
    const r = latestOf.get(s.id);
    const base = `/org/${org}/proj/${s.project_id}/sensors/${s.id}`;
    const values = r
      ? seriesOf(s, [r])
          .map((series) => [series, valueOf(r, series)] as const)
          .filter(([, v]) => v !== null)
          .map(([series, v]) => `${series.key} ${formatNumber(v)}${series.unit ? ' ' + series.unit : ''}`)
          .join(' · ')
      : '';
    return [
      h('a', { href: href(base) }, s.name),
      s.blueprint_id ? (blueprintName.get(s.blueprint_id) ?? `blueprint ${s.blueprint_id}`) : s.inputs.length ? 'blueprint deleted' : 'none',
      r ? h('span', { title: r.datetime }, formatDateTime(r.datetime)) : h('span', { class: 'muted' }, 'no readings'),
      r ? h('span', { 'data-testid': 'age' }, formatAge(r.datetime, now)) : '',
      h('span', { class: 'values' }, values),
      h('span', { class: 'actions' }, h('a', { href: href(base) }, 'Formulas'), h('a', { href: href(base + '/readings') }, 'Readings')),
    ];
  });
  return table(['Sensor', 'Blueprint', 'Latest reading', 'Age', 'Latest values', ''], rows, { 'aria-label': 'Sensors' });
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
    h('h3', null, 'New sensor'),
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
