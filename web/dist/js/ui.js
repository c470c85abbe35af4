// DOM helpers, toasts, dialogs, tables and paging.
import { t } from './i18n.js';
import { ApiError, canWrite, enc, engineCan } from './api.js';

// h('tag.class#id', {attrs, onclick: fn}, children…)
export function h(sel, attrs, ...kids) {
  const m = sel.match(/^([a-z0-9]+)?((?:[.#][\w-]+)*)$/i);
  const el = document.createElement(m[1] || 'div');
  for (const p of (m[2] || '').match(/[.#][\w-]+/g) || []) {
    if (p[0] === '.') el.classList.add(p.slice(1)); else el.id = p.slice(1);
  }
  if (attrs === null || attrs === undefined) attrs = null;
  else if (typeof attrs !== 'object' || attrs instanceof Node || Array.isArray(attrs)) { kids.unshift(attrs); attrs = null; }
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className += (el.className ? ' ' : '') + v;
    else if (k === 'style' && typeof v === 'object') Object.assign(el.style, v);
    else if (k === 'value' || k === 'checked' || k === 'disabled' || k === 'selected') el[k] = v;
    else el.setAttribute(k, v === true ? '' : v);
  }
  add(el, kids);
  return el;
}
function add(el, kids) {
  for (const k of kids) {
    if (k === undefined || k === null || k === false) continue;
    if (Array.isArray(k)) add(el, k);
    else el.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
}
export const clear = (el, ...kids) => { el.replaceChildren(); add(el, kids); return el; };

// A write action: rendered for admins only (guests see none; the server
// refuses them anyway). data-write marks them for the tests.
export function wbtn(label, onclick, cls = '', attrs = {}) {
  if (!canWrite()) return null;
  return h('button.btn' + (cls ? '.' + cls.split(' ').join('.') : ''), { type: 'button', 'data-write': '', onclick, ...attrs }, label);
}
export const btn = (label, onclick, cls = '', attrs = {}) =>
  h('button.btn' + (cls ? '.' + cls.split(' ').join('.') : ''), { type: 'button', onclick, ...attrs }, label);

// busy(button, promise-returning fn): spinner and disabled while it runs
export async function busy(b, fn) {
  if (b) { b.disabled = true; b.classList.add('busy'); }
  try { return await fn(); } finally { if (b) { b.disabled = false; b.classList.remove('busy'); } }
}

let toasts;
export function toast(msg, kind = 'info', ms = 5000) {
  if (!toasts) { toasts = h('div#toasts', { role: 'status', 'aria-live': 'polite' }); document.body.append(toasts); }
  const el = h('div.toast.' + kind, h('div', msg), h('button.x', { type: 'button', 'aria-label': 'close', onclick: () => el.remove() }, '×'));
  toasts.append(el);
  if (ms && kind !== 'bad') setTimeout(() => el.remove(), ms);
  else if (ms) setTimeout(() => el.remove(), ms * 3);
  return el;
}
export const errText = (e) => (e instanceof ApiError ? e.describe() : (e && e.message) || String(e));
export function showError(e, what) {
  if (e && e.name === 'AbortError') return;
  if (e instanceof ApiError && e.status === 401) return; // the login page says it
  console.error(e);
  toast((what ? what + ' — ' : '') + errText(e), 'bad', 8000);
}

// modal(title, body, buttons) → {close, el}; Escape closes.
export function modal(title, body, buttons = []) {
  const bg = h('div.modal-bg');
  const close = () => { bg.remove(); document.removeEventListener('keydown', onKey); };
  const onKey = (e) => { if (e.key === 'Escape') close(); };
  const bar = h('div.bar', buttons.map((b) => b));
  const m = h('div.modal', { role: 'dialog', 'aria-modal': 'true', 'aria-label': title }, h('h3', title), body, bar);
  bg.append(m);
  bg.addEventListener('mousedown', (e) => { if (e.target === bg) close(); });
  document.addEventListener('keydown', onKey);
  document.body.append(bg);
  const f = m.querySelector('input, textarea, select, button.primary, button.danger');
  if (f) f.focus();
  return { close, el: m };
}

// confirmDo(title, text, okLabel, fn): a dialog whose OK runs fn with a
// spinner; errors are shown inside the dialog and it stays open.
export function confirmDo(title, text, okLabel, fn, { danger = true, body = null } = {}) {
  return new Promise((resolve) => {
    const err = h('div');
    const ok = h('button.btn' + (danger ? '.danger.solid' : '.primary'), { type: 'button', 'data-confirm': '' }, okLabel);
    const cancel = btn(t('cancel'), () => { d.close(); resolve(false); });
    const d = modal(title, h('div', h('p', text), body, err), [cancel, ok]);
    ok.addEventListener('click', async () => {
      clear(err);
      try {
        await busy(ok, fn);
        d.close();
        resolve(true);
      } catch (e) {
        clear(err, h('div.alert.bad', errText(e)));
      }
    });
  });
}

export function debounce(fn, ms) {
  let id;
  return (...a) => { clearTimeout(id); id = setTimeout(() => fn(...a), ms); };
}

// apiTime: a datetime-local value "yyyy-MM-ddTHH:mm[:ss]" as the API's
// "yyyy-MM-dd HH:mm:ss"; inputTime the other way.
export const apiTime = (v) => (v ? v.replace('T', ' ') + (v.length === 16 ? ':00' : '') : '');
export const inputTime = (v) => (v ? v.replace(' ', 'T') : '');

// rememberQuery keeps a search page's filters, page and sort in the
// address (replaceState), so a reload or a shared link shows the same rows.
export function rememberQuery(path, st, defaultPerPage = 20) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(st.f)) if (v) p.set(k, v);
  if (st.page > 1) p.set('page', st.page);
  if (st.per_page !== defaultPerPage) p.set('per_page', st.per_page);
  p.set('sort', st.sort); p.set('order', st.order);
  history.replaceState(null, '', `#${path}?${p}`);
}

const pad = (n) => String(n).padStart(2, '0');
// zoneMark is the browser zone's offset at d: "+08:00", "-04:00", "UTC".
export function zoneMark(d) {
  const m = -d.getTimezoneOffset();
  if (m === 0) return 'UTC';
  const a = Math.abs(m);
  return `${m < 0 ? '-' : '+'}${pad(Math.floor(a / 60))}:${pad(a % 60)}`;
}
// fmtTime: "yyyy-MM-dd HH:mm:ss +08:00" in the browser's zone, the zone
// marked; strings already in the wall-clock form are kept (the page says
// their zone, as the cron previews do).
export function fmtTime(v) {
  if (v === undefined || v === null || v === '') return '';
  if (typeof v === 'string' && /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/.test(v)) return v;
  const d = new Date(v);
  if (isNaN(d) || d.getFullYear() < 1971) return typeof v === 'string' ? v : '';
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())} ${zoneMark(d)}`;
}
// timeCell: fmtTime without the year ("11-25 20:43:45 UTC"), the whole
// time on hover: dense tables fit 1024 px
export function timeCell(v) {
  const full = fmtTime(v);
  if (!full) return '';
  return h('span.when', { title: full }, /^\d{4}-/.test(full) ? full.slice(5) : full);
}
// timesIn: a server's free text with each RFC 3339 time in it shown as
// timeCell shows one (no year, the browser's zone), kept on one line
export function timesIn(text) {
  if (!text) return '';
  return String(text).replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)/g, (m) => {
    const full = fmtTime(m);
    return (/^\d{4}-/.test(full) ? full.slice(5) : full).replace(/ /g, '\u00a0');
  });
}
// fmtZoned shows an RFC 3339 time from the server on its own wall clock,
// marked with zone (an IANA name) or else its offset: a workflow's next
// fire under a cron written for Asia/Shanghai reads
// "2026-01-02 02:00:00 Asia/Shanghai", whatever the browser's zone (put
// fmtTime's, the browser's, in a title beside it).
export function fmtZoned(v, zone) {
  const m = typeof v === 'string' && /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)(?:\.\d+)?(Z|[+-]\d\d:\d\d)$/.exec(v);
  if (!m) return fmtTime(v);
  return `${m[1]} ${m[2]} ${zone || (m[3] === 'Z' ? 'UTC' : m[3])}`;
}
// fmtDur: a duration in milliseconds in words: "850 ms", "12.3 s", "4m 05s", "1h 02m"
export function fmtDur(ms) {
  if (typeof ms !== 'number' || !isFinite(ms)) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1).replace(/\.?0+$/, '')} s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)}m ${pad(s % 60)}s`;
  return `${Math.floor(s / 3600)}h ${pad(Math.floor((s % 3600) / 60))}m`;
}
// waitCell: why a queue entry waits: its reason, who holds what it needs
// and until when (the API's summary, as of the answer), the full message
// on hover
export function waitCell(w) {
  if (!w) return '';
  const kind = w.reason === 'never_fits' || w.reason.endsWith('_disabled') ? 'bad' : 'warn';
  return h('span.waiting', { 'data-reason': w.reason, title: w.message },
    tag(t('wait.' + w.reason), kind),
    w.summary ? h('div.holders', { 'data-holders': (w.holders || []).map((x) => x.jobName).join(' ') }, w.summary) : null,
    h('div.muted.msg', w.message));
}
export const fmtNum = (n, digits = 2) => (typeof n === 'number' ? (Number.isInteger(n) ? String(n) : n.toFixed(digits).replace(/\.?0+$/, '')) : n ?? '');
export function fmtBytes(n) {
  if (typeof n !== 'number') return '';
  const u = ['B', 'KiB', 'MiB', 'GiB']; let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + ' ' + u[i];
}

// breakable(text): the text with a line-break opportunity after each /,
// =, @ and _ (a route, a summary of fields, a job name), so that a narrow
// column breaks it there and never inside a word (td.words).
export function breakable(text) {
  const parts = String(text ?? '').split(/(?<=[/=@_])/);
  const out = [];
  parts.forEach((p, i) => { if (i) out.push(h('wbr')); out.push(p); });
  return h('span', out);
}

// byName orders names as people read them: numbers by value (job_2 before
// job_10), case aside.
const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' });
export const byName = (a, b) => collator.compare(a, b) || (a < b ? -1 : a > b ? 1 : 0);

// table(columns, rows, {empty, sort, cls}) — columns: {key, label, render(row), cls, sortKey}
export function table(cols, rows, opts = {}) {
  const head = h('tr', cols.map((c) => {
    const th = h('th', { class: c.cls || '' }, c.label);
    if (opts.sort && c.sortKey) {
      th.classList.add('sort');
      if (opts.sort.key === c.sortKey) th.classList.add(opts.sort.order === 'desc' ? 'desc' : 'asc');
      th.addEventListener('click', () => opts.onSort(c.sortKey));
    }
    return th;
  }));
  const body = rows.length
    ? rows.map((r) => h('tr', cols.map((c) => h('td', { class: c.cls || '' }, c.render ? c.render(r) : fmtCell(r[c.key])))))
    : [h('tr', h('td', { colspan: cols.length }, h('div.nodata', opts.empty || t('noData'))))];
  return h('div.tw', h('table.t', { class: opts.cls || '' }, h('thead', head), h('tbody', body)));
}
const fmtCell = (v) => (v === undefined || v === null ? '' : typeof v === 'boolean' ? t(v ? 'yes' : 'no') : typeof v === 'object' ? JSON.stringify(v) : String(v));

// pager({page, pages, total, onPage}) — page is 1-based
export function pager({ page, perPage, total, onPage, perPageOptions, onPerPage }) {
  const pages = Math.max(1, Math.ceil(total / perPage));
  const from = total ? (page - 1) * perPage + 1 : 0;
  const to = Math.min(total, page * perPage);
  const nums = new Set([1, pages, page - 2, page - 1, page, page + 1, page + 2].filter((p) => p >= 1 && p <= pages));
  const list = [...nums].sort((a, b) => a - b);
  const kids = [h('span.info', t('pager.info', { from, to, total }))];
  if (perPageOptions) {
    kids.push(h('select', { 'aria-label': t('pager.perPage'), onchange: (e) => onPerPage(+e.target.value) },
      perPageOptions.map((n) => h('option', { value: n, selected: n === perPage }, t('pager.per', { n })))));
  }
  kids.push(btn('‹', () => onPage(page - 1), 'sm', { disabled: page <= 1, 'aria-label': t('pager.prev') }));
  let last = 0;
  for (const p of list) {
    if (p - last > 1) kids.push(h('span.muted', '…'));
    kids.push(btn(String(p), () => onPage(p), 'sm' + (p === page ? ' on' : '')));
    last = p;
  }
  kids.push(btn('›', () => onPage(page + 1), 'sm', { disabled: page >= pages, 'aria-label': t('pager.next') }));
  return h('div.pager', kids);
}

export const loading = () => h('div.loading', t('loading'));
export const nodata = (msg) => h('div.nodata', msg || t('noData'));
export function tag(text, kind) { return h('span.tag' + (kind ? '.' + kind : ''), text); }

// taskState is a running task's state; a DAEMON shard's old task whose move to another
// cluster overlaps (the API's "retiring") is marked so, as ejctl shows it
// ("TASK_RUNNING (retiring)"), with since when and until when its replacement may start.
export function taskState(x, kind) {
  const st = tag(x.state || '', kind);
  if (!x.retiring) return st;
  const title = t('task.retiringTitle', { since: fmtTime(x.retiringSince), startBy: fmtTime(x.startBy) });
  return [st, ' ', h('span.tag.warn.retiring', { title }, t('task.retiring'))];
}

// resultTag is an execution's result: a killed run (job kill, the job
// deleted or rescheduled while it ran) is not a failure.
export function resultTag(r) {
  if (r.success) return tag(t('h.success'), 'ok');
  if (!r.completeTime) return tag(t('h.running'), 'blue');
  return r.result === 'KILLED' ? tag(t('h.killed'), 'warn') : tag(t('h.failure'), 'bad');
}
export function kv(pairs) {
  return h('dl.kv', pairs.filter(Boolean).map(([k, v]) => [h('dt', k), h('dd', v === undefined || v === null || v === '' ? '—' : v)]));
}

// causeCell: a failure cause on one line (the whole text on hover and when
// opened), linking to the task's stderr
export function causeCell(r) {
  if (!r.failureCause) return '';
  const first = String(r.failureCause).split('\n')[0];
  return h('details', { title: r.failureCause },
    h('summary', first.length > 90 ? first.slice(0, 90) + '…' : first),
    h('pre.mono', { style: { whiteSpace: 'pre-wrap', margin: '4px 0' } }, r.failureCause),
    r.taskId && engineCan('logs') ? h('a', { href: `#/logs/${enc(r.taskId)}?stream=stderr` }, 'stderr') : null);
}

