"""workloads/gen/maxtext_step.py: every default-decoder row of train_step.csv
parses, and the per-device TFLOP count equals MaxText's formula written out by
hand for one config (gpt-style 16B: emb 5120, 32 heads x 256, mlp 32768 relu,
32 layers, vocab 32768).

With --tpusim, the whole-step module (maxtext_step.py --emit, maxtext_hlo.py)
of a small decoder on an fsdp 4 x tensor 2 x 3-slice mesh, with full and with
minimal remat: its FLOPs (`tpusim analyze`) against the step's matmul and
flash-attention FLOPs counted by hand here, and its collectives (`tpusim run`) against the counts the
structure implies (two all-gathers and one reduce-scatter per weight matrix
and layer over 'fsdp', a DCN all-reduce per gradient)."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

SRC = None
TPUSIM = None


def expand_iota(groups):
    """The device lists of XLA's iota replica groups '[G,S]<=[dims]' or '[G,S]<=[dims]T(perm)': the device ids
    laid out in dims (last fastest), transposed by perm, read in order and cut into G groups of S."""
    import re
    m = re.fullmatch(r"\[(\d+),(\d+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", groups)
    g, size = int(m.group(1)), int(m.group(2))
    dims = [int(x) for x in m.group(3).split(",")]
    perm = [int(x) for x in m.group(4).split(",")] if m.group(4) else list(range(len(dims)))
    strides = [1] * len(dims)
    for i in range(len(dims) - 2, -1, -1):
        strides[i] = strides[i + 1] * dims[i + 1]
    ids = [0]
    for axis in perm:  # the transposed array's index, its last axis fastest
        ids = [i + k * strides[axis] for i in ids for k in range(dims[axis])]
    return [ids[j * size:(j + 1) * size] for j in range(g)]


def dead(text):
    """Instructions of an HLO module's text that nothing reads (the ROOTs, parameters and tuple reads aside)."""
    import re
    defs = re.findall(r"^\s*(ROOT )?%([\w.\-]+) = [^\n]*?\b([a-z\-]+)\(", text, re.M)
    return [n for root, n, op in defs if not root and op not in ("parameter", "get-tuple-element")
            and len(re.findall("%" + re.escape(n) + r"(?![\w.\-])", text)) < 2]


