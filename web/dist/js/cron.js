// Quartz cron for the console's preview, a port of jobs/cron (Parse and the
// wall-clock search of Next). Seconds first, 6 or 7 fields, * , - / ?,
// L, L-n, LW, nW, nL, n#k, JAN-DEC, SUN-SAT (1=SUN), year 1970-2199 or ?.
// Fire times are computed on the wall clock of the job's time zone; unlike
// the server it does not model DST gaps and overlaps (a skipped wall time
// is listed as it reads on the clock). The server's validation stands.
export const MIN_YEAR = 1970, MAX_YEAR = 2199, MAX_LEN = 1024;
const FIELDS = ['seconds', 'minutes', 'hours', 'day-of-month', 'month', 'day-of-week', 'year'];
const BOUNDS = [[0, 59], [0, 59], [0, 23], [1, 31], [1, 12], [1, 7], [MIN_YEAR, MAX_YEAR]];
const MONTHS = { JAN: 1, FEB: 2, MAR: 3, APR: 4, MAY: 5, JUN: 6, JUL: 7, AUG: 8, SEP: 9, OCT: 10, NOV: 11, DEC: 12 };
const DAYS = { SUN: 1, MON: 2, TUE: 3, WED: 4, THU: 5, FRI: 6, SAT: 7 };
const [S, MI, H, DOM, MON, DOW, Y] = [0, 1, 2, 3, 4, 5, 6];

export class CronError extends Error {
  constructor(expr, field, message) {
    super(field ? `cron "${expr}": ${field}: ${message}` : `cron "${expr}": ${message}`);
    this.field = field;
    this.detail = message;
  }
}

const atoi = (s) => (/^\d{1,6}$/.test(s) ? parseInt(s, 10) : null);

function parseValue(f, text) {
  const [lo, hi] = BOUNDS[f];
  if (text === '') return [0, `missing value (expected ${lo}-${hi})`];
  if (text[0] >= 'A' && text[0] <= 'Z') {
    const names = f === MON ? MONTHS : f === DOW ? DAYS : null;
    if (!names) return [0, `invalid value "${text}" (expected a number ${lo}-${hi})`];
    if (!(text in names)) return [0, `unknown name "${text}" (expected ${f === MON ? '1-12 or JAN-DEC' : '1-7 or SUN-SAT'})`];
    return [names[text], ''];
  }
  const v = atoi(text);
  if (v === null) {
    if (/^\d+$/.test(text)) return [0, `value ${text} out of range ${lo}-${hi}`];
    return [0, `invalid value "${text}" (expected a number ${lo}-${hi})`];
  }
  if (v < lo || v > hi) return [0, `value ${v} out of range ${lo}-${hi}`];
  return [v, ''];
}

export function parse(expr) {
  if (expr.length > MAX_LEN) throw new CronError(expr.slice(0, 32) + '...', '', `expression is ${expr.length} characters long; at most ${MAX_LEN} allowed`);
  const fields = expr.trim().split(/\s+/).filter(Boolean);
  if (!fields.length) throw new CronError(expr, '', 'empty expression; expected 6 or 7 fields: seconds minutes hours day-of-month month day-of-week [year]');
  if (fields.length < 6 || fields.length > 7) throw new CronError(expr, '', `expected 6 or 7 fields (seconds minutes hours day-of-month month day-of-week [year]), got ${fields.length}`);
  const s = {
    sets: [new Set(), new Set(), new Set(), new Set(), new Set(), new Set(), new Set()],
    domLast: new Set(), domLW: false, domNearest: new Set(), dowLast: new Set(), dowNth: new Set(), yearAll: false,
  };
  fields.forEach((text, i) => {
    const msg = parseField(s, i, text.toUpperCase());
    if (msg) throw new CronError(expr, FIELDS[i], msg);
  });
  if (fields.length === 6) s.yearAll = true;
  const dom = fields[DOM].toUpperCase(), dow = fields[DOW].toUpperCase();
  const domFree = dom === '*' || dom === '?', dowFree = dow === '*' || dow === '?';
  if (domFree && dowFree) s.dayMode = 'all';
  else if (dowFree) s.dayMode = 'dom';
  else if (domFree) s.dayMode = 'dow';
  else throw new CronError(expr, 'day-of-month/day-of-week', `both are restricted ("${fields[DOM]}" and "${fields[DOW]}"); specify ? in day-of-month or day-of-week`);
  return s;
}

