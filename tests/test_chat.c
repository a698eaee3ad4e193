/* tests/test_chat.c - chat templates against transformers (tests/ref/make_chat_fixtures.py): the text
   its Jinja environment renders for the published templates of Qwen2.5, Qwen3, Llama-3.1, Llama-2,
   Mistral, Zephyr, Gemma and Phi-3 and for small templates that press on one corner of Jinja each, the
   {% generation %} spans, and the ids and assistant masks of whole conversations through the fixture
   tokenizers; then the tokenizer's own files, zt_tokenize_file's JSONL, and hostile templates. */
#define _POSIX_C_SOURCE 200809L
#include "test.h"
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHAT_DIR "tests/ref/chat"

static char *unhex_alloc(const char *h, size_t *n) {
    size_t len = strcspn(h, "\n") / 2;
    char *out = (char *)malloc(len + 1);
    for (size_t i = 0; i < len; i++) {
        unsigned v = 0;
        sscanf(h + 2 * i, "%2x", &v);
        out[i] = (char)v;
    }
    out[len] = 0;
    *n = len;
    return out;
}


static zt_chat_template *load_template(const char *name) {
    char path[256];
    snprintf(path, sizeof path, CHAT_DIR "/templates/%.64s.jinja", name);
    size_t n;
    char *src = test_slurp(path, &n);
    if (!src) return NULL;
    zt_chat_template *c = NULL;
    if (zt_chat_template_compile(&c, src, n, path) != ZT_OK) c = NULL;
    free(src);
    return c;
}

/* the first difference of two texts, for the message */
static void where_differ(const char *a, size_t na, const char *b, size_t nb, char *out, size_t cap) {
    size_t i = 0;
    while (i < na && i < nb && a[i] == b[i]) i++;
    size_t from = i > 30 ? i - 30 : 0;
    snprintf(out, cap, "at byte %zu: zt \"%.*s\" | transformers \"%.*s\"", i, (int)(na - from < 80 ? na - from : 80), a + from,
             (int)(nb - from < 80 ? nb - from : 80), b + from);
}

TEST(chat_templates_render_as_transformers) {
    FILE *f = fopen(CHAT_DIR "/cases.txt", "r");
    CHECK(f != NULL);
    static char line[1 << 20];
    zt_chat_template *c = NULL;
    char *ctx = NULL;
    size_t ctx_n = 0;
    zt_chat_text out;
    memset(&out, 0, sizeof out);
    int rendered = 0, refused = 0, ok = 0, cases = 0;
    char label[300] = "";
    while (fgets(line, sizeof line, f) && !zt_test_failed()) {
        size_t n;
        if (line[0] == 'K') break; /* the tokenized cases: the next test */
        if (line[0] == 'X' || line[0] == 'J') {
            zt_chat_template_free(c);
            c = NULL;
            if (line[0] == 'X') {
                line[strcspn(line, "\n")] = 0;
                snprintf(label, sizeof label, "%.64s", line + 2);
                c = load_template(label);
                CHECK_MSG(c, "%s: %s", label, zt_last_error());
            } else {
                char *src = unhex_alloc(line + 2, &n);
                snprintf(label, sizeof label, "inline \"%.60s\"", src);
                zt_result r = zt_chat_template_compile(&c, src, n, "inline");
                free(src);
                CHECK_MSG(r == ZT_OK, "%s: %s", label, zt_last_error());
            }
        } else if (line[0] == 'C') {
            free(ctx);
            ctx = unhex_alloc(line + 2, &ctx_n);
            cases++;
            ok = zt_chat_render(c, ctx, ctx_n, &out) == ZT_OK;
        } else if (line[0] == 'T') {
            char *want = unhex_alloc(line + 2, &n), diff[400] = "";
            CHECK_MSG(ok, "%s: zt refused what transformers renders: %s", label, zt_last_error());
            if (out.len != n || memcmp(out.text, want, n) != 0) where_differ(out.text, out.len, want, n, diff, sizeof diff);
            free(want);
            CHECK_MSG(!diff[0], "%s (case %d): %s", label, cases, diff);
            rendered++;
        } else if (line[0] == 'E') {
            char *want = unhex_alloc(line + 2, &n);
            int same = !ok && strstr(zt_last_error(), want) != NULL;
            CHECK_MSG(same, "%s: transformers refuses with \"%s\"; zt %s%s", label, want, ok ? "renders it" : "says ",
                      ok ? "" : zt_last_error());
            free(want);
            refused++;
        } else if (line[0] == 'S') {
            int64_t a, b;
            int k = 0;
            for (char *p = line + 1, *end; sscanf(p, "%lld %lld", (long long *)&a, (long long *)&b) == 2; p = end, k++) {
                CHECK_MSG(k < out.n_spans && out.spans[2 * k] == a && out.spans[2 * k + 1] == b,
                          "%s: generation span %d is not [%lld, %lld)", label, k, (long long)a, (long long)b);
                strtoll(p, &end, 10);
                strtoll(end, &end, 10);
            }
            CHECK_MSG(k == out.n_spans, "%s: %d generation spans, transformers %d", label, out.n_spans, k);
        }
    }
    fclose(f);
    free(ctx);
    zt_chat_template_free(c);
    if (!zt_test_failed()) CHECK_MSG(rendered >= 40 && refused >= 5, "%d rendered, %d refused", rendered, refused);
}

