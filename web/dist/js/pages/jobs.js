// Jobs: list (search and paging, built for 10,000 jobs), register with
// inline validation and a preview of the next five fire times, modify,
// view, trigger, disable/enable, delete.
import { t } from '../i18n.js';
import { api, get, post, put, del, enc, canWrite, optional, ApiError, session } from '../api.js';
import { h, clear, btn, wbtn, busy, table, pager, loading, nodata, tag, taskState, resultTag, kv, toast, confirmDo, errText, debounce, fmtNum, fmtTime, fmtDur, causeCell, waitCell, byName, timeCell } from '../ui.js';
import { lines } from '../charts.js';
import { missedPanel } from './deadlines.js';
import { backfillPanel, startBackfill, canBackfill } from './backfills.js';
import { row, setErr, serverErr, checkName, num, validZone } from './form.js';

const RESERVED = new Set(['jobs', 'tasks', 'events', 'statistics', 'logs', 'register', 'update', 'deregister', 'trigger']);
const PER_PAGE = 50;

// cronNext asks the scheduler for the next fire times of an expression with
// its own parser (GET /api/cron/next): {zone, fires: ["yyyy-MM-dd HH:mm:ss", …]}
// on the zone's wall clock. A bad expression or zone throws the server's
// 400, whose message starts with the field's name.
async function cronNext(expr, zone, signal) {
  const r = await api('GET', '/cron/next', { query: { cron: expr, timeZone: zone, count: 5 }, signal });
  return { zone: r.timeZone, fires: r.fires.map((x) => x.slice(0, 19).replace('T', ' ')) };
}

export default async function jobs(el, ctx) {
  if (ctx.path === '/jobs/new') return form(el, ctx, null);
  if (ctx.params[0]) {
    const name = decodeURIComponent(ctx.params[0]);
    return ctx.params[1] === 'edit' ? form(el, ctx, name) : view(el, ctx, name);
  }
  return list(el, ctx);
}

// ---- actions shared by the list and the view
// pausedTag shows a job pauseAfterFailures disabled, with why on hover.
function pausedTag(p) {
  return h('span.tag.bad', { title: p.reason, 'data-paused': 'true' }, t('jobs.paused', { n: p.failedRuns }));
}

export function toggleJob(name, disabled, done) {
  const verb = disabled ? 'enable' : 'disable';
  return confirmDo(t('jobs.' + verb + 'Title', { name }), t('jobs.' + verb + 'Text', { name }), t(verb), async () => {
    await post(`/job/${enc(name)}/${verb}`);
    toast(t('jobs.' + verb + 'd', { name }), 'ok');
    done && done(!disabled);
  }, { danger: !disabled });
}
export function deleteJob(name, done) {
  return confirmDo(t('jobs.deleteTitle', { name }), t('jobs.deleteText', { name }), t('delete'), async () => {
    await del(`/job/${enc(name)}/deregister`);
    toast(t('jobs.deleted', { name }), 'ok');
    done && done();
  });
}
// trigger: one execution now; a jobParameter that differs from the job's
// is sent for this run only ({"jobName","jobParameter"}).
export function triggerJob(job, done) {
  const param = h('input#trigger-param', { type: 'text', value: job.jobParameter || '', style: { width: '100%' } });
  const body = h('div',
    kv([[t('f.shardingTotalCount'), String(job.shardingTotalCount)], [t('f.shardingItemParameters'), job.shardingItemParameters || '—']]),
    h('label', { for: 'trigger-param', style: { display: 'block', margin: '12px 0 4px', fontWeight: 500 } }, t('jobs.triggerParam')), param,
    h('div.hint.muted', { style: { marginTop: '4px', fontSize: '12.5px' } }, t('jobs.triggerParamHint')));
  return confirmDo(t('jobs.triggerTitle', { name: job.jobName }), t('jobs.triggerText'), t('trigger'), async () => {
    const changed = param.value !== (job.jobParameter || '');
    await post('/job/trigger', changed ? { jobName: job.jobName, jobParameter: param.value } : JSON.stringify(job.jobName));
    toast(t('jobs.triggered', { name: job.jobName }), 'ok');
    done && done();
  }, { danger: false, body });
}

