// The console end to end: headless Chromium (Debian's, through
// playwright-core) against the real service that scripts/e2e.sh starts on
// a fresh database. The steps run in order and share one browser tab, as a
// person would use it. Screenshots go to $E2E_OUTPUT/console/ (CI keeps them).
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { chromium } from 'playwright-core';

const base = need('E2E_BASE');
const token = need('E2E_TOKEN');
const viewerToken = need('E2E_VIEWER_TOKEN');
const orgId = Number(need('E2E_ORG'));
const output = join(process.env.E2E_OUTPUT ?? 'test-output', 'console');
const executablePath = process.env.CHROMIUM ?? '/usr/bin/chromium';

function need(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run make e2e`);
  return v;
}

// The piezometer of the README, with the zero reading set on the sensor.
const blueprint = {
  inputs: [
    { key: 'freq', name: 'Frequency', unit: 'Hz' },
    { key: 'temp', name: 'Temperature', unit: 'degC' },
  ],
  constants: [
    { key: 'G', name: 'Gauge factor', unit: 'kPa/digit', default: 0.1 },
    { key: 'R0', name: 'Zero reading', unit: 'digit', default: 0 },
  ],
  outputs: [
    { key: 'digits', name: 'Digits', unit: 'digit', formula: 'freq^2 / 1000' },
    { key: 'pressure', name: 'Pressure', unit: 'kPa', formula: 'G * (R0 - digits)' },
  ],
};
const R0 = 9000;
const N = 50;
// Reading i is at (N - i) minutes ago, with freq 2751 + i: the last is 2800 Hz.
const freqs = Array.from({ length: N }, (_, i) => 2751 + i);
const digitsOf = (f) => (f * f) / 1000;
const pressureOf = (f) => 0.1 * (R0 - digitsOf(f));
// As the console shows numbers (src/readings.ts formatNumber).
const fmt = (v) => (Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(6))));
// The browser runs in this zone; the console shows datetimes in it, as "2026-11-23 19:01:05".
const zone = 'Europe/Berlin';
const local = new Intl.DateTimeFormat('sv-SE', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' });
const when = (t) => local.format(new Date(t));

let context;
let page;
let profileDir;
const problems = [];
const state = {};

before(async () => {
  mkdirSync(output, { recursive: true });
  profileDir = mkdtempSync(join(tmpdir(), 'readings-e2e-'));
  context = await chromium.launchPersistentContext(profileDir, {
    executablePath,
    headless: true,
    viewport: { width: 1280, height: 900 },
    timezoneId: zone,
    acceptDownloads: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(10_000);
  page.on('dialog', (d) => void d.accept()); // the console confirms before revoking
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    // A 404 is a problem, the overdue rule's too: the console reads it from the sensor's rules' list.
    if (msg.type() === 'error' && !/status of 40[01]/.test(msg.text())) problems.push(`console: ${msg.text()}: ${msg.location().url}`);
  });
});

after(async () => {
  await context?.close();
  if (profileDir) rmSync(profileDir, { recursive: true, force: true });
});

async function shot(name) {
  await page.screenshot({ path: join(output, `${name}.png`), fullPage: true });
}

async function api(method, path, body, secret = token) {
  const res = await fetch(base + path, {
    method,
    headers: { Authorization: `Bearer ${secret}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

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
  const sensors = page.getByRole('table', { name: 'Sensors' });
  await sensors.getByRole('link', { name: 'PZ-01' }).waitFor();
  await sensors.getByText('no readings').waitFor();
});

test('shows the sensor’s IDs on its formulas setup page', async () => {
  await page.getByRole('table', { name: 'Sensors' }).getByRole('link', { name: 'PZ-01' }).click();
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
  // The example posts to this sensor with its input IDs, and never holds the token.
  const example = JSON.parse(await page.getByTestId('example-json').textContent());
  assert.deepEqual(Object.keys(example[0].inputs).map(Number).sort(), [ids.freq, ids.temp].sort());
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
  const row = page.getByRole('table', { name: 'Sensors' }).getByRole('row').filter({ hasText: 'PZ-01' });
  await row.getByTestId('age').waitFor();
  assert.match(await row.getByTestId('age').textContent(), /^(1 min ago|\d+ s ago|just now)$/);
  assert.match(await row.textContent(), new RegExp(`pressure ${fmt(pressureOf(2800))} kPa`));
  await shot('project');
});

