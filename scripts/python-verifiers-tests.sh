#!/usr/bin/env bash
# Tests the verifiers worker (clients/python-verifiers) against verifiers 0.4.0 from PyPI, pinned, in the venv the CLI
# runs it from (.clotho/verifiers-venv, installed as `clotho process --verifiers` installs it, ~4 min and 600 MB the
# first time), with pytest added. The sources are tested, not the venv's copy of them. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

python=$(node --conditions=clotho-source --import tsx -e '
  const { ensureVerifiersPython } = await import("./src/cli/verifiers/python.ts");
  console.log(await ensureVerifiersPython((line) => console.error(`python-verifiers-tests: ${line}`)));
')
"$python" -c 'import pytest' 2>/dev/null || "$python" -m pip install --quiet --disable-pip-version-check 'pytest>=8'

# pytest exits 5 when it collected no tests: that is a failure here too, as is any other non-zero status.
status=0
PATH="$(dirname "$python"):$PATH" PYTHONPATH="$PWD/clients/python-verifiers/src" \
  "$python" -m pytest -p no:cacheprovider clients/python-verifiers/tests "$@" || status=$?
if [ "$status" -eq 5 ]; then echo "python-verifiers-tests: no tests were collected" >&2; fi
exit "$status"
