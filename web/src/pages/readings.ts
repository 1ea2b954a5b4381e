// Sensor, readings: a chart and a table of a time range, both read a page
// at a time by following the Link header, and the range as a CSV file. A
// range of many readings is charted from the aggregates endpoint instead.
import { bandColumns, chooseSource, describeInterval, FNS, maxPoints, RAW_LIMIT, seriesReadings, totalReadings } from '../aggregates';
import { thresholdLines } from '../alarms';
import { ApiError, must, send, type AlarmLevel, type AlarmRule, type Bucket, type Reading, type Sensor } from '../api';
import { allPages, id, orgName, orgRole, type Ctx } from '../app';
import { drawChart, markIcon, type ChartData } from '../chart';
import { seriesPalette } from '../colours';
import { action, errorBox, field, h, table } from '../dom';
import { countFlags, dependencies, flaggedColumns, flagOf, selectedReadings, type Dependencies, type FlagCount } from '../flags';
import { filenameFromDisposition, rangeFilename, saveBlob } from '../download';
import { formatNumber, loadRange, nextFromHeaders, queryFromLink, seriesOf, stats, valueOf, type Page, type ReadingsQuery, type Series } from '../readings';
import { can } from '../roles';
import { href } from '../router';
import { customRange, formatDateTime, fromLocalInput, presetRange, PRESETS, toExactText, toLocalText, zoneName, type PresetId, type Range } from '../time';
import { sensorHeader } from './sensor';

const TABLE_PAGE = 100;

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
      root.replaceChildren(sensorHeader(ctx, org, sensor, 'readings'), viewer(ctx, path, sensor));
    },
    (err) => root.replaceChildren(errorBox(err)),
  );
  return root;
}

type SensorPath = { org_id: number; proj_id: number; sensor_id: number };

