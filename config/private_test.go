package config

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEveryPathSettingIsClassified: a setting whose key says it names a
// file or directory (…_file, …_dir, …_config, …_jar, …_path, …_root) is
// either hidden from tasks (privateFileSettings) or shared with a reason
// (sharedPathSettings). A new one in neither fails here: decide.
func TestEveryPathSettingIsClassified(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range settings {
		if seen[s.key] {
			continue
		}
		seen[s.key] = true
		pathLike := false
		for _, suffix := range []string{"_file", "_dir", "_config", "_jar", "_path", "_root", "_key", "_cert"} {
			pathLike = pathLike || strings.HasSuffix(s.key, suffix)
		}
		_, private := privateFileSettings[s.key]
		_, shared := sharedPathSettings[s.key]
		switch {
		case pathLike && !private && !shared:
			t.Errorf("setting %s names a path: add it to privateFileSettings (hidden from tasks) or sharedPathSettings (with why)", s.key)
		case private && shared:
			t.Errorf("setting %s is both private and shared", s.key)
		}
	}
	for key := range privateFileSettings {
		if !seen[key] {
			t.Errorf("privateFileSettings names %s, which is no setting", key)
		}
	}
}

// TestPrivateFilesHidesEverySetting: each private setting, set through
// the settings table as a properties file would, comes out of
// PrivateFiles, absolute, with the properties file.
func TestPrivateFilesHidesEverySetting(t *testing.T) {
	var c Config
	c.ConfigFile = "conf/scheduler.properties"
	var want []string
	for _, s := range settings {
		if _, ok := privateFileSettings[s.key]; !ok {
			continue
		}
		p := "/etc/elasticjob/" + s.key
		if err := s.set(&c, p); err != nil {
			t.Fatalf("%s: %v", s.key, err)
		}
		want = append(want, p)
	}
	abs, _ := filepath.Abs("conf/scheduler.properties")
	want = append(want, abs)
	got := c.PrivateFiles()
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("PrivateFiles() = %v lacks %s", got, w)
		}
	}
}
