// Sensor, formulas setup: the instance's IDs, each input's source (its own
// readings or a link to another sensor), formulas, constants and dated
// calibrations, editable by admins, and how to post readings to it.
import { must, type Sensor } from '../api';
import { allPages, id, orgName, orgRole, type Ctx } from '../app';
import { action, copyButton, field, h, section, table } from '../dom';
import { postExample } from '../examples';
import { errorPath, showIn } from '../fielderrors';
import { can, type Role } from '../roles';
import { inForce } from '../inforce';
import { sourceText } from '../sources';
import { formatNumber } from '../readings';
import { href } from '../router';
import { formatDateTime } from '../time';
import { alarmRulesSection, levelBadge } from './sensoralarms';
import { checksSection } from './sensorchecks';
import { uploadForm } from './sensorupload';

export function sensorPage(ctx: Ctx): HTMLElement {
  const org = id(ctx, 'org');
  const proj = id(ctx, 'proj');
  const sensorId = id(ctx, 'sensor');
  const role = orgRole(ctx, org);
  const path = { org_id: org, proj_id: proj, sensor_id: sensorId };

  const body = section(async () => {
    const projPath = { org_id: org, proj_id: proj };
    const [project, sensor, sensors] = await Promise.all([
      must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}', { params: { path: projPath } })),
      must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/sensors/{sensor_id}', { params: { path } })),
      allPages((cursor) => must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/sensors', { params: { path: projPath, query: { limit: 1000, cursor } } }))),
    ]);
    projectName = project.name;
    projectSensors = sensors;
    return render(sensor);
  });

  // Each save answers the sensor as it now is; show that.
  let projectName = '';
  let projectSensors: Sensor[] = [];
  const shown = h('div');
  function render(sensor: Sensor, savedNote?: string): HTMLElement {
    ctx.setCrumbs([
      { label: orgName(ctx, org), path: `/org/${org}` },
      { label: projectName, path: `/org/${org}/proj/${proj}` },
      { label: sensor.name },
    ]);
    // Each input's and output's rules and checks show beside it; alarmRulesSection and checksSection fill these.
    const targets = [...sensor.inputs, ...sensor.outputs];
    const beside = new Map(targets.map((x) => [x.key, h('div', { 'data-testid': `rules-${x.key}` })]));
    const checksBeside = new Map(targets.map((x) => [x.key, h('div', { 'data-testid': `checks-${x.key}` })]));
    const cells = new Map(targets.map((x) => [x.key, h('div', null, beside.get(x.key), checksBeside.get(x.key))]));
    return h(
      'div',
      null,
      sensorHeader(ctx, org, sensor, 'setup'),
      savedNote ? h('p', { class: 'ok', role: 'status' }, savedNote) : null,
      sensor.inputs.length === 0 && sensor.outputs.length === 0
        ? h('p', { class: 'notice' }, 'This sensor has no blueprint: it takes readings with any input ID, and has no outputs.')
        : [
            h('h2', null, 'Inputs'),
            inputTable(sensor, projectSensors, cells),
            can(role, 'updateLinks') ? linksForm(ctx, path, sensor, projectSensors, (s) => replace(render(s, `Saved: links, formulas version ${s.formulas_version}.`))) : null,
            formulasForm(ctx, path, sensor, role, cells, (s) => replace(render(s, `Saved: formulas version ${s.formulas_version}.`))),
            sensor.constant_definitions.length ? calibrationsForm(ctx, path, sensor, role, (s) => replace(render(s, `Saved: calibrations, formulas version ${s.formulas_version}.`))) : null,
            alarmRulesSection(ctx, path, sensor, role, beside),
            checksSection(ctx, path, sensor, role, checksBeside),
          ],
      examples(ctx, sensor, org),
      can(role, 'postReadings') ? uploadForm(ctx.api, path, sensor, can(role, 'setImportProfile')) : null,
      can(role, 'updateSensor') || can(role, 'deleteSensor') ? manageForm(ctx, path, sensor, role, (s) => replace(render(s, 'Saved: name and description.'))) : null,
    );
  }
  function replace(el: HTMLElement) {
    shown.replaceChildren(el);
  }
  shown.append(body.el);
  return shown;
}

