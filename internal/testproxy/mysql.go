package testproxy

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// MySQL creates a database of its own for the test (dropped at cleanup)
// and returns the test user's DSN for it (parseTime=true).
func MySQL(t testing.TB) string {
	t.Helper()
	userDSN, adminDSN := os.Getenv("EJ_TEST_MYSQL_DSN"), os.Getenv("EJ_TEST_MYSQL_ADMIN_DSN")
	if userDSN == "" || adminDSN == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("EJ_TEST_MYSQL_DSN/EJ_TEST_MYSQL_ADMIN_DSN not set in CI: run scripts/services.sh start DIR and source DIR/env")
		}
		t.Skip("EJ_TEST_MYSQL_DSN not set; run scripts/services.sh start DIR and source DIR/env")
	}
	ucfg, err := mysql.ParseDSN(userDSN)
	if err != nil {
		t.Fatalf("EJ_TEST_MYSQL_DSN: %v", err)
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	// The test user may use every database whose name starts with its own.
	name := ucfg.DBName + "_t" + hex.EncodeToString(rnd[:])
	admin, err := sql.Open("mysql", adminDSN)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec("CREATE DATABASE `" + name + "` CHARACTER SET utf8mb4"); err != nil {
		admin.Close()
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		defer admin.Close()
		if _, err := admin.Exec("DROP DATABASE IF EXISTS `" + name + "`"); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	ucfg.DBName = name
	ucfg.ParseTime = true
	return ucfg.FormatDSN()
}

// Via returns dsn with its address replaced by addr (a Proxy's).
func Via(t testing.TB, dsn, addr string) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Net, cfg.Addr = "tcp", addr
	return cfg.FormatDSN()
}

// Target returns the host:port of a DSN.
func Target(t testing.TB, dsn string) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Net != "tcp" {
		t.Fatal(fmt.Sprintf("DSN network %q, want tcp", cfg.Net))
	}
	return cfg.Addr
}
