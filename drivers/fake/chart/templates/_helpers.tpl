{{/* Labels every object carries; the DaemonSet selects on the name label alone. */}}
{{- define "fakedra.labels" -}}
app.kubernetes.io/name: fake-dra-kubelet-plugin
app.kubernetes.io/part-of: dra-conformance
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | quote }}
{{- end -}}

{{/* The plugin's image; a tag is required because the local builder's tags are content-addressed. */}}
{{- define "fakedra.image" -}}
{{- $repository := required "image.repository is required" .Values.image.repository -}}
{{- $tag := required "image.tag is required (the fake driver image has no default tag)" .Values.image.tag -}}
{{ printf "%s:%s" $repository $tag }}
{{- end -}}
