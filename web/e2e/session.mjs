// The shared browser tab, configuration and helpers of the console's
// end-to-end steps (see console.test.mjs).
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { chromium } from 'playwright-core';

export const base = need('E2E_BASE');
export const token = need('E2E_TOKEN');
export const viewerToken = need('E2E_VIEWER_TOKEN');
export const orgId = Number(need('E2E_ORG'));
export const output = join(process.env.E2E_OUTPUT ?? 'test-output', 'console');
export const executablePath = process.env.CHROMIUM ?? '/usr/bin/chromium';

function need(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run make e2e`);
  return v;
}

// The piezometer of the README, with the zero reading set on the sensor.
export const blueprint = {
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
    { key: 'pressure', name: 'Pressure', unit: 'kPa', formula: 'G * (R0 - digits)', decimals: 1 },
  ],
};
export const R0 = 9000;
export const N = 50;
// Reading i is at (N - i) minutes ago, with freq 2751 + i: the last is 2800 Hz.
export const freqs = Array.from({ length: N }, (_, i) => 2751 + i);
export const digitsOf = (f) => (f * f) / 1000;
export const pressureOf = (f) => 0.1 * (R0 - digitsOf(f));
// As the console shows numbers (src/readings.ts formatNumber): pressure
// with the 1 decimal its blueprint declares, the rest to 6 digits.
export const fmt = (v) => (Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(6))));
export const fmtP = (v) => v.toFixed(1);
// The browser runs in this zone; the console shows datetimes in it, as "2026-11-23 19:01:05".
export const zone = 'Europe/Berlin';
export const local = new Intl.DateTimeFormat('sv-SE', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' });
export const when = (t) => local.format(new Date(t));

export let context;
export let page;
export let profileDir;
export const problems = [];
export const state = {};

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

// A full-page screenshot waits for fonts and a stable frame, which on a
// loaded 2-core CI machine has taken longer than the steps' 10 s.
const shotTimeout = 30_000;

export async function shot(name) {
  await page.screenshot({ path: join(output, `${name}.png`), fullPage: true, timeout: shotTimeout });
}

export async function api(method, path, body, secret = token) {
  const res = await fetch(base + path, {
    method,
    headers: { Authorization: `Bearer ${secret}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

export async function statsOf(label) {
  const row = page.getByTestId('stats').getByRole('row').filter({ hasText: label });
  const cells = await row.getByRole('cell').allTextContents();
  return { points: Number(cells[2].replaceAll(',', '')), min: cells[3], max: cells[4], last: cells[5] };
}

// chooseSeries ticks exactly the series whose names start with one of names.
export async function chooseSeries(...names) {
  for (const box of await page.getByRole('group', { name: 'Series' }).getByRole('checkbox').all()) {
    const label = await box.evaluate((el) => el.parentElement.textContent);
    if (names.some((n) => label.startsWith(n))) await box.check();
    else await box.uncheck();
  }
  await page.locator('.u-over').first().waitFor();
}

// The series' colours (src/colours.ts SERIES_COLOURS) by their place in the
// sensor's inputs then outputs, while no level of the project is near one.
export const seriesColours = { Frequency: '#1f77b4', Temperature: '#2ca02c', Digits: '#17becf', Pressure: '#9467bd' };

// viewShot saves what the screen shows, not the whole page: the first
// screen a person sees, at the viewport's size.
export async function viewShot(name) {
  await page.screenshot({ path: join(output, `${name}.png`), fullPage: false, timeout: shotTimeout });
}

// legendAt hovers the chart's right edge, where the newest reading is, and
// reads uPlot's legend there.
export async function legendAtNewest() {
  const over = page.locator('.u-over');
  const box = await over.boundingBox();
  await page.mouse.move(box.x + box.width - 1, box.y + box.height / 2);
  const legend = {};
  for (const row of await page.locator('.u-legend .u-series:visible').all()) {
    legend[(await row.locator('.u-label').textContent()).trim()] = (await row.locator('.u-value').textContent()).trim();
  }
  return legend;
}

// inkOf counts the chart canvas's pixels drawn in a series' colour, in the
// columns from fraction `from` to `to` of its width: opaque ones (lines),
// or with 'faint' the translucent ones (a band's fill and edges).
export async function inkOf(hex, from = 0, to = 1, alpha = 'opaque') {
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
export async function legendInsideCard() {
  const card = await page.getByTestId('chart').boundingBox();
  for (const el of await page.locator('.u-legend').all()) {
    const legend = await el.boundingBox();
    assert.ok(legend.x >= card.x && legend.x + legend.width <= card.x + card.width + 0.5, `a legend (x ${legend.x}, width ${legend.width}) runs out of its card (x ${card.x}, width ${card.width})`);
    assert.ok(legend.y + legend.height <= card.y + card.height + 0.5, 'a legend runs below its card');
  }
}

// The last reading's pressure, after the formula edit and the calibration:
// 0.2 × (R0 − 2800² / 1000) − 100.
export const lastPressure = 0.2 * (R0 - digitsOf(2800)) - 100;
export const alertColour = '#f2c94c'; // the default Alert level's

// piezometer makes a sensor of the project from the blueprint, with the README's zero reading.
export async function piezometer(name) {
  const [bp] = (await api('GET', `/api/v1/org/${orgId}/blueprints`)).body.items;
  const created = await api('POST', `/api/v1/org/${orgId}/proj/${state.projectId}/sensors`, { name, blueprint_id: bp.id, constants: { R0 } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  return created.body;
}

// axe-core, pinned in package-lock.json, run in the page as it is.
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

// axeViolations runs axe-core on the page as it stands and returns its
// serious and critical violations, named for the page; it logs the minor
// and moderate ones.
export async function axeViolations(name) {
  await page.evaluate(axeSource); // evaluated by the browser's debugger protocol, which the page's CSP does not govern
  const violations = await page.evaluate(async () => (await window.axe.run(document, { resultTypes: ['violations'] })).violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) })));
  const minor = violations.filter((v) => v.impact !== 'serious' && v.impact !== 'critical').map((v) => `${v.id} (${v.impact})`);
  if (minor.length) console.log(`axe, ${name}: minor or moderate: ${minor.join(', ')}`);
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => ({ page: name, ...v }));
}
