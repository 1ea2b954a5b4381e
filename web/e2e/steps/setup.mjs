// Sign-in, the project, the blueprint and sensor, readings, the chart, formulas and calibrations.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { base, token, orgId, output, blueprint, R0, N, freqs, digitsOf, pressureOf, fmt, fmtP, zone, when, page, state, shot, api, statsOf, legendAtNewest, inkOf, legendInsideCard, chooseSeries, seriesColours } from '../session.mjs';

test('signs in with a token, which stays out of the URL', async () => {
  await page.goto(`${base}/console/`);
  await page.waitForURL(`${base}/console/signin`);
  await page.getByLabel('API token').fill('rdg_not-a-token');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByText('That is not a token').waitFor();
  await page.getByLabel('API token').fill(token);
  await shot('signin');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'e2e@example.com' }).waitFor();
  assert.equal(page.url(), `${base}/console/`);
  assert.equal(await page.evaluate(() => sessionStorage.getItem('readings.token')), token);
  assert.ok(!page.url().includes(token));
});

test('creates a project', async () => {
  await page.getByRole('link', { name: 'E2E Monitoring' }).click();
  await page.waitForURL(`${base}/console/org/${orgId}`);
  const form = page.getByRole('form', { name: 'New project' });
  await form.getByLabel('Name').fill('Dam monitoring');
  await form.getByLabel('Description').fill('Piezometers on the north dam');
  await form.getByRole('button', { name: 'Create project' }).click();
  await page.getByRole('table', { name: 'Projects' }).getByRole('link', { name: 'Dam monitoring' }).waitFor();
  await page.getByRole('table', { name: 'Members' }).getByText('e2e@example.com').waitFor();
  await shot('organization');
});

test('creates the piezometer blueprint and a sensor from it', async () => {
  await page.getByRole('link', { name: 'Dam monitoring' }).click();
  await page.waitForURL(/\/console\/org\/\d+\/proj\/\d+$/);
  state.projectPath = new URL(page.url()).pathname;
  state.projectId = Number(state.projectPath.split('/').pop());

  await page.getByRole('button', { name: 'New blueprint' }).click();
  const form = page.getByRole('form', { name: 'New blueprint' });
  await form.getByLabel('Name', { exact: true }).fill('Vibrating-wire piezometer');
  // Structured fields, a row per input, constant and output: clear the
  // example's rows, then type each one in.
  for (const one of ['input', 'constant', 'output']) {
    while ((await form.getByRole('button', { name: new RegExp(`^Remove ${one} `) }).count()) > 0) await form.getByRole('button', { name: `Remove ${one} 1` }).click();
  }
  assert.equal(await form.getByRole('textbox').count(), 2); // name and description
  // First a formula the API refuses: its message shows next to the outputs.
  const broken = blueprint.outputs.map((o) => (o.key === 'pressure' ? { ...o, formula: 'G * (R0 - digitz)' } : o));
  for (const [part, one, items] of [['inputs', 'input', blueprint.inputs], ['constants', 'constant', blueprint.constants], ['outputs', 'output', broken]]) {
    for (const [i, item] of items.entries()) {
      await form.getByRole('button', { name: `Add ${one === 'input' ? 'an' : 'a'} ${one}` }).click();
      for (const [column, value] of Object.entries(item)) await form.getByLabel(`${one} ${i + 1} ${column}`, { exact: true }).fill(String(value));
    }
    assert.equal(await form.getByRole('table', { name: part[0].toUpperCase() + part.slice(1) }).getByRole('row').count(), items.length + 1);
  }
  await shot('blueprint-fields');
  await form.getByRole('button', { name: 'Create blueprint' }).click();
  await form.getByText(/output "pressure".*digitz/).waitFor();
  // The JSON view holds what the fields hold; a fix made there shows in the fields.
  await form.getByRole('button', { name: 'JSON', exact: true }).click();
  const json = form.getByLabel('Blueprint JSON');
  assert.deepEqual(JSON.parse(await json.inputValue()), { inputs: blueprint.inputs, constants: blueprint.constants, outputs: broken });
  await json.fill(JSON.stringify({ inputs: blueprint.inputs, constants: blueprint.constants, outputs: blueprint.outputs }, null, 2));
  await shot('blueprint-json');
  await form.getByRole('button', { name: 'Fields', exact: true }).click();
  assert.equal(await form.getByLabel('output 2 formula', { exact: true }).inputValue(), 'G * (R0 - digits)');
  await form.getByRole('button', { name: 'Create blueprint' }).click();
  await page.getByRole('table', { name: 'Blueprints' }).getByText('Vibrating-wire piezometer').waitFor();
  const [created] = (await api('GET', `/api/v1/org/${orgId}/blueprints`)).body.items;
  assert.deepEqual({ inputs: created.inputs, constants: created.constants, outputs: created.outputs }, blueprint);

  const sensorForm = page.getByRole('form', { name: 'New sensor' });
  // The sensors section re-renders with the new blueprint in its form.
  await sensorForm.getByRole('option', { name: 'Vibrating-wire piezometer' }).waitFor({ state: 'attached' });
  await sensorForm.getByLabel('Name', { exact: true }).fill('PZ-01');
  await sensorForm.getByLabel('Blueprint').selectOption({ label: 'Vibrating-wire piezometer' });
  await sensorForm.getByLabel('R0 (digit)').fill(String(R0));
  await sensorForm.getByRole('button', { name: 'Create sensor' }).click();
  // The board reads the new sensor at once.
  const board = page.getByRole('table', { name: 'Status board' });
  await board.getByRole('link', { name: 'PZ-01', exact: true }).waitFor();
  await board.getByRole('row').filter({ hasText: 'PZ-01' }).getByText('no readings').waitFor();
});

