// Apps: list, publish, modify, view, disable/enable, delete.
import { t } from '../i18n.js';
import { get, post, put, del, enc, canWrite, engineCan, knownCaps } from '../api.js';
import { h, clear, btn, wbtn, busy, table, loading, tag, kv, toast, confirmDo, errText, showError, fmtNum, byName } from '../ui.js';
import { row, setErr, serverErr, checkName, num } from './form.js';

export default async function apps(el, ctx) {
  if (ctx.path === '/apps/new') return form(el, ctx, null);
  if (ctx.params[0]) {
    const name = decodeURIComponent(ctx.params[0]);
    return ctx.params[1] === 'edit' ? form(el, ctx, name) : view(el, ctx, name);
  }
  return list(el, ctx);
}

async function disabledMap(names) {
  const out = {};
  let i = 0;
  async function worker() {
    while (i < names.length) {
      const n = names[i++];
      try { out[n] = await get(`/app/${enc(n)}/disable`); } catch { out[n] = null; }
    }
  }
  await Promise.all(Array.from({ length: Math.min(6, names.length) }, worker));
  return out;
}

export function toggleApp(name, disabled, done) {
  const verb = disabled ? 'enable' : 'disable';
  return confirmDo(t('apps.' + verb + 'Title', { name }), t('apps.' + verb + 'Text', { name }), t(verb), async () => {
    await post(`/app/${enc(name)}/${verb}`);
    toast(t('apps.' + verb + 'd', { name }), 'ok');
    done && done();
  }, { danger: !disabled });
}
export function deleteApp(name, done) {
  return confirmDo(t('apps.deleteTitle', { name }), t('apps.deleteText', { name }), t('delete'), async () => {
    await del(`/app/${enc(name)}`);
    toast(t('apps.deleted', { name }), 'ok');
    done && done();
  });
}

async function list(el, ctx) {
  const body = h('div', loading());
  el.append(h('h1', t('apps.title'), h('span.sp', btn(t('refresh'), () => load()), wbtn(t('apps.publish'), () => ctx.go('/apps/new'), 'primary', { id: 'publish-app' }))), body);
  async function load() {
    let apps;
    try { apps = await get('/app/list'); } catch (e) { clear(body, h('div.alert.bad', errText(e))); return; }
    apps.sort((a, b) => byName(a.appName, b.appName));
    const dis = apps.every((a) => typeof a.disabled === 'boolean')
      ? Object.fromEntries(apps.map((a) => [a.appName, a.disabled])) // listed with the apps
      : await disabledMap(apps.map((a) => a.appName));
    clear(body, table([
      { label: t('f.appName'), render: (a) => h('a', { href: `#/apps/${enc(a.appName)}` }, a.appName) },
      { label: t('f.appURL'), cls: 'wrap', render: (a) => h('span.mono', a.appURL) },
      { label: t('f.bootstrapScript'), render: (a) => h('span.mono', a.bootstrapScript) },
      { label: t('f.cpuCount'), render: (a) => fmtNum(a.cpuCount) },
      { label: t('f.memoryMB'), render: (a) => fmtNum(a.memoryMB) },
      { label: t('status'), render: (a) => (dis[a.appName] === null ? '—' : dis[a.appName] ? tag(t('disabled'), 'warn') : tag(t('enabled'), 'ok')) },
      { label: '', cls: 'acts', render: (a) => [
        btn(t('view'), () => ctx.go(`/apps/${enc(a.appName)}`), 'sm'),
        wbtn(t('modify'), () => ctx.go(`/apps/${enc(a.appName)}/edit`), 'sm'),
        wbtn(dis[a.appName] ? t('enable') : t('disable'), () => toggleApp(a.appName, dis[a.appName], load), 'sm'),
        wbtn(t('delete'), () => deleteApp(a.appName, load), 'sm danger'),
      ] },
    ], apps, { empty: t('apps.none') }));
  }
  await load();
}

