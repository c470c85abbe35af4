package round

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/queue"
)

// waitJob is the job of a wait's key ("ready/{job}", "failover/{job}/…").
func waitJob(key string) string {
	_, rest, _ := strings.Cut(key, "/")
	job, _, _ := strings.Cut(rest, "/")
	return job
}

// Every wait of every scenario, redacted for a reader of the waiting
// entry's namespace alone, names no job, task or namespace of another
// namespace; redacted for a reader of every namespace, it is unchanged.
func TestRedactScenarios(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	checked, redacted := 0, 0
	for _, f := range files {
		for _, c := range scenarioCases(t, f) {
			v := parseView(t, f, c.line, c.in)
			p := Decide(v)
			cat := v.Jobs.(*catalog)
			for key, w := range p.Waiting {
				own := namespace.Of(waitJob(key))
				if got := Redact(w, func(string) bool { return true }); !reflect.DeepEqual(got, w) {
					t.Errorf("%s:%d %s: redacted for a reader of every namespace:\n%+v\nwant\n%+v", f, c.line, key, got, w)
				}
				r := Redact(w, func(ns string) bool { return ns == own })
				if !reflect.DeepEqual(r, w) {
					redacted++
				}
				for job := range cat.jobs {
					if namespace.Of(job) == own {
						continue
					}
					checked++
					for _, name := range []string{regexp.QuoteMeta("job " + job), regexp.QuoteMeta("job "+namespace.Name(job)) + " of namespace"} {
						if regexp.MustCompile(name + `([^A-Za-z0-9._~-]|$)`).MatchString(r.Message) {
							t.Errorf("%s:%d %s: the message names %s of namespace %s: %s", f, c.line, key, job, namespace.Of(job), r.Message)
						}
					}
					if ns := namespace.Of(job); ns != namespace.Default && strings.Contains(r.Message, "namespace "+ns+" ") {
						t.Errorf("%s:%d %s: the message names namespace %s: %s", f, c.line, key, ns, r.Message)
					}
				}
				for _, h := range r.Holders {
					if hidden := namespace.Of(h.Job) != own; hidden && !h.Other || h.Other && (h.TaskID != "" || h.Job != OtherWork) {
						t.Errorf("%s:%d %s: holder %+v", f, c.line, key, h)
					}
				}
			}
		}
	}
	if checked == 0 || redacted < 5 {
		t.Fatalf("%d scenario waits beside another namespace's jobs, %d redacted: the scenarios lost their teams", checked, redacted)
	}
}

type scenarioCase struct {
	line int
	in   []string
}

// scenarioCases reads a scenario file's cases (runScenarios' shape).
func scenarioCases(t *testing.T, file string) []scenarioCase {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []scenarioCase
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); {
		if strings.TrimSpace(lines[i]) == "" || strings.HasPrefix(lines[i], "#") {
			i++
			continue
		}
		c := scenarioCase{line: i}
		for i < len(lines) && lines[i] != "----" {
			c.in = append(c.in, lines[i])
			i++
		}
		for i < len(lines) && lines[i] != "" {
			i++
		}
		out = append(out, c)
	}
	return out
}

