{{/* The release's name for every object. */}}
{{- define "agentbot.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels of every object; component is intake, worker or redis. */}}
{{- define "agentbot.labels" -}}
app.kubernetes.io/name: agentbot
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end -}}

{{- define "agentbot.selector" -}}
app.kubernetes.io/name: agentbot
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "agentbot.secretName" -}}
{{- .Values.secrets.existingSecret | default (include "agentbot.fullname" .) -}}
{{- end -}}

{{- define "agentbot.image" -}}
{{ printf "%s:%s" .Values.image.repository .Values.image.tag }}
{{- end -}}

{{/* The Redis URL, with the password from $(AGENTBOT_REDIS_PASSWORD), which
     Kubernetes expands from the env entry before it. */}}
{{- define "agentbot.redisURL" -}}
{{- if .Values.redis.enabled -}}
redis://:$(AGENTBOT_REDIS_PASSWORD)@{{ include "agentbot.fullname" . }}-redis:6379/0
{{- else -}}
{{- $host := required "externalRedis.host is required when redis.enabled is false" .Values.externalRedis.host -}}
{{- $scheme := ternary "rediss" "redis" .Values.externalRedis.tls -}}
{{ $scheme }}://:$(AGENTBOT_REDIS_PASSWORD)@{{ $host }}:{{ .Values.externalRedis.port }}/{{ .Values.externalRedis.db }}
{{- end -}}
{{- end -}}

{{/* The environment both intake and workers share: Redis and retention. */}}
{{- define "agentbot.commonEnv" -}}
- name: AGENTBOT_REDIS_PASSWORD
  valueFrom:
    secretKeyRef: {name: {{ include "agentbot.secretName" . }}, key: redis-password}
- name: AGENTBOT_REDIS_URL
  value: {{ include "agentbot.redisURL" . | quote }}
- {name: AGENTBOT_TASK_RETENTION, value: {{ .Values.retention.tasks | quote }}}
{{- end -}}

{{/* A container's security context: no privilege, nothing written but
     what is mounted. */}}
{{- define "agentbot.containerSecurity" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities: {drop: [ALL]}
seccompProfile: {type: RuntimeDefault}
{{- end -}}

{{/* Egress to cluster DNS, for the network policies. */}}
{{- define "agentbot.dnsEgress" -}}
- to:
    - namespaceSelector:
        matchLabels: {{- toYaml .Values.networkPolicy.dns.namespaceSelector | nindent 10 }}
      podSelector:
        matchLabels: {{- toYaml .Values.networkPolicy.dns.podSelector | nindent 10 }}
  ports:
    - {protocol: UDP, port: 53}
    - {protocol: TCP, port: 53}
{{- end -}}

{{/* Egress to Redis: the chart's pods, or the external one's addresses. */}}
{{- define "agentbot.redisEgress" -}}
{{- if .Values.redis.enabled }}
- to:
    - podSelector:
        matchLabels: {{- include "agentbot.selector" (dict "root" . "component" "redis") | nindent 10 }}
  ports:
    - {protocol: TCP, port: 6379}
{{- else }}
- to:
    - ipBlock: {cidr: {{ required "externalRedis.cidr is required for the network policies" .Values.externalRedis.cidr | quote }}}
  ports:
    - {protocol: TCP, port: {{ .Values.externalRedis.port }}}
{{- end }}
{{- end -}}
