#!/usr/bin/env bash
# Sets up, builds and runs the whole tpusim test suite:
#   1. Debug build with -Wall -Wextra -Wpedantic -Werror, every test through ctest;
#   2. ASan+UBSan build, the unit tests again.
# Usage: scripts/test.sh            (CI runs this through .ci/run)
#        SKIP_SANITIZE=1 scripts/test.sh   (local quick run)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

JOBS=${JOBS:-$(nproc)}
# Elapsed time of each stage (CI keeps the whole run under 20 minutes).
stage() { echo "== $1 done at $((SECONDS / 60)) min $((SECONDS % 60)) s"; }
export CTEST_OUTPUT_ON_FAILURE=1

echo "== debug build (warnings are errors)"
cmake -S . -B build/debug -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTPUSIM_WERROR=ON -DTPUSIM_BUILD_BENCH=ON >/dev/null
cmake --build build/debug -j "$JOBS"
stage "debug build"
echo "== ctest (debug)"
# Corpus-wide lowering here: every 3rd file (scripts/run_corpus.py, run by
# scripts/bench.sh, runs every file end to end).
TPUSIM_CORPUS_STRIDE=${TPUSIM_CORPUS_STRIDE:-3} ctest --test-dir build/debug --output-on-failure -j "$JOBS" --timeout 600
stage "ctest (debug)"

echo "== validation suite (references in tests/validation/refs)"
VALIDATION_REPORT=out/validation.md bash scripts/validate.sh build/debug/app/tpusim
stage "validation suite"

if [ "${SKIP_SANITIZE:-0}" != "1" ]; then
  echo "== ASan+UBSan build"
  cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTPUSIM_WERROR=ON -DTPUSIM_SANITIZE=ON \
        -DTPUSIM_BUILD_BENCH=OFF >/dev/null
  cmake --build build/asan -j "$JOBS"
  stage "ASan+UBSan build"
  echo "== ctest (ASan+UBSan, unit tests)"
  # Corpus-wide lowering: every 6th file here (the Debug pass lowers them all);
  # the whole corpus takes minutes under ASan.
  TPUSIM_CORPUS_STRIDE=6 ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build/asan --output-on-failure -j "$JOBS" -L unit --timeout 900
  stage "ctest (ASan+UBSan)"
fi

if [ -x scripts/fuzz.sh ] && [ "${SKIP_FUZZ:-0}" != "1" ]; then
  echo "== fuzz (bounded)"
  # CI bound: 30 s on the HLO parser, 7 s on each other parser (fuzz.sh's
  # default is 60 s; longer runs by hand, see README).
  FUZZ_SECONDS=${FUZZ_SECONDS:-30} bash scripts/fuzz.sh
  stage "fuzz"
fi
echo "== all tests passed"
