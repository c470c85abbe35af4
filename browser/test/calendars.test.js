// Browser test of a namespace's calendars in the console (issue 56) against
// bin/scheduler with a users file: alice edits pay, carol views search.
// Alice creates a calendar from the pay namespace page (a bad exclude list
// refused first), edits it, imports another from an .ics file, sees the
// server refuse to delete one a job names, deletes the other; the dialog
// and panel in zh. Carol sees search's calendars with no write action.
// Screenshots: browser/artifacts/calendars-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { mkdtemp, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { startScheduler, launchBrowser, ROOT, ARTIFACTS, WAIT_MS, logIn, logOut, screenshot } from '../lib/harness.js';

// Hashes as `htpasswd -nbB NAME PASSWORD` writes them (apache2-utils).
const USERS = `users:
  - name: alice    # password: secret
    password: '$2y$05$QTtPKarYJQKa6Rf.zXEmKeXox3z2FIMuqwm4L5IwxuZW22NrJgAGG'
    namespaces: {pay: edit}
  - name: carol    # password: pw3
    password: '$2y$05$Ks66vx1SE9xDFh2s8iAUsueUgUY6zDsrfjv7MyrjqKDoHvItedjTS'
    namespaces: {pay: edit, search: view}
`;

const ICS = ['BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//test//EN',
  'BEGIN:VEVENT', 'UID:1@test', 'DTSTART;VALUE=DATE:20261001', 'DTEND;VALUE=DATE:20261008', 'SUMMARY:National Day', 'END:VEVENT',
  'BEGIN:VEVENT', 'UID:2@test', 'DTSTART;VALUE=DATE:20260101', 'DTEND;VALUE=DATE:20260102', 'SUMMARY:New Year', 'RRULE:FREQ=YEARLY', 'END:VEVENT',
  'END:VCALENDAR', ''].join('\r\n');

let s, br, page, dir;
const problems = [];

async function shot(name) {
  await screenshot(page, { path: join(ARTIFACTS, `calendars-${name}.png`), fullPage: true });
}
async function nav(hash) {
  await page.evaluate((x) => { const p = document.getElementById('page'); if (p) p.setAttribute('data-stale', ''); location.hash = x; }, hash);
  await page.waitForSelector('#page[data-ready]:not([data-stale])');
}
const calText = () => page.innerText('#ns-calendars');
const waitCal = (re) => page.waitForFunction((src) => new RegExp(src).test(document.getElementById('ns-calendars')?.innerText ?? ''), re.source);

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ejc-calendars-'));
  const users = join(dir, 'users.yaml');
  await writeFile(users, USERS, { mode: 0o600 });
  s = await startScheduler({ args: ['--auth-users-file', users], log: 'calendars-scheduler.log' });
  br = await launchBrowser();
  page = br.ctx.pages()[0] || (await br.ctx.newPage());
  page.setDefaultTimeout(WAIT_MS);
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  page.on('console', (m) => { if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) problems.push('console: ' + m.text()); });
  await s.api('PUT', '/namespaces/pay', {});
  await s.api('PUT', '/namespaces/search', {});
  await s.api('POST', '/app?namespace=pay', { appName: 'etl', appURL: 'file://' + join(ROOT, 'examples/dist/demo-app.tar.gz'),
    bootstrapScript: 'bin/start.sh', cpuCount: 0.1, memoryMB: 32 });
  await s.api('PUT', '/namespaces/search/calendars/weekdays', { weekdays: ['MON', 'TUE', 'WED', 'THU', 'FRI'] });
});

