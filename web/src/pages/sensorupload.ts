// A logger's file, uploaded from the sensor's page: the service parses it
// with dry_run first, and the page shows the first readings as they will be
// stored, under the sensor's input keys, before the file is sent for real.
// One parser, the service's: the preview cannot disagree with the upload.
// The sensor's import profile fills the zone, fold and column mapping in,
// and an editor can save what a preview just used as the profile.
import { must, type Schemas, type Sensor, type ApiClient } from '../api';
import { action, field, h, table } from '../dom';
import { formatNumber } from '../readings';
import { formatDateTime, zoneName } from '../time';

type SensorPath = { org_id: number; proj_id: number; sensor_id: number };
type FileImport = Schemas['FileImport'];
type ImportProfile = Schemas['ImportProfile'];
type Dst = Schemas['Dst'];

/** parseColumns reads a mapping written `column:input, …` (the query's form). */
export function parseColumns(text: string): Record<string, string> {
  const columns: Record<string, string> = {};
  for (const pair of text.split(',')) {
    if (!pair.trim()) continue;
    const at = pair.indexOf(':');
    if (at <= 0) throw new Error(`column mapping: "${pair.trim()}" is not column:input, such as Freq_Avg:freq`);
    columns[pair.slice(0, at).trim()] = pair.slice(at + 1).trim();
  }
  return columns;
}

/** formatColumns writes a mapping as parseColumns reads it. */
export function formatColumns(columns: Record<string, string>): string {
  return Object.entries(columns)
    .map(([column, input]) => `${column}:${input}`)
    .join(', ');
}

/** profileNote says in words what the sensor's import profile does. */
export function profileNote(p: ImportProfile): string {
  if (!p.updated_at) return 'No import profile: files are read in UTC, columns by input key or ID.';
  const mapped = formatColumns(p.columns);
  return `Import profile: times in ${p.tz}${p.dst ? `, the autumn fold’s ${p.dst}` : ''}; ${mapped ? `columns ${mapped}` : 'columns by input key or ID'}.`;
}

/**
 * uploadForm is the card that takes a CSV or TOA5 file into the sensor;
 * canSave shows the button that saves the settings as its import profile.
 */