export function sensorHeader(ctx: Ctx, org: number, s: Sensor, tab: 'setup' | 'readings'): HTMLElement {
  const base = href(`/org/${org}/proj/${s.project_id}/sensors/${s.id}`);
  return h(
    'div',
    null,
    h('div', { class: 'sensor-title' }, h('h1', null, s.name), statusBadge(ctx, org, s)),
    s.description ? h('p', null, s.description) : null,
    h('p', { class: 'muted' }, `Sensor ${s.id}`, s.blueprint_id ? ` · from blueprint ${s.blueprint_id}` : '', ` · formulas version ${s.formulas_version} · `, h('a', { href: href(`/org/${org}/proj/${s.project_id}/audit?sensor=${s.id}`) }, 'Its changes in the audit trail')),
    h(
      'nav',
      { class: 'tabs' },
      h('a', { href: base, 'aria-current': tab === 'setup' ? 'page' : undefined }, 'Formulas setup'),
      h('a', { href: base + '/readings', 'aria-current': tab === 'readings' ? 'page' : undefined }, 'Readings'),
    ),
  );
}

/**
 * statusBadge says the sensor's state beside its name: its most severe
 * level, its unacknowledged alarms and whether it is overdue, or at rest;
 * it links to the project's current alarms.
 */
function statusBadge(ctx: Ctx, org: number, s: Sensor): HTMLElement {
  const el = h('a', { class: 'sensor-status', href: href(`/org/${org}/proj/${s.project_id}`), 'data-testid': 'sensor-status' });
  const path = { org_id: org, proj_id: s.project_id };
  void must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/status', { params: { path, query: { sensor_id: [s.id] } } })).then(
    (page) => {
      const st = page.items[0];
      if (!st) return;
      el.replaceChildren(
        h(
          'span',
          null,
          st.level ? levelBadge(st.level.name, st.level.colour) : h('span', { class: 'badge' }, 'at rest'),
          st.alarms ? ` ${st.alarms} ${st.alarms === 1 ? 'alarm' : 'alarms'}` : '',
          st.unacknowledged ? [' ', h('span', { class: 'badge unacked' }, `${st.unacknowledged} unacknowledged`)] : '',
          st.overdue ? [' ', h('span', { class: 'badge overdue' }, 'overdue')] : '',
        ),
      );
      el.title = 'The project’s status board and current alarms';
    },
    () => undefined, // a badge is not worth an error on the page
  );
  return el;
}

function idCell(n: number, what: string): HTMLElement {
  return h('span', { class: 'id' }, h('code', { 'data-testid': `id-${what}` }, String(n)), copyButton(String(n), 'Copy', `the ID of ${what}`));
}

// inputTable shows each input with its source (the sensor's own readings,
// or another sensor's value through a link), its baselines (zero
// readings), which formulas reach as the key followed by 0 and are set
// through the API, and its alarm rules.
function inputTable(s: Sensor, sensors: Sensor[], rules: Map<string, HTMLElement>): HTMLElement {
  const baselines = (key: string) => {
    const dated = s.baselines?.[key] ?? [];
    if (dated.length === 0) return h('span', { class: 'muted' }, 'none');
    return h('span', null, h('code', null, `${key}0`), ' = ', dated.map((b) => `${b.value} from ${b.from}`).join('; '));
  };
  return table(
    ['ID', 'Key', 'Name', 'Unit', 'Source', 'Baseline', 'Rules and checks'],
    s.inputs.map((i) => [idCell(i.id, i.key), h('code', null, i.key), i.name, i.unit, h('span', { 'data-testid': `source-${i.key}` }, sourceText(i.link, sensors)), baselines(i.key), rules.get(i.key)]),
    { 'aria-label': 'Inputs' },
  );
}

/**
 * linksForm lets an admin link each input to an input or output of another
 * sensor of the project, or back to the sensor's own readings; saving
 * replaces every link of the sensor.
 */
