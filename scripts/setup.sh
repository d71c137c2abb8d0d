#!/usr/bin/env bash
# Installs whatever is missing on a Debian 12 machine (apt), then configures
# and builds xent with CMake + Ninja, and installs the Python package
# (python/, editable) into <build>/venv (scripts/install-python.sh).
# Idempotent: a second run only rebuilds what changed.
#
#   XENT_BUILD_DIR   build directory (default: <repo>/build)
#   XENT_CMAKE_ARGS  extra arguments for the first CMake configure
#   XENT_HARDENING   1: also install clang-22 with its sanitizer and libFuzzer
#                    runtimes and build the ASan+UBSan build with the fuzz
#                    harnesses (docs/reliability.md); run-tests.sh sets it
#   XENT_SAN_BUILD_DIR  that build's directory (default: <repo>/build-san)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${XENT_BUILD_DIR:-$ROOT/build}"
LLVM_PREFIX=/usr/lib/llvm-22

PACKAGES=(
  cmake ninja-build g++ python3 python3-numpy python3-pytest python3-pytest-xdist
  python3-venv python3-pip python3-setuptools python3-wheel
  llvm-22 llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  libopenmpi-dev openmpi-bin
  libomp-22-dev
)
HARDENING="${XENT_HARDENING:-0}"
if [[ "$HARDENING" == 1 ]]; then
  # clang-22 and compiler-rt: ASan, UBSan, LSan and libFuzzer runtimes.
  PACKAGES+=(clang-22 libclang-rt-22-dev)
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
if ((${#missing[@]})); then
  echo "xent setup: installing ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [[ ! -f "$BUILD/build.ninja" ]]; then
  # shellcheck disable=SC2086
  cmake -G Ninja -S "$ROOT" -B "$BUILD" \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR="$LLVM_PREFIX/lib/cmake/mlir" \
    -DLLVM_EXTERNAL_LIT="$LLVM_PREFIX/bin/lit" \
    -DPython3_EXECUTABLE=/usr/bin/python3 \
    ${XENT_CMAKE_ARGS:-} >/dev/null
fi
# Two cores: build only what the tests and the example use.
ninja -C "$BUILD" xent-opt xent-lsp-server xent-reduce XentPlugin mlir-doc | grep -v "^ninja: no work to do" || true
test -x "$BUILD/bin/xent-opt"

# The Python package, editable, into $BUILD/venv.
"$ROOT/scripts/install-python.sh"

if [[ "$HARDENING" == 1 ]]; then
  SAN="${XENT_SAN_BUILD_DIR:-$ROOT/build-san}"
  if [[ ! -f "$SAN/build.ninja" ]]; then
    cmake -G Ninja -S "$ROOT" -B "$SAN" \
      -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
      -DMLIR_DIR="$LLVM_PREFIX/lib/cmake/mlir" \
      -DLLVM_EXTERNAL_LIT="$LLVM_PREFIX/bin/lit" \
      -DPython3_EXECUTABLE=/usr/bin/python3 \
      -DXENT_ENABLE_FUZZERS=ON >/dev/null
  fi
  # What the sanitizer lit run and the fuzz runs need, nothing more.
  ninja -C "$SAN" xent-opt xent-lsp-server xent-reduce XentPlugin mlir-doc \
    xent-fuzz-passes xent-fuzz-op xent-fuzz-recognize \
    | grep -v "^ninja: no work to do" || true
  test -x "$SAN/bin/xent-fuzz-op" && test -x "$SAN/bin/xent-fuzz-recognize"
fi
