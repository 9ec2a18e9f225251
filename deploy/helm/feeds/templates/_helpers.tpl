{{/* Chart name, truncated to the DNS label limit. */}}
{{- define "feeds.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Release-qualified name; each component appends "-<component>". */}}
{{- define "feeds.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Name of one component: (dict "root" $ "component" "feed"). */}}
{{- define "feeds.componentName" -}}
{{- printf "%s-%s" (include "feeds.fullname" .root) .component }}
{{- end }}

{{- define "feeds.selectorLabels" -}}
app.kubernetes.io/name: {{ include "feeds.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "feeds.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "feeds.selectorLabels" . }}
app.kubernetes.io/version: {{ include "feeds.tag" .root | quote }}
app.kubernetes.io/part-of: feeds
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
{{- end }}

{{- define "feeds.tag" -}}
{{- .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- define "feeds.image" -}}
{{- printf "%s:%s" .Values.image.repository (include "feeds.tag" .) }}
{{- end }}

{{/* Environment every process reads (kit/src/config.ts); takes the root context. */}}
{{- define "feeds.env" -}}
- name: HOST
  value: {{ .Values.config.host | quote }}
- name: FEEDS_NAMESPACE
  value: {{ .Values.config.namespace | quote }}
- name: LOG_LEVEL
  value: {{ .Values.config.logLevel | quote }}
- name: BUILD_VERSION
  value: {{ include "feeds.tag" . | quote }}
- name: TRUST_PROXY
  value: {{ .Values.config.trustProxy | quote }}
- name: WEBHOOK_ALLOW_PRIVATE
  value: {{ .Values.config.webhookAllowPrivate | quote }}
- name: LOGIN_RATE_LIMIT_PER_MINUTE
  value: {{ .Values.config.loginRateLimitPerMinute | quote }}
{{- range $env, $url := dict "MONGO_URL" .Values.config.mongoUrl "NATS_URL" .Values.config.natsUrl "REDIS_URL" .Values.config.redisUrl }}
- name: {{ $env }}
{{- if $url }}
  value: {{ $url | quote }}
{{- else }}
  valueFrom:
    secretKeyRef:
      name: {{ $.Values.secret.name }}
      key: {{ $env }}
{{- end }}
{{- end }}
# Services answer only calls signed with this key; every process holds the same one.
- name: FEEDS_INTERNAL_KEY
  valueFrom:
    secretKeyRef:
      name: {{ required "secret.name: an existing Secret holding FEEDS_INTERNAL_KEY and FEEDS_MASTER_KEY" .Values.secret.name }}
      key: FEEDS_INTERNAL_KEY
{{- range $name, $value := .Values.extraEnv }}
- name: {{ $name }}
  value: {{ $value | quote }}
{{- end }}
{{- end }}

{{/* The key that decrypts tenant api secrets: only for the process that runs tenancy. */}}
{{- define "feeds.masterKeyEnv" -}}
- name: FEEDS_MASTER_KEY
  valueFrom:
    secretKeyRef:
      name: {{ required "secret.name: an existing Secret holding FEEDS_INTERNAL_KEY and FEEDS_MASTER_KEY" .Values.secret.name }}
      key: FEEDS_MASTER_KEY
{{- end }}

{{/* Pod-level settings shared by every Deployment; takes the root context. */}}
{{- define "feeds.podSettings" -}}
# The processes never talk to the Kubernetes API.
automountServiceAccountToken: false
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* Where each separately deployed service answers: every process calls its peers there. */}}
{{- define "feeds.serviceUrls" -}}
{{- range $name, $_ := .Values.services }}
- name: {{ upper $name }}_URL
  value: "http://{{ include "feeds.componentName" (dict "root" $ "component" $name) }}:{{ $.Values.grpcPort }}"
{{- end }}
{{- end }}
