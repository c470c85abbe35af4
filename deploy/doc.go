// Package deploy holds what operators install beside the scheduler, ready
// to use: a Grafana dashboard (grafana/elasticjob.json, the Prometheus
// data source chosen by a variable) and Prometheus alert rules
// (prometheus/alerts.yml, unit-tested by prometheus/alerts_test.yml with
// promtool in scripts/test.sh; prometheus/prometheus.yml is an example
// scrape configuration loading them). The package's test checks that
// every metric the dashboard and the alerts query is one the scheduler
// exports.
package deploy
