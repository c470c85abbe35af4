// Dashboard: jobs by type, tasks now, success/failure over the last day and
// week from the statistics API (absent endpoints show "no data").
import { t } from '../i18n.js';
import { get, optional } from '../api.js';
import { h, clear, loading, nodata, errText, btn } from '../ui.js';
import { bars, lines, donut } from '../charts.js';

const OK = '#2da44e', BAD = '#cf222e', BLUE = '#1f6feb', PURPLE = '#8250df';

const time = (r) => r.statisticsTime ?? r.statistics_time ?? r.creationTime ?? r.time;
const pad = (n) => String(n).padStart(2, '0');
function label(v, withDay) {
  const d = new Date(typeof v === 'string' ? v.replace(' ', 'T') : v);
  if (isNaN(d)) return String(v ?? '');
  return withDay ? `${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}h` : `${pad(d.getHours())}:${pad(d.getMinutes())}`;
}
const list = (v) => (Array.isArray(v) ? v : v && Array.isArray(v.rows) ? v.rows : null);

export default async function dashboard(el) {
  const head = h('h1', t('nav.dashboard'), h('span.sp', btn(t('refresh'), () => load())));
  const stats = h('div.grid', { id: 'dash-stats' });
  const row = h('div.grid2');
  const charts = h('div.grid2');
  el.append(head, stats, row, charts);

  function panel(title, id) {
    const body = h('div', loading());
    return { el: h('div.panel', { id }, h('h2', { style: { marginTop: 0 } }, title), body), body };
  }
  // fill(panel, promise, draw): "no data" for null or empty, words for errors
  async function fill(p, promise, draw) {
    try {
      const v = await promise;
      const node = v === null || v === undefined || (Array.isArray(v) && !v.length) ? nodata() : draw(v);
      clear(p.body, node || nodata());
    } catch (e) {
      clear(p.body, h('div.alert.bad', errText(e)));
    }
  }
  function stat(k, v, id) { return h('div.stat', { id }, h('div.k', k), h('div.v', v)); }

  async function load() {
    clear(stats, loading()); clear(row); clear(charts);
    const [apps, running, ready, failover, execType] = await Promise.allSettled([
      get('/app/list'), get('/job/tasks/running'), get('/job/tasks/ready'), get('/job/tasks/failover'),
      optional('/job/statistics/jobs/executionType'),
    ]);
    let types = execType.status === 'fulfilled' ? execType.value : null;
    if (!types || typeof types.transientJobCount !== 'number') {
      // fall back to counting the registered jobs
      try {
        const jobs = await get('/job/jobs');
        types = { transientJobCount: 0, daemonJobCount: 0 };
        for (const j of jobs) j.jobExecutionType === 'DAEMON' ? types.daemonJobCount++ : types.transientJobCount++;
      } catch { types = null; }
    }
    const val = (r, f) => (r.status === 'fulfilled' ? f(r.value) : '—');
    clear(stats,
      stat(t('dash.apps'), val(apps, (v) => v.length), 'stat-apps'),
      stat(t('dash.jobs'), types ? types.transientJobCount + types.daemonJobCount : '—', 'stat-jobs'),
      stat(t('dash.running'), val(running, (v) => v.length), 'stat-running'),
      stat(t('dash.ready'), val(ready, (v) => v.reduce((a, r) => a + (r.times || 1), 0)), 'stat-ready'),
      stat(t('dash.failover'), val(failover, (v) => v.length), 'stat-failover'));
    for (const r of [apps, running, ready, failover]) if (r.status === 'rejected') stats.append(h('div.alert.bad', errText(r.reason)));

    const pType = panel(t('dash.byType'), 'chart-types');
    const pSum = panel(t('dash.results'), 'chart-summary');
    row.append(pType.el, pSum.el);
    clear(pType.body, types && types.transientJobCount + types.daemonJobCount
      ? donut([{ name: 'TRANSIENT', color: BLUE, value: types.transientJobCount }, { name: 'DAEMON', color: PURPLE, value: types.daemonJobCount }], { title: t('dash.byType') })
      : nodata());
    fill(pSum, Promise.all(['lastMinute', 'lastHour', 'lastWeek', 'online'].map((k) => optional('/job/statistics/tasks/results/' + k).then((v) => [k, v]))),
      (all) => {
        const have = all.filter(([, v]) => v && typeof v === 'object');
        if (!have.length) return null;
        return h('div.tw', h('table.t', h('thead', h('tr', h('th', t('dash.period')), h('th', t('dash.success')), h('th', t('dash.failed')), h('th', t('dash.rate')))),
          h('tbody', have.map(([k, v]) => {
            const sc = +v.successCount || 0, fc = +v.failedCount || 0;
            return h('tr', h('td', t('dash.p.' + k)), h('td', String(sc)), h('td', String(fc)), h('td', sc + fc ? ((100 * sc) / (sc + fc)).toFixed(1) + ' %' : '—'));
          }))));
      });

    const p24 = panel(t('dash.day'), 'chart-day');
    const pWeek = panel(t('dash.week'), 'chart-week');
    const pTasks = panel(t('dash.tasksWeek'), 'chart-tasks');
    const pJobs = panel(t('dash.jobsWeek'), 'chart-jobs');
    charts.append(p24.el, pWeek.el, pTasks.el, pJobs.el);
    const results = (rows, withDay) => {
      rows = list(rows);
      if (!rows || !rows.length) return null;
      return bars(rows.map((r) => label(time(r), withDay)), [
        { name: t('dash.success'), color: OK, values: rows.map((r) => r.successCount) },
        { name: t('dash.failed'), color: BAD, values: rows.map((r) => r.failedCount) }], { unit: t('unit.tasks'), integer: true });
    };
    fill(p24, optional('/job/statistics/tasks/results', { since: 'last24hours' }), (v) => results(v, false));
    fill(pWeek, optional('/job/statistics/tasks/results', { since: 'lastWeek' }), (v) => results(v, true));
    fill(pTasks, optional('/job/statistics/tasks/running', { since: 'lastWeek' }), (v) => {
      const rows = list(v);
      if (!rows || !rows.length) return null;
      return lines(rows.map((r) => label(time(r), true)), [{ name: t('dash.tasksRunning'), color: BLUE, values: rows.map((r) => r.runningCount) }], { unit: t('unit.tasks'), integer: true });
    });
    fill(pJobs, Promise.all([optional('/job/statistics/jobs/running', { since: 'lastWeek' }), optional('/job/statistics/jobs/register')]), ([run, reg]) => {
      run = list(run) || []; reg = list(reg) || [];
      if (!run.length && !reg.length) return null;
      const base = run.length >= reg.length ? run : reg;
      const series = [];
      if (run.length) series.push({ name: t('dash.jobsRunning'), color: BLUE, values: run.map((r) => r.runningCount) });
      if (reg.length) series.push({ name: t('dash.jobsRegistered'), color: PURPLE, values: reg.slice(-base.length).map((r) => r.registeredCount) });
      return lines(base.map((r) => label(time(r), true)), series, { unit: t('unit.jobs'), integer: true });
    });
  }
  await load();
}
