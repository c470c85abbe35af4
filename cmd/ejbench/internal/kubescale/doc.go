// Package kubescale is ejbench's kube-scale scenario: the real control
// plane with kwok's simulated nodes, one load run through our scheduler's
// Kubernetes engine and, in turn, as Indexed Jobs placed by kube-scheduler.
package kubescale
