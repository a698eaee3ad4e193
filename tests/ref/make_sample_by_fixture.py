#!/usr/bin/env python3
"""The tokens run_clm.py trains on from a text file, for zt_tokenize_file's sample_by (tests/test_tokenizer.c).

    python3 tests/ref/make_sample_by_fixture.py      (from the repository root; needs datasets and tokenizers)

run_clm.py reads --train_file x.txt with datasets' text loader (keep_linebreaks: its --keep_linebreaks, True unless
given), tokenizes each example with the tokenizer's special tokens (tokenizer(examples["text"])) and concatenates the
ids (group_texts). This writes tests/ref/sample_by/input.txt, a text with \\r\\n and \\r line ends, blank lines, runs of
three and four newlines and no newline at its end, and tests/ref/sample_by/ids.txt: for each tokenizer, sample_by and
keep_linebreaks, a line "<tokenizer> <sample_by> <keep_linebreaks 1|0> <special 1|0> <ids...>" of the concatenated ids.
(The tokenizers library's encode is what transformers' fast tokenizer runs.)
"""
import os

from datasets import load_dataset
from tokenizers import Tokenizer

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sample_by")
TEXT = ("The first line.\r\n"
        "A second, with a Windows end.\r\n"
        "\r\n"
        "After a blank line: naïve café 数据.\n"
        "An old Mac end\r"
        "then this.\n\n\n"
        "After three newlines.\n\n\n\n"
        "After four.\n"
        " leading space and trailing  \n"
        "\n"
        "The last line has no newline")


def main():
    os.makedirs(HERE, exist_ok=True)
    path = os.path.join(HERE, "input.txt")
    with open(path, "wb") as f:
        f.write(TEXT.encode("utf-8"))
    lines = []
    for name, special in (("llama2_eos", True), ("gpt2", False)):
        tok = Tokenizer.from_file(os.path.join(os.path.dirname(HERE), "tokenizers", name, "tokenizer.json"))
        for by, keeps in (("line", (True, False)), ("paragraph", (True,)), ("document", (True,))):
            for keep in keeps:
                ds = load_dataset("text", data_files={"train": path}, sample_by=by, keep_linebreaks=keep,
                                  split="train", cache_dir=os.path.join("/tmp", "zt_sample_by_cache"))
                ids = []
                for enc in tok.encode_batch(ds["text"], add_special_tokens=special):
                    ids += enc.ids
                lines.append("%s %s %d %d %s" % (name, by, keep, special, " ".join(map(str, ids))))
    with open(os.path.join(HERE, "ids.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
