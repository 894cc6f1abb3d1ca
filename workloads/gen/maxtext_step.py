"""MaxText training-step configurations and MaxText's own per-device TFLOP count
(Python 3 standard library only). See workloads/README.md, "MaxText steps".

STATUS: this is the configuration layer of the whole-step generator only. It
reads a row of tests/validation/refs/hw/train_step.csv, derives the decoder
dimensions, and computes the per-device TFLOP per step with the formula the
row's `includes` column quotes (MaxText train.py calculate_training_tflops):

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

Not yet written: emitting the HLO module of the step (embedding gather, the
scanned layers forward and backward with remat recompute, loss, FSDP
collectives, AdamW). `--tflops` is the only output.
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


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("csv", help="tests/validation/refs/hw/train_step.csv")
    p.add_argument("--tflops", action="store_true", help="print per-device TFLOP/step and implied step time")
    a = p.parse_args()
    for i, r in enumerate(read_rows(a.csv)):
        d = parse_spec(r["model_spec"])
        if d is None:
            print(f"{i}\t{r['model']}\tunsupported: model_spec names a MaxText config")
            continue
        tf = per_device_tflop(d, float(r["per_device_batch"]), int(r["seq_len"]))
        step = tf / float(r["measured"]) if r["unit"] == "TFLOP/s/chip" else float(r["measured"])
        print(f"{i}\t{r['model']}\t{r['slice']}\tTFLOP/dev={tf:.1f}\tstep_s={step:.3f}\t{r['split']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
