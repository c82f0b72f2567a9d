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
