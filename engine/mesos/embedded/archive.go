package embedded

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// maxArchived bounds the archived executor runs listed per framework in
// /state (the newest are kept; older sandboxes stay on disk until GC).
const maxArchived = 1000

// archived is a terminated executor run known by its sandbox only: one an
// earlier run of this agent left (listed again after a restart, so the
// logs of tasks from before it stay readable), or one that fell off the
// in-memory list of completed executors.
type archived struct {
	fwID, execID, containerID, dir string
	ended                          time.Time
}

// sandboxRoot is where this agent's sandboxes live.
func (h *host) sandboxRoot() string { return filepath.Join(h.cfg.WorkDir, "slaves") }

// recoverArchive lists the executor runs found under this agent's
// sandboxes that an earlier run of the agent left and recovery does not
// know (it knows the executors it recovered, live or completed), oldest
// first per framework.
func (h *host) recoverArchive(agentID string, frameworks map[string]*framework) map[string][]archived {
	runs := scanRuns(filepath.Join(h.sandboxRoot(), agentID))
	known := map[string]bool{}
	for _, fw := range frameworks {
		for _, e := range fw.completed {
			known[e.dir] = true
		}
	}
	out := map[string][]archived{}
	for _, r := range runs {
		if h.live[r.dir] == nil && !known[r.dir] {
			out[r.fwID] = append(out[r.fwID], r)
		}
	}
	for fw, rs := range out {
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].ended.Before(rs[j].ended) })
		if len(rs) > maxArchived {
			rs = rs[len(rs)-maxArchived:]
		}
		out[fw] = rs
	}
	return out
}

// scanRuns finds executor run directories below root in the agent layout
// frameworks/<fw>/executors/<exec>/runs/<container>, dated by their
// modification time (set when the executor terminated).
func scanRuns(root string) []archived {
	matches, _ := filepath.Glob(filepath.Join(root, "frameworks", "*", "executors", "*", "runs", "*"))
	var out []archived
	for _, m := range matches {
		st, err := os.Lstat(m)
		if err != nil || !st.IsDir() { // "latest" is a symlink
			continue
		}
		rel, _ := filepath.Rel(root, m)
		parts := strings.Split(rel, string(filepath.Separator))
		out = append(out, archived{fwID: parts[1], execID: parts[3], containerID: parts[5], dir: m, ended: st.ModTime()})
	}
	return out
}

// forget drops removed sandboxes from the completed and archived lists.
func (c *Cluster) forget(removed map[string]bool) {
	for id, list := range c.archived {
		list = slices.DeleteFunc(list, func(a archived) bool { return removed[a.dir] })
		if len(list) == 0 {
			delete(c.archived, id)
		} else {
			c.archived[id] = list
		}
	}
	for _, fw := range c.frameworks {
		fw.completed = slices.DeleteFunc(fw.completed, func(e *executor) bool { return removed[e.dir] })
	}
}

// archivedJSON renders an archived run like a completed executor.
func archivedJSON(a archived) jsonObj {
	return jsonObj{"id": a.execID, "framework_id": a.fwID, "container": a.containerID, "directory": a.dir,
		"state": execTerminated.String(), "tasks": []jsonObj{}, "queued_tasks": []jsonObj{}, "completed_tasks": []jsonObj{}}
}

// completedJSON lists a framework's terminated executors, oldest first:
// archived runs, then the recent ones kept in memory.
func (h *host) completedJSON(fwID string, recent []*executor) []jsonObj {
	var out []jsonObj
	for _, a := range h.archived[fwID] {
		out = append(out, archivedJSON(a))
	}
	for _, e := range recent {
		out = append(out, executorJSON(e))
	}
	return orEmpty(out)
}

// completedFrameworksJSON lists frameworks not registered now whose
// archived sandboxes are still on disk.
func (o *operatorAPI) completedFrameworksJSON() []jsonObj {
	var ids []string
	for id := range o.c.archived {
		if o.c.frameworks[id] == nil {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	out := []jsonObj{}
	for _, id := range ids {
		out = append(out, jsonObj{"id": id, "active": false, "executors": []jsonObj{},
			"completed_executors": o.c.completedJSON(id, nil)})
	}
	return out
}
