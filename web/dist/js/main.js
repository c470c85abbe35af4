// Boot, auth, shell and hash routing.
import { t, lang, setLang, LANGS } from './i18n.js';
import { api, session, setToken, token, setUnauthorizedHandler, setWarningHandler, onActivity, ApiError, setNamespace, roleIn, engineCaps } from './api.js';
import { h, clear, btn, busy, showError, errText, toast } from './ui.js';

const root = document.getElementById('app');
const progress = h('div.progress', { 'aria-hidden': 'true' });
document.body.append(progress);
onActivity((n) => progress.classList.toggle('on', n > 0));
// A Warning header (a job registered that can never fit the cluster as it
// is) stays on screen until it is closed.
setWarningHandler((text) => { toast(t('warning', { text }), 'warn', 0).classList.add('api-warning'); });

// route table: first match wins; page modules load on demand
const ROUTES = [
  [/^\/dashboard$/, 'dashboard', 'dashboard'],
  [/^\/apps$/, 'apps', 'apps'],
  [/^\/apps\/new$/, 'apps', 'apps'],
  [/^\/apps\/([^/]+)(?:\/(edit))?$/, 'apps', 'apps'],
  [/^\/jobs$/, 'jobs', 'jobs'],
  [/^\/jobs\/new$/, 'jobs', 'jobs'],
  [/^\/jobs\/([^/]+)(?:\/(edit))?$/, 'jobs', 'jobs'],
  [/^\/workflows$/, 'workflows', 'workflows'],
  [/^\/workflows\/new$/, 'workflows', 'workflows'],
  [/^\/workflows\/([^/]+)(?:\/(edit))?$/, 'workflows', 'workflows'],
  [/^\/status$/, 'status', 'status'],
  [/^\/history(?:\/(executions|traces))?$/, 'history', 'history'],
  [/^\/logs\/(.+)$/, 'logs', 'history'],
  [/^\/cluster$/, 'cluster', 'cluster'],
  [/^\/audit$/, 'audit', 'audit'],
  [/^\/api$/, 'openapi', 'api'],
  [/^\/namespaces\/([^/]+)$/, 'namespace', 'namespace'],
];
const NAV = ['dashboard', 'apps', 'jobs', 'workflows', 'status', 'history', 'cluster', 'audit', 'api'];
// pages the server answers only for some: the audit log for the admin and
// the namespaces' editors, the cluster for the default namespace's users
const NAV_ALLOWED = {
  audit: () => session.admin || Object.values(session.roles || {}).includes('edit'),
  cluster: () => roleIn('default') !== '',
};

let current = null; // {cleanup}
let mainEl = null;
let loginMessage = '';

function parseHash() {
  const raw = location.hash.replace(/^#/, '') || '/dashboard';
  const [path, q] = raw.split('?');
  return { path, query: new URLSearchParams(q || '') };
}
export function go(path) { location.hash = '#' + path; }

async function whoami() {
  try {
    const w = await api('GET', '/whoami');
    session.role = w.role; session.open = !!w.open; session.admin = !!w.admin || !!w.open; session.roles = w.namespaces || {};
    await loadNamespaces();
    return true;
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) return false;
    throw e;
  }
}

// namespaces the caller may see (the server lists only those: every one
// for the admin); the one shown is kept if still among them.
let namespaces = [];
async function loadNamespaces() {
  try {
    namespaces = ((await api('GET', '/namespaces')) || []).map((n) => n.name);
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) throw e;
    namespaces = Object.keys(session.roles || {});
  }
  if (!namespaces.length) namespaces = session.admin ? ['default'] : Object.keys(session.roles || {}).sort();
  if (!namespaces.includes(session.ns)) setNamespace(namespaces[0] || 'default');
}

function nsSelect() {
  return h('select', { 'aria-label': t('namespace'), id: 'namespace', title: t('namespace'),
    onchange: (e) => { setNamespace(e.target.value); const { path } = parseHash(); if (path.startsWith('/namespaces/')) go('/namespaces/' + encodeURIComponent(e.target.value)); else if (/^\/(apps|jobs|workflows)\/./.test(path) || path.startsWith('/logs/')) go('/' + path.split('/')[1]); else render(); } },
  namespaces.map((ns) => h('option', { value: ns, selected: ns === session.ns }, ns + (session.admin ? '' : ' · ' + t('nsrole.' + roleIn(ns))))));
}

function langSelect() {
  return h('select', { 'aria-label': t('language'), id: 'lang', onchange: (e) => { setLang(e.target.value); render(); } },
    LANGS.map(([code, name]) => h('option', { value: code, selected: code === lang() }, name)));
}

