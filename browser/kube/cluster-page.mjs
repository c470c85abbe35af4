// The console's cluster page on the Kubernetes engine, in headless Chromium.
// Run by e2e/realkube (TestClusterPageInBrowser) against a scheduler it
// started on the real single-node Kubernetes, while one of its tasks' pods
// runs:
//   EJC_BASE   the scheduler's base URL (open access on loopback: no login)
//   EJC_NODE   the node the page must list as usable, with its free resources
//   EJC_TASK   the task id of a pod that runs (listed under the node, Running)
//   EJC_SHOT   where to write the screenshot
// It exits 0 when the page shows all of that, 1 with what it saw otherwise.
// Not under test/: `node --test test/` (scripts/browser-test.sh) has no cluster.
import { launchBrowser, waitFor, watchPage, WAIT_MS } from '../lib/harness.js';

const need = (k) => {
  const v = process.env[k];
  if (!v) { console.error(`cluster-page: ${k} is not set`); process.exit(2); }
  return v;
};
const base = need('EJC_BASE');
const node = need('EJC_NODE');
const task = need('EJC_TASK');
const shot = need('EJC_SHOT');

const fail = (msg) => { throw new Error(msg); };
const br = await launchBrowser();
let status = 0;
try {
  const page = br.ctx.pages()[0] || (await br.ctx.newPage());
  page.setDefaultTimeout(WAIT_MS);
  const inFlight = watchPage(page);
  const problems = [];
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  await page.goto(base + '/#/cluster');
  await waitFor(page, '#page[data-ready]', { inFlight });
  if (await page.locator('form.login').count()) fail('the console asked for a login on an open loopback scheduler');
  // The node, usable, with its free CPUs and memory as "free / allocatable".
  const row = `#nodes tbody tr[data-node="${node}"]`;
  await waitFor(page, row, { inFlight });
  const cells = await page.locator(row + ' td').allTextContents();
  if (cells.length !== 5) fail(`node row has ${cells.length} cells: ${JSON.stringify(cells)}`);
  if (!/usable/i.test(cells[1]) || /unusable/i.test(cells[1])) fail(`node not shown usable: ${cells[1]}`);
  for (const [i, what] of [[2, 'CPUs'], [3, 'memory']]) {
    const m = cells[i].match(/([\d.,]+)\s*\/\s*([\d.,]+)/);
    if (!m) fail(`node ${what} cell is not "free / allocatable": ${cells[i]}`);
    const [free, all] = [m[1], m[2]].map((x) => parseFloat(x.replace(/,/g, '')));
    if (!(all > 0 && free >= 0 && free < all)) fail(`node ${what}: ${free} free of ${all} while our pod runs`);
  }
  // The running task's pod under its node, with its phase. The page is read once; a
  // pod's phase can lag the API by a kubelet sync, so reload until it says Running.
  const pod = `${row} [data-task="${task}"]`;
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    if (await page.locator(pod).count() && /Running/.test(await page.textContent(pod))) break;
    if (Date.now() > deadline) fail(`no Running pod of task ${task} under ${node}: ${cells[4]}`);
    await page.click('h1 button'); // the page's refresh
    await page.waitForTimeout(500);
  }
  // One scheduler without ZooKeeper on Kubernetes is a single instance, not the embedded shape.
  const panel = await page.textContent('.panel');
  if (!/single instance/.test(panel) || /embedded/.test(panel)) fail(`mode: ${panel.replace(/\s+/g, ' ')}`);
  // The summary counts the nodes, not Mesos agents, and there is no agent table.
  if (await page.locator('#agents').count()) fail('the Kubernetes cluster page shows a Mesos agent table');
  await page.screenshot({ path: shot, fullPage: true });
  if (problems.length) fail(problems.join('; '));
  console.log(`cluster page: node ${node} ${cells[2]} CPUs, ${cells[3]} MB free; pod of ${task}: ${await page.textContent(pod)}`);
} catch (e) {
  console.error('cluster-page:', e.message);
  status = 1;
} finally {
  await br.close();
}
process.exit(status);
