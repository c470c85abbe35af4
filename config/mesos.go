package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/engine/mesos/detector"
)

// MesosFramework is how the scheduler registers with Mesos (the mesos_* settings besides
// mesos_url and mesos_role).
type MesosFramework struct {
	Name            string
	Checkpoint      bool
	FailoverTimeout time.Duration
	Principal       string
	Secret          string
}

// RemoteAgents reports whether Mesos agents may run on other machines (mesos_url is set), so
// they cannot read this machine's files.
func (c *Config) RemoteAgents() bool { return c.MesosURL != "" }

// MesosURLRedacted is mesos_url with the password of a zk:// URL hidden.
func (c *Config) MesosURLRedacted() string { return detector.Redact(c.MesosURL) }

// Advertised is the base URL agents reach this scheduler at: advertise_url, or
// http://hostname:http_port.
func (c *Config) Advertised() string {
	if c.AdvertiseURL != "" {
		return strings.TrimRight(c.AdvertiseURL, "/")
	}
	return "http://" + net.JoinHostPort(c.Hostname, strconv.Itoa(c.HTTPPort))
}

func (c *Config) validateMesos() []error {
	var errs []error
	switch u := strings.TrimSpace(c.MesosURL); {
	case u == "":
	case detector.IsZK(u):
		if _, err := detector.ParseURL(u); err != nil {
			errs = append(errs, fmt.Errorf("mesos_url: %w", err))
		}
	case strings.HasPrefix(u, "http://"), strings.HasPrefix(u, "https://"):
		if p, err := url.Parse(u); err != nil || p.Host == "" {
			errs = append(errs, fmt.Errorf("mesos_url: %q is not a URL like http://master:5050", u))
		}
	default:
		errs = append(errs, fmt.Errorf("mesos_url: %q must be http(s)://host:port of a Mesos master or zk://host:2181,host:2181/mesos", detector.Redact(u)))
	}
	if strings.TrimSpace(c.Mesos.Name) == "" {
		errs = append(errs, errors.New("mesos_framework_name: must not be empty"))
	}
	if c.Mesos.FailoverTimeout < time.Second {
		errs = append(errs, errors.New("mesos_failover_timeout: must be at least 1s (Mesos kills the framework's tasks once it expires without a subscribed scheduler)"))
	}
	if c.Mesos.Secret != "" && c.Mesos.Principal == "" {
		errs = append(errs, errors.New("mesos_secret: set mesos_principal too (the secret authenticates that principal)"))
	}
	if c.AdvertiseURL != "" {
		if u, err := url.Parse(c.AdvertiseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
			errs = append(errs, fmt.Errorf("advertise_url: %q must be an http(s) base URL like http://sched-1.example:8899", c.AdvertiseURL))
		}
	}
	return errs
}
