{{/*
The DaemonSet's name: the release name when it already holds the chart name
(csi-windows-node-azure-disk), else <release>-csi-windows-node.
*/}}
{{- define "csi-windows-node.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels that select this release's pods; they never change. */}}
{{- define "csi-windows-node.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "csi-windows-node.labels" -}}
{{ include "csi-windows-node.selectorLabels" . }}
app.kubernetes.io/component: node
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/*
The plugin's socket on the host: C:\var\lib\kubelet\plugins\<driver>\csi.sock.
The plugin listens on it, the sidecars dial it and kubelet is told about it.
*/}}
{{- define "csi-windows-node.socket" -}}
{{- $driver := required "driverName is required: the vendor's CSI driver name" .Values.driverName -}}
{{- printf "C:\\var\\lib\\kubelet\\plugins\\%s\\csi.sock" $driver -}}
{{- end -}}

{{- define "csi-windows-node.image" -}}
{{- printf "%s:%s" .image.repository (toString .image.tag) -}}
{{- end -}}
