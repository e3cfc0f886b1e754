#!/usr/bin/env bash
# The second Python that `make test` runs the unit and integration tests on (pyproject.toml's
# classifiers name both: 3.11, the main venv's, and 3.13). Finds a python3.13: $SQUALL_PYTHON2,
# else python3.13 on the PATH, else pyenv's 3.13 (installed, selected or not), else Debian's
# python3.13 package (installed when root with apt-get and the distribution has it, as Debian 13
# does), else one uv manages (`uv python find`, or
# `uv python install` when uv is on the PATH and can download). With one, makes the venv $1
# (default .venv-3.13) with squall's dev and Spark extras; without one, says so and exits 0: the
# tests then run on the main venv's Python alone, and `make test` says that it skipped 3.13.
# squall goes into that venv as a plain (not editable) install of the plain-Python hot path: the
# tests import the source tree, whose compiled modules and manifest (squall/_compiled.json) are
# the main venv's, so on 3.13 they run the plain-Python path (SQUALL_PURE_PYTHON's, which
# `make test` runs on 3.11 too).
set -euo pipefail
venv=${1:-.venv-3.13}
version=${SQUALL_SECOND_PYTHON_VERSION:-3.13}

is_version() {  # runs, and is Python $version (a pyenv shim of a version not selected fails here)
  "$1" -c "import sys; sys.exit(0 if '%d.%d' % sys.version_info[:2] == '$version' else 1)" >/dev/null 2>&1
}

find_python() {
  local c candidates=()
  [ -n "${SQUALL_PYTHON2:-}" ] && candidates+=("$SQUALL_PYTHON2")
  command -v "python$version" >/dev/null 2>&1 && candidates+=("$(command -v "python$version")")
  if command -v pyenv >/dev/null 2>&1; then  # an installed pyenv version, selected or not
    c=$(pyenv prefix "$version" 2>/dev/null || true)
    [ -z "$c" ] && c=$(pyenv root 2>/dev/null)/versions/$(pyenv versions --bare 2>/dev/null \
      | grep -E "^$version(\.[0-9]+)?$" | sort -V | tail -1)
    candidates+=("$c/bin/python$version")
  fi
  command -v uv >/dev/null 2>&1 && candidates+=("$(uv python find "$version" 2>/dev/null || true)")
  for c in "${candidates[@]}"; do
    if [ -n "$c" ] && is_version "$c"; then echo "$c"; return 0; fi
  done
  return 1
}

py=$(find_python || true)
if [ -z "$py" ] && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1 \
    && apt-cache show "python$version-venv" >/dev/null 2>&1; then
  echo "squall: installing Debian's python$version for the tests on a second Python"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "python$version" "python$version-venv" "python$version-dev" >/dev/null 2>&1 || true
  py=$(find_python || true)
fi
if [ -z "$py" ] && command -v uv >/dev/null 2>&1; then
  echo "squall: asking uv for Python $version"
  timeout 300 uv python install "$version" >/dev/null 2>&1 || true
  py=$(find_python || true)
fi
if [ -z "$py" ]; then
  echo "squall: no Python $version here (not on the PATH, not in this distribution's packages, no uv" \
    "download): the tests run on $(python3 --version 2>&1) only"
  rm -f "$venv/.installed"
  exit 0
fi
if [ ! -x "$venv/bin/python" ]; then
  echo "squall: creating $venv with $py"
  "$py" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
echo "squall: installing squall with its dev and Spark extras on Python $version"
SQUALL_BUILD_PURE=1 "$venv/bin/python" -m pip install --quiet ".[dev,spark]"
touch "$venv/.installed"
