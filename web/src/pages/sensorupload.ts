// A logger's file, uploaded from the sensor's page: the service parses it
// with dry_run first, and the page shows the first readings as they will be
// stored, under the sensor's input keys, before the file is sent for real.
// One parser, the service's: the preview cannot disagree with the upload.
import { must, type Schemas, type Sensor, type ApiClient } from '../api';
import { action, field, h, table } from '../dom';
import { formatNumber } from '../readings';
import { formatDateTime } from '../time';

type SensorPath = { org_id: number; proj_id: number; sensor_id: number };
type FileImport = Schemas['FileImport'];

/** uploadForm is the card that takes a CSV or TOA5 file into the sensor. */
export function uploadForm(api: ApiClient, path: SensorPath, s: Sensor): HTMLElement {
  const file = h('input', { type: 'file', name: 'file', accept: '.csv,.dat,.txt,text/csv', required: true });
  const tz = h('input', { name: 'tz', value: 'UTC', maxlength: 64 });
  const dst = h(
    'select',
    { name: 'dst' },
    h('option', { value: '' }, 'refuse them'),
    h('option', { value: 'earlier' }, 'earlier (summer time)'),
    h('option', { value: 'later' }, 'later (standard time)'),
  );
  const previewButton = h('button', { type: 'submit' }, 'Preview');
  const store = h('button', { type: 'button', hidden: true }, 'Store');
  const out = h('div', { 'aria-live': 'polite' });
  const keys = new Map(s.inputs.map((i) => [String(i.id), i.key]));

  async function post(text: string, dryRun: boolean): Promise<FileImport> {
    const query = { tz: tz.value.trim() || 'UTC', dst: (dst.value || undefined) as 'earlier' | 'later' | undefined, dry_run: dryRun || undefined };
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
    h(
      'div',
      { class: 'inline' },
      field('File', file),
      field('Time zone of the logger', tz, 'IANA, such as Europe/Zurich; Etc/GMT-1 for UTC+1 all year'),
      field('Times in the autumn fold', dst),
    ),
    previewButton,
    ' ',
    store,
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
      store.textContent = `Store ${answer.readings} readings`;
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
  return form;
}

/** preview shows what a dry run found, the first readings by input key. */
export function preview(answer: FileImport, keys: Map<string, string>): HTMLElement {
  const rows = answer.preview ?? [];
  const ids = [...new Set(rows.flatMap((r) => Object.keys(r.inputs)))].sort((a, b) => Number(a) - Number(b));
  const notes = [`${answer.readings} readings`];
  if (answer.skipped) notes.push(`${answer.skipped} ${answer.skipped === 1 ? 'line' : 'lines'} skipped (every value missing)`);
  if (answer.ignored_columns.length) notes.push(`ignored columns: ${answer.ignored_columns.join(', ')}`);
  return h(
    'div',
    null,
    h('p', null, notes.join(' · ')),
    table(
      ['Datetime', ...ids.map((id) => keys.get(id) ?? id)],
      rows.map((r) => [formatDateTime(r.datetime), ...ids.map((id) => (id in r.inputs ? formatNumber(r.inputs[id]) : '—'))]),
      { 'aria-label': 'Preview' },
    ),
  );
}