async function statsOf(label) {
  const row = page.getByTestId('stats').getByRole('row').filter({ hasText: label });
  const cells = await row.getByRole('cell').allTextContents();
  return { points: Number(cells[2]), min: cells[3], max: cells[4], last: cells[5] };
}

// legendAt hovers the chart's right edge, where the newest reading is, and
// reads uPlot's legend there.
async function legendAtNewest() {
  const over = page.locator('.u-over');
  const box = await over.boundingBox();
  await page.mouse.move(box.x + box.width - 1, box.y + box.height / 2);
  const legend = {};
  for (const row of await page.locator('.u-legend .u-series').all()) {
    legend[(await row.locator('.u-label').textContent()).trim()] = (await row.locator('.u-value').textContent()).trim();
  }
  return legend;
}

// inkOf counts the chart canvas's pixels drawn in a series' colour, in the
// columns from fraction `from` to `to` of its width: opaque ones (lines),
// or with 'faint' the translucent ones (a band's fill and edges).
async function inkOf(hex, from = 0, to = 1, alpha = 'opaque') {
  return page.evaluate(
    ([hex, from, to, faint]) => {
      const canvas = document.querySelector('.u-wrap canvas');
      const x0 = Math.floor(canvas.width * from);
      const w = Math.max(1, Math.floor(canvas.width * to) - x0);
      const { data } = canvas.getContext('2d').getImageData(x0, 0, w, canvas.height);
      const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
      let n = 0;
      for (let i = 0; i < data.length; i += 4) {
        const a = data[i + 3];
        if (Math.abs(data[i] - r) < 40 && Math.abs(data[i + 1] - g) < 40 && Math.abs(data[i + 2] - b) < 40 && (faint ? a > 20 && a <= 128 : a > 128)) n++;
      }
      return n;
    },
    [hex, from, to, alpha === 'faint'],
  );
}

// legendInsideCard checks that the chart's legends are drawn within its card.
async function legendInsideCard() {
  const card = await page.getByTestId('chart').boundingBox();
  for (const el of await page.locator('.u-legend').all()) {
    const legend = await el.boundingBox();
    assert.ok(legend.x >= card.x && legend.x + legend.width <= card.x + card.width + 0.5, `a legend (x ${legend.x}, width ${legend.width}) runs out of its card (x ${card.x}, width ${card.width})`);
    assert.ok(legend.y + legend.height <= card.y + card.height + 0.5, 'a legend runs below its card');
  }
}

test('charts the readings and their outputs', async () => {
  await page.goto(`${base}${state.sensorPath}/readings`);
  await page.getByTestId('load-status').filter({ hasText: `${N} readings from` }).waitFor();
  await page.locator('.u-over').waitFor();

  const freq = await statsOf('Frequency');
  assert.deepEqual(freq, { points: N, min: '2751', max: '2800', last: '2800' });
  const pressure = await statsOf('Pressure');
  assert.equal(pressure.points, N);
  assert.equal(pressure.last, fmt(pressureOf(2800)));
  assert.equal(pressure.max, fmt(pressureOf(2751)));
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
  assert.equal(legend['Pressure (kPa)'], fmt(pressureOf(2800)));
  await shot('sensor-readings');
  // Each series alone: its line is on the canvas in its colour (src/chart.ts
  // COLORS), and no other line is. (Together, freq and digits overlap: each
  // has its own scale and digits = freq² / 1000 is nearly a straight line.)
  const colors = { Frequency: '#1f77b4', Temperature: '#d62728', Digits: '#2ca02c', Pressure: '#ff7f0e' };
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
  assert.match(await rows.nth(1).textContent(), new RegExp(`^${when(newest)}2800.*${fmt(pressureOf(2800))}`));
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
  const edited = fmt(pressureOf(2800) - 100);
  assert.equal((await statsOf('Pressure')).last, edited);
  assert.equal((await legendAtNewest())['Pressure (kPa)'], edited);
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
  assert.equal(pressure.last, fmt(0.2 * (R0 - digitsOf(2800)) - 100));
  // The first reading with G = 0.2 (2791 Hz) has the highest pressure; the
  // last one before it (2790 Hz) keeps G = 0.1 and has the lowest.
  assert.equal(pressure.max, fmt(0.2 * (R0 - digitsOf(2791)) - 100));
  assert.equal(pressure.min, fmt(pressureOf(2790) - 100));
});

