#!/usr/bin/env bash
# The GRPO trainer's suite (clients/python/tests/training): its arithmetic, the GGUF round trip, and the whole loop
# (clotho inference -> clotho serve -> clotho api -> trainer -> weight swap -> next rollouts) on the generated tiny
# model, learning the `lowercase` format task on CPU. Installs clients/python[train,test] into .clotho/trainer-venv
# the first time: PyTorch's default wheel brings CUDA packages even for CPU use (about 5.6 GB, 1.5 min here).
# The last line is the learning run's `reward: <first steps' mean> -> <last steps' mean>`. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

# PyTorch: several GB the first time.
source scripts/client-venv.sh .clotho/trainer-venv train,test trainer-tests

results=.clotho/test-results/trainer
rm -rf "$results"
mkdir -p "$results"
status=0
CLOTHO_TRAINER_RESULTS="$PWD/$results" "$venv_python" -m pytest -p no:cacheprovider clients/python/tests/training "$@" || status=$?
if [ "$status" -eq 5 ]; then echo "trainer-tests: no tests were collected" >&2; fi
if [ -f "$results/reward.txt" ]; then cat "$results/reward.txt"; fi
exit "$status"
