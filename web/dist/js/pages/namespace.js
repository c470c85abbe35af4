// A namespace's page: its usage against its guarantee and limit over the
// last hour (sampled by the leader every 10 s), its guarantee and limit on
// each cluster (perCluster, with several clusters) and the share of its
// cron fires that started on time (GET /api/namespaces/{name}/usage).
import { t } from '../i18n.js';
import { api, get, put, del, enc, roleIn } from '../api.js';
import { h, clear, btn, loading, nodata, errText, fmtTime, timeCell, fmtDur, table, breakable, modal, busy, confirmDo, toast, timesIn } from '../ui.js';
import { lines } from '../charts.js';
import { missedPanel } from './deadlines.js';

const USED = '#1f6feb', GUARANTEE = '#2da44e', LIMIT = '#cf222e';
const EVERY = 10000;
const pad = (n) => String(n).padStart(2, '0');
const hms = (v) => { const d = new Date(v); return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`; };
const num = (v) => (Math.round(v * 100) / 100).toString();
const res = (r, unit) => (r ? num(r[unit]) : '—');

export default async function namespacePage(el, { params }) {
  const ns = decodeURIComponent(params[0]);
  const stats = h('div.grid', { id: 'ns-stats' });
  const perCluster = h('div', { id: 'ns-clusters' });
  const charts = h('div.grid2');
  const note = h('p.muted', { id: 'ns-since' });
  const missed = h('div', { id: 'ns-deadlines-box' });
  const late = h('div.panel', { id: 'ns-late' });
  const cals = h('div', { id: 'ns-calendars' }, loading());
  el.append(h('h1', t('ns.title', { ns }), h('span.sp', h('a.btn', { href: '#/jobs' }, t('ns.jobs')), btn(t('refresh'), () => load()))),
    missed, stats, perCluster, charts, late, note, h('h2', t('ns.calendars')), cals);
  // the namespace's business calendars (docs/jobs.md): jobs and workflows
  // name them; its editors create, edit, import (.ics) and delete them
  const editor = roleIn(ns) === 'edit';
  const calPath = (name) => `/namespaces/${enc(ns)}/calendars` + (name ? `/${enc(name)}` : '');
  function loadCalendars() {
    return get(calPath()).then((list) => clear(cals, editor ? h('div.formbar', { style: { paddingLeft: 0 } },
      h('button.btn.primary', { type: 'button', id: 'cal-new', 'data-write': '', onclick: () => editCalendar(null) }, t('ns.calNew')),
      h('button.btn', { type: 'button', id: 'cal-import', 'data-write': '', onclick: () => importCalendar() }, t('ns.calImport'))) : null,
    table([
      { label: t('ns.calName'), render: (c) => h('span.mono', c.name) },
      { label: t('f.timeZone'), render: (c) => c.timeZone || t('jobs.defaultZone') },
      { label: t('ns.calWeekdays'), render: (c) => ((c.weekdays || []).length ? c.weekdays.join(', ') : t('ns.calEveryDay')) },
      { label: t('ns.calExcluded'), cls: 'wrap', render: (c) => (c.exclude || []).map((p) => [p.from, p.to].filter(Boolean).join(' – ') + (p.repeat ? ` (${p.repeat.toLowerCase()})` : '') + (p.summary ? ` ${p.summary}` : '')).join('; ') },
      ...(editor ? [{ label: '', render: (c) => h('span.sp',
        h('button.btn.sm', { type: 'button', 'data-write': '', 'data-cal-edit': c.name, onclick: () => editCalendar(c) }, t('ns.calEdit')),
        h('button.btn.sm.danger', { type: 'button', 'data-write': '', 'data-cal-delete': c.name, onclick: () => deleteCalendar(c.name) }, t('ns.calDelete'))) }] : []),
    ], list, { empty: editor ? t('ns.noCalendarsEdit') : t('ns.noCalendars') }))).catch((e) => clear(cals, h('div.alert.bad', errText(e))));
  }
  const DAYS = ['MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT', 'SUN'];
  const calRow = (label, field, hint) => [h('label', label), h('div', field, hint ? h('div.hint', hint) : null)];
  // the fields a calendar's dialog shares with the .ics import: name, zone, weekdays
  function calFields(c) {
    const name = h('input#cal-name', { type: 'text', value: c ? c.name : '', disabled: !!c, placeholder: 'holidays', autocomplete: 'off' });
    const zone = h('input#cal-zone', { type: 'text', value: (c && c.timeZone) || '', placeholder: 'Asia/Shanghai' });
    const days = DAYS.map((d) => h('label', h('input', { type: 'checkbox', 'data-day': d, checked: !!(c && (c.weekdays || []).includes(d)) }), ' ' + d));
    const box = h('div.fr', ...calRow(t('ns.calName'), name), ...calRow(t('f.timeZone'), zone, t('ns.calZoneHint')),
      ...calRow(t('ns.calWeekdays'), h('div.chk', { style: { flexWrap: 'wrap', gap: '10px' } }, days), t('ns.calDaysHint')));
    const weekdays = () => [...box.querySelectorAll('[data-day]')].filter((x) => x.checked).map((x) => x.dataset.day);
    return { name, zone, box, weekdays };
  }
  function dialog(title, body, okId, fn) {
    const err = h('div');
    const ok = h('button.btn.primary', { type: 'button', id: okId, 'data-confirm': '' }, t('save'));
    const d = modal(title, h('div', body, err), [btn(t('cancel'), () => d.close()), ok]);
    ok.addEventListener('click', async () => {
      clear(err);
      try {
        await busy(ok, fn);
        d.close();
        loadCalendars();
      } catch (e) {
        clear(err, h('div.alert.bad', errText(e)));
      }
    });
  }
  function editCalendar(c) {
    const f = calFields(c);
    const desc = h('input#cal-desc', { type: 'text', value: (c && c.description) || '' });
    const excl = h('textarea#cal-exclude.mono', { rows: 8, spellcheck: 'false' },
      JSON.stringify((c && c.exclude) || [], null, 1));
    f.box.append(...calRow(t('ns.calDesc'), desc), ...calRow(t('ns.calExcluded'), excl, t('ns.calExcludeHint')));
    dialog(c ? t('ns.calEditTitle', { name: c.name }) : t('ns.calNewTitle'), f.box, 'cal-save', async () => {
      let exclude;
      try { exclude = JSON.parse(excl.value.trim() || '[]'); } catch (e) { throw new Error(t('ns.calBadJSON', { err: e.message })); }
      const name = f.name.value.trim();
      if (!name) throw new Error(t('ns.calNoName'));
      const body = { name, description: desc.value.trim() || undefined, timeZone: f.zone.value.trim() || undefined,
        weekdays: f.weekdays(), exclude };
      await put(calPath(name), body);
      toast(t('ns.calSaved', { name }), 'ok');
    });
  }
  function importCalendar() {
    const f = calFields(null);
    const file = h('input#cal-file', { type: 'file', accept: '.ics,text/calendar' });
    f.box.append(...calRow(t('ns.calFile'), file, t('ns.calFileHint')));
    dialog(t('ns.calImportTitle'), f.box, 'cal-save', async () => {
      const name = f.name.value.trim();
      if (!name) throw new Error(t('ns.calNoName'));
      if (!file.files.length) throw new Error(t('ns.calNoFile'));
      const text = await file.files[0].text();
      const query = {};
      if (f.zone.value.trim()) query.timeZone = f.zone.value.trim();
      if (f.weekdays().length) query.weekdays = f.weekdays().join(',');
      await api('PUT', calPath(name), { body: text, query, contentType: 'text/calendar' });
      toast(t('ns.calSaved', { name }), 'ok');
    });
  }
  function deleteCalendar(name) {
    confirmDo(t('ns.calDeleteTitle', { name }), t('ns.calDeleteText'), t('ns.calDelete'), async () => {
      await del(calPath(name));
      toast(t('ns.calDeleted', { name }), 'ok');
      loadCalendars();
    });
  }
  loadCalendars();

  // Runs launched more than a second after they were due, newest first, with why.
  function lateRuns(runs) {
    return [h('h2', { style: { marginTop: 0 } }, t('ns.lateTitle')),
      table([
        { label: t('ns.lateDue'), render: (r) => timeCell(r.due) },
        { label: t('ns.lateJob'), render: (r) => h('a', { href: `#/jobs/${enc(r.jobName)}` }, breakable(r.jobName)) },
        { label: t('ns.lateBy'), render: (r) => fmtDur(new Date(r.launchedAt) - new Date(r.due)) },
        { label: t('ns.lateWhy'), cls: 'wrap', render: (r) => h('span.muted', timesIn(r.why)) },
      ], runs || [], { empty: t('ns.lateNone') })];
  }

  // On Kubernetes: the namespace's Kubernetes namespace and what its ResourceQuota leaves.
  function kube(e) {
    const v = e.closed ? t('ns.kubeClosed') : e.quota ? `${num(e.quota.cpuCount)} CPU / ${num(e.quota.memoryMB)} MB` : t('ns.kubeNoQuota');
    return h('div.stat', { id: 'ns-kube' }, h('div.k', t('ns.kube', { ns: e.kubernetesNamespace || '—' })), h('div.v', v),
      h('div.muted', e.closed || e.quotaName || ''));
  }
  // Its guarantee and limit on each cluster, beside the global ones (docs/clusters.md);
  // nothing when it sets none.
  function clusters(pc) {
    const names = Object.keys(pc || {}).sort();
    if (!names.length) return [];
    const rows = names.map((name) => ({ name, ...pc[name] }));
    return [h('div.panel', h('h2', { style: { marginTop: 0 } }, t('ns.perCluster')), h('p.muted', t('ns.perClusterHint')),
      table([
        { label: t('ns.cluster'), render: (r) => h('span.mono', { 'data-cluster': r.name }, r.name) },
        { label: t('ns.cpuGL'), render: (r) => `${res(r.guarantee, 'cpuCount')} / ${res(r.limit, 'cpuCount')}` },
        { label: t('ns.memGL'), render: (r) => `${res(r.guarantee, 'memoryMB')} / ${res(r.limit, 'memoryMB')}` },
      ], rows))];
  }
  function stat(k, v, id) { return h('div.stat', { id }, h('div.k', k), h('div.v', v)); }
  function chart(title, id, u, unit, scale, axisUnit) {
    const p = h('div.panel', { id }, h('h2', { style: { marginTop: 0 } }, title));
    if (!u.samples.length) { p.append(nodata(t('ns.noSamples'))); return p; }
    const labels = u.samples.map((x) => hms(x.at));
    const flat = (r) => u.samples.map(() => r[unit] / scale);
    const series = [{ name: t('ns.inUse'), color: USED, values: u.samples.map((x) => x[unit] / scale) }];
    if (u.guarantee) series.push({ name: t('ns.guarantee'), color: GUARANTEE, values: flat(u.guarantee) });
    if (u.limit) series.push({ name: t('ns.limit'), color: LIMIT, values: flat(u.limit) });
    p.append(lines(labels, series, { title, unit: axisUnit }));
    return p;
  }

  let busyNow = false;
  async function load() {
    if (busyNow) return;
    busyNow = true;
    try {
      const u = await get(`/namespaces/${enc(ns)}/usage`);
      const rate = u.onTime.rate === undefined ? '—' : (100 * u.onTime.rate).toFixed(1) + ' %';
      clear(stats,
        stat(t('ns.cpu'), `${num(u.inUse.cpuCount)} / ${res(u.guarantee, 'cpuCount')} / ${res(u.limit, 'cpuCount')}`, 'ns-cpu'),
        stat(t('ns.mem'), `${num(u.inUse.memoryMB)} / ${res(u.guarantee, 'memoryMB')} / ${res(u.limit, 'memoryMB')}`, 'ns-mem'),
        stat(t('ns.weight'), num(u.weight), 'ns-weight'),
        h('div.stat', { id: 'ns-ontime' }, h('div.k', t('ns.onTime', { s: u.onTime.boundSeconds })), h('div.v', rate),
          h('div.muted', t('ns.fires', { n: u.onTime.onTime, of: u.onTime.fires }))));
      if (u.engine) stats.append(kube(u.engine));
      clear(perCluster, ...clusters(u.perCluster));
      clear(late, ...lateRuns(u.lateRuns));
      clear(charts, chart(t('ns.cpuChart'), 'ns-chart-cpu', u, 'cpuCount', 1, t('unit.cpu')), chart(t('ns.memChart'), 'ns-chart-mem', u, 'memoryMB', 1, 'MB'));
      note.textContent = u.since ? t('ns.since', { time: fmtTime(u.since), every: u.everySeconds }) : t('ns.noLeader');
      // deadlines missed by the namespace's work still waiting or running
      let rows = [];
      try { rows = await get('/job/deadlines', { namespace: ns }); } catch { rows = []; }
      clear(missed, rows.length ? missedPanel('ns-deadlines', rows, true) : null);
    } catch (e) {
      clear(stats, h('div.alert.bad', errText(e)));
      clear(charts);
    } finally {
      busyNow = false;
    }
  }
  clear(stats, loading());
  await load();
  const timer = setInterval(() => { if (!document.hidden) load(); }, EVERY);
  return { cleanup: () => clearInterval(timer) };
}
