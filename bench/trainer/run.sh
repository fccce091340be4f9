#!/usr/bin/env bash
# The whole training loop on one machine, for timing: clotho inference, clotho api, clotho serve lowercase and the GRPO
# trainer, on a Temporal dev server the API starts. The last line is the trainer's summary: seconds per step (train,
# checkpoint, weight sync, waiting for batches) and the share of its time spent waiting for batches.
#
#   npm run bench:trainer                                   # CPU, generated tiny model, 12 steps
#   npm run bench:trainer -- --device cuda --model generate:0.5b --steps 20
#
# The trainer runs from .clotho/trainer-venv (npm run test:trainer installs it).
set -euo pipefail
cd "$(dirname "$0")/../.."

device=cpu model=generate:tiny steps=12 micro=16 accumulation=2 lr=2e-3
while [ $# -gt 0 ]; do
  case "$1" in
    --device) device=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --batch-size) micro=$2; shift 2 ;;
    --gradient-accumulation-steps) accumulation=$2; shift 2 ;;
    --lr) lr=$2; shift 2 ;;
    *) echo "bench:trainer: unknown flag $1 (--device, --model, --steps, --batch-size, --gradient-accumulation-steps, --lr)" >&2; exit 2 ;;
  esac
done
python=.clotho/trainer-venv/bin/python
[ -x "$python" ] || { echo "bench:trainer: no $python; run npm run test:trainer once to install it" >&2; exit 1; }

work=$(mktemp -d)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill -- -"$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
free_port() { "$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() { for _ in $(seq 1 600); do curl -sf "$1" >/dev/null && return 0; sleep 0.5; done; echo "bench:trainer: $1 never answered" >&2; exit 1; }

engine_port=$(free_port) api_port=$(free_port)
setsid node bin/clotho.js inference --model "$model" --port "$engine_port" --slots 8 --weights-dir "$work" >"$work/engine.log" 2>&1 & pids+=($!)
wait_http "http://127.0.0.1:$engine_port/health"
setsid node bin/clotho.js api --port "$api_port" --store "$work/store" >"$work/api.log" 2>&1 & pids+=($!)
wait_http "http://127.0.0.1:$api_port/status"
# The trainer registers first, so the environment feeds its run.
setsid "$python" -m clotho_client.training --save-path "$work/trainer" --weight-sync clotho \
  --inference-url "http://127.0.0.1:$engine_port" --atropos-url "http://127.0.0.1:$api_port" --device "$device" \
  --batch-size "$micro" --gradient-accumulation-steps "$accumulation" --lr "$lr" --training-steps "$steps" \
  >"$work/trainer.log" 2>&1 & trainer=$!; pids+=($trainer)
until grep -q "loaded .* in" "$work/trainer.log"; do kill -0 "$trainer" 2>/dev/null || { cat "$work/trainer.log" >&2; exit 1; }; sleep 0.5; done
setsid node bin/clotho.js serve lowercase --store "$work/store" --openai.base_url "http://127.0.0.1:$engine_port/v1" \
  --env.max_batches_offpolicy 1 --env.steps_per_eval 0 >"$work/serve.log" 2>&1 & pids+=($!)
wait "$trainer" || { tail -40 "$work/trainer.log" >&2; exit 1; }
grep "clotho_client.training: step " "$work/trainer.log" | sed 's/^.*clotho_client.training: //'
tail -1 "$work/trainer.log"
