#!/usr/bin/env bash
# Install Dexter as a user would (README "Install": a wheel, `uv tool install`, no extras) into a
# throw-away tool folder, and check that the installed command runs and says how it was installed.
#
# It may use the package registry for what the uv cache lacks; afterwards the cache holds every
# package at the lock's versions, so tests/test_install.py can repeat the install offline (the
# test suite reaches nothing beyond 127.0.0.1). CI runs this before the tests.
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export UV_TOOL_DIR="$work/tools" UV_TOOL_BIN_DIR="$work/bin" UV_PYTHON_DOWNLOADS=never

uv build --quiet --wheel --out-dir "$work/dist"
# The lock's versions: what the tests ran against, and what the cache holds.
uv export --quiet --frozen --no-dev --no-emit-project --no-hashes -o "$work/constraints.txt"
uv tool install --quiet --python "$(cat .python-version)" --constraints "$work/constraints.txt" \
  "$work"/dist/*.whl

version=$("$work/bin/dexter" --version)
echo "$version"
case "$version" in
  *"installed: uv tool, from "*) ;;
  *) echo "install_check: --version does not say it is a uv tool install" >&2; exit 1 ;;
esac
"$work/bin/dexter" --help >/dev/null
echo "install_check: the wheel installs with uv tool install and runs."
