package ejctl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// DefaultAddr is the scheduler's address when nothing names one.
const DefaultAddr = "http://127.0.0.1:8899"

// FileConfig is what the config file holds.
type FileConfig struct {
	Addr  string `json:"addr,omitempty"`
	Token string `json:"token,omitempty"`
	// Namespace is the namespace commands act in when -n does not say
	// (ejctl ns use NAME writes it).
	Namespace string `json:"namespace,omitempty"`
}

// Settings are the resolved address and token, with where each came from
// (for messages).
type Settings struct {
	Addr, Token         string
	AddrFrom, TokenFrom string // "flag", "env", "config file", "default", ""
	// Namespace is the one every call is in (-n, EJCTL_NAMESPACE, the
	// config file; default: the scheduler's default namespace).
	Namespace, NamespaceFrom string
	ConfigPath               string
}

// configPath is the config file: the flag, EJCTL_CONFIG, or
// $XDG_CONFIG_HOME/ejctl/config.json (~/.config/ejctl/config.json).
func configPath(flagValue string, getenv func(string) string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if p := getenv("EJCTL_CONFIG"); p != "" {
		return p, nil
	}
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			return "", errors.New("cannot find the config file: set HOME, XDG_CONFIG_HOME or EJCTL_CONFIG")
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "ejctl", "config.json"), nil
}

// loadConfig reads the config file; a missing file is an empty config.
func loadConfig(path string) (FileConfig, error) {
	var c FileConfig
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("read config %s: %w", path, err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("config %s is not valid JSON: %w", path, err)
	}
	return c, nil
}

// saveConfig writes the config file with mode 0600 (it holds a token),
// atomically.
func saveConfig(path string, c FileConfig) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("save config: %w", err)
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("save config: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".config-*.json")
	if err != nil {
		return fmt.Errorf("save config: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("save config: %w", err)
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("save config: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("save config: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("save config: %w", err)
	}
	return nil
}

// resolve applies the precedence flags > environment > config file >
// default to the address and the token. The file's token is only sent to
// the file's address: a token saved by login never leaks to another
// scheduler named by --addr or EJCTL_ADDR.
func resolve(flagAddr, flagToken, flagNamespace string, getenv func(string) string, file FileConfig) Settings {
	var s Settings
	s.Namespace, s.NamespaceFrom = pick(flagNamespace, getenv("EJCTL_NAMESPACE"), file.Namespace)
	if s.Namespace == "" {
		s.Namespace, s.NamespaceFrom = "default", "default"
	}
	s.Addr, s.AddrFrom = pick(flagAddr, getenv("EJCTL_ADDR"), file.Addr)
	if s.Addr == "" {
		s.Addr, s.AddrFrom = DefaultAddr, "default"
	}
	s.Addr = normalizeAddr(s.Addr)
	fileToken := file.Token
	if file.Addr != "" && normalizeAddr(file.Addr) != s.Addr {
		fileToken = ""
	}
	s.Token, s.TokenFrom = pick(flagToken, getenv("EJCTL_TOKEN"), fileToken)
	return s
}

func normalizeAddr(a string) string {
	a = strings.TrimRight(strings.TrimSpace(a), "/")
	if !strings.Contains(a, "://") {
		a = "http://" + a
	}
	return a
}

func pick(flag, env, file string) (string, string) {
	switch {
	case flag != "":
		return flag, "flag"
	case env != "":
		return env, "env"
	case file != "":
		return file, "config file"
	}
	return "", ""
}
