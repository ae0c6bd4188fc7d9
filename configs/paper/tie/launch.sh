#!/usr/bin/env bash
# Paper-scale TIE on a GPU node (not run in CI). Adjust MODEL / paths; pin the vLLM version you validate.
set -euo pipefail
MODEL=${MODEL:-meta-llama/Meta-Llama-3-8B-Instruct}
PRED=${PRED:-$PWD/tie_predictor.pt}          # LogTLengthPredictor.save(...) output
ENC=${ENC:-minilm}                           # or a local HF encoder path (e.g. DeBERTa-v3-base)

# 0) simulator sweep at paper scale (HF encoder given as a local path)
#    icml26 run tie --scale paper --set encoder_path=/models/deberta-v3-base

# (a) zero-patch: vLLM priority scheduling; the client sends priority=round(TIE) (icml26.tie.vllm_adapter)
vllm serve "$MODEL" --scheduling-policy priority --max-num-seqs 32 --max-model-len 8192 \
     --no-enable-prefix-caching --tensor-parallel-size "${TP:-1}" &

# (b) faithful: swap the V1 waiting queue for TIE (starvation decay, adaptive beta), offline batch example
# ICML26_TIE_PREDICTOR=$PRED ICML26_TIE_ENCODER=$ENC python - <<'PY'
# from vllm import LLM, SamplingParams
# llm = LLM("$MODEL", scheduler_cls="icml26.tie.vllm_adapter.TIEScheduler", max_num_seqs=32,
#           max_model_len=8192, enable_prefix_caching=False)
# outs = llm.generate(prompts, SamplingParams(max_tokens=2048))
# PY
wait