// The last reading's pressure, after the formula edit and the calibration:
// 0.2 × (R0 − 2800² / 1000) − 100.
const lastPressure = 0.2 * (R0 - digitsOf(2800)) - 100;
const alertColour = '#f2c94c'; // the default Alert level's

// piezometer makes a sensor of the project from the blueprint, with the README's zero reading.
async function piezometer(name) {
  const [bp] = (await api('GET', `/api/v1/org/${orgId}/blueprints`)).body.items;
  const created = await api('POST', `/api/v1/org/${orgId}/proj/${state.projectId}/sensors`, { name, blueprint_id: bp.id, constants: { R0 } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  return created.body;
}

test('sets an alarm rule on the formulas page, beside the output it watches', async () => {
  await page.getByRole('navigation').getByRole('link', { name: 'Formulas setup' }).click();
  const form = page.getByRole('form', { name: 'Alarm rule' });
  await form.getByLabel('Target').selectOption('pressure');
  await form.getByLabel('Direction').selectOption('above');
  await form.getByLabel('Threshold').fill('100');
  await form.getByLabel('Level').selectOption('Alert');
  await form.getByLabel('Deadband').fill('-1');
  await form.getByRole('button', { name: 'Add rule' }).click();
  // The API refuses a negative deadband; its message shows next to the field.
  const error = form.getByTestId('error-deadband').getByRole('alert');
  await error.waitFor();
  assert.match(await error.textContent(), /deadband/);
  await shot('alarm-rule-error');

  await form.getByLabel('Deadband').fill('2');
  await form.getByRole('button', { name: 'Add rule' }).click();
  const rules = page.getByRole('table', { name: 'Rules' });
  const row = rules.getByRole('row').filter({ hasText: 'pressure' });
  await row.getByText('above 100, deadband 2').waitFor();
  // It holds at once: the newest reading's pressure is above 100.
  assert.ok(lastPressure > 100);
  await row.getByText('holds').waitFor();
  assert.match(await page.getByTestId('rules-pressure').textContent(), /Alert above 100, deadband 2/);
  assert.equal(await page.getByTestId('rules-freq').textContent(), '');

  // Edited in the same form: the threshold moves, the alarm still holds.
  await row.getByRole('button', { name: 'Edit' }).click();
  assert.equal(await form.getByLabel('Threshold').inputValue(), '100');
  await form.getByLabel('Threshold').fill('110');
  await form.getByRole('button', { name: 'Save rule' }).click();
  await rules.getByRole('row').filter({ hasText: 'above 110, deadband 2' }).getByText('holds').waitFor();
  const listed = (await api('GET', `/api/v1/org/${orgId}/proj/${state.projectId}/sensors/${state.sensorId}/alarm-rules`)).body.items;
  assert.deepEqual(listed.map((r) => [r.target, r.level, r.direction, r.threshold, r.deadband, r.persistence]), [['pressure', 'Alert', 'above', 110, 2, 1]]);

  const overdue = page.getByRole('form', { name: 'Overdue rule' });
  await overdue.getByLabel('Level').selectOption('Maintenance');
  await overdue.getByLabel('After (seconds)').fill('3600');
  await overdue.getByRole('button', { name: 'Save overdue rule' }).click();
  await page.getByTestId('overdue-rule').filter({ hasText: 'Maintenance when no reading has arrived for 3,600 s' }).waitFor();
  await shot('alarm-rules');
});

test('shows the alarm on the project page, acknowledged with a note, and in the history', async () => {
  await page.goto(base + state.projectPath);
  const alarms = page.getByRole('table', { name: 'Current alarms' });
  const row = alarms.getByRole('row').filter({ hasText: 'PZ-01' });
  await row.waitFor();
  assert.match(await row.textContent(), new RegExp(`pressure.*Alert.*${fmt(lastPressure)}`));
  assert.equal(await row.locator('.swatch').evaluate((el) => getComputedStyle(el).backgroundColor), 'rgb(242, 201, 76)');
  await row.getByText('no', { exact: true }).waitFor();
  await shot('project-alarm');
  await row.getByLabel('Note on PZ-01 pressure').fill('Site team informed');
  await row.getByRole('button', { name: 'Acknowledge' }).click();
  await row.getByText(/^yes, by e2e@example\.com at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d “Site team informed”$/).waitFor();
  assert.equal(await row.getByRole('button', { name: 'Acknowledge' }).count(), 0);

  // The history, newest first: the acknowledgement with its note, then, below, the rule's trigger.
  const events = page.getByRole('table', { name: 'Alarm events' });
  const acked = events.getByRole('row').filter({ hasText: 'acknowledged' });
  await acked.filter({ hasText: 'Site team informed' }).waitFor();
  const rows = events.locator('tbody tr');
  assert.match(await rows.first().textContent(), /PZ-01pressureacknowledgedAlert.*e2e@example\.com.*Site team informed/);
  const triggered = events.getByRole('row').filter({ hasText: 'triggered' }).last();
  assert.match(await triggered.textContent(), new RegExp(`PZ-01pressuretriggeredAlert`));
  const texts = await rows.allTextContents();
  assert.ok(texts.findIndex((t) => t.includes('triggered')) > 0, `rows ${JSON.stringify(texts)}: a trigger below the acknowledgement`);
  await shot('project-alarm-acknowledged');

  // Filtered by level, by sensor and by time.
  const filter = page.getByRole('form', { name: 'Event filter' });
  const label = page.getByTestId('events-page');
  await filter.getByLabel('Level').selectOption({ label: 'Alarm' });
  await filter.getByRole('button', { name: 'Show events' }).click();
  await label.filter({ hasText: 'No events.' }).waitFor();
  await filter.getByLabel('Level').selectOption({ label: 'Alert' });
  await filter.getByLabel('Sensor').selectOption({ label: `PZ-01 (${state.sensorId})` });
  await filter.getByRole('button', { name: 'Show events' }).click();
  await label.filter({ hasText: /^Events 1–\d+, newest first \(page 1\)$/ }).waitFor();
  await filter.getByLabel('To').fill('2024-01-01T00:00');
  await filter.getByRole('button', { name: 'Show events' }).click();
  await label.filter({ hasText: 'No events.' }).waitFor();
  await filter.getByLabel('To').fill('');
  await filter.getByRole('button', { name: 'Show events' }).click();
  await label.filter({ hasText: 'page 1' }).waitFor();

  // Admins add levels.
  const level = page.getByRole('form', { name: 'New alarm level' });
  await level.getByLabel('Name').fill('Evacuate');
  await level.getByLabel('Rank').fill('5');
  await level.getByRole('button', { name: 'Add level' }).click();
  await page.getByRole('table', { name: 'Alarm levels' }).getByLabel('Name of Evacuate').waitFor();
  await shot('project-alarm-levels');
});

test('draws the thresholds of the shown outputs', async () => {
  await page.goto(`${base}${state.sensorPath}/readings`);
  await page.getByTestId('load-status').filter({ hasText: `${N} readings from` }).waitFor();
  await page.getByTestId('resolution').filter({ hasText: 'Resolution: every reading.' }).waitFor();
  const boxes = page.getByRole('group', { name: 'Series' }).getByRole('checkbox');
  const only = async (name) => {
    for (const box of await boxes.all()) {
      const mine = (await box.evaluate((el) => el.parentElement.textContent)).startsWith(name);
      if (mine) await box.check();
      else await box.uncheck();
    }
    await page.locator('.u-over').waitFor();
  };
  // Pressure alone: its axis (kPa) carries the rule's line, in Alert's colour.
  await only('Pressure');
  assert.ok((await inkOf(alertColour)) > 200, 'the threshold of pressure is not drawn');
  await shot('chart-threshold');
  // Frequency alone: no rule of its own, no line.
  await only('Frequency');
  assert.equal(await inkOf(alertColour), 0, 'a threshold is drawn for a series without rules');
  for (const box of await boxes.all()) await box.check();
});

test('draws a long range from the aggregates: a min–max band around the average', async () => {
  const sensor = await piezometer('PZ-03');
  const id = Object.fromEntries(sensor.inputs.map((i) => [i.key, i.id]));
  // 60 days, one reading every 10 minutes: 8,640 readings, more than the
  // chart draws one by one, swinging ±50 Hz a day.
  const n = 8640;
  const step = 10 * 60_000;
  // Ending at the browser's last midnight, the newest bucket is a whole one
  // (buckets divide a day, aligned in its zone): just after midnight a
  // bucket of one reading would have min = avg = max.
  const end = new Date().setHours(0, 0, 0, 0);
  const batch = Array.from({ length: n }, (_, i) => {
    const t = end - (n - i) * step;
    return { datetime: new Date(t).toISOString(), inputs: { [id.freq]: 2700 + 50 * Math.sin((2 * Math.PI * t) / 86_400_000), [id.temp]: 10 } };
  });
  const posted = await api('POST', `/api/v1/org/${orgId}/proj/${state.projectId}/readings/${sensor.id}`, batch);
  assert.equal(posted.status, 200, JSON.stringify(posted.body));

  await page.goto(`${base}${state.projectPath}/sensors/${sensor.id}/readings`);
  await page.getByRole('combobox', { name: 'Range' }).selectOption({ label: '365 days to the latest reading' });
  await page.getByTestId('load-status').filter({ hasText: '8,640 readings from' }).waitFor();
  const interval = await page.getByTestId('interval').textContent();
  assert.match(interval, /^\d+[mhd]$/);
  assert.match(await page.getByTestId('resolution').textContent(), /^Resolution: \d+ buckets of \d+ (minute|hour|day)s? \(\d+[mhd]\)/);
  await page.locator('.u-over').waitFor();
  // Frequency alone: its band (the series' colour, light) and its average line.
  const boxes = page.getByRole('group', { name: 'Series' }).getByRole('checkbox');
  for (const box of await boxes.all()) if (!(await box.getAttribute('data-series')).endsWith(`:${id.freq}`)) await box.uncheck();
  await page.locator('.u-over').waitFor();
  const legend = await legendAtNewest();
  assert.deepEqual(Object.keys(legend), ['Time', 'Frequency avg (Hz)', 'Frequency min', 'Frequency max']);
  assert.ok(Number(legend['Frequency min']) < Number(legend['Frequency avg (Hz)']) && Number(legend['Frequency avg (Hz)']) < Number(legend['Frequency max']), JSON.stringify(legend));
  assert.ok((await inkOf('#1f77b4', 0, 1, 'faint')) > 5000, 'the band is not drawn');
  assert.ok((await inkOf('#1f77b4')) > 500, 'the average is not drawn');
  const stats = await page.getByTestId('stats').getByRole('row').filter({ hasText: 'Frequency' }).getByRole('cell').allTextContents();
  assert.equal(stats[2], '8640');
  assert.ok(Number(stats[3]) < 2651 && Number(stats[4]) > 2749, JSON.stringify(stats));
  await shot('chart-long-range');
  for (const box of await boxes.all()) await box.check();
});

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
  const boxes = page.getByRole('group', { name: 'Series' }).getByRole('checkbox');
  for (const box of await boxes.all()) if (!(await box.getAttribute('data-series')).endsWith(`:${id.freq}`)) await box.uncheck();
  await page.locator('.u-over').waitFor();
  const blue = '#1f77b4';
  assert.ok((await inkOf(blue, 0.9, 1)) > 50, 'the latest readings are not drawn');
  assert.equal(await inkOf(blue, 0.3, 0.7), 0, 'a line is drawn across the month without readings');
  for (const box of await boxes.all()) await box.check();
  await page.locator('.u-over').waitFor();
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
  await page.getByRole('table', { name: 'Sensors' }).getByRole('link', { name: 'PZ-01' }).waitFor();
  assert.equal(await page.getByRole('table', { name: 'Sensors' }).getByText(/PZ-02/).count(), 0);
  assert.equal((await api('GET', `/api/v1/org/${orgId}/proj/${state.projectId}/sensors/${state.quietPath.split('/').pop()}`)).status, 404);
});

test('creates a token, shown once, and revokes it', async () => {
  await page.getByRole('link', { name: 'e2e@example.com' }).click();
  const form = page.getByRole('form', { name: 'New token' });
  await form.getByLabel('Name').fill('datalogger');
  await form.getByLabel('Expires in days').fill('30');
  await form.getByRole('button', { name: 'Create token' }).click();
  const secret = (await page.getByTestId('new-token').textContent()).trim();
  assert.match(secret, /^rdg_[0-9A-Za-z]{43}$/);
  assert.equal((await api('GET', '/api/v1/me', undefined, secret)).status, 200);
  await page.getByRole('button', { name: 'Copy the token' }).waitFor();
  await shot('profile-token-created');

  const row = page.getByRole('table', { name: 'Tokens' }).getByRole('row').filter({ hasText: 'datalogger' });
  await row.getByRole('button', { name: 'Revoke' }).click();
  await row.getByText(/^revoked/).waitFor();
  assert.equal((await api('GET', '/api/v1/me', undefined, secret)).status, 401);
  await shot('profile');
});

test('creates a device token that may only post to its sensor', async () => {
  const form = page.getByRole('form', { name: 'New token' });
  await form.getByLabel('Name').fill('logger 7');
  await form.getByLabel('Organization').selectOption({ label: 'E2E Monitoring' });
  await form.getByLabel('Project ID').fill(String(state.projectId));
  await form.getByLabel('Sensor IDs').fill(String(state.sensorId));
  await form.getByLabel('Device (post readings only)').check();
  await form.getByRole('button', { name: 'Create token' }).click();
  await page.getByText('Token “logger 7” created.').waitFor(); // the box of the token before is gone
  const secret = (await page.getByTestId('new-token').textContent()).trim();
  const readings = `/api/v1/org/${orgId}/proj/${state.projectId}/readings/${state.sensorId}`;
  // The newest reading again, as it is: the later steps see the same data.
  const one = [{ datetime: new Date(state.postedAt - 60_000).toISOString(), inputs: { [state.ids.freq]: freqs[N - 1], [state.ids.temp]: 11 + (N - 1) / 10 } }];
  const posted = await api('POST', readings, one, secret);
  assert.equal(posted.status, 200, JSON.stringify(posted.body));
  assert.equal((await api('GET', readings, undefined, secret)).status, 403);
  const row = page.getByRole('table', { name: 'Tokens' }).getByRole('row').filter({ hasText: 'logger 7' });
  await row.getByText(`org ${orgId} · project ${state.projectId} · sensors ${state.sensorId} · device`).waitFor();
  await shot('profile-device-token');
  await row.getByRole('button', { name: 'Revoke' }).click();
  await row.getByText(/^revoked/).waitFor();
});

