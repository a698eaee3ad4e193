#!/usr/bin/env python3
"""Write reference fixtures for zt's DeepSpeed-config semantics by running DeepSpeed's own code.

Pinned release: deepspeed==0.19.8 (DS_BUILD_OPS=0 pip install deepspeed==0.19.8, CPU torch is enough).

Outputs (small JSON files) in tests/ref/deepspeed/:
  batch.json       DeepSpeedConfig(...) batch resolution for several world sizes: the resolved
                   (train_batch_size, train_micro_batch_size_per_gpu, gradient_accumulation_steps),
                   or the exception type and message DeepSpeed raises.
  schedules.json   lr_schedules.WarmupLR / WarmupDecayLR / WarmupCosineLR driven the way
                   DeepSpeedEngine drives them, the lr in effect for optimizer steps 0..49.
  loss_scale.json  fp16.loss_scaler.DynamicLossScaler (the ZeRO stage 1/2/3 scaler) and the
                   stage-0 FP16_Optimizer._update_scale rule, fed a fixed overflow pattern.

Only two things are stubbed: the world size / rank that DeepSpeedConfig and the loss scaler
ask deepspeed.comm for (no process group is created here). Everything else is DeepSpeed's code.

Usage: python tests/ref/make_deepspeed_fixtures.py  (from anywhere)
"""
import json
import logging
import math
import os
import sys

import torch

import deepspeed
from deepspeed.utils import logger as ds_logger
import deepspeed.runtime.config as ds_config_mod
from deepspeed.runtime.config import DeepSpeedConfig
from deepspeed.runtime import lr_schedules
from deepspeed.runtime.fp16 import loss_scaler as ds_loss_scaler
from deepspeed.runtime.fp16.loss_scaler import DynamicLossScaler, LossScaleConfig, LossScaleProfile
from deepspeed.runtime.fp16.fused_optimizer import FP16_Optimizer
from deepspeed.runtime.precision_config import DeepSpeedFP16Config

ds_logger.setLevel(logging.ERROR)

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "deepspeed")
DS_VERSION = deepspeed.__version__
assert DS_VERSION == "0.19.8", f"expected deepspeed 0.19.8, found {DS_VERSION}"


class FakeComm:
    """Stands in for deepspeed.comm: rank 0 of a world of `world_size` ranks."""

    def __init__(self, world_size):
        self.world_size = world_size

    def get_rank(self, *args, **kwargs):
        return 0

    def get_world_size(self, *args, **kwargs):
        return self.world_size


def write_json(name, meta, cases):
    """One case per line keeps the files small and diff-friendly."""
    path = os.path.join(OUT_DIR, name)
    with open(path, "w") as f:
        f.write("{\n\"meta\": " + json.dumps(meta, sort_keys=True) + ",\n\"cases\": [\n")
        f.write(",\n".join(json.dumps(c) for c in cases))
        f.write("\n]\n}\n")
    print(f"wrote {path} ({len(cases)} cases)")


def error_record(exc):
    return {"error_type": type(exc).__name__, "error": str(exc)}