test('shows the sensor’s IDs on its formulas setup page', async () => {
  await page.getByRole('table', { name: 'Status board' }).getByRole('link', { name: 'Setup of PZ-01' }).click();
  await page.getByRole('heading', { name: 'PZ-01' }).waitFor();
  state.sensorPath = new URL(page.url()).pathname;
  state.sensorId = Number(state.sensorPath.split('/').pop());
  const ids = {};
  for (const key of ['freq', 'temp', 'digits', 'pressure']) {
    ids[key] = Number(await page.getByTestId(`id-${key}`).textContent());
  }
  // The page's IDs are the API's.
  const s = await api('GET', `/api/v1/org/${orgId}/proj/${state.projectId}/sensors/${state.sensorId}`);
  assert.equal(s.status, 200);
  assert.deepEqual(ids, Object.fromEntries([...s.body.inputs, ...s.body.outputs].map((x) => [x.key, x.id])));
  state.ids = ids;
  assert.equal(await page.getByRole('button', { name: `Copy the ID of freq` }).getAttribute('data-copy'), String(ids.freq));
  // The example posts to this sensor with its input IDs, and never holds the
  // token. Without a reading yet its values are placeholders the API
  // refuses, so that no made-up value becomes the sensor's latest.
  const example = JSON.parse(await page.getByTestId('example-json').textContent());
  assert.deepEqual(Object.keys(example[0].inputs).map(Number).sort(), [ids.freq, ids.temp].sort());
  assert.equal(example[0].inputs[ids.freq], '<freq in Hz>');
  const refused = await api('POST', `/api/v1/org/${orgId}/proj/${state.projectId}/readings/${state.sensorId}`, example);
  assert.equal(refused.status, 400, JSON.stringify(refused.body));
  const curl = await page.getByTestId('example-curl').textContent();
  assert.match(curl, new RegExp(`/api/v1/org/${orgId}/proj/${state.projectId}/readings/${state.sensorId} `));
  assert.ok(curl.includes('$TOKEN') && !curl.includes(token));
  assert.equal(await page.getByLabel('Value of R0').inputValue(), String(R0));
  await shot('sensor-formulas');
});

