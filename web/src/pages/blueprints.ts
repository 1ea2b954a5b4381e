// The organization's blueprints: listed, created and edited as the JSON of
// their inputs, constants and outputs, which is how the API takes them.
import { must, type Blueprint, type BlueprintWrite } from '../api';
import { allPages, type Ctx } from '../app';
import { action, errorBox, field, h, section, table } from '../dom';
import { errorPath } from '../fielderrors';
import { can, type Role } from '../roles';

const EXAMPLE: BlueprintWrite = {
  name: 'Vibrating-wire piezometer',
  description: '',
  inputs: [
    { key: 'freq', name: 'Frequency', unit: 'Hz' },
    { key: 'temp', name: 'Temperature', unit: 'degC' },
  ],
  constants: [
    { key: 'G', name: 'Gauge factor', unit: 'kPa/digit', default: 0.1 },
    { key: 'R0', name: 'Zero reading', unit: 'digit', default: 0 },
  ],
  outputs: [
    { key: 'digits', name: 'Digits', unit: 'digit', formula: 'freq^2 / 1000' },
    { key: 'pressure', name: 'Pressure', unit: 'kPa', formula: 'G * (R0 - digits)' },
  ],
};

export function blueprintsSection(ctx: Ctx, org: number, role: Role | undefined, changed: () => void): HTMLElement {
  const editor = h('div');
  const list = section(async () => {
    const items = await allPages((cursor) => must(ctx.api.GET('/api/v1/org/{org_id}/blueprints', { params: { path: { org_id: org }, query: { limit: 1000, cursor } } })));
    return blueprintTable(items);
  });
  const saved = () => {
    editor.replaceChildren();
    void list.refresh();
    changed();
  };
  const open = (b?: Blueprint) => {
    editor.replaceChildren(blueprintForm(ctx, org, b, saved, () => editor.replaceChildren()));
    editor.scrollIntoView({ block: 'nearest' });
  };

  function blueprintTable(items: Blueprint[]): HTMLElement {
    if (items.length === 0) return h('p', { class: 'muted' }, 'No blueprints yet.');
    const out = h('div');
    const rows = items.map((b) => {
      const buttons: HTMLElement[] = [];
      if (can(role, 'updateBlueprint')) buttons.push(h('button', { type: 'button', class: 'small', onclick: () => open(b) }, 'Edit'));
      if (can(role, 'deleteBlueprint')) {
        const del = h('button', { type: 'button', class: 'small danger' }, 'Delete');
        del.addEventListener('click', () => {
          if (!confirm(`Delete the blueprint “${b.name}”? Sensors made from it keep their formulas.`)) return;
          void action(del, out, async () => {
            await must(ctx.api.DELETE('/api/v1/org/{org_id}/blueprints/{blueprint_id}', { params: { path: { org_id: org, blueprint_id: b.id } } }));
            saved();
          });
        });
        buttons.push(del);
      }
      return [
        h('strong', null, b.name),
        b.inputs.map((i) => i.key).join(', '),
        (b.constants ?? []).map((c) => (c.default !== undefined ? `${c.key} = ${c.default}` : c.key)).join(', '),
        h('span', { class: 'formulas' }, b.outputs.map((o) => h('code', null, `${o.key} = ${o.formula}`))),
        h('span', { class: 'actions' }, buttons),
      ];
    });
    return h('div', null, out, table(['Blueprint', 'Inputs', 'Constants', 'Outputs', ''], rows, { 'aria-label': 'Blueprints' }));
  }

  return h(
    'div',
    null,
    h('h2', null, 'Blueprints of the organization'),
    h('p', { class: 'muted' }, 'A sensor made from a blueprint gets its own copy, with input and output IDs of its own: editing a blueprint changes no existing sensor.'),
    can(role, 'createBlueprint') ? h('button', { type: 'button', onclick: () => open() }, 'New blueprint') : null,
    editor,
    list.el,
  );
}