test('invites a member, who accepts the link and is signed in', async () => {
  await page.goto(`${base}/console/org/${orgId}`);
  const form = page.getByRole('form', { name: 'New invitation' });
  await form.getByLabel('Email').fill('invitee@example.com');
  await form.getByLabel('Role').selectOption('editor');
  await form.getByRole('button', { name: 'Invite' }).click();
  const link = (await page.getByTestId('invitation-link').textContent()).trim();
  assert.match(link, new RegExp(`^${base}/console/accept\\?code=inv_[0-9A-Za-z]{43}$`));
  await page.getByRole('table', { name: 'Invitations' }).getByRole('row').filter({ hasText: 'invitee@example.com' }).getByText('pending').waitFor();
  await shot('org-invitation');

  // The invitee has no session: another tab, sessionStorage of its own.
  const tab = await context.newPage();
  try {
    await tab.goto(link);
    await tab.getByLabel('Your name').fill('Ivy');
    await tab.screenshot({ path: join(output, 'accept.png'), fullPage: true });
    await tab.getByRole('button', { name: 'Accept and sign in' }).click();
    await tab.waitForURL(`${base}/console/org/${orgId}`);
    await tab.getByRole('link', { name: 'invitee@example.com' }).waitFor();
    assert.match(await tab.evaluate(() => sessionStorage.getItem('readings.token')), /^rdg_/);
    assert.ok(!tab.url().includes('code='));

    await tab.goto(link); // a code works once
    await tab.getByRole('button', { name: 'Accept and sign in' }).click();
    await tab.getByText('the invitation has been accepted').waitFor();
  } finally {
    await tab.close();
  }
  await page.reload();
  await page.getByRole('table', { name: 'Invitations' }).getByRole('row').filter({ hasText: 'invitee@example.com' }).getByText('accepted').waitFor();
  await page.getByRole('table', { name: 'Members' }).getByText('invitee@example.com').waitFor();
});

