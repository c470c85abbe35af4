package config

import (
	"strings"
	"testing"
	"time"
)

// Every registry and etcd_* key is read from every layer, and the embedded
// member's derived values follow them.
func TestRegistryEveryKeyFromEveryLayer(t *testing.T) {
	sample := map[string]string{
		"registry": "etcd", "etcd_name": "s2", "etcd_peers": "s1=http://10.0.0.1:2380,s2=http://10.0.0.2:2380,s3=http://10.0.0.3:2380",
		"etcd_client_url": "http://10.0.0.2:2379", "etcd_peer_url": "http://10.0.0.2:2380", "etcd_cluster_token": "prod-a",
		"etcd_prefix": "/ej-prod", "etcd_heartbeat": "100ms", "etcd_election_timeout": "1s", "etcd_lease_ttl": "2s",
		"etcd_quota_bytes": "4GiB", "etcd_join": "true", "mesos_url": "http://m:5050",
		"etcd_catchup_entries": "2000", "etcd_compaction_retention": "10m",
	}
	var file strings.Builder
	env, prefixed := map[string]string{}, map[string]string{}
	var args []string
	for k, v := range sample {
		file.WriteString(k + "=" + v + "\n")
		env[k] = v
		prefixed["ELASTICJOB_"+strings.ToUpper(k)] = v
		args = append(args, "--"+strings.ReplaceAll(k, "_", "-")+"="+v)
	}
	c := load(t, []string{"--config", writeFile(t, file.String())}, nil)
	c.ConfigFile = ""
	for name, o := range map[string]Config{"env": load(t, nil, env), "prefixed env": load(t, nil, prefixed), "flags": load(t, args, nil)} {
		if !same(o, c) {
			t.Errorf("%s layer:\n got %+v\nwant %+v", name, o.Etcd, c.Etcd)
		}
	}
	e := c.Etcd
	if c.RegistryKind() != RegistryEtcd || !c.Replicated() || c.EtcdMemberName() != "s2" || c.EtcdPeerURL() != "http://10.0.0.2:2380" ||
		len(c.EtcdPeers()) != 3 || e.Token != "prod-a" || e.Prefix != "/ej-prod" || e.Heartbeat != 100*time.Millisecond ||
		e.Election != time.Second || e.LeaseTTL != 2*time.Second || e.Quota != 4<<30 || !e.Join || c.EtcdDir() != c.DataDir+"/etcd" ||
		e.CatchUpEntries != 2000 || e.CompactionRetention != 10*time.Minute {
		t.Errorf("etcd settings: %+v", e)
	}
	d := load(t, nil, nil)
	if d.RegistryKind() != RegistryEmbedded || d.Replicated() || d.Etcd.Heartbeat != 50*time.Millisecond || d.Etcd.Election != 500*time.Millisecond ||
		d.Etcd.LeaseTTL != time.Second || d.Etcd.ClientURL != "http://127.0.0.1:2379" ||
		d.Etcd.CatchUpEntries != 1000 || d.Etcd.CompactionRetention != time.Minute {
		t.Errorf("defaults: %s %+v", d.RegistryKind(), d.Etcd)
	}
	if zk := load(t, nil, map[string]string{"zk_servers": "z:2181", "mesos_url": "http://m:5050"}); zk.RegistryKind() != RegistryZooKeeper {
		t.Errorf("zk_servers alone selects %s, want zookeeper (the original's settings keep working)", zk.RegistryKind())
	}
	one := load(t, nil, map[string]string{"registry": "etcd"})
	if one.EtcdMemberName() != "default" || one.EtcdPeerURL() != "http://127.0.0.1:2380" || one.EtcdPeers() != nil {
		t.Errorf("a member alone: %s %s %v", one.EtcdMemberName(), one.EtcdPeerURL(), one.EtcdPeers())
	}
	ext := load(t, nil, map[string]string{"registry": "etcd", "etcd_endpoints": "http://e1:2379, http://e2:2379", "mesos_url": "http://m:5050"})
	if eps := ext.EtcdEndpoints(); len(eps) != 2 || eps[1] != "http://e2:2379" {
		t.Errorf("endpoints %v", eps)
	}
}

