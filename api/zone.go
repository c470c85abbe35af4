package api

import (
	"os"
	"strings"
	"time"
)

// zoneName names loc as an IANA zone: time.Local calls itself "Local",
// which tells a client nothing. The machine's zone is read from TZ, the
// /etc/localtime link into zoneinfo, or /etc/timezone; "UTC" when none
// names it (Go's own default then).
func zoneName(loc *time.Location, getenv func(string) string, readlink, readFile func(string) (string, error)) string {
	if name := loc.String(); name != "Local" {
		return name
	}
	if tz := strings.TrimPrefix(getenv("TZ"), ":"); tz != "" && !strings.HasPrefix(tz, "/") {
		if _, err := time.LoadLocation(tz); err == nil {
			return tz
		}
	}
	if target, err := readlink("/etc/localtime"); err == nil {
		if _, name, ok := strings.Cut(target, "zoneinfo/"); ok && name != "" {
			return name
		}
	}
	if b, err := readFile("/etc/timezone"); err == nil {
		if name := strings.TrimSpace(b); name != "" {
			return name
		}
	}
	return "UTC"
}

// machineZoneName is zoneName with the process's environment and files.
func machineZoneName(loc *time.Location) string {
	return zoneName(loc, os.Getenv, os.Readlink, func(p string) (string, error) {
		b, err := os.ReadFile(p)
		return string(b), err
	})
}