class MaxTextStep(unittest.TestCase):
    def setUp(self):
        sys.path.insert(0, os.path.join(SRC, "workloads", "gen"))
        import maxtext_step
        self.m = maxtext_step
        self.rows = maxtext_step.read_rows(os.path.join(SRC, "tests", "validation", "refs", "hw", "train_step.csv"))

    def test_default_decoder_rows_parse(self):
        default = [r for r in self.rows if r["model_spec"].startswith("MaxText default decoder")]
        self.assertGreater(len(default), 0)
        for r in default:
            self.assertIsNotNone(self.m.parse_spec(r["model_spec"]), r["model"])

    def test_named_configs_and_remat_columns(self):
        # llama3.1-8b as MaxText's configs/models/llama3.1-8b.yml gives it; the v6e rows name it with a custom
        # policy that offloads the layer input and the Q/K/V/output projections.
        rows = [r for r in self.rows if r["model"] == "llama3.1-8b" and r["chip"] == "v6e"]
        self.assertGreater(len(rows), 0)
        for r in rows:
            d = self.m.parse_spec(r["model_spec"])
            self.assertEqual((d["emb"], d["heads"], d["kv_heads"], d["mlp"], d["layers"], d["vocab"]),
                             (4096, 32, 8, 14336, 32, 128256))
            self.assertEqual((d["mlp_matrices"], d["tied"], d["iota_embed"]), (3, False, False))
            self.assertIsNone(self.m.supported(r), r["slice"])
            policy, custom = self.m.remat(r)
            self.assertEqual(policy, "custom")
            self.assertEqual(custom["decoder_layer_input"], "offload")
        import maxtext_hlo
        plan = maxtext_hlo.remat_plan("custom", {"decoder_layer_input": "offload", "query_proj": "offload",
                                                 "context": "device", "mlpwo": "remat"})
        self.assertEqual(plan, {"x": "offload", "q_proj": "offload"})  # context and mlpwo change nothing
        self.assertEqual(maxtext_hlo.remat_plan("qkv_proj_offloaded"),
                         {"x": "device", "q_proj": "offload", "k_proj": "offload", "v_proj": "offload"})
        with self.assertRaises(ValueError):
            maxtext_hlo.remat_plan("custom", {"query_projection": "offload"})
        with self.assertRaises(ValueError):
            maxtext_hlo.remat_plan("save_everything")
        # gpt3-175b (configs/models/gpt3-175b.yml): MHA, gelu, the iota embedding tied to the logits, no RoPE
        gpt3 = next(r for r in self.rows if r["model"] == "gpt3-175b")
        d = self.m.parse_spec(gpt3["model_spec"])
        self.assertEqual((d["emb"], d["heads"], d["kv_heads"], d["mlp"], d["layers"], d["vocab"], d["activation"]),
                         (12288, 96, 96, 49152, 96, 50304, "gelu"))
        self.assertIsNone(self.m.supported(gpt3))
        # every row is generated; a model whose dimensions are not here says so
        self.assertEqual([r["model"] for r in self.rows if self.m.supported(r)], [])
        other = dict(gpt3, model_spec="MaxText model_name=deepseek3-671b")
        self.assertIn("not in MODEL_CONFIGS", self.m.supported(other))

    def test_logged_tokens_are_the_rows_batch(self):
        # A logged MaxText step reports total_weights, the step's global tokens: per-device batch x sequence
        # length x JAX devices (two per TPU7x chip). A row whose batch disagrees was recorded from a config other
        # than the logged run's (the llama2-70b row once carried its tag's batch 3 for a log of batch 2).
        import re
        checked = 0
        for i, r in enumerate(self.rows):
            m = re.search(r"total_weights (\d+)", r["also_reported"])
            if not m:
                continue
            devices = int(r["chips"]) * self.m.devices_per_chip(r)
            self.assertEqual(float(r["per_device_batch"]) * int(r["seq_len"]) * devices, int(m.group(1)),
                             f"row {i} {r['model']} {r['slice']}")
            self.assertIn(f"per_device_batch_size={r['per_device_batch']};", r["config"], f"row {i}")
            checked += 1
        self.assertGreaterEqual(checked, 19)

    def test_gemma3_rows(self):
        # gemma3-12b (configs/models/gemma3-12b.yml): blocks of five sliding-window layers and one global,
        # gated gelu, post-norms, tied logits; the recipes set use_iota_embed and a 120 MiB scoped VMEM limit.
        # Its TFLOP per device by MaxText's mixed-attention formula is the published TFLOP/s/device times the
        # published step time (e.g. 349.442 x 7.318 s = 2557.2 TFLOP).
        import re
        rows = [r for r in self.rows if r["model"] == "gemma3-12b"]
        self.assertEqual(len(rows), 3)
        for r in rows:
            self.assertIsNone(self.m.supported(r), r["slice"])
            d = self.m.row_dims(r)
            self.assertEqual((d["emb"], d["heads"], d["kv_heads"], d["head_dim"], d["mlp"], d["layers"], d["vocab"]),
                             (3840, 16, 8, 256, 15360, 48, 262144))
            self.assertEqual(d["pattern"], ("local",) * 5 + ("global",))
            self.assertTrue(d["iota_embed"] and d["tied"] and d["post_norms"])
            published = float(re.search(r"TFLOP/s/device ([\d.]+)", r["also_reported"]).group(1)) * float(r["measured"])
            self.assertAlmostEqual(self.m.per_device_tflop(d, 1, int(r["seq_len"])) / published, 1.0, delta=1e-3)
            self.assertEqual(self.m.scoped_vmem_limit_kib(r), 122880)
        # the flag group without its value is the row's reason
        self.assertIn("without its vmem_limit", self.m.supported(dict(rows[0], xla_flags="CUSTOM_VMEM_LIMIT_FLAG")))
        # the v6e LLaMA-style recipes set use_iota_embed (their tuning_params), over base.yml's gather
        llama = next(r for r in self.rows if r["model"] == "llama3.1-8b" and r["chip"] == "v6e")
        self.assertFalse(self.m.parse_spec(llama["model_spec"])["iota_embed"])
        self.assertTrue(self.m.row_dims(llama)["iota_embed"])

    def test_mixtral_row(self):
        # mixtral-8x7b (configs/models/mixtral-8x7b.yml at tpu-recipes-v0.1.2): 8 experts of mistral's SwiGLU MLP,
        # 2 per token; the recipe (mixtral_8x7b_dropped) runs MaxText's dense_matmul with capacity factor 1.25
        # (sparse_matmul and megablox off) under MOE_VMEM_LIMIT_FLAG (80 MiB). Its TFLOP per device by MaxText's
        # formula of its tag (the router and the 2 chosen experts' MLPs; attention 12*heads*layers*head_dim*
        # seq^2*batch, no causal halving) is the published TFLOP/s/device times the step time (302.311 x 13.484 s).
        import re
        r = next(r for r in self.rows if r["model"] == "mixtral-8x7b")
        self.assertIsNone(self.m.supported(r))
        d = self.m.row_dims(r)
        self.assertEqual((d["emb"], d["heads"], d["kv_heads"], d["head_dim"], d["mlp"], d["layers"], d["vocab"],
                          d["experts"], d["experts_per_token"], d["capacity_factor"]),
                         (4096, 32, 8, 128, 14336, 32, 32000, 8, 2, 1.25))
        B, S = float(r["per_device_batch"]), int(r["seq_len"])
        published = float(re.search(r"TFLOP/s/device ([\d.]+)", r["also_reported"]).group(1)) * float(r["measured"])
        formula = (6 * self.m.matmul_params(d) * S * B + 12 * d["heads"] * d["layers"] * d["head_dim"] * S * S * B) / 1e12
        self.assertAlmostEqual(formula / published, 1.0, delta=1e-4)
        self.assertEqual(self.m.scoped_vmem_limit_kib(r), 81920)
        import maxtext_hlo
        c = maxtext_hlo.Config(*self.m.step_args(r))
        self.assertEqual(c.C, 1280)  # ceil(4096 x 2 / 8) x 1.25 tokens of a sequence per expert
        # base.yml's defaults (sparse_matmul, no capacity factor: dropless grouped matmuls) are not generated
        for config in (r["config"].replace("sparse_matmul=False", "sparse_matmul=True"),
                       r["config"].replace("capacity_factor=1.25", "capacity_factor=-1")):
            self.assertIn("without a capacity factor", self.m.supported(dict(r, config=config)))
        self.assertIn("capacity_factor=x", self.m.supported(dict(r, config=r["config"].replace("=1.25", "=x"))))

    def test_no_dead_instructions(self):
        # Every value the generator writes is read (XLA's dead-code elimination would drop one that is not,
        # and tpusim would cost it): default decoder with full and minimal remat and tensor parallelism,
        # a LLaMA-style decoder offloading to host memory, a gpt3-style one (gelu, no RoPE).
        import maxtext_hlo

        small = dict(emb=512, heads=4, kv_heads=4, head_dim=128, mlp=2048, mlp_matrices=2, layers=2, vocab=1024)
        llama = dict(small, kv_heads=2, mlp_matrices=3, tied=False, iota_embed=False)
        gpt3 = dict(small, activation="gelu", rope=False)
        gemma3 = dict(small, kv_heads=2, mlp_matrices=3, activation="gelu", layers=6, pattern=("local", "local", "global"),
                      window=32, post_norms=True)
        offload = ("custom", {n: "offload" for n in ("decoder_layer_input", "query_proj", "out_proj")})
        moe = dict(llama, experts=4, experts_per_token=2, capacity_factor=1.25)
        for dims, tp, remat in ((small, 2, "full"), (small, 2, "minimal"), (llama, 1, offload), (gpt3, 1, "full"),
                                (gemma3, 2, "full"), (gemma3, 1, offload), (moe, 1, offload), (moe, 1, "full")):
            text, _ = maxtext_hlo.emit(dims, 2, 256, 4, tp, 2, remat)
            self.assertEqual(dead(text), [], (dims, remat))
        for dims in (llama, gpt3):  # fp8_full (one slice, no tensor parallelism)
            text, _ = maxtext_hlo.emit(dims, 2, 256, 4, 1, 1, "full", "fp8_full")
            self.assertEqual(dead(text), [], (dims, "fp8_full"))

    def test_tensor_parallel_backward_runs_weight_gradients_under_its_collectives(self):
        # XLA's latency-hiding scheduler issues independent work between an async collective's start and
        # done: in a layer's backward nothing reads a weight gradient, so each tensor-parallel collective
        # there runs under some of them (MLP input gradient's reduce-scatter: the MLP input projections';
        # attention output gradient's gather: the MLP output projection's; attention input gradient's
        # reduce-scatter: the four attention projections'), and dy's gather under the recomputation. The
        # forward's collectives have nothing independent to run under.
        import maxtext_hlo

        small = dict(emb=512, heads=4, kv_heads=4, head_dim=128, mlp=2048, mlp_matrices=2, layers=2, vocab=1024)
        for dims, wi in ((small, 1), (dict(small, mlp_matrices=3), 2)):
            text, _ = maxtext_hlo.emit(dims, 2, 256, 4, 2, 1, "full")
            bodies = {}
            for block in text.split("\n\n"):
                for name in ("forward_body", "backward_body"):
                    if re.search(rf"^%{name}\.\d+ ", block, re.M):
                        bodies[name] = block.splitlines()
            windows = {}
            for name, lines in bodies.items():
                found = []
                for i, line in enumerate(lines):
                    # a tensor-parallel collective moves an activation [B, S, D/tp] <-> [B, S, D] (3-D);
                    # fsdp's gather moves 2-D weight shards
                    if not re.search(r"= \(+bf16\[\d+,\d+,\d+\].*(all-gather-start|async-start)\(", line):
                        continue
                    start = line.split("=")[0].strip().lstrip("%")
                    end = next(j for j in range(i + 1, len(lines)) if re.search(rf"-done\(.*%{re.escape(start)}\b", lines[j]))
                    inside = lines[i + 1:end]
                    wgrads = sum(1 for l in inside if " dot(" in l and "lhs_contracting_dims={0,1}" in l)
                    dots = sum(1 for l in inside if " dot(" in l)
                    found.append((wgrads, dots))
                windows[name] = found
            self.assertTrue(windows["forward_body"], dims)
            self.assertTrue(all(d == 0 for _, d in windows["forward_body"]), windows["forward_body"])
            backward = windows["backward_body"]
            # the outermost windows in order: dy's gather (the recomputation: its projections, no weight
            # gradient), the MLP input gradient's reduce-scatter, the attention output gradient's gather,
            # the attention input gradient's reduce-scatter; the recomputation's own forward collectives
            # nest in the first and hold nothing
            outer = [w for w in backward if w[1] > 0]
            self.assertEqual([w[0] for w in outer], [0, wi, 1, 4], backward)
            self.assertGreaterEqual(outer[0][1], 3 + 1 + wi)  # q, k, v, o and the MLP input projections

    def test_fp8_full_quantizes_the_decoder_layers_dots(self):
        # MaxText's fp8_full (Qwix rule on decoder/.*layers.*): every dot of a decoder layer runs on fp8 values
        # (e4m3 weights and activations, e5m2 incoming gradients), the logits and embedding stay bf16; each
        # weight shard is quantized before its FSDP all-gather, which then moves 1 byte per element.
        import re
        import maxtext_hlo
        rows = [r for r in self.rows if r["precision"] == "fp8_full" and float(r["per_device_batch"]) >= 1]
        self.assertGreater(len(rows), 0)
        for r in rows:
            self.assertIsNone(self.m.supported(r), r["slice"])
        self.assertIn("precision int4", self.m.supported(dict(rows[0], precision="int4")))
        fsdp = 4
        llama = dict(emb=512, heads=4, kv_heads=2, head_dim=128, mlp=2048, mlp_matrices=3, layers=2, vocab=1024,
                     tied=False, iota_embed=False)
        for tensor, slices in ((2, 1), (1, 2)):  # the absmax over a batch split over them is not generated
            with self.assertRaises(ValueError):
                maxtext_hlo.Config(llama, 2, 256, fsdp, tensor, slices, "full", "fp8_full")
        texts, steps = {}, {}
        for precision in ("bf16", "fp8_full"):
            texts[precision], steps[precision] = maxtext_hlo.emit(llama, 2, 256, fsdp, 1, 1, "full", precision)
        dots = [l for l in texts["fp8_full"].splitlines() if " dot(" in l]
        fp8 = [l for l in dots if "dot(f8" in l]
        # 7 forward dots in the forward scan's body; in the backward's, the recomputation's 6 (up to the MLP
        # activation) and 14 (an input gradient and a weight gradient per matrix)
        self.assertEqual(len(fp8), 7 + 6 + 14)
        self.assertTrue(all(re.search(r"= f32\[", l) for l in fp8))  # rescaled in f32 in the output fusion
        self.assertEqual(sum("f8e5m2" in l for l in fp8), 14)   # the backward's, one gradient operand each
        self.assertEqual(len(dots) - len(fp8), 3)  # bf16: the logits forward, its input and weight gradients
        self.assertEqual(sum(" dot(" in l for l in texts["bf16"].splitlines()), 7 + 6 + 14 + 3)

        def gathers(step):
            return sum(b for kind, b, axis, where in step.collectives
                       if kind == "all-gather" and axis == "fsdp" and where.endswith("(per layer)"))
        # Per layer both gather each matrix twice (forward; backward, for the recomputation and the input
        # gradient), bf16 at 2 bytes an element, fp8 at 1: the backward reuses the forward's quantized weight
        # (Qwix keeps the forward's quantized residuals). One scan body each: the gathers are written once.
        D, Q, KV, F = 512, 4 * 128, 2 * 128, 2048
        size = {"wq": D * Q, "wk": D * KV, "wv": D * KV, "wo": Q * D, "wi_0": D * F, "wi_1": D * F, "wo_mlp": F * D}
        self.assertEqual(gathers(steps["bf16"]), sum(2 * 2 * n for n in size.values()))
        self.assertEqual(gathers(steps["fp8_full"]), sum(2 * 1 * n for n in size.values()))

    def test_context_parallel_rows(self):
        # The TPU7x 128k rows: ici_context_parallelism=8 devices (a chip's two devices in one context group:
        # 4 chips), fsdp over the rest (64), 0.125 sequences per device: each chip holds a 32768-token chunk.
        import maxtext_hlo
        rows = [r for r in self.rows if "ici_context_parallelism" in r["parallelism"]]
        self.assertGreater(len(rows), 0)
        for r in rows:
            self.assertIsNone(self.m.supported(r), r["slice"])
            self.assertEqual(self.m.context(r), 4)
            self.assertEqual(self.m.mesh(r), (64, 1, 1))
            self.assertIn("context 4", self.m.mesh_text(r))
        # The step per device: sequence chunk S/cp; keys and values all-gathered over 'context' and cut to half
        # the sequence for an unmasked kernel of the causal work's share; their gradients padded back and
        # reduce-scattered; the weights sharded and gathered over fsdp x context.
        dims = dict(emb=512, heads=4, kv_heads=2, head_dim=128, mlp=1536, mlp_matrices=3, layers=2, vocab=1024,
                    tied=False, iota_embed=False)
        text, step = maxtext_hlo.emit(dims, 0.5, 1024, 2, 1, 1, "full", "bf16", 2)
        self.assertEqual((step.c.B, step.c.S, step.c.kv_len, step.c.fsdp), (1, 512, 512, 4))
        flash = [l for l in text.splitlines() if "te_fused_attn" in l]
        self.assertEqual(len(flash), 3)  # forward, recomputed forward, backward
        for l in flash:
            self.assertIn("q_max_seqlen = 512", l)
            self.assertIn("kv_max_seqlen = 512", l)
            self.assertIn("mask_type = 0", l)
        kinds = {}
        for kind, _, axis, where in step.collectives:
            kinds[(kind, axis)] = kinds.get((kind, axis), 0) + 1
        self.assertEqual(kinds[("all-gather", "context")], 4)      # K, V in each scan body
        self.assertEqual(kinds[("reduce-scatter", "context")], 2)  # dK, dV
        # 'context' is faster than 'fsdp' in the device mesh: its groups are consecutive devices {0,1}, {2,3};
        # the weights' groups (fsdp x context) are all four
        self.assertEqual(expand_iota(step.c.cp_groups), [[0, 1], [2, 3]])
        self.assertEqual(expand_iota(step.c.fsdp_groups), [[0, 1, 2, 3]])
        with self.assertRaises(ValueError):  # chunks of the load-balanced split
            maxtext_hlo.Config(dims, 0.5, 1002, 2, 1, 1, "full", "bf16", 2)

    def test_405b_and_fsdp_over_dcn(self):
        # llama3.1-405b on 2x v6e-256 with dcn_fsdp_parallelism=2: FSDP spans both slices (512 devices), no
        # DCN data axis.
        r = next(r for r in self.rows if r["model"] == "llama3.1-405b" and r["chip"] == "v6e")
        d = self.m.parse_spec(r["model_spec"])
        self.assertEqual((d["emb"], d["heads"], d["kv_heads"], d["head_dim"], d["mlp"], d["layers"], d["vocab"]),
                         (16384, 128, 8, 128, 53248, 126, 128256))
        self.assertIsNone(self.m.supported(r))
        self.assertEqual(self.m.mesh(r), (512, 1, 1))
        # The layer count (commented out in the config file): the row's published TFLOP/s/device times its step
        # time is MaxText's TFLOP formula of its tag (attention 12*heads*layers*head_dim*seq^2*batch, no causal
        # halving) for 126 layers, to the figures' rounding.
        reported = float(r["also_reported"].split("TFLOP/s/device")[1].split(";")[0]) * float(r["measured"])
        B, S = float(r["per_device_batch"]), int(r["seq_len"])
        formula = (6 * self.m.matmul_params(d) * S * B + 12 * d["heads"] * d["layers"] * d["head_dim"] * S * S * B) / 1e12
        self.assertAlmostEqual(reported / formula, 1.0, delta=1e-4)
        # dcn_fsdp over only some of the slices is refused with the reason
        part = dict(r, num_slices="4", chips="1024", parallelism="ici_fsdp_parallelism=256;dcn_fsdp_parallelism=2")
        self.assertIn("part of the slices", self.m.supported(part))
        every = dict(part, parallelism="ici_fsdp_parallelism=256;dcn_fsdp_parallelism=-1")
        self.assertEqual(self.m.mesh(every), (1024, 1, 1))
        data = dict(part, parallelism="ici_fsdp_parallelism=256;dcn_data_parallelism=4")
        self.assertEqual(self.m.mesh(data), (256, 1, 4))

    def test_tpu7x_rows_run_a_chip_as_one_megacore_device(self):
        # TPU7x: two JAX devices per chip. ici_fsdp -1 over a 4x4x4 slice is 128 devices = 64 chips; the
        # generated step is per chip with both devices' batch (2 x per_device_batch), run with megacore=true.
        r = next(r for r in self.rows if r["chip"] == "v7" and r["model"] == "llama3.1-70b" and
                 r["precision"] == "bf16" and r["topology_per_slice"] == "4x4x4")
        self.assertIsNone(self.m.supported(r))
        self.assertEqual(int(r["chips"]), 64)
        self.assertEqual(self.m.mesh(r), (64, 1, 1))
        self.assertEqual(self.m.chip_batch(r), 2 * float(r["per_device_batch"]))
        args = self.m.run_args(r)
        self.assertEqual(args[args.index("megacore=true") - 1], "--set")
        # the rows' programs may be larger than tpusim's default (405B's backward layer is)
        self.assertIn(f"simulation.max_program_instructions={self.m.PROGRAM_INSTRUCTIONS}", args)
        # an explicit device count on the fsdp axis is in devices, too
        self.assertEqual(self.m.mesh(dict(r, parallelism="ici_fsdp_parallelism=128")), (64, 1, 1))
        # tensor parallelism across a chip's two devices is not generated
        self.assertIn("whole chips", self.m.supported(dict(r, parallelism="ici_fsdp_parallelism=64;ici_tensor_parallelism=2")))
        # a v6e row is one device per chip
        v6e = next(r for r in self.rows if r["chip"] == "v6e" and r["model"] == "llama3.1-8b")
        self.assertEqual(self.m.chip_batch(v6e), float(v6e["per_device_batch"]))
        self.assertNotIn("megacore=true", self.m.run_args(v6e))

    def test_scoped_vmem_limit_of_the_rows_flags(self):
        # The XLA scoped VMEM limit a row's run set becomes core.vmem.scoped_limit: MaxText's
        # DENSE_VMEM_LIMIT_FLAG is 98304 KiB; an explicit flag is read as written; no flag, no key.
        v6e = next(r for r in self.rows if r["chip"] == "v6e" and "DENSE_VMEM_LIMIT_FLAG" in r["xla_flags"])
        self.assertEqual(self.m.scoped_vmem_limit_kib(v6e), 98304)
        self.assertIn("core.vmem.scoped_limit=98304KiB", self.m.run_args(v6e))
        explicit = dict(v6e, xla_flags="--xla_tpu_scoped_vmem_limit_kib=61440 --xla_foo=1")
        self.assertEqual(self.m.scoped_vmem_limit_kib(explicit), 61440)
        v5e = next(r for r in self.rows if r["chip"] == "v5e")
        self.assertIsNone(self.m.scoped_vmem_limit_kib(v5e))
        self.assertFalse(any(a.startswith("core.vmem.scoped_limit") for a in self.m.run_args(v5e)))
        # a malformed value is the row's reason, not a silent default
        bad = dict(v6e, xla_flags="--xla_tpu_scoped_vmem_limit_kib=64MiB")
        self.assertIn("expected a positive whole number of KiB", self.m.supported(bad))

    def test_attention_grid_steps_of_the_rows_config(self):
        # MaxText's sa_block_q, sa_block_kv, sa_block_q_dkv, sa_block_kv_dkv become core.attention.*; a row
        # without them runs base.yml's 512 (the v5e/v5p rows); a malformed value is the row's reason.
        r = next(r for r in self.rows if r["chip"] == "v7" and r["model"] == "llama3.1-70b" and
                 r["seq_len"] == "131072" and r["precision"] == "bf16")
        self.assertIn("sa_block_kv_dkv=4096", r["config"])
        self.assertEqual(self.m.attention_blocks(r),
                         {"block_q": 2048, "block_kv": 2048, "block_q_bwd": 1024, "block_kv_bwd": 4096})
        args = self.m.run_args(r)
        self.assertEqual(args[args.index("core.attention.block_kv_bwd=4096") - 1], "--set")
        v5e = next(r for r in self.rows if r["chip"] == "v5e")
        self.assertNotIn("sa_block", v5e["config"])
        self.assertEqual(set(self.m.attention_blocks(v5e).values()), {512})
        bad = dict(r, config=r["config"].replace("sa_block_q=2048", "sa_block_q=2k"))
        self.assertIn("sa_block_q=2k: expected a positive whole number of rows", self.m.supported(bad))

    def test_formula_by_hand(self):
        d = self.m.parse_spec("emb=5120,heads=32,head_dim=256,mlp=32768 (relu),layers=32,vocab=32768")
        E, H, K, F, L, V, B, S = 5120, 32, 256, 32768, 32, 32768, 2, 2048
        params = L * (4 * E * H * K + 2 * E * F) + V * E
        want = (6 * params * S * B + 6 * H * L * K * S * S * B) / 1e12
        self.assertAlmostEqual(self.m.per_device_tflop(d, B, S), want, places=6)


