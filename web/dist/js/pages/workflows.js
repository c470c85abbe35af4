// Workflows: the list (search on the server, paging), and the actions the
// list and a workflow's page share: trigger (parameter, idempotency key),
// disable/enable, delete. A workflow's page is wfview.js, the JSON editor
// wfedit.js.
import { t } from '../i18n.js';
import { api, post, del, enc } from '../api.js';
import { h, clear, btn, wbtn, busy, table, pager, loading, tag, toast, confirmDo, errText, debounce, fmtTime, fmtZoned } from '../ui.js';

export const RUN_STATES = ['QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED'];
const KIND = { QUEUED: 'warn', RUNNING: 'blue', SUCCEEDED: 'ok', FAILED: 'bad', CANCELLED: 'bad' };
export const runTag = (state, cancelling) => h('span.tag.run' + (KIND[state] ? '.' + KIND[state] : ''), { 'data-run-state': state, title: t('wf.rs.' + state, null, '') },
  state + (cancelling ? ' · ' + t('wf.cancelling') : ''));

export default async function workflows(el, ctx) {
  if (ctx.path === '/workflows/new') return (await import('./wfedit.js')).default(el, ctx, null);
  if (ctx.params[0]) {
    const name = decodeURIComponent(ctx.params[0]);
    if (ctx.params[1] === 'edit') return (await import('./wfedit.js')).default(el, ctx, name);
    return (await import('./wfview.js')).default(el, ctx, name);
  }
  return list(el, ctx);
}

// ---- actions shared by the list and a workflow's page
export function triggerWorkflow(wf, done) {
  const param = h('input#wf-trigger-param', { type: 'text', value: wf.parameter ?? '', style: { width: '100%' } });
  const key = h('input#wf-trigger-key', { type: 'text', placeholder: 'etl-2024-03-01', pattern: '[A-Za-z0-9._:-]{1,128}', style: { width: '100%' } });
  const lbl = (f, text) => h('label', { for: f, style: { display: 'block', margin: '12px 0 4px', fontWeight: 500 } }, text);
  const hint = (text) => h('div.muted', { style: { marginTop: '4px', fontSize: '12.5px' } }, text);
  const body = h('div', lbl('wf-trigger-param', t('wf.param')), param, hint(t('wf.paramHint')),
    lbl('wf-trigger-key', t('wf.key')), key, hint(t('wf.keyHint')));
  return confirmDo(t('wf.triggerTitle', { name: wf.name }), t('wf.triggerText'), t('trigger'), async () => {
    const b = {};
    if (param.value !== '' || wf.parameter !== undefined) b.parameter = param.value;
    if (key.value.trim()) b.idempotencyKey = key.value.trim();
    const r = await post(`/workflow/${enc(wf.name)}/trigger`, b);
    toast(t(r.duplicate ? 'wf.triggeredDup' : 'wf.triggered', { name: wf.name, run: r.runId }), 'ok');
    done && done(r);
  }, { danger: false, body });
}

export function toggleWorkflow(name, disabled, done) {
  const verb = disabled ? 'enable' : 'disable';
  return confirmDo(t('wf.' + verb + 'Title', { name }), t('wf.' + verb + 'Text'), t(verb), async () => {
    await post(`/workflow/${enc(name)}/${verb}`);
    toast(t('wf.' + verb + 'd', { name }), 'ok');
    done && done(!disabled);
  }, { danger: !disabled });
}

export function deleteWorkflow(name, done) {
  return confirmDo(t('wf.deleteTitle', { name }), t('wf.deleteText'), t('delete'), async () => {
    await del(`/workflow/${enc(name)}`);
    toast(t('wf.deleted', { name }), 'ok');
    done && done();
  });
}

// lastRunCell: the latest run's state and when it started, linking to it.
function lastRunCell(w) {
  const r = w.lastRun;
  if (!r) return h('span.muted', t('wf.never'));
  return h('a', { href: `#/workflows/${enc(w.name)}?run=${enc(r.runId)}`, 'data-last-run': r.state }, runTag(r.state, r.cancelling),
    h('div.muted', fmtTime(r.startedAt || r.createdAt)));
}