test('posts readings through the API, and the project shows the latest', async () => {
  const now = (state.postedAt = Date.now());
  const batch = freqs.map((f, i) => ({
    datetime: new Date(now - (N - i) * 60_000).toISOString(),
    inputs: { [state.ids.freq]: f, [state.ids.temp]: 11 + i / 10 },
  }));
  const res = await api('POST', `/api/v1/org/${orgId}/proj/${state.projectId}/readings/${state.sensorId}`, batch);
  assert.equal(res.status, 200, JSON.stringify(res.body));

  await page.goto(base + state.projectPath);
  const row = page.getByRole('table', { name: 'Status board' }).getByRole('row').filter({ hasText: 'PZ-01' });
  await row.getByTestId('age').waitFor();
  assert.match(await row.getByTestId('age').textContent(), /^(1 min ago|\d+ s ago|just now)$/);
  // The board shows the last output, with its declared decimals.
  assert.equal(await row.locator('.board-value').textContent(), `${fmtP(pressureOf(2800))} kPa`);
  await shot('project');
});

test('charts the readings and their outputs', async () => {
  await page.goto(`${base}${state.sensorPath}/readings`);
  await page.getByTestId('load-status').filter({ hasText: `${N} readings from` }).waitFor();
  await page.locator('.u-over').waitFor();
  // The outputs first, their inputs a tick away: an axis per unit.
  assert.deepEqual(await page.locator('.u-axis').evaluateAll((els) => els.map((e) => e.dataset.unit)), ['time', 'digit', 'kPa']);
  assert.equal(await page.getByTestId('stats').getByRole('row').filter({ hasText: 'Frequency' }).count(), 0);
  await chooseSeries('Frequency', 'Temperature', 'Digits', 'Pressure');

  const freq = await statsOf('Frequency');
  assert.deepEqual(freq, { points: N, min: '2751', max: '2800', last: '2800' });
  const pressure = await statsOf('Pressure');
  assert.equal(pressure.points, N);
  assert.equal(pressure.last, fmtP(pressureOf(2800)));
  assert.equal(pressure.max, fmtP(pressureOf(2751)));
  assert.equal((await statsOf('Digits')).last, fmt(digitsOf(2800)));

  // One axis per unit, each named by its unit: no series on a scale nobody sees.
  assert.deepEqual(await page.locator('.u-axis').evaluateAll((els) => els.map((e) => e.dataset.unit)), ['time', 'Hz', 'degC', 'digit', 'kPa']);
  await legendInsideCard();
  // The range ends at the latest reading, and datetimes read the same in the
  // status, the legend and the table, in the zone the page names.
  assert.equal(await page.getByTestId('zone').textContent(), zone);
  const newest = state.postedAt - 60_000;
  assert.match(await page.getByTestId('load-status').textContent(), new RegExp(` to ${when(Math.floor(newest / 1000) * 1000 + 1000)}$`));
  const legend = await legendAtNewest();
  assert.equal(legend['Time'], when(newest));
  assert.equal(legend['Frequency (Hz)'], '2800');
  assert.equal(legend['Digits (digit)'], fmt(digitsOf(2800)));
  assert.equal(legend['Pressure (kPa)'], fmtP(pressureOf(2800)));
  await shot('sensor-readings');
  // Each series alone: its line is on the canvas in its colour (src/colours.ts
  // SERIES_COLOURS), and no other line is. (Together, freq and digits overlap:
  // each has its own scale and digits = freq² / 1000 is nearly a straight line.)
  const colors = seriesColours;
  const boxes = Object.fromEntries(Object.keys(colors).map((name) => [name, page.getByRole('group', { name: 'Series' }).getByRole('checkbox', { name: new RegExp(`^${name}`) })]));
  for (const box of Object.values(boxes)) await box.uncheck();
  for (const [name, color] of Object.entries(colors)) {
    await boxes[name].check();
    await page.locator('.u-over').waitFor();
    const ink = {};
    for (const [other, c] of Object.entries(colors)) ink[other] = await inkOf(c);
    assert.ok(ink[name] > 100, `${name} alone: its line is not drawn; pixels of each colour ${JSON.stringify(ink)}`);
    for (const [other, n] of Object.entries(ink)) if (other !== name) assert.ok(n < 20, `${name} alone: ${other} is drawn too; ${JSON.stringify(ink)}`);
    await boxes[name].uncheck();
  }
  for (const box of Object.values(boxes)) await box.check();
  await page.getByRole('button', { name: 'Table' }).click();
  const rows = page.getByRole('table', { name: 'Readings' }).getByRole('row');
  await rows.nth(1).waitFor();
  assert.equal(await rows.count(), N + 1);
  assert.match(await rows.nth(1).textContent(), new RegExp(`^${when(newest)}2800.*${fmtP(pressureOf(2800))}`));
  await page.getByRole('button', { name: 'Chart' }).click();
});