/* the ids and mask of one conversation, against the fixture's */
static void check_tokenized(zt_tokenizer *t, const char *ctx, size_t n, const char *want_ids, const char *want_mask,
                            const char *label) {
    static int32_t ids[8192];
    static uint8_t mask[8192];
    int64_t count = 0;
    zt_result r = zt_tokenize_chat(t, ctx, n, ids, mask, 8192, &count);
    CHECK_MSG(r == ZT_OK, "%s: %s", label, zt_last_error());
    int64_t k = 0;
    for (const char *p = want_ids, *end; *p && *p != '\n'; p = end, k++) {
        long v = strtol(p, (char **)&end, 10);
        if (end == p) break;
        CHECK_MSG(k < count && ids[k] == v, "%s: id %lld is %d, transformers %ld", label, (long long)k, k < count ? ids[k] : -1, v);
    }
    CHECK_MSG(k == count, "%s: %lld ids, transformers %lld", label, (long long)count, (long long)k);
    for (int64_t i = 0; i < count; i++)
        CHECK_MSG(mask[i] == want_mask[i] - '0', "%s: token %lld (id %d) is %s, transformers %s", label, (long long)i, ids[i],
                  mask[i] ? "learned" : "not learned", want_mask[i] == '1' ? "learns it" : "does not");
}

/* a conversation the template rewrites, as zt_tokenize_file makes it with an end-of-text id: each
   assistant turn an example, eot between them and after the last */
static void check_unrolled(zt_tokenizer *t, const char *ctx, size_t ctx_n, int32_t eot, const char *want_ids,
                           const char *want_mask, const char *label) {
    char in[128], out[160], maskp[176];
    snprintf(in, sizeof in, "/tmp/zt_chat_unrolled_%d.jsonl", (int)getpid());
    snprintf(out, sizeof out, "%s.bin", in), snprintf(maskp, sizeof maskp, "%s.mask", out);
    FILE *f = fopen(in, "wb");
    CHECK(f && fwrite(ctx, 1, ctx_n, f) == ctx_n && fputc('\n', f) == '\n' && fclose(f) == 0);
    zt_tokenize_desc d;
    memset(&d, 0, sizeof d);
    d.input = in, d.output = out, d.eot = eot;
    int64_t got = 0;
    CHECK_MSG(zt_tokenize_file(t, &d, &got) == ZT_OK, "%s: %s", label, zt_last_error());
    size_t bytes = 0, n = 0;
    char *file = test_slurp(out, &bytes), *m = test_slurp(maskp, &n);
    CHECK(file && m && bytes == 1024 + 2 * (size_t)got && n == (size_t)got);
    int64_t k = 0;
    for (const char *p = want_ids, *end; file && m; p = end, k++) {
        long v = strtol(p, (char **)&end, 10);
        if (end == p) break;
        uint16_t id = 0;
        if (k < got) memcpy(&id, file + 1024 + 2 * k, 2);
        CHECK_MSG(k < got && id == v && (uint8_t)m[k] == want_mask[k] - '0', "%s, unrolled: token %lld is id %d (%s), "
                  "transformers %ld (%s)", label, (long long)k, id, k < got && m[k] ? "learned" : "not learned", v,
                  want_mask[k] == '1' ? "learned" : "not learned");
    }
    CHECK_MSG(k == got, "%s, unrolled: %lld tokens, transformers %lld", label, (long long)got, (long long)k);
    free(file), free(m);
    remove(in), remove(out), remove(maskp);
}

