// The engine's capabilities in the console (issue 40): the cluster page names the engine and
// shows what it declares (GET /api/operate/cluster's engine.capabilities), in en and zh; and
// when the engine does not declare logs, sandboxes or a cluster view (the answer rewritten in
// the browser, as an engine without them would send it), the console says so instead of
// offering the action and letting it fail: no log viewer and no /api/job/logs call, no sandbox
// table and no /api/operate/sandbox call, no stderr link in a failure cause, no agent table.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startScheduler, launchBrowser, watchPage, waitFor, logIn, ARTIFACTS, WAIT_MS, screenshot } from '../lib/harness.js';

const APP = 'caps_app';
const CAPS = ['checkpointing', 'executorSharing', 'logs', 'sandboxes', 'clusterView', 'capacity'];
let s, br, page, inFlight;
const problems = [];
const asked = []; // API paths the page requested

const shot = (name) => screenshot(page, { path: join(ARTIFACTS, `engine-${name}.png`), fullPage: true });
async function nav(hash) {
  await page.evaluate((h) => { const p = document.getElementById('page'); if (p) p.setAttribute('data-stale', ''); location.hash = h; }, hash);
  await waitFor(page, '#page[data-ready]:not([data-stale])', { inFlight, logPath: s.logPath });
}
// GET /api/operate/cluster (the engine and its agents) and GET /api/operate/clusters (the
// configured clusters), each rewritten by a test without catching the other.
const CLUSTER_VIEW = /\/api\/operate\/cluster(\?.*)?$/;
const CLUSTERS = /\/api\/operate\/clusters(\?.*)?$/;
const capsShown = () => page.$$eval('#engine-caps [data-cap]', (els) => Object.fromEntries(els.map((e) => [e.dataset.cap, e.dataset.on === 'true'])));

before(async () => {
  s = await startScheduler({ log: 'engine-scheduler.log' });
  await s.api('POST', '/app', { appName: APP, appURL: 'https://repo.example/app.tar.gz', bootstrapScript: 'bin/start.sh', cpuCount: 0.5, memoryMB: 64 });
  br = await launchBrowser();
  page = br.ctx.pages()[0] || (await br.ctx.newPage());
  page.setDefaultTimeout(WAIT_MS);
  inFlight = watchPage(page);
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  page.on('console', (m) => { if (m.type() === 'warning' && m.text().includes('i18n')) problems.push(m.text()); });
  page.on('request', (r) => { const u = new URL(r.url()); if (u.pathname.startsWith('/api/')) asked.push(u.pathname); });
  await page.goto(s.base + '/');
  await logIn(page, s.creds.admin[0], s.creds.admin[1]);
  await waitFor(page, '#page[data-page=dashboard][data-ready]', { inFlight, logPath: s.logPath });
});

after(async () => {
  if (br) await br.close();
  if (s) await s.stop();
});

test('the cluster page names the engine and what it declares, in en and zh', async () => {
  const api = (await s.api('GET', '/operate/cluster')).engine;
  assert.equal(api.name, 'mesos');
  await nav('#/cluster');
  assert.equal(await page.getAttribute('#engine-name', 'data-engine'), 'mesos');
  assert.equal((await page.textContent('#engine-name')).trim(), 'Mesos');
  assert.deepEqual(await capsShown(), Object.fromEntries(CAPS.map((k) => [k, api.capabilities[k] === true])));
  // the embedded engine declares logs and sandboxes: the agent table is there
  assert.ok(api.capabilities.logs && api.capabilities.sandboxes && api.capabilities.clusterView);
  assert.equal(await page.locator('#agents').count(), 1);
  assert.match(await page.textContent('#engine-caps'), /task logs/);
  await shot('caps-en');
  await page.selectOption('#lang', 'zh');
  await page.waitForFunction(() => /引擎/.test((document.querySelector('.panel') || {}).textContent || ''));
  assert.match(await page.textContent('#engine-caps'), /任务日志/);
  await shot('caps-zh');
  await page.selectOption('#lang', 'en');
  // every word the console has in English it has in Chinese, and the other way round
  const gaps = await page.evaluate(async () => {
    const { DICTS } = await import('/js/i18n.js');
    const miss = (a, b) => Object.keys(a).filter((k) => !(k in b));
    return { zh: miss(DICTS.en, DICTS.zh), en: miss(DICTS.zh, DICTS.en) };
  });
  assert.deepEqual(gaps, { zh: [], en: [] });
});

