package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/config"
	"github.com/ejcloud/elasticjob/history"
	"github.com/ejcloud/elasticjob/history/trace"
)

// openHistory opens the event trace writer and the history reader: SQLite
// in the data directory by default, MySQL when configured, nothing with
// event_trace_rdb_driver=none (then both are nil and the history API
// answers empty pages). A database that is down does not stop the
// scheduler: events are spooled and written when it returns.
// retainIf gates retention to the leader.
func openHistory(ctx context.Context, cfg config.Config, log *slog.Logger, retainIf func() bool) (*trace.Writer, *history.Store, error) {
	dialect, err := trace.DialectOf(cfg.RDBDriver)
	if err != nil {
		return nil, nil, err
	}
	if dialect == "none" || dialect == "" {
		return nil, nil, nil
	}
	dsn := filepath.Join(cfg.DataDir, "trace.db")
	if dialect == "mysql" {
		if dsn, err = trace.MySQLDSN(cfg.RDBURL, cfg.RDBUsername, cfg.RDBPassword); err != nil {
			return nil, nil, err
		}
	}
	w, err := trace.Open(ctx, trace.Options{Dialect: dialect, DSN: dsn, SpoolDir: filepath.Join(cfg.DataDir, "trace-spool"),
		MaxAge: cfg.HistoryMaxAge, MaxRows: int64(cfg.HistoryMaxRows), RetainIf: retainIf, Log: log.With("subsystem", "trace")})
	if err != nil {
		return nil, nil, fmt.Errorf("event trace (%s): %w", trace.RedactDSN(dsn), err)
	}
	hs, err := history.New(w.Handle(), dialect, history.Options{Location: cfg.Location, Started: time.Now()})
	if err != nil {
		_ = w.Close(ctx)
		return nil, nil, err
	}
	return w, hs, nil
}

// auditLog is the API's audit log, kept in the history database; nil
// (nothing recorded, GET /api/audit answers 503) when history is off.
func auditLog(tw *trace.Writer, hs *history.Store) api.AuditLog {
	if tw == nil || hs == nil {
		return nil
	}
	return history.NewAuditLog(tw, hs)
}
