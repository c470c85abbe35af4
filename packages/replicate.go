package packages

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/registry"
)

// pull is one pull round of a package, shared by everyone waiting for it.
type pull struct {
	done chan struct{}
	err  error
}

// Run follows the registry's apps until ctx ends: every package an app
// names is pulled from a peer when missing here, and packages no app names
// are collected after the grace period. It returns ctx's error.
func (h *Host) Run(ctx context.Context) error {
	defer h.cancel()
	if h.o.Apps == nil {
		<-ctx.Done()
		return ctx.Err()
	}
	events := h.watch(ctx)
	timer := h.o.Clock.NewTimer(0) // a first pass at once
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case _, ok := <-events:
			if !ok {
				events = nil // re-watched at the next pass
				continue
			}
			drain(events)
			h.Sync(ctx)
		case <-timer.C():
			if events == nil {
				events = h.watch(ctx)
			}
			h.Sync(ctx)
			timer.Reset(h.o.Resync)
		}
	}
}

func (h *Host) watch(ctx context.Context) <-chan registry.ConfigChange {
	ch, err := h.o.Apps.WatchApps(ctx)
	if err != nil {
		h.log.Warn("packages: watch the apps (retried at the next pass)", "err", err)
		return nil
	}
	return ch
}

func drain(ch <-chan registry.ConfigChange) {
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		default:
			return
		}
	}
}

// Sync makes one pass: it reads the apps, starts pulls of the packages
// missing here and collects unnamed packages whose grace has passed.
func (h *Host) Sync(ctx context.Context) {
	apps, err := h.o.Apps.Apps(ctx)
	if err != nil {
		h.log.Warn("packages: list the apps", "err", err)
		return // never collect on a failed read
	}
	want := map[string]Ref{}
	for _, a := range apps {
		if ref, ok := h.links.Parse(a.AppURL); ok {
			want[ref.SHA256] = ref
		}
	}
	now := h.o.Clock.Now()
	for sha, ref := range want {
		if h.store.Has(sha) {
			continue
		}
		h.mu.Lock()
		last, failed := h.failed[sha]
		h.mu.Unlock()
		if failed && now.Sub(last) < h.o.Resync {
			continue // the last round failed a moment ago: wait for the next pass
		}
		h.start(ref)
	}
	h.collect(want, now)
}

// Ensure pulls a package this instance lacks from a peer, joining a pull
// already under way, and waits for it until ctx ends.
func (h *Host) Ensure(ctx context.Context, ref Ref) error {
	if h.store.Has(ref.SHA256) {
		return nil
	}
	p := h.start(ref)
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return fmt.Errorf("packages: pull %s: %w", ref.SHA256, ctx.Err())
	}
}

// start begins a pull round of ref unless one is under way.
func (h *Host) start(ref Ref) *pull {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p, ok := h.inflight[ref.SHA256]; ok {
		return p
	}
	p := &pull{done: make(chan struct{})}
	h.inflight[ref.SHA256] = p
	go func() {
		p.err = h.pullRound(ref)
		h.mu.Lock()
		delete(h.inflight, ref.SHA256)
		if p.err != nil {
			h.failed[ref.SHA256] = h.o.Clock.Now()
		} else {
			delete(h.failed, ref.SHA256)
		}
		h.mu.Unlock()
		close(p.done)
		if h.o.Pulled != nil {
			h.o.Pulled(ref.SHA256, p.err)
		}
	}()
	return p
}

// pullRound tries every peer, up to Tries times with backoff between tries.
func (h *Host) pullRound(ref Ref) error {
	select {
	case h.sem <- struct{}{}:
		defer func() { <-h.sem }()
	case <-h.ctx.Done():
		return h.ctx.Err()
	}
	var errs []string
	for try := 1; try <= h.o.Tries; try++ {
		if h.store.Has(ref.SHA256) {
			return nil // uploaded here meanwhile
		}
		peers := h.peers()
		if len(peers) == 0 {
			errs = append(errs, "no other scheduler instance to pull from")
		}
		for _, peer := range peers {
			err := h.pullFrom(peer, ref)
			if err == nil {
				h.log.Info("packages: pulled from a peer", "sha256", ref.SHA256, "peer", peer)
				return nil
			}
			errs = append(errs, fmt.Sprintf("%s: %v", peer, err))
		}
		if try < h.o.Tries && !h.wait(h.o.Backoff(try)) {
			return h.ctx.Err()
		}
	}
	err := fmt.Errorf("packages: pull %s: %d tries failed: %s", ref.SHA256, h.o.Tries, strings.Join(lastN(errs, 3), "; "))
	h.log.Warn("packages: pull failed (retried at a later pass)", "sha256", ref.SHA256, "err", err)
	return err
}

func (h *Host) peers() []string {
	if h.o.Peers == nil {
		return nil
	}
	var out []string
	for _, p := range h.o.Peers() {
		if p = strings.TrimRight(p, "/"); p != "" && p != h.links.base {
			out = append(out, p)
		}
	}
	return out
}

// wait sleeps d on the injected clock; false when the Host is closed.
func (h *Host) wait(d time.Duration) bool {
	if d <= 0 {
		return h.ctx.Err() == nil
	}
	t := h.o.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-h.ctx.Done():
		return false
	}
}

// pullFrom downloads a package from one peer, verifying its sha256.
func (h *Host) pullFrom(peer string, ref Ref) error {
	ctx, cancel := context.WithTimeout(h.ctx, h.o.PullTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, peer+h.links.Path(ref.SHA256, ref.Name), nil)
	if err != nil {
		return err
	}
	req.Header.Set(PeerHeader, "1")
	resp, err := h.o.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	if resp.ContentLength > h.store.MaxBytes() {
		return fmt.Errorf("%w: %d bytes", ErrTooLarge, resp.ContentLength)
	}
	p, err := h.store.Receive(ctx, resp.Body)
	if err != nil {
		return err
	}
	_, err = p.Commit(ref.SHA256)
	return err
}

func lastN(s []string, n int) []string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