function renderLogin() {
  stopPage();
  document.title = t('login.title') + ' · ElasticJob-Cloud';
  const user = h('input#username', { type: 'text', autocomplete: 'username', required: true, value: session.user || '' });
  const pass = h('input#password', { type: 'password', autocomplete: 'current-password', required: true });
  const msg = h('div', loginMessage ? h('div.alert.bad', loginMessage) : null,
    urlCredsNote ? h('div.alert.warn', { id: 'login-note' }, t('login.urlCreds')) : null);
  const submit = h('button.btn.primary', { type: 'submit' }, t('login.submit'));
  const sso = h('div');
  const form = h('form.login', {
    onsubmit: async (e) => {
      e.preventDefault();
      clear(msg);
      await busy(submit, async () => {
        try {
          const r = await api('POST', '/login', { body: { username: user.value.trim(), password: pass.value } });
          setToken(r.token, user.value.trim());
          session.role = r.role;
          loginMessage = '';
          urlCredsNote = false;
          sessionStorage.removeItem('ejc.ns'); session.ns = 'default'; // a new user starts where it may look
          if (!(await whoami())) throw new Error(t('err.unknown'));
          if (parseHash().path === '/login') go('/dashboard'); else render();
        } catch (err) {
          clear(msg, h('div.alert.bad', err instanceof ApiError && err.status === 401 ? t('login.wrong') : errText(err)));
          pass.select();
        }
      });
    },
  },
  h('h1', 'ElasticJob-Cloud'),
  h('p.muted', { style: { textAlign: 'center', marginTop: 0 } }, t('login.intro')),
  msg,
  h('label', { for: 'username' }, t('login.user')), user,
  h('label', { for: 'password' }, t('login.password')), pass,
  submit,
  sso,
  h('div.lang', langSelect()));
  clear(root, form);
  // "Sign in with SSO" when the scheduler has an OIDC provider (oidc_issuer).
  fetch(location.origin + '/api/oidc').then((r) => (r.ok ? r.json() : null)).then((o) => {
    if (o && o.enabled) clear(sso, h('a.btn', { href: o.login, id: 'sso', style: { display: 'block', textAlign: 'center', marginTop: '8px' } }, t('login.sso')));
  }).catch(() => {});
  (user.value ? pass : user).focus();
}

async function logout() {
  try { await api('POST', '/logout'); } catch { /* the token is dropped anyway */ }
  setToken(null);
  session.role = null;
  loginMessage = '';
  // One render of the form: a second one from the hash change would replace
  // a form the user (or a test) has started to fill in.
  if (parseHash().path === '/login') renderLogin(); else go('/login');
}

function shell(active) {
  const top = h('header.top',
    h('a.brand', { href: '#/dashboard' }, 'ElasticJob-Cloud', h('small', t('console'))),
    h('span.who', { id: 'who' }, session.open ? t('role.open') : `${session.user || ''} · ${t('role.' + session.role)}`),
    h('label.ns', t('namespace'), ' ', nsSelect()),
    h('a.ns-usage', { id: 'ns-usage', href: '#/namespaces/' + encodeURIComponent(session.ns), title: t('ns.usageTitle') }, t('ns.usage')),
    langSelect(),
    session.open ? null : btn(t('logout'), logout, 'sm', { id: 'logout' }));
  const side = h('nav.side', { 'aria-label': t('nav') },
    NAV.filter((n) => !NAV_ALLOWED[n] || NAV_ALLOWED[n]())
      .map((n) => h('a', { href: '#/' + n, class: n === active ? 'on' : '', 'data-nav': n }, t('nav.' + n))));
  mainEl = h('main', { id: 'main' });
  const wrap = h('div.shell', top, side, mainEl);
  clear(root, wrap);
  if (session.open) mainEl.before(); // banner is drawn per page below
  return mainEl;
}

function stopPage() {
  if (current && current.cleanup) try { current.cleanup(); } catch { /* ignore */ }
  current = null;
}

