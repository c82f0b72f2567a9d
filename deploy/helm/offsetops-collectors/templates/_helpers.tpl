{{- define "offsetops-collectors.labels" -}}
app.kubernetes.io/name: offsetops-collectors
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "offsetops-collectors.scansClaim" -}}
{{- if .Values.scans.create -}}
{{ .Values.scans.claimName }}
{{- else -}}
{{ required "scans.existingClaim is required when scans.create is false" .Values.scans.existingClaim }}
{{- end -}}
{{- end -}}


{{- define "offsetops-collectors.image" -}}
{{- $digest := required "image.digest is required (sha256:...): the collectors run an image by digest" .Values.image.digest -}}
{{- if not (regexMatch "^sha256:[0-9a-f]{64}$" $digest) -}}
{{- fail (printf "image.digest %q is not sha256: and 64 hex digits" $digest) -}}
{{- end -}}
{{ printf "%s@%s" .Values.image.repository $digest }}
{{- end -}}

{{- define "offsetops-collectors.selector" -}}
app.kubernetes.io/name: offsetops-collectors
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
