// Several sensors on one chart: one quantity (pressure, say) of each
// chosen sensor of the project over one range, a line a sensor, on one
// axis per unit, with each sensor's thresholds on it. The comparison an
// engineer makes most: is this piezometer rising alone, or with its row?
import { bandColumns, chooseSource, describeInterval, FNS, maxPoints, seriesReadings, totalReadings } from '../aggregates';
import { thresholdLines, type Threshold } from '../alarms';
import { ApiError, must, send, type AlarmLevel, type AlarmRule, type Bucket, type Reading, type Sensor } from '../api';
import { allPages, id, orgName, type Ctx } from '../app';
import { drawChart, type ChartData } from '../chart';
import { seriesPalette } from '../colours';
import { action, field, h, section, table } from '../dom';
import { alignSeries, columns, formatNumber, loadRange, nextFromHeaders, quantitiesOf, seriesFor, stats, type Series } from '../readings';
import { href } from '../router';
import { formatDateTime, presetRange, PRESETS, zoneName, type PresetId, type Range } from '../time';

/** The most sensors on one chart: as many lines as a reader tells apart by colour. */
export const MAX_COMPARED = 10;

export function comparePage(ctx: Ctx): HTMLElement {
  const org = id(ctx, 'org');
  const proj = id(ctx, 'proj');
  const path = { org_id: org, proj_id: proj };
  const params = new URLSearchParams(location.search);
  const asked = (params.get('sensors') ?? '')
    .split(',')
    .map(Number)
    .filter((n) => Number.isInteger(n) && n > 0);

  const body = section(async () => {
    const [project, sensors, levels] = await Promise.all([
      must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}', { params: { path } })),
      allPages((cursor) => must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/sensors', { params: { path, query: { limit: 1000, cursor } } }))),
      must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/alarm-levels', { params: { path } })).then((l) => l.items),
    ]);
    ctx.setCrumbs([
      { label: orgName(ctx, org), path: `/org/${org}` },
      { label: project.name, path: `/org/${org}/proj/${proj}` },
      { label: 'Compare' },
    ]);
    return comparer(ctx, path, sensors.filter((s) => s.inputs.length + s.outputs.length > 0), asked, params.get('key') ?? '', levels);
  });
  return h(
    'div',
    null,
    h('h1', null, 'Compare sensors'),
    h('p', { class: 'muted' }, `One quantity of up to ${MAX_COMPARED} sensors of the project on one chart, a line a sensor, one axis per unit, with each sensor’s alarm thresholds.`),
    body.el,
  );
}

type ProjPath = { org_id: number; proj_id: number };

