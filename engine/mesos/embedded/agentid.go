package embedded

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// agentIDFile keeps the agent id across restarts of the same work
// directory (a real agent keeps it in its meta directory while it recovers
// from the same work_dir), so task ids, which name the agent, keep
// pointing at their sandboxes after a restart.
const agentIDFile = "meta/agent_id"

// loadAgentID returns the agent id recorded in workDir, recording fresh
// when there is none.
func loadAgentID(workDir, fresh string) (string, error) {
	p := filepath.Join(workDir, filepath.FromSlash(agentIDFile))
	b, err := os.ReadFile(p)
	if err == nil {
		// An earlier version wrote it 0644: readable by its owner alone now.
		_ = os.Chmod(p, 0o600)
		id := strings.TrimSpace(string(b))
		if verr := validateID(id); verr != nil {
			return "", fmt.Errorf("local: %s holds an invalid agent id %q: %v (remove the file to start afresh)", p, id, verr)
		}
		return id, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("local: read agent id: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", fmt.Errorf("local: record agent id: %w", err)
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(fresh+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("local: record agent id: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return "", fmt.Errorf("local: record agent id: %w", err)
	}
	return fresh, nil
}

// addressFile keeps the address the agent served, so that after a restart
// it listens where the executors it left look for it (a real agent has a
// fixed port).
const addressFile = "meta/agent_address"

func readAddress(workDir string) string {
	b, err := os.ReadFile(filepath.Join(workDir, filepath.FromSlash(addressFile)))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func recordAddress(workDir, addr string, log *slog.Logger) {
	if err := replaceFile(filepath.Join(workDir, filepath.FromSlash(addressFile)), []byte(addr+"\n")); err != nil {
		log.Warn("agent address not recorded: executors left running at a restart cannot find the agent again", "err", err)
	}
}

// sameHostAnyPort reports whether addr asks for any port ("host:0") of
// the host prev is on.
func sameHostAnyPort(addr, prev string) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port != "0" {
		return false
	}
	phost, _, err := net.SplitHostPort(prev)
	return err == nil && phost == host
}