// ---- list
async function list(el, ctx) {
  const q = ctx.query;
  const state = { q: q.get('q') || '', type: q.get('type') || '', page: +q.get('page') || 1 };
  const search = h('input#job-search', { type: 'search', placeholder: t('jobs.search'), value: state.q, 'aria-label': t('jobs.search') });
  const type = h('select#job-type', { 'aria-label': t('f.jobExecutionType') },
    h('option', { value: '' }, t('jobs.allTypes')), h('option', { value: 'TRANSIENT', selected: state.type === 'TRANSIENT' }, 'TRANSIENT'), h('option', { value: 'DAEMON', selected: state.type === 'DAEMON' }, 'DAEMON'));
  const count = h('span.muted', { id: 'job-count' });
  const body = h('div', loading());
  el.append(h('h1', t('jobs.title'), h('span.sp', btn(t('refresh'), () => load()), wbtn(t('jobs.register'), () => ctx.go('/jobs/new'), 'primary', { id: 'register-job' }))),
    h('div.toolbar', search, type, count), body);

  let all = [], hay = [], shown = [];
  const disabled = new Map(); // name → bool, from the list (older servers: fetched for the visible page)
  const paused = new Map(); // name → why pauseAfterFailures paused it, from the list
  function remember() {
    const p = new URLSearchParams();
    if (state.q) p.set('q', state.q);
    if (state.type) p.set('type', state.type);
    if (state.page > 1) p.set('page', state.page);
    const s = p.toString();
    history.replaceState(null, '', '#/jobs' + (s ? '?' + s : ''));
  }
  function filter() {
    const needle = state.q.trim().toLowerCase();
    shown = [];
    for (let i = 0; i < all.length; i++) {
      if (state.type && all[i].jobExecutionType !== state.type) continue;
      if (needle && !hay[i].includes(needle)) continue;
      shown.push(all[i]);
    }
  }
  function draw() {
    const pages = Math.max(1, Math.ceil(shown.length / PER_PAGE));
    state.page = Math.min(Math.max(1, state.page), pages);
    const rows = shown.slice((state.page - 1) * PER_PAGE, state.page * PER_PAGE);
    count.textContent = t('jobs.count', { shown: shown.length, total: all.length });
    const statusCell = (j) => h('span', { 'data-status': j.jobName }, statusTag(j.jobName));
    clear(body, table([
      // fits 1024 px: the type under the name, app and shards only on wide screens, actions wrap
      { label: t('f.jobName'), cls: 'name', render: (j) => [h('a', { href: `#/jobs/${enc(j.jobName)}` }, j.jobName),
        h('div', tag(j.jobExecutionType, j.jobExecutionType === 'DAEMON' ? 'blue' : ''))] },
      { label: t('f.appName'), cls: 'wide-only name', render: (j) => h('a', { href: `#/apps/${enc(j.appName)}` }, j.appName) },
      { label: t('f.cron'), render: (j) => h('span.mono', j.cron || '—') },
      { label: t('jobs.shards'), cls: 'wide-only', render: (j) => String(j.shardingTotalCount) },
      { label: t('jobs.resources'), render: (j) => `${fmtNum(j.cpuCount)} CPU · ${fmtNum(j.memoryMB)} MB` },
      { label: t('status'), render: statusCell },
      { label: t('jobs.lastResult'), cls: 'result', render: (j) => h('span', { 'data-result': j.jobName }, resultCell(j.jobName)) },
      { label: '', cls: 'acts wrapacts', render: (j) => [
        btn(t('view'), () => ctx.go(`/jobs/${enc(j.jobName)}`), 'sm'),
        wbtn(t('modify'), () => ctx.go(`/jobs/${enc(j.jobName)}/edit`), 'sm'),
        j.jobExecutionType === 'TRANSIENT' ? wbtn(t('trigger'), () => triggerJob(j), 'sm', { 'data-trigger': j.jobName }) : null,
        wbtn(disabled.get(j.jobName) ? t('enable') : t('disable'), () => toggleJob(j.jobName, disabled.get(j.jobName), (d) => { disabled.set(j.jobName, d); paused.delete(j.jobName); draw(); }), 'sm'),
        wbtn(t('delete'), () => deleteJob(j.jobName, () => load()), 'sm danger'),
      ] },
    ], rows, { empty: all.length ? t('jobs.noMatch') : t('jobs.none') }),
    pager({ page: state.page, perPage: PER_PAGE, total: shown.length, onPage: (p) => { state.page = p; remember(); draw(); window.scrollTo(0, 0); } }));
    fetchStatus(rows.map((j) => j.jobName).filter((n) => !disabled.has(n)));
    fetchResults(rows.map((j) => j.jobName).filter((n) => !results.has(n)));
  }
  // last results: one request for the rows shown (GET /api/job/lastResults)
  const results = new Map(); // name → row, or null: no history
  function resultCell(name) {
    if (!results.has(name)) return h('span.muted', '…');
    const r = results.get(name);
    if (!r) return h('span.muted', t('jobs.res.none'));
    const kind = r.state === 'FAILED' ? 'bad' : r.state === 'RUNNING' ? 'blue' : 'ok';
    const words = r.state === 'FAILED' && r.shards > 1 ? t('jobs.res.failedShards', { n: r.failedShards, total: r.shards }) : t('jobs.res.' + r.state);
    return h('a', { href: `#/logs/${enc(r.taskId)}`, title: r.failureCause || '', 'data-state': r.state },
      tag(words, kind), ' ', h('span.muted', timeCell(r.completeTime || r.startTime)));
  }
  async function fetchResults(names) {
    if (!names.length) return;
    let rows = null;
    try { rows = await optional('/job/lastResults', { jobName: names.join(',') }); } catch { rows = null; }
    const by = new Map((rows || []).map((r) => [r.jobName, r]));
    for (const n of names) {
      results.set(n, by.get(n) || null);
      const cell = body.querySelector(`[data-result="${CSS.escape(n)}"]`);
      if (cell) clear(cell, resultCell(n));
    }
  }
  function statusTag(name) {
    if (!disabled.has(name)) return h('span.muted', '…');
    const d = disabled.get(name);
    if (d && paused.has(name)) return pausedTag(paused.get(name));
    return d === null ? '—' : d ? tag(t('disabled'), 'warn') : tag(t('enabled'), 'ok');
  }
  let statusSeq = 0;
  async function fetchStatus(names) {
    const seq = ++statusSeq;
    let i = 0;
    const worker = async () => {
      while (i < names.length && seq === statusSeq) {
        const n = names[i++];
        let d = null;
        try { d = await get(`/job/${enc(n)}/disable`); } catch { d = null; }
        disabled.set(n, d);
        const cell = body.querySelector(`[data-status="${CSS.escape(n)}"]`);
        if (cell) clear(cell, statusTag(n));
      }
    };
    await Promise.all(Array.from({ length: Math.min(6, names.length) }, worker));
    // the enable/disable labels follow the fetched states
    if (seq === statusSeq && names.length && canWrite()) draw2();
  }
  function draw2() { // relabel enable/disable buttons without refetching
    for (const tr of body.querySelectorAll('tbody tr')) {
      const a = tr.querySelector('td a'); if (!a) continue;
      const n = a.textContent;
      const b = [...tr.querySelectorAll('button[data-write]')].find((x) => x.textContent === t('enable') || x.textContent === t('disable'));
      if (b) b.textContent = disabled.get(n) ? t('enable') : t('disable');
    }
  }
  async function load() {
    const t0 = performance.now();
    clear(body, loading());
    try { all = await get('/job/jobs'); } catch (e) { clear(body, h('div.alert.bad', errText(e))); return; }
    all.sort((a, b) => byName(a.jobName, b.jobName));
    hay = all.map((j) => `${j.jobName}\n${j.appName}\n${j.description || ''}\n${j.cron || ''}`.toLowerCase());
    disabled.clear();
    results.clear();
    for (const j of all) if (typeof j.disabled === 'boolean') disabled.set(j.jobName, j.disabled); // listed with the jobs
    paused.clear();
    for (const j of all) if (j.pause) paused.set(j.jobName, j.pause);
    filter();
    draw();
    el.dataset.loadMs = String(Math.round(performance.now() - t0));
  }
  const onSearch = debounce(() => { state.q = search.value; state.page = 1; remember(); filter(); draw(); el.dataset.searched = search.value; }, 150);
  search.addEventListener('input', onSearch);
  type.addEventListener('change', () => { state.type = type.value; state.page = 1; remember(); filter(); draw(); });
  await load();
  search.focus();
  return { cleanup: () => { statusSeq++; } };
}

