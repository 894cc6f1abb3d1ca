"""The HLO module of one whole MaxText training step, per device, as XLA's SPMD
partitioner leaves it for MaxText's FSDP x tensor (x DCN data) sharding
(Python 3 standard library only; used by maxtext_step.py --emit). See
workloads/README.md, "MaxText steps".

What one step does (MaxText decoder, scan_layers=True, use_iota_embed=True,
logits_via_embedding=True, remat_policy=full or minimal, attention=flash):

  embedding   one-hot(tokens) . table (the iota embedding), tied with the logits
  forward     while loop over the layers (the scan): per layer the weights'
              local shards are sliced out of the stacked [layers, ...]
              parameters, cast to bf16 and all-gathered over 'fsdp', the layer
              runs (RMSNorm, Q/K/V, RoPE, flash attention, output projection,
              residual, RMSNorm, MLP, residual); full remat saves only the
              layer's input, minimal remat also the projections' outputs
  loss        final RMSNorm, logits = x . table^T, softmax cross entropy
              and its gradient
  backward    while loop over the layers in reverse: the layer's forward is
              recomputed from what was saved, then its backward
              runs (flash-attention backward); each weight gradient is
              reduce-scattered over 'fsdp' onto the local shard (and, with
              several slices, all-reduced over the DCN 'data' axis) and stored
              in the stacked gradients
  optimizer   AdamW on every local shard (f32 weights and moments)

Mesh: device id = slice * fsdp * tensor + f * tensor + t ('tensor' fastest). With context
parallelism the fsdp index is itself fsdp x context ('context' the faster): a device holds
S/context tokens of each sequence, gathers the keys and values over 'context' for attention
(written as one unmasked flash kernel over half the sequence: the causal work's even share)
and reduce-scatters their gradients back.
Per-device batch: MaxText's per_device_batch x tensor (the batch is split over
'fsdp' and the DCN 'data' axis, not over 'tensor'). With tensor > 1 the
activations between blocks keep their embed dimension split over 'tensor'
(MaxText's activation_embed rule): each block all-gathers its normalized input
over 'tensor' before the column-parallel dots and reduce-scatters the
row-parallel dot's partial sums back; the RMSNorm sums of squares are
all-reduced over 'tensor'. In a layer's backward the weight gradients (which
nothing after them reads) run between those collectives' starts and dones, and
dy's gather under the recomputation, as XLA's latency-hiding scheduler places
independent work (Step.tp_window).

Flash attention is the fused-attention custom call tpusim compiles as a TPU
flash-attention program (Transformer Engine's te_fused_attn_forward_ffi /
te_fused_attn_backward_ffi form, causal mask_type 2; docs/lowering.md,
"Attention kernels"): MaxText's Pallas splash-attention kernel is an opaque
Mosaic call in a real TPU dump.

Approximations (named so a reader can weigh them): the one-hot of the tokens is
materialized once (XLA fuses it into the embedding dot); RoPE tables are
parameters (MaxText computes them from positions, a negligible cost); the
loss's and optimizer's scalar bookkeeping (learning-rate schedule, gradient
norm clipping) is left out; weights are gathered in bf16 and gradients
reduce-scattered in bf16.
"""
import math

from spmd_train_step import BF16, F32, REGION_COUNTERS, REGIONS, Comp, Module, dot

S32, PRED = "s32", "pred"
F8E4, F8E5 = "f8e4m3fn", "f8e5m2"
# The largest finite value of each fp8 format: the quantizer scales a channel's absmax onto it and clips.
F8_MAX = {F8E4: 448.0, F8E5: 57344.0}
PRECISIONS = ("bf16", "fp8_full")


def iota_groups(mesh, axis):
    """Iota replica groups of the devices that differ only along `axis` of `mesh`
    (a list of axis sizes, the last fastest): '[groups,size]<=[mesh]T(perm)'."""
    n = math.prod(mesh)
    size = mesh[axis]
    groups = n // size
    if axis == len(mesh) - 1:
        return f"[{groups},{size}]<=[{n}]"
    perm = [i for i in range(len(mesh)) if i != axis] + [axis]
    return f"[{groups},{size}]<=[{','.join(map(str, mesh))}]T({','.join(map(str, perm))})"


# MaxText's checkpoint names (jax.ad_checkpoint.checkpoint_name in its decoder layers) -> the values of
# this generator they name. Names whose saving changes nothing here: `context` (the attention output:
# the flash kernel's residuals, its log-sum-exp, are unnamed, so the kernel runs again anyway), `mlpwo`
# (the MLP output only makes the layer output, which the backward does not read), `qkv_proj` (the fused
# QKV projection of fused_qkv models; these decoders project Q, K and V separately).
CHECKPOINT_NAMES = {"decoder_layer_input": "x", "query_proj": "q_proj", "key_proj": "k_proj",
                    "value_proj": "v_proj", "out_proj": "attn", "mlpwi_0": "g", "mlpwi_1": "up", "mlpwi": "pre"}
IGNORED_NAMES = ("context", "mlpwo", "qkv_proj")
_QKV = ("query_proj", "key_proj", "value_proj")
_DOTS = _QKV + ("out_proj", "mlpwi_0", "mlpwi_1", "mlpwi")
# MaxText's named remat policies (decoders.py get_remat_policy): checkpoint name -> where it is kept.
# `full` keeps only the layer input (the scan's carry). `minimal` is jax.checkpoint_dots_with_no_batch_dims.
REMAT_POLICIES = {
    "full": {},
    "minimal": {n: "device" for n in _DOTS},
    "save_qkv_proj": {n: "device" for n in _QKV},
    "save_out_proj": {"out_proj": "device"},
    "save_dot_except_mlp": {n: "device" for n in _QKV + ("out_proj",)},
    "save_dot_except_mlpwi": {n: "device" for n in _QKV + ("out_proj",)},
    "qkv_proj_offloaded": {n: "offload" for n in _QKV},
    "minimal_offloaded": {n: "offload" for n in _DOTS},
}


def remat_plan(policy, custom=None):
    """{generator value: 'device'|'offload'} the forward saves for the backward under a MaxText remat
    policy; `custom` is the `custom` policy's {checkpoint name: 'device'|'offload'|'remat'}. The layer
    input is always kept (on the device unless offloaded)."""
    if policy == "custom":
        names = dict(custom or {})
    elif policy in REMAT_POLICIES:
        names = dict(REMAT_POLICIES[policy])
    else:
        raise ValueError(f"remat policy '{policy}': one of {', '.join(sorted(REMAT_POLICIES))} or custom")
    plan = {"x": "device"}
    for name, where in names.items():
        if where not in ("device", "offload", "remat"):
            raise ValueError(f"remat {name}={where}: device, offload or remat")
        if name in IGNORED_NAMES or where == "remat":
            continue
        if name not in CHECKPOINT_NAMES:
            raise ValueError(f"remat: unknown checkpoint name '{name}'")
        plan[CHECKPOINT_NAMES[name]] = where
    return plan


