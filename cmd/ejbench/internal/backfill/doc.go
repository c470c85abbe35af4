// Package backfill is ejbench's backfill scenario: a backfill of 10,000
// instants beside live fires.
package backfill