// firesIn heads the next fire times: the job's zone, or the one the
// scheduler uses for a job without (GET /api/cron/next's timeZone).
function firesIn(own, answered) {
  if (own) return t('jobs.nextFiresIn', { zone: answered || own });
  return answered ? t('jobs.nextFiresSched', { zone: answered }) : t('jobs.nextFiresIn', { zone: t('jobs.defaultZone') });
}

// secretList: the job's secrets, each by name (or Kubernetes Secret and
// key) and where the shard gets it; the API has no values, nor does this.
function secretList(refs) {
  return h('ul#job-secrets', { style: { margin: 0, paddingLeft: '18px' }, title: t('jobs.secretsHint') }, refs.map((r) => {
    const from = r.name || t('jobs.kubeSecret', { secret: r.kubernetesSecret || '', key: r.key || '' });
    const to = r.env ? t('jobs.secretEnv', { v: r.env }) : t('jobs.secretFile', { v: r.file || '' });
    return h('li', h('span.mono', from), ' → ', h('span.mono', to));
  }));
}

// ---- view
async function view(el, ctx, name) {
  el.append(h('h1', h('a', { href: '#/jobs' }, t('jobs.title')), ' / ', name));
  const body = h('div', loading());
  el.append(body);
  let timer;
  async function load() {
    let j, disabled, st = {};
    try { [j, disabled] = await Promise.all([get(`/job/jobs/${enc(name)}`), get(`/job/${enc(name)}/disable`)]); } catch (e) { clear(body, h('div.alert.bad', errText(e))); return; }
    try { st = await get(`/jobs/${enc(name)}/status`); } catch { st = {}; } // older servers have no status
    let missed = [];
    try { missed = await get('/job/deadlines', { jobName: name }); } catch { missed = []; } // older servers have no deadlines
    let fires = '—', schedZone = '', jitter = 0;
    if (j.cron || (j.crons || []).length) {
      try {
        // the job's actual fires, as the leader makes them: crons, H, jitter, calendar
        const r = await get(`/jobs/${enc(name)}/next`, { count: 5 });
        if (!j.timeZone) schedZone = r.timeZone || '';
        jitter = r.jitterSeconds || 0;
        fires = h('div#job-fires', { 'data-zone': r.timeZone || j.timeZone || '' }, h('div', firesIn(j.timeZone, r.timeZone)),
          r.fires.length ? h('ol', { style: { margin: 0, paddingLeft: '20px' } }, r.fires.map((x) => h('li.mono', x.slice(0, 19).replace('T', ' ')))) : t('jobs.neverFires'),
          jitter || j.calendar ? h('div.muted', { id: 'job-fires-note' }, [jitter ? t('jobs.jitterNote', { s: jitter }) : '', j.calendar ? t('jobs.calendarNote', { name: j.calendar }) : ''].filter(Boolean).join(' ')) : null);
      } catch (e) { fires = errText(e); }
    }
    const props = Object.entries(j.props || {});
    const tasks = h('div', { id: 'job-tasks' }, loading());
    const execs = h('div', loading());
    const trend = h('div', { id: 'job-durations' }, loading());
    const backfills = h('div', { id: 'job-backfills' }, loading());
    // stop the running execution, keep the job (shown while a shard runs)
    const killBtn = wbtn(t('jobs.kill'), () => confirmDo(t('jobs.killTitle', { name }), t('jobs.killText'), t('jobs.kill'), async () => {
      const r = await post(`/job/${enc(name)}/kill`);
      toast(t('jobs.killed', { name, n: r.taskIds.length }), 'ok');
      refreshTasks();
    }), 'danger', { id: 'kill-run', hidden: true });
    clear(body,
      h('div.toolbar',
        wbtn(t('modify'), () => ctx.go(`/jobs/${enc(name)}/edit`), 'primary'),
        j.jobExecutionType === 'TRANSIENT' ? wbtn(t('trigger'), () => triggerJob(j, refreshTasks), '', { id: 'trigger' }) : null,
        j.jobExecutionType === 'TRANSIENT' ? killBtn : null,
        canBackfill(j) ? wbtn(t('bf.button'), () => startBackfill(j, refreshBackfills), '', { id: 'backfill' }) : null,
        wbtn(disabled ? t('enable') : t('disable'), () => toggleJob(name, disabled, load)),
        wbtn(t('delete'), () => deleteJob(name, () => ctx.go('/jobs')), 'danger'),
        btn(t('refresh'), () => load()),
        h('a.btn', { href: `#/history/executions?jobName=${enc(name)}` }, t('jobs.history'))),
      disabled && st.pause ? h('div.alert.bad', { id: 'pause-reason' }, t('jobs.pausedWhy', { reason: st.pause.reason })) : null,
      st.waiting ? h('div.panel', { id: 'job-waiting' }, h('b', t('jobs.waiting') + ' '), waitCell(st.waiting)) : null,
      missed.length ? missedPanel('job-deadlines', missed, false) : null,
      h('div.grid2',
        h('div.panel', kv([
          [t('f.jobName'), j.jobName], [t('status'), disabled ? (st.pause ? pausedTag(st.pause) : tag(t('disabled'), 'warn')) : tag(t('enabled'), 'ok')],
          [t('f.appName'), j.appName ? h('a', { href: `#/apps/${enc(j.appName)}` }, j.appName) : t('jobs.noApp')], [t('f.jobExecutionType'), j.jobExecutionType],
          [t('f.cron'), h('span.mono', j.cron || t('jobs.noCron'))],
          (j.crons || []).length ? [t('f.crons'), h('span.mono', { id: 'job-crons' }, j.crons.join('\n'))] : null,
          j.jitter || jitter ? [t('f.jitter'), h('span', { id: 'job-jitter' }, j.jitter ? t('jobs.jitterOwn', { w: j.jitter, s: jitter }) : t('jobs.jitterSched', { s: jitter }))] : null,
          j.calendar ? [t('f.calendar'), h('span.mono', { id: 'job-calendar' }, j.calendar)] : null,
          [t('f.timeZone'), j.timeZone || (schedZone ? t('jobs.schedZone', { zone: schedZone }) : t('jobs.defaultZone'))],
          [t('f.shardingTotalCount'), String(j.shardingTotalCount)], [t('f.shardingItemParameters'), j.shardingItemParameters],
          [t('f.jobParameter'), j.jobParameter], [t('f.cpuCount'), fmtNum(j.cpuCount)], [t('f.memoryMB'), fmtNum(j.memoryMB)],
          [t('f.failover'), t(j.failover ? 'yes' : 'no')], [t('f.misfire'), t(j.misfire ? 'yes' : 'no')],
          [t('f.jobType'), t('jobType.' + (j.jobType || 'APP'))],
          j.jobClass ? [t('f.jobClass'), h('span.mono', { id: 'job-class' }, j.jobClass)] : null,
          j.beanName ? [t('f.beanName'), h('span.mono', { id: 'job-bean' }, j.beanName)] : null,
          j.applicationContext ? [t('f.applicationContext'), h('span.mono', { id: 'job-context' }, j.applicationContext)] : null,
          [t('f.timeoutSeconds'), j.timeoutSeconds ? String(j.timeoutSeconds) : t('jobs.noLimit')],
          [t('f.maxRetries'), String(j.maxRetries || 0)], [t('f.retryBackoffSeconds'), String(j.retryBackoffSeconds || 0)],
          [t('f.jobErrorHandlerType'), j.jobErrorHandlerType || 'LOG'],
          [t('f.pauseAfterFailures'), j.pauseAfterFailures ? t('jobs.pauseAfterN', { n: j.pauseAfterFailures, failed: st.consecutiveFailedRuns || 0 }) : t('jobs.off')],
          j.startDeadlineSeconds ? [t('f.startDeadlineSeconds'), h('span#job-start-deadline', String(j.startDeadlineSeconds))] : null,
          j.runDeadlineSeconds ? [t('f.runDeadlineSeconds'), h('span#job-run-deadline', String(j.runDeadlineSeconds))] : null,
          j.runDeadlineAt ? [t('f.runDeadlineAt'), h('span.mono#job-run-deadline-at', j.runDeadlineAt)] : null,
          [t('f.description'), j.description], [t('f.props'), props.length ? h('span.mono', props.map(([k, v]) => `${k}=${v}`).join('\n')) : ''],
          (j.secrets || []).length ? [t('f.secrets'), secretList(j.secrets)] : null,
          j.jobExecutorServiceHandlerType ? ['jobExecutorServiceHandlerType', j.jobExecutorServiceHandlerType] : null,
        ])),
        h('div.panel', h('h2', { style: { marginTop: 0 } }, t('jobs.nextFires')), fires)),
      h('h2', t('jobs.running')), tasks, h('h2', t('jobs.recent')), execs, h('h2', t('bf.heading')), backfills, h('h2', t('jobs.durations')), trend);
    drawTrend(trend, name);
    const refreshBackfills = backfillPanel(backfills, j);
    async function refreshTasks() {
      try {
        const run = (await get('/job/tasks/running')).filter((r) => r.jobName === name);
        if (killBtn) killBtn.hidden = !run.length;
        clear(tasks, table([
          { label: t('f.shardingItem'), key: 'shardingItem' },
          { label: t('taskId'), cls: 'wrap', render: (r) => h('a.mono', { href: `#/logs/${enc(r.taskId)}` }, r.taskId) },
          { label: t('hostname'), cls: 'wrap', key: 'hostname' }, { label: t('state'), render: (r) => taskState(r, 'blue') },
          { label: t('launchedAt'), cls: 'nowrap', render: (r) => fmtTime(r.launchedAt) },
        ], run, { empty: t('jobs.noneRunning') }));
      } catch (e) { clear(tasks, h('div.alert.bad', errText(e))); }
      try {
        // this job's own runs: a job deleted and registered again inherits none
        const q = { jobName: name, per_page: 10, page: 1, sort: 'startTime', order: 'desc' };
        if (st.registeredAt) q.startTime = st.registeredAt.replace(/\.\d+/, '');
        const ex = await optional('/job/events/executions', q);
        const rows = ex && Array.isArray(ex.rows) ? ex.rows : [];
        clear(execs, table([
          { label: t('taskId'), cls: 'clip taskid', render: (r) => h('a.mono', { href: `#/logs/${enc(r.taskId)}`, title: r.taskId }, r.taskId) },
          { label: t('f.shardingItem'), key: 'shardingItem' },
          { label: t('h.result'), render: resultTag },
          { label: t('h.triggeredBy'), cls: 'clip short', render: (r) => h('span', { title: r.triggeredBy || '' }, r.triggeredBy || '—') },
          { label: t('h.failureCause'), cls: 'cause', render: (r) => causeCell(r) },
          { label: t('h.startTime'), render: (r) => fmtTime(r.startTime) }, { label: t('h.duration'), render: (r) => fmtDur(r.durationMs) },
        ], rows, { empty: ex ? t('noData') : t('h.unavailable'), cls: 'dense' }));
      } catch (e) { clear(execs, h('div.alert.bad', errText(e))); }
    }
    await refreshTasks();
    clearInterval(timer);
    timer = setInterval(() => { if (!document.hidden) { refreshTasks(); refreshBackfills(); } }, 3000);
  }
  await load();
  return { cleanup: () => clearInterval(timer) };
}

