package engine

import "testing"

func TestClusterQualifiedIDs(t *testing.T) {
	for _, c := range []struct{ id, cluster, local string }{
		{QualifyID("dc1", "9d1-S0"), "dc1", "9d1-S0"},
		{"9d1-S0", "", "9d1-S0"}, // a single engine's id
		{"node-1.example.com", "", "node-1.example.com"},
		{"Bad_Name:x", "", "Bad_Name:x"}, // not a cluster name: not a qualified id
		{QualifyID("", "x"), "", "x"},
		{QualifyID("dc1", ""), "", ""},
	} {
		if cl, l := SplitID(c.id); cl != c.cluster || l != c.local {
			t.Errorf("SplitID(%q) = %q, %q; want %q, %q", c.id, cl, l, c.cluster, c.local)
		}
	}
	if ClusterOf("k8s-prod:node-1") != "k8s-prod" {
		t.Error("ClusterOf")
	}
	for _, bad := range []string{"", "A", "-a", "a_b", "a:b"} {
		if CheckClusterName(bad) == nil {
			t.Errorf("CheckClusterName(%q): no error", bad)
		}
	}
}
