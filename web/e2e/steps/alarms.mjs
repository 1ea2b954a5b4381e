// Alarm rules, current alarms and their history, thresholds, and the long-range chart.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { base, orgId, output, N, fmtP, zone, when, page, state, shot, api, legendAtNewest, inkOf, lastPressure, alertColour, piezometer, chooseSeries } from '../session.mjs';

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
  assert.match(await row.textContent(), new RegExp(`pressure.*Alert.*${fmtP(lastPressure)}`));
  // The level in its colour, with dark text on Alert's yellow; the row tinted.
  const badge = row.locator('.level');
  assert.deepEqual(await badge.evaluate((el) => [getComputedStyle(el).backgroundColor, getComputedStyle(el).color]), ['rgb(242, 201, 76)', 'rgb(17, 17, 17)']);
  assert.match(await row.locator('td').first().evaluate((el) => getComputedStyle(el).boxShadow), /rgb\(242, 201, 76\)/); // the level's bar
  await row.getByText('Unacknowledged', { exact: true }).waitFor();
  await shot('project-alarm');
  await row.getByLabel('Note on PZ-01 pressure').fill('Site team informed');
  await row.getByRole('button', { name: 'Acknowledge' }).click();
  await row.getByText(/^Acknowledged by e2e@example\.com at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d “Site team informed”$/).waitFor();
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
  await filter.getByLabel('To').fill('2024-01-01 00:00');
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
  // Pressure alone: its axis (kPa) carries the rule's line, in Alert's
  // colour, named in the margin right of the plot, not over the data.
  await chooseSeries('Pressure');
  assert.ok((await inkOf(alertColour)) > 200, 'the threshold of pressure is not drawn');
  assert.deepEqual(await page.locator('.u-axis').evaluateAll((els) => els.map((e) => e.dataset.unit)), ['time', 'kPa', 'thresholds']);
  const margin = await page.locator('.u-axis[data-unit="thresholds"]').boundingBox();
  const plot = await page.locator('.u-over').boundingBox();
  assert.ok(margin.x >= plot.x + plot.width - 1, `the thresholds' margin (x ${margin.x}) overlaps the plot (to ${plot.x + plot.width})`);
  await shot('chart-threshold');
  // Frequency alone: no rule of its own, no line.
  await chooseSeries('Frequency');
  assert.equal(await inkOf(alertColour), 0, 'a threshold is drawn for a series without rules');
  await chooseSeries('Digits', 'Pressure');
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
  // Frequency alone: its band (the series' colour, light) and its average
  // line; one legend entry, the bucket's minimum and maximum in it.
  await chooseSeries('Frequency');
  const legend = await legendAtNewest();
  assert.deepEqual(Object.keys(legend), ['Time', 'Frequency (Hz)']);
  const [, avg, min, max] = /^([\d.]+) \(min ([\d.]+), max ([\d.]+)\)$/.exec(legend['Frequency (Hz)']) ?? [];
  assert.ok(Number(min) < Number(avg) && Number(avg) < Number(max), JSON.stringify(legend));
  assert.ok((await inkOf('#1f77b4', 0, 1, 'faint')) > 5000, 'the band is not drawn');
  assert.ok((await inkOf('#1f77b4')) > 500, 'the average is not drawn');
  const stats = await page.getByTestId('stats').getByRole('row').filter({ hasText: 'Frequency' }).getByRole('cell').allTextContents();
  assert.equal(stats[2], '8,640');
  assert.ok(Number(stats[3]) < 2651 && Number(stats[4]) > 2749, JSON.stringify(stats));
  await shot('chart-long-range');
  await chooseSeries('Digits', 'Pressure');
});
