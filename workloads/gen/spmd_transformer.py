#!/usr/bin/env python3
"""Emits the SPMD-partitioned HLO of a LLaMA-style decoder layer (forward) for a
(data, model) device mesh, as XLA's SPMD partitioner produces it for these
shardings (Python 3 standard library only). See workloads/README.md,
"Generator", for the correspondence with XLA.

  workloads/gen/spmd_transformer.py --dp 2 --tp 8 [--fsdp] [--train] [--batch 2] [--seq 2048] \
      [--d-model 4096] [--heads 32] [--head-dim 128] [--mlp 11008] [-o out.hlo]

Shardings (mesh axes ('data', 'model'), device id = data_index * tp + model_index,
XLA's default device assignment for a [dp, tp] mesh):
  x, output          [B, S, D]   batch over 'data', replicated over 'model'
  Wq, Wk, Wv         [D, H*hd]   columns (heads) over 'model'       (column-parallel)
  Wo                 [H*hd, D]   rows (heads) over 'model'          (row-parallel)
  Wgate, Wup         [D, F]      columns over 'model'               (column-parallel)
  Wdown              [F, D]      rows over 'model'                  (row-parallel)
  norms, RoPE tables             replicated
Collectives: each row-parallel dot yields partial sums, which the partitioner
all-reduces over the 'model' groups {{d*tp .. d*tp+tp-1}} (Megatron-LM, Shoeybi
et al. 2019): 2 all-reduces of bf16[B/dp, S, D] per layer. The forward pass
under pure data parallelism needs no collective (tp = 1 emits none).
--fsdp also shards each weight's d_model dimension over 'data' and all-gathers
it over the data groups before its use (7 all-gathers per layer).
With --dp 1 --tp 8 and the defaults (batch 1) the output is, line for line,
workloads/hlo/sharded/transformer_layer_fwd.tp8.hlo after its comment header.
--train emits the training step instead (forward, backward, Adam; gradient
all-reduces over 'data', or with --fsdp re-gathers and reduce-scatters):
spmd_train_step.py; with --dp 1 --tp 8 it is transformer_layer_train.tp8.hlo.
"""
import argparse
import math
import sys

