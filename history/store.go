package history

import (
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/jmoiron/sqlx"
)

// Options tune a Store.
type Options struct {
	Clock clock.Clock // default clock.Real
	// Location sets the day boundaries of the DAY series (default
	// time.Local, as the original used the JVM's zone).
	Location *time.Location
	// Started is when this scheduler started: the "online" task results
	// (the console's "since the scheduler started") count from its minute
	// (the MINUTE table for the rest of that hour, coarser tables after).
	// Zero: all of them.
	Started time.Time
}

// Store reads the event trace and statistics tables.
type Store struct {
	db    *sqlx.DB
	d     dialect
	clock clock.Clock
	loc   *time.Location
	start time.Time
}

// New returns a Store over db, whose tables migrations.Apply created.
// dialect is "sqlite" or "mysql".
func New(db *sqlx.DB, dialect string, o Options) (*Store, error) {
	d, err := parseDialect(dialect)
	if err != nil {
		return nil, err
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Location == nil {
		o.Location = time.Local
	}
	return &Store{db: db, d: d, clock: o.Clock, loc: o.Location, start: o.Started}, nil
}
