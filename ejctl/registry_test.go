package ejctl

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/store"
)

// ejctl registry damaged/rm/put: an entry that does not decode is listed
// with its path and error, replaced with a valid value or removed.
func TestRegistryDamagedCommands(t *testing.T) {
	s := newTestServer(t, api.Credentials{})
	ctx := context.Background()
	for _, p := range []string{"/config/app/legacy_app", "/state/ready/legacy_job"} {
		if err := s.kv.Commit(ctx, store.Put(p, []byte(`{"appName":"legacy_app","ap`))); err != nil {
			t.Fatal(err)
		}
	}
	r := s.cli(t)
	out, _ := r.must(0, "registry", "damaged", "--scan")
	has(t, "damaged", out, "PATH", "/config/app/legacy_app", "config/app", "unexpected end of JSON input", "/state/ready/legacy_job")

	file := filepath.Join(t.TempDir(), "app.json")
	if err := os.WriteFile(file, []byte(`{"appName":"legacy_app","appURL":"http://h/a.tgz","bootstrapScript":"bin/start.sh"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _ = r.must(0, "registry", "put", "/config/app/legacy_app", file)
	has(t, "put", out, "replaced /config/app/legacy_app")
	if _, err := s.reg.Config().App(ctx, "legacy_app"); err != nil {
		t.Errorf("the repaired app: %v", err)
	}
	_, errs := r.must(2, "registry", "rm", "/state/ready/legacy_job")
	has(t, "rm without --yes", errs, "pass --yes")
	r.must(0, "registry", "rm", "--yes", "/state/ready/legacy_job")
	_, errs = r.must(1, "registry", "rm", "--yes", "/config/app/legacy_app")
	has(t, "rm of an entry that decodes", errs, "decodes")
	out, _ = r.must(0, "-o", "json", "registry", "damaged")
	if out != "[]\n" {
		t.Errorf("after the repair and the removal: %q", out)
	}
}
