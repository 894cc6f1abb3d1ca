#!/usr/bin/env python3
"""Walks every numeric config key (common/params.def, as `tpusim config
describe` lists them) and shows that changing it changes a simulation the way
its description says.

Each walked key has a case: a small workload built to depend on it (an
assembly program written here, or a shipped HLO module), the chip, the value
to set, and what must follow:
  faster / slower  the step time (`run --format json`) falls / rises by more
                   than 0.1%;
  error            the base value runs and the new one is refused with a
                   clear error naming the key's limit (capacities).
Keys that do not describe hardware behaviour to be varied (the vector
register's shape, simulation controls, topology shape) are listed in
STRUCTURAL with the reason and the test that covers them instead. A numeric
key in neither list, or in both, fails the walk: a new key must say how it
acts.

  scripts/key_walk.py --tpusim build/app/tpusim [--only KEY ...] [--table-only]

--table-only checks only that the table covers every numeric key (no
simulation). Exit 0 when every case holds, 1 otherwise, 2 on bad usage.
Python standard library only.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

NUMERIC = {"integer", "integer or ~", "number", "size", "bandwidth", "frequency", "time"}
THRESHOLD = 0.001  # relative change of the step time that counts as a change

# ---- workloads -------------------------------------------------------------
# Assembly programs (docs/isa.md), each bound by the unit or path its keys
# describe. Tiles are aligned to the (8, 128) f32 / (16, 128) bf16 tiling.
TASM = {
    # One 256x256x256 bf16 matmul on one MXU, operands in VMEM: MXU-bound.
    "matmul": """
.buffer x   hbm  bf16 [256, 256]
.buffer w   hbm  bf16 [256, 256]
.buffer y   hbm  f32  [256, 256]
.buffer xv  vmem bf16 [256, 256] offset=0
.buffer wv  vmem bf16 [256, 256] offset=131072
.buffer yv  vmem f32  [256, 256] offset=262144
.semaphore s
dma.start dst=xv src=x sem=s
dma.start dst=wv src=w sem=s
sem.wait sem=s count=2
repeat count=16
mxu.load_weights src=wv[0:128, 0:128]
mxu.matmul lhs=xv[0:256, 0:128] mode=overwrite
mxu.load_weights src=wv[128:256, 0:128]
mxu.matmul lhs=xv[0:256, 128:256]
mxu.pop dst=yv[0:256, 0:128]
end
dma.start dst=y src=yv sem=s
sem.wait sem=s
""",
    # Matmuls of 8-row tiles: weight loading paces them.
    "weight_loads": """
.buffer xv  vmem bf16 [16, 128] offset=0
.buffer wv  vmem bf16 [128, 128] offset=4096
.buffer yv  vmem f32  [16, 128] offset=65536
repeat count=64
mxu.load_weights src=wv
mxu.matmul lhs=xv mode=overwrite
mxu.pop dst=yv
end
""",
    # Elementwise ops over a 1024x1024 f32 tile in VMEM (1024 vregs each).
    "vpu_store": """
.buffer a vmem f32 [1024, 1024] offset=0
.buffer b vmem f32 [1024, 1024] offset=4194304
.buffer c vmem f32 [1024, 1024] offset=8388608
repeat count=8
vpu.add dst=c a=a b=b
end
""",
    # Three VMEM inputs, result kept in registers: the load slots pace it.
    "vpu_load": """
.buffer p vmem pred [1024, 1024] offset=0
.buffer a vmem f32 [1024, 1024] offset=4194304
.buffer b vmem f32 [1024, 1024] offset=8388608
.buffer r vreg f32 [1024, 1024]
.buffer o vmem f32 [8, 128] offset=12582912
repeat count=8
vpu.select dst=r a=p b=a c=b
end
vpu.copy dst=o a=a[0:8, 0:128]
""",
    # Register-only arithmetic: the ALUs pace it.
    "vpu_alu": """
