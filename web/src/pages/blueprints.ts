// The organization's blueprints: listed, created and edited as rows of
// fields for their inputs, constants and outputs, or as the JSON the API
// takes.
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
    { key: 'pressure', name: 'Pressure', unit: 'kPa', formula: 'G * (R0 - digits)', decimals: 1 },
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
        h('span', { class: 'formulas' }, b.outputs.map((o) => h('code', null, `${o.key} = ${o.formula}${o.decimals !== undefined ? `  (${o.decimals} decimals)` : ''}`))),
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

type Part = 'inputs' | 'constants' | 'outputs';
type Item = Record<string, string | number | undefined>;

/**
 * The columns of each part of a blueprint; `default` and `decimals` (how
 * many an output is shown with) are numbers and may be left out.
 */
const PARTS: { part: Part; one: string; columns: string[] }[] = [
  { part: 'inputs', one: 'input', columns: ['key', 'name', 'unit'] },
  { part: 'constants', one: 'constant', columns: ['key', 'name', 'unit', 'default'] },
  { part: 'outputs', one: 'output', columns: ['key', 'name', 'unit', 'formula', 'decimals'] },
];
const NUMBERS: Record<string, Record<string, unknown>> = {
  default: { type: 'number', step: 'any', placeholder: 'none' },
  decimals: { type: 'number', step: 1, min: 0, max: 12, placeholder: 'as computed', class: 'decimals' },
};

/**
 * partEditor edits one part of a blueprint as rows of fields, one row per
 * input, constant or output. get() reads the rows back as the API takes them.
 */
function partEditor(part: Part, one: string, columns: string[]) {
  const body = h('tbody');
  const rows: { el: HTMLElement; inputs: Map<string, HTMLInputElement>; remove: HTMLButtonElement }[] = [];
  // Fields are named by their row's number, which changes as rows go.
  const relabel = () =>
    rows.forEach((r, i) => {
      for (const [c, input] of r.inputs) input.setAttribute('aria-label', `${one} ${i + 1} ${c}`);
      r.remove.setAttribute('aria-label', `Remove ${one} ${i + 1}`);
    });
  const add = (item: Item = {}) => {
    const inputs = new Map<string, HTMLInputElement>();
    const cells = columns.map((c) => {
      const v = item[c];
      const input = h('input', {
        name: `${part}-${c}`,
        value: v === undefined ? '' : String(v),
        spellcheck: 'false',
        ...(NUMBERS[c] ?? { required: c !== 'unit' }),
      });
      inputs.set(c, input);
      return h('td', { 'data-label': c }, input);
    });
    const remove = h('button', { type: 'button', class: 'small link' }, 'Remove');
    const row = { el: h('tr', null, cells, h('td', null, remove)), inputs, remove };
    remove.addEventListener('click', () => {
      rows.splice(rows.indexOf(row), 1);
      row.el.remove();
      relabel();
    });
    rows.push(row);
    body.append(row.el);
    relabel();
  };
  const set = (items: Item[]) => {
    rows.length = 0;
    body.replaceChildren();
    for (const item of items) add(item);
  };
  const get = (): Item[] =>
    rows.map((r) => {
      const item: Item = {};
      for (const [c, input] of r.inputs) {
        if (c in NUMBERS) {
          if (input.value !== '') item[c] = Number(input.value);
        } else item[c] = input.value.trim();
      }
      return item;
    });
  const el = h(
    'div',
    { class: 'table-wrap part' },
    h('table', { 'aria-label': part[0]!.toUpperCase() + part.slice(1) }, h('thead', null, h('tr', null, columns.map((c) => h('th', null, c)), h('th'))), body),
    h('button', { type: 'button', class: 'small', onclick: () => add() }, `Add ${one === 'input' ? 'an' : 'a'} ${one}`),
  );
  return { el, set, get };
}

