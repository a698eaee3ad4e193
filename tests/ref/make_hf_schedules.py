"""Writes tests/ref/hf_schedules.txt: the learning-rate factors of transformers' schedules
(--lr_scheduler_type, --lr_scheduler_kwargs, --warmup_steps as steps or a share), step by step, as
transformers' own get_scheduler and TrainingArguments.get_warmup_steps compute them.

    pip install transformers        # torch is not needed: the schedules are plain Python
    python3 tests/ref/make_hf_schedules.py

transformers' optimization.py imports torch for its optimizers; this script runs the module's own source
up to the first optimizer class, with stand-ins for the few torch names it reads there (LambdaLR keeps the
function it is given), so the factors are transformers' code, not a copy of it."""
import ast
import json
import os
import types

import transformers
import transformers.trainer_utils as trainer_utils

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.dirname(transformers.__file__)


def hf_optimization():
    path = os.path.join(PKG, "optimization.py")
    src = open(path).read()
    src = src[: src.index("class Adafactor(")]
    for line in ["import torch\n", "from torch.optim import Optimizer\n",
                 "from torch.optim.lr_scheduler import LambdaLR, ReduceLROnPlateau\n",
                 "from .trainer_pt_utils import LayerWiseDummyOptimizer, LayerWiseDummyScheduler\n",
                 "from .trainer_utils import SchedulerType\n", "from .utils import logging\n"]:
        assert line in src, line
        src = src.replace(line, "")

    class LambdaLR:
        def __init__(self, optimizer, fn, last_epoch=-1):
            self.fn = fn

    class Unused:
        pass

    ns = {"__name__": "hf_optimization", "Optimizer": object, "LambdaLR": LambdaLR, "ReduceLROnPlateau": Unused,
          "LayerWiseDummyOptimizer": Unused, "LayerWiseDummyScheduler": Unused,
          "SchedulerType": trainer_utils.SchedulerType,
          "logging": types.SimpleNamespace(get_logger=lambda name: None)}
    exec(compile(src, path, "exec"), ns)
    return ns["get_scheduler"]


def hf_get_warmup_steps():
    path = os.path.join(PKG, "training_args.py")
    tree = ast.parse(open(path).read())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "TrainingArguments")
    fn = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "get_warmup_steps")
    ns = {"math": __import__("math")}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), path, "exec"), ns)
    return lambda warmup, total: ns["get_warmup_steps"](types.SimpleNamespace(warmup_steps=warmup), total)


class Opt:
    def __init__(self, lr):
        self.defaults = {"lr": lr}


# name, --warmup_steps, max_steps, learning rate, lr_scheduler_kwargs
CASES = [
    ("linear", "0", 50, 1e-3, None),
    ("linear", "10", 100, 3e-4, None),
    ("linear", "0.05", 100, 3e-4, None),
    ("linear", "0.03", 1000, 2e-5, None),
    ("cosine", "10", 100, 1e-3, None),
    ("cosine", "0.1", 60, 1e-3, {"num_cycles": 1.5}),
    ("cosine_with_restarts", "5", 80, 1e-3, None),
    ("cosine_with_restarts", "5", 80, 1e-3, {"num_cycles": 3}),
    ("polynomial", "10", 100, 1e-3, None),
    ("polynomial", "10", 100, 1e-3, {"lr_end": 1e-5, "power": 2.0}),
    ("constant", "10", 40, 1e-3, None),
    ("constant_with_warmup", "10", 40, 1e-3, None),
    ("inverse_sqrt", "10", 100, 1e-3, None),
    ("inverse_sqrt", "0", 100, 1e-3, None),
    ("inverse_sqrt", "10", 100, 1e-3, {"timescale": 50}),
    ("cosine_with_min_lr", "10", 100, 1e-3, {"min_lr_rate": 0.1}),
    ("cosine_with_min_lr", "10", 100, 1e-3, {"min_lr": 1e-5, "num_cycles": 0.75}),
    ("cosine_warmup_with_min_lr", "10", 100, 1e-3, {"min_lr_rate": 0.1}),
    ("cosine_warmup_with_min_lr", "10", 100, 1e-3, {"min_lr": 2e-5, "warmup_lr_rate": 0.2}),
    ("warmup_stable_decay", "10", 100, 1e-3, {"num_decay_steps": 30}),
    ("warmup_stable_decay", "10", 100, 1e-3, {"num_decay_steps": 30, "num_stable_steps": 20, "warmup_type": "cosine",
                                              "decay_type": "1-sqrt", "min_lr_ratio": 0.05}),
    ("warmup_stable_decay", "0.2", 50, 1e-3, {"num_decay_steps": 10, "warmup_type": "1-sqrt", "decay_type": "linear"}),
]


def main():
    get_scheduler, get_warmup_steps = hf_optimization(), hf_get_warmup_steps()
    out = ["# transformers %s: name, --warmup_steps, max_steps, learning rate, lr_scheduler_kwargs (- for none), then the "
           "factor of steps 0 .. max_steps + 2 (made by tests/ref/make_hf_schedules.py)" % transformers.__version__]
    for name, warmup, total, lr, kwargs in CASES:
        steps = get_warmup_steps(float(warmup), total)
        fn = get_scheduler(name, Opt(lr), num_warmup_steps=steps, num_training_steps=total,
                           scheduler_specific_kwargs=dict(kwargs or {})).fn
        factors = " ".join(repr(float(fn(k))) for k in range(total + 3))
        out.append("\t".join([name, warmup, str(total), repr(lr), json.dumps(kwargs) if kwargs else "-", factors]))
    with open(os.path.join(HERE, "hf_schedules.txt"), "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