# --------------------------------------------------------------------------------------------
# (a) batch resolution: DeepSpeedConfig.__init__ -> _configure_train_batch_size
#     (= _set_batch_related_parameters then _batch_assertion), then _do_sanity_check.
# --------------------------------------------------------------------------------------------
BATCH_CASES = [
    # (name, world_size, config keys)
    ("tbs_only_ws1", 1, {"train_batch_size": 32}),
    ("tbs_only_ws8", 8, {"train_batch_size": 16}),
    ("mbs_only_ws4", 4, {"train_micro_batch_size_per_gpu": 2}),
    ("tbs_mbs_ws2", 2, {"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4}),
    ("tbs_gas_ws4", 4, {"train_batch_size": 32, "gradient_accumulation_steps": 2}),
    ("tbs_gas_ws2", 2, {"train_batch_size": 24, "gradient_accumulation_steps": 3}),
    ("mbs_gas_ws8", 8, {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2}),
    ("all_three_ws8", 8, {"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4,
                          "gradient_accumulation_steps": 2}),
    ("mbs_gas_ws1", 1, {"train_micro_batch_size_per_gpu": 3, "gradient_accumulation_steps": 5}),
    # rejected by DeepSpeed:
    ("reject_all_three_mismatch_ws4", 4, {"train_batch_size": 30, "train_micro_batch_size_per_gpu": 4,
                                          "gradient_accumulation_steps": 2}),
    ("reject_tbs_mbs_floor_ws4", 4, {"train_batch_size": 10, "train_micro_batch_size_per_gpu": 2}),
    ("reject_gas_floors_to_0_ws8", 8, {"train_batch_size": 16, "train_micro_batch_size_per_gpu": 4}),
    ("reject_mbs_floors_to_0_ws8", 8, {"train_batch_size": 4}),
    ("reject_gas_only_ws2", 2, {"gradient_accumulation_steps": 4}),
    ("reject_tbs_0_ws1", 1, {"train_batch_size": 0}),
]


def make_batch():
    cases = []
    for name, ws, cfg in BATCH_CASES:
        ds_config_mod.dist = FakeComm(ws)
        rec = {"name": name, "world_size": ws, "config": cfg}
        try:
            c = DeepSpeedConfig(dict(cfg))
            rec["train_batch_size"] = c.train_batch_size
            rec["train_micro_batch_size_per_gpu"] = c.train_micro_batch_size_per_gpu
            rec["gradient_accumulation_steps"] = c.gradient_accumulation_steps
        except Exception as e:  # record DeepSpeed's own exception
            rec.update(error_record(e))
        cases.append(rec)
    meta = {
        "deepspeed": DS_VERSION,
        "source": "deepspeed.runtime.config.DeepSpeedConfig(dict) with deepspeed.comm's rank/world size "
                  "stubbed to (0, world_size); fields read back after construction",
        "note": "error is str(exception); AssertionError messages come from _batch_assertion / "
                "_set_batch_related_parameters",
    }
    write_json("batch.json", meta, cases)


# --------------------------------------------------------------------------------------------
# (b) learning-rate schedules, driven like DeepSpeedEngine:
#     - the scheduler is built once (last_batch_iteration=-1); its constructor writes get_lr()
#       at iteration -1 into the optimizer's param_groups;
#     - optimizer step k runs with param_groups[0]['lr'] as it is at that moment (recorded);
#     - after every non-skipped optimizer step, engine._take_model_step calls scheduler.step().
# --------------------------------------------------------------------------------------------
NSTEPS = 50
BASE_LR = 1e-3  # the optimizer's own lr (optimizer.params.lr)

SCHEDULE_CASES = [
    ("WarmupLR", "log_10", {"warmup_min_lr": 0.0, "warmup_max_lr": 1e-3, "warmup_num_steps": 10,
                            "warmup_type": "log"}),
    ("WarmupLR", "linear_10_min", {"warmup_min_lr": 1e-5, "warmup_max_lr": 2e-3, "warmup_num_steps": 10,
                                   "warmup_type": "linear"}),
    ("WarmupLR", "linear_1_max_from_optimizer", {"warmup_num_steps": 1, "warmup_type": "linear"}),
    ("WarmupDecayLR", "linear_10_total_40", {"total_num_steps": 40, "warmup_min_lr": 0.0,
                                             "warmup_max_lr": 1e-3, "warmup_num_steps": 10,
                                             "warmup_type": "linear"}),
    ("WarmupDecayLR", "log_5_total_30", {"total_num_steps": 30, "warmup_min_lr": 1e-5,
                                         "warmup_max_lr": 5e-4, "warmup_num_steps": 5}),
    ("WarmupDecayLR", "linear_1_total_20", {"total_num_steps": 20, "warmup_num_steps": 1,
                                            "warmup_type": "linear"}),
    ("WarmupCosineLR", "linear_10_total_40", {"total_num_steps": 40, "warmup_min_ratio": 0.0,
                                              "warmup_num_steps": 10, "cos_min_ratio": 0.0001,
                                              "warmup_type": "linear"}),
    ("WarmupCosineLR", "log_5_total_30_ratios", {"total_num_steps": 30, "warmup_min_ratio": 0.1,
                                                 "warmup_num_steps": 5, "cos_min_ratio": 0.1}),
    ("WarmupCosineLR", "linear_1_total_20", {"total_num_steps": 20, "warmup_num_steps": 1,
                                             "warmup_type": "linear"}),
]

SCHEDULE_ERRORS = [
    ("WarmupLR", {"warmup_num_steps": 0}),
    ("WarmupDecayLR", {"total_num_steps": 10, "warmup_num_steps": 10.0}),
    ("WarmupCosineLR", {"total_num_steps": 10, "warmup_num_steps": -5}),
]


def make_schedules():
    cases = []
    for sched, name, params in SCHEDULE_CASES:
        p = torch.nn.Parameter(torch.zeros(1))
        opt = torch.optim.SGD([p], lr=BASE_LR)
        s = getattr(lr_schedules, sched)(opt, **params)
        lrs = []
        for _ in range(NSTEPS):
            lrs.append(float(opt.param_groups[0]["lr"]))  # lr used by this optimizer step
            s.step()  # engine: after a non-overflow optimizer step
        cases.append({"scheduler": sched, "name": name, "optimizer_lr": BASE_LR, "params": params,
                      "lr": lrs})
    for sched, params in SCHEDULE_ERRORS:
        p = torch.nn.Parameter(torch.zeros(1))
        opt = torch.optim.SGD([p], lr=BASE_LR)
        rec = {"scheduler": sched, "name": "error", "optimizer_lr": BASE_LR, "params": params}
        try:
            getattr(lr_schedules, sched)(opt, **params)
            rec["error"] = None
        except Exception as e:
            rec.update(error_record(e))
        cases.append(rec)
    meta = {
        "deepspeed": DS_VERSION,
        "source": "deepspeed.runtime.lr_schedules.<scheduler>(torch.optim.SGD([p], lr=optimizer_lr), **params)",
        "sampling": "lr[k] = optimizer.param_groups[0]['lr'] when optimizer step k runs (k = 0..49); the "
                    "scheduler was constructed with last_batch_iteration=-1 (its constructor sets lr = "
                    "get_lr() at iteration -1) and scheduler.step() is called once after each optimizer "
                    "step, as DeepSpeedEngine._take_model_step does after a step that did not overflow. "
                    "So lr[k] is the schedule at last_batch_iteration = k-1.",
        "skipped_steps": "an fp16 overflow-skipped step does not call scheduler.step(): the next step reuses "
                         "the same lr",
    }
    write_json("schedules.json", meta, cases)


# --------------------------------------------------------------------------------------------
# (c) dynamic loss scaling.
#  "zero": DynamicLossScaler built exactly as ZeRO 1/2/3 build it
#          (CreateLossScaler(dtype=fp16, dynamic_loss_args=DeepSpeedFP16Config(...).dynamic_loss_scale_args())).
#  "fp16_optimizer_stage0": FP16_Optimizer._update_scale (ZeRO disabled, fp16 enabled) applied to
#          a LossScaleConfig built the way DeepSpeedEngine._configure_fp16_optimizer builds it.
#  Per step k: scale[k] = loss scale the step's backward used (before the update),
#  overflow[k] = pattern input, skipped[k] = optimizer step skipped (== overflow in both paths),
#  hysteresis[k] = DynamicLossScaler.cur_hysteresis after the update ("zero" only).
# --------------------------------------------------------------------------------------------
OVERFLOW_PATTERN = [
    False, True, False, False, True, True, False, False, False, False,
    False, True, False, True, False, False, False, False, False, False,
    True, True, True, False, False, False, False, False, False, False,
    False, False, True, False, True, False, False, False, False, False,
]
ALL_OVERFLOW = [True] * 12

SCALER_CASES = [
    ("default", {"enabled": True}, OVERFLOW_PATTERN),
    ("hysteresis_1", {"enabled": True, "hysteresis": 1}, OVERFLOW_PATTERN),
    ("consecutive_hysteresis", {"enabled": True, "consecutive_hysteresis": True}, OVERFLOW_PATTERN),
    ("window_4", {"enabled": True, "loss_scale_window": 4}, OVERFLOW_PATTERN),
    ("window_4_consecutive_hyst3", {"enabled": True, "loss_scale_window": 4, "hysteresis": 3,
                                    "consecutive_hysteresis": True}, OVERFLOW_PATTERN),
    ("reach_min_scale", {"enabled": True, "initial_scale_power": 3, "hysteresis": 2, "min_loss_scale": 1},
     ALL_OVERFLOW),
]


def run_zero_scaler(fp16_cfg, pattern):
    args = DeepSpeedFP16Config(**fp16_cfg).dynamic_loss_scale_args()
    scaler = ds_loss_scaler.CreateLossScaler(dtype=torch.float16, static_loss_scale=0.0, dynamic_scaling=True,
                                             dynamic_loss_args=args)
    assert isinstance(scaler, DynamicLossScaler)
    rec = {"scale": [], "skipped": [], "hysteresis": []}
    for k, ovf in enumerate(pattern):
        before = scaler.cur_scale
        try:
            scaler.update_scale(ovf)
        except Exception as e:
            rec["raised_at_step"] = k
            rec["raised_scale"] = before
            rec.update(error_record(e))
            break
        rec["scale"].append(before)
        rec["skipped"].append(bool(ovf))
        rec["hysteresis"].append(scaler.cur_hysteresis)
    return args, rec


class _FusedHolder:
    """Only the attributes FP16_Optimizer._update_scale reads."""

    def __init__(self, cfg):
        self.loss_scale_config = cfg
        self.verbose = False


def run_stage0_scaler(fp16_cfg, pattern):
    c = DeepSpeedFP16Config(**fp16_cfg)
    cfg = LossScaleConfig(low_precision_dtype=torch.float16, dynamic_loss_scale=(c.loss_scale == 0),
                          static_loss_scale=c.loss_scale, dynamic_loss_args=c.dynamic_loss_scale_args(),
                          profile=LossScaleProfile.FUSED, initial_dynamic_scale=c.initial_dynamic_scale())
    holder = _FusedHolder(cfg)
    rec = {"scale": [], "skipped": []}
    for ovf in pattern:
        rec["scale"].append(cfg.cur_scale)
        rec["skipped"].append(bool(ovf))
        FP16_Optimizer._update_scale(holder, ovf)
    return rec


def make_loss_scale():
    ds_loss_scaler.dist = FakeComm(1)
    cases = []
    for name, fp16_cfg, pattern in SCALER_CASES:
        args, rec = run_zero_scaler(fp16_cfg, pattern)
        cases.append({"path": "zero", "name": name, "fp16": fp16_cfg, "scaler_args": args,
                      "overflow": pattern, **rec})
    for name, fp16_cfg, pattern in SCALER_CASES:
        if name not in ("default", "window_4", "reach_min_scale"):
            continue
        rec = run_stage0_scaler(fp16_cfg, pattern)
        cases.append({"path": "fp16_optimizer_stage0", "name": name, "fp16": fp16_cfg, "overflow": pattern,
                      **rec})
    meta = {
        "deepspeed": DS_VERSION,
        "zero": "deepspeed.runtime.fp16.loss_scaler.CreateLossScaler(fp16, dynamic) -> DynamicLossScaler, "
                "args from DeepSpeedFP16Config(**fp16).dynamic_loss_scale_args(); update_scale(overflow) "
                "once per optimizer step (stage_1_and_2.step / stage3.step)",
        "fp16_optimizer_stage0": "deepspeed.runtime.fp16.fused_optimizer.FP16_Optimizer._update_scale on a "
                                 "LossScaleConfig(profile=FUSED); ignores hysteresis/consecutive_hysteresis "
                                 "and never raises at the minimum",
        "fields": "scale[k] = loss scale used by step k (before its update); skipped[k] = step k skipped; "
                  "hysteresis[k] = cur_hysteresis after step k's update; raised_at_step = index of the "
                  "step whose update raised (its scale is raised_scale; no entry recorded for it)",
    }
    write_json("loss_scale.json", meta, cases)


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    make_batch()
    make_schedules()
    make_loss_scale()


if __name__ == "__main__":
    main()
