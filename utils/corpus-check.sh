#!/usr/bin/env bash
# Runs utils/corpus-check.py: xent-opt pass pipelines over every chunk of
# LLVM's own mlir/test files that the stock mlir-opt 22 parses.
#
# The corpus is the mlir/test directory of Debian's llvm-toolchain-19 source
# package.  When the cache is missing this script (idempotently) enables
# deb-src for bookworm, bookworm-updates and bookworm-security with the URIs
# of /etc/apt/sources.list.d/debian.sources, runs apt-get update, downloads the
# source package with `apt-get source --download-only` (~165 MB; Debian's
# patches are not applied, the pristine upstream tests are used) and extracts
# only mlir/test.  Later runs reuse the cache.  xent-opt is built with
# scripts/setup.sh if it is missing.
#
#   XENT_CORPUS_CACHE        cache directory (default: <build>/corpus-cache)
#   XENT_CORPUS_PACKAGE      source package (default: llvm-toolchain-19)
#   XENT_CORPUS_KEEP_SOURCE  1: keep the downloaded tarballs after extraction
#   XENT_BUILD_DIR           build directory (default: <repo>/build)
#
# Arguments are passed to utils/corpus-check.py, e.g.
#   utils/corpus-check.sh --pipeline=--xent-inline-decomposition --jobs 2
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${XENT_BUILD_DIR:-$ROOT/build}"
CACHE="${XENT_CORPUS_CACHE:-$BUILD/corpus-cache}"
PACKAGE="${XENT_CORPUS_PACKAGE:-llvm-toolchain-19}"
CORPUS="$CACHE/mlir-test"
SRC_LIST=/etc/apt/sources.list.d/xent-deb-src.sources
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi

fetch_corpus() {
  # 1. deb-src entries (same URIs, suites, components and keys as the deb ones).
  if ! apt-cache showsrc "$PACKAGE" 2>/dev/null | grep -q "^Package: $PACKAGE"; then
    if [[ ! -f "$SRC_LIST" ]]; then
      echo "corpus-check: enabling deb-src in $SRC_LIST"
      sed -e 's/^Types:.*/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
        | $SUDO tee "$SRC_LIST" >/dev/null
    fi
    echo "corpus-check: apt-get update"
    $SUDO apt-get update -qq
  fi
  # 2. the source package, downloaded only (no build dependencies, no unpacking).
  mkdir -p "$CACHE/src"
  if ! ls "$CACHE/src/${PACKAGE}"_*.orig.tar.* >/dev/null 2>&1; then
    echo "corpus-check: apt-get source --download-only $PACKAGE"
    (cd "$CACHE/src" && apt-get source --download-only -qq "$PACKAGE" 2>&1 \
       | grep -v "unsandboxed as root" || true)
  fi
  local tarball
  tarball=$(ls "$CACHE/src/${PACKAGE}"_*.orig.tar.* | head -1)
  # 3. only mlir/test, moved into place atomically.
  echo "corpus-check: extracting mlir/test from $(basename "$tarball")"
  local tmp="$CACHE/extract.$$"
  rm -rf "$tmp" && mkdir -p "$tmp"
  tar -xf "$tarball" -C "$tmp" --wildcards '*/mlir/test/*'
  mv "$tmp"/*/mlir/test "$CORPUS.new"
  rm -rf "$tmp"
  mv "$CORPUS.new" "$CORPUS"
  if [[ "${XENT_CORPUS_KEEP_SOURCE:-0}" != 1 ]]; then rm -rf "$CACHE/src"; fi
}

if [[ ! -d "$CORPUS" ]]; then
  fetch_corpus
fi
if [[ ! -x "$BUILD/bin/xent-opt" ]]; then
  "$ROOT/scripts/setup.sh"
fi
exec /usr/bin/python3 "$ROOT/utils/corpus-check.py" --corpus "$CORPUS" \
  --xent-opt "$BUILD/bin/xent-opt" "$@"