.buffer a vmem f32 [1024, 1024] offset=0
.buffer r vreg f32 [1024, 1024]
.buffer o vmem f32 [1024, 1024] offset=4194304
vpu.copy dst=r a=a
repeat count=16
vpu.mul dst=r a=r imm=1.5
end
vpu.copy dst=o a=r
""",
    # A dependent chain on one vreg per op class: latency paces it.
    "vpu_latency": """
.buffer a vmem f32 [8, 128] offset=0
.buffer m vmem pred [8, 128] offset=4096
.buffer i vmem s32 [8, 128] offset=8192
repeat count=64
vpu.add dst=a a=a imm=1
vpu.mul dst=a a=a imm=1.001
vpu.div dst=a a=a imm=1.001
vpu.convert dst=i a=a
vpu.convert dst=a a=i
vpu.cmp_lt dst=m a=a imm=5
vpu.select dst=a a=m b=a imm=0
end
""",
    "eup_rate": """
.buffer a vmem f32 [1024, 1024] offset=0
.buffer b vmem f32 [1024, 1024] offset=4194304
repeat count=4
eup.exp dst=b src=a
end
""",
    "eup_latency": """
.buffer a vmem f32 [8, 128] offset=0
repeat count=64
eup.exp dst=a src=a
end
""",
    # Independent transposes: two XLUs run two at once.
    "xlu_rate": """
.buffer a vmem f32 [512, 512] offset=0
.buffer b vmem f32 [512, 512] offset=1048576
.buffer c vmem f32 [512, 512] offset=2097152
.buffer d vmem f32 [512, 512] offset=3145728
repeat count=8
xlu.transpose dst=b src=a
xlu.transpose dst=d src=c
end
""",
    "xlu_latency": """
.buffer a vmem f32 [128, 128] offset=0
repeat count=64
xlu.transpose dst=a src=a
end
""",
    # HBM -> VMEM streaming of 64 MiB in 2 MiB DMAs.
    "hbm_stream": """
.buffer h hbm f32 [16384, 1024]
.buffer v vmem f32 [512, 1024] offset=0
.semaphore s
repeat count=32
dma.start dst=v src=h[0:512, 0:1024] sem=s
sem.wait sem=s
end
""",
    # Many independent 4 KiB HBM -> VMEM DMAs in flight: latency-bound per DMA.
    "hbm_small": """
.buffer h hbm f32 [8192, 1024]
.buffer v vmem f32 [8, 1024] offset=0
.semaphore s
repeat count=64
dma.start dst=v src=h[0:8, 0:1024] sem=s
sem.wait sem=s
end
""",
    # Eight concurrent 1 MiB HBM reads: DMA engines and requests in flight.
    "dma_parallel": """
.buffer h hbm f32 [8192, 1024]
.buffer v vmem f32 [2048, 1024] offset=0
.semaphore s
repeat count=4
dma.start dst=v[0:256, 0:1024] src=h[0:256, 0:1024] sem=s
dma.start dst=v[256:512, 0:1024] src=h[256:512, 0:1024] sem=s
dma.start dst=v[512:768, 0:1024] src=h[512:768, 0:1024] sem=s
dma.start dst=v[768:1024, 0:1024] src=h[768:1024, 0:1024] sem=s
dma.start dst=v[1024:1280, 0:1024] src=h[1024:1280, 0:1024] sem=s
dma.start dst=v[1280:1536, 0:1024] src=h[1280:1536, 0:1024] sem=s
dma.start dst=v[1536:1792, 0:1024] src=h[1536:1792, 0:1024] sem=s
dma.start dst=v[1792:2048, 0:1024] src=h[1792:2048, 0:1024] sem=s
sem.wait sem=s count=8
end
""",
    # A column strip: 8192 rows of 128 B each (short rows, strided).
    "hbm_strided": """
