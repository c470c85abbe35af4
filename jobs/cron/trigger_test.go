package cron

import (
	"errors"
	"testing"
	"time"
)

func TestTrigger(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

	if loc, err := (Trigger{}).Location(berlin); loc != berlin || err != nil {
		t.Errorf("no zone: %v, %v; want the fallback", loc, err)
	}
	if loc, err := (Trigger{TimeZone: "Europe/Berlin"}).Location(time.UTC); err != nil || loc.String() != "Europe/Berlin" {
		t.Errorf("Europe/Berlin: %v, %v", loc, err)
	}
	if _, err := (Trigger{TimeZone: "Mars/Base"}).Location(time.UTC); err == nil || err.Error() != `timeZone "Mars/Base" is not an IANA time zone name` {
		t.Errorf("unknown zone: %v", err)
	}
	if s, err := (Trigger{Cron: "  "}).Schedule(); s != nil || err != nil {
		t.Errorf("blank cron: %v, %v; want none", s, err)
	}
	var bad *ParseError
	if err := (Trigger{Cron: "nope"}).CheckFires(now, time.UTC); !errors.As(err, &bad) {
		t.Errorf("bad cron: %v, want a *ParseError", err)
	}
	if err := (Trigger{Cron: "0 0 2 * * ?", TimeZone: "Mars/Base"}).CheckFires(now, time.UTC); err == nil {
		t.Error("a bad zone passed")
	}
	for _, ok := range []Trigger{{}, {Cron: "0 0 2 * * ?", TimeZone: "Europe/Berlin"}} {
		if err := ok.CheckFires(now, time.UTC); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
	var never *NeverFiresError
	err = (Trigger{Cron: "0 0 0 30 2 ?", TimeZone: "Europe/Berlin"}).CheckFires(now, time.UTC)
	if !errors.As(err, &never) || !never.After.Equal(now) || never.After.Location().String() != "Europe/Berlin" {
		t.Fatalf("30 February: %v, want a *NeverFiresError after now in Berlin", err)
	}
	if want := `cron "0 0 0 30 2 ?" never fires after 2025-03-01 13:00:00 CET`; err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
}
