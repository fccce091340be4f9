#!/usr/bin/env bash
# Tests the Python trainer client (clients/python) in a project-local venv, against the real
# `clotho api` and a Temporal dev server. Extra arguments go to pytest (e.g. -k lease). The trainer's tests
# (tests/training, PyTorch) run in `npm run test:trainer`.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/client-venv.sh .clotho/pyvenv test python-tests

# pytest exits 5 when it collected no tests: that is a failure here too, as is any other non-zero status.
status=0
"$venv_python" -m pytest -p no:cacheprovider clients/python/tests --ignore=clients/python/tests/training "$@" || status=$?
if [ "$status" -eq 5 ]; then echo "python-tests: no tests were collected" >&2; fi
exit "$status"
