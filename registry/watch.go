package registry

import (
	"context"
	"fmt"
	"strings"

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
	cfg, err := r.kv.Watch(ctx, "/config")
	if err != nil {
		return nil, fmt.Errorf("registry: watch /config: %w", err)
	}
	dis, err := r.kv.Watch(ctx, "/state/disable")
	if err != nil {
		return nil, fmt.Errorf("registry: watch /state/disable: %w", err)
	}
	out := make(chan ConfigChange, 64)
	go func() {
		defer close(out)
		for {
			var ev store.Event
			var ok bool
			select {
			case <-ctx.Done():
				return
			case ev, ok = <-cfg:
			case ev, ok = <-dis:
			}
			if !ok {
				return
			}
			ch, ok := configChange(ev)
			if !ok {
				continue
			}
			select {
			case out <- ch:
			case <-ctx.Done():
				return
			}
		}
	}()
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
	ev, err := r.kv.Watch(ctx, ReadyPath)
	if err != nil {
		return nil, fmt.Errorf("registry: watch the ready queue: %w", err)
	}
	out := make(chan ReadyChange, 256)
	go func() {
		defer close(out)
		for {
			var e store.Event
			var ok bool
			select {
			case <-ctx.Done():
				return
			case e, ok = <-ev:
			}
			if !ok {
				return
			}
			var ch ReadyChange
			switch job, under := strings.CutPrefix(e.Path, ReadyPath+"/"); {
			case e.Type == store.EventResync:
				ch.Resync = true
			case under && !strings.Contains(job, "/"):
				ch = ReadyChange{Job: job, Present: e.Type == store.EventPut}
			default:
				continue
			}
			select {
			case out <- ch:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}
