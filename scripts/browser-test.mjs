#!/usr/bin/env node
// `make browser-test`: headless Chromium loads the API reference from the
// real service and checks what a person would see: Swagger UI renders the
// contract, the readings operations are listed, and the page asks no host
// but the service for anything. It saves a screenshot in test-output/.
//
// It uses Debian's chromium (installed with apt-get when missing and
// running as root; playwright-core downloads no browser), the private
// PostgreSQL cluster of scripts/devdb.sh with a database of its own,
// created for the run and dropped after, and bin/readings (make build) on a
// free loopback port. It stops everything it started, within 3 minutes at
// most.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
// The npm tooling, playwright-core among it, is installed in openapi/.
const require = createRequire(join(root, 'openapi', 'package.json'));
const { chromium } = require('playwright-core');

const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';
const deadlineMs = 180_000;
const outDir = join(root, 'test-output');
const screenshot = join(outDir, 'browser-docs.png');

const say = (msg) => console.log(`browser-test: ${msg}`);
const cleanups = [];
let serviceLog = '';

async function cleanup() {
  while (cleanups.length > 0) {
    try {
      await cleanups.pop()();
    } catch (err) {
      say(`cleanup: ${err.message}`);
    }
  }
}

async function fail(msg) {
  console.error(`browser-test: FAIL: ${msg}`);
  if (serviceLog) {
    console.error('--- the service logged:\n' + serviceLog.slice(-4000));
  }
  await cleanup();
  process.exit(1);
}

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => fail(`stopped by ${signal}`));
}

function run(cmd, args, opts = {}) {
  const res = spawnSync(cmd, args, { encoding: 'utf8', timeout: 600_000, ...opts });
  if (res.error) {
    throw new Error(`${cmd}: ${res.error.message}`);
  }
  if (res.status !== 0) {
    throw new Error(`${cmd} ${args.join(' ')} exited ${res.status}: ${res.stderr.trim().slice(-2000)}`);
  }
  return res.stdout.trim();
}