test('uploads a logger’s TOA5 file after a preview of what it will store', async () => {
  await page.goto(base + state.sensorPath);
  const form = page.getByRole('form', { name: 'Upload a file' });
  const toa5 = [
    '"TOA5","Dam1","CR1000X","1234","CR1000X.Std.05","CPU:dam.CR1X","5678","Table10"',
    '"TIMESTAMP","RECORD","freq","temp"',
    '"TS","RN","Hz","degC"',
    '"","","Smp","Avg"',
    '"2024-10-27 01:30:00",0,2803.5,11.2',
    '"2024-10-27 02:30:00",1,2803.25,NAN',
    '"2024-10-27 03:30:00",2,NAN,NAN',
  ].join('\n');
  await form.getByText('No import profile: files are read in UTC').waitFor();
  await form.getByLabel('File').setInputFiles({ name: 'dam.dat', mimeType: 'text/csv', buffer: Buffer.from(toa5) });
  await form.getByLabel('Time zone of the logger').fill('Europe/Zurich');
  await form.getByRole('button', { name: 'Preview' }).click();
  // 02:30 happens twice that night: the service's message names the line.
  await form.getByRole('alert').filter({ hasText: 'line 6' }).waitFor();
  await form.getByLabel('Times in the autumn fold').selectOption('earlier');
  await form.getByRole('button', { name: 'Preview' }).click();
  const preview = form.getByRole('table', { name: 'Preview' });
  await preview.waitFor();
  assert.deepEqual(await preview.getByRole('columnheader').allTextContents(), ['Datetime', 'freq', 'temp']);
  assert.equal(await preview.getByRole('row').count(), 3); // the header and two readings; the NAN line is skipped
  assert.match(await form.textContent(), /2 readings · 1 line skipped.*ignored columns: RECORD/);
  await shot('sensor-upload');
  await form.getByRole('button', { name: 'Store 2 readings' }).click();
  await form.getByText('Stored: 2 new, 0 replaced.').waitFor();
  const stored = await api('GET', `/api/v1/org/${orgId}/proj/${state.projectId}/readings/${state.sensorId}?datetime__lt=2024-10-28T00:00:00Z`);
  assert.deepEqual(stored.body.map((r) => r.datetime), ['2024-10-26T23:30:00.000Z', '2024-10-27T00:30:00.000Z']);
  // What the preview used becomes the sensor's import profile, which the
  // card then shows and fills in.
  await form.getByLabel('Column mapping').fill('RECORD:nope');
  await form.getByRole('button', { name: 'Save as the sensor’s import profile' }).click();
  await form.getByRole('alert').filter({ hasText: 'column "RECORD": "nope" is not an input of the sensor' }).waitFor();
  await form.getByLabel('Column mapping').fill('');
  await form.getByRole('button', { name: 'Save as the sensor’s import profile' }).click();
  await form.getByText('Saved: the sensor’s files are now read this way without parameters.').waitFor();
  const profilePath = `/api/v1/org/${orgId}/proj/${state.projectId}/sensors/${state.sensorId}/import-profile`;
  const profile = await api('GET', profilePath);
  assert.deepEqual({ tz: profile.body.tz, dst: profile.body.dst, columns: profile.body.columns }, { tz: 'Europe/Zurich', dst: 'earlier', columns: {} });
  await page.reload();
  await form.getByText('Import profile: times in Europe/Zurich, the autumn fold’s earlier; columns by input key or ID.').waitFor();
  assert.equal(await form.getByLabel('Time zone of the logger').inputValue(), 'Europe/Zurich');
  assert.equal((await api('DELETE', profilePath)).status, 204);
  // Nothing else of the sensor's readings is disturbed: delete the two again.
  const deleted = await api('DELETE', `/api/v1/org/${orgId}/proj/${state.projectId}/readings/${state.sensorId}?datetime__gte=2024-10-26T00:00:00Z&datetime__lt=2024-10-28T00:00:00Z`);
  assert.equal(deleted.status, 200);
});

