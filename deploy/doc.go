// Package deploy holds what operators install beside the scheduler, ready
// to use: a Grafana dashboard (grafana/elasticjob.json, the Prometheus
// data source chosen by a variable) and Prometheus alert rules
// (prometheus/alerts.yml, unit-tested by prometheus/alerts_test.yml with
// promtool in scripts/test.sh; prometheus/prometheus.yml is an example
// scrape configuration loading them), and the Kubernetes install
// (kubernetes/base, a kustomize base that runs on its own; kubernetes/ha,
// three schedulers as a StatefulSet on the etcd registry and nothing else;
// kubernetes/ha-zookeeper, the compatibility overlay with ZooKeeper and
// MySQL; helm/elasticjob, the same as a Helm chart; docs/kubernetes.md). The package's tests check that every metric the
// dashboard and the alerts query is one the scheduler exports, that the CRDs
// are the REST API's fields, that the kustomizations build into a
// configuration the scheduler accepts, and that the chart, rendered and
// linted by Helm's own code, is the base and the ha overlay's scheduler.
package deploy
