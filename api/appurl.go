package api

import (
	"fmt"
	"net/url"

	"github.com/ejcloud/elasticjob/app"
)

// checkAppURL refuses a file:// app URL when Mesos agents may run on other machines
// (Options.Apps.RejectFileAppURLs, set when mesos_url is): the executor fetches the app on the agent,
// where a path on the scheduler's machine does not exist, so every run would fail at fetch time.
// The embedded single-node mode (and allow_file_app_urls=true) keeps accepting file:// URLs.
func (s *appHandlers) checkAppURL(cfg app.Config) error {
	if !s.noFiles {
		return nil
	}
	u, err := url.Parse(cfg.AppURL)
	if err != nil || u.Scheme != "file" {
		return nil // other problems are reported by app validation
	}
	return fmt.Errorf("%w: appURL %q is a file:// URL, but this scheduler runs on a Mesos cluster (mesos_url is set) "+
		"whose agents fetch the app on their own machines, where that file does not exist; serve the package over "+
		"http(s) from a place every agent can reach (a web server, artifact repository or object store), or upload it "+
		"to this scheduler (PUT /api/app/{appName}/package), or, if every "+
		"agent runs on this machine, set allow_file_app_urls=true", app.ErrInvalid, cfg.AppURL)
}
