#!/usr/bin/env python3
"""Tokenizer fixtures for tests/test_tokenizer.c, made with the `tokenizers` library (what transformers
uses): tiny tokenizers of each kind zt reads, trained on a small multilingual corpus, and the ids the
library gives for strings that break naive tokenizers.

    python3 tests/ref/make_tokenizer_fixtures.py          (from the repository root)
    python3 tests/ref/make_tokenizer_fixtures.py gemma    (only gemma, or only the named ones of the last eleven)
    python3 tests/ref/make_tokenizer_fixtures.py splits                 (only splits.txt)
    python3 tests/ref/make_tokenizer_fixtures.py cases llama2 mistral   (their cases again, with the tokenizer.json
                                                                         there: new CASES without a new vocabulary;
                                                                         no names: every fixture's, and splits.txt)

(The SentencePiece-style training breaks frequency ties in hash order, so its vocabulary can differ
between runs; each run's tokenizer.json and cases agree, which is what the test needs.)

It also writes tests/ref/tokenizers/splits.txt: where the pieces of each case end (in bytes) when the Split of each
pattern in SPLITS (isolated) cuts it, as the library cuts it ("P <name> <hex pattern>", then "T <hex text>", "E <ends>"
lines; the pattern "gpt2" stands for ByteLevel's own regex), for zt's regular expressions alone (tests/test_meta.c).

It writes tests/ref/tokenizers/<name>/tokenizer.json, cases.json ([{"text", "ids", "ids_special", "decoded"}]) and the
same cases in cases.txt for the C test (lines "T <hex UTF-8>", "I <ids>", "S <ids with the special tokens>",
"D <hex UTF-8 of the decoded ids>"):
    gpt2     byte-level BPE with GPT-2's pre-tokenizer (ByteLevel with its regex)
    llama3   byte-level BPE with LLaMA-3's Split regex (digits in threes, ignore_merges)
    qwen2    byte-level BPE with Qwen2's Split regex (single digits), its NFC normalizer and chat special tokens
    llama2   SentencePiece-style BPE as LLaMA-2's tokenizer.json has it: normalizer Prepend + Replace,
             no pre-tokenizer, byte fallback (<0xXX> tokens) for characters outside the vocabulary
    mistral  the same model with the newer Metaspace pre-tokenizer (prepend_scheme "first")
    gemma    llama2's model as Gemma's tokenizer.json has it: a normalizer that only replaces " " by "▁" (no
             Prepend), no pre-tokenizer, a decoder without the Strip (made from llama2's file, so it is the same
             each run)
and byte-level BPE with the pre-tokenizers zt runs through its regular expressions (a Sequence of steps):
    o200k        gpt-oss's Split regex (o200k_harmony's: cases of letters, marks, contractions after words)
    tekken       Mistral NeMo's and Ministral's (Tekken's): o200k's without the contractions, single digits
    deepseek_v3  DeepSeek-V3's three Splits in turn (digits in threes; CJK runs; its words, punctuation, spaces)
    starcoder2   StarCoder2's and Cohere's: Digits (each a piece), then ByteLevel with GPT-2's regex
    steps_mixed  the other behaviors and options: Digits in runs, a String Split merged with the piece before it, an
                 inverted Split merged with the next, one Contiguous, one Removed, ByteLevel adding its space to
                 every piece (no model's file, the tokenizers library's meaning of each)
and SentencePiece-style ones with a pre-tokenizer (after the normalizer: on "▁" for spaces):
    gemma_split    gemma's with the Split on " " (merged with the piece before) of transformers 5's GemmaTokenizer
    llama2_digits  llama2's with Digits, each a piece
and llama2_words: LLaMA-2's file with a vocabulary made a word at a time, as SentencePiece makes them (no token has a
    "▁" after another character), which zt may cut at spaces
and added tokens with the library's flags:
    added_flags    llama3's with added tokens that take the white space after them (rstrip, as Phi-3's <|end|>), before
                   them (lstrip), both (lstrip and rstrip, as Phi-4's), and one that matches between words only
                   (single_word)
and post-processors (the special tokens around a text with add_special_tokens=True: each case's "ids_special"):
    llama3_bos     llama3's with LLaMA-3's: ByteLevel, then <|begin_of_text|> before the text
    llama2_eos     llama2's with <s> before the text and </s> after it (LLaMA-2's with add_eos_token)
    llama3_reserved  llama3's with LLaMA-3's 250 reserved special tokens (many added tokens of one first byte)
    llama2_config  llama2's without a post-processor, and a tokenizer_config.json with add_bos_token and
                   add_eos_token true, which transformers 5 leaves unread: its ids_special are AutoTokenizer's, no
                   special tokens added
"""
import sys
import json
import os