TEST(chat_tokenized_as_apply_chat_template) {
    FILE *f = fopen(CHAT_DIR "/cases.txt", "r");
    CHECK(f != NULL);
    static char line[1 << 20], ids_line[1 << 16];
    zt_tokenizer *t = NULL;
    char *ctx = NULL, label[300] = "";
    size_t ctx_n = 0;
    int started = 0, checked = 0, refused = 0, unrolled = 0;
    int32_t eot = -1; /* a U case: unrolled with this end-of-text id */
    while (fgets(line, sizeof line, f) && !zt_test_failed()) {
        if (line[0] == 'K' || line[0] == 'U') {
            started = 1;
            char tok[64], name[64], path[256];
            eot = -1;
            CHECK(sscanf(line + 2, "%63s %63s %d", tok, name, &eot) >= 2);
            snprintf(label, sizeof label, "%s tokenizer, %s template", tok, name);
            zt_tokenizer_free(t);
            snprintf(path, sizeof path, "tests/ref/tokenizers/%s", tok);
            CHECK_MSG(zt_tokenizer_load(&t, path) == ZT_OK, "%s", zt_last_error());
            snprintf(path, sizeof path, CHAT_DIR "/templates/%s.jinja", name);
            size_t n;
            char *src = test_slurp(path, &n);
            CHECK(src != NULL);
            CHECK(zt_tokenizer_set_chat_template(t, src, n, path) == ZT_OK);
            free(src);
        } else if (started && line[0] == 'C') {
            free(ctx);
            ctx = unhex_alloc(line + 2, &ctx_n);
        } else if (started && line[0] == 'I') {
            CHECK(strlen(line + 2) < sizeof ids_line);
            memcpy(ids_line, line + 2, strlen(line + 2) + 1);
        } else if (started && line[0] == 'M' && eot >= 0) {
            check_unrolled(t, ctx, ctx_n, eot, ids_line, line + 2, label);
            unrolled++;
        } else if (started && line[0] == 'M') {
            check_tokenized(t, ctx, ctx_n, ids_line, line + 2, label);
            checked++;
        } else if (started && line[0] == 'E') {
            int64_t count = 0;
            static int32_t ids[8192];
            static uint8_t mask[8192];
            CHECK_MSG(zt_tokenize_chat(t, ctx, ctx_n, ids, mask, 8192, &count) != ZT_OK, "%s: zt marks the turns of a "
                      "conversation the template rewrites", label);
            CHECK_STR_CONTAINS(zt_last_error(), "assistant message 1 differently");
            refused++;
        }
    }
    fclose(f);
    free(ctx);
    zt_tokenizer_free(t);
    if (!zt_test_failed())
        CHECK_MSG(checked >= 9 && refused >= 1 && unrolled >= 1, "%d checked, %d refused, %d unrolled", checked, refused,
                  unrolled);
}

static void write_file(const char *path, const char *text, size_t n) {
    FILE *f = fopen(path, "wb");
    if (f) fwrite(text, 1, n, f), fclose(f);
}