async function view(el, ctx, name) {
  el.append(h('h1', h('a', { href: '#/apps' }, t('apps.title')), ' / ', name));
  const body = h('div', loading());
  el.append(body);
  async function load() {
    let a, disabled, jobs, boxes;
    try {
      [a, disabled] = await Promise.all([get(`/app/${enc(name)}`), get(`/app/${enc(name)}/disable`)]);
    } catch (e) { clear(body, h('div.alert.bad', errText(e))); return; }
    const acts = h('div.toolbar',
      wbtn(t('modify'), () => ctx.go(`/apps/${enc(name)}/edit`), 'primary'),
      wbtn(disabled ? t('enable') : t('disable'), () => toggleApp(name, disabled, load)),
      wbtn(t('delete'), () => deleteApp(name, () => ctx.go('/apps')), 'danger'),
      btn(t('refresh'), () => load()));
    const jobsBox = h('div', loading());
    const boxBox = h('div', loading());
    clear(body, acts,
      h('div.panel', kv([
        [t('f.appName'), a.appName], [t('status'), disabled ? tag(t('disabled'), 'warn') : tag(t('enabled'), 'ok')],
        [t('f.appURL'), h('span.mono', a.appURL)], [t('f.bootstrapScript'), h('span.mono', a.bootstrapScript)],
        [t('f.cpuCount'), fmtNum(a.cpuCount)], [t('f.memoryMB'), fmtNum(a.memoryMB)],
        [t('f.appCacheEnable'), t(a.appCacheEnable ? 'yes' : 'no')], [t('f.eventTraceSamplingCount'), String(a.eventTraceSamplingCount)],
      ])),
      h('h2', t('apps.jobs')), jobsBox, h('h2', t('apps.sandboxes')), boxBox);
    get('/job/jobs').then((all) => {
      jobs = all.filter((j) => j.appName === name);
      clear(jobsBox, table([
        { label: t('f.jobName'), render: (j) => h('a', { href: `#/jobs/${enc(j.jobName)}` }, j.jobName) },
        { label: t('f.jobExecutionType'), key: 'jobExecutionType' }, { label: t('f.cron'), render: (j) => h('span.mono', j.cron) },
        { label: t('f.shardingTotalCount'), key: 'shardingTotalCount' },
      ], jobs, { empty: t('apps.noJobs') }));
    }).catch((e) => clear(jobsBox, h('div.alert.bad', errText(e))));
    // an engine that does not list sandboxes: say so instead of asking (and failing)
    if (!engineCan('sandboxes')) { clear(boxBox, h('div.nodata', { id: 'no-sandboxes' }, t('apps.noSandboxes', { engine: knownCaps().name }))); return; }
    get('/operate/sandbox', { appName: name }).then((bx) => {
      clear(boxBox, table([{ label: t('hostname'), key: 'hostname' }, { label: t('agent'), key: 'agentId' }, { label: t('executor'), key: 'executorId' }, { label: t('path'), cls: 'wrap', render: (b) => h('span.mono', b.path) }], bx || [], { empty: t('apps.noSandbox') }));
    }).catch((e) => clear(boxBox, h('div.alert.bad', errText(e))));
  }
  await load();
}

const FIELDS = ['appName', 'appURL', 'bootstrapScript', 'cpuCount', 'memoryMB', 'appCacheEnable', 'eventTraceSamplingCount'];

