// Cluster: leader, standbys, the Mesos master and the agents with their
// free resources; on Kubernetes the nodes with their free resources and the
// pods of this scheduler's tasks. With several clusters (clusters_file), each
// cluster's connection, drain mark, resources and running work first.
import { t } from '../i18n.js';
import { get, optional, session, primeEngineCaps } from '../api.js';
import { h, clear, btn, loading, tag, kv, errText, fmtNum, timeCell } from '../ui.js';

const num = (v) => (typeof v === 'number' ? v : parseFloat(v) || 0);

export default async function cluster(el) {
  const body = h('div', loading());
  el.append(h('h1', t('nav.cluster'), h('span.sp', btn(t('refresh'), () => load()))), body);
  async function load() {
    let c;
    try { c = await get('/operate/cluster'); } catch (e) { clear(body, h('div.alert.bad', errText(e))); return; }
    primeEngineCaps(c);
    const store = h('div', { id: 'store' });
    if (session.admin || session.open) loadStore(store);
    const clusters = h('div', { id: 'clusters' });
    loadClusters(clusters);
    const eng = c.engine || {};
    const caps = eng.capabilities || {};
    const noView = eng.capabilities && caps.clusterView === false;
    const leader = c.leader || {};
    const standbys = Array.isArray(c.standbys) ? c.standbys : [];
    const mesos = c.mesos || {};
    const agents = Array.isArray(c.agents) ? c.agents : [];
    const kube = c.kubernetes || null;
    const nodes = kube && Array.isArray(kube.nodes) ? kube.nodes : [];
    const res = (a, k) => num((a.resources || {})[k]);
    const used = (a, k) => num((a.used_resources || a.usedResources || {})[k]);
    const total = { cpus: 0, mem: 0, fcpus: 0, fmem: 0 };
    for (const a of agents) { total.cpus += res(a, 'cpus'); total.mem += res(a, 'mem'); total.fcpus += res(a, 'cpus') - used(a, 'cpus'); total.fmem += res(a, 'mem') - used(a, 'mem'); }
    for (const n of nodes) { if (n.usable) { total.cpus += num(n.allocatableCpus); total.mem += num(n.allocatableMemMB); total.fcpus += num(n.freeCpus); total.fmem += num(n.freeMemMB); } }
    // the green part is what is free
    const bar = (free, all) => h('div.meter',
      h('div.meterbar', { title: `${fmtNum(free)} / ${fmtNum(all)}` }, h('span', { style: { width: all ? `${Math.max(0, Math.min(100, (100 * free) / all))}%` : '0' } })),
      h('span', `${fmtNum(free)} / ${fmtNum(all)}`));
    const instances = [...(c.leader ? [{ ...c.leader, role: 'leader' }] : []), ...standbys.map((x) => ({ ...x, role: 'standby' }))];
    const roleTag = (r) => (r === 'leader' ? tag(t('cl.roleLeader'), 'ok') : tag(t('cl.roleStandby'), 'blue'));
    clear(body,
      h('div.grid',
        h('div.stat', h('div.k', t('cl.leader')), h('div.v', { id: 'leader', style: { fontSize: '15px', wordBreak: 'break-all' } }, c.leader ? (leader.url || leader.hostname) : t('cl.noLeader')), leader.self ? h('div.muted', t('cl.thisOne')) : null),
        h('div.stat', h('div.k', t('cl.standbys')), h('div.v', String(standbys.length))),
        h('div.stat', h('div.k', kube ? t('cl.kube') : t('cl.agents')), h('div.v', String(kube ? nodes.length : agents.length))),
        h('div.stat', h('div.k', t('cl.freeCpus')), h('div.v', fmtNum(total.fcpus)), h('div.muted', t('cl.of', { n: fmtNum(total.cpus) }))),
        h('div.stat', h('div.k', t('cl.freeMem')), h('div.v', fmtNum(total.fmem, 0)), h('div.muted', t('cl.of', { n: fmtNum(total.mem, 0) })))),
      h('div.panel', kv([
        [t('cl.mode'), c.mode !== 'embedded' ? t('cl.modeCluster') : kube ? t('cl.modeSingle') : t('cl.modeEmbedded')],
        [t('cl.thisRole'), h('span', roleTag(c.role), ' ', h('span.mono', (c.self || {}).url || ''))],
        [t('cl.engine'), h('span', { id: 'engine-name', 'data-engine': eng.name || '' }, eng.name ? t('cl.engine.' + eng.name, null, eng.name) : '—')],
        [t('cl.caps'), capTags(caps)],
        ...(c.tenantIsolation ? [[t('cl.tenantIsolation'), h('span', { id: 'tenant-isolation', 'data-mode': c.tenantIsolation.mode, title: c.tenantIsolation.reason || '' },
          tag(c.tenantIsolation.mode, c.tenantIsolation.mode === 'on' ? 'ok' : c.tenantIsolation.mode === 'engine' ? 'blue' : 'warn'),
          ' ', h('span.muted', c.tenantIsolation.reason || ''))]] : []),
        ...(kube ? [[t('cl.kubeNs'), h('span.mono', kube.namespace || '')]] : [
          [t('cl.mesos'), h('span', h('span.mono', mesos.url || '—'), ' ', mesos.embedded ? tag(t('cl.embedded'), 'blue') : null)],
          [t('cl.master'), h('span.mono', mesos.master || '—')]]),
      ])),
      h('h2', t('cl.instances')),
      h('div.tw', h('table.t', { id: 'instances' },
        h('thead', h('tr', [t('cl.role'), t('cl.url'), t('hostname'), 'id', t('cl.started')].map((x) => h('th', x)))),
        h('tbody', instances.length ? instances.map((m) => h('tr', { 'data-role': m.role },
          h('td', roleTag(m.role), m.self ? h('div.muted', t('cl.thisOne')) : null),
          h('td.wrap.mono', m.url || ''), h('td.wrap', m.hostname || ''), h('td.wrap.mono', m.id || ''), h('td', timeCell(m.started)))) :
          h('tr', h('td', { colspan: 5 }, h('div.nodata', t('cl.noLeader'))))))),
      clusters,
      store,
      kube ? kubeNodes(kube, nodes, bar) : null,
      noView ? h('div.nodata', { id: 'no-cluster-view' }, t('cl.noView')) : null,
      kube || noView ? null : (c.agentsError ? h('div.alert.bad', t('cl.agentsError') + ': ' + c.agentsError) : null),
      kube || noView ? null : h('h2', t('cl.agents')),
      kube || noView ? null : h('div.tw', h('table.t', { id: 'agents' },
        h('thead', h('tr', [t('cl.agent'), t('hostname'), t('status'), t('cl.isolation'), t('cl.cpusFree'), t('cl.memFree'), t('cl.diskFree'), t('cl.ports')].map((x) => h('th', x)))),
        h('tbody', agents.length ? agents.map((a) => h('tr',
          h('td.wrap.mono', a.id), h('td', a.hostname, a.pid ? h('div.muted.mono', a.pid) : null),
          h('td', a.active === false ? tag(t('cl.inactive'), 'bad') : tag(t('cl.active'), 'ok')),
          h('td', a.isolation ? h('span', { title: a.isolation.reason || a.isolation.isolation || '' },
            a.isolation.enforced ? tag(a.isolation.mode || 'cgroups', 'ok') : tag(t('cl.isolationOff'), 'warn')) : '—'),
          h('td', bar(res(a, 'cpus') - used(a, 'cpus'), res(a, 'cpus'))),
          h('td', bar(res(a, 'mem') - used(a, 'mem'), res(a, 'mem'))),
          h('td', bar(res(a, 'disk') - used(a, 'disk'), res(a, 'disk'))),
          h('td.words.mono', String((a.resources || {}).ports || '')))) : h('tr', h('td', { colspan: 8 }, h('div.nodata', t('cl.noAgents'))))))));
  }
  await load();
}

