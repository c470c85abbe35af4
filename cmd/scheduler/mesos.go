package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"

	"github.com/ejcloud/elasticjob/config"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/engine/mesos"
	"github.com/ejcloud/elasticjob/engine/mesos/agents"
	"github.com/ejcloud/elasticjob/engine/mesos/artifacts"
	"github.com/ejcloud/elasticjob/engine/mesos/detector"
)

// executorFile is the executor's name in the agent's sandbox when agents fetch it from the
// scheduler.
const executorFile = "elasticjob-executor"

// javaJarFile is the Java library beside the executor binary (make build puts it in bin/):
// served to agents with the executor, fetched into the sandbox beside it.
const javaJarFile = "elasticjob-cloud-executor.jar"

// masters finds the leading Mesos master: masterURL itself (the embedded
// master, or an http mesos_url), or, for a zk:// mesos_url, a detector
// following the masters' ZooKeeper group, shared by every term's client and
// by the agents reader for the life of the process.
type masters struct {
	url string
	det *detector.Detector // nil unless zk://
}

func newMasters(masterURL string, log *slog.Logger) (*masters, error) {
	m := &masters{url: masterURL}
	if !detector.IsZK(masterURL) {
		return m, nil
	}
	u, err := detector.ParseURL(masterURL)
	if err != nil {
		return nil, fmt.Errorf("mesos_url: %w", err)
	}
	if m.det, err = detector.New(u, detector.Options{Logger: log}); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *masters) close() {
	if m.det != nil {
		m.det.Close()
	}
}

// newMesosClient builds a Mesos client for one term.
func newMesosClient(cfg config.Config, m *masters, frameworkID string, log *slog.Logger) *mesos.Client {
	mc := mesos.Config{URL: m.url, FrameworkID: frameworkID, User: cfg.User, Role: cfg.MesosRole,
		Hostname: cfg.Hostname, FrameworkName: cfg.Mesos.Name, FailoverTimeout: cfg.Mesos.FailoverTimeout,
		NoCheckpoint: !cfg.Mesos.Checkpoint, Principal: cfg.Mesos.Principal, Secret: cfg.Mesos.Secret,
		Logger: log}
	if m.det != nil {
		mc.URL, mc.Detector = "", m.det
	}
	return mesos.New(mc)
}

// agentsClient reads agents through the leading master, with the
// framework credential (the embedded master requires it).
func (m *masters) agentsClient(cfg config.Config) *agents.Client {
	a := agents.New(m.url)
	a.Principal, a.Secret = cfg.Mesos.Principal, cfg.Mesos.Secret
	if m.det != nil {
		a.Master = func() string {
			if cur, ok := m.det.Current(); ok {
				return cur.URL
			}
			return ""
		}
	}
	return a
}

// delivery is how agents get the executor.
type delivery struct {
	command   string       // what the agent runs
	uris      []engine.URI // what the agent's fetcher downloads first
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
	uris := []engine.URI{{Value: u, Executable: true, Cache: true, Extract: false}}
	if jar := filepath.Join(filepath.Dir(path), javaJarFile); fileExists(jar) {
		jf, err := srv.Add("java", javaJarFile, jar)
		if err != nil {
			return delivery{}, fmt.Errorf("serve the Java library to agents: %w", err)
		}
		uris = append(uris, engine.URI{Value: cfg.Advertised() + jf.Path(), Cache: true, Extract: false})
		log.Info("agents fetch the Java library beside the executor", "url", cfg.Advertised()+jf.Path(), "size", jf.Size)
	}
	return delivery{command: "./" + executorFile, uris: uris, artifacts: srv}, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
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
