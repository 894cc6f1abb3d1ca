#!/usr/bin/env bash
# Builds Release and runs the Google Benchmark suites (tests/bench/), then
# prints one table (case, figure, target) and writes it as JSON to
# out/bench.json (raw Google Benchmark output: out/bench_raw.json).
# Cost growth: the series wall vs instructions simulated, vs HLO
# instructions lowered and vs chip count (symmetric 1-4096, full 1-64) get a
# log-log fit whose exponent is printed against the expected one.
# BENCH_LONG=1 adds full mode at 256 chips (~100 s) to the chip series.
# Then scripts/run_corpus.py runs the whole shared HLO corpus (out/corpus.md),
# and the real-model targets run with /usr/bin/time (wall, CPU, peak RSS;
# target: 60 s and 4 GiB each): the LLaMA 3.1 8B step on an 8-chip v6e in
# full mode, and the 70B and 405B steps on a 128-chip v5p in symmetric mode.
# scripts/whatif_monotone.py checks raised rates never slow a shipped
# workload (out/whatif_monotone.md).
# The load average at the start and end goes into the JSON with the machine.
# Benchmarks are not part of CI; run this by hand on a quiet machine.
# Usage: [BENCH_LONG=1] scripts/bench.sh [--benchmark_filter=REGEX]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DTPUSIM_BUILD_TESTS=ON -DTPUSIM_BUILD_BENCH=ON >/dev/null
cmake --build build/release -j "$(nproc)" --target tpusim_bench tpusim
mkdir -p out
BENCH_LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
export BENCH_LOAD_START
export BENCH_BUILD_TYPE=Release
build/release/tests/tpusim_bench --benchmark_format=json --benchmark_out=out/bench_raw.json \
  --benchmark_out_format=json "$@" >/dev/null
python3 scripts/bench_table.py out/bench_raw.json out/bench.json
# What-if monotonicity: every shipped HLO workload, every raised rate,
# tiling pinned (--lower-for) and free; known exceptions are listed (168
# runs: minutes with a Release build; ctest runs a decode_step sample).
python3 scripts/whatif_monotone.py build/release/app/tpusim > out/whatif_monotone.md || true
# Every shared-corpus file as a user runs it (single chip, and the module's
# own system): files run / files valid, wall and peak RSS per file.
python3 scripts/run_corpus.py build/release/app/tpusim --out out/corpus || true
# Real-model targets (skipped without the shared corpus).
corpus=../shared/refs/hlo-corpus/files/openxla_xla__xla__tools__benchmarks__hlo__
if [ -d "$(dirname "$corpus")" ]; then
  for target in "hlo_llama31_8b_bf16_1x8 --chip v6e --system 2x4" \
                "hlo_llama31_70b_bf16_16x8 --chip v5p --system auto --mode symmetric --loops extrapolate" \
                "hlo_llama31_405b_bf16_16x8 --chip v5p --system auto --mode symmetric --loops extrapolate"; do
    set -- $target
    file=$1
    shift
    /usr/bin/time -f "$file $*: %e s wall, %U s CPU, %M KiB peak RSS" \
      build/release/app/tpusim run "$corpus$file.hlo" "$@" -q --format json > "out/bench_$file.json" || true
  done
fi
