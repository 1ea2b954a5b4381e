// Sensor, readings: a chart and a table of a time range, loaded a page at a
// time by following the Link header, and the range as a CSV file.
import { must, send, type Reading, type Sensor } from '../api';
import { id, orgName, type Ctx } from '../app';
import { colorOf, drawChart } from '../chart';
import { action, errorBox, field, h, table } from '../dom';
import { filenameFromDisposition, rangeFilename, saveBlob } from '../download';
import { columns, formatNumber, loadRange, nextFromHeaders, seriesOf, stats, valueOf, type Series } from '../readings';
import { customRange, formatDateTime, presetRange, PRESETS, toLocalInput, type PresetId, type Range } from '../time';
import { sensorHeader } from './sensor';

const TABLE_PAGE = 200;

export function readingsPage(ctx: Ctx): HTMLElement {
  const org = id(ctx, 'org');
  const proj = id(ctx, 'proj');
  const sensorId = id(ctx, 'sensor');
  const path = { org_id: org, proj_id: proj, sensor_id: sensorId };
  const root = h('div', null, h('p', { class: 'muted' }, 'Loading…'));

  void Promise.all([
    must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}', { params: { path: { org_id: org, proj_id: proj } } })),
    must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/sensors/{sensor_id}', { params: { path } })),
  ]).then(
    ([project, sensor]) => {
      ctx.setCrumbs([
        { label: orgName(ctx, org), path: `/org/${org}` },
        { label: project.name, path: `/org/${org}/proj/${proj}` },
        { label: sensor.name, path: `/org/${org}/proj/${proj}/sensors/${sensor.id}` },
        { label: 'Readings' },
      ]);
      root.replaceChildren(sensorHeader(org, sensor, 'readings'), viewer(ctx, path, sensor));
    },
    (err) => root.replaceChildren(errorBox(err)),
  );
  return root;
}

type SensorPath = { org_id: number; proj_id: number; sensor_id: number };

