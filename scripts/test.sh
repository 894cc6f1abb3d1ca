#!/usr/bin/env bash
# Sets up, builds and runs the whole tpusim test suite in one build:
#   clang, Debug, AddressSanitizer + UndefinedBehaviorSanitizer,
#   -Wall -Wextra -Wpedantic -Werror; every ctest test (unit, integration,
#   docs examples), the validation suite, then the parsers' fuzz targets.
# One instrumented build instead of a plain Debug build plus a sanitizer
# build, and clang (which compiles this code base about twice as fast as
# GCC under the sanitizers), keep a fresh 2-core CI clone under 20 minutes.
# Usage: scripts/test.sh                     (CI runs this through .ci/run)
#        SKIP_SANITIZE=1 scripts/test.sh     (local quick run: plain Debug, the default compiler)
#        SKIP_FUZZ=1 scripts/test.sh         (no fuzzing)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

JOBS=${JOBS:-$(nproc)}
# Elapsed time of each stage (CI keeps the whole run under 20 minutes).
stage() { echo "== $1 done at $((SECONDS / 60)) min $((SECONDS % 60)) s"; }
export CTEST_OUTPUT_ON_FAILURE=1

if [ "${SKIP_SANITIZE:-0}" = "1" ]; then
  BUILD=build/debug
  echo "== Debug build (warnings are errors)"
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTPUSIM_WERROR=ON -DTPUSIM_BUILD_BENCH=ON >/dev/null
else
  BUILD=build/asan
  echo "== ASan+UBSan build, clang (warnings are errors)"
  # The fuzz targets are built here too (in parallel with the rest), so the
  # fuzz stage needs no build of its own.
  FUZZ="-DTPUSIM_BUILD_FUZZ=$([ "${SKIP_FUZZ:-0}" = "1" ] && echo OFF || echo ON)"
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ -DTPUSIM_WERROR=ON \
        -DTPUSIM_SANITIZE=ON -DTPUSIM_BUILD_BENCH=ON "$FUZZ" >/dev/null
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fi
cmake --build "$BUILD" -j "$JOBS"
stage "build"

echo "== ctest"
# Corpus-wide lowering here: every 3rd file, without the LLaMA and MaxText
# steps (millions of instructions each, minutes under the sanitizers);
# scripts/run_corpus.py, run by scripts/bench.sh, runs every file end to end.
TPUSIM_CORPUS_EXCLUDE=${TPUSIM_CORPUS_EXCLUDE-llama,maxtext} TPUSIM_CORPUS_STRIDE=${TPUSIM_CORPUS_STRIDE:-3} ctest --test-dir "$BUILD" --output-on-failure -j "$JOBS" --timeout 900
stage "ctest"

echo "== validation suite (references in tests/validation/refs)"
VALIDATION_REPORT=out/validation.md VALIDATE_QUICK=1 bash scripts/validate.sh "$BUILD/app/tpusim"
stage "validation suite"

if [ -x scripts/fuzz.sh ] && [ "${SKIP_FUZZ:-0}" != "1" ]; then
  echo "== fuzz (bounded)"
  # CI bound: 30 s on the HLO parser, 7 s on each other parser (fuzz.sh's
  # default is 60 s; longer runs by hand, see README).
  # The sanitizer build holds the fuzz targets; a plain Debug build has none,
  # and fuzz.sh makes its own.
  if [ "${SKIP_SANITIZE:-0}" != "1" ]; then export FUZZ_BUILD_DIR="$PWD/$BUILD"; fi
  FUZZ_SECONDS=${FUZZ_SECONDS:-30} bash scripts/fuzz.sh
  stage "fuzz"
fi
echo "== all tests passed"
