// Missed deadlines (GET /api/job/deadlines): the panel a job's page and
// its namespace's page show while work that missed one waits or runs.
import { t } from '../i18n.js';
import { enc } from '../api.js';
import { h, tag, fmtTime } from '../ui.js';

// missedPanel lists deadlines missed by work still waiting or running
// (GET /api/job/deadlines): on a job's page and its namespace's.
export function missedPanel(id, rows, withJob) {
  return h('div.alert.bad', { id },
    h('b', t('deadline.missed', { n: rows.length })),
    h('ul', { style: { margin: '4px 0 0', paddingLeft: '20px' } }, rows.map((a) => h('li', { 'data-kind': a.kind },
      tag(t('deadline.kind.' + a.kind), 'warn'), ' ',
      withJob && a.workflow ? [h('a', { href: `#/workflows/${enc(a.workflow)}` }, a.workflow), ' '] : null,
      withJob && !a.workflow ? [h('a', { href: `#/jobs/${enc(a.jobName)}` }, a.jobName), ' '] : null,
      t('deadline.due', { time: fmtTime(a.due) }), ' — ', a.message))));
}

