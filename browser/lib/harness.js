// Test harness: a scheduler on a free 127.0.0.1 port with admin and guest
// credentials and a temp data dir, and Debian's chromium driven by
// playwright-core with a fresh profile.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdtemp, rm, mkdir, readFile } from 'node:fs/promises';
import { createWriteStream, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

// WAIT_MS bounds every wait for the page (EJC_BROWSER_WAIT_MS): long enough
// for a machine busy with the other test tiers (make test runs these beside
// go test -race), short enough that a hang fails the test.
export const WAIT_MS = Number(process.env.EJC_BROWSER_WAIT_MS || 60000);
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const ARTIFACTS = join(ROOT, 'browser', 'artifacts');
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
// BIN_DIR: where scheduler and executor are (default: the repo's bin/, built by make build)
export const BIN_DIR = process.env.EJC_BIN_DIR ? resolve(process.env.EJC_BIN_DIR) : join(ROOT, 'bin');

export function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.unref();
    s.on('error', rej);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => res(port)); });
  });
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// startScheduler starts bin/scheduler in a fresh directory. opts.args adds
// flags, opts.creds shares credentials between instances, opts.log names
// its log in browser/artifacts.
export async function startScheduler(opts = {}) {
  for (const b of ['scheduler', 'executor']) {
    if (!existsSync(join(BIN_DIR, b))) throw new Error(`${join(BIN_DIR, b)} is missing: run make build first`);
  }
  await mkdir(ARTIFACTS, { recursive: true });
  const dir = await mkdtemp(join(tmpdir(), 'ejc-browser-'));
  const port = opts.port || (await freePort());
  const logName = opts.log || 'scheduler.log';
  const creds = opts.creds || { admin: ['admin', randomBytes(9).toString('hex')], guest: ['guest', randomBytes(9).toString('hex')] };
  const proc = startProcess('scheduler', [
    '--data-dir', join(dir, 'data'), '--http-address', '127.0.0.1', '--http-port', String(port),
    '--auth-username', creds.admin[0], '--auth-password', creds.admin[1],
    '--auth-guest-username', creds.guest[0], '--auth-guest-password', creds.guest[1],
    '--embedded-cpus', '4', '--embedded-mem-mb', '4096', ...(opts.args || []),
    // tenant isolation (docs/tenancy.md) is e2e/isolation_tenant_test.go's to test
    ...((opts.args || []).includes('--tenant-isolation') ? [] : ['--tenant-isolation', 'off']),
  ], dir, logName);
  const base = `http://127.0.0.1:${port}`;
  await proc.awaitOK(base + '/healthz');
  const auth = 'Basic ' + Buffer.from(creds.admin.join(':')).toString('base64');
  async function api(method, path, body) {
    const res = await fetch(base + '/api' + path, {
      method, headers: { Authorization: auth, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : null;
  }
  return { base, port, creds, api, stop: proc.stop, dir, logPath: join(ARTIFACTS, logName) };
}

// startOIDCProvider runs bin/oidc-provider (the zitadel example OpenID
// provider with groups, built by scripts/browser-test.sh) on a free port:
// one web client, redirecting to callback; groups is its -groups flag.
export async function startOIDCProvider({ callback, clientId, clientSecret, groups }) {
  if (!existsSync(join(BIN_DIR, 'oidc-provider'))) throw new Error(`${join(BIN_DIR, 'oidc-provider')} is missing: scripts/browser-test.sh builds it`);
  const dir = await mkdtemp(join(tmpdir(), 'ejc-oidc-'));
  const port = await freePort();
  const proc = startProcess('oidc-provider', ['-listen', `127.0.0.1:${port}`, '-callback', callback,
    '-client-id', clientId, '-client-secret', clientSecret, '-groups', groups], dir, 'oidc-provider.log');
  const issuer = `http://127.0.0.1:${port}`;
  await proc.awaitOK(issuer + '/.well-known/openid-configuration');
  return { issuer, stop: proc.stop };
}

// startMesosLocal starts bin/mesos-local on a free port for schedulers to
// share (cluster mode).
export async function startMesosLocal() {
  const dir = await mkdtemp(join(tmpdir(), 'ejc-browser-mesos-'));
  const port = await freePort();
  const proc = startProcess('mesos-local', ['--port', String(port), '--work-dir', join(dir, 'work'), '--cpus', '2', '--mem-mb', '2048'],
    dir, 'mesos-local.log');
  const url = `http://127.0.0.1:${port}`;
  await proc.awaitOK(url + '/state');
  return { url, stop: proc.stop };
}

// startProcess starts BIN_DIR/name with args in dir, its output going to
// browser/artifacts/logName. awaitOK(url) polls url until it answers 2xx
// (30 s at most; at once an error if the process exits); stop ends the
// process (SIGTERM, SIGKILL after 10 s) and removes dir.
function startProcess(name, args, dir, logName) {
  const log = createWriteStream(join(ARTIFACTS, logName));
  const proc = spawn(join(BIN_DIR, name), args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  proc.stdout.pipe(log);
  proc.stderr.pipe(log);
  let exited = null;
  proc.on('exit', (code, sig) => { exited = `exit ${code ?? sig}`; });
  async function awaitOK(url) {
    const deadline = Date.now() + 30000;
    for (;;) {
      if (exited) throw new Error(`${name} ${exited}; see browser/artifacts/${logName}`);
      try { if ((await fetch(url)).ok) return; } catch { /* not yet */ }
      if (Date.now() > deadline) throw new Error(`${name} did not answer ${url} in 30 s`);
      await sleep(100);
    }
  }
  async function stop() {
    if (!exited) {
      proc.kill('SIGTERM');
      for (let i = 0; i < 100 && !exited; i++) await sleep(100);
      if (!exited) proc.kill('SIGKILL');
    }
    await rm(dir, { recursive: true, force: true });
  }
  return { awaitOK, stop };
}

// screenshot saves target's screenshot (a page or a locator; opts as Playwright's) to
// browser/artifacts/, for a person to look at: nothing reads them back. EJC_SHOTS=0
// skips them, as make test does (a full page is a third of a CPU-second to draw and
// encode, 124 of them in a run).
export async function screenshot(target, opts) {
  if (process.env.EJC_SHOTS !== '0') await target.screenshot(opts);
}

// launchBrowser starts Chromium with a fresh profile; opts.viewport and
// opts.timezoneId (an IANA zone for the page's clock) override the defaults.
export async function launchBrowser(opts = {}) {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`);
  const profile = await mkdtemp(join(tmpdir(), 'ejc-chromium-'));
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: opts.viewport || { width: 1366, height: 860 },
    // The console's pulses and spinners stand still (prefers-reduced-motion): drawn in
    // software on a machine running the other tiers, they cost CPU and show nothing a test reads.
    reducedMotion: 'reduce',
    ...(opts.timezoneId ? { timezoneId: opts.timezoneId } : {}),
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
  return {
    ctx,
    async close() { await ctx.close().catch(() => {}); await rm(profile, { recursive: true, force: true }); },
  };
}

// logIn fills the console's login form as user and waits until the first
// page after it is ready; logOut logs out and waits for the form again.
export async function logIn(page, user, pass) {
  await page.waitForSelector('#username');
  await page.fill('#username', user);
  await page.fill('#password', pass);
  await page.click('form.login button[type=submit]');
  await page.waitForSelector('#page[data-ready]');
}
export async function logOut(page) {
  await page.click('#logout');
  await page.waitForSelector('#username');
}

// watchPage records the requests a page has under way, so that a wait that
// times out can say what the page was waiting for.
export function watchPage(page) {
  const open = new Map();
  page.on('request', (r) => open.set(r, Date.now()));
  page.on('requestfinished', (r) => open.delete(r));
  page.on('requestfailed', (r) => open.delete(r));
  return () => [...open].map(([r, t]) => `${r.method()} ${r.url().replace(/^https?:\/\/[^/]+/, '')} (${Date.now() - t} ms)`);
}

// waitFor waits for selector; when it times out, the error also carries
// the page's address and text, the requests still under way (from
// watchPage's inFlight) and the end of the scheduler's log.
export async function waitFor(page, selector, { inFlight, logPath, timeout } = {}) {
  try {
    await page.waitForSelector(selector, timeout ? { timeout } : {});
  } catch (e) {
    const lines = [e.message.split('\n')[0]];
    try {
      lines.push(`address: ${page.url()}`);
      lines.push(`page text: ${(await page.evaluate(() => document.body.innerText)).replace(/\s+/g, ' ').slice(0, 400)}`);
    } catch (e2) { lines.push(`page unreadable: ${e2.message}`); }
    if (inFlight) lines.push(`requests under way: ${inFlight().join(', ') || 'none'}`);
    if (logPath) {
      const log = await readFile(logPath, 'utf8').catch(() => '');
      lines.push('scheduler log (last 25 lines):', ...log.trimEnd().split('\n').slice(-25).map((l) => '  ' + l.slice(0, 400)));
    }
    throw new Error(lines.join('\n'));
  }
}

// runPool runs fn over items with at most n at a time.
export async function runPool(items, n, fn) {
  let i = 0;
  await Promise.all(Array.from({ length: n }, async () => { while (i < items.length) await fn(items[i++]); }));
}