class WholeStep(unittest.TestCase):
    # A small default decoder (relu MLP: wi, wo) and its mesh.
    L, D, H, HD, F, V, PDB, S = 4, 512, 4, 128, 2048, 1024, 2, 256
    FSDP, TP, SLICES = 4, 2, 3

    def setUp(self):
        if TPUSIM is None:
            self.skipTest("needs --tpusim")
        sys.path.insert(0, os.path.join(SRC, "workloads", "gen"))
        import maxtext_hlo
        import maxtext_step
        d = maxtext_step.parse_spec(f"emb={self.D},heads={self.H},head_dim={self.HD},mlp={self.F} (relu),"
                                    f"layers={self.L},vocab={self.V}")
        self.tmp = tempfile.TemporaryDirectory()
        self.path, self.minimal = (os.path.join(self.tmp.name, n) for n in ("step.hlo", "minimal.hlo"))
        for path, remat in ((self.path, "full"), (self.minimal, "minimal")):
            text, _ = maxtext_hlo.emit(d, self.PDB, self.S, self.FSDP, self.TP, self.SLICES, remat)
            with open(path, "w") as f:
                f.write(text)

    def tearDown(self):
        if TPUSIM is not None:
            self.tmp.cleanup()

    def test_flops_are_the_steps_matmuls_and_attention(self):
        L, D, H, HD, F, V, S, tp = self.L, self.D, self.H, self.HD, self.F, self.V, self.S, self.TP
        B = self.PDB * tp               # the batch is split over fsdp and slices, not over tensor
        T, HL, FL, VL = B * S, H // tp, F // tp, V // tp
        dense = 2 * T * (3 * D * HL * HD + HL * HD * D + 2 * D * FL)   # Q, K, V, O, wi, wo
        attention = 4 * B * HL * S * S * HD / 2                        # QK^T and PV, causal half
        # one-hot embedding dot and its table gradient; tied logits forward and backward (x3)
        vocab = 2 * (2 * T * VL * D) + 3 * (2 * T * D * VL)
        # full remat: forward, recomputed forward, backward (2x dense; flash backward 2.5x). The recomputation
        # stops at the MLP activation: the MLP output projection (wo) only makes the layer's output, which the
        # backward does not read. minimal: the projections are saved, so only attention runs again.
        wo = 2 * T * FL * D
        for path, layer in ((self.path, 4 * dense - wo + 4.5 * attention), (self.minimal, 3 * dense + 4.5 * attention)):
            want = L * layer + vocab
            out = subprocess.run([TPUSIM, "analyze", path, "--chip", "v5e", "--format", "json"], check=True,
                                 capture_output=True, text=True).stdout
            got = json.loads(out)["total"]["flops"]
            # The rest is elementwise work (norms, RoPE, softmax, AdamW): positive and small at these sizes.
            self.assertGreaterEqual(got, want, path)
            self.assertLess(got, 1.03 * want, path)

    def test_collectives_per_step(self):
        out = subprocess.run([TPUSIM, "run", self.path, "--chip", "v5e", "--system", "4x2", "--set",
                              f"system.slices={self.SLICES}", "--mode", "symmetric", "--loops", "extrapolate",
                              "--format", "json", "-q"], check=True, capture_output=True, text=True).stdout
        count = {}
        for c in json.loads(out)["collectives"]:
            key = (c["op"], c["group_size"])
            count[key] = count.get(key, 0) + c["count"]
        matrices = 6  # wq, wk, wv, wo, wi, wo_mlp
        L = self.L
        # fsdp: each matrix gathered forward and again backward, per layer, plus the embedding table once
        self.assertEqual(count[("all-gather", self.FSDP)], 2 * L * matrices + 1)
        # fsdp: each matrix gradient reduce-scattered per layer, plus the table's
        self.assertEqual(count[("reduce-scatter", self.FSDP)], L * matrices + 1)
        # tensor (embed dimension split between blocks): per layer, 2 gathers forward, recomputed, and 2 in the
        # backward; plus the final norm's output and the embedding gradient
        self.assertEqual(count[("all-gather", self.TP)], L * (2 + 2 + 2) + 2)
        # tensor: the RMSNorm sums of squares (2 per layer, forward and recomputed) and backward sums (2), the
        # final norm's two, and the loss's max, sum and label logit
        self.assertEqual(count[("all-reduce", self.TP)], L * (2 + 2 + 2) + 2 + 3)
        # DCN: every gradient (6 matrices and 2 norms per layer, the table, the final norm) all-reduced once
        self.assertEqual(count[("all-reduce", self.SLICES)], L * (matrices + 2) + 2)


