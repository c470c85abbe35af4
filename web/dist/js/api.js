// REST client: bearer token in sessionStorage, JSON errors turned into
// ApiError with the server's message, 401 sends the person back to login.
import { t } from './i18n.js';

const TOKEN = 'ejc.token';
// session: who is logged in (role: admin, guest, user or token; admin; the
// role in each namespace it may see) and the namespace the console shows
// (ns; every API call but the few of no namespace carries it).
export const session = { role: null, open: false, admin: false, roles: {}, ns: sessionStorage.getItem('ejc.ns') || 'default',
  user: sessionStorage.getItem('ejc.user') || '' };
export function setNamespace(ns) { session.ns = ns || 'default'; sessionStorage.setItem('ejc.ns', session.ns); }
// roleIn is the caller's role in a namespace: edit, view or ''.
export const roleIn = (ns) => (session.admin ? 'edit' : (session.roles || {})[ns] || '');
// Calls of no namespace (who am I, the namespaces, a cron's fires, the
// API's description, login and logout) go without ?namespace=.
const NO_NAMESPACE = /^\/(login|logout|whoami|namespaces|registry|cron\/next|openapi\.json)(\/|$)/;
let onUnauthorized = () => {};
let onWarn = () => {};
let inflight = 0;
const listeners = new Set();

export function setUnauthorizedHandler(fn) { onUnauthorized = fn; }
// setWarningHandler(fn(text, method, path)) is told of every Warning header
// an answer carries (a registration: "299 elasticjob \"executions will
// wait until the cluster grows\"").
export function setWarningHandler(fn) { onWarn = fn; }

// warningText is the quoted text of a Warning header (code agent "text").
export function warningText(h) {
  const m = /^\s*\d{3}\s+\S+\s+"((?:[^"\\]|\\.)*)"/.exec(h);
  return m ? m[1].replace(/\\(.)/g, '$1') : h;
}
export function onActivity(fn) { listeners.add(fn); }
function activity(d) { inflight += d; listeners.forEach((fn) => fn(inflight)); }

export const token = () => sessionStorage.getItem(TOKEN);
export function setToken(tok, user) {
  capsOnce = null; capsKnown = null; // another person may see another engine's page (or none)
  if (tok) { sessionStorage.setItem(TOKEN, tok); sessionStorage.setItem('ejc.user', user || ''); session.user = user || ''; }
  else { sessionStorage.removeItem(TOKEN); sessionStorage.removeItem('ejc.user'); session.user = ''; }
}
export const canWrite = () => roleIn(session.ns) === 'edit';

export class ApiError extends Error {
  constructor(status, message, path) {
    super(message);
    this.status = status;
    this.path = path;
  }
  // words for the person: what happened, then the server's own message
  describe() {
    const what = t('http.' + this.status, null, '') || (this.status >= 500 ? t('http.5xx') : this.status ? t('http.other', { code: this.status }) : '');
    return what ? `${what}: ${this.message}` : this.message;
  }
}

export function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) if (v !== undefined && v !== null && v !== '') u.set(k, v);
  const s = u.toString();
  return s ? '?' + s : '';
}

// apiURL is the address of an API path with its query and the console's
// namespace (as api() calls it), for what reads the answer itself (a
// download streamed or saved as a file).
export function apiURL(path, query) {
  if (session.ns && session.ns !== 'default' && !NO_NAMESPACE.test(path)) query = { ...(query || {}), namespace: session.ns };
  // location.origin, never the page's address: one with user:pass@ in it
  // makes fetch() refuse every call
  return location.origin + '/api' + path + qs(query);
}

// api(method, path, {body, query, text, contentType}) → parsed JSON, text, or null (204).
// Bodies that are strings are sent as they are (the trigger's job name).
export async function api(method, path, opts = {}) {
  const url = apiURL(path, opts.query);
  const headers = { Accept: 'application/json', 'X-EJ-Client': 'console' }; // where a run came from: console:{user}
  const tok = token();
  if (tok) headers.Authorization = 'Bearer ' + tok;
  let body;
  if (opts.body !== undefined) {
    headers['Content-Type'] = opts.contentType || 'application/json';
    body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
  }
  let res;
  activity(1);
  try {
    // credentials 'omit': the token travels in the header, and a 401 with
    // WWW-Authenticate: Basic must not open the browser's own login prompt
    res = await fetch(url, { method, headers, body, signal: opts.signal, credentials: 'omit' });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, t('err.network'), path);
  } finally {
    activity(-1);
  }
  const ct = res.headers.get('Content-Type') || '';
  if (!res.ok) {
    let msg = '';
    try {
      const txt = await res.text();
      if (ct.includes('json')) msg = JSON.parse(txt).message || txt; else msg = txt.trim();
    } catch { /* keep the status words alone */ }
    const err = new ApiError(res.status, msg || res.statusText || t('err.unknown'), path);
    if (res.status === 401 && path !== '/login') { setToken(null); onUnauthorized(err); }
    throw err;
  }
  const warning = res.headers.get('Warning');
  if (warning) for (const w of warning.split(/,(?=\s*\d{3}\s)/)) onWarn(warningText(w), method, path);
  if (res.status === 204) return null;
  if (opts.text || !ct.includes('json')) return res.text();
  const txt = await res.text();
  return txt ? JSON.parse(txt) : null;
}

// optional GET for endpoints that may not exist yet (history, statistics):
// 404/501 or an empty answer give null ("no data"); other errors throw.
export async function optional(path, query) {
  try {
    const v = await api('GET', path, { query });
    return v === '' ? null : v;
  } catch (e) {
    if (e instanceof ApiError && (e.status === 404 || e.status === 501 || e.status === 405)) return null;
    throw e;
  }
}

export const get = (p, query) => api('GET', p, { query });
export const post = (p, body) => api('POST', p, { body });
export const put = (p, body) => api('PUT', p, { body });
export const del = (p, body) => api('DELETE', p, { body });

export const enc = encodeURIComponent;

// engineCaps() is the engine's name and what it declares it can do ({name, logs, sandboxes,
// clusterView, …}: GET /api/operate/cluster's engine), read once per login; null when it
// cannot be read (a caller without a role in the default namespace, no scheduler yet): the
// console then offers every action and lets the server answer.
let capsOnce = null, capsKnown = null;
const capsOf = (c) => (c && c.engine && c.engine.capabilities ? { name: c.engine.name || '', ...c.engine.capabilities } : null);
export function engineCaps() {
  if (!capsOnce) {
    capsOnce = get('/operate/cluster').then((c) => (capsKnown = capsOf(c)))
      .catch((e) => { if (!(e instanceof ApiError && e.status === 403)) capsOnce = null; return null; }); // 403: not for this person
  }
  return capsOnce;
}
// knownCaps() is what engineCaps() found (main.js awaits it before the first page), or null.
export const knownCaps = () => capsKnown;
// engineCan(what): false only when the engine is known not to declare what.
export const engineCan = (what) => !capsKnown || capsKnown[what] !== false;
// primeEngineCaps(c) takes a cluster page already read (the cluster page itself).
export function primeEngineCaps(c) {
  const v = capsOf(c);
  if (v) { capsKnown = v; capsOnce = Promise.resolve(v); }
}
