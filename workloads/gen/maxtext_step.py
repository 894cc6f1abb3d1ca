"""MaxText training-step configurations and MaxText's own per-device TFLOP count
(Python 3 standard library only). See workloads/README.md, "MaxText steps".

It reads a row of tests/validation/refs/hw/train_step.csv, derives the decoder
dimensions and the mesh, writes the HLO module of the whole training step
(`--emit ROW`; maxtext_hlo.py: embedding, the scanned layers forward and
backward with the remat policy's recomputation, flash attention, loss, FSDP/tensor
or context-parallel collectives, the DCN gradient all-reduce of multislice rows,
AdamW; in bf16 or MaxText's fp8_full), and
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

A TPU7x chip is two JAX devices (one per TensorCore die, each with its own
HBM). The step is generated per chip (the batch of both devices, FSDP over
the chips) and run with `megacore=true`: the two TensorCores split every op
and share the chip's HBM. Approximations: the cores meet at every op where the
two devices run independently, and each weight shard enters a chip over ICI
once (an all-gather over the 2 x chips devices that crosses the die-to-die
link inside the chip and not the ICI twice).

A row's model is either stated ("MaxText default decoder,
global_parameter_scale=N: emb=..,heads=..,head_dim=..,mlp=.. (act),layers=..,
vocab=..": no GQA, one MLP activation, relu: two MLP matrices wi and wo, the
iota embedding tied to the logits) or named ("MaxText model_name=llama3.1-8b"):
MODEL_CONFIGS holds the named decoders' dimensions, copied from MaxText's
configs/models/<name>.yml (LLaMA-style: GQA, SwiGLU MLP of three matrices,
separate embedding and logits weights, the embedding a gather); gpt3, gemma3
and mixtral are other decoder blocks (LayerNorm and learned positions,
local/global attention, a mixture of experts), generated as MODEL_CONFIGS
describes.

The remat policy is MaxText's: a named policy (full, minimal,
qkv_proj_offloaded, ...) or `custom` with per-tensor choices (the remat
column: "custom: decoder_layer_input=offload,query_proj=offload,...");
`offload` keeps the tensor in host memory (MoveToHost in the forward scan,
MoveToDevice in the backward).

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


# MaxText's named decoder configs (base_emb_dim, base_num_query_heads, base_num_kv_heads, head_dim,
# base_mlp_dim, mlp_activations, base_num_decoder_layers, vocab_size, logits_via_embedding), copied from
# AI-Hypercomputer/maxtext MaxText/configs/models/<name>.yml (llama3.1-8b, llama3.1-70b @0ed7bd529b9d,
# llama2-70b @0b7d1ee442c5, mistral-7b @05dc58b2166a; the dimensions are the same at the recipes' tags).
# All use the llama2 decoder block (RMSNorm, RoPE, SwiGLU: silu and linear, three MLP matrices) and
# use_iota_embed False (base.yml): the embedding is a gather.
MODEL_CONFIGS = {
    "llama3.1-8b": dict(emb=4096, heads=32, kv_heads=8, head_dim=128, mlp=14336, layers=32, vocab=128256),
    "llama3.1-70b": dict(emb=8192, heads=64, kv_heads=8, head_dim=128, mlp=28672, layers=80, vocab=128256),
    "llama2-70b": dict(emb=8192, heads=64, kv_heads=8, head_dim=128, mlp=28672, layers=80, vocab=32000),
    "mistral-7b": dict(emb=4096, heads=32, kv_heads=8, head_dim=128, mlp=14336, layers=32, vocab=32000),
    # llama3.1-405b.yml @134af88147ed has base_num_decoder_layers commented out; 126 is the model's layer
    # count (Llama 3 paper, table 3) and the one the v6e row ran: its published TFLOP/s/device x step time
    # is MaxText's formula for these dimensions with 126 layers (tests/scripts/maxtext_step_test.py).
    "llama3.1-405b": dict(emb=16384, heads=128, kv_heads=8, head_dim=128, mlp=53248, layers=126, vocab=128256),
}
for _d in MODEL_CONFIGS.values():
    _d.update(mlp_matrices=3, tied=False, iota_embed=False)
# gpt3-175b (configs/models/gpt3-175b.yml @05cc075ebe28, decoder_block gpt3): MHA, one gelu MLP matrix
# pair, use_iota_embed and logits_via_embedding True, fused QKV (the same products as separate Q, K, V),
# LayerNorm and learned position embeddings instead of RMSNorm and RoPE: generated with RMSNorm (one
# reduction per norm where LayerNorm has two) and without the position table's add (elementwise, small).
MODEL_CONFIGS["gpt3-175b"] = dict(emb=12288, heads=96, kv_heads=96, head_dim=128, mlp=49152, layers=96, vocab=50304,
                                  mlp_matrices=2, activation="gelu", rope=False, tied=True, iota_embed=True)
# gemma3-12b (configs/models/gemma3-12b.yml at tpu-recipes-v0.1.5, decoder_block gemma3, layers/gemma3.py):
# GQA with head_dim 256, a gated gelu MLP (mlp_activations gelu, linear), logits via the embedding, RMSNorms
# after attention and after the MLP too (use_post_attn_norm, use_post_ffw_norm), and attention in blocks of
# six layers: five over a sliding window of 1024 tokens, then one global (Gemma3ScannableBlock; the scan
# runs over the 8 blocks). Query/key RMSNorms (gemma3 always applies them, per head over head_dim) are left
# out: elementwise passes over Q and K, small next to the layer's matmuls (workloads/README.md).
MODEL_CONFIGS["gemma3-12b"] = dict(emb=3840, heads=16, kv_heads=8, head_dim=256, mlp=15360, layers=48,
                                   vocab=262144, mlp_matrices=3, activation="gelu", tied=True, iota_embed=False,
                                   pattern=("local",) * 5 + ("global",), window=1024, post_norms=True)
# mixtral-8x7b (configs/models/mixtral-8x7b.yml at tpu-recipes-v0.1.2, decoder_block mixtral, layers/moe.py): the
# llama2 block with the MLP replaced by a mixture of 8 experts of mistral's SwiGLU MLP, 2 per token
# (num_experts, num_experts_per_tok); how the experts run is the row's config (row_dims: sparse_matmul,
# capacity_factor).
MODEL_CONFIGS["mixtral-8x7b"] = dict(emb=4096, heads=32, kv_heads=8, head_dim=128, mlp=14336, layers=32, vocab=32000,
                                     mlp_matrices=3, tied=False, iota_embed=False, experts=8, experts_per_token=2)
UNSUPPORTED_CONFIGS = {}


def config_name(spec):
    """The MaxText model_name a model_spec names, or None."""
    m = re.search(r"model_name=([\w.\-]+)", spec)
    return m.group(1) if m else None


def config_value(row, key):
    """A key of the row's config column (MaxText's key=value settings, ';'-separated), or None."""
    m = re.search(r"(?:^|;)" + re.escape(key) + r"=([^;]*)(?:;|$)", row.get("config", ""))
    return m.group(1) if m else None


def row_dims(row):
    """parse_spec of a row's model_spec with the row's own config keys that change the model as generated:
    use_iota_embed (the recipes' tuning_params set it; MaxText's base.yml default is False) and, for a
    mixture of experts, capacity_factor when sparse_matmul is False (MaxText's dense_matmul: with a capacity
    factor > 0 it drops tokens beyond each expert's capacity). base.yml's defaults (sparse_matmul True,
    capacity_factor -1: dropless grouped matmuls) leave capacity_factor 0, which is not generated."""
    d = parse_spec(row["model_spec"])
    if d is None:
        return d
    iota = config_value(row, "use_iota_embed")
    if iota in ("True", "False"):
        d["iota_embed"] = iota == "True"
    if d.get("experts", 1) > 1:
        dense = config_value(row, "sparse_matmul") == "False"
        cf = config_value(row, "capacity_factor")
        try:
            d["capacity_factor"] = float(cf) if dense and cf is not None else 0.0
        except ValueError:
            raise ValueError(f"config: capacity_factor={cf}: expected a number") from None
    return d


def parse_spec(spec):
    """Decoder dimensions from a model_spec (stated, or a config of MODEL_CONFIGS), or None."""
    name = config_name(spec)
    if name is not None:
        return dict(MODEL_CONFIGS[name]) if name in MODEL_CONFIGS else None
    m = re.search(r"emb=(\d+),heads=(\d+),head_dim=(\d+),mlp=(\d+) \((\w+)\),layers=(\d+),vocab=(\d+)", spec)
    if not m:
        return None
    emb, heads, head_dim, mlp, act, layers, vocab = m.groups()
    activations = act.split("+")
    return dict(emb=int(emb), heads=int(heads), kv_heads=int(heads), head_dim=int(head_dim), mlp=int(mlp),
                mlp_matrices=len(activations) + 1, layers=int(layers), vocab=int(vocab))


def matmul_params(d):
    """Weights of the matmuls a token goes through: per-layer attention and MLP, plus the logits (vocab x
    emb). A mixture of experts counts MaxText's way (calculate_tflops_training_per_device): the router
    and experts_per_token experts' MLPs (not the capacity's padding, nor the dispatch and combine)."""
    attn = d["emb"] * (d["heads"] + 2 * d["kv_heads"]) * d["head_dim"] + d["heads"] * d["head_dim"] * d["emb"]
    mlp = d["mlp_matrices"] * d["emb"] * d["mlp"]
    if d.get("experts", 1) > 1:
        mlp = mlp * d["experts_per_token"] + d["emb"] * d["experts"]
    return d["layers"] * (attn + mlp) + d["vocab"] * d["emb"]


def per_device_tflop(d, batch, seq):
    """MaxText's per-device TFLOP per training step (formula quoted in the CSV's `includes`). With a mixed
    attention pattern (gemma3), MaxText's calculate_mixed_attention_model_tflops_training_per_device: a local
    layer's attention counts seq x min(window, seq) products where a global one counts seq^2, both halved
    (causal) and x3 (forward and backward), as for the others."""
    dense = 6 * matmul_params(d) * seq * batch
    pattern = d.get("pattern", ("global",))
    blocks = d["layers"] // len(pattern)
    local = blocks * sum(1 for k in pattern if k == "local")
    window = min(d.get("window") or seq, seq)
    attention = 6 * d["heads"] * d["head_dim"] * batch * seq * ((d["layers"] - local) * seq + local * window)
    return (dense + attention) / 1e12


def mesh(row):
    """(fsdp, tensor, data) of a row: MaxText's ici_fsdp/ici_tensor (-1: the rest of a slice's chips)
    and the DCN data axis (its slices). With dcn_fsdp_parallelism equal to the number of slices, FSDP
    spans the slices instead: fsdp is ici_fsdp x slices (the slice the slowest part of a device's
    fsdp index, as device ids number one slice after another) and the data axis is 1. With
    ici_context_parallelism, fsdp counts the context groups (context(row) gives their size)."""
    return _mesh(row)[:3]


def context(row):
    """Generated devices each sequence is split over: MaxText's ici_context_parallelism (devices; on
    TPU7x the chip's two devices are in one context group, so chips)."""
    return _mesh(row)[3]


