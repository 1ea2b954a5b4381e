// Project: its current alarms (acknowledged with a note by editors and
// above), its alarm levels (edited by admins) and the alarm history, paged
// with the API's cursor and filtered by sensor, level and time.
import { must, type AlarmEvent, type AlarmLevel, type Alarm, type Sensor } from '../api';
import { allPages, type Ctx } from '../app';
import { levelColour } from '../alarms';
import { action, field, h, section, table, type Child } from '../dom';
import { errorPath, showIn } from '../fielderrors';
import { formatNumber } from '../readings';
import { can, type Role } from '../roles';
import { href } from '../router';
import { tint } from '../colours';
import { filterBounds, formatDateTime, formatDuration, zoneName } from '../time';
import { levelBadge } from './sensoralarms';
import { pagedList } from '../pager';

type ProjPath = { org_id: number; proj_id: number };

const EVENTS_PAGE = 50;

/**
 * alarmsSection is the project's current alarms, its levels and the
 * alarms' history, as sections a page places where it wants them.
 */
export function alarmsSection(
  ctx: Ctx,
  path: ProjPath,
  role: Role | undefined,
  readSensors: () => Promise<Sensor[]> = () => allPages((cursor) => must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/sensors', { params: { path, query: { limit: 1000, cursor } } }))),
): { current: HTMLElement; levels: HTMLElement; history: HTMLElement; refresh: () => void } {
  let levels: AlarmLevel[] = [];
  let sensors: Sensor[] = [];
  const sensorName = (id: number) => sensors.find((s) => s.id === id)?.name ?? `sensor ${id}`;
  const decimalsOf = (id: number, target: string) => sensors.find((s) => s.id === id)?.outputs.find((o) => o.key === target)?.decimals;
  const userName = (id: number | undefined) => (id === undefined ? '' : id === ctx.me.user.id ? ctx.me.user.email : `user ${id}`);

  const current = section(async () => {
    [levels, sensors] = await Promise.all([
      allPages((cursor) => must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/alarm-levels', { params: { path, query: { limit: 1000, cursor } } }))),
      readSensors(),
    ]);
    const alarms = await allPages((cursor) => must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/alarms', { params: { path, query: { limit: 1000, cursor } } })));
    // The history names sensors and colours levels: it follows what was just read.
    history.setChoices(sensors, levels);
    void history.load();
    // The levels' form is redrawn only when they changed, not at every
    // read of the alarms, so that an admin's typing survives the board's polling.
    const seen = JSON.stringify(levels);
    if (seen !== levelsSeen) {
      levelsSeen = seen;
      levelsEl.replaceChildren(...[levelsTable()].flat(3).filter((c): c is Node => c instanceof Node));
    }
    return alarmTable(alarms);
  });
  const levelsEl = h('div');
  let levelsSeen = '';
  const refreshAll = () => void current.refresh();

  function alarmTable(alarms: Alarm[]): Child {
    if (alarms.length === 0) return h('p', { class: 'muted', 'data-testid': 'no-alarms' }, 'No current alarms: every target is at rest.');
    const rows = alarms.map((a) => {
      let ack: Child = a.acknowledged
        ? h('span', { class: 'muted' }, `Acknowledged by ${userName(a.acknowledged_by)} at ${formatDateTime(a.acknowledged_at)}`, a.note ? ` “${a.note}”` : '')
        : h('span', { class: 'badge unacked' }, 'Unacknowledged');
      if (!a.acknowledged && can(role, 'acknowledgeAlarm')) {
        const note = h('input', { name: 'note', maxlength: 2000, placeholder: 'note (optional)', 'aria-label': `Note on ${sensorName(a.sensor_id)} ${a.target}` });
        const button = h('button', { type: 'submit', class: 'small' }, 'Acknowledge');
        const out = h('div');
        const form = h('form', { class: 'inline ack' }, note, button, out);
        form.addEventListener('submit', (e) => {
          e.preventDefault();
          void action(button, out, async () => {
            await must(ctx.api.POST('/api/v1/org/{org_id}/proj/{proj_id}/alarms/{alarm_id}/acknowledge', { params: { path: { ...path, alarm_id: a.id } }, body: { note: note.value.trim() || undefined } }));
            refreshAll();
          });
        });
        ack = h('div', null, ack, form);
      }
      return [
        h('a', { href: href(`/org/${path.org_id}/proj/${path.proj_id}/sensors/${a.sensor_id}`) }, sensorName(a.sensor_id)),
        h('code', null, a.target),
        levelBadge(a.level, a.colour),
        h('span', { title: a.since }, formatDateTime(a.since)),
        // An overdue alarm's value is how long the sensor had been silent, in seconds.
        a.target === 'overdue' ? `silent ${formatDuration(a.value * 1000)}` : formatNumber(a.value, decimalsOf(a.sensor_id, a.target)),
        ack,
      ];
    });
    const t = table(['Sensor', 'Target', 'Level', 'Since', 'Value', 'Acknowledged'], rows, { 'aria-label': 'Current alarms', class: 'barred' });
    // A row wears its level; an unacknowledged one is bold, an acknowledged one quiet.
    t.querySelectorAll<HTMLTableRowElement>('tbody tr').forEach((tr, i) => {
      const a = alarms[i]!;
      tr.style.cssText = `background:${tint(a.colour, a.acknowledged ? 0.1 : 0.22)};--bar:${a.colour}`;
      tr.classList.add(a.acknowledged ? 'acked' : 'unacked-row');
    });
    return t;
  }

  function levelsTable(): Child {
    const editable = can(role, 'updateAlarmLevel');
    const rows = levels.map((l) => {
      if (!editable) return [levelBadge(l.name, l.colour), String(l.rank), h('code', null, l.colour), ''];
      const f = levelFields(l);
      const save = h('button', { type: 'button', class: 'small' }, 'Save');
      const del = h('button', { type: 'button', class: 'small danger' }, 'Delete');
      const out = h('div');
      save.addEventListener('click', () =>
        void action(save, out, async () => {
          const body: { name?: string; rank?: number; colour?: string } = {};
          if (f.name.value.trim() !== l.name) body.name = f.name.value.trim();
          if (Number(f.rank.value) !== l.rank) body.rank = Number(f.rank.value);
          if (f.colour.value !== l.colour) body.colour = f.colour.value;
          if (Object.keys(body).length === 0) throw new Error('Nothing changed.');
          await must(ctx.api.PUT('/api/v1/org/{org_id}/proj/{proj_id}/alarm-levels/{level_id}', { params: { path: { ...path, level_id: l.id } }, body }));
          refreshAll();
        }),
      );
      del.addEventListener('click', () => {
        if (!confirm(`Delete the level “${l.name}”?`)) return;
        void action(del, out, async () => {
          await must(ctx.api.DELETE('/api/v1/org/{org_id}/proj/{proj_id}/alarm-levels/{level_id}', { params: { path: { ...path, level_id: l.id } } }));
          refreshAll();
        });
      });
      return [f.name, f.rank, f.colour, h('div', null, h('span', { class: 'actions' }, save, can(role, 'deleteAlarmLevel') ? del : null), out)];
    });
    return [
      h('h2', null, 'Alarm levels'),
      h('p', { class: 'muted' }, 'A target’s level is the highest rank among its rules that hold. A rank changes only while no rule or alarm uses the level.'),
      table(['Level', 'Rank', 'Colour', ''], rows, { 'aria-label': 'Alarm levels' }),
      can(role, 'createAlarmLevel') ? newLevelForm() : null,
    ];
  }

  function levelFields(l?: AlarmLevel) {
    const what = l ? `of ${l.name}` : 'of the new level';
    return {
      name: h('input', { name: 'name', required: true, maxlength: 100, value: l?.name ?? '', 'aria-label': `Name ${what}` }),
      rank: h('input', { type: 'number', step: '1', name: 'rank', required: true, value: l ? String(l.rank) : '', 'aria-label': `Rank ${what}` }),
      colour: h('input', { type: 'color', name: 'colour', value: l?.colour ?? '#9b51e0', 'aria-label': `Colour ${what}` }),
    };
  }

  function newLevelForm(): HTMLElement {
    const f = levelFields();
    const slots = new Map(['name', 'rank', 'colour'].map((k) => [k, h('div', { class: 'field-error' })]));
    const button = h('button', { type: 'submit' }, 'Add level');
    const out = h('div');
    const form = h(
      'form',
      { class: 'card', 'aria-label': 'New alarm level' },
      h('div', { class: 'inline' }, h('div', null, field('Name', f.name), slots.get('name')), h('div', null, field('Rank', f.rank), slots.get('rank')), h('div', null, field('Colour', f.colour), slots.get('colour'))),
      button,
      out,
    );
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      for (const s of slots.values()) s.replaceChildren();
      void action(button, out, async () => {
        try {
          await must(ctx.api.POST('/api/v1/org/{org_id}/proj/{proj_id}/alarm-levels', { params: { path }, body: { name: f.name.value.trim(), rank: Number(f.rank.value), colour: f.colour.value } }));
        } catch (err) {
          throw showIn(slots.get(errorPath(err)[0] ?? ''), err);
        }
        refreshAll();
      });
    });
    return form;
  }

  const history = eventHistory(ctx, path, sensorName, userName, () => levels);
  return {
    current: h('section', { 'aria-label': 'Current alarms' }, h('h2', null, 'Current alarms'), current.el),
    levels: h('section', { 'aria-label': 'Alarm levels' }, levelsEl),
    history: h('section', { 'aria-label': 'Alarm history' }, h('h2', null, 'Alarm history'), history.el),
    /** refresh reads the current alarms (and the history's first page) again. */
    refresh: refreshAll,
  };
}

type EventsQuery = { limit: number; order: 'desc'; cursor?: string; sensor_id?: number; level_id?: number; datetime__gte?: string; datetime__lt?: string };

/**
 * eventHistory browses the project's events, newest first (what a person
 * on a busy project looks for), a page at a time, Newer and Older.
 */
function eventHistory(ctx: Ctx, path: ProjPath, sensorName: (id: number) => string, userName: (id: number | undefined) => string, levels: () => AlarmLevel[]) {
  const sensor = h('select', { name: 'sensor' }, h('option', { value: '' }, 'all sensors'));
  const level = h('select', { name: 'level' }, h('option', { value: '' }, 'all levels'));
  // Text in the console's one form of datetimes: a datetime-local input
  // follows the browser's locale (mm/dd/yyyy in the US).
  const from = h('input', { name: 'from', placeholder: 'YYYY-MM-DD HH:MM', size: 16, spellcheck: 'false', autocomplete: 'off' });
  const to = h('input', { name: 'to', placeholder: 'YYYY-MM-DD HH:MM', size: 16, spellcheck: 'false', autocomplete: 'off' });
  const apply = h('button', { type: 'submit' }, 'Show events');
  const out = h('div');
  const form = h('form', { class: 'inline controls', 'aria-label': 'Event filter' }, field('Sensor', sensor), field('Level', level), field('From', from), field('To', to), apply, h('small', { class: 'muted' }, `Recorded times in ${zoneName()}.`));

  function filter(): EventsQuery {
    const q: EventsQuery = { limit: EVENTS_PAGE, order: 'desc' };
    if (sensor.value) q.sensor_id = Number(sensor.value);
    if (level.value) q.level_id = Number(level.value);
    const b = filterBounds(from.value, to.value, 'events');
    if (b.from) q.datetime__gte = b.from;
    if (b.to) q.datetime__lt = b.to;
    return q;
  }

  const list = pagedList<EventsQuery, AlarmEvent>((query) => must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/alarm-events', { params: { path, query } })), {
    noun: 'events',
    testId: 'events-page',
    table: (items) => table(['Recorded', 'Sensor', 'Target', 'Event', 'Level', 'Value', 'Reading of', 'Who, note'], items.map(eventRow), { 'aria-label': 'Alarm events' }),
    busy: apply,
    out,
  });

  function eventRow(e: AlarmEvent): Child[] {
    return [
      h('span', { title: e.created_at }, formatDateTime(e.created_at)),
      sensorName(e.sensor_id),
      h('code', null, e.target),
      e.late ? `${e.kind} (late reading)` : e.kind,
      levelBadge(e.level, levelColour(levels(), e.level_id)),
      e.value !== undefined ? formatNumber(e.value) : '',
      e.reading_datetime ? formatDateTime(e.reading_datetime) : '',
      [userName(e.user_id), e.note ? ` “${e.note}”` : ''],
    ];
  }

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void list.start(filter);
  });

  return {
    el: h('div', null, form, out, list.el),
    /** setChoices fills the filter's sensors and levels, keeping what is chosen. */
    setChoices(sensors: Sensor[], lvls: AlarmLevel[]) {
      const keep = [sensor.value, level.value];
      sensor.replaceChildren(h('option', { value: '' }, 'all sensors'), ...sensors.map((s) => h('option', { value: String(s.id) }, `${s.name} (${s.id})`)));
      level.replaceChildren(h('option', { value: '' }, 'all levels'), ...lvls.map((l) => h('option', { value: String(l.id) }, l.name)));
      [sensor.value, level.value] = keep as [string, string];
      if (sensor.selectedIndex < 0) sensor.value = '';
      if (level.selectedIndex < 0) level.value = '';
    },
    /** load shows the first page of the filter as it stands, or the page shown again. */
    async load() {
      await list.again(filter);
    },
  };
}
