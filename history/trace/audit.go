package trace

import (
	"cmp"
	"context"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ejcloud/elasticjob/migrations"
)

// Audit is a row of AUDIT_LOG: one write request to the REST API, whether
// it was carried out or refused. It travels the same path as the other
// events (spool first, then the database), so recording it never waits for
// the database and a database outage loses nothing. The caller keeps
// secrets out of every field (package api builds the summary).
type Audit struct {
	ID           string    `json:"id"`
	CreationTime time.Time `json:"creationTime"`
	User         string    `json:"user"`    // the authenticated user, "anonymous", or the attempted user name of a login
	Role         string    `json:"role"`    // admin, guest, or "" when not authenticated
	Address      string    `json:"address"` // the client's address
	Method       string    `json:"method"`
	Route        string    `json:"route"`      // the route pattern: /api/app/:appName
	TargetKind   string    `json:"targetKind"` // app, job, workflow, … ("" for none)
	Target       string    `json:"target"`     // the app, job or workflow name
	Summary      string    `json:"summary"`    // what changed, without secrets
	Status       int       `json:"status"`     // the HTTP status answered
	// Namespace is the request's (absent in rows spooled before namespaces: the default one).
	Namespace string `json:"namespace,omitempty"`
}

func (e Audit) EventID() string { return e.ID }

// Column widths of AUDIT_LOG (migrations/…/00003_audit_log.sql).
const (
	maxAuditUser    = 100
	maxAuditRole    = 20
	maxAuditAddress = 64
	maxAuditMethod  = 10
	maxAuditRoute   = 255
	maxAuditKind    = 20
	maxAuditTarget  = 255
	maxAuditSummary = 2000
)

func (e Audit) normalize(now time.Time) Event {
	e.ID = orNewID(e.ID)
	e.User, e.Role, e.Address = clip(e.User, maxAuditUser), clip(e.Role, maxAuditRole), clip(e.Address, maxAuditAddress)
	e.Method, e.Route = clip(e.Method, maxAuditMethod), clip(e.Route, maxAuditRoute)
	e.TargetKind, e.Target, e.Summary = clip(e.TargetKind, maxAuditKind), clip(e.Target, maxAuditTarget), clip(e.Summary, maxAuditSummary)
	e.CreationTime = stamp(e.CreationTime, now)
	return e
}

// writeAudits inserts audit rows, ignoring ids already written (a replay).
func (s *sqlWriter) writeAudits(ctx context.Context, tx *sqlx.Tx, rows []Audit) error {
	d := s.dialect
	return insertRows(ctx, tx, s.insertIgnore()+migrations.TableAuditLog+
		" (id, creation_time, user_name, role, address, method, route, target_kind, target, summary, status, namespace) VALUES ",
		12, "", len(rows), func(i int) []any {
			e := rows[i]
			return []any{e.ID, timeArg(d, e.CreationTime), e.User, e.Role, e.Address, e.Method, e.Route, e.TargetKind,
				e.Target, e.Summary, e.Status, cmp.Or(e.Namespace, "default")}
		})
}
