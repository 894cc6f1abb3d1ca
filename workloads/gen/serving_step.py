#!/usr/bin/env python3
"""One engine step of a continuous-batching LLM server (vLLM-style), per device, for tpusim.

A server that keeps `concurrency` requests in flight, each of `input_len` prompt tokens and
`output_len` generated tokens (fixed lengths: the benchmark's random dataset with --ignore-eos),
runs one forward pass per step over every running request: one new token of each decoding
request and a chunk of the prompts being prefilled (chunked prefill), then samples the next
token of each decoding request. The time between a request's output tokens (TPOT) is the mean
step time. In steady state (StepShape):

  decode tokens   concurrency (every request decodes but for its few prefill steps)
  prefill tokens  concurrency x input_len / output_len (each request's prompt is prefilled once
                  per output_len steps), within the step's token budget
  decode context  input_len + output_len / 2 (the mean over a request's decode steps)
  prefill context input_len / 2 (a prompt token attends to its prefix: the mean over the prompt)

The module (LLaMA-style decoder: RMSNorm, GQA attention with RoPE, SwiGLU MLP; Megatron tensor
parallelism over `tp` devices as vLLM shards it):

  embedding  the tokens' rows gathered from this device's vocabulary shard (the others' rows
             masked to zero), all-reduced over the devices
  layers     unrolled (the server's model is a Python loop over per-layer weights): RMSNorm,
             the column-parallel QKV projection (heads / tp query heads and kv_heads / tp key/value
             heads per device), RoPE, attention as the fused-attention kernel -- the decode
             tokens over their cached keys/values (one query each, unmasked over the decode
             context), the prefill chunk over its prompt's prefix (unmasked over the prefill
             context: the causal work's mean) --, the row-parallel output projection and its
             all-reduce, residual, RMSNorm, the gate/up projection, silu(gate) * up, the
             row-parallel down projection and its all-reduce, residual
  sampling   final RMSNorm of the decode tokens, their logits on this device's vocabulary
             shard (f32), all-gathered over the devices, and the greedy choice (a max over the
             vocabulary)

The new tokens' keys and values are written into the caches in place before the kernels read
them (one dynamic-update-slice per cache).

Named approximations: every decoding request's cache holds the mean decode context and takes
its new key/value at one position (vLLM writes each token into its own page slot: the same
bytes); the prefill chunk is one request's; the host's scheduling and the sampler's other work
(temperature, top-p) are left out (vLLM's --async-scheduling overlaps the host with the device).

    serving_step.py CSV --emit ROW -o F.hlo    the step of data row ROW (0-based) of inference.csv
    serving_step.py CSV --emit ROW --run-args  the row's `tpusim run` arguments
    serving_step.py CSV --list                 each row: supported or why not, and its step shape
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import maxtext_step  # noqa: E402
from spmd_train_step import BF16, F32, REGION_COUNTERS, REGIONS, Comp, Module, dot  # noqa: E402

S32 = "s32"

# The serving rows' models: the LLaMA-style dimensions of maxtext_step.MODEL_CONFIGS (Llama 3.3 70B
# has Llama 3.1 70B's architecture: the same config.json dimensions, a new fine-tune).
SERVED_MODELS = {"llama-3.3-70b": "llama3.1-70b", "llama-3.1-70b": "llama3.1-70b", "llama-3.1-8b": "llama3.1-8b"}


class StepShape:
    """The steady-state step of `concurrency` fixed-length requests (see the module docstring)."""

    def __init__(self, concurrency, input_len, output_len, token_budget):
        self.decode = concurrency
        self.prefill = min(round(concurrency * input_len / output_len), token_budget - concurrency)
        if self.prefill < 0:
            raise ValueError(f"concurrency {concurrency} exceeds the step's token budget {token_budget}")
        self.decode_ctx = input_len + output_len // 2
        self.prefill_ctx = max(1, self.prefill, input_len // 2)

    @property
    def tokens(self):
        return self.decode + self.prefill


def bf(*d):
    return (BF16, tuple(d))


class Server:
    def __init__(self, dims, tp, shape):
        for k in ("heads", "kv_heads", "mlp", "vocab"):
            if dims[k] % tp and not (k == "kv_heads" and tp % dims[k] == 0):
                raise ValueError(f"{k} {dims[k]} does not split over {tp} devices")
        if dims.get("mlp_matrices", 3) != 3 or dims.get("tied") or dims.get("rope") is False:
            raise ValueError("only LLaMA-style decoders (SwiGLU MLP, RoPE, separate logits weights) are generated")
        self.d, self.tp, self.s = dims, tp, shape
        self.D, self.HD, self.L = dims["emb"], dims["head_dim"], dims["layers"]
        self.HL, self.KVL = dims["heads"] // tp, max(1, dims["kv_heads"] // tp)
        self.FL, self.VL = dims["mlp"] // tp, dims["vocab"] // tp
        self.m = Module()
        self.m.counters.update(REGION_COUNTERS)
        self.groups = "{{" + ",".join(map(str, range(tp))) + "}}"

    def all_reduce(self, e, v):
        return e.op("all-reduce", v.shape, [v], f"channel_id={self.m.next_channel()}, replica_groups={self.groups}, "
                    "use_global_device_ids=true, to_apply=%add")

    def norm(self, e, x, w):
        """RMSNorm of x [T,D] with weight w [D] (two fusions: the sums of squares, then the scaling)."""
        D = self.D

        def sumsq(f, p):
            xf = f.convert(p[0], F32)
            return f.reduce(f.mul(xf, xf), (1,), "region_0.1")

        def scale(f, p):
            xf = f.convert(p[0], F32)
            mean = f.mul(p[1], f.const(repr(1.0 / D), F32, p[1].dims))
            r = f.bcast(f.un("rsqrt", f.add(mean, f.const("1e-05", F32, p[1].dims))), xf.dims, (0,))
            return f.mul(f.convert(f.mul(xf, r), BF16), f.bcast(p[2], xf.dims, (1,)))
        ss = self.m.fusion(e, "kInput", "input_reduce_fusion", [x], sumsq, None)
        return self.m.fusion(e, "kLoop", "loop_multiply_fusion", [x, ss, w], scale, None)

    def split(self, e, qkv, cos, sin, which, rows):
        """One kernel input cut from the fused projection qkv [T, (HL+2 KVL) HD] in a loop fusion (XLA fuses
        the slices into it): `which` q, k or v, `rows` (first, count) of the tokens, as [batch, len, heads,
        HD] -- the decode tokens [count, 1, ..] (one query each), the prefill chunk [1, count, ..]; q and k
        get rotate-half RoPE with each token's cos/sin [T, HD]."""
        HL, KVL, HD, H2 = self.HL, self.KVL, self.HD, self.HD // 2
        heads, col = {"q": (HL, 0), "k": (KVL, HL * HD), "v": (KVL, (HL + KVL) * HD)}[which]
        r0, n = rows
        sh = (n, heads, HD)
        out = bf(n, 1, heads, HD) if r0 == 0 else bf(1, n, heads, HD)
        sl = lambda lo, hi: f"slice={{[0:{n}], [0:{heads}], [{lo}:{hi}]}}"  # noqa: E731

        def body(f, p):
            cut = f.op("slice", bf(n, heads * HD), [p[0]], f"slice={{[{r0}:{r0 + n}], [{col}:{col + heads * HD}]}}")
            x = f.op("reshape", bf(*sh), [cut])
            if which != "v":
                c, s_ = (f.op("slice", bf(n, HD), [t], f"slice={{[{r0}:{r0 + n}], [0:{HD}]}}") for t in p[1:])
                hi = f.op("slice", bf(n, heads, H2), [x], sl(H2, HD))
                lo = f.op("slice", bf(n, heads, H2), [x], sl(0, H2))
                rot = f.op("concatenate", bf(*sh), [f.un("negate", hi), lo], "dimensions={2}")
                x = f.add(f.mul(x, f.bcast(c, sh, (0, 2))), f.mul(rot, f.bcast(s_, sh, (0, 2))))
            return f.op("reshape", out, [x])
        return self.m.fusion(e, "kLoop", "loop_slice_fusion", [qkv] + ([cos, sin] if which != "v" else []), body, None)

    def store(self, e, cache, new, at):
        """cache with the new tokens' keys or values written at position `at` of its length dim (in place)."""
        zero, pos = e.const("0", S32, ()), e.const(str(at), S32, ())
        return e.op("dynamic-update-slice", cache.shape, [cache, new, zero, pos, zero, zero])

    def attention(self, e, q, k_cache, v_cache, batch, q_len, kv_len):
        """The fused-attention kernel (unmasked) of q [batch, q_len, HL, HD] over k/v [batch, kv_len, KVL, HD]."""
        cfg = (f"attn_heads = {self.HL} : i64, input_batch = {batch} : i64, is_training = false, "
               f"kv_max_seqlen = {kv_len} : i64, mask_type = 0 : i64, num_gqa_groups = {self.KVL} : i64, "
               f"q_max_seqlen = {q_len} : i64, qk_head_dim = {self.HD} : i64, v_head_dim = {self.HD} : i64")
        out = bf(batch, q_len, self.HL, self.HD)
        fa = e.op("custom-call", [out, (F32, (batch, self.HL, q_len, 1))], [q, k_cache, v_cache],
                  'custom_call_target="te_fused_attn_forward_ffi", '
                  f"api_version=API_VERSION_TYPED_FFI, backend_config={{{cfg}}}")
        return e.op("get-tuple-element", out, [fa], "index=0")

    def layer(self, e, x, W, cos, sin):
        s, HL, KVL, HD, D, FL = self.s, self.HL, self.KVL, self.HD, self.D, self.FL
        T, C, P = s.tokens, s.decode, s.prefill
        xn = self.norm(e, x, W["attn_norm"])
        qkv = dot(e, xn, W["wqkv"], (T, (HL + 2 * KVL) * HD), (1,), (0,))
        parts = []
        for rows, cache, q_len, kv_len in (((0, C), "cache", 1, s.decode_ctx), ((C, P), "prefix", P, s.prefill_ctx)):
            if not rows[1]:
                continue
            q, k, v = (self.split(e, qkv, cos, sin, w, rows) for w in "qkv")
            batch = C if rows[0] == 0 else 1
            kc, vc = (self.store(e, W[f"{n}_{cache}"], t, kv_len - (1 if rows[0] == 0 else P))
                      for n, t in (("k", k), ("v", v)))
            parts.append(self.attention(e, q, kc, vc, batch, q_len, kv_len))

        def join(f, p):  # the kernels' outputs as the output projection's rows [T, HL*HD]
            flat = [f.op("reshape", bf(math.prod(x.dims[:2]), HL * HD), [x]) for x in p]
            return flat[0] if len(flat) == 1 else f.op("concatenate", bf(T, HL * HD), flat, "dimensions={0}")
        attn = self.m.fusion(e, "kLoop", "loop_concatenate_fusion", parts, join, None)
        o = self.all_reduce(e, dot(e, attn, W["wo"], (T, D), (1,), (0,)))
        x = self.m.fusion(e, "kLoop", "loop_add_fusion", [x, o], lambda f, p: f.add(p[0], p[1]), None)
        xn = self.norm(e, x, W["mlp_norm"])
        gu = dot(e, xn, W["w_gate_up"], (T, 2 * FL), (1,), (0,))

        def swiglu(f, p):
            g = f.convert(f.op("slice", bf(T, FL), [p[0]], f"slice={{[0:{T}], [0:{FL}]}}"), F32)
            u = f.convert(f.op("slice", bf(T, FL), [p[0]], f"slice={{[0:{T}], [{FL}:{2 * FL}]}}"), F32)
            return f.convert(f.mul(f.mul(g, f.un("logistic", g)), u), BF16)
        h = self.m.fusion(e, "kLoop", "loop_multiply_fusion", [gu], swiglu, None)
        down = self.all_reduce(e, dot(e, h, W["w_down"], (T, D), (1,), (0,)))
        return self.m.fusion(e, "kLoop", "loop_add_fusion", [x, down], lambda f, p: f.add(p[0], p[1]), None)

    def build(self):
        s, D, HD, HL, KVL, FL, VL = self.s, self.D, self.HD, self.HL, self.KVL, self.FL, self.VL
        T, C, P = s.tokens, s.decode, s.prefill
        m = self.m
        e = Comp(m, "main")
        tokens = e.param((S32, (T,)), "tokens.0")
        cos, sin = e.param(bf(T, HD), "rope_cos.1"), e.param(bf(T, HD), "rope_sin.2")
        table = e.param(bf(VL, D), "embedding.3")
        shapes = [("attn_norm", bf(D)), ("wqkv", bf(D, (HL + 2 * KVL) * HD)), ("wo", bf(HL * HD, D)),
                  ("mlp_norm", bf(D)), ("w_gate_up", bf(D, 2 * FL)), ("w_down", bf(FL, D))]
        if C:
            shapes += [("k_cache", bf(C, s.decode_ctx, KVL, HD)), ("v_cache", bf(C, s.decode_ctx, KVL, HD))]
        if P:
            shapes += [("k_prefix", bf(1, s.prefill_ctx, KVL, HD)), ("v_prefix", bf(1, s.prefill_ctx, KVL, HD))]
        layers = [{name: e.param(shape, f"layer{i}_{name}.{len(e.params)}") for name, shape in shapes}
                  for i in range(self.L)]
        final_norm = e.param(bf(D), f"final_norm.{len(e.params)}")
        lm_head = e.param(bf(D, VL), f"lm_head.{len(e.params)}")

        # embedding: this device's vocabulary shard holds the tokens in [0, VL) (device 0's; every
        # device does the same work): the others' rows are zeroed, the sum over the devices is the row
        def embed(f, p):
            ids = f.op("reshape", (S32, (T, 1)), [p[1]])
            rows = f.op("gather", bf(T, D), [p[0], ids], "offset_dims={1}, collapsed_slice_dims={0}, "
                        f"start_index_map={{0}}, index_vector_dim=1, slice_sizes={{1,{D}}}")
            mine = f.op("compare", ("pred", (T,)), [p[1], f.const(str(VL), S32, (T,))], "direction=LT")
            return f.op("select", bf(T, D), [f.bcast(mine, (T, D), (0,)), rows, f.const("0", BF16, (T, D))])
        x = self.all_reduce(e, m.fusion(e, "kLoop", "loop_select_fusion", [table, tokens], embed, None))
        for W in layers:
            x = self.layer(e, x, W, cos, sin)

        # sampling: the decode tokens' logits (this device's vocabulary shard), gathered, the greedy max
        xd = e.op("slice", bf(C, D), [x], f"slice={{[0:{C}], [0:{D}]}}") if P else x
        xn = self.norm(e, xd, final_norm)
        logits = dot(e, xn, lm_head, (C, VL), (1,), (0,), dtype=F32)
        gathered = e.op("all-gather", (F32, (C, VL * self.tp)), [logits], f"channel_id={m.next_channel()}, "
                        f"replica_groups={self.groups}, dimensions={{1}}, use_global_device_ids=true")
        best = m.fusion(e, "kInput", "input_reduce_fusion", [gathered],
                        lambda f, p: f.reduce(p[0], (1,), "region_1.5", init="-inf"), None)
        comps = [(f"// {comment}\n" if comment else "") + text for comment, text in m.comps]
        head = f"HloModule jit_serving_step, is_scheduled=true, num_partitions={self.tp}\n\n"
        return head + REGIONS + "\n" + "\n".join(comps) + "\n" + e.text(best, entry=True)