from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors,
                        trainers)

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tokenizers")

GPT2_SPECIAL = ["<|endoftext|>"]
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                r"\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
               r"\s*[\r\n]+|\s+(?!\S)|\s+")
O200K_REGEX = "|".join([
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"\p{N}{1,3}", r" ?[^\s\p{L}\p{N}]+[\r\n/]*", r"\s*[\r\n]+", r"\s+(?!\S)", r"\s+"])
TEKKEN_REGEX = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|"
                r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}|"
                r" ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")
DEEPSEEK_V3_REGEXES = [r"\p{N}{1,3}", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
                       r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+|"
                       r" ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"]

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
    # for the regular expressions: cases and marks, contractions after words, slashes, symbols before letters
    "HTTPServer camelCaseWord ALLCAPS'S McDonald's o'clock x'ſfoo naïve\u0301 ǅemal Ǆ",
    "path/to/file.txt\n/usr/bin\r\n$HOME ~user @handle #tag 100% a+b=c",
    "12345678 ٣٤٥ ³² Ⅻ 1,000.50",
    "カタカナ ひらがな 漢字かな混じり 中文English混合 ㈱",
    "\u00a0nbsp\u2003em\u3000ideographic \t\v\f end",
    "\u017fK k STOP \u017ftop aaa pL xaa x{,2}",  # (?i) classes with U+017F and U+212A; Oniguruma's odd readings
    # added tokens with lstrip, rstrip and single_word (added_flags)
    "Hi<|end|>\n\n<|user|>  hello <mask>  x<mask>y \t<|user|>\u3000<|end|>\u00a0!",
    "cat cats concat cat. (cat) cat3 <|end|>cat \u00e9cat cat\u00e9 \u4e2dcat",
    # Metaspace: a text that starts with its ▁ gets no second one
    "\u2581x", "\u2581\u2581x", "\u2581", "a \u2581b",
    # single_word's neighbours are regex \w (letters, marks, Nd, Nl, Pc, the joiners), not other numbers; ignore_merges
    # finds a whole piece in the model's vocabulary only, not among the added tokens
    "cat2 cat23 _cat x cat_ cat\u0301 cat\u200d \u2460cat cat\u00b2 \u24b6cat cat\u2166",
    # LLaMA-3's reserved special tokens (llama3_reserved), one the start of another: the longest wins
    "<|reserved_special_token_17|>x<|reserved_special_token_170|><|reserved_special_token_1|><|reserved_special_token_",
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
    return Tokenizer.from_str(json.dumps(train_sentencepiece(tok, specials)))


def train_sentencepiece(tok, specials):
    """tok trained on CORPUS with byte fallback, as JSON; as in LLaMA-2's file, the byte tokens are in the model's
    vocabulary, not added tokens"""
    byte_tokens = [f"<0x{i:02X}>" for i in range(256)]
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=specials + byte_tokens, limit_alphabet=150,
                                  show_progress=False)
    tok.train_from_iterator([t for t in CORPUS], trainer)
    data = json.loads(tok.to_str())
    data["added_tokens"] = [a for a in data["added_tokens"] if a["content"] in specials]
    return data


def sentencepiece_words():
    """LLaMA-2's kind of file (normalizer Prepend + Replace, no pre-tokenizer) with a vocabulary made SentencePiece's
    way, a word at a time, so that no token has a "▁" after another character, as in LLaMA-2's and Mistral's own"""
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    data = train_sentencepiece(tok, ["<unk>", "<s>", "</s>"])
    data["pre_tokenizer"] = None
    data["normalizer"] = json.loads(normalizers.Sequence([normalizers.Prepend("\u2581"),
                                                          normalizers.Replace(" ", "\u2581")]).__getstate__())
    data["decoder"] = json.loads(decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(),
                                                    decoders.Fuse(), decoders.Strip(" ", 1, 0)]).__getstate__())
    return Tokenizer.from_str(json.dumps(data))


def with_pre(name, pre):
    """the committed tokenizer.json of name with another pre-tokenizer (the same vocabulary each run)"""
    with open(os.path.join(HERE, name, "tokenizer.json"), encoding="utf-8") as f:
        data = json.load(f)
    data["pre_tokenizer"] = json.loads(pre.__getstate__())
    return Tokenizer.from_str(json.dumps(data))


