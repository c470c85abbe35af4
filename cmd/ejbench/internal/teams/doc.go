// Package teams is ejbench's teams scenario: namespaces (one
// namespace's fires under another's bursts, a whole guarantee, weights) on
// real schedulers, beside round's virtual-time simulation of the same.
package teams