// ensureChromium installs Debian's chromium when it is missing. It runs
// before the deadline starts: a first install takes a minute or two.
function ensureChromium() {
  if (existsSync(chromiumPath)) {
    return;
  }
  if (process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get')) {
    throw new Error(`${chromiumPath} is missing: install Chromium, or set CHROMIUM to its path`);
  }
  say("Chromium is missing; installing Debian's chromium package");
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const install = ['install', '-y', '-q', '--no-install-recommends', 'chromium', 'fonts-liberation'];
  const first = spawnSync('apt-get', install, { stdio: 'inherit', env, timeout: 600_000 });
  if (first.status !== 0) {
    run('apt-get', ['update', '-q'], { env });
    run('apt-get', install, { env, stdio: 'inherit' });
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

// freshDatabase creates a database on the private cluster for this run and
// registers its removal.
function freshDatabase() {
  const clusterURL = new URL(run(join(root, 'scripts', 'devdb.sh'), ['start']));
  const name = `readings_browser_${process.pid}_${Date.now()}`;
  const admin = new URL(clusterURL);
  admin.pathname = '/postgres';
  const psql = (sql) => run('psql', ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', admin.href, '-c', sql]);
  psql(`CREATE DATABASE ${name}`);
  cleanups.push(async () => psql(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  const url = new URL(clusterURL);
  url.pathname = `/${name}`;
  return { name, url: url.href };
}

async function startService(databaseURL, port) {
  const bin = join(root, 'bin', 'readings');
  if (!existsSync(bin)) {
    throw new Error(`${bin} is missing: run make build (make browser-test does)`);
  }
  const child = spawn(bin, ['serve'], {
    env: { ...process.env, DATABASE_URL: databaseURL, LISTEN_ADDR: `127.0.0.1:${port}` },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  child.stdout.on('data', (b) => (serviceLog += b));
  child.stderr.on('data', (b) => (serviceLog += b));
  cleanups.push(async () => {
    if (child.exitCode !== null || child.signalCode !== null) {
      return;
    }
    child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(killer);
  });
  const base = `http://127.0.0.1:${port}`;
  for (const start = Date.now(); Date.now() - start < 60_000; ) {
    if (child.exitCode !== null) {
      throw new Error(`the service exited with ${child.exitCode}`);
    }
    try {
      const res = await fetch(`${base}/readyz`);
      if (res.ok) {
        return base;
      }
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error('the service was not ready within 60 s');
}

// launch starts Chromium with a fresh profile. A second try covers a
// browser that crashes while starting on a loaded machine, which happens.
async function launch() {
  for (let attempt = 1; ; attempt++) {
    const userDataDir = mkdtempSync(join(tmpdir(), 'readings-chromium-'));
    cleanups.push(async () => rmSync(userDataDir, { recursive: true, force: true }));
    try {
      return await chromium.launchPersistentContext(userDataDir, {
        executablePath: chromiumPath,
        headless: true,
        timeout: 60_000,
        viewport: { width: 1280, height: 1000 },
        args: [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--disable-quic',
          '--no-first-run',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
        ],
      });
    } catch (err) {
      if (attempt === 2) {
        throw err;
      }
      say(`Chromium did not start (${err.message.split('\n')[0]}); trying once more`);
    }
  }
}

async function main() {
  ensureChromium();
  const deadline = setTimeout(() => fail(`not done within ${deadlineMs / 1000} s`), deadlineMs);
  deadline.unref();

  const db = freshDatabase();
  const port = await freePort();
  const base = await startService(db.url, port);
  say(`service on ${base}, database ${db.name}`);

  const context = await launch();
  cleanups.push(() => context.close());
  say(`Chromium ${context.browser()?.version() ?? ''} at ${chromiumPath}`.replace('  ', ' '));

  // Every request the page makes is recorded; any to another host is
  // refused as well as reported, so the test never reaches out.
  const requests = [];
  const outside = [];
  await context.route('**/*', (route) => {
    const url = new URL(route.request().url());
    if (url.protocol === 'data:' || url.protocol === 'blob:' || url.host === `127.0.0.1:${port}`) {
      return route.continue();
    }
    outside.push(url.href);
    return route.abort('blockedbyclient');
  });
  context.on('request', (req) => requests.push(req));
  context.on('websocket', (ws) => outside.push(ws.url()));

  const page = context.pages()[0] ?? (await context.newPage());
  const problems = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') {
      problems.push(`console error: ${msg.text()}`);
    }
  });

  const checks = [];
  const check = (name, ok, detail) => {
    checks.push({ name, ok });
    say(`${ok ? 'ok  ' : 'FAIL'} ${name}${detail ? `: ${detail}` : ''}`);
  };

  const started = Date.now();
  const res = await page.goto(`${base}/docs`, { waitUntil: 'load', timeout: 30_000 });
  check('GET /docs answers 200', res?.status() === 200, `${res?.status()}`);

  const title = await page
    .locator('.swagger-ui .info .title')
    .first()
    .textContent({ timeout: 30_000 })
    .catch((err) => `(none: ${err.message.split('\n')[0]})`);
  check('Swagger UI renders the contract', title.includes('Sensor Readings Service'), title.trim());
  say(`rendered in ${((Date.now() - started) / 1000).toFixed(1)} s`);

  const operations = await page.locator('.opblock').count();
  check('every operation of the spec is listed', operations >= 30, `${operations} operations`);

  for (const [id, summary] of [
    ['listReadings', 'List readings'],
    ['postReadings', 'Post readings'],
  ]) {
    const block = page.locator(`#operations-readings-${id}`);
    const visible = await block.isVisible().catch(() => false);
    const text = visible ? (await block.locator('.opblock-summary-description').textContent()).trim() : '';
    check(`${id} is listed as "${summary}"`, visible && text === summary, visible ? `"${text}"` : 'not found');
  }

  // Opening an operation shows its parameters, from the spec's JSON.
  await page.locator('#operations-readings-listReadings .opblock-summary-control').click();
  const param = await page
    .locator('#operations-readings-listReadings tr[data-param-name="datetime__gte"]')
    .isVisible({ timeout: 10_000 })
    .catch(() => false);
  await page.waitForTimeout(250);
  check('listReadings opens with its datetime__gte parameter', param);

  await page.locator('#operations-readings-listReadings .opblock-summary-control').click();
  await page.waitForTimeout(250);
  mkdirSync(outDir, { recursive: true });
  await page.screenshot({ path: screenshot });
  say(`screenshot ${screenshot.slice(root.length)}`);

  const paths = [...new Set(requests.map((r) => new URL(r.url()).pathname))];
  say(`${requests.length} requests: ${paths.join(' ')}`);
  check('no request to a host other than 127.0.0.1', outside.length === 0, outside.join(' ') || `all to 127.0.0.1:${port}`);
  check('no script error or blocked resource', problems.length === 0, problems.join('; '));

  clearTimeout(deadline);
  await cleanup();
  const failed = checks.filter((c) => !c.ok).length;
  say(`${checks.length - failed} passed, ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
}

main().catch((err) => fail(err.stack || err.message));
