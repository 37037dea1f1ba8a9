{{/* waitq.fullname: the release's name prefix of every object. */}}
{{- define "waitq.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* waitq.labels: the common labels. */}}
{{- define "waitq.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* waitq.selector: the labels that select one program's pods; takes (list $ "ws-gateway"). */}}
{{- define "waitq.selector" -}}
app.kubernetes.io/name: {{ (index . 0).Chart.Name }}
app.kubernetes.io/instance: {{ (index . 0).Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{/* waitq.secretName: the Secret with the ticket secret, tokens, keys and Redis URL. */}}
{{- define "waitq.secretName" -}}
{{- .Values.secrets.existingSecret | default (printf "%s-secrets" (include "waitq.fullname" .)) -}}
{{- end -}}

{{/*
waitq.components: the enabled programs, as YAML keyed by their values key:
name (the object and component name), program (its binary), port, and the
paths of its liveness and readiness probes (the routes every program serves).
*/}}
{{- define "waitq.components" -}}
{{- if .Values.producerApi.enabled }}
producerApi: {name: producer-api, program: producer-api, port: 8080, live: /healthz, ready: /readyz, metrics: /metrics, public: true}
{{- end }}
{{- if .Values.ingestConsumer.enabled }}
ingestConsumer: {name: ingest-consumer, program: ingest-consumer, port: 8082, live: /healthz, ready: /readyz, metrics: /metrics, public: false}
{{- end }}
{{- if .Values.wsGateway.enabled }}
wsGateway: {name: ws-gateway, program: ws-gateway, port: 8081, live: /healthz, ready: /readyz, metrics: /metrics, public: true}
{{- end }}
{{- if .Values.guard.enabled }}
guard: {name: waitq-guard, program: waitq-guard, port: 8083, live: /waitq-guard/healthz, ready: /waitq-guard/readyz, metrics: /waitq-guard/metrics, public: true}
{{- end }}
{{- end -}}

{{/* waitq.url: the in-cluster base URL of a program's Service; takes (list $ "ws-gateway" 8081). */}}
{{- define "waitq.url" -}}
{{- printf "http://%s-%s.%s.svc:%v" (include "waitq.fullname" (index . 0)) (index . 1) (index . 0).Release.Namespace (index . 2) -}}
{{- end -}}

{{/* waitq.secretEnv: one variable from the Secret; takes (list $ "WAITQ_X" "key" optional). */}}
{{- define "waitq.secretEnv" -}}
- name: {{ index . 1 }}
  valueFrom:
    secretKeyRef:
      name: {{ include "waitq.secretName" (index . 0) }}
      key: {{ index . 2 }}
      {{- if index . 3 }}
      optional: true
      {{- end }}
{{- end -}}

{{/* waitq.storeEnv: Kafka and Redis, for the programs that use them. */}}
{{- define "waitq.storeEnv" -}}
- name: WAITQ_KAFKA_BROKERS
  value: {{ required "kafka.bootstrapServers is required" .Values.kafka.bootstrapServers | quote }}
- name: WAITQ_TOPIC_PREFIX
  value: {{ .Values.kafka.topicPrefix | quote }}
{{ include "waitq.secretEnv" (list . "WAITQ_REDIS_URL" "redis-url" false) }}
{{- with .Values.redis.cluster }}
- name: WAITQ_REDIS_CLUSTER
  value: {{ . | quote }}
{{- end }}
{{- end -}}

{{/* waitq.env: the WAITQ_ variables of one program; takes (list $ key). */}}
{{- define "waitq.env" -}}
{{- $ := index . 0 -}}
{{- $key := index . 1 -}}
{{- $v := index $.Values $key -}}
{{- if eq $key "producerApi" }}
{{ include "waitq.storeEnv" $ }}
{{ include "waitq.secretEnv" (list $ "WAITQ_TICKET_SECRET" "ticket-secret" false) }}
{{ include "waitq.secretEnv" (list $ "WAITQ_ADMIN_TOKEN" "admin-token" true) }}
- name: WAITQ_RATE
  value: {{ $v.rate | quote }}
{{- with $v.allowedOrigins }}
- name: WAITQ_ALLOWED_ORIGINS
  value: {{ . | quote }}
{{- end }}
{{- with $.Values.trustedProxies }}
- name: WAITQ_TRUSTED_PROXIES
  value: {{ . | quote }}
{{- end }}
{{- else if eq $key "ingestConsumer" }}
{{ include "waitq.storeEnv" $ }}
- name: WAITQ_GROUP_ID
  value: {{ $v.groupId | quote }}
{{- else if eq $key "wsGateway" }}
{{ include "waitq.storeEnv" $ }}
{{ include "waitq.secretEnv" (list $ "WAITQ_TICKET_SECRET" "ticket-secret" false) }}
{{ include "waitq.secretEnv" (list $ "WAITQ_ENTRY_KEY" "entry-key" true) }}
{{ include "waitq.secretEnv" (list $ "WAITQ_ENTRY_OLD_KEYS" "entry-old-keys" true) }}
{{- with $v.publicUrl }}
- name: WAITQ_PUBLIC_URL
  value: {{ . | quote }}
{{- end }}
{{- with $v.producerUrl }}
- name: WAITQ_PRODUCER_URL
  value: {{ . | quote }}
{{- end }}
{{- with $v.allowedOrigins }}
- name: WAITQ_ALLOWED_ORIGINS
  value: {{ . | quote }}
{{- end }}
{{- with $.Values.trustedProxies }}
- name: WAITQ_TRUSTED_PROXIES
  value: {{ . | quote }}
{{- end }}
{{- with $v.smtp }}{{- if .addr }}
- name: WAITQ_SMTP_ADDR
  value: {{ .addr | quote }}
- name: WAITQ_SMTP_FROM
  value: {{ required "wsGateway.smtp.from is required with smtp.addr" .from | quote }}
- name: WAITQ_SMTP_USER
  value: {{ .user | quote }}
- name: WAITQ_SMTP_STARTTLS
  value: {{ .starttls | quote }}
{{ include "waitq.secretEnv" (list $ "WAITQ_SMTP_PASSWORD" "smtp-password" true) }}
{{- end }}{{- end }}
{{- else if eq $key "guard" }}
- name: WAITQ_ORIGIN_URL
  value: {{ required "guard.originUrl is required" $v.originUrl | quote }}
- name: WAITQ_EVENT_ID
  value: {{ required "guard.eventId is required" $v.eventId | quote }}
- name: WAITQ_WAITING_ROOM_URL
  value: {{ required "guard.waitingRoomUrl is required" $v.waitingRoomUrl | quote }}
- name: WAITQ_GATEWAY_URL
  value: {{ include "waitq.url" (list $ "ws-gateway" 8081) | quote }}
{{- with $v.entryIssuer }}
- name: WAITQ_ENTRY_ISSUER
  value: {{ . | quote }}
{{- end }}
{{- with $v.donePath }}
- name: WAITQ_DONE_PATH
  value: {{ . | quote }}
{{- end }}
{{- if $v.healthReports }}
{{- if not (or $.Values.secrets.existingSecret $.Values.secrets.guardHealthToken) }}
{{- fail "guard.healthReports needs secrets.guardHealthToken (or existingSecret with guard-health-token)" }}
{{- end }}
- name: WAITQ_HEALTH_URL
  value: {{ include "waitq.url" (list $ "producer-api" 8080) | quote }}
{{ include "waitq.secretEnv" (list $ "WAITQ_HEALTH_TOKEN" "guard-health-token" false) }}
{{- end }}
{{- if $.Values.trustedProxies }}
- name: WAITQ_TRUST_FORWARDED_PROTO
  value: "true"
{{- end }}
{{- end }}
- name: WAITQ_LOG_LEVEL
  value: {{ $.Values.logLevel | quote }}
{{- range $name, $value := $v.env }}
- name: {{ $name }}
  value: {{ $value | quote }}
{{- end }}
{{- end -}}