# SentencePiece-style files with a pre-tokenizer, which runs on the normalized text (spaces already "▁")
SP_STEPS = {
    # Gemma's as transformers 5's GemmaTokenizer writes it: a Split on " " that finds none after the normalizer
    "gemma_split": lambda: with_pre("gemma", pre_tokenizers.Split(" ", behavior="merged_with_previous")),
    # LLaMA-2's model with its digits split one by one
    "llama2_digits": lambda: with_pre("llama2", pre_tokenizers.Digits(individual_digits=True)),
    # LLaMA-2's with a vocabulary of words (no "▁" inside a token but runs of them): zt may cut a text at its spaces
    "llama2_words": sentencepiece_words,
}


def with_added(name, tokens):
    """the committed tokenizer.json of name with more added tokens"""
    tok = Tokenizer.from_file(os.path.join(HERE, name, "tokenizer.json"))
    tok.add_tokens(tokens)
    return tok


def with_post(name, post):
    """the committed tokenizer.json of name with a post-processor"""
    tok = Tokenizer.from_file(os.path.join(HERE, name, "tokenizer.json"))
    tok.post_processor = post(tok)
    return tok


def template(single, tok):
    names = [w for w in single.split() if w != "$A"]
    return processors.TemplateProcessing(single=single, pair=single + " $B:1", special_tokens=[(w, tok.token_to_id(w))
                                                                                             for w in names])


ADDED = {
    "llama3_bos": lambda: with_post("llama3", lambda tok: processors.Sequence([
        processors.ByteLevel(trim_offsets=False), template("<|begin_of_text|> $A", tok)])),
    "llama2_eos": lambda: with_post("llama2", lambda tok: template("<s> $A </s>", tok)),
    "llama3_reserved": lambda: with_added("llama3", [AddedToken(f"<|reserved_special_token_{k}|>", special=True,
                                                                normalized=False) for k in range(250)]),
    "added_flags": lambda: with_added("llama3", [
        AddedToken("<|end|>", rstrip=True, special=True, normalized=False),
        AddedToken("<|user|>", lstrip=True, special=True, normalized=False),
        AddedToken("<mask>", lstrip=True, rstrip=True, special=True, normalized=False),
        AddedToken("cat", single_word=True, normalized=False)]),
}


def gemma():
    with open(os.path.join(HERE, "llama2", "tokenizer.json"), encoding="utf-8") as f:
        data = json.load(f)
    data["normalizer"] = {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}
    data["pre_tokenizer"] = None
    data["decoder"] = json.loads(decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(),
                                                    decoders.Fuse()]).__getstate__())
    return Tokenizer.from_str(json.dumps(data))


def split_steps(*steps):
    return pre_tokenizers.Sequence([*steps, pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True,
                                                                      use_regex=False)])


def regex_split(rx, behavior="isolated", invert=False):
    return pre_tokenizers.Split(Regex(rx), behavior=behavior, invert=invert)


STEPS = {
    "o200k": lambda: split_steps(regex_split(O200K_REGEX)),
    "tekken": lambda: split_steps(regex_split(TEKKEN_REGEX)),
    "deepseek_v3": lambda: split_steps(*[regex_split(rx) for rx in DEEPSEEK_V3_REGEXES]),
    "starcoder2": lambda: pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)]),
    "steps_mixed": lambda: pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=False),
        pre_tokenizers.Split(", ", behavior="merged_with_previous"),
        regex_split(r"[\p{L}\p{M}]+", behavior="merged_with_next", invert=True),
        regex_split(r"[aeiou]", behavior="contiguous"),
        regex_split(r"\t", behavior="removed"),
        pre_tokenizers.ByteLevel(add_prefix_space=True, trim_offsets=True, use_regex=True)]),
}


# the patterns of splits.txt: the models' and each feature of the syntax zt reads
SPLITS = {"gpt2": None, "llama3": LLAMA3_REGEX, "qwen2": QWEN2_REGEX, "o200k": O200K_REGEX, "tekken": TEKKEN_REGEX,
          **{f"deepseek_v3_{k}": rx for k, rx in enumerate(DEEPSEEK_V3_REGEXES)},
          "lazy": r"\p{L}+?[aeiou]|\d{2,}?\d|.",
          "counts": r"a{2}|b{1,}|c{0,2}d|[x-z]{3,4}",
          "lookahead": r"[\p{L}\p{N}_]+(?=[.!?])|\s(?=\S)|[^\p{L}\p{N}\s]+(?!\d)|\S",
          # (\w outside a class only: Oniguruma's [\w] leaves out numbers such as ², which its \w takes)
          "escapes": r"[\x41-\x{5A}\u00e9]+|[\s\t]+|\d\D|\w\W|[^\d\s]|\S",
          "properties": r"\P{L}+|\p{Lu}\p{^Lu}*|\pN|\p{Letter}+",
          "case": r"(?i:straße|ok|[a-c]+)|(?-i:x)|.",
          # U+017F and U+212A in case-insensitive classes; \pL (the letters p and L), a{,2} ({0,2}), a{2}? (optional)
          "oniguruma": r"(?i:[s-u]+|[^K\s])|\pL|a{,2}|xa{2}?|\s"}