function blueprintForm(ctx: Ctx, org: number, b: Blueprint | undefined, saved: () => void, cancel: () => void): HTMLElement {
  const start = b ?? EXAMPLE;
  const name = h('input', { name: 'name', required: true, maxlength: 200, value: b ? b.name : '', placeholder: EXAMPLE.name });
  const description = h('input', { name: 'description', maxlength: 2000, value: start.description ?? '' });
  const editors = Object.fromEntries(PARTS.map((p) => [p.part, partEditor(p.part, p.one, p.columns)])) as Record<Part, ReturnType<typeof partEditor>>;
  for (const p of PARTS) editors[p.part].set((start[p.part] ?? []) as Item[]);
  const slots = { name: h('div'), inputs: h('div'), constants: h('div'), outputs: h('div'), json: h('div') };

  // The same three parts as one JSON text, for pasting or copying a whole blueprint.
  const jsonArea = h('textarea', { name: 'json', rows: 18, spellcheck: 'false' });
  const fieldsView = h(
    'div',
    null,
    PARTS.map((p) => [h('h4', null, p.part[0]!.toUpperCase() + p.part.slice(1)), editors[p.part].el, slots[p.part]]),
    h('p', { class: 'muted' }, 'Formulas use the keys of inputs, constants and outputs above them.'),
  );
  const jsonView = h('div', { hidden: true }, field('Blueprint JSON', jsonArea, '{"inputs": [{"key", "name", "unit"}], "constants": [{"key", "name", "unit", "default"?}], "outputs": [{"key", "name", "unit", "formula", "decimals"?}]}'), slots.json);
  let mode: 'fields' | 'json' = 'fields';
  const modeButtons = h(
    'div',
    { class: 'tabs', role: 'group', 'aria-label': 'Editor' },
    h('button', { type: 'button', 'aria-pressed': 'true', onclick: () => switchTo('fields') }, 'Fields'),
    h('button', { type: 'button', 'aria-pressed': 'false', onclick: () => switchTo('json') }, 'JSON'),
  );
  const parts = (): Pick<BlueprintWrite, Part> => {
    if (mode === 'fields') return Object.fromEntries(PARTS.map((p) => [p.part, editors[p.part].get()])) as unknown as Pick<BlueprintWrite, Part>;
    return parseParts(jsonArea.value, slots.json);
  };
  function switchTo(next: 'fields' | 'json') {
    if (next === mode) return;
    slots.json.replaceChildren();
    if (next === 'json') {
      jsonArea.value = JSON.stringify(parts(), null, 2);
    } else {
      let got: Pick<BlueprintWrite, Part>;
      try {
        got = parts();
      } catch {
        return; // the mistake is shown next to the JSON
      }
      for (const p of PARTS) editors[p.part].set((got[p.part] ?? []) as Item[]);
    }
    mode = next;
    fieldsView.hidden = mode !== 'fields';
    jsonView.hidden = mode !== 'json';
    for (const btn of modeButtons.querySelectorAll('button')) btn.setAttribute('aria-pressed', String(btn.textContent?.toLowerCase() === mode));
  }

  const button = h('button', { type: 'submit' }, b ? 'Save blueprint' : 'Create blueprint');
  const out = h('div');
  const form = h(
    'form',
    { class: 'card blueprint', 'aria-label': b ? `Edit blueprint ${b.name}` : 'New blueprint' },
    h('h3', null, b ? `Edit “${b.name}”` : 'New blueprint'),
    b ? h('p', { class: 'muted' }, 'Saving replaces the blueprint; sensors already made from it keep their own copy.') : null,
    h('div', { class: 'inline' }, field('Name', name), field('Description', description)),
    slots.name,
    modeButtons,
    fieldsView,
    jsonView,
    h('div', { class: 'actions' }, button, h('button', { type: 'button', class: 'link', onclick: cancel }, 'Cancel')),
    out,
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    for (const s of Object.values(slots)) s.replaceChildren();
    void action(button, out, async () => {
      const body: BlueprintWrite = { name: name.value.trim(), description: description.value, ...parts() };
      try {
        if (b) await must(ctx.api.PUT('/api/v1/org/{org_id}/blueprints/{blueprint_id}', { params: { path: { org_id: org, blueprint_id: b.id } }, body }));
        else await must(ctx.api.POST('/api/v1/org/{org_id}/blueprints', { params: { path: { org_id: org } }, body }));
      } catch (err) {
        // Put the API's message next to the part it names, when it names one.
        const [first] = errorPath(err);
        const slot = first === 'name' ? slots.name : first && first in editors ? (mode === 'json' ? slots.json : slots[first as Part]) : undefined;
        if (!slot) throw err;
        slot.replaceChildren(errorBox(err));
        return;
      }
      saved();
    });
  });
  return form;
}

/** parseParts reads the JSON view; a mistake is shown next to it. */
function parseParts(text: string, slot: HTMLElement): Pick<BlueprintWrite, Part> {
  const fail = (msg: string): never => {
    slot.replaceChildren(errorBox(msg));
    throw new Error('See the message next to the JSON.');
  };
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    return fail(`not valid JSON: ${(err as Error).message}`);
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) return fail('the JSON must be an object with inputs, constants and outputs');
  const o = v as Record<string, unknown>;
  for (const p of PARTS) if (o[p.part] !== undefined && !Array.isArray(o[p.part])) fail(`${p.part} must be a JSON array`);
  return { inputs: (o['inputs'] ?? []) as BlueprintWrite['inputs'], constants: (o['constants'] ?? []) as BlueprintWrite['constants'], outputs: (o['outputs'] ?? []) as BlueprintWrite['outputs'] };
}