def _mesh(row):
    slices = int(row["num_slices"])
    per_slice = int(row["chips"]) // slices * devices_per_chip(row)
    m = re.search(r"dcn_fsdp(?:_parallelism)?=(-?\d+)", row["parallelism"])
    dcn_fsdp = slices if m and int(m.group(1)) == -1 else int(m.group(1)) if m else 1
    if dcn_fsdp not in (1, slices):
        raise ValueError(f"dcn_fsdp {dcn_fsdp} over {slices} slices: FSDP over part of the slices is not generated")

    def axis(name, default):
        m = re.search(name + r"(?:_parallelism)?=(-?\d+)", row["parallelism"])
        return int(m.group(1)) if m else default
    tensor = axis("ici_tensor", 1)
    cp = axis("ici_context", 1)
    # fsdp_transpose shards the weights' other dimension over its devices (the batch too): the same
    # per-layer all-gathers and reduce-scatters, so it counts as fsdp here.
    transpose = axis("ici_fsdp_transpose", 1)
    fsdp = axis("ici_fsdp", -1)
    if transpose == -1:
        transpose = per_slice // (tensor * fsdp)
    if fsdp == -1:
        fsdp = per_slice // (tensor * transpose * cp)
    fsdp *= transpose
    if fsdp * tensor * cp != per_slice:
        raise ValueError(f"ici_fsdp {fsdp} x ici_context {cp} x ici_tensor {tensor} != {per_slice} devices per slice")
    per_chip = devices_per_chip(row)
    if per_chip > 1:  # the chip's devices run as one megacore device (chip_batch, run_args)
        if tensor != 1 or (fsdp if cp == 1 else cp) % per_chip:
            raise ValueError(f"{per_chip} devices per chip with ici_tensor {tensor}, ici_fsdp {fsdp}, ici_context "
                             f"{cp}: only fsdp or context over whole chips is generated")
        if cp > 1:
            cp //= per_chip  # 'context' is the faster axis: a chip's two devices share a context group
        else:
            fsdp //= per_chip
    if cp > 1 and (dcn_fsdp > 1 or slices > 1):
        raise ValueError("context parallelism over several slices is not generated")
    return fsdp * dcn_fsdp, tensor, slices // dcn_fsdp, cp


