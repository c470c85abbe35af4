// Package java is ejbench's java scenario: Java jobs' trigger to first
// line through variants of the scheduler run alternately, and DAEMON.
package java
