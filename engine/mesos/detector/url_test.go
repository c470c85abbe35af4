package detector

import (
	"slices"
	"strings"
	"testing"
)

func TestParseURL(t *testing.T) {
	cases := []struct {
		in      string
		servers []string
		path    string
		digest  string
	}{
		{"zk://host1:2181,host2:2181/mesos", []string{"host1:2181", "host2:2181"}, "/mesos", ""},
		{"zk://127.0.0.1:37934/mesos/", []string{"127.0.0.1:37934"}, "/mesos", ""},
		{" zk://zk1/a/b ", []string{"zk1:2181"}, "/a/b", ""},
		{"zk://user:p@ss@zk1:2181,zk2:2182/mesos", []string{"zk1:2181", "zk2:2182"}, "/mesos", "user:p@ss"},
		{"zk://[::1]:2181/mesos", []string{"[::1]:2181"}, "/mesos", ""},
	}
	for _, c := range cases {
		u, err := ParseURL(c.in)
		if err != nil {
			t.Fatalf("ParseURL(%q): %v", c.in, err)
		}
		if !slices.Equal(u.Servers, c.servers) || u.Path != c.path || u.Digest != c.digest {
			t.Errorf("ParseURL(%q) = %+v", c.in, u)
		}
	}
}

func TestParseURLErrors(t *testing.T) {
	for in, want := range map[string]string{
		"http://master:5050":          "must start with zk://",
		"zk://host:2181":              "needs the path",
		"zk://host:2181/":             "needs the path",
		"zk:///mesos":                 "names no ZooKeeper server",
		"zk://:secret@host:2181/m":    "credentials must be user:password",
		"zk://user@host:2181/m":       "credentials must be user:password",
		"zk://host:2181/mesos//x":     "bad path",
		"zk://u:topsecret@h:2181/../": "bad path",
	} {
		_, err := ParseURL(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseURL(%q) = %v, want an error containing %q", in, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "topsecret") {
			t.Errorf("error shows the password: %v", err)
		}
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"zk://user:topsecret@h1:2181,h2:2181/mesos": "zk://user:***@h1:2181,h2:2181/mesos",
		"zk://h1:2181/mesos":                        "zk://h1:2181/mesos",
		"http://master:5050":                        "http://master:5050",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
	u, err := ParseURL("zk://user:topsecret@h1/mesos")
	if err != nil {
		t.Fatal(err)
	}
	if s := u.String(); s != "zk://user:***@h1:2181/mesos" {
		t.Errorf("String() = %q", s)
	}
}
