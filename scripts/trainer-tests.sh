#!/usr/bin/env bash
# The GRPO trainer's suite (clients/python/tests/training): its arithmetic, the GGUF round trip, and the whole loop
# (clotho inference -> clotho serve -> clotho api -> trainer -> weight swap -> next rollouts) on the generated tiny
# model, learning the `lowercase` format task on CPU. Installs clients/python[train,test] into .clotho/trainer-venv
# the first time: PyTorch's default wheel brings CUDA packages even for CPU use (about 5.6 GB, 1.5 min here).
# The last line is the learning run's `reward: <first steps' mean> -> <last steps' mean>`. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.clotho/trainer-venv
python=${PYTHON:-python3}

if ! "$venv/bin/python" -c 'import sys' >/dev/null 2>&1; then
  "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
    || { echo "trainer-tests: $python is older than 3.10 (set PYTHON=...)" >&2; exit 1; }
  rm -rf "$venv"
  "$python" -m venv "$venv" \
    || { echo "trainer-tests: could not create $venv (on Debian/Ubuntu: apt-get install python3-venv)" >&2; exit 1; }
fi

stamp="$venv/.clotho-trainer-installed"
want=$("$venv/bin/python" -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' clients/python/pyproject.toml)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "trainer-tests: installing clients/python[train,test] into $venv (PyTorch: several GB the first time)" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e 'clients/python[train,test]'
  echo "$want" >"$stamp"
fi

results=.clotho/test-results/trainer
rm -rf "$results"
mkdir -p "$results"
status=0
CLOTHO_TRAINER_RESULTS="$PWD/$results" "$venv/bin/python" -m pytest -p no:cacheprovider clients/python/tests/training "$@" || status=$?
if [ "$status" -eq 5 ]; then echo "trainer-tests: no tests were collected" >&2; fi
if [ -f "$results/reward.txt" ]; then cat "$results/reward.txt"; fi
exit "$status"