async function form(el, ctx, name) {
  const editing = !!name;
  el.append(h('h1', h('a', { href: '#/apps' }, t('apps.title')), ' / ', editing ? t('apps.modifyTitle', { name }) : t('apps.publish')));
  if (!canWrite()) { el.append(h('div.alert.bad', t('readOnly'))); return; }
  let cur = { appName: '', appURL: '', bootstrapScript: '', cpuCount: 1, memoryMB: 128, appCacheEnable: true, eventTraceSamplingCount: 0 };
  if (editing) {
    try { cur = await get(`/app/${enc(name)}`); } catch (e) { el.append(h('div.alert.bad', errText(e))); return; }
  }
  const i = {
    appName: h('input', { type: 'text', value: cur.appName, disabled: editing, placeholder: 'my_app' }),
    appURL: h('input', { type: 'text', value: cur.appURL, placeholder: 'https://repo.example.com/my-app.tar.gz' }),
    bootstrapScript: h('input', { type: 'text', value: cur.bootstrapScript, placeholder: 'bin/start.sh' }),
    cpuCount: h('input', { type: 'number', step: 'any', min: '0.001', value: cur.cpuCount }),
    memoryMB: h('input', { type: 'number', step: 'any', min: '1', value: cur.memoryMB }),
    appCacheEnable: h('input', { type: 'checkbox', checked: cur.appCacheEnable }),
    eventTraceSamplingCount: h('input', { type: 'number', step: '1', min: '0', value: cur.eventTraceSamplingCount }),
  };
  const checks = {
    appName: (v) => checkName(v, 'appName') || (v === 'list' ? t('v.reserved', { name: v }) : ''),
    appURL: (v) => (!v || /^(https?|file):\/\/./i.test(v) ? '' : t('v.url')),
    bootstrapScript: (v) => (!v ? t('v.required', { field: 'bootstrapScript' }) : v.startsWith('/') || v.split(/\s+/)[0].split('/').includes('..') ? t('v.relative') : ''),
    cpuCount: (v) => (num(v) >= 0.001 ? '' : t('v.min', { field: 'cpuCount', min: 0.001 })),
    memoryMB: (v) => (num(v) >= 1 ? '' : t('v.min', { field: 'memoryMB', min: 1 })),
    eventTraceSamplingCount: (v) => (Number.isInteger(num(v)) && num(v) >= 0 ? '' : t('v.nonNeg', { field: 'eventTraceSamplingCount' })),
  };
  const alertBox = h('div');
  const submit = h('button.btn.primary', { type: 'submit', 'data-write': '', id: 'submit' }, editing ? t('save') : t('apps.publish'));
  const f = h('form.f.panel', { novalidate: true },
    alertBox,
    row('appName', t('f.appName'), i.appName, { required: true, hint: t('h.name') }),
    row('appURL', t('f.appURL'), i.appURL, { hint: t('h.appURL') }),
    row('bootstrapScript', t('f.bootstrapScript'), i.bootstrapScript, { required: true, hint: t('h.bootstrapScript') }),
    row('cpuCount', t('f.cpuCount'), i.cpuCount, { hint: t('h.appCpu') }),
    row('memoryMB', t('f.memoryMB'), i.memoryMB, { hint: t('h.appMem') }),
    row('appCacheEnable', t('f.appCacheEnable'), i.appCacheEnable, { hint: t('h.appCache') }),
    row('eventTraceSamplingCount', t('f.eventTraceSamplingCount'), i.eventTraceSamplingCount, { hint: t('h.sampling') }),
    h('div.formbar', submit, btn(t('cancel'), () => history.back())));
  const check = (k) => { const msg = checks[k] ? checks[k](i[k].value.trim()) : ''; setErr(f, k, msg); return !msg; };
  for (const k of Object.keys(checks)) { i[k].addEventListener('blur', () => check(k)); i[k].addEventListener('input', () => f.querySelector(`.fr[data-field=${k}]`).classList.contains('bad') && check(k)); }
  f.addEventListener('submit', async (e) => {
    e.preventDefault();
    clear(alertBox);
    const bad = Object.keys(checks).filter((k) => !(editing && k === 'appName') && !check(k));
    if (bad.length) { i[bad[0]].focus(); return; }
    const body = {
      appName: editing ? name : i.appName.value.trim(), appURL: i.appURL.value.trim(), bootstrapScript: i.bootstrapScript.value.trim(),
      cpuCount: num(i.cpuCount.value), memoryMB: num(i.memoryMB.value), appCacheEnable: i.appCacheEnable.checked,
      eventTraceSamplingCount: num(i.eventTraceSamplingCount.value),
    };
    try {
      await busy(submit, () => (editing ? put('/app', body) : post('/app', body)));
      toast(t(editing ? 'apps.saved' : 'apps.published', { name: body.appName }), 'ok');
      ctx.go(`/apps/${enc(body.appName)}`);
    } catch (err) {
      serverErr(f, err, alertBox, FIELDS);
    }
  });
  el.append(f);
  (editing ? i.appURL : i.appName).focus();
}
void showError;
