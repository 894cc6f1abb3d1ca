#!/usr/bin/env bash
# Sets up, builds tpusim (Release) into build/release and runs the main job on
# a shipped default, printing its report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DTPUSIM_BUILD_TESTS=OFF >/dev/null
cmake --build build/release -j "$(nproc)" --target tpusim
TPUSIM=build/release/sim/tpusim

echo "== tpusim config show --chip v5e"
"$TPUSIM" config show --chip v5e
