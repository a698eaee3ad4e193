/* tests/test_tokenizer.c - tokenizer.json files of each kind zt reads, trained by the `tokenizers`
   library (tests/ref/make_tokenizer_fixtures.py), and the ids the library gives for strings that break
   naive tokenizers: Chinese and Japanese, full-width punctuation, emoji, combining marks, white-space
   runs, digits, contractions, special tokens in the text, characters outside the vocabulary. zt must
   give the same ids, and decode them to the library's text. */
#define _POSIX_C_SOURCE 200809L
#include "test.h"
#include <stdio.h>
#include <unistd.h>
#include <sys/stat.h>

static void check_tokenizer(const char *name) {
    char path[256], line[65536], text[16384], want_text[16384], got_text[16384];
    snprintf(path, sizeof path, "tests/ref/tokenizers/%s", name);
    zt_tokenizer *t = NULL;
    CHECK_MSG(zt_tokenizer_load(&t, path) == ZT_OK, "%s: %s", path, zt_last_error());
    snprintf(path, sizeof path, "tests/ref/tokenizers/%s/cases.txt", name);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    int cases = 0;
    size_t tn = 0;
    int32_t want[4096], got[4096], special[4096];
    int64_t nw = 0, ns = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == 'T') {
            tn = test_unhex(line + 2, text);
        } else if (line[0] == 'I') {
            nw = 0;
            for (char *p = line + 1, *end; *p && *p != '\n'; p = end) {
                long v = strtol(p, &end, 10);
                if (end == p) break;
                want[nw++] = (int32_t)v;
            }
        } else if (line[0] == 'S') { /* with the post-processor's special tokens around the text */
            ns = 0;
            for (char *p = line + 1, *end; *p && *p != '\n'; p = end) {
                long v = strtol(p, &end, 10);
                if (end == p) break;
                special[ns++] = (int32_t)v;
            }
            int64_t ng = zt_tokenize_special(t, text, tn, got, 4096);
            CHECK_MSG(ng == ns && memcmp(got, special, sizeof(int32_t) * (size_t)ns) == 0,
                      "%s: \"%s\" with its special tokens: %lld ids, the first %d; tokenizers gives %lld, the first %d", name,
                      text, (long long)ng, ng ? got[0] : -1, (long long)ns, ns ? special[0] : -1);
        } else if (line[0] == 'D') {
            test_unhex(line + 2, want_text);
            int64_t ng = zt_tokenize(t, text, tn, got, 4096);
            int same = ng == nw && memcmp(got, want, sizeof(int32_t) * (size_t)nw) == 0;
            if (!same) {
                char g[2048] = "", w[2048] = "";
                for (int64_t i = 0; i < ng && i < 40; i++) snprintf(g + strlen(g), sizeof g - strlen(g), " %d", got[i]);
                for (int64_t i = 0; i < nw && i < 40; i++) snprintf(w + strlen(w), sizeof w - strlen(w), " %d", want[i]);
                CHECK_MSG(0, "%s: \"%s\": ids%s; tokenizers gives%s", name, text, g, w);
            }
            zt_detokenize(t, want, nw, got_text, sizeof got_text);
            CHECK_MSG(strcmp(got_text, want_text) == 0, "%s: decoding gives \"%s\"; tokenizers gives \"%s\"", name, got_text,
                      want_text);
            cases++;
        }
    }
    fclose(f);
    zt_tokenizer_free(t);
    CHECK(cases >= 15);
}

TEST(tokenizer_gpt2_byte_level) { check_tokenizer("gpt2"); }
TEST(tokenizer_llama3_byte_level) { check_tokenizer("llama3"); }
TEST(tokenizer_qwen2_byte_level) { check_tokenizer("qwen2"); }
TEST(tokenizer_llama2_sentencepiece) { check_tokenizer("llama2"); }
TEST(tokenizer_mistral_metaspace) { check_tokenizer("mistral"); }
TEST(tokenizer_gemma_sentencepiece) { check_tokenizer("gemma"); } /* a Replace normalizer alone: no ▁ prepended */
/* pre-tokenizers through zt's regular expressions: gpt-oss's, Tekken's (Mistral NeMo, Ministral), DeepSeek-V3's three
   Splits, StarCoder2's Digits, and every Split behavior with the other options */
TEST(tokenizer_o200k_regex) { check_tokenizer("o200k"); }
TEST(tokenizer_tekken_regex) { check_tokenizer("tekken"); }
TEST(tokenizer_deepseek_v3_splits) { check_tokenizer("deepseek_v3"); }
TEST(tokenizer_starcoder2_digits) { check_tokenizer("starcoder2"); }
TEST(tokenizer_steps_mixed) { check_tokenizer("steps_mixed"); }
/* SentencePiece-style, a pre-tokenizer after the normalizer: Gemma's as transformers 5 writes it, LLaMA-2's with Digits */
TEST(tokenizer_gemma_split) { check_tokenizer("gemma_split"); }
TEST(tokenizer_llama2_digits) { check_tokenizer("llama2_digits"); }
/* a vocabulary of words, as SentencePiece makes them: BPE a word at a time, and zt_tokenize_file may cut at spaces */
TEST(tokenizer_llama2_words) { check_tokenizer("llama2_words"); }
/* added tokens that take the white space beside them (lstrip, rstrip: Phi-3's and Phi-4's) or match between words only */
TEST(tokenizer_added_token_flags) { check_tokenizer("added_flags"); }
/* post-processors: the special tokens around a text (add_special_tokens=True), LLaMA-3's and one before and after */
TEST(tokenizer_llama3_bos_post_processor) { check_tokenizer("llama3_bos"); }
TEST(tokenizer_llama2_eos_post_processor) { check_tokenizer("llama2_eos"); }
/* tokenizer_config.json's add_bos_token and add_eos_token: transformers 5's AutoTokenizer adds nothing for them */
TEST(tokenizer_config_add_tokens_unread) { check_tokenizer("llama2_config"); }
/* LLaMA-3's 250 reserved special tokens: many added tokens of one first byte, the longest of those that match wins */
TEST(tokenizer_llama3_reserved_tokens) { check_tokenizer("llama3_reserved"); }

