#!/usr/bin/env bash
# Fuzz the parsers with libFuzzer: the HLO parser for FUZZ_SECONDS (default
# 60), seeded with the shared HLO corpus (copied to a temp dir, never into the
# repo) and tests/fuzz/hlo_seeds; the .tasm assembler + verifier, the chip YAML loader and the sweep
# spec parser for a quarter of that each, seeded with workloads/asm,
# configs/chips and configs/sweeps. Exits non-zero if
# a fuzzer finds a crash; the input is left in build-fuzz/crash-<target>-*.
# A longer run: FUZZ_SECONDS=3600 scripts/fuzz.sh
# FUZZ_BUILD_DIR=DIR uses that build directory; if it is already configured
# with -DTPUSIM_BUILD_FUZZ=ON (scripts/test.sh's sanitizer build is), only the
# fuzz targets are built there, without reconfiguring it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
SECONDS_TO_RUN="${FUZZ_SECONDS:-60}"
CORPUS_SRC="${HLO_CORPUS_DIR:-$ROOT/../shared/refs/hlo-corpus/files}"
JOBS="${JOBS:-2}"

if ! grep -qs '^TPUSIM_BUILD_FUZZ:BOOL=ON' "$BUILD/CMakeCache.txt"; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER=clang++ -DTPUSIM_BUILD_FUZZ=ON -DTPUSIM_BUILD_BENCH=OFF >/dev/null
fi
ninja -C "$BUILD" -j"$JOBS" hlo_parser_fuzz stablehlo_parser_fuzz tasm_fuzz config_fuzz sweep_spec_fuzz

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/corpus"
if [ -d "$CORPUS_SRC" ]; then
  cp "$CORPUS_SRC"/* "$WORK/corpus/"
else
  echo "note: no seed corpus at $CORPUS_SRC; fuzzing from scratch" >&2
fi
# Reproducers of inputs that once crashed or were wrongly accepted
# (recursion, deep call chains, cyclic dataflow, malformed shapes).
cp "$ROOT"/tests/fuzz/hlo_seeds/*.hlo "$WORK/corpus/"

# -max_len keeps each input small enough to mutate quickly (large seeds are
# truncated, which still yields valid prefixes); -timeout catches hangs and
# -rss_limit_mb unbounded memory growth.
"$BUILD/tests/fuzz/hlo_parser_fuzz" -max_total_time="$SECONDS_TO_RUN" -max_len=16384 \
  -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -dict="$ROOT/tests/fuzz/hlo.dict" \
  -artifact_prefix="$BUILD/crash-hlo-" "$WORK/corpus"

# The assembler/verifier and the config loader, each from its shipped inputs.
SHORT=$(( SECONDS_TO_RUN / 4 > 5 ? SECONDS_TO_RUN / 4 : 5 ))   # 15 s at the default 60
mkdir -p "$WORK/tasm" "$WORK/yaml" "$WORK/sweep" "$WORK/mlir"
cp "$ROOT"/tests/fuzz/stablehlo_seeds/*.mlir "$WORK/mlir/"
for f in "$ROOT"/workloads/stablehlo/*.mlir; do cp "$f" "$WORK/mlir/workload-$(basename "$f")"; done
for f in "$ROOT"/tests/isa/stablehlo/data/*.mlir; do cp "$f" "$WORK/mlir/testdata-$(basename "$f")"; done
"$BUILD/tests/fuzz/stablehlo_parser_fuzz" -max_total_time="$SHORT" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$BUILD/crash-stablehlo-" "$WORK/mlir"
cp "$ROOT"/workloads/asm/*.tasm "$WORK/tasm/"
cp "$ROOT"/configs/chips/*.yaml "$WORK/yaml/"
cp "$ROOT"/configs/sweeps/*.yaml "$WORK/sweep/"
"$BUILD/tests/fuzz/tasm_fuzz" -max_total_time="$SHORT" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$BUILD/crash-tasm-" "$WORK/tasm"
"$BUILD/tests/fuzz/config_fuzz" -max_total_time="$SHORT" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$BUILD/crash-config-" "$WORK/yaml"
"$BUILD/tests/fuzz/sweep_spec_fuzz" -max_total_time="$SHORT" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$BUILD/crash-sweep-" "$WORK/sweep"