function linksForm(ctx: Ctx, path: SensorPath, s: Sensor, sensors: Sensor[], saved: (s: Sensor) => void): HTMLElement {
  const sources = sensors.filter((x) => x.id !== s.id && x.inputs.length + x.outputs.length > 0);
  const rows = s.inputs.map((i) => {
    const sensor = h(
      'select',
      { name: `link-${i.key}-sensor`, 'aria-label': `Source of ${i.key}` },
      h('option', { value: '' }, 'own reading'),
      sources.map((x) => h('option', { value: String(x.id), selected: x.id === i.link?.sensor_id }, x.name)),
    );
    const key = h('select', { name: `link-${i.key}-key`, 'aria-label': `Source key of ${i.key}` });
    const staleness = h('input', { name: `link-${i.key}-staleness`, type: 'number', min: 1, max: 604800, step: 1, value: String(i.link?.staleness ?? 3600), 'aria-label': `Staleness of ${i.key} (s)` });
    const keys = () => {
      const x = sources.find((x) => String(x.id) === sensor.value);
      key.replaceChildren(...(x ? [...x.inputs, ...x.outputs].map((k) => h('option', { value: k.key, selected: k.key === i.link?.key }, k.key)) : []));
      key.disabled = staleness.disabled = !x;
    };
    sensor.addEventListener('change', keys);
    keys();
    return { input: i.key, sensor, key, staleness, cells: [h('code', null, i.key), sensor, key, staleness] };
  });
  const button = h('button', { type: 'submit' }, 'Save links');
  const out = h('div');
  const form = h(
    'form',
    { 'aria-label': 'Links' },
    h('h2', null, 'Links'),
    h('p', { class: 'muted' }, "A linked input takes the source's value as of each reading, if no older than the staleness; the link wins over the reading's own value."),
    table(['Input', 'Source sensor', 'Key', 'Staleness (s)'], rows.map((r) => r.cells), { 'aria-label': 'Links' }),
    h('div', { class: 'actions' }, button),
    out,
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void action(button, out, async () => {
      const body: Record<string, { sensor_id: number; key: string; staleness: number }> = {};
      for (const r of rows) {
        if (r.sensor.value === '') continue;
        body[r.input] = { sensor_id: Number(r.sensor.value), key: r.key.value, staleness: Number(r.staleness.value) };
      }
      saved(await must(ctx.api.PUT('/api/v1/org/{org_id}/proj/{proj_id}/sensors/{sensor_id}/links', { params: { path }, body })));
    });
  });
  return form;
}

type SensorPath = { org_id: number; proj_id: number; sensor_id: number };

function formulasForm(ctx: Ctx, path: SensorPath, s: Sensor, role: Role | undefined, rules: Map<string, HTMLElement>, saved: (s: Sensor) => void): HTMLElement {
  const editable = can(role, 'updateFormulas');
  const formulaInputs = new Map<string, HTMLInputElement>();
  const constantInputs = new Map<string, HTMLInputElement>();
  const slots = new Map<string, HTMLElement>(); // "outputs.key" or "constants.key" → where its error goes

  const outputRows = s.outputs.map((o) => {
    const slot = h('div', { class: 'field-error' });
    slots.set(`outputs.${o.key}`, slot);
    let formula: HTMLElement = h('code', null, o.formula);
    if (editable) {
      const input = h('input', { name: `formula-${o.key}`, value: o.formula, maxlength: 1000, spellcheck: 'false', 'aria-label': `Formula of ${o.key}` });
      formulaInputs.set(o.key, input);
      formula = input;
    }
    return [idCell(o.id, o.key), h('code', null, o.key), o.name, o.unit, h('div', null, formula, slot), rules.get(o.key)];
  });

  const constantRows = s.constant_definitions.map((c) => {
    const slot = h('div', { class: 'field-error' });
    slots.set(`constants.${c.key}`, slot);
    let value: HTMLElement = h('span', null, c.value !== undefined ? formatNumber(c.value) : '');
    if (editable) {
      const input = h('input', { type: 'number', step: 'any', name: `constant-${c.key}`, value: c.value !== undefined ? String(c.value) : '', placeholder: c.default !== undefined ? `default ${c.default}` : 'no value', 'aria-label': `Value of ${c.key}` });
      constantInputs.set(c.key, input);
      value = input;
    }
    const now = inForce(s, c.key);
    return [
      h('code', null, c.key),
      c.name,
      c.unit,
      c.default !== undefined ? formatNumber(c.default) : '',
      h('div', null, value, slot),
      now ? h('span', { 'data-testid': `in-force-${c.key}` }, formatNumber(now.value), now.since ? h('small', { class: 'muted' }, ` since ${formatDateTime(now.since)}`) : '') : h('span', { class: 'muted' }, 'none'),
    ];
  });

  const button = h('button', { type: 'submit' }, 'Save formulas and constants');
  const out = h('div');
  const form = h(
    'form',
    { 'aria-label': 'Formulas' },
    h('h2', null, 'Outputs'),
    table(['ID', 'Key', 'Name', 'Unit', 'Formula', 'Rules and checks'], outputRows, { 'aria-label': 'Outputs' }),
    s.constant_definitions.length
      ? [
          h('h2', null, 'Constants'),
          h('p', { class: 'muted' }, 'A reading uses the latest dated value (below) at or before its datetime, else the undated value, else the default. In force: what a reading taken now uses.'),
          table(['Key', 'Name', 'Unit', 'Default', 'Value', 'In force'], constantRows, { 'aria-label': 'Constants' }),
        ]
      : null,
    editable ? h('div', { class: 'actions' }, button, h('small', { class: 'muted' }, 'Outputs are computed on read: a new formula applies to every past reading.')) : null,
    out,
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    for (const slot of slots.values()) slot.replaceChildren();
    void action(button, out, async () => {
      const outputs: Record<string, string> = {};
      for (const o of s.outputs) {
        const v = formulaInputs.get(o.key)!.value.trim();
        if (v !== o.formula) outputs[o.key] = v;
      }
      const constants: Record<string, number | null> = {};
      for (const c of s.constant_definitions) {
        const input = constantInputs.get(c.key)!;
        if (input.value === '') {
          // An emptied field removes the sensor's own value: the blueprint's default applies again.
          if (c.value !== undefined) constants[c.key] = null;
          continue;
        }
        if (Number(input.value) !== c.value) constants[c.key] = Number(input.value);
      }
      if (!Object.keys(outputs).length && !Object.keys(constants).length) throw new Error('Nothing changed.');
      let next: Sensor;
      try {
        next = await must(
          ctx.api.PUT('/api/v1/org/{org_id}/proj/{proj_id}/sensors/{sensor_id}/formulas', {
            params: { path },
            body: { outputs: Object.keys(outputs).length ? outputs : undefined, constants: Object.keys(constants).length ? constants : undefined },
          }),
        );
      } catch (err) {
        throw showIn(slots.get(slotKey(errorPath(err))), err);
      }
      saved(next);
    });
  });
  return form;
}