/* hostile files: one clear error or a tokenizer that works, never a crash */
TEST(tokenizer_hostile_files) {
    static char merge[4096];
    char path[256];
    snprintf(path, sizeof path, "/tmp/zt_hostile_tokenizer_%d.json", (int)getpid());
    memset(merge, 'a', 700);
    merge[700] = 0;
    const char *cases[] = {
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [\"%s b\"]}}",
        "{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 16000000}, \"merges\": []}}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [[\"a\"]]}}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"normalizer\": {\"type\": \"NFKC\"}}",
        /* pre-tokenizer Sequences: a pattern zt does not read, a step it does not know, a behavior, too many steps, a
           step after ByteLevel */
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"pre_tokenizer\": {\"type\": "
        "\"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\": \"(?<=a)\\\\p{L}\"}, "
        "\"behavior\": \"Isolated\"}, {\"type\": \"ByteLevel\"}]}}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"pre_tokenizer\": {\"type\": "
        "\"Sequence\", \"pretokenizers\": [{\"type\": \"Punctuation\"}, {\"type\": \"ByteLevel\"}]}}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"pre_tokenizer\": {\"type\": "
        "\"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"String\": \" \"}, \"behavior\": "
        "\"Merged\"}, {\"type\": \"ByteLevel\"}]}}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"pre_tokenizer\": {\"type\": "
        "\"Sequence\", \"pretokenizers\": [{\"type\": \"Digits\"}, {\"type\": \"Digits\"}, {\"type\": \"Digits\"}, "
        "{\"type\": \"Digits\"}, {\"type\": \"Digits\"}, {\"type\": \"Digits\"}, {\"type\": \"Digits\"}, "
        "{\"type\": \"Digits\"}, {\"type\": \"Digits\"}]}}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"pre_tokenizer\": {\"type\": "
        "\"Sequence\", \"pretokenizers\": [{\"type\": \"ByteLevel\"}, {\"type\": \"Digits\"}]}}",
        /* what the tokenizers library refuses: a merge of tokens the vocabulary lacks, or of three parts; added_tokens
           that is not a list; an added token's id out of range; and no model at all */
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [\"a b\"]}}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, \"merges\": [\"a b ab\"]}}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"added_tokens\": {}}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"added_tokens\": [{\"id\": -1, "
        "\"content\": \"<s>\"}]}",
        "{\"model\": null}",
        /* a normalizer without its type; a Metaspace of another replacement than SentencePiece's */
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"pre_tokenizer\": {\"type\": "
        "\"ByteLevel\"}, \"normalizer\": {\"prepend\": \"x\"}}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"pre_tokenizer\": {\"type\": "
        "\"Metaspace\", \"replacement\": \"_\"}}",
    };
    const char *want[] = {NULL, "zt reads BPE tokenizers", "ids are dense", "merge 0 is neither", "NFKC",
                          "pre-tokenizer step 1, a Split's pattern: a group (?...) of a kind zt does not read (lookbehind",
                          "pre-tokenizer step 1 is \"Punctuation\"", "has behavior \"Merged\"", "more than 8 steps",
                          "pre-tokenizer step 2 comes after ByteLevel",
                          "merge 0 (\"a\" + \"b\"): model.vocab does not have what it makes", "merge 0 is neither",
                          "\"added_tokens\" must be an array, found an object", "added token 0 has id -1, outside", "\"model\" is null",
                          "normalizer \"\" is not one zt reads", "the Metaspace pre_tokenizer's replacement is \"_\""};
    CHECK_EQ_INT(sizeof cases / sizeof cases[0], sizeof want / sizeof want[0]);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        FILE *f = fopen(path, "w");
        CHECK(f != NULL);
        fprintf(f, cases[i], merge);
        fclose(f);
        zt_tokenizer *t = NULL;
        zt_result r = zt_tokenizer_load(&t, path);
        if (want[i]) {
            CHECK_MSG(r != ZT_OK, "case %d was accepted", (int)i);
            CHECK_STR_CONTAINS(zt_last_error(), want[i]);
        } else if (r == ZT_OK) {
            int32_t ids[64];
            CHECK(zt_tokenize(t, "ab", 2, ids, 64) >= 0);
        }
        zt_tokenizer_free(t);
    }
    remove(path);
}

/* zt_tokenize_file with special: the post-processor's tokens around each document, and around each prompt and
   response (those before not learned, those after learned); a post-processor zt does not read is named */
TEST(tokenize_file_special_tokens) {
    char dir[128], path[256], out[256], mask[256];
    snprintf(dir, sizeof dir, "/tmp/zt_tokenize_special_%d", (int)getpid());
    CHECK(mkdir(dir, 0755) == 0);
    zt_tokenizer *t = NULL;
    CHECK_MSG(zt_tokenizer_load(&t, "tests/ref/tokenizers/llama2_eos") == ZT_OK, "%s", zt_last_error());
    int32_t bos = zt_tokenizer_id(t, "<s>"), eos = zt_tokenizer_id(t, "</s>"), q[64], qa[64], doc[64];
    /* the response goes on from the prompt, as TRL tokenizes prompt + completion: no second ▁ before it (here no
       merge crosses the boundary, so its tokens are those of the whole text after the prompt's) */
    int64_t nq = zt_tokenize(t, "Q?", 2, q, 64), nqa = zt_tokenize(t, "Q? Answer.", 10, qa, 64), na = nqa - nq;
    int64_t nd = zt_tokenize(t, "Hello world", 11, doc, 64);
    const int32_t *a = qa + nq;
    CHECK(nqa > nq && memcmp(q, qa, sizeof(int32_t) * (size_t)nq) == 0);
    snprintf(path, sizeof path, "%s/sft.jsonl", dir), snprintf(out, sizeof out, "%s/sft.bin", dir);
    snprintf(mask, sizeof mask, "%s/sft.bin.mask", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs("{\"prompt\": \"Q?\", \"response\": \" Answer.\"}\n", f);
    fclose(f);
    zt_tokenize_desc d;
    memset(&d, 0, sizeof d);
    d.input = path, d.output = out, d.eot = -1, d.special = 1;
    int64_t got = 0;
    CHECK_MSG(zt_tokenize_file(t, &d, &got) == ZT_OK, "%s", zt_last_error());
    CHECK_EQ_INT(got, 1 + nq + na + 1);
    size_t bytes = 0, mb = 0;
    char *file = test_slurp(out, &bytes), *m = test_slurp(mask, &mb);
    CHECK(file && m && bytes == 1024 + 2 * (size_t)got && mb == (size_t)got);
    for (int64_t i = 0; file && m && i < got && bytes == 1024 + 2 * (size_t)got && mb == (size_t)got; i++) {
        uint16_t id;
        memcpy(&id, file + 1024 + 2 * i, 2);
        int32_t want = i == 0 ? bos : i <= nq ? q[i - 1] : i <= nq + na ? a[i - 1 - nq] : eos;
        CHECK_MSG(id == want && (uint8_t)m[i] == (i > nq), "token %lld: id %d mask %d, want %d %d", (long long)i, id, m[i],
                  want, i > nq);
    }
    /* TRL's field name, "completion", where a line has no "response" (and --response_key is not given) */
    f = fopen(path, "w");
    CHECK(f != NULL);
    fputs("{\"prompt\": \"Q?\", \"completion\": \" Answer.\"}\n", f);
    fclose(f);
    int64_t again = 0;
    CHECK_MSG(zt_tokenize_file(t, &d, &again) == ZT_OK, "%s", zt_last_error());
    size_t bytes2 = 0;
    char *file2 = test_slurp(out, &bytes2);
    CHECK(again == got && file && file2 && bytes2 == bytes && memcmp(file, file2, bytes) == 0);
    free(file2);
    free(file), free(m);
    snprintf(path, sizeof path, "%s/doc.txt", dir); /* a text: <s> document </s> */
    f = fopen(path, "w");
    CHECK(f != NULL);
    fputs("Hello world", f);
    fclose(f);
    CHECK_MSG(zt_tokenize_file(t, &d, &got) == ZT_OK, "%s", zt_last_error());
    CHECK_EQ_INT(got, nd + 2);
    zt_tokenizer_free(t);
    /* BERT's post-processor: tokenizing works; its special tokens are refused by name */
    size_t len = 0;
    char *json = test_slurp("tests/ref/tokenizers/llama2/tokenizer.json", &len), *at = json ? strstr(json, "\"post_processor\": null") : NULL;
    CHECK(at != NULL);
    if (at) {
        static const char bert[] = "\"post_processor\": {\"type\": \"BertProcessing\", \"sep\": [\"</s>\", 2], "
                                   "\"cls\": [\"<s>\", 1]}";
        snprintf(path, sizeof path, "%s/tokenizer.json", dir);
        f = fopen(path, "w");
        CHECK(f != NULL);
        fwrite(json, 1, (size_t)(at - json), f), fputs(bert, f), fputs(at + strlen("\"post_processor\": null"), f);
        fclose(f);
        CHECK_MSG(zt_tokenizer_load(&t, path) == ZT_OK, "%s", zt_last_error());
        snprintf(path, sizeof path, "%s/doc.txt", dir);
        CHECK(zt_tokenize_file(t, &d, &got) != ZT_OK);
        CHECK_STR_CONTAINS(zt_last_error(), "post-processor is BertProcessing, which zt does not read");
        d.special = 0;
        CHECK(zt_tokenize_file(t, &d, &got) == ZT_OK);
        zt_tokenizer_free(t);
    }
    free(json);
    const char *names[] = {"sft.jsonl", "sft.bin", "sft.bin.mask", "doc.txt", "tokenizer.json"};
    for (int i = 0; i < 5; i++) snprintf(path, sizeof path, "%s/%s", dir, names[i]), remove(path);
    rmdir(dir);
}

/* line L (from 1) of the JSONL below: prompt/response pairs of mixed scripts and digits, a conversation every 40th, a
   blank line every 7th, and a field that is not a string where L is bad */
static int sft_line(char *out, size_t cap, int L, int bad) {
    static const char *const words[] = {"the", "model", "learns", "数据", "训练", "3.14159", "naïve", "café", "emoji 🙂",
                                        "  spaces ", "tab\\t", "line\\nbreak", "Привет", "12345678", "don't", "عربى"};
    char text[2][256];
    for (int k = 0; k < 2; k++) {
        size_t n = 0;
        uint32_t s = (uint32_t)L * 2654435761u + (uint32_t)k;
        for (int w = 0; w < 6 + (int)(s % 13); w++) {
            s = s * 1103515245u + 12345u;
            n += (size_t)snprintf(text[k] + n, sizeof text[k] - n, "%s%s", w ? " " : "", words[(s >> 16) % 16]);
        }
    }
    if (bad) return snprintf(out, cap, "{\"prompt\": %d, \"response\": \"%s\"}\n", L, text[1]);
    if (L % 7 == 0) return snprintf(out, cap, "\n");
    if (L % 40 == 0)
        return snprintf(out, cap, "{\"messages\": [{\"role\": \"user\", \"content\": \"%s %d\"}, {\"role\": \"assistant\", "
                        "\"content\": \"%s\"}]}\n", text[0], L, text[1]);
    return snprintf(out, cap, "{\"prompt\": \"%s %d\", \"response\": \"%s\"}\n", text[0], L, text[1]);
}

/* an llm.c token file's ids (uint16) and its mask; the header's count in *n */
static int read_tokens(const char *path, const char *mask_path, int32_t **ids, uint8_t **mask, int64_t *n) {
    size_t bytes = 0, mb = 0;
    char *f = test_slurp(path, &bytes), *m = test_slurp(mask_path, &mb);
    int32_t h[3] = {0, 0, -1};
    if (f && bytes >= 1024) memcpy(h, f, sizeof h);
    int ok = f && m && h[0] == 20240520 && h[2] >= 0 && bytes == 1024 + 2 * (size_t)h[2] && mb == (size_t)h[2];
    *n = ok ? h[2] : -1;
    *ids = (int32_t *)malloc(4 * (size_t)(ok ? h[2] + 1 : 1)), *mask = (uint8_t *)malloc(ok ? (size_t)h[2] + 1 : 1);
    for (int64_t i = 0; ok && i < h[2]; i++) {
        uint16_t v;
        memcpy(&v, f + 1024 + 2 * i, 2);
        (*ids)[i] = v, (*mask)[i] = (uint8_t)m[i];
    }
    free(f), free(m);
    return ok;
}

/* zt_tokenize_file of JSONL larger than a task (three tasks' worth: prompt/response lines, conversations through a
   chat template, blank lines) gives the same tokens and masks on 1 thread into one file as on 3 threads into shards
   of 1000 tokens (llm.c's names; the last shorter, none empty); a bad line far into the file is named by its number,
   the earlier of two, and no file is left half-written: the output there before stays, no .partial remains */
TEST(tokenize_file_threads_shards) {
    char dir[128], path[256], bad_path[256], out[256], mask[256], line[2048];
    snprintf(dir, sizeof dir, "/tmp/zt_tokenize_shards_%d", (int)getpid());
    CHECK(mkdir(dir, 0755) == 0);
    snprintf(path, sizeof path, "%s/sft.jsonl", dir), snprintf(bad_path, sizeof bad_path, "%s/bad.jsonl", dir);
    FILE *f = fopen(path, "w"), *fb = fopen(bad_path, "w");
    CHECK(f && fb);
    int lines = 0, bad1 = 0, bad2 = 0;
    for (long bytes = 0; bytes < 2600000;) {
        lines++;
        bytes += sft_line(line, sizeof line, lines, 0);
        fputs(line, f);
        if (!bad1 && bytes > 1500000 && lines % 7) bad1 = lines; /* in the second task */
        sft_line(line, sizeof line, lines, lines == bad1);
        fputs(line, fb);
    }
    bad2 = lines + 1;
    sft_line(line, sizeof line, bad2, 1), fputs(line, fb);
    fclose(f), fclose(fb);
    zt_tokenizer *t = NULL;
    CHECK_MSG(zt_tokenizer_load(&t, "tests/ref/hf/qwen2_tok") == ZT_OK, "%s", zt_last_error());
    size_t tl = 0;
    char *tmpl = test_slurp("tests/ref/chat/templates/qwen2.jinja", &tl);
    CHECK(tmpl && zt_tokenizer_set_chat_template(t, tmpl, tl, "qwen2.jinja") == ZT_OK);
    free(tmpl);
    zt_tokenize_desc d;
    memset(&d, 0, sizeof d);
    d.input = path, d.eot = zt_tokenizer_id(t, "<|endoftext|>"), d.threads = 1;
    snprintf(out, sizeof out, "%s/one.bin", dir), d.output = out;
    int64_t got1 = 0, got3 = 0, n = 0;
    CHECK_MSG(zt_tokenize_file(t, &d, &got1) == ZT_OK, "%s", zt_last_error());
    CHECK(got1 > 100000);
    int32_t *ids = NULL;
    uint8_t *m = NULL;
    snprintf(mask, sizeof mask, "%s/one.bin.mask", dir);
    CHECK(read_tokens(out, mask, &ids, &m, &n) && n == got1);
    int learned = 0;
    for (int64_t i = 0; i < n; i++) learned += m[i];
    CHECK(learned > 0 && learned < n); /* prompts out of the loss, responses in */

    snprintf(out, sizeof out, "%s/sh.bin", dir);
    d.output = out, d.threads = 3, d.shard_size = 1000;
    int64_t at = 0, files = (got1 + 999) / 1000;
    for (int k = 0; k < 4; k++) { /* an earlier run's shards past this one's last, one with its mask: removed */
        snprintf(line, sizeof line, "%s/sh_%06lld.bin%s", dir, (long long)files + (k + 1) / 2, k == 2 ? ".mask" : "");
        f = fopen(line, "w");
        CHECK(f != NULL);
        fclose(f);
    }
    CHECK_MSG(zt_tokenize_file(t, &d, &got3) == ZT_OK, "%s", zt_last_error());
    CHECK_EQ_INT(got3, got1);
    snprintf(line, sizeof line, "%s/sh_%06lld.bin.mask", dir, (long long)files + 1);
    CHECK_MSG(access(line, F_OK) != 0, "%s is left", line);
    snprintf(line, sizeof line, "%s/sh_%06lld.bin", dir, (long long)files + 2);
    CHECK_MSG(access(line, F_OK) != 0, "%s is left", line);
    for (int64_t k = 0; k <= files; k++) {
        char shard[256], shard_mask[256];
        int32_t *si = NULL;
        uint8_t *sm = NULL;
        int64_t sn = 0;
        snprintf(shard, sizeof shard, "%s/sh_%06lld.bin", dir, (long long)k);
        snprintf(shard_mask, sizeof shard_mask, "%s/sh_%06lld.bin.mask", dir, (long long)k);
        if (k == files) { /* none after the last */
            CHECK_MSG(access(shard, F_OK) != 0 && access(shard_mask, F_OK) != 0, "%s exists", shard);
            break;
        }
        CHECK_MSG(read_tokens(shard, shard_mask, &si, &sm, &sn), "%s", shard);
        CHECK_EQ_INT(sn, k + 1 < files ? 1000 : got1 - 1000 * (files - 1));
        for (int64_t i = 0; i < sn; i++)
            CHECK_MSG(si[i] == ids[at + i] && sm[i] == m[at + i], "%s: token %lld: %d/%d, one file's %d/%d", shard,
                      (long long)i, si[i], sm[i], ids[at + i], m[at + i]);
        at += sn;
        remove(shard), remove(shard_mask);
        free(si), free(sm);
    }
    CHECK_EQ_INT(at, got1);

    snprintf(out, sizeof out, "%s/bad.bin", dir); /* the output of before stays */
    f = fopen(out, "w");
    CHECK(f != NULL);
    fputs("before", f);
    fclose(f);
    d.input = bad_path, d.output = out, d.shard_size = 0;
    CHECK(zt_tokenize_file(t, &d, &got3) != ZT_OK);
    snprintf(line, sizeof line, "bad.jsonl:%d: \"prompt\" must be a string", bad1);
    CHECK_STR_CONTAINS(zt_last_error(), line);
    size_t kept_len = 0;
    char *kept = test_slurp(out, &kept_len);
    CHECK(kept && strcmp(kept, "before") == 0);
    free(kept);
    snprintf(mask, sizeof mask, "%s/bad.bin.partial", dir);
    CHECK(access(mask, F_OK) != 0);
    snprintf(mask, sizeof mask, "%s/bad.bin.mask.partial", dir);
    CHECK(access(mask, F_OK) != 0);
    snprintf(mask, sizeof mask, "%s/bad.bin.mask", dir);
    CHECK(access(mask, F_OK) != 0);
    free(ids), free(m);
    zt_tokenizer_free(t);
    const char *names[] = {"sft.jsonl", "bad.jsonl", "one.bin", "one.bin.mask", "bad.bin"};
    for (int i = 0; i < 5; i++) snprintf(path, sizeof path, "%s/%s", dir, names[i]), remove(path);
    CHECK_MSG(rmdir(dir) == 0, "%s is not empty", dir);
}

/* the files' names and what an earlier run left: a mask named sft.bin.mask sharded as sft_000000.bin.mask; a run
   without a mask removes the mask an earlier one wrote beside its tokens; a named prompt key every line must have */
TEST(tokenize_file_names) {
    char dir[128], path[256], out[256], mask[256], name[320];
    snprintf(dir, sizeof dir, "/tmp/zt_tokenize_names_%d", (int)getpid());
    CHECK(mkdir(dir, 0755) == 0);
    zt_tokenizer *t = NULL;
    CHECK_MSG(zt_tokenizer_load(&t, "tests/ref/tokenizers/llama2_eos") == ZT_OK, "%s", zt_last_error());
    snprintf(path, sizeof path, "%s/sft.jsonl", dir), snprintf(out, sizeof out, "%s/sft.bin", dir);
    snprintf(mask, sizeof mask, "%s/m.bin.mask", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    for (int k = 0; k < 20; k++) fprintf(f, "{\"q\": \"Question %d?\", \"a\": \" Answer %d.\", \"text\": \"x\"}\n", k, k);
    fclose(f);
    zt_tokenize_desc d;
    memset(&d, 0, sizeof d);
    d.input = path, d.output = out, d.mask = mask, d.eot = -1, d.prompt_key = "q", d.response_key = "a", d.shard_size = 50;
    int64_t got = 0;
    CHECK_MSG(zt_tokenize_file(t, &d, &got) == ZT_OK, "%s", zt_last_error());
    CHECK(got > 100);
    for (int64_t k = 0; k <= (got - 1) / 50; k++) {
        char shard[320];
        int32_t *ids = NULL;
        uint8_t *m = NULL;
        int64_t n = 0;
        snprintf(shard, sizeof shard, "%s/sft_%06lld.bin", dir, (long long)k);
        snprintf(name, sizeof name, "%s/m_%06lld.bin.mask", dir, (long long)k);
        CHECK_MSG(read_tokens(shard, name, &ids, &m, &n) && n == (got - 50 * k < 50 ? got - 50 * k : 50), "%s and %s", shard, name);
        free(ids), free(m);
        remove(shard), remove(name);
    }

    d.mask = NULL, d.shard_size = 0; /* one file and its mask, then the same without: the mask goes */
    CHECK_MSG(zt_tokenize_file(t, &d, &got) == ZT_OK, "%s", zt_last_error());
    snprintf(name, sizeof name, "%s.mask", out);
    CHECK(access(name, F_OK) == 0);
    d.no_mask = 1;
    CHECK_MSG(zt_tokenize_file(t, &d, &got) == ZT_OK, "%s", zt_last_error());
    CHECK_MSG(access(name, F_OK) != 0, "%s, an earlier run's, is left beside tokens it does not belong to", name);
    CHECK(access(out, F_OK) == 0);

    d.prompt_key = "question"; /* misspelt: an error, not the lines' "text" as documents */
    CHECK(zt_tokenize_file(t, &d, &got) != ZT_OK);
    CHECK_STR_CONTAINS(zt_last_error(), "sft.jsonl:1: \"question\" must be a string");
    zt_tokenizer_free(t);
    remove(out), remove(path);
    CHECK_MSG(rmdir(dir) == 0, "%s is not empty", dir);
}

/* JSON Lines of documents (pretraining sets: {"text": ...}, or --text_key's field), learned whole with the
   post-processor's tokens around each and the end-of-text after; *.json read as JSON Lines, an array refused; a line
   with none of the fields named */
TEST(tokenize_file_documents) {
    char dir[128], path[256], out[256], mask[256];
    snprintf(dir, sizeof dir, "/tmp/zt_tokenize_docs_%d", (int)getpid());
    CHECK(mkdir(dir, 0755) == 0);
    zt_tokenizer *t = NULL;
    CHECK_MSG(zt_tokenizer_load(&t, "tests/ref/tokenizers/llama2_eos") == ZT_OK, "%s", zt_last_error());
    int32_t bos = zt_tokenizer_id(t, "<s>"), eos = zt_tokenizer_id(t, "</s>"), a[64], b[64];
    int64_t na = zt_tokenize(t, "Hello world", 11, a, 64), nb = zt_tokenize(t, "Zweites Dokument 42", 19, b, 64);
    snprintf(path, sizeof path, "%s/docs.json", dir), snprintf(out, sizeof out, "%s/docs.bin", dir);
    snprintf(mask, sizeof mask, "%s/docs.bin.mask", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    /* a UTF-8 byte order mark before the first line is no text of it, as datasets' JSON reader takes it */
    fputs("\xef\xbb\xbf{\"text\": \"Hello world\", \"id\": 1}\n\n{\"id\": 2, \"text\": \"Zweites Dokument 42\"}\n", f);
    fclose(f);
    zt_tokenize_desc d;
    memset(&d, 0, sizeof d);
    d.input = path, d.output = out, d.eot = eos, d.special = 1;
    int64_t got = 0, n = 0;
    CHECK_MSG(zt_tokenize_file(t, &d, &got) == ZT_OK, "%s", zt_last_error());
    int32_t *ids = NULL;
    uint8_t *m = NULL;
    CHECK(read_tokens(out, mask, &ids, &m, &n) && n == got);
    CHECK_EQ_INT(got, (1 + na + 1 + 1) + (1 + nb + 1 + 1)); /* <s> text </s> (the post-processor's) and the eot */
    for (int64_t i = 0; i < n; i++) {
        int64_t j = i < na + 3 ? i : i - (na + 3);
        const int32_t *doc = i < na + 3 ? a : b;
        int64_t len = i < na + 3 ? na : nb;
        int32_t want = j == 0 ? bos : j <= len ? doc[j - 1] : eos;
        CHECK_MSG(ids[i] == want && m[i] == 1, "token %lld: %d (mask %d), want %d learned", (long long)i, ids[i], m[i], want);
    }
    free(ids), free(m);
    f = fopen(path, "w"); /* another field's name */
    CHECK(f != NULL);
    fputs("{\"content\": \"Hello world\"}\n", f);
    fclose(f);
    d.special = 0, d.eot = -1;
    CHECK(zt_tokenize_file(t, &d, &got) != ZT_OK);
    CHECK_STR_CONTAINS(zt_last_error(), "docs.json:1: a line needs \"text\" (a document, learned whole), \"prompt\" and");
    d.text_key = "content", d.no_mask = 1; /* every token learned: no mask file */
    remove(mask);
    CHECK_MSG(zt_tokenize_file(t, &d, &got) == ZT_OK, "%s", zt_last_error());
    CHECK_EQ_INT(got, na);
    CHECK(access(mask, F_OK) != 0);
    f = fopen(path, "w"); /* a number where the text is */
    CHECK(f != NULL);
    fputs("{\"content\": 7}\n", f);
    fclose(f);
    CHECK(zt_tokenize_file(t, &d, &got) != ZT_OK);
    CHECK_STR_CONTAINS(zt_last_error(), "docs.json:1: \"content\" must be a string (--text_key names the field)");
    f = fopen(path, "w"); /* a pretty-printed object: how a .json is read is said */
    CHECK(f != NULL);
    fputs("{\n  \"text\": \"Hello world\"\n}\n", f);
    fclose(f);
    CHECK(zt_tokenize_file(t, &d, &got) != ZT_OK);
    CHECK_STR_CONTAINS(zt_last_error(), "docs.json:1");
    CHECK_STR_CONTAINS(zt_last_error(), "(a .json input is read as JSON Lines: one object a line)");
    f = fopen(path, "w"); /* a JSON array: named, not read as text */
    CHECK(f != NULL);
    fputs(" [{\"text\": \"Hello world\"}]\n", f);
    fclose(f);
    CHECK(zt_tokenize_file(t, &d, &got) != ZT_OK);
    CHECK_STR_CONTAINS(zt_last_error(), "docs.json is a JSON array; zt_tokenize reads JSON Lines");
    zt_tokenizer_free(t);
    remove(path), remove(out), remove(mask);
    CHECK_MSG(rmdir(dir) == 0, "%s is not empty", dir);
}

/* a text file of one document in many tasks (of 4 KiB here, ZT_TEST_TOKENIZE_CHUNK), on 3 threads: cut where added
   tokens end (with lstrip, rstrip and single_word; Qwen2's NFC), or inside the text between them where the tokenizer's
   rules allow (after a newline before what is not white space for the hand-written byte-level rules, GPT-2's,
   LLaMA-3's and Qwen2's; before a space for a SentencePiece-style vocabulary of words, with LLaMA-2's ▁ before every
   segment), or not at all (the fixtures Mistral's and Gemma's, whose tokens have ▁ inside; o200k's regular
   expressions): the same ids as zt_tokenize over the whole text, the post-processor's tokens and the end-of-text at
   its two ends only */
/* tests/ref/tokenizers/FROM's tokenizer.json with the first `edit[k][0]` in it replaced by edit[k][1] (up to three
   edits, the first NULL ending them), as DIR/tokenizer.json */
static void tokenizer_variant(const char *from, const char *dir, const char *const edit[3][2]) {
    char path[256];
    snprintf(path, sizeof path, "tests/ref/tokenizers/%s/tokenizer.json", from);
    size_t len = 0;
    char *json = test_slurp(path, &len);
    CHECK(json != NULL);
    for (int k = 0; k < 3 && edit[k][0]; k++) {
        const char *where = strstr(json, edit[k][0]);
        CHECK_MSG(where != NULL, "%s holds no %s", path, edit[k][0]);
        size_t head = (size_t)(where - json), old = strlen(edit[k][0]), more = strlen(edit[k][1]);
        char *edited = (char *)malloc(len - old + more + 1);
        CHECK(edited != NULL);
        memcpy(edited, json, head), memcpy(edited + head, edit[k][1], more);
        memcpy(edited + head + more, json + head + old, len - head - old + 1);
        free(json);
        json = edited, len = len - old + more;
    }
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(json, 1, len, f) == len);
    fclose(f);
    free(json);
}

/* a Metaspace without "split" (files written before the key) splits, the tokenizers library's default: the ids of
   "split": true on every case of the mistral fixture (which has false) */
TEST(tokenizer_metaspace_split_defaults_to_true) {
    static const char *const absent[3][2] = {{"\"prepend_scheme\": \"first\",\n    \"split\": false", "\"prepend_scheme\": \"first\""}};
    static const char *const on[3][2] = {{"\"split\": false", "\"split\": true"}};
    char dir[2][128], path[320], line[65536], text[16384];
    zt_tokenizer *t[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        snprintf(dir[k], sizeof dir[k], "/tmp/zt_metaspace_%d_%d", (int)getpid(), k);
        CHECK(mkdir(dir[k], 0755) == 0);
        tokenizer_variant("mistral", dir[k], k ? on : absent);
        CHECK_MSG(zt_tokenizer_load(&t[k], dir[k]) == ZT_OK, "%s: %s", dir[k], zt_last_error());
    }
    FILE *f = fopen("tests/ref/tokenizers/mistral/cases.txt", "r");
    CHECK(f != NULL);
    int32_t a[4096], b[4096];
    int differ = 0, cases = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] != 'T') continue;
        size_t n = test_unhex(line + 2, text);
        int64_t na = zt_tokenize(t[0], text, n, a, 4096), nb = zt_tokenize(t[1], text, n, b, 4096);
        differ += na != nb || memcmp(a, b, sizeof(int32_t) * (size_t)(na < 4096 ? na : 4096)) != 0;
        cases++;
    }
    fclose(f);
    CHECK_MSG(cases > 20 && differ == 0, "%d of %d cases differ", differ, cases);
    for (int k = 0; k < 2; k++) {
        zt_tokenizer_free(t[k]);
        snprintf(path, sizeof path, "%s/tokenizer.json", dir[k]);
        remove(path);
        rmdir(dir[k]);
    }
}

