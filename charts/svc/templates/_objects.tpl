{{/*
The objects of one service. Each takes a dict: root ($), name (the service), cfg (its merged
settings, see svc.serviceConfig). templates/services.yaml ranges over `services:` and
includes them.
*/}}

{{- define "svc.object.deployment" -}}
{{- $root := .root -}}
{{- $name := .name -}}
{{- $cfg := .cfg -}}
{{- $isGateway := eq $name "gateway" -}}
{{- /* The gateway and the runtime (run workers) serve HTTP (health, readiness), not gRPC. */ -}}
{{- $http := or $isGateway (eq $name "runtime") -}}
{{- $probes := $cfg.probes | default dict -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "svc.componentName" (list $root $name) }}
  labels:
    {{- include "svc.labels" (list $root $name (ternary "gateway" "service" $isGateway)) | nindent 4 }}
spec:
  {{- if not (or $cfg.autoscaling.enabled (include "svc.kedaScaled" (list $root $name))) }}
  replicas: {{ $cfg.replicas }}
  {{- end }}
  revisionHistoryLimit: 5
  {{- with $cfg.rollingUpdate }}
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxSurge: {{ .maxSurge }}
      maxUnavailable: {{ .maxUnavailable }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "svc.selectorLabels" (list $root $name) | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "svc.labels" (list $root $name (ternary "gateway" "service" $isGateway)) | nindent 8 }}
        {{- with $cfg.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      annotations:
        checksum/config: {{ include "svc.configChecksum" $root }}
        {{- with $cfg.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: {{ include "svc.serviceAccountName" $root }}
      automountServiceAccountToken: false
      {{- /* SIGTERM comes after preStop; SIGKILL at the end of the grace period (docs/deploy.md#rolling-restarts). */}}
      terminationGracePeriodSeconds: {{ $cfg.terminationGracePeriodSeconds }}
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        {{- include "svc.podSecurityContext" dict | nindent 8 }}
      containers:
        - name: {{ $name }}
          image: {{ include "svc.image" (list $root $cfg) | quote }}
          imagePullPolicy: {{ include "svc.imagePullPolicy" (list $root $cfg) }}
          ports:
            {{- if $http }}
            - name: http
              containerPort: {{ include "svc.httpPort" $root }}
              protocol: TCP
            {{- else }}
            - name: grpc
              containerPort: {{ include "svc.grpcPort" $root }}
              protocol: TCP
            {{- end }}
          env:
            {{- include "svc.renderEnv" (include "svc.serviceEnv" (list $root $name $cfg) | fromJson) | indent 12 }}
          {{- if $http }}
          startupProbe:
            httpGet:
              path: /health
              port: http
            {{- with $probes.startup }}{{ toYaml . | nindent 12 }}{{ end }}
          livenessProbe:
            httpGet:
              path: /health
              port: http
            {{- with $probes.liveness }}{{ toYaml . | nindent 12 }}{{ end }}
          readinessProbe:
            httpGet:
              path: /ready
              port: http
            {{- with $probes.readiness }}{{ toYaml . | nindent 12 }}{{ end }}
          {{- else }}
          startupProbe:
            tcpSocket:
              port: grpc
            {{- with $probes.startup }}{{ toYaml . | nindent 12 }}{{ end }}
          livenessProbe:
            tcpSocket:
              port: grpc
            {{- with $probes.liveness }}{{ toYaml . | nindent 12 }}{{ end }}
          readinessProbe:
            grpc:
              port: {{ include "svc.grpcPort" $root }}
            {{- with $probes.readiness }}{{ toYaml . | nindent 12 }}{{ end }}
          {{- end }}
          {{- if $cfg.preStopSleepSeconds }}
          {{- /* The pod keeps serving while its endpoints are removed and callers reconnect elsewhere. */}}
          lifecycle:
            preStop:
              exec:
                command: ["sleep", {{ $cfg.preStopSleepSeconds | quote }}]
          {{- end }}
          {{- with $cfg.resources }}
          resources:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          securityContext:
            {{- include "svc.containerSecurityContext" $root | nindent 12 }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
            - name: data
              mountPath: /data
      volumes:
        - name: tmp
          emptyDir: {}
        - name: data
          emptyDir: {}
      {{- with $cfg.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $cfg.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $cfg.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $cfg.topologySpreadConstraints }}
      topologySpreadConstraints:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end -}}

{{- define "svc.object.service" -}}
{{- $root := .root -}}
{{- $name := .name -}}
{{- $cfg := .cfg -}}
{{- $isGateway := eq $name "gateway" -}}
{{- $http := or $isGateway (eq $name "runtime") -}}
{{- $service := $cfg.service | default dict -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "svc.componentName" (list $root $name) }}
  labels:
    {{- include "svc.labels" (list $root $name (ternary "gateway" "service" $isGateway)) | nindent 4 }}
  {{- with $service.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  type: {{ $service.type | default "ClusterIP" }}
  selector:
    {{- include "svc.selectorLabels" (list $root $name) | nindent 4 }}
  ports:
    {{- if $http }}
    - name: http
      port: {{ include "svc.httpPort" $root }}
      targetPort: http
      protocol: TCP
    {{- else }}
    - name: grpc
      port: {{ include "svc.grpcPort" $root }}
      targetPort: grpc
      protocol: TCP
      appProtocol: grpc
    {{- end }}
{{- end -}}

{{- define "svc.object.hpa" -}}
{{- $root := .root -}}
{{- $name := .name -}}
{{- $as := .cfg.autoscaling -}}
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ include "svc.componentName" (list $root $name) }}
  labels:
    {{- include "svc.labels" (list $root $name (ternary "gateway" "service" (eq $name "gateway"))) | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ include "svc.componentName" (list $root $name) }}
  minReplicas: {{ $as.minReplicas }}
  maxReplicas: {{ $as.maxReplicas }}
  metrics:
    {{- if $as.targetCPUUtilizationPercentage }}
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ $as.targetCPUUtilizationPercentage }}
    {{- end }}
    {{- if $as.targetMemoryUtilizationPercentage }}
    - type: Resource
      resource:
        name: memory
        target:
          type: Utilization
          averageUtilization: {{ $as.targetMemoryUtilizationPercentage }}
    {{- end }}
{{- end -}}

{{- define "svc.object.pdb" -}}
{{- $root := .root -}}
{{- $name := .name -}}
{{- $pdb := .cfg.pdb -}}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "svc.componentName" (list $root $name) }}
  labels:
    {{- include "svc.labels" (list $root $name (ternary "gateway" "service" (eq $name "gateway"))) | nindent 4 }}
