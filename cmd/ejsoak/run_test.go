package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/internal/soak"
)

func TestRunRefusesBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-shape", "consul"}, `-shape "consul": want zk, etcd, embedded, real-mesos, kube, clusters or clusters-real`},
		{[]string{"-periods", "5,7"}, `-periods "5,7": each must be a number of seconds dividing 60`},
		{[]string{"-periods", "5,x"}, `got "x"`},
		{[]string{"-shape", "real-mesos", "-agents", "0"}, "-agents must be from 1 to 8"},
		{[]string{"-duration", "0s"}, "-duration and -jobs must be positive"},
		{[]string{"-jobs", "-1"}, "-duration and -jobs must be positive"},
		{[]string{"-min-gap", "30s", "-max-gap", "5s"}, "-min-gap must be positive and at most -max-gap"},
		{[]string{"-session", "0s"}, "-session must be positive"},
		{[]string{"-recheck", t.TempDir()}, "check.json"},
		{[]string{"-raft-log", t.TempDir()}, "-raft-log needs -key"},
		{[]string{"-raft-log", t.TempDir(), "-key", "ready/sk1"}, "no etcd WAL"},
		{[]string{"-expect", "sk001"}, "-expect needs -recheck"},
	} {
		err := run(context.Background(), c.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

func TestParsePeriods(t *testing.T) {
	got, err := parsePeriods(" 5, 6,10,12,15")
	if err != nil || len(got) != 5 || got[0] != 5 || got[4] != 15 {
		t.Fatalf("parsePeriods: %v, %v", got, err)
	}
	if got, err := parsePeriods(""); got != nil || err != nil {
		t.Fatalf("parsePeriods(\"\"): %v, %v", got, err)
	}
	for _, bad := range []string{"0", "-5", "7", "61", "5,,6"} {
		if _, err := parsePeriods(bad); err == nil {
			t.Errorf("parsePeriods(%q): no error", bad)
		}
	}
}

func TestRealMesosDefaultsKeepGivenFlags(t *testing.T) {
	c := soak.Config{Jobs: 200, Trigger: time.Second}
	periods := ""
	realMesosDefaults(&c, map[string]bool{"trigger-every": true}, &periods)
	if c.Jobs != 30 || periods != "5,6,10,12,15" || c.Trigger != time.Second || c.Change != 5*time.Second {
		t.Fatalf("defaults: %+v, periods %q", c, periods)
	}
}
