// Sensor, formulas setup: the validity checks every reading passes through
// as it is stored, beside the alarm rules. The API replaces the list as a
// whole (PUT …/checks); adding, editing and deleting one check sends the
// list with that change, and the API's message shows next to the field it
// names.
import { must, type Schemas, type Sensor } from '../api';
import type { Ctx } from '../app';
import { CHECK_FIELDS, CHECK_KINDS, checkErrorField, describeCheck, type Check, type CheckField, type CheckKind } from '../checks';
import { action, h, section, table, type Child } from '../dom';
import { editor } from '../editor';
import { can, type Role } from '../roles';
import { targets } from './sensoralarms';

type SensorPath = { org_id: number; proj_id: number; sensor_id: number };

/**
 * checksSection lists and edits the sensor's validity checks. beside holds,
 * by input or output key, the cell of the inputs' and outputs' tables
 * where that target's checks are summed up.
 */
export function checksSection(ctx: Ctx, path: SensorPath, sensor: Sensor, role: Role | undefined, beside: Map<string, HTMLElement>): HTMLElement {
  const body = section(async () => {
    const { checks } = await must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/sensors/{sensor_id}/checks', { params: { path } }));
    for (const [key, cell] of beside) {
      cell.replaceChildren(...checks.filter((c) => c.target === key).map((c) => h('div', { class: 'rule-chip' }, flagBadge(c.flag ?? 'suspect'), ` if ${describeCheck(c)}`)));
    }
    return checkTable(ctx, path, sensor, role, checks, () => void body.refresh());
  });
  return h(
    'section',
    { 'aria-label': 'Validity checks' },
    h('h2', null, 'Validity checks'),
    h(
      'p',
      { class: 'muted' },
      'Each reading is checked as it is stored, before the alarm rules: a value that fails a check is flagged suspect or rejected, never refused, and steps no rule. A spike is known once the next reading arrives; a late reading is checked against its neighbours. Checks apply to readings stored from then on.',
    ),
    body.el,
  );
}

/** flagBadge names a flag: a suspect value is kept and marked, a rejected one left out of every read. */
export function flagBadge(flag: 'suspect' | 'rejected'): HTMLElement {
  return h('span', { class: `badge flag-badge flag-badge-${flag}` }, flag);
}

function checkTable(ctx: Ctx, path: SensorPath, s: Sensor, role: Role | undefined, checks: Check[], changed: () => void): Child {
  const editable = can(role, 'updateChecks');
  const save = async (next: Check[]) => {
    // The generated body type asks for `per` and `flag`, which the API defaults (see Check).
    await must(ctx.api.PUT('/api/v1/org/{org_id}/proj/{proj_id}/sensors/{sensor_id}/checks', { params: { path }, body: { checks: next as Schemas['Check'][] } }));
  };
  const form = editable && s.inputs.length + s.outputs.length > 0 ? checkForm(s, checks, save, changed) : undefined;
  const out = h('div');
  const rows = checks.map((c, i) => {
    const buttons: Child[] = [];
    if (form) buttons.push(h('button', { type: 'button', class: 'small', onclick: () => form.edit(i) }, 'Edit'));
    if (editable) {
      const del = h('button', { type: 'button', class: 'small danger' }, 'Delete');
      del.addEventListener('click', () => {
        if (!confirm(`Delete the check “${c.target} ${describeCheck(c)}”?`)) return;
        void action(del, out, async () => {
          await save(checks.filter((_, j) => j !== i));
          changed();
        });
      });
      buttons.push(del);
    }
    return [h('code', null, c.target), CHECK_KINDS.find((k) => k.kind === c.kind)?.label ?? c.kind, describeCheck(c), flagBadge(c.flag ?? 'suspect'), h('span', { class: 'actions' }, buttons)];
  });
  return [
    rows.length ? table(['Target', 'Check', 'Flags a value at', 'As', ''], rows, { 'aria-label': 'Checks' }) : h('p', { class: 'muted' }, 'No checks: every value is taken as it comes.'),
    out,
    form?.el,
  ];
}

function checkForm(s: Sensor, checks: Check[], save: (next: Check[]) => Promise<void>, changed: () => void) {
  const target = h('select', { name: 'check-target' }, targets(s).map((t) => h('option', { value: t.key }, t.label)));
  const kind = h('select', { name: 'check-kind' }, CHECK_KINDS.map((k) => h('option', { value: k.kind }, k.label)));
  const inputs: Record<Exclude<CheckField, 'target' | 'kind' | 'flag'>, HTMLInputElement> = {
    min: h('input', { type: 'number', step: 'any', name: 'check-min' }),
    max: h('input', { type: 'number', step: 'any', name: 'check-max' }),
    bound: h('input', { type: 'number', step: 'any', name: 'check-bound' }),
    per: h('input', { type: 'number', step: '1', name: 'check-per', placeholder: '86400' }),
    count: h('input', { type: 'number', step: '1', name: 'check-count' }),
  };
  const flag = h('select', { name: 'check-flag' }, h('option', { value: 'suspect' }, 'suspect: kept and marked'), h('option', { value: 'rejected' }, 'rejected: left out of every read'));
  // Only the fields of the chosen kind.
  const showFields = () => {
    const wanted = CHECK_FIELDS[kind.value as CheckKind];
    for (const f of ['min', 'max', 'bound', 'per', 'count'] as const) form.wrapper(f).hidden = !wanted.includes(f);
  };
  kind.addEventListener('change', showFields);
  // The check edited is its index in the list; a new one goes at its end.
  const form = editor<CheckField, number>({
    label: 'Validity check',
    noun: 'check',
    errorId: 'check-error-',
    fields: (named) => [
      named('target', 'Target', target),
      named('kind', 'Check', kind),
      named('min', 'Min', inputs.min, 'the lowest plausible value; empty for none'),
      named('max', 'Max', inputs.max, 'the highest plausible value; empty for none'),
      named('bound', 'Bound', inputs.bound, 'spike: the largest plausible jump; rate: the largest plausible change per unit of time'),
      named('per', 'Per (s)', inputs.per, '86400 is per day'),
      named('count', 'Count', inputs.count, 'how many equal values in a row are suspect, 2 to 1000'),
      named('flag', 'Flag as', flag),
    ],
    async save(editing) {
      const k = kind.value as CheckKind;
      const check: Check = { target: target.value, kind: k, flag: flag.value as 'suspect' | 'rejected' };
      // An empty field is left out (the API's default, or its refusal);
      // anything else goes as typed, so that the API's message answers it.
      for (const f of CHECK_FIELDS[k]) {
        const v = inputs[f as keyof typeof inputs].value.trim();
        if (v !== '') (check as Record<string, unknown>)[f] = Number(v);
      }
      await save(editing === undefined ? [...checks, check] : checks.map((c, i) => (i === editing ? check : c)));
    },
    locate: (err, editing) => checkErrorField(err, editing ?? checks.length),
    reset: showFields,
    saved: changed,
  });
  showFields();
  return {
    el: form.el,
    /** edit fills the form with the check at index i, to replace it. */
    edit(i: number) {
      const c = checks[i]!;
      target.value = c.target;
      kind.value = c.kind;
      for (const [f, input] of Object.entries(inputs)) {
        const v = (c as Record<string, unknown>)[f];
        input.value = typeof v === 'number' ? String(v) : '';
      }
      flag.value = c.flag ?? 'suspect';
      showFields();
      form.edit(i, `Edit the check on ${c.target}`);
    },
  };
}
