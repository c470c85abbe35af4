package jobs

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDeadlineValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		bad  string
	}{
		{"none", func(*Config) {}, ""},
		{"all set", func(c *Config) { c.StartDeadlineSeconds, c.RunDeadlineSeconds, c.RunDeadlineAt = 60, 3600, "06:30" }, ""},
		{"negative", func(c *Config) { c.StartDeadlineSeconds = -1 }, "startDeadlineSeconds"},
		{"too long", func(c *Config) { c.RunDeadlineSeconds = MaxDeadlineSeconds + 1 }, "runDeadlineSeconds"},
		{"bad time of day", func(c *Config) { c.RunDeadlineAt = "25:00" }, "runDeadlineAt"},
		{"not a time", func(c *Config) { c.RunDeadlineAt = "6am" }, "runDeadlineAt"},
		{"feishu webhook", func(c *Config) {
			c.JobErrorHandlerType, c.Props = HandlerWebhook, map[string]string{"webhook.url": "https://h/hook", "webhook.format": "feishu"}
		}, ""},
		{"daemon run deadline", func(c *Config) { c.JobExecutionType, c.Cron, c.RunDeadlineSeconds = Daemon, "0 * * * * ?", 5 }, "DAEMON"},
	} {
		c := validJob()
		tc.mod(&c)
		err := c.Validate()
		if tc.bad == "" && err != nil || tc.bad != "" && (err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.bad)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

func TestRunDeadlineAfter(t *testing.T) {
	c := Config{RunDeadlineAt: "06:00"}
	for _, tc := range []struct{ started, want time.Time }{
		{time.Date(2026, 3, 2, 1, 0, 0, 0, time.UTC), time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)},
		{time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC), time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)},
		{time.Date(2026, 3, 2, 23, 30, 0, 0, time.UTC), time.Date(2026, 3, 3, 6, 0, 0, 0, time.UTC)},
	} {
		if got, ok := c.RunDeadlineAfter(tc.started, time.UTC); !ok || !got.Equal(tc.want) {
			t.Errorf("started %v: got %v, want %v", tc.started, got, tc.want)
		}
	}
	if _, ok := (Config{}).RunDeadlineAfter(time.Now(), time.UTC); ok {
		t.Error("no runDeadlineAt gave a deadline")
	}
}

func TestMoveOverlapValidation(t *testing.T) {
	daemon := func(c *Config) { c.JobExecutionType, c.Cron = Daemon, "0 * * * * ?" }
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		bad  string
	}{
		{"none", func(*Config) {}, ""},
		{"a daemon's", func(c *Config) { daemon(c); c.MoveOverlapSeconds = 120 }, ""},
		{"the most", func(c *Config) { daemon(c); c.MoveOverlapSeconds = MaxMoveOverlapSeconds }, ""},
		{"negative", func(c *Config) { daemon(c); c.MoveOverlapSeconds = -1 }, "moveOverlapSeconds must be 0"},
		{"too long", func(c *Config) { daemon(c); c.MoveOverlapSeconds = MaxMoveOverlapSeconds + 1 }, "to 3600 (1 hour), got 3601"},
		{"transient", func(c *Config) { c.MoveOverlapSeconds = 60 }, "moveOverlapSeconds is for DAEMON jobs"},
	} {
		c := validJob()
		tc.mod(&c)
		err := c.Validate()
		if tc.bad == "" && err != nil || tc.bad != "" && (err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.bad)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
