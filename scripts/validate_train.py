#!/usr/bin/env python3
"""Interim estimate of MaxText training steps (tests/validation/refs/hw/train_step.csv)
by ONE-LAYER EXTRAPOLATION, until workloads/gen/maxtext_step.py emits the whole step.

For each selected single-slice row whose model_spec states the dimensions: writes
one decoder layer's FSDP(/TP) training step with workloads/gen/spmd_transformer.py
--train --fsdp (global batch = per_device_batch x chips, data axis = chips / tensor),
simulates it with `tpusim run --chip CHIP --system TOPOLOGY --mode symmetric --loops
extrapolate`, and estimates

    step = layers x layer_step x 4/3

(full remat: the forward, about a third of a layer's training step, runs again in
the backward). Approximations: the relu MLP (two matrices of emb x mlp) is stood in
for by spmd_transformer's SwiGLU with hidden int(2*mlp/3) (same weights and FLOPs);
embedding, logits and loss are left out (about 1% of the FLOPs at these sizes);
attention is the generator's unfused softmax(QK^T)V, not a flash kernel. The
measured step time of a TFLOP/s/chip row is MaxText's per-device TFLOP
(maxtext_step.per_device_tflop) over the published figure; the error is computed
here from the CSV.

usage: validate_train.py TPUSIM [--rows 6,12]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "workloads", "gen"))
import maxtext_step  # noqa: E402


def tensor_axis(parallelism):
    m = re.search(r"ici_tensor=(\d+)", parallelism)
    return int(m.group(1)) if m else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("tpusim")
    p.add_argument("--rows", default="6,12", help="comma-separated row indices (0-based data rows)")
    p.add_argument("--csv", default=os.path.join(ROOT, "tests", "validation", "refs", "hw", "train_step.csv"))
    a = p.parse_args()
    rows = maxtext_step.read_rows(a.csv)
    errors = []
    print("row\tmodel\tslice\tmeasured_s\ttpusim_s\terror\tsplit\tsim_wall_s")
    with tempfile.TemporaryDirectory() as tmp:
        for i in (int(x) for x in a.rows.split(",")):
            r = rows[i]
            d = maxtext_step.parse_spec(r["model_spec"])
            if d is None or int(r["num_slices"]) != 1 or not r["remat"].startswith("full"):
                print(f"{i}\t{r['model']}\tskipped: needs named-config dims, multislice or a non-full remat policy")
                continue
            chips, tp = int(r["chips"]), tensor_axis(r["parallelism"])
            dp = chips // tp
            batch = int(float(r["per_device_batch"]) * chips)
            hlo = os.path.join(tmp, f"row{i}.hlo")
            subprocess.run([sys.executable, os.path.join(ROOT, "workloads", "gen", "spmd_transformer.py"),
                            "--train", "--fsdp", "--dp", str(dp), "--tp", str(tp), "--batch", str(batch),
                            "--seq", r["seq_len"], "--d-model", str(d["emb"]), "--heads", str(d["heads"]),
                            "--head-dim", str(d["head_dim"]),
                            "--mlp", str(d["mlp"] * d["mlp_matrices"] // 3 // tp * tp),
                            "-o", hlo], check=True)
            t0 = time.time()
            out = subprocess.run([a.tpusim, "run", hlo, "--chip", r["chip"], "--system", r["topology_per_slice"].split()[0],
                                  "--mode", "symmetric", "--loops", "extrapolate", "--format", "json"],
                                 check=True, capture_output=True, text=True).stdout
            wall = time.time() - t0
            est = d["layers"] * json.loads(out)["step_time_s"] * 4 / 3
            tf = maxtext_step.per_device_tflop(d, float(r["per_device_batch"]), int(r["seq_len"]))
            meas = tf / float(r["measured"]) if r["unit"] == "TFLOP/s/chip" else float(r["measured"])
            err = est / meas - 1
            errors.append(err)
            print(f"{i}\t{r['model']}\t{r['slice']}\t{meas:.3f}\t{est:.3f}\t{100 * err:+.1f}%\t{r['split']}\t{wall:.1f}")
    if errors:
        print(f"MAPE {100 * sum(abs(e) for e in errors) / len(errors):.1f}%  "
              f"signed mean {100 * sum(errors) / len(errors):+.1f}%  ({len(errors)} rows)")
    return 0 if errors else 1


if __name__ == "__main__":
    sys.exit(main())
