package detector

import (
	"strings"
	"testing"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
)

// realJSON is the data of the znode a Mesos 1.11 master wrote (read from ZooKeeper).
const realJSON = `{"address":{"hostname":"127.0.0.1","ip":"127.0.0.1","port":45811},"capabilities":[{"type":"AGENT_UPDATE"},{"type":"AGENT_DRAINING"},{"type":"QUOTA_V2"}],"hostname":"127.0.0.1","id":"62e46f63-5868-4ab5-a5a0-8c8cd702a6e9","ip":16777343,"pid":"master@127.0.0.1:45811","port":45811,"version":"1.11.0"}`

func TestParseMember(t *testing.T) {
	for node, want := range map[string]member{
		"json.info_0000000003": {node: "json.info_0000000003", label: "json.info", seq: 3},
		"info_0000000010":      {node: "info_0000000010", label: "info", seq: 10},
		"0000000007":           {node: "0000000007", seq: 7},
	} {
		got, ok := parseMember(node)
		if !ok || got != want {
			t.Errorf("parseMember(%q) = %+v, %v", node, got, ok)
		}
	}
	for _, node := range []string{"log_replicas", "", "_", "json.info_x"} {
		if m, ok := parseMember(node); ok {
			t.Errorf("parseMember(%q) = %+v, want not a member", node, m)
		}
	}
}

func TestLowestIgnoresLabelsAndOtherNodes(t *testing.T) {
	m, ok := lowest([]string{"json.info_0000000012", "log_replicas", "info_0000000011", "json.info_0000000020"})
	if !ok || m.node != "info_0000000011" {
		t.Fatalf("lowest = %+v, %v", m, ok)
	}
	if _, ok := lowest([]string{"log_replicas"}); ok {
		t.Fatal("a group without members has a leader")
	}
}

func TestDecodeMaster(t *testing.T) {
	json := member{node: "json.info_0000000000", label: labelJSON}
	m, err := decodeMaster(json, []byte(realJSON), "http")
	if err != nil || m.URL != "http://127.0.0.1:45811" || m.ID != "62e46f63-5868-4ab5-a5a0-8c8cd702a6e9" || m.Version != "1.11.0" {
		t.Fatalf("decode real MasterInfo = %+v, %v", m, err)
	}
	// Without hostname and address, the packed network-order IP is used (as Mesos' redirect does).
	m, err = decodeMaster(json, []byte(`{"id":"x","ip":16885952,"port":5050}`), "https")
	if err != nil || m.URL != "https://192.168.1.1:5050" {
		t.Fatalf("packed ip = %+v, %v", m, err)
	}
	pbInfo := mesos.MasterInfo{ID: "pb", IP: 16777343, Port: ptr(uint32(5051)), Hostname: ptr("master-b")}
	raw, err := pbInfo.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	m, err = decodeMaster(member{node: "info_0000000001", label: labelProtobuf}, raw, "http")
	if err != nil || m.URL != "http://master-b:5051" || m.ID != "pb" {
		t.Fatalf("protobuf MasterInfo = %+v, %v", m, err)
	}
	m, err = decodeMaster(member{node: "0000000002"}, []byte("master@10.0.0.5:5050"), "http")
	if err != nil || m.URL != "http://10.0.0.5:5050" {
		t.Fatalf("pid = %+v, %v", m, err)
	}
	for _, c := range []struct {
		m    member
		data string
		want string
	}{
		{json, "{", "not valid JSON"},
		{json, `{"id":"x"}`, "names no host and port"},
		{member{node: "0000000002"}, "garbage", "not a master pid"},
		{member{node: "other_0000000002", label: "other"}, "{}", `unknown label "other"`},
	} {
		if _, err := decodeMaster(c.m, []byte(c.data), "http"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("decodeMaster(%s, %q) = %v, want %q", c.m.node, c.data, err, c.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }
