{{/* The chart's name, and the release's full name that every object is named after. */}}
{{- define "dynwatch.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "dynwatch.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
dynwatch.checkName names the config check's Job and ConfigMap: the full name
cut to leave room for "-check", since the Job's name is a label of its pod
(63 characters at most).
*/}}
{{- define "dynwatch.checkName" -}}
{{- printf "%s-check" (include "dynwatch.fullname" . | trunc 57 | trimSuffix "-") }}
{{- end }}

{{- define "dynwatch.selectorLabels" -}}
app.kubernetes.io/name: {{ include "dynwatch.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "dynwatch.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "dynwatch.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "dynwatch.serviceAccountName" -}}
{{- default (include "dynwatch.fullname" .) .Values.serviceAccount.name }}
{{- end }}

{{/* statefulSet: "true" when the workload is a StatefulSet (state or shards). */}}
{{- define "dynwatch.statefulSet" -}}
{{- if or .Values.state.enabled (gt (int .Values.shards.count) 0) }}true{{ end }}
{{- end }}

{{/*
dynwatch.config is the config file the pods run, as YAML: .Values.config (a
map, or a string of YAML) with what the values decide set in it. Helm reads
YAML 1.1, where the rule key `on` is the boolean true: it is put back as `on`.
A string config with an unquoted YAML 1.1 boolean word as a value (`value:
off`, which dynwatch reads as the string "off" and Helm as false) fails the
render, naming the words, rather than change their meaning.
*/}}
{{- define "dynwatch.config" -}}
{{- $c := .Values.config }}
{{- if kindIs "string" $c }}
{{- /* comments say what they like: only what YAML reads is looked at */}}
{{- $code := regexReplaceAll "(?m)(^|[ \\t])#.*$" $c "${1}" }}
{{- $words := regexFindAll "(?m)(?:[:\\[,]|^[ \\t]*-)[ \\t]*(?:y|Y|yes|Yes|YES|n|N|no|No|NO|on|On|ON|off|Off|OFF)[ \\t]*(?:$|#|,|\\]|\\})" $code -1 }}
{{- if $words }}
{{- $clean := list }}
{{- range $w := $words }}
{{- $clean = append $clean (regexReplaceAll "[ \\t]*[#,\\]\\}]?$" $w "") }}
{{- end }}
{{- fail (printf "config: unquoted %s: Helm reads these words as YAML 1.1 booleans (off: false, yes: true), dynwatch as strings; quote them (value: \"off\") so they keep their meaning" (toJson $clean)) }}
{{- end }}
{{- $c = fromYaml $c }}
{{- if hasKey $c "Error" }}
{{- fail (printf "config: not a YAML map: %s" (get $c "Error")) }}
{{- end }}
{{- else }}
{{- $c = deepCopy $c }}
{{- end }}
{{- range $k := list "leaderElection" "state" "shards" }}
{{- if hasKey $c $k }}
{{- fail (printf "config.%s: set it through the chart's values (%s.enabled or %s.count), not in config" $k $k $k) }}
{{- end }}
{{- end }}
{{- range $r := (get $c "rules" | default list) }}
{{- if and (kindIs "map" $r) (hasKey $r "true") (not (hasKey $r "on")) }}
{{- $_ := set $r "on" (get $r "true") }}
{{- $_ := unset $r "true" }}
{{- end }}
{{- end }}
{{- $server := get $c "server" | default dict }}
{{- $_ := set $server "address" (printf ":%d" (int .Values.opsPort)) }}
{{- $_ := set $c "server" $server }}
{{- if .Values.leaderElection.enabled }}
{{- $le := dict "namespace" .Release.Namespace "name" (include "dynwatch.fullname" .) }}
{{- range $k := list "leaseDuration" "renewDeadline" "retryPeriod" }}
{{- with get $.Values.leaderElection $k }}
{{- $_ := set $le $k . }}
{{- end }}
{{- end }}
{{- $_ := set $c "leaderElection" $le }}
{{- end }}
{{- if .Values.state.enabled }}
{{- $_ := set $c "state" (dict "path" .Values.state.path) }}
{{- end }}
{{- if gt (int .Values.shards.count) 0 }}
{{- $sh := dict "count" (int .Values.shards.count) }}
{{- with .Values.shards.by }}
{{- $_ := set $sh "by" . }}
{{- end }}
{{- $_ := set $c "shards" $sh }}
{{- end }}
{{- toYaml $c }}
{{- end }}

{{/* dynwatch.checks fails on values that contradict each other. */}}
{{- define "dynwatch.checks" -}}
{{- $shards := int .Values.shards.count }}
{{- if and (gt (int .Values.replicas) 1) (not .Values.leaderElection.enabled) (eq $shards 0) }}
{{- fail "replicas above 1 need leaderElection.enabled=true: without it every replica delivers every event" }}
{{- end }}
{{- if and .Values.state.enabled .Values.leaderElection.enabled (gt (int .Values.replicas) 1) }}
{{- fail "state.enabled with leaderElection.enabled and replicas above 1: each pod of the StatefulSet gets its own ReadWriteOnce volume, so a new leader would diff against its own stale state, not the last leader's. Run one replica with state (replicas=1, leaderElection.enabled=false), or leader election without state.enabled" }}
{{- end }}
{{- end }}

{{/*
dynwatch.clusterScoped are the built-in resources without a namespace, as
GROUP/RESOURCE, one a line: dynwatch's own list (a test compares the two).
A rule's namespaces do not apply to them: run watches them cluster-wide. A
CRD's scope is unknown offline; it is taken to be namespaced.
*/}}
{{- define "dynwatch.clusterScoped" -}}
/namespaces
/nodes
/persistentvolumes
rbac.authorization.k8s.io/clusterroles
rbac.authorization.k8s.io/clusterrolebindings
apiextensions.k8s.io/customresourcedefinitions
storage.k8s.io/storageclasses
storage.k8s.io/csidrivers
storage.k8s.io/csinodes
storage.k8s.io/volumeattachments
scheduling.k8s.io/priorityclasses
apiregistration.k8s.io/apiservices
admissionregistration.k8s.io/mutatingwebhookconfigurations
admissionregistration.k8s.io/validatingwebhookconfigurations
admissionregistration.k8s.io/validatingadmissionpolicies
admissionregistration.k8s.io/validatingadmissionpolicybindings
networking.k8s.io/ingressclasses
node.k8s.io/runtimeclasses
certificates.k8s.io/certificatesigningrequests
{{- end }}

{{/*
dynwatch.grants is what `dynwatch rbac` grants for the config, offline: list
and watch on each selector's group and resource, cluster-wide for a rule that
watches every namespace or a built-in cluster-scoped resource
(dynwatch.clusterScoped), else in each of its namespaces. Selectors that do
not name their group and resource exactly fail the render, as they fail
`dynwatch rbac` without --cluster, in one line that names them all and says
what to set (RBAC has no group patterns, and a "*" group would grant more than
the selector watches). The result, as YAML:
  cluster:    {GROUP: [RESOURCE, …]}
  namespaces: {NAMESPACE: {GROUP: [RESOURCE, …]}}
*/}}
{{- define "dynwatch.grants" -}}
{{- $c := include "dynwatch.config" . | fromYaml }}
{{- $defaults := get $c "defaults" | default dict }}
{{- $cluster := dict }}
{{- $byNS := dict }}
{{- $errs := list }}
{{- $clusterScoped := include "dynwatch.clusterScoped" . | splitList "\n" }}
{{- range $r := (get $c "rules" | default list) }}
{{- $nss := get $defaults "namespaces" }}
{{- if kindIs "slice" (get $r "namespaces") }}
{{- $nss = get $r "namespaces" }}
{{- end }}
{{- range $s := (get $r "resources" | default list) }}
{{- $g := get $s "group" }}
{{- $res := get $s "resource" }}
{{- if or (not (hasKey $s "group")) (not (kindIs "string" $g)) (not (kindIs "string" $res)) (eq (toString $res) "") (regexMatch "[*?\\[]" (printf "%v%v" $g $res)) }}
{{- $errs = append $errs (printf "rule %v: selector %s" (get $r "name") (toJson $s)) }}
{{- else if and $nss (not (has (printf "%s/%s" $g $res) $clusterScoped)) }}
{{- range $ns := $nss }}
{{- $m := get $byNS $ns | default dict }}
{{- $_ := set $m $g (append (get $m $g | default list) $res) }}
{{- $_ := set $byNS $ns $m }}
{{- end }}
{{- else }}
{{- $_ := set $cluster $g (append (get $cluster $g | default list) $res) }}
{{- end }}
{{- end }}
{{- end }}
{{- if $errs }}
{{- fail (printf "rbac.create: %s need discovery to resolve (a glob, a kind, or no group), and RBAC needs exact groups and resources: give each selector group and resource exactly, or install with --set rbac.create=false and apply what `dynwatch rbac --cluster --config FILE --namespace %s --service-account %s` prints" (join "; " $errs) .Release.Namespace (include "dynwatch.serviceAccountName" .)) }}
{{- end }}
{{- toYaml (dict "cluster" $cluster "namespaces" $byNS) }}
{{- end }}

{{/* dynwatch.policyRules: one list-and-watch rule per group of a {GROUP: [RESOURCE]} map, groups and resources sorted. */}}
{{- define "dynwatch.policyRules" -}}
{{- range $g := keys . | sortAlpha }}
- apiGroups: [{{ $g | quote }}]
  resources: {{ get $ $g | uniq | sortAlpha | toJson }}
  verbs: [list, watch]
{{- end }}
{{- end }}

{{/* dynwatch.image is the image the pods and the config check run. */}}
{{- define "dynwatch.image" -}}
{{ printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion | toString) | quote }}
{{- end }}

{{/* dynwatch.podSecurityContext and dynwatch.containerSecurityContext: the restricted Pod Security level, for the pods and the config check alike. */}}
{{- define "dynwatch.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "dynwatch.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
{{- end }}

{{/* dynwatch.podTemplate is the pod of the Deployment or the StatefulSet: restricted, probed, its config mounted. */}}
{{- define "dynwatch.podTemplate" -}}
metadata:
  labels:
    {{- include "dynwatch.selectorLabels" . | nindent 4 }}
    {{- with .Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    checksum/config: {{ include "dynwatch.config" . | sha256sum }}
    prometheus.io/scrape: "true"
    prometheus.io/port: {{ .Values.opsPort | quote }}
    {{- with .Values.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  serviceAccountName: {{ include "dynwatch.serviceAccountName" . }}
  {{- with .Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- include "dynwatch.podSecurityContext" . | nindent 4 }}
  containers:
    - name: dynwatch
      image: {{ include "dynwatch.image" . }}
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      args: [run, --config, /etc/dynwatch/config.yaml]
      # A relative path in the config (a log action's path) is in the
      # scratch volume: the root file system is read-only.
      workingDir: /tmp
      env:
        # A shard's index is the ordinal of its pod's name (dynwatch-2: shard 2).
        - name: POD_NAME
          valueFrom:
            fieldRef:
              fieldPath: metadata.name
        {{- with .Values.env }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- with .Values.envFrom }}
      envFrom:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      ports:
        - name: http
          containerPort: {{ .Values.opsPort }}
          protocol: TCP
      livenessProbe:
        httpGet: {path: /healthz, port: http}
        {{- toYaml .Values.probes.liveness | nindent 8 }}
      readinessProbe:
        httpGet: {path: /readyz, port: http}
        {{- toYaml .Values.probes.readiness | nindent 8 }}
      resources:
        {{- toYaml .Values.resources | nindent 8 }}
      securityContext:
        {{- include "dynwatch.containerSecurityContext" . | nindent 8 }}
      volumeMounts:
        - name: config
          mountPath: /etc/dynwatch
          readOnly: true
        - name: tmp
          mountPath: /tmp
        {{- if .Values.state.enabled }}
        - name: state
          mountPath: {{ dir .Values.state.path }}
        {{- end }}
  volumes:
    - name: config
      configMap:
        name: {{ include "dynwatch.fullname" . }}
    - name: tmp
      emptyDir: {}
  {{- with .Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}

{{/* dynwatch.labelList is a label map as k=v, k=v (sorted), or "none of its own" when empty. */}}
{{- define "dynwatch.labelList" -}}
{{- $out := list }}
{{- range $k := keys . | sortAlpha }}
{{- $out = append $out (printf "%s=%s" $k (get $ $k)) }}
{{- end }}
{{- if $out }}{{ join ", " $out }}{{ else }}none of its own{{ end }}
{{- end }}

{{/* dynwatch.peer says what one NetworkPolicy peer (.peer, in namespace .ns) admits, in words. */}}
{{- define "dynwatch.peer" -}}
{{- $p := .peer }}
{{- $parts := list }}
{{- if hasKey $p "namespaceSelector" }}
{{- $parts = append $parts (printf "namespaces %s" (include "dynwatch.selectorWords" $p.namespaceSelector)) }}
{{- end }}
{{- if hasKey $p "podSelector" }}
{{- $parts = append $parts (printf "pods %s" (include "dynwatch.selectorWords" $p.podSelector)) }}
{{- if not (hasKey $p "namespaceSelector") }}
{{- $parts = append $parts (printf "in %s" .ns) }}
{{- end }}
{{- else if hasKey $p "namespaceSelector" }}
{{- $parts = append $parts "any pod in them" }}
{{- end }}
{{- with $p.ipBlock }}
{{- $parts = append $parts (printf "addresses in %s%s" .cidr (ternary (printf " except %s" (join ", " (.except | default list))) "" (not (empty .except)))) }}
{{- end }}
{{- join ", " $parts }}
{{- end }}

{{/* dynwatch.selectorWords is a label selector as "labelled k=v" (or "all" when it selects everything). */}}
{{- define "dynwatch.selectorWords" -}}
{{- $w := list }}
{{- range $k := keys (.matchLabels | default dict) | sortAlpha }}
{{- $w = append $w (printf "%s=%s" $k (get $.matchLabels $k)) }}
{{- end }}
{{- range .matchExpressions }}
{{- $w = append $w (printf "%s %s %v" .key .operator (.values | default list)) }}
{{- end }}
{{- if $w }}labelled {{ join ", " $w }}{{ else }}of any label{{ end }}
{{- end }}
