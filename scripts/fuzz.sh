#!/usr/bin/env bash
# Fuzz the HLO parser with libFuzzer for FUZZ_SECONDS (default 60), seeded
# with the shared HLO corpus (copied to a temp dir, never into the repo).
# Exits non-zero if the fuzzer finds a crash; the input is left in
# build-fuzz/crash-*. A longer run: FUZZ_SECONDS=3600 scripts/fuzz.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
SECONDS_TO_RUN="${FUZZ_SECONDS:-60}"
CORPUS_SRC="${HLO_CORPUS_DIR:-$ROOT/../shared/refs/hlo-corpus/files}"
JOBS="${JOBS:-2}"

cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++ -DTPUSIM_BUILD_FUZZ=ON -DTPUSIM_BUILD_BENCH=OFF >/dev/null
ninja -C "$BUILD" -j"$JOBS" hlo_parser_fuzz

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/corpus"
if [ -d "$CORPUS_SRC" ]; then
  cp "$CORPUS_SRC"/* "$WORK/corpus/"
else
  echo "note: no seed corpus at $CORPUS_SRC; fuzzing from scratch" >&2
fi

# -max_len keeps each input small enough to mutate quickly (large seeds are
# truncated, which still yields valid prefixes); -timeout catches hangs and
# -rss_limit_mb unbounded memory growth.
"$BUILD/tests/fuzz/hlo_parser_fuzz" -max_total_time="$SECONDS_TO_RUN" -max_len=16384 \
  -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -dict="$ROOT/tests/fuzz/hlo.dict" \
  -artifact_prefix="$BUILD/crash-" "$WORK/corpus"
