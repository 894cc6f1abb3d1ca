"""The training step of the LLaMA-style decoder layer, SPMD-partitioned for a
(data, model) mesh: forward, backward and an Adam update of the local parameter
shards, with the collectives XLA's SPMD partitioner inserts for the shardings of
spmd_transformer.py (Python 3 standard library only; used by
spmd_transformer.py --train). See workloads/README.md, "Training step".

One layer's share of a training step: the layer gets its input x and the
gradient dy of its output (what the layer above passes down), and returns its
output y, the gradient dx of its input (for the layer below), and its updated
parameters and Adam moments. A model of L layers runs this L times, plus the
embedding, head and loss (not generated). Activations are kept from forward to
backward (no rematerialization).

Per-device collectives (tp = model axis size, dp = data axis size):
  TP (tp > 1), over the model groups:
    forward   all-reduce of the row-parallel partial sums (Wo, Wdown)          2 x bf16[B/dp,S,d]
    backward  all-reduce of the input gradients of the column-parallel dots
              (dxn from Wq/Wk/Wv, dhn from Wgate/Wup), async: the weight-
              gradient dots of the same block run while it is in flight        2 x bf16[B/dp,S,d]
  DP (dp > 1, no --fsdp), over the data groups:
    all-reduce-start/-done of every parameter gradient (9: 7 matrices, 2 norms),
    issued when the gradient is computed, waited on before its Adam update
  FSDP (dp > 1, --fsdp), over the data groups:
    all-gather-start/-done of each of the 7 weight shards before its forward
    use and again before its backward use, a reduce-scatter (async-start/
    -done) of each of the 7 weight gradients onto the local shard; the norm
    gradients (replicated norms) are all-reduced.
"""
import math

BF16, F32 = "bf16", "f32"


# The reduction computations every module uses: bf16 add (collectives), f32 add and max (reduces).
REGIONS = (
    "%add (x: bf16[], y: bf16[]) -> bf16[] {\n  %x = bf16[] parameter(0)\n  %y = bf16[] parameter(1)\n"
    "  ROOT %add.0 = bf16[] add(bf16[] %x, bf16[] %y)\n}\n\n"
    "%region_0.1 (Arg_0.2: f32[], Arg_1.3: f32[]) -> f32[] {\n  %Arg_0.2 = f32[] parameter(0)\n"
    "  %Arg_1.3 = f32[] parameter(1)\n  ROOT %add.4 = f32[] add(f32[] %Arg_0.2, f32[] %Arg_1.3)\n}\n\n"
    "%region_1.5 (Arg_0.6: f32[], Arg_1.7: f32[]) -> f32[] {\n  %Arg_0.6 = f32[] parameter(0)\n"
    "  %Arg_1.7 = f32[] parameter(1)\n  ROOT %maximum.8 = f32[] maximum(f32[] %Arg_0.6, f32[] %Arg_1.7)\n}\n")
REGION_COUNTERS = {"add": 5, "maximum": 9}  # names REGIONS takes, for Module.fresh


def shape_text(shape, layout=True):
    """bf16[2,3]{1,0}; a tuple (list of shapes) prints as (a, b)."""
    if isinstance(shape, list):
        return "(" + ", ".join(shape_text(s, layout) for s in shape) + ")"
    dtype, dims = shape
    text = f"{dtype}[{','.join(str(d) for d in dims)}]"
    if layout and dims:
        text += "{" + ",".join(str(k) for k in range(len(dims) - 1, -1, -1)) + "}"
    return text


def layout_list(shapes):
    """Shapes as entry_computation_layout and signatures list them (/*index=5*/ every fifth)."""
    return ", ".join(("/*index=%d*/" % i if i and i % 5 == 0 else "") + s for i, s in enumerate(shapes))


class Val:
    def __init__(self, name, shape):
        self.name, self.shape = name, shape

    @property
    def dtype(self):
        return self.shape[0]

    @property
    def dims(self):
        return self.shape[1]

    def typed(self):
        return f"{shape_text(self.shape)} %{self.name}"


