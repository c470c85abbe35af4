// A task's stdout/stderr: the tail, follow (polls for new bytes), or the
// whole file with download progress. Above it, how the task stands or
// ended (GET /api/job/tasks/{taskId}): state, exit code and failure cause;
// a failed task opens on its stderr. Below it, the task's files: its
// work/ directory ($ELASTICJOB_TASK_DIR), browsed and downloaded in the
// console's namespace.
import { t } from '../i18n.js';
import { api, apiURL, enc, token, optional, engineCan, knownCaps, ApiError } from '../api.js';
import { h, clear, btn, busy, kv, tag, errText, fmtBytes, fmtTime, table } from '../ui.js';

const FAILED = /FAILED|ERROR|LOST|KILLED|DROPPED|GONE/;

// taskState renders GET /api/job/tasks/{taskId}.
function taskState(v) {
  if (!v) return h('div.muted', { id: 'task-state', 'data-state': '' }, t('logs.unknown'));
  const failed = v.success === false || FAILED.test(v.state || '');
  const kind = failed ? 'bad' : v.running ? 'blue' : v.success ? 'ok' : '';
  return h('div', { id: 'task-state', 'data-state': v.state || '' },
    h('div.taskstate',
      tag(v.state || (v.success ? 'TASK_FINISHED' : '—'), kind),
      v.exitCode !== null && v.exitCode !== undefined ? h('span', { id: 'task-exit' }, `${t('logs.exitCode')} `, h('b', String(v.exitCode))) : null,
      v.signal ? h('span', { id: 'task-signal' }, `${t('logs.signal')} `, h('b', v.signal)) : null,
      v.startTime ? h('span.muted', `${t('logs.started')} ${fmtTime(v.startTime)}`) : null,
      v.completeTime ? h('span.muted', `${t('logs.ended')} ${fmtTime(v.completeTime)}`) : null),
    v.failureCause || (failed && v.message) ? h('pre.cause', { id: 'task-cause', title: t('logs.cause') }, v.failureCause || v.message) : null);
}

export default async function logs(el, ctx) {
  const taskId = decodeURIComponent(ctx.params[0]);
  const parts = taskId.split('@-@');
  const jobName = parts[0];
  let info0 = null;
  try { info0 = await optional(`/job/tasks/${enc(taskId)}`); } catch { info0 = null; }
  const failed = info0 && (info0.success === false || FAILED.test(info0.state || ''));
  let stream = ctx.query.get('stream') || (failed ? 'stderr' : 'stdout');
  if (stream !== 'stderr') stream = 'stdout';
  el.append(h('h1', h('a', { href: '#/history/executions' }, t('nav.history')), ' / ', t('logs.title')),
    h('div.panel', kv([[t('taskId'), h('span.mono', taskId)], [t('f.jobName'), h('a', { href: `#/jobs/${enc(jobName)}` }, jobName)],
      [t('f.shardingItem'), parts[1] ?? '—'], [t('agent'), parts[3] ?? '—'], [t('state'), taskState(info0)]])));
  // an engine that does not serve logs: the task's state above, and why there is no log
  if (!engineCan('logs')) {
    el.append(h('div.nodata', { id: 'no-logs' }, t('logs.noLogs', { engine: knownCaps().name })));
    return null;
  }
  const tabs = h('nav.tabs');
  const tail = h('select#log-tail', { 'aria-label': t('logs.tail') }, [[4096, '4 KiB'], [65536, '64 KiB'], [1048576, '1 MiB']].map(([v, l]) => h('option', { value: v, selected: v === 65536 }, t('logs.last', { size: l }))));
  const follow = h('input#log-follow', { type: 'checkbox' });
  const info = h('span.muted', { id: 'log-info' });
  const fullBtn = btn(t('logs.full'), () => loadFull(), '', { id: 'log-full' });
  const pre = h('pre.log', { id: 'log', tabindex: 0 });
  const err = h('div');
  // an error takes the place of an empty pane (a pane with text keeps it)
  const fail = (e) => { clear(err, h('div.alert.bad', { id: 'log-error' }, errText(e))); if (!pre.textContent) pre.hidden = true; };
  el.append(tabs, h('div.toolbar', tail, h('label', follow, ' ', t('logs.follow')), btn(t('refresh'), () => loadTail(), '', { id: 'log-refresh' }), fullBtn, h('span.grow'), info), err, pre);

  let size = 0, timer = null;
  function drawTabs() {
    clear(tabs, ['stdout', 'stderr'].map((s) => h('a', { href: `#/logs/${enc(taskId)}?stream=${s}`, class: s === stream ? 'on' : '', 'data-stream': s,
      onclick: (e) => { e.preventDefault(); stream = s; history.replaceState(null, '', `#/logs/${enc(taskId)}?stream=${s}`); drawTabs(); loadTail(); } }, s)));
  }
  function showInfo(from, len) { info.textContent = t('logs.info', { from: fmtBytes(from), to: fmtBytes(from + len), size: fmtBytes(size) }); }
  async function loadTail() {
    clear(err);
    try {
      const c = await api('GET', `/job/logs/${enc(taskId)}`, { query: { stream, tail: tail.value } });
      size = c.size;
      pre.hidden = false;
      pre.textContent = c.data || '';
      if (!c.data) pre.append(h('span.muted', t('logs.empty')));
      showInfo(c.offset, (c.data || '').length);
      pre.scrollTop = pre.scrollHeight;
    } catch (e) {
      pre.textContent = '';
      fail(e);
    }
  }
  async function poll() {
    try {
      const c = await api('GET', `/job/logs/${enc(taskId)}`, { query: { stream, offset: size, length: 1 << 20 } });
      if (c.data) {
        const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 8;
        if (!size) pre.textContent = '';
        pre.append(c.data);
        if (atEnd) pre.scrollTop = pre.scrollHeight;
      }
      size = c.offset + (c.data || '').length;
      showInfo(0, size);
    } catch (e) { fail(e); }
  }
  // the whole file, read as a stream so the person sees how far it got
  async function loadFull() {
    clear(err);
    await busy(fullBtn, async () => {
      try {
        const res = await fetch(apiURL(`/job/logs/${enc(taskId)}`, { stream, full: 'true' }), { credentials: 'omit', headers: token() ? { Authorization: 'Bearer ' + token() } : {} });
        if (!res.ok) {
          let m = res.statusText;
          try { m = (await res.json()).message || m; } catch { /* keep status */ }
          throw new Error(`${res.status}: ${m}`);
        }
        const reader = res.body.getReader();
        const dec = new TextDecoder();
        let got = 0, text = '';
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          got += value.length;
          text += dec.decode(value, { stream: true });
          info.textContent = t('logs.loading', { size: fmtBytes(got) });
        }
        text += dec.decode();
        size = got;
        pre.hidden = false;
        pre.textContent = text;
        showInfo(0, got);
      } catch (e) { fail(e); }
    });
  }
  follow.addEventListener('change', () => {
    clearInterval(timer);
    if (follow.checked) timer = setInterval(() => { if (!document.hidden) poll(); }, 2000);
  });
  tail.addEventListener('change', loadTail);
  drawTabs();
  const files = filesPanel(taskId);
  el.append(files.el);
  await Promise.all([loadTail(), files.load('work')]);
  return { cleanup: () => clearInterval(timer) };
}

