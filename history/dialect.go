package history

import (
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// Dialects the store speaks.
const (
	SQLite = "sqlite"
	MySQL  = "mysql"
)

// dialect isolates what differs between SQLite and MySQL. Both take "?"
// placeholders and LIMIT ? OFFSET ?, and neither needs quoting for the
// whitelisted, upper-case table and lower-case column names, so what is left
// is how times are bound and read back.
type dialect struct{ name string }

func parseDialect(name string) (dialect, error) {
	switch strings.ToLower(name) {
	case SQLite, "sqlite3":
		return dialect{SQLite}, nil
	case MySQL, "mariadb":
		return dialect{MySQL}, nil
	}
	return dialect{}, fmt.Errorf("history: unknown dialect %q (want sqlite or mysql)", name)
}

// sqliteTime is how the SQLite schema stores times (see migrations): UTC
// text with milliseconds, which sorts and compares as text.
const sqliteTime = "2006-01-02 15:04:05.000"

// bindTime is how a time is passed as a parameter: on SQLite as sqliteTime
// text, so comparisons with the stored text are exact; on MySQL as a UTC
// time.Time, which go-sql-driver/mysql sends in the connection's loc (UTC by
// default) to the TIMESTAMP(3) columns.
func (d dialect) bindTime(t time.Time) any {
	if d.name == SQLite {
		return t.UTC().Format(sqliteTime)
	}
	return t.UTC()
}

// dbTime scans a timestamp column whatever the driver hands back: a
// time.Time (SQLite TIMESTAMP columns, MySQL with parseTime=true), or text
// (MySQL without parseTime, or rows written by other tools). Times without
// a zone are UTC.
type dbTime struct {
	T     time.Time
	Valid bool
}

var timeLayouts = []string{
	sqliteTime,
	"2006-01-02 15:04:05.999999999-07:00",
	"2006-01-02 15:04:05.999999999Z07:00",
	time.RFC3339Nano,
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02",
}

func (t *dbTime) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*t = dbTime{}
		return nil
	case time.Time:
		*t = dbTime{v.UTC(), true}
		return nil
	case int64:
		*t = dbTime{time.Unix(v, 0).UTC(), true}
		return nil
	case []byte:
		return t.parse(string(v))
	case string:
		return t.parse(v)
	}
	return fmt.Errorf("history: cannot scan %T into a time", src)
}

func (t *dbTime) parse(s string) error {
	for _, l := range timeLayouts {
		if v, err := time.Parse(l, s); err == nil {
			*t = dbTime{v.UTC(), true}
			return nil
		}
	}
	return fmt.Errorf("history: cannot parse time %q", s)
}

func (t dbTime) ptr() *time.Time {
	if !t.Valid {
		return nil
	}
	v := t.T
	return &v
}

var _ sql.Scanner = (*dbTime)(nil)