const json = (v: unknown) => JSON.stringify(v ?? [], null, 2);

function blueprintForm(ctx: Ctx, org: number, b: Blueprint | undefined, saved: () => void, cancel: () => void): HTMLElement {
  const start = b ?? EXAMPLE;
  const name = h('input', { name: 'name', required: true, maxlength: 200, value: b ? b.name : '' , placeholder: EXAMPLE.name });
  const description = h('input', { name: 'description', maxlength: 2000, value: start.description ?? '' });
  const areas = {
    inputs: h('textarea', { name: 'inputs', rows: 6, spellcheck: 'false', value: json(start.inputs) }),
    constants: h('textarea', { name: 'constants', rows: 6, spellcheck: 'false', value: json(start.constants) }),
    outputs: h('textarea', { name: 'outputs', rows: 6, spellcheck: 'false', value: json(start.outputs) }),
  };
  const slots = { name: h('div'), inputs: h('div'), constants: h('div'), outputs: h('div') };
  const button = h('button', { type: 'submit' }, b ? 'Save blueprint' : 'Create blueprint');
  const out = h('div');
  const form = h(
    'form',
    { class: 'card blueprint', 'aria-label': b ? `Edit blueprint ${b.name}` : 'New blueprint' },
    h('h3', null, b ? `Edit “${b.name}”` : 'New blueprint'),
    b ? h('p', { class: 'muted' }, 'Saving replaces the blueprint; sensors already made from it keep their own copy.') : null,
    h('div', { class: 'inline' }, field('Name', name), field('Description', description)),
    slots.name,
    h(
      'div',
      { class: 'json-fields' },
      field('Inputs', areas.inputs, '[{"key", "name", "unit"}]'),
      slots.inputs,
      field('Constants', areas.constants, '[{"key", "name", "unit", "default"?}]'),
      slots.constants,
      field('Outputs', areas.outputs, '[{"key", "name", "unit", "formula"}]: formulas use input, constant and output keys'),
      slots.outputs,
    ),
    h('div', { class: 'actions' }, button, h('button', { type: 'button', class: 'link', onclick: cancel }, 'Cancel')),
    out,
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    for (const s of Object.values(slots)) s.replaceChildren();
    void action(button, out, async () => {
      const body: BlueprintWrite = {
        name: name.value.trim(),
        description: description.value,
        inputs: parseArray(areas.inputs.value, 'inputs', slots.inputs),
        constants: parseArray(areas.constants.value, 'constants', slots.constants),
        outputs: parseArray(areas.outputs.value, 'outputs', slots.outputs),
      };
      try {
        if (b) await must(ctx.api.PUT('/api/v1/org/{org_id}/blueprints/{blueprint_id}', { params: { path: { org_id: org, blueprint_id: b.id } }, body }));
        else await must(ctx.api.POST('/api/v1/org/{org_id}/blueprints', { params: { path: { org_id: org } }, body }));
      } catch (err) {
        // Put the API's message next to the field it names, when it names one.
        const [first] = errorPath(err);
        const slot = first === 'name' ? slots.name : first && first in slots ? slots[first as keyof typeof slots] : undefined;
        if (!slot) throw err;
        slot.replaceChildren(errorBox(err));
        return;
      }
      saved();
    });
  });
  return form;
}

/** parseArray reads one of the JSON fields; a mistake is shown next to it. */
function parseArray<T>(text: string, what: string, slot: HTMLElement): T[] {
  let v: unknown;
  try {
    v = JSON.parse(text.trim() || '[]');
  } catch (err) {
    const msg = `${what}: ${(err as Error).message}`;
    slot.replaceChildren(errorBox(msg));
    throw new Error(`${what} is not valid JSON`);
  }
  if (!Array.isArray(v)) {
    slot.replaceChildren(errorBox(`${what} must be a JSON array`));
    throw new Error(`${what} must be a JSON array`);
  }
  return v as T[];
}
