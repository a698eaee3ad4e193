/* bench/tokenize.c - zt_tokenize's speed on one core, for each kind of pre-tokenizer zt reads: GPT-2's
   and LLaMA-3's written by hand, gpt-oss's o200k, Mistral's Tekken and DeepSeek-V3's three Splits through
   the regular-expression machine, StarCoder2's Digits, a SentencePiece-style model, LLaMA-3's with its 250
   reserved special tokens (the added tokens are looked for at every byte) (tests/ref/tokenizers:
   the tokenizers of the tests, vocabularies of 600, so the pre-tokenizer's share is the larger). The
   anchor is LLaMA-3's hand-written pre-tokenizer on the same text: each line gives MB/s and the ratio to
   it (the regular expressions' cost). The text: English prose, code, Chinese, repeated to 4 MiB, tokenized
   in documents of 4 KiB. Run from the repository root.
   Then zt_tokenize_file over the same documents as JSON Lines ({"text": ...}) with LLaMA-3's tokenizer, on 1 thread
   (the anchor) and on every core: MB/s, the ratio, and whether the files are the same (ZT_BENCH_DIR, default /tmp,
   holds them). */
#include "../zt.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TEXT = 4 << 20, DOC = 4096 };

static double mb_per_s(const char *name, const char *text, int32_t *ids, int64_t *count) {
    char dir[256];
    snprintf(dir, sizeof dir, "tests/ref/tokenizers/%s", name);
    zt_tokenizer *t = NULL;
    if (zt_tokenizer_load(&t, dir) != ZT_OK) {
        fprintf(stderr, "bench_tokenize: %s (run from the repository root)\n", zt_last_error());
        exit(1);
    }
    double best = 0;
    for (int rep = 0; rep < 3; rep++) { /* the best of three */
        uint64_t t0 = zt_time_ns();
        *count = 0;
        for (size_t at = 0; at < TEXT; at += DOC) *count += zt_tokenize(t, text + at, DOC, ids, DOC + 16);
        double s = (double)(zt_time_ns() - t0) / 1e9, v = (double)TEXT / s / 1e6;
        best = v > best ? v : best;
    }
    zt_tokenizer_free(t);
    return best;
}

int main(void) {
    static const char *const parts[] = {
        "The quick brown fox jumps over the lazy dog. I'm sure they'll say it's fine, DON'T worry. ",
        "def train(model, data):\n    for step in range(1000):\n        loss = model(data)\n        loss.backward()\n",
        "我们今天去北京，明天去上海。机器学习和深度学习是人工智能的重要分支。 ",
        "In 2024 the model had 1234567 parameters; 3.14159 is pi and 42 is the answer.\n"};
    char *text = (char *)malloc(TEXT);
    int32_t *ids = (int32_t *)malloc(sizeof(int32_t) * (DOC + 16));
    if (!text || !ids) return 1;
    for (size_t n = 0, k = 0; n < TEXT; k++) {
        size_t len = strlen(parts[k % 4]);
        len = len < TEXT - n ? len : TEXT - n;
        memcpy(text + n, parts[k % 4], len), n += len;
    }
    static const struct { const char *name, *pre; } cases[] = {
        {"llama3", "hand: LLaMA-3's Split"}, {"gpt2", "hand: GPT-2's ByteLevel"}, {"o200k", "machine: gpt-oss's o200k"},
        {"tekken", "machine: Tekken"}, {"deepseek_v3", "machine: DeepSeek-V3's three Splits"},
        {"starcoder2", "Digits, then GPT-2's by hand"}, {"llama2", "SentencePiece-style"},
        {"llama3_reserved", "hand: LLaMA-3's, with its 250 reserved special tokens"}};
    double anchor = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int64_t count = 0;
        double v = mb_per_s(cases[c].name, text, ids, &count);
        if (c == 0) anchor = v;
        printf("{\"bench\": \"tokenize\", \"tokenizer\": \"%s\", \"pre_tokenizer\": \"%s\", \"mb_per_s\": %.1f, "
               "\"ids\": %lld, \"vs_llama3_hand\": %.2f}\n", cases[c].name, cases[c].pre, v, (long long)count, v / anchor);
    }
    /* zt_tokenize_file: the documents as JSON Lines, on 1 thread and on every core */
    const char *tmp = getenv("ZT_BENCH_DIR") ? getenv("ZT_BENCH_DIR") : "/tmp";
    char in[512], out[2][512];
    snprintf(in, sizeof in, "%s/zt_bench_tokenize.jsonl", tmp);
    FILE *f = fopen(in, "w");
    if (!f) return fprintf(stderr, "bench_tokenize: cannot write %s\n", in), 1;
    for (size_t at = 0; at < TEXT; at += DOC) {
        fputs("{\"text\": \"", f);
        for (size_t i = at; i < at + DOC; i++) {
            unsigned char c = (unsigned char)text[i];
            if (c == '"' || c == '\\') fputc('\\', f), fputc(c, f);
            else if (c < 0x20) fprintf(f, "\\u%04x", c);
            else fputc(c, f);
        }
        fputs("\"}\n", f);
    }
    fclose(f);
    zt_tokenizer *t = NULL;
    if (zt_tokenizer_load(&t, "tests/ref/tokenizers/llama3") != ZT_OK) return fprintf(stderr, "bench_tokenize: %s\n", zt_last_error()), 1;
    int threads[2] = {1, zt_cpu_count()};
    double speed[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        zt_tokenize_desc d;
        memset(&d, 0, sizeof d);
        snprintf(out[k], sizeof out[k], "%s/zt_bench_tokenize_%d.bin", tmp, k);
        d.input = in, d.output = out[k], d.eot = -1, d.threads = threads[k], d.no_mask = 1;
        for (int rep = 0; rep < 3; rep++) { /* the best of three */
            uint64_t t0 = zt_time_ns();
            int64_t n = 0;
            if (zt_tokenize_file(t, &d, &n) != ZT_OK) return fprintf(stderr, "bench_tokenize: %s\n", zt_last_error()), 1;
            double v = (double)TEXT / ((double)(zt_time_ns() - t0) / 1e9) / 1e6;
            speed[k] = v > speed[k] ? v : speed[k];
        }
    }
    FILE *a = fopen(out[0], "rb"), *b = fopen(out[1], "rb");
    int same = a && b, ca = 0, cb = 0;
    while (same && ca != EOF) same = (ca = fgetc(a)) == (cb = fgetc(b));
    if (a) fclose(a);
    if (b) fclose(b);
    printf("{\"bench\": \"tokenize_file\", \"tokenizer\": \"llama3\", \"input\": \"JSON Lines of 4 KiB documents\", "
           "\"threads\": %d, \"mb_per_s\": %.1f, \"one_thread_mb_per_s\": %.1f, \"vs_one_thread\": %.2f, \"same_files\": %s}\n",
           threads[1], speed[1], speed[0], speed[1] / speed[0], same ? "true" : "false");
    remove(in), remove(out[0]), remove(out[1]);
    zt_tokenizer_free(t);
    free(text), free(ids);
    return 0;
}
