{{/* Chart name, truncated to the DNS label limit. */}}
{{- define "feeds.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Release-qualified name; each component appends "-<component>" (at most 14 characters:
"-notification", "-fanout-worker"), so that every name stays a 63-character DNS label. */}}
{{- define "feeds.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 49 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 49 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 49 | trimSuffix "-" }}
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
- name: NATS_REPLICAS
  value: {{ .Values.config.natsReplicas | quote }}
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
- name: METRICS_PORT
  value: {{ .Values.metricsPort | quote }}
{{- $c := .Values.config }}
{{- range $env, $url := dict "MONGO_URL" (list $c.mongoUrl $c.mongoUrlSecret "mongoUrlSecret") "NATS_URL" (list $c.natsUrl $c.natsUrlSecret "natsUrlSecret") "REDIS_URL" (list $c.redisUrl $c.redisUrlSecret "redisUrlSecret") }}
{{- $value := index $url 0 }}
{{- $from := index $url 1 }}
- name: {{ $env }}
{{- if $from }}
  valueFrom:
    secretKeyRef:
      name: {{ required (printf "config.%s.name: the Secret that holds %s" (index $url 2) $env) $from.name }}
      key: {{ required (printf "config.%s.key: the key of %s in that Secret" (index $url 2) $env) $from.key }}
{{- else if $value }}
  value: {{ $value | quote }}
{{- else }}
  valueFrom:
    secretKeyRef:
      name: {{ $.Values.secret.name }}
      key: {{ $env }}
{{- end }}
{{- end }}
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
      name: {{ required "secret.name: an existing Secret holding FEEDS_MASTER_KEY and the service keys" .Values.secret.name }}
      key: FEEDS_MASTER_KEY
{{- end }}

{{/* The processes that sign calls to a service, so hold a key of their own: those the allow-list
of kit/src/call-policy.ts names (the chart test checks the two agree). */}}
{{- define "feeds.signers" -}}
- gateway
- feed
- graph
- engagement
- notification
- feed-worker
- graph-worker
- engagement-worker
{{- end }}

{{/*
The service keys of one process (docs/service-auth.md), from the Secret's keys that `npm run
service-keys` makes: its own signing key when it signs calls, and, for a process serving a
service's routes, the keys of that service's callers. (dict "root" $ "signer" "feed-worker"
"serves" "") — serves is the service name, or "" for a worker.
*/}}
{{- define "feeds.serviceKeyEnv" -}}
{{- $secret := required "secret.name: an existing Secret holding FEEDS_MASTER_KEY and the service keys" .root.Values.secret.name }}
{{- if has .signer (include "feeds.signers" .root | fromYamlArray) }}
- name: FEEDS_SERVICE_KEY
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: FEEDS_SERVICE_KEY_{{ .signer | upper | replace "-" "_" }}
{{- end }}
{{- if .serves }}
- name: FEEDS_CALLER_KEYS
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: FEEDS_CALLER_KEYS_{{ .serves | upper | replace "-" "_" }}
{{- end }}
{{- end }}

{{/* The key that decrypts webhook signing secrets: only for the processes that run notification. */}}
{{- define "feeds.webhookKeyEnv" -}}
- name: FEEDS_WEBHOOK_KEY
  valueFrom:
    secretKeyRef:
      name: {{ required "secret.name: an existing Secret holding FEEDS_WEBHOOK_KEY" .Values.secret.name }}
      key: FEEDS_WEBHOOK_KEY
{{- end }}

{{/* Pod-level settings shared by every Deployment; takes the root context. */}}
{{- define "feeds.podSettings" -}}
serviceAccountName: {{ include "feeds.serviceAccountName" . }}
# The processes never talk to the Kubernetes API (serviceAccount.automountToken: for a sidecar or
# a mesh that needs the token).
automountServiceAccountToken: {{ .Values.serviceAccount.automountToken }}
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

{{/* The pods' ServiceAccount: the chart's own (serviceAccount.create), or one named. */}}
{{- define "feeds.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "feeds.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Whether the release runs the one-process system (mode: monolith). */}}
{{- define "feeds.monolith" -}}
{{- if eq .Values.mode "monolith" }}true{{ end }}
{{- end }}

{{/* The services deployed on their own: none in monolith mode. */}}
{{- define "feeds.deployedServices" -}}
{{- if include "feeds.monolith" . }}{}{{ else }}{{ toJson .Values.services }}{{ end }}
{{- end }}

{{/* Where each separately deployed service answers: every process calls its peers there. */}}
{{- define "feeds.serviceUrls" -}}
{{- range $name, $_ := include "feeds.deployedServices" . | fromJson }}
- name: {{ upper $name }}_URL
  value: "http://{{ include "feeds.componentName" (dict "root" $ "component" $name) }}:{{ $.Values.grpcPort }}"
{{- end }}
{{- end }}

{{/* The service whose code each worker runs (scripts/lib/system.mjs `workers` says the same). */}}
{{- define "feeds.workerServices" -}}
fanout: feed
follow: graph
notify: notification
{{- end }}

{{/* The service a worker runs, or a failure naming the bad key: (dict "root" $ "worker" "fanout"). */}}
{{- define "feeds.workerService" -}}
{{- $services := include "feeds.workerServices" .root | fromYaml }}
{{- required (printf "workers.%s: no such worker (fanout, follow, notify)" .worker) (get $services .worker) }}
{{- end }}

{{/* FEEDS_ROLE of a service's own pods: "api" while an enabled worker runs its background work. */}}
{{- define "feeds.serviceRole" -}}
{{- $role := "all" }}
{{- range $worker, $w := .root.Values.workers }}
{{- if and $w.enabled (eq (include "feeds.workerService" (dict "root" $.root "worker" $worker)) $.service) }}
{{- $role = "api" }}
{{- end }}
{{- end }}
{{- $role }}
{{- end }}

{{/* Every process kind of the release, a YAML list: gateway, each service, "<worker>-worker". */}}
{{- define "feeds.components" -}}
- gateway
{{- if not (include "feeds.monolith" .) }}
{{- range $name, $_ := .Values.services }}
- {{ $name }}
{{- end }}
{{- range $name, $w := .Values.workers }}
{{- if $w.enabled }}
- {{ $name }}-worker
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* The same list with each component's values: a YAML map component -> values. */}}
{{- define "feeds.componentValues" -}}
gateway: {{ toJson .Values.gateway }}
{{- if not (include "feeds.monolith" .) }}
{{- range $name, $svc := .Values.services }}
{{ $name }}: {{ toJson $svc }}
{{- end }}
{{- range $name, $w := .Values.workers }}
{{- if $w.enabled }}
{{ $name }}-worker: {{ toJson $w }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/*
A Deployment running `node services/<service>/dist/main.js` with FEEDS_ROLE `role`: a service's
own pods or a worker's. (dict "root" $ "component" "fanout-worker" "service" "feed" "role" "worker"
"spec" <values with replicas, resources, autoscaling>). Probed over grpc.health.v1 on grpcPort.
*/}}
{{- define "feeds.grpcDeployment" -}}
{{- $root := .root }}
{{- $ctx := dict "root" .root "component" .component }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "feeds.componentName" $ctx }}
  labels:
    {{- include "feeds.labels" $ctx | nindent 4 }}
