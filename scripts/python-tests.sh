#!/usr/bin/env bash
# Tests the Python trainer client (clients/python) in a project-local venv, against the real
# `clotho api` and a Temporal dev server. Extra arguments go to pytest (e.g. -k lease). The trainer's tests
# (tests/training, PyTorch) run in `npm run test:trainer`.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.clotho/pyvenv
python=${PYTHON:-python3}

if ! "$venv/bin/python" -c 'import sys' >/dev/null 2>&1; then
  "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
    || { echo "python-tests: $python is older than 3.10 (set PYTHON=...)" >&2; exit 1; }
  rm -rf "$venv"
  "$python" -m venv "$venv" \
    || { echo "python-tests: could not create $venv (on Debian/Ubuntu: apt-get install python3-venv)" >&2; exit 1; }
fi

# Editable install: source edits need no reinstall, only a changed pyproject.toml does.
stamp="$venv/.clotho-client-installed"
want=$("$venv/bin/python" -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' clients/python/pyproject.toml)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e 'clients/python[test]'
  echo "$want" >"$stamp"
fi

# pytest exits 5 when it collected no tests: that is a failure here too, as is any other non-zero status.
status=0
"$venv/bin/python" -m pytest -p no:cacheprovider clients/python/tests --ignore=clients/python/tests/training "$@" || status=$?
if [ "$status" -eq 5 ]; then echo "python-tests: no tests were collected" >&2; fi
exit "$status"
