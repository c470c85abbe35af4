package app

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateName(t *testing.T) {
	for _, bad := range []string{"", ".", "..", "a/b", "a b", "x\x00", strings.Repeat("a", 101)} {
		if err := ValidateName("appName", bad); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "appName") {
			t.Errorf("ValidateName(%q) = %v", bad, err)
		}
	}
	for _, good := range []string{"a", "my_app", "a.b-c_9", strings.Repeat("a", 100)} {
		if err := ValidateName("appName", good); err != nil {
			t.Errorf("ValidateName(%q) = %v", good, err)
		}
	}
}

func TestValidateConfig(t *testing.T) {
	ok := Default()
	ok.AppName, ok.AppURL, ok.BootstrapScript = "a", "http://h/app.tgz", "bin/start.sh"
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(*Config){
		"appURL":                  func(c *Config) { c.AppURL = "ftp://h/x" },
		"has no host":             func(c *Config) { c.AppURL = "http:///x" },
		"absolute file URL":       func(c *Config) { c.AppURL = "file:relative" },
		"bootstrapScript is":      func(c *Config) { c.BootstrapScript = "" },
		"relative path":           func(c *Config) { c.BootstrapScript = "/bin/sh" },
		"stay inside":             func(c *Config) { c.BootstrapScript = "../x.sh" },
		"cpuCount":                func(c *Config) { c.CPUCount = 0 },
		"memoryMB":                func(c *Config) { c.MemoryMB = 0.5 },
		"eventTraceSamplingCount": func(c *Config) { c.EventTraceSamplingCount = -1 },
		"containerImage":          func(c *Config) { c.ContainerImage = "Registry Example/app:1" },
	}
	for want, mod := range cases {
		c := ok
		mod(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v", want, err)
		}
	}
	for _, image := range []string{"localhost/busybox:1", "registry.example.com:5000/team/app:v1.2-rc",
		"app@sha256:" + strings.Repeat("ab", 32)} {
		c := ok
		c.ContainerImage = image
		if err := c.Validate(); err != nil {
			t.Errorf("containerImage %s: %v", image, err)
		}
	}
	c := ok
	c.BootstrapScript = `bin\start.sh arg`
	if err := c.Validate(); err != nil {
		t.Errorf("the manual's bin\\start.sh: %v", err)
	}
}
