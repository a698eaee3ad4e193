#!/usr/bin/env python3
"""Reference losses of zt's other optimizers for tests/test_models.c: the tiny GPT-2 and LLaMA of
make_model_fixtures.py (their fixture.bin: the starting parameters and the 10 steps' batches), trained 10 steps
with torch.optim.Adagrad and with Lion, in float32.

    python3 tests/ref/make_optim_fixtures.py        (from the repository root, after make_model_fixtures.py)

It writes tests/ref/optim/<type>.bin in make_model_fixtures.py's format, with the tensors

    adagrad.loss, adagrad.grad_norm   f32 (10)   each step's loss before its update, and the gradient norm
    lion.loss, lion.grad_norm         f32 (10)   before clipping

Training as make_model_fixtures.py's AdamW steps (weight decay 0.1 on its decayed parameters, 0 on the others;
clip_grad_norm_(1.0) before each step; a constant learning rate), with
    Adagrad: torch.optim.Adagrad(lr=1e-2, lr_decay=0.01, eps=1e-10): weight decay as L2, torch's;
    Lion:    lr 1e-4, betas (0.9, 0.99), decoupled weight decay, written out below (torch has no Lion): the
             update of Chen et al. 2023 and DeepSpeed's FusedLion and CPU Lion, with torch.sign (sign(0) = 0).
Before either, the script replays the fixture's own AdamW steps and stops unless it gets its losses: the model,
its parameters and the decay groups are rebuilt as they were.
"""
import os
import struct
import sys

import numpy as np
import torch
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_model_fixtures as mm  # noqa: E402  (its model layout, decay rule and file format)

ADAGRAD = dict(lr=1e-2, lr_decay=0.01, eps=1e-10)
LION_LR, LION_BETAS = 1e-4, (0.9, 0.99)


def read_fixture(path):
    out = {}
    with open(path, "rb") as f:
        assert f.read(8) == b"ZTFIXT01"
        (count,) = struct.unpack("<I", f.read(4))
        for _ in range(count):
            (n,) = struct.unpack("<I", f.read(4))
            name = f.read(n).decode()
            code, ndim = struct.unpack("<II", f.read(8))
            dims = struct.unpack(f"<{ndim}q", f.read(8 * ndim))
            numel = int(np.prod(dims)) if ndim else 1
            data = np.frombuffer(f.read(4 * numel), dtype="<f4" if code == 0 else "<i4").reshape(dims)
            out[name] = torch.from_numpy(data.copy())
    return out


class Lion(torch.optim.Optimizer):
    def __init__(self, params, lr, betas):
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=0.0))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                m = self.state[p].setdefault("exp_avg", torch.zeros_like(p))
                c = m * b1 + p.grad * (1 - b1)
                p.mul_(1 - group["lr"] * group["weight_decay"]).add_(torch.sign(c), alpha=-group["lr"])
                m.mul_(b2).add_(p.grad, alpha=1 - b2)


def model_from(fixture_type, fx):
    config = transformers.AutoConfig.from_pretrained(os.path.join(HERE, fixture_type))
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager").float()
    params = [(n, p) for n, p in model.named_parameters()]
    with torch.no_grad():
        for name, p in params:
            t = fx["param." + name]
            p.copy_(t.t() if mm.conv1d(model, name) else t)
    model.train()
    return model, params


def train(model, params, fx, make_opt):
    decay = [p for n, p in params if p.dim() >= 2 and "_norm." not in n]
    no_decay = [p for n, p in params if not (p.dim() >= 2 and "_norm." not in n)]
    opt = make_opt([{"params": decay, "weight_decay": mm.WD}, {"params": no_decay, "weight_decay": 0.0}])
    ids = fx["steps.input_ids"].long()
    losses, norms = [], []
    for k in range(ids.shape[0]):
        opt.zero_grad(set_to_none=True)
        loss = model(input_ids=ids[k], labels=ids[k]).loss
        loss.backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), mm.MAX_NORM)))
        losses.append(loss.item())
        opt.step()
    return torch.tensor(losses, dtype=torch.float32), torch.tensor(norms, dtype=torch.float32)


def make(fixture_type):
    fx = read_fixture(os.path.join(HERE, fixture_type, "fixture.bin"))
    model, params = model_from(fixture_type, fx)
    losses, _ = train(model, params, fx, lambda g: torch.optim.AdamW(g, lr=mm.LR, betas=mm.BETAS, eps=mm.EPS))
    replay = (losses - fx["steps.loss"]).abs().max().item()
    assert replay < 1e-5, f"{fixture_type}: the AdamW replay's losses differ from the fixture's by {replay}"
    out = []
    for name, make_opt in (("adagrad", lambda g: torch.optim.Adagrad(g, **ADAGRAD)),
                           ("lion", lambda g: Lion(g, LION_LR, LION_BETAS))):
        model, params = model_from(fixture_type, fx)
        losses, norms = train(model, params, fx, make_opt)
        out += [(name + ".loss", losses), (name + ".grad_norm", norms)]
        print(f"{fixture_type} {name}: step losses {losses[0]:.6f} .. {losses[-1]:.6f}")
    os.makedirs(os.path.join(HERE, "optim"), exist_ok=True)
    mm.write_fixture(os.path.join(HERE, "optim", fixture_type + ".bin"), out)


if __name__ == "__main__":
    torch.set_default_dtype(torch.float32)
    for t in ("gpt2", "llama"):
        make(t)
