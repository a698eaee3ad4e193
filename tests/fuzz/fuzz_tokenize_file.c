/* tests/fuzz/fuzz_tokenize_file.c - libFuzzer target for zt_tokenize_file, with tasks of 16 bytes
   (ZT_TEST_TOKENIZE_CHUNK) so that every input is cut into many. The input as JSON Lines, tokenized with a tokenizer
   that has a chat template (so "messages" lines render too), on 2 threads into shards of 7 tokens with their masks
   and on 1 thread into one file: the two must hold the same tokens, or fail with the same error. The input as a text
   (one document), with a tokenizer whose added tokens have lstrip, rstrip and single_word, or GPT-2's, Qwen2's, a
   SentencePiece-style one of words or o200k's (by the input's length), cut where added tokens end and where the text
   between them may be cut, and tokenized on 2 threads into shards: the ids zt_tokenize_special gives the whole text
   (its \r\n and \r as \n), then the end-of-text; or, by the input's length too, those of each line or each paragraph
   (split here as datasets splits them), each with its end-of-text. After
   each, nothing but the files of a success is left (no .partial). Errors are fine; a crash, a leak, undefined
   behaviour or a difference is not. Built and run by ./build.sh fuzz; seeds: the .jsonl files of tests/ref and
   lines of each kind and fault, written by the target (ZT_FUZZ_SEEDS=DIR, run from the repository root). */
#define ZT_IMPLEMENTATION
#include "../../zt.h"
#include <dirent.h>

/* appends the tokens of an llm.c file to ids[*n, cap) (counting those past cap) and removes it and, with mask, its mask
   (which must be there): 0, or -1 when there is no such file */
static int take_file(const char *path, int mask, int32_t *ids, int64_t *n, int64_t cap) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    int32_t h[256];
    ZT_ASSERT(fread(h, 4, 256, f) == 256 && h[0] == 20240520 && h[2] >= 0);
    for (int32_t i = 0; i < h[2]; i++) {
        uint16_t v;
        ZT_ASSERT(fread(&v, 2, 1, f) == 1);
        if (*n < cap) ids[*n] = v; /* the first cap compared, all counted */
        (*n)++;
    }
    ZT_ASSERT(fgetc(f) == EOF);
    fclose(f);
    char masks[512];
    snprintf(masks, sizeof masks, "%s.mask", path);
    ZT_ASSERT(remove(path) == 0 && (!mask || remove(masks) == 0));
    return 0;
}

/* ids[*n, cap) += zt_tokenize_special of s[0, len) and the end-of-text 0 (all counted, the first cap kept) */
static void reference(zt_tokenizer *tok, const char *s, size_t len, int32_t *ids, int64_t *n, int64_t cap) {
    static int32_t one[1 << 18];
    int64_t k = zt_tokenize_special(tok, s, len, one, 1 << 18);
    ZT_ASSERT(k >= 0 && k < 1 << 18);
    one[k++] = 0;
    for (int64_t i = 0; i < k; i++, (*n)++)
        if (*n < cap) ids[*n] = one[i];
}

static zt_tokenizer *t, *texts[5]; /* qwen2's with a chat template; for texts, the kinds zt cuts differently */
static const char *const text_names[5] = {"added_flags", "gpt2", "qwen2", "llama2_words", "o200k"};
static char dir[64];

