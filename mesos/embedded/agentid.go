package embedded

import (
	"errors"
	"fmt"
	"io/fs"
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
	if err := os.WriteFile(tmp, []byte(fresh+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("local: record agent id: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return "", fmt.Errorf("local: record agent id: %w", err)
	}
	return fresh, nil
}
