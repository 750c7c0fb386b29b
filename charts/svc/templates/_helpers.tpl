{{/*
Names, labels and the values every object is built from.
*/}}

{{- define "svc.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* <release>-svc, or the release name when it already contains the chart's name. */}}
{{- define "svc.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The name of one component's objects: <fullname>-<component>. Takes (list $ "keys"). */}}
{{- define "svc.componentName" -}}
{{- $root := index . 0 -}}
{{- printf "%s-%s" (include "svc.fullname" $root | trunc 50 | trimSuffix "-") (index . 1) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "svc.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels of every object. Takes (list $ component role). */}}
{{- define "svc.labels" -}}
{{- $root := index . 0 -}}
helm.sh/chart: {{ include "svc.chart" $root }}
{{ include "svc.selectorLabels" . }}
app.kubernetes.io/version: {{ $root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ $root.Release.Service }}
app.kubernetes.io/part-of: {{ include "svc.name" $root }}
svc.dev/role: {{ index . 2 }}
{{- end -}}

{{/* Selector labels of one component. Takes (list $ component ...). */}}
{{- define "svc.selectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ include "svc.name" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{/* Labels that select every pod of the release. */}}
{{- define "svc.releaseLabels" -}}
app.kubernetes.io/name: {{ include "svc.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "svc.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "svc.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Fixed ports: the contract of the image (PORT, GRPC_PORT). */}}
{{- define "svc.httpPort" -}}8080{{- end -}}
{{- define "svc.grpcPort" -}}50051{{- end -}}

{{/*
The gRPC services, in a fixed order: each gets SVC_<NAME>_ADDR on every pod.
*/}}
{{- define "svc.grpcServices" -}}
{{- list "keys" "accounts" "drive" "agents" "models" "trading" "profiles" "mcp" | toJson -}}
{{- end -}}

{{/*
mergeInto: deep-merges .src into .dst in place (maps merge key by key, anything else,
null included, replaces). sprig's mergeOverwrite would not let false or 0 override a default.
*/}}
{{- define "svc.mergeInto" -}}
{{- $dst := .dst -}}
{{- range $k, $v := .src -}}
{{- if and (kindIs "map" $v) (kindIs "map" (get $dst $k)) -}}
{{- include "svc.mergeInto" (dict "dst" (get $dst $k) "src" $v) -}}
{{- else -}}
{{- $_ := set $dst $k $v -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The settings of one service: `default` with `services.<name>` merged over it, as JSON.
Takes (list $ name).
*/}}
{{- define "svc.serviceConfig" -}}
{{- $root := index . 0 -}}
{{- $name := index . 1 -}}
{{- $cfg := deepCopy ($root.Values.default | default dict) -}}
{{- $own := get ($root.Values.services | default dict) $name | default dict -}}
{{- include "svc.mergeInto" (dict "dst" $cfg "src" (deepCopy $own)) -}}
{{- toJson $cfg -}}
{{- end -}}

{{/* The image of one service. Takes (list $ cfg). */}}
{{- define "svc.image" -}}
{{- $root := index . 0 -}}
{{- $own := (index . 1).image | default dict -}}
{{- $repo := $own.repository | default $root.Values.image.repository -}}
{{- $tag := $own.tag | default $root.Values.image.tag | default $root.Chart.AppVersion -}}
{{- printf "%s:%s" $repo (toString $tag) -}}
{{- end -}}

{{- define "svc.imagePullPolicy" -}}
{{- $root := index . 0 -}}
{{- $own := (index . 1).image | default dict -}}
{{- $own.pullPolicy | default $root.Values.image.pullPolicy -}}
{{- end -}}

{{/* A backend's image: takes its values block. */}}
{{- define "svc.backendImage" -}}
{{- printf "%s:%s" .repository (toString .tag) -}}
{{- end -}}

{{/* Secret names. */}}
{{- define "svc.authSecretName" -}}
{{- .Values.auth.existingSecret | default (include "svc.componentName" (list . "auth")) -}}
{{- end -}}
{{- define "svc.backendsSecretName" -}}
{{- include "svc.componentName" (list . "backends") -}}
{{- end -}}

{{/* The collector's OTLP/HTTP endpoint, when it is enabled. */}}
{{- define "svc.otlpEndpoint" -}}
{{- if .Values.otel.endpoint -}}
{{- .Values.otel.endpoint -}}
{{- else if .Values.otelCollector.enabled -}}
{{- printf "http://%s:4318" (include "svc.componentName" (list . "otel-collector")) -}}
{{- end -}}
{{- end -}}

{{/*
Which backend is used, checked once: fails with a message when neither or both of the
bundled and the external one are configured.
*/}}
{{- define "svc.checkBackends" -}}
{{- $v := .Values -}}
{{- $pairs := list
  (list "postgresql" $v.postgresql.enabled (or $v.externalDatabase.url $v.externalDatabase.existingSecret) "externalDatabase.url or externalDatabase.existingSecret")
  (list "redis" $v.redis.enabled (or $v.externalRedis.url $v.externalRedis.existingSecret) "externalRedis.url or externalRedis.existingSecret")
  (list "nats" $v.nats.enabled (or $v.externalNats.url $v.externalNats.existingSecret) "externalNats.url or externalNats.existingSecret")
  (list "minio" $v.minio.enabled $v.externalS3.endpoint "externalS3.endpoint") -}}
{{- range $pairs -}}
{{- $name := index . 0 -}}{{- $bundled := index . 1 -}}{{- $external := index . 2 -}}{{- $what := index . 3 -}}
{{- if and $bundled $external -}}
{{- fail (printf "%s: both the bundled one (%s.enabled) and an external one (%s) are set; set %s.enabled=false to use the external one" $name $name $what $name) -}}
{{- end -}}
{{- if not (or $bundled $external) -}}
{{- fail (printf "%s: no backend; set %s.enabled=true (bundled) or %s" $name $name $what) -}}
{{- end -}}
{{- end -}}
{{- if and $v.externalS3.endpoint (not $v.minio.enabled) -}}
{{- if not $v.externalS3.bucket -}}
{{- fail "externalS3.bucket is required with externalS3.endpoint" -}}
{{- end -}}
{{- if not (or $v.externalS3.existingSecret (and $v.externalS3.accessKey $v.externalS3.secretKey)) -}}
{{- fail "externalS3: set accessKey and secretKey, or existingSecret" -}}
{{- end -}}
{{- end -}}
{{- if and $v.auth.bootstrapKey (not (regexMatch "^svc_[0-9a-f]{64}$" $v.auth.bootstrapKey)) -}}
{{- fail "auth.bootstrapKey must be svc_ followed by 64 lowercase hex characters" -}}
{{- end -}}
{{- if and $v.auth.internalSecret (lt (len $v.auth.internalSecret) 32) -}}
{{- fail "auth.internalSecret must be at least 32 characters" -}}
{{- end -}}
{{- end -}}

{{/* A secretKeyRef env source. Takes (list secretName key). */}}
{{- define "svc.secretRef" -}}
{{- toJson (dict "valueFrom" (dict "secretKeyRef" (dict "name" (index . 0) "key" (index . 1)))) -}}
{{- end -}}

{{/*
The backend variables (DATABASE_URL, REDIS_URL, NATS_URL, S3_*), as a JSON map of
name -> value or {valueFrom}. URLs and keys always come from a Secret.
*/}}
{{- define "svc.backendEnv" -}}
{{- $v := .Values -}}
{{- $secret := include "svc.backendsSecretName" . -}}
{{- $env := dict -}}
{{- if and (not $v.postgresql.enabled) $v.externalDatabase.existingSecret -}}
{{- $_ := set $env "DATABASE_URL" (include "svc.secretRef" (list $v.externalDatabase.existingSecret $v.externalDatabase.existingSecretKey) | fromJson) -}}
{{- else -}}
{{- $_ := set $env "DATABASE_URL" (include "svc.secretRef" (list $secret "database-url") | fromJson) -}}
{{- end -}}
{{- if and (not $v.redis.enabled) $v.externalRedis.existingSecret -}}
{{- $_ := set $env "REDIS_URL" (include "svc.secretRef" (list $v.externalRedis.existingSecret $v.externalRedis.existingSecretKey) | fromJson) -}}
{{- else -}}
{{- $_ := set $env "REDIS_URL" (include "svc.secretRef" (list $secret "redis-url") | fromJson) -}}
{{- end -}}
{{- if and (not $v.nats.enabled) $v.externalNats.existingSecret -}}
{{- $_ := set $env "NATS_URL" (include "svc.secretRef" (list $v.externalNats.existingSecret $v.externalNats.existingSecretKey) | fromJson) -}}
{{- else -}}
{{- $_ := set $env "NATS_URL" (include "svc.secretRef" (list $secret "nats-url") | fromJson) -}}
{{- end -}}
{{- if $v.minio.enabled -}}
{{- $_ := set $env "S3_ENDPOINT" (printf "http://%s:9000" (include "svc.componentName" (list . "minio"))) -}}
{{- $_ := set $env "S3_BUCKET" $v.minio.bucket -}}
{{- $_ := set $env "S3_REGION" $v.minio.region -}}
{{- else -}}
{{- $_ := set $env "S3_ENDPOINT" $v.externalS3.endpoint -}}
{{- $_ := set $env "S3_BUCKET" $v.externalS3.bucket -}}
{{- $_ := set $env "S3_REGION" $v.externalS3.region -}}
{{- end -}}
{{- if and (not $v.minio.enabled) $v.externalS3.existingSecret -}}
{{- $_ := set $env "S3_ACCESS_KEY" (include "svc.secretRef" (list $v.externalS3.existingSecret $v.externalS3.existingSecretAccessKeyKey) | fromJson) -}}
{{- $_ := set $env "S3_SECRET_KEY" (include "svc.secretRef" (list $v.externalS3.existingSecret $v.externalS3.existingSecretSecretKeyKey) | fromJson) -}}
{{- else -}}
{{- $_ := set $env "S3_ACCESS_KEY" (include "svc.secretRef" (list $secret "s3-access-key") | fromJson) -}}
{{- $_ := set $env "S3_SECRET_KEY" (include "svc.secretRef" (list $secret "s3-secret-key") | fromJson) -}}
{{- end -}}
{{- toJson $env -}}
{{- end -}}

{{/*
OpenTelemetry variables of one service. Takes (list $ name cfg).
*/}}
{{- define "svc.otelEnv" -}}
{{- $root := index . 0 -}}
{{- $name := index . 1 -}}
{{- $own := (index . 2).image | default dict -}}
{{- $env := dict -}}
{{- $endpoint := include "svc.otlpEndpoint" $root -}}
{{- if $endpoint -}}
{{- $_ := set $env "OTEL_EXPORTER_OTLP_ENDPOINT" $endpoint -}}
{{- end -}}
{{- $_ := set $env "OTEL_SERVICE_NAME" (printf "svc-%s" $name) -}}
{{- $_ := set $env "K8S_POD_NAME" (dict "valueFrom" (dict "fieldRef" (dict "fieldPath" "metadata.name"))) -}}
{{- $attrs := list
  (printf "service.namespace=%s" $root.Release.Name)
  (printf "service.version=%s" (toString ($own.tag | default $root.Values.image.tag | default $root.Chart.AppVersion)))
  (printf "k8s.namespace.name=%s" $root.Release.Namespace)
  "k8s.pod.name=$(K8S_POD_NAME)" -}}
{{- if $root.Values.otel.resourceAttributes -}}
{{- $attrs = append $attrs $root.Values.otel.resourceAttributes -}}
{{- end -}}
{{- $_ := set $env "OTEL_RESOURCE_ATTRIBUTES" (join "," $attrs) -}}
{{- toJson $env -}}
{{- end -}}

{{/*
Every variable of one service's pods, as a JSON map: the chart's, then `default.env`, then
the service's `env` (already merged by svc.serviceConfig). Takes (list $ name cfg).
*/}}
{{- define "svc.serviceEnv" -}}
{{- $root := index . 0 -}}
{{- $name := index . 1 -}}
{{- $cfg := index . 2 -}}
{{- $env := dict
  "SVC_SERVICE" $name
  "PORT" (include "svc.httpPort" $root)
  "GRPC_PORT" (include "svc.grpcPort" $root)
  "SVC_DATA_DIR" "/data"
  "LOG_LEVEL" $root.Values.logLevel
  "SVC_BOOTSTRAP_KEY" (include "svc.secretRef" (list (include "svc.authSecretName" $root) "bootstrap-key") | fromJson)
  "SVC_INTERNAL_SECRET" (include "svc.secretRef" (list (include "svc.authSecretName" $root) "internal-secret") | fromJson) -}}
{{- range (include "svc.grpcServices" $root | fromJsonArray) -}}
{{- $_ := set $env (printf "SVC_%s_ADDR" (upper .)) (printf "%s:%s" (include "svc.componentName" (list $root .)) (include "svc.grpcPort" $root)) -}}
{{- end -}}
{{- $env = merge (include "svc.backendEnv" $root | fromJson) $env -}}
{{- $env = merge (include "svc.otelEnv" (list $root $name $cfg) | fromJson) $env -}}
{{- if eq $name "models" -}}
{{- $env = merge (include "svc.modelsEnv" $root | fromJson) $env -}}
{{- end -}}
{{- if eq $name "trading" -}}
{{- $env = merge (include "svc.tradingEnv" $root | fromJson) $env -}}
{{- end -}}
{{- range $k, $v := ($cfg.env | default dict) -}}
{{- $_ := set $env $k $v -}}
{{- end -}}
{{- toJson $env -}}
{{- end -}}

{{/*
The models service's settings from `models:` (the first-party model's server, the provider keys' KEK
Secret, the hosts a baseUrl may reach), set only when given.
*/}}
{{- define "svc.modelsEnv" -}}
{{- $first := (($.Values.models | default dict).firstParty | default dict) -}}
{{- $env := dict -}}
{{- if $first.url -}}
{{- $_ := set $env "SVC_MODELS_FIRST_PARTY_URL" $first.url -}}
{{- end -}}
{{- if $first.model -}}
{{- $_ := set $env "SVC_MODELS_FIRST_PARTY_MODEL" $first.model -}}
{{- end -}}
{{- $kek := (($.Values.models | default dict).kek | default dict) -}}
{{- if $kek.existingSecret -}}
{{- $_ := set $env "SVC_MODELS_KEK" (include "svc.secretRef" (list $kek.existingSecret ($kek.existingSecretKey | default "models-kek")) | fromJson) -}}
{{- else if not $.Values.auth.existingSecret -}}
{{- /* The release's generated auth Secret holds one (secrets.yaml). */ -}}
{{- $_ := set $env "SVC_MODELS_KEK" (include "svc.secretRef" (list (include "svc.authSecretName" $) "models-kek") | fromJson) -}}
{{- end -}}
{{- if ($.Values.models | default dict).allowedHosts -}}
{{- $_ := set $env "SVC_MODELS_ALLOWED_HOSTS" $.Values.models.allowedHosts -}}
{{- end -}}
{{- toJson $env -}}
{{- end -}}

{{/*
The trading service's SVC_TRADING_KEK (the KEKs of venue credentials), from `trading.kek`
or the release's auth Secret, so that every replica opens what another sealed.
*/}}
{{- define "svc.tradingEnv" -}}
{{- $kek := (($.Values.trading | default dict).kek | default dict) -}}
{{- $env := dict -}}
{{- if $kek.existingSecret -}}
{{- $_ := set $env "SVC_TRADING_KEK" (include "svc.secretRef" (list $kek.existingSecret ($kek.existingSecretKey | default "trading-kek")) | fromJson) -}}
{{- else if not $.Values.auth.existingSecret -}}
{{- $_ := set $env "SVC_TRADING_KEK" (include "svc.secretRef" (list (include "svc.authSecretName" $) "trading-kek") | fromJson) -}}
{{- end -}}
{{- toJson $env -}}
{{- end -}}

{{/*
The variables of a migration Job: what migrating needs (the database, and the internal
secret, which the configuration requires of any single service), not the other backends.
Takes (list $ name cfg).
*/}}
{{- define "svc.migrationEnv" -}}
{{- $root := index . 0 -}}
{{- $name := index . 1 -}}
{{- $cfg := index . 2 -}}
{{- $backends := include "svc.backendEnv" $root | fromJson -}}
{{- $env := dict
  "SVC_SERVICE" $name
  "SVC_MIGRATE_ONLY" "true"
  "SVC_DATA_DIR" "/data"
  "LOG_LEVEL" $root.Values.logLevel
  "DATABASE_URL" $backends.DATABASE_URL
  "SVC_INTERNAL_SECRET" (include "svc.secretRef" (list (include "svc.authSecretName" $root) "internal-secret") | fromJson) -}}
{{- $env = merge (include "svc.otelEnv" (list $root $name $cfg) | fromJson) $env -}}
{{- range $k, $v := ($cfg.env | default dict) -}}
{{- $_ := set $env $k $v -}}
{{- end -}}
{{- toJson $env -}}
{{- end -}}

{{/*
Renders a JSON env map as a container's env list, sorted by name. A value that is a map is
used as the variable's source ({valueFrom: ...}); null removes the variable.
*/}}
{{- define "svc.renderEnv" -}}
{{- range $k, $v := . }}
{{- if kindIs "map" $v }}
- name: {{ $k }}
  {{- toYaml $v | nindent 2 }}
{{- else if not (kindIs "invalid" $v) }}
- name: {{ $k }}
  value: {{ toString $v | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The pod and container security settings every pod of the release shares. */}}
{{- define "svc.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ .uid | default 1000 }}
runAsGroup: {{ .uid | default 1000 }}
fsGroup: {{ .uid | default 1000 }}
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "svc.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/*
When the migration Jobs run. Before an upgrade always; on install, before the release's
objects only when the Secrets the Job reads exist before the release (an external database
from externalDatabase.existingSecret, and auth.existingSecret); otherwise right after them
(the database or the Secrets are created by the release itself).
*/}}
{{- define "svc.migrationHook" -}}
{{- if and (not .Values.postgresql.enabled) .Values.externalDatabase.existingSecret .Values.auth.existingSecret -}}
pre-install,pre-upgrade
{{- else -}}
post-install,pre-upgrade
{{- end -}}
{{- end -}}

{{/*
A checksum of the values the release's Secrets are made of (not of generated values), so
that pods roll when they change.
*/}}
{{- define "svc.configChecksum" -}}
{{- $v := .Values -}}
{{- list $v.auth $v.externalDatabase $v.externalRedis $v.externalNats $v.externalS3 $v.postgresql.password $v.redis.password $v.nats.password $v.minio.rootUser $v.minio.rootPassword | toJson | sha256sum -}}
{{- end -}}
