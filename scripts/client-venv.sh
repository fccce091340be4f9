#!/usr/bin/env bash
# Makes sure a project-local venv holds clients/python with the given extras, as an editable install (source edits
# need no reinstall; a changed pyproject.toml or other extras do). Sourced by the test scripts:
#   source scripts/client-venv.sh <venv> <extras> <name for messages>
# It leaves the venv's interpreter in $venv_python.
client_venv() {
  local venv=$1 extras=$2 name=$3 python=${PYTHON:-python3}
  if ! "$venv/bin/python" -c 'import sys' >/dev/null 2>&1; then
    "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
      || { echo "$name: $python is older than 3.10 (set PYTHON=...)" >&2; return 1; }
    rm -rf "$venv"
    "$python" -m venv "$venv" \
      || { echo "$name: could not create $venv (on Debian/Ubuntu: apt-get install python3-venv)" >&2; return 1; }
  fi
  local stamp="$venv/.clotho-client-installed" want
  want="$extras $("$venv/bin/python" -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' clients/python/pyproject.toml)"
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "$name: installing clients/python[$extras] into $venv" >&2
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e "clients/python[$extras]" || return 1
    echo "$want" >"$stamp"
  fi
  venv_python="$venv/bin/python"
}
client_venv "$@"
