package ejctl

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/spf13/cobra"
)

// Actions of a plan.
const (
	ActCreate    = "create"
	ActUpdate    = "update"
	ActUnchanged = "unchanged"
	ActDelete    = "delete"
)

// Change is one planned step.
type Change struct {
	Kind   string      `json:"kind"` // app or job
	Name   string      `json:"name"`
	Action string      `json:"action"`
	Diff   []FieldDiff `json:"diff,omitempty"`
	Reason string      `json:"reason,omitempty"` // why a delete happens
	Error  string      `json:"error,omitempty"`  // set when applying failed
	body   any
	cur    any
}

// Plan is what apply would do, in order: apps, jobs, then deletions (jobs
// before apps).
type Plan struct {
	Changes []Change `json:"changes"`
}

// Count counts the changes of an action.
func (p Plan) Count(action string) int {
	n := 0
	for _, c := range p.Changes {
		if c.Action == action {
			n++
		}
	}
	return n
}

// Done counts the changes of an action that were carried out (applying
// them recorded no error).
func (p Plan) Done(action string) int {
	n := 0
	for _, c := range p.Changes {
		if c.Action == action && c.Error == "" {
			n++
		}
	}
	return n
}

// current is what the scheduler holds.
type current struct {
	apps map[string]app.Config
	jobs map[string]jobs.Config
}

func (c objectGroup) fetchCurrent(ctx context.Context) (current, error) {
	cur := current{apps: map[string]app.Config{}, jobs: map[string]jobs.Config{}}
	var apps []app.Config
	if err := c.client.get(ctx, appKind.listPath, nil, &apps); err != nil {
		return cur, err
	}
	for _, a := range apps {
		cur.apps[a.AppName] = a
	}
	var js []jobs.Config
	if err := c.client.get(ctx, jobKind.listPath, nil, &js); err != nil {
		return cur, err
	}
	for _, j := range js {
		cur.jobs[j.JobName] = j
	}
	return cur, nil
}

// MakePlan compares the manifest with the scheduler's apps and jobs. With
// prune, apps and jobs absent from the manifest are deleted; an app absent
// from the manifest that a job of the manifest uses is an error. So is a
// job whose app is neither on the scheduler nor in the files, or would
// have no appURL while the job runs its package (checkApps): the plan is
// refused before anything changes.
func MakePlan(m Manifest, cur current, prune bool) (Plan, error) {
	var p Plan
	if err := checkApps(m, cur); err != nil {
		return p, err
	}
	for _, a := range m.Apps {
		old, exists := cur.apps[a.AppName]
		if a.AppURL == "" {
			a.AppURL = old.AppURL // published with ejctl app publish: keep its package
		}
		ch, err := planOne("app", a.AppName, exists, old, a)
		if err != nil {
			return p, err
		}
		p.Changes = append(p.Changes, ch)
	}
	for _, j := range m.Jobs {
		old, exists := cur.jobs[j.JobName]
		ch, err := planOne("job", j.JobName, exists, old, j)
		if err != nil {
			return p, err
		}
		p.Changes = append(p.Changes, ch)
	}
	if prune {
		dels, err := prunePlan(m, cur)
		if err != nil {
			return p, err
		}
		p.Changes = append(p.Changes, dels...)
	}
	return p, nil
}

// checkApps checks every job's app against the files and the scheduler,
// as registration will: it must exist once the apps are applied and, when
// the job runs the app's package, have an appURL. Every problem is listed.
func checkApps(m Manifest, cur current) error {
	declared := map[string]app.Config{}
	for _, a := range m.Apps {
		if a.AppURL == "" {
			a.AppURL = cur.apps[a.AppName].AppURL // kept, as MakePlan keeps it
		}
		declared[a.AppName] = a
	}
	var problems []string
	for _, j := range m.Jobs {
		if j.AppName == "" {
			continue // an HTTP job without an app
		}
		a, ok := declared[j.AppName]
		if !ok {
			a, ok = cur.apps[j.AppName]
		}
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("job %s%s uses app %s, which is neither on the scheduler nor in the files",
				j.JobName, m.from("job", j.JobName), j.AppName))
		case j.NeedsPackage() && a.AppURL == "":
			problems = append(problems, fmt.Sprintf("job %s%s runs the package of app %s, which has no appURL: give the app an appURL in the files, or publish its package first (ejctl app publish DIR --name %s)",
				j.JobName, m.from("job", j.JobName), j.AppName, j.AppName))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("nothing was changed: %s", strings.Join(problems, "; "))
	}
	return nil
}

