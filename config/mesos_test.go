package config

import (
	"fmt"
	"strings"
	"testing"
)

func TestMesosURLForms(t *testing.T) {
	for _, u := range []string{"http://m:5050", "https://m:5050/", "zk://z1:2181,z2:2181/mesos", "zk://mesos:pw@z1:2181/mesos"} {
		c := load(t, []string{"--mesos-url", u}, nil)
		if !c.RemoteAgents() {
			t.Errorf("mesos_url %s: RemoteAgents() = false", u)
		}
	}
}

func TestMesosSecretsRedacted(t *testing.T) {
	c := load(t, nil, map[string]string{"mesos_url": "zk://mesos:zkpassword@z1:2181/mesos", "mesos_principal": "ej",
		"mesos_secret": "topsecret", "hostname": "sched-1.example", "http_port": "9000"})
	r := fmt.Sprint(c.Redacted())
	for _, secret := range []string{"topsecret", "zkpassword"} {
		if strings.Contains(r, secret) {
			t.Errorf("Redacted() shows %q: %s", secret, r)
		}
	}
	for _, want := range []string{"mesos_secret:***", "zk://mesos:***@z1:2181/mesos", "mesos_principal:ej"} {
		if !strings.Contains(r, want) {
			t.Errorf("Redacted() lacks %q: %s", want, r)
		}
	}
	if got := c.Advertised(); got != "http://sched-1.example:9000" {
		t.Errorf("Advertised() = %q", got)
	}
	c = load(t, nil, map[string]string{"advertise_url": "https://ej.example/"})
	if got := c.Advertised(); got != "https://ej.example" {
		t.Errorf("Advertised() = %q", got)
	}
}

// TestMesosTaskUsers: mesos_task_users names each namespace's user, `*` the others'; a
// namespace without either runs as the framework's user ("").
func TestMesosTaskUsers(t *testing.T) {
	c := load(t, nil, map[string]string{"mesos_url": "http://m:5050", "mesos_task_users": "pay=pay-jobs, search=1001,*=nobody"})
	for ns, want := range map[string]string{"pay": "pay-jobs", "search": "1001", "default": "nobody", "other": "nobody"} {
		if got := c.Mesos.TaskUserOf(ns); got != want {
			t.Errorf("TaskUserOf(%s) = %q, want %q", ns, got, want)
		}
	}
	c = load(t, nil, map[string]string{"mesos_url": "http://m:5050", "mesos_task_users": "pay=pay-jobs"})
	if got := c.Mesos.TaskUserOf("search"); got != "" {
		t.Errorf("TaskUserOf(search) = %q without a * entry", got)
	}
	for _, bad := range []string{"pay", "pay=", "Pay=x", "pay=a b", "pay=x,pay=y", "pay=../x"} {
		loadErr(t, nil, map[string]string{"mesos_url": "http://m:5050", "mesos_task_users": bad}, "mesos_task_users")
	}
}
