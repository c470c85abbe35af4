// Status: running, ready and failover tasks, refreshed live.
import { t } from '../i18n.js';
import { get, enc, engineCan } from '../api.js';
import { h, clear, btn, table, loading, taskState, errText, fmtTime, waitCell } from '../ui.js';

const EVERY = 2000;

export default async function status(el) {
  const live = h('span.live', { id: 'live' }, h('i'), t('status.live'));
  let paused = false;
  const pause = btn(t('status.pause'), () => {
    paused = !paused;
    pause.textContent = paused ? t('status.resume') : t('status.pause');
    live.classList.toggle('off', paused);
    if (!paused) load();
  }, '', { id: 'pause' });
  const stamp = h('span.muted', { id: 'updated' });
  const run = h('div', { id: 'running' }, loading());
  const ready = h('div', { id: 'ready' }, loading());
  const fo = h('div', { id: 'failover' }, loading());
  const hRun = h('h2'), hReady = h('h2'), hFo = h('h2');
  el.append(h('h1', t('nav.status'), live, h('span.sp', stamp, pause)), hRun, run, hReady, ready, hFo, fo);

  let timer, busyNow = false;
  async function load() {
    if (busyNow) return;
    busyNow = true;
    const [r, q, f] = await Promise.allSettled([get('/job/tasks/running'), get('/job/tasks/ready'), get('/job/tasks/failover')]);
    busyNow = false;
    const show = (box, res, head, key, draw) => {
      head.textContent = t(key) + (res.status === 'fulfilled' ? ` (${res.value.length})` : '');
      clear(box, res.status === 'fulfilled' ? draw(res.value) : h('div.alert.bad', errText(res.reason)));
    };
    const job = (x) => h('a', { href: `#/jobs/${enc(x.jobName)}` }, x.jobName);
    const task = (x) => (x.taskId ? h('a.mono', { href: `#/logs/${enc(x.taskId)}` }, x.taskId) : '');
    show(run, r, hRun, 'status.running', (v) => table([
      { label: t('f.jobName'), render: job }, { label: t('f.shardingItem'), key: 'shardingItem' },
      { label: t('taskId'), cls: 'wrap', render: task }, { label: t('hostname'), cls: 'wrap', key: 'hostname' },
      { label: t('state'), render: (x) => taskState(x, x.state === 'TASK_RUNNING' ? 'ok' : 'blue') },
      { label: t('launchedAt'), render: (x) => fmtTime(x.launchedAt) },
      engineCan('logs') ? { label: '', cls: 'acts', render: (x) => [h('a.btn.sm', { href: `#/logs/${enc(x.taskId)}?stream=stdout` }, 'stdout'), h('a.btn.sm', { href: `#/logs/${enc(x.taskId)}?stream=stderr` }, 'stderr')] } : null,
    ].filter(Boolean), v, { empty: t('status.noneRunning') }));
    // why an entry has not launched (recorded by the leader once it waited a second)
    // with the holders of what it needs and when they are expected to free it
    const why = (x) => waitCell(x.waiting);
    // its place in the namespace's order and when it is expected to start
    const pos = { label: t('status.position'), cls: 'num', render: (x) => (x.position ? String(x.position) : '–') };
    const est = { label: t('status.estimatedStart'), render: (x) => (x.estimatedStart ? fmtTime(x.estimatedStart) : h('span.muted', t('status.estimateUnknown'))) };
    show(ready, q, hReady, 'status.ready', (v) => table([
      { label: t('f.jobName'), render: job }, { label: t('status.times'), key: 'times' }, { label: t('status.since'), render: (x) => fmtTime(x.since) },
      pos, est, { label: t('status.why'), cls: 'wrap', render: why },
    ], v, { empty: t('status.noneReady') }));
    show(fo, f, hFo, 'status.failover', (v) => table([
      { label: t('f.jobName'), render: job }, { label: t('f.shardingItem'), key: 'shardingItem' },
      { label: t('status.prevTask'), cls: 'wrap', render: task }, { label: t('status.since'), render: (x) => fmtTime(x.since) },
      pos, est, { label: t('status.why'), cls: 'wrap', render: why },
    ], v, { empty: t('status.noneFailover') }));
    stamp.textContent = t('status.updated', { time: fmtTime(Date.now()).slice(11) });
  }
  await load();
  timer = setInterval(() => { if (!paused && !document.hidden) load(); }, EVERY);
  return { cleanup: () => clearInterval(timer) };
}