.buffer h hbm f32 [8192, 1024]
.buffer v vmem f32 [8192, 32] offset=0
.semaphore s
dma.start dst=v src=h[0:8192, 0:32] sem=s
sem.wait sem=s
""",
    # A column strip of 64-byte rows 4 KiB apart: under the modulo address
    # map every row starts on the same channel (the stride is a multiple of
    # granularity x channels), so fewer, wider channels are faster.
    "hbm_camp": """
.buffer h hbm f32 [8192, 1024]
.buffer v vmem f32 [8192, 16] offset=0
.semaphore s
dma.start dst=v src=h[0:8192, 0:16] sem=s
sem.wait sem=s
""",
    # VMEM -> VMEM copies: VMEM bandwidth.
    "vmem_copy": """
.buffer a vmem f32 [2048, 1024] offset=0
.buffer b vmem f32 [2048, 1024] offset=8388608
.semaphore s
repeat count=8
dma.start dst=b src=a sem=s
sem.wait sem=s
end
""",
    # One-vreg VPU ops (one per cycle, to distinct registers) between
    # sequencer-only semaphore signals: with one issue per cycle the
    # sequencer sets the pace, with four the VPU does.
    "issue": """
.buffer a vmem f32 [8, 128] offset=0
.buffer r vreg f32 [8, 128]
.buffer q vreg f32 [8, 128]
.semaphore x
repeat count=256
vpu.add dst=r a=a imm=1
sem.signal sem=x
vpu.add dst=q a=a imm=2
sem.signal sem=x
end
sem.wait sem=x count=512
""",
    # A buffer of 64 MiB of VMEM / 512 KiB of SMEM / 1 GiB of HBM.
    "vmem_big": """
.buffer a vmem f32 [4096, 4096] offset=0
vpu.add dst=a a=a imm=1
""",
    "smem_big": """
.buffer h hbm f32 [128, 1024]
.buffer s smem f32 [128, 1024] offset=0
.semaphore d
dma.start dst=s src=h sem=d
sem.wait sem=d
""",
    "hbm_big": """
.buffer h hbm f32 [16384, 16384]
.buffer v vmem f32 [8, 128] offset=0
.semaphore d
dma.start dst=v src=h[0:8, 0:128] sem=d
sem.wait sem=d
""",
    # The HBM <-> host link (host offload).
    "host": """
.buffer a hbm bf16 [4096, 2048]
.buffer h host bf16 [4096, 2048]
.semaphore s
repeat count=8
dma.start dst=h[0:512, 0:2048] src=a[0:512, 0:2048] sem=s
sem.wait sem=s
end
""",
}

# MXU rate keys: one 256x256x(128) matmul in that dtype.
for dtype, key in (("f32", "f32"), ("s8", "int8"), ("f8e4m3", "fp8"), ("s4", "int4"), ("bf16", "bf16")):
    TASM["rate_" + key] = """