spec:
  {{- if not (kindIs "invalid" $pdb.minAvailable) }}
  minAvailable: {{ $pdb.minAvailable }}
  {{- else }}
  maxUnavailable: {{ ternary 1 $pdb.maxUnavailable (kindIs "invalid" $pdb.maxUnavailable) }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "svc.selectorLabels" (list $root $name) | nindent 6 }}
{{- end -}}

{{/* The hook Job that runs one service's migrations (SVC_MIGRATE_ONLY=true) and exits. */}}
{{- define "svc.object.migrationJob" -}}
{{- $root := .root -}}
{{- $name := .name -}}
{{- $cfg := .cfg -}}
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ include "svc.componentName" (list $root (printf "%s-migrate" $name)) }}
  labels:
    {{- include "svc.labels" (list $root (printf "%s-migrate" $name) "job") | nindent 4 }}
  annotations:
    helm.sh/hook: {{ include "svc.migrationHook" $root }}
    helm.sh/hook-weight: "0"
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
spec:
  backoffLimit: 6
  activeDeadlineSeconds: 900
  template:
    metadata:
      labels:
        {{- include "svc.labels" (list $root (printf "%s-migrate" $name) "job") | nindent 8 }}
    spec:
      restartPolicy: Never
      {{- /* A pre-install hook runs before the chart's ServiceAccount exists. */}}
      {{- if not (and $root.Values.serviceAccount.create (hasPrefix "pre-install" (include "svc.migrationHook" $root))) }}
      serviceAccountName: {{ include "svc.serviceAccountName" $root }}
      {{- end }}
      automountServiceAccountToken: false
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        {{- include "svc.podSecurityContext" dict | nindent 8 }}
      containers:
        - name: migrate
          image: {{ include "svc.image" (list $root $cfg) | quote }}
          imagePullPolicy: {{ include "svc.imagePullPolicy" (list $root $cfg) }}
          env:
            {{- include "svc.renderEnv" (include "svc.migrationEnv" (list $root $name $cfg) | fromJson) | indent 12 }}
          {{- with $cfg.resources }}
          resources:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          securityContext:
            {{- include "svc.containerSecurityContext" $root | nindent 12 }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
            - name: data
              mountPath: /data
      volumes:
        - name: tmp
          emptyDir: {}
        - name: data
          emptyDir: {}
      {{- with $cfg.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $cfg.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end -}}

{{/*
A bundled backend's StatefulSet + headless Service, from a dict: root, name (component),
port (number), portName, uid, image (values block), persistence, resources, mountPath,
args, command, env (list), probes (YAML), extraVolumes/extraMounts (YAML).
*/}}
{{- define "svc.object.backend" -}}
{{- $root := .root -}}
{{- $fullName := include "svc.componentName" (list $root .name) -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ $fullName }}
  labels:
    {{- include "svc.labels" (list $root .name "backend") | nindent 4 }}
spec:
  type: ClusterIP
  selector:
    {{- include "svc.selectorLabels" (list $root .name) | nindent 4 }}
  ports:
    - name: {{ .portName }}
      port: {{ .port }}
      targetPort: {{ .portName }}
      protocol: TCP
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{ $fullName }}
  labels:
    {{- include "svc.labels" (list $root .name "backend") | nindent 4 }}