func planOne(kind, name string, exists bool, old, want any) (Change, error) {
	ch := Change{Kind: kind, Name: name, Action: ActCreate, body: want}
	if !exists {
		return ch, nil
	}
	d, err := Diff(old, want)
	if err != nil {
		return ch, err
	}
	ch.Diff, ch.cur = d, old
	ch.Action = ActUnchanged
	if len(d) > 0 {
		ch.Action = ActUpdate
	}
	return ch, nil
}

func prunePlan(m Manifest, cur current) ([]Change, error) {
	wantApps, wantJobs := map[string]bool{}, map[string]bool{}
	for _, a := range m.Apps {
		wantApps[a.AppName] = true
	}
	for _, j := range m.Jobs {
		wantJobs[j.JobName] = true
		if !wantApps[j.AppName] {
			if _, exists := cur.apps[j.AppName]; exists {
				return nil, fmt.Errorf("--prune would delete app %s, which job %s of the files uses: declare the app in the files too", j.AppName, j.JobName)
			}
		}
	}
	var out []Change
	for _, name := range sortedKeys(cur.jobs) {
		if !wantJobs[name] {
			reason := "not in the files"
			if !wantApps[cur.jobs[name].AppName] {
				reason = "not in the files; its app " + cur.jobs[name].AppName + " is deleted too"
			}
			out = append(out, Change{Kind: "job", Name: name, Action: ActDelete, Reason: reason})
		}
	}
	for _, name := range sortedKeys(cur.apps) {
		if !wantApps[name] {
			out = append(out, Change{Kind: "app", Name: name, Action: ActDelete, Reason: "not in the files"})
		}
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Execute applies the plan's changes with up to parallel calls at once,
// phase by phase (apps, jobs, job deletions, app deletions), recording
// each failure in its change. It reports how many failed.
func (c objectGroup) execute(ctx context.Context, p *Plan, parallel int) int {
	phases := []func(Change) bool{
		func(ch Change) bool { return ch.Kind == "app" && ch.Action != ActDelete },
		func(ch Change) bool { return ch.Kind == "job" && ch.Action != ActDelete },
		func(ch Change) bool { return ch.Kind == "job" && ch.Action == ActDelete },
		func(ch Change) bool { return ch.Kind == "app" && ch.Action == ActDelete },
	}
	failed := 0
	for _, in := range phases {
		var idx []int
		for i, ch := range p.Changes {
			if in(ch) && ch.Action != ActUnchanged {
				idx = append(idx, i)
			}
		}
		if failed += c.runParallel(ctx, p, idx, parallel); failed > 0 {
			return failed // no deletion once a create or update failed: it is undone
		}
	}
	return failed
}

func (c objectGroup) runParallel(ctx context.Context, p *Plan, idx []int, parallel int) int {
	return c.runEach(ctx, p, idx, parallel, c.applyOne)
}

// runEach runs do on the changes of p at idx, up to parallel at once,
// recording each failure in its change; it reports how many failed.
func (c objectGroup) runEach(ctx context.Context, p *Plan, idx []int, parallel int, do func(context.Context, Change) error) int {
	var mu sync.Mutex
	failed := 0
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	for _, i := range idx {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := do(ctx, p.Changes[i]); err != nil {
				mu.Lock()
				p.Changes[i].Error = err.Error()
				failed++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return failed
}

func (c objectGroup) applyOne(ctx context.Context, ch Change) error {
	k := appKind
	if ch.Kind == "job" {
		k = jobKind
	}
	switch ch.Action {
	case ActCreate, ActUpdate:
		return c.send(ctx, ch, false)
	case ActDelete:
		err := c.client.del(ctx, k.delPath(ch.Name))
		if IsNotFound(err) {
			return nil // gone with its app
		}
		return err
	}
	return nil
}

func (c objectGroup) applyCmd() *cobra.Command {
	var files []string
	var dryRun, prune, yes bool
	var parallel int
	cmd := &cobra.Command{
		Use:   "apply -f FILE|DIR…",
		Short: "Create or update apps and jobs declared in YAML or JSON files, showing what changes",
		Long: "Apply reads the files (a directory: its *.yaml, *.yml and *.json files), validates every app and job\n" +
			"and checks that each job's app is in the files or on the scheduler (with an appURL when the job runs\n" +
			"its package) before changing anything, compares them with the scheduler and creates what is missing\n" +
			"and updates what differs (fields left out take their defaults), printing each change. Running it again\n" +
			"changes nothing. An app without appURL keeps the package 'ejctl app publish' uploaded. The summary\n" +
			"counts the changes carried out; the failed ones are listed with the scheduler's answer.\n\n" +
			"--prune also deletes the apps and jobs the files do not declare (deleting an app deletes its jobs);\n" +
			"it lists them first and needs --yes to go ahead (or --dry-run to only look).",
		Example: "  ejctl apply -f jobs/ --dry-run\n  ejctl apply -f jobs/ -f apps.yaml\n  ejctl apply -f jobs/ --prune --yes",
		Args:    exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 {
				return usagef("apply: name the files with -f FILE|DIR")
			}
			return c.apply(cmd.Context(), files, dryRun, prune, yes, parallel)
		},
	}
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "a YAML or JSON file, or a directory of them (repeatable)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show what would change, change nothing")
	cmd.Flags().BoolVar(&prune, "prune", false, "delete the apps and jobs the files do not declare")
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm the deletions of --prune")
	cmd.Flags().IntVar(&parallel, "parallel", 8, "API calls in flight at once")
	return cmd
}

func (c objectGroup) apply(ctx context.Context, files []string, dryRun, prune, yes bool, parallel int) error {
	m, err := LoadManifests(files)
	if err != nil {
		return err
	}
	cur, err := c.fetchCurrent(ctx)
	if err != nil {
		return err
	}
	p, err := MakePlan(m, cur, prune)
	if err != nil {
		return err
	}
	dels := p.Count(ActDelete)
	if !c.json() || dryRun {
		c.printPlan(p, dryRun)
	}
	if problems := c.checkChanges(ctx, p, parallel); len(problems) > 0 {
		return fmt.Errorf("nothing was changed: the scheduler refuses %d change(s): %s", len(problems), strings.Join(problems, "; "))
	}
	if dryRun {
		return nil
	}
	if dels > 0 && !yes {
		return refusef("--prune would delete %d app(s) and job(s) listed above; add --yes to delete them, or --dry-run to only look", dels)
	}
	failed := c.execute(ctx, &p, parallel)
	if failed > 0 && p.Done(ActDelete) == 0 && !deleteFailed(p) {
		return c.rollBack(ctx, p)
	}
	if c.json() {
		if err := c.printJSON(p); err != nil {
			return err
		}
	} else {
		for _, ch := range p.Changes {
			if ch.Error != "" {
				fmt.Fprintf(c.env.Stderr, "failed: %s %s %s: %s\n", ch.Action, ch.Kind, ch.Name, ch.Error)
			}
		}
		c.say("Applied: %d created, %d updated, %d unchanged, %d deleted, %d failed.",
			p.Done(ActCreate), p.Done(ActUpdate), p.Count(ActUnchanged), p.Done(ActDelete), failed)
	}
	if failed > 0 {
		return fmt.Errorf("apply: %d of %d changes failed (the deletions listed; the rest was applied): run ejctl apply --prune again to finish", failed, len(p.Changes)-p.Count(ActUnchanged))
	}
	return nil
}

// deleteFailed reports whether a deletion of p failed (the creates and
// updates all succeeded then: they stay).
func deleteFailed(p Plan) bool {
	for _, ch := range p.Changes {
		if ch.Action == ActDelete && ch.Error != "" {
			return true
		}
	}
	return false
}

// rollBack undoes an apply that failed part-way and says what it left.
func (c objectGroup) rollBack(ctx context.Context, p Plan) error {
	if c.json() {
		_ = c.printJSON(p)
	}
	left := c.undo(ctx, p)
	if len(left) == 0 {
		return fmt.Errorf("apply: nothing was changed (the changes made were undone): %s", failures(p))
	}
	return fmt.Errorf("apply: %s; undoing the changes made left: %s; fix the cause and run ejctl apply again to finish", failures(p), strings.Join(left, "; "))
}

func (c objectGroup) printPlan(p Plan, dryRun bool) {
	if c.json() {
		_ = c.printJSON(p)
		return
	}
	w := c.env.Stdout
	marks := map[string]string{ActCreate: "+", ActUpdate: "~", ActUnchanged: "=", ActDelete: "-"}
	for _, ch := range p.Changes {
		line := fmt.Sprintf("%s %s %s (%s)", marks[ch.Action], ch.Kind, ch.Name, ch.Action)
		if ch.Reason != "" {
			line += ": " + ch.Reason
		}
		fmt.Fprintln(w, line)
		if ch.Action == ActUpdate {
			for _, d := range ch.Diff {
				fmt.Fprintln(w, "    "+d.String())
			}
		}
	}
	prefix := "Plan"
	if dryRun {
		prefix = "Plan (dry run, nothing changed)"
	}
	fmt.Fprintf(w, "%s: %d to create, %d to update, %d unchanged, %d to delete.\n",
		prefix, p.Count(ActCreate), p.Count(ActUpdate), p.Count(ActUnchanged), p.Count(ActDelete))
}