/** slotKey is "outputs.pressure" for the error path ["outputs", "pressure", …]. */
const slotKey = (path: string[]) => path.slice(0, 2).join('.');

interface Row {
  from: HTMLInputElement;
  value: HTMLInputElement;
  el: HTMLElement;
}

function calibrationsForm(ctx: Ctx, path: SensorPath, s: Sensor, role: Role | undefined, saved: (s: Sensor) => void): HTMLElement {
  const editable = can(role, 'updateCalibrations');
  const rows = new Map<string, Row[]>();
  const slots = new Map<string, HTMLElement>();

  const groups = s.constant_definitions.map((c) => {
    const list = h('div', { class: 'calibrations' });
    const slot = h('div', { class: 'field-error' });
    slots.set(c.key, slot);
    rows.set(c.key, []);
    const add = (from = '', value = '') => {
      const row: Row = {
        from: h('input', { name: `calibration-${c.key}-from`, value: from, placeholder: '2024-06-01T00:00:00Z', disabled: !editable, 'aria-label': `${c.key} from`, spellcheck: 'false' }),
        value: h('input', { name: `calibration-${c.key}-value`, type: 'number', step: 'any', value, disabled: !editable, 'aria-label': `${c.key} value` }),
        el: h('div', { class: 'inline calibration' }),
      };
      const remove = h('button', { type: 'button', class: 'small link' }, 'Remove');
      remove.addEventListener('click', () => {
        rows.set(c.key, rows.get(c.key)!.filter((r) => r !== row));
        row.el.remove();
      });
      row.el.append(h('span', null, 'from'), row.from, h('span', null, c.key, ' ='), row.value, editable ? remove : '');
      rows.get(c.key)!.push(row);
      list.append(row.el);
    };
    for (const cal of s.calibrations[c.key] ?? []) add(cal.from, String(cal.value));
    return h(
      'fieldset',
      null,
      h('legend', null, h('code', null, c.key), ` ${c.name}${c.unit ? ` (${c.unit})` : ''}`),
      list,
      (s.calibrations[c.key] ?? []).length === 0 && !editable ? h('p', { class: 'muted' }, 'No dated values.') : null,
      editable ? h('button', { type: 'button', class: 'small', onclick: () => add() }, `Add a dated value of ${c.key}`) : null,
      slot,
    );
  });

  const button = h('button', { type: 'submit' }, 'Save calibrations');
  const out = h('div');
  const form = h(
    'form',
    { 'aria-label': 'Calibrations' },
    h('h2', null, 'Calibrations'),
    h('p', { class: 'muted' }, 'Dated values of constants, RFC 3339 with a zone (Z or +02:00). Each applies from its datetime until the next one.'),
    groups,
    editable ? h('div', { class: 'actions' }, button) : null,
    out,
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    for (const slot of slots.values()) slot.replaceChildren();
    void action(button, out, async () => {
      // Every constant is sent, so that a removed row is removed: the API
      // replaces the dated values of each constant it is given.
      const body: Record<string, { from: string; value: number }[]> = {};
      for (const [key, list] of rows) {
        body[key] = list.map((r) => {
          if (r.from.value.trim() === '' || r.value.value === '') throw showIn(slots.get(key), new Error(`each dated value of ${key} needs a datetime and a value`));
          return { from: r.from.value.trim(), value: Number(r.value.value) };
        });
      }
      let next: Sensor;
      try {
        next = await must(ctx.api.PUT('/api/v1/org/{org_id}/proj/{proj_id}/sensors/{sensor_id}/calibrations', { params: { path }, body }));
      } catch (err) {
        // The validator names /G/0/from; the store names constant "G".
        const p = errorPath(err);
        const key = p[0] === 'constants' ? p[1] : p[0];
        throw showIn(key === undefined ? undefined : slots.get(key), err);
      }
      saved(next);
    });
  });
  return form;
}