// loadClusters fills el with the scheduler's clusters (GET /operate/clusters): each with
// its engine, its connection as the leader's engine sees it (a standby cannot tell), its
// drain mark, its agents or nodes with their CPUs and memory, and the tasks running there.
async function loadClusters(el) {
  let cs;
  try { cs = await optional('/operate/clusters'); } catch (e) {
    if (!(e && e.status === 403)) clear(el, h('div.alert.bad', t('cl.clustersError') + ': ' + errText(e)));
    return;
  }
  if (!Array.isArray(cs) || !cs.length) return;
  const conn = (c) => {
    if (typeof c.connected !== 'boolean') return h('span.muted', { title: t('cl.connUnknown') }, '—');
    return h('span',
      c.connected ? tag(t('cl.connYes'), 'ok') : tag(t('cl.connNo'), 'bad'),
      c.since ? h('div.muted', timeCell(c.since)) : null,
      !c.connected && c.lastError ? h('div.muted.wrap', c.lastError) : null);
  };
  clear(el,
    h('h2', t('cl.clusters')),
    h('div.tw', h('table.t', { id: 'clusters-list' },
      h('thead', h('tr', [t('cl.clusterName'), t('cl.engine'), t('cl.connected'), t('cl.drained'), t('cl.agents'), t('cl.cpus'), t('cl.memMB'), t('cl.runningTasks')].map((x) => h('th', x)))),
      h('tbody', cs.map((c) => h('tr', { 'data-cluster': c.name, 'data-connected': typeof c.connected === 'boolean' ? String(c.connected) : '' },
        h('td.mono', c.name),
        h('td', t('cl.engine.' + c.engine, null, c.engine || '')),
        h('td', conn(c)),
        h('td', c.drained ? h('span', tag(t('cl.drainedYes'), 'warn'), h('div.muted', timeCell(c.drained.since)), c.drained.by ? h('div.muted.mono', c.drained.by) : null) : '—'),
        h('td', c.agentsError ? h('span', { title: c.agentsError }, tag('?', 'bad'), h('div.muted.wrap', c.agentsError)) : String(num(c.agents))),
        h('td', fmtNum(num(c.cpuCount))),
        h('td', fmtNum(num(c.memoryMB), 0)),
        h('td', String(num(c.runningTasks)))))))));
}

