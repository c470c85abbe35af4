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
{{- if and (gt (int .Values.replicas) 1) (not .Values.registry.zookeeper) -}}
{{- fail "replicas > 1 needs registry.zookeeper: the embedded store has one writer" -}}
{{- end -}}
{{- if not (has .Values.kube.binding (list "direct" "kube-scheduler")) -}}
{{- fail (printf "kube.binding %q: use direct or kube-scheduler" .Values.kube.binding) -}}
{{- end -}}
{{- if and .Values.kube.webhook (not .Values.kube.crds) -}}
{{- fail "kube.webhook needs kube.crds: the webhook validates the Cloud* objects" -}}
{{- end -}}
{{- end -}}
