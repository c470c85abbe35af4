package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
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
	// TaskUsers is mesos_task_users: namespace=user,… ("*" for every namespace not named).
	TaskUsers string
}

// TaskUserOf is the OS user the Mesos agents run namespace ns's executors and tasks as
// (mesos_task_users: its entry, else the `*` entry); "" leaves it to the framework's user
// (the `user` setting, else the agent's).
func (m MesosFramework) TaskUserOf(ns string) string {
	users, _ := parseTaskUsers(m.TaskUsers)
	if u, ok := users[ns]; ok {
		return u
	}
	return users["*"]
}

// osUser is a user name (or uid) Mesos agents can switch to.
var osUser = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*\$?$`)

func parseTaskUsers(v string) (map[string]string, error) {
	m := map[string]string{}
	for _, kv := range strings.Split(v, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		ns, user, ok := strings.Cut(kv, "=")
		ns, user = strings.TrimSpace(ns), strings.TrimSpace(user)
		switch {
		case !ok:
			return nil, fmt.Errorf("%q is not namespace=user", kv)
		case ns != "*" && !kubeNSName.MatchString(ns):
			return nil, fmt.Errorf("%q: %q is not a namespace name (or * for every other one)", kv, ns)
		case !osUser.MatchString(user):
			return nil, fmt.Errorf("%q: %q is not a user name", kv, user)
		}
		if _, dup := m[ns]; dup {
			return nil, fmt.Errorf("%q: namespace %s is given two users", kv, ns)
		}
		m[ns] = user
	}
	return m, nil
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

// checkMesosURL says what is wrong with a Mesos master's address (mesos_url, or a
// cluster's in clusters_file).
func checkMesosURL(u string) error {
	switch {
	case detector.IsZK(u):
		if _, err := detector.ParseURL(u); err != nil {
			return err
		}
	case strings.HasPrefix(u, "http://"), strings.HasPrefix(u, "https://"):
		if p, err := url.Parse(u); err != nil || p.Host == "" {
			return fmt.Errorf("%q is not a URL like http://master:5050", u)
		}
	default:
		return fmt.Errorf("%q must be http(s)://host:port of a Mesos master or zk://host:2181,host:2181/mesos", detector.Redact(u))
	}
	return nil
}

func (c *Config) validateMesos() []error {
	var errs []error
	if u := strings.TrimSpace(c.MesosURL); u != "" {
		if err := checkMesosURL(u); err != nil {
			errs = append(errs, fmt.Errorf("mesos_url: %w", err))
		}
	}
	if strings.TrimSpace(c.Mesos.Name) == "" {
		errs = append(errs, errors.New("mesos_framework_name: must not be empty"))
	}
	if c.Mesos.FailoverTimeout < time.Second {
		errs = append(errs, errors.New("mesos_failover_timeout: must be at least 1s (Mesos kills the framework's tasks once it expires without a subscribed scheduler)"))
	}
	if _, err := parseTaskUsers(c.Mesos.TaskUsers); err != nil {
		errs = append(errs, fmt.Errorf("mesos_task_users: %w", err))
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