/* NFC in a Sequence of normalizers, first or last (the tokenizers library gives the same ids either way: NFC composes
   nothing with a space or ▁), with LLaMA-2's Prepend and Replace: the same ids on every case of the llama2 fixture
   (zt once stopped reading the Sequence at NFC, and no ▁ was put first); and what zt does not read after NFC, or a
   Replace of other text, refused by name */
TEST(tokenizer_normalizer_sequence) {
    static const char *const list = "\"normalizers\": [";
    static const char *const nfc_first[3][2] = {{list, "\"normalizers\": [{\"type\": \"NFC\"},"}};
    static const char *const nfc_last[3][2] = {
        {"\"content\": \"\xe2\x96\x81\"\n      }", "\"content\": \"\xe2\x96\x81\"}, {\"type\": \"NFC\"}"}};
    static const char *const lower[3][2] = {{list, "\"normalizers\": [{\"type\": \"NFC\"}, {\"type\": \"Lowercase\"},"}};
    static const char *const tab[3][2] = {{"\"String\": \" \"", "\"String\": \"\\t\""}};
    char dir[2][128], path[320], line[65536], text[16384];
    zt_tokenizer *t[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        snprintf(dir[k], sizeof dir[k], "/tmp/zt_normalizers_%d_%d", (int)getpid(), k);
        CHECK(mkdir(dir[k], 0755) == 0);
        tokenizer_variant("llama2", dir[k], k ? nfc_last : nfc_first);
        CHECK_MSG(zt_tokenizer_load(&t[k], dir[k]) == ZT_OK, "%s: %s", dir[k], zt_last_error());
    }
    FILE *f = fopen("tests/ref/tokenizers/llama2/cases.txt", "r");
    CHECK(f != NULL);
    int cases = 0, ascii = 0;
    size_t n = 0;
    int32_t a[4096], b[4096];
    int64_t na = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == 'T') { /* a text: NFC first and last the same */
            n = test_unhex(line + 2, text);
            na = zt_tokenize(t[0], text, n, a, 4096);
            int64_t nb = zt_tokenize(t[1], text, n, b, 4096);
            CHECK(na >= 0 && na <= 4096);
            CHECK_MSG(na == nb && memcmp(a, b, sizeof(int32_t) * (size_t)na) == 0, "case %d: NFC first and last differ", cases);
            cases++;
        } else if (line[0] == 'I') { /* the library's ids without NFC: the same where NFC changes nothing (ASCII) */
            int plain = 1;
            for (size_t i = 0; i < n; i++) plain &= (uint8_t)text[i] < 0x80;
            int64_t k = 0;
            for (char *p = line + 1, *end; plain && *p && *p != '\n'; p = end, k++) {
                long v = strtol(p, &end, 10);
                if (end == p) break;
                CHECK_MSG(k < na && a[k] == v, "case %d: id %lld is %d, the library's %ld", cases, (long long)k,
                          k < na ? a[k] : -1, v);
            }
            CHECK(!plain || k == na);
            ascii += plain;
        }
    }
    fclose(f);
    CHECK(ascii >= 5);
    CHECK(cases > 20);
    for (int k = 0; k < 2; k++) {
        zt_tokenizer_free(t[k]);
        zt_tokenizer *bad = NULL;
        tokenizer_variant("llama2", dir[k], k ? tab : lower);
        CHECK(zt_tokenizer_load(&bad, dir[k]) == ZT_ERROR_UNSUPPORTED);
        CHECK_STR_CONTAINS(zt_last_error(), "normalizer \"Sequence\" is not one zt reads");
        snprintf(path, sizeof path, "%s/tokenizer.json", dir[k]);
        remove(path);
        CHECK(rmdir(dir[k]) == 0);
    }
}

