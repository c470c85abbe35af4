// Package bench is what every scenario family of ejbench shares: the
// settings every scenario reads (Env), the report table (Report, Add, Note),
// the processes it starts (bin/scheduler, bin/mesos-local) and their /proc
// figures, the REST client, registration at a pace, CPU profiles, and the
// start-stamp files the jobs write.
package bench