export function uploadForm(api: ApiClient, path: SensorPath, s: Sensor, canSave: boolean): HTMLElement {
  const file = h('input', { type: 'file', name: 'file', accept: '.csv,.dat,.txt,text/csv', required: true });
  const tz = h('input', { name: 'tz', value: 'UTC', maxlength: 64 });
  const dst = h(
    'select',
    { name: 'dst' },
    h('option', { value: '' }, 'refuse them'),
    h('option', { value: 'earlier' }, 'earlier (summer time)'),
    h('option', { value: 'later' }, 'later (standard time)'),
  );
  const columns = h('input', { name: 'columns', maxlength: 4000, placeholder: 'Freq_Avg:freq, Temp_Avg:temp' });
  const previewButton = h('button', { type: 'submit' }, 'Preview');
  const store = h('button', { type: 'button', hidden: true }, 'Store');
  const save = h('button', { type: 'button', hidden: !canSave }, 'Save as the sensor’s import profile');
  const note = h('p', { class: 'muted' }, 'Reading the sensor’s import profile…');
  const out = h('div', { 'aria-live': 'polite' });
  const keys = new Map(s.inputs.map((i) => [String(i.id), i.key]));

  const profileURL = '/api/v1/org/{org_id}/proj/{proj_id}/sensors/{sensor_id}/import-profile';
  function show(p: ImportProfile) {
    note.textContent = profileNote(p);
    tz.value = p.tz;
    dst.value = p.dst ?? '';
    columns.value = formatColumns(p.columns);
  }
  must(api.GET(profileURL, { params: { path } })).then(show, (err: unknown) => {
    note.textContent = `The import profile could not be read: ${err instanceof Error ? err.message : String(err)}`;
  });

  async function post(text: string, dryRun: boolean): Promise<FileImport> {
    const mapping = formatColumns(parseColumns(columns.value)).replaceAll(', ', ',');
    const query = {
      tz: tz.value.trim() || 'UTC',
      dst: (dst.value || undefined) as Dst | undefined,
      columns: mapping || undefined,
      dry_run: dryRun || undefined,
    };
    const answer = await must(
      api.POST('/api/v1/org/{org_id}/proj/{proj_id}/readings/{sensor_id}', {
        params: { path, query },
        body: text as never,
        bodySerializer: (b: unknown) => b as string,
        headers: { 'Content-Type': 'text/csv' },
      }),
    );
    return answer as FileImport;
  }

  let text = '';
  const form = h(
    'form',
    { class: 'card', 'aria-label': 'Upload a file' },
    h('h2', null, 'Upload a logger’s file'),
    h('p', { class: 'muted' }, 'CSV (datetime, then one column per input key or ID) or Campbell Scientific TOA5. NAN or an empty cell is a missing value; RECORD and other columns are ignored.'),
    note,
    h(
      'div',
      { class: 'inline' },
      field('File', file),
      field('Time zone of the logger', tz, 'IANA, such as Europe/Zurich; Etc/GMT-1 for UTC+1 all year'),
      field('Times in the autumn fold', dst),
      field('Column mapping', columns, 'column:input, such as Freq_Avg:freq; empty: columns named by input key or ID'),
    ),
    previewButton,
    ' ',
    store,
    ' ',
    save,
    out,
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    store.hidden = true;
    void action(previewButton, out, async () => {
      const chosen = file.files?.[0];
      if (!chosen) throw new Error('choose a file first');
      text = await chosen.text();
      const answer = await post(text, true);
      out.replaceChildren(preview(answer, keys));
      store.textContent = `Store ${answer.readings} readings` + (answer.replaced ? ` (${answer.replaced} replacing stored ones)` : '');
      store.hidden = false;
    });
  });
  store.addEventListener('click', () => {
    void action(store, out, async () => {
      const answer = await post(text, false);
      store.hidden = true;
      out.replaceChildren(h('p', { class: 'ok', role: 'status' }, `Stored: ${answer.new} new, ${answer.replaced} replaced.`));
    });
  });
  save.addEventListener('click', () => {
    void action(save, out, async () => {
      const body = { tz: tz.value.trim() || 'UTC', dst: (dst.value || undefined) as Dst | undefined, columns: parseColumns(columns.value) };
      const saved = await must(api.PUT(profileURL, { params: { path }, body }));
      show(saved);
      out.replaceChildren(h('p', { class: 'ok', role: 'status' }, 'Saved: the sensor’s files are now read this way without parameters.'));
    });
  });
  return form;
}

/** preview shows what a dry run found, the first readings by input key. */
export function preview(answer: FileImport, keys: Map<string, string>): HTMLElement {
  const rows = answer.preview ?? [];
  const ids = [...new Set(rows.flatMap((r) => Object.keys(r.inputs)))].sort((a, b) => Number(a) - Number(b));
  const notes = [`${answer.readings} readings: ${answer.new} new, ${answer.replaced} replacing stored ones`];
  if (answer.skipped) notes.push(`${answer.skipped} ${answer.skipped === 1 ? 'line' : 'lines'} skipped (every value missing)`);
  if (answer.ignored_columns.length) notes.push(`ignored columns: ${answer.ignored_columns.join(', ')}`);
  return h(
    'div',
    null,
    h('p', { 'data-testid': 'preview-counts' }, notes.join(' · ')),
    answer.replaced ? h('p', { class: 'notice' }, `Storing it overwrites ${answer.replaced} ${answer.replaced === 1 ? 'reading' : 'readings'} already stored at the same instants.`) : null,
    h('p', { class: 'muted' }, `Times below in ${zoneName()}, the browser’s time zone, as the service will store them.`),
    table(
      [`Datetime (${zoneName()})`, ...ids.map((id) => keys.get(id) ?? id)],
      rows.map((r) => [formatDateTime(r.datetime), ...ids.map((id) => (id in r.inputs ? formatNumber(r.inputs[id]) : '—'))]),
      { 'aria-label': 'Preview' },
    ),
  );
}