#define ADDED_TOKENS "\"added_tokens\": ["
#define GPT2_MERGE(a, b) {"\"merges\": [", "\"merges\": [[\"" a "\", \"" b "\"],"}, {"\"vocab\": {", "\"vocab\": {\"" a b "\": 600,"}

/* the cut's edges, each once wrong: an added token with single_word that ends where zt would cut (the character after
   it decides whether it is one); an lstrip one whose reach back crosses a tab before the space zt would cut at, past
   the window zt scans; a vocabulary that merges ▁▁, so that a ▁ in the text joins the space after it; GPT-2's
   add_prefix_space, which puts a space before a segment's first newline (merged with it: ĠĊ); a stray byte before a
   newline that stands for U+0085 or U+00A0, white space (merged with it: ħĊ, łĊ); an lstrip token past the window
   after a newline and a stray byte. Random texts of the characters that meet there (and, first, the one text past the
   window), cut every 16 bytes, give zt_tokenize_special's ids of the whole. */
TEST(tokenize_file_cut_edges) {
    static const struct { const char *from, *edit[3][2], *chars[8], *past_window; } cases[] = {
        {"gpt2",
         {{ADDED_TOKENS, ADDED_TOKENS "{\"id\": 600, \"content\": \"<|separator|>\\n\", \"single_word\": true, \"lstrip\": "
                         "false, \"rstrip\": false, \"normalized\": false, \"special\": true},"}},
         {"a", "b", " ", "\n", "\n", "<|separator|>\n", "\t", "x\n"}, NULL},
        {"llama2_words",
         {{ADDED_TOKENS, ADDED_TOKENS "{\"id\": 700, \"content\": \"<sep>\", \"single_word\": false, \"lstrip\": true, "
                         "\"rstrip\": false, \"normalized\": false, \"special\": true},"}},
         {"a", "b", "lo", " ", "\t", "\n", "\xe2\x96\x81", "<sep>"}, "\t <sep> tail"},
        {"llama2_words",
         {{"\"merges\": [", "\"merges\": [[\"\xe2\x96\x81\", \"\xe2\x96\x81\"],"},
          {"\"vocab\": {", "\"vocab\": {\"\xe2\x96\x81\xe2\x96\x81\": 700,"}},
         {"a", "lo", " ", " ", "\t", "\xe2\x96\x81", "\n", "e\xcc\x81"}, NULL},
        {"gpt2",
         {{"\"add_prefix_space\": false", "\"add_prefix_space\": true"}, GPT2_MERGE("\xc4\xa0", "\xc4\x8a")},
         {"a", "c", " ", "\n", "\n", "<|endoftext|>", "\t", "\n\n"}, NULL},
        {"gpt2", {GPT2_MERGE("\xc4\xa7", "\xc4\x8a")}, {"a", "b", " ", "\n", "\x85", "\xa0", "\x81", "\xc3\xa9"}, NULL},
        {"gpt2", {GPT2_MERGE("\xc5\x82", "\xc4\x8a")}, {"a", ".", " ", "\n", "\x85", "\xa0", "\x81", "\xe3\x80\x80"}, NULL},
        {"added_flags", {{NULL, NULL}}, {"a", " ", "\n", "\x81", "\x85", "<|user|>", "<mask>", "\t"}, "\n\x81<|user|>"}};
    char dir[128], path[256], out[256];
    snprintf(dir, sizeof dir, "/tmp/zt_tokenize_edges_%d", (int)getpid());
    CHECK(mkdir(dir, 0755) == 0);
    snprintf(path, sizeof path, "%s/corpus.txt", dir), snprintf(out, sizeof out, "%s/corpus.bin", dir);
    static char text[8192];
    static int32_t want[8192];
    uint64_t rng = 7;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tokenizer_variant(cases[c].from, dir, cases[c].edit);
        zt_tokenizer *t = NULL;
        CHECK_MSG(zt_tokenizer_load(&t, dir) == ZT_OK, "variant %zu of %s: %s", c, cases[c].from, zt_last_error());
        for (int k = 0; k < 150; k++) {
            size_t len = 0;
            int past = k == 0 && cases[c].past_window;
            if (past) { /* the window ends at 16 + 4096: a cut just before it, the token at it */
                memset(text, 'a', 4110), len = 4110;
                memcpy(text + len, cases[c].past_window, strlen(cases[c].past_window)), len += strlen(cases[c].past_window);
            }
            for (int m = past ? 0 : 5 + (int)((rng >> 33) % 200); m > 0; m--) {
                rng = rng * 6364136223846793005ull + 1442695040888963407ull;
                const char *s = cases[c].chars[(rng >> 33) % 8];
                memcpy(text + len, s, strlen(s)), len += strlen(s);
            }
            FILE *f = fopen(path, "wb");
            CHECK(f && fwrite(text, 1, len, f) == len);
            fclose(f);
            int64_t n = zt_tokenize_special(t, text, len, want, 8191), got = 0;
            want[n++] = 1;
            zt_tokenize_desc d;
            memset(&d, 0, sizeof d);
            d.input = path, d.output = out, d.eot = 1, d.special = 1, d.threads = 2;
            setenv("ZT_TEST_TOKENIZE_CHUNK", "16", 1);
            zt_result r = zt_tokenize_file(t, &d, &got);
            unsetenv("ZT_TEST_TOKENIZE_CHUNK");
            CHECK_MSG(r == ZT_OK, "%s: %s", cases[c].from, zt_last_error());
            size_t bytes = 0;
            char *file = test_slurp(out, &bytes);
            CHECK(file && bytes == 1024 + 2 * (size_t)got);
            int64_t first = -1;
            for (int64_t i = 0; first < 0 && i < (got > n ? got : n); i++) {
                uint16_t v = 0;
                if (i < got) memcpy(&v, file + 1024 + 2 * i, 2);
                if (i >= got || i >= n || v != want[i]) first = i;
            }
            CHECK_MSG(first < 0, "%s, text %d (%zu bytes): %lld ids, the whole text's %lld; the first to differ is %lld",
                      cases[c].from, k, len, (long long)got, (long long)n, (long long)first);
            free(file);
        }
        zt_tokenizer_free(t);
        char tj[256];
        snprintf(tj, sizeof tj, "%s/tokenizer.json", dir);
        remove(tj);
    }
    remove(path), remove(out);
    CHECK_MSG(rmdir(dir) == 0, "%s is not empty", dir);
}