test('downloads the range as CSV with the token', async () => {
  const download = page.waitForEvent('download');
  await page.getByRole('button', { name: 'Download CSV' }).click();
  const file = await download;
  assert.match(file.suggestedFilename(), new RegExp(`^sensor-${state.sensorId}_\\d{8}T\\d{4}Z_\\d{8}T\\d{4}Z\\.csv$`));
  const lines = readFileSync(await file.path(), 'utf8').trim().split('\n');
  const { freq, temp, digits, pressure } = state.ids;
  assert.equal(lines[0], `datetime,${[freq, temp].sort((a, b) => a - b).join(',')},${[digits, pressure].sort((a, b) => a - b).join(',')}`);
  assert.equal(lines.length, N + 1);
});

test('edits a formula, and the chart follows', async () => {
  await page.getByRole('navigation').getByRole('link', { name: 'Formulas setup' }).click();
  const formula = page.getByLabel('Formula of pressure');
  await formula.fill('G * (R0 - digitz)');
  await page.getByRole('button', { name: 'Save formulas and constants' }).click();
  // The API's message, next to the field it is about.
  const error = page.getByRole('row').filter({ has: formula }).getByRole('alert');
  await error.waitFor();
  assert.match(await error.textContent(), /output "pressure".*digitz/);
  await shot('sensor-formula-error');

  await formula.fill('G * (R0 - digits) - 100');
  await page.getByRole('button', { name: 'Save formulas and constants' }).click();
  await page.getByText('Saved: formulas version 2').waitFor();

  await page.getByRole('navigation').getByRole('link', { name: 'Readings' }).click();
  await page.getByTestId('load-status').filter({ hasText: `${N} readings from` }).waitFor();
  await page.locator('.u-over').waitFor();
  const edited = fmtP(pressureOf(2800) - 100);
  assert.equal((await statsOf('Pressure')).last, edited);
  assert.equal((await legendAtNewest())['Pressure (kPa)'], edited);
  await chooseSeries('Frequency', 'Pressure');
  assert.equal((await statsOf('Frequency')).last, '2800'); // inputs are untouched
});

test('dates a calibration, and the outputs use it from then on', async () => {
  await page.getByRole('navigation').getByRole('link', { name: 'Formulas setup' }).click();
  await page.getByRole('button', { name: 'Add a dated value of G' }).click();
  const from = page.getByLabel('G from');
  await from.fill('2024-06-01T00:00:00'); // no zone: the API refuses it
  await page.getByLabel('G value').fill('0.2');
  await page.getByRole('button', { name: 'Save calibrations' }).click();
  const error = page.getByRole('group', { name: /Gauge factor/ }).getByRole('alert');
  await error.waitFor();
  assert.match(await error.textContent(), /from/);

  // From the last ten readings on, G is 0.2 instead of 0.1.
  await from.fill(new Date(state.postedAt - 10.5 * 60_000).toISOString());
  await page.getByRole('button', { name: 'Save calibrations' }).click();
  await page.getByText('Saved: calibrations, formulas version 3').waitFor();
  // What a reading taken now uses: the dated value, not the undated 0.1.
  assert.match(await page.getByTestId('in-force-G').textContent(), /^0\.2 since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
  assert.equal(await page.getByTestId('in-force-R0').textContent(), String(R0));
  await shot('sensor-calibrations');

  await page.getByRole('navigation').getByRole('link', { name: 'Readings' }).click();
  await page.getByTestId('load-status').filter({ hasText: `${N} readings from` }).waitFor();
  const pressure = await statsOf('Pressure');
  assert.equal(pressure.last, fmtP(0.2 * (R0 - digitsOf(2800)) - 100));
  // The first reading with G = 0.2 (2791 Hz) has the highest pressure; the
  // last one before it (2790 Hz) keeps G = 0.1 and has the lowest.
  assert.equal(pressure.max, fmtP(0.2 * (R0 - digitsOf(2791)) - 100));
  assert.equal(pressure.min, fmtP(pressureOf(2790) - 100));
});