function comparer(ctx: Ctx, path: ProjPath, sensors: Sensor[], asked: number[], askedKey: string, levels: AlarmLevel[]): HTMLElement {
  if (sensors.length === 0) return h('p', { class: 'muted' }, 'The project has no sensors with a blueprint to compare.');
  const chosen = new Set(asked.filter((id) => sensors.some((s) => s.id === id)).slice(0, MAX_COMPARED));
  if (chosen.size === 0) chosen.add(sensors[0]!.id);
  const palette = seriesPalette(levels.map((l) => l.colour));
  const quantity = h('select', { name: 'key' });
  const preset = h('select', { name: 'range' }, PRESETS.map((p) => h('option', { value: p.id }, p.label)));
  preset.value = '7d';
  const boxes = h(
    'fieldset',
    { class: 'sensor-picks' },
    h('legend', null, 'Sensors'),
    sensors.map((s) => {
      const box = h('input', { type: 'checkbox', value: String(s.id), checked: chosen.has(s.id) });
      box.addEventListener('change', () => {
        if (box.checked && chosen.size >= MAX_COMPARED) {
          box.checked = false;
          out.replaceChildren(h('p', { class: 'error', role: 'alert' }, `At most ${MAX_COMPARED} sensors on one chart.`));
          return;
        }
        if (box.checked) chosen.add(s.id);
        else chosen.delete(s.id);
        fillQuantities();
        void load();
      });
      return h('label', { class: 'pick' }, box, s.name);
    }),
  );
  const loadButton = h('button', { type: 'submit' }, 'Load');
  const status = h('span', { class: 'muted', 'data-testid': 'load-status', 'aria-live': 'polite' });
  const resolution = h('p', { class: 'muted resolution', 'data-testid': 'resolution' });
  const chartEl = h('div', { class: 'chart', 'data-testid': 'chart' });
  const statsEl = h('div');
  const out = h('div');
  const form = h('form', { class: 'inline controls', 'aria-label': 'Comparison' }, field('Quantity', quantity), field('Range', preset), loadButton, status);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void load();
  });
  quantity.addEventListener('change', () => void load());
  preset.addEventListener('change', () => void load());

  function fillQuantities() {
    const picked = sensors.filter((s) => chosen.has(s.id));
    // By default the first sensor's last output: its engineering value, as the board shows.
    const keep = quantity.value || askedKey || picked[0]?.outputs.at(-1)?.key || '';
    const qs = quantitiesOf(picked);
    quantity.replaceChildren(...qs.map((q) => h('option', { value: q.key }, `${q.label}${q.unit ? ` (${q.unit})` : ''}`)));
    if (qs.some((q) => q.key === keep)) quantity.value = keep;
  }
  fillQuantities();

  const rulesOf = new Map<number, AlarmRule[]>();
  async function rules(sensor: Sensor): Promise<AlarmRule[]> {
    if (!rulesOf.has(sensor.id)) {
      const r = await must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/sensors/{sensor_id}/alarm-rules', { params: { path: { ...path, sensor_id: sensor.id } } })).catch(() => ({ items: [] }));
      rulesOf.set(sensor.id, r.items);
    }
    return rulesOf.get(sensor.id)!;
  }

  let destroy: (() => void) | undefined;
  let loading: AbortController | undefined;
  async function load() {
    loading?.abort();
    const abort = (loading = new AbortController());
    const key = quantity.value;
    // The address says what is compared, to share or to come back to.
    history.replaceState(null, '', href(`/org/${path.org_id}/proj/${path.proj_id}/compare?sensors=${[...chosen].join(',')}&key=${encodeURIComponent(key)}`));
    await action(loadButton, out, async () => {
      const picked = sensors.filter((s) => chosen.has(s.id)).map((s) => ({ sensor: s, series: seriesFor(s, key) }));
      const drawn = picked.filter((p): p is { sensor: Sensor; series: Series } => p.series !== undefined);
      const without = picked.filter((p) => !p.series).map((p) => p.sensor.name);
      if (drawn.length === 0) {
        destroy?.();
        chartEl.replaceChildren(h('p', { class: 'muted' }, 'Choose sensors that have this quantity.'));
        statsEl.replaceChildren();
        return;
      }
      status.textContent = 'Loading…';
      // One range for all: the presets end at the newest of their latest readings.
      const latest = await Promise.all(
        drawn.map(({ sensor }) =>
          must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/readings/{sensor_id}', { params: { path: { ...path, sensor_id: sensor.id }, query: { order: 'desc', limit: 1 } }, signal: abort.signal })),
        ),
      );
      const end = Math.max(...latest.map((r) => (r[0] ? Date.parse(r[0].datetime) : 0)));
      const range = presetRange(preset.value as PresetId, end > 0 ? new Date(end) : new Date());
      const data = await readSeries(drawn, range, abort.signal);
      if (abort.signal.aborted) return;
      // Each sensor's thresholds, named with the sensors whose they are.
      const thresholds: (Threshold & { sensors: string[] })[] = [];
      for (const { sensor, series } of drawn) {
        for (const t of thresholdLines(await rules(sensor), levels, [series])) {
          const same = thresholds.find((x) => x.scale === t.scale && x.value === t.value && x.colour === t.colour);
          if (same) same.sensors.push(sensor.name);
          else thresholds.push({ ...t, sensors: [sensor.name] });
        }
      }
      const named = thresholds.map((t) => ({ ...t, label: `${t.sensors.join(', ')}: ${t.label}` }));
      const colourOf = (s: Series) => palette[drawn.findIndex((d) => d.series.id === s.id) % palette.length]!;
      destroy?.();
      destroy = drawChart(chartEl, { ...data.chart, thresholds: named }, colourOf);
      resolution.textContent = data.resolution;
      status.textContent = `${data.readings.toLocaleString('en')} readings of ${drawn.length} ${drawn.length === 1 ? 'sensor' : 'sensors'} from ${formatDateTime(range.from)} to ${formatDateTime(range.to)}${without.length ? `; without ${key}: ${without.join(', ')}` : ''}`;
      statsEl.replaceChildren(
        table(
          ['Sensor', 'Readings', 'Min', 'Max', 'Last'],
          drawn.map(({ sensor, series }, i) => [
            h('span', null, h('span', { class: 'swatch', style: `background:${colourOf(series)}` }), ' ', h('a', { href: href(`/org/${path.org_id}/proj/${path.proj_id}/sensors/${sensor.id}/readings`) }, sensor.name)),
            data.counts[i]!.toLocaleString('en'),
            formatNumber(data.min[i], series.decimals),
            formatNumber(data.max[i], series.decimals),
            formatNumber(data.last[i], series.decimals),
          ]),
          { 'aria-label': 'Compared sensors', 'data-testid': 'stats' },
        ),
      );
    });
  }

  /**
   * readSeries reads each sensor's values of the range: its readings when
   * every sensor has at most RAW_LIMIT of them (the aggregates' counts say),
   * else every sensor's buckets, of one width since the range is one.
   */
  async function readSeries(drawn: { sensor: Sensor; series: Series }[], range: Range, signal: AbortSignal) {
    const query = {
      max_points: maxPoints(chartEl.clientWidth || 1000, drawn.length),
      fn: FNS.join(','),
      outputs: true,
      tz: zoneName(),
      datetime__gte: range.from.toISOString(),
      datetime__lt: range.to.toISOString(),
    };
    const aggregates = await Promise.all(
      drawn.map(({ sensor }) =>
        send(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/readings/{sensor_id}/aggregates', { params: { path: { ...path, sensor_id: sensor.id }, query }, signal })).catch((err: unknown) => {
          if (err instanceof ApiError && err.status === 400) return undefined;
          throw err;
        }),
      ),
    );
    const buckets = aggregates.every((a) => a !== undefined) && aggregates.some((a) => chooseSource(totalReadings(a!.data)) === 'aggregates');
    if (buckets) {
      const tables = drawn.map(({ series }, i) => {
        const b = bandColumns(aggregates[i]!.data as Bucket[], [series]);
        return { b, table: { xs: b.xs, ys: [b.avg[0]!, b.min[0]!, b.max[0]!] } };
      });
      const aligned = alignSeries(tables.map((t) => t.table));
      const chart: ChartData = {
        xs: aligned.xs,
        series: drawn.map((d) => d.series),
        ys: drawn.map((_, i) => aligned.ys[3 * i]!),
        band: { min: drawn.map((_, i) => aligned.ys[3 * i + 1]!), max: drawn.map((_, i) => aligned.ys[3 * i + 2]!) },
      };
      const interval = aggregates[0]!.response.headers.get('X-Readings-Interval') ?? '';
      return {
        chart,
        readings: tables.reduce((sum, t) => sum + seriesReadings(t.b)[0]!, 0),
        counts: tables.map((t) => seriesReadings(t.b)[0]!),
        min: tables.map((t) => stats(t.b.min[0]!).min),
        max: tables.map((t) => stats(t.b.max[0]!).max),
        last: tables.map((t) => stats(t.b.avg[0]!).last),
        resolution: `Resolution: buckets of ${describeInterval(interval)} (${interval}): each sensor’s average line in the band from its minimum to its maximum.`,
      };
    }
    const readings = await Promise.all(
      drawn.map(({ sensor }) => {
        const listPath = `/api/v1/org/${path.org_id}/proj/${path.proj_id}/readings/${sensor.id}`;
        return loadRange({
          range,
          path: listPath,
          fetchPage: async (q) => {
            const { data, response } = await send(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/readings/{sensor_id}', { params: { path: { ...path, sensor_id: sensor.id }, query: q }, signal }));
            return { readings: data as Reading[], link: nextFromHeaders(response.headers) };
          },
        });
      }),
    );
    const tables = drawn.map(({ series }, i) => {
      const [xs, ys] = columns(readings[i]!.readings, [series]);
      return { xs, ys: [ys!] };
    });
    const aligned = alignSeries(tables);
    const st = tables.map((t) => stats(t.ys[0]!));
    return {
      chart: { xs: aligned.xs, series: drawn.map((d) => d.series), ys: aligned.ys } as ChartData,
      readings: st.reduce((n, s) => n + s.count, 0),
      counts: st.map((s) => s.count),
      min: st.map((s) => s.min),
      max: st.map((s) => s.max),
      last: st.map((s) => s.last),
      resolution: 'Resolution: every reading.',
    };
  }

  void load();
  return h('div', { class: 'viewer' }, h('div', { class: 'viewer-controls' }, boxes, form, out), h('div', { class: 'viewer-chart' }, resolution, chartEl), h('div', { class: 'viewer-data' }, statsEl));
}
