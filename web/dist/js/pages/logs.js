// A task's stdout/stderr: the tail, follow (polls for new bytes), or the
// whole file with download progress.
import { t } from '../i18n.js';
import { api, enc, token } from '../api.js';
import { h, clear, btn, busy, kv, errText, fmtBytes } from '../ui.js';

export default async function logs(el, ctx) {
  const taskId = decodeURIComponent(ctx.params[0]);
  let stream = ctx.query.get('stream') === 'stderr' ? 'stderr' : 'stdout';
  const parts = taskId.split('@-@');
  const jobName = parts[0];
  el.append(h('h1', h('a', { href: '#/history/executions' }, t('nav.history')), ' / ', t('logs.title')),
    h('div.panel', kv([[t('taskId'), h('span.mono', taskId)], [t('f.jobName'), h('a', { href: `#/jobs/${enc(jobName)}` }, jobName)],
      [t('f.shardingItem'), parts[1] ?? '—'], [t('agent'), parts[3] ?? '—']])));
  const tabs = h('nav.tabs');
  const tail = h('select#log-tail', { 'aria-label': t('logs.tail') }, [[4096, '4 KiB'], [65536, '64 KiB'], [1048576, '1 MiB']].map(([v, l]) => h('option', { value: v, selected: v === 65536 }, t('logs.last', { size: l }))));
  const follow = h('input#log-follow', { type: 'checkbox' });
  const info = h('span.muted', { id: 'log-info' });
  const fullBtn = btn(t('logs.full'), () => loadFull(), '', { id: 'log-full' });
  const pre = h('pre.log', { id: 'log', tabindex: 0 });
  const err = h('div');
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
      pre.textContent = c.data || '';
      if (!c.data) pre.append(h('span.muted', t('logs.empty')));
      showInfo(c.offset, (c.data || '').length);
      pre.scrollTop = pre.scrollHeight;
    } catch (e) {
      pre.textContent = '';
      clear(err, h('div.alert.bad', errText(e)));
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
    } catch (e) { clear(err, h('div.alert.bad', errText(e))); }
  }
  // the whole file, read as a stream so the person sees how far it got
  async function loadFull() {
    clear(err);
    await busy(fullBtn, async () => {
      try {
        const res = await fetch(`/api/job/logs/${enc(taskId)}?stream=${stream}&full=true`, { credentials: 'omit', headers: token() ? { Authorization: 'Bearer ' + token() } : {} });
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
        pre.textContent = text;
        showInfo(0, got);
      } catch (e) { clear(err, h('div.alert.bad', errText(e))); }
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