test('fits a narrow screen', async () => {
  await page.setViewportSize({ width: 390, height: 844 });
  for (const [path, name] of [
    [`/console/org/${orgId}`, 'org'],
    [state.projectPath, 'project'],
    [`${state.sensorPath}/readings`, 'readings'],
    [state.sensorPath, 'sensor'],
  ]) {
    await page.goto(base + path);
    await page.locator('main h1').first().waitFor();
    await page.locator('main table').first().waitFor();
    if (name === 'readings') {
      // Two charts of two units each, every unit with its axis, side by side with its plot.
      await page.locator('.u-over').nth(1).waitFor();
      assert.deepEqual(await page.locator('.u-axis').evaluateAll((els) => els.map((e) => e.dataset.unit)), ['time', 'Hz', 'degC', 'time', 'digit', 'kPa']);
      for (const over of await page.locator('.u-over').all()) assert.ok((await over.boundingBox()).width > 150, 'a plot is squeezed by its axes');
      await legendInsideCard();
    }
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 1, `${path} is ${overflow}px wider than the screen`);
    // No table's cell is cut off: a table wider than the screen would
    // scroll inside its box, which the page's width does not show.
    const cut = await page.locator('main td').evaluateAll((tds) => tds.filter((td) => td.getBoundingClientRect().right > window.innerWidth + 1).map((td) => td.textContent));
    assert.deepEqual(cut, [], `${path}: cells cut off at the screen's edge`);
    await shot(`narrow-${name}`);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
});

