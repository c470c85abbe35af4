// API reference: the scheduler's OpenAPI 3.1 document (GET
// /api/openapi.json) rendered as a compact route list, grouped by tag:
// each operation opens to its parameters, request body, responses (with
// their schemas) and examples. Everything comes from the document itself;
// nothing is fetched from elsewhere.
import { t } from '../i18n.js';
import { get } from '../api.js';
import { h, clear, loading, tag, errText, debounce } from '../ui.js';

const METHODS = ['get', 'post', 'put', 'delete', 'patch'];
const refName = (ref) => ref.split('/').pop();

export default async function openapiPage(el) {
  el.append(h('h1', t('nav.api')));
  const body = h('div', loading());
  el.append(body);
  let doc;
  try { doc = await get('/openapi.json'); } catch (e) { clear(body, h('div.alert.bad', errText(e))); return; }
  const comp = doc.components || {};
  const deref = (x, kind) => (x && x.$ref ? (comp[kind] || {})[refName(x.$ref)] || {} : x || {});
  const schemaDetails = {};

  // flatten resolves a schema's $ref and merges its allOf parts.
  function flatten(s, seen = new Set()) {
    if (!s) return {};
    if (s.$ref) {
      const n = refName(s.$ref);
      if (seen.has(n)) return {};
      seen.add(n);
      return flatten(comp.schemas[n], seen);
    }
    if (!s.allOf) return s;
    const out = { ...s, properties: { ...(s.properties || {}) }, required: [...(s.required || [])] };
    delete out.allOf;
    for (const part of s.allOf) {
      const f = flatten(part, seen);
      Object.assign(out.properties, f.properties || {});
      out.required.push(...(f.required || []));
      out.type = out.type || f.type;
      out.description = out.description || f.description;
    }
    return out;
  }
  function refLink(ref) {
    const n = refName(ref);
    return h('a.ref', { href: 'javascript:void 0', 'data-schema': n, onclick: () => { const d = schemaDetails[n]; if (d) { d.open = true; d.scrollIntoView({ block: 'start' }); } } }, n);
  }
  // typeOf: a short type expression, schema names as links.
  function typeOf(s) {
    if (!s) return 'any';
    if (s.$ref) return refLink(s.$ref);
    if (s.allOf) return s.allOf.map(typeOf).reduce((a, b) => [a, ' & ', b]);
    if (s.oneOf) return s.oneOf.map(typeOf).reduce((a, b) => [a, ' | ', b]);
    if (s.const !== undefined) return JSON.stringify(s.const);
    if (s.enum) return s.enum.map((v) => JSON.stringify(v)).join(' | ');
    const ty = Array.isArray(s.type) ? s.type.join(' | ') : s.type || 'any';
    if (ty === 'array') return [typeOf(s.items), '[]'];
    if (ty.startsWith('object') && s.additionalProperties && typeof s.additionalProperties === 'object') return ['map<string, ', typeOf(s.additionalProperties), '>'];
    const lim = [s.format, s.pattern, s.minimum !== undefined ? `≥ ${s.minimum}` : null, s.maximum !== undefined ? `≤ ${s.maximum}` : null, s.maxLength ? `≤ ${s.maxLength} chars` : null].filter(Boolean);
    return lim.length ? `${ty} (${lim.join(', ')})` : ty;
  }
  function fields(s) {
    const f = flatten(s);
    const props = Object.entries(f.properties || {});
    if (!props.length) return h('div.mono', typeOf(s));
    const req = new Set(f.required || []);
    return h('div', s.$ref ? h('div.muted', refLink(s.$ref)) : null, h('table.t.fields',
      h('tbody', props.map(([name, p]) => h('tr', h('td.mono', name, req.has(name) ? h('span.req', { title: t('api.required') }, ' *') : null),
        h('td.mono', typeOf(p)), h('td', p.description || ''))))));
  }
  const example = (v) => (v === undefined ? null : h('details.ex', h('summary', t('api.example')), h('pre.mono', JSON.stringify(v, null, 2))));
  function access(path, method, op) {
    if (Array.isArray(op.security) && op.security.length === 0) return tag(t('api.noLogin'), 'ok');
    return method !== 'get' || (op.responses || {})['403'] ? tag(t('api.adminWrite'), 'warn') : tag(t('api.login'), 'blue');
  }
  function params(list) {
    if (!list.length) return null;
    return [h('h3', t('api.params')), h('div.tw', h('table.t', h('thead', h('tr', [t('api.name'), t('api.in'), t('api.type'), t('api.desc')].map((x) => h('th', x)))),
      h('tbody', list.map((p) => h('tr', h('td.mono', p.name, p.required ? h('span.req', ' *') : null), h('td', p.in), h('td.mono', typeOf(p.schema)),
        h('td', p.description || '', p.example !== undefined ? h('div.muted.mono', `${t('api.example')}: ${p.example}`) : null))))))];
  }
  function requestBody(rb) {
    if (!rb || !rb.content) return null;
    return [h('h3', t('api.body')), Object.entries(rb.content).map(([ct, m]) => h('div.media', h('div', tag(ct)), fields(m.schema || {}), example(m.example)))];
  }
  function responses(rs) {
    return [h('h3', t('api.responses')), h('div.tw', h('table.t', h('thead', h('tr', [t('api.code'), t('api.desc'), t('api.type')].map((x) => h('th', x)))),
      h('tbody', Object.entries(rs || {}).map(([code, r0]) => {
        const r = deref(r0, 'responses');
        const content = Object.entries(r.content || {});
        return h('tr', { 'data-code': code }, h('td', tag(code, code < '300' ? 'ok' : code < '500' ? 'warn' : 'bad')),
          h('td', r.description || '', Object.keys(r.headers || {}).map((hn) => h('div.muted', `${hn}: ${r.headers[hn].description || ''}`))),
          h('td', content.map(([ct, m]) => h('div', h('span.muted', ct + ' '), h('span.mono', typeOf(m.schema))))));
      }))))];
  }
  function operation(path, method, item) {
    const op = item[method];
    const d = h('details.op', { id: 'op-' + (op.operationId || method + path), 'data-path': path, 'data-method': method.toUpperCase() },
      h('summary', h('span.method.m-' + method, method.toUpperCase()), h('span.mono.path', path), h('span.sum', op.summary || ''), access(path, method, op)));
    d.addEventListener('toggle', () => {
      if (!d.open || d.dataset.built) return;
      d.dataset.built = '1';
      const ps = [...(item.parameters || []), ...(op.parameters || [])].map((p) => deref(p, 'parameters'));
      d.append(h('div.opbody', op.description ? h('p', op.description) : null, params(ps), requestBody(op.requestBody), responses(op.responses)));
    }, { once: false });
    return d;
  }

  const ops = [];
  for (const [path, item] of Object.entries(doc.paths || {})) {
    for (const m of METHODS) if (item[m]) ops.push({ path, method: m, item, tag: (item[m].tags || ['other'])[0] });
  }
  const tags = [...(doc.tags || []).map((x) => x.name), ...new Set(ops.map((o) => o.tag))].filter((x, i, a) => a.indexOf(x) === i);
  const filter = h('input#api-filter', { type: 'search', placeholder: t('api.filter'), size: 32 });
  const count = h('span.muted', { id: 'api-count' });
  const list = h('div', { id: 'api-ops' });
  const schemas = h('div', { id: 'api-schemas' }, Object.entries(comp.schemas || {}).map(([n, s]) => {
    const d = h('details.op.schema', { id: 'schema-' + n }, h('summary', h('span.mono.path', n), h('span.sum', s.description || '')));
    d.addEventListener('toggle', () => { if (d.open && !d.dataset.built) { d.dataset.built = '1'; d.append(h('div.opbody', fields(s), example(s.example))); } });
    schemaDetails[n] = d;
    return d;
  }));
  function render() {
    const words = filter.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
    const match = (o) => { const text = `${o.method} ${o.path} ${o.item[o.method].summary || ''} ${o.item[o.method].operationId || ''}`.toLowerCase(); return words.every((w) => text.includes(w)); };
    const shown = ops.filter(match);
    count.textContent = t('api.count', { n: shown.length });
    clear(list, shown.length ? tags.map((tg) => {
      const mine = shown.filter((o) => o.tag === tg);
      if (!mine.length) return null;
      const info = (doc.tags || []).find((x) => x.name === tg) || {};
      return h('section.opgroup', { 'data-tag': tg }, h('h2', t('api.tag.' + tg, null, info.description || tg)), mine.map((o) => operation(o.path, o.method, o.item)));
    }) : h('div.nodata', t('api.noMatch')));
  }
  filter.addEventListener('input', debounce(render, 120));
  const info = doc.info || {};
  clear(body,
    h('div.panel', h('div', h('strong', info.title || ''), ' ', tag('OpenAPI ' + doc.openapi, 'blue'), ' ', tag('v' + (info.version || ''))),
      h('p.muted', t('api.intro'), ' · ', h('a', { href: '/api/openapi.json', target: '_blank', id: 'api-json' }, t('api.download'))),
      info.description ? h('p', info.description) : null),
    h('div.toolbar', filter, count), list, h('h2', t('api.schemas')), schemas);
  render();
}