function viewer(ctx: Ctx, path: SensorPath, sensor: Sensor): HTMLElement {
  const listPath = `/api/v1/org/${path.org_id}/proj/${path.proj_id}/readings/${path.sensor_id}`;
  const canFlag = can(orgRole(ctx, path.org_id), 'setFlag');
  // As of: the outputs with the configuration and the flags in force at an instant, as a report showed them then.
  const asOf = h('input', { name: 'as_of', placeholder: 'YYYY-MM-DD HH:MM:SS', size: 19, spellcheck: 'false', autocomplete: 'off', 'data-testid': 'as-of' });
  const asOfQuery = (): { as_of?: string } => {
    if (!asOf.value.trim()) return {};
    const t = fromLocalInput(asOf.value);
    if (Number.isNaN(t.getTime())) throw new Error('write the instant of “as of” as 2024-05-01 12:00:00, or leave it empty');
    return { as_of: t.toISOString() };
  };
  // Rejected values are left out, as the API leaves them out, unless asked for: then every page, of the chart and the table, and the CSV.
  const showRejected = h('input', { type: 'checkbox', name: 'flags', 'data-testid': 'show-rejected' });
  const flagsQuery = (): { flags?: true } => (showRejected.checked ? { flags: true } : {});
  const fetchPage = async (query: ReadingsQuery, signal?: AbortSignal) => {
    // The next page's link is followed with the options the console chose, whatever the link carries.
    const { data, response } = await send(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/readings/{sensor_id}', { params: { path, query: { ...query, ...flagsQuery(), ...asOfQuery() } }, signal }));
    return { readings: data, link: nextFromHeaders(response.headers) };
  };

  // Range controls.
  const preset = h(
    'select',
    { name: 'range', 'aria-label': 'Range' },
    PRESETS.map((p) => h('option', { value: p.id }, p.label)),
    h('option', { value: 'custom' }, 'Custom…'),
  );
  // Text, not datetime-local, whose form follows the browser's locale
  // (mm/dd/yyyy in the US): every datetime of the console reads 2024-05-01 12:00.
  const from = h('input', { name: 'from', placeholder: 'YYYY-MM-DD HH:MM', size: 16, spellcheck: 'false', autocomplete: 'off' });
  const to = h('input', { name: 'to', placeholder: 'YYYY-MM-DD HH:MM', size: 16, spellcheck: 'false', autocomplete: 'off' });
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
  const resolution = h('p', { class: 'muted resolution', 'data-testid': 'resolution', hidden: true });
  const out = h('div');

  // What to show: the range's readings, or its buckets when there are too many.
  let readings: Reading[] = [];
  let buckets: Bucket[] | undefined;
  let range: Range | undefined;
  const allSeries = () => seriesOf(sensor, buckets ?? readings);
  const deps = dependencies(sensor);
  // The thresholds of the sensor's rules; a chart without them is still a chart.
  let alarmRules: AlarmRule[] = [];
  let levels: AlarmLevel[] = [];
  const projPath = { org_id: path.org_id, proj_id: path.proj_id };
  // Series colours stay clear of the project's level colours, once known.
  let palette = seriesPalette([]);
  void Promise.all([
    allPages((cursor) => must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/sensors/{sensor_id}/alarm-rules', { params: { path, query: { limit: 1000, cursor } } }))),
    allPages((cursor) => must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/alarm-levels', { params: { path: projPath, query: { limit: 1000, cursor } } }))),
  ]).then(
    ([r, l]) => {
      alarmRules = r;
      levels = l;
      palette = seriesPalette(levels.map((x) => x.colour));
      renderPicks();
      draw();
    },
    () => undefined,
  );
  const colourOf = (s: Series) => {
    const i = allSeries().findIndex((x) => keyOf(x) === keyOf(s));
    return palette[Math.max(0, i) % palette.length]!;
  };
  // By default the outputs, the values engineers read; the inputs they are
  // computed from are a tick away.
  const chosen = new Set<string>(defaultSeries(seriesOf(sensor)).map(keyOf));
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
  const pager = tablePager(tableEl, listPath, fetchPage, () => showRejected.checked, deps);
  showRejected.addEventListener('change', () => void load());
  // What the chart's marks mean, and how many it holds.
  const flagLegend = h('div', { class: 'flag-legend muted', 'data-testid': 'flag-legend' });
  // A span dragged across the chart, to zoom to or to flag.
  const selection = h('div', { class: 'selection', 'data-testid': 'selection', hidden: true });

  function show(v: 'chart' | 'table') {
    view = v;
    for (const b of views.querySelectorAll('button')) b.setAttribute('aria-pressed', String(b.textContent?.toLowerCase() === v));
    draw();
  }

  function renderPicks() {
    const series = allSeries();
    picks.replaceChildren(
      ...series.map((s) => {
        const box = h('input', { type: 'checkbox', checked: chosen.has(keyOf(s)), 'data-series': keyOf(s) });
        box.addEventListener('change', () => {
          if (box.checked) chosen.add(keyOf(s));
          else chosen.delete(keyOf(s));
          draw();
        });
        return h('label', { class: 'pick' }, box, h('span', { class: 'swatch', style: `background:${colourOf(s)}` }), `${s.label}${s.unit ? ` (${s.unit})` : ''} `, h('small', { class: 'muted' }, `${s.kind} ${s.id}`));
      }),
    );
  }

  function draw() {
    destroyChart?.();
    destroyChart = undefined;
    const series = allSeries();
    const shown = series.filter((s) => chosen.has(keyOf(s)));
    const thresholds = thresholdLines(alarmRules, levels, shown);
    let data: ChartData;
    selection.hidden = true;
    if (buckets) {
      const b = bandColumns(buckets, shown);
      data = { xs: b.xs, series: shown, ys: b.avg, band: { min: b.min, max: b.max }, thresholds };
      statsEl.replaceChildren(bucketStatsTable(shown, b));
      flagLegend.replaceChildren(
        'Flags: this range is drawn from buckets, which leave rejected values out and mark no value; a range of fewer readings is drawn reading by reading, with its flags. ',
        h('label', { class: 'pick' }, showRejected, ' Show rejected values (in the table and the CSV)'),
      );
    } else {
      const c = flaggedColumns(readings, shown, deps);
      data = { xs: c.xs, series: shown, ys: c.ys, thresholds, flags: { suspect: c.suspect, rejected: c.rejected } };
      statsEl.replaceChildren(statsTable(shown, c.ys));
      flagLegend.replaceChildren(...legendOf(countFlags(c), showRejected));
    }
    chartEl.hidden = view !== 'chart';
    tableEl.hidden = view !== 'table';
    resolution.hidden = view !== 'chart' || data.xs.length === 0;
    if (data.xs.length === 0) {
      chartEl.replaceChildren(h('p', { class: 'muted' }, range ? 'No readings in this range.' : ''));
    } else if (view === 'chart') {
      if (shown.length === 0) chartEl.replaceChildren(h('p', { class: 'muted' }, 'Choose at least one input or output.'));
      else destroyChart = drawChart(chartEl, data, colourOf, canFlag ? { onSelect: selected, onUnselect: () => (selection.hidden = true) } : {});
    }
    if (view === 'table' && range) void pager.show(range, shown);
  }

  /** chosenRange is the range the controls say; a preset ends at the sensor's latest reading, or now without one. */
  async function chosenRange(signal?: AbortSignal): Promise<Range> {
    if (preset.value === 'custom') return customRange(from.value, to.value);
    const latest = await fetchPage({ order: 'desc', limit: 1 }, signal);
    const end = latest.readings[0] ? new Date(latest.readings[0].datetime) : new Date();
    return presetRange(preset.value as PresetId, end);
  }

  /**
   * bucketsOf asks the range's buckets, about one per pixel of the chart:
   * they say how many readings it holds, and draw it when that is too
   * many. Should the API refuse them (too many values for a sensor of very
   * many inputs), it is undefined and the readings are drawn as before.
   */
  async function bucketsOf(r: Range, signal: AbortSignal) {
    const query = {
      max_points: maxPoints(chartEl.clientWidth || 1000, sensor.inputs.length + sensor.outputs.length),
      fn: FNS.join(','),
      outputs: true,
      tz: zoneName(),
      datetime__gte: r.from.toISOString(),
      datetime__lt: r.to.toISOString(),
      ...asOfQuery(),
    };
    return send(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/readings/{sensor_id}/aggregates', { params: { path, query }, signal })).catch((err: unknown) => {
      if (err instanceof ApiError && err.status === 400) return undefined;
      throw err;
    });
  }

  let aborter: AbortController | undefined;
  async function load() {
    aborter?.abort();
    const abort = (aborter = new AbortController());
    const ok = await action(loadButton, out, async () => {
      progress.hidden = false;
      progress.value = 0;
      stopButton.hidden = false;
      status.textContent = 'Loading…';
      const r = await chosenRange(abort.signal);
      const agg = await bucketsOf(r, abort.signal);
      const count = agg ? totalReadings(agg.data) : 0;
      if (agg && chooseSource(count) === 'aggregates') {
        if (abort.signal.aborted) return;
        const interval = agg.response.headers.get('X-Readings-Interval') ?? '';
        const rollups = agg.response.headers.get('X-Rollups'); // where a service with rollups says it answered from
        loaded(r, [], agg.data, `${count.toLocaleString('en')} readings from ${formatDateTime(r.from)} to ${formatDateTime(r.to)}`);
        resolution.replaceChildren(...bucketResolution(agg.data.length, interval, rollups));
        return;
      }
      const got = await loadRange({
        range: r,
        path: listPath,
        fetchPage: (query) => fetchPage(query, abort.signal),
        onProgress: (p) => {
          progress.value = p.fraction;
          status.textContent = `Loading… ${p.readings.toLocaleString('en')} readings, ${p.pages} ${p.pages === 1 ? 'page' : 'pages'}`;
        },
      });
      if (abort.signal.aborted) return;
      resolution.replaceChildren('Resolution: every reading.');
      loaded(r, got.readings, undefined, `${got.readings.length.toLocaleString('en')} readings from ${formatDateTime(r.from)} to ${formatDateTime(r.to)}` + (got.truncated ? ' (stopped at the limit: choose a shorter range)' : ''));
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

  function loaded(r: Range, got: Reading[], bucketsGot: Bucket[] | undefined, said: string) {
    range = r;
    readings = got;
    buckets = bucketsGot;
    // Custom starts from what is shown.
    from.value = toLocalText(r.from);
    to.value = toLocalText(new Date(r.to.getTime() + 59e3));
    status.textContent = said;
    renderPicks();
    draw();
  }

  csvButton.addEventListener('click', () =>
    void action(csvButton, out, async () => {
      const r = range ?? (await chosenRange());
      const { data, response } = await send(
        ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/readings/{sensor_id}/export', {
          params: { path, query: { format: 'csv', outputs: true, datetime__gte: r.from.toISOString(), datetime__lt: r.to.toISOString(), ...flagsQuery(), ...asOfQuery() } },
          parseAs: 'blob',
        }),
      );
      const name = filenameFromDisposition(response.headers.get('Content-Disposition'), `sensor-${sensor.id}.csv`);
      saveBlob(data, rangeFilename(name, r.from, r.to));
    }),
  );

  const form = h('form', { class: 'inline controls', 'aria-label': 'Range' }, field('Range', preset), custom, field('As of', asOf), loadButton, stopButton, csvButton, progress, status);
  const flagger = canFlag ? flagForm(ctx, path, sensor, () => range, () => void load()) : undefined;

  /** selected offers what to do with a span dragged across the chart: zoom to it, or flag or clear its readings. */
  function selected(from: number, to: number, zoom: () => void, clear: () => void) {
    const picked = selectedReadings(readings, from, to);
    const cancel = () => {
      clear();
      selection.hidden = true;
    };
    const zoomButton = h('button', { type: 'button', class: 'small' }, 'Zoom in');
    zoomButton.addEventListener('click', () => {
      zoom();
      selection.hidden = true;
    });
    const flagButton = h('button', { type: 'button', class: 'small', disabled: !picked || !flagger }, 'Flag or clear…');
    flagButton.addEventListener('click', () => {
      if (!picked || !flagger) return;
      flagger.select(new Date(picked.first), new Date(picked.last), picked.count);
    });
    const cancelButton = h('button', { type: 'button', class: 'small link' }, 'Cancel');
    cancelButton.addEventListener('click', cancel);
    selection.replaceChildren(
      h(
        'span',
        { 'data-testid': 'selection-text' },
        picked
          ? `Selected ${picked.count.toLocaleString('en')} ${picked.count === 1 ? 'reading' : 'readings'}, ${formatDateTime(picked.first)} to ${formatDateTime(picked.last)}. `
          : `Selected ${formatDateTime(new Date(from * 1000))} to ${formatDateTime(new Date(to * 1000))}: no reading there. `,
      ),
      zoomButton,
      ' ',
      flagButton,
      ' ',
      cancelButton,
    );
    selection.hidden = false;
  }
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void load();
  });

  renderPicks();
  void load();
  const compare = h('a', { href: href(`/org/${path.org_id}/proj/${path.proj_id}/compare?sensors=${sensor.id}`) }, 'Compare with other sensors');
  // On a phone the chart comes first (style.css orders .viewer's parts).
  return h(
    'div',
    { class: 'viewer' },
    h('div', { class: 'viewer-controls' }, form, h('p', { class: 'muted zone' }, 'Times in ', h('span', { 'data-testid': 'zone' }, zoneName()), ', the browser’s time zone. ', compare), out),
    h('div', { class: 'viewer-picks' }, picks, views),
    h('div', { class: 'viewer-chart' }, resolution, flagLegend, chartEl, selection, flagger?.el),
    h('div', { class: 'viewer-data' }, statsEl, tableEl),
  );
}

/** defaultSeries is what a chart shows first: the outputs, or the inputs of a sensor without any. */
export function defaultSeries(series: Series[]): Series[] {
  const outputs = series.filter((s) => s.kind === 'output');
  return outputs.length ? outputs : series;
}

/**
 * tablePager shows the range's readings newest first, a page at a time
 * from the API: Older follows the Link header's rel="next", Newer goes back
 * to the page before. The chart's copy of the range may be cut at its limit;
 * the table reaches every reading.
 */
function tablePager(el: HTMLElement, listPath: string, fetchPage: (q: ReadingsQuery) => Promise<Page>, withFlags: () => boolean, deps: Dependencies) {
  let queries: ReadingsQuery[] = []; // the pages seen, newest first; the last is shown
  let shown: Series[] = [];
  let range: Range | undefined;
  const out = h('div');

  async function render() {
    const query = queries[queries.length - 1]!;
    const pageNo = queries.length;
    const newer = h('button', { type: 'button', class: 'small', disabled: pageNo === 1 }, 'Newer');
    const older = h('button', { type: 'button', class: 'small', disabled: true }, 'Older');
    await action(null, out, async () => {
      const page = await fetchPage(query);
      if (queries[queries.length - 1] !== query) return; // another page was asked for meanwhile
      const link = page.link;
      newer.addEventListener('click', () => {
        queries.pop();
        void render();
      });
      if (link) {
        older.disabled = false;
        older.addEventListener('click', () => {
          queries.push(queryFromLink(link, listPath));
          void render();
        });
      }
      const first = (pageNo - 1) * TABLE_PAGE + 1;
      // A column of flags when rejected values are shown, or when a reading of the page is suspect.
      const flagged = query.flags === true || page.readings.some((r) => r.flags);
      el.replaceChildren(
        h('div', { class: 'inline pager' }, newer, h('span', { class: 'muted', 'data-testid': 'table-page' }, page.readings.length ? `Readings ${first}–${first + page.readings.length - 1}, newest first (page ${pageNo})` : 'No readings in this range.'), older),
        table(
          [`Datetime (${zoneName()})`, ...shown.map((s) => `${s.key}${s.unit ? ` (${s.unit})` : ''}`), ...(flagged ? ['Flags'] : [])],
          page.readings.map((r) => [
            h('span', { title: r.datetime }, formatDateTime(r.datetime)),
            ...shown.map((s) => {
              const flag = flagOf(r, s, deps);
              return h('span', { class: flag ? `flag-${flag}` : '', title: flag }, formatNumber(valueOf(r, s), s.decimals));
            }),
            ...(flagged ? [flagsText(r)] : []),
          ]),
          { 'aria-label': 'Readings' },
        ),
        out,
      );
    });
    if (out.childNodes.length && !el.contains(out)) el.replaceChildren(out);
  }

  return {
    /** show opens the table on the newest page of r, or keeps its page when only the series changed. */
    async show(r: Range, series: Series[]) {
      shown = series;
      const flags = withFlags();
      if (r !== range || (queries[0]?.flags === true) !== flags) {
        range = r;
        queries = [{ outputs: true, order: 'desc', limit: TABLE_PAGE, datetime__gte: r.from.toISOString(), datetime__lt: r.to.toISOString(), ...(flags ? { flags } : {}) }];
      }
      await render();
    },
  };
}

function keyOf(s: Series): string {
  return `${s.kind}:${s.id}`;
}

/** bucketResolution says how a range of buckets is drawn; rollups is the service's X-Rollups, when it sends one. */
function bucketResolution(buckets: number, interval: string, rollups: string | null): (string | Node)[] {
  return [
    `Resolution: ${buckets.toLocaleString('en')} buckets of ${describeInterval(interval)} (`,
    h('span', { 'data-testid': 'interval' }, interval),
    `), each drawn at its start: the average line in the band from the minimum to the maximum. Ranges of more than ${RAW_LIMIT.toLocaleString('en')} readings are drawn this way; shorter ones reading by reading.`,
    rollups ? ` Rollups: ${rollups}.` : '',
  ];
}

/** bucketStatsTable sums the buckets up: each series' readings, its least minimum, its greatest maximum and its last bucket's average. */
function bucketStatsTable(series: Series[], b: ReturnType<typeof bandColumns>): HTMLElement {
  if (series.length === 0) return h('div');
  const counts = seriesReadings(b);
  return table(
    ['Series', 'ID', 'Readings', 'Min', 'Max', 'Last bucket’s average'],
    series.map((s, i) => {
      const lo = stats(b.min[i] ?? []).min;
      const hi = stats(b.max[i] ?? []).max;
      return [`${s.label}${s.unit ? ` (${s.unit})` : ''}`, String(s.id), counts[i]!.toLocaleString('en'), formatNumber(lo, s.decimals), formatNumber(hi, s.decimals), formatNumber(stats(b.avg[i] ?? []).last, s.decimals)];
    }),
    { 'aria-label': 'Series statistics', 'data-testid': 'stats' },
  );
}

function statsTable(series: Series[], ys: (number | null)[][]): HTMLElement {
  if (series.length === 0) return h('div');
  return table(
    ['Series', 'ID', 'Readings', 'Min', 'Max', 'Last'],
    series.map((s, i) => {
      const st = stats(ys[i] ?? []);
      return [`${s.label}${s.unit ? ` (${s.unit})` : ''}`, String(s.id), st.count.toLocaleString('en'), formatNumber(st.min, s.decimals), formatNumber(st.max, s.decimals), formatNumber(st.last, s.decimals)];
    }),
    { 'aria-label': 'Series statistics', 'data-testid': 'stats' },
  );
}

/**
 * legendOf says what the chart's marks are and how many it draws, with the
 * choice to show the rejected values, which are otherwise not read at all.
 */
function legendOf(count: FlagCount, showRejected: HTMLInputElement): (Node | string)[] {
  const n = (k: number) => k.toLocaleString('en');
  return [
    h('span', { class: 'mark-key' }, markIcon('suspect'), ` Suspect: ${n(count.suspect)} ${count.suspect === 1 ? 'value' : 'values'}, on the line`),
    h(
      'span',
      { class: 'mark-key' },
      markIcon('rejected'),
      showRejected.checked ? ` Rejected: ${n(count.rejected)} ${count.rejected === 1 ? 'value' : 'values'}, off the line and out of the statistics` : ' Rejected: hidden, as every read leaves them out',
    ),
    h('label', { class: 'pick' }, showRejected, ' Show rejected values'),
  ];
}

/** flagsText writes a reading's flags, "reading suspect" for the whole reading's. */
export function flagsText(r: Reading): string {
  // The whole reading's first: JavaScript orders an object's numeric keys before the others.
  return Object.entries(r.flags ?? {})
    .sort(([a], [b]) => Number(b === '*') - Number(a === '*'))
    .map(([on, flag]) => `${on === '*' ? 'reading' : on} ${flag}`)
    .join(', ');
}

/**
 * flagForm flags, or clears the flags of, a range of the sensor's readings,
 * the whole readings or one input, with a reason; the range starts as the
 * one shown. done reloads it.
 */
function flagForm(ctx: Ctx, path: SensorPath, sensor: Sensor, shown: () => Range | undefined, done: () => void) {
  const kind = h('select', { name: 'flag', 'aria-label': 'Flag' }, h('option', { value: 'rejected' }, 'Reject'), h('option', { value: 'suspect' }, 'Mark suspect'), h('option', { value: 'clear' }, 'Clear flags'));
  const from = h('input', { name: 'flag-from', placeholder: 'YYYY-MM-DD HH:MM:SS', size: 23, spellcheck: 'false', autocomplete: 'off' });
  const to = h('input', { name: 'flag-to', placeholder: 'YYYY-MM-DD HH:MM:SS', size: 23, spellcheck: 'false', autocomplete: 'off' });
  const input = h('select', { name: 'flag-input', 'aria-label': 'Input' }, h('option', { value: '' }, 'Whole readings'), sensor.inputs.map((i) => h('option', { value: i.key }, i.key)));
  const reason = h('input', { name: 'reason', placeholder: 'Why', size: 30, maxlength: 500 });
  const submit = h('button', { type: 'submit' }, 'Apply');
  const out = h('div');
  const details = h('details', { class: 'flag-form' }, h('summary', null, 'Flag readings'));
  const what = h('p', { class: 'muted', 'data-testid': 'flag-what' });
  details.addEventListener('toggle', () => {
    const r = shown();
    if (details.open && r && !from.value) {
      from.value = toLocalText(r.from);
      to.value = toLocalText(r.to);
    }
  });
  const form = h('form', { class: 'inline controls', 'aria-label': 'Flag readings' }, kind, field('From', from), field('To', to), input, field('Reason', reason), submit);
  for (const el of [from, to]) el.addEventListener('input', () => what.replaceChildren());
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void action(submit, out, async () => {
      const f = fromLocalInput(from.value);
      const t = fromLocalInput(to.value || from.value);
      if (Number.isNaN(f.getTime()) || Number.isNaN(t.getTime())) throw new Error('write the range as 2024-05-01 12:00:00');
      const body = { from: f.toISOString(), to: t.toISOString(), reason: reason.value, ...(input.value ? { input: input.value } : {}) };
      const res =
        kind.value === 'clear'
          ? await send(ctx.api.POST('/api/v1/org/{org_id}/proj/{proj_id}/sensors/{sensor_id}/flags/clear', { params: { path }, body }))
          : await send(ctx.api.POST('/api/v1/org/{org_id}/proj/{proj_id}/sensors/{sensor_id}/flags', { params: { path }, body: { ...body, flag: kind.value as 'suspect' | 'rejected' } }));
      what.replaceChildren();
      out.replaceChildren(h('p', { class: 'muted', 'data-testid': 'flag-result', role: 'status' }, `${kind.value === 'clear' ? 'Cleared' : 'Set'} ${res.data.flags.length} ${res.data.flags.length === 1 ? 'flag' : 'flags'} over ${res.data.readings.toLocaleString('en')} readings.`));
      done();
    });
  });
  details.append(what, form, out);
  return {
    el: details,
    /** select opens the form on the readings from first to last, both included, to the millisecond. */
    select(first: Date, last: Date, count: number) {
      from.value = toExactText(first);
      to.value = toExactText(last);
      what.textContent = `The ${count.toLocaleString('en')} ${count === 1 ? 'reading' : 'readings'} selected on the chart: flag them whole or one input, or clear their flags.`;
      out.replaceChildren();
      details.open = true;
      details.scrollIntoView({ block: 'nearest' });
      reason.focus();
    },
  };
}