class LlamaStep(unittest.TestCase):
    """A small LLaMA-style decoder (GQA, SwiGLU, separate embedding and logits weights, the embedding a
    gather) on fsdp 4, with MaxText's custom remat offloading the layer input and the Q/K/V/output
    projections to host memory, against the same step keeping them on the device."""
    L, D, H, KV, HD, F, V, B, S, FSDP = 4, 512, 8, 2, 64, 1536, 1024, 2, 512, 4

    def setUp(self):
        if TPUSIM is None:
            self.skipTest("needs --tpusim")
        sys.path.insert(0, os.path.join(SRC, "workloads", "gen"))
        import maxtext_hlo
        d = dict(emb=self.D, heads=self.H, kv_heads=self.KV, head_dim=self.HD, mlp=self.F, mlp_matrices=3,
                 layers=self.L, vocab=self.V, tied=False, iota_embed=False)
        names = ("decoder_layer_input", "query_proj", "key_proj", "value_proj", "out_proj")
        self.tmp = tempfile.TemporaryDirectory()
        self.paths = {}
        for where in ("offload", "device"):
            text, _ = maxtext_hlo.emit(d, self.B, self.S, self.FSDP, 1, 1, ("custom", {n: where for n in names}))
            self.paths[where] = os.path.join(self.tmp.name, f"{where}.hlo")
            with open(self.paths[where], "w") as f:
                f.write(text)
        # one device, a wider decoder whose matmuls outweigh the quantizers' passes: bf16 and fp8_full
        wide = dict(d, emb=4096, heads=32, kv_heads=8, head_dim=128, mlp=16384, layers=1)
        for precision in ("bf16", "fp8_full"):
            text, _ = maxtext_hlo.emit(wide, 2, 2048, 1, 1, 1, ("custom", {n: "device" for n in names}), precision)
            self.paths[precision] = os.path.join(self.tmp.name, f"{precision}.hlo")
            with open(self.paths[precision], "w") as f:
                f.write(text)

    def tearDown(self):
        if TPUSIM is not None:
            self.tmp.cleanup()

    def run_json(self, cmd, path, chip="v6e", system="2x2"):
        out = subprocess.run([TPUSIM, cmd, path, "--chip", chip, "--format", "json", "-q"] +
                             (["--system", system, "--mode", "symmetric"] if cmd == "run" else []),
                             check=True, capture_output=True, text=True).stdout
        return json.loads(out)

    def test_context_parallel_step_flops(self):
        # Context parallelism over 2 devices (fsdp 2): per device a 256-token chunk of each 512-token sequence.
        # The dense FLOPs are its tokens'; attention is the sequence's causal work, split evenly: per layer
        # forward 4 * heads * head_dim * S^2 / 2 / context, run forward, recomputed (full remat) and backward
        # (2.5x).
        import maxtext_hlo
        L, D, H, KV, HD, F, V, S, cp = self.L, self.D, self.H, self.KV, self.HD, self.F, self.V, self.S, 2
        d = dict(emb=D, heads=H, kv_heads=KV, head_dim=HD, mlp=F, mlp_matrices=3, layers=L, vocab=V, tied=False,
                 iota_embed=False)
        text, _ = maxtext_hlo.emit(d, 1 / cp, S, 2, 1, 1, "full", "bf16", cp)
        path = os.path.join(self.tmp.name, "cp.hlo")
        with open(path, "w") as f:
            f.write(text)
        T = S // cp
        qkvo = 2 * T * (D * H * HD + 2 * D * KV * HD + H * HD * D)
        mlp_in, mlp_out = 2 * T * 2 * D * F, 2 * T * F * D
        attention = 4 * H * HD * S * S / 2 / cp
        layer = (qkvo + mlp_in + mlp_out) + (qkvo + mlp_in) + 2 * (qkvo + mlp_in + mlp_out) + 4.5 * attention
        want = L * layer + 3 * 2 * T * D * V
        got = self.run_json("analyze", path)["total"]["flops"]
        self.assertGreaterEqual(got, want)
        self.assertLess(got, 1.03 * want)

    def test_mixed_attention_step_flops(self):
        # A gemma3-style decoder: blocks of (local, local, global) layers, local attention over a 64-token window,
        # gated gelu, post-norms, the iota embedding tied to the logits, full remat, fsdp 2. A local layer's kernel
        # is written as an unmasked flash kernel over 2 x window keys per query (what splash attention computes
        # when its block is the window); a global one is causal. With post-norms the recomputation also runs the
        # MLP output projection (the post-MLP norm's backward reads its input).
        import maxtext_hlo
        L, D, H, KV, HD, F, V, S, W = 6, self.D, self.H, self.KV, self.HD, self.F, self.V, self.S, 64
        d = dict(emb=D, heads=H, kv_heads=KV, head_dim=HD, mlp=F, mlp_matrices=3, activation="gelu", layers=L,
                 vocab=V, tied=True, iota_embed=True, pattern=("local", "local", "global"), window=W, post_norms=True)
        text, _ = maxtext_hlo.emit(d, 1, S, 2, 1, 1, "full")
        path = os.path.join(self.tmp.name, "mixed.hlo")
        with open(path, "w") as f:
            f.write(text)
        self.assertEqual(text.count("te_fused_attn_forward_ffi"), 2 * 3)  # forward and recomputed, per block layer
        self.assertEqual(text.count("te_fused_attn_backward_ffi"), 3)
        T = S
        dense = 2 * T * (D * H * HD + 2 * D * KV * HD + H * HD * D) + 2 * T * 3 * D * F
        local, glob = 4 * H * HD * S * 2 * W, 4 * H * HD * S * S / 2
        attention = (2 * local + glob) / 3  # per layer, on average over a (local, local, global) block
        layer = 4 * dense + 4.5 * attention
        # one-hot embedding dot and its table gradient; tied logits forward and backward (x3)
        want = L * layer + 2 * (2 * T * V * D) + 3 * (2 * T * D * V)
        got = self.run_json("analyze", path)["total"]["flops"]
        self.assertGreaterEqual(got, want)
        self.assertLess(got, 1.03 * want)

    def test_mixture_of_experts_step_flops(self):
        # A mixtral-style decoder: E experts of the SwiGLU MLP, K per token, capacity C = ceil(S K / E) x 1.25 per
        # sequence; MaxText's dense_matmul: router, dispatch einsum (B S E C D), the experts' three matmuls over
        # E B C tokens, combine einsum. Full remat: the recomputation runs up to the experts' outputs (the
        # backward reads them), not the combine. Backward: combine's two operand gradients, the experts' MLP
        # (2x), the dispatch's input gradient, the router's two gradients.
        import math
        import maxtext_hlo
        L, D, H, KV, HD, F, V, B, S, E, K = 2, self.D, self.H, self.KV, self.HD, self.F, self.V, 2, self.S, 4, 2
        d = dict(emb=D, heads=H, kv_heads=KV, head_dim=HD, mlp=F, mlp_matrices=3, layers=L, vocab=V, tied=False,
                 iota_embed=False, experts=E, experts_per_token=K, capacity_factor=1.25)
        text, st = maxtext_hlo.emit(d, B, S, 2, 1, 1, "full")
        C = int(math.ceil(S * K / E) * 1.25)
        self.assertEqual(st.c.C, C)
        path = os.path.join(self.tmp.name, "moe.hlo")
        with open(path, "w") as f:
            f.write(text)
        self.assertEqual(text.count("reduce-window("), 2)  # the queue places, forward and recomputation
        T = B * S
        attn_proj = 2 * T * (D * H * HD + 2 * D * KV * HD + H * HD * D)
        router, mask = 2 * T * D * E, 2 * B * S * E * C * D  # a dispatch or a combine einsum
        experts = 2 * E * B * C * D * F * 3
        fwd = attn_proj + router + mask + experts + mask
        recompute = attn_proj + router + mask + experts
        bwd = 2 * attn_proj + 2 * router + 3 * mask + 2 * experts
        attention = 4 * B * H * S * S * HD / 2
        want = L * (fwd + recompute + bwd + 4.5 * attention) + 3 * 2 * T * D * V
        got = self.run_json("analyze", path)["total"]["flops"]
        self.assertGreaterEqual(got, want)
        self.assertLess(got, 1.015 * want)  # one dispatch or combine einsum more per layer is 2% here

    def test_fp8_full_step(self):
        # The fp8 step does the bf16 step's matmuls (the same FLOPs, the quantizers' elementwise work on top,
        # small next to them), and on TPU7x, whose MXUs run fp8 at twice the bf16 rate (core.mxu.rate.fp8 2),
        # in less time.
        bf16 = self.run_json("analyze", self.paths["bf16"])["total"]["flops"]
        fp8 = self.run_json("analyze", self.paths["fp8_full"])["total"]["flops"]
        self.assertGreater(fp8, bf16)
        self.assertLess(fp8, 1.02 * bf16)
        t_bf16 = self.run_json("run", self.paths["bf16"], "v7", "1")["step_time_s"]
        t_fp8 = self.run_json("run", self.paths["fp8_full"], "v7", "1")["step_time_s"]
        self.assertLess(t_fp8, t_bf16)

    def test_flops_offloads_and_their_cost(self):
        L, D, H, KV, HD, F, V, T = self.L, self.D, self.H, self.KV, self.HD, self.F, self.V, self.B * self.S
        qkvo = 2 * T * (D * H * HD + 2 * D * KV * HD + H * HD * D)
        mlp_in, mlp_out = 2 * T * 2 * D * F, 2 * T * F * D
        attention = 4 * self.B * H * self.S * self.S * HD / 2
        # forward; recomputation of the MLP input projections only (Q, K, V and the output projection are
        # saved, the MLP output projection is not needed); backward 2x dense; flash forward twice and its
        # backward 2.5x; untied logits forward and backward (x3); the embedding is a gather (no FLOPs here)
        layer = (qkvo + mlp_in + mlp_out) + mlp_in + 2 * (qkvo + mlp_in + mlp_out) + 4.5 * attention
        want = L * layer + 3 * 2 * T * D * V
        for where in ("offload", "device"):
            got = self.run_json("analyze", self.paths[where])["total"]["flops"]
            self.assertGreaterEqual(got, want, where)
            self.assertLess(got, 1.03 * want, where)
        with open(self.paths["offload"]) as f:
            text = f.read()
        self.assertEqual(text.count('custom_call_target="MoveToHost"'), 5)  # in the forward scan's body
        self.assertEqual(text.count('custom_call_target="MoveToDevice"'), 5)  # in the backward scan's body
        # Each layer moves x, q, attn ([B,S,D] bf16) and k, v ([B,S,KV*HD]) out and back over the host link.
        per_layer = 2 * T * (3 * D + 2 * KV * HD)
        link = 32e9  # v6e preset: host.bandwidth 32 GB/s each way
        device = self.run_json("run", self.paths["device"])["step_time_s"]
        offload = self.run_json("run", self.paths["offload"])["step_time_s"]
        # the transfers cost something, and less than all of them serialized (they overlap the layers)
        self.assertGreater(offload, device)
        self.assertLess(offload, device + 2 * L * per_layer / link)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--source", required=True)
    p.add_argument("--tpusim")
    a, rest = p.parse_known_args()
    SRC = a.source
    TPUSIM = a.tpusim
    unittest.main(argv=[sys.argv[0]] + rest)