TEST(tokenize_file_text_parts) {
    static const struct { const char *name, *sep[3]; } cases[] = {
        {"added_flags", {" <|end|>  ", "\n <mask> ", " cat "}},
        {"llama2", {"</s>", " <s> ", "</s>\n"}},
        {"qwen2", {"<|endoftext|>", "\ne\xcc\x81<|endoftext|>\xcc\x81", "<|im_start|>"}},
        {"gpt2", {"\n", "\n\n", " \n"}}, {"llama3", {"\n", "\t\n", ".\n"}}, {"qwen2", {"\n", "\n\n", "\xcc\x81\n"}},
        {"llama2_words", {"\n", " ", "  "}}, {"llama2_words", {"</s>", " ", " <s>"}}, {"mistral", {" ", "\n", "  "}},
        {"gemma", {"\n", "  ", " "}},
        {"o200k", {"\n", " ", "\n\n"}}};
    char dir[128], path[256], out[256], line[2048];
    snprintf(dir, sizeof dir, "/tmp/zt_tokenize_parts_%d", (int)getpid());
    CHECK(mkdir(dir, 0755) == 0);
    snprintf(path, sizeof path, "%s/corpus.txt", dir), snprintf(out, sizeof out, "%s/corpus.bin", dir);
    size_t cap = 1 << 20, len = 0;
    char *text = (char *)malloc(cap);
    int32_t *want = (int32_t *)malloc(sizeof(int32_t) * cap);
    CHECK(text && want);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char tok[128];
        snprintf(tok, sizeof tok, "tests/ref/tokenizers/%s", cases[c].name);
        zt_tokenizer *t = NULL;
        CHECK_MSG(zt_tokenizer_load(&t, tok) == ZT_OK, "%s: %s", tok, zt_last_error());
        len = 0;
        for (int L = 1; len < (3u << 17); L++) { /* documents of prose between the separators */
            int n = sft_line(line, sizeof line, L, 0);
            memcpy(text + len, line, (size_t)n), len += (size_t)n;
            const char *sep = cases[c].sep[L % 3];
            memcpy(text + len, sep, strlen(sep)), len += strlen(sep);
        }
        FILE *f = fopen(path, "wb");
        CHECK(f && fwrite(text, 1, len, f) == len);
        fclose(f);
        int32_t eot = (int32_t)(zt_tokenizer_vocab(t) - 1);
        int64_t n = zt_tokenize_special(t, text, len, want, (int64_t)cap), got = 0, fn = 0;
        CHECK(n > 0 && n < (int64_t)cap);
        want[n++] = eot;
        zt_tokenize_desc d;
        memset(&d, 0, sizeof d);
        d.input = path, d.output = out, d.eot = eot, d.special = 1, d.threads = 3;
        setenv("ZT_TEST_TOKENIZE_CHUNK", "4096", 1);
        zt_result r = zt_tokenize_file(t, &d, &got);
        unsetenv("ZT_TEST_TOKENIZE_CHUNK");
        CHECK_MSG(r == ZT_OK, "%s: %s", cases[c].name, zt_last_error());
        CHECK_EQ_INT(got, n);
        size_t bytes = 0;
        char *file = test_slurp(out, &bytes);
        int32_t h[3] = {0, 0, 0};
        if (file && bytes >= 1024) memcpy(h, file, sizeof h);
        CHECK(file && h[2] == n && bytes == 1024 + 2 * (size_t)n);
        for (int64_t i = 0; i < n; i++) {
            uint16_t v;
            memcpy(&v, file + 1024 + 2 * i, 2);
            if (v != want[i]) fn++;
            CHECK_MSG(fn == 0, "%s: token %lld of %lld: %d, zt_tokenize's %d", cases[c].name, (long long)i, (long long)n, v,
                      want[i]);
        }
        free(file);
        zt_tokenizer_free(t);
    }
    free(text), free(want);
    remove(path), remove(out);
    CHECK_MSG(rmdir(dir) == 0, "%s is not empty", dir);
}