let renderSeq = 0;
async function render() {
  const seq = ++renderSeq;
  document.documentElement.lang = lang() === 'zh' ? 'zh-CN' : 'en';
  const { path, query } = parseHash();
  if (path === '/login') {
    if (session.role && token()) { go('/dashboard'); return; }
    if (session.open) { go('/dashboard'); return; }
    renderLogin();
    return;
  }
  if (!session.role) { go('/login'); return; }
  let route = ROUTES.find(([re]) => re.test(path));
  if (!route) { go('/dashboard'); return; }
  const [re, mod, nav] = route;
  const params = path.match(re).slice(1);
  // a namespace's page shows that namespace in the switcher too
  if (mod === 'namespace' && namespaces.includes(decodeURIComponent(params[0]))) setNamespace(decodeURIComponent(params[0]));
  stopPage();
  const main = shell(nav);
  document.title = t('nav.' + nav) + ' · ElasticJob-Cloud';
  if (session.open) main.append(h('div.banner', { id: 'open-banner' }, t('openAccess')));
  if (session.role === 'guest') main.append(h('div.banner', { id: 'guest-banner' }, t('guestBanner')));
  else if (!session.open && roleIn(session.ns) === 'view') main.append(h('div.banner', { id: 'view-banner' }, t('viewBanner', { ns: session.ns })));
  const host = h('div', { id: 'page', 'data-page': mod });
  main.append(host);
  damagedBanner(host, seq);
  try {
    // the engine's capabilities are read once per login: pages hide what it cannot do
    const [page] = await Promise.all([import(`./pages/${mod}.js`), engineCaps()]);
    if (seq !== renderSeq) return;
    current = (await page.default(host, { path, params, query, go, rerender: render })) || null;
    host.setAttribute('data-ready', '');
  } catch (e) {
    if (seq !== renderSeq) return;
    showError(e);
    host.append(h('div.alert.bad', errText(e)));
    host.setAttribute('data-ready', '');
  }
}

// damagedBanner puts a notice above the page when the registry holds
// entries that do not decode (GET /api/registry/damaged: those the caller
// may see); it never holds the page up, and says nothing when it cannot ask.
function damagedBanner(host, seq) {
  api('GET', '/registry/damaged').then((list) => {
    if (seq !== renderSeq || !Array.isArray(list) || list.length === 0) return;
    const paths = list.slice(0, 3).map((d) => d.path).join(', ') + (list.length > 3 ? ', …' : '');
    host.before(h('div.banner', { id: 'damaged-banner' }, t('damagedBanner', { n: list.length, paths })));
  }).catch(() => {});
}

setUnauthorizedHandler((err) => {
  if (!session.role && parseHash().path === '/login') return;
  session.role = null;
  // (a refused SSO login's reason, set before, stays)
  loginMessage = session.user ? t('login.expired') : loginMessage;
  if (parseHash().path !== '/login') go('/login'); else renderLogin();
  void err;
});

window.addEventListener('hashchange', render);
window.addEventListener('unhandledrejection', (e) => showError(e.reason));

// The OIDC login's callback hands the session over in the fragment
// (#oidc_token=…&user=…): keep it, and take it out of the address bar.
// A refused login comes back as #oidc_error=…: shown on the login form.
function takeOIDCSession() {
  const f = new URLSearchParams(location.hash.slice(1));
  if (f.get('oidc_error')) {
    loginMessage = f.get('oidc_error');
    history.replaceState(null, '', location.pathname + '#/login');
    return;
  }
  if (!f.get('oidc_token')) return;
  setToken(f.get('oidc_token'), f.get('user') || '');
  sessionStorage.removeItem('ejc.ns'); session.ns = 'default';
  history.replaceState(null, '', location.pathname + '#/dashboard');
}

// A console opened at http://user:pass@host/ cannot call its API: fetch()
// refuses an address with credentials in it. Load it again without them
// (location.origin has none) and ask for a login there.
const URL_CREDS = 'ejc.urlCreds';
function dropAddressCredentials() {
  const u = new URL(document.URL); // (Chromium's location.href hides them)
  if (!u.username && !u.password) return false;
  sessionStorage.setItem(URL_CREDS, decodeURIComponent(u.username || ''));
  location.replace(location.origin + location.pathname + location.search + location.hash);
  return true;
}
function addressCredentialsNote() {
  const user = sessionStorage.getItem(URL_CREDS);
  if (user === null) return;
  sessionStorage.removeItem(URL_CREDS);
  if (user && !session.user) session.user = user; // the login form starts with it
  urlCredsNote = true;
}
let urlCredsNote = false;

(async function boot() {
  if (dropAddressCredentials()) return;
  addressCredentialsNote();
  try {
    takeOIDCSession();
    await whoami();
  } catch (e) {
    clear(root, h('div.login', h('h1', 'ElasticJob-Cloud'), h('div.alert.bad', errText(e)), btn(t('retry'), () => location.reload(), 'primary')));
    return;
  }
  await render();
  window.__ejcReady = performance.now();
})();

export { toast };