const mib = (n) => fmtNum(num(n) / 1048576, 1) + ' MiB';

// loadStore fills el with the replicated store's members (registry=etcd; the
// admin's): nothing when the registry is not replicated (404) or not for
// this person (403).
async function loadStore(el) {
  let ms;
  try { ms = await optional('/operate/store/members'); } catch (e) {
    if (!(e && e.status === 403)) clear(el, h('div.alert.bad', t('cl.storeError') + ': ' + errText(e)));
    return;
  }
  if (!Array.isArray(ms)) return;
  clear(el,
    h('h2', t('cl.store')),
    h('div.tw', h('table.t', { id: 'store-members' },
      h('thead', h('tr', [t('cl.member'), t('status'), t('cl.raftLeader'), t('cl.raftIndex'), t('cl.dbSize'), t('cl.dbInUse'), t('cl.alarms')].map((x) => h('th', x)))),
      h('tbody', ms.map((m) => h('tr', { 'data-member': m.name || m.id },
        h('td', h('span.mono', m.name || m.id), h('div.muted.mono', (m.peerURLs || []).join(' '))),
        h('td', m.healthy ? tag(t('cl.healthy'), 'ok') : h('span', tag(t('cl.unhealthy'), 'bad'), h('div.muted.wrap', (m.errors || []).join('; ')))),
        h('td', m.leader ? tag(t('cl.roleLeader'), 'ok') : '—'),
        h('td.mono', m.healthy ? String(m.raftIndex) : '—'),
        h('td', m.healthy ? mib(m.dbSizeBytes) : '—'),
        h('td', m.healthy ? mib(m.dbSizeInUseBytes) : '—'),
        h('td', (m.alarms || []).length ? (m.alarms || []).map((a) => tag(a, 'bad')) : '—')))))));
}

// CAPS are the capabilities an engine may declare (engine.Capabilities), in the page's order.
const CAPS = ['checkpointing', 'executorSharing', 'logs', 'sandboxes', 'clusterView', 'capacity'];

// capTags: each capability as a tag, green when the engine declares it, greyed and struck
// through when not (the explanation on hover).
function capTags(caps) {
  return h('span', { id: 'engine-caps' }, CAPS.map((k) => h('span', { 'data-cap': k, 'data-on': caps[k] ? 'true' : 'false',
    title: t('cl.cap.' + k + '.help') + (caps[k] ? '' : ' — ' + t('cl.capOff')) },
  caps[k] ? tag(t('cl.cap.' + k), 'ok') : h('span.tag.off', t('cl.cap.' + k)), ' ')));
}

// kubeNodes is the Kubernetes part: each node, whether tasks may run on it (and
// why not), its free CPUs and memory, and the pods of this scheduler's tasks
// (with why a pod waits, by the kubelet's Warning events, until it runs).
function kubeNodes(kube, nodes, bar) {
  const podList = (n) => (n.pods || []).length ? h('div', (n.pods || []).map((p) => h('div.mono', { 'data-task': p.taskId, title: p.taskId },
    p.name, ' ', tag(p.phase || '', p.phase === 'Running' ? 'ok' : 'blue'), p.state ? h('span.muted', ' ' + p.state) : null,
    p.waiting ? h('div.muted.wrap.waiting', p.waiting) : null))) : h('span.muted', '—');
  return h('div',
    kube.error ? h('div.alert.bad', t('cl.kubeError') + ': ' + kube.error) : null,
    h('h2', t('cl.kube')),
    h('div.tw', h('table.t', { id: 'nodes' },
      h('thead', h('tr', [t('cl.node'), t('status'), t('cl.cpusFree'), t('cl.memFree'), t('cl.pods')].map((x) => h('th', x)))),
      h('tbody', nodes.length ? nodes.map((n) => h('tr', { 'data-node': n.name },
        h('td.mono', n.name),
        h('td', n.usable ? tag(t('cl.usable'), 'ok') : h('span', tag(t('cl.unusable'), 'warn'), h('div.muted', n.why || ''))),
        h('td', bar(num(n.freeCpus), num(n.allocatableCpus))),
        h('td', bar(num(n.freeMemMB), num(n.allocatableMemMB))),
        h('td', podList(n)))) : h('tr', h('td', { colspan: 5 }, h('div.nodata', t('cl.noNodes'))))))));
}
