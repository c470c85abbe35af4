// The console on a standby of a two-scheduler cluster (ZooKeeper from
// scripts/services.sh, EJ_TEST_ZK; the schedulers share bin/mesos-local):
// the cluster page names the leader and this standby, a login on the
// standby works, and an app published through the standby's form is
// written by the leader and shown at once.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { startScheduler, startMesosLocal, launchBrowser, ARTIFACTS, WAIT_MS, screenshot } from '../lib/harness.js';

const ZK = process.env.EJ_TEST_ZK;
let mesos, leader, standby, br, page;
const problems = [];

async function nav(hash) {
  await page.evaluate((h) => { const p = document.getElementById('page'); if (p) p.setAttribute('data-stale', ''); location.hash = h; }, hash);
  await page.waitForSelector('#page[data-ready]:not([data-stale])');
}
const shot = (name) => screenshot(page, { path: join(ARTIFACTS, `cluster-${name}.png`), fullPage: true });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

before(async () => {
  if (!ZK) {
    if (process.env.CI) throw new Error('EJ_TEST_ZK is not set in CI: scripts/test.sh starts ZooKeeper');
    return;
  }
  mesos = await startMesosLocal();
  const creds = { admin: ['admin', randomBytes(9).toString('hex')], guest: ['guest', randomBytes(9).toString('hex')] };
  const args = ['--zk-servers', ZK, '--zk-namespace', 'ejc-browser-' + randomBytes(6).toString('hex'), '--mesos-url', mesos.url,
    '--allow-file-app-urls=true', '--zk-session-timeout', '4s'];
  leader = await startScheduler({ args, creds, log: 'cluster-leader.log' });
  // the first instance leads before the second joins
  for (let i = 0; i < 300; i++) {
    const c = await leader.api('GET', '/operate/cluster');
    if (c.role === 'leader') break;
    await sleep(100);
  }
  standby = await startScheduler({ args, creds, log: 'cluster-standby.log' });
  br = await launchBrowser();
  page = br.ctx.pages()[0] || (await br.ctx.newPage());
  page.setDefaultTimeout(WAIT_MS);
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
});

after(async () => {
  if (br) await br.close();
  for (const p of [standby, leader, mesos]) if (p) await p.stop();
});

test('a standby shows the leader, takes a login and forwards a write', { skip: !ZK && 'EJ_TEST_ZK not set' }, async () => {
  await page.goto(standby.base + '/');
  await page.waitForSelector('#username');
  await page.fill('#username', standby.creds.admin[0]);
  await page.fill('#password', standby.creds.admin[1]);
  await page.click('form.login button[type=submit]');
  await page.waitForSelector('#page[data-page=dashboard][data-ready]');
  await nav('#/cluster');
  await page.waitForSelector('#instances tbody tr');
  assert.equal(await page.locator('#instances tbody tr[data-role=leader]').count(), 1);
  assert.equal(await page.locator('#instances tbody tr[data-role=standby]').count(), 1);
  assert.match(await page.textContent('#instances tr[data-role=leader]'), new RegExp(`127\\.0\\.0\\.1:${leader.port}`));
  assert.match(await page.textContent('#instances tr[data-role=standby]'), /this scheduler/);
  await shot('standby-en');

  // publish through the standby's own form: the leader writes it
  await nav('#/apps');
  await page.click('#publish-app');
  await page.waitForSelector('#f-appName');
  await page.fill('#f-appName', 'via_standby');
  await page.fill('#f-appURL', 'https://repo.example/app.tar.gz');
  await page.fill('#f-bootstrapScript', 'bin/start.sh');
  await page.click('#submit');
  await page.waitForFunction(() => location.hash === '#/apps/via_standby');
  await page.waitForSelector('#page[data-page=apps][data-ready] dl.kv'); // the standby reads its own write
  const onLeader = await leader.api('GET', '/app/via_standby');
  assert.equal(onLeader.appName, 'via_standby');
  await nav('#/apps');
  await page.waitForSelector('text=via_standby');

  await nav('#/cluster');
  await page.selectOption('#lang', 'zh');
  await page.waitForFunction(() => /备用/.test((document.querySelector('#instances') || {}).textContent || ''));
  assert.match(await page.textContent('#instances'), /主节点/);
  await shot('standby-zh');
  await page.selectOption('#lang', 'en');
  assert.deepEqual(problems, []);
});
