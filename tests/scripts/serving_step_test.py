"""workloads/gen/serving_step.py: the steady-state step of fixed-length requests (counted by hand),
the inference.csv rows it generates and the reasons it gives for the others, and the module's
structure (per layer: four projections, two attention kernels, two all-reduces, four in-place
cache writes; no dead instruction).

With --tpusim: the module's FLOPs (`tpusim analyze`) against the projections', the attention's
and the logits' FLOPs counted by hand, and the decode kernel's HBM traffic: the cached keys and
values are read once per key/value head (the query heads sharing one are packed), so going from
8 key/value heads to 1 (the same query heads) cuts the attention's HBM bytes about 8x."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from maxtext_step_test import dead  # noqa: E402

SRC = None
TPUSIM = None

SMALL = dict(emb=512, heads=8, kv_heads=2, head_dim=64, mlp=1024, layers=3, vocab=2048, mlp_matrices=3, tied=False)




class ServingStep(unittest.TestCase):
    def setUp(self):
        sys.path.insert(0, os.path.join(SRC, "workloads", "gen"))
        import maxtext_step
        import serving_step
        self.s = serving_step
        self.rows = maxtext_step.read_rows(os.path.join(SRC, "tests", "validation", "refs", "hw", "inference.csv"))

    def test_steady_state_step(self):
        # 64 requests of 1000 + 1000 tokens: each decodes one token a step and is prefilled once every 1000
        # steps (1000 prompt tokens), so 64 prefill tokens a step; decode context 1000 + 1000/2, prompt 1000/2.
        st = self.s.StepShape(64, 1000, 1000, 512)
        self.assertEqual((st.decode, st.prefill, st.tokens, st.decode_ctx, st.prefill_ctx), (64, 64, 128, 1500, 500))
        # prompts 4x the output: 4 prefill tokens per decode token, clipped to the token budget
        st = self.s.StepShape(64, 2000, 500, 512)
        self.assertEqual((st.decode, st.prefill, st.decode_ctx), (64, 256, 2250))
        self.assertEqual(self.s.StepShape(400, 1000, 1000, 512).prefill, 112)
        with self.assertRaises(ValueError):
            self.s.StepShape(600, 1000, 1000, 512)

    def test_rows(self):
        fixed = [i for i, r in enumerate(self.rows) if self.s.supported(r) is None]
        self.assertEqual([self.rows[i]["model"] for i in fixed], ["llama-3.3-70b", "llama-3.3-70b"])
        for i in fixed:
            f = self.s.row_fields(self.rows[i])
            self.assertEqual((f["input_len"], f["output_len"], f["token_budget"], f["tp"]), (1000, 1000, 512, 8))
            self.assertEqual(self.rows[i]["unit"], "ms")
        for r in self.rows:
            if not r["serving"]:
                self.assertIn("variable request lengths", self.s.supported(r))

    def test_malformed_serving_columns_are_named_errors(self):
        full = "concurrency=64;input_len=1000;output_len=1000;token_budget=512;tp=8"
        self.assertEqual(self.s.row_fields({"serving": full})["tp"], 8)
        self.assertEqual(self.s.row_fields({"serving": ""}), {})
        for text, want in ((full.replace("=64", "=6x4"), "concurrency=6x4 is not a positive integer"),
                           (full.replace("tp=8", "tp=0"), "tp=0 is not a positive integer"),
                           (full + ";batch=3", "'batch=3' is not one of"),
                           ("concurrency=64;tp=8", "missing input_len, output_len, token_budget")):
            with self.assertRaises(ValueError) as err:
                self.s.row_fields({"serving": text})
            self.assertIn(want, str(err.exception))
        # the data row's line in the file: comment lines and the header counted
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "bad.csv")
            with open(path, "w") as f:
                f.write("# a comment\nmodel,serving\nx,\ny,concurrency=two\n")
            rows = [{"model": "x", "serving": ""}, {"model": "y", "serving": "concurrency=two"}]
            self.assertEqual(self.s.row_errors(path, rows),
                             [f"{path}:4: serving: concurrency=two is not a positive integer"])
            # a fixed-length row's --max-model-len (cache_len), which sets the attention kernel's pages
            rows = [{"model": "x", "serving": full, "cache_len": "2k"},
                    {"model": "y", "serving": full, "cache_len": "0"}]
            self.assertEqual(self.s.row_errors(path, rows),
                             [f"{path}:3: cache_len: '2k' is not a positive integer (the server's --max-model-len)",
                              f"{path}:4: cache_len: '0' is not a positive integer (the server's --max-model-len)"])

    def test_module_structure(self):
        L = SMALL["layers"]
        text = self.s.Server(dict(SMALL), 2, self.s.StepShape(4, 16, 16, 64)).build()
        self.assertEqual(dead(text), [])
        self.assertEqual(len(re.findall(r" all-reduce\(", text)), 2 * L + 1)  # two per layer, the embedding
        self.assertEqual(len(re.findall(r" dot\(", text)), 4 * L + 1)  # QKV, O, gate/up, down; the logits
        self.assertEqual(text.count("te_fused_attn_forward_ffi"), 2 * L)  # decode and prefill
        self.assertEqual(len(re.findall(r" dynamic-update-slice\(", text)), 4 * L)  # K and V into two caches
        self.assertEqual(len(re.findall(r" all-gather\(", text)), 1)  # the logits
        # decode tokens only (no prompt to prefill): one kernel per layer
        text = self.s.Server(dict(SMALL), 2, self.s.StepShape(4, 0, 16, 64)).build()
        self.assertEqual(dead(text), [])
        self.assertEqual(text.count("te_fused_attn_forward_ffi"), L)

    def test_attention_kv_block_of_the_rows_server(self):
        # vLLM's TPU page size: max-model-len's next power of two over 16 pages, within 16..256, 16 above 8192
        self.assertEqual([self.s.vllm_page_size(n) for n in (100, 512, 2048, 3000, 4096, 8192, 8193)],
                         [16, 32, 128, 256, 256, 256, 16])
        # The vLLM rows (Llama-3.3-70B, tensor parallel 8 on v6e, --max-model-len 2048): 8 query heads and 1 key/
        # value head of 128 per chip, 16 pages of 128 tokens: the tuned table's entry, 16 pages per KV block.
        for i in (i for i, r in enumerate(self.rows) if self.s.supported(r) is None):
            key, page, pages = self.s.rpa_pages(self.rows[i])
            self.assertEqual(key, ("TPU v6e", 128, "q_bfloat16_kv_bfloat16", "q_head-8_kv_head-1_head-128", 2048))
            self.assertIn(key, self.s.RPA_TUNED)
            self.assertEqual((page, pages, self.s.rpa_kv_block_tokens(self.rows[i])), (128, 16, 2048))
            args = self.s.run_args(self.rows[i])
            self.assertEqual(args[args.index("--set") + 1], "core.attention.block_kv=2048")
        # Off the table: the generation's default block (v7 4096 tokens, else 2048), at most the sequence's pages
        row = next(r for r in self.rows if self.s.supported(r) is None)
        self.assertEqual(self.s.rpa_kv_block_tokens(dict(row, chip="v7")), 2048)  # 16 pages of 128: the sequence
        self.assertEqual(self.s.rpa_kv_block_tokens(dict(row, chip="v7", cache_len="8192")), 4096)  # 256-token pages
        self.assertEqual(self.s.rpa_kv_block_tokens(dict(row, cache_len="8192")), 2048)
        self.assertEqual(self.s.rpa_kv_block_tokens(dict(row, cache_len="512")), 512)  # 16 pages of 32

    def test_refuses_what_it_does_not_model(self):
        with self.assertRaises(ValueError):
            self.s.Server(dict(SMALL), 3, self.s.StepShape(4, 16, 16, 64))  # 8 heads over 3 devices
        with self.assertRaises(ValueError):
            self.s.Server(dict(SMALL, mlp_matrices=2), 2, self.s.StepShape(4, 16, 16, 64))


@unittest.skipIf(TPUSIM is None and "--tpusim" not in " ".join(sys.argv), "needs --tpusim")
class ServingStepSimulated(unittest.TestCase):
    def setUp(self):
        sys.path.insert(0, os.path.join(SRC, "workloads", "gen"))
        import serving_step
        self.s = serving_step
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def module(self, dims, tp, shape, name):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            f.write(self.s.Server(dims, tp, shape).build())
        return path

    def analyze(self, path):
        out = subprocess.run([TPUSIM, "analyze", path, "--chip", "v6e", "--format", "json"], check=True,
                             capture_output=True, text=True).stdout
        return json.loads(out)

    def test_flops(self):
        d, tp = dict(SMALL), 2
        st = self.s.StepShape(8, 64, 64, 128)
        D, HD, L = d["emb"], d["head_dim"], d["layers"]
        HL, KVL, FL, VL = d["heads"] // tp, d["kv_heads"] // tp, d["mlp"] // tp, d["vocab"] // tp
        T, C, P = st.tokens, st.decode, st.prefill
        proj = 2 * T * (D * (HL + 2 * KVL) * HD + HL * HD * D + D * 2 * FL + FL * D)
        attention = 4 * HL * HD * (C * 1 * st.decode_ctx + P * st.prefill_ctx)  # QK^T and PV, unmasked
        want = L * (proj + attention) + 2 * C * D * VL
        got = self.analyze(self.module(d, tp, st, "flops.hlo"))["total"]["flops"]
        # The rest is elementwise work (norms, RoPE, SwiGLU, the greedy max): positive and small.
        self.assertGreaterEqual(got, want)
        self.assertLess(got, 1.05 * want)

    def test_decode_attention_reads_each_key_value_head_once(self):
        # Decode only, one layer, 8 query heads; 8 key/value heads (one per query head) against 1 (all
        # sharing it): the cache is 8x smaller, and the packed kernel reads it once, so the kernels' HBM
        # bytes fall about 8x (the queries and outputs, the same in both, are a small rest).
        d = dict(SMALL, layers=1, heads=8)
        st = self.s.StepShape(32, 0, 2048, 64)
        bytes_of = {}
        for kv in (8, 1):
            path = self.module(dict(d, kv_heads=kv), 1, st, f"kv{kv}.hlo")
            out = subprocess.run([TPUSIM, "run", path, "--chip", "v6e", "--format", "json", "-q"], check=True,
                                 capture_output=True, text=True).stdout
            ops = json.loads(out)["ops"]
            bytes_of[kv] = sum(o["hbm_bytes"] for o in ops if o["name"].startswith("custom-call"))
            cache = 2 * 32 * st.decode_ctx * kv * d["head_dim"] * 2  # K and V, bf16
            self.assertGreaterEqual(bytes_of[kv], cache)
        self.assertGreater(bytes_of[8] / bytes_of[1], 6.5)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--source", required=True)
    p.add_argument("--tpusim")
    a, rest = p.parse_known_args()
    SRC = a.source
    TPUSIM = a.tpusim
    unittest.main(argv=[sys.argv[0]] + rest)
