// History: execution log and status traces with the API's filters, sorting
// and paging. Absent endpoints show "no data".
import { t } from '../i18n.js';
import { api, enc, ApiError } from '../api.js';
import { h, clear, btn, busy, table, pager, loading, tag, resultTag, errText, fmtTime, timeCell, fmtDur, apiTime, inputTime, rememberQuery, causeCell, timesIn } from '../ui.js';

const STATES = ['TASK_STAGING', 'TASK_RUNNING', 'TASK_FINISHED', 'TASK_FAILED', 'TASK_KILLED', 'TASK_LOST', 'TASK_ERROR', 'TASK_DROPPED', 'TASK_GONE', 'TASK_UNREACHABLE', 'TASK_UNKNOWN'];


export default async function historyPage(el, ctx) {
  const kind = ctx.params[0] || 'executions';
  const q = ctx.query;
  el.append(h('h1', t('nav.history')),
    h('nav.tabs', h('a', { href: '#/history/executions', class: kind === 'executions' ? 'on' : '', id: 'tab-executions' }, t('h.executions')),
      h('a', { href: '#/history/traces', class: kind === 'traces' ? 'on' : '', id: 'tab-traces' }, t('h.traces'))));
  const st = {
    page: +q.get('page') || 1, per_page: +q.get('per_page') || 20,
    sort: q.get('sort') || (kind === 'executions' ? 'startTime' : 'creationTime'), order: q.get('order') || 'desc',
    f: {},
  };
  const filters = kind === 'executions' ? ['jobName', 'taskId', 'triggeredBy', 'result'] : ['jobName', 'taskId', 'slaveId', 'source', 'executionType', 'state'];
  for (const k of [...filters, 'startTime', 'endTime']) st.f[k] = q.get(k) || '';
  const inputs = {};
  for (const k of filters) {
    if (k === 'result') inputs[k] = h('select', h('option', { value: '' }, t('h.any')), h('option', { value: 'SUCCEEDED' }, t('h.success')), h('option', { value: 'FAILED' }, t('h.failure')), h('option', { value: 'KILLED' }, t('h.killed')));
    else if (k === 'state') inputs[k] = h('select', h('option', { value: '' }, t('h.any')), STATES.map((s) => h('option', { value: s }, s)));
    else if (k === 'source') inputs[k] = h('select', h('option', { value: '' }, t('h.any')), ['CLOUD_SCHEDULER', 'CLOUD_EXECUTOR', 'LITE_EXECUTOR'].map((s) => h('option', { value: s }, s)));
    else if (k === 'executionType') inputs[k] = h('select', h('option', { value: '' }, t('h.any')), ['READY', 'FAILOVER'].map((s) => h('option', { value: s }, s)));
    else inputs[k] = h('input', { type: 'text', placeholder: t('h.f.' + k), size: k === 'taskId' ? 28 : 16 });
    inputs[k].value = st.f[k];
    inputs[k].id = 'hf-' + k;
  }
  inputs.startTime = h('input#hf-startTime', { type: 'datetime-local', step: 1, value: inputTime(st.f.startTime), 'aria-label': t('h.from') });
  inputs.endTime = h('input#hf-endTime', { type: 'datetime-local', step: 1, value: inputTime(st.f.endTime), 'aria-label': t('h.to') });
  const search = h('button.btn.primary', { type: 'submit', id: 'h-search' }, t('search'));
  const form = h('form.toolbar.panel', { style: { marginBottom: '12px' } },
    filters.map((k) => h('label', { style: { display: 'flex', alignItems: 'center', gap: '6px' } }, h('span.muted', t('h.f.' + k)), inputs[k])),
    h('label', { style: { display: 'flex', alignItems: 'center', gap: '6px' } }, h('span.muted', t('h.from')), inputs.startTime),
    h('label', { style: { display: 'flex', alignItems: 'center', gap: '6px' } }, h('span.muted', t('h.to')), inputs.endTime),
    search, btn(t('reset'), () => { for (const k in inputs) inputs[k].value = ''; form.requestSubmit(); }));
  const body = h('div', { id: 'history-table' }, loading());
  el.append(form, body);

  async function load() {
    rememberQuery(`/history/${kind}`, st);
    const query = { page: st.page, per_page: st.per_page, sort: st.sort, order: st.order };
    for (const [k, v] of Object.entries(st.f)) if (v) query[k] = v;
    let res;
    try {
      res = await api('GET', kind === 'executions' ? '/job/events/executions' : '/job/events/statusTraces', { query });
    } catch (e) {
      if (e instanceof ApiError && (e.status === 404 || e.status === 501)) { clear(body, h('div.panel', h('div.nodata', t('h.unavailable')))); return; }
      clear(body, h('div.alert.bad', errText(e)));
      return;
    }
    const rows = res && Array.isArray(res.rows) ? res.rows : Array.isArray(res) ? res : [];
    const total = res && typeof res.total === 'number' ? res.total : rows.length;
    const sort = { key: st.sort, order: st.order };
    const onSort = (k) => { if (st.sort === k) st.order = st.order === 'asc' ? 'desc' : 'asc'; else { st.sort = k; st.order = 'desc'; } st.page = 1; load(); };
    const job = (r) => h('a', { href: `#/jobs/${enc(r.jobName)}` }, r.jobName);
    const task = (r) => (r.taskId ? h('a.mono', { href: `#/logs/${enc(r.taskId)}`, title: r.taskId }, r.taskId) : '');
    // fits 1024 px: the row's id and the host's address on hover, long
    // values clipped with the whole on hover
    // the result opens the task's log (the task id column is for wide screens)
    const result = (r) => h('a', { href: `#/logs/${enc(r.taskId)}`, title: r.taskId },
      resultTag(r));
    const cols = kind === 'executions' ? [
      { label: t('f.jobName'), cls: 'clip', render: (r) => h('span', { title: `${r.jobName} (ID ${r.id})` }, job(r)), sortKey: 'jobName' },
      { label: t('taskId'), cls: 'clip wide-only', render: task, sortKey: 'taskId' },
      { label: t('hostname'), cls: 'clip short wide-only', render: (r) => h('span', { title: r.ip || '' }, r.hostname), sortKey: 'hostname' },
      { label: t('f.shardingItem'), key: 'shardingItem', sortKey: 'shardingItem' },
      { label: t('h.source'), cls: 'wide-only', render: (r) => h('span', { title: r.source }, r.source), sortKey: 'source' },
      { label: t('h.triggeredBy'), cls: 'clip short', render: (r) => h('span', { title: `${r.triggeredBy || '—'} (${r.source})${r.nominalAt ? `\n${t('h.nominalAt')}: ${fmtTime(r.nominalAt)}` : ''}` }, r.triggeredBy || '—'), sortKey: 'triggeredBy' },
      { label: t('h.result'), render: result, sortKey: 'result' },
      { label: t('h.failureCause'), cls: 'cause', render: (r) => causeCell(r) },
      { label: t('h.startTime'), render: (r) => timeCell(r.startTime), sortKey: 'startTime' },
      { label: t('h.duration'), cls: 'num', render: (r) => (r.durationMs === null || r.durationMs === undefined ? '' : h('span', { title: fmtTime(r.completeTime) }, fmtDur(r.durationMs))) },
    ] : [
      { label: t('f.jobName'), cls: 'clip', render: (r) => h('span', { title: `${r.jobName} (ID ${r.id})` }, job(r)), sortKey: 'jobName' },
      // the original task (the one a failover replaced) on the task's hover
      { label: t('taskId'), cls: 'clip', render: (r) => (r.taskId ? h('a.mono', { href: `#/logs/${enc(r.taskId)}`,
        title: r.originalTaskId ? `${r.taskId}\n${t('h.originalTaskId')}: ${r.originalTaskId}` : r.taskId }, r.taskId) : ''), sortKey: 'taskId' },
      { label: t('agent'), cls: 'clip short wide-only', render: (r) => h('span', { title: r.slaveId }, r.slaveId), sortKey: 'slaveId' },
      { label: t('h.source'), cls: 'wide-only', render: (r) => h('span', { title: r.source }, r.source), sortKey: 'source' },
      { label: t('h.executionType'), cls: 'clip short', render: (r) => h('span', { title: r.executionType }, r.executionType), sortKey: 'executionType' },
      { label: t('f.shardingItem'), key: 'shardingItems', sortKey: 'shardingItems' },
      { label: t('state'), render: (r) => tag(r.state, /FINISHED|RUNNING/.test(r.state) ? 'ok' : /FAIL|ERROR|LOST|KILL/.test(r.state) ? 'bad' : 'blue'), sortKey: 'state' },
      { label: t('h.message'), cls: 'cause', render: (r) => h('span', { title: r.message || '' }, timesIn(r.message)) },
      { label: t('h.creationTime'), render: (r) => timeCell(r.creationTime), sortKey: 'creationTime' },
    ];
    clear(body, table(cols, rows, { sort, onSort, empty: t('noData'), cls: 'dense' }),
      pager({ page: st.page, perPage: st.per_page, total, onPage: (p) => { st.page = p; load(); }, perPageOptions: [10, 20, 50, 100], onPerPage: (n) => { st.per_page = n; st.page = 1; load(); } }));
  }
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    for (const k of filters) st.f[k] = inputs[k].value.trim();
    st.f.startTime = apiTime(inputs.startTime.value);
    st.f.endTime = apiTime(inputs.endTime.value);
    st.page = 1;
    await busy(search, load);
  });
  await load();
}