class Comp:
    """One HLO computation: parameters, instructions in order, helpers for the
    elementwise vocabulary. Names are unique in the module (one counter)."""

    def __init__(self, mod, name):
        self.mod, self.name, self.params, self.lines = mod, name, [], []

    def param(self, shape, name=None, attrs=""):
        index = len(self.params)
        name = name or self.mod.fresh(f"param_{index}")
        v = Val(name, shape)
        self.params.append(v)
        self.lines.append(f"  %{name} = {shape_text(shape)} parameter({index}){attrs}")
        return v

    def op(self, opcode, shape, operands, attrs="", name=None):
        name = name or self.mod.fresh(opcode)
        args = ", ".join(o.typed() for o in operands)
        self.lines.append(f"  %{name} = {shape_text(shape)} {opcode}({args}){', ' + attrs if attrs else ''}")
        return Val(name, shape)

    # elementwise helpers: the result takes the first operand's shape
    def un(self, opcode, a):
        return self.op(opcode, a.shape, [a])

    def bin(self, opcode, a, b):
        return self.op(opcode, a.shape, [a, b])

    def mul(self, a, b):
        return self.bin("multiply", a, b)

    def add(self, a, b):
        return self.bin("add", a, b)

    def sub(self, a, b):
        return self.bin("subtract", a, b)

    def convert(self, a, dtype):
        return self.op("convert", (dtype, a.dims), [a])

    def bcast(self, a, dims, mapping):
        return self.op("broadcast", (a.dtype, dims), [a], f"dimensions={{{','.join(str(d) for d in mapping)}}}")

    def const(self, value, dtype, dims):
        """A scalar constant, broadcast to dims unless dims is empty (XLA's splat idiom)."""
        name = self.mod.fresh("constant")
        self.lines.append(f"  %{name} = {dtype}[] constant({value})")
        scalar = Val(name, (dtype, ()))
        return self.bcast(scalar, dims, []) if dims else scalar

    def reduce(self, a, dims, region, out_dtype=F32, init="0"):
        init_v = self.const(init, out_dtype, ())
        keep = tuple(d for i, d in enumerate(a.dims) if i not in dims)
        return self.op("reduce", (out_dtype, keep), [a, init_v],
                       f"dimensions={{{','.join(str(d) for d in dims)}}}, to_apply=%{region}")

    def text(self, root, entry=False):
        lines = list(self.lines)
        root_at = next(i for i, l in enumerate(lines) if l.startswith(f"  %{root.name} = "))
        lines[root_at] = "  ROOT " + lines[root_at][2:]
        sig = ", ".join(f"{p.name}: {shape_text(p.shape, layout=False)}" for p in self.params)
        head = ("ENTRY " if entry else "") + f"%{self.name} ({sig}) -> {shape_text(root.shape, layout=False)} {{"
        return head + "\n" + "\n".join(lines) + "\n}\n"


class Module:
    def __init__(self):
        self.counters = {}
        self.comps = []  # (comment, text) of the non-entry computations, in order
        self.channel = 0

    def fresh(self, base):
        """base.N, N counting per base over the whole module (XLA's unique names)."""
        n = self.counters.get(base, 0)
        self.counters[base] = n + 1
        return f"{base}.{n}"

    def next_channel(self):
        self.channel += 1
        return self.channel

    def fusion(self, entry, kind, base, operands, body, comment):
        """Emits a fused computation (params = operands' shapes) and the entry's
        fusion instruction; body(c, params) returns the root Val."""
        c = Comp(self, self.fresh("fused_computation"))
        params = [c.param(o.shape) for o in operands]
        root = body(c, params)
        self.comps.append((comment, c.text(root)))
        return entry.op("fusion", root.shape, operands, f"kind={kind}, calls=%{c.name}", name=self.fresh(base))



def dot(e, a, b, dims, lhs_c, rhs_c, lhs_b=(), rhs_b=(), dtype=BF16, name=None):
    attrs = []
    if lhs_b:
        attrs.append(f"lhs_batch_dims={{{','.join(map(str, lhs_b))}}}")
    attrs.append(f"lhs_contracting_dims={{{','.join(map(str, lhs_c))}}}")
    if rhs_b:
        attrs.append(f"rhs_batch_dims={{{','.join(map(str, rhs_b))}}}")
    attrs.append(f"rhs_contracting_dims={{{','.join(map(str, rhs_c))}}}")
    return e.op("dot", (dtype, tuple(dims)), [a, b], ", ".join(attrs), name=name)


