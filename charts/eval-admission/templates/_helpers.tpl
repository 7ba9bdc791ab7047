{{/* The labels every object carries: the kustomize tree's, and Helm's. */}}
{{- define "eval-admission.labels" -}}
app.kubernetes.io/name: eval-admission
app.kubernetes.io/part-of: eval-admission
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{/*
One object of a source file, emitted: the release's labels added, moved to
the release's namespace when it is namespaced, and so are the ServiceAccount
subjects of a binding. Takes (dict "root" $ "object" OBJECT).
*/}}
{{- define "eval-admission.emit" -}}
{{- $root := .root -}}
{{- $object := .object -}}
{{- $labels := merge (include "eval-admission.labels" $root | fromYaml) (default dict $object.metadata.labels) -}}
{{- $_ := set $object.metadata "labels" $labels -}}
{{- if hasKey $object.metadata "namespace" -}}
{{- $_ := set $object.metadata "namespace" $root.Release.Namespace -}}
{{- end -}}
{{- range $subject := default list $object.subjects -}}
{{- $_ := set $subject "namespace" $root.Release.Namespace -}}
{{- end }}
---
{{ toYaml $object }}
{{- end }}

{{/* Every document of a source file (multi-document YAML), emitted. Takes (dict "root" $ "file" PATH). */}}
{{- define "eval-admission.emitFile" -}}
{{- $root := .root -}}
{{- range $document := regexSplit "(?m)^---$" ($root.Files.Get .file) -1 -}}
{{- $object := fromYaml $document -}}
{{- if $object.kind }}
{{ include "eval-admission.emit" (dict "root" $root "object" $object) }}
{{- end -}}
{{- end -}}
{{- end }}

{{/* The profile's folder of files: base, or redhat-kueue. */}}
{{- define "eval-admission.profile" -}}
{{- if eq .Values.kueue.profile "redhat" }}redhat-kueue{{ else if eq .Values.kueue.profile "upstream" }}base{{ else }}{{ fail (printf "kueue.profile %q is neither upstream nor redhat" .Values.kueue.profile) }}{{ end -}}
{{- end }}

{{/* The serving pair comes from a Secret mounted as files (every source but self-managed). */}}
{{- define "eval-admission.certificateFiles" -}}
{{- $sources := list "self-managed" "cert-manager" "static" "openshift-service-ca" -}}
{{- if not (has .Values.certificates.source $sources) -}}
{{- fail (printf "certificates.source %q is not one of %s" .Values.certificates.source (join ", " $sources)) -}}
{{- end -}}
{{- if ne .Values.certificates.source "self-managed" }}true{{ end -}}
{{- end }}
