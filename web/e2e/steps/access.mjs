// Tokens, device tokens, invitations, file uploads, narrow screens, and no page errors.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';

import { base, token, viewerToken, orgId, output, blueprint, R0, N, freqs, zone, context, page, problems, state, shot, api, legendInsideCard, chooseSeries, axeViolations } from '../session.mjs';

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
  // The project and the sensors are chosen by name, their IDs beside.
  await form.getByLabel('Organization').selectOption({ label: 'E2E Monitoring' });
  await form.getByLabel('Project').selectOption({ label: `Dam monitoring (${state.projectId})` });
  await form.getByRole('checkbox', { name: `PZ-01 (${state.sensorId})` }).check();
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

let ivy; // the invitee's first token

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

    await tab.goto(link); // a code works once; signed in now, the tab accepts as Ivy
    await tab.getByRole('button', { name: 'Accept', exact: true }).click();
    await tab.getByText('the invitation has been accepted').waitFor();
    ivy = await tab.evaluate(() => sessionStorage.getItem('readings.token'));
  } finally {
    await tab.close();
  }
  await page.reload();
  await page.getByRole('table', { name: 'Invitations' }).getByRole('row').filter({ hasText: 'invitee@example.com' }).getByText('accepted').waitFor();
  await page.getByRole('table', { name: 'Members' }).getByText('invitee@example.com').waitFor();
});

test('an invitation to an existing account is accepted with its token, never with the code alone', async () => {
  const invited = await api('POST', `/api/v1/org/${orgId}/invitations`, { email: 'invitee@example.com', role: 'admin' });
  assert.equal(invited.status, 201, JSON.stringify(invited.body));
  const tab = await context.newPage(); // no session
  try {
    await tab.goto(base + invited.body.accept_path);
    await tab.getByRole('button', { name: 'Accept and sign in' }).click();
    await tab.getByText('this invitation is for an email that has an account').waitFor();
    assert.equal(await tab.evaluate(() => sessionStorage.getItem('readings.token')), null);
    await tab.getByLabel('API token').fill(ivy);
    await tab.screenshot({ path: join(output, 'accept-existing-account.png'), fullPage: true });
    await tab.getByRole('button', { name: 'Sign in and accept' }).click();
    await tab.waitForURL(`${base}/console/org/${orgId}`);
    assert.equal(await tab.evaluate(() => sessionStorage.getItem('readings.token')), ivy);
  } finally {
    await tab.close();
  }
  await page.reload();
  const row = page.getByRole('table', { name: 'Members' }).getByRole('row').filter({ hasText: 'invitee@example.com' });
  assert.equal(await row.getByRole('combobox').inputValue(), 'admin');
});

