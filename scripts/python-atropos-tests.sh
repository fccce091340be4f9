#!/usr/bin/env bash
# Tests the Atropos worker (clients/python-atropos) against atroposlib from PyPI, pinned, in the venv the CLI runs it
# from (.clotho/atropos-venv, installed as `clotho process --atropos` installs it, ~90 s and 1 GB the first time), with
# pytest added. The sources are tested, not the venv's copy of them. Extra arguments go to pytest (e.g. -k cursor).
set -euo pipefail
cd "$(dirname "$0")/.."

python=$(node --conditions=clotho-source --import tsx -e '
  const { ensureAtroposPython } = await import("./src/cli/atropos/python.ts");
  console.log(await ensureAtroposPython((line) => console.error(`python-atropos-tests: ${line}`)));
')
"$python" -c 'import pytest' 2>/dev/null || "$python" -m pip install --quiet --disable-pip-version-check 'pytest>=8'

# pytest exits 5 when it collected no tests: that is a failure here too, as is any other non-zero status.
status=0
PYTHONPATH="$PWD/clients/python-atropos/src" CLOTHO_REPO_ROOT="$PWD" \
  "$python" -m pytest -p no:cacheprovider clients/python-atropos/tests "$@" || status=$?
if [ "$status" -eq 5 ]; then echo "python-atropos-tests: no tests were collected" >&2; fi
exit "$status"
