// Package gobench is ejbench's gobench scenario: the packages' Go
// benchmarks on one CPU.
package gobench
