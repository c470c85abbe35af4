package soak

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ejcloud/elasticjob/internal/soak/runlog"
)

// Saved is what a run keeps beside its run log (DIR/check.json) so that
// the checker can be run again over it (ejsoak -recheck DIR).
type Saved struct {
	Seed   uint64
	Shape  string
	Jobs   []Job
	Faults []Fault
	End    time.Time
	Heal   time.Duration
	// History is what history held per task id (nil: not checked).
	History   map[string][]Outcome `json:",omitempty"`
	HistoryAt time.Time            `json:",omitzero"`
	// Replicas is what each replica's own history held (Input.Replicas).
	Replicas map[string]map[string][]Outcome `json:",omitempty"`
	// Pending is each job's executions waiting at PendingAt (Input.Pending).
	Pending   map[string]int `json:",omitempty"`
	PendingAt time.Time      `json:",omitzero"`
	// Launched is when each task was launched (Input.Launched).
	Launched map[string]time.Time `json:",omitempty"`
}

const savedName = "check.json"

func (s Saved) write(dir string) error {
	b, err := json.MarshalIndent(s, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, savedName), b, 0o644)
}

// Recheck runs the checker again over a kept run directory.
func Recheck(dir string) (Saved, Report, error) {
	s, in, err := Load(dir)
	if err != nil {
		return s, Report{}, err
	}
	return s, Check(in), nil
}

// Load reads a kept run directory: what the run saved and the checker's
// input.
func Load(dir string) (Saved, Input, error) {
	var s Saved
	b, err := os.ReadFile(filepath.Join(dir, savedName))
	if err != nil {
		return s, Input{}, fmt.Errorf("soak: recheck: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, Input{}, fmt.Errorf("soak: recheck %s: %w", savedName, err)
	}
	lines, err := runlog.ReadFile(filepath.Join(dir, "recorder", "runs.jsonl"))
	if err != nil {
		return s, Input{}, err
	}
	return s, Input{Runs: lines, Jobs: s.Jobs, Faults: s.Faults, Heal: s.Heal, End: s.End, History: s.History, Replicas: s.Replicas, HistoryAt: s.HistoryAt,
		Pending: s.Pending, PendingAt: s.PendingAt, Launched: s.Launched, StoreHold: storeHold(s.Shape)}, nil
}
