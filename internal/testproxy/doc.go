// Package testproxy is shared test support for anything that talks to a
// database or a peer over TCP: MySQL gives a test a private MySQL/MariaDB
// database, ZK the ZooKeeper servers of scripts/services.sh, and Proxy is a TCP proxy on 127.0.0.1 that can forward, refuse
// (the database is down) or hang (it stopped answering) its connections,
// and cut the ones open, so a test can fail the path to a real server and
// restore it. It was scheduler/trace/tracetest; the history writer, the
// election and the migrations tests use it.
//
// The database comes from the real MariaDB that `scripts/services.sh start
// DIR` runs on 127.0.0.1 (source DIR/env for EJ_TEST_MYSQL_DSN and
// EJ_TEST_MYSQL_ADMIN_DSN). Without it a test is skipped, unless CI is set,
// where it fails.
package testproxy
