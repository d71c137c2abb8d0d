#!/usr/bin/env bash
# Installs the xent Python package (python/) in editable mode into a virtual
# environment, <build>/venv, made from Debian's /usr/bin/python3 with
# --system-site-packages so that Debian's numpy and pytest (python3-numpy,
# python3-pytest) are visible in it. Offline: the build backend is Debian's
# setuptools (python3-setuptools, python3-wheel; --no-build-isolation) and pip
# never looks at an index (--no-index). A venv because Debian's Python is
# externally managed (PEP 668): pip refuses to install into /usr or ~/.local.
#
# Editable: python/src is imported in place, so edits to the package need no
# reinstall; a changed pyproject.toml does (the stamp file). Idempotent.
# Run by scripts/setup.sh; prints nothing when there is nothing to do.
#
#   XENT_BUILD_DIR   build directory (default: <repo>/build)
#   XENT_VENV        the virtual environment (default: <build>/venv)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${XENT_BUILD_DIR:-$ROOT/build}"
VENV="${XENT_VENV:-$BUILD/venv}"

if [[ ! -x "$VENV/bin/python" ]]; then
  /usr/bin/python3 -m venv --system-site-packages --without-pip "$VENV"
fi
stamp="$VENV/.xent-installed"
# Reinstall when pyproject.toml changed or the venv imports xent from elsewhere.
if [[ ! "$stamp" -nt "$ROOT/python/pyproject.toml" ]] ||
   ! "$VENV/bin/python" -c 'import sys, xent; sys.exit(xent.__file__ != sys.argv[1])' \
       "$ROOT/python/src/xent/__init__.py" 2>/dev/null; then
  echo "xent setup: pip install -e python into $VENV"
  "$VENV/bin/python" -m pip install --quiet --no-build-isolation --no-index -e "$ROOT/python"
  touch "$stamp"
fi
