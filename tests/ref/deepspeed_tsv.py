"""Turns the DeepSpeed fixtures (tests/ref/deepspeed/*.json, made by make_deepspeed_fixtures.py, which
needs DeepSpeed) into tab-separated lines the C tests read without a JSON library of their own:

  batch.tsv       world_size, a DeepSpeed config, then "tbs mbs gas" or "error: <DeepSpeed's message>"
  schedules.tsv   a DeepSpeed config (optimizer + scheduler), then the lr of optimizer steps 0..49
                  or "error: <message>"
  loss_scale.tsv  "zero" or "stage0", the fp16 section, the overflow pattern (0/1 per step), the loss
                  scale each step used, the skipped pattern, and the step whose update raised (-1: none)

Run from the repository root: python3 tests/ref/deepspeed_tsv.py"""
import json

D = "tests/ref/deepspeed/"


def dump(x):
    return json.dumps(x, separators=(",", ":"))


with open(D + "batch.tsv", "w") as out:
    for c in json.load(open(D + "batch.json"))["cases"]:
        want = ("error: " + c["error"]) if "error" in c else "%d %d %d" % (
            c["train_batch_size"], c["train_micro_batch_size_per_gpu"], c["gradient_accumulation_steps"])
        out.write("%d\t%s\t%s\n" % (c["world_size"], dump(c["config"]), want))

with open(D + "schedules.tsv", "w") as out:
    for c in json.load(open(D + "schedules.json"))["cases"]:
        cfg = {"optimizer": {"type": "AdamW", "params": {"lr": c["optimizer_lr"]}},
               "scheduler": {"type": c["scheduler"], "params": c["params"]}}
        want = ("error: " + c["error"]) if c.get("error") else " ".join("%.17g" % v for v in c["lr"])
        out.write("%s\t%s\n" % (dump(cfg), want))

with open(D + "loss_scale.tsv", "w") as out:
    for c in json.load(open(D + "loss_scale.json"))["cases"]:
        path = "zero" if c["path"] == "zero" else "stage0"
        n = len(c["scale"])
        out.write("%s\t%s\t%s\t%s\t%s\t%d\n" % (
            path, dump(c["fp16"]), "".join("1" if o else "0" for o in c["overflow"][:n + (1 if c.get("raised_at_step") is not None else 0)]),
            " ".join("%.17g" % s for s in c["scale"]), "".join("1" if s else "0" for s in c["skipped"]),
            c["raised_at_step"] if c.get("raised_at_step") is not None else -1))