function parseField(s, f, text) {
  if (text === '?') {
    if (f === DOM || f === DOW) return '';
    if (f === Y) { s.yearAll = true; return ''; }
    return '"?" is only allowed in day-of-month, day-of-week and year';
  }
  if (f === Y && text === '*') { s.yearAll = true; return ''; }
  for (const item of text.split(',')) {
    if (item === '') return `empty list item in "${text}"`;
    const msg = parseItem(s, f, item);
    if (msg) return msg;
  }
  return '';
}

function parseItem(s, f, item) {
  if (f === DOM) {
    if (item === 'L') { s.domLast.add(0); return ''; }
    if (item === 'LW') { s.domLW = true; return ''; }
    if (item.startsWith('L-')) {
      const n = atoi(item.slice(2));
      if (n === null) return `invalid last-day offset "${item}" (use L-n with n 0-30)`;
      if (n > 30) return `last-day offset ${n} in "${item}" out of range 0-30`;
      s.domLast.add(n); return '';
    }
    if (item.endsWith('W')) {
      const n = atoi(item.slice(0, -1));
      if (n === null) return `invalid nearest-weekday "${item}" (use nW with n 1-31, or LW)`;
      if (n < 1 || n > 31) return `value ${n} in "${item}" out of range 1-31`;
      s.domNearest.add(n); return '';
    }
    if (/[LW#]/.test(item)) return `invalid item "${item}" (L, L-n, LW and nW are the special forms)`;
  } else if (f === DOW) {
    if (item === 'L') { s.sets[DOW].add(7); return ''; }
    if (item.endsWith('L')) {
      const [wd, msg] = parseValue(DOW, item.slice(0, -1));
      if (msg) return msg + ` in "${item}"`;
      s.dowLast.add(wd); return '';
    }
    if (item.includes('#')) {
      const [a, b] = item.split('#', 2);
      const [wd, msg] = parseValue(DOW, a);
      if (msg) return msg + ` in "${item}"`;
      const k = atoi(b);
      if (k === null || k < 1 || k > 5) return `occurrence "${b}" in "${item}" out of range 1-5`;
      s.dowNth.add(wd * 10 + k); return '';
    }
  } else if (item.includes('?')) {
    return `"?" cannot be combined with other values ("${item}")`;
  }
  if (item.includes('?')) return `"?" must stand alone in the field ("${item}")`;
  const [lo, hi] = BOUNDS[f];
  const slash = item.indexOf('/');
  const rng = slash >= 0 ? item.slice(0, slash) : item;
  const hasStep = slash >= 0;
  let step = 1;
  if (hasStep) {
    const st = item.slice(slash + 1);
    const n = atoi(st);
    if (n === null) return `invalid step "${st}" in "${item}"`;
    const span = hi - lo + 1;
    if (n === 0) return `step 0 in "${item}" is not allowed; use a step of at least 1`;
    if (n > span) return `step ${n} in "${item}" out of range 1-${span}`;
    step = n;
  }
  let from, to;
  if (rng === '*' || (rng === '' && hasStep)) { from = lo; to = hi; }
  else if (rng === '') return `empty value in "${item}"`;
  else {
    const dash = rng.indexOf('-');
    const a = dash >= 0 ? rng.slice(0, dash) : rng;
    let msg;
    [from, msg] = parseValue(f, a);
    if (msg) return msg;
    if (dash >= 0) { [to, msg] = parseValue(f, rng.slice(dash + 1)); if (msg) return msg; }
    else to = hasStep ? hi : from;
    if (from > to && f === Y) return `range "${rng}" goes backwards`;
  }
  const span = hi - lo + 1;
  const count = ((to - from + span) % span) + 1;
  for (let i = 0; i < count; i += step) {
    let v = from + i;
    if (v > hi) v -= span;
    s.sets[f].add(v);
  }
  return '';
}

const isLeap = (y) => y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
const daysIn = (y, m) => (m === 2 ? (isLeap(y) ? 29 : 28) : [4, 6, 9, 11].includes(m) ? 30 : 31);
const weekday = (y, m, d) => new Date(Date.UTC(y, m - 1, d)).getUTCDay(); // 0=Sunday

function dayOK(s, y, m, d) {
  const dim = daysIn(y, m);
  if (s.dayMode === 'all') return true;
  if (s.dayMode === 'dom') {
    if (s.sets[DOM].has(d)) return true;
    for (const n of s.domLast) if (dim - n === d) return true;
    const wd1 = weekday(y, m, 1);
    if (s.domLW) {
      let ld = dim; const w = (wd1 + dim - 1) % 7;
      if (w === 6) ld--; else if (w === 0) ld -= 2;
      if (ld === d) return true;
    }
    for (const n of s.domNearest) {
      if (n > dim) continue;
      let nd = n; const w = (wd1 + n - 1) % 7;
      if (w === 6) nd = n === 1 ? 3 : n - 1;
      else if (w === 0) nd = n === dim ? n - 2 : n + 1;
      if (nd === d) return true;
    }
    return false;
  }
  const wd = weekday(y, m, d) + 1; // 1=SUN
  if (s.sets[DOW].has(wd)) return true;
  if (s.dowLast.has(wd) && d + 7 > dim) return true;
  if (s.dowNth.has(wd * 10 + Math.floor((d - 1) / 7) + 1)) return true;
  return false;
}
const yearOK = (s, y) => y >= MIN_YEAR && y <= MAX_YEAR && (s.yearAll || s.sets[Y].has(y));
function nextIn(set, from, max) { for (let v = from; v <= max; v++) if (set.has(v)) return v; return -1; }

// next wall-clock time strictly after w = [y, mo, d, h, mi, s]; null when none.
export function nextWall(s, w) {
  let [y, m, d, hh, mm, ss] = w;
  ss += 1;
  if (ss > 59) { ss = 0; mm++; }
  if (mm > 59) { mm = 0; hh++; }
  if (hh > 23) { hh = 0; d++; }
  if (d > daysIn(y, m)) { d = 1; m++; }
  if (m > 12) { m = 1; y++; }
  for (let guard = 0; guard < 200000; guard++) {
    if (y > MAX_YEAR) return null;
    if (!yearOK(s, y)) { y++; m = 1; d = 1; hh = mm = ss = 0; continue; }
    const nm = nextIn(s.sets[MON], m, 12);
    if (nm < 0) { y++; m = 1; d = 1; hh = mm = ss = 0; continue; }
    if (nm !== m) { m = nm; d = 1; hh = mm = ss = 0; }
    if (d > daysIn(y, m)) { m++; d = 1; hh = mm = ss = 0; if (m > 12) { m = 1; y++; } continue; }
    if (!dayOK(s, y, m, d)) { d++; hh = mm = ss = 0; continue; }
    const nh = nextIn(s.sets[H], hh, 23);
    if (nh < 0) { d++; hh = mm = ss = 0; continue; }
    if (nh !== hh) { hh = nh; mm = ss = 0; }
    const nmi = nextIn(s.sets[MI], mm, 59);
    if (nmi < 0) { hh++; mm = ss = 0; if (hh > 23) { d++; hh = 0; } continue; }
    if (nmi !== mm) { mm = nmi; ss = 0; }
    const ns = nextIn(s.sets[S], ss, 59);
    if (ns < 0) { mm++; ss = 0; if (mm > 59) { hh++; mm = 0; if (hh > 23) { d++; hh = 0; } } continue; }
    return [y, m, d, hh, mm, ns];
  }
  return null;
}

// wall clock of an instant in an IANA zone (empty: the browser's)
export function wallOf(date, timeZone) {
  const f = new Intl.DateTimeFormat('en-US', {
    timeZone: timeZone || undefined, hourCycle: 'h23',
    year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric',
  });
  const p = Object.fromEntries(f.formatToParts(date).map((x) => [x.type, x.value]));
  return [+p.year, +p.month, +p.day, +p.hour % 24, +p.minute, +p.second];
}

export function validZone(tz) {
  if (!tz) return true;
  try { new Intl.DateTimeFormat('en-US', { timeZone: tz }); return true; } catch { return false; }
}

const p2 = (n) => String(n).padStart(2, '0');
export const fmtWall = (w) => `${w[0]}-${p2(w[1])}-${p2(w[2])} ${p2(w[3])}:${p2(w[4])}:${p2(w[5])}`;

// nextN(expr, n, {timeZone, from}) → ["yyyy-MM-dd HH:mm:ss", …] on the
// zone's wall clock; throws CronError for a bad expression.
export function nextN(expr, n = 5, { timeZone = '', from = new Date() } = {}) {
  const s = parse(expr);
  const out = [];
  let w = wallOf(from, timeZone);
  for (let i = 0; i < n; i++) {
    w = nextWall(s, w);
    if (!w) break;
    out.push(fmtWall(w));
  }
  return out;
}
