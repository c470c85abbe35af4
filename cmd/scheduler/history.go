package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/config"
	"github.com/ejcloud/elasticjob/history"
	"github.com/ejcloud/elasticjob/history/replog"
	"github.com/ejcloud/elasticjob/history/trace"
)

// openHistory opens the event trace writer and the history reader: SQLite
// in the data directory by default, MySQL when configured, nothing with
// event_trace_rdb_driver=none (then both are nil and the history API
// answers empty pages). A database that is down does not stop the
// scheduler: events are spooled and written when it returns.
// retainIf gates retention to the leader.
//
// With registry=etcd and the SQLite history (no MySQL), the history is
// replicated (history/replog): the writer publishes its events to a log in
// the registry's etcd cluster, and every replica applies that log to its
// own SQLite (the returned *replog.Log, to Run for the process's life);
// each replica then keeps its own retention, and the log counts the task
// results into the statistics. Otherwise the returned log is nil.
func openHistory(ctx context.Context, cfg config.Config, log *slog.Logger, eb *etcdBackend, retainIf func() bool) (*trace.Writer, *history.Store, *replog.Log, error) {
	dialect, err := trace.DialectOf(cfg.RDBDriver)
	if err != nil {
		return nil, nil, nil, err
	}
	if dialect == "none" || dialect == "" {
		return nil, nil, nil, nil
	}
	dsn := filepath.Join(cfg.DataDir, "trace.db")
	if dialect == "mysql" {
		if dsn, err = trace.MySQLDSN(cfg.RDBURL, cfg.RDBUsername, cfg.RDBPassword); err != nil {
			return nil, nil, nil, err
		}
	}
	topts := trace.Options{Dialect: dialect, DSN: dsn, SpoolDir: filepath.Join(cfg.DataDir, "trace-spool"),
		MaxAge: cfg.HistoryMaxAge, MaxRows: int64(cfg.HistoryMaxRows), RetainIf: retainIf, Log: log.With("subsystem", "trace")}
	var (
		w  *trace.Writer
		hl *replog.Log
	)
	if eb != nil && dialect != "mysql" {
		topts.RetainIf = nil // every replica keeps its own copy within the bounds
		ro := replogOptions(cfg, eb, retainIf, log)
		hl, w, err = replog.Open(ctx, ro, topts)
		if err == nil {
			log.Info("history replicated through the registry's etcd cluster", "replica", ro.Name, "replicas", ro.Replicas, "prefix", ro.Prefix)
		}
	} else {
		w, err = trace.Open(ctx, topts)
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("event trace (%s): %w", trace.RedactDSN(dsn), err)
	}
	hs, err := history.New(w.Handle(), dialect, history.Options{Location: cfg.Location, Started: time.Now()})
	if err != nil {
		_ = w.Close(ctx)
		return nil, nil, nil, err
	}
	return w, hs, hl, nil
}

// replogOptions is the replicated history log of this replica: named
// after its etcd member, pruned by the leader (isLeader) once every
// member of etcd_peers applied an entry. With etcd_endpoints (no member
// here) the replica is named after its advertised address and pruning
// waits for the replicas that acknowledged.
func replogOptions(cfg config.Config, eb *etcdBackend, isLeader func() bool, log *slog.Logger) replog.Options {
	o := replog.Options{Client: eb.Client(), Prefix: cfg.Etcd.Prefix + "/history", PruneIf: isLeader,
		CountResults: true, Location: cfg.Location, Log: log.With("subsystem", "replog")}
	if eb.member == nil {
		o.Name = replicaName(cfg.Advertised())
		return o
	}
	o.Name = cfg.EtcdMemberName()
	for _, p := range cfg.EtcdPeers() {
		o.Replicas = append(o.Replicas, p.Name)
	}
	if len(o.Replicas) == 0 {
		o.Replicas = []string{o.Name}
	}
	return o
}

// replicaName is a scheduler's advertised URL as a log replica's name
// (host:port, with no character an etcd key would mind).
func replicaName(advertised string) string {
	if u, err := url.Parse(advertised); err == nil && u.Host != "" {
		advertised = u.Host
	}
	return strings.NewReplacer("/", "_", " ", "_").Replace(advertised)
}

// auditLog is the API's audit log, kept in the history database; nil
// (nothing recorded, GET /api/audit answers 503) when history is off.
func auditLog(tw *trace.Writer, hs *history.Store) api.AuditLog {
	if tw == nil || hs == nil {
		return nil
	}
	return history.NewAuditLog(tw, hs)
}
