#!/usr/bin/env bash
# Paper-scale LINGUA on NExT-GQA: one process per GPU, a local Ollama server with gemma3:4b shared by all ranks.
#   NGPU=4 NEXTGQA=/data/nextgqa VIDEOS=/data/nextqa/videos VIDEOMAE=/models/videomae-base \
#     bash configs/paper/lingua/launch.sh
set -euo pipefail
NGPU=${NGPU:-1}
here=$(dirname "$0")
curl -sf http://127.0.0.1:11434/api/tags > /dev/null || { echo "start Ollama first: ollama serve && ollama pull gemma3:4b"; exit 1; }
torchrun --standalone --nproc_per_node "$NGPU" -m icml26.lingua.scale --config "$here/nextgqa_gemma3.json" \
  --set nextgqa_csv="\"${NEXTGQA}/val.csv\"" --set nextgqa_gsub="\"${NEXTGQA}/gsub_val.json\"" \
  --set video_dir="\"${VIDEOS}\"" --set encoder_path="\"${VIDEOMAE}\"" "$@"