/* a text's documents as run_clm.py gets them from datasets' text loader (tests/ref/make_sample_by_fixture.py): each
   line (its newline kept or not), each paragraph, or the whole, \r\n and \r read as \n, with and without the
   special tokens; the same ids in one task as in tasks of 1 to 24 bytes on 3 threads (cuts inside runs of newlines) */
TEST(tokenize_file_sample_by) {
    char out[128], line[16384];
    snprintf(out, sizeof out, "/tmp/zt_sample_by_%d.bin", (int)getpid());
    FILE *f = fopen("tests/ref/sample_by/ids.txt", "r");
    CHECK(f != NULL);
    int cases = 0;
    while (f && fgets(line, sizeof line, f)) {
        char name[64], by[16], tok[128];
        int keep = 0, special = 0, at = 0;
        CHECK(sscanf(line, "%63s %15s %d %d%n", name, by, &keep, &special, &at) == 4);
        int32_t want[2048];
        int64_t n = 0;
        for (char *p = line + at, *end; n < 2048; p = end) {
            long v = strtol(p, &end, 10);
            if (end == p) break;
            want[n++] = (int32_t)v;
        }
        snprintf(tok, sizeof tok, "tests/ref/tokenizers/%s", name);
        zt_tokenizer *t = NULL;
        CHECK_MSG(zt_tokenizer_load(&t, tok) == ZT_OK, "%s: %s", tok, zt_last_error());
        zt_tokenize_desc d;
        memset(&d, 0, sizeof d);
        d.input = "tests/ref/sample_by/input.txt", d.output = out, d.eot = -1, d.special = special;
        d.strip_linebreaks = !keep, d.threads = 1;
        d.sample_by = strcmp(by, "line") == 0 ? ZT_SAMPLE_LINE : strcmp(by, "paragraph") == 0 ? ZT_SAMPLE_PARAGRAPH
                                                                                                : ZT_SAMPLE_DOCUMENT;
        for (int chunk = 0; chunk <= 24; chunk++) {
            char c[16];
            snprintf(c, sizeof c, "%d", chunk);
            if (chunk) setenv("ZT_TEST_TOKENIZE_CHUNK", c, 1), d.threads = 3;
            int64_t got = 0, first = -1;
            zt_result r = zt_tokenize_file(t, &d, &got);
            unsetenv("ZT_TEST_TOKENIZE_CHUNK");
            CHECK_MSG(r == ZT_OK, "%s %s: %s", name, by, zt_last_error());
            size_t bytes = 0;
            char *file = test_slurp(out, &bytes);
            CHECK(file && bytes == 1024 + 2 * (size_t)got);
            for (int64_t i = 0; first < 0 && i < (got > n ? got : n); i++) {
                uint16_t v = 0;
                if (i < got) memcpy(&v, file + 1024 + 2 * i, 2);
                if (i >= got || i >= n || v != want[i]) first = i;
            }
            free(file);
            CHECK_MSG(first < 0, "%s by %s (keep_linebreaks %d, special %d, tasks of %d bytes): %lld ids, datasets' and "
                      "the library's %lld; the first to differ is %lld", name, by, keep, special, chunk, (long long)got,
                      (long long)n, (long long)first);
        }
        zt_tokenizer_free(t);
        cases++;
    }
    if (f) fclose(f);
    CHECK_EQ_INT(cases, 8);
    zt_tokenizer *t = NULL; /* what the sampling is not for, named */
    CHECK(zt_tokenizer_load(&t, "tests/ref/tokenizers/gpt2") == ZT_OK);
    zt_tokenize_desc d;
    memset(&d, 0, sizeof d);
    d.input = "tests/ref/instructions.jsonl", d.output = out, d.eot = -1, d.sample_by = ZT_SAMPLE_LINE;
    CHECK(zt_tokenize_file(t, &d, NULL) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "is JSON Lines, one example a line");
    d.input = "tests/ref/sample_by/input.txt", d.sample_by = ZT_SAMPLE_PARAGRAPH, d.strip_linebreaks = 1;
    CHECK(zt_tokenize_file(t, &d, NULL) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "strip_linebreaks is for a text sampled by line");
    d.sample_by = (zt_sample_by)7, d.strip_linebreaks = 0;
    CHECK(zt_tokenize_file(t, &d, NULL) == ZT_ERROR_INVALID);
    zt_tokenizer_free(t);
    remove(out);
}
