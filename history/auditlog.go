package history

import (
	"context"
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/history/trace"
	"github.com/ejcloud/elasticjob/history/view"
)

// AuditLog is the REST API's audit log (api.AuditLog): rows are recorded
// through the event trace writer (spooled to disk first, so neither a slow
// nor a lost database blocks or loses them) and searched in AUDIT_LOG.
type AuditLog struct {
	w *trace.Writer
	s *Store
}

// NewAuditLog joins the trace writer and the history store of one
// database.
func NewAuditLog(w *trace.Writer, s *Store) *AuditLog { return &AuditLog{w: w, s: s} }

// Record queues a row and waits, within ctx, until it is in the spool on
// disk (group-committed with concurrent events); the database is written
// later by the writer's loop.
func (l *AuditLog) Record(ctx context.Context, a view.Audit) error {
	var at time.Time
	if a.CreationTime != nil {
		at = *a.CreationTime
	}
	err := l.w.RecordDurable(ctx, trace.Audit{ID: a.ID, CreationTime: at, User: a.User, Role: a.Role, Address: a.Address,
		Method: a.Method, Route: a.Route, TargetKind: a.TargetKind, Target: a.Target, Summary: a.Summary, Status: a.Status, Namespace: a.Namespace})
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

// Audits searches AUDIT_LOG.
func (l *AuditLog) Audits(ctx context.Context, q view.Query) (view.Page[view.Audit], error) {
	return l.s.Audits(ctx, q)
}

// Flush writes every recorded row to the database now (tests, shutdown).
func (l *AuditLog) Flush(ctx context.Context) error { return l.w.Flush(ctx) }
