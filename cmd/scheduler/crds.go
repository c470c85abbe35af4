package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/ejcloud/elasticjob/api/crd"
	"github.com/ejcloud/elasticjob/config"
	"github.com/ejcloud/elasticjob/leader"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
)

// Definitions as Kubernetes objects (docs/kubernetes.md): every instance
// serves the admission webhook when kube_webhook_url is set; the leader
// reconciles the objects when kube_crds is.

// webhookServer is the webhook of kube_webhook_url (nil without it or
// without Kubernetes).
func webhookServer(cfg config.Config, e *engines, kv store.KV, defs crd.Definitions, log *slog.Logger) *crd.WebhookServer {
	if e.kube == nil || cfg.Kube.WebhookURL == "" {
		return nil
	}
	log = log.With("subsystem", "kube-webhook")
	return &crd.WebhookServer{URL: cfg.Kube.WebhookURL, Listen: cfg.Kube.WebhookAddress, CA: registry.New(kv).Term().WebhookCA(), Client: e.kubes.Typed,
		Handler: crd.Webhook{Defs: defs, Namespaces: cfg.Kube.SchedulerNamespaceOf, Log: log}, Log: log, Now: time.Now}
}

// crdLoop is the leader's reconciler of the objects (none without
// kube_crds).
func (l *leaderWork) crdLoop(reg *registry.Registry, log *slog.Logger) []leader.Loop {
	if l.engines.kube == nil || !l.cfg.Kube.CRDs || l.defs == nil {
		return nil
	}
	r := &crd.Reconciler{Dynamic: l.engines.kubes.Dynamic, Defs: l.defs, Registry: reg, Resync: l.cfg.Kube.CRDResync,
		Namespaces: l.cfg.Kube.SchedulerNamespaceOf,
		Log:        log.With("subsystem", "kube-crds")}
	return []leader.Loop{{Name: "kubernetes objects", Run: func(ctx context.Context) error { return r.Run(ctx) }}}
}