# ---------------- the rows of tests/validation/refs/hw/inference.csv ----------------
SERVING_KEYS = ("concurrency", "input_len", "output_len", "token_budget", "tp")


def row_fields(row):
    """{key: value} of the row's `serving` column (key=value;... : concurrency, input_len, output_len,
    token_budget, tp; each a positive integer); {} when the column is empty. Raises ValueError naming
    what is wrong."""
    out = {}
    text = row.get("serving") or ""
    for part in filter(None, (p.strip() for p in text.split(";"))):
        k, eq, v = part.partition("=")
        k = k.strip()
        if not eq or k not in SERVING_KEYS:
            raise ValueError(f"serving: '{part}' is not one of {', '.join(k + '=N' for k in SERVING_KEYS)}")
        if not v.strip().isdigit() or int(v) <= 0:
            raise ValueError(f"serving: {k}={v.strip()} is not a positive integer")
        out[k] = int(v)
    missing = [k for k in SERVING_KEYS if k not in out]
    if out and missing:
        raise ValueError(f"serving: missing {', '.join(missing)}")
    return out


def supported(row):
    """None when the row's step is generated, else the reason it is not."""
    f = row_fields(row)
    if not f:
        return "variable request lengths (a real dataset): no fixed-length step to generate"
    if row["model"] not in SERVED_MODELS:
        return f"model {row['model']}: not a generated decoder"
    if row["dtype"] != "bf16":
        return f"dtype {row['dtype']}: only bf16 serving steps are generated"
    return None