def build(a, fmt_float):
    """Returns the module text (without the // header) and a summary dict."""
    dp, tp = a.dp, a.tp
    fsdp = a.fsdp and dp > 1
    n = dp * tp
    B, S, D = a.batch // dp, a.seq, a.d_model
    HL, HD = a.heads // tp, a.head_dim
    HALF, QKV, F = HD // 2, HL * HD, a.mlp // tp
    inv_d = fmt_float(1.0 / D)
    scale = fmt_float(1.0 / math.sqrt(HD), 9)
    tp_groups = "{" + ",".join("{" + ",".join(str(d * tp + m) for m in range(tp)) + "}" for d in range(dp)) + "}"
    dp_groups = "{" + ",".join("{" + ",".join(str(d * tp + m) for d in range(dp)) + "}" for m in range(tp)) + "}"
    if dp == 1:
        act = "{replicated}"
        col = f"{{devices=[1,{tp}]<=[{n}]}}"
        row = f"{{devices=[{tp},1]<=[{n}]}}"
    else:
        act = f"{{devices=[{dp},1,1,{tp}]<=[{n}] last_tile_dim_replicate}}"
        col = f"{{devices=[1,{tp},{dp}]<=[{dp},{tp}]T(1,0) last_tile_dim_replicate}}"
        row = f"{{devices=[{tp},1,{dp}]<=[{dp},{tp}]T(1,0) last_tile_dim_replicate}}"
    if fsdp:  # P('data', 'model') / P('model', 'data')
        col = f"{{devices=[{dp},{tp}]<=[{n}]}}"
        row = f"{{devices=[{tp},{dp}]<=[{dp},{tp}]T(1,0)}}"
    repl = "{replicated}"

    m = Module()
    bf = lambda *d: (BF16, tuple(d))  # noqa: E731
    f32 = lambda *d: (F32, tuple(d))  # noqa: E731
    act3 = bf(B, S, D)

    regions = REGIONS
    m.counters.update(REGION_COUNTERS)  # keep the regions' names unique

    e = Comp(m, "main")
    # --- parameters: x, dy, the 9 weights (local shards), RoPE tables, Adam m and v ---
    x = e.param(act3, "x.1", f", sharding={act}")
    dy = e.param(act3, "dy.2", f", sharding={act}")
    # name, full local [rows, cols] (after the model split), kind
    weights = [("attn_norm", (D,), "norm"), ("wq", (D, QKV), "col"), ("wk", (D, QKV), "col"),
               ("wv", (D, QKV), "col"), ("wo", (QKV, D), "row"), ("mlp_norm", (D,), "norm"),
               ("w_gate", (D, F), "col"), ("w_up", (D, F), "col"), ("w_down", (F, D), "row")]

    def shard_dims(dims, kind):
        if not fsdp or kind == "norm":
            return dims
        return (dims[0] // dp, dims[1]) if kind == "col" else (dims[0], dims[1] // dp)

    sharding_of = {"norm": repl, "col": col, "row": row}
    W = {}
    for i, (name, dims, kind) in enumerate(weights):
        W[name] = e.param(bf(*shard_dims(dims, kind)), f"{name}.{i + 3}", f", sharding={sharding_of[kind]}")
    cos = e.param(bf(S, HD), "rope_cos.12", f", sharding={repl}")
    sin = e.param(bf(S, HD), "rope_sin.13", f", sharding={repl}")
    MOM = {}
    for moment, base in (("m", 14), ("v", 23)):
        for i, (name, dims, kind) in enumerate(weights):
            MOM[(moment, name)] = e.param(f32(*shard_dims(dims, kind)), f"adam_{moment}_{name}.{base + i}",
                                          f", sharding={sharding_of[kind]}")
    kinds = {name: kind for name, _, kind in weights}
    full_dims = {name: dims for name, dims, _ in weights}

    collectives = []  # (kind, bytes per device, group) for the header and tests

    def nbytes(shape):
        return (2 if shape[0] == BF16 else 4) * math.prod(shape[1])

    # --- collective helpers ---
    def all_gather(name):
        """FSDP: all-gather-start of a weight shard over the data groups; returns the start."""
        w = W[name]
        dim = 0 if kinds[name] == "col" else 1
        full = bf(*full_dims[name])
        collectives.append(("all-gather", nbytes(full), "data"))
        return e.op("all-gather-start", [w.shape, full], [w],
                    f"channel_id={m.next_channel()}, replica_groups={dp_groups}, dimensions={{{dim}}}, "
                    "use_global_device_ids=true")

    def ag_done(start):
        return e.op("all-gather-done", start.shape[1], [start])

    def all_reduce(v, groups, which):
        collectives.append(("all-reduce", nbytes(v.shape), which))
        return e.op("all-reduce", v.shape, [v], f"channel_id={m.next_channel()}, replica_groups={groups}, "
                    "use_global_device_ids=true, to_apply=%add")

    def ar_start(v, groups, which):
        collectives.append(("all-reduce", nbytes(v.shape), which))
        return e.op("all-reduce-start", v.shape, [v], f"channel_id={m.next_channel()}, replica_groups={groups}, "
                    "use_global_device_ids=true, to_apply=%add")

    def ar_done(start):
        return e.op("all-reduce-done", start.shape, [start])

    def rs_start(v, name):
        """FSDP: reduce-scatter of a weight gradient onto the local shard (async-start)."""
        dim = 0 if kinds[name] == "col" else 1
        out = bf(*shard_dims(full_dims[name], kinds[name]))
        collectives.append(("reduce-scatter", nbytes(v.shape), "data"))
        c = Comp(m, m.fresh("async_computation"))
        p = c.param(v.shape)
        root = c.op("reduce-scatter", out, [p], f"channel_id={m.next_channel()}, replica_groups={dp_groups}, "
                    f"use_global_device_ids=true, dimensions={{{dim}}}, to_apply=%add")
        m.comps.append((f"Reduce-scatter of the {name} gradient over the data groups (async).", c.text(root)))
        start = e.op("async-start", [[v.shape], out], [v], f"calls=%{c.name}")
        start.calls = c.name
        return start

    def rs_done(start):
        return e.op("async-done", start.shape[1], [start], f"calls=%{start.calls}")

    # --- fused computations used forward and backward ---
    def rms_sumsq(c, p):
        xf = c.convert(p[0], F32)
        return c.reduce(c.mul(xf, xf), (2,), "region_0.1")

    def rsqrt_b(c, ss):
        """rsqrt(mean(x^2) + eps) broadcast over d_model."""
        mean = c.mul(ss, c.const(inv_d, F32, ss.dims))
        r = c.un("rsqrt", c.add(mean, c.const("1e-05", F32, ss.dims)))
        return c.bcast(r, (B, S, D), (0, 1))

    def rms_norm(c, p):
        xf = c.convert(p[0], F32)
        nb = c.convert(c.mul(xf, rsqrt_b(c, p[1])), BF16)
        return c.mul(nb, c.bcast(p[2], (B, S, D), (2,)))

    def rope(c, p):
        q = c.op("reshape", bf(B, S, HL, HD), [p[0]])
        cb = c.bcast(p[1], (B, S, HL, HD), (1, 3))
        hi = c.op("slice", bf(B, S, HL, HALF), [q], f"slice={{[0:{B}], [0:{S}], [0:{HL}], [{HALF}:{HD}]}}")
        lo = c.op("slice", bf(B, S, HL, HALF), [q], f"slice={{[0:{B}], [0:{S}], [0:{HL}], [0:{HALF}]}}")
        rot = c.op("concatenate", bf(B, S, HL, HD), [c.un("negate", hi), lo], "dimensions={3}")
        sb = c.bcast(p[2], (B, S, HL, HD), (1, 3))
        return c.add(c.mul(q, cb), c.mul(rot, sb))

    def masked_scores(c, s):
        sh = s.dims
        i2 = c.op("iota", ("s32", sh), [], "iota_dimension=2")
        i3 = c.op("iota", ("s32", sh), [], "iota_dimension=3")
        mask = c.op("compare", ("pred", sh), [i2, i3], "direction=GE")
        sc = c.mul(c.convert(s, F32), c.const(scale, F32, sh))
        return c.op("select", (F32, sh), [mask, sc, c.const("-inf", F32, sh)])

    def softmax_max(c, p):
        return c.reduce(masked_scores(c, p[0]), (3,), "region_1.5", init="-inf")

    def softmax_exp(c, p):
        sel = masked_scores(c, p[0])
        return c.un("exponential", c.sub(sel, c.bcast(p[1], sel.dims, (0, 1, 2))))

    def softmax_sum(c, p):
        return c.reduce(softmax_exp(c, p), (3,), "region_0.1")

    def softmax_probs(c, p):
        ex = softmax_exp(c, p)
        return c.convert(c.op("divide", ex.shape, [ex, c.bcast(p[2], ex.dims, (0, 1, 2))]), BF16)

    def residual(c, p):
        return c.add(p[0], p[1])

    # ================= forward =================
    ag_fwd = {}
    if fsdp:  # every weight's gather is issued up front, in use order; its -done sits before its use
        for name in ("wq", "wk", "wv", "wo", "w_gate", "w_up", "w_down"):
            ag_fwd[name] = all_gather(name)

    def fwd_weight(name):
        return ag_done(ag_fwd[name]) if fsdp else W[name]

    ss1 = m.fusion(e, "kInput", "input_reduce_fusion", [x], rms_sumsq,
                   "RMSNorm #1, pass 1: sum of squares over d_model (f32).")
    xn = m.fusion(e, "kLoop", "loop_multiply_fusion", [x, ss1, W["attn_norm"]], rms_norm,
                  "RMSNorm #1, pass 2: x * rsqrt(mean(x^2) + eps) * weight (bf16). Kept for backward.")
    wq, wk, wv = fwd_weight("wq"), fwd_weight("wk"), fwd_weight("wv")
    q = dot(e, xn, wq, (B, S, QKV), (2,), (0,))
    k = dot(e, xn, wk, (B, S, QKV), (2,), (0,))
    v = dot(e, xn, wv, (B, S, QKV), (2,), (0,))
    qr = m.fusion(e, "kLoop", "loop_add_fusion", [q, cos, sin], rope, "RoPE (rotate-half) on Q. Kept for backward.")
    kr = m.fusion(e, "kLoop", "loop_add_fusion", [k, cos, sin], rope, "RoPE on K. Kept for backward.")
    s = dot(e, qr, kr, (B, HL, S, S), (3,), (3,), (0, 2), (0, 2))
    smax = m.fusion(e, "kInput", "input_reduce_fusion", [s], softmax_max,
                    "Softmax pass 1: row max of the scaled, causally masked scores (f32).")
    ssum = m.fusion(e, "kInput", "input_reduce_fusion", [s, smax], softmax_sum,
                    "Softmax pass 2: row sum of exp(s - max) (f32).")
    p = m.fusion(e, "kLoop", "loop_convert_fusion", [s, smax, ssum], softmax_probs,
                 "Softmax pass 3: probabilities (bf16). Kept for backward.")
    v4 = e.op("bitcast", bf(B, S, HL, HD), [v])
    o = dot(e, p, v4, (B, HL, S, HD), (3,), (1,), (0, 1), (0, 2))
    wo = fwd_weight("wo")
    wo3 = e.op("bitcast", bf(HL, HD, D), [wo])
    attn = dot(e, o, wo3, (B, S, D), (1, 3), (0, 1))
    if tp > 1:
        attn = all_reduce(attn, tp_groups, "model")
    h = m.fusion(e, "kLoop", "loop_add_fusion", [attn, x], residual, "Residual add after attention.")
    ss2 = m.fusion(e, "kInput", "input_reduce_fusion", [h], rms_sumsq, "RMSNorm #2, pass 1.")
    hn = m.fusion(e, "kLoop", "loop_multiply_fusion", [h, ss2, W["mlp_norm"]], rms_norm,
                  "RMSNorm #2, pass 2. Kept for backward.")
    wg, wu = fwd_weight("w_gate"), fwd_weight("w_up")
    g = dot(e, hn, wg, (B, S, F), (2,), (0,))
    up = dot(e, hn, wu, (B, S, F), (2,), (0,))

    def swiglu(c, p):
        gf = c.convert(p[0], F32)
        silu = c.mul(gf, c.un("logistic", gf))
        return c.convert(c.mul(c.convert(p[1], F32), silu), BF16)

    u = m.fusion(e, "kLoop", "loop_multiply_fusion", [g, up], swiglu,
                 "SwiGLU: up * silu(gate). The gate and up projections stay plain dots: backward needs both.")
    wd = fwd_weight("w_down")
    mlp = dot(e, u, wd, (B, S, D), (2,), (0,))
    if tp > 1:
        mlp = all_reduce(mlp, tp_groups, "model")
    y = m.fusion(e, "kLoop", "loop_add_fusion", [mlp, h], residual, "Residual add after the MLP: the layer output.")

    # ================= backward =================
    ag_bwd = {}
    if fsdp:  # ZeRO-3: the gathered weights are not kept; gather again, in backward use order
        for name in ("w_down", "w_gate", "w_up", "wo", "wq", "wk", "wv"):
            ag_bwd[name] = all_gather(name)

    def bwd_weight(name):
        return ag_done(ag_bwd[name]) if fsdp else W[name]

    grads = {}      # name -> gradient value of the full local weight (before the data reduction)
    pending = []    # (name, start) data-axis reductions in flight

    def reduce_over_data(names):
        for name in names:
            gval = grads[name]
            if dp == 1:
                continue
            if fsdp and kinds[name] != "norm":
                pending.append((name, rs_start(gval, name)))
            else:
                pending.append((name, ar_start(gval, dp_groups, "data")))

    def rms_bwd_dot(c, dhn, hv, ss, w):
        """(d_norm_out * w) and the normalized input n = h * rsqrt(...), both f32 [B,S,D]."""
        n_ = c.mul(c.convert(hv, F32), rsqrt_b(c, ss))
        dn = c.mul(c.convert(dhn, F32), c.convert(c.bcast(w, (B, S, D), (2,)), F32))
        return dn, n_

    def rms_bwd_reduce(c, p):  # p: dhn, h, ss, w
        dn, n_ = rms_bwd_dot(c, p[0], p[1], p[2], p[3])
        return c.reduce(c.mul(dn, n_), (2,), "region_0.1")

    def rms_bwd_input(c, p):  # p: d_residual, dhn, h, ss, c, w
        dn, n_ = rms_bwd_dot(c, p[1], p[2], p[3], p[5])
        mean = c.bcast(c.mul(p[4], c.const(inv_d, F32, (B, S))), (B, S, D), (0, 1))
        dx_ = c.mul(rsqrt_b(c, p[3]), c.sub(dn, c.mul(n_, mean)))
        return c.add(p[0], c.convert(dx_, BF16))

    def rms_bwd_weight(c, p):  # p: dhn, h, ss
        n_ = c.mul(c.convert(p[1], F32), rsqrt_b(c, p[2]))
        return c.convert(c.reduce(c.mul(c.convert(p[0], F32), n_), (0, 1), "region_0.1"), BF16)

    def norm_backward(d_res, dhn, hv, ss, wname, label):
        cs = m.fusion(e, "kInput", "input_reduce_fusion", [dhn, hv, ss, W[wname]], rms_bwd_reduce,
                      f"{label} backward, pass 1: sum over d_model of (dy * w) * n (f32).")
        dxv = m.fusion(e, "kLoop", "loop_add_fusion", [d_res, dhn, hv, ss, cs, W[wname]], rms_bwd_input,
                       f"{label} backward, pass 2: d_residual + rsqrt * (dy * w - n * mean(dy * w * n)).")
        grads[wname] = m.fusion(e, "kInput", "input_reduce_fusion", [dhn, hv, ss], rms_bwd_weight,
                                f"{label} weight gradient: sum over batch and sequence of dy * n.")
        return dxv

    # MLP block
    grads["w_down"] = dot(e, u, dy, (F, D), (0, 1), (0, 1))
    wd_b = bwd_weight("w_down")
    du = dot(e, dy, wd_b, (B, S, F), (2,), (1,))

    def swiglu_bwd(c, p):  # p: du, g, up -> (d_gate, d_up)
        duf, gf, upf = c.convert(p[0], F32), c.convert(p[1], F32), c.convert(p[2], F32)
        sg = c.un("logistic", gf)
        d_up = c.convert(c.mul(duf, c.mul(gf, sg)), BF16)
        one = c.const("1", F32, (B, S, F))
        dsilu = c.mul(sg, c.add(one, c.mul(gf, c.sub(one, sg))))
        d_gate = c.convert(c.mul(c.mul(duf, upf), dsilu), BF16)
        return c.op("tuple", [d_gate.shape, d_up.shape], [d_gate, d_up])

    dgu = m.fusion(e, "kLoop", "loop_multiply_fusion", [du, g, up], swiglu_bwd,
                   "SwiGLU backward (multi-output): d_gate = du*up*silu'(g), d_up = du*silu(g).")
    d_gate = e.op("get-tuple-element", bf(B, S, F), [dgu], "index=0")
    d_up = e.op("get-tuple-element", bf(B, S, F), [dgu], "index=1")
    wg_b, wu_b = bwd_weight("w_gate"), bwd_weight("w_up")
    dhn_g = dot(e, d_gate, wg_b, (B, S, D), (2,), (1,))

    def dot_add(c, p):
        return c.add(dot(c, p[0], p[1], (B, S, D), (2,), (1,)), p[2])

    dhn = m.fusion(e, "kOutput", "dot_add_fusion", [d_up, wu_b, dhn_g], dot_add,
                   "d_up . Wup^T + d_gate . Wgate^T: the partial input gradient of the column-parallel MLP dots.")
    dhn_ar = ar_start(dhn, tp_groups, "model") if tp > 1 else None
    grads["w_gate"] = dot(e, hn, d_gate, (D, F), (0, 1), (0, 1))
    grads["w_up"] = dot(e, hn, d_up, (D, F), (0, 1), (0, 1))
    if dhn_ar is not None:
        dhn = ar_done(dhn_ar)
    dh = norm_backward(dy, dhn, h, ss2, "mlp_norm", "RMSNorm #2")
    reduce_over_data(("w_down", "w_gate", "w_up", "mlp_norm"))

    # attention block
    grads["wo"] = e.op("bitcast", bf(QKV, D), [dot(e, o, dh, (HL, HD, D), (0, 2), (0, 1))])
    wo_b = bwd_weight("wo")
    do = dot(e, dh, e.op("bitcast", bf(HL, HD, D), [wo_b]), (B, S, HL, HD), (2,), (2,))
    dpv = dot(e, do, v4, (B, HL, S, S), (3,), (3,), (0, 2), (0, 2))
    dv = dot(e, p, do, (B, HL, S, HD), (2,), (1,), (0, 1), (0, 2))

    def softmax_bwd_reduce(c, p):  # p: dP, P -> sum_k dP * P
        return c.reduce(c.mul(c.convert(p[0], F32), c.convert(p[1], F32)), (3,), "region_0.1")

    def softmax_bwd(c, p):  # p: dP, P, r -> scale * P * (dP - r)
        pf = c.convert(p[1], F32)
        d = c.sub(c.convert(p[0], F32), c.bcast(p[2], (B, HL, S, S), (0, 1, 2)))
        return c.convert(c.mul(c.mul(pf, d), c.const(scale, F32, (B, HL, S, S))), BF16)

    rsum = m.fusion(e, "kInput", "input_reduce_fusion", [dpv, p], softmax_bwd_reduce,
                    "Softmax backward, pass 1: row sum of dP * P (f32).")
    ds = m.fusion(e, "kLoop", "loop_convert_fusion", [dpv, p, rsum], softmax_bwd,
                  "Softmax backward, pass 2: dS = scale * P * (dP - rowsum) (masked entries have P = 0).")
    dqr = dot(e, ds, kr, (B, HL, S, HD), (3,), (1,), (0, 1), (0, 2))
    dkr = dot(e, ds, qr, (B, HL, S, HD), (2,), (1,), (0, 1), (0, 2))

    def rope_bwd(c, p):  # adjoint of q*cos + rot(q)*sin: dy*cos + concat(z[half:], -z[:half]), z = dy*sin
        sh = (B, HL, S, HD)
        z = c.mul(p[0], c.bcast(p[2], sh, (2, 3)))
        hi = c.op("slice", bf(B, HL, S, HALF), [z], f"slice={{[0:{B}], [0:{HL}], [0:{S}], [{HALF}:{HD}]}}")
        lo = c.op("slice", bf(B, HL, S, HALF), [z], f"slice={{[0:{B}], [0:{HL}], [0:{S}], [0:{HALF}]}}")
        rot = c.op("concatenate", bf(*sh), [hi, c.un("negate", lo)], "dimensions={3}")
        return c.add(c.mul(p[0], c.bcast(p[1], sh, (2, 3))), rot)

    dq = m.fusion(e, "kLoop", "loop_add_fusion", [dqr, cos, sin], rope_bwd, "RoPE backward on dQ.")
    dk = m.fusion(e, "kLoop", "loop_add_fusion", [dkr, cos, sin], rope_bwd, "RoPE backward on dK.")
    wq_b, wk_b, wv_b = bwd_weight("wq"), bwd_weight("wk"), bwd_weight("wv")
    w3 = {name: e.op("bitcast", bf(D, HL, HD), [wval]) for name, wval in (("wq", wq_b), ("wk", wk_b), ("wv", wv_b))}
    dxn = dot(e, dq, w3["wq"], (B, S, D), (1, 3), (1, 2))

    def dot_add_heads(c, p):
        return c.add(dot(c, p[0], p[1], (B, S, D), (1, 3), (1, 2)), p[2])

    dxn = m.fusion(e, "kOutput", "dot_add_fusion", [dk, w3["wk"], dxn], dot_add_heads,
                   "dK . Wk^T + (dQ . Wq^T).")
    dxn = m.fusion(e, "kOutput", "dot_add_fusion", [dv, w3["wv"], dxn], dot_add_heads,
                   "dV . Wv^T + ...: the partial input gradient of the column-parallel Q/K/V dots.")
    dxn_ar = ar_start(dxn, tp_groups, "model") if tp > 1 else None
    for name, dval in (("wq", dq), ("wk", dk), ("wv", dv)):
        grads[name] = e.op("bitcast", bf(D, QKV), [dot(e, xn, dval, (D, HL, HD), (0, 1), (0, 2))])
    if dxn_ar is not None:
        dxn = ar_done(dxn_ar)
    dx = norm_backward(dh, dxn, x, ss1, "attn_norm", "RMSNorm #1")
    reduce_over_data(("wo", "wq", "wk", "wv", "attn_norm"))

    # ================= Adam update of the local shards =================
    def adam(c, p):  # p: w (bf16), g (bf16), m, v (f32) -> (w', m', v')
        sh = p[2].dims
        gf = c.convert(p[1], F32)
        m2 = c.add(c.mul(p[2], c.const("0.9", F32, sh)), c.mul(gf, c.const("0.1", F32, sh)))
        v2 = c.add(c.mul(p[3], c.const("0.999", F32, sh)), c.mul(c.mul(gf, gf), c.const("0.001", F32, sh)))
        upd = c.op("divide", m2.shape, [m2, c.add(c.un("sqrt", v2), c.const("1e-08", F32, sh))])
        w2 = c.convert(c.sub(c.convert(p[0], F32), c.mul(upd, c.const("0.0001", F32, sh))), BF16)
        return c.op("tuple", [w2.shape, m2.shape, v2.shape], [w2, m2, v2])

    # Each reduction is waited on right before its parameter's update (MLP first: its
    # gradients are ready first), so the later ones overlap the earlier updates.
    new = {}
    reduced = dict(pending)
    order = [name for name, _ in pending] if pending else [w for w, _, _ in weights]
    for name in order:
        start = reduced.get(name)
        gval = grads[name] if start is None else rs_done(start) if isinstance(start.shape, list) else ar_done(start)
        # The fused computation is the same for every parameter: one comment, on the first.
        comment = None if new else ("Adam (b1 0.9, b2 0.999, eps 1e-8, lr 1e-4 with the bias corrections folded "
                                    "in) on the local shard (multi-output: w', m', v').")
        f = m.fusion(e, "kLoop", "loop_multiply_fusion",
                     [W[name], gval, MOM[("m", name)], MOM[("v", name)]], adam, comment)
        new[name] = [e.op("get-tuple-element", s, [f], f"index={i}") for i, s in
                     enumerate((W[name].shape, MOM[("m", name)].shape, MOM[("v", name)].shape))]
    outs = [y, dx] + [new[w][0] for w, _, _ in weights] + [new[w][1] for w, _, _ in weights] + \
        [new[w][2] for w, _, _ in weights]
    out_shardings = [act, act] + [sharding_of[k] for _, _, k in weights] * 3
    root = e.op("tuple", [o.shape for o in outs], outs,
                "sharding={" + ", ".join(out_shardings) + "}")

    comps = [(f"// {comment}\n" if comment else "") + text for comment, text in m.comps]

    params = [shape_text(pv.shape) for pv in e.params]
    result = shape_text([o.shape for o in outs])
    aliases = ", ".join(f"{{{2 + i}}}: ({2 + i}, {{}}, may-alias)" for i in range(9)) + ", " + \
        ", ".join(f"{{{11 + i}}}: ({13 + i}, {{}}, may-alias)" for i in range(18))
    head = (f"HloModule jit_transformer_layer_train, is_scheduled=true, input_output_alias={{ {aliases} }}, "
            f"entry_computation_layout={{({layout_list(params)})->({layout_list(result[1:-1].split(', '))})}}, "
            f"num_partitions={n}\n\n")
    body = head + regions + "\n" + "\n".join(comps) + "\n" + e.text(root, entry=True)
    summary = {"collectives": collectives, "B": B, "HL": HL, "F": F, "QKV": QKV,
               "tp_groups": tp_groups, "dp_groups": dp_groups, "fsdp": fsdp}
    return body, summary
