package cache

import "time"

// SetRecheckAfter shortens how long after a Refresh a node it revealed is
// read again.
func SetRecheckAfter(c *KV, d time.Duration) { c.recheckAfter = d }
