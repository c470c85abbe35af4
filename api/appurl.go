package api

import (
	"fmt"
	"net/url"
	"path"

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

// privateTmp are the directories tenant isolation gives each executor fresh and private
// (docs/tenancy.md): a file there on the host is not there for the task.
var privateTmp = []string{"/tmp", "/var/tmp", "/dev/shm"}

// warnAppURL warns, without refusing, of a file:// app URL under a directory tenant
// isolation makes private to each task: the publish succeeds (the file is there now), but
// every run fails at its fetch ("fetch file:///tmp/…: open …"), long after the publish.
func (s *appHandlers) warnAppURL(cfg app.Config, warn func(string)) {
	if s.tenancy == nil || s.tenancy.Mode != TenantIsolationOn {
		return
	}
	u, err := url.Parse(cfg.AppURL)
	if err != nil || u.Scheme != "file" {
		return
	}
	p := path.Clean(u.Path)
	for _, dir := range privateTmp {
		if p == dir || len(p) > len(dir) && p[:len(dir)+1] == dir+"/" {
			warn(fmt.Sprintf("appURL %s is under %s, which tenant isolation (tenant_isolation, on here) makes private to each "+
				"task: the executor will not find the file and every run will fail at its fetch; publish the package to this "+
				"scheduler (PUT /api/app/%s/package) or serve it over http(s), or keep it outside %s "+
				"where the namespace's user can read it (docs/tenancy.md)", cfg.AppURL, dir, cfg.AppName, dir))
			return
		}
	}
}