TEMPLATE = """HloModule jit_transformer_layer_fwd, is_scheduled=true, entry_computation_layout={{(bf16[{B},{S},{D}]{{2,1,0}}, bf16[{D}]{{0}}, bf16[{D},{QKV}]{{1,0}}, bf16[{D},{QKV}]{{1,0}}, bf16[{D},{QKV}]{{1,0}}, /*index=5*/bf16[{QKV},{D}]{{1,0}}, bf16[{D}]{{0}}, bf16[{D},{F}]{{1,0}}, bf16[{D},{F}]{{1,0}}, bf16[{F},{D}]{{1,0}}, /*index=10*/bf16[{S},{HD}]{{1,0}}, bf16[{S},{HD}]{{1,0}})->bf16[{B},{S},{D}]{{2,1,0}}}}, num_partitions={N}

%add (x: bf16[], y: bf16[]) -> bf16[] {{
  %x = bf16[] parameter(0)
  %y = bf16[] parameter(1)
  ROOT %add.0 = bf16[] add(bf16[] %x, bf16[] %y)
}}

%region_0.1 (Arg_0.2: f32[], Arg_1.3: f32[]) -> f32[] {{
  %Arg_0.2 = f32[] parameter(0)
  %Arg_1.3 = f32[] parameter(1)
  ROOT %add.4 = f32[] add(f32[] %Arg_0.2, f32[] %Arg_1.3)
}}

%region_1.5 (Arg_0.6: f32[], Arg_1.7: f32[]) -> f32[] {{
  %Arg_0.6 = f32[] parameter(0)
  %Arg_1.7 = f32[] parameter(1)
  ROOT %maximum.8 = f32[] maximum(f32[] %Arg_0.6, f32[] %Arg_1.7)
}}

// RMSNorm #1, pass 1: sum of squares over d_model (f32 accumulation).
%fused_computation (param_0: bf16[{B},{S},{D}]) -> f32[{B},{S}] {{
  %param_0 = bf16[{B},{S},{D}]{{2,1,0}} parameter(0)
  %convert.0 = f32[{B},{S},{D}]{{2,1,0}} convert(bf16[{B},{S},{D}]{{2,1,0}} %param_0)
  %multiply.0 = f32[{B},{S},{D}]{{2,1,0}} multiply(f32[{B},{S},{D}]{{2,1,0}} %convert.0, f32[{B},{S},{D}]{{2,1,0}} %convert.0)
  %constant.0 = f32[] constant(0)
  ROOT %reduce.0 = f32[{B},{S}]{{1,0}} reduce(f32[{B},{S},{D}]{{2,1,0}} %multiply.0, f32[] %constant.0), dimensions={{2}}, to_apply=%region_0.1
}}

// RMSNorm #1, pass 2: x * rsqrt(mean(x^2) + eps) * weight, back to bf16.
%fused_computation.1 (param_0.1: bf16[{B},{S},{D}], param_1.1: f32[{B},{S}], param_2.1: bf16[{D}]) -> bf16[{B},{S},{D}] {{
  %param_0.1 = bf16[{B},{S},{D}]{{2,1,0}} parameter(0)
  %convert.1 = f32[{B},{S},{D}]{{2,1,0}} convert(bf16[{B},{S},{D}]{{2,1,0}} %param_0.1)
  %param_1.1 = f32[{B},{S}]{{1,0}} parameter(1)
  %constant.1 = f32[] constant({INV_D})
  %broadcast.1 = f32[{B},{S}]{{1,0}} broadcast(f32[] %constant.1), dimensions={{}}
  %multiply.1 = f32[{B},{S}]{{1,0}} multiply(f32[{B},{S}]{{1,0}} %param_1.1, f32[{B},{S}]{{1,0}} %broadcast.1)
  %constant.2 = f32[] constant(1e-05)
  %broadcast.2 = f32[{B},{S}]{{1,0}} broadcast(f32[] %constant.2), dimensions={{}}
  %add.1 = f32[{B},{S}]{{1,0}} add(f32[{B},{S}]{{1,0}} %multiply.1, f32[{B},{S}]{{1,0}} %broadcast.2)
  %rsqrt.1 = f32[{B},{S}]{{1,0}} rsqrt(f32[{B},{S}]{{1,0}} %add.1)
  %broadcast.3 = f32[{B},{S},{D}]{{2,1,0}} broadcast(f32[{B},{S}]{{1,0}} %rsqrt.1), dimensions={{0,1}}
  %multiply.2 = f32[{B},{S},{D}]{{2,1,0}} multiply(f32[{B},{S},{D}]{{2,1,0}} %convert.1, f32[{B},{S},{D}]{{2,1,0}} %broadcast.3)
  %convert.2 = bf16[{B},{S},{D}]{{2,1,0}} convert(f32[{B},{S},{D}]{{2,1,0}} %multiply.2)
  %param_2.1 = bf16[{D}]{{0}} parameter(2)
  %broadcast.4 = bf16[{B},{S},{D}]{{2,1,0}} broadcast(bf16[{D}]{{0}} %param_2.1), dimensions={{2}}
  ROOT %multiply.3 = bf16[{B},{S},{D}]{{2,1,0}} multiply(bf16[{B},{S},{D}]{{2,1,0}} %convert.2, bf16[{B},{S},{D}]{{2,1,0}} %broadcast.4)
}}

// RoPE (rotate-half form) on Q: q*cos + concat(-q[...,64:], q[...,:64])*sin.
%fused_computation.2 (param_0.2: bf16[{B},{S},{QKV}], param_1.2: bf16[{S},{HD}], param_2.2: bf16[{S},{HD}]) -> bf16[{B},{S},{HL},{HD}] {{
  %param_0.2 = bf16[{B},{S},{QKV}]{{2,1,0}} parameter(0)
  %reshape.2 = bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} reshape(bf16[{B},{S},{QKV}]{{2,1,0}} %param_0.2)
  %param_1.2 = bf16[{S},{HD}]{{1,0}} parameter(1)
  %broadcast.5 = bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} broadcast(bf16[{S},{HD}]{{1,0}} %param_1.2), dimensions={{1,3}}
  %multiply.4 = bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} multiply(bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} %reshape.2, bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} %broadcast.5)
  %slice.1 = bf16[{B},{S},{HL},{HALF}]{{3,2,1,0}} slice(bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} %reshape.2), slice={{[0:{B}], [0:{S}], [0:{HL}], [{HALF}:{HD}]}}
  %negate.1 = bf16[{B},{S},{HL},{HALF}]{{3,2,1,0}} negate(bf16[{B},{S},{HL},{HALF}]{{3,2,1,0}} %slice.1)
  %slice.2 = bf16[{B},{S},{HL},{HALF}]{{3,2,1,0}} slice(bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} %reshape.2), slice={{[0:{B}], [0:{S}], [0:{HL}], [0:{HALF}]}}
  %concatenate.1 = bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} concatenate(bf16[{B},{S},{HL},{HALF}]{{3,2,1,0}} %negate.1, bf16[{B},{S},{HL},{HALF}]{{3,2,1,0}} %slice.2), dimensions={{3}}
  %param_2.2 = bf16[{S},{HD}]{{1,0}} parameter(2)
  %broadcast.6 = bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} broadcast(bf16[{S},{HD}]{{1,0}} %param_2.2), dimensions={{1,3}}
  %multiply.5 = bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} multiply(bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} %concatenate.1, bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} %broadcast.6)
  ROOT %add.2 = bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} add(bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} %multiply.4, bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} %multiply.5)
}}

// RoPE on K (same computation as for Q; XLA keeps one clone per fusion).
%fused_computation.3 (param_0.3: bf16[{B},{S},{QKV}], param_1.3: bf16[{S},{HD}], param_2.3: bf16[{S},{HD}]) -> bf16[{B},{S},{HL},{HD}] {{
  %param_0.3 = bf16[{B},{S},{QKV}]{{2,1,0}} parameter(0)
  %reshape.3 = bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} reshape(bf16[{B},{S},{QKV}]{{2,1,0}} %param_0.3)
  %param_1.3 = bf16[{S},{HD}]{{1,0}} parameter(1)
  %broadcast.7 = bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} broadcast(bf16[{S},{HD}]{{1,0}} %param_1.3), dimensions={{1,3}}
  %multiply.6 = bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} multiply(bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} %reshape.3, bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} %broadcast.7)
  %slice.3 = bf16[{B},{S},{HL},{HALF}]{{3,2,1,0}} slice(bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} %reshape.3), slice={{[0:{B}], [0:{S}], [0:{HL}], [{HALF}:{HD}]}}
  %negate.2 = bf16[{B},{S},{HL},{HALF}]{{3,2,1,0}} negate(bf16[{B},{S},{HL},{HALF}]{{3,2,1,0}} %slice.3)
  %slice.4 = bf16[{B},{S},{HL},{HALF}]{{3,2,1,0}} slice(bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} %reshape.3), slice={{[0:{B}], [0:{S}], [0:{HL}], [0:{HALF}]}}
  %concatenate.2 = bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} concatenate(bf16[{B},{S},{HL},{HALF}]{{3,2,1,0}} %negate.2, bf16[{B},{S},{HL},{HALF}]{{3,2,1,0}} %slice.4), dimensions={{3}}
  %param_2.3 = bf16[{S},{HD}]{{1,0}} parameter(2)
  %broadcast.8 = bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} broadcast(bf16[{S},{HD}]{{1,0}} %param_2.3), dimensions={{1,3}}
  %multiply.7 = bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} multiply(bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} %concatenate.2, bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} %broadcast.8)
  ROOT %add.3 = bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} add(bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} %multiply.6, bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} %multiply.7)
}}

// Softmax pass 1: row max of the scaled, causally masked scores (f32).
%fused_computation.4 (param_0.4: bf16[{B},{HL},{S},{S}]) -> f32[{B},{HL},{S}] {{
  %iota.1 = s32[{B},{HL},{S},{S}]{{3,2,1,0}} iota(), iota_dimension=2
  %iota.2 = s32[{B},{HL},{S},{S}]{{3,2,1,0}} iota(), iota_dimension=3
  %compare.1 = pred[{B},{HL},{S},{S}]{{3,2,1,0}} compare(s32[{B},{HL},{S},{S}]{{3,2,1,0}} %iota.1, s32[{B},{HL},{S},{S}]{{3,2,1,0}} %iota.2), direction=GE
  %param_0.4 = bf16[{B},{HL},{S},{S}]{{3,2,1,0}} parameter(0)
  %convert.4 = f32[{B},{HL},{S},{S}]{{3,2,1,0}} convert(bf16[{B},{HL},{S},{S}]{{3,2,1,0}} %param_0.4)
  %constant.4 = f32[] constant({SCALE})
  %broadcast.9 = f32[{B},{HL},{S},{S}]{{3,2,1,0}} broadcast(f32[] %constant.4), dimensions={{}}
  %multiply.8 = f32[{B},{HL},{S},{S}]{{3,2,1,0}} multiply(f32[{B},{HL},{S},{S}]{{3,2,1,0}} %convert.4, f32[{B},{HL},{S},{S}]{{3,2,1,0}} %broadcast.9)
  %constant.5 = f32[] constant(-inf)
  %broadcast.10 = f32[{B},{HL},{S},{S}]{{3,2,1,0}} broadcast(f32[] %constant.5), dimensions={{}}
  %select.1 = f32[{B},{HL},{S},{S}]{{3,2,1,0}} select(pred[{B},{HL},{S},{S}]{{3,2,1,0}} %compare.1, f32[{B},{HL},{S},{S}]{{3,2,1,0}} %multiply.8, f32[{B},{HL},{S},{S}]{{3,2,1,0}} %broadcast.10)
  ROOT %reduce.1 = f32[{B},{HL},{S}]{{2,1,0}} reduce(f32[{B},{HL},{S},{S}]{{3,2,1,0}} %select.1, f32[] %constant.5), dimensions={{3}}, to_apply=%region_1.5
}}

// Softmax pass 2: row sum of exp(s - max) (f32).
%fused_computation.5 (param_0.5: bf16[{B},{HL},{S},{S}], param_1.5: f32[{B},{HL},{S}]) -> f32[{B},{HL},{S}] {{
  %iota.3 = s32[{B},{HL},{S},{S}]{{3,2,1,0}} iota(), iota_dimension=2
  %iota.4 = s32[{B},{HL},{S},{S}]{{3,2,1,0}} iota(), iota_dimension=3
  %compare.2 = pred[{B},{HL},{S},{S}]{{3,2,1,0}} compare(s32[{B},{HL},{S},{S}]{{3,2,1,0}} %iota.3, s32[{B},{HL},{S},{S}]{{3,2,1,0}} %iota.4), direction=GE
  %param_0.5 = bf16[{B},{HL},{S},{S}]{{3,2,1,0}} parameter(0)
  %convert.5 = f32[{B},{HL},{S},{S}]{{3,2,1,0}} convert(bf16[{B},{HL},{S},{S}]{{3,2,1,0}} %param_0.5)
  %constant.6 = f32[] constant({SCALE})
  %broadcast.11 = f32[{B},{HL},{S},{S}]{{3,2,1,0}} broadcast(f32[] %constant.6), dimensions={{}}
  %multiply.9 = f32[{B},{HL},{S},{S}]{{3,2,1,0}} multiply(f32[{B},{HL},{S},{S}]{{3,2,1,0}} %convert.5, f32[{B},{HL},{S},{S}]{{3,2,1,0}} %broadcast.11)
  %constant.7 = f32[] constant(-inf)
  %broadcast.12 = f32[{B},{HL},{S},{S}]{{3,2,1,0}} broadcast(f32[] %constant.7), dimensions={{}}
  %select.2 = f32[{B},{HL},{S},{S}]{{3,2,1,0}} select(pred[{B},{HL},{S},{S}]{{3,2,1,0}} %compare.2, f32[{B},{HL},{S},{S}]{{3,2,1,0}} %multiply.9, f32[{B},{HL},{S},{S}]{{3,2,1,0}} %broadcast.12)
  %param_1.5 = f32[{B},{HL},{S}]{{2,1,0}} parameter(1)
  %broadcast.13 = f32[{B},{HL},{S},{S}]{{3,2,1,0}} broadcast(f32[{B},{HL},{S}]{{2,1,0}} %param_1.5), dimensions={{0,1,2}}
  %subtract.1 = f32[{B},{HL},{S},{S}]{{3,2,1,0}} subtract(f32[{B},{HL},{S},{S}]{{3,2,1,0}} %select.2, f32[{B},{HL},{S},{S}]{{3,2,1,0}} %broadcast.13)
  %exponential.1 = f32[{B},{HL},{S},{S}]{{3,2,1,0}} exponential(f32[{B},{HL},{S},{S}]{{3,2,1,0}} %subtract.1)
  %constant.8 = f32[] constant(0)
  ROOT %reduce.2 = f32[{B},{HL},{S}]{{2,1,0}} reduce(f32[{B},{HL},{S},{S}]{{3,2,1,0}} %exponential.1, f32[] %constant.8), dimensions={{3}}, to_apply=%region_0.1
}}

// Softmax pass 3: exp(s - max) / sum, written as bf16 probabilities.
%fused_computation.6 (param_0.6: bf16[{B},{HL},{S},{S}], param_1.6: f32[{B},{HL},{S}], param_2.6: f32[{B},{HL},{S}]) -> bf16[{B},{HL},{S},{S}] {{
  %iota.5 = s32[{B},{HL},{S},{S}]{{3,2,1,0}} iota(), iota_dimension=2
  %iota.6 = s32[{B},{HL},{S},{S}]{{3,2,1,0}} iota(), iota_dimension=3
  %compare.3 = pred[{B},{HL},{S},{S}]{{3,2,1,0}} compare(s32[{B},{HL},{S},{S}]{{3,2,1,0}} %iota.5, s32[{B},{HL},{S},{S}]{{3,2,1,0}} %iota.6), direction=GE
  %param_0.6 = bf16[{B},{HL},{S},{S}]{{3,2,1,0}} parameter(0)
  %convert.6 = f32[{B},{HL},{S},{S}]{{3,2,1,0}} convert(bf16[{B},{HL},{S},{S}]{{3,2,1,0}} %param_0.6)
  %constant.9 = f32[] constant({SCALE})
  %broadcast.14 = f32[{B},{HL},{S},{S}]{{3,2,1,0}} broadcast(f32[] %constant.9), dimensions={{}}
  %multiply.10 = f32[{B},{HL},{S},{S}]{{3,2,1,0}} multiply(f32[{B},{HL},{S},{S}]{{3,2,1,0}} %convert.6, f32[{B},{HL},{S},{S}]{{3,2,1,0}} %broadcast.14)
  %constant.10 = f32[] constant(-inf)
  %broadcast.15 = f32[{B},{HL},{S},{S}]{{3,2,1,0}} broadcast(f32[] %constant.10), dimensions={{}}
  %select.3 = f32[{B},{HL},{S},{S}]{{3,2,1,0}} select(pred[{B},{HL},{S},{S}]{{3,2,1,0}} %compare.3, f32[{B},{HL},{S},{S}]{{3,2,1,0}} %multiply.10, f32[{B},{HL},{S},{S}]{{3,2,1,0}} %broadcast.15)
  %param_1.6 = f32[{B},{HL},{S}]{{2,1,0}} parameter(1)
  %broadcast.16 = f32[{B},{HL},{S},{S}]{{3,2,1,0}} broadcast(f32[{B},{HL},{S}]{{2,1,0}} %param_1.6), dimensions={{0,1,2}}
  %subtract.2 = f32[{B},{HL},{S},{S}]{{3,2,1,0}} subtract(f32[{B},{HL},{S},{S}]{{3,2,1,0}} %select.3, f32[{B},{HL},{S},{S}]{{3,2,1,0}} %broadcast.16)
  %exponential.2 = f32[{B},{HL},{S},{S}]{{3,2,1,0}} exponential(f32[{B},{HL},{S},{S}]{{3,2,1,0}} %subtract.2)
  %param_2.6 = f32[{B},{HL},{S}]{{2,1,0}} parameter(2)
  %broadcast.17 = f32[{B},{HL},{S},{S}]{{3,2,1,0}} broadcast(f32[{B},{HL},{S}]{{2,1,0}} %param_2.6), dimensions={{0,1,2}}
  %divide.1 = f32[{B},{HL},{S},{S}]{{3,2,1,0}} divide(f32[{B},{HL},{S},{S}]{{3,2,1,0}} %exponential.2, f32[{B},{HL},{S},{S}]{{3,2,1,0}} %broadcast.17)
  ROOT %convert.7 = bf16[{B},{HL},{S},{S}]{{3,2,1,0}} convert(f32[{B},{HL},{S},{S}]{{3,2,1,0}} %divide.1)
}}

// Residual add after the attention all-reduce.
%fused_computation.7 (param_0.7: bf16[{B},{S},{D}], param_1.7: bf16[{B},{S},{D}]) -> bf16[{B},{S},{D}] {{
  %param_0.7 = bf16[{B},{S},{D}]{{2,1,0}} parameter(0)
  %param_1.7 = bf16[{B},{S},{D}]{{2,1,0}} parameter(1)
  ROOT %add.7 = bf16[{B},{S},{D}]{{2,1,0}} add(bf16[{B},{S},{D}]{{2,1,0}} %param_0.7, bf16[{B},{S},{D}]{{2,1,0}} %param_1.7)
}}

// RMSNorm #2, pass 1.
%fused_computation.8 (param_0.8: bf16[{B},{S},{D}]) -> f32[{B},{S}] {{
  %param_0.8 = bf16[{B},{S},{D}]{{2,1,0}} parameter(0)
  %convert.8 = f32[{B},{S},{D}]{{2,1,0}} convert(bf16[{B},{S},{D}]{{2,1,0}} %param_0.8)
  %multiply.11 = f32[{B},{S},{D}]{{2,1,0}} multiply(f32[{B},{S},{D}]{{2,1,0}} %convert.8, f32[{B},{S},{D}]{{2,1,0}} %convert.8)
  %constant.11 = f32[] constant(0)
  ROOT %reduce.3 = f32[{B},{S}]{{1,0}} reduce(f32[{B},{S},{D}]{{2,1,0}} %multiply.11, f32[] %constant.11), dimensions={{2}}, to_apply=%region_0.1
}}

// RMSNorm #2, pass 2.
%fused_computation.9 (param_0.9: bf16[{B},{S},{D}], param_1.9: f32[{B},{S}], param_2.9: bf16[{D}]) -> bf16[{B},{S},{D}] {{
  %param_0.9 = bf16[{B},{S},{D}]{{2,1,0}} parameter(0)
  %convert.9 = f32[{B},{S},{D}]{{2,1,0}} convert(bf16[{B},{S},{D}]{{2,1,0}} %param_0.9)
  %param_1.9 = f32[{B},{S}]{{1,0}} parameter(1)
  %constant.12 = f32[] constant({INV_D})
  %broadcast.18 = f32[{B},{S}]{{1,0}} broadcast(f32[] %constant.12), dimensions={{}}
  %multiply.12 = f32[{B},{S}]{{1,0}} multiply(f32[{B},{S}]{{1,0}} %param_1.9, f32[{B},{S}]{{1,0}} %broadcast.18)
  %constant.13 = f32[] constant(1e-05)
  %broadcast.19 = f32[{B},{S}]{{1,0}} broadcast(f32[] %constant.13), dimensions={{}}
  %add.9 = f32[{B},{S}]{{1,0}} add(f32[{B},{S}]{{1,0}} %multiply.12, f32[{B},{S}]{{1,0}} %broadcast.19)
  %rsqrt.2 = f32[{B},{S}]{{1,0}} rsqrt(f32[{B},{S}]{{1,0}} %add.9)
  %broadcast.20 = f32[{B},{S},{D}]{{2,1,0}} broadcast(f32[{B},{S}]{{1,0}} %rsqrt.2), dimensions={{0,1}}
  %multiply.13 = f32[{B},{S},{D}]{{2,1,0}} multiply(f32[{B},{S},{D}]{{2,1,0}} %convert.9, f32[{B},{S},{D}]{{2,1,0}} %broadcast.20)
  %convert.10 = bf16[{B},{S},{D}]{{2,1,0}} convert(f32[{B},{S},{D}]{{2,1,0}} %multiply.13)
  %param_2.9 = bf16[{D}]{{0}} parameter(2)
  %broadcast.21 = bf16[{B},{S},{D}]{{2,1,0}} broadcast(bf16[{D}]{{0}} %param_2.9), dimensions={{2}}
  ROOT %multiply.14 = bf16[{B},{S},{D}]{{2,1,0}} multiply(bf16[{B},{S},{D}]{{2,1,0}} %convert.10, bf16[{B},{S},{D}]{{2,1,0}} %broadcast.21)
}}

// Gate projection with SiLU epilogue: g * logistic(g): kOutput.
%fused_computation.10 (param_0.10: bf16[{B},{S},{D}], param_1.10: bf16[{D},{F}]) -> bf16[{B},{S},{F}] {{
  %param_0.10 = bf16[{B},{S},{D}]{{2,1,0}} parameter(0)
  %param_1.10 = bf16[{D},{F}]{{1,0}} parameter(1)
  %dot.10 = bf16[{B},{S},{F}]{{2,1,0}} dot(bf16[{B},{S},{D}]{{2,1,0}} %param_0.10, bf16[{D},{F}]{{1,0}} %param_1.10), lhs_contracting_dims={{2}}, rhs_contracting_dims={{0}}
  %logistic.1 = bf16[{B},{S},{F}]{{2,1,0}} logistic(bf16[{B},{S},{F}]{{2,1,0}} %dot.10)
  ROOT %multiply.15 = bf16[{B},{S},{F}]{{2,1,0}} multiply(bf16[{B},{S},{F}]{{2,1,0}} %dot.10, bf16[{B},{S},{F}]{{2,1,0}} %logistic.1)
}}

// Up projection times silu(gate): kOutput.
%fused_computation.11 (param_0.11: bf16[{B},{S},{D}], param_1.11: bf16[{D},{F}], param_2.11: bf16[{B},{S},{F}]) -> bf16[{B},{S},{F}] {{
  %param_0.11 = bf16[{B},{S},{D}]{{2,1,0}} parameter(0)
  %param_1.11 = bf16[{D},{F}]{{1,0}} parameter(1)
  %dot.11 = bf16[{B},{S},{F}]{{2,1,0}} dot(bf16[{B},{S},{D}]{{2,1,0}} %param_0.11, bf16[{D},{F}]{{1,0}} %param_1.11), lhs_contracting_dims={{2}}, rhs_contracting_dims={{0}}
  %param_2.11 = bf16[{B},{S},{F}]{{2,1,0}} parameter(2)
  ROOT %multiply.16 = bf16[{B},{S},{F}]{{2,1,0}} multiply(bf16[{B},{S},{F}]{{2,1,0}} %param_2.11, bf16[{B},{S},{F}]{{2,1,0}} %dot.11)
}}

// Residual add after the MLP all-reduce.
%fused_computation.12 (param_0.12: bf16[{B},{S},{D}], param_1.12: bf16[{B},{S},{D}]) -> bf16[{B},{S},{D}] {{
  %param_0.12 = bf16[{B},{S},{D}]{{2,1,0}} parameter(0)
  %param_1.12 = bf16[{B},{S},{D}]{{2,1,0}} parameter(1)
  ROOT %add.12 = bf16[{B},{S},{D}]{{2,1,0}} add(bf16[{B},{S},{D}]{{2,1,0}} %param_0.12, bf16[{B},{S},{D}]{{2,1,0}} %param_1.12)
}}

ENTRY %main.110 (x.1: bf16[{B},{S},{D}], attn_norm.2: bf16[{D}], wq.3: bf16[{D},{QKV}], wk.4: bf16[{D},{QKV}], wv.5: bf16[{D},{QKV}], wo.6: bf16[{QKV},{D}], mlp_norm.7: bf16[{D}], w_gate.8: bf16[{D},{F}], w_up.9: bf16[{D},{F}], w_down.10: bf16[{F},{D}], rope_cos.11: bf16[{S},{HD}], rope_sin.12: bf16[{S},{HD}]) -> bf16[{B},{S},{D}] {{
  %x.1 = bf16[{B},{S},{D}]{{2,1,0}} parameter(0), sharding={ACT_SHARD}
  %attn_norm.2 = bf16[{D}]{{0}} parameter(1), sharding={REPL}
  %wq.3 = bf16[{D},{QKV}]{{1,0}} parameter(2), sharding={COL_SHARD}
  %wk.4 = bf16[{D},{QKV}]{{1,0}} parameter(3), sharding={COL_SHARD}
  %wv.5 = bf16[{D},{QKV}]{{1,0}} parameter(4), sharding={COL_SHARD}
  %wo.6 = bf16[{QKV},{D}]{{1,0}} parameter(5), sharding={ROW_SHARD}
  %mlp_norm.7 = bf16[{D}]{{0}} parameter(6), sharding={REPL}
  %w_gate.8 = bf16[{D},{F}]{{1,0}} parameter(7), sharding={COL_SHARD}
  %w_up.9 = bf16[{D},{F}]{{1,0}} parameter(8), sharding={COL_SHARD}
  %w_down.10 = bf16[{F},{D}]{{1,0}} parameter(9), sharding={ROW_SHARD}
  %rope_cos.11 = bf16[{S},{HD}]{{1,0}} parameter(10), sharding={REPL}
  %rope_sin.12 = bf16[{S},{HD}]{{1,0}} parameter(11), sharding={REPL}
  %input_reduce_fusion = f32[{B},{S}]{{1,0}} fusion(bf16[{B},{S},{D}]{{2,1,0}} %x.1), kind=kInput, calls=%fused_computation
  %loop_multiply_fusion = bf16[{B},{S},{D}]{{2,1,0}} fusion(bf16[{B},{S},{D}]{{2,1,0}} %x.1, f32[{B},{S}]{{1,0}} %input_reduce_fusion, bf16[{D}]{{0}} %attn_norm.2), kind=kLoop, calls=%fused_computation.1
  %dot.13 = bf16[{B},{S},{QKV}]{{2,1,0}} dot(bf16[{B},{S},{D}]{{2,1,0}} %loop_multiply_fusion, bf16[{D},{QKV}]{{1,0}} %wq.3), lhs_contracting_dims={{2}}, rhs_contracting_dims={{0}}
  %dot.14 = bf16[{B},{S},{QKV}]{{2,1,0}} dot(bf16[{B},{S},{D}]{{2,1,0}} %loop_multiply_fusion, bf16[{D},{QKV}]{{1,0}} %wk.4), lhs_contracting_dims={{2}}, rhs_contracting_dims={{0}}
  %dot.15 = bf16[{B},{S},{QKV}]{{2,1,0}} dot(bf16[{B},{S},{D}]{{2,1,0}} %loop_multiply_fusion, bf16[{D},{QKV}]{{1,0}} %wv.5), lhs_contracting_dims={{2}}, rhs_contracting_dims={{0}}
  %loop_add_fusion = bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} fusion(bf16[{B},{S},{QKV}]{{2,1,0}} %dot.13, bf16[{S},{HD}]{{1,0}} %rope_cos.11, bf16[{S},{HD}]{{1,0}} %rope_sin.12), kind=kLoop, calls=%fused_computation.2
  %loop_add_fusion.1 = bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} fusion(bf16[{B},{S},{QKV}]{{2,1,0}} %dot.14, bf16[{S},{HD}]{{1,0}} %rope_cos.11, bf16[{S},{HD}]{{1,0}} %rope_sin.12), kind=kLoop, calls=%fused_computation.3
  %dot.16 = bf16[{B},{HL},{S},{S}]{{3,2,1,0}} dot(bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} %loop_add_fusion, bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} %loop_add_fusion.1), lhs_batch_dims={{0,2}}, lhs_contracting_dims={{3}}, rhs_batch_dims={{0,2}}, rhs_contracting_dims={{3}}
  %input_reduce_fusion.1 = f32[{B},{HL},{S}]{{2,1,0}} fusion(bf16[{B},{HL},{S},{S}]{{3,2,1,0}} %dot.16), kind=kInput, calls=%fused_computation.4
  %input_reduce_fusion.2 = f32[{B},{HL},{S}]{{2,1,0}} fusion(bf16[{B},{HL},{S},{S}]{{3,2,1,0}} %dot.16, f32[{B},{HL},{S}]{{2,1,0}} %input_reduce_fusion.1), kind=kInput, calls=%fused_computation.5
  %loop_convert_fusion = bf16[{B},{HL},{S},{S}]{{3,2,1,0}} fusion(bf16[{B},{HL},{S},{S}]{{3,2,1,0}} %dot.16, f32[{B},{HL},{S}]{{2,1,0}} %input_reduce_fusion.1, f32[{B},{HL},{S}]{{2,1,0}} %input_reduce_fusion.2), kind=kLoop, calls=%fused_computation.6
  %bitcast.1 = bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} bitcast(bf16[{B},{S},{QKV}]{{2,1,0}} %dot.15)
  %dot.17 = bf16[{B},{HL},{S},{HD}]{{3,2,1,0}} dot(bf16[{B},{HL},{S},{S}]{{3,2,1,0}} %loop_convert_fusion, bf16[{B},{S},{HL},{HD}]{{3,2,1,0}} %bitcast.1), lhs_batch_dims={{0,1}}, lhs_contracting_dims={{3}}, rhs_batch_dims={{0,2}}, rhs_contracting_dims={{1}}
  %bitcast.2 = bf16[{HL},{HD},{D}]{{2,1,0}} bitcast(bf16[{QKV},{D}]{{1,0}} %wo.6)
  %dot.18 = bf16[{B},{S},{D}]{{2,1,0}} dot(bf16[{B},{HL},{S},{HD}]{{3,2,1,0}} %dot.17, bf16[{HL},{HD},{D}]{{2,1,0}} %bitcast.2), lhs_contracting_dims={{1,3}}, rhs_contracting_dims={{0,1}}
  %all-reduce.1 = bf16[{B},{S},{D}]{{2,1,0}} all-reduce(bf16[{B},{S},{D}]{{2,1,0}} %dot.18), channel_id=1, replica_groups={TP_GROUPS}, use_global_device_ids=true, to_apply=%add
  %loop_add_fusion.2 = bf16[{B},{S},{D}]{{2,1,0}} fusion(bf16[{B},{S},{D}]{{2,1,0}} %all-reduce.1, bf16[{B},{S},{D}]{{2,1,0}} %x.1), kind=kLoop, calls=%fused_computation.7
  %input_reduce_fusion.3 = f32[{B},{S}]{{1,0}} fusion(bf16[{B},{S},{D}]{{2,1,0}} %loop_add_fusion.2), kind=kInput, calls=%fused_computation.8
  %loop_multiply_fusion.1 = bf16[{B},{S},{D}]{{2,1,0}} fusion(bf16[{B},{S},{D}]{{2,1,0}} %loop_add_fusion.2, f32[{B},{S}]{{1,0}} %input_reduce_fusion.3, bf16[{D}]{{0}} %mlp_norm.7), kind=kLoop, calls=%fused_computation.9
  %dot_multiply_fusion = bf16[{B},{S},{F}]{{2,1,0}} fusion(bf16[{B},{S},{D}]{{2,1,0}} %loop_multiply_fusion.1, bf16[{D},{F}]{{1,0}} %w_gate.8), kind=kOutput, calls=%fused_computation.10
  %dot_multiply_fusion.1 = bf16[{B},{S},{F}]{{2,1,0}} fusion(bf16[{B},{S},{D}]{{2,1,0}} %loop_multiply_fusion.1, bf16[{D},{F}]{{1,0}} %w_up.9, bf16[{B},{S},{F}]{{2,1,0}} %dot_multiply_fusion), kind=kOutput, calls=%fused_computation.11
  %dot.19 = bf16[{B},{S},{D}]{{2,1,0}} dot(bf16[{B},{S},{F}]{{2,1,0}} %dot_multiply_fusion.1, bf16[{F},{D}]{{1,0}} %w_down.10), lhs_contracting_dims={{2}}, rhs_contracting_dims={{0}}
  %all-reduce.2 = bf16[{B},{S},{D}]{{2,1,0}} all-reduce(bf16[{B},{S},{D}]{{2,1,0}} %dot.19), channel_id=2, replica_groups={TP_GROUPS}, use_global_device_ids=true, to_apply=%add
  ROOT %loop_add_fusion.3 = bf16[{B},{S},{D}]{{2,1,0}} fusion(bf16[{B},{S},{D}]{{2,1,0}} %all-reduce.2, bf16[{B},{S},{D}]{{2,1,0}} %loop_add_fusion.2), kind=kLoop, calls=%fused_computation.12, sharding={ACT_SHARD}
}}
"""