test('with logs and sandboxes declared the console offers them', async () => {
  asked.length = 0;
  await nav(`#/apps/${APP}`);
  await page.waitForFunction(() => /No executor of this app is running/.test(document.body.textContent));
  assert.equal(await page.locator('#no-sandboxes').count(), 0);
  assert.ok(asked.includes('/api/operate/sandbox'), 'the sandboxes were not asked for: ' + asked.join(' '));
  await nav('#/logs/' + encodeURIComponent(`nojob@-@0@-@READY@-@agent1@-@${'0'.repeat(8)}`));
  assert.equal(await page.locator('#log').count(), 1);
  assert.equal(await page.locator('#no-logs').count(), 0);
});

test('an engine without logs, sandboxes or a cluster view: the console does not offer them', async () => {
  // the engine's declaration as an engine without these would send it; the rest is the server's
  await page.route(CLUSTER_VIEW, async (route) => {
    const res = await route.fetch();
    const c = await res.json();
    c.engine.capabilities = { ...c.engine.capabilities, logs: false, sandboxes: false, clusterView: false };
    c.agents = [];
    await route.fulfill({ response: res, json: c });
  });
  await page.reload(); // the capabilities are read once per load of the console
  await waitFor(page, '#page[data-ready]', { inFlight, logPath: s.logPath });
  await nav('#/cluster');
  const caps = await capsShown();
  assert.equal(caps.logs, false);
  assert.equal(caps.sandboxes, false);
  assert.equal(caps.clusterView, false);
  assert.equal(await page.locator('#agents').count(), 0, 'an agent table for an engine without a cluster view');
  assert.equal(await page.locator('#no-cluster-view').count(), 1);
  await shot('caps-off');

  asked.length = 0;
  await nav(`#/apps/${APP}`);
  await page.waitForSelector('#no-sandboxes');
  assert.match(await page.textContent('#no-sandboxes'), /mesos engine does not list/);
  const task = `nojob@-@0@-@READY@-@agent1@-@${'0'.repeat(8)}`;
  await nav('#/logs/' + encodeURIComponent(task));
  await page.waitForSelector('#no-logs');
  assert.equal(await page.locator('#log').count(), 0, 'a log viewer for an engine without logs');
  assert.equal(await page.locator('#log-full').count(), 0);
  assert.ok(!asked.some((p) => p === '/api/operate/sandbox' || p.startsWith('/api/job/logs/')), 'asked anyway: ' + asked.join(' '));
  await shot('no-logs');
  // zh says the same
  await page.selectOption('#lang', 'zh');
  await page.waitForFunction(() => /不提供任务日志/.test((document.querySelector('#no-logs') || {}).textContent || ''));
  await page.selectOption('#lang', 'en');
  await page.unroute(CLUSTER_VIEW);
});

test('the cluster page lists the clusters, each with its connection as the leader sees it', async () => {
  // one engine: the one cluster, its connection not claimed (only a composed engine tells)
  await nav('#/cluster');
  await page.waitForSelector('#clusters-list tr[data-cluster=default]');
  assert.equal(await page.getAttribute('#clusters-list tr[data-cluster=default]', 'data-connected'), '');
  assert.match(await page.textContent('#clusters-list tr[data-cluster=default]'), /embedded/);
  // several clusters as the leader answers them (the rest is the page's)
  const since = '2026-11-28T06:00:00Z';
  await page.route(CLUSTERS, (route) => route.fulfill({ json: [
    { name: 'dc1', engine: 'mesos', connected: true, since, agents: 2, cpuCount: 8, memoryMB: 8192, runningTasks: 3 },
    { name: 'k8s', engine: 'kubernetes', connected: false, since, lastError: 'watch: connection refused',
      drained: { cluster: 'k8s', by: 'console:admin', since }, agents: 0, cpuCount: 0, memoryMB: 0, agentsError: 'no route to host', runningTasks: 1 },
  ] }));
  await nav('#/dashboard'); // the same hash again would not load the page
  await nav('#/cluster');
  await page.waitForSelector('#clusters-list tr[data-cluster=k8s]');
  assert.equal(await page.getAttribute('#clusters-list tr[data-cluster=dc1]', 'data-connected'), 'true');
  assert.equal(await page.getAttribute('#clusters-list tr[data-cluster=k8s]', 'data-connected'), 'false');
  const dc1 = await page.textContent('#clusters-list tr[data-cluster=dc1]');
  assert.match(dc1, /connected/);
  assert.match(dc1, /Mesos/);
  const k8s = await page.textContent('#clusters-list tr[data-cluster=k8s]');
  for (const want of [/lost/, /watch: connection refused/, /drained/, /console:admin/, /no route to host/]) assert.match(k8s, want);
  await shot('clusters-en');
  await page.selectOption('#lang', 'zh');
  await page.waitForFunction(() => /已断开/.test((document.querySelector('#clusters-list') || {}).textContent || ''));
  await shot('clusters-zh');
  await page.selectOption('#lang', 'en');
  await page.unroute(CLUSTERS);
});

test('no page error and no missing translation', () => {
  assert.deepEqual(problems, []);
});
