package archtest

import (
	"reflect"
	"strings"
	"testing"
)

// pure are the packages that may import only the standard library and each
// other: the domain types and the pure decisions. Add a new pure package
// here.
var pure = []string{"app", "jobs", "jobs/cron", "jobs/calendar", "jobs/timing", "scheduler/timetable", "offers", "workflow", "engine", "engine/enginetest", "queue", "task", "round", "estimate", "namespace", "observe", "cmd/ejbench/internal/promtext", "internal/datadriven"}

// TestPurePackagesImportOnlyTheStandardLibrary: a pure package that gains
// an import of, say, registry or a driver fails here, naming the import.
func TestPurePackagesImportOnlyTheStandardLibrary(t *testing.T) {
	g := loadGraph(t)
	for _, bad := range g.impure(pure) {
		t.Errorf("%s: a pure package may import only the standard library and %s", bad, strings.Join(pure, ", "))
	}
}

// TestSchedulerDoesNotImportHistory: history/... consumes the task events
// of package observe; scheduler (and what it imports) never imports
// history, directly or through another package of the module.
func TestSchedulerDoesNotImportHistory(t *testing.T) {
	g := loadGraph(t)
	if _, ok := g.pkgs["scheduler"]; !ok {
		t.Fatal("no package scheduler: the test looks at the wrong tree")
	}
	if _, ok := g.pkgs["history"]; !ok {
		t.Fatal("no package history: the test looks at the wrong tree")
	}
	for _, chain := range g.reaches("scheduler", "history") {
		t.Errorf("%s: history depends on scheduler, never the reverse", chain)
	}
}

// TestHistoryAndMetricsDoNotImportScheduler: the observers (history/...,
// metrics) consume the scheduler's events through package observe, and
// reach package scheduler neither directly nor through another package.
func TestHistoryAndMetricsDoNotImportScheduler(t *testing.T) {
	g := loadGraph(t)
	if _, ok := g.pkgs["observe"]; !ok {
		t.Fatal("no package observe: the test looks at the wrong tree")
	}
	for _, p := range []string{"history", "metrics"} {
		for _, chain := range g.reaches(p, "scheduler") {
			t.Errorf("%s: %s hears the scheduler through package observe, never by importing it", chain, p)
		}
	}
}

// aboveTheEngines are the packages that speak the engine vocabulary
// (package engine) and never an engine's own: no Mesos types above the
// engines.
var aboveTheEngines = []string{"engine", "engine/enginetest", "scheduler", "history", "metrics", "round", "task", "queue", "offers"}

// TestNothingAboveTheEnginesImportsAnEngine: the scheduler, history and
// metrics (and the pure decisions) reach no package under engine/mesos/ or
// engine/kube/, directly or through another package of the module; each
// engine translates at its edge.
func TestNothingAboveTheEnginesImportsAnEngine(t *testing.T) {
	g := loadGraph(t)
	for _, eng := range []string{"engine/mesos", "engine/kube"} {
		if _, ok := g.pkgs[eng]; !ok {
			t.Fatalf("no package %s: the test looks at the wrong tree", eng)
		}
		for _, p := range aboveTheEngines {
			for _, chain := range g.reaches(p, eng) {
				if start, _, _ := strings.Cut(chain, " → "); within(start, "engine/mesos") || within(start, "engine/kube") {
					continue // an engine's own packages sit under engine/
				}
				t.Errorf("%s: only the engines and the wiring may import %s", chain, eng)
			}
		}
	}
}

// TestEnginesDoNotImportTheAPI: nothing under engine/ reaches package api
// or a package below it (api/crd among them), directly or through another
// package of the module. The CRD reconciler and webhook, which register
// definitions through the API's validation, live in api/crd for that
// reason; an engine that needs something of the API's gets it as a value
// from the wiring.
func TestEnginesDoNotImportTheAPI(t *testing.T) {
	g := loadGraph(t)
	if _, ok := g.pkgs["api"]; !ok {
		t.Fatal("no package api: the test looks at the wrong tree")
	}
	for _, chain := range g.reaches("engine", "api") {
		t.Errorf("%s: nothing under engine/ may import api", chain)
	}
}

// TestTheChecksFindViolations runs the checks on a made-up module, so the
// tests above cannot pass by finding nothing.
func TestTheChecksFindViolations(t *testing.T) {
	const m = "example.com/mod"
	g := graph{module: m, pkgs: map[string][]string{
		"app":             {"fmt", m + "/jobs"},
		"jobs":            {"strings", m + "/registry", "github.com/robfig/cron/v3"},
		"registry":        {m + "/store"},
		"scheduler":       {"context", m + "/scheduler/inner"},
		"scheduler/inner": {m + "/metrics"},
		"metrics":         {m + "/history/trace"},
		"history/trace":   {m + "/scheduler"},
		"history":         {m + "/history/trace"},
	}}
	got := g.impure([]string{"app", "jobs", "offers"})
	want := []string{"jobs imports example.com/mod/registry", "jobs imports github.com/robfig/cron/v3",
		"offers is listed as pure but is not a package of the module"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("impure = %q\nwant %q", got, want)
	}
	got = g.reaches("scheduler", "history")
	want = []string{"scheduler → scheduler/inner → metrics → history/trace", "scheduler/inner → metrics → history/trace"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("reaches = %q\nwant %q", got, want)
	}
	if r := g.reaches("history", "scheduler"); len(r) != 2 { // history/trace imports scheduler: the allowed direction
		t.Errorf("history → scheduler chains %q", r)
	}
}
