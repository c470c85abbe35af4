package registry

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/ejcloud/elasticjob/store"
)

// ConfigChange names what changed in the configuration, as the store's
// watch saw it.
type ConfigChange struct {
	Kind ConfigKind
	Name string // the app's or the job's name (none for ConfigAll)
}

// ConfigKind is what a ConfigChange is about.
type ConfigKind int

const (
	ConfigAll         ConfigKind = iota // changes may have been missed: everything may have changed
	ConfigApp                           // an app was published, updated or deleted
	ConfigJob                           // a job was registered, updated or deregistered
	ConfigAppDisabled                   // an app's disable flag was set or cleared
	ConfigJobDisabled                   // a job's disable flag was set or cleared
)

// WatchConfig follows every change to apps, jobs and their disable
// flags, in the store's order per subtree. The channel closes when ctx
// ends or the store's watch does (the caller starts again). Subscribe
// before reading what the changes are about, so that none made between
// the two is missed.
func (r *Registry) WatchConfig(ctx context.Context) (<-chan ConfigChange, error) {
	return follow(ctx, r.kv, 64, configChange, "/config", "/state/disable")
}

// WatchApps follows the apps alone (an app published, updated or deleted:
// ConfigApp; ConfigAll when changes may have been missed). The channel
// closes when ctx ends or the store's watch does.
func (r *Registry) WatchApps(ctx context.Context) (<-chan ConfigChange, error) {
	return follow(ctx, r.kv, 64, configChange, AppsPath)
}

// follow watches paths and sends what conv makes of each event (nothing when it says false)
// on a channel of size n, in the store's order per path. The channel closes when ctx ends or
// any of the watches does (the others are then ended too).
func follow[T any](ctx context.Context, kv store.KV, n int, conv func(store.Event) (T, bool), paths ...string) (<-chan T, error) {
	ctx, cancel := context.WithCancel(ctx)
	srcs := make([]<-chan store.Event, len(paths))
	for i, p := range paths {
		ch, err := kv.Watch(ctx, p)
		if err != nil {
			cancel()
			return nil, fmt.Errorf("registry: watch %s: %w", p, err)
		}
		srcs[i] = ch
	}
	out := make(chan T, n)
	var wg sync.WaitGroup
	for _, src := range srcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cancel() // one watch ended: so do the others
			for {
				var ev store.Event
				var ok bool
				select {
				case <-ctx.Done():
					return
				case ev, ok = <-src:
				}
				if !ok {
					return
				}
				c, ok := conv(ev)
				if !ok {
					continue
				}
				select {
				case out <- c:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); cancel(); close(out) }()
	return out, nil
}

func configChange(ev store.Event) (ConfigChange, bool) {
	if ev.Type == store.EventResync {
		return ConfigChange{Kind: ConfigAll}, true
	}
	parts := strings.Split(strings.TrimPrefix(ev.Path, "/"), "/")
	switch {
	case len(parts) == 3 && parts[0] == "config" && parts[1] == "app":
		return ConfigChange{Kind: ConfigApp, Name: parts[2]}, true
	case len(parts) == 3 && parts[0] == "config" && parts[1] == "job":
		return ConfigChange{Kind: ConfigJob, Name: parts[2]}, true
	case len(parts) == 4 && parts[0] == "state" && parts[1] == "disable" && parts[2] == "app":
		return ConfigChange{Kind: ConfigAppDisabled, Name: parts[3]}, true
	case len(parts) == 4 && parts[0] == "state" && parts[1] == "disable" && parts[2] == "job":
		return ConfigChange{Kind: ConfigJobDisabled, Name: parts[3]}, true
	}
	return ConfigChange{}, false
}

// ReadyChange says that a job's ready entry was written (Present) or
// removed; a Resync says changes may have been missed.
type ReadyChange struct {
	Job     string
	Present bool
	Resync  bool
}

// WatchReady follows the ready queue. The channel closes when ctx ends or
// the store's watch does.
func (r *Registry) WatchReady(ctx context.Context) (<-chan ReadyChange, error) {
	return follow(ctx, r.kv, 256, readyChange, ReadyPath)
}

func readyChange(e store.Event) (ReadyChange, bool) {
	switch job, under := strings.CutPrefix(e.Path, ReadyPath+"/"); {
	case e.Type == store.EventResync:
		return ReadyChange{Resync: true}, true
	case under && !strings.Contains(job, "/"):
		return ReadyChange{Job: job, Present: e.Type == store.EventPut}, true
	}
	return ReadyChange{}, false
}

// WatchWorkflows follows the workflows, their disable flags, their runs
// and the keyed runs' records. A store watch that closes while ctx lasts
// is reported as a WorkflowAll change (and the channel closes with ctx).
func (r *Registry) WatchWorkflows(ctx context.Context) (<-chan WorkflowChange, error) {
	out := make(chan WorkflowChange, 4096)
	paths := []string{WorkflowsPath, disabledWorkflowPath, WorkflowRunsPath, TriggerKeysPath}
	chans := make([]<-chan store.Event, 0, len(paths))
	for _, p := range paths {
		ch, err := r.kv.Watch(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("registry: watch %s: %w", p, err)
		}
		chans = append(chans, ch)
	}
	send := func(c WorkflowChange) bool {
		select {
		case out <- c:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for _, ch := range chans {
		go func() {
			for ev := range ch {
				if c, ok := workflowChange(ev); ok && !send(c) {
					return
				}
			}
			if ctx.Err() == nil { // a watch closes when ctx ends; otherwise the store failed
				send(WorkflowChange{Kind: WorkflowAll})
			}
		}()
	}
	return out, nil
}