// ---- list
async function list(el, ctx) {
  const q = ctx.query;
  const st = { q: q.get('q') || '', disabled: q.get('disabled') || '', page: +q.get('page') || 1, per_page: +q.get('per_page') || 20 };
  const search = h('input#wf-search', { type: 'search', placeholder: t('wf.search'), value: st.q, 'aria-label': t('wf.search') });
  const which = h('select#wf-status', { 'aria-label': t('status') }, [['', t('wf.allStatus')], ['false', t('enabled')], ['true', t('disabled')]]
    .map(([v, l]) => h('option', { value: v, selected: v === st.disabled }, l)));
  const count = h('span.muted', { id: 'wf-count' });
  const body = h('div', { id: 'wf-list' }, loading());
  const refresh = btn(t('refresh'), () => busy(refresh, load), '', { id: 'wf-refresh' });
  el.append(h('h1', t('wf.title'), h('span.sp', refresh, wbtn(t('wf.register'), () => ctx.go('/workflows/new'), 'primary', { id: 'register-wf' }))),
    h('p.muted', { style: { marginTop: '-8px' } }, t('wf.intro')),
    h('div.toolbar', search, which, count), body);

  function remember() {
    const p = new URLSearchParams();
    if (st.q) p.set('q', st.q);
    if (st.disabled) p.set('disabled', st.disabled);
    if (st.page > 1) p.set('page', st.page);
    if (st.per_page !== 20) p.set('per_page', st.per_page);
    const s = p.toString();
    history.replaceState(null, '', '#/workflows' + (s ? '?' + s : ''));
  }
  let seq = 0;
  async function load() {
    const my = ++seq;
    remember();
    let res;
    try {
      res = await api('GET', '/workflow/list', { query: { q: st.q.trim(), disabled: st.disabled, page: st.page, per_page: st.per_page } });
    } catch (e) {
      if (my === seq) clear(body, h('div.alert.bad', errText(e)));
      return;
    }
    if (my !== seq) return;
    if (!res.rows.length && res.total && st.page > 1) { st.page = Math.ceil(res.total / st.per_page); load(); return; }
    count.textContent = t('wf.count', { n: res.total });
    clear(body, table([
      { label: t('wf.name'), render: (w) => [h('a', { href: `#/workflows/${enc(w.name)}`, 'data-wf': w.name }, w.name), w.description ? h('div.muted', w.description) : null] },
      { label: t('wf.nodes'), render: (w) => String(w.nodes.length) },
      { label: t('f.cron'), render: (w) => (w.cron ? [h('span.mono', w.cron), w.nextFireTime ? h('div.muted.zoned', { title: fmtTime(w.nextFireTime), 'data-next-fire': w.nextFireTime }, t('wf.next', { time: fmtZoned(w.nextFireTime, w.timeZone) })) : null] : h('span.muted', t('wf.onDemand'))) },
      { label: t('status'), render: (w) => h('span', { 'data-status': w.name }, w.disabled ? tag(t('disabled'), 'warn') : tag(t('enabled'), 'ok')) },
      { label: t('wf.lastRun'), render: lastRunCell },
      { label: t('wf.active'), render: (w) => (w.activeRuns ? t('wf.activeN', { n: w.activeRuns, q: w.queuedRuns }) : '—') },
      { label: '', cls: 'acts', render: (w) => [
        btn(t('view'), () => ctx.go(`/workflows/${enc(w.name)}`), 'sm'),
        w.disabled ? null : wbtn(t('trigger'), () => triggerWorkflow(w, () => load()), 'sm', { 'data-trigger': w.name }),
        wbtn(t('modify'), () => ctx.go(`/workflows/${enc(w.name)}/edit`), 'sm'),
        wbtn(w.disabled ? t('enable') : t('disable'), () => toggleWorkflow(w.name, w.disabled, () => load()), 'sm', { 'data-toggle': w.name }),
        wbtn(t('delete'), () => deleteWorkflow(w.name, () => load()), 'sm danger', { 'data-delete': w.name }),
      ] },
    ], res.rows, { empty: st.q || st.disabled ? t('wf.noMatch') : t('wf.none') }),
    pager({ page: st.page, perPage: st.per_page, total: res.total, onPage: (p) => { st.page = p; load(); },
      perPageOptions: [20, 50, 100], onPerPage: (n) => { st.per_page = n; st.page = 1; load(); } }));
  }
  which.addEventListener('change', () => { st.disabled = which.value; st.page = 1; load(); });
  search.addEventListener('input', debounce(() => { st.q = search.value; st.page = 1; load(); }, 200));
  await load();
}
