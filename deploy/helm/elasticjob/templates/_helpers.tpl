{{/* The labels every object carries; the selector is the first. */}}
{{- define "elasticjob.selector" -}}
app.kubernetes.io/name: elasticjob-scheduler
{{- end -}}
{{- define "elasticjob.labels" -}}
{{ include "elasticjob.selector" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}
{{/* The scheduler Service's DNS name, where executors report and the webhook is reached. */}}
{{- define "elasticjob.host" -}}
elasticjob-scheduler.{{ .Release.Namespace }}.svc
{{- end -}}
{{/* Settings that cannot work together fail the render with the reason. */}}
{{- define "elasticjob.check" -}}
{{- if lt (int .Values.replicas) 1 -}}
{{- fail (printf "replicas %d: at least 1" (int .Values.replicas)) -}}
{{- end -}}
{{- if and (gt (int .Values.replicas) 1) (not .Values.registry.zookeeper) (eq (mod (int .Values.replicas) 2) 0) -}}
{{- fail (printf "replicas %d: the replicated schedulers' etcd members need an odd count (3 or 5) to keep a quorum through a loss; or set registry.zookeeper" (int .Values.replicas)) -}}
{{- end -}}
{{- if not (has .Values.kube.binding (list "direct" "kube-scheduler")) -}}
{{- fail (printf "kube.binding %q: use direct or kube-scheduler" .Values.kube.binding) -}}
{{- end -}}
{{- if and .Values.kube.webhook (not .Values.kube.crds) -}}
{{- fail "kube.webhook needs kube.crds: the webhook validates the Cloud* objects" -}}
{{- end -}}
{{- end -}}
{{/* etcd_peers of replicas > 1 on etcd: every pod's stable name under the peers' Service. */}}
{{- define "elasticjob.etcdPeers" -}}
{{- $ns := .Release.Namespace -}}
{{- $peers := list -}}
{{- range $i := until (int .Values.replicas) -}}
{{- $peers = append $peers (printf "elasticjob-scheduler-%d=http://elasticjob-scheduler-%d.elasticjob-scheduler-peers.%s.svc:2380" $i $i $ns) -}}
{{- end -}}
{{- join "," $peers -}}
{{- end -}}

{{/* The list of clusters (clusters_file) and the Secret with their kubeconfigs and Mesos
secrets, both mounted at /etc/elasticjob/clusters. */}}
{{- define "elasticjob.clusterVolumes" -}}
- name: clusters
  projected:
    sources:
    - configMap: {name: elasticjob-clusters}
    {{- with .Values.clusterSecret }}
    - secret: {name: {{ . }}}
    {{- end }}
{{- end -}}
