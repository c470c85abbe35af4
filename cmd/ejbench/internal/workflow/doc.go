// Package workflow is ejbench's workflow scenario: sequential and
// concurrent runs of a 10-node chain and a fan-out.
package workflow
