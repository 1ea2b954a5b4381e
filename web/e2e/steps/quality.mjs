// Data quality: flagged points drawn apart on the chart and rejected ones
// only when asked for, a range selected on the chart and flagged, then
// cleared; validity checks and a rate rule on the formulas page; the
// project's audit trail listing those changes. On a sensor of its own,
// after the board's steps, so that nothing here moves what they assert.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';

import { base, orgId, output, when, page, state, shot, api, statsOf, chooseSeries, piezometer, axeViolations } from '../session.mjs';

const MINUTE = 60_000;
const N = 30;
const SPIKE = 10; // the reading rejected on its freq
const SUSPECT = 20; // the reading marked suspect whole
const q = {}; // this file's sensor and its readings' times

const flagsPath = () => `/api/v1/org/${orgId}/proj/${state.projectId}/sensors/${q.sensor.id}/flags`;
const marks = (kind, n) => page.locator(`.chart .uplot[data-${kind}="${n}"]`).first().waitFor();

// dragAcross drags on the chart from reading a to reading b (fractional
// indexes of the N readings, which span the plot's width).
async function dragAcross(a, b) {
  const box = await page.locator('.u-over').first().boundingBox();
  const x = (i) => box.x + (box.width * i) / (N - 1);
  const y = box.y + box.height / 2;
  await page.mouse.move(x(a), y);
  await page.mouse.down();
  await page.mouse.move(x(b), y, { steps: 8 });
  await page.mouse.up();
}

// legendAt reads uPlot's legend with the cursor over reading i.
async function legendAt(i) {
  const box = await page.locator('.u-over').first().boundingBox();
  await page.mouse.move(box.x + (box.width * i) / (N - 1), box.y + box.height / 2);
  const legend = {};
  for (const row of await page.locator('.u-legend .u-series:visible').all()) {
    legend[(await row.locator('.u-label').textContent()).trim()] = (await row.locator('.u-value').textContent()).trim();
  }
  return legend;
}

test('draws suspect points apart on the chart, and rejected ones only when asked for', async () => {
  q.sensor = await piezometer('PZ-Q');
  const id = Object.fromEntries(q.sensor.inputs.map((i) => [i.key, i.id]));
  const end = Math.floor((Date.now() - MINUTE) / 1000) * 1000;
  q.times = Array.from({ length: N }, (_, i) => end - (N - 1 - i) * MINUTE);
  const batch = q.times.map((t, i) => ({ datetime: new Date(t).toISOString(), inputs: { [id.freq]: i === SPIKE ? 9999 : 2750 + i, [id.temp]: 10 } }));
  const posted = await api('POST', `/api/v1/org/${orgId}/proj/${state.projectId}/readings/${q.sensor.id}`, batch);
  assert.equal(posted.status, 200, JSON.stringify(posted.body));
  const rejected = await api('POST', flagsPath(), { flag: 'rejected', from: new Date(q.times[SPIKE]).toISOString(), input: 'freq', reason: 'Spike: logger swapped' });
  assert.equal(rejected.status, 201, JSON.stringify(rejected.body));
  const suspect = await api('POST', flagsPath(), { flag: 'suspect', from: new Date(q.times[SUSPECT]).toISOString(), reason: 'Maintenance visit' });
  assert.equal(suspect.status, 201, JSON.stringify(suspect.body));

  q.readingsPath = `${state.projectPath}/sensors/${q.sensor.id}/readings`;
  await page.goto(base + q.readingsPath);
  await page.getByTestId('load-status').filter({ hasText: `${N} readings from` }).waitFor(); // the reading of the rejected freq stays, without it
  await chooseSeries('Frequency', 'Pressure');
  // The suspect reading: a mark on each line; the rejected freq is not read at all.
  await marks('suspect', 2);
  await marks('rejected', 0);
  const legend = page.getByTestId('flag-legend');
  assert.match(await legend.textContent(), /Suspect: 2 values, on the line/);
  assert.match(await legend.textContent(), /Rejected: hidden/);
  const hidden = await statsOf('Frequency');
  assert.deepEqual([hidden.points, hidden.max], [N - 1, '2779']);
  assert.match((await legendAt(SUSPECT))['Frequency (Hz)'], /^2770 suspect$/);
  await shot('chart-flags-suspect');

  // Asked for, the rejected freq is drawn apart, off the line, with the
  // pressure computed from it; the statistics keep to the line.
  await page.getByLabel('Show rejected values').check();
  await marks('rejected', 2);
  await marks('suspect', 2);
  assert.match(await legend.textContent(), /Rejected: 2 values, off the line/);
  const shown = await statsOf('Frequency');
  assert.deepEqual([shown.points, shown.max], [N - 1, '2779']);
  assert.equal((await legendAt(SPIKE))['Frequency (Hz)'], '9999 rejected');
  await shot('chart-flags-rejected');
  await page.mouse.move(0, 0); // the legend back to the latest values, for the picture
  await page.locator('.viewer-chart').screenshot({ path: join(output, 'chart-flags.png') });
  // The table lists it too, struck through, with the reading's flags.
  await page.getByRole('button', { name: 'Table' }).click();
  const spikeRow = page.getByRole('table', { name: 'Readings' }).getByRole('row').filter({ hasText: when(q.times[SPIKE]) });
  await spikeRow.locator('.flag-rejected').filter({ hasText: '9999' }).waitFor();
  assert.match(await spikeRow.textContent(), new RegExp(`${id.freq} rejected`));
  await page.getByRole('button', { name: 'Chart' }).click();
  await page.getByLabel('Show rejected values').uncheck();
  await marks('rejected', 0);
});

