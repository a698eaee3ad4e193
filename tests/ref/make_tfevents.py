"""tests/ref/make_tfevents.py - the event file torch's SummaryWriter writes for a few scalars, for
tests/test_trainer.c (zt_events must write the same bytes).

    pip install torch tensorboard && python3 tests/ref/make_tfevents.py   (torch 2.15, tensorboard 2.21)

Every event is stamped 1767225600.25 (the file's first event takes time.time(), so the clock is held there);
the scalars cover a zero step and value, a negative step, a step past 2^32, a tag of 200 bytes (its length
takes two varint bytes) and a UTF-8 tag; then two texts (add_text: the Trainer's "args"), one without a step and
one of 300 bytes."""
import glob
import os
import shutil
import tempfile
import time

from torch.utils.tensorboard import SummaryWriter

WALL = 1767225600.25
SCALARS = [
    ("train/loss", 2.5, 1),
    ("train/learning_rate", 3e-4, 1),
    ("zero", 0.0, 0),
    ("negative_step", -1.75, -3),
    ("big_step", 1e30, 5_000_000_000),
    ("t" * 200, 1.0 / 3.0, 7),
    ("eval/损失", -0.0, 12),
]

TEXTS = [
    ("args", '{"learning_rate": 0.001, "note": "\u65e5\u672c"}', None),
    ("notes", "x" * 300, 5),
]

time.time = lambda: WALL
d = tempfile.mkdtemp()
w = SummaryWriter(log_dir=d)
for tag, value, step in SCALARS:
    w.add_scalar(tag, value, step, walltime=WALL)
for tag, text, step in TEXTS:
    w.add_text(tag, text, step, walltime=WALL)
w.close()
(path,) = glob.glob(os.path.join(d, "events.out.tfevents.*"))
shutil.copyfile(path, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tfevents.bin"))
shutil.rmtree(d)
