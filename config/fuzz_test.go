package config

import (
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/internal/fuzzing"
)

// refProperties is a plain reading of the properties format docs/configuration.md
// documents: lines (a final line without a newline counts; a trailing \r
// is dropped), a leading byte-order mark ignored, blank lines and lines
// starting with # or ! skipped, otherwise key=value or key:value split at
// the first separator, key and value trimmed. It returns the last value of
// each key, and false when a line is not a known key=value.
func refProperties(text string) (map[string]string, bool) {
	known := map[string]bool{}
	for _, s := range settings {
		known[s.key] = true
	}
	out := map[string]string{}
	text = strings.TrimPrefix(text, "\ufeff")
	lines := strings.Split(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for _, line := range lines {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i < 0 {
			return nil, false
		}
		k := strings.TrimSpace(line[:i])
		if !known[k] {
			return nil, false
		}
		out[k] = strings.TrimSpace(line[i+1:])
	}
	return out, true
}

// FuzzPropertiesFile loads any file as --config. Properties: no panic, a
// bounded load; a failure is an error naming the file (and line) or the
// setting at fault; a file the documented format rejects does not load;
// and a file that loads gives exactly the settings the same key=value
// pairs give through the environment.
func FuzzPropertiesFile(f *testing.F) {
	for _, s := range []string{
		"# ElasticJob-Cloud scheduler\nhostname=127.0.0.1\nhttp_port=8899\nzk_servers=127.0.0.1:2181\nzk_namespace=elasticjob-cloud\n",
		"\ufeffhttp_port : 9000\r\n! comment\r\n\r\nlog_level=debug", "mesos_url=zk://u:p@127.0.0.1:2181,127.0.0.2:2181/mesos",
		"event_trace_rdb_driver=com.mysql.jdbc.Driver\nevent_trace_rdb_url=jdbc:mysql://127.0.0.1:3306/elasticjob\n",
		"http_port=99999", "nope=1", "http_port", "=x", "http_port=1\nhttp_port=x", "history_retention=-1h", "time_zone=../../etc/passwd",
		"max_body_bytes=1023", "embedded_cpus=NaN", "embedded_cpus=-0", "mesos_checkpoint=maybe", "advertise_url=http://h:1/?q",
		"http_address=0.0.0.0", "auth_username=a\nauth_password=b\nhttp_address=0.0.0.0", "data_dir=", "reconcile_interval_minutes=+5",
		"mesos_url=zk://", "mesos_url=http://", "offer_hold=1e9h", "log_level=info\x00", "\x00=\x00", "key\\=x=1", "http_port=1\\\n2",
	} {
		f.Add([]byte(s))
	}
	f.Add([]byte("hostname=" + strings.Repeat("h", 70_000) + "\n")) // a line longer than bufio.Scanner's default
	path := filepath.Join(f.TempDir(), "elasticjob-cloud-scheduler.properties")
	f.Fuzz(func(t *testing.T, content []byte) {
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		var got Config
		var err error
		fuzzing.Bounded(t, "Load", func() { got, err = Load([]string{"--config", path}, envOf(nil), io.Discard) })
		pairs, refOK := refProperties(string(content))
		if err != nil {
			if msg := err.Error(); !strings.Contains(msg, "config file "+path) && !namesSetting(msg) {
				t.Fatalf("Load of %.300q: error %.300q names neither the file nor a setting", content, msg)
			}
			return
		}
		for _, v := range []float64{got.EmbeddedCPUs, got.EmbeddedMemMB} {
			if !(v >= 0) || math.IsInf(v, 0) {
				t.Fatalf("%.300q: a resource setting loaded as %v", content, v)
			}
		}
		if !refOK {
			t.Fatalf("Load accepted %.300q, which is not key=value lines of known keys", content)
		}
		viaEnv, err := Load(nil, envOf(pairs), io.Discard)
		if err != nil {
			t.Fatalf("%.300q loads from the file but not from the environment %v: %v", content, pairs, err)
		}
		got.ConfigFile = ""
		if !same(got, viaEnv) {
			t.Fatalf("%.300q: the file gives\n%+v\nthe environment gives\n%+v", content, got, viaEnv)
		}
	})
}

// namesSetting reports whether msg mentions a setting's key.
func namesSetting(msg string) bool {
	for _, s := range settings {
		if strings.Contains(msg, s.key) {
			return true
		}
	}
	return false
}
