"""MaxText training-step configurations and MaxText's own per-device TFLOP count
(Python 3 standard library only). See workloads/README.md, "MaxText steps".

It reads a row of tests/validation/refs/hw/train_step.csv, derives the decoder
dimensions and the mesh, writes the HLO module of the whole training step
(`--emit ROW`; maxtext_hlo.py: embedding, the scanned layers forward and
backward with the remat policy's recomputation, flash attention, loss, FSDP/tensor
collectives, the DCN gradient all-reduce of multislice rows, AdamW), and
computes the per-device TFLOP per step with the formula the row's `includes`
column quotes (MaxText train.py calculate_training_tflops):

    6 * params * seq * batch  +  6 * heads * layers * head_dim * seq^2 * batch

where params counts the weights of the matmuls (per layer: Q, K, V, O
projections and the MLP matrices; plus the logits matmul of vocab x emb) and
the attention term is the causal (halved) QK^T and PV cost, forward and
backward (x3). batch is the per-device batch. Norm weights are left out, as
MaxText's formula leaves them out.

The step time of a TFLOP/s/chip row is this TFLOP count over the published
TFLOP/s/chip figure.

Only rows whose model_spec states the dimensions ("MaxText default decoder,
global_parameter_scale=N: emb=..,heads=..,head_dim=..,mlp=.. (act),layers=..,
vocab=..") are parsed; rows naming a MaxText model config (llama*, gpt3,
mistral, mixtral, gemma3) need that config's numbers first and are reported
as unsupported. The MaxText default decoder has no GQA (kv_heads = heads) and
one MLP activation (relu: two MLP matrices, wi and wo).

    maxtext_step.py CSV --tflops              per row: TFLOP/device and the implied step time
    maxtext_step.py CSV --emit ROW -o F.hlo   the step of data row ROW (0-based)
    maxtext_step.py CSV --emit ROW --run-args the `tpusim run` arguments of that row
"""
import argparse
import csv
import re
import sys


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def parse_spec(spec):
    """Decoder dimensions from a model_spec, or None if it names a config."""
    m = re.search(r"emb=(\d+),heads=(\d+),head_dim=(\d+),mlp=(\d+) \((\w+)\),layers=(\d+),vocab=(\d+)", spec)
    if not m:
        return None
    emb, heads, head_dim, mlp, act, layers, vocab = m.groups()
    activations = act.split("+")
    return dict(emb=int(emb), heads=int(heads), kv_heads=int(heads), head_dim=int(head_dim), mlp=int(mlp),
                mlp_matrices=len(activations) + 1, layers=int(layers), vocab=int(vocab))


def matmul_params(d):
    """Weights of the matmuls: per-layer attention and MLP, plus the logits (vocab x emb)."""
    attn = d["emb"] * (d["heads"] + 2 * d["kv_heads"]) * d["head_dim"] + d["heads"] * d["head_dim"] * d["emb"]
    mlp = d["mlp_matrices"] * d["emb"] * d["mlp"]
    return d["layers"] * (attn + mlp) + d["vocab"] * d["emb"]


def per_device_tflop(d, batch, seq):
    """MaxText's per-device TFLOP per training step (formula quoted in the CSV's `includes`)."""
    dense = 6 * matmul_params(d) * seq * batch
    attention = 6 * d["heads"] * d["layers"] * d["head_dim"] * seq * seq * batch
    return (dense + attention) / 1e12


def mesh(row):
    """(fsdp, tensor, slices) of a row: MaxText's ici_fsdp/ici_tensor (-1: the rest of a slice's
    chips) and its number of slices (the DCN data axis)."""
    slices = int(row["num_slices"])
    per_slice = int(row["chips"]) // slices

    def axis(name, default):
        m = re.search(name + r"(?:_parallelism)?=(-?\d+)", row["parallelism"])
        return int(m.group(1)) if m else default
    tensor = axis("ici_tensor", 1)
    fsdp = axis("ici_fsdp", -1)
    if fsdp == -1:
        fsdp = per_slice // tensor
    if fsdp * tensor != per_slice:
        raise ValueError(f"ici_fsdp {fsdp} x ici_tensor {tensor} != {per_slice} chips per slice")
    return fsdp, tensor, slices