/* the JSON string of n bytes of text, quotes included */
static char *json_string(const char *s, size_t n) {
    char *out = (char *)malloc(6 * n + 3), *o = out;
    *o++ = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') *o++ = '\\', *o++ = (char)c;
        else if (c == '\n') *o++ = '\\', *o++ = 'n';
        else if (c < 0x20) o += sprintf(o, "\\u%04x", c);
        else *o++ = (char)c;
    }
    *o++ = '"', *o = 0;
    return out;
}

/* tokenizer_config.json's template and special tokens (an AddedToken object for bos), chat_template.jinja
   over it, and zt_tokenize_file: JSONL lines with "messages" beside prompt/response lines */
TEST(chat_from_the_tokenizers_files_and_jsonl) {
    char dir[128], path[256];
    snprintf(dir, sizeof dir, "/tmp/zt_chat_%d", (int)getpid());
    mkdir(dir, 0755);
    size_t n = 0, tn = 0;
    char *tok = test_slurp("tests/ref/tokenizers/qwen2/tokenizer.json", &tn), *tpl = test_slurp(CHAT_DIR "/templates/qwen2_generation.jinja", &n);
    CHECK(tok && tpl);
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    write_file(path, tok, tn);
    const char *special = "{{ bos_token }}[{{ eos_token }}]{{ pad_token }}|";
    char *tj = json_string(special, strlen(special));
    char cfg[4096];
    snprintf(cfg, sizeof cfg, "{\"bos_token\": {\"content\": \"<|endoftext|>\", \"lstrip\": false}, \"eos_token\": \"<|im_end|>\", "
             "\"pad_token\": null, \"chat_template\": %s}", tj);
    free(tj);
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    write_file(path, cfg, strlen(cfg));
    zt_tokenizer *t = NULL;
    CHECK_MSG(zt_tokenizer_load(&t, dir) == ZT_OK, "%s", zt_last_error());
    zt_chat_template *c = zt_tokenizer_chat_template(t);
    CHECK_MSG(c != NULL, "%s", zt_last_error());
    int32_t ids[4096];
    uint8_t mask[4096];
    int64_t count = 0;
    const char *conv = "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}";
    CHECK_MSG(zt_tokenize_chat(t, conv, strlen(conv), ids, mask, 4096, &count) == ZT_OK, "%s", zt_last_error());
    char text[256];
    zt_detokenize(t, ids, count, text, sizeof text);
    CHECK_MSG(strcmp(text, "<|endoftext|>[<|im_end|>]|") == 0, "the special tokens render as \"%s\"", text);
    zt_tokenizer_free(t);

    snprintf(path, sizeof path, "%s/chat_template.jinja", dir); /* the file wins over tokenizer_config.json */
    write_file(path, tpl, n);
    CHECK_MSG(zt_tokenizer_load(&t, dir) == ZT_OK, "%s", zt_last_error());
    const char *a = "{\"messages\": [{\"role\": \"user\", \"content\": \"2+2?\"}, {\"role\": \"assistant\", \"content\": \"4\"}]}";
    const char *b = "{\"messages\": [{\"role\": \"system\", \"content\": \"be brief\", \"name\": null}, {\"role\": \"user\", "
                    "\"content\": \"你好\"}, {\"role\": \"assistant\", \"content\": \"你好！\"}]}";
    int32_t want[4096];
    uint8_t want_mask[4096];
    int64_t na = 0, nb = 0;
    CHECK_MSG(zt_tokenize_chat(t, a, strlen(a), want, want_mask, 4096, &na) == ZT_OK, "%s", zt_last_error());
    CHECK(zt_tokenize_chat(t, b, strlen(b), want + na, want_mask + na, 4096 - na, &nb) == ZT_OK);
    int learned = 0;
    for (int64_t i = 0; i < na + nb; i++) learned += want_mask[i];
    CHECK(learned > 4 && learned < na + nb / 2 + 4);
    int32_t eot = zt_tokenizer_id(t, "<|endoftext|>");
    int64_t np = zt_tokenize(t, "Q", 1, want + na + nb, 16), nr = zt_tokenize(t, " A", 2, want + na + nb + np, 16);
    for (int64_t i = 0; i < np + nr; i++) want_mask[na + nb + i] = i >= np;
    int64_t total = na + nb + np + nr;

    /* the same conversations as JSONL lines, with a prompt/response line, each ended by --eot */
    char jsonl[2048];
    snprintf(path, sizeof path, "%s/sft.jsonl", dir);
    snprintf(jsonl, sizeof jsonl, "%s\n\n%s\n{\"prompt\": \"Q\", \"response\": \" A\"}\n", a, b);
    write_file(path, jsonl, strlen(jsonl));
    char out[256], maskp[256];
    snprintf(out, sizeof out, "%s/sft.bin", dir);
    snprintf(maskp, sizeof maskp, "%s/sft.bin.mask", dir);
    zt_tokenize_desc d;
    memset(&d, 0, sizeof d);
    d.input = path, d.output = out, d.eot = -1;
    int64_t got = 0;
    CHECK_MSG(zt_tokenize_file(t, &d, &got) == ZT_OK, "%s", zt_last_error());
    CHECK_EQ_INT(got, total);
    size_t bytes = 0;
    char *file = test_slurp(out, &bytes), *m = test_slurp(maskp, &n);
    CHECK(file && m && bytes == 1024 + 2 * (size_t)total && n == (size_t)total);
    for (int64_t i = 0; i < total; i++) {
        uint16_t id;
        memcpy(&id, file + 1024 + 2 * i, 2);
        CHECK_MSG(id == want[i] && (uint8_t)m[i] == want_mask[i], "token %lld of the file: id %d mask %d, want %d %d",
                  (long long)i, id, m[i], want[i], want_mask[i]);
    }
    free(file), free(m);
    d.eot = eot; /* --eot ends every line's tokens, and is learned */
    CHECK(zt_tokenize_file(t, &d, &got) == ZT_OK);
    CHECK_EQ_INT(got, total + 3);

    /* a conversation the template refuses names the line and the template's words */
    snprintf(jsonl, sizeof jsonl, "%s\n{\"messages\": [{\"role\": \"user\"}]}\n", a);
    write_file(path, jsonl, strlen(jsonl));
    CHECK(zt_tokenize_file(t, &d, &got) != ZT_OK);
    CHECK_STR_CONTAINS(zt_last_error(), "sft.jsonl:2");
    CHECK_STR_CONTAINS(zt_last_error(), "content");
    snprintf(jsonl, sizeof jsonl, "{\"messages\": {\"role\": \"user\"}}\n");
    write_file(path, jsonl, strlen(jsonl));
    CHECK(zt_tokenize_file(t, &d, &got) != ZT_OK);
    CHECK_STR_CONTAINS(zt_last_error(), "sft.jsonl:1: \"messages\" must be a list");
    zt_tokenizer_free(t);
    free(tok), free(tpl);
    const char *names[] = {"tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "sft.jsonl", "sft.bin", "sft.bin.mask"};
    for (int i = 0; i < 6; i++) snprintf(path, sizeof path, "%s/%s", dir, names[i]), remove(path);
    rmdir(dir);
}

/* a {% generation %} that runs inside a macro is not followed into the text: the conversation is refused by name (its
   turns would learn nothing), and the same template with the block where the text is written marks the turn; an empty
   "chat_template" is none, as transformers reads it */
TEST(chat_generation_inside_a_macro_is_named) {
    zt_tokenizer *t = NULL;
    CHECK_MSG(zt_tokenizer_load(&t, "tests/ref/tokenizers/qwen2") == ZT_OK, "%s", zt_last_error());
    const char *in_macro = "{% macro r(m) %}{% generation %}{{ m.content }}{% endgeneration %}{% endmacro %}"
                           "{% for m in messages %}{% if m.role == 'assistant' %}{{ r(m) }}{% else %}{{ m.content }}"
                           "{% endif %}{% endfor %}";
    const char *direct = "{% for m in messages %}{% if m.role == 'assistant' %}{% generation %}{{ m.content }}"
                         "{% endgeneration %}{% else %}{{ m.content }}{% endif %}{% endfor %}";
    const char *conv = "{\"messages\": [{\"role\": \"user\", \"content\": \"Q\"}, {\"role\": \"assistant\", "
                       "\"content\": \" A\"}]}";
    int32_t ids[64];
    uint8_t mask[64];
    int64_t count = 0;
    CHECK(zt_tokenizer_set_chat_template(t, in_macro, strlen(in_macro), "macro.jinja") == ZT_OK);
    CHECK(zt_tokenize_chat(t, conv, strlen(conv), ids, mask, 64, &count) != ZT_OK);
    CHECK_STR_CONTAINS(zt_last_error(), "{% generation %} runs inside a macro or a {% set %} block");
    CHECK(zt_tokenizer_set_chat_template(t, direct, strlen(direct), "direct.jinja") == ZT_OK);
    CHECK_MSG(zt_tokenize_chat(t, conv, strlen(conv), ids, mask, 64, &count) == ZT_OK, "%s", zt_last_error());
    int learned = 0;
    for (int64_t i = 0; i < count; i++) learned += mask[i];
    CHECK_MSG(count >= 2 && mask[0] == 0 && learned >= 1, "%lld ids, %d learned", (long long)count, learned);
    zt_tokenizer_free(t);

    char dir[128], path[256];
    snprintf(dir, sizeof dir, "/tmp/zt_chat_empty_%d", (int)getpid());
    mkdir(dir, 0755);
    size_t tn = 0;
    char *tok = test_slurp("tests/ref/tokenizers/qwen2/tokenizer.json", &tn);
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    write_file(path, tok, tn);
    free(tok);
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    const char *empty = "{\"chat_template\": \"\"}";
    write_file(path, empty, strlen(empty));
    CHECK_MSG(zt_tokenizer_load(&t, dir) == ZT_OK, "%s", zt_last_error());
    CHECK(zt_tokenizer_chat_template(t) == NULL);
    CHECK_STR_CONTAINS(zt_last_error(), "the tokenizer has no chat template");
    zt_tokenizer_free(t);
    remove(path);
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    remove(path);
    rmdir(dir);
}

/* broken and hostile templates: one sentence naming the line, never a crash or a hang */
TEST(chat_hostile_templates) {
    static const char *const cases[][2] = {
        {"{% if x %}a", "line 1: the template ends inside a block: expected {% endif %}"},
        {"a\n\n{{ x", "line 3: a {{ expression }} that does not end"},
        {"{% for %}{% endfor %}", "expected a loop variable"},
        {"{{ 1 + }}", "expected an expression, found '}}'"},
        {"{% endfor %}", "'{% endfor %}' is not a statement"},
        {"{% include 'x' %}", "'{% include %}' is not a statement"},
        {"{{ x|nosuchfilter }}", "'nosuchfilter' is not a filter"},
        {"{{ x is nosuchtest }}", "'nosuchtest' is not a test"},
        {"{{ 'a' }", "unexpected '}'"},
        {"{# open", "a {# comment #} that does not end"},
        {"{{ 'abc }}", "a string that does not end"},
        {"{% for i in range(100000000) %}{% endfor %}", "range of 100000000 numbers is too long"},
        {"{% set r = range(5000) %}{% for i in r %}{% for j in r %}{% endfor %}{% endfor %}", "more than 10000000 steps"},
        {"{{ 'x' * 1000000000 }}", "too long"},
        {"{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "nested more than 1000 deep"},
        {"{{ undefined_thing.attr }}", "'undefined_thing' is undefined"},
        {"{{ 1 / 0 }}", "division by zero"},
        {"{{ 'a' + 1 }}", "'+' between a string and an integer"},
        {"{{ messages[0]['role'].nosuch() }}", "'nosuch' is undefined"},
        {"{% set ns = 1 %}{% set ns.a = 2 %}", "needs a namespace()"},
        {"{{ raise_exception('Only user and assistant roles are supported!') }}", "refused this conversation: Only user"},
    };
    static char deep[8192];
    for (int i = 0; i < 2000; i++) deep[i] = '(';
    strcpy(deep + 2000, "1");
    for (int i = 0; i < 2000; i++) deep[2001 + i] = ')';
    const char *ctx = "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}";
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        zt_chat_template *c = NULL;
        zt_chat_text out;
        zt_result r = zt_chat_template_compile(&c, cases[i][0], strlen(cases[i][0]), "bad.jinja");
        if (r == ZT_OK) r = zt_chat_render(c, ctx, strlen(ctx), &out);
        CHECK_MSG(r != ZT_OK, "case %zu (%s) was accepted", i, cases[i][0]);
        CHECK_STR_CONTAINS(zt_last_error(), "bad.jinja");
        CHECK_STR_CONTAINS(zt_last_error(), cases[i][1]);
        zt_chat_template_free(c);
    }
    zt_chat_template *c = NULL;
    CHECK(zt_chat_template_compile(&c, "{{ x }}", 7, "ok.jinja") == ZT_OK);
    zt_chat_text out;
    CHECK(zt_chat_render(c, "[1]", 3, &out) != ZT_OK); /* the variables must be one JSON object */
    CHECK(zt_chat_render(c, "{\"x\": ", 6, &out) != ZT_OK);
    zt_chat_template_free(c);
    char tpl[8300];
    snprintf(tpl, sizeof tpl, "{{ %s }}", deep);
    CHECK(zt_chat_template_compile(&c, tpl, strlen(tpl), "deep.jinja") != ZT_OK);
    CHECK_STR_CONTAINS(zt_last_error(), "deep");
}

/* floats print as Python's repr: the shortest digits that read back, also at the powers of two where the nearest
   decimal of that length does not (2^-1017, 2^-957: one digit fewer than the first length that rounds back) */
TEST(chat_floats_print_as_python_repr) {
    const char *src = "{{ a }} {{ b }} {{ c }} {{ d }} {{ e }}";
    const char *json = "{\"a\": 7.120236347223045e-307, \"b\": 8.209073602596753e-289, \"c\": 0.1, \"d\": 1e16, "
                       "\"e\": 65536.0}";
    zt_chat_template *c = NULL;
    CHECK_MSG(zt_chat_template_compile(&c, src, strlen(src), "repr") == ZT_OK, "%s", zt_last_error());
    zt_chat_text out;
    CHECK_MSG(zt_chat_render(c, json, strlen(json), &out) == ZT_OK, "%s", zt_last_error());
    CHECK_MSG(strcmp(out.text, "7.120236347223045e-307 8.209073602596753e-289 0.1 1e+16 65536.0") == 0, "%s", out.text);
    zt_chat_template_free(c);
    /* a string in a list prints as Python's repr: what str.isprintable() calls not printable escaped (a zero-width space,
       a no-break space, a line separator, DEL, a tag character), the rest as it is (é, an emoji) */
    src = "{{ [s] }}";
    json = "{\"s\": \"a\\u200bb\\u00a0c\\u2028d\\u00e9\\ud83d\\ude00\\u007f\\udb40\\udc01\"}";
    CHECK(zt_chat_template_compile(&c, src, strlen(src), "repr") == ZT_OK);
    CHECK_MSG(zt_chat_render(c, json, strlen(json), &out) == ZT_OK, "%s", zt_last_error());
    CHECK_MSG(strcmp(out.text, "['a\\u200bb\\xa0c\\u2028d\xc3\xa9\xf0\x9f\x98\x80\\x7f\\U000e0001']") == 0, "%s", out.text);
    zt_chat_template_free(c);
}
