// Browser test of a namespace's guarantee and limit per cluster on its page
// (#/namespaces/{name}): bin/scheduler on two clusters (its embedded engine,
// "local", and a Mesos master nobody runs, "remote": one cluster unreachable
// stops nothing); namespace pay sets a guarantee and a limit on remote and a
// limit on local through the API. Its page lists each cluster with its
// guarantee and limit as GET /api/namespaces/pay/usage gives them, in en and
// zh; a namespace that sets none shows no such table. The page only shows
// capacities (ejctl and the API set them). Screenshots:
// browser/artifacts/nsclusters-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { mkdtemp, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { startScheduler, launchBrowser, freePort, ARTIFACTS, WAIT_MS, logIn, logOut, screenshot } from '../lib/harness.js';

let s, br, page, dir;
const problems = [];

async function shot(name) {
  await screenshot(page, { path: join(ARTIFACTS, `nsclusters-${name}.png`), fullPage: true });
}
async function nav(hash) {
  await page.evaluate((x) => { const p = document.getElementById('page'); if (p) p.setAttribute('data-stale', ''); location.hash = x; }, hash);
  await page.waitForSelector('#page[data-ready]:not([data-stale])');
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ejc-nsclusters-'));
  const list = join(dir, 'clusters.yaml');
  await writeFile(list, `clusters:\n  - {name: local, engine: embedded}\n  - {name: remote, engine: mesos, mesos_url: "http://127.0.0.1:${await freePort()}"}\n`, { mode: 0o600 });
  s = await startScheduler({ args: ['--clusters-file', list], log: 'nsclusters-scheduler.log' });
  br = await launchBrowser();
  page = br.ctx.pages()[0] || (await br.ctx.newPage());
  page.setDefaultTimeout(WAIT_MS);
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  await s.api('PUT', '/namespaces/pay', {
    limit: { cpuCount: 8, memoryMB: 8192 },
    perCluster: {
      remote: { guarantee: { cpuCount: 2, memoryMB: 1024 }, limit: { cpuCount: 4, memoryMB: 4096 } },
      local: { limit: { cpuCount: 1.5, memoryMB: 512 } },
    },
  });
  await s.api('PUT', '/namespaces/search', {});
});

after(async () => {
  if (br) await br.close();
  if (s) await s.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test('pay\'s page lists its guarantee and limit on each cluster', async () => {
  const u = await s.api('GET', '/namespaces/pay/usage');
  assert.deepEqual(Object.keys(u.perCluster).sort(), ['local', 'remote']);
  await page.goto(s.base + '/');
  await logIn(page, ...s.creds.admin);
  await nav('#/namespaces/pay');
  await page.waitForSelector('#ns-clusters table');
  const rows = await page.$$eval('#ns-clusters tbody tr', (trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.innerText.trim())));
  assert.deepEqual(rows, [
    ['local', '— / 1.5', '— / 512'],
    ['remote', '2 / 4', '1024 / 4096'],
  ]);
  assert.match(await page.innerText('#ns-clusters'), /Per cluster[\s\S]*CPU: guarantee \/ limit[\s\S]*Memory \(MB\): guarantee \/ limit/);
  // the global ones beside them, as before
  assert.match(await page.innerText('#ns-cpu'), /\/ — \/ 8$/m);
  await shot('pay');
  await page.selectOption('#lang', 'zh');
  await page.waitForFunction(() => /按集群/.test(document.getElementById('ns-clusters')?.innerText ?? ''));
  assert.match(await page.innerText('#ns-clusters'), /集群[\s\S]*CPU：保障 \/ 上限/);
  await shot('pay-zh');
  await page.selectOption('#lang', 'en');
  await page.waitForFunction(() => /Per cluster/.test(document.getElementById('ns-clusters')?.innerText ?? ''));
});

test('a namespace with no per-cluster capacity shows no such table', async () => {
  await nav('#/namespaces/search');
  assert.match(await page.innerText('#page h1'), /Namespace search/);
  assert.equal(await page.locator('#ns-clusters table').count(), 0);
  await logOut(page);
  assert.deepEqual(problems, []);
});
