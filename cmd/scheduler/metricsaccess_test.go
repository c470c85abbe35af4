package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/config"
)

// Who reads /metrics, from the settings (issue 50): a login whenever teams or a metrics token
// are configured, unless metrics_access=open, which is warned about with teams; a metrics
// token must be read and long enough.
func TestMetricsAccess(t *testing.T) {
	dir := t.TempDir()
	good, short := filepath.Join(dir, "good"), filepath.Join(dir, "short")
	if err := os.WriteFile(good, []byte("0123456789abcdef-metrics\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(short, []byte("abc\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	teams := config.Config{AuthUsername: "admin", AuthPassword: "pw", UsersFile: "/etc/ej/users.yaml"}
	for _, c := range []struct {
		name             string
		cfg              config.Config
		access, token    string
		login, open      bool
		wantToken, warns bool
		err              string
	}{
		{name: "single team, auto", cfg: config.Config{AuthUsername: "admin", AuthPassword: "pw"}, access: "auto"},
		{name: "teams, auto", cfg: teams, access: "auto", login: true},
		{name: "OIDC, auto", cfg: config.Config{AuthUsername: "admin", AuthPassword: "pw", OIDC: config.OIDC{Issuer: "https://idp"}}, access: "auto", login: true},
		{name: "teams, open", cfg: teams, access: "open", open: true, warns: true},
		{name: "single team, login", cfg: config.Config{AuthUsername: "admin", AuthPassword: "pw"}, access: "login", login: true},
		{name: "single team, a token", cfg: config.Config{AuthUsername: "admin", AuthPassword: "pw"}, access: "auto", token: good, login: true, wantToken: true},
		{name: "a short token", cfg: teams, access: "auto", token: short, err: "at least 16 characters"},
		{name: "no token file", cfg: teams, access: "auto", token: filepath.Join(dir, "none"), err: "metrics_token_file"},
	} {
		cfg := c.cfg
		cfg.MetricsAccess, cfg.MetricsTokenFile = c.access, c.token
		var buf bytes.Buffer
		var o api.Options
		err := metricsAccess(cfg, slog.New(slog.NewTextHandler(&buf, nil)), &o)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || o.Metrics.Login != c.login || o.Metrics.Open != c.open || (o.Metrics.Token != "") != c.wantToken ||
			strings.Contains(buf.String(), "metrics_access=open") != c.warns {
			t.Errorf("%s: err %v, login %v open %v token %q, log %q", c.name, err, o.Metrics.Login, o.Metrics.Open, o.Metrics.Token, buf.String())
		}
	}
}
