package jobs

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func scheduled(mod func(*Config)) Config {
	c := Default()
	c.JobName, c.AppName, c.Cron = "report", "app", "0 0 9 * * ?"
	mod(&c)
	return c
}

func TestScheduleFieldsValidate(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.Crons = []string{""} }, "crons[0] is empty"},
		{func(c *Config) { c.Crons = []string{"0 0 10 * * ?", "0 61 * * * ?"} }, "crons[1]: "},
		{func(c *Config) { c.Cron = ""; c.Crons = []string{"0 0 0 30 2 ?"} }, `crons[0]: cron "0 0 0 30 2 ?" never fires`},
		{func(c *Config) { c.Crons = make([]string, MaxCrons+1) }, "at most 16"},
		{func(c *Config) { c.Jitter = "ten minutes" }, "jitter"},
		{func(c *Config) { c.Jitter = "25h" }, "jitter"},
		{func(c *Config) { c.Jitter = "-1s" }, "jitter"},
		{func(c *Config) { c.Calendar = "Bad Name" }, "calendar: "},
		{func(c *Config) { c.Cron = ""; c.Jitter = "1m" }, "need a cron"},
		{func(c *Config) { c.JobExecutionType = Daemon; c.Calendar = "biz" }, "TRANSIENT"},
		{func(c *Config) { c.Cron = "0 H * * * ? H" }, "year"},
	} {
		c := scheduled(tc.mod)
		err := c.Validate()
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one with %q", c.Crons, err, tc.want)
		}
	}
	ok := scheduled(func(c *Config) {
		c.Cron = ""
		c.Crons = []string{"0 H 9 ? * MON-FRI", "0 0 12 * * ?"}
		c.Jitter = "0s"
		c.Calendar = "cn-2027"
	})
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestPlanInheritsJitter(t *testing.T) {
	from := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	inherit := scheduled(func(c *Config) {})
	p, err := inherit.Plan(nil, time.Hour)
	if err != nil || p.Offset <= 0 || p.Offset >= time.Hour {
		t.Fatalf("inherited jitter: %+v %v", p, err)
	}
	optOut := scheduled(func(c *Config) { c.Jitter = "0s" })
	if p, _ := optOut.Plan(nil, time.Hour); p.Offset != 0 || !p.Next(from, time.UTC).Equal(from.Add(9*time.Hour)) {
		t.Fatalf("jitter 0s still moves fires: %s", p.Offset)
	}
	if p, _ := scheduled(func(c *Config) { c.Cron = "" }).Plan(nil, time.Hour); p != nil {
		t.Fatal("a job without cron has a plan")
	}
}
