// Links, a quiet sensor and its gap, renaming and deleting.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { base, orgId, when, page, state, shot, api, inkOf, legendInsideCard, piezometer, chooseSeries } from '../session.mjs';

test('links an input to another sensor, and back to its own readings', async () => {
  const source = await piezometer('BARO-1');
  await page.goto(base + state.sensorPath);
  assert.equal(await page.getByTestId('source-temp').textContent(), 'own reading');
  await page.getByLabel('Source of temp').selectOption({ label: 'BARO-1' });
  await page.getByLabel('Source key of temp').selectOption('freq');
  await page.getByLabel('Staleness of temp (s)').fill('600');
  await page.getByRole('button', { name: 'Save links' }).click();
  await page.getByText(/^Saved: links, formulas version \d+\.$/).waitFor();
  assert.equal(await page.getByTestId('source-temp').textContent(), 'linked to BARO-1 freq, staleness 600 s');
  const linked = await api('GET', `/api/v1/org/${orgId}/proj/${state.projectId}/sensors/${state.sensorId}`);
  assert.deepEqual(linked.body.inputs.find((i) => i.key === 'temp').link, { sensor_id: source.id, key: 'freq', staleness: 600 });
  await shot('sensor-links');

  await page.getByLabel('Source of temp').selectOption({ label: 'own reading' });
  await page.getByRole('button', { name: 'Save links' }).click();
  await page.getByTestId('source-temp').filter({ hasText: 'own reading' }).waitFor();
  assert.equal((await api('DELETE', `/api/v1/org/${orgId}/proj/${state.projectId}/sensors/${source.id}`)).status, 204);
});

test('opens a quiet sensor on its latest readings, breaks the line at a gap, and pages the table', async () => {
  const sensor = await piezometer('PZ-02');
  state.quietPath = `${state.projectPath}/sensors/${sensor.id}`;
  const id = Object.fromEntries(sensor.inputs.map((i) => [i.key, i.id]));
  // Quiet for 40 days: 150 readings 5 min apart up to its latest, and 100
  // more a month before those.
  const step = 5 * 60_000;
  const latest = Math.floor((Date.now() - 40 * 86_400_000) / 1000) * 1000;
  const times = [...Array.from({ length: 100 }, (_, i) => latest - 31 * 86_400_000 - (99 - i) * step), ...Array.from({ length: 150 }, (_, i) => latest - (149 - i) * step)];
  const batch = times.map((t, i) => ({ datetime: new Date(t).toISOString(), inputs: { [id.freq]: 2700 + (i % 50), [id.temp]: 10 } }));
  const posted = await api('POST', `/api/v1/org/${orgId}/proj/${state.projectId}/readings/${sensor.id}`, batch);
  assert.equal(posted.status, 200, JSON.stringify(posted.body));

  // Not an empty "last 24 h": the day up to its latest reading.
  await page.goto(`${base}${state.quietPath}/readings`);
  await page.getByTestId('load-status').filter({ hasText: `150 readings from ${when(latest + 1000 - 86_400_000)} to ${when(latest + 1000)}` }).waitFor();
  await page.locator('.u-over').waitFor();
  await shot('quiet-sensor');

  await page.getByRole('combobox', { name: 'Range' }).selectOption({ label: '365 days to the latest reading' });
  await page.getByTestId('load-status').filter({ hasText: '250 readings from' }).waitFor();
  await page.locator('.u-over').waitFor();
  // Frequency alone: drawn at both ends, and nothing across the month between.
  await chooseSeries('Frequency');
  const blue = '#1f77b4';
  assert.ok((await inkOf(blue, 0.9, 1)) > 50, 'the latest readings are not drawn');
  assert.equal(await inkOf(blue, 0.3, 0.7), 0, 'a line is drawn across the month without readings');
  await chooseSeries('Frequency', 'Temperature', 'Digits', 'Pressure');
  await legendInsideCard();
  await shot('chart-gap');

  // The table reads the range from the API a page at a time, newest first.
  await page.getByRole('button', { name: 'Table' }).click();
  const label = page.getByTestId('table-page');
  const rows = page.getByRole('table', { name: 'Readings' }).getByRole('row');
  const older = page.getByRole('button', { name: 'Older' });
  await label.filter({ hasText: 'Readings 1–100, newest first (page 1)' }).waitFor();
  assert.equal(await rows.count(), 101);
  assert.ok((await rows.nth(1).textContent()).startsWith(when(latest)));
  await older.click();
  await label.filter({ hasText: 'Readings 101–200, newest first (page 2)' }).waitFor();
  await older.click();
  await label.filter({ hasText: 'Readings 201–250, newest first (page 3)' }).waitFor();
  assert.equal(await rows.count(), 51);
  assert.ok((await rows.nth(50).textContent()).startsWith(when(times[0])));
  assert.ok(await older.isDisabled());
  await shot('readings-table-last-page');
  await page.getByRole('button', { name: 'Newer' }).click();
  await label.filter({ hasText: '(page 2)' }).waitFor();
});

test('renames a sensor and deletes it', async () => {
  await page.goto(base + state.quietPath);
  const form = page.getByRole('form', { name: 'Sensor' });
  await form.getByLabel('Name').fill('PZ-02 (replaced)');
  await form.getByLabel('Description').fill('North toe, replaced');
  await form.getByRole('button', { name: 'Save name and description' }).click();
  await page.getByText('Saved: name and description.').waitFor();
  await page.getByRole('heading', { name: 'PZ-02 (replaced)' }).waitFor();
  await page.getByRole('navigation', { name: 'Breadcrumbs' }).getByText('PZ-02 (replaced)').waitFor();
  await shot('sensor-renamed');

  await page.getByRole('button', { name: 'Delete sensor' }).click(); // the dialog is accepted
  await page.waitForURL(base + state.projectPath);
  await page.getByRole('table', { name: 'Status board' }).getByRole('link', { name: 'PZ-01', exact: true }).waitFor();
  assert.equal(await page.getByRole('table', { name: 'Status board' }).getByText(/PZ-02/).count(), 0);
  assert.equal((await api('GET', `/api/v1/org/${orgId}/proj/${state.projectId}/sensors/${state.quietPath.split('/').pop()}`)).status, 404);
});
