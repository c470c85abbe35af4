package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"

	"github.com/ejcloud/elasticjob/config"
	"github.com/ejcloud/elasticjob/mesos"
	"github.com/ejcloud/elasticjob/mesos/agents"
	"github.com/ejcloud/elasticjob/mesos/artifacts"
	"github.com/ejcloud/elasticjob/mesos/detector"
)

// executorFile is the executor's name in the agent's sandbox when agents fetch it from the
// scheduler.
const executorFile = "elasticjob-executor"

// newMesosClient builds the Mesos client from the settings. masterURL is the embedded master's
// URL or mesos_url; a zk:// URL gets a ZooKeeper detector that follows the leading master.
// The returned func releases the detector.
func newMesosClient(cfg config.Config, masterURL, frameworkID string, log *slog.Logger) (*mesos.Client, func(), error) {
	mc := mesos.Config{URL: masterURL, FrameworkID: frameworkID, User: cfg.User, Role: cfg.MesosRole,
		Hostname: cfg.Hostname, FrameworkName: cfg.Mesos.Name, FailoverTimeout: cfg.Mesos.FailoverTimeout,
		NoCheckpoint: !cfg.Mesos.Checkpoint, Principal: cfg.Mesos.Principal, Secret: cfg.Mesos.Secret,
		Logger: log}
	release := func() {}
	if detector.IsZK(masterURL) {
		u, err := detector.ParseURL(masterURL)
		if err != nil {
			return nil, nil, fmt.Errorf("mesos_url: %w", err)
		}
		d, err := detector.New(u, detector.Options{Logger: log})
		if err != nil {
			return nil, nil, err
		}
		mc.URL, mc.Detector, release = "", d, d.Close
	}
	return mesos.New(mc), release, nil
}

// agentsOf reads agents through the master the client is subscribed to (with a zk://
// mesos_url it follows the leader).
func agentsOf(client *mesos.Client, masterURL string) *agents.Client {
	a := agents.New(masterURL)
	if detector.IsZK(masterURL) {
		a.Master = client.Master
	}
	return a
}

// delivery is how agents get the executor.
type delivery struct {
	command   string       // what the agent runs
	uris      []mesos.URI  // what the agent's fetcher downloads first
	artifacts http.Handler // what this scheduler serves for it (nil: nothing)
}

// executorDelivery decides how agents get the executor. The embedded agent, and agents with
// executor_path installed, run it by path. With mesos_url (agents may be on other machines)
// this scheduler serves its own executor binary, content-addressed, and names it as an
// executable, cached URI fetched into the sandbox, run as ./elasticjob-executor.
func executorDelivery(cfg config.Config, log *slog.Logger) (delivery, error) {
	path, err := executorCommand(cfg)
	if err != nil {
		return delivery{}, err
	}
	if !cfg.RemoteAgents() || cfg.ExecutorPath != "" {
		return delivery{command: path}, nil
	}
	srv, err := artifacts.New(filepath.Join(cfg.DataDir, "artifacts"))
	if err != nil {
		return delivery{}, err
	}
	f, err := srv.Add("executor", executorFile, path)
	if err != nil {
		return delivery{}, fmt.Errorf("serve the executor to agents: %w", err)
	}
	u := cfg.Advertised() + f.Path()
	log.Info("agents fetch the executor from this scheduler", "url", u, "size", f.Size)
	if loopbackURL(cfg.Advertised()) {
		log.Warn("agents on other machines cannot fetch the executor from a loopback address: set advertise_url (or hostname) to an address they reach, and http_address to listen on it",
			"advertise_url", cfg.Advertised())
	}
	return delivery{
		command:   "./" + executorFile,
		uris:      []mesos.URI{{Value: u, Executable: true, Cache: true, Extract: false}},
		artifacts: srv,
	}, nil
}

func loopbackURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	if u.Hostname() == "localhost" {
		return true
	}
	ip := net.ParseIP(u.Hostname())
	return ip != nil && ip.IsLoopback()
}