def fail(message):
    sys.stderr.write(f"spmd_transformer.py: error: {message}\n")
    sys.exit(2)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dp", type=int, default=1, help="data-parallel mesh axis size")
    p.add_argument("--tp", type=int, default=8, help="tensor-parallel (model) mesh axis size")
    p.add_argument("--batch", type=int, default=None, help="global batch (default: dp)")
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--d-model", type=int, default=4096)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--mlp", type=int, default=11008, help="SwiGLU hidden size F")
    p.add_argument("--fsdp", action="store_true",
                   help="also shard the weights over 'data' (FSDP): all-gather each weight before its use")
    p.add_argument("--train", action="store_true",
                   help="emit the training step (forward, backward, Adam update; see spmd_train_step.py) "
                        "instead of the forward pass")
    p.add_argument("-o", "--output", default="-", help="output file (default: stdout)")
    a = p.parse_args()
    batch = a.batch if a.batch is not None else a.dp
    for name, v in (("--dp", a.dp), ("--tp", a.tp), ("--batch", batch), ("--seq", a.seq), ("--d-model", a.d_model),
                    ("--heads", a.heads), ("--head-dim", a.head_dim), ("--mlp", a.mlp)):
        if v < 1:
            fail(f"{name} must be >= 1, got {v}")
    if batch % a.dp:
        fail(f"--batch {batch} is not divisible by --dp {a.dp}")
    if a.heads % a.tp:
        fail(f"--heads {a.heads} is not divisible by --tp {a.tp}")
    if a.mlp % a.tp:
        fail(f"--mlp {a.mlp} is not divisible by --tp {a.tp}")
    if a.fsdp and a.d_model % a.dp:
        fail(f"--fsdp: --d-model {a.d_model} is not divisible by --dp {a.dp}")
    if a.head_dim % 2:
        fail(f"--head-dim {a.head_dim} must be even (RoPE rotates halves)")
    if a.train:
        import spmd_train_step  # beside this script
        a.batch = batch
        text, summary = spmd_train_step.build(a, repr_float)
        write(a.output, train_header(a, summary) + "\n" + text)
        return
    n = a.dp * a.tp
    hl = a.heads // a.tp
    tp_groups = ",".join("{" + ",".join(str(d * a.tp + m) for m in range(a.tp)) + "}" for d in range(a.dp))
    if a.dp == 1:
        act = "{replicated}"
        col = f"{{devices=[1,{a.tp}]<=[{n}]}}"
        row = f"{{devices=[{a.tp},1]<=[{n}]}}"
    else:
        # Tiles [batch, 1, 1] over 'data', the last tile dimension replicated over 'model'.
        act = f"{{devices=[{a.dp},1,1,{a.tp}]<=[{n}] last_tile_dim_replicate}}"
        col = f"{{devices=[1,{a.tp},{a.dp}]<=[{a.dp},{a.tp}]T(1,0) last_tile_dim_replicate}}"
        row = f"{{devices=[{a.tp},1,{a.dp}]<=[{a.dp},{a.tp}]T(1,0) last_tile_dim_replicate}}"
    text = TEMPLATE.format(
        N=n, B=batch // a.dp, S=a.seq, D=a.d_model, HL=hl, HD=a.head_dim, HALF=a.head_dim // 2,
        QKV=hl * a.head_dim, F=a.mlp // a.tp, INV_D=repr_float(1.0 / a.d_model),
        SCALE=repr_float(1.0 / math.sqrt(a.head_dim), 9), TP_GROUPS="{" + tp_groups + "}",
        COL_SHARD=col, ROW_SHARD=row, ACT_SHARD=act, REPL="{replicated}")
    if a.tp == 1:
        # Nothing to reduce: the row-"parallel" dots are whole (XLA emits no all-reduce).
        lines = [l for l in text.split("\n") if "all-reduce(" not in l]
        text = "\n".join(lines).replace("%all-reduce.1,", "%dot.18,").replace("%all-reduce.2,", "%dot.19,")
    dp_groups = ",".join("{" + ",".join(str(d * a.tp + m) for d in range(a.dp)) + "}" for m in range(a.tp))
    if a.fsdp and a.dp > 1:
        text = apply_fsdp(text, a, hl * a.head_dim, a.mlp // a.tp, "{" + dp_groups + "}")
    header = (
        f"// Generated by workloads/gen/spmd_transformer.py --dp {a.dp} --tp {a.tp} --batch {batch} --seq {a.seq} "
        f"--d-model {a.d_model} --heads {a.heads} --head-dim {a.head_dim} --mlp {a.mlp}\n"
        f"// LLaMA-style decoder layer forward, SPMD-partitioned for a [{a.dp} data x {a.tp} model] mesh "
        f"({n} devices): per-device batch {batch // a.dp}, {hl} heads, MLP {a.mlp // a.tp}.\n"
        f"// Collectives per device: {0 if a.tp == 1 else 2} all-reduce(s) of bf16[{batch // a.dp},{a.seq},{a.d_model}] "
        f"over the model groups {{{tp_groups}}}"
        + (f"; 7 all-gathers of the FSDP weight shards over the data groups {{{dp_groups}}}" if a.fsdp and a.dp > 1
           else "") + ".\n\n")
    write(a.output, header + text)


def write(path, text):
    out = sys.stdout if path == "-" else open(path, "w")
    out.write(text)


def train_header(a, s):
    """The // header of a training step: the command, the mesh and the per-device collectives."""
    batch = a.batch
    counts = {}
    for kind, nbytes, axis in s["collectives"]:
        key = (kind, axis)
        counts.setdefault(key, [0, 0])
        counts[key][0] += 1
        counts[key][1] += nbytes
    groups = {"model": s["tp_groups"], "data": s["dp_groups"]}
    lines = [f"// Generated by workloads/gen/spmd_transformer.py --train --dp {a.dp} --tp {a.tp}"
             + (" --fsdp" if a.fsdp else "") + f" --batch {batch} --seq {a.seq} --d-model {a.d_model} "
             f"--heads {a.heads} --head-dim {a.head_dim} --mlp {a.mlp}",
             f"// LLaMA-style decoder layer training step (forward, backward given the output gradient dy, Adam "
             f"update), SPMD-partitioned for a [{a.dp} data x {a.tp} model] mesh ({a.dp * a.tp} devices)"
             + (", FSDP" if s["fsdp"] else "") + f": per-device batch {s['B']}, {s['HL']} heads, MLP {s['F']}.",
             "// Collectives per device (see workloads/README.md, \"Training step\"):"]
    if not counts:
        lines.append("//   none")
    for (kind, axis), (count, nbytes) in sorted(counts.items()):
        lines.append(f"//   {count} x {kind} over the {axis} groups {groups[axis]}, {nbytes} bytes in total")
    return "\n".join(lines) + "\n"


# The weights: name, rows, cols, parallel kind. FSDP shards the d_model
# dimension over 'data': dim 0 of column-parallel [d, X], dim 1 of row-parallel [X, d].
WEIGHTS = [("wq.3", "col"), ("wk.4", "col"), ("wv.5", "col"), ("wo.6", "row"),
           ("w_gate.8", "col"), ("w_up.9", "col"), ("w_down.10", "row")]


def apply_fsdp(text, a, qkv, f_local, dp_groups):
    dims = {"wq.3": (a.d_model, qkv), "wk.4": (a.d_model, qkv), "wv.5": (a.d_model, qkv), "wo.6": (qkv, a.d_model),
            "w_gate.8": (a.d_model, f_local), "w_up.9": (a.d_model, f_local), "w_down.10": (f_local, a.d_model)}
    n = a.dp * a.tp
    lines = text.split("\n")
    gathers = []
    channel = 3
    for name, kind in WEIGHTS:
        r, c = dims[name]
        full = f"bf16[{r},{c}]"
        shard = f"bf16[{r // a.dp},{c}]" if kind == "col" else f"bf16[{r},{c // a.dp}]"
        # P('data', 'model') for column-parallel, P('model', 'data') for row-parallel.
        sharding = (f"{{devices=[{a.dp},{a.tp}]<=[{n}]}}" if kind == "col"
                    else f"{{devices=[{a.tp},{a.dp}]<=[{a.dp},{a.tp}]T(1,0)}}")
        for i, line in enumerate(lines):
            if line.startswith("ENTRY "):
                lines[i] = line.replace(f"{name}: {full}", f"{name}: {shard}")
            elif line.startswith(f"  %{name} = "):
                head = line.split(" parameter(")[1]
                lines[i] = f"  %{name} = {shard}{{1,0}} parameter({head.split(')')[0]}), sharding={sharding}"
            elif f"{full}{{1,0}} %{name}" in line:
                lines[i] = line.replace(f"{full}{{1,0}} %{name}", f"{full}{{1,0}} %all-gather.{name}")
        gathers.append(f"  %all-gather.{name} = {full}{{1,0}} all-gather({shard}{{1,0}} %{name}), channel_id={channel}, "
                       f"replica_groups={dp_groups}, dimensions={{{0 if kind == 'col' else 1}}}, "
                       "use_global_device_ids=true")
        channel += 1
    last_param = max(i for i, l in enumerate(lines) if " parameter(" in l and l.startswith("  %rope_sin"))
    lines[last_param + 1:last_param + 1] = gathers
    # entry_computation_layout lists the parameter types in order: rebuild it.
    entry = next(l for l in lines if l.startswith("ENTRY "))
    params = entry[entry.index("(") + 1:entry.index(") ->")].split(", ")
    types = [p.split(": ")[1] for p in params]
    layout = []
    for i, t in enumerate(types):
        rank = t.count(",") + 1
        layout.append(("/*index=%d*/" % i if i and i % 5 == 0 else "") + t + "{" + ",".join(
            str(k) for k in range(rank - 1, -1, -1)) + "}")
    first = lines[0]
    start = first.index("entry_computation_layout={(") + len("entry_computation_layout={(")
    end = first.index(")->", start)
    lines[0] = first[:start] + ", ".join(layout) + first[end:]
    return "\n".join(lines)


def repr_float(v, digits=None):
    """Constants as the shipped module writes them (shortest round-trip or 9 digits)."""
    if digits is None:
        return repr(v)
    return f"{v:.{digits}g}" if f"{v:.{digits}g}" != "0" else repr(v)


if __name__ == "__main__":
    main()