def mesh_text(row):
    """The generated mesh in words: 'fsdp 64 x context 4 x tensor 1 x 2 slices (chips of 2 devices, megacore)'."""
    fsdp, tensor, slices, cp = _mesh(row)
    per_chip = devices_per_chip(row)
    return (f"fsdp {fsdp}" + (f" x context {cp}" if cp > 1 else "") + f" x tensor {tensor}" +
            (f" x {slices} slices" if slices > 1 else "") +
            (f" (chips of {per_chip} devices, megacore)" if per_chip > 1 else ""))


def devices_per_chip(row):
    """JAX devices per chip: 2 on TPU7x (one per TensorCore die), else 1."""
    return 2 if row["chip"] == "v7" else 1


def chip_batch(row):
    """Sequences per generated device: MaxText's per_device_batch, times a TPU7x chip's two devices (the
    step is generated per chip and run with the chip's TensorCores as one megacore device, run_args)."""
    return float(row["per_device_batch"]) * devices_per_chip(row)


def supported(row):
    """None when --emit can write the row's step, else why not."""
    if parse_spec(row["model_spec"]) is None:
        name = config_name(row["model_spec"]) or "?"
        why = next((w for k, w in UNSUPPORTED_CONFIGS.items() if name.startswith(k)), None)
        return f"model {name}: {why}" if why else f"model {name}: its dimensions are not in MODEL_CONFIGS"
    try:
        import maxtext_hlo  # beside this script
        if row["precision"] not in maxtext_hlo.PRECISIONS:
            return f"precision {row['precision']}"
        maxtext_hlo.remat_plan(*remat(row))
        scoped_vmem_limit_kib(row)
        attention_blocks(row)
        _, tensor, _, cp = _mesh(row)
        if chip_batch(row) * tensor * cp < 1:
            return "fractional per-device batch"
        maxtext_hlo.Config(*step_args(row))
    except ValueError as err:
        return str(err)
    return None