def write_splits():
    with open(os.path.join(HERE, "splits.txt"), "w") as f:
        for name, rx in SPLITS.items():
            pre = (pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True) if rx is None
                   else pre_tokenizers.Split(Regex(rx), behavior="isolated"))
            f.write(f"P {name} {(rx or '').encode().hex()}\n")
            for text in CASES[:-1]:  # (not the long one)
                ends = [len(text[:end].encode()) for _, (_, end) in pre.pre_tokenize_str(text)]
                f.write("T " + text.encode().hex() + "\n")
                f.write("E" + "".join(f" {e}" for e in ends) + "\n")


def write_config_fixture(name="llama2_config"):
    """llama2's tokenizer.json beside a tokenizer_config.json that asks for BOS and EOS: ids_special from transformers
    (whose AutoTokenizer takes them from tokenizer.json's post-processor alone)"""
    from transformers import AutoTokenizer
    out = os.path.join(HERE, name)
    os.makedirs(out, exist_ok=True)
    tok = Tokenizer.from_file(os.path.join(HERE, "llama2", "tokenizer.json"))
    tok.save(os.path.join(out, "tokenizer.json"))
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "</s>",
                   "unk_token": "<unk>", "add_bos_token": True, "add_eos_token": True}, f, indent=1)
        f.write("\n")
    hf = AutoTokenizer.from_pretrained(out)
    write(name, tok, lambda text: hf(text)["input_ids"])


def write(name, tok, special=None):
    out = os.path.join(HERE, name)
    os.makedirs(out, exist_ok=True)
    tok.save(os.path.join(out, "tokenizer.json"))
    cases = []
    for text in CASES:
        ids = tok.encode(text, add_special_tokens=False).ids
        cases.append({"text": text, "ids": ids, "ids_special": special(text) if special else tok.encode(text).ids,
                      "decoded": tok.decode(ids, skip_special_tokens=False)})
    with open(os.path.join(out, "cases.json"), "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False, indent=1)
        f.write("\n")
    with open(os.path.join(out, "cases.txt"), "w") as f:  # the same, for C: hex UTF-8 and the ids
        for c in cases:
            f.write("T " + c["text"].encode().hex() + "\n")
            f.write("I" + "".join(f" {i}" for i in c["ids"]) + "\n")
            f.write("S" + "".join(f" {i}" for i in c["ids_special"]) + "\n")
            f.write("D " + c["decoded"].encode().hex() + "\n")


def main():
    if sys.argv[1:] == ["gemma"]:
        write("gemma", gemma())
        return
    if sys.argv[1:] == ["splits"]:
        write_splits()
        return
    if sys.argv[1:] == ["llama2_config"]:
        write_config_fixture()
        return
    if sys.argv[1:2] == ["cases"]:
        names = sys.argv[2:] or sorted(d for d in os.listdir(HERE) if os.path.exists(os.path.join(HERE, d, "tokenizer.json"))
                                       and d != "llama2_config")
        for name in names:
            write(name, Tokenizer.from_file(os.path.join(HERE, name, "tokenizer.json")))
        if not sys.argv[2:]:
            write_config_fixture()
            write_splits()
        return
    if sys.argv[1:] and all(a in STEPS or a in SP_STEPS or a in ADDED for a in sys.argv[1:]):
        for name in sys.argv[1:]:
            write(name, SP_STEPS[name]() if name in SP_STEPS else ADDED[name]() if name in ADDED
                  else byte_level(STEPS[name](), GPT2_SPECIAL))
        return
    if sys.argv[1:]:
        sys.exit(f"{sys.argv[1]}: not a fixture this script makes alone (see its docstring)")
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
    for name, steps in STEPS.items():
        write(name, byte_level(steps(), GPT2_SPECIAL))
    for name, tok in {**SP_STEPS, **ADDED}.items():
        write(name, tok())
    write_config_fixture()
    write_splits()


if __name__ == "__main__":
    main()
