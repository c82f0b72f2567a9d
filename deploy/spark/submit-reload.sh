#!/usr/bin/env bash
# Run the reload Spark job outside Dagster, on Spark on Kubernetes, for a very large offsets topic:
#
#   deploy/spark/submit-reload.sh s3a://kafka-backups/broker-0/data s3a://offsetops/tables
#
# The image (deploy/Dockerfile) holds the code, so no --py-files is needed; the job is
# pipelines/reload.py (see docs/pipelines.md). Extra arguments go to the job (e.g. --partition 7).
set -euo pipefail
INPUT=${1:?usage: submit-reload.sh INPUT_LOG_DIR OUTPUT_TABLES_DIR [job args...]}
OUTPUT=${2:?usage: submit-reload.sh INPUT_LOG_DIR OUTPUT_TABLES_DIR [job args...]}
shift 2
HERE=$(cd "$(dirname "$0")" && pwd)
exec spark-submit \
  --properties-file "$HERE/spark-defaults.conf" \
  --name offsetops-reload \
  local:///opt/offsetops/pipelines/reload.py \
  --input "$INPUT" --output "$OUTPUT" "$@"
