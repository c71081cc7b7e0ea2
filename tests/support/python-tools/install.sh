#!/usr/bin/env bash
# Install the Python package clients pinned in tools.txt, each in its own environment under env/,
# their commands linked into bin/ (both ignored by git). Usage: install.sh PYTHON_BIN_DIR, the bin
# folder of a Python environment that has uv (the project's .venv/bin).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
uv="${1:?usage: install.sh VENV_BIN_DIR}/uv"
export UV_TOOL_DIR="$here/env" UV_TOOL_BIN_DIR="$here/bin"
# one tool a line: its pin, then any `--with` pins of its own environment; `#` starts a comment
sed -e 's/#.*//' "$here/tools.txt" | while read -r line; do
  [ -n "$line" ] || continue
  # shellcheck disable=SC2086 # the line is words: the pin and its options
  "$uv" tool install --force --quiet --python "$1/python" $line
done