// fetchOK fetches an API address with the session's token, throwing the
// server's message for an error answer.
async function fetchOK(url) {
  const res = await fetch(url, { credentials: 'omit', headers: token() ? { Authorization: 'Bearer ' + token() } : {} });
  if (!res.ok) {
    let m = res.statusText;
    try { m = (await res.json()).message || m; } catch { /* keep status */ }
    throw new ApiError(res.status, m, url);
  }
  return res;
}

// filesPanel lists a directory of the task's own (work/ first: what the
// task wrote to $ELASTICJOB_TASK_DIR; its root holds stdout, stderr and
// work), directories first, and saves a file the person picks.
function filesPanel(taskId) {
  const where = h('div.toolbar', { id: 'files-path' });
  const list = h('div', { id: 'task-files' });
  const err = h('div');
  const el = h('section.panel', { id: 'files-panel' }, h('h2', t('files.title')), h('p.muted', t('files.hint')), where, err, list);
  const base = (p) => p.split('/').pop();
  async function load(dir) {
    clear(err);
    list.removeAttribute('data-ready');
    const segs = dir ? dir.split('/') : [];
    clear(where, h('a', { href: '#', 'data-dir': '', onclick: (e) => { e.preventDefault(); load(''); } }, t('files.root')),
      segs.map((s, i) => [' / ', h('a', { href: '#', 'data-dir': segs.slice(0, i + 1).join('/'),
        onclick: (e) => { e.preventDefault(); load(segs.slice(0, i + 1).join('/')); } }, s)]));
    let v;
    try {
      v = await api('GET', `/job/tasks/${enc(taskId)}/files`, { query: dir ? { path: dir } : {} });
    } catch (e) {
      if (dir === 'work' && e instanceof ApiError && e.status === 404) return load(''); // it wrote nothing there: its directory
      clear(list);
      clear(err, h('div.alert.bad', { id: 'files-error' }, errText(e)));
      list.setAttribute('data-ready', '');
      return;
    }
    const isDir = (f) => (f.mode || '')[0] === 'd';
    const rows = (v.files || []).slice().sort((a, b) => (isDir(b) - isDir(a)) || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    clear(list, table([
      { label: t('files.name'), render: (f) => (isDir(f)
        ? h('a', { href: '#', 'data-dir': f.path, onclick: (e) => { e.preventDefault(); load(f.path); } }, base(f.path) + '/')
        : h('span.mono', { 'data-file': f.path }, base(f.path))) },
      { label: t('files.size'), cls: 'num', render: (f) => (isDir(f) ? '' : fmtBytes(f.size)) },
      { label: t('files.mtime'), render: (f) => (f.mtime ? fmtTime(f.mtime) : '') },
      { label: '', render: (f) => ((f.mode || '')[0] === '-'
        ? btn(t('files.download'), (e) => save(f, e.currentTarget), 'sm', { 'data-download': f.path }) : '') },
    ], rows, { empty: t('files.none') }));
    list.setAttribute('data-ready', '');
  }
  async function save(f, b) {
    clear(err);
    await busy(b, async () => {
      try {
        const res = await fetchOK(apiURL(`/job/tasks/${enc(taskId)}/files/download`, { path: f.path }));
        const url = URL.createObjectURL(await res.blob());
        const a = h('a', { href: url, download: base(f.path), hidden: true });
        document.body.append(a);
        a.click();
        a.remove();
        setTimeout(() => URL.revokeObjectURL(url), 60000);
      } catch (e) { clear(err, h('div.alert.bad', { id: 'files-error' }, errText(e))); }
    });
  }
  return { el, load };
}
