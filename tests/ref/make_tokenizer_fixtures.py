#!/usr/bin/env python3
"""Tokenizer fixtures for tests/test_tokenizer.c, made with the `tokenizers` library (what transformers
uses): tiny tokenizers of each kind zt reads, trained on a small multilingual corpus, and the ids the
library gives for strings that break naive tokenizers.

    python3 tests/ref/make_tokenizer_fixtures.py          (from the repository root)
    python3 tests/ref/make_tokenizer_fixtures.py gemma    (only these)

(The SentencePiece-style training breaks frequency ties in hash order, so its vocabulary can differ
between runs; each run's tokenizer.json and cases agree, which is what the test needs.)

It writes tests/ref/tokenizers/<name>/tokenizer.json, cases.json ([{"text", "ids", "decoded"}]) and the same
cases in cases.txt for the C test (lines "T <hex UTF-8>", "I <ids>", "D <hex UTF-8 of the decoded ids>"):
    gpt2     byte-level BPE with GPT-2's pre-tokenizer (ByteLevel with its regex)
    llama3   byte-level BPE with LLaMA-3's Split regex (digits in threes, ignore_merges)
    qwen2    byte-level BPE with Qwen2's Split regex (single digits), its NFC normalizer and chat special tokens
    llama2   SentencePiece-style BPE as LLaMA-2's tokenizer.json has it: normalizer Prepend + Replace,
             no pre-tokenizer, byte fallback (<0xXX> tokens) for characters outside the vocabulary
    mistral  the same model with the newer Metaspace pre-tokenizer (prepend_scheme "first")
    gemma    llama2's model as Gemma's tokenizer.json has it: a normalizer that only replaces " " by "▁" (no
             Prepend), no pre-tokenizer, a decoder without the Strip (made from llama2's file, so it is the same
             each run)
"""
import sys
import json
import os

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tokenizers")

GPT2_SPECIAL = ["<|endoftext|>"]
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                r"\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
               r"\s*[\r\n]+|\s+(?!\S)|\s+")

CORPUS = [
    "The quick brown fox jumps over the lazy dog. I'm sure they'll say it's fine, DON'T worry.",
    "In 2024 the model had 1234567 parameters; 3.14159 is pi and 42 is the answer.",
    "def train(model, data):\n    for step in range(1000):\n        loss = model(data)\n        loss.backward()\n",
    "我们今天去北京，明天去上海。机器学习和深度学习是人工智能的重要分支。",
    "东京は晴れです。ありがとうございます！日本語の文章もトークン化します。",
    "训练大语言模型需要大量的数据和计算资源，分布式训练可以加速这个过程。",
    "Hello world!   Multiple   spaces\tand\ttabs\n\nand new lines.",
    "Emoji are fun 👍🏽🎉 and so are accents: café, naïve, résumé.",
    "한국어 문장도 있습니다. Русский текст тоже есть.",
    "(parentheses) [brackets] {braces} <angles> \"quotes\" 'single' — dashes – and … ellipses",
] * 20

CASES = [
    "Hello world",
    " leading and trailing spaces  ",
    "I'm sure they'll say it's fine, DON'T worry, I've 'quoted' it",
    "1234567 3.14159 and 42, 0007",
    "a  b   c\n\n\td\r\ne",
    "我们今天去北京，明天去上海。",
    "東京は晴れです、ありがとう！",
    "全角：，。！？（）【】",
    "emoji 👍🏽🎉🤖 end",
    "combining: e\u0301 and a\u0308 vs é",
    "NFC: \u1100\u1161\u11a8 \uf900 \u212b o\u0323\u0302 q\u0307\u0323 \u0344",
    "한국어 Русский العربية",
    "def f(x):\n    return x**2  # square\n",
    "tokens <|endoftext|> inside text<|endoftext|>",
    "<s>Hello world",
    "</s>hi</s> there",
    "rare characters outside the vocabulary: ⌘ ∮ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    "",
    "   ",
    "\n",
    "x",
]
CASES.append("\n".join(CORPUS[:10]) * 3)  # a long text: zt's word-at-a-time BPE must equal BPE over all of it


def byte_level(pre, special, ignore_merges=False):
    tok = Tokenizer(models.BPE(ignore_merges=ignore_merges))
    tok.pre_tokenizer = pre
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=special,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    return tok


def sentencepiece(metaspace):
    specials = ["<unk>", "<s>", "</s>"]
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    if metaspace:
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first", split=False)
    else:
        tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    byte_tokens = [f"<0x{i:02X}>" for i in range(256)]
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=specials + byte_tokens, limit_alphabet=150,
                                  show_progress=False)
    tok.train_from_iterator([t for t in CORPUS], trainer)
    # as in LLaMA-2's file: the byte tokens are in the model's vocabulary, not added tokens
    data = json.loads(tok.to_str())
    data["added_tokens"] = [a for a in data["added_tokens"] if a["content"] in specials]
    return Tokenizer.from_str(json.dumps(data))


def gemma():
    with open(os.path.join(HERE, "llama2", "tokenizer.json"), encoding="utf-8") as f:
        data = json.load(f)
    data["normalizer"] = {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}
    data["pre_tokenizer"] = None
    data["decoder"] = json.loads(decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(),
                                                    decoders.Fuse()]).__getstate__())
    return Tokenizer.from_str(json.dumps(data))


def write(name, tok):
    out = os.path.join(HERE, name)
    os.makedirs(out, exist_ok=True)
    tok.save(os.path.join(out, "tokenizer.json"))
    cases = []
    for text in CASES:
        ids = tok.encode(text, add_special_tokens=False).ids
        cases.append({"text": text, "ids": ids, "decoded": tok.decode(ids, skip_special_tokens=False)})
    with open(os.path.join(out, "cases.json"), "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False, indent=1)
        f.write("\n")
    with open(os.path.join(out, "cases.txt"), "w") as f:  # the same, for C: hex UTF-8 and the ids
        for c in cases:
            f.write("T " + c["text"].encode().hex() + "\n")
            f.write("I" + "".join(f" {i}" for i in c["ids"]) + "\n")
            f.write("D " + c["decoded"].encode().hex() + "\n")


def main():
    if sys.argv[1:] == ["gemma"]:
        write("gemma", gemma())
        return
    write("gpt2", byte_level(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True), GPT2_SPECIAL))
    split = lambda rx: pre_tokenizers.Sequence([  # noqa: E731
        pre_tokenizers.Split(Regex(rx), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)])
    write("llama3", byte_level(split(LLAMA3_REGEX), ["<|begin_of_text|>", "<|end_of_text|>"], ignore_merges=True))
    qwen2 = byte_level(split(QWEN2_REGEX), ["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    qwen2.normalizer = normalizers.NFC()  # as Qwen2's own tokenizer.json has it
    write("qwen2", qwen2)
    write("llama2", sentencepiece(metaspace=False))
    write("mistral", sentencepiece(metaspace=True))
    write("gemma", gemma())


if __name__ == "__main__":
    main()
