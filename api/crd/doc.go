// Package crd makes the scheduler's definitions Kubernetes objects
// (docs/kubernetes.md, "Definitions as Kubernetes objects"): the
// CloudApp, CloudJob and CloudWorkflow kinds of elasticjob.io/v1, a
// validating admission webhook that checks them as the REST API does, and
// the leader's reconciler that registers them and writes back their status.
package crd
