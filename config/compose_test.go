package config

import (
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// composeFile is the part of docker-compose.yml this test reads (anchors
// and merge keys resolved by the parser, as Compose resolves them).
type composeFile struct {
	Services map[string]struct {
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		Ports       []string          `yaml:"ports"`
	} `yaml:"services"`
}

var interpolation = regexp.MustCompile(`\$\{[^}]*\}`)

// Every scheduler in docker-compose.yml starts with the settings it is
// given: flags and environment names exist and validate, and the shape is
// the cluster one (ZooKeeper, a Mesos master, MySQL history), with at
// least two instances that advertise distinct host names.
func TestComposeSchedulersLoad(t *testing.T) {
	b, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	hosts := map[string]string{}
	for name, svc := range f.Services {
		if !strings.HasPrefix(name, "scheduler") {
			continue
		}
		getenv := func(k string) (string, bool) {
			v, ok := svc.Environment[k]
			return interpolation.ReplaceAllString(v, "from-env-file"), ok
		}
		cfg, err := Load(svc.Command, getenv, io.Discard)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if cfg.ZKServers == "" || cfg.MesosURL == "" || cfg.RDBDriver != "mysql" || cfg.AuthUsername == "" {
			t.Errorf("%s: zk_servers %q, mesos_url %q, event_trace_rdb_driver %q, auth_username %q: not the cluster shape",
				name, cfg.ZKServers, cfg.MesosURL, cfg.RDBDriver, cfg.AuthUsername)
		}
		if other, dup := hosts[cfg.Hostname]; dup {
			t.Errorf("%s and %s both advertise hostname %q", name, other, cfg.Hostname)
		}
		hosts[cfg.Hostname] = name
	}
	if len(hosts) < 2 {
		t.Fatalf("docker-compose.yml has %d scheduler services, want at least 2", len(hosts))
	}
}