def remat_policy(row):
    """The row's MaxText remat_policy (the first word of its remat column)."""
    return row["remat"].split(":")[0].split()[0].strip()


def remat(row):
    """(policy, {checkpoint name: device|offload|remat} of a custom policy, else None)."""
    policy = remat_policy(row)
    if policy != "custom":
        return policy, None
    choices = {}
    for item in row["remat"].split(":", 1)[1].split(","):
        name, _, where = item.strip().partition("=")
        choices[name.strip()] = where.strip()
    return policy, choices


# MaxText's benchmarks/xla_flags_library.py (AI-Hypercomputer/maxtext@48445cf00e73): DENSE_VMEM_LIMIT_FLAG is
# " --xla_tpu_scoped_vmem_limit_kib=98304" ("experimentally recommended values for compute bound models");
# MOE_VMEM_LIMIT_FLAG is the same flag with _MOE_VMEM_LIMIT = 81920 (at tag tpu-recipes-v0.1.2, 14b5876ea857).
XLA_FLAG_LIBRARY = {"DENSE_VMEM_LIMIT_FLAG": "--xla_tpu_scoped_vmem_limit_kib=98304",
                    "MOE_VMEM_LIMIT_FLAG": "--xla_tpu_scoped_vmem_limit_kib=81920"}


def scoped_vmem_limit_kib(row):
    """The XLA scoped VMEM limit (KiB) the row's run set, or None (the compiler's default)."""
    flags = row["xla_flags"]
    for name, text in XLA_FLAG_LIBRARY.items():
        if re.search(r"\b" + name + r"\b", flags):
            flags += " " + text
    # CUSTOM_VMEM_LIMIT_FLAG is a format string of the library: the recipe passes its value
    # (the CSV writes it as the recipe's call, CUSTOM_VMEM_LIMIT_FLAG(vmem_limit=N))
    for value in re.findall(r"\bCUSTOM_VMEM_LIMIT_FLAG\(vmem_limit=([^)]*)\)", flags):
        flags += f" --xla_tpu_scoped_vmem_limit_kib={value}"
    if re.search(r"\bCUSTOM_VMEM_LIMIT_FLAG\b(?!\()", flags):
        raise ValueError("xla_flags: CUSTOM_VMEM_LIMIT_FLAG without its vmem_limit")
    found = re.findall(r"--xla_tpu_scoped_vmem_limit_kib=(\S*)", flags)
    if not found:
        return None
    if not re.fullmatch(r"[1-9]\d{0,8}", found[-1]):
        raise ValueError(f"xla_flags: --xla_tpu_scoped_vmem_limit_kib={found[-1]}: "
                         "expected a positive whole number of KiB")
    return int(found[-1])


