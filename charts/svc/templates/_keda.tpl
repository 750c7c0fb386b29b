{{/*
KEDA ScaledObjects (keda.sh/v1alpha1), values-gated by `keda.<service>.enabled`: the runtime on
the pending runs of its JetStream work queue, the gateway on its request rate from Prometheus.
A service scaled by KEDA gets no HorizontalPodAutoscaler from the chart (KEDA makes its own)
and its Deployment no `replicas`. templates/services.yaml includes them.
*/}}

{{/* "true" when KEDA scales the service. Takes (list $ name). */}}
{{- define "svc.kedaScaled" -}}
{{- $root := index . 0 -}}
{{- $k := get ($root.Values.keda | default dict) (index . 1) | default dict -}}
{{- if $k.enabled -}}true{{- end -}}
{{- end -}}

{{/* The JetStream stream of the work queues: <SVC_NAMESPACE>_WORK (packages/kit/src/storage/bus.ts). */}}
{{- define "svc.workStream" -}}
{{- $cfg := .cfg -}}
{{- $ns := (($cfg.env | default dict).SVC_NAMESPACE) | default "svc" -}}
{{- printf "%s_WORK" (upper (toString $ns)) -}}
{{- end -}}

{{- define "svc.object.scaledObject" -}}
{{- $root := .root -}}
{{- $name := .name -}}
{{- $k := get $root.Values.keda $name -}}
{{- $fullName := include "svc.componentName" (list $root $name) -}}
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata:
  name: {{ $fullName }}
  labels:
    {{- include "svc.labels" (list $root $name (ternary "gateway" "service" (eq $name "gateway"))) | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ $fullName }}
  minReplicaCount: {{ $k.minReplicas }}
  maxReplicaCount: {{ $k.maxReplicas }}
  pollingInterval: {{ $k.pollingInterval }}
  cooldownPeriod: {{ $k.cooldownPeriod }}
  triggers:
    {{- if eq $name "runtime" }}
    {{- $endpoint := $k.natsMonitoringEndpoint -}}
    {{- if not $endpoint }}
    {{- if not $root.Values.nats.enabled }}
    {{- fail "keda.runtime.natsMonitoringEndpoint is required with an external NATS (host:port of its monitoring port, /jsz)" }}
    {{- end }}
    {{- $endpoint = printf "%s.%s.svc.cluster.local:8222" (include "svc.componentName" (list $root "nats")) $root.Release.Namespace }}
    {{- end }}
    # Runs waiting in the work queue (the agents.runs consumer's pending count), per replica.
    - type: nats-jetstream
      name: pending-runs
      metadata:
        natsServerMonitoringEndpoint: {{ $endpoint | quote }}
        account: {{ $k.account | quote }}
        stream: {{ include "svc.workStream" . | quote }}
        consumer: "work_agents_runs"
        lagThreshold: {{ $k.lagThreshold | toString | quote }}
        activationLagThreshold: {{ $k.activationLagThreshold | toString | quote }}
    {{- else if eq $name "gateway" }}
    {{- if not $k.prometheusServerAddress }}
    {{- fail "keda.gateway.prometheusServerAddress is required with keda.gateway.enabled (the Prometheus that scrapes the collector's metrics)" }}
    {{- end }}
    # Requests per second over the gateway's replicas (http.server.request.duration's count,
    # as the collector's prometheus exporter names it), per replica.
    - type: prometheus
      name: request-rate
      metadata:
        serverAddress: {{ $k.prometheusServerAddress | quote }}
        query: {{ $k.query | default (printf "sum(rate(http_server_request_duration_seconds_count{job=\"%s/svc-gateway\"}[2m]))" $root.Release.Name) | quote }}
        threshold: {{ $k.threshold | toString | quote }}
        activationThreshold: {{ $k.activationThreshold | toString | quote }}
    {{- else }}
    {{- fail (printf "keda.%s: KEDA scaling is offered for the runtime and the gateway only" $name) }}
    {{- end }}
{{- end -}}
