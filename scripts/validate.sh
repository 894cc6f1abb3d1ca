#!/usr/bin/env bash
# Runs every reference family under tests/validation/refs/ against tpusim and
# writes docs/validation.md (one table per family: case, reference, tpusim,
# error, tolerance, pass/fail). Exit 1 if any case leaves its tolerance.
# Usage: scripts/validate.sh [path/to/tpusim]   (VALIDATION_REPORT=FILE writes elsewhere)
set -euo pipefail
cd "$(dirname "$0")/.."
TPUSIM=${1:-}
if [ -z "$TPUSIM" ]; then
  bash scripts/setup.sh
  cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DTPUSIM_BUILD_TESTS=OFF >/dev/null
  cmake --build build/release -j "$(nproc)" --target tpusim
  TPUSIM=build/release/app/tpusim
fi
mkdir -p out
status=0
"$TPUSIM" validate systolic tests/validation/refs/scalesim_systolic.csv --tolerance 1% --format json \
  > out/validate_systolic.json || status=1
"$TPUSIM" validate collective tests/validation/refs/collectives.csv --format json \
  > out/validate_collective.json || status=1
"$TPUSIM" validate collective tests/validation/refs/published_collectives.csv --format json \
  > out/validate_published_collectives.json || status=1
"$TPUSIM" validate collective tests/validation/refs/multislice_collectives.csv --format json \
  > out/validate_multislice_collectives.json || status=1
"$TPUSIM" validate step tests/validation/refs/step.csv --format json \
  > out/validate_step.json || status=1
"$TPUSIM" validate roofline tests/validation/refs/roofline.csv --format json \
  > out/validate_roofline.json || status=1
# Measured TPUs (report only: docs/validation.md states the targets and misses).
# VALIDATE_QUICK=1 (scripts/test.sh, under the sanitizers) runs a sample: per
# series the 3 smallest cal and val rows; the published tables use every row.
gemm_refs=tests/validation/refs/hw/gemm.csv
if [ "${VALIDATE_QUICK:-0}" = "1" ]; then
  gemm_refs=out/gemm_sample.csv
  python3 - "$gemm_refs" <<'PY'
import csv, sys
rows = list(csv.DictReader(l for l in open("tests/validation/refs/hw/gemm.csv") if not l.startswith("#")))
keep, seen = [], {}
for r in sorted(rows, key=lambda r: int(r["M"]) * int(r["N"]) * int(r["K"])):
    k = (r["chip"], r["dtype"], r["timing"], r["split"])
    if seen.get(k, 0) < 3:
        seen[k] = seen.get(k, 0) + 1
        keep.append(r)
w = csv.DictWriter(open(sys.argv[1], "w", newline=""), fieldnames=list(rows[0].keys()))
w.writeheader()
w.writerows(keep)
PY
fi
"$TPUSIM" validate gemm "$gemm_refs" --format json > out/validate_gemm_hw.json || status=1
# Measured collectives and HBM copy as whole modules: exit 1 means a row
# missed its 10% target, which the report states (not a failure of the suite).
rc=0
"$TPUSIM" validate step tests/validation/refs/measured_hw_step.csv --format json \
  > out/validate_measured_step.json || rc=$?
[ "$rc" -le 1 ] || status=1
# Whole MaxText training steps on measured slices (report only; the quick
# mode runs one validation row, the published table every generated row,
# JOBS rows at once, default one per core). VALIDATE_TRAIN_JSON=FILE reports
# an earlier run's output (scripts/validate_train.py -o FILE) instead of
# simulating the rows again.
if [ -n "${VALIDATE_TRAIN_JSON:-}" ]; then
  cp "$VALIDATE_TRAIN_JSON" out/validate_train.json
else
  train_args=(--jobs "${JOBS:-$(nproc)}")
  [ "${VALIDATE_QUICK:-0}" = "1" ] && train_args=(--quick)
  python3 scripts/validate_train.py "$TPUSIM" "${train_args[@]}" -o out/validate_train.json || status=1
fi
# LLM serving steps against measured TPUs (every fixed-length row; a few seconds each).
python3 scripts/validate_serving.py "$TPUSIM" -o out/validate_serving.json || status=1
# Internal consistency: full vs symmetric multi-chip mode on the tp8 layer
# (v5p, 8 and 16 chips; tests/sim/spmd_test.cpp checks 64 as well).
for sys in 8 4x4; do
  for mode in full symmetric; do
    "$TPUSIM" run workloads/hlo/sharded/transformer_layer_fwd.tp8.hlo --chip v5p --system "$sys" --mode "$mode" \
      --format json -q 2>/dev/null > "out/spmd_${sys}_${mode}.json" || status=1
  done
done
# Internal consistency: steady-state loop extrapolation vs full simulation
# (docs/lowering.md, "Control flow"); the corpus scan when ../shared is there.
loop_cases="identical pipelined nested allreduce"
scan=../shared/refs/hlo-corpus/files/openxla_xla__xla__backends__cpu__benchmarks__hlo__bench_scan_N2000_M3.hlo
[ -f "$scan" ] && loop_cases="$loop_cases scan"
for c in $loop_cases; do
  case $c in
    scan) input=$scan; extra=() ;;
    allreduce) input=tests/validation/refs/loops/$c.tasm; extra=(--system 4 --wrap --mode full) ;;
    *) input=tests/validation/refs/loops/$c.tasm; extra=() ;;
  esac
  for mode in full extrapolate; do
    "$TPUSIM" run "$input" --chip v5e --loops "$mode" "${extra[@]}" --format json -q 2>/dev/null \
      > "out/loops_${c}_${mode}.json" || status=1
  done
done
# HLO -> StableHLO -> HLO over the corpus when ../shared is there (analyze
# totals and step time must not move): every file, multi-chip runs only for
# 2-device modules (about 2 minutes; `--system-max-devices 16` adds the
# 8-device ones, several minutes more); under VALIDATE_QUICK=1 a sample of 12
# without the LLaMA and MaxText steps (minutes each under the sanitizers, as
# scripts/test.sh leaves them out of the corpus tests).
if [ -d ../shared/refs/hlo-corpus/files ]; then
  rt_args=(--system-max-devices 2)
  [ "${VALIDATE_QUICK:-0}" = "1" ] && rt_args=(--sample 12 --exclude llama,maxtext --system-max-devices 0)
  python3 scripts/roundtrip_corpus.py "$TPUSIM" --out out/roundtrip --work out/roundtrip_mlir "${rt_args[@]}" \
    2>/dev/null || status=1
else
  rm -f out/roundtrip.json
fi
for chip in v4 v5e v5p v6e v7; do
  "$TPUSIM" config show --chip "$chip" --format json > "out/config_$chip.json" || status=1
done
REPORT=${VALIDATION_REPORT:-docs/validation.md}
PY=python3; [ -x /usr/bin/python3 ] && PY=/usr/bin/python3  # Debian's python3 has matplotlib (scripts/setup.sh)
"$PY" scripts/validation_report.py out "$REPORT" || status=1
echo "wrote $REPORT"
exit $status