test('offers a viewer nothing a viewer may not do', async () => {
  // Another tab has a session of its own: sessionStorage is per tab.
  const tab = await context.newPage();
  try {
    await tab.goto(`${base}/console/signin`);
    await tab.getByLabel('API token').fill(viewerToken);
    await tab.getByRole('button', { name: 'Sign in' }).click();
    await tab.getByRole('heading', { name: 'viewer@example.com' }).waitFor();

    await tab.goto(`${base}/console/org/${orgId}`);
    await tab.getByRole('table', { name: 'Projects' }).getByRole('link', { name: 'Dam monitoring' }).waitFor();
    for (const absent of [tab.getByRole('form', { name: 'New project' }), tab.getByRole('button', { name: /Archive|Delete/ }), tab.getByRole('heading', { name: 'Members' })]) {
      assert.equal(await absent.count(), 0);
    }

    await tab.goto(base + state.projectPath);
    await tab.getByRole('table', { name: 'Sensors' }).getByRole('link', { name: 'PZ-01' }).waitFor();
    await tab.getByRole('table', { name: 'Blueprints' }).waitFor();
    await tab.getByRole('table', { name: 'Current alarms' }).getByText('PZ-01').waitFor();
    for (const absent of [tab.getByRole('form', { name: 'New sensor' }), tab.getByRole('form', { name: 'New alarm level' }), tab.getByRole('button', { name: /New blueprint|Edit|Delete|Acknowledge|Save/ })]) {
      assert.equal(await absent.count(), 0);
    }

    await tab.goto(base + state.sensorPath);
    await tab.getByRole('table', { name: 'Outputs' }).getByText('G * (R0 - digits) - 100').waitFor();
    await tab.getByRole('table', { name: 'Rules' }).getByText('above 110, deadband 2').waitFor();
    for (const absent of [tab.getByLabel('Formula of pressure'), tab.getByRole('button', { name: /Save|Add a dated value|Add rule|Edit|Delete/ })]) {
      assert.equal(await absent.count(), 0);
    }
    await tab.screenshot({ path: join(output, 'viewer-sensor.png'), fullPage: true });
  } finally {
    await tab.close();
  }
});

test('tells two projects of the same name apart', async () => {
  const other = await api('POST', `/api/v1/org/${orgId}/projects`, { name: 'Dam monitoring', description: 'Piezometers on the south dam' });
  assert.equal(other.status, 201, JSON.stringify(other.body));
  await page.goto(`${base}/console/org/${orgId}`);
  const rows = page.getByRole('table', { name: 'Projects' }).getByRole('row').filter({ hasText: 'Dam monitoring' });
  await rows.nth(1).waitFor();
  const ids = await rows.evaluateAll((trs) => trs.map((tr) => tr.querySelector('td[data-label="ID"]').textContent));
  assert.deepEqual(ids.sort(), [String(state.projectId), String(other.body.id)].sort());
  await shot('projects-same-name');
  await page.goto(`${base}/console/org/${orgId}/proj/${other.body.id}`);
  assert.match(await page.getByTestId('project-id').textContent(), new RegExp(`^Project ${other.body.id} · created `));
});

test('signs out and forgets the token', async () => {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(`${base}/console/signin`);
  assert.equal(await page.evaluate(() => sessionStorage.getItem('readings.token')), null);
  await page.goto(`${base}/console/org/${orgId}`);
  await page.waitForURL(`${base}/console/signin`);
});

test('no page errors', () => {
  assert.deepEqual(problems, []);
});
