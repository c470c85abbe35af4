package store

import "context"

// urgentKey marks a context whose commits must not wait behind other
// writers' queued work.
type urgentKey struct{}

// Urgent marks ctx's commits as urgent: a store that queues its writers'
// requests on one ordered channel (ZooKeeper's session) may send them on a
// channel of their own, so they do not wait behind the bulk writes queued
// before them (the launch loop's chained multis). The commits keep every
// op they carry, a leader's fence included, so they stay as fenced and as
// conditional as any other; what changes is only their order relative to
// commits sent at the same time on the other channel, which was never
// defined. Stores without such a queue ignore it.
func Urgent(ctx context.Context) context.Context { return context.WithValue(ctx, urgentKey{}, true) }

// IsUrgent reports whether ctx was marked by Urgent.
func IsUrgent(ctx context.Context) bool { v, _ := ctx.Value(urgentKey{}).(bool); return v }
