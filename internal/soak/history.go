package soak

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/task"
)

// Historian is a shape whose schedulers keep history: the checker then
// compares every recorded run with history's row for it.
type Historian interface {
	HistoryAPI() string
}

// Replicated is a shape whose every scheduler keeps its own copy of
// history: the checker compares every recorded run with each copy.
type Replicated interface {
	// HistoryAPIs maps each replica's name to its API's base URL.
	HistoryAPIs() map[string]string
}

func (e *Embedded) HistoryAPI() string { return e.s.base }

func (e *Etcd) HistoryAPIs() map[string]string {
	out := map[string]string{}
	for _, s := range e.scheds {
		out[s.p.name] = s.base
	}
	return out
}

// historyRow is the part of GET /api/job/events/executions' rows the
// checker reads.
type historyRow struct {
	TaskID       string     `json:"taskId"`
	Success      bool       `json:"success"`
	CompleteTime *time.Time `json:"completeTime"`
	FailureCause *string    `json:"failureCause"`
	TriggeredBy  string     `json:"triggeredBy"`
	NominalAt    *time.Time `json:"nominalAt"`
}

// outcome is the row's Outcome; a task lost with its agent before it
// started and not run again (task.LostBeforeStartWords,
// task.NotRunAgainWords in its failure cause) has NotRun and Trigger set.
func (r historyRow) outcome() Outcome {
	o := Outcome{Success: r.Success, Open: r.CompleteTime == nil}
	if r.NominalAt != nil {
		o.Nominal = r.NominalAt.UTC()
	}
	if c := r.FailureCause; !r.Success && c != nil && r.CompleteTime != nil &&
		strings.Contains(*c, task.LostBeforeStartWords) && strings.Contains(*c, task.NotRunAgainWords) {
		o.NotRun, o.Trigger = r.CompleteTime.UTC(), r.TriggeredBy
	}
	return o
}

// historyTries is how often a page of history is asked for before the run gives up: a deep page (an
// OFFSET of 60,000 rows in MariaDB) took more than the client's 5 s at load 55, and the run was
// lost for it.
const historyTries = 4

// getJSONRetried is getJSON tried up to tries times while ctx lasts.
func getJSONRetried(ctx context.Context, url string, v any, tries int) error {
	var err error
	for range tries {
		if err = getJSON(ctx, url, v); err == nil || ctx.Err() != nil {
			return err
		}
	}
	return err
}

// fetchHistory reads every execution row, a page of 1,000 at a time.
func fetchHistory(ctx context.Context, base string) (map[string][]Outcome, error) {
	out := map[string][]Outcome{}
	for page := 1; ; page++ {
		var p struct {
			Total int          `json:"total"`
			Rows  []historyRow `json:"rows"`
		}
		url := base + "/api/job/events/executions?per_page=1000&sort=startTime&order=asc&page=" + strconv.Itoa(page)
		if err := getJSONRetried(ctx, url, &p, historyTries); err != nil {
			return nil, fmt.Errorf("soak: history: %w", err)
		}
		for _, r := range p.Rows {
			out[r.TaskID] = append(out[r.TaskID], r.outcome())
		}
		if len(p.Rows) < 1000 || page*1000 >= p.Total {
			return out, nil
		}
	}
}

// fetchLaunches reads when each task was launched: its first TASK_STAGING
// status trace (the scheduler's, at the launch's commit; the engine's
// wait notes come after), a page of 1,000 at a time.
func fetchLaunches(ctx context.Context, base string) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	for page := 1; ; page++ {
		var p struct {
			Total int `json:"total"`
			Rows  []struct {
				TaskID       string    `json:"taskId"`
				CreationTime time.Time `json:"creationTime"`
			} `json:"rows"`
		}
		url := base + "/api/job/events/statusTraces?state=TASK_STAGING&per_page=1000&sort=creationTime&order=asc&page=" + strconv.Itoa(page)
		if err := getJSON(ctx, url, &p); err != nil {
			return nil, fmt.Errorf("soak: launches: %w", err)
		}
		for _, r := range p.Rows {
			if at, ok := out[r.TaskID]; !ok || r.CreationTime.Before(at) {
				out[r.TaskID] = r.CreationTime
			}
		}
		if len(p.Rows) < 1000 || page*1000 >= p.Total {
			return out, nil
		}
	}
}

// fetchPending reads each job's pending executions (GET
// /api/job/tasks/ready) from the first API that answers, and when it had
// answered; nil
// when none does.
func fetchPending(ctx context.Context, apis []string) (map[string]int, time.Time) {
	for _, base := range apis {
		var rows []struct {
			Job   string `json:"jobName"`
			Times int    `json:"times"`
		}
		if err := getJSON(ctx, base+"/api/job/tasks/ready", &rows); err != nil {
			continue
		}
		at := time.Now() // after the read: the fires counted off reach past it, never short of it
		out := make(map[string]int, len(rows))
		for _, r := range rows {
			out[r.Job] += r.Times
		}
		return out, at
	}
	return nil, time.Time{}
}