test('selects a range on the chart, flags its readings, and clears them', async () => {
  // Readings 3, 4 and 5: the drag runs from half a minute before the first to half a minute after the last.
  await dragAcross(2.5, 5.5);
  await page.getByTestId('selection-text').filter({ hasText: `Selected 3 readings, ${when(q.times[3])} to ${when(q.times[5])}.` }).waitFor();
  await page.getByRole('button', { name: 'Flag or clear…' }).click();
  const form = page.getByRole('form', { name: 'Flag readings' });
  // The range is exactly the readings selected.
  assert.equal(await form.getByLabel('From').inputValue(), when(q.times[3]));
  assert.equal(await form.getByLabel('To').inputValue(), when(q.times[5]));
  await form.getByLabel('Flag', { exact: true }).selectOption('suspect');
  await form.getByLabel('Reason').fill('Logger rebooted');
  await shot('chart-select-flag');
  await form.getByRole('button', { name: 'Apply' }).click();
  await page.getByTestId('flag-result').filter({ hasText: 'Set 1 flag over 3 readings.' }).waitFor();
  // The chart loads again: three more readings suspect, on both lines.
  await marks('suspect', 8);
  const listed = (await api('GET', flagsPath())).body.items.filter((f) => f.reason === 'Logger rebooted');
  assert.equal(listed.length, 1);
  assert.deepEqual([Date.parse(listed[0].from), Date.parse(listed[0].to), listed[0].flag, listed[0].input], [q.times[3], q.times[5], 'suspect', undefined]);
  await shot('chart-flagged');

  await dragAcross(2.5, 5.5);
  await page.getByRole('button', { name: 'Flag or clear…' }).click();
  await form.getByLabel('Flag', { exact: true }).selectOption('clear');
  await form.getByLabel('Reason').fill('Reviewed: the logger was fine');
  await form.getByRole('button', { name: 'Apply' }).click();
  await page.getByTestId('flag-result').filter({ hasText: 'Cleared 1 flag over 3 readings.' }).waitFor();
  await marks('suspect', 2);
  assert.equal((await api('GET', flagsPath())).body.items.filter((f) => f.reason === 'Logger rebooted').length, 0);

  // A drag can zoom instead.
  await dragAcross(2.5, 5.5);
  await page.getByRole('button', { name: 'Zoom in' }).click();
  await page.getByTestId('selection').waitFor({ state: 'hidden' });
  // A double click zooms back out, and the selection goes with the span uPlot drew.
  await dragAcross(1, 2);
  await page.getByTestId('selection').waitFor();
  await page.locator('.u-over').first().dblclick();
  await page.getByTestId('selection').waitFor({ state: 'hidden' });
  assert.equal(await page.locator('.u-select').first().evaluate((el) => el.getBoundingClientRect().width), 0);
  // Zoomed out: the same drag holds the same readings as before the zoom.
  await dragAcross(2.5, 5.5);
  await page.getByTestId('selection-text').filter({ hasText: `Selected 3 readings, ${when(q.times[3])} to ${when(q.times[5])}.` }).waitFor();
  await page.getByTestId('selection').getByRole('button', { name: 'Cancel' }).click();
});