// drawTrend: the job's recent run durations, oldest to newest, with its p90
async function drawTrend(box, name) {
  let d;
  try { d = await optional(`/jobs/${enc(name)}/durations`, { limit: 50 }); } catch (e) { clear(box, h('div.alert.bad', errText(e))); return; }
  const runs = d && Array.isArray(d.runs) ? d.runs.slice().reverse() : [];
  if (!runs.length) { clear(box, nodata(t('jobs.noDurations'))); return; }
  const ty = d.typical || {};
  const p90 = ty.known ? ty.p90Ms : null;
  // the axis in ms, s or min, whichever the longest run reads best in
  const top = Math.max(p90 || 0, ...runs.map((r) => r.durationMs || 0));
  const [div, unit] = top < 2000 ? [1, t('unit.ms')] : top < 120000 ? [1000, t('unit.s')] : [60000, t('unit.min')];
  const series = [{ name: t('h.duration'), color: '#1f6feb', values: runs.map((r) => r.durationMs / div) }];
  if (p90 !== null) series.push({ name: 'p90', color: '#9a6700', values: runs.map(() => p90 / div) });
  clear(box, h('div.panel',
    h('div', { id: 'job-p90', 'data-p90': p90 ?? '' }, ty.known ? t('jobs.p90', { p90: fmtDur(ty.p90Ms), n: ty.runs, median: fmtDur(ty.medianMs), max: fmtDur(ty.maxMs) }) : t('jobs.fewRuns')),
    lines(runs.map((r) => fmtTime(r.startTime).slice(11, 19)), series, { height: 160, title: `${t('jobs.durations')} (${unit})`, unit })));
}

