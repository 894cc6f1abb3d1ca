#!/usr/bin/env bash
# Sets up, builds tpusim (Release) into build/release and runs the main job on
# a shipped default, printing its report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DTPUSIM_BUILD_TESTS=OFF >/dev/null
cmake --build build/release -j "$(nproc)" --target tpusim
TPUSIM=build/release/app/tpusim

echo "== the chip: tpusim config show --chip v5e (derived peaks)"
"$TPUSIM" config show --chip v5e | sed -n '/^derived/,$p'
echo
echo "== roofline of a LLaMA-7B-like decoder layer (seq 2048) on v5e: tpusim analyze"
"$TPUSIM" analyze workloads/hlo/transformer_layer_fwd.after_optimizations.hlo --chip v5e
echo
echo "== the same layer compiled to the ISA and simulated on the SystemC TensorCore: tpusim run"
"$TPUSIM" run workloads/hlo/transformer_layer_fwd.after_optimizations.hlo --chip v5e
echo
echo "== what XLA's optimizations buy on this chip: tpusim compare (before vs after)"
"$TPUSIM" compare workloads/hlo/transformer_layer_fwd.before_optimizations.hlo \
  workloads/hlo/transformer_layer_fwd.after_optimizations.hlo --chip v5e
