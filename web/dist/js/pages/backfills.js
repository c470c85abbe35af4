// Backfills of a job or a workflow (GET/POST /api/job/backfills): the job
// and workflow pages' panel listing them with their progress,
// pause/resume/cancel, and the form that starts one over a past range.
// target is a job ({jobName}) or a workflow ({workflowName}).
import { t } from '../i18n.js';
import { get, post, enc, canWrite } from '../api.js';
import { h, clear, wbtn, table, tag, toast, confirmDo, errText, fmtTime } from '../ui.js';

const STATE_TAG = { RUNNING: 'blue', PAUSED: 'warn', CANCELLED: 'bad', DONE: 'ok' };

const by = (x) => (x.workflowName ? { workflowName: x.workflowName } : { jobName: x.jobName });

// backfillPanel fills box with the job's (workflow's) backfills and returns a refresh.
export function backfillPanel(box, job) {
  async function refresh() {
    let rows;
    try { rows = await get('/job/backfills', by(job)); } catch (e) { clear(box, h('div.alert.bad', errText(e))); return; }
    const act = (b, action) => wbtn(t('bf.' + action), async () => {
      try { await post(`/job/backfills/${enc(b.id)}/${action}`); toast(t('bf.done.' + action, { id: b.id }), 'ok'); } catch (e) { toast(errText(e), 'bad'); }
      refresh();
    }, action === 'cancel' ? 'danger sm' : 'sm', { 'data-backfill-action': action });
    clear(box, table([
      { label: 'ID', cls: 'mono', key: 'id' },
      { label: t('bf.range'), cls: 'nowrap', render: (b) => `${fmtTime(b.from)} – ${fmtTime(b.to)}` },
      { label: t('state'), render: (b) => tag(t('bf.state.' + b.state), STATE_TAG[b.state] || '') },
      { label: t('bf.progress'), render: (b) => h('span', { 'data-progress': JSON.stringify(b.progress) },
        t('bf.counts', { done: b.progress.done, running: b.progress.running, remaining: b.progress.remaining, failed: b.progress.failed, total: b.progress.total })) },
      { label: '', render: (b) => [b.state === 'RUNNING' ? act(b, 'pause') : null, b.state === 'PAUSED' ? act(b, 'resume') : null,
        b.state === 'RUNNING' || b.state === 'PAUSED' ? act(b, 'cancel') : null] },
    ], rows, { empty: t('bf.none'), cls: 'dense' }));
  }
  refresh();
  return refresh;
}

// startBackfill asks for a past range and starts a backfill of job.
export function startBackfill(job, done) {
  const now = new Date();
  const hourAgo = new Date(now.getTime() - 3600e3);
  const local = (d) => new Date(d.getTime() - d.getTimezoneOffset() * 60e3).toISOString().slice(0, 16);
  const from = h('input#backfill-from', { type: 'datetime-local', value: local(hourAgo) });
  const to = h('input#backfill-to', { type: 'datetime-local', value: local(now) });
  const conc = h('input#backfill-concurrency', { type: 'number', min: 1, max: 64, value: 1, style: { width: '6em' } });
  const lbl = (f, s) => h('label', { for: f, style: { display: 'block', margin: '10px 0 4px', fontWeight: 500 } }, s);
  const body = h('div', lbl('backfill-from', t('bf.from')), from, lbl('backfill-to', t('bf.to')), to, lbl('backfill-concurrency', t('bf.concurrency')), conc,
    h('div.hint.muted', { style: { marginTop: '6px', fontSize: '12.5px' } }, t(job.workflowName ? 'bf.hintWf' : 'bf.hint')));
  return confirmDo(t('bf.title', { name: job.workflowName || job.jobName }), t(job.workflowName ? 'bf.textWf' : 'bf.text'), t('bf.start'), async () => {
    const b = await post('/job/backfills', { ...by(job), from: new Date(from.value).toISOString(), to: new Date(to.value).toISOString(), concurrency: +conc.value || 1 });
    toast(t('bf.started', { id: b.id, n: b.progress.total }), 'ok');
    done && done();
  }, { danger: false, body });
}

export const canBackfillWorkflow = (w) => !!w.cron && !w.disabled && canWrite();

export const canBackfill = (j) => j.jobExecutionType === 'TRANSIENT' && (j.cron || (j.crons || []).length) && canWrite();
