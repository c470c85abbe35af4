package trace

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// DialectOf maps the original's event_trace_rdb_driver to a dialect:
// MySQL and MariaDB JDBC drivers (and "mysql") → "mysql"; "" or "sqlite"
// → "sqlite"; "none" (keep no history) → "none".
func DialectOf(driver string) (string, error) {
	d := strings.ToLower(strings.TrimSpace(driver))
	switch {
	case d == "none":
		return "none", nil
	case d == "" || d == "sqlite" || d == "sqlite3":
		return dialectSQLite, nil
	case d == "mysql" || d == "mariadb" || strings.Contains(d, "mysql") || strings.Contains(d, "mariadb"):
		return dialectMySQL, nil
	}
	return "", fmt.Errorf("trace: event_trace_rdb_driver %q is not supported (use a MySQL or MariaDB driver)", driver)
}

// MySQLDSN builds a go-sql-driver DSN from the original's
// event_trace_rdb_url (jdbc:mysql://host[:port]/db?…, also jdbc:mariadb:,
// or already a Go DSN), username and password. JDBC-only parameters
// (useSSL, characterEncoding, serverTimezone, …) are dropped: the writer
// sets its own (UTC, parseTime).
func MySQLDSN(rdbURL, username, password string) (string, error) {
	rest, ok := strings.CutPrefix(rdbURL, "jdbc:mysql://")
	if !ok {
		rest, ok = strings.CutPrefix(rdbURL, "jdbc:mariadb://")
	}
	if !ok {
		cfg, err := mysql.ParseDSN(rdbURL)
		if err != nil {
			return "", fmt.Errorf("trace: event_trace_rdb_url: %w", err)
		}
		if username != "" {
			cfg.User = username
		}
		if password != "" {
			cfg.Passwd = password
		}
		return cfg.FormatDSN(), nil
	}
	u, err := url.Parse("mysql://" + rest)
	if err != nil {
		return "", fmt.Errorf("trace: event_trace_rdb_url: %w", err)
	}
	host := u.Host
	if host == "" {
		return "", fmt.Errorf("trace: event_trace_rdb_url %q has no host", rdbURL)
	}
	if u.Port() == "" {
		host = net.JoinHostPort(strings.Trim(host, "[]"), "3306")
	}
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr = username, password, "tcp", host
	cfg.DBName = strings.TrimPrefix(u.Path, "/")
	if cfg.DBName == "" {
		return "", fmt.Errorf("trace: event_trace_rdb_url %q names no database", rdbURL)
	}
	cfg.ParseTime = true
	return cfg.FormatDSN(), nil
}

// RedactDSN hides a MySQL DSN's password, for logs.
func RedactDSN(dsn string) string {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil || cfg.Passwd == "" {
		return dsn
	}
	cfg.Passwd = "xxxxx"
	return cfg.FormatDSN()
}
