// A task's stdout/stderr: the tail, follow (polls for new bytes), or the
// whole file with download progress. Above it, how the task stands or
// ended (GET /api/job/tasks/{taskId}): state, exit code and failure cause;
// a failed task opens on its stderr.
import { t } from '../i18n.js';
import { api, enc, token, optional, engineCan, knownCaps } from '../api.js';
import { h, clear, btn, busy, kv, tag, errText, fmtBytes, fmtTime } from '../ui.js';

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
        const res = await fetch(`${location.origin}/api/job/logs/${enc(taskId)}?stream=${stream}&full=true`, { credentials: 'omit', headers: token() ? { Authorization: 'Bearer ' + token() } : {} });
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
  await loadTail();
  return { cleanup: () => clearInterval(timer) };
}
