// Package realkube is the real-Kubernetes test tier: the scheduler with kube_config against
// a real single-node Kubernetes 1.37 (etcd, kube-apiserver, containerd with runc and a
// kubelet on 127.0.0.1), started by TestMain from the build EJ_K8S_HOME names (else
// ../shared/k8s-1.37 beside the repository) and stopped with its stop.sh whatever happens
// (the kubelet's kernel settings are put back). Without the cluster's build every test
// skips with one clear "skipped: no Kubernetes build at …" message; with one they never
// skip (the HA test also needs EJ_TEST_ZK, required when CI is set, as everywhere).
//
// TestMain builds a static scheduler and executor, packs the executor image with both
// (engine/kube/image, as make image does) and imports it into the cluster's containerd; the task
// pods run with hostNetwork and imagePullPolicy Never, and reach the scheduler and the
// tests' recorder on 127.0.0.1.
//
// The recorder app (harness_test.go) tells the recorder server when each shard starts and
// ends (busybox wget), so the tests count what ran, once or twice, whatever the scheduler
// says; its jobParameter picks what a run does: "sleep N", "fail", "oom".
//
// What it proves (kube_test.go and the other files): a 3-shard cron job on bound pods from a
// hosted package (history, logs after the pods are gone, the pods' spec); a gang that does
// not fit waits whole with its reason; OOM, timeout and exit-code causes; a cordoned node
// holds work back with a reason until it is uncordoned; the table every engine passes
// (conformance_test.go, e2e/conformance: a gang, history, kill, a pod deleted as its node's
// loss runs again once, a DAEMON job's pod, logs live and after, a scheduler restart,
// why-waiting); a leader killed
// with SIGKILL mid-run hands its pods to the standby, which adopts them and runs nothing
// again; the scheduler with only the rights of deploy/kubernetes' Role and ClusterRole; a
// podTemplate giving a job a Secret as env and a ConfigMap as a file (and templates the API
// server's dry run refuses at registration); kube_binding=kube-scheduler, with the cluster's
// kube-scheduler (started with K8S_SCHED=1) binding pinned pods, an unschedulable one a miss;
// two teams on the node (teams_test.go: search's cron fires under pay's burst start within the
// kubelet's own start time, measured on bare pods, plus 1 s); HTTP jobs without an app in
// three namespaces (httpjob_test.go: each shard a pod of its namespace's Kubernetes namespace
// calling the test's endpoint once, a 500 a failure, a quota that the HTTP executor's share
// would pass holding the fire); the default install,
// deploy/kubernetes/base applied with kubectl apply -k through a test-only overlay (install_test.go: the scheduler in a pod of its Deployment, on a claim,
// running jobs with Secrets, ConfigMaps, a service account and a claim of their own, the
// objects applied with kubectl, and upgraded to kube_binding=kube-scheduler by applying
// again; the test runs the few kube-controller-manager controllers an install needs); and the
// HA install, deploy/kubernetes/ha (ha_install_test.go: three schedulers of a StatefulSet on the
// etcd registry, a claim each; the leader's scheduler killed with SIGKILL, another leads and
// launches, the cron job keeps firing with nothing run twice, the killed member rejoins).
//
// Run with `go test -race -count=1 ./e2e/realkube/` as root (make test runs it with the
// other tiers; scripts/test.sh installs runc, containernetworking-plugins, xz-utils, bc and
// busybox-static).
package realkube