// The phrases Redact rewrites, one by one, as a reader of search alone
// sees them; pay's and the default namespace's work is hidden alike.
func TestRedactPhrases(t *testing.T) {
	h := queue.Holder{Job: "nightly", Shards: 2, TaskID: "nightly@-@0@-@READY@-@a@-@1", Holds: queue.Res{CPUs: 1.5, MemMB: 128},
		Since: t0, ExpectedEnd: t0.Add(8 * time.Second), Basis: "p90", TypicalMs: 8000}
	p := queue.Holder{Job: "pay~settle", Shards: 1, TaskID: "pay~settle@-@0@-@READY@-@a@-@2", Holds: queue.Res{CPUs: 1, MemMB: 64}, Since: t0}
	mine := queue.Holder{Job: "search~index", Shards: 1, TaskID: "search~index@-@0@-@READY@-@a@-@3", Holds: queue.Res{CPUs: 0.5, MemMB: 32}, Since: t0}
	w := queue.Wait{Reason: queue.WaitReservation, Needs: &queue.Res{CPUs: 1, MemMB: 64}, Holders: []queue.Holder{h, p, mine},
		Message: "behind the reservation of the older failover shard 3 of job pay~settle, which holds 1 CPU; not enough CPU; held by " +
			holderWords(h) + ", " + holderWords(p) + ", " + holderWords(mine) +
			"; namespace search is within its guarantee: the capacity it needs is lent to other namespaces' work until 2026-11-25T00:00:08Z (job nightly of namespace default is expected to end then)" +
			"; preempting the borrowed capacity of job settle of namespace pay, job index of namespace search (preemptible: …)" +
			"; but namespace pay needs its guarantee back at 2026-11-25T00:16:43Z for its cron fire of job tick (0.15 CPUs …) ; stray pay~settle@-@0@-@READY@-@a@-@2"}
	r := Redact(w, func(ns string) bool { return ns == "search" })
	want := "behind the reservation of the older work of another namespace, which holds 1 CPU; not enough CPU; held by " +
		"another namespace's work (2 shards, 1.5 CPUs and 128 MB) until it ends, expected by 2026-11-25T00:00:08Z (the p90 of its recent runs: 8s), " +
		"another namespace's work (1 shard, 1 CPU and 64 MB) until it ends (no run of it known to tell when), " + holderWords(mine) +
		"; namespace search is within its guarantee: the capacity it needs is lent to other namespaces' work until 2026-11-25T00:00:08Z (another namespace's work is expected to end then)" +
		"; preempting the borrowed capacity of another namespace's work, job index of namespace search (preemptible: …)" +
		"; but another namespace needs its guarantee back at 2026-11-25T00:16:43Z for one of its cron fires (0.15 CPUs …) ; stray another namespace's work"
	if r.Message != want {
		t.Errorf("message:\n%s\nwant\n%s", r.Message, want)
	}
	if got := Summary(r, t0.Add(5*time.Second)); got != "waits for 1 CPU and 64 MB; another namespace's work holds 1.5 CPUs and 128 MB until it ends (running 5s of its usual 8s)"+
		"; another namespace's work holds 1 CPU and 64 MB until it ends (running 5s; no earlier run known)"+
		"; job search~index holds 0.5 CPUs and 32 MB until it ends (running 5s; no earlier run known)" {
		t.Errorf("summary: %s", got)
	}
	if r.Holders[0].Job != OtherWork || r.Holders[0].TaskID != "" || !r.Holders[0].Other || r.Holders[0].Holds != h.Holds || !r.Holders[0].ExpectedEnd.Equal(h.ExpectedEnd) {
		t.Errorf("holder: %+v", r.Holders[0])
	}
	if !reflect.DeepEqual(r.Holders[2], mine) {
		t.Errorf("own holder changed: %+v", r.Holders[2])
	}
	if w.Holders[0].Job != "nightly" {
		t.Error("Redact changed the wait it was given")
	}
	if again := Redact(r, func(ns string) bool { return ns == "search" }); !reflect.DeepEqual(again, r) {
		t.Errorf("redacting twice: %+v", again)
	}
}

// Localize names a namespace's own jobs as the namespace knows them: the
// reader of search reads "job index holds …", never "job search~index";
// a hidden holder and another namespace's key stay as they were.
func TestLocalizeNamesOwnJobsByName(t *testing.T) {
	mine := queue.Holder{Job: "search~index", Shards: 1, TaskID: "search~index@-@0@-@READY@-@a@-@3", Holds: queue.Res{CPUs: 0.5, MemMB: 32}, Since: t0}
	other := queue.Holder{Job: OtherWork, Other: true, Shards: 1, Holds: queue.Res{CPUs: 1, MemMB: 64}, Since: t0}
	w := queue.Wait{Reason: queue.WaitReservation, Needs: &queue.Res{CPUs: 1, MemMB: 64}, Holders: []queue.Holder{mine, other},
		Message: "behind the reservation of the older execution of job search~blocker, which holds 1 CPU; held by " + holderWords(mine) + ", " + holderWords(other)}
	got := Localize(w, "search")
	if strings.Contains(got.Message, "search~") || !strings.Contains(got.Message, "older execution of job blocker, which") ||
		!strings.Contains(got.Message, "held by job index (1 shard, 0.5 CPUs and 32 MB) until it ends") {
		t.Errorf("message: %s", got.Message)
	}
	if s := Summary(got, t0.Add(5*time.Second)); !strings.Contains(s, "; job index holds 0.5 CPUs and 32 MB") || strings.Contains(s, "search~") {
		t.Errorf("summary: %s", s)
	}
	if got.Holders[1] != other || w.Holders[0].Job != "search~index" {
		t.Errorf("holders %+v; the wait given %+v", got.Holders, w.Holders)
	}
}