spec:
  serviceName: {{ $fullName }}
  replicas: 1
  selector:
    matchLabels:
      {{- include "svc.selectorLabels" (list $root .name) | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "svc.labels" (list $root .name "backend") | nindent 8 }}
      annotations:
        checksum/config: {{ include "svc.configChecksum" $root }}
    spec:
      automountServiceAccountToken: false
      serviceAccountName: {{ include "svc.serviceAccountName" $root }}
      securityContext:
        {{- include "svc.podSecurityContext" (dict "uid" .uid) | nindent 8 }}
      containers:
        - name: {{ .name }}
          image: {{ include "svc.backendImage" .image | quote }}
          imagePullPolicy: {{ .image.pullPolicy }}
          {{- with .command }}
          command:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          {{- with .args }}
          args:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          ports:
            {{- .ports | nindent 12 }}
          {{- with .env }}
          env:
            {{- . | nindent 12 }}
          {{- end }}
          {{- .probes | nindent 10 }}
          {{- with .resources }}
          resources:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          securityContext:
            {{- include "svc.containerSecurityContext" $root | nindent 12 }}
          volumeMounts:
            - name: data
              mountPath: {{ .mountPath }}
            - name: tmp
              mountPath: /tmp
            {{- with .extraMounts }}
            {{- . | nindent 12 }}
            {{- end }}
      volumes:
        - name: tmp
          emptyDir: {}
        {{- with .extraVolumes }}
        {{- . | nindent 8 }}
        {{- end }}
        {{- if not .persistence.enabled }}
        - name: data
          emptyDir: {}
        {{- end }}
  {{- if .persistence.enabled }}
  volumeClaimTemplates:
    - metadata:
        name: data
        labels:
          {{- include "svc.selectorLabels" (list $root .name) | nindent 10 }}
      spec:
        accessModes: [ReadWriteOnce]
        {{- with .persistence.storageClass }}
        storageClassName: {{ . | quote }}
        {{- end }}
        resources:
          requests:
            storage: {{ .persistence.size | quote }}
  {{- end }}
---
{{- if $root.Values.networkPolicy.enabled }}
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: {{ $fullName }}
  labels:
    {{- include "svc.labels" (list $root .name "backend") | nindent 4 }}
spec:
  podSelector:
    matchLabels:
      {{- include "svc.selectorLabels" (list $root .name) | nindent 6 }}
  policyTypes: [Ingress]
  ingress:
    # Only the release's services (and its hook Jobs) reach the backend.
    - from:
        - podSelector:
            matchLabels:
              {{- include "svc.releaseLabels" $root | nindent 14 }}
            matchExpressions:
              - key: svc.dev/role
                operator: In
                values: [gateway, service, job]
      ports:
        - port: {{ .port }}
          protocol: TCP
{{- end }}
{{- end -}}
