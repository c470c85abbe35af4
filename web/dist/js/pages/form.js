// Form rows with inline validation and server errors placed on the field
// they name.
import { t } from '../i18n.js';
import { h, clear, errText } from '../ui.js';

export function row(field, label, input, { required, hint, extra } = {}) {
  const err = h('div.err', { 'data-err': field });
  const r = h('div.fr', { 'data-field': field },
    h('label', { for: 'f-' + field }, label, required ? h('span.req', '*') : null),
    h('div', input, hint ? h('div.hint', hint) : null, err, extra || null));
  input.id = input.id || 'f-' + field;
  input.name = field;
  return r;
}

export function setErr(form, field, msg) {
  const r = form.querySelector(`.fr[data-field="${field}"]`);
  if (!r) return false;
  r.classList.toggle('bad', !!msg);
  clear(r.querySelector('.err'), msg || '');
  return true;
}

// the server names the field first: "cpuCount must be at least 0.001",
// "cron \"…\": hours: …", "Job 'x' already existed."
export function serverErr(form, e, alertBox, fields) {
  const msg = e && e.message ? e.message : String(e);
  const m = msg.match(/^([A-Za-z]+)\b/);
  let placed = false;
  if (m && fields.includes(m[1])) placed = setErr(form, m[1], msg);
  if (/already exist/i.test(msg)) placed = setErr(form, fields[0], msg) || placed;
  clear(alertBox, h('div.alert.bad', { role: 'alert', id: 'form-error' }, errText(e)));
  if (placed) { const f = form.querySelector('.fr.bad input, .fr.bad select, .fr.bad textarea'); if (f) f.focus(); }
  else alertBox.scrollIntoView({ block: 'nearest' });
}

export const NAME_RE = /^[A-Za-z0-9._-]+$/;
export function checkName(v, field) {
  if (!v) return t('v.required', { field });
  if (v.length > 100) return t('v.nameLen', { field });
  if (v === '.' || v === '..' || !NAME_RE.test(v)) return t('v.name', { field });
  return '';
}
export function num(v) { return v === '' || v === null || v === undefined ? NaN : Number(v); }

// validZone: an IANA zone name the browser knows (empty is fine: the
// scheduler's time_zone); the scheduler has the last word.
export function validZone(tz) {
  if (!tz) return true;
  try { new Intl.DateTimeFormat('en-US', { timeZone: tz }); return true; } catch { return false; }
}
