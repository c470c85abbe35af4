// Audit log (admins only): every write to the API, carried out or refused,
// with the search's filters (user, method, target, result, time range),
// sorting and paging, as GET /api/audit answers them.
import { t } from '../i18n.js';
import { api, enc, ApiError } from '../api.js';
import { h, clear, btn, busy, table, pager, loading, tag, errText, timeCell, breakable, apiTime, inputTime, rememberQuery } from '../ui.js';

const METHODS = ['POST', 'PUT', 'DELETE', 'PATCH'];
const FILTERS = ['user', 'method', 'target', 'status'];


const statusTag = (s) => tag(String(s), s < 300 ? 'ok' : s < 500 ? 'warn' : 'bad');
const methodTag = (m) => tag(m, m === 'DELETE' ? 'bad' : 'blue');
function targetLink(r) {
  if (!r.target) return '';
  if (r.targetKind === 'app') return h('a', { href: `#/apps/${enc(r.target)}` }, breakable(r.target));
  if (r.targetKind === 'job') return h('a', { href: `#/jobs/${enc(r.target)}` }, breakable(r.target));
  if (r.targetKind === 'workflow') return h('a', { href: `#/workflows/${enc(r.target)}` }, breakable(r.target));
  return breakable(r.target);
}

export default async function auditPage(el, ctx) {
  const q = ctx.query;
  el.append(h('h1', t('nav.audit')), h('p.muted', { style: { marginTop: '-8px' } }, t('au.intro')));
  const st = { page: +q.get('page') || 1, per_page: +q.get('per_page') || 20, sort: q.get('sort') || 'creationTime', order: q.get('order') || 'desc', f: {} };
  for (const k of [...FILTERS, 'startTime', 'endTime']) st.f[k] = q.get(k) || '';
  const inputs = {
    user: h('input', { type: 'text', size: 12, placeholder: t('au.user') }),
    method: h('select', h('option', { value: '' }, t('au.any')), METHODS.map((m) => h('option', { value: m }, m))),
    target: h('input', { type: 'text', size: 16, placeholder: t('au.target') }),
    status: h('input', { type: 'number', min: 100, max: 599, style: { width: '6em' }, placeholder: '403' }),
    startTime: h('input', { type: 'datetime-local', step: 1, 'aria-label': t('h.from') }),
    endTime: h('input', { type: 'datetime-local', step: 1, 'aria-label': t('h.to') }),
  };
  for (const [k, i] of Object.entries(inputs)) { i.id = 'af-' + k; i.value = k.endsWith('Time') ? inputTime(st.f[k]) : st.f[k]; }
  const label = (text, input) => h('label', { style: { display: 'flex', alignItems: 'center', gap: '6px' } }, h('span.muted', text), input);
  const search = h('button.btn.primary', { type: 'submit', id: 'a-search' }, t('search'));
  const form = h('form.toolbar.panel', { style: { marginBottom: '12px' } },
    label(t('au.user'), inputs.user), label(t('au.method'), inputs.method), label(t('au.target'), inputs.target),
    label(t('au.status'), inputs.status), label(t('h.from'), inputs.startTime), label(t('h.to'), inputs.endTime),
    search, btn(t('reset'), () => { for (const i of Object.values(inputs)) i.value = ''; form.requestSubmit(); }, '', { id: 'a-reset' }));
  const body = h('div', { id: 'audit-table' }, loading());
  el.append(form, body);

  async function load() {
    rememberQuery(`/audit`, st);
    const query = { page: st.page, per_page: st.per_page, sort: st.sort, order: st.order };
    for (const [k, v] of Object.entries(st.f)) if (v) query[k] = v;
    let res;
    try {
      res = await api('GET', '/audit', { query });
    } catch (e) {
      const msg = e instanceof ApiError && e.status === 503 ? t('au.off') : e instanceof ApiError && e.status === 403 ? t('au.adminOnly') : errText(e);
      clear(body, h('div.alert.bad', { id: 'audit-error' }, msg));
      return;
    }
    const onSort = (k) => { if (st.sort === k) st.order = st.order === 'asc' ? 'desc' : 'asc'; else { st.sort = k; st.order = 'desc'; } st.page = 1; load(); };
    const cols = [
      { label: t('au.time'), render: (r) => timeCell(r.creationTime), sortKey: 'creationTime' },
      { label: t('au.user'), render: (r) => [r.user === 'anonymous' ? h('em', t('au.anonymous')) : r.user, r.role ? h('div.muted', t('role.' + r.role, null, r.role)) : null], sortKey: 'user' },
      { label: t('au.address'), cls: 'mono', key: 'address', sortKey: 'address' },
      { label: t('au.method'), render: (r) => methodTag(r.method), sortKey: 'method' },
      // routes, targets and summaries break after / and =, never inside a word
      { label: t('au.route'), cls: 'words mono', render: (r) => breakable(r.route), sortKey: 'route' },
      { label: t('au.target'), cls: 'words', render: targetLink, sortKey: 'target' },
      { label: t('au.summary'), cls: 'words', render: (r) => breakable(r.summary) },
      { label: t('au.status'), render: (r) => statusTag(r.status), sortKey: 'status' },
    ];
    clear(body, table(cols, res.rows || [], { sort: { key: st.sort, order: st.order }, onSort, empty: t('au.none') }),
      pager({ page: st.page, perPage: st.per_page, total: res.total || 0, onPage: (p) => { st.page = p; load(); }, perPageOptions: [10, 20, 50, 100], onPerPage: (n) => { st.per_page = n; st.page = 1; load(); } }));
  }
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    for (const k of FILTERS) st.f[k] = inputs[k].value.trim();
    st.f.startTime = apiTime(inputs.startTime.value);
    st.f.endTime = apiTime(inputs.endTime.value);
    st.page = 1;
    await busy(search, load);
  });
  await load();
}
