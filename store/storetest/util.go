package storetest

import (
	"bytes"
	"slices"
	"strconv"
	"testing"

	"github.com/ejcloud/elasticjob/store"
)

// equal compares string lists, treating nil and empty as equal.
func equal(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s = %q, want %q", what, got, want)
	}
}

// equalNodes compares nodes, treating nil and empty values as equal.
func equalNodes(t *testing.T, what string, got, want []store.Node) {
	t.Helper()
	same := len(got) == len(want)
	for i := 0; same && i < len(got); i++ {
		g, w := got[i], want[i]
		same = g.Path == w.Path && g.Version == w.Version && bytes.Equal(g.Value, w.Value)
	}
	if !same {
		t.Fatalf("%s = %s, want %s", what, nodesString(got), nodesString(want))
	}
}

func nodesString(ns []store.Node) string {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, n := range ns {
		if i > 0 {
			b.WriteString(" ")
		}
		if i == 10 {
			b.WriteString("...")
			break
		}
		b.WriteString(n.Path + "=" + string(truncate(n.Value)) + "@v")
		b.WriteString(strconv.FormatInt(n.Version, 10))
	}
	b.WriteByte(']')
	return b.String()
}

func truncate(v []byte) []byte {
	if len(v) > 32 {
		return append(v[:32:32], "..."...)
	}
	return v
}