test('the organization’s audit trail lists members, tokens and invitations, for owners', async () => {
  // A role changed on the organization's page is its newest member change.
  await page.goto(`${base}/console/org/${orgId}`);
  const member = page.getByRole('table', { name: 'Members' }).getByRole('row').filter({ hasText: 'invitee@example.com' });
  const changed = page.waitForResponse((r) => r.request().method() === 'PUT' && r.url().includes(`/api/v1/org/${orgId}/members/`));
  await member.getByRole('combobox').selectOption('editor');
  assert.equal((await changed).status(), 200);
  await page.getByRole('link', { name: 'Audit trail' }).click();
  await page.waitForURL(`${base}/console/org/${orgId}/audit`);
  const trail = page.getByRole('table', { name: 'Audit trail' });
  const label = page.getByTestId('audit-page');
  const rows = trail.locator('tbody tr');
  // Every project's changes too: more than a page of them, paged Older and Newer.
  const all = (await api('GET', `/api/v1/org/${orgId}/audit?limit=1000`)).body.items.length;
  assert.ok(all > 50, `${all} changes in the organization's trail: fewer than a page`);
  await label.filter({ hasText: 'Changes 1–50, newest first (page 1)' }).waitFor();
  assert.match(await rows.first().textContent(), /member update of invitee@example\.com/);
  await page.getByRole('button', { name: 'Older' }).click();
  await label.filter({ hasText: `Changes 51–${Math.min(all, 100)}, newest first (page 2)` }).waitFor();
  assert.ok(await page.getByRole('button', { name: 'Newer' }).isEnabled());
  await page.getByRole('button', { name: 'Newer' }).click();
  await label.filter({ hasText: '(page 1)' }).waitFor();

  const filter = page.getByRole('form', { name: 'Audit filter' });
  await filter.getByRole('checkbox', { name: 'members', exact: true }).check();
  await filter.getByRole('button', { name: 'Show changes' }).click();
  await page.locator('button:disabled', { hasText: 'Older' }).waitFor(); // a page of them: the members alone
  await label.filter({ hasText: /^Changes 1–\d+, newest first \(page 1\)$/ }).waitFor();
  for (const row of await rows.all()) assert.match(await row.locator('td[data-label="What"]').textContent(), /^member /);
  const newest = rows.first();
  assert.match(await newest.locator('td[data-label="Who"]').textContent(), /^e2e@example\.com$/);
  assert.match(await newest.textContent(), /member update of invitee@example\.com/);
  assert.match(await newest.textContent(), /role: "admin" → "editor"/);
  // Tokens and invitations: the device token revoked above, the invitation accepted.
  await filter.getByRole('checkbox', { name: 'members', exact: true }).uncheck();
  await filter.getByRole('checkbox', { name: 'tokens', exact: true }).check();
  await filter.getByRole('checkbox', { name: 'invitations', exact: true }).check();
  await filter.getByRole('button', { name: 'Show changes' }).click();
  await trail.getByRole('row').filter({ hasText: 'token revoke of e2e@example.com' }).filter({ hasText: 'logger 7' }).first().waitFor();
  await trail.getByRole('row').filter({ hasText: 'invitation accept of invitee@example.com' }).first().waitFor();
  const what = (await rows.locator('td[data-label="What"]').allTextContents()).map((t) => t.split(' ')[0]);
  assert.deepEqual([...new Set(what)].sort(), ['invitation', 'token']);
  await shot('org-audit');
  const found = await axeViolations('org-audit');
  assert.deepEqual(found, [], JSON.stringify(found, null, 2));
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
  // Times in the zone the page names; what storing it would add and replace.
  assert.deepEqual(await preview.getByRole('columnheader').allTextContents(), [`Datetime (${zone})`, 'freq', 'temp']);
  assert.equal(await preview.getByRole('row').count(), 3); // the header and two readings; the NAN line is skipped
  assert.equal(await form.getByTestId('preview-counts').textContent(), '2 readings: 2 new, 0 replacing stored ones · 1 line skipped (every value missing) · ignored columns: RECORD');
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
      // A chart per unit, each the screen's width but its one axis; the
      // unit with thresholds first, named in the margin.
      await chooseSeries('Frequency', 'Temperature', 'Digits', 'Pressure');
      await page.locator('.u-over').nth(3).waitFor();
      assert.deepEqual(await page.locator('.u-axis').evaluateAll((els) => els.map((e) => e.dataset.unit)), ['time', 'kPa', 'thresholds', 'time', 'Hz', 'time', 'degC', 'time', 'digit']);
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
    for (const absent of [tab.getByRole('form', { name: 'New project' }), tab.getByRole('button', { name: /Archive|Delete/ }), tab.getByRole('heading', { name: 'Members' }), tab.getByRole('link', { name: 'Audit trail' })]) {
      assert.equal(await absent.count(), 0);
    }
    // The organization's trail is the owners': reached all the same, the page says so, and offers nothing to filter.
    await tab.goto(`${base}/console/org/${orgId}/audit`);
    await tab.getByRole('alert').filter({ hasText: 'listOrgAudit needs the owner role in this organization; yours is viewer' }).waitFor();
    assert.equal(await tab.getByRole('form', { name: 'Audit filter' }).count(), 0);
    assert.equal(await tab.getByRole('table', { name: 'Audit trail' }).count(), 0);
    await tab.screenshot({ path: join(output, 'viewer-org-audit.png'), fullPage: true });

    await tab.goto(base + state.projectPath);
    await tab.getByRole('table', { name: 'Status board' }).getByRole('link', { name: 'PZ-01', exact: true }).waitFor();
    await tab.getByRole('table', { name: 'Blueprints' }).waitFor();
    await tab.getByRole('table', { name: 'Current alarms' }).getByText('PZ-01').waitFor();
    for (const absent of [tab.getByRole('form', { name: 'New sensor' }), tab.getByRole('form', { name: 'New alarm level' }), tab.getByRole('button', { name: /New blueprint|Edit|Delete|Acknowledge|Save/ })]) {
      assert.equal(await absent.count(), 0);
    }

    await tab.goto(base + state.sensorPath);
    await tab.getByRole('table', { name: 'Outputs' }).getByText('G * (R0 - digits) - 100').waitFor();
    await tab.getByRole('table', { name: 'Rules' }).getByText('above 110, deadband 2').waitFor();
    for (const absent of [tab.getByLabel('Formula of pressure'), tab.getByRole('form', { name: 'Validity check' }), tab.getByRole('button', { name: /Save|Add a dated value|Add rule|Add check|Edit|Delete/ })]) {
      assert.equal(await absent.count(), 0);
    }
    await tab.getByRole('heading', { name: 'Validity checks' }).waitFor();
    // A viewer reads the flags, rejected values too, and sets none.
    await tab.goto(`${base}${state.sensorPath}/readings`);
    await tab.locator('.u-over').first().waitFor();
    await tab.getByLabel('Show rejected values').waitFor();
    assert.equal(await tab.getByText('Flag readings').count(), 0);
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