def supported(row):
    """None when --emit can write the row's step, else why not."""
    if parse_spec(row["model_spec"]) is None:
        return "model_spec names a MaxText model config (dimensions not stated)"
    if remat_policy(row) not in ("full", "minimal"):
        return f"remat policy '{remat_policy(row)}' (full and minimal are generated)"
    if row["precision"] != "bf16":
        return f"precision {row['precision']}"
    try:
        fsdp, tensor, _ = mesh(row)
        if float(row["per_device_batch"]) * tensor < 1:
            return "fractional per-device batch"
    except ValueError as err:
        return str(err)
    return None


def remat_policy(row):
    """The row's MaxText remat_policy (the first word of its remat column)."""
    return row["remat"].split(":")[0].split()[0].strip()


def run_args(row):
    """`tpusim run` arguments reproducing the row's slice (symmetric SPMD, loops extrapolated)."""
    topo = row["topology_per_slice"].split()[0]
    args = ["--chip", row["chip"], "--system", topo, "--mode", "symmetric", "--loops", "extrapolate"]
    if int(row["num_slices"]) > 1:
        args += ["--set", f"system.slices={row['num_slices']}"]
    return args


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("csv", help="tests/validation/refs/hw/train_step.csv")
    p.add_argument("--tflops", action="store_true", help="print per-device TFLOP/step and implied step time")
    p.add_argument("--emit", type=int, metavar="ROW", help="write the HLO module of data row ROW's training step")
    p.add_argument("--run-args", action="store_true", help="with --emit: print the row's `tpusim run` arguments")
    p.add_argument("-o", "--output", default="-", help="output of --emit (default: stdout)")
    a = p.parse_args()
    rows = read_rows(a.csv)
    if a.emit is not None:
        return emit_row(rows, a)
    for i, r in enumerate(rows):
        d = parse_spec(r["model_spec"])
        if d is None:
            print(f"{i}\t{r['model']}\tunsupported: model_spec names a MaxText config")
            continue
        tf = per_device_tflop(d, float(r["per_device_batch"]), int(r["seq_len"]))
        step = tf / float(r["measured"]) if r["unit"] == "TFLOP/s/chip" else float(r["measured"])
        print(f"{i}\t{r['model']}\t{r['slice']}\tTFLOP/dev={tf:.1f}\tstep_s={step:.3f}\t{r['split']}")
    return 0


def emit_row(rows, a):
    if not 0 <= a.emit < len(rows):
        sys.stderr.write(f"maxtext_step.py: error: --emit {a.emit}: the CSV has data rows 0..{len(rows) - 1}\n")
        return 2
    r = rows[a.emit]
    why = supported(r)
    if why:
        sys.stderr.write(f"maxtext_step.py: error: row {a.emit} ({r['model']}, {r['slice']}): not generated: {why}\n")
        return 2
    if a.run_args:
        print(" ".join(run_args(r)))
        return 0
    import maxtext_hlo  # beside this script
    fsdp, tensor, slices = mesh(r)
    d = parse_spec(r["model_spec"])
    text, step = maxtext_hlo.emit(d, float(r["per_device_batch"]), int(r["seq_len"]), fsdp, tensor, slices,
                                  remat_policy(r))
    head = (f"// MaxText training step of train_step.csv row {a.emit}: {r['model']} on {r['slice']} "
            f"(fsdp {fsdp} x tensor {tensor} x {slices} slice(s)), per-device batch {step.c.B} x seq {step.c.S}, "
            f"{remat_policy(r)} remat, flash attention.\n// Written by workloads/gen/maxtext_step.py --emit {a.emit}; "
            f"run with: tpusim run F.hlo {' '.join(run_args(r))}\n")
    out = sys.stdout if a.output == "-" else open(a.output, "w")
    out.write(head + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