.buffer xv vmem {d} [512, 128] offset=0
.buffer wv vmem {d} [128, 128] offset=524288
.buffer yv vmem f32 [512, 128] offset=1048576
repeat count=16
mxu.load_weights src=wv
mxu.matmul lhs=xv mode=overwrite
mxu.pop dst=yv
end
""".format(d=dtype)

# A 24-op fused element-wise chain (HLO), f32[1024,1024]: its values stay in
# vector registers, so the ALUs and the register file show.
def chain_hlo():
    t = ("HloModule chain\nfused {\n  p = f32[1024,1024] parameter(0)\n  c = f32[] constant(1.5)\n"
         "  b = f32[1024,1024] broadcast(c), dimensions={}\n")
    prev = "p"
    for i in range(24):
        t += "  {}x{} = f32[1024,1024] {}({}, b)\n".format("ROOT " if i == 23 else "", i,
                                                         "multiply" if i % 2 == 0 else "add", prev)
        prev = "x{}".format(i)
    return t + ("}\nENTRY e {\n  a = f32[1024,1024] parameter(0)\n"
                "  ROOT f = f32[1024,1024] fusion(a), kind=kLoop, calls=fused\n}\n")


# A bf16 dot of 2048^3: the compiler spreads it over every MXU of the core.
DOT_HLO = """HloModule dot
ENTRY e {
  a = bf16[2048,2048] parameter(0)
  b = bf16[2048,2048] parameter(1)
  ROOT d = f32[2048,2048] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""

# Eight independent small asynchronous all-reduces over 8 chips (started
# together, then awaited): latency-bound, so running them at once
# (ici.concurrent_collectives) overlaps their latency.
def small_allreduces():
    t = "HloModule ars, num_partitions=8\nadd {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n" \
        "  ROOT s = f32[] add(x, y)\n}\nENTRY e {\n  p = f32[8,128] parameter(0)\n"
    for i in range(8):
        t += ("  s{i} = f32[8,128] all-reduce-start(p), replica_groups={{{{0,1,2,3,4,5,6,7}}}}, channel_id={c}, "
              "use_global_device_ids=true, to_apply=add\n").format(i=i, c=i + 1)
    for i in range(8):
        t += "  r{i} = f32[8,128] all-reduce-done(s{i})\n".format(i=i)
    return t + "  ROOT t = (" + ", ".join("f32[8,128]" for _ in range(8)) + ") tuple(" + \
        ", ".join("r{}".format(i) for i in range(8)) + ")\n}\n"


# One 4 MiB all-reduce over 8 chips: the ICI (and, across slices, the DCN)
# sets its time.
ALLREDUCE_HLO = """HloModule ar, num_partitions=8
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  p = f32[1024,1024] parameter(0)
  ROOT r = f32[1024,1024] all-reduce(p), replica_groups={{0,1,2,3,4,5,6,7}}, channel_id=1,
    use_global_device_ids=true, to_apply=add
}
"""


def attention_hlo(backward):
    """Transformer Engine's fused attention (one sequence, 2 heads of 128, 4096 tokens, no mask), which
    tpusim compiles as a flash-attention kernel: with step sync (the v5e preset) each of its grid steps
    drains the MXUs once, so larger grid steps (core.attention.*) drain them less often."""
    q = kv = "bf16[1,4096,2,128]"
    cfg = ("backend_config={attn_heads = 2 : i64, input_batch = 1 : i64, kv_max_seqlen = 4096 : i64, "
           "mask_type = 0 : i64, num_gqa_groups = 2 : i64, q_max_seqlen = 4096 : i64, qk_head_dim = 128 : i64, "
           "v_head_dim = 128 : i64}")
    t = f"HloModule attention\nENTRY e {{\n  q = {q} parameter(0)\n  k = {kv} parameter(1)\n  v = {kv} parameter(2)\n"
    if backward:
        t += (f"  aux = f32[1,2,4096,1] parameter(3)\n  o = {q} parameter(4)\n  do = {q} parameter(5)\n"
              f"  ROOT a = ({q}, {kv}, {kv}) custom-call(q, k, v, aux, o, do), "
              f'custom_call_target="te_fused_attn_backward_ffi", api_version=API_VERSION_TYPED_FFI, {cfg}\n}}\n')
    else:
        t += (f"  ROOT a = ({q}, f32[1,2,4096,1]) custom-call(q, k, v), "
              f'custom_call_target="te_fused_attn_forward_ffi", api_version=API_VERSION_TYPED_FFI, {cfg}\n}}\n')
    return t


HLO = {"chain": chain_hlo(), "dot": DOT_HLO, "allreduces": small_allreduces(), "allreduce": ALLREDUCE_HLO,
       "attention": attention_hlo(False), "attention_bwd": attention_hlo(True)}

SHIPPED = {}

# ---- cases -------------------------------------------------------------------
# key: (workload, chip, extra args, value, expectation[, args the new value needs])
CASES = {
    "clock": ("matmul", "v5e", [], "3 GHz", "faster"),
    "tensorcores": ("dot", "v5p", [], "1", "slower", ["--set", "megacore=false"]),
    "core.mxu.count": ("dot", "v5e", [], "8", "faster"),
    "core.mxu.rows": ("dot", "v5e", [], "256", "faster"),
    "core.mxu.cols": ("dot", "v5e", [], "256", "faster"),
    "core.mxu.weight_load_rows_per_cycle": ("weight_loads", "v5e", [], "4", "faster"),
    "core.mxu.drain_extra_cycles": ("weight_loads", "v5e", [], "200", "slower"),
    "core.mxu.rate.bf16": ("rate_bf16", "v5e", [], "2", "faster"),
    "core.mxu.rate.f32": ("rate_f32", "v5e", ["--set", "core.mxu.rate.f32=0.25"], "1", "faster"),
    "core.mxu.rate.int8": ("rate_int8", "v5e", [], "4", "faster"),
    "core.mxu.rate.fp8": ("rate_fp8", "v5e", ["--set", "core.mxu.rate.fp8=1"], "2", "faster"),
    "core.mxu.rate.int4": ("rate_int4", "v5e", ["--set", "core.mxu.rate.int4=1"], "4", "faster"),
    "core.vpu.vregs": ("chain", "v5e", [], "2", "slower"),
    "core.vpu.alus_per_lane": ("vpu_alu", "v5e", [], "8", "faster"),
    "core.vpu.vreg_loads_per_cycle": ("vpu_load", "v5e", [], "1", "slower"),
    "core.vpu.vreg_stores_per_cycle": ("vpu_store", "v5e", [], "2", "faster"),
    "core.vpu.latency.alu": ("vpu_latency", "v5e", [], "20", "slower"),
    "core.vpu.latency.mul": ("vpu_latency", "v5e", [], "20", "slower"),
    "core.vpu.latency.div": ("vpu_latency", "v5e", [], "40", "slower"),
    "core.vpu.latency.convert": ("vpu_latency", "v5e", [], "20", "slower"),
    "core.vpu.latency.compare": ("vpu_latency", "v5e", [], "20", "slower"),
    "core.eup.vregs_per_cycle": ("eup_rate", "v5e", [], "4", "faster"),
    "core.eup.latency": ("eup_latency", "v5e", [], "100", "slower"),
    "core.xlu.count": ("xlu_rate", "v5e", ["--set", "core.xlu.count=1"], "2", "faster"),
    "core.xlu.vregs_per_cycle": ("xlu_rate", "v5e", [], "4", "faster"),
    "core.xlu.latency": ("xlu_latency", "v5e", [], "200", "slower"),
    "core.vmem.capacity": ("vmem_big", "v5e", [], "32 MiB", "error"),
    "core.vmem.ports": ("vmem_copy", "v5e", [], "1", "faster"),
    "core.vmem.bytes_per_cycle": ("vmem_copy", "v5e", [], "512", "slower"),
    # A dot's tiles within a 1 MiB kernel limit: narrower tiles re-read the operands and cannot hide the MXU's weight loads.
    "core.vmem.scoped_limit": ("dot", "v5e", [], "1 MiB", "slower"),
    # Grid steps of 4096 rows: the flash kernel's blocks drain the MXUs once per step (step sync) instead
    # of once per block (0: every block a grid step). Each key alone widens the step along its side.
    "core.attention.block_q": ("attention", "v5e", [], "4096", "faster"),
    "core.attention.block_kv": ("attention", "v5e", [], "4096", "faster"),
    "core.attention.block_q_bwd": ("attention_bwd", "v5e", [], "4096", "faster"),
    "core.attention.block_kv_bwd": ("attention_bwd", "v5e", [], "4096", "faster"),
    "core.smem.capacity": ("smem_big", "v5e", [], "256 KiB", "error"),
    "core.sequencer.issue_width": ("issue", "v5e", [], "4", "faster"),
    "core.sequencer.dispatch_latency": ("issue", "v5e", [], "20", "slower"),
    # A compiled module: the compiler starts the element-wise chain's kernel with a delay.
    "core.sequencer.kernel_overhead": ("chain", "v5e", [], "10 us", "slower"),
    # Engines pipeline their transfers; with 16 requests in flight each, one engine cannot cover HBM's latency.
    "core.dma.engines": ("dma_parallel", "v5e", ["--set", "core.dma.outstanding=16"], "1", "slower"),
    "core.dma.outstanding": ("dma_parallel", "v5e", [], "4", "slower"),
    "core.dma.chunk": ("hbm_stream", "v5e", [], "512 B", "slower"),
    "hbm.capacity": ("hbm_big", "v5e", [], "512 MiB", "error"),
    "hbm.bandwidth": ("hbm_stream", "v5e", [], "1638 GB/s", "faster"),
    "hbm.channels": ("hbm_camp", "v5e", ["--set", "hbm.address_map=modulo"], "2", "faster"),
    "hbm.latency": ("hbm_small", "v5e", [], "2 us", "slower"),
    "hbm.access_granularity": ("hbm_strided", "v5e", [], "512 B", "slower"),
    "hbm.efficiency": ("hbm_stream", "v5e", [], "0.5", "slower"),
    "ici.links": ("allreduce", "v5e", ["--system", "4x4"], "2", "error"),
    "ici.link_bandwidth": ("allreduce", "v5p", ["--system", "8"], "200 GB/s", "faster"),
    "ici.hop_latency": ("allreduce", "v5p", ["--system", "8"], "20 us", "slower"),
    "ici.collective_startup": ("allreduce", "v5p", ["--system", "8"], "20 us", "slower"),
    "ici.link_efficiency": ("allreduce", "v5p", ["--system", "8"], "0.5", "slower"),
    "ici.concurrent_collectives": ("allreduces", "v5e", ["--system", "8"], "1", "slower"),
    "host.bandwidth": ("host", "v5e", [], "64 GB/s", "faster"),
    "host.latency": ("host", "v5e", [], "100 us", "slower"),
    "dcn.bandwidth_per_chip": ("allreduce", "v5p", ["--system", "2x2", "--set", "system.slices=2"], "400 Gbps", "faster"),
    "dcn.latency": ("allreduce", "v5p", ["--system", "2x2", "--set", "system.slices=2"], "1 ms", "slower"),
}

STRUCTURAL = {
    "core.vpu.sublanes": "the vector register's shape: every tiling, VMEM alignment rule and compiled program is "
                         "built on it (verifier tests of the (8, 128) tiling)",
    "core.vpu.lanes": "the vector register's shape, as core.vpu.sublanes",
    "system.wrap_size": "the axis length the wrap rule wraps at (topology shape, not a rate); tested by the "
                        "wraparound tests (CliSystem, config show per axis)",
    "system.slices": "how many slices share the DCN (topology shape); the dcn.* cases run 2 slices",
    "system.full_mode_max_chips": "a simulation control: systems up to this many chips are simulated chip by chip, "
                                  "larger ones symmetrically (same step for a symmetric program; spmd tests)",
    "system.chips": "derived from system.topology (a count, not a rate)",
    "ici.packet_size": "the link model's granularity: under virtual cut-through a message takes bytes / bandwidth "
                       "+ hops x latency whatever its packets; packets only decide how messages sharing a link "
                       "interleave (interconnect network tests)",
    "simulation.full_instruction_limit": "a simulation control: full-loop runs past it are refused with advice "
                                         "(DotChunks / loop tests)",
    "simulation.max_program_instructions": "a compiler limit: a larger program is refused naming the key "
                                           "(CliLoops.AProgramPastTheStaticInstructionLimitIsRefusedNamingTheKey)",
    "simulation.loop_warmup": "a simulation control of loop extrapolation (loop extrapolation tests)",
    "simulation.loop_tolerance": "a simulation control of loop extrapolation (loop extrapolation tests)",
}


def describe(tpusim):
    out = subprocess.run([tpusim, "config", "describe", "--format", "json"], capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out)


def check_table(keys):
    """Problems with the table: numeric keys it misses or lists twice, names it has that are not keys."""
    problems = []
    numeric = {k["key"] for k in keys if k["kind"] in NUMERIC}
    known = {k["key"] for k in keys}
    for key in sorted(numeric):
        if key in CASES and key in STRUCTURAL:
            problems.append("{}: both walked and listed as structural".format(key))
        elif key not in CASES and key not in STRUCTURAL:
            problems.append("{}: a numeric key with no case (add one to CASES, or a reason to STRUCTURAL)".format(key))
    for key in sorted(set(CASES) | set(STRUCTURAL)):
        if key not in known:
            problems.append("{}: in the table but not a config key".format(key))
        elif key not in numeric:
            problems.append("{}: in the table but not numeric".format(key))
    return problems


def run(tpusim, path, chip, args):
    r = subprocess.run([tpusim, "run", path, "--chip", chip, "--format", "json", "-q"] + args, capture_output=True,
                       text=True, timeout=600)
    if r.returncode != 0:
        return None, (r.stderr or r.stdout).strip()
    return json.loads(r.stdout)["step_time_s"], ""


def walk(tpusim, scratch, key, case):
    workload, chip, extra, value, expect = case[:5]
    changed_extra = list(case[5]) if len(case) > 5 else []  # settings the new value needs with it
    if workload in TASM:
        path = os.path.join(scratch, workload + ".tasm")
        text = TASM[workload]
    elif workload in HLO:
        path = os.path.join(scratch, workload + ".hlo")
        text = HLO[workload]
    else:
        path, text = SHIPPED[workload], None
    if text is not None and not os.path.exists(path):
        with open(path, "w") as f:
            f.write(text.lstrip())
    base, err = run(tpusim, path, chip, list(extra))
    if base is None:
        return False, "base run failed: {}".format(err.splitlines()[0] if err else "?")
    changed, err = run(tpusim, path, chip, list(extra) + ["--set", "{}={}".format(key, value)] + changed_extra)
    if expect == "error":
        if changed is not None:
            return False, "{} = {} still runs ({:.6g} s)".format(key, value, changed)
        first = err.splitlines()[0] if err else ""
        return True, "refused: {}".format(first[:160])
    if changed is None:
        return False, "{} = {} failed: {}".format(key, value, err.splitlines()[0] if err else "?")
    rel = (changed - base) / base
    ok = rel < -THRESHOLD if expect == "faster" else rel > THRESHOLD
    return ok, "{:.6g} -> {:.6g} s ({:+.2%}, expected {})".format(base, changed, rel, expect)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tpusim", required=True, help="the tpusim binary")
    ap.add_argument("--only", action="append", help="walk only this key (repeatable)")
    ap.add_argument("--table-only", action="store_true", help="check only that the table covers every key")
    ap.add_argument("--source", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."),
                    help="the repository root (shipped workloads are read from it)")
    args = ap.parse_args()
    tpusim = os.path.abspath(args.tpusim)
    if not os.access(tpusim, os.X_OK):
        print("key_walk: {}: not an executable".format(tpusim), file=sys.stderr)
        return 2
    problems = check_table(describe(tpusim))
    for p in problems:
        print("key_walk: " + p)
    if args.table_only:
        print("key_walk: {} walked, {} structural; table {}".format(len(CASES), len(STRUCTURAL),
                                                                     "incomplete" if problems else "complete"))
        return 1 if problems else 0
    os.chdir(os.path.abspath(args.source))
    failures = len(problems)
    with tempfile.TemporaryDirectory(prefix="key_walk_") as scratch:
        for key in sorted(CASES):
            if args.only and key not in args.only:
                continue
            ok, what = walk(tpusim, scratch, key, CASES[key])
            print("{:<4} {:<40} {}".format("ok" if ok else "FAIL", key, what))
            failures += 0 if ok else 1
    print("key_walk: {} keys walked, {} failed".format(len(args.only or CASES), failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
