// Sensor, formulas setup: the alarm rules on its inputs and outputs and its
// overdue rule. Each rule also shows beside the input or output it watches.
import { must, type AlarmLevel, type AlarmRule, type AlarmRuleInput, type OverdueRule, type Sensor } from '../api';
import { allPages, type Ctx } from '../app';
import { describeRule, levelColour } from '../alarms';
import { textOn } from '../colours';
import { action, field, h, section, table, type Child } from '../dom';
import { editor } from '../editor';
import { errorPath, showIn } from '../fielderrors';
import { can, type Role } from '../roles';

type SensorPath = { org_id: number; proj_id: number; sensor_id: number };

/** levelBadge is a level's name on its colour, in the text colour that reads on it. */
export function levelBadge(name: string, colour: string): HTMLElement {
  return h('span', { class: 'level', 'data-level': name, style: `background:${colour};color:${textOn(colour)}` }, name);
}

/**
 * alarmRulesSection lists and edits the sensor's rules and overdue rule.
 * beside holds, by input or output key, the cell of the inputs' and
 * outputs' tables where that target's rules are summed up.
 */
export function alarmRulesSection(ctx: Ctx, path: SensorPath, sensor: Sensor, role: Role | undefined, beside: Map<string, HTMLElement>): HTMLElement {
  const projPath = { org_id: path.org_id, proj_id: path.proj_id };
  const body = section(async () => {
    // The rules' list carries the overdue rule: no GET …/overdue, whose 404
    // for a sensor without one the browser would log on every visit.
    let overdue: OverdueRule | undefined;
    const [rules, levels] = await Promise.all([
      allPages(async (cursor) => {
        const page = await must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/sensors/{sensor_id}/alarm-rules', { params: { path, query: { limit: 1000, cursor } } }));
        overdue = page.overdue;
        return page;
      }),
      allPages((cursor) => must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/alarm-levels', { params: { path: projPath, query: { limit: 1000, cursor } } }))),
    ]);
    for (const [key, cell] of beside) {
      cell.replaceChildren(
        ...rules
          .filter((r) => r.target === key)
          .map((r) => h('div', { class: 'rule-chip' }, levelBadge(r.level, levelColour(levels, r.level_id)), ' ', describeRule(r))),
      );
    }
    const refresh = () => void body.refresh();
    return [ruleTable(ctx, path, sensor, role, rules, levels, refresh), overdueForm(ctx, path, role, overdue, levels, refresh)];
  });
  return h(
    'section',
    { 'aria-label': 'Alarm rules' },
    h('h2', null, 'Alarm rules'),
    h(
      'p',
      { class: 'muted' },
      'A rule raises its level when an input or output goes above or below its threshold for as many consecutive readings as its persistence, and holds until the value is back past the threshold by more than the deadband. A rate rule does the same with how fast the target moves: its change from the first value of the window to each reading, per unit of time (5 kPa a day over the last 24 hours). Several rules on one target escalate. A new or edited rule takes effect at once on the newest reading. Values a flag marks step no rule.',
    ),
    body.el,
  );
}

/** targets are the keys a rule or a check may watch, outputs first: what people set levels on. */
export function targets(s: Sensor): { key: string; label: string }[] {
  return [
    ...s.outputs.map((o) => ({ key: o.key, label: `${o.key} (output${o.unit ? `, ${o.unit}` : ''})` })),
    ...s.inputs.map((i) => ({ key: i.key, label: `${i.key} (input${i.unit ? `, ${i.unit}` : ''})` })),
  ];
}

function ruleTable(ctx: Ctx, path: SensorPath, s: Sensor, role: Role | undefined, rules: AlarmRule[], levels: AlarmLevel[], changed: () => void): Child {
  const order = targets(s).map((t) => t.key);
  const sorted = [...rules].sort((a, b) => order.indexOf(a.target) - order.indexOf(b.target) || a.rank - b.rank);
  const form = can(role, 'createAlarmRule') ? ruleForm(ctx, path, s, levels, changed) : undefined;
  const out = h('div');
  const rows = sorted.map((r) => {
    const buttons: Child[] = [];
    if (form && can(role, 'updateAlarmRule')) buttons.push(h('button', { type: 'button', class: 'small', onclick: () => form.edit(r) }, 'Edit'));
    if (can(role, 'deleteAlarmRule')) {
      const del = h('button', { type: 'button', class: 'small danger' }, 'Delete');
      del.addEventListener('click', () => {
        if (!confirm(`Delete the rule “${r.target} ${describeRule(r)}” at ${r.level}?`)) return;
        void action(del, out, async () => {
          await must(ctx.api.DELETE('/api/v1/org/{org_id}/proj/{proj_id}/sensors/{sensor_id}/alarm-rules/{rule_id}', { params: { path: { ...path, rule_id: r.id } } }));
          changed();
        });
      });
      buttons.push(del);
    }
    return [
      h('code', null, r.target),
      levelBadge(r.level, levelColour(levels, r.level_id)),
      describeRule(r),
      r.active ? h('strong', null, 'holds') : h('span', { class: 'muted' }, 'at rest'),
      h('span', { class: 'actions' }, buttons),
    ];
  });
  return [
    rows.length ? table(['Target', 'Level', 'Rule', 'Now', ''], rows, { 'aria-label': 'Rules' }) : h('p', { class: 'muted' }, 'No rules yet.'),
    out,
    form?.el,
  ];
}

function numberOr(input: HTMLInputElement, fallback: number): number {
  // An empty field takes the API's default (NaN, sent as null, for a
  // required one); anything else goes as typed, so that the API's own
  // message answers a wrong value.
  if (input.value.trim() === '') return fallback;
  return Number(input.value);
}

function ruleForm(ctx: Ctx, path: SensorPath, s: Sensor, levels: AlarmLevel[], changed: () => void) {
  const target = h('select', { name: 'target' }, targets(s).map((t) => h('option', { value: t.key }, t.label)));
  const direction = h('select', { name: 'direction' }, h('option', { value: 'above' }, 'above'), h('option', { value: 'below' }, 'below'));
  // A rate rule watches the change per unit of time over a window, not the value.
  const watch = h('select', { name: 'watch' }, h('option', { value: 'value' }, 'its value'), h('option', { value: 'rate' }, 'its rate of change'));
  const rateWindow = h('input', { type: 'number', step: '1', name: 'window', placeholder: '86400' });
  const ratePer = h('input', { type: 'number', step: '1', name: 'per', placeholder: '86400' });
  const threshold = h('input', { type: 'number', step: 'any', name: 'threshold', required: true });
  const level = h('select', { name: 'level' }, levels.map((l) => h('option', { value: l.name }, `${l.name} (rank ${l.rank})`)));
  // No default: a deadband of 0 raises and clears an alarm at every reading
  // that hovers at the threshold, so the admin chooses one.
  const deadband = h('input', { type: 'number', step: 'any', name: 'deadband', required: true });
  const persistence = h('input', { type: 'number', step: '1', name: 'persistence', placeholder: '1' });
  const showRate = () => {
    for (const f of ['window', 'per'] as const) form.wrapper(f).hidden = watch.value !== 'rate';
  };
  watch.addEventListener('change', showRate);
  const form = editor<keyof AlarmRuleInput, AlarmRule>({
    label: 'Alarm rule',
    noun: 'rule',
    errorId: 'error-',
    fields: (named) => [
      named('target', 'Target', target),
      h('div', null, field('Watches', watch)),
      named('direction', 'Direction', direction),
      named('threshold', 'Threshold', threshold),
      named('level', 'Level', level),
      named('deadband', 'Deadband', deadband, 'in the target’s unit: the alarm clears only this far back past the threshold; 0 lets a value hovering at it raise and clear alarms at every reading'),
      named('persistence', 'Persistence', persistence, 'consecutive readings'),
      named('window', 'Window (s)', rateWindow, 'the change is read from the first value at or after this long before each reading: 86400 is the last 24 hours; 60 to 2678400'),
      named('per', 'Per (s)', ratePer, 'the rate’s unit of time: 86400 is per day, 3600 per hour'),
    ],
    async save(editing) {
      const body: AlarmRuleInput = {
        target: target.value,
        direction: direction.value as AlarmRuleInput['direction'],
        threshold: numberOr(threshold, NaN),
        level: level.value,
        deadband: numberOr(deadband, NaN),
        persistence: numberOr(persistence, 1),
        ...(watch.value === 'rate' ? { window: numberOr(rateWindow, 86_400), per: numberOr(ratePer, 86_400) } : {}),
      };
      if (editing) {
        await must(ctx.api.PUT('/api/v1/org/{org_id}/proj/{proj_id}/sensors/{sensor_id}/alarm-rules/{rule_id}', { params: { path: { ...path, rule_id: editing.id } }, body }));
      } else {
        await must(ctx.api.POST('/api/v1/org/{org_id}/proj/{proj_id}/sensors/{sensor_id}/alarm-rules', { params: { path }, body }));
      }
    },
    locate: (err) => errorPath(err)[0] as keyof AlarmRuleInput | undefined,
    reset: showRate,
    saved: changed,
  });
  showRate();
  return {
    el: form.el,
    /** edit fills the form with r, to replace it. */
    edit(r: AlarmRule) {
      target.value = r.target;
      direction.value = r.direction;
      threshold.value = String(r.threshold);
      level.value = r.level;
      deadband.value = String(r.deadband);
      persistence.value = String(r.persistence);
      watch.value = r.window ? 'rate' : 'value';
      rateWindow.value = r.window ? String(r.window) : '';
      ratePer.value = r.per ? String(r.per) : '';
      showRate();
      form.edit(r, `Edit the rule on ${r.target}`);
    },
  };
}

/** overdueForm shows the sensor's overdue rule; admins set and remove it. */
function overdueForm(ctx: Ctx, path: SensorPath, role: Role | undefined, rule: OverdueRule | undefined, levels: AlarmLevel[], changed: () => void): HTMLElement {
  const now = rule
    ? h('p', { 'data-testid': 'overdue-rule' }, 'Raises ', levelBadge(rule.level, levelColour(levels, rule.level_id)), ` when no reading has arrived for ${rule.after_seconds.toLocaleString('en')} s.`)
    : h('p', { class: 'muted', 'data-testid': 'overdue-rule' }, 'No overdue rule: a silent sensor raises nothing.');
  if (!can(role, 'setOverdueRule')) return h('div', null, h('h3', null, 'Overdue'), now);
  const level = h('select', { name: 'overdue-level' }, levels.map((l) => h('option', { value: l.name }, l.name)));
  level.value = rule?.level ?? levels[0]?.name ?? '';
  const after = h('input', { type: 'number', step: '1', name: 'after_seconds', value: rule ? String(rule.after_seconds) : '3600' });
  const slot = h('div', { class: 'field-error' });
  const save = h('button', { type: 'submit' }, 'Save overdue rule');
  const remove = h('button', { type: 'button', class: 'danger' }, 'Remove overdue rule');
  const out = h('div');
  const form = h(
    'form',
    { class: 'card', 'aria-label': 'Overdue rule' },
    h('h3', null, 'Overdue'),
    now,
    h('div', { class: 'inline' }, field('Level', level), h('div', null, field('After (seconds)', after, '60 to 31,622,400'), slot)),
    h('div', { class: 'actions' }, save, rule && can(role, 'deleteOverdueRule') ? remove : null),
    out,
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    slot.replaceChildren();
    void action(save, out, async () => {
      try {
        await must(ctx.api.PUT('/api/v1/org/{org_id}/proj/{proj_id}/sensors/{sensor_id}/overdue', { params: { path }, body: { level: level.value, after_seconds: Number(after.value) } }));
      } catch (err) {
        throw showIn(errorPath(err)[0] === 'after_seconds' ? slot : undefined, err);
      }
      changed();
    });
  });
  remove.addEventListener('click', () => {
    void action(remove, out, async () => {
      await must(ctx.api.DELETE('/api/v1/org/{org_id}/proj/{proj_id}/sensors/{sensor_id}/overdue', { params: { path } }));
      changed();
    });
  });
  return form;
}
