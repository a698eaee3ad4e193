"""Writes tests/ref/plateau.txt: the learning rate after each evaluation under the schedules that follow a
metric, as torch's ReduceLROnPlateau (--lr_scheduler_type reduce_lr_on_plateau) and transformers' GreedyLR
(greedy) move it, built by transformers' own get_scheduler from --lr_scheduler_kwargs.

    pip install torch transformers
    python3 tests/ref/make_plateau_fixtures.py

Each line: the schedule, the learning rate, the kwargs (JSON), the metrics given one after another, the
learning rate after each of them and the best metric after each (greedy's smoothed; repr: the exact double). zt
keeps --learning_rate's double beside its float for these schedules, so the test asks for the same bits also
where the learning rate (1e-3, 5e-5) is not a float."""
import json
import os
import random

import torch
import transformers
from transformers.optimization import get_scheduler

HERE = os.path.dirname(os.path.abspath(__file__))

# name, learning rate, lr_scheduler_kwargs
CASES = [
    ("reduce_lr_on_plateau", 2.0 ** -10, {}),
    ("reduce_lr_on_plateau", 2.0 ** -10, {"patience": 2, "factor": 0.5, "cooldown": 1, "min_lr": 1e-5}),
    ("reduce_lr_on_plateau", 2.0 ** -8, {"mode": "max", "threshold_mode": "abs", "threshold": 0.01, "patience": 1}),
    ("reduce_lr_on_plateau", 2.0 ** -6, {"patience": 0, "factor": 0.5, "eps": 1e-3}),
    ("greedy", 2.0 ** -7, {}),
    ("greedy", 2.0 ** -7, {"patience": 1, "factor": 0.5, "cooldown": 1, "warmup": 1, "min_lr": 0.001,
                           "reset_start": 3}),
    ("greedy", 2.0 ** -9, {"smooth": True, "window_size": 4, "patience": 2, "threshold_mode": "rel"}),
    ("greedy", 2.0 ** -9, {"smooth": True, "window_size": 3, "patience": 1, "mode": "max", "threshold": 0.0}),
    ("greedy", 2.0 ** -7, {"patience": 0, "max_lr": 0.02, "factor": 0.5}),
    ("greedy", 2.0 ** -7, {"patience": 0, "factor": 0.5, "min_lr": 0.002, "reset_start": 2, "threshold": 0.0}),
    ("greedy", 1e-3, {"patience": 0, "factor": 0.5, "min_lr": 2.5e-4, "reset_start": 2}),
    ("reduce_lr_on_plateau", 5e-5, {"patience": 0, "min_lr": 5e-8, "eps": 1e-12}),
]


def metrics(seed, n=120):
    """a validation loss that falls, stalls, rises and falls again, with noise, and some exact repeats"""
    rng = random.Random(seed)
    out, v = [], 4.0
    for i in range(n):
        phase = (i // 15) % 4
        v += {0: -0.08, 1: 0.0, 2: 0.03, 3: -0.02}[phase] + rng.gauss(0, 0.01)
        out.append(out[-1] if i % 17 == 5 else v)
    return out


def main():
    out = ["# torch %s, transformers %s: schedule, learning rate, lr_scheduler_kwargs, metrics, the learning rate "
           "after each, the best after each (made by tests/ref/make_plateau_fixtures.py)" % (torch.__version__, transformers.__version__)]
    for k, (name, lr, kwargs) in enumerate(CASES):
        opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=lr)
        sched = get_scheduler(name, opt, scheduler_specific_kwargs=dict(kwargs))
        ms = metrics(k)
        if kwargs.get("mode") == "max":  # a metric that rises as the loss falls
            ms = [5.0 - m for m in ms]
        lrs, bests = [], []
        for m in ms:
            sched.step(m)
            lrs.append(float(opt.param_groups[0]["lr"]))
            bests.append(float(sched.best))
        assert len(set(lrs)) > 2, (name, kwargs, "the case should move the learning rate")
        out.append("\t".join([name, repr(lr), json.dumps(kwargs), " ".join(map(repr, ms)), " ".join(map(repr, lrs)),
                               " ".join(map(repr, bests))]))
    with open(os.path.join(HERE, "plateau.txt"), "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
