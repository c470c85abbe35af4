package ejctl

import (
	"os"
	"path/filepath"
	"testing"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestSettingsPrecedence(t *testing.T) {
	file := FileConfig{Addr: "http://file:8899", Token: "file-token"}
	cases := []struct {
		name                  string
		flagAddr, flagToken   string
		env                   map[string]string
		file                  FileConfig
		addr, token, from, tf string
	}{
		{"default", "", "", nil, FileConfig{}, DefaultAddr, "", "default", ""},
		{"file", "", "", nil, file, "http://file:8899", "file-token", "config file", "config file"},
		{"env over file", "", "", map[string]string{"EJCTL_ADDR": "http://file:8899/", "EJCTL_TOKEN": "env-token"}, file,
			"http://file:8899", "env-token", "env", "env"},
		{"flags over env", "flag:9000", "flag-token", map[string]string{"EJCTL_ADDR": "http://env:1", "EJCTL_TOKEN": "env-token"}, file,
			"http://flag:9000", "flag-token", "flag", "flag"},
		// The file's token belongs to the file's address only.
		{"file token kept from other address", "http://other:8899", "", nil, file, "http://other:8899", "", "flag", ""},
		{"file token without address goes anywhere", "http://other:8899", "", nil, FileConfig{Token: "t"}, "http://other:8899", "t", "flag", "config file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := resolve(c.flagAddr, c.flagToken, "", envOf(c.env), c.file)
			if s.Addr != c.addr || s.Token != c.token || s.AddrFrom != c.from || s.TokenFrom != c.tf {
				t.Errorf("got %s %q (%s, %s), want %s %q (%s, %s)", s.Addr, s.Token, s.AddrFrom, s.TokenFrom, c.addr, c.token, c.from, c.tf)
			}
		})
	}
}

func TestConfigPath(t *testing.T) {
	for _, c := range []struct {
		flag string
		env  map[string]string
		want string
	}{
		{"/x/c.json", map[string]string{"EJCTL_CONFIG": "/y"}, "/x/c.json"},
		{"", map[string]string{"EJCTL_CONFIG": "/y/c.json", "HOME": "/h"}, "/y/c.json"},
		{"", map[string]string{"XDG_CONFIG_HOME": "/xdg", "HOME": "/h"}, "/xdg/ejctl/config.json"},
		{"", map[string]string{"HOME": "/h"}, "/h/.config/ejctl/config.json"},
	} {
		got, err := configPath(c.flag, envOf(c.env))
		if err != nil || got != c.want {
			t.Errorf("configPath(%q, %v) = %q, %v; want %q", c.flag, c.env, got, err, c.want)
		}
	}
	if _, err := configPath("", envOf(nil)); err == nil {
		t.Error("no HOME, no XDG_CONFIG_HOME: want an error")
	}
}

func TestConfigFileIsPrivate(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sub", "config.json")
	if c, err := loadConfig(p); err != nil || c != (FileConfig{}) {
		t.Fatalf("a missing file: %+v %v", c, err)
	}
	want := FileConfig{Addr: "http://a:1", Token: "secret"}
	if err := saveConfig(p, want); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(p)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v %v, want 0600", info.Mode(), err)
	}
	if got, err := loadConfig(p); err != nil || got != want {
		t.Fatalf("read back %+v %v", got, err)
	}
	if err := os.WriteFile(p, []byte("{nope"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadConfig(p); err == nil {
		t.Fatal("a malformed config file was accepted")
	}
}

// The namespace: -n, else EJCTL_NAMESPACE, else the config file's, else
// default.
func TestResolveNamespace(t *testing.T) {
	file := FileConfig{Namespace: "pay"}
	for _, c := range []struct {
		flag string
		env  map[string]string
		file FileConfig
		want string
	}{
		{"", nil, FileConfig{}, "default"},
		{"", nil, file, "pay"},
		{"", map[string]string{"EJCTL_NAMESPACE": "search"}, file, "search"},
		{"ops", map[string]string{"EJCTL_NAMESPACE": "search"}, file, "ops"},
	} {
		if s := resolve("", "", c.flag, envOf(c.env), c.file); s.Namespace != c.want {
			t.Errorf("flag %q env %v file %q: namespace %q, want %q", c.flag, c.env, c.file.Namespace, s.Namespace, c.want)
		}
	}
}