after(async () => {
  if (br) await br.close();
  if (s) await s.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test("alice creates, edits, imports and deletes pay's calendars; zh", async () => {
  await page.goto(s.base + '/');
  await logIn(page, 'alice', 'secret');
  await nav('#/namespaces/pay');
  await waitCal(/create one, or import/);

  // create: a broken exclude list is caught, then the server's refusal of a bad date, then saved
  await page.click('#cal-new');
  await page.fill('.modal #cal-name', 'holidays');
  for (const d of ['MON', 'TUE', 'WED', 'THU', 'FRI']) await page.check(`.modal [data-day=${d}]`);
  await page.fill('.modal #cal-zone', 'Asia/Shanghai');
  await page.fill('.modal #cal-exclude', '[{"from": "2026-12-25"');
  await page.click('.modal #cal-save');
  await page.waitForSelector('.modal .alert.bad');
  assert.match(await page.innerText('.modal .alert.bad'), /not a JSON list/);
  await page.fill('.modal #cal-exclude', '[{"from": "2026-13-45"}]');
  await page.click('.modal #cal-save');
  await page.waitForFunction(() => /2026-13-45/.test(document.querySelector('.modal .alert.bad')?.innerText ?? ''));
  await shot('refused');
  await page.fill('.modal #cal-exclude', '[{"from": "2026-12-25", "summary": "Christmas"}]');
  await page.click('.modal #cal-save');
  await page.waitForSelector('.modal', { state: 'detached' });
  await waitCal(/holidays/);
  let cal = await s.api('GET', '/namespaces/pay/calendars/holidays');
  assert.deepEqual(cal.weekdays, ['MON', 'TUE', 'WED', 'THU', 'FRI']);
  assert.equal(cal.timeZone, 'Asia/Shanghai');
  assert.deepEqual(cal.exclude, [{ from: '2026-12-25', summary: 'Christmas' }]);

  // edit: the name is fixed, the rest changes
  await page.click('[data-cal-edit=holidays]');
  assert.ok(await page.isDisabled('.modal #cal-name'));
  await page.uncheck('.modal [data-day=FRI]');
  await page.fill('.modal #cal-desc', 'office days');
  await page.fill('.modal #cal-exclude', '[{"from": "2026-12-24", "to": "2026-12-26"}, {"from": "2026-01-01", "repeat": "YEARLY"}]');
  await shot('edit');
  await page.click('.modal #cal-save');
  await page.waitForSelector('.modal', { state: 'detached' });
  await waitCal(/2026-12-24 – 2026-12-26/);
  cal = await s.api('GET', '/namespaces/pay/calendars/holidays');
  assert.deepEqual(cal.weekdays, ['MON', 'TUE', 'WED', 'THU']);
  assert.equal(cal.description, 'office days');
  assert.equal(cal.exclude.length, 2);

  // import an .ics file as a second calendar
  await page.click('#cal-import');
  await page.fill('.modal #cal-name', 'cn-holidays');
  await page.fill('.modal #cal-zone', 'Asia/Shanghai');
  await page.setInputFiles('.modal #cal-file', { name: 'cn.ics', mimeType: 'text/calendar', buffer: Buffer.from(ICS) });
  await page.click('.modal #cal-save');
  await page.waitForSelector('.modal', { state: 'detached' });
  await waitCal(/National Day/);
  const imported = await s.api('GET', '/namespaces/pay/calendars/cn-holidays');
  assert.equal(imported.timeZone, 'Asia/Shanghai');
  assert.deepEqual(imported.exclude.map((p) => p.summary).sort(), ['National Day', 'New Year']);
  await shot('list');

  // a calendar a job names is not deleted: the server's reason in the dialog
  await s.api('POST', '/job/register?namespace=pay', { jobName: 'nightly', appName: 'etl', cron: '0 0 2 * * ?', calendar: 'holidays',
    cpuCount: 0.1, memoryMB: 16 });
  await page.click('[data-cal-delete=holidays]');
  await page.click('.modal [data-confirm]');
  await page.waitForFunction(() => /nightly/.test(document.querySelector('.modal .alert.bad')?.innerText ?? ''));
  await page.keyboard.press('Escape');
  await page.click('[data-cal-delete=cn-holidays]');
  await page.click('.modal [data-confirm]');
  await page.waitForSelector('.modal', { state: 'detached' });
  await page.waitForFunction(() => !/National Day/.test(document.getElementById('ns-calendars')?.innerText ?? ''));
  assert.deepEqual((await s.api('GET', '/namespaces/pay/calendars')).map((c) => c.name), ['holidays']);

  await page.selectOption('#lang', 'zh');
  await page.waitForFunction(() => /新建日历/.test(document.getElementById('ns-calendars')?.innerText ?? ''));
  await page.click('[data-cal-edit=holidays]');
  assert.match(await page.innerText('.modal'), /编辑日历 holidays/);
  await shot('edit-zh');
  await page.keyboard.press('Escape');
  await page.selectOption('#lang', 'en');
  await logOut(page);
});

test("carol reads search's calendars with no write action", async () => {
  await logIn(page, 'carol', 'pw3');
  await nav('#/namespaces/search');
  await waitCal(/weekdays/);
  assert.match(await calText(), /MON, TUE, WED, THU, FRI/);
  assert.equal(await page.locator('#ns-calendars [data-write]').count(), 0, 'no write action with the view role');
  await nav('#/namespaces/pay');
  await waitCal(/holidays/);
  assert.ok(await page.isVisible('#cal-new'), 'an editor of pay may add');
  await logOut(page);
  assert.deepEqual(problems, []);
});
