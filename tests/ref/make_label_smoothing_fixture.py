"""Writes tests/ref/label_smoothing.txt: transformers' LabelSmoother (the Trainer's --label_smoothing_factor) on
random float32 logits with ignored rows, its loss and, by autograd, the gradient of that loss.

    pip install torch transformers
    python3 tests/ref/make_label_smoothing_fixture.py

Lines: "case EPSILON N V", then N lines of a target and V logits, then "loss L", then N lines of V gradients
(repr: the exact double of each float32)."""
import os

import torch
import transformers
from transformers.trainer_pt_utils import LabelSmoother

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    g = torch.Generator().manual_seed(7)
    out = ["# transformers %s, torch %s (made by tests/ref/make_label_smoothing_fixture.py)"
           % (transformers.__version__, torch.__version__)]
    for eps, n, v in [(0.1, 7, 13), (0.25, 5, 40)]:
        logits = (torch.randn(n, v, generator=g) * 3).float().requires_grad_()
        labels = torch.randint(0, v, (n,), generator=g)
        labels[1] = -100
        loss = LabelSmoother(epsilon=eps)({"logits": logits}, labels)
        loss.backward()
        out.append("case %r %d %d" % (eps, n, v))
        for r in range(n):
            out.append(" ".join([str(int(labels[r]))] + [repr(float(x)) for x in logits[r].detach()]))
        out.append("loss %r" % float(loss.detach()))
        for r in range(n):
            out.append(" ".join(repr(float(x)) for x in logits.grad[r]))
    with open(os.path.join(HERE, "label_smoothing.txt"), "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