/* ZT_FUZZ_SEEDS=DIR: the instruction set and conversations of tests/ref, and lines of each kind and fault */
static void write_seeds(const char *out) {
    static const char *const seeds[] = {
        "{\"text\": \"Hello world\"}\n\n{\"text\": \"\\u4f60\\u597d, 42 \\ud83d\\ude00\"}\r\n",
        ("{\"prompt\": \"Q?\", \"response\": \" A.\"}\n{\"text\": \"doc\"}\n{\"messages\": [{\"role\": \"user\", "
         "\"content\": \"hi\"}, {\"role\": \"assistant\", \"content\": \"yo\"}]}\n"),
        "{\"prompt\": 5, \"response\": \"x\"}\n", "{\"other\": \"x\"}\n", " [{\"text\": \"an array\"}]\n",
        "{\"text\": \"unterminated\n{\"text\": \"ok\"}", "{\"text\": \"<|endoftext|> inside\"}\n   \t\n"};
    const char *const files[] = {"tests/ref/instructions.jsonl", "tests/ref/conversations.jsonl"};
    char path[400], buf[1 << 16];
    for (size_t k = 0; k < sizeof seeds / sizeof seeds[0] + 2; k++) {
        const char *s = seeds[0];
        size_t n = 0;
        if (k < 2) {
            FILE *f = fopen(files[k], "rb");
            if (!f) zt_fatal("fuzz_tokenize_file: cannot open %s (run from the repository root)", files[k]);
            n = fread(buf, 1, sizeof buf, f), s = buf;
            fclose(f);
        } else {
            s = seeds[k - 2], n = strlen(s);
        }
        snprintf(path, sizeof path, "%s/seed_%zu.jsonl", out, k);
        FILE *o = fopen(path, "wb");
        if (!o || fwrite(s, 1, n, o) != n || fclose(o) != 0) zt_fatal("fuzz_tokenize_file: cannot write %s", path);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    if (getenv("ZT_FUZZ_SEEDS")) {
        write_seeds(getenv("ZT_FUZZ_SEEDS"));
        exit(0);
    }
    size_t n = 0;
    char *tmpl = (char *)malloc(1 << 16);
    FILE *f = fopen("tests/ref/chat/templates/qwen2.jinja", "rb");
    if (f && tmpl) n = fread(tmpl, 1, 1 << 16, f);
    if (f) fclose(f);
    if (zt_tokenizer_load(&t, "tests/ref/tokenizers/qwen2") != ZT_OK || n == 0)
        zt_fatal("fuzz_tokenize_file: cannot load tests/ref/tokenizers/qwen2 and its template (run from the repository root)");
    ZT_ASSERT(zt_tokenizer_set_chat_template(t, tmpl, n, "qwen2.jinja") == ZT_OK);
    free(tmpl);
    for (int k = 0; k < 5; k++) {
        char path[128];
        snprintf(path, sizeof path, "tests/ref/tokenizers/%s", text_names[k]);
        if (zt_tokenizer_load(&texts[k], path) != ZT_OK) zt_fatal("fuzz_tokenize_file: %s", zt_last_error());
    }
    setenv("ZT_TEST_TOKENIZE_CHUNK", "16", 1);
    snprintf(dir, sizeof dir, "/tmp/zt_fuzz_tokenize_file_%d", (int)getpid());
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) zt_fatal("fuzz_tokenize_file: cannot make %s", dir);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char in[128], out[2][128];
    snprintf(in, sizeof in, "%s/in.jsonl", dir);
    snprintf(out[0], sizeof out[0], "%s/one.bin", dir), snprintf(out[1], sizeof out[1], "%s/sh.bin", dir);
    FILE *f = fopen(in, "wb");
    ZT_ASSERT(f && fwrite(data, 1, size, f) == size && fclose(f) == 0);
    static int32_t ids[2][1 << 18];
    int64_t n[2], got[2];
    zt_result r[2];
    char why[2][512];
    for (int k = 0; k < 2; k++) {
        zt_tokenize_desc d;
        memset(&d, 0, sizeof d);
        d.input = in, d.output = out[k], d.eot = zt_tokenizer_id(t, "<|endoftext|>");
        d.threads = k ? 2 : 1, d.shard_size = k ? 7 : 0;
        r[k] = zt_tokenize_file(t, &d, &got[k]);
        snprintf(why[k], sizeof why[k], "%s", r[k] == ZT_OK ? "" : zt_last_error());
        n[k] = 0;
        int files = 0;
        for (char path[256]; k == 0 ? files == 0 : 1; files++) { /* one.bin, or sh_000000.bin, sh_000001.bin, ... */
            if (k) snprintf(path, sizeof path, "%s/sh_%06d.bin", dir, files);
            if (take_file(k ? path : out[0], 1, ids[k], &n[k], 1 << 18) != 0) break;
        }
        if (files == 0) n[k] = -1;
        ZT_ASSERT(r[k] == ZT_OK ? n[k] == got[k] : n[k] < 0); /* all written, or nothing */
    }
    ZT_ASSERT(r[0] == r[1] && strcmp(why[0], why[1]) == 0);
    ZT_ASSERT(r[0] != ZT_OK || (n[0] == n[1] && memcmp(ids[0], ids[1], sizeof(int32_t) * (size_t)ZT__MIN(n[0], 1 << 18)) == 0));
    remove(in);

    /* a text: cut where added tokens end, on 2 threads, the ids of the whole; or its lines, or its paragraphs */
    snprintf(in, sizeof in, "%s/in.txt", dir);
    f = fopen(in, "wb");
    ZT_ASSERT(f && fwrite(data, 1, size, f) == size && fclose(f) == 0);
    zt_tokenize_desc d;
    memset(&d, 0, sizeof d);
    d.input = in, d.output = out[1], d.eot = 0, d.special = 1, d.threads = 2, d.shard_size = 7;
    d.sample_by = (zt_sample_by)(size / 5 % 3); /* the input's length picks the sampling and the tokenizer */
    zt_tokenizer *flags = texts[size % 5];
    static char text[1 << 20];
    size_t len = 0;
    if (size > sizeof text) return 0;
    for (size_t i = 0; i < size && i < sizeof text; i++) /* Python's universal newlines */
        if (data[i] != '\r') text[len++] = (char)data[i];
        else if (i + 1 == size || data[i + 1] != '\n') text[len++] = '\n';
    int64_t want = 0, files = 0;
    for (size_t a = 0, b; d.sample_by != ZT_SAMPLE_DOCUMENT && a < len; a = b) {
        size_t end = len; /* a line with its \n; a paragraph before the first \n\n from a, left out when empty */
        for (b = a; b < len; b++)
            if (d.sample_by == ZT_SAMPLE_LINE ? text[b] == '\n' : b + 1 < len && text[b] == '\n' && text[b + 1] == '\n') {
                end = d.sample_by == ZT_SAMPLE_LINE ? b + 1 : b;
                break;
            }
        b = end == len ? len : d.sample_by == ZT_SAMPLE_LINE ? end : end + 2;
        if (end > a || d.sample_by == ZT_SAMPLE_LINE) reference(flags, text + a, end - a, ids[0], &want, 1 << 18);
    }
    if (d.sample_by == ZT_SAMPLE_DOCUMENT) reference(flags, text, len, ids[0], &want, 1 << 18);
    ZT_ASSERT(zt_tokenize_file(flags, &d, &got[1]) == ZT_OK && got[1] == want);
    n[1] = 0;
    for (char path[256];; files++) {
        snprintf(path, sizeof path, "%s/sh_%06d.bin", dir, (int)files);
        if (take_file(path, 0, ids[1], &n[1], 1 << 18) != 0) break;
    }
    ZT_ASSERT(n[1] == want && files == (want + 6) / 7);
    ZT_ASSERT(memcmp(ids[0], ids[1], sizeof(int32_t) * (size_t)ZT__MIN(want, 1 << 18)) == 0);
    DIR *dd = opendir(dir); /* nothing else left behind */
    for (struct dirent *e; dd && (e = readdir(dd));)
        ZT_ASSERT(e->d_name[0] == '.' || strcmp(e->d_name, "in.txt") == 0);
    if (dd) closedir(dd);
    remove(in);
    return 0;
}