class Config:
    """Dimensions and mesh of one step. remat: a MaxText policy name, or (policy, custom names)."""

    def __init__(self, dims, per_device_batch, seq, fsdp, tensor, slices=1, remat="full", precision="bf16",
                 context=1):
        policy, custom = (remat, None) if isinstance(remat, str) else remat
        if precision not in PRECISIONS:
            raise ValueError(f"precision {precision}: one of {', '.join(PRECISIONS)}")
        # fp8_full: MaxText's Qwix rule quantizes every dot_general of the decoder layers (module path
        # decoder/.*layers.*): weights and activations to e4m3, the backward's incoming gradients to e5m2
        self.fp8 = precision == "fp8_full"
        if self.fp8 and (tensor > 1 or slices > 1):
            raise ValueError("fp8_full with tensor parallelism or several slices is not generated (the "
                             "quantizers' absmax over a batch split across them)")
        self.remat = policy
        self.plan = remat_plan(policy, custom)
        self.tied = dims.get("tied", True)          # logits_via_embedding
        self.iota_embed = dims.get("iota_embed", True)  # use_iota_embed: one-hot dot, else a gather
        self.L, self.D, self.H, self.KV = dims["layers"], dims["emb"], dims["heads"], dims["kv_heads"]
        self.HD, self.F, self.V = dims["head_dim"], dims["mlp"], dims["vocab"]
        self.gated = dims["mlp_matrices"] == 3  # act(x.wi_0) * (x.wi_1); else act(x.wi)
        # gated: silu (LLaMA) or gelu (gemma3's GeGLU); one matrix: relu or gelu (tanh form)
        self.act = dims.get("activation", "silu" if self.gated else "relu")
        if self.act not in (("silu", "gelu") if self.gated else ("relu", "gelu")):
            raise ValueError(f"MLP activation '{self.act}': {'silu or gelu' if self.gated else 'relu or gelu'}")
        # Mixed attention (gemma3): the scan runs over blocks of len(pattern) layers, each layer 'global'
        # (causal over the sequence) or 'local' (causal over a sliding window of `window` tokens); MaxText
        # scans such a model's repeating block (Gemma3ScannableBlock), not each layer.
        self.pattern = tuple(dims.get("pattern", ("global",)))
        self.P = len(self.pattern)
        if self.L % self.P or any(k not in ("local", "global") for k in self.pattern):
            raise ValueError(f"attention pattern {self.pattern}: local/global layers that divide the {self.L} layers")
        self.blocks = self.L // self.P
        # gemma3's extra RMSNorms on the attention and MLP outputs before each residual add
        self.post_norms = dims.get("post_norms", False)
        self.use_rope = dims.get("rope", True)  # gpt3: learned positions, no RoPE
        # context parallelism (MaxText's ici_context_parallelism): each sequence is split over `context`
        # devices, which also take part in FSDP (the weights are sharded over fsdp x context)
        self.cp = context
        self.fsdp, self.tp, self.slices = fsdp * context, tensor, slices
        if context > 1 and seq % (2 * context):
            raise ValueError(f"seq {seq} is not divisible by 2 x context {context} (load-balanced chunks)")
        self.S_full, self.S = seq, seq // context
        batch = per_device_batch * tensor * context
        if abs(batch - round(batch)) > 1e-9 or round(batch) < 1:
            raise ValueError(f"per-device batch {per_device_batch} x tensor {tensor} x context {context} is not a "
                             "whole batch per device")
        self.B = int(round(batch))
        for name, total, parts in (("heads", self.H, tensor), ("kv_heads", self.KV, tensor), ("mlp", self.F, tensor),
                                   ("vocab", self.V, tensor), ("emb", self.D, self.fsdp * tensor)):
            if total % parts:
                raise ValueError(f"{name} {total} is not divisible by {parts}")
        if self.HD % 2:
            raise ValueError(f"head_dim {self.HD} must be even (RoPE rotates halves)")
        if not self.iota_embed and tensor > 1:
            raise ValueError("a gathered embedding (use_iota_embed=False) with tensor parallelism is not generated")
        # a policy's MLP names apply to the MLP there is: mlpwi_0/mlpwi_1 (gated) or mlpwi (one matrix)
        for name in ("pre",) if self.gated else ("g", "up"):
            self.plan.pop(name, None)
        self.HL, self.KVL, self.FL, self.VL = self.H // tensor, self.KV // tensor, self.F // tensor, self.V // tensor
        self.DT = self.D // tensor  # embed dimension of an activation between blocks
        mesh = [slices, fsdp * context, tensor]  # 'context' is faster than 'fsdp' in MaxText's device mesh
        self.devices = math.prod(mesh)
        self.tp_groups = iota_groups(mesh, 2)
        self.fsdp_groups = iota_groups(mesh, 1)  # fsdp x context: the weights' shards and the tokens
        self.dcn_groups = iota_groups(mesh, 0)
        self.cp_groups = iota_groups([slices, fsdp, context, tensor], 2)
        # With context parallelism each device's queries, two chunks of its sequence (MaxText's load
        # balancing: chunk i and 2*context-1-i), attend to the all-gathered keys and values under the
        # causal mask: on average to half the sequence. Its kernel is written as one unmasked flash
        # attention over half the gathered keys and values (kv_len): the same products per device.
        self.kv_len = self.S if context == 1 else seq // 2
        # A local layer's splash kernel: each query block computes its own (causal) key block and the one
        # before it, the blocks a window of up to one block size reaches (the gemma3 rows: window 1024,
        # sa_block_q = sa_block_kv = 1024); written as one unmasked flash kernel over 2 x window keys per
        # query: the same products and key/value reads per device.
        self.local_kv = None
        if "local" in self.pattern:
            window = dims.get("window")
            if not window or context > 1:
                raise ValueError("local attention layers need a window (and no context parallelism)")
            self.local_kv = min(self.S, 2 * int(window))
        # Mixture of experts (mixtral): MaxText's RoutedMoE with a capacity factor (the dropping
        # implementation, megablox and sparse_matmul off): each token's top-K experts by router logit, at most
        # C tokens of a sequence per expert (C = ceil(S x K / E) x capacity_factor), the tokens dispatched
        # to [E, B, C, D] and combined back by one-hot [B, S, E, C] masks (dense einsums).
        self.E = int(dims.get("experts", 1))
        if self.E > 1:
            self.K = int(dims["experts_per_token"])
            cf = float(dims.get("capacity_factor", 0))
            if cf <= 0:
                raise ValueError("a mixture of experts without a capacity factor (dropless, megablox or "
                                 "sparse_matmul) is not generated")
            if not self.gated or tensor > 1 or context > 1 or self.fp8:
                raise ValueError("a mixture of experts is generated with a gated MLP, FSDP only and bf16")
            if any(n in self.plan for n in ("g", "up", "pre")):
                raise ValueError("a remat policy that saves the experts' MLP projections is not generated")
            self.C = int(max(math.ceil(self.S * self.K / self.E) * cf, cf))

    def weights(self):
        """(name, full local [rows, cols] after the tensor split, split: 'col'|'row'|'norm').
        FSDP splits the embed dimension: rows of a 'col' weight, columns of a 'row' one."""
        D, HD = self.D, self.HD
        w = [("attn_norm", (self.DT,), "norm"), ("wq", (D, self.HL * HD), "col"), ("wk", (D, self.KVL * HD), "col"),
             ("wv", (D, self.KVL * HD), "col"), ("wo", (self.HL * HD, D), "row"), ("mlp_norm", (self.DT,), "norm")]
        if self.E > 1:
            # the router, and the experts' kernels MaxText keeps as [E, D, F] and [E, F, D] (embed split over
            # 'fsdp'), here stacked as [E x D, F] and [E x F, D]: the same bytes gathered and reduce-scattered
            w += [("wg", (D, self.E), "col"), ("wi_0", (self.E * D, self.FL), "col"),
                  ("wi_1", (self.E * D, self.FL), "col"), ("wo_mlp", (self.E * self.FL, D), "row")]
        else:
            w += [("wi_0", (D, self.FL), "col"), ("wi_1", (D, self.FL), "col")] if self.gated else \
                [("wi", (D, self.FL), "col")]
            w += [("wo_mlp", (self.FL, D), "row")]
        if self.post_norms:
            w += [("post_attn_norm", (self.DT,), "norm"), ("post_mlp_norm", (self.DT,), "norm")]
        return w

    def saved(self):
        """(name, per-layer shape, 'device'|'offload') of what the forward scan saves for the backward
        (the remat plan): the layer's input, and the projections' outputs the policy keeps (Q, K, V,
        the attention output projection, the MLP's input projections), in HBM or in host memory."""
        B, S = self.B, self.S
        shapes = {"x": bf(B, S, self.DT), "q_proj": bf(B, S, self.HL * self.HD), "k_proj": bf(B, S, self.KVL * self.HD),
                  "v_proj": bf(B, S, self.KVL * self.HD), "attn": bf(B, S, self.DT), "g": bf(B, S, self.FL),
                  "up": bf(B, S, self.FL), "pre": bf(B, S, self.FL)}
        return [(n, shapes[n], self.plan[n]) for n in shapes if n in self.plan]

    def shard(self, dims, kind):
        if kind == "norm":
            return dims
        return (dims[0] // self.fsdp, dims[1]) if kind == "col" else (dims[0], dims[1] // self.fsdp)


def bf(*d):
    return (BF16, tuple(d))


def f32(*d):
    return (F32, tuple(d))


class QTensor:
    """A value quantized to fp8 with its absmax per channel (f32 over the dims other than the
    contracting ones): the value is q * amax / F8_MAX[fmt]. A materialized QTensor is the fp8 array
    q (operands [q]); a fused one is the recipe for it (operands: the bf16 source, its absmax and a
    folded scale) that each consuming dot fusion runs on its operand's tiles (build)."""

    def __init__(self, q, amax, fmt=None, operands=None, build=None):
        self.q, self.amax = q, amax
        self.fmt = fmt or q.dtype
        self.operands = operands or [q]
        self.build = build or (lambda f, p: p[0])


class Step:
    """Emits the module; one instance per module."""

    def __init__(self, cfg):
        self.c = cfg
        # (value name, contracting dims, format, folded scale) -> QTensor: a value is quantized once however
        # many dots read it that way
        self.qcache = {}
        self.m = Module()
        self.collectives = []  # (kind, bytes per device, axis, where) for the header and tests
        self.pending = None  # weight gradients waiting for a tensor-parallel collective (layer_bwd)
        self.m.counters.update(REGION_COUNTERS)
        self.regions = REGIONS
        if cfg.E > 1:  # the cumulative counts' reduce-window
            self.regions += ("\n%add_s32 (a: s32[], b: s32[]) -> s32[] {\n  %a = s32[] parameter(0)\n"
                             "  %b = s32[] parameter(1)\n  ROOT %add_s32.0 = s32[] add(s32[] %a, s32[] %b)\n}\n")

    # ---------------- collectives ----------------
    @staticmethod
    def nbytes(shape):
        return {BF16: 2, F32: 4, S32: 4, F8E4: 1, F8E5: 1}[shape[0]] * math.prod(shape[1])

    def all_gather(self, e, v, dim, groups, axis, size, where):
        out = (v.dtype, tuple(d * size if i == dim else d for i, d in enumerate(v.dims)))
        self.collectives.append(("all-gather", self.nbytes(out), axis, where))
        start = e.op("all-gather-start", [v.shape, out], [v], f"channel_id={self.m.next_channel()}, "
                     f"replica_groups={groups}, dimensions={{{dim}}}, use_global_device_ids=true")
        return start

    def all_gather_done(self, e, start):
        return e.op("all-gather-done", start.shape[1], [start])

    def all_reduce(self, e, v, groups, axis, where, region=None):
        region = region or ("add" if v.dtype == BF16 else "region_0.1")
        self.collectives.append(("all-reduce", self.nbytes(v.shape), axis, where))
        return e.op("all-reduce", v.shape, [v], f"channel_id={self.m.next_channel()}, replica_groups={groups}, "
                    f"use_global_device_ids=true, to_apply=%{region}")

    def reduce_scatter(self, e, v, dim, groups, axis, size, where):
        """Async reduce-scatter (async-start/-done around a reduce-scatter computation); returns the start."""
        out = (v.dtype, tuple(d // size if i == dim else d for i, d in enumerate(v.dims)))
        self.collectives.append(("reduce-scatter", self.nbytes(v.shape), axis, where))
        c = Comp(self.m, self.m.fresh("async_computation"))
        p = c.param(v.shape)
        root = c.op("reduce-scatter", out, [p], f"channel_id={self.m.next_channel()}, replica_groups={groups}, "
                    f"use_global_device_ids=true, dimensions={{{dim}}}, to_apply=%add")
        self.m.comps.append((None, c.text(root)))
        start = e.op("async-start", [[v.shape], out], [v], f"calls=%{c.name}")
        start.calls = c.name
        return start

    def reduce_scatter_done(self, e, start):
        return e.op("async-done", start.shape[1], [start], f"calls=%{start.calls}")

    def tp_gather_start(self, e, v, where):
        """The start of [.., D/tp] -> [.., D] over 'tensor' (tensor > 1)."""
        return self.all_gather(e, v, len(v.dims) - 1, self.c.tp_groups, "tensor", self.c.tp, where)

    def tp_scatter_start(self, e, v, where):
        """The start of partial sums [.., D] -> summed [.., D/tp] over 'tensor' (tensor > 1)."""
        return self.reduce_scatter(e, v, len(v.dims) - 1, self.c.tp_groups, "tensor", self.c.tp, where)

    def tp_gather(self, e, v, where):
        """[.., D/tp] -> [.., D] over 'tensor' (nothing when tensor = 1)."""
        return v if self.c.tp == 1 else self.all_gather_done(e, self.tp_gather_start(e, v, where))

    def tp_scatter(self, e, v, where):
        """Partial sums [.., D] -> summed [.., D/tp] over 'tensor' (nothing when tensor = 1)."""
        return v if self.c.tp == 1 else self.reduce_scatter_done(e, self.tp_scatter_start(e, v, where))

    def tp_overlaps(self):
        """Whether a layer's backward runs work under its tensor-parallel collectives (tensor > 1, a dense MLP)."""
        return self.c.tp > 1 and self.c.E == 1

    def wgrad_later(self, e, g, name, x, dout, dims):
        """The weight gradient `name` (x^T . dout): now, or, while the layer's backward overlaps its
        tensor-parallel collectives (self.pending is a dict), when tp_window issues it."""
        if self.pending is None:
            g[name] = self.wgrad_dot(e, x, dout, dims)
        else:
            self.pending[name] = (x, dout, dims)

    def tp_window(self, e, start, done, g, names):
        """Waits for a started tensor-parallel collective with the pending weight gradients `names` issued
        between its start and its done: no later op of the layer reads a weight gradient, so XLA's
        latency-hiding scheduler runs them under the collective (the rows' LIBTPU_INIT_ARGS enable its
        async collective fusion and compute/collective overlap)."""
        for name in names:
            if name in self.pending:
                x, dout, dims = self.pending.pop(name)
                g[name] = self.wgrad_dot(e, x, dout, dims)
        return done(e, start)

    def tp_sum(self, e, v, where, region=None):
        return v if self.c.tp == 1 else self.all_reduce(e, v, self.c.tp_groups, "tensor", where, region)

    # ---------------- loops ----------------
    def loop(self, e, name, trip, state, body, comment):
        """while over `state` (state[0] is the s32[] counter from 0); body(c, vals) returns the
        next values of state[1:]. Returns the loop's final values (counter included)."""
        m = self.m
        shapes = [v.shape for v in state]
        cc = Comp(m, m.fresh(f"{name}_cond"))
        p = cc.param(shapes)
        i = cc.op("get-tuple-element", (S32, ()), [p], "index=0")
        r = cc.op("compare", (PRED, ()), [i, cc.const(str(trip), S32, ())], "direction=LT")
        m.comps.append((None, cc.text(r)))
        bc = Comp(m, m.fresh(f"{name}_body"))
        p = bc.param(shapes)
        vals = [bc.op("get-tuple-element", s, [p], f"index={k}") for k, s in enumerate(shapes)]
        nxt = body(bc, vals)
        one = bc.const("1", S32, ())
        root = bc.op("tuple", shapes, [bc.add(vals[0], one)] + nxt)
        m.comps.append((comment, bc.text(root)))
        init = e.op("tuple", shapes, state)
        w = e.op("while", shapes, [init], f"condition=%{cc.name}, body=%{bc.name}, "
                 f'backend_config={{"known_trip_count":{{"n":"{trip}"}}}}')
        return [e.op("get-tuple-element", s, [w], f"index={k}") for k, s in enumerate(shapes)]

    def layer_slice(self, c, stack, index, dtype=BF16):
        """stack[index] of a stacked [L, ...] value, as `dtype` (one loop fusion)."""
        dims = stack.dims[1:]

        def body(f, p):
            zero = f.const("0", S32, ())
            ds = f.op("dynamic-slice", (stack.dtype, (1,) + dims), [p[0], p[1]] + [zero] * len(dims),
                      f"dynamic_slice_sizes={{{','.join(map(str, (1,) + dims))}}}")
            r = f.op("reshape", (stack.dtype, dims), [ds])
            return r if dtype == stack.dtype else f.convert(r, dtype)

        return self.m.fusion(c, "kLoop", "dynamic_slice_fusion", [stack, index], body, None)

    def fetch(self, c, stack, index):
        """stack[index] of a stack in host memory, copied back to HBM (MoveToDevice): the slice is a
        plain dynamic-slice, so the copy is seen to come from host memory."""
        dims = stack.dims[1:]
        zero = c.const("0", S32, ())
        ds = c.op("dynamic-slice", (stack.dtype, (1,) + dims), [stack, index] + [zero] * len(dims),
                  f"dynamic_slice_sizes={{{','.join(map(str, (1,) + dims))}}}")
        r = c.op("bitcast", (stack.dtype, dims), [ds])
        return c.op("custom-call", r.shape, [r], 'custom_call_target="MoveToDevice"')

    def store(self, c, stack, value, index):
        """stack with stack[index] = value (in place)."""
        zero = c.const("0", S32, ())
        upd = c.op("bitcast", (value.dtype, (1,) + value.dims), [value])
        return c.op("dynamic-update-slice", stack.shape, [stack, upd, index] + [zero] * len(value.dims))

    # ---------------- fused elementwise pieces ----------------
    def rsqrt_b(self, f, ss, dims):
        """rsqrt(sum(x^2) / D + eps) broadcast to dims (the sum is over the whole embed dimension)."""
        c = self.c
        mean = f.mul(ss, f.const(repr(1.0 / c.D), F32, ss.dims))
        r = f.un("rsqrt", f.add(mean, f.const("1e-06", F32, ss.dims)))
        return f.bcast(r, dims, tuple(range(len(ss.dims))))

    def norm_fwd(self, e, x, w, label):
        """RMSNorm of x [B,S,DT] (embed split over 'tensor': the sums of squares are all-reduced)."""
        def scale(f, p):
            xf = f.convert(p[0], F32)
            nb = f.convert(f.mul(xf, self.rsqrt_b(f, p[1], xf.dims)), BF16)
            return f.mul(nb, f.bcast(p[2], xf.dims, (2,)))

        ss = self.norm_sumsq(e, x, label)
        return self.m.fusion(e, "kLoop", "loop_multiply_fusion", [x, ss, w], scale, None), ss

    def norm_sumsq(self, e, x, label):
        """The sums of squares RMSNorm scales x [B,S,DT] by (all-reduced over 'tensor'), all its backward
        needs besides x."""
        def sumsq(f, p):
            xf = f.convert(p[0], F32)
            return f.reduce(f.mul(xf, xf), (2,), "region_0.1")

        ss = self.m.fusion(e, "kInput", "input_reduce_fusion", [x], sumsq, None)
        return self.tp_sum(e, ss, f"{label} sum of squares")

    def norm_bwd(self, e, d_res, dn_out, x, ss, w, label):
        """Gradient of RMSNorm: returns (d_res + dx, weight gradient [DT] bf16)."""
        dims = x.dims

        def parts(f, dno, xv, ssv, wv):
            n_ = f.mul(f.convert(xv, F32), self.rsqrt_b(f, ssv, dims))
            dn = f.mul(f.convert(dno, F32), f.convert(f.bcast(wv, dims, (2,)), F32))
            return dn, n_

        def red(f, p):
            dn, n_ = parts(f, p[0], p[1], p[2], p[3])
            return f.reduce(f.mul(dn, n_), (2,), "region_0.1")

        def dx(f, p):  # [d_res,] dno, x, ss, cs, w
            res, p = (p[0], p[1:]) if d_res is not None else (None, p)
            dn, n_ = parts(f, p[0], p[1], p[2], p[4])
            mean = f.bcast(f.mul(p[3], f.const(repr(1.0 / self.c.D), F32, p[3].dims)), dims, (0, 1))
            out = f.convert(f.mul(self.rsqrt_b(f, p[2], dims), f.sub(dn, f.mul(n_, mean))), BF16)
            return out if res is None else f.add(res, out)

        def wgrad(f, p):
            n_ = f.mul(f.convert(p[1], F32), self.rsqrt_b(f, p[2], dims))
            return f.convert(f.reduce(f.mul(f.convert(p[0], F32), n_), (0, 1), "region_0.1"), BF16)

        cs = self.m.fusion(e, "kInput", "input_reduce_fusion", [dn_out, x, ss, w], red, None)
        cs = self.tp_sum(e, cs, f"{label} backward sum")
        out = self.m.fusion(e, "kLoop", "loop_add_fusion", ([d_res] if d_res is not None else []) + [dn_out, x, ss, cs, w],
                            dx, None)
        g = self.m.fusion(e, "kInput", "input_reduce_fusion", [dn_out, x, ss], wgrad, None)
        return out, g

    @staticmethod
    def gelu(f, x, grad=False):
        """gelu(x) of f32 x, or with grad gelu'(x), the tanh form (flax's nn.gelu default):
        0.5 x (1 + t), t = tanh(a (x + b x^3)); gelu' = 0.5 (1 + t) + 0.5 x (1 - t^2) a (1 + 3 b x^2)."""
        a, b = math.sqrt(2 / math.pi), 0.044715
        cst = lambda v: f.const(repr(v), F32, x.dims)  # noqa: E731
        x2 = f.mul(x, x)
        t = f.un("tanh", f.mul(cst(a), f.mul(x, f.add(cst(1.0), f.mul(cst(b), x2)))))
        half1t = f.mul(cst(0.5), f.add(cst(1.0), t))
        if not grad:
            return f.mul(x, half1t)
        slope = f.mul(f.mul(cst(0.5 * a), x), f.mul(f.sub(cst(1.0), f.mul(t, t)), f.add(cst(1.0), f.mul(cst(3 * b), x2))))
        return f.add(half1t, slope)

    def rope(self, e, v, heads, backward=False):
        """RoPE (rotate-half) on [B,S,heads*HD] (forward) or its adjoint on [B,S,heads,HD]."""
        c = self.c
        B, S, HD, HALF = c.B, c.S, c.HD, c.HD // 2
        sh = (B, S, heads, HD)
        sl = lambda lo, hi: f"slice={{[0:{B}], [0:{S}], [0:{heads}], [{lo}:{hi}]}}"  # noqa: E731

        def fwd(f, p):
            q = f.op("reshape", bf(*sh), [p[0]])
            hi = f.op("slice", bf(B, S, heads, HALF), [q], sl(HALF, HD))
            lo = f.op("slice", bf(B, S, heads, HALF), [q], sl(0, HALF))
            rot = f.op("concatenate", bf(*sh), [f.un("negate", hi), lo], "dimensions={3}")
            return f.add(f.mul(q, f.bcast(p[1], sh, (1, 3))), f.mul(rot, f.bcast(p[2], sh, (1, 3))))

        def bwd(f, p):  # dy*cos + concat(z[half:], -z[:half]), z = dy*sin
            z = f.mul(p[0], f.bcast(p[2], sh, (1, 3)))
            hi = f.op("slice", bf(B, S, heads, HALF), [z], sl(HALF, HD))
            lo = f.op("slice", bf(B, S, heads, HALF), [z], sl(0, HALF))
            rot = f.op("concatenate", bf(*sh), [hi, f.un("negate", lo)], "dimensions={3}")
            return f.add(f.mul(p[0], f.bcast(p[1], sh, (1, 3))), rot)

        return self.m.fusion(e, "kLoop", "loop_add_fusion", [v, self.cos, self.sin], bwd if backward else fwd, None)

    def cp_gather(self, e, t):
        """[B,S,KVL,HD] -> the keys or values the flash kernel reads: itself without context parallelism,
        else all-gathered over 'context' ([B,S_full,..]; its chunks in device order) and cut to kv_len."""
        c = self.c
        if c.cp == 1:
            return t
        full = self.all_gather_done(e, self.all_gather(e, t, 1, c.cp_groups, "context", c.cp, "keys/values"))
        return e.op("slice", bf(c.B, c.kv_len, c.KVL, c.HD), [full],
                    f"slice={{[0:{c.B}], [0:{c.kv_len}], [0:{c.KVL}], [0:{c.HD}]}}")

    def cp_scatter(self, e, t, where):
        """The flash backward's key or value gradient [B,kv_len,..] back onto the local chunk: padded to
        the whole sequence and reduce-scattered over 'context' (the adjoint of cp_gather)."""
        c = self.c
        if c.cp == 1:
            return t
        full = self.pad_kv(e, t, c.S_full)
        return self.reduce_scatter_done(e, self.reduce_scatter(e, full, 1, c.cp_groups, "context", c.cp, where))

    def local_kv(self, e, t):
        """The keys or values [B,S,KVL,HD] a local layer's kernel is written over: the first local_kv
        (Config: 2 x window) positions."""
        c = self.c
        return e.op("slice", bf(c.B, c.local_kv, c.KVL, c.HD), [t],
                    f"slice={{[0:{c.B}], [0:{c.local_kv}], [0:{c.KVL}], [0:{c.HD}]}}")

    def pad_kv(self, e, t, rows):
        """A key or value gradient [B,n,KVL,HD] padded with zeros to `rows` positions (the adjoint of taking
        its first n: cp_gather's cut, local_kv)."""
        c = self.c
        zero = e.const("0", BF16, ())
        return e.op("pad", bf(c.B, rows, c.KVL, c.HD), [t, zero], f"padding=0_0x0_{rows - t.dims[1]}x0_0x0_0")

    def flash(self, e, operands, outs, backward, local=False):
        c = self.c
        target = "te_fused_attn_backward_ffi" if backward else "te_fused_attn_forward_ffi"
        mask = 0 if local or c.cp > 1 else 2  # causal; context parallel or local: unmasked over kv_len (Config)
        kv_len = c.local_kv if local else c.kv_len
        cfg = (f"attn_heads = {c.HL} : i64, input_batch = {c.B} : i64, is_training = true, "
               f"kv_max_seqlen = {kv_len} : i64, mask_type = {mask} : i64, num_gqa_groups = {c.KVL} : i64, "
               f"q_max_seqlen = {c.S} : i64, qk_head_dim = {c.HD} : i64, v_head_dim = {c.HD} : i64")
        return e.op("custom-call", outs, operands, f'custom_call_target="{target}", '
                    f"api_version=API_VERSION_TYPED_FFI, backend_config={{{cfg}}}")

    # ---------------- fp8 quantization (MaxText fp8_full: Qwix's quantized training) ----------------
    def quantize(self, e, t, cdims, fmt, groups=None, fold=None, fused=True):
        """t quantized to fmt with one scale per channel (Qwix's absmax calibration, channelwise over
        the dims other than the contracting cdims): an input fusion takes the absmax over cdims
        (all-reduced (max) over `groups` when t's rows along cdims are split across those devices),
        then each channel is scaled onto the format's largest value, clipped and converted. fused:
        that second pass runs inside each dot fusion that reads the value (XLA fuses an elementwise
        producer of a dot operand into the dot's fusion, as it does a dequantize), so the dot reads t
        and the fp8 array is never stored; otherwise (a weight shard, which is all-gathered in fp8)
        it is a loop fusion of its own. fold: (QTensor, dims of t) -- the backward's incoming
        gradient is first multiplied by the scale of the forward's quantized residual (its absmax /
        F8_MAX), which runs along the backward's contraction (Qwix reuses the forward's quantized
        residuals)."""
        cdims = tuple(cdims)
        key = (t.name, cdims, fmt, fold[0].amax.name if fold else None)
        if key in self.qcache:
            return self.qcache[key]
        keep = tuple(i for i in range(len(t.dims)) if i not in cdims)
        extra = [fold[0].amax] if fold else []

        def scaled(f, x, scale):  # x in f32, times the folded scale
            x32 = f.convert(x, F32)
            if not fold:
                return x32
            s = f.mul(f.bcast(scale, x.dims, fold[1]), f.const(repr(1.0 / F8_MAX[fold[0].fmt]), F32, x.dims))
            return f.mul(x32, s)
        amax = self.m.fusion(e, "kInput", "input_reduce_fusion", [t] + extra, lambda f, p: f.reduce(
            f.un("abs", scaled(f, p[0], p[1] if fold else None)), cdims, "region_1.5"), None)
        if groups:
            amax = self.all_reduce(e, amax, groups, "fsdp", "fp8 absmax", region="region_1.5")
        top = repr(F8_MAX[fmt])

        def body(f, p):  # p: t, amax [, folded absmax]
            x = scaled(f, p[0], p[2] if fold else None)
            scale = f.op("divide", p[1].shape, [f.const(top, F32, p[1].dims), p[1]])
            v = f.mul(x, f.bcast(scale, x.dims, keep))
            v = f.op("clamp", v.shape, [f.const("-" + top, F32, x.dims), v, f.const(top, F32, x.dims)])
            return f.convert(v, fmt)
        if fused:
            q = QTensor(None, amax, fmt, [t, amax] + extra, body)
        else:
            q = QTensor(self.m.fusion(e, "kLoop", "loop_convert_fusion", [t, amax] + extra, body, None), amax)
        self.qcache[key] = q
        return q

    def scaled_dot(self, e, a, b, dims, lhs_c, rhs_c, scales, addend=None):
        """The fp8 dot of QTensors a and b (f32 result) in an output fusion that multiplies it by
        scales: [(QTensor, output dims its absmax runs along)], each absmax / F8_MAX, then bf16 [+ addend]."""
        unit = repr(1.0 / math.prod(F8_MAX[q.fmt] for q, _ in scales))

        na, nb = len(a.operands), len(b.operands)

        def body(f, p):
            d = dot(f, a.build(f, p[:na]), b.build(f, p[na:na + nb]), dims, lhs_c, rhs_c, dtype=F32)
            for k, (_, along) in enumerate(scales):
                d = f.mul(d, f.bcast(p[na + nb + k], d.dims, along))
            out = f.convert(f.mul(d, f.const(unit, F32, d.dims)), BF16)
            return f.add(out, p[-1]) if addend is not None else out
        ops = a.operands + b.operands + [q.amax for q, _ in scales] + ([addend] if addend is not None else [])
        return self.m.fusion(e, "kOutput", "dot_multiply_fusion", ops, body, None)

    def dot_add(self, e, a, b, dims, lhs_c, rhs_c, addend):
        return self.m.fusion(e, "kOutput", "dot_add_fusion", [a, b, addend],
                             lambda f, p: f.add(dot(f, p[0], p[1], dims, lhs_c, rhs_c), p[2]), None)

    def fwd_dot(self, e, x, w, dims):
        """x [B,S,K] . w [K,N]. fp8_full: x quantized (e4m3) per token over K, w the weight quantized
        per output column (layer_weights); rescaled by both."""
        if not self.c.fp8:
            return dot(e, x, w, dims, (2,), (0,))
        xq = self.quantize(e, x, (2,), F8E4)
        return self.scaled_dot(e, xq, w, dims, (2,), (0,), [(xq, (0, 1)), (w, (2,))])

    def dgrad_dot(self, e, g, w, addend=None):
        """The input gradient g [B,S,N] . w^T [N,K] (+ addend). fp8_full: w is the forward's quantized
        weight, its per-column scale runs along N: folded into g, which is quantized (e5m2) per token."""
        c = self.c
        rows = (w.q if isinstance(w, QTensor) else w).dims[0]
        dims = (c.B, c.S, rows)
        if not c.fp8:
            return dot(e, g, w, dims, (2,), (1,)) if addend is None else self.dot_add(e, g, w, dims, (2,), (1,), addend)
        gq = self.quantize(e, g, (2,), F8E5, fold=(w, (2,)))
        return self.scaled_dot(e, gq, w, dims, (2,), (1,), [(gq, (0, 1))], addend)

    def wgrad_dot(self, e, x, g, dims):
        """The weight gradient x^T . g over the batch: x [B,S,K], g [B,S,N] -> [K,N]. fp8_full: x is the
        forward's quantized activation (per token: its scale runs along the contraction, folded into g),
        g quantized (e5m2) per column over the batch, which 'fsdp' splits: its absmax is all-reduced."""
        c = self.c
        if not c.fp8:
            return dot(e, x, g, dims, (0, 1), (0, 1))
        xq = self.quantize(e, x, (2,), F8E4)
        gq = self.quantize(e, g, (0, 1), F8E5, c.fsdp_groups if c.fsdp > 1 else None, fold=(xq, (0, 1)))
        return self.scaled_dot(e, xq, gq, dims, (0, 1), (0, 1), [(gq, (1,))])

    def gated_act(self, e, gate, up):
        """act(gate) * up of a gated MLP (silu, or gelu's tanh form), in f32, as bf16."""
        c = self.c

        def act(f, p):
            gf, upf = f.convert(p[0], F32), f.convert(p[1], F32)
            a = self.gelu(f, gf) if c.act == "gelu" else f.mul(gf, f.un("logistic", gf))
            return f.convert(f.mul(upf, a), BF16)
        return self.m.fusion(e, "kLoop", "loop_multiply_fusion", [gate, up], act, None)

    def gated_act_bwd(self, e, du, gate, up):
        """(d gate, d up) of gated_act from du."""
        c = self.c

        def act_bwd(f, p):  # du, g, up -> (d_gate, d_up)
            duf, gf, upf = f.convert(p[0], F32), f.convert(p[1], F32), f.convert(p[2], F32)
            if c.act == "gelu":
                d_up = f.convert(f.mul(duf, self.gelu(f, gf)), BF16)
                d_gate = f.convert(f.mul(f.mul(duf, upf), self.gelu(f, gf, grad=True)), BF16)
                return f.op("tuple", [d_gate.shape, d_up.shape], [d_gate, d_up])
            sg = f.un("logistic", gf)
            d_up = f.convert(f.mul(duf, f.mul(gf, sg)), BF16)
            one = f.const("1", F32, gf.dims)
            d_gate = f.convert(f.mul(f.mul(duf, upf), f.mul(sg, f.add(one, f.mul(gf, f.sub(one, sg))))), BF16)
            return f.op("tuple", [d_gate.shape, d_up.shape], [d_gate, d_up])
        t = self.m.fusion(e, "kLoop", "loop_multiply_fusion", [du, gate, up], act_bwd, None)
        return (e.op("get-tuple-element", gate.shape, [t], "index=0"),
                e.op("get-tuple-element", up.shape, [t], "index=1"))

    # ---------------- mixture of experts ----------------
    def moe_fwd(self, e, hg, W, s, recompute):
        """MaxText's RoutedMoE.dense_matmul with a capacity factor, on the normalized input hg [B,S,D]:
        router logits; each token's top-K experts (jax.lax.top_k) and their softmax weights; the
        dropping masks (generate_masks: a token's place in its expert's queue is the cumulative count
        along the sequence, a reduce-window; places beyond C are dropped); the dispatch einsum
        BSM,BSEC->EBCM; the experts' gated MLP (EBCM,EMH->EBCH twice, EBCH,EHM->EBCM); the combine einsum
        EBCM,BSEC->BSM. Returns the MoE output [B,S,D], or None for the backward's recomputation (which
        stops at the experts' outputs, the last value the backward reads). The load-balancing loss (a few
        [B,S,E] reductions) is left out."""
        c, m = self.c, self.m
        B, S, D, E, K, C, FL = c.B, c.S, c.D, c.E, c.K, c.C, c.FL
        s["logits"] = logits = dot(e, hg, W["wg"], (B, S, E), (2,), (0,))

        def route(f, p):
            # an expert's rank among the token's logits (how many are larger); the top-K: rank < K,
            # one-hot [B,S,K,E] of the k-th choice (rank k); their weights, a softmax over the top-K
            lf = f.convert(p[0], F32)
            sq = (B, S, E, E)
            above = f.op("compare", (PRED, sq), [f.bcast(lf, sq, (0, 1, 3)), f.bcast(lf, sq, (0, 1, 2))],
                         "direction=GT")
            rank = f.reduce(f.convert(above, F32), (3,), "region_0.1")
            sk = (B, S, K, E)
            kth = f.op("iota", (F32, sk), [], "iota_dimension=2")
            onehot = f.convert(f.op("compare", (PRED, sk), [f.bcast(rank, sk, (0, 1, 3)), kth], "direction=EQ"), S32)
            chosen = f.op("compare", (PRED, rank.dims), [rank, f.const(str(K), F32, rank.dims)], "direction=LT")
            mx = f.reduce(lf, (2,), "region_1.5", init="-inf")
            ex = f.op("select", lf.shape, [chosen, f.un("exponential", f.sub(lf, f.bcast(mx, lf.dims, (0, 1)))),
                                            f.const("0", F32, lf.dims)])
            w = f.convert(f.op("divide", lf.shape, [ex, f.bcast(f.reduce(ex, (2,), "region_0.1"), lf.dims, (0, 1))]),
                          BF16)
            return f.op("tuple", [onehot.shape, w.shape], [onehot, w])
        r = m.fusion(e, "kLoop", "loop_compare_fusion", [logits], route, None)
        onehot = e.op("get-tuple-element", (S32, (B, S, K, E)), [r], "index=0")
        s["route_w"] = e.op("get-tuple-element", bf(B, S, E), [r], "index=1")
        # the cumulative count of each expert's tokens along the sequence (choices in order k within a token)
        flat = e.op("bitcast", (S32, (B, S * K, E)), [onehot])
        counts = e.op("reduce-window", flat.shape, [flat, e.const("0", S32, ())],
                      f"window={{size=1x{S * K}x1 pad=0_0x{S * K - 1}_0x0_0}}, to_apply=%add_s32")
        counts = e.op("bitcast", (S32, (B, S, K, E)), [counts])

        def place(f, p):  # onehot, counts, weights -> (place in the expert's queue, 0 when dropped; weight)
            keep = f.mul(p[0], f.convert(f.op("compare", (PRED, p[1].dims), [p[1], f.const(str(C), S32, p[1].dims)],
                                               "direction=LE"), S32))
            kept = f.reduce(f.convert(keep, F32), (2,), "region_0.1")
            pos = f.mul(f.reduce(f.convert(f.mul(keep, p[1]), F32), (2,), "region_0.1"), kept)
            return f.op("tuple", [pos.shape, (BF16, pos.dims)], [pos, f.convert(f.mul(f.convert(p[2], F32), kept), BF16)])
        pw = m.fusion(e, "kInput", "input_reduce_fusion", [onehot, counts, s["route_w"]], place, None)
        s["pos"] = e.op("get-tuple-element", f32(B, S, E), [pw], "index=0")
        s["kept_w"] = e.op("get-tuple-element", bf(B, S, E), [pw], "index=1")

        def masks(f, p):  # combine [B,S,E,C] = weight at the token's place; dispatch = combine != 0
            sc = (B, S, E, C)
            at = self.at_place(f, p[0], sc)
            comb = f.op("select", (BF16, sc), [at, f.bcast(p[1], sc, (0, 1, 2)), f.const("0", BF16, sc)])
            disp = f.convert(f.op("compare", (PRED, sc), [comb, f.const("0", BF16, sc)], "direction=NE"), BF16)
            return f.op("tuple", [comb.shape, disp.shape], [comb, disp])
        cd = m.fusion(e, "kLoop", "loop_select_fusion", [s["pos"], s["kept_w"]], masks, None)
        s["combine"] = e.op("get-tuple-element", bf(B, S, E, C), [cd], "index=0")
        s["dispatch"] = e.op("get-tuple-element", bf(B, S, E, C), [cd], "index=1")
        # dispatch: BSM,BSEC->EBCM (batch B, the sequence contracted), then expert-major
        xd = dot(e, s["dispatch"], hg, (B, E, C, D), (1,), (1,), (0,), (0,))
        s["xd"] = xd = e.op("transpose", bf(E, B, C, D), [xd], "dimensions={1,0,2,3}")
        w0 = e.op("bitcast", bf(E, D, FL), [W["wi_0"]])
        w1 = e.op("bitcast", bf(E, D, FL), [W["wi_1"]])
        s["g"] = dot(e, xd, w0, (E, B, C, FL), (3,), (1,), (0,), (0,))
        s["up"] = dot(e, xd, w1, (E, B, C, FL), (3,), (1,), (0,), (0,))
        s["u"] = self.gated_act(e, s["g"], s["up"])
        wo = e.op("bitcast", bf(E, FL, D), [W["wo_mlp"]])
        eo = dot(e, s["u"], wo, (E, B, C, D), (3,), (1,), (0,), (0,))
        s["eo"] = e.op("transpose", bf(B, E, C, D), [eo], "dimensions={1,0,2,3}")
        if recompute:
            return None
        # combine: EBCM,BSEC->BSM (batch B, experts and places contracted)
        return dot(e, s["combine"], s["eo"], (B, S, D), (2, 3), (1, 2), (0,), (0,))

    @staticmethod
    def at_place(f, pos, sc):
        """[B,S,E,C] pred: the capacity slot c is the token's place pos [B,S,E] (1-based; 0: not there)."""
        return f.op("compare", (PRED, sc), [f.bcast(pos, sc, (0, 1, 2)),
                                            f.add(f.op("iota", (F32, sc), [], "iota_dimension=3"),
                                                  f.const("1", F32, sc))], "direction=EQ")

    def moe_bwd(self, e, dy, s, W, g):
        """moe_fwd's backward from the MoE output's gradient dy [B,S,D]: the input gradient [B,S,D]; the
        router's and experts' weight gradients into g (as [D, E], [E x D, F], [E x F, D])."""
        c, m = self.c, self.m
        B, S, D, E, C, FL = c.B, c.S, c.D, c.E, c.C, c.FL
        hg = s["hg"]
        # combine's operands: the experts' outputs and the combine weights
        d_eo = dot(e, s["combine"], dy, (B, E, C, D), (1,), (1,), (0,), (0,))
        d_eo = e.op("transpose", bf(E, B, C, D), [d_eo], "dimensions={1,0,2,3}")
        d_comb = dot(e, dy, s["eo"], (B, S, E, C), (2,), (3,), (0,), (0,))

        def d_weight(f, p):  # d combine, place -> d of the kept weight [B,S,E] (the place's column)
            sc = (B, S, E, C)
            at = self.at_place(f, p[1], sc)
            return f.reduce(f.op("select", (F32, sc), [at, f.convert(p[0], F32), f.const("0", F32, sc)]), (3,),
                            "region_0.1")
        dw = m.fusion(e, "kInput", "input_reduce_fusion", [d_comb, s["pos"]], d_weight, None)

        def d_logit(f, p):  # softmax over the top-K: dl = w (dw - sum(w dw)) (zero where not chosen or dropped)
            wf = f.convert(p[1], F32)
            dot_wd = f.reduce(f.mul(wf, p[0]), (2,), "region_0.1")
            return f.convert(f.mul(wf, f.sub(p[0], f.bcast(dot_wd, wf.dims, (0, 1)))), BF16)
        d_logits = m.fusion(e, "kLoop", "loop_multiply_fusion", [dw, s["route_w"]], d_logit, None)
        # the experts' MLP
        wo = e.op("bitcast", bf(E, FL, D), [W["wo_mlp"]])
        g["wo_mlp"] = e.op("bitcast", bf(E * FL, D), [dot(e, s["u"], d_eo, (E, FL, D), (1, 2), (1, 2), (0,), (0,))])
        du = dot(e, d_eo, wo, (E, B, C, FL), (3,), (2,), (0,), (0,))
        dg, dup = self.gated_act_bwd(e, du, s["g"], s["up"])
        g["wi_0"] = e.op("bitcast", bf(E * D, FL), [dot(e, s["xd"], dg, (E, D, FL), (1, 2), (1, 2), (0,), (0,))])
        g["wi_1"] = e.op("bitcast", bf(E * D, FL), [dot(e, s["xd"], dup, (E, D, FL), (1, 2), (1, 2), (0,), (0,))])
        w0 = e.op("bitcast", bf(E, D, FL), [W["wi_0"]])
        w1 = e.op("bitcast", bf(E, D, FL), [W["wi_1"]])
        dxd = m.fusion(e, "kOutput", "dot_add_fusion", [dup, w1, dot(e, dg, w0, (E, B, C, D), (3,), (2,), (0,), (0,))],
                       lambda f, p: f.add(dot(f, p[0], p[1], (E, B, C, D), (3,), (2,), (0,), (0,)), p[2]), None)
        dxd = e.op("transpose", bf(B, E, C, D), [dxd], "dimensions={1,0,2,3}")
        # dispatch's input gradient, plus the router's
        dhg = dot(e, s["dispatch"], dxd, (B, S, D), (2, 3), (1, 2), (0,), (0,))
        g["wg"] = dot(e, hg, d_logits, (D, E), (0, 1), (0, 1))
        return self.dot_add(e, d_logits, W["wg"], (B, S, D), (2,), (1,), dhg)

    # ---------------- one decoder layer ----------------
    def layer_fwd(self, e, x, W, saved=None, recompute=False, values=None, kind="global"):
        """The layer on x [B,S,DT] with its gathered bf16 weights W; returns (y, the values its backward
        uses). recompute: the backward's recomputation, which stops at the last value the backward
        reads (the MLP activation): the MLP output projection and the residual add only make y, which
        the backward does not use (JAX's remat and XLA's dead-code elimination leave them out), and y
        is None. With `saved` (the projections the remat policy kept) no saved projection runs again.
        values: the dict the values are put in (a caller's hook sees each as it is made). kind: the layer's
        attention, 'global' or 'local' (Config.pattern). With post-norms the recomputation also runs the
        MLP output projection: the post-MLP norm's backward reads its input."""
        c, m = self.c, self.m
        B, S, D = c.B, c.S, c.D
        local = kind == "local"
        s = {} if values is None else values
        s["x"] = x
        s["xn"], s["ss1"] = self.norm_fwd(e, x, W["attn_norm"], "attention RMSNorm")
        s["xg"] = xg = self.tp_gather(e, s["xn"], "attention input")
        saved = saved or {}
        q = saved.get("q_proj") or self.fwd_dot(e, xg, W["wq"], (B, S, c.HL * c.HD))
        k = saved.get("k_proj") or self.fwd_dot(e, xg, W["wk"], (B, S, c.KVL * c.HD))
        v = saved.get("v_proj") or self.fwd_dot(e, xg, W["wv"], (B, S, c.KVL * c.HD))
        s["q_proj"], s["k_proj"], s["v_proj"] = q, k, v
        if c.use_rope:
            s["q"], s["k"] = self.rope(e, q, c.HL), self.rope(e, k, c.KVL)
        else:
            s["q"], s["k"] = e.op("bitcast", bf(B, S, c.HL, c.HD), [q]), e.op("bitcast", bf(B, S, c.KVL, c.HD), [k])
        s["v"] = e.op("bitcast", bf(B, S, c.KVL, c.HD), [v])
        if local:
            s["kf"], s["vf"] = self.local_kv(e, s["k"]), self.local_kv(e, s["v"])
        else:
            s["kf"], s["vf"] = self.cp_gather(e, s["k"]), self.cp_gather(e, s["v"])
        s["local"] = local
        fa = self.flash(e, [s["q"], s["kf"], s["vf"]], [bf(B, S, c.HL, c.HD), f32(B, c.HL, S, 1)], False, local)
        s["o"] = e.op("get-tuple-element", bf(B, S, c.HL, c.HD), [fa], "index=0")
        s["stats"] = e.op("get-tuple-element", f32(B, c.HL, S, 1), [fa], "index=1")
        s["o3"] = e.op("bitcast", bf(B, S, c.HL * c.HD), [s["o"]])
        attn = saved.get("attn") or self.tp_scatter(e, self.fwd_dot(e, s["o3"], W["wo"], (B, S, D)),
                                                    "attention output")
        s["attn"] = attn
        if c.post_norms:
            attn, s["ss3"] = self.norm_fwd(e, attn, W["post_attn_norm"], "post-attention RMSNorm")
        s["h"] = h = m.fusion(e, "kLoop", "loop_add_fusion", [attn, x], lambda f, p: f.add(p[0], p[1]), None)
        s["hn"], s["ss2"] = self.norm_fwd(e, h, W["mlp_norm"], "MLP RMSNorm")
        s["hg"] = hg = self.tp_gather(e, s["hn"], "MLP input")
        if c.E > 1:
            mlp = self.moe_fwd(e, hg, W, s, recompute)
            if recompute:
                return None, s
            y = m.fusion(e, "kLoop", "loop_add_fusion", [mlp, h], lambda f, p: f.add(p[0], p[1]), None)
            return y, s
        if c.gated:
            s["g"] = saved.get("g") or self.fwd_dot(e, hg, W["wi_0"], (B, S, c.FL))
            s["up"] = saved.get("up") or self.fwd_dot(e, hg, W["wi_1"], (B, S, c.FL))
            s["u"] = self.gated_act(e, s["g"], s["up"])
        else:
            s["pre"] = saved.get("pre") or self.fwd_dot(e, hg, W["wi"], (B, S, c.FL))
            if c.act == "gelu":
                s["u"] = m.fusion(e, "kLoop", "loop_multiply_fusion", [s["pre"]],
                                  lambda f, p: f.convert(self.gelu(f, f.convert(p[0], F32)), BF16), None)
            else:
                s["u"] = m.fusion(e, "kLoop", "loop_maximum_fusion", [s["pre"]],
                                  lambda f, p: f.bin("maximum", p[0], f.const("0", BF16, p[0].dims)), None)
        if recompute and not c.post_norms:
            return None, s
        s["mlp"] = mlp = self.tp_scatter(e, self.fwd_dot(e, s["u"], W["wo_mlp"], (B, S, D)), "MLP output")
        if c.post_norms:
            if recompute:
                s["ss4"] = self.norm_sumsq(e, mlp, "post-MLP RMSNorm")
                return None, s
            mlp, s["ss4"] = self.norm_fwd(e, mlp, W["post_mlp_norm"], "post-MLP RMSNorm")
        y = m.fusion(e, "kLoop", "loop_add_fusion", [mlp, h], lambda f, p: f.add(p[0], p[1]), None)
        return y, s

    def layer_bwd(self, e, dy, s, W, dy_start=None):
        """The layer's backward from dy [B,S,DT]; returns (dx, gradients {name: full local bf16}). dy_start:
        the gather of dy over 'tensor', started before the layer's recomputation (or None). Under
        fp8_full: W holds the forward's quantized weights and the residuals are the forward's quantized
        values (the recomputation's), as Qwix reuses them."""
        c = self.c
        g = {}
        # With tensor parallelism (a dense MLP) each weight gradient is issued under one of the layer's
        # tensor-parallel collectives (tp_window): the MLP input's under the reduce-scatter of the MLP input
        # gradient, the MLP output projection's under the gather of the attention output gradient, the
        # attention projections' under the reduce-scatter of the attention input gradient.
        self.pending = {} if self.tp_overlaps() else None
        d_mlp = dy
        if c.post_norms:
            d_mlp, g["post_mlp_norm"] = self.norm_bwd(e, None, dy, s["mlp"], s["ss4"], W["post_mlp_norm"],
                                                      "post-MLP RMSNorm")
        dyg = self.all_gather_done(e, dy_start) if dy_start is not None else self.tp_gather(e, d_mlp, "MLP output gradient")
        if c.E > 1:
            dhn = self.moe_bwd(e, dyg, s, W, g)
        else:
            dhn = self.dense_mlp_bwd(e, dyg, s, W, g)
        if self.pending is None:
            dhn = self.tp_scatter(e, dhn, "MLP input gradient")
        else:
            dhn = self.tp_window(e, self.tp_scatter_start(e, dhn, "MLP input gradient"), self.reduce_scatter_done, g,
                                 ("wi_0", "wi_1", "wi"))
        dh, g["mlp_norm"] = self.norm_bwd(e, dy, dhn, s["h"], s["ss2"], W["mlp_norm"], "MLP RMSNorm")
        dx, g = self.attention_bwd(e, dh, s, W, g)
        assert not self.pending, f"weight gradients never issued: {sorted(self.pending or {})}"
        self.pending = None
        return dx, g

    def dense_mlp_bwd(self, e, dyg, s, W, g):
        """The MLP's backward from its output gradient (gathered over 'tensor'): the input gradient of its
        normalized input (before the reduce-scatter over 'tensor'), the weights' gradients into g."""
        c, m = self.c, self.m
        D = c.D

        def wgrad(name, x, dout, dims):
            self.wgrad_later(e, g, name, x, dout, dims)

        def dgrad(dout, w, addend=None):
            return self.dgrad_dot(e, dout, w, addend)
        wgrad("wo_mlp", s["u"], dyg, (c.FL, D))
        du = dgrad(dyg, W["wo_mlp"])
        if c.gated:
            dg, dup = self.gated_act_bwd(e, du, s["g"], s["up"])
            wgrad("wi_0", s["hg"], dg, (D, c.FL))
            wgrad("wi_1", s["hg"], dup, (D, c.FL))
            dhn = dgrad(dup, W["wi_1"], dgrad(dg, W["wi_0"]))
        else:
            def relu_bwd(f, p):
                pos = f.op("compare", (PRED, p[1].dims), [p[1], f.const("0", BF16, p[1].dims)], "direction=GT")
                return f.op("select", p[0].shape, [pos, p[0], f.const("0", BF16, p[0].dims)])

            def gelu_bwd(f, p):
                return f.convert(f.mul(f.convert(p[0], F32), self.gelu(f, f.convert(p[1], F32), grad=True)), BF16)
            dpre = m.fusion(e, "kLoop", "loop_select_fusion" if c.act == "relu" else "loop_multiply_fusion",
                            [du, s["pre"]], relu_bwd if c.act == "relu" else gelu_bwd, None)
            wgrad("wi", s["hg"], dpre, (D, c.FL))
            dhn = dgrad(dpre, W["wi"])
        return dhn

    def attention_bwd(self, e, dh, s, W, g):
        """The attention half's backward from the residual stream's gradient dh: the layer's input
        gradient and, into g, its weights' gradients; returns (dx, g)."""
        c = self.c
        B, S, D = c.B, c.S, c.D

        def wgrad(name, x, dout, dims):
            self.wgrad_later(e, g, name, x, dout, dims)

        def dgrad(dout, w, addend=None):
            return self.dgrad_dot(e, dout, w, addend)
        d_attn = dh
        if c.post_norms:
            d_attn, g["post_attn_norm"] = self.norm_bwd(e, None, dh, s["attn"], s["ss3"], W["post_attn_norm"],
                                                        "post-attention RMSNorm")
        if self.pending is None:
            dhg = self.tp_gather(e, d_attn, "attention output gradient")
        else:
            dhg = self.tp_window(e, self.tp_gather_start(e, d_attn, "attention output gradient"),
                                 self.all_gather_done, g, ("wo_mlp",))
        wgrad("wo", s["o3"], dhg, (c.HL * c.HD, D))
        do = e.op("bitcast", bf(B, S, c.HL, c.HD), [dgrad(dhg, W["wo"])])
        local = s.get("local", False)
        kv = bf(B, c.local_kv if local else c.kv_len, c.KVL, c.HD)
        fb = self.flash(e, [s["q"], s["kf"], s["vf"], s["stats"], s["o"], do], [bf(B, S, c.HL, c.HD), kv, kv], True,
                        local)
        dq = e.op("get-tuple-element", bf(B, S, c.HL, c.HD), [fb], "index=0")
        if local:
            dk = self.pad_kv(e, e.op("get-tuple-element", kv, [fb], "index=1"), c.S)
            dv = self.pad_kv(e, e.op("get-tuple-element", kv, [fb], "index=2"), c.S)
        else:
            dk = self.cp_scatter(e, e.op("get-tuple-element", kv, [fb], "index=1"), "key gradient")
            dv = self.cp_scatter(e, e.op("get-tuple-element", kv, [fb], "index=2"), "value gradient")
        if c.use_rope:
            dq, dk = self.rope(e, dq, c.HL, backward=True), self.rope(e, dk, c.KVL, backward=True)
        d3 = {"wq": e.op("bitcast", bf(B, S, c.HL * c.HD), [dq]),
              "wk": e.op("bitcast", bf(B, S, c.KVL * c.HD), [dk]),
              "wv": e.op("bitcast", bf(B, S, c.KVL * c.HD), [dv])}
        for name, dval in d3.items():
            wgrad(name, s["xg"], dval, (D, dval.dims[2]))
        dxn = dgrad(d3["wq"], W["wq"])
        for name in ("wk", "wv"):
            dxn = dgrad(d3[name], W[name], dxn)
        if self.pending is None:
            dxn = self.tp_scatter(e, dxn, "attention input gradient")
        else:
            dxn = self.tp_window(e, self.tp_scatter_start(e, dxn, "attention input gradient"),
                                 self.reduce_scatter_done, g, ("wo", "wq", "wk", "wv"))
        dx, g["attn_norm"] = self.norm_bwd(e, dh, dxn, s["x"], s["ss1"], W["attn_norm"], "attention RMSNorm")
        return dx, g

    # ---------------- the step ----------------
    def layer_weights(self, e, stacks, index):
        """The layer's weights: local shards sliced out of the stacks and cast to bf16; the
        matrices' all-gathers over 'fsdp' are issued at once, each waited on at first use.
        Under fp8_full each matrix shard is quantized (e4m3) per output column over its input dim (the
        forward's contraction) and gathered in fp8 with its absmax: an absmax over the dim 'fsdp' splits
        (a 'col' weight's rows) is all-reduced, one along it (a 'row' weight's columns) gathered."""
        c = self.c
        starts, ready = {}, {}
        for name, _, kind in c.weights():
            shard = self.layer_slice(e, stacks[name], index)
            split = 0 if kind == "col" else 1  # the dim 'fsdp' splits
            if kind != "norm" and c.fp8:
                where = f"{name} (per layer)"
                qt = self.quantize(e, shard, (0,), F8E4, c.fsdp_groups if c.fsdp > 1 and split == 0 else None,
                                   fused=False)
                if c.fsdp == 1:
                    ready[name] = qt
                    continue
                gathered = split == 1  # the absmax runs along the split dim: gather it too
                amax = self.all_gather(e, qt.amax, 0, c.fsdp_groups, "fsdp", c.fsdp, f"{where} absmax") \
                    if gathered else qt.amax
                starts[name] = (self.all_gather(e, qt.q, split, c.fsdp_groups, "fsdp", c.fsdp, where), amax, gathered)
            elif kind == "norm" or c.fsdp == 1:
                ready[name] = shard
            else:
                starts[name] = self.all_gather(e, shard, split, c.fsdp_groups, "fsdp", c.fsdp, f"{name} (per layer)")
        step = self

        class Lazy(dict):
            def __missing__(self, name):
                if not c.fp8:
                    self[name] = step.all_gather_done(e, starts[name])
                    return self[name]
                q, amax, gathered = starts[name]
                self[name] = QTensor(step.all_gather_done(e, q), step.all_gather_done(e, amax) if gathered else amax)
                return self[name]
        return Lazy(ready)

    def reduce_grad(self, e, name, kind, grad, where):
        """A weight gradient onto its local shard: reduce-scatter over 'fsdp' (all-reduce for
        the replicated norms), then all-reduce over the DCN 'data' axis with several slices."""
        c = self.c
        if c.fsdp > 1:
            if kind == "norm":
                grad = self.all_reduce(e, grad, c.fsdp_groups, "fsdp", where)
            else:
                dim = 0 if kind == "col" else 1
                grad = self.reduce_scatter_done(e, self.reduce_scatter(e, grad, dim, c.fsdp_groups, "fsdp", c.fsdp,
                                                                       where))
        if c.slices > 1:
            grad = self.all_reduce(e, grad, c.dcn_groups, "dcn", where)
        return grad

    def adamw(self, e, p, g, mom, vel):
        """AdamW (b1 0.9, b2 0.95, eps 1e-8, weight decay 0.1, lr 3e-5 with the bias corrections folded in)."""
        def body(f, q):
            sh = q[0].dims
            gf = f.convert(q[1], F32)
            m2 = f.add(f.mul(q[2], f.const("0.9", F32, sh)), f.mul(gf, f.const("0.1", F32, sh)))
            v2 = f.add(f.mul(q[3], f.const("0.95", F32, sh)), f.mul(f.mul(gf, gf), f.const("0.05", F32, sh)))
            upd = f.op("divide", m2.shape, [m2, f.add(f.un("sqrt", v2), f.const("1e-08", F32, sh))])
            upd = f.add(upd, f.mul(q[0], f.const("0.1", F32, sh)))
            p2 = f.sub(q[0], f.mul(upd, f.const("3e-05", F32, sh)))
            return f.op("tuple", [p2.shape, m2.shape, v2.shape], [p2, m2, v2])
        t = self.m.fusion(e, "kLoop", "loop_multiply_fusion", [p, g, mom, vel], body, None)
        return [e.op("get-tuple-element", s, [t], f"index={k}") for k, s in enumerate((p.shape, mom.shape, vel.shape))]

    def one_hot(self, e, ids):
        """one-hot [B,S,VL] bf16 of token ids over this device's vocabulary rows."""
        c = self.c

        def body(f, p):
            sh = (c.B, c.S, c.VL)
            io = f.op("iota", (S32, sh), [], "iota_dimension=2")
            eq = f.op("compare", (PRED, sh), [io, f.bcast(p[0], sh, (0, 1))], "direction=EQ")
            return f.convert(eq, BF16)
        return self.m.fusion(e, "kLoop", "loop_convert_fusion", [ids], body, None)

    def loss(self, e, logits, labels):
        """Softmax cross entropy over the vocabulary (split over 'tensor'): the loss and dlogits."""
        c, m = self.c, self.m
        sh = logits.dims
        mx = m.fusion(e, "kInput", "input_reduce_fusion", [logits],
                      lambda f, p: f.reduce(f.convert(p[0], F32), (2,), "region_1.5", init="-inf"), None)
        mx = self.tp_sum(e, mx, "logits max", "region_1.5")

        def exps(f, p):
            return f.un("exponential", f.sub(f.convert(p[0], F32), f.bcast(p[1], sh, (0, 1))))
        se = m.fusion(e, "kInput", "input_reduce_fusion", [logits, mx],
                      lambda f, p: f.reduce(exps(f, p), (2,), "region_0.1"), None)
        se = self.tp_sum(e, se, "softmax sum")

        def label_mask(f, ids):
            io = f.op("iota", (S32, sh), [], "iota_dimension=2")
            return f.op("compare", (PRED, sh), [io, f.bcast(ids, sh, (0, 1))], "direction=EQ")

        def picked(f, p):
            lf = f.convert(p[0], F32)
            return f.reduce(f.op("select", lf.shape, [label_mask(f, p[1]), lf, f.const("0", F32, sh)]), (2,),
                            "region_0.1")
        ll = self.tp_sum(e, m.fusion(e, "kInput", "input_reduce_fusion", [logits, labels], picked, None), "label logit")

        def total(f, p):
            per = f.sub(f.add(f.un("log", p[0]), p[1]), p[2])
            return f.reduce(per, (0, 1), "region_0.1")
        loss = m.fusion(e, "kInput", "input_reduce_fusion", [se, mx, ll], total, None)
        tokens = c.B * c.S * c.devices // c.tp

        def dlog(f, p):  # logits, mx, se, labels
            pr = f.op("divide", (F32, sh), [exps(f, p), f.bcast(p[2], sh, (0, 1))])
            oh = f.convert(label_mask(f, p[3]), F32)
            return f.convert(f.mul(f.sub(pr, oh), f.const(repr(1.0 / tokens), F32, sh)), BF16)
        return loss, m.fusion(e, "kLoop", "loop_convert_fusion", [logits, mx, se, labels], dlog, None)

    def build(self):
        c, m = self.c, self.m
        e = Comp(m, "main")
        B, S, D, L = c.B, c.S, c.D, c.L
        tokens = e.param((S32, (B, S)), "tokens.0")
        labels = e.param((S32, (B, S)), "targets.1")
        cos, sin = e.param(bf(S, c.HD), "rope_cos.2"), e.param(bf(S, c.HD), "rope_sin.3")
        params, moments = {}, {}
        shapes = {"table": (F32, (c.VL, D // c.fsdp)), "final_norm": (F32, (c.DT,))}
        if not c.tied:  # logits_dense: [embed, vocab], embed over 'fsdp', vocab over 'tensor'
            shapes["logits"] = (F32, (D // c.fsdp, c.VL))
        # a layer's weights are stacked over the scan's iterations: the layers, or with a mixed attention
        # pattern the blocks, one stack per layer of a block (key 'wq_3': wq of each block's fourth layer)
        P, NB = c.P, c.blocks

        def key(name, j):
            return name if P == 1 else f"{name}_{j}"
        for j in range(P):
            for name, dims, kind in c.weights():
                shapes[key(name, j)] = (F32, (NB,) + c.shard(dims, kind))
        for name, shape in shapes.items():
            params[name] = e.param(shape, f"{name}.{len(e.params)}")
        for which in ("mu", "nu"):
            for name, shape in shapes.items():
                moments[(which, name)] = e.param(shape, f"{which}_{name}.{len(e.params)}")
        names = [name for name, _, _ in c.weights()]
        layer_names = [key(name, j) for j in range(P) for name in names]
        kinds = {key(name, j): kind for j in range(P) for name, _, kind in c.weights()}

        # embedding (vocabulary over 'tensor', embed over 'fsdp'): the table is all-gathered over 'fsdp';
        # use_iota_embed multiplies it by the one-hot tokens, otherwise the tokens' rows are gathered
        table = e.convert(params["table"], BF16)
        if c.fsdp > 1:
            table = self.all_gather_done(e, self.all_gather(e, table, 1, c.fsdp_groups, "fsdp", c.fsdp, "embedding"))
        if c.iota_embed:
            oh_tokens = self.one_hot(e, tokens)
            x0 = self.tp_scatter(e, dot(e, oh_tokens, table, (B, S, D), (2,), (0,)), "embedding")
        else:
            ids = e.op("bitcast", (S32, (B, S, 1)), [tokens])
            x0 = e.op("gather", bf(B, S, D), [table, ids], "offset_dims={2}, collapsed_slice_dims={0}, "
                      f"start_index_map={{0}}, index_vector_dim=2, slice_sizes={{1,{D}}}")
        if c.tied:
            wlogits = None
        else:
            wlogits = e.convert(params["logits"], BF16)
            if c.fsdp > 1:
                wlogits = self.all_gather_done(e, self.all_gather(e, wlogits, 0, c.fsdp_groups, "fsdp", c.fsdp,
                                                                  "logits weights"))

        # forward scan: save what the remat policy keeps for the backward
        keep = c.saved()
        nk = len(keep) * P  # saved stacks, one per saved value and layer of a block
        saved0 = [e.op("broadcast", (dt, (NB,) + dims), [e.const("0", dt, ())], "dimensions={}")
                  for _ in range(P) for _, (dt, dims), _ in keep]

        offloaded = {n for n, _, where in keep if where == "offload"}

        class Offloading(dict):
            """XLA's activation offloading: each offloaded value starts its DMA into host memory
            (MoveToHost) as soon as it is made, so the transfer overlaps the rest of the layer."""

            def __init__(self, f):
                super().__init__()
                self.f, self.host = f, {}

            def __setitem__(self, name, val):
                super().__setitem__(name, val)
                if name in offloaded and name not in self.host:
                    self.host[name] = self.f.op("custom-call", val.shape, [val], 'custom_call_target="MoveToHost"')

        def fwd_body(f, v):
            i, x, saved = v[0], v[1], v[2:2 + nk]
            stacks = dict(zip(layer_names, v[2 + nk:2 + nk + len(layer_names)]))
            self.cos, self.sin = v[-2], v[-1]
            stores = []
            W = self.layer_weights(f, {n: stacks[key(n, 0)] for n in names}, i)
            for j in range(P):
                s = Offloading(f)
                # the next layer's weight gathers are issued before this layer runs, so they overlap it
                W_next = self.layer_weights(f, {n: stacks[key(n, j + 1)] for n in names}, i) if j + 1 < P else None
                x, _ = self.layer_fwd(f, x, W, values=s, kind=c.pattern[j])
                stores += [self.store(f, st, s.host[n] if where == "offload" else s[n], i)
                           for (n, _, where), st in zip(keep, saved[j * len(keep):(j + 1) * len(keep)])]
                W = W_next
            return [x] + stores + v[2 + nk:]
        zero = e.const("0", S32, ())
        what = ", ".join(f"{n}{' (offloaded to host memory)' if where == 'offload' else ''}" for n, _, where in keep)
        scan = f"the {L} layers" if P == 1 else f"the {NB} blocks of {P} layers ({', '.join(c.pattern)} attention)"
        out = self.loop(e, "forward", NB, [zero, x0] + saved0 + [params[n] for n in layer_names] + [cos, sin],
                        fwd_body, f"Forward scan over {scan}: each layer saves {what} "
                        f"({c.remat} remat).")
        xL, saved = out[1], out[2:2 + nk]

        # final norm, logits (tied), loss
        self.cos, self.sin = cos, sin
        fnorm = e.convert(params["final_norm"], BF16)
        xn, ss = self.norm_fwd(e, xL, fnorm, "final RMSNorm")
        xg = self.tp_gather(e, xn, "final norm output")
        if c.tied:
            logits = dot(e, xg, table, (B, S, c.VL), (2,), (1,))
            loss, dlogits = self.loss(e, logits, labels)
            d_table = dot(e, dlogits, xg, (c.VL, D), (0, 1), (0, 1))
            dxn = self.tp_scatter(e, dot(e, dlogits, table, (B, S, D), (2,), (0,)), "logits input gradient")
        else:
            logits = dot(e, xg, wlogits, (B, S, c.VL), (2,), (0,))
            loss, dlogits = self.loss(e, logits, labels)
            d_logits = dot(e, xg, dlogits, (D, c.VL), (0, 1), (0, 1))
            dxn = self.tp_scatter(e, dot(e, dlogits, wlogits, (B, S, D), (2,), (1,)), "logits input gradient")
        dxL, g_fnorm = self.norm_bwd(e, None, dxn, xL, ss, fnorm, "final RMSNorm")

        # backward scan (reverse), recomputing each layer's forward from its saved input
        grads0 = [e.op("broadcast", (BF16, shapes[n][1]), [e.const("0", BF16, ())], "dimensions={}")
                  for n in layer_names]
        nl = len(layer_names)

        def bwd_body(f, v):
            i, dy, saved_v = v[0], v[1], v[2:2 + nk]
            stacks = dict(zip(layer_names, v[2 + nk:2 + nk + nl]))
            self.cos, self.sin = v[2 + nk + nl], v[3 + nk + nl]
            gstacks = dict(zip(layer_names, v[4 + nk + nl:]))
            idx = f.sub(f.const(str(NB - 1), S32, ()), i)
            new, W = {}, None
            for j in reversed(range(P)):  # a block's layers in reverse
                got = {n: self.fetch(f, st, idx) if where == "offload" else self.layer_slice(f, st, idx)
                       for (n, _, where), st in zip(keep, saved_v[j * len(keep):(j + 1) * len(keep)])}
                if W is None:
                    W = self.layer_weights(f, {n: stacks[key(n, j)] for n in names}, idx)
                W_next = self.layer_weights(f, {n: stacks[key(n, j - 1)] for n in names}, idx) if j > 0 else None
                # with tensor parallelism (and no post-norm before it) dy's gather over 'tensor' does not
                # wait for the recomputation: started before it, it runs under it
                early = self.tp_overlaps() and not c.post_norms
                dy_start = self.tp_gather_start(f, dy, "MLP output gradient") if early else None
                _, s = self.layer_fwd(f, got["x"], W, got, recompute=True, kind=c.pattern[j])
                dy, g = self.layer_bwd(f, dy, s, W, dy_start)
                for n in names:
                    k = key(n, j)
                    new[k] = self.store(f, gstacks[k], self.reduce_grad(f, n, kinds[k], g[n],
                                                                        f"{n} gradient (per layer)"), idx)
                W = W_next
            return [dy] + v[2:4 + nk + nl] + [new[k] for k in layer_names]
        again = f"the layer's forward up to its MLP activation around what it saved ({c.remat} remat)"
        if c.post_norms:
            again = f"the layer's forward up to its MLP output (its post-norm's input) around what it saved ({c.remat} remat)"
        out = self.loop(e, "backward", NB, [zero, dxL] + saved + [params[n] for n in layer_names] + [cos, sin] + grads0,
                        bwd_body, f"Backward scan over {scan} in reverse: recompute {again}, then its "
                        "backward; gradients reduce-scattered.")
        dx0 = out[1]
        grads = dict(zip(layer_names, out[4 + nk + nl:]))

        # embedding backward, table and final-norm gradients
        dx0g = self.tp_gather(e, dx0, "embedding gradient")
        if c.iota_embed and c.tied:  # the one-hot dot's gradient, added to the logits' in its output fusion
            d_emb = m.fusion(e, "kOutput", "dot_add_fusion", [oh_tokens, dx0g, d_table],
                             lambda f, p: f.add(dot(f, p[0], p[1], (c.VL, D), (0, 1), (0, 1)), p[2]), None)
        elif c.iota_embed:
            d_emb = dot(e, oh_tokens, dx0g, (c.VL, D), (0, 1), (0, 1))
        else:  # the gather's gradient: the rows scatter-added into a zero table
            zeros = e.op("broadcast", bf(c.VL, D), [e.const("0", BF16, ())], "dimensions={}")
            d_emb = e.op("scatter", bf(c.VL, D), [zeros, ids, dx0g], "update_window_dims={2}, "
                         "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=2, "
                         "to_apply=%add")
            if c.tied:
                d_emb = m.fusion(e, "kLoop", "loop_add_fusion", [d_emb, d_table], lambda f, p: f.add(p[0], p[1]), None)
        if not c.tied:
            grads["logits"] = self.reduce_grad(e, "logits", "col", d_logits, "logits weight gradient")
        grads["table"] = self.reduce_grad(e, "table", "row", d_emb, "embedding table gradient")
        grads["final_norm"] = self.reduce_grad(e, "final_norm", "norm", g_fnorm, "final norm gradient")

        # AdamW on every local shard
        new_p, new_m, new_v = [], [], []
        for name in shapes:
            p2, m2, v2 = self.adamw(e, params[name], grads[name], moments[("mu", name)], moments[("nu", name)])
            new_p.append(p2), new_m.append(m2), new_v.append(v2)
        outs = [loss] + new_p + new_m + new_v
        root = e.op("tuple", [o.shape for o in outs], outs)
        comps = [(f"// {comment}\n" if comment else "") + text for comment, text in m.comps]
        head = f"HloModule jit_train_step, is_scheduled=true, num_partitions={c.devices}\n\n"
        return head + self.regions + "\n" + "\n".join(comps) + "\n" + e.text(root, entry=True)


def emit(dims, per_device_batch, seq, fsdp, tensor, slices=1, remat="full", precision="bf16", context=1):
    """(module text, Step) of one training step; raises ValueError for an impossible mesh.
    remat: full (only each layer's input is saved) or minimal (its projections too).
    precision: bf16, or fp8_full (MaxText's Qwix fp8 training of the decoder layers' dots).
    context: devices each sequence is split over (fsdp devices per context group: `fsdp`)."""
    st = Step(Config(dims, per_device_batch, seq, fsdp, tensor, slices, remat, precision, context))
    return st.build(), st
