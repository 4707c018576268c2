#!/usr/bin/env bash
# Runs the tests that execute plugin code with all of it built with AddressSanitizer and
# UndefinedBehaviorSanitizer (the common plugin library, CpuRef, the probe helper and every
# mock plugin), the sanitizer runtime preloaded into the Python interpreter. The sanitized
# CpuRef is found through PLUGNN_DYNAMIC_BACKEND_PATHS, the sanitized plugnn-probe through
# PLUGNN_PROBE_HELPER, the sanitized step runner through PLUGNN_STEP_RUNNER.
#   bash scripts/sanitize.sh [pytest args...]
# Default tests: the plugin, runtime and conformance tests (every test that runs C code).
# Needs the package installed (pip install '.[test]') and gcc's libasan/libubsan.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="${PLUGNN_SANITIZE_DIR:-$(mktemp -d)}"
mkdir -p "$work"
python="$(python -c 'import sys; print(sys.executable)')"
flags="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined -g"
cmake_args=(-DCMAKE_BUILD_TYPE=Debug "-DCMAKE_C_FLAGS=$flags" "-DCMAKE_CXX_FLAGS=$flags"
            "-DCMAKE_MODULE_LINKER_FLAGS=-fsanitize=address,undefined"
            "-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=address,undefined")

echo "building plugnn's C code and the mock plugins with ASan+UBSan in $work"
cmake -S "$repo" -B "$work/build" -DPLUGNN_BUILD_FROM_PYTHON=ON "${cmake_args[@]}" > "$work/build.log"
cmake --build "$work/build" --parallel >> "$work/build.log"
cmake --install "$work/build" --prefix "$work/prefix" >> "$work/build.log"
cmake -S "$repo/plugins/mocks" -B "$work/mocks" "-Dplugnn_DIR=$work/prefix/cmake" "${cmake_args[@]}" >> "$work/build.log"
cmake --build "$work/mocks" --parallel >> "$work/build.log"

if [ $# -eq 0 ]; then
  set -- tests/plugins/test_loading.py tests/plugins/test_proxy.py tests/plugins/test_network_lifecycle.py \
         tests/plugins/test_probe.py tests/plugins/test_entry_points.py tests/plugins/test_check_backend.py \
         tests/runtime tests/conformance tests/onnx tests/e2e tests/cpuacc
fi
cd "$repo"
env PLUGNN_TEST_MOCKS_DIR="$work/mocks/out" \
    PLUGNN_DYNAMIC_BACKEND_PATHS="$work/prefix/backends" \
    PLUGNN_PROBE_HELPER="$work/prefix/libexec/plugnn-probe" \
    PLUGNN_STEP_RUNNER="$work/prefix/lib/libplugnn_runner.so" \
    ASAN_OPTIONS="detect_leaks=1:halt_on_error=1" \
    LSAN_OPTIONS="suppressions=$repo/scripts/lsan_python.supp:print_suppressions=0" \
    UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    PYTHONMALLOC=malloc \
    LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)" \
    "$python" -m pytest -p no:cacheprovider -q "$@"
