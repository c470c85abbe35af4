// Package cron implements Quartz cron expressions (placeholder; being written).
package cron

import "time"

// Schedule is a parsed expression.
type Schedule struct{ expr string }

// Parse parses a Quartz cron expression.
func Parse(expr string) (*Schedule, error) { return &Schedule{expr: expr}, nil }

// Next returns the first fire time strictly after t, in loc; zero if none.
func (s *Schedule) Next(t time.Time, loc *time.Location) time.Time { return time.Time{} }
