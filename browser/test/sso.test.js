// Browser test of the console's single sign-on (issue 38 item 2): a real
// OpenID provider (bin/oidc-provider: the zitadel example provider with a
// groups claim) on its own 127.0.0.1 port, the scheduler pointed at it with
// a users file mapping the provider's group team-pay onto edit in pay. The
// login form offers "Sign in with SSO"; the provider's own form signs the
// user in; the console opens as that user, in pay alone, with the session
// token gone from the address bar. A provider user none of whose groups has
// a role comes back to the login form with the reason. Screenshots:
// browser/artifacts/sso-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { mkdtemp, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { startScheduler, startOIDCProvider, launchBrowser, freePort, logOut, ROOT, ARTIFACTS, WAIT_MS, screenshot } from '../lib/harness.js';

// Hash as `htpasswd -nbB alice secret` writes it (apache2-utils).
const USERS = `users:
  - name: alice
    password: '$2y$05$QTtPKarYJQKa6Rf.zXEmKeXox3z2FIMuqwm4L5IwxuZW22NrJgAGG'
    namespaces: {search: view}
groups:
  - name: team-pay
    namespaces: {pay: edit}
`;
const PASSWORD = 'verysecure'; // every example user's (internal/oidctest)

let s, idp, br, page, dir;
const problems = [];

const shot = (name) => screenshot(page, { path: join(ARTIFACTS, `sso-${name}.png`), fullPage: true });
const options = () => page.$$eval('#namespace option', (os) => os.map((o) => o.value));

// signIn clicks the console's SSO button and fills the provider's form.
async function signIn(user) {
  await page.goto(s.base + '/#/login');
  await page.waitForSelector('#sso');
  await shot('login-form');
  await page.click('#sso');
  await page.waitForURL((u) => u.href.startsWith(idp.issuer + '/login/'));
  await page.fill('#username', user);
  await page.fill('#password', PASSWORD);
  await shot('provider-form');
  await page.click('button[type=submit]');
  await page.waitForURL((u) => u.href.startsWith(s.base + '/'));
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ejc-sso-'));
  const users = join(dir, 'users.yaml');
  const secret = join(dir, 'client-secret');
  await writeFile(users, USERS, { mode: 0o600 });
  await writeFile(secret, 's3cret\n', { mode: 0o600 });
  const port = await freePort();
  const callback = `http://127.0.0.1:${port}/api/oidc/callback`;
  idp = await startOIDCProvider({ callback, clientId: 'elasticjob', clientSecret: 's3cret', groups: 'id1=team-pay,other;id2=interns' });
  s = await startScheduler({
    port, log: 'sso-scheduler.log',
    args: ['--auth-users-file', users, '--oidc-issuer', idp.issuer, '--oidc-client-id', 'elasticjob',
      '--oidc-client-secret-file', secret, '--oidc-redirect-url', callback],
  });
  const url = 'file://' + join(ROOT, 'examples/dist/demo-app.tar.gz');
  for (const ns of ['pay', 'search']) {
    await s.api('PUT', '/namespaces/' + ns, {});
    await s.api('POST', '/app?namespace=' + ns, { appName: 'etl', appURL: url, bootstrapScript: 'bin/start.sh', cpuCount: 0.1, memoryMB: 32 });
    await s.api('POST', '/job/register?namespace=' + ns, { jobName: ns + '_nightly', appName: 'etl', cron: '0 0 0 1 1 ? 2099', cpuCount: 0.1, memoryMB: 16 });
  }
  br = await launchBrowser();
  page = br.ctx.pages()[0] || (await br.ctx.newPage());
  page.setDefaultTimeout(WAIT_MS);
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
});

after(async () => {
  if (br) await br.close();
  if (s) await s.stop();
  if (idp) await idp.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test('SSO: the provider signs test-user in; the console opens in pay, as its group team-pay allows', async () => {
  await signIn('test-user@127.0.0.1');
  await page.waitForSelector('#page[data-ready]');
  assert.doesNotMatch(page.url(), /oidc_token/, 'the session token is taken out of the address bar');
  assert.equal(await page.innerText('#who'), 'test-user@127.0.0.1 · single sign-on');
  assert.deepEqual(await options(), ['pay']);
  await page.evaluate(() => { document.getElementById('page').setAttribute('data-stale', ''); location.hash = '#/jobs'; });
  await page.waitForSelector('#page[data-ready]:not([data-stale])');
  await page.waitForSelector('#page table tbody tr');
  assert.deepEqual(await page.$$eval('#page table tbody tr td:first-child a', (as) => as.map((a) => a.textContent)), ['pay_nightly']);
  assert.ok(await page.isVisible('#register-job'), 'team-pay edits pay');
  await shot('signed-in');
  // the session is a bearer the server maps by the groups: search is refused
  const forced = await page.evaluate(async () => {
    const r = await fetch('/api/job/jobs?namespace=search', { headers: { Authorization: 'Bearer ' + sessionStorage.getItem('ejc.token') } });
    return r.status;
  });
  assert.equal(forced, 403);
  await logOut(page);
});

test('SSO: a provider user whose groups have no role is back at the login form with the reason', async () => {
  await signIn('test-user2');
  await page.waitForSelector('#username');
  await page.waitForSelector('.login .alert.bad');
  assert.match(await page.innerText('.login .alert.bad'), /none of its groups \["interns"\] has a role/);
  assert.doesNotMatch(page.url(), /oidc_error/, 'the reason is taken out of the address bar');
  await shot('refused');
  assert.deepEqual(problems, []);
});