function viewer(ctx: Ctx, path: SensorPath, sensor: Sensor): HTMLElement {
  // Range controls.
  const preset = h(
    'select',
    { name: 'range', 'aria-label': 'Range' },
    PRESETS.map((p) => h('option', { value: p.id }, p.label)),
    h('option', { value: 'custom' }, 'Custom…'),
  );
  const now = new Date();
  const from = h('input', { type: 'datetime-local', name: 'from', value: toLocalInput(new Date(now.getTime() - 864e5)), 'aria-label': 'From' });
  const to = h('input', { type: 'datetime-local', name: 'to', value: toLocalInput(new Date(now.getTime() + 60e3)), 'aria-label': 'To' });
  const custom = h('span', { class: 'inline', hidden: true }, field('From', from), field('To', to));
  preset.addEventListener('change', () => {
    custom.hidden = preset.value !== 'custom';
    if (preset.value !== 'custom') void load();
  });
  const loadButton = h('button', { type: 'submit' }, 'Load');
  const stopButton = h('button', { type: 'button', class: 'link', hidden: true }, 'Stop');
  const csvButton = h('button', { type: 'button' }, 'Download CSV');
  const progress = h('progress', { max: 1, value: 0, hidden: true, 'aria-label': 'Loading readings' });
  const status = h('span', { class: 'muted', 'data-testid': 'load-status', 'aria-live': 'polite' });
  const out = h('div');

  // What to show.
  let readings: Reading[] = [];
  let range: Range | undefined;
  const allSeries = () => seriesOf(sensor, readings);
  const chosen = new Set<string>(seriesOf(sensor).map(keyOf));
  const picks = h('div', { class: 'series-picks', role: 'group', 'aria-label': 'Series' });
  const chartEl = h('div', { class: 'chart', 'data-testid': 'chart' });
  const statsEl = h('div');
  const tableEl = h('div');
  const views = h(
    'div',
    { class: 'tabs', role: 'group', 'aria-label': 'View' },
    h('button', { type: 'button', 'aria-pressed': 'true', onclick: () => show('chart') }, 'Chart'),
    h('button', { type: 'button', 'aria-pressed': 'false', onclick: () => show('table') }, 'Table'),
  );
  let view: 'chart' | 'table' = 'chart';
  let destroyChart: (() => void) | undefined;

  function show(v: 'chart' | 'table') {
    view = v;
    for (const b of views.querySelectorAll('button')) b.setAttribute('aria-pressed', String(b.textContent?.toLowerCase() === v));
    draw();
  }

  function renderPicks() {
    const series = allSeries();
    picks.replaceChildren(
      ...series.map((s, i) => {
        const box = h('input', { type: 'checkbox', checked: chosen.has(keyOf(s)), 'data-series': keyOf(s) });
        box.addEventListener('change', () => {
          if (box.checked) chosen.add(keyOf(s));
          else chosen.delete(keyOf(s));
          draw();
        });
        return h('label', { class: 'pick' }, box, h('span', { class: 'swatch', style: `background:${colorOf(i)}` }), `${s.label}${s.unit ? ` (${s.unit})` : ''} `, h('small', { class: 'muted' }, `${s.kind} ${s.id}`));
      }),
    );
  }

  function draw() {
    destroyChart?.();
    destroyChart = undefined;
    const series = allSeries();
    const shown = series.filter((s) => chosen.has(keyOf(s)));
    const [xs, ...ys] = columns(readings, shown);
    statsEl.replaceChildren(statsTable(shown, ys));
    chartEl.hidden = view !== 'chart';
    tableEl.hidden = view !== 'table';
    if (readings.length === 0) {
      chartEl.replaceChildren(h('p', { class: 'muted' }, range ? 'No readings in this range.' : ''));
    } else if (view === 'chart') {
      if (shown.length === 0) chartEl.replaceChildren(h('p', { class: 'muted' }, 'Choose at least one input or output.'));
      else destroyChart = drawChart(chartEl, { xs, series: shown, ys }, (s) => series.findIndex((x) => keyOf(x) === keyOf(s)));
    }
    if (view === 'table') renderTable(shown, TABLE_PAGE);
  }

  function renderTable(shown: Series[], rows: number) {
    // Newest first, a page at a time: a table of 100,000 rows helps nobody.
    const newest = readings.slice(-rows).reverse();
    const more = readings.length > rows ? h('button', { type: 'button', class: 'small', onclick: () => renderTable(shown, rows + TABLE_PAGE) }, `Show ${Math.min(TABLE_PAGE, readings.length - rows)} more`) : null;
    tableEl.replaceChildren(
      h('p', { class: 'muted' }, `${Math.min(rows, readings.length)} of ${readings.length} readings, newest first.`),
      table(
        ['Datetime', ...shown.map((s) => `${s.key}${s.unit ? ` (${s.unit})` : ''}`)],
        newest.map((r) => [h('span', { title: r.datetime }, formatDateTime(r.datetime)), ...shown.map((s) => formatNumber(valueOf(r, s)))]),
        { 'aria-label': 'Readings' },
      ),
      more ?? '',
    );
  }

  let aborter: AbortController | undefined;
  async function load() {
    aborter?.abort();
    const abort = (aborter = new AbortController());
    const ok = await action(loadButton, out, async () => {
      range = preset.value === 'custom' ? customRange(from.value, to.value) : presetRange(preset.value as PresetId);
      const r = range;
      progress.hidden = false;
      progress.value = 0;
      stopButton.hidden = false;
      status.textContent = 'Loading…';
      const listPath = `/api/v1/org/${path.org_id}/proj/${path.proj_id}/readings/${path.sensor_id}`;
      const got = await loadRange({
        range: r,
        path: listPath,
        fetchPage: async (query) => {
          const { data, response } = await send(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/readings/{sensor_id}', { params: { path, query }, signal: abort.signal }));
          return { readings: data, link: nextFromHeaders(response.headers) };
        },
        onProgress: (p) => {
          progress.value = p.fraction;
          status.textContent = `Loading… ${p.readings.toLocaleString('en')} readings, ${p.pages} ${p.pages === 1 ? 'page' : 'pages'}`;
        },
      });
      if (abort.signal.aborted) return;
      readings = got.readings;
      status.textContent = `${readings.length.toLocaleString('en')} readings from ${formatDateTime(r.from.toISOString())} to ${formatDateTime(r.to.toISOString())}` + (got.truncated ? ' (stopped at the limit: choose a shorter range)' : '');
      renderPicks();
      draw();
    }).catch(() => false);
    if (abort === aborter) {
      progress.hidden = true;
      stopButton.hidden = true;
    }
    if (!ok && abort.signal.aborted) {
      out.replaceChildren();
      status.textContent = 'Stopped.';
    }
  }
  stopButton.addEventListener('click', () => aborter?.abort());

  csvButton.addEventListener('click', () =>
    void action(csvButton, out, async () => {
      const r = preset.value === 'custom' ? customRange(from.value, to.value) : presetRange(preset.value as PresetId);
      const { data, response } = await send(
        ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/readings/{sensor_id}/export', {
          params: { path, query: { format: 'csv', outputs: true, datetime__gte: r.from.toISOString(), datetime__lt: r.to.toISOString() } },
          parseAs: 'blob',
        }),
      );
      const name = filenameFromDisposition(response.headers.get('Content-Disposition'), `sensor-${sensor.id}.csv`);
      saveBlob(data, rangeFilename(name, r.from, r.to));
    }),
  );

  const form = h('form', { class: 'inline controls', 'aria-label': 'Range' }, field('Range', preset), custom, loadButton, stopButton, csvButton, progress, status);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void load();
  });

  renderPicks();
  void load();
  return h('div', null, form, out, picks, views, chartEl, statsEl, tableEl);
}

function keyOf(s: Series): string {
  return `${s.kind}:${s.id}`;
}

function statsTable(series: Series[], ys: (number | null)[][]): HTMLElement {
  if (series.length === 0) return h('div');
  return table(
    ['Series', 'ID', 'Points', 'Min', 'Max', 'Last'],
    series.map((s, i) => {
      const st = stats(ys[i] ?? []);
      return [`${s.label}${s.unit ? ` (${s.unit})` : ''}`, String(s.id), String(st.count), formatNumber(st.min), formatNumber(st.max), formatNumber(st.last)];
    }),
    { 'aria-label': 'Series statistics', 'data-testid': 'stats' },
  );
}
