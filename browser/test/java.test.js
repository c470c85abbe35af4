// Java jobs in the console (issue 37): a job's page shows its jobClass, beanName and
// applicationContext; the edit form holds them (saving keeps them, and changes them), checks
// them as the server does (a class name, a bean with its context, none for SCRIPT and HTTP);
// the register form registers a 2.x SIMPLE job by its class.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startScheduler, launchBrowser, watchPage, waitFor, ROOT, ARTIFACTS, WAIT_MS, screenshot } from '../lib/harness.js';

const APP = 'java_app';
let s, br, page, inFlight;
const problems = [];

async function nav(hash) {
  if (await page.evaluate(() => location.hash) === hash) await nav('#/dashboard'); // the same hash would not re-render
  await page.evaluate((h) => { const p = document.getElementById('page'); if (p) p.setAttribute('data-stale', ''); location.hash = h; }, hash);
  await waitFor(page, '#page[data-page][data-ready]:not([data-stale])', { inFlight, logPath: s.logPath });
}
const shot = (name) => screenshot(page, { path: join(ARTIFACTS, name + '.png'), fullPage: true });
const errOf = (field) => page.textContent(`.fr[data-field=${field}] .err`);

before(async () => {
  s = await startScheduler({ log: 'java-scheduler.log' });
  br = await launchBrowser({ viewport: { width: 1400, height: 1000 } });
  page = br.ctx.pages()[0] || (await br.ctx.newPage());
  page.setDefaultTimeout(WAIT_MS);
  inFlight = watchPage(page);
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  await s.api('POST', '/app', { appName: APP, appURL: 'file://' + join(ROOT, 'examples/dist/demo-app.tar.gz'), bootstrapScript: 'bin/start.sh', cpuCount: 0.1, memoryMB: 32 });
  // the 2.x register body as the original's console sent it: strings for numbers
  await s.api('POST', '/job/register', { jobName: 'legacy', appName: APP, jobType: 'SIMPLE', jobClass: 'com.example.LegacyJob',
    beanName: 'legacyJob', applicationContext: 'META-INF/jobs.xml', cron: '', shardingTotalCount: '2', cpuCount: '0.1', memoryMB: '64',
    jobExecutionType: 'TRANSIENT', failover: 'false', misfire: 'false' });
  await page.goto(s.base + '/');
  await page.fill('#username', s.creds.admin[0]);
  await page.fill('#password', s.creds.admin[1]);
  await page.click('form.login button[type=submit]');
  await waitFor(page, '#page[data-page=dashboard][data-ready]', { inFlight, logPath: s.logPath });
});

after(async () => {
  if (br) await br.close();
  if (s) await s.stop();
  assert.deepEqual(problems, []);
});

test('a job\'s page shows its jobClass, beanName and applicationContext', async () => {
  await nav('#/jobs/legacy');
  assert.equal((await page.textContent('#job-class')).trim(), 'com.example.LegacyJob');
  assert.equal((await page.textContent('#job-bean')).trim(), 'legacyJob');
  assert.equal((await page.textContent('#job-context')).trim(), 'META-INF/jobs.xml');
  assert.match(await page.textContent('dl.kv'), /SIMPLE \(2\.x\): the Java SimpleJob class/);
  assert.match(await page.textContent('dl.kv'), /Java job class\s*com\.example\.LegacyJob/);
  await shot('java-job-page');
  // a job without a class shows no such rows
  await s.api('POST', '/job/register', { jobName: 'plain', appName: APP, cpuCount: 0.1, memoryMB: 16 });
  await nav('#/jobs/plain');
  assert.equal(await page.locator('#job-class, #job-bean, #job-context').count(), 0);
});