test('adds validity checks and a rate rule on the formulas page, with the API’s refusals next to their fields', async () => {
  await page.goto(`${base}${state.projectPath}/sensors/${q.sensor.id}`);
  const form = page.getByRole('form', { name: 'Validity check' });
  await form.getByLabel('Target').selectOption('pressure');
  await form.getByLabel('Check').selectOption('range');
  await form.getByLabel('Min').fill('500');
  await form.getByLabel('Max').fill('0');
  await form.getByLabel('Flag as').selectOption('rejected');
  await form.getByRole('button', { name: 'Add check' }).click();
  const error = form.getByTestId('check-error-min').getByRole('alert');
  await error.waitFor();
  assert.match(await error.textContent(), /min not above max/);
  await shot('check-error');
  await form.getByLabel('Min').fill('0');
  await form.getByLabel('Max').fill('500');
  await form.getByRole('button', { name: 'Add check' }).click();
  const checks = page.getByRole('table', { name: 'Checks' });
  await checks.getByRole('row').filter({ hasText: 'outside 0 to 500' }).waitFor();
  assert.match(await page.getByTestId('checks-pressure').textContent(), /rejected if outside 0 to 500/);

  await form.getByLabel('Target').selectOption('freq');
  await form.getByLabel('Check').selectOption('spike');
  await form.getByLabel('Bound').fill('100');
  await form.getByRole('button', { name: 'Add check' }).click();
  await checks.getByRole('row').filter({ hasText: 'a jump of more than 100 from both neighbours' }).waitFor();
  // Edited in the same form.
  await checks.getByRole('row').filter({ hasText: 'outside 0 to 500' }).getByRole('button', { name: 'Edit' }).click();
  assert.equal(await form.getByLabel('Max').inputValue(), '500');
  await form.getByLabel('Max').fill('400');
  await form.getByRole('button', { name: 'Save check' }).click();
  await checks.getByRole('row').filter({ hasText: 'outside 0 to 400' }).waitFor();
  const saved = (await api('GET', `/api/v1/org/${orgId}/proj/${state.projectId}/sensors/${q.sensor.id}/checks`)).body.checks;
  assert.deepEqual(
    saved.map((c) => [c.target, c.kind, c.min, c.max, c.bound, c.flag]),
    [
      ['pressure', 'range', 0, 400, undefined, 'rejected'],
      ['freq', 'spike', undefined, undefined, 100, 'suspect'],
    ],
  );
  // It runs as readings arrive: 1000 Hz is 800 kPa, past 400, and rejected, not refused.
  const at = q.times[N - 1] + MINUTE / 2;
  const id = Object.fromEntries(q.sensor.inputs.map((i) => [i.key, i.id]));
  const posted = await api('POST', `/api/v1/org/${orgId}/proj/${state.projectId}/readings/${q.sensor.id}`, [{ datetime: new Date(at).toISOString(), inputs: { [id.freq]: 1000, [id.temp]: 10 } }]);
  assert.equal(posted.status, 200, JSON.stringify(posted.body));
  const byCheck = (await api('GET', flagsPath())).body.items.filter((f) => f.check === 'range');
  assert.deepEqual(byCheck.map((f) => [Date.parse(f.from), f.flag]), [[at, 'rejected']]);

  // A rate rule: 5 kPa a day over the last 24 hours.
  const rule = page.getByRole('form', { name: 'Alarm rule' });
  await rule.getByLabel('Target').selectOption('pressure');
  await rule.getByLabel('Watches').selectOption('rate');
  await rule.getByLabel('Direction').selectOption('above');
  await rule.getByLabel('Threshold').fill('5');
  await rule.getByLabel('Level').selectOption('Alert');
  await rule.getByLabel('Deadband').fill('1');
  await rule.getByLabel('Window (s)').fill('30');
  await rule.getByLabel('Per (s)').fill('86400');
  await rule.getByRole('button', { name: 'Add rule' }).click();
  const windowError = rule.getByTestId('error-window').getByRole('alert');
  await windowError.waitFor();
  assert.match(await windowError.textContent(), /window/);
  await rule.getByLabel('Window (s)').fill('86400');
  await rule.getByRole('button', { name: 'Add rule' }).click();
  // The pressure falls: the rule rests.
  await page.getByRole('table', { name: 'Rules' }).getByRole('row').filter({ hasText: 'rate above 5 per day over 1 d, deadband 1' }).getByText('at rest').waitFor();
  assert.match(await page.getByTestId('rules-pressure').textContent(), /Alert rate above 5 per day over 1 d/);
  const rules = (await api('GET', `/api/v1/org/${orgId}/proj/${state.projectId}/sensors/${q.sensor.id}/alarm-rules`)).body.items;
  assert.deepEqual(rules.map((r) => [r.target, r.direction, r.threshold, r.deadband, r.window, r.per]), [['pressure', 'above', 5, 1, 86400, 86400]]);
  await shot('checks-and-rate-rule');
});

test('the project’s audit trail lists the changes, filtered by sensor and kind', async () => {
  await page.goto(base + state.projectPath);
  await page.getByRole('link', { name: 'Audit trail' }).click();
  await page.waitForURL(`${base}${state.projectPath}/audit`);
  const trail = page.getByRole('table', { name: 'Audit trail' });
  await trail.waitFor();
  const filter = page.getByRole('form', { name: 'Audit filter' });
  await filter.getByLabel('Sensor').selectOption({ label: `PZ-Q (${q.sensor.id})` });
  await filter.getByRole('checkbox', { name: 'validity checks', exact: true }).check();
  await filter.getByRole('button', { name: 'Show changes' }).click();
  const rows = trail.locator('tbody tr');
  // Three saves of the checks (the refused one changed nothing), newest first: the edit.
  await page.getByTestId('audit-page').filter({ hasText: 'Changes 1–3, newest first (page 1)' }).waitFor();
  for (const row of await rows.all()) assert.match(await row.textContent(), /checks update/);
  assert.match(await rows.first().textContent(), /"max":400/);
  assert.match(await rows.first().textContent(), /e2e@example\.com/);

  // With the flags: two set through the API, one set on the chart and its clearing.
  await filter.getByRole('checkbox', { name: 'flags', exact: true }).check();
  await filter.getByRole('button', { name: 'Show changes' }).click();
  await page.getByTestId('audit-page').filter({ hasText: 'Changes 1–7, newest first (page 1)' }).waitFor();
  const what = (await rows.locator('td[data-label="What"]').allTextContents()).map((s) => s.trim());
  assert.deepEqual(what, ['checks update', 'checks update', 'checks update', 'flag clear', 'flag set', 'flag set', 'flag set']);
  assert.match(await rows.nth(3).textContent(), /Reviewed: the logger was fine/);
  await shot('audit');

  // A time filter after every change finds none.
  await filter.getByLabel('From').fill(when(Date.now() + 3_600_000).slice(0, 16));
  await filter.getByRole('button', { name: 'Show changes' }).click();
  await page.getByTestId('audit-page').filter({ hasText: 'No changes.' }).waitFor();

  // A sensor's page links to its own changes.
  await page.goto(`${base}${state.projectPath}/sensors/${q.sensor.id}`);
  await page.getByRole('link', { name: 'Its changes in the audit trail' }).click();
  await page.waitForURL(`${base}${state.projectPath}/audit?sensor=${q.sensor.id}`);
  await page.getByTestId('audit-page').filter({ hasText: /^Changes 1–\d+, newest first/ }).waitFor();
  assert.equal(await page.getByRole('form', { name: 'Audit filter' }).getByLabel('Sensor').inputValue(), String(q.sensor.id));
});

test('accessibility: axe finds no serious or critical violation on the quality pages', async () => {
  const found = [];
  for (const [path, name, ready] of [
    [`${state.projectPath}/audit`, 'audit', () => page.getByRole('table', { name: 'Audit trail' }).waitFor()],
    [`${state.projectPath}/sensors/${q.sensor.id}`, 'sensor-checks', () => page.getByRole('table', { name: 'Checks' }).waitFor()],
    [q.readingsPath, 'readings-flags', () => page.locator('.chart .uplot[data-suspect]').first().waitFor()],
  ]) {
    await page.goto(base + path);
    await ready();
    await page.waitForLoadState('networkidle');
    if (name === 'readings-flags') {
      await page.getByLabel('Show rejected values').check();
      await page.locator('.chart .uplot[data-rejected]:not([data-rejected="0"])').first().waitFor();
      await dragAcross(2.5, 5.5);
      await page.getByRole('button', { name: 'Flag or clear…' }).click();
    }
    found.push(...(await axeViolations(name)));
  }
  assert.deepEqual(found, [], JSON.stringify(found, null, 2));
});