// ---- register / modify
// the deadlines block of the job form (alerts, never kills: docs/jobs.md)
const DEADLINE_FIELDS = ['startDeadlineSeconds', 'runDeadlineSeconds', 'runDeadlineAt'];
const FIELDS = ['jobName', 'appName', 'jobExecutionType', 'cron', 'timeZone', 'crons', 'jitter', 'calendar', 'shardingTotalCount', 'shardingItemParameters', 'jobParameter', 'cpuCount', 'memoryMB', 'failover', 'misfire', 'jobType', 'jobClass', 'beanName', 'applicationContext', 'timeoutSeconds', 'maxRetries', 'retryBackoffSeconds', 'jobErrorHandlerType', 'description', 'props', ...DEADLINE_FIELDS];

export function checkShardParams(v, total) {
  if (!v.trim()) return '';
  const seen = new Set();
  for (let part of v.split(',')) {
    part = part.trim();
    if (!part) continue;
    const eq = part.indexOf('=');
    if (eq < 0) return t('v.shardEntry', { part });
    const k = part.slice(0, eq).trim();
    if (!/^[+-]?\d+$/.test(k)) return t('v.shardItem', { part, k });
    const n = parseInt(k, 10);
    if (Number.isInteger(total) && (n < 0 || n >= total)) return t('v.shardRange', { n, total });
    if (seen.has(n)) return t('v.shardDup', { n });
    seen.add(n);
  }
  return '';
}

// A Java binary class name, as the server checks it (jobs.Config): dotted
// identifiers, $ for nested classes.
const JAVA_CLASS_RE = /^[\p{L}_$][\p{L}\p{N}_$]*(\.[\p{L}_$][\p{L}\p{N}_$]*)*$/u;
const JAVA_TYPES = new Set(['SIMPLE', 'DATAFLOW']);

// checkJava mirrors the server's checks of jobClass, beanName and
// applicationContext for the job type: SIMPLE and DATAFLOW (2.x) name a
// class or a bean, SCRIPT and HTTP none, a bean comes with its context.
export function checkJava(field, v, { jobType, jobClass, beanName, applicationContext }) {
  const script = jobType === 'SCRIPT' || jobType === 'HTTP';
  if (field === 'jobClass') {
    if (v && script) return t('v.javaNone', { type: jobType });
    if (v && (v.length > 512 || !JAVA_CLASS_RE.test(v))) return t('v.jobClass', { v });
    if (!v && !beanName && JAVA_TYPES.has(jobType)) return t('v.jobClassRequired', { type: jobType });
    return '';
  }
  if (v && script) return t('v.javaNone', { type: jobType });
  if (v && (v.length > 512 || /\s/.test(v))) return t('v.beanBlank', { field });
  if (field === 'beanName' && !v && applicationContext) return t('v.beanPair');
  if (field === 'applicationContext' && !v && beanName) return t('v.beanPair');
  return '';
}
// cronLines: the extra crons, one a line.
function cronLines(text) { return text.split('\n').map((x) => x.trim()).filter(Boolean); }

function parseProps(text) {
  const out = {};
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) throw new Error(t('v.props', { line }));
    out[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
  }
  return out;
}