def step_args(row):
    """The row's arguments of maxtext_hlo.emit and maxtext_hlo.Config."""
    fsdp, tensor, slices, cp = _mesh(row)
    return (row_dims(row), chip_batch(row), int(row["seq_len"]), fsdp, tensor, slices, remat(row),
            row["precision"], cp)


def row_module(row):
    """(HLO module text, maxtext_hlo.Step) of a supported row's whole training step."""
    import maxtext_hlo  # beside this script
    return maxtext_hlo.emit(*step_args(row))


# Static program size a row's step may compile to: LLaMA 3.1 405B's backward layer on a TPU7x chip (batch 6)
# needs more than tpusim's default 4 million instructions. The limit changes no timing, only what is refused.
PROGRAM_INSTRUCTIONS = 16_000_000


# The flash-attention kernels' grid steps (rows of Q and of K/V): MaxText's sa_block_q, sa_block_kv (forward)
# and sa_block_q_dkv, sa_block_kv_dkv (the dK/dV backward) as a row's config sets them, else base.yml's default,
# 512 for each (AI-Hypercomputer/maxtext base.yml at tags tpu-recipes-v0.1.2, -v0.1.4 and -v0.1.5). The
# v5e/v5p rows' MaxText (76bd53b0f44c, before the sa_* keys) passes the same 512 to Pallas' flash_attention
# (layers/attentions.py: block_q, block_k_major, block_q_major_dkv, block_k_major_dkv); its block_b = 2 (two
# sequences per grid step) is not modelled: tpusim's grid steps are per (sequence, head).
ATTENTION_BLOCKS = {"block_q": "sa_block_q", "block_kv": "sa_block_kv",
                    "block_q_bwd": "sa_block_q_dkv", "block_kv_bwd": "sa_block_kv_dkv"}
MAXTEXT_DEFAULT_BLOCK = 512


def attention_blocks(row):
    """{core.attention key: rows} of the row's flash-attention grid steps (ATTENTION_BLOCKS)."""
    out = {}
    for key, flag in ATTENTION_BLOCKS.items():
        value = config_value(row, flag)
        if value is None:
            out[key] = MAXTEXT_DEFAULT_BLOCK
        elif re.fullmatch(r"[1-9]\d{0,6}", value.strip()):
            out[key] = int(value)
        else:
            raise ValueError(f"config: {flag}={value}: expected a positive whole number of rows")
    return out


def run_args(row):
    """`tpusim run` arguments reproducing the row's slice (symmetric SPMD, loops extrapolated), the XLA
    scoped VMEM limit its run set (core.vmem.scoped_limit) and its flash-attention grid steps
    (core.attention, attention_blocks)."""
    topo = row["topology_per_slice"].split()[0]
    args = ["--chip", row["chip"], "--system", topo, "--mode", "symmetric", "--loops", "extrapolate",
            "--set", f"simulation.max_program_instructions={PROGRAM_INSTRUCTIONS}"]
    if (kib := scoped_vmem_limit_kib(row)) is not None:
        args += ["--set", f"core.vmem.scoped_limit={kib}KiB"]
    for key, rows in attention_blocks(row).items():
        args += ["--set", f"core.attention.{key}={rows}"]
    if int(row["num_slices"]) > 1:
        args += ["--set", f"system.slices={row['num_slices']}"]
    if devices_per_chip(row) > 1:
        args += ["--set", "megacore=true"]
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
            print(f"{i}\t{r['model']}\tunsupported: {supported(r)}")
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
    text, step = row_module(r)
    head = (f"// MaxText training step of train_step.csv row {a.emit}: {r['model']} on {r['slice']} "
            f"({mesh_text(r)}), per-device batch {step.c.B} x seq {step.c.S}, "
            f"{remat_policy(r)} remat, flash attention, {r['precision']}.\n// Written by workloads/gen/maxtext_step.py --emit {a.emit}; "
            f"run with: tpusim run F.hlo {' '.join(run_args(r))}\n")
    out = sys.stdout if a.output == "-" else open(a.output, "w")
    out.write(head + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
