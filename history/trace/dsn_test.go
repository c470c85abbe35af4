package trace

import (
	"strings"
	"testing"
)

func TestDialectOf(t *testing.T) {
	for in, want := range map[string]string{"": "sqlite", "com.mysql.jdbc.Driver": "mysql", "com.mysql.cj.jdbc.Driver": "mysql",
		"org.mariadb.jdbc.Driver": "mysql", "mysql": "mysql", "sqlite": "sqlite", "none": "none", "None": "none"} {
		if got, err := DialectOf(in); err != nil || got != want {
			t.Errorf("DialectOf(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := DialectOf("org.h2.Driver"); err == nil {
		t.Error("h2 accepted")
	}
}

func TestMySQLDSN(t *testing.T) {
	for _, tc := range []struct{ url, user, pass, want string }{
		{"jdbc:mysql://db.example:3307/elasticjob_log?useSSL=false&characterEncoding=utf8", "ej", "p@ss",
			"ej:p@ss@tcp(db.example:3307)/elasticjob_log?parseTime=true"},
		{"jdbc:mariadb://db.example/log", "ej", "", "ej@tcp(db.example:3306)/log?parseTime=true"},
		{"u:old@tcp(127.0.0.1:3306)/x", "", "new", "u:new@tcp(127.0.0.1:3306)/x"},
	} {
		got, err := MySQLDSN(tc.url, tc.user, tc.pass)
		if err != nil || got != tc.want {
			t.Errorf("MySQLDSN(%q) = %q, %v; want %q", tc.url, got, err, tc.want)
		}
	}
	for _, bad := range []string{"jdbc:mysql:///db", "jdbc:mysql://h:1/", "not a dsn"} {
		if _, err := MySQLDSN(bad, "u", "p"); err == nil {
			t.Errorf("MySQLDSN(%q) accepted", bad)
		}
	}
	if r := RedactDSN("u:secret@tcp(h:1)/d"); strings.Contains(r, "secret") {
		t.Errorf("RedactDSN: %s", r)
	}
}