spec:
  {{- if not (and .spec.autoscaling .spec.autoscaling.enabled) }}
  replicas: {{ .spec.replicas | default 1 }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "feeds.selectorLabels" $ctx | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "feeds.selectorLabels" $ctx | nindent 8 }}
      {{- with $root.Values.podAnnotations }}
      annotations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    spec:
      {{- include "feeds.podSettings" $root | nindent 6 }}
      {{- include "feeds.topologySpread" $ctx | nindent 6 }}
      terminationGracePeriodSeconds: {{ $root.Values.terminationGracePeriodSeconds }}
      containers:
        - name: {{ .component }}
          image: {{ include "feeds.image" $root }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          command: ["node", "--import", "@feeds/kit/otel", "services/{{ .service }}/dist/main.js"]
          ports:
            - name: grpc
              containerPort: {{ $root.Values.grpcPort }}
              protocol: TCP
            - name: metrics
              containerPort: {{ $root.Values.metricsPort }}
              protocol: TCP
          env:
            {{- include "feeds.env" $root | nindent 12 }}
            {{- if eq .service "tenancy" }}
            {{- include "feeds.masterKeyEnv" $root | nindent 12 }}
            {{- end }}
            {{- $worker := eq .role "worker" }}
            {{- include "feeds.serviceKeyEnv" (dict "root" $root "signer" (ternary (printf "%s-worker" .service) .service $worker) "serves" (ternary "" .service $worker)) | nindent 12 }}
            {{- if eq .service "notification" }}
            {{- include "feeds.webhookKeyEnv" $root | nindent 12 }}
            {{- end }}
            - name: FEEDS_ROLE
              value: {{ .role | quote }}
            - name: GRPC_PORT
              value: {{ $root.Values.grpcPort | quote }}
            {{- include "feeds.serviceUrls" $root | trim | nindent 12 }}
          # The process answers only once MongoDB, NATS and Redis do (a worker: once its queue
          # consumers run): give it time to start. Liveness asks for the `liveness` service,
          # SERVING while the process runs; readiness for the process (""), which a worker answers
          # SERVING only while its consumer loops run and any process stops answering on SIGTERM.
          startupProbe:
            grpc:
              port: {{ $root.Values.grpcPort }}
            periodSeconds: 5
            failureThreshold: 30
          livenessProbe:
            grpc:
              port: {{ $root.Values.grpcPort }}
              service: liveness
            periodSeconds: 10
            timeoutSeconds: 3
            failureThreshold: 3
          readinessProbe:
            grpc:
              port: {{ $root.Values.grpcPort }}
            periodSeconds: 5
            timeoutSeconds: 3
          {{- include "feeds.preStop" $root | nindent 10 }}
          resources:
            {{- required (printf "resources of %s" .component) .spec.resources | toYaml | nindent 12 }}
          securityContext:
            {{- toYaml $root.Values.securityContext | nindent 12 }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
      volumes:
        # The root filesystem is read-only; Node and its libraries may still want a scratch /tmp.
        - name: tmp
          emptyDir:
            sizeLimit: 64Mi
{{- end }}

{{/*
A short wait before SIGTERM, so that the endpoints controller takes the pod out of its Services
(and the callers' connections move) before the process stops accepting: takes the root context.
*/}}
{{- define "feeds.preStop" -}}
{{- if .Values.preStopSleepSeconds }}
lifecycle:
  preStop:
    exec:
      command: ["sleep", "{{ .Values.preStopSleepSeconds }}"]
{{- end }}
{{- end }}

{{/* Best-effort spread of one component's pods over zones, then nodes: takes $ctx. */}}
{{- define "feeds.topologySpread" -}}
{{- if .root.Values.topologySpread.enabled }}
topologySpreadConstraints:
{{- range $key := list "topology.kubernetes.io/zone" "kubernetes.io/hostname" }}
  - maxSkew: {{ $.root.Values.topologySpread.maxSkew }}
    topologyKey: {{ $key }}
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchLabels:
        {{- include "feeds.selectorLabels" $ | nindent 8 }}
{{- end }}
{{- end }}
{{- end }}
