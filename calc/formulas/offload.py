"""Offload: the optimizer side, and with ZeRO-3 the parameters, moved off the GPU.

ZeRO-Offload (Ren et al. 2021 §4.1, Fig. 2): the 16-bit weights stay on the GPU and the forward
and backward run there; the gradients go to the host, where the fp32 master weights, the
optimizer states and an fp32 copy of the gradients live, and the updated 16-bit weights come
back: the GPU keeps its weights, and from stage 2 on its 16-bit gradients stream to the host in
buckets as the backward makes them (the buckets are not counted); the host keeps (q_m + q_o + 4)
bytes per trained parameter of the rank's ZeRO partition (DeepSpeed's fp32 partitions of the
weights and gradients, and the optimizer states). ZeRO-Infinity (Rajbhandari et al. 2021 §5)
also puts the stage-3 parameter partitions on the host or NVMe and fetches each layer when it
runs; the GPU then holds a working set, taken here as two of its largest gathered modules, a
layer or the token embedding (the one running and the one prefetched; DeepSpeed's
stage3_prefetch_bucket_size and stage3_max_live_parameters bound it in practice). Bytes over
the host link (PCIe) per GPU: the rank's 16-bit gradients down and updated 16-bit weights up once
per optimizer step; with offloaded parameters, every partition up for the forward and again for
the backward of each micro-batch, and no weights up after the step (the host's partition is
updated in place).
"""

from __future__ import annotations

import sympy

from calc.formulas.finetune import FROZEN_BYTES, RANKS, TRAINED_PER_GPU
from calc.symbols import (
    L_s,
    N_emb,
    i_off_o,
    i_off_p,
    i_z1,
    i_z2,
    i_z3,
    n_tp,
    q_g,
    q_gc,
    q_m,
    q_o,
    q_w,
)

FP32_GRADIENT = 4  # the host's fp32 gradient copy, per trained parameter
LIVE_LAYERS = 2  # gathered on the GPU at once under parameter offload

WEIGHT_BYTES = q_w * TRAINED_PER_GPU + FROZEN_BYTES  # 16-bit (or 4-bit frozen) weights per GPU
OPTIMIZER_SIDE = (q_m + q_o) * TRAINED_PER_GPU / RANKS**i_z1

OFFLOAD: dict[str, sympy.Expr] = {
    "optimizer_host": i_off_o * (q_m + q_o + FP32_GRADIENT) * TRAINED_PER_GPU / RANKS**i_z1,
    "optimizer_gpu_freed": i_off_o * (OPTIMIZER_SIDE + q_gc * TRAINED_PER_GPU / RANKS**i_z1
                                      + i_z2 * q_g * TRAINED_PER_GPU / RANKS**i_z2),
    "params_host": i_off_p * WEIGHT_BYTES / RANKS**i_z3,
    "params_gpu_freed": i_off_p * WEIGHT_BYTES / RANKS**i_z3,
    # unevaluated: sympy cannot order the two sides, and trying takes a third of a second at
    # import; the Max is the same either way (tests/test_formulas.py)
    "params_gpu_live": i_off_p * LIVE_LAYERS * sympy.Max(WEIGHT_BYTES / L_s, q_w * N_emb / n_tp,
                                                         evaluate=False),
    # over the host link, per GPU: gradients down; the updated 16-bit weights back up, unless
    # the parameters live on the host too (ZeRO-Infinity updates them there in place)
    "gradients_to_host_per_step": i_off_o * q_g / RANKS**i_z2 * TRAINED_PER_GPU,
    "weights_from_host_per_step": i_off_o * (1 - i_off_p) * q_w / RANKS**i_z1
    * TRAINED_PER_GPU,
    "optimizer_transfer_per_step": i_off_o * (q_g / RANKS**i_z2
                                              + (1 - i_off_p) * q_w / RANKS**i_z1)
    * TRAINED_PER_GPU,
    "params_transfer_per_micro_batch": i_off_p * 2 * WEIGHT_BYTES / RANKS**i_z3,
}