async function form(el, ctx, name) {
  const editing = !!name;
  el.append(h('h1', h('a', { href: '#/jobs' }, t('jobs.title')), ' / ', editing ? t('jobs.modifyTitle', { name }) : t('jobs.register')));
  if (!canWrite()) { el.append(h('div.alert.bad', t('readOnly'))); return; }
  let cur = { jobName: '', appName: '', jobExecutionType: 'TRANSIENT', cron: '', timeZone: '', shardingTotalCount: 1, shardingItemParameters: '', jobParameter: '', cpuCount: 1, memoryMB: 128, failover: false, misfire: false, description: '', props: {} };
  let apps = [], calendars = [];
  try {
    const [a, j, cals] = await Promise.all([get('/app/list'), editing ? get(`/job/jobs/${enc(name)}`) : null,
      get(`/namespaces/${enc(session.ns || 'default')}/calendars`).catch(() => [])]);
    apps = a.map((x) => x.appName).sort(byName);
    calendars = cals.map((c) => c.name);
    if (j) cur = j;
  } catch (e) { el.append(h('div.alert.bad', errText(e))); return; }
  if (!cur.appName && apps.length === 1) cur.appName = apps[0];
  const zones = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  const i = {
    jobName: h('input', { type: 'text', value: cur.jobName, disabled: editing, placeholder: 'my_job' }),
    appName: h('select', h('option', { value: '' }, t('jobs.chooseApp')), apps.map((a) => h('option', { value: a, selected: a === cur.appName }, a))),
    jobExecutionType: h('select', ['TRANSIENT', 'DAEMON'].map((x) => h('option', { value: x, selected: x === cur.jobExecutionType }, x))),
    cron: h('input.mono', { type: 'text', value: cur.cron, placeholder: '0/5 * * * * ?', autocomplete: 'off', spellcheck: 'false' }),
    timeZone: h('input', { type: 'text', value: cur.timeZone || '', list: 'zones', placeholder: Intl.DateTimeFormat().resolvedOptions().timeZone }),
    crons: h('textarea.mono', { rows: 2, placeholder: '0 H 17 ? * MON-FRI', autocomplete: 'off', spellcheck: 'false' }, (cur.crons || []).join('\n')),
    jitter: h('input', { type: 'text', value: cur.jitter || '', placeholder: '30m' }),
    calendar: h('select', h('option', { value: '' }, t('jobs.noCalendar')),
      [...new Set([...calendars, ...(cur.calendar ? [cur.calendar] : [])])].map((c) => h('option', { value: c, selected: c === cur.calendar }, c))),
    shardingTotalCount: h('input', { type: 'number', min: 1, max: 10000, step: 1, value: cur.shardingTotalCount }),
    shardingItemParameters: h('input', { type: 'text', value: cur.shardingItemParameters, placeholder: '0=Beijing,1=Shanghai,2=Guangzhou' }),
    jobParameter: h('input', { type: 'text', value: cur.jobParameter }),
    cpuCount: h('input', { type: 'number', step: 'any', min: '0.001', value: cur.cpuCount }),
    memoryMB: h('input', { type: 'number', step: 'any', min: '1', value: cur.memoryMB }),
    failover: h('input', { type: 'checkbox', checked: cur.failover }),
    misfire: h('input', { type: 'checkbox', checked: cur.misfire }),
    jobType: h('select', ['', 'SCRIPT', 'HTTP', 'SIMPLE', 'DATAFLOW'].map((x) => h('option', { value: x, selected: x === (cur.jobType || '') }, t('jobType.' + (x || 'APP'))))),
    jobClass: h('input.mono', { type: 'text', value: cur.jobClass || '', placeholder: 'com.example.MyJob', autocomplete: 'off', spellcheck: 'false' }),
    beanName: h('input.mono', { type: 'text', value: cur.beanName || '', placeholder: 'myJob', autocomplete: 'off', spellcheck: 'false' }),
    applicationContext: h('input.mono', { type: 'text', value: cur.applicationContext || '', placeholder: 'META-INF/applicationContext.xml', autocomplete: 'off', spellcheck: 'false' }),
    timeoutSeconds: h('input', { type: 'number', min: 0, step: 1, value: cur.timeoutSeconds || 0 }),
    maxRetries: h('input', { type: 'number', min: 0, max: 10, step: 1, value: cur.maxRetries || 0 }),
    retryBackoffSeconds: h('input', { type: 'number', min: 0, max: 3600, step: 1, value: cur.retryBackoffSeconds || 0 }),
    pauseAfterFailures: h('input', { type: 'number', min: 0, max: 1000, step: 1, value: cur.pauseAfterFailures || 0 }),
    jobErrorHandlerType: h('select', ['', 'LOG', 'THROW', 'IGNORE', 'WEBHOOK'].map((x) => h('option', { value: x, selected: x === (cur.jobErrorHandlerType || '') }, x || t('jobs.defaultHandler')))),
    startDeadlineSeconds: h('input', { type: 'number', min: 0, max: 604800, step: 1, value: cur.startDeadlineSeconds || 0 }),
    runDeadlineSeconds: h('input', { type: 'number', min: 0, max: 604800, step: 1, value: cur.runDeadlineSeconds || 0 }),
    runDeadlineAt: h('input.mono', { type: 'text', value: cur.runDeadlineAt || '', placeholder: '06:30', autocomplete: 'off', spellcheck: 'false' }),
    description: h('input', { type: 'text', value: cur.description }),
    props: h('textarea.mono', { placeholder: 'script.command.line=bin/other.sh', rows: 3 }, Object.entries(cur.props || {}).map(([k, v]) => `${k}=${v}`).join('\n')),
  };
  const preview = h('div.preview', { id: 'cron-preview', 'aria-live': 'polite' });
  let cronVerdict = { expr: null, msg: '' };
  let previewSeq = 0;
  const checks = {
    jobName: (v) => checkName(v, 'jobName') || (RESERVED.has(v) ? t('v.reserved', { name: v }) : ''),
    appName: (v) => (!v && i.jobType.value !== 'HTTP' ? (apps.length ? t('v.required', { field: 'appName' }) : t('jobs.noApps')) : ''),
    // the server's verdict on the expression, from the last preview of it
    cron: (v) => {
      if (!v) return i.jobExecutionType.value === 'DAEMON' ? t('v.cronDaemon') : '';
      return cronVerdict.expr === v ? cronVerdict.msg : '';
    },
    timeZone: (v) => (validZone(v) ? '' : t('v.zone', { zone: v })),
    crons: (v) => (cronLines(v).length > 16 ? t('v.crons') : ''),
    jitter: (v) => (!v || /^(\d+(\.\d+)?(h|m|s|ms))+$/.test(v) ? '' : t('v.jitter', { v })),
    shardingTotalCount: (v) => { const n = num(v); return Number.isInteger(n) && n >= 1 && n <= 10000 ? '' : t('v.shards'); },
    shardingItemParameters: (v) => checkShardParams(v, num(i.shardingTotalCount.value)),
    cpuCount: (v) => (num(v) >= 0.001 ? '' : t('v.min', { field: 'cpuCount', min: 0.001 })),
    memoryMB: (v) => (num(v) >= 1 ? '' : t('v.min', { field: 'memoryMB', min: 1 })),
    jobClass: (v) => checkJava('jobClass', v, java()),
    beanName: (v) => checkJava('beanName', v, java()),
    applicationContext: (v) => checkJava('applicationContext', v, java()),
    props: (v) => {
      let p;
      try { p = parseProps(v); } catch (e) { return e.message; }
      if (i.jobType.value === 'SCRIPT' && !p['script.command.line']) return t('v.scriptProp');
      if (i.jobType.value === 'HTTP' && !/^https?:\/\/./.test(p['http.url'] || '')) return t('v.httpProp');
      if (i.jobErrorHandlerType.value === 'WEBHOOK' && !/^https?:\/\/./.test(p['webhook.url'] || '')) return t('v.webhookProp');
      return '';
    },
    timeoutSeconds: (v) => (Number.isInteger(num(v)) && num(v) >= 0 ? '' : t('v.nonNeg', { field: 'timeoutSeconds' })),
    maxRetries: (v) => (Number.isInteger(num(v)) && num(v) >= 0 && num(v) <= 10 ? '' : t('v.between', { field: 'maxRetries', min: 0, max: 10 })),
    retryBackoffSeconds: (v) => (Number.isInteger(num(v)) && num(v) >= 0 && num(v) <= 3600 ? '' : t('v.between', { field: 'retryBackoffSeconds', min: 0, max: 3600 })),
    pauseAfterFailures: (v) => (Number.isInteger(num(v)) && num(v) >= 0 && num(v) <= 1000 ? '' : t('v.between', { field: 'pauseAfterFailures', min: 0, max: 1000 })),
    startDeadlineSeconds: (v) => (Number.isInteger(num(v)) && num(v) >= 0 && num(v) <= 604800 ? '' : t('v.between', { field: 'startDeadlineSeconds', min: 0, max: 604800 })),
    runDeadlineSeconds: (v) => (Number.isInteger(num(v)) && num(v) >= 0 && num(v) <= 604800 ? '' : t('v.between', { field: 'runDeadlineSeconds', min: 0, max: 604800 })),
    runDeadlineAt: (v) => (!v || /^([01][0-9]|2[0-3]):[0-5][0-9]$/.test(v) ? '' : t('v.timeOfDay', { field: 'runDeadlineAt' })),
  };
  function java() {
    return { jobType: i.jobType.value, jobClass: i.jobClass.value.trim(), beanName: i.beanName.value.trim(), applicationContext: i.applicationContext.value.trim() };
  }
  const alertBox = h('div');
  const submit = h('button.btn.primary', { type: 'submit', 'data-write': '', id: 'submit' }, editing ? t('save') : t('jobs.register'));
  const f = h('form.f.panel', { novalidate: true },
    alertBox,
    row('jobName', t('f.jobName'), i.jobName, { required: true, hint: t('h.name') }),
    row('appName', t('f.appName'), i.appName, { required: true, hint: apps.length ? null : h('a', { href: '#/apps/new' }, t('apps.publish')) }),
    row('jobExecutionType', t('f.jobExecutionType'), i.jobExecutionType, { hint: t('h.type') }),
    row('cron', t('f.cron'), i.cron, { hint: t('h.cron'), extra: preview }),
    row('timeZone', t('f.timeZone'), i.timeZone, { hint: t('h.zone') }),
    h('details', { open: !!((cur.crons || []).length || cur.jitter || cur.calendar) || undefined, style: { marginBottom: '12px' } },
      h('summary', { style: { cursor: 'pointer', marginBottom: '10px', fontWeight: 500 } }, t('jobs.scheduleMore')),
      row('crons', t('f.crons'), i.crons, { hint: t('h.crons') }),
      row('jitter', t('f.jitter'), i.jitter, { hint: t('h.jitter') }),
      row('calendar', t('f.calendar'), i.calendar, { hint: calendars.length ? t('h.calendar') : t('h.noCalendars') })),
    row('shardingTotalCount', t('f.shardingTotalCount'), i.shardingTotalCount, { required: true }),
    row('shardingItemParameters', t('f.shardingItemParameters'), i.shardingItemParameters, { hint: t('h.shardParams') }),
    row('jobParameter', t('f.jobParameter'), i.jobParameter),
    row('cpuCount', t('f.cpuCount'), i.cpuCount, { hint: t('h.jobCpu') }),
    row('memoryMB', t('f.memoryMB'), i.memoryMB, { hint: t('h.jobMem') }),
    row('failover', t('f.failover'), i.failover, { hint: t('h.failover') }),
    row('misfire', t('f.misfire'), i.misfire, { hint: t('h.misfire') }),
    h('details', { open: !!(cur.jobType || cur.jobClass || cur.beanName || cur.timeoutSeconds || cur.maxRetries || cur.jobErrorHandlerType || cur.pauseAfterFailures) || undefined, style: { marginBottom: '12px' } },
      h('summary', { style: { cursor: 'pointer', marginBottom: '10px', fontWeight: 500 } }, t('jobs.runSettings')),
      row('jobType', t('f.jobType'), i.jobType, { hint: t('h.jobType') }),
      row('jobClass', t('f.jobClass'), i.jobClass, { hint: t('h.jobClass') }),
      row('beanName', t('f.beanName'), i.beanName, { hint: t('h.beanName') }),
      row('applicationContext', t('f.applicationContext'), i.applicationContext, { hint: t('h.applicationContext') }),
      row('timeoutSeconds', t('f.timeoutSeconds'), i.timeoutSeconds, { hint: t('h.timeout') }),
      row('maxRetries', t('f.maxRetries'), i.maxRetries, { hint: t('h.retries') }),
      row('retryBackoffSeconds', t('f.retryBackoffSeconds'), i.retryBackoffSeconds, { hint: t('h.backoff') }),
      row('pauseAfterFailures', t('f.pauseAfterFailures'), i.pauseAfterFailures, { hint: t('h.pauseAfter') }),
      row('jobErrorHandlerType', t('f.jobErrorHandlerType'), i.jobErrorHandlerType, { hint: t('h.handler') })),
    h('details#deadlines', { open: !!(cur.startDeadlineSeconds || cur.runDeadlineSeconds || cur.runDeadlineAt) || undefined, style: { marginBottom: '12px' } },
      h('summary', { style: { cursor: 'pointer', marginBottom: '10px', fontWeight: 500 } }, t('jobs.deadlines')),
      row('startDeadlineSeconds', t('f.startDeadlineSeconds'), i.startDeadlineSeconds, { hint: t('h.startDeadline') }),
      row('runDeadlineSeconds', t('f.runDeadlineSeconds'), i.runDeadlineSeconds, { hint: t('h.runDeadline') }),
      row('runDeadlineAt', t('f.runDeadlineAt'), i.runDeadlineAt, { hint: t('h.runDeadlineAt') })),
    row('description', t('f.description'), i.description),
    row('props', t('f.props'), i.props, { hint: t('h.props') }),
    h('datalist#zones', zones.map((z) => h('option', { value: z }))),
    h('div.formbar', submit, btn(t('cancel'), () => history.back())));
  const check = (k) => { const msg = checks[k] ? checks[k](i[k].value.trim()) : ''; setErr(f, k, msg); return !msg; };
  const isBad = (k) => f.querySelector(`.fr[data-field=${k}]`).classList.contains('bad');
  // drawPreview shows the server's next five fire times; the last answer
  // for the current input wins, so a slow reply never overwrites a newer one
  async function drawPreview() {
    const expr = i.cron.value.trim();
    const tz = i.timeZone.value.trim();
    const seq = ++previewSeq;
    if (!expr) { clear(preview, i.jobExecutionType.value === 'DAEMON' ? t('v.cronDaemon') : t('jobs.noCronHint')); return; }
    const zone = validZone(tz) ? tz : '';
    let r;
    try {
      r = await cronNext(expr, zone);
    } catch (e) {
      if (seq !== previewSeq) return;
      if (e instanceof ApiError && e.status === 400) {
        const field = /^timeZone\b/.test(e.message) ? 'timeZone' : 'cron';
        if (field === 'cron') cronVerdict = { expr, msg: e.message };
        clear(preview, t('jobs.previewBad'));
        setErr(f, field, e.message);
      } else {
        clear(preview, errText(e)); // no verdict on the expression
      }
      return;
    }
    if (seq !== previewSeq) return;
    cronVerdict = { expr, msg: r.fires.length ? '' : t('jobs.neverFires') };
    clear(preview, h('div', { 'data-zone': r.zone || zone }, firesIn(zone, r.zone)),
      r.fires.length ? h('ol', r.fires.map((x) => h('li.mono', x))) : h('div', t('jobs.neverFires')));
    setErr(f, 'cron', cronVerdict.msg);
  }
  for (const k of Object.keys(checks)) {
    i[k].addEventListener('blur', () => check(k));
    i[k].addEventListener('change', () => check(k));
    i[k].addEventListener('input', () => isBad(k) && check(k));
  }
  i.cron.addEventListener('input', debounce(drawPreview, 120));
  i.timeZone.addEventListener('input', debounce(drawPreview, 200));
  i.jobExecutionType.addEventListener('change', () => { drawPreview(); check('cron'); });
  for (const k of ['jobType', 'jobErrorHandlerType']) i[k].addEventListener('change', () => check('props'));
  i.jobType.addEventListener('change', () => { check('appName'); for (const k of ['jobClass', 'beanName', 'applicationContext']) check(k); });
  i.beanName.addEventListener('change', () => { check('jobClass'); check('applicationContext'); });
  i.applicationContext.addEventListener('change', () => check('beanName'));
  i.shardingTotalCount.addEventListener('input', () => i.shardingItemParameters.value && check('shardingItemParameters'));
  drawPreview();
  if (!apps.length) setErr(f, 'appName', t('jobs.noApps'));
  f.addEventListener('submit', async (e) => {
    e.preventDefault();
    clear(alertBox);
    const bad = Object.keys(checks).filter((k) => !(editing && k === 'jobName') && !check(k));
    if (bad.length) { i[bad[0]].focus(); return; }
    const body = {
      jobName: editing ? name : i.jobName.value.trim(), appName: i.appName.value, jobExecutionType: i.jobExecutionType.value,
      cron: i.cron.value.trim(), timeZone: i.timeZone.value.trim(),
      crons: cronLines(i.crons.value), jitter: i.jitter.value.trim(), calendar: i.calendar.value, shardingTotalCount: num(i.shardingTotalCount.value),
      shardingItemParameters: i.shardingItemParameters.value.trim(), jobParameter: i.jobParameter.value,
      cpuCount: num(i.cpuCount.value), memoryMB: num(i.memoryMB.value), failover: i.failover.checked, misfire: i.misfire.checked,
      jobType: i.jobType.value, jobClass: java().jobClass, beanName: java().beanName, applicationContext: java().applicationContext,
      timeoutSeconds: num(i.timeoutSeconds.value), maxRetries: num(i.maxRetries.value),
      retryBackoffSeconds: num(i.retryBackoffSeconds.value), jobErrorHandlerType: i.jobErrorHandlerType.value,
      pauseAfterFailures: num(i.pauseAfterFailures.value),
      startDeadlineSeconds: num(i.startDeadlineSeconds.value), runDeadlineSeconds: num(i.runDeadlineSeconds.value), runDeadlineAt: i.runDeadlineAt.value.trim(),
      description: i.description.value, props: parseProps(i.props.value),
    };
    if (!body.timeZone && !editing) delete body.timeZone;
    try {
      await busy(submit, () => (editing ? put('/job/update', body) : post('/job/register', body)));
      toast(t(editing ? 'jobs.saved' : 'jobs.registered', { name: body.jobName }), 'ok');
      ctx.go(`/jobs/${enc(body.jobName)}`);
    } catch (err) {
      serverErr(f, err, alertBox, FIELDS);
    }
  });
  el.append(f);
  (editing ? i.cron : i.jobName).focus();
}