def row_errors(path, rows):
    """'path:line: message' for each row whose `serving` column does not parse (the data rows' line numbers
    count the file's comment and header lines)."""
    with open(path) as f:
        first = next(i for i, line in enumerate(f, start=1) if not line.startswith("#")) + 1
    out = []
    for i, r in enumerate(rows):
        try:
            if row_fields(r):
                max_model_len(r)
        except ValueError as err:
            out.append(f"{path}:{first + i}: {err}")
    return out


def max_model_len(row):
    """The server's --max-model-len (the `cache_len` column) of a fixed-length row, a positive whole number of
    tokens. Raises ValueError naming what is wrong."""
    text = (row.get("cache_len") or "").strip()
    if not text.isdigit() or int(text) <= 0:
        raise ValueError(f"cache_len: '{text}' is not a positive integer (the server's --max-model-len)")
    return int(text)


def row_server(row):
    f = row_fields(row)
    dims = dict(maxtext_step.MODEL_CONFIGS[SERVED_MODELS[row["model"]]])
    return Server(dims, f["tp"], StepShape(f["concurrency"], f["input_len"], f["output_len"], f["token_budget"]))


def row_module(row):
    srv = row_server(row)
    return srv.build(), srv


# vLLM TPU's attention kernel, ragged paged attention v3 (vllm-project/tpu-inference, tag v0.12.0: the rows'
# image, vllm/vllm-tpu:v0.12.0): a grid step per sequence and block of its queries, inside which a loop over
# blocks of num_kv_pages_per_block pages of the sequence's keys and values, each block's products and softmax
# in turn. The block comes from the kernel's tuned table (kernels/ragged_paged_attention/v3/tuned_block_sizes.py,
# get_tuned_block_sizes), keyed by device, page size, dtypes, heads per device (query heads rounded up to a power of
# two; key/value heads doubled, aligned to the dtype's packing, halved), head dim and max-model-len (powers of two),
# else by the TPU generation: KV blocks of 512 tokens on v4, 4096 on v7, 2048 on the others; at most the
# sequence's pages. The page size is vLLM's (vllm/v1/attention/backends/pallas.py, get_page_size): the
# max-model-len's next power of two over 16 pages, within 16..256 tokens, and 16 above 8192 tokens.
# (device, page, "q_<dtype>_kv_<dtype>", "q_head-Q_kv_head-K_head-H", max_model_len): (kv pages per block, queries
# per block), the entries of the table for the served rows, copied: Llama-3.3-70B over 8 v6e chips has 8 query heads
# and 1 key/value head of 128 per chip.
RPA_TUNED = {("TPU v6e", 128, "q_bfloat16_kv_bfloat16", "q_head-8_kv_head-1_head-128", 2048): (16, 32)}
RPA_DEFAULT_KV_TOKENS = {"v4": 512, "v7": 4096}
RPA_OTHER_KV_TOKENS = 2048


