package main

import (
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/config"
)

// minMetricsToken is the shortest metrics token accepted (a guessable one
// would open every team's series).
const minMetricsToken = 16

// metricsAccess sets who reads GET /metrics (docs/operations.md#metrics):
// a login whenever teams are configured or a metrics token is, unless the
// operator set metrics_access=open, which is warned about with teams.
func metricsAccess(cfg config.Config, log *slog.Logger, o *api.Options) error {
	o.Metrics.Login, o.Metrics.Open = cfg.MetricsLogin(), cfg.MetricsAccess == "open"
	if cfg.MetricsTokenFile != "" {
		b, err := os.ReadFile(cfg.MetricsTokenFile)
		if err != nil {
			return fmt.Errorf("metrics_token_file: %w", err)
		}
		tok := strings.TrimSpace(string(b))
		if len(tok) < minMetricsToken || strings.ContainsAny(tok, " \t\r\n") {
			return fmt.Errorf("metrics_token_file %s: the token must be one word of at least %d characters (head -c 24 /dev/urandom | base64)", cfg.MetricsTokenFile, minMetricsToken)
		}
		o.Metrics.Token = tok
	}
	if cfg.MetricsOpenToTeams() {
		log.Warn("metrics_access=open: GET /metrics serves every namespace's series, job names included, to anyone who reaches the port, " +
			"though teams are configured; leave metrics_access unset (auto) to ask for a login")
	}
	return nil
}
