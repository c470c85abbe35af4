// Package throughput is ejbench's throughput scenario: completed transient
// executions per second and CPU per execution, saturated, paced and on
// crons alone.
package throughput