def next_power_of_2(n):
    return 1 << max(0, int(n) - 1).bit_length()


def vllm_page_size(max_model_len):
    """vLLM's TPU page size (tokens) for a --max-model-len."""
    if max_model_len > 8192:
        return 16
    return min(256, max(16, next_power_of_2(max_model_len) // 16))


def rpa_pages(row):
    """(tuned-table key, page size in tokens, pages per sequence) of RPA v3 on the row's server (bf16 caches)."""
    tokens = max_model_len(row)
    srv = row_server(row)
    page = vllm_page_size(tokens)
    pages_per_seq = math.ceil(tokens / page)
    packing = 2  # bf16 values per 32-bit word (get_dtype_packing)
    q_per_kv = math.ceil(srv.HL // srv.KVL / packing) * packing
    kv_x2 = math.ceil(2 * srv.KVL / packing) * packing
    heads = f"q_head-{next_power_of_2(q_per_kv * srv.KVL)}_kv_head-{next_power_of_2(kv_x2) // 2}" \
            f"_head-{math.ceil(srv.HD / 128) * 128}"
    key = (f"TPU {row['chip']}", next_power_of_2(page), "q_bfloat16_kv_bfloat16", heads,
           next_power_of_2(page * pages_per_seq))
    return key, page, pages_per_seq


def rpa_kv_block_tokens(row):
    """Tokens of the keys and values one step of RPA v3's loop covers on the row's server."""
    key, page, pages_per_seq = rpa_pages(row)
    default = RPA_DEFAULT_KV_TOKENS.get(row["chip"], RPA_OTHER_KV_TOKENS) // page
    pages = RPA_TUNED.get(key, (default, None))[0]
    return min(pages_per_seq, pages) * page


def run_args(row):
    """The row's `tpusim run` arguments: its slice, and the attention kernel's KV block as its grid step (the MXUs
    drain once a KV block, core.attention.block_kv)."""
    return ["--chip", row["chip"], "--system", row["topology"], "--mode", "symmetric",
            "--set", f"core.attention.block_kv={rpa_kv_block_tokens(row)}"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("csv", help="tests/validation/refs/hw/inference.csv")
    p.add_argument("--emit", type=int, metavar="ROW", help="write the serving step of data row ROW")
    p.add_argument("--run-args", action="store_true", help="with --emit: print the row's `tpusim run` arguments")
    p.add_argument("--list", action="store_true", help="each row: its step shape, or why it is not generated")
    p.add_argument("-o", "--output", default="-")
    a = p.parse_args()
    rows = maxtext_step.read_rows(a.csv)
    bad = row_errors(a.csv, rows)
    if bad:
        p.error("\n".join(bad))
    if a.list:
        for i, r in enumerate(rows):
            why = supported(r)
            if why:
                print(f"{i} {r['model']} {r['slice']}: {why}")
            else:
                s = row_server(r).s
                print(f"{i} {r['model']} {r['slice']}: {s.decode} decode tokens (context {s.decode_ctx}) + "
                      f"{s.prefill} prefill tokens (context {s.prefill_ctx})")
        return 0
    if a.emit is None:
        p.error("--emit ROW or --list")
    if not 0 <= a.emit < len(rows):
        p.error(f"--emit {a.emit}: not a data row of {a.csv} (0..{len(rows) - 1})")
    why = supported(rows[a.emit])
    if why:
        p.error(f"row {a.emit}: {why}")
    if a.run_args:
        print(" ".join(run_args(rows[a.emit])))
        return 0
    text, _ = row_module(rows[a.emit])
    if a.output == "-":
        sys.stdout.write(text)
    else:
        with open(a.output, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
