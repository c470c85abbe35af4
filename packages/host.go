package packages

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/registry"
)

// Apps is the registry's app list and its change notifications.
type Apps interface {
	Apps(ctx context.Context) ([]app.Config, error)
	// WatchApps reports changes under /config/app until ctx ends.
	WatchApps(ctx context.Context) (<-chan registry.ConfigChange, error)
}

// RegistryApps adapts the registry to Apps.
func RegistryApps(r *registry.Registry) Apps { return registryApps{r} }

type registryApps struct{ r *registry.Registry }

func (a registryApps) Apps(ctx context.Context) ([]app.Config, error) { return a.r.Config().Apps(ctx) }
func (a registryApps) WatchApps(ctx context.Context) (<-chan registry.ConfigChange, error) {
	return a.r.WatchApps(ctx)
}

// Options configure a Host. Dir, Key and Base are required.
type Options struct {
	Dir      string // where packages are stored (data_dir/packages)
	MaxBytes int64  // size limit of one package (package_max_bytes; <= 0: DefaultMaxBytes)
	Key      []byte // token key shared by every instance (LoadKey)
	Base     string // this instance's base URL as agents and peers reach it (advertise_url)
	Apps     Apps   // the registry's apps; nil: no replication and no GC
	// Peers returns the base URLs of the other scheduler instances (the
	// election's candidates); nil or empty: a single instance.
	Peers  func() []string
	Client *http.Client // for pulls (default: one with dial and header timeouts)
	Clock  clock.Clock
	Log    *slog.Logger
	// Grace is how long a package no app names is kept (package_gc_grace, default 1h).
	Grace time.Duration
	// Resync is the period of the full pass over the apps that retries failed
	// pulls and collects garbage (default 1m).
	Resync time.Duration
	// Tries bounds the attempts of one pull round (default 5); Backoff is the
	// wait after a failed attempt (default 1s, doubling, at most 30s).
	Tries   int
	Backoff func(try int) time.Duration
	// PullTimeout bounds one download from a peer (default 30m).
	PullTimeout time.Duration
	// EnsureWait bounds how long a request for a package this instance lacks
	// waits for the pull (default 2m).
	EnsureWait time.Duration
	// Pulled, when set, hears the end of every pull round (err nil: stored).
	Pulled func(sha string, err error)
}

// Host stores, serves, replicates and collects packages. Create with New,
// run its loop with Run; it is the http.Handler of Prefix.
type Host struct {
	o     Options
	store *Store
	links *Links
	log   *slog.Logger

	ctx    context.Context // pulls live as long as the Host
	cancel context.CancelFunc
	sem    chan struct{} // bounds concurrent pulls

	mu       sync.Mutex
	inflight map[string]*pull     // by sha256
	failed   map[string]time.Time // last failed pull round
	unref    map[string]time.Time // first seen named by no app (GC)
}

// New opens the store and returns a Host.
func New(o Options) (*Host, error) {
	if len(o.Key) == 0 || o.Base == "" || o.Dir == "" {
		return nil, fmt.Errorf("packages: Dir, Key and Base are required")
	}
	o = withDefaults(o)
	st, err := NewStore(o.Dir, o.MaxBytes, o.Clock)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Host{o: o, store: st, links: NewLinks(o.Key, o.Base), log: o.Log, ctx: ctx, cancel: cancel,
		sem: make(chan struct{}, 2), inflight: map[string]*pull{}, failed: map[string]time.Time{}, unref: map[string]time.Time{}}, nil
}

func withDefaults(o Options) Options {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Grace <= 0 {
		o.Grace = time.Hour
	}
	if o.Resync <= 0 {
		o.Resync = time.Minute
	}
	if o.Tries <= 0 {
		o.Tries = 5
	}
	if o.Backoff == nil {
		o.Backoff = func(try int) time.Duration { return min(time.Second<<(try-1), 30*time.Second) }
	}
	if o.PullTimeout <= 0 {
		o.PullTimeout = 30 * time.Minute
	}
	if o.EnsureWait <= 0 {
		o.EnsureWait = 2 * time.Minute
	}
	if o.Client == nil {
		o.Client = &http.Client{Transport: &http.Transport{
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			ResponseHeaderTimeout: 30 * time.Second,
		}}
	}
	return o
}

// Close stops pulls in progress. Run does it when it returns.
func (h *Host) Close() { h.cancel() }

// Receive streams an upload into the store (see Store.Receive).
func (h *Host) Receive(ctx context.Context, r io.Reader) (*Pending, error) {
	return h.store.Receive(ctx, r)
}

// MaxBytes is the size limit of one package.
func (h *Host) MaxBytes() int64 { return h.store.MaxBytes() }

// URL is a stored package's URL on this instance, the appURL an upload sets.
func (h *Host) URL(sha, name string) string { return h.links.URL(sha, name) }

// Resolve rewrites a hosted package URL to this instance (see Links.Resolve):
// the leader's hook for scheduler.Options.ResolveAppURL.
func (h *Host) Resolve(raw string) string { return h.links.Resolve(raw) }

// Store is the package store.
func (h *Host) Store() *Store { return h.store }

// Links builds and reads package URLs.
func (h *Host) Links() *Links { return h.links }
