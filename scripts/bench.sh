#!/usr/bin/env bash
# Builds Release and runs the Google Benchmark suites (tests/bench/), then
# prints one table (case, figure, target) and writes it as JSON to
# out/bench.json (raw Google Benchmark output: out/bench_raw.json).
# Benchmarks are not part of CI; run this by hand on a quiet machine.
# Usage: scripts/bench.sh [--benchmark_filter=REGEX]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DTPUSIM_BUILD_TESTS=ON -DTPUSIM_BUILD_BENCH=ON >/dev/null
cmake --build build/release -j "$(nproc)" --target tpusim_bench tpusim
mkdir -p out
build/release/tests/tpusim_bench --benchmark_format=json --benchmark_out=out/bench_raw.json \
  --benchmark_out_format=json "$@" >/dev/null
python3 scripts/bench_table.py out/bench_raw.json out/bench.json