test('the edit form holds them: saving keeps them, a change is saved', async () => {
  await nav('#/jobs/legacy/edit');
  assert.equal(await page.inputValue('#f-jobType'), 'SIMPLE');
  assert.equal(await page.inputValue('#f-jobClass'), 'com.example.LegacyJob');
  assert.equal(await page.inputValue('#f-beanName'), 'legacyJob');
  assert.equal(await page.inputValue('#f-applicationContext'), 'META-INF/jobs.xml');
  assert.ok(await page.isVisible('#f-jobClass'), 'the run settings are open for a Java job');
  await shot('java-job-edit');
  await page.fill('#f-description', 'kept its class');
  await page.click('#submit');
  await page.waitForFunction(() => location.hash === '#/jobs/legacy');
  let j = await s.api('GET', '/job/jobs/legacy');
  assert.deepEqual([j.jobType, j.jobClass, j.beanName, j.applicationContext, j.description],
    ['SIMPLE', 'com.example.LegacyJob', 'legacyJob', 'META-INF/jobs.xml', 'kept its class']);

  await nav('#/jobs/legacy/edit');
  // a bean without its context, a class name that is none: flagged inline, as the server would
  await page.fill('#f-applicationContext', '');
  await page.locator('#f-applicationContext').blur();
  await page.waitForSelector('.fr.bad[data-field=applicationContext]');
  assert.match(await errOf('applicationContext'), /bean and its context go together/);
  await page.fill('#f-applicationContext', 'META-INF/other.xml');
  await page.locator('#f-applicationContext').blur();
  await page.fill('#f-jobClass', 'com.example.My Job');
  await page.locator('#f-jobClass').blur();
  await page.waitForSelector('.fr.bad[data-field=jobClass]');
  assert.match(await errOf('jobClass'), /is not a Java class name/);
  await shot('java-job-edit-bad-class');
  await page.click('#submit');
  assert.equal(await page.evaluate(() => location.hash), '#/jobs/legacy/edit', 'a bad class is not sent');
  await page.fill('#f-jobClass', 'com.example.Outer$Inner');
  await page.locator('#f-jobClass').blur();
  await page.waitForSelector('.fr[data-field=jobClass]:not(.bad)');
  await page.click('#submit');
  await page.waitForFunction(() => location.hash === '#/jobs/legacy');
  j = await s.api('GET', '/job/jobs/legacy');
  assert.deepEqual([j.jobClass, j.beanName, j.applicationContext], ['com.example.Outer$Inner', 'legacyJob', 'META-INF/other.xml']);
  await waitFor(page, '#page[data-ready] #job-class', { inFlight, logPath: s.logPath });
  assert.equal((await page.textContent('#job-context')).trim(), 'META-INF/other.xml');
});

test('the register form registers a SIMPLE job by its class; SCRIPT takes none', async () => {
  await nav('#/jobs/new');
  await page.fill('#f-jobName', 'guide');
  await page.selectOption('#f-appName', APP);
  await page.fill('#f-cpuCount', '0.1');
  await page.fill('#f-memoryMB', '64');
  await page.click('details:has(#f-jobType) summary');
  await page.selectOption('#f-jobType', 'SIMPLE');
  await page.click('#submit');
  await page.waitForSelector('.fr.bad[data-field=jobClass]');
  assert.match(await errOf('jobClass'), /A SIMPLE job names its Java class/);
  await page.fill('#f-jobClass', 'com.example.MyJob');
  await page.selectOption('#f-jobType', 'SCRIPT');
  await page.waitForSelector('.fr.bad[data-field=jobClass]');
  assert.match(await errOf('jobClass'), /A SCRIPT job runs no Java class/);
  await page.selectOption('#f-jobType', 'SIMPLE');
  await page.waitForSelector('.fr[data-field=jobClass]:not(.bad)');
  await shot('java-job-register');
  await page.click('#submit');
  await page.waitForFunction(() => location.hash === '#/jobs/guide');
  const j = await s.api('GET', '/job/jobs/guide');
  assert.deepEqual([j.jobType, j.jobClass, j.beanName || '', j.applicationContext || ''], ['SIMPLE', 'com.example.MyJob', '', '']);
  await waitFor(page, '#page[data-ready] #job-class', { inFlight, logPath: s.logPath });
  assert.equal(await page.locator('#job-bean').count(), 0);
});