/** examples shows how to post readings to the sensor, from its latest reading when it has one. */
function examples(ctx: Ctx, s: Sensor, org: number): HTMLElement {
  const path = { org_id: org, proj_id: s.project_id, sensor_id: s.id };
  return section(async () => {
    const [latest] = await must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/readings/{sensor_id}', { params: { path, query: { order: 'desc', limit: 1 } } })).catch(() => []);
    const ex = postExample(location.origin, org, s, latest);
    return h(
      'div',
      null,
      h('h2', null, 'Posting readings'),
      h('p', { class: 'muted' }, 'A batch is a JSON array; each reading has a datetime with a zone and its inputs by ID. Set TOKEN to a token of an editor or above.'),
      h('p', { class: 'notice', 'data-testid': 'example-note' }, ex.note),
      h('div', { class: 'snippet' }, h('pre', { 'data-testid': 'example-json' }, ex.json), copyButton(ex.json, 'Copy', 'the JSON example')),
      h('div', { class: 'snippet' }, h('pre', { 'data-testid': 'example-curl' }, ex.curl), copyButton(ex.curl, 'Copy', 'the curl command')),
    );
  }).el;
}

/** manageForm renames a sensor, and deletes it with its readings after asking. */
function manageForm(ctx: Ctx, path: SensorPath, s: Sensor, role: Role | undefined, saved: (s: Sensor) => void): HTMLElement {
  const name = h('input', { name: 'name', required: true, maxlength: 200, value: s.name });
  const description = h('input', { name: 'description', maxlength: 2000, value: s.description });
  const save = h('button', { type: 'submit' }, 'Save name and description');
  const remove = h('button', { type: 'button', class: 'danger' }, 'Delete sensor');
  const out = h('div');
  const form = h(
    'form',
    { class: 'card', 'aria-label': 'Sensor' },
    h('h2', null, 'Sensor'),
    can(role, 'updateSensor') ? [h('div', { class: 'inline' }, field('Name', name), field('Description', description)), save] : null,
    can(role, 'deleteSensor') ? [' ', remove] : null,
    out,
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void action(save, out, async () => {
      saved(await must(ctx.api.PUT('/api/v1/org/{org_id}/proj/{proj_id}/sensors/{sensor_id}', { params: { path }, body: { name: name.value.trim(), description: description.value } })));
    });
  });
  remove.addEventListener('click', () => {
    if (!confirm(`Delete the sensor “${s.name}” with all its readings? This cannot be undone.`)) return;
    void action(remove, out, async () => {
      await must(ctx.api.DELETE('/api/v1/org/{org_id}/proj/{proj_id}/sensors/{sensor_id}', { params: { path } }));
      ctx.navigate(`/org/${path.org_id}/proj/${path.proj_id}`);
    });
  });
  return form;
}
