package main

import (
	"context"
	"io"
	"strings"
	"testing"
)

func TestRunRefusesBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-shape", "consul"}, `-shape "consul": want zk, etcd, embedded or kube`},
		{[]string{"-duration", "0s"}, "-duration and -jobs must be positive"},
		{[]string{"-jobs", "-1"}, "-duration and -jobs must be positive"},
		{[]string{"-min-gap", "30s", "-max-gap", "5s"}, "-min-gap must be positive and at most -max-gap"},
		{[]string{"-session", "0s"}, "-session must be positive"},
		{[]string{"-recheck", t.TempDir()}, "check.json"},
	} {
		err := run(context.Background(), c.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}
