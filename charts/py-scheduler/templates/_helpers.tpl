{{/* The chart's name (app.kubernetes.io/name). */}}
{{- define "py-scheduler.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The prefix of every object's name: the release's name when it contains the chart's name
(`helm install py-scheduler` gives manifests/' names), else release-chart. */}}
{{- define "py-scheduler.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := include "py-scheduler.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Labels of every object: manifests/' (name, and part-of from its kustomization) and Helm's own. */}}
{{- define "py-scheduler.labels" -}}
app.kubernetes.io/name: {{ include "py-scheduler.name" . }}
app.kubernetes.io/part-of: py-scheduler
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/* What the Deployment, the Service, the PodDisruptionBudget and the ServiceMonitor select. */}}
{{- define "py-scheduler.selectorLabels" -}}
app.kubernetes.io/name: {{ include "py-scheduler.name" . }}
app.kubernetes.io/component: scheduler
{{- end }}

{{/* Labels of the scheduler's own objects (Deployment, Service, PodDisruptionBudget, ServiceMonitor). */}}
{{- define "py-scheduler.componentLabels" -}}
{{ include "py-scheduler.labels" . }}
app.kubernetes.io/component: scheduler
{{- end }}

{{- define "py-scheduler.serviceAccountName" -}}
{{ include "py-scheduler.fullname" . }}
{{- end }}

{{- define "py-scheduler.configMapName" -}}
{{- .Values.existingConfigMap | default (printf "%s-config" (include "py-scheduler.fullname" .)) }}
{{- end }}

{{- define "py-scheduler.leaseName" -}}
{{- .Values.leaderElection.resourceName | default (include "py-scheduler.fullname" .) }}
{{- end }}

{{/* The configuration: `config` with the chart's leaderElection block. */}}
{{- define "py-scheduler.config" -}}
{{- if hasKey .Values.config "leaderElection" }}
{{- fail "config.leaderElection: set the chart's leaderElection values instead (the Role allows only its Lease)" }}
{{- end }}
{{- $le := dict "leaderElect" .Values.leaderElection.enabled
  "leaseDuration" .Values.leaderElection.leaseDuration
  "renewDeadline" .Values.leaderElection.renewDeadline
  "retryPeriod" .Values.leaderElection.retryPeriod
  "resourceLock" "leases"
  "resourceNamespace" .Release.Namespace
  "resourceName" (include "py-scheduler.leaseName" .) }}
{{- toYaml (merge (dict "leaderElection" $le) (deepCopy .Values.config)) }}
{{- end }}

{{/* The ServiceAccount as an RBAC subject. */}}
{{- define "py-scheduler.subject" -}}
- kind: ServiceAccount
  name: {{ include "py-scheduler.serviceAccountName" . }}
  namespace: {{ .Release.Namespace }}
{{- end }}