func TestRegistryErrors(t *testing.T) {
	three := "s1=http://127.0.0.1:2380,s2=http://127.0.0.1:2381,s3=http://127.0.0.1:2382"
	m := "http://m:5050"
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"registry": "consul"}, "not embedded, zookeeper or etcd"},
		{map[string]string{"registry": "zookeeper"}, "set zk_servers"},
		{map[string]string{"registry": "etcd", "zk_servers": "z:2181", "mesos_url": m}, "zk_servers is set but registry is etcd"},
		{map[string]string{"registry": "embedded", "zk_servers": "z:2181", "mesos_url": m}, "zk_servers is set but registry is embedded"},
		{map[string]string{"registry": "etcd", "etcd_peers": three, "mesos_url": m}, "etcd_name: required with etcd_peers (one of s1, s2, s3)"},
		{map[string]string{"registry": "etcd", "etcd_peers": three, "etcd_name": "s4", "mesos_url": m}, "etcd_name s4 is not in etcd_peers"},
		{map[string]string{"registry": "etcd", "etcd_peers": three, "etcd_name": "s1", "etcd_peer_url": "http://127.0.0.1:2390", "mesos_url": m}, "disagrees with etcd_peers"},
		{map[string]string{"registry": "etcd", "etcd_peers": "s1=http://127.0.0.1:2380,s1=http://127.0.0.1:2381", "etcd_name": "s1", "mesos_url": m}, "named twice"},
		{map[string]string{"registry": "etcd", "etcd_peers": "s1=http://127.0.0.1:2380,s2=http://127.0.0.1:2380", "etcd_name": "s1", "mesos_url": m}, "peer URL of two members"},
		{map[string]string{"registry": "etcd", "etcd_peers": "s1=127.0.0.1:2380", "etcd_name": "s1"}, "not http://host:port"},
		{map[string]string{"registry": "etcd", "etcd_peers": "s1", "etcd_name": "s1"}, "not name=http://host:port"},
		{map[string]string{"registry": "etcd", "etcd_peers": three, "etcd_name": "s1"}, "set mesos_url too"},
		{map[string]string{"registry": "etcd", "etcd_peers": three, "etcd_name": "s1", "etcd_client_url": "http://127.0.0.1:2380", "mesos_url": m}, "give them different ports"},
		{map[string]string{"registry": "etcd", "etcd_client_url": "localhost"}, "etcd_client_url"},
		{map[string]string{"registry": "etcd", "etcd_heartbeat": "100ms", "etcd_election_timeout": "300ms"}, "at least 5 heartbeats"},
		{map[string]string{"registry": "etcd", "etcd_lease_ttl": "1500ms"}, "whole number of seconds"},
		{map[string]string{"registry": "etcd", "etcd_lease_ttl": "0s"}, "at least 1s"},
		{map[string]string{"registry": "etcd", "etcd_prefix": "ej"}, "must start with /"},
		{map[string]string{"registry": "etcd", "etcd_quota_bytes": "0"}, "etcd_quota_bytes"},
		{map[string]string{"registry": "etcd", "etcd_catchup_entries": "10"}, "etcd_catchup_entries: \"10\" is not a whole number of at least 100"},
		{map[string]string{"registry": "etcd", "etcd_compaction_retention": "10s"}, "etcd_compaction_retention: \"10s\" is not a duration of at least 30s"},
		{map[string]string{"registry": "etcd", "etcd_join": "true"}, "etcd_join: a joining member needs etcd_peers"},
		{map[string]string{"registry": "etcd", "etcd_join": "yes-please"}, "etcd_join"},
		{map[string]string{"registry": "etcd", "etcd_endpoints": "http://e:2379", "etcd_join": "true"}, "etcd_join configure the member"},
		{map[string]string{"registry": "etcd", "etcd_endpoints": "http://e1:2379", "etcd_peers": three, "etcd_name": "s1", "mesos_url": m}, "set one or the other"},
		{map[string]string{"registry": "etcd", "etcd_endpoints": "e1:2379", "mesos_url": m}, "etcd_endpoints"},
		{map[string]string{"registry": "etcd", "etcd_endpoints": "http://e1:2379"}, "set mesos_url too"},
	} {
		t.Run(tc.want, func(t *testing.T) { loadErr(t, nil, tc.env, tc.want) })
	}
}
