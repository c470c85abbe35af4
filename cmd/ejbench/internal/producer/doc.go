// Package producer is ejbench's register and producer scenarios: 100,000
// jobs registered through the API, then the cron producer alone at that
// scale (Mesos closed) and a restart.
package producer
