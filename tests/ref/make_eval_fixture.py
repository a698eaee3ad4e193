"""Fixture for zt_train's evaluation against the Trainer's (tests/ref/eval/).

The Trainer's evaluate() averages a masked evaluation set by its batches: each batch's loss is the mean over its
predicted tokens, and eval_loss is the mean of the batches' losses weighted by their rows, so it depends on
--per_device_eval_batch_size. This writes 37 rows of 16 tokens (an llm.c token file and its mask: 0 = not a target)
and the Trainer's eval_loss of tests/ref/hf/llama on them at per_device_eval_batch_size 1, 3 and 8.

    python tests/ref/make_eval_fixture.py      (torch, transformers; CPU)
"""
import json
import os

import numpy as np
import torch
from torch.utils.data import Dataset
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments, default_data_collator

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "eval")
MODEL = os.path.join(HERE, "hf", "llama")
T, ROWS = 16, 37

rng = np.random.default_rng(20261207)
n = T * ROWS + 5  # a last partial row, which both drop
tokens = rng.integers(0, 61, n).astype(np.uint16)
mask = (rng.random(n) < 0.5).astype(np.uint8)
mask[: 5 * T] = 1  # rows whose counts differ a lot from the others'
os.makedirs(OUT, exist_ok=True)
header = np.zeros(256, np.int32)
header[0], header[1], header[2] = 20240520, 1, n
with open(os.path.join(OUT, "val.bin"), "wb") as f:
    f.write(header.tobytes() + tokens.tobytes())
with open(os.path.join(OUT, "val.bin.mask"), "wb") as f:
    f.write(mask.tobytes())


class Rows(Dataset):
    def __len__(self):
        return ROWS

    def __getitem__(self, i):
        x = torch.tensor(tokens[i * T : (i + 1) * T].astype(np.int64))
        labels = x.clone()
        labels[torch.tensor(mask[i * T : (i + 1) * T]) == 0] = -100
        return {"input_ids": x, "labels": labels}


model = AutoModelForCausalLM.from_pretrained(MODEL, dtype=torch.float32)
expected = {}
for bs in (1, 3, 8):
    args = TrainingArguments(output_dir="/tmp/zt_eval_fixture", per_device_eval_batch_size=bs, report_to=[],
                             use_cpu=True)
    metrics = Trainer(model=model, args=args, eval_dataset=Rows(), data_collator=default_data_collator).evaluate()
    expected[str(bs)] = metrics["eval_loss"]
with open(os.path.join(OUT, "expected.json"), "w") as f:
    json.dump({"model": "tests/ref/hf/llama", "seq_len": T, "eval_loss": expected}, f, indent=1)
    f.write("\n")
print(expected)
