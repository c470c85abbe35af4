//go:build e2e

package realkube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPodTemplateSecretAndConfigMap: a job whose podTemplate takes a password from a
// Secret as env (the job's template) and a file from a ConfigMap (the app's template, a
// volume and its mount) reads both in its pod, under the service account the template names;
// the password shows nowhere the scheduler serves or writes (API, logs, history). A
// template the API server refuses (no such PriorityClass; an invalid volume) is a 400 with
// the API server's reason at registration, and nothing is registered.
func TestPodTemplateSecretAndConfigMap(t *testing.T) {
	requireK8s(t)
	ns := namespace(t)
	ctx := context.Background()
	const password = "pw-7f3a-Secret-Value-91"
	sum := sha256.Sum256([]byte(password))
	if _, err := admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		StringData: map[string]string{"password": password}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "conf"},
		Data: map[string]string{"app.properties": "color=blue\n"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "jobsa"}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := startScheduler(t, "scheduler", schedOpts{ns: ns})
	s.must(http.MethodPost, "/api/app", map[string]any{"appName": "tpl", "bootstrapScript": "run.sh", "cpuCount": 0.05, "memoryMB": 64,
		"podTemplate": map[string]any{
			"metadata": map[string]any{"labels": map[string]string{"team": "pay"}},
			"spec": map[string]any{
				"volumes": []any{map[string]any{"name": "conf", "configMap": map[string]any{"name": "conf"}}},
				"containers": []any{map[string]any{"name": "task",
					"volumeMounts": []any{map[string]any{"name": "conf", "mountPath": "/etc/conf", "readOnly": true}}}},
			}}})
	// The script checks the password by its hash (so not even the job's props hold it) and
	// the file by its content, and tells the recorder "ok" or what was wrong.
	script := `ev=ok; [ "$(printf %s "$DB_PASSWORD" | sha256sum | cut -c1-64)" = "` + hex.EncodeToString(sum[:]) + `" ] || ev=no-secret; ` +
		`grep -q color=blue /etc/conf/app.properties || ev=no-config; ` +
		`wget -q -O /dev/null --post-data "$ev $ELASTICJOB_TASK_ID" ` + rec.url + `/event; :` // ":" takes the sharding context appended as an argument
	j := job{"jobName": "reads", "appName": "tpl", "jobExecutionType": "TRANSIENT", "shardingTotalCount": 1, "cpuCount": 0.05, "memoryMB": 32,
		"jobType": "SCRIPT", "props": map[string]string{"script.command.line": script},
		"podTemplate": map[string]any{"spec": map[string]any{
			"serviceAccountName": "jobsa",
			"containers": []any{map[string]any{"name": "task", "env": []any{map[string]any{"name": "DB_PASSWORD",
				"valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "db", "key": "password"}}}}}},
		}}}
	s.register(j)
	s.trigger("reads")
	var sa, team string
	eventually(t, waitLong, func() bool {
		for _, p := range pods(t, ns, "reads") {
			sa, team = p.Spec.ServiceAccountName, p.Labels["team"]
		}
		return rec.count("reads", "ok")+rec.count("reads", "no-secret")+rec.count("reads", "no-config") > 0
	}, "the job's run to report")
	if rec.count("reads", "ok") != 1 {
		t.Fatalf("the run reported %v, want ok", rec.events("reads"))
	}
	if sa != "" && (sa != "jobsa" || team != "pay") {
		t.Errorf("pod service account %q, label team %q", sa, team)
	}
	eventually(t, waitLong, func() bool { return len(s.ended("reads")) == 1 }, "the run's end in the history")
	if e := s.ended("reads")[0]; !e.Success {
		t.Errorf("run failed: %v", deref(e.FailureCause))
	}
	// Nowhere readable: the API (app, job, lists, history, the task's log) and the scheduler's log.
	taskID := s.ended("reads")[0].TaskID
	for _, path := range []string{"/api/app/tpl", "/api/job/jobs/reads", "/api/job/jobs", "/api/app/list",
		"/api/job/events/executions?jobName=reads", "/api/job/events/statusTraces?jobName=reads",
		"/api/job/logs/" + taskID, "/api/job/logs/" + taskID + "?stream=stderr"} {
		if body := s.must(http.MethodGet, path, nil); strings.Contains(string(body), password) {
			t.Errorf("GET %s shows the password", path)
		}
	}
	if strings.Contains(s.Log(), password) {
		t.Errorf("the scheduler's log shows the password")
	}

	// Refused by the API server's dry run, with its reason; nothing registered.
	for _, tc := range []struct {
		spec map[string]any
		want string
	}{
		{map[string]any{"priorityClassName": "no-such-class"}, "no PriorityClass with name no-such-class was found"},
		{map[string]any{"volumes": []any{map[string]any{"name": "bad", "secret": map[string]any{}}}}, "secretName"},
	} {
		bad := job{"jobName": "refused", "appName": "tpl", "jobExecutionType": "TRANSIENT", "shardingTotalCount": 1, "cpuCount": 0.05, "memoryMB": 32,
			"jobType": "SCRIPT", "props": map[string]string{"script.command.line": "true"}, "podTemplate": map[string]any{"spec": tc.spec}}
		code, body := s.api().Do(http.MethodPost, "/api/job/register", map[string]any(bad))
		if code != http.StatusBadRequest || !strings.Contains(string(body), tc.want) || !strings.Contains(string(body), "dry run") {
			t.Errorf("register with %v: %d %s, want 400 naming %q", tc.spec, code, body, tc.want)
		}
		t.Logf("refused: %s", body)
	}
	if code, _ := s.api().Do(http.MethodGet, "/api/job/jobs/refused", nil); code != http.StatusNotFound {
		t.Errorf("the refused job was registered (%d)", code)
	}
	// The scheduler's own fields stay its own: a 400 naming the field, before any dry run.
	code, body := s.api().Do(http.MethodPut, "/api/job/update", map[string]any{"jobName": "reads",
		"podTemplate": map[string]any{"spec": map[string]any{"nodeName": "elsewhere"}}})
	if code != http.StatusBadRequest || !strings.Contains(string(body), "podTemplate.spec.nodeName") {
		t.Errorf("nodeName in a template: %d %s", code, body)
	}
}
