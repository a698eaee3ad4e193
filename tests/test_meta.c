/* tests/test_meta.c - a second, private copy of the implementation (ZT_STATIC) beside the shared one,
   compiled as gcc -std=c11 by the suite, for what only the inside shows: its stb_ds tables must live in the
   metadata arena; the pre-tokenizers' regular expressions must cut texts where the tokenizers library cuts them. */
#define ZT_STATIC
#define ZT_IMPLEMENTATION
#include "../zt.h"
#include "test.h"

typedef struct { int key; double value; } int_double;

TEST(stb_ds_tables_live_in_the_meta_arena) {
    static _Alignas(64) uint8_t mem[1 << 20];
    zt_arena meta;
    zt_arena_init(&meta, "metadata", mem, sizeof mem);
    zt_arena *old = zt_set_meta_arena(&meta);
    int_double *map = NULL;
    for (int i = 0; i < 2000; i++) {
        int k = i * 7;
        stbds_hmput(map, k, i * 0.5);
    }
    int probe = 700;
    CHECK(stbds_hmget(map, probe) == 50.0);
    CHECK_EQ_INT(stbds_hmlen(map), 2000);
    CHECK((uint8_t *)map >= mem && (uint8_t *)map < mem + sizeof mem);
    CHECK(meta.used > 2000 * sizeof(int_double));
    zt_set_meta_arena(old);
}

/* ---- the pre-tokenizers' regular expressions, inside the implementation ---- */

static const char *const GPT2_REGEX = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* where pattern rx (or, with rx NULL, pre-tokenizer pre by hand) cuts s: the pieces' ends, their count */
static int64_t cut(zt_tokenizer *t, zt__rx *rx, int pre, const char *s, size_t n, int64_t *ends, int64_t cap) {
    zt__tok_pieces *out = &t->pieces[0];
    out->len = 0, out->n = 0;
    if (rx) {
        zt__pre_step st;
        memset(&st, 0, sizeof st);
        st.kind = ZT__STEP_SPLIT, st.behavior = ZT__SPLIT_ISOLATED, st.rx = rx;
        zt__pre_step_run(t, &st, s, n, out);
    } else {
        for (size_t i = 0, k; i < n; i = k) zt__tok_pieces_put(out, s + i, (k = zt__pre_next(pre, s, n, i)) - i, 0);
    }
    for (int64_t k = 0; k < out->n && k < cap; k++) ends[k] = out->end[k];
    return out->n;
}

/* tests/ref/tokenizers/splits.txt (make_tokenizer_fixtures.py): the tokenizers library's cuts of each pattern */
TEST(regex_splits_as_the_tokenizers_library) {
    FILE *f = fopen("tests/ref/tokenizers/splits.txt", "r");
    CHECK(f != NULL);
    static char line[65536], pattern[4096], text[8192], name[64];
    static int64_t want[4096], got[4096];
    zt_tokenizer *t = (zt_tokenizer *)calloc(1, sizeof *t);
    zt__rx *rx = NULL;
    int pre = 0, patterns = 0, cases = 0;
    size_t tn = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (line[0] == 'P') {
            char hex[8192] = "";
            sscanf(line + 2, "%63s %8191s", name, hex);
            test_unhex(hex, pattern);
            pre = strcmp(name, "gpt2") == 0 ? ZT__PRE_GPT2 : strcmp(name, "llama3") == 0 ? ZT__PRE_LLAMA3
                : strcmp(name, "qwen2") == 0 ? ZT__PRE_QWEN2 : 0;
            if (pre == ZT__PRE_GPT2) snprintf(pattern, sizeof pattern, "%s", GPT2_REGEX);
            char err[256] = "";
            zt__rx_free(rx);
            rx = zt__rx_new(pattern, strlen(pattern), 0, err, sizeof err);
            CHECK_MSG(rx != NULL, "%s: %s", name, err);
            patterns++;
        } else if (line[0] == 'T') {
            tn = test_unhex(line + 2, text);
        } else if (line[0] == 'E' && rx) {
            int64_t nw = 0;
            for (char *p = line + 1, *end; *p && *p != '\n' && nw < 4096; p = end) {
                long v = strtol(p, &end, 10);
                if (end == p) break;
                want[nw++] = v;
            }
            for (int hand = 0; hand <= (pre != 0); hand++) { /* the machine; the hand-written pre-tokenizer */
                int64_t ng = cut(t, hand ? NULL : rx, pre, text, tn, got, 4096);
                int same = ng == nw && memcmp(got, want, sizeof(int64_t) * (size_t)nw) == 0;
                char g[512] = "", w[512] = "";
                for (int64_t i = 0; !same && i < ng && i < 40; i++) snprintf(g + strlen(g), sizeof g - strlen(g), " %lld", (long long)got[i]);
                for (int64_t i = 0; !same && i < nw && i < 40; i++) snprintf(w + strlen(w), sizeof w - strlen(w), " %lld", (long long)want[i]);
                CHECK_MSG(same, "%s%s: \"%s\": pieces end at%s; tokenizers:%s", name, hand ? " (by hand)" : "", text, g, w);
            }
            cases++;
        }
    }
    if (f) fclose(f);
    zt__rx_free(rx);
    zt_tokenizer_free(t);
    CHECK(patterns >= 15 && cases >= 15 * 20);
}

/* up to 23 characters drawn from chars (k of them) into s, NUL-terminated: its bytes */
static size_t random_text(const char *const *chars, size_t k, uint64_t *seed, char *s) {
    size_t n = 0;
    int len = (int)(zt__mix((*seed)++) % 24);
    for (int c = 0; c < len; c++) {
        const char *ch = chars[zt__mix((*seed)++) % k];
        memcpy(s + n, ch, strlen(ch)), n += strlen(ch);
    }
    s[n] = 0;
    return n;
}

/* random texts of hard characters: the machine with GPT-2's, LLaMA-3's and Qwen2's patterns cuts them as the
   hand-written pre-tokenizers do */
TEST(regex_machine_equals_the_hand_written_pre_tokenizers) {
    static const char *const chars[] = {"a", "Z", "s", "t", "L", "e", "\xc3\xa9", "\xc5\xbf", "'", " ", " ", "\n", "\r",
                                        "\t", "1", "7", "\xd9\xa3", "\xc2\xb2", "\xe4\xb8\xad", "\xe3\x83\xbc", "!", "/",
                                        "\xe3\x80\x80", "\xcc\x81", "\xc7\x85", "\xca\xb0", "\xf0\x9f\x98\x80", "\xc2\xa0"};
    const char *patterns[3] = {GPT2_REGEX, zt__pre_regex[ZT__PRE_LLAMA3], zt__pre_regex[ZT__PRE_QWEN2]};
    zt_tokenizer *t = (zt_tokenizer *)calloc(1, sizeof *t);
    uint64_t seed = 7;
    static int64_t a[256], b[256];
    int differ = 0;
    for (int p = 0; p < 3; p++) {
        char err[256] = "";
        zt__rx *rx = zt__rx_new(patterns[p], strlen(patterns[p]), 0, err, sizeof err);
        CHECK_MSG(rx != NULL, "%s", err);
        for (int k = 0; rx && k < 3000 && differ < 3; k++) {
            char s[256];
            size_t n = random_text(chars, sizeof chars / sizeof chars[0], &seed, s);
            int64_t na = cut(t, rx, 0, s, n, a, 256), nb = cut(t, NULL, p + 1, s, n, b, 256);
            int same = na == nb && memcmp(a, b, sizeof(int64_t) * (size_t)na) == 0;
            differ += !same;
            CHECK_MSG(same, "pattern %d: \"%s\": the machine cuts it in %lld pieces, by hand in %lld", p, s, (long long)na,
                      (long long)nb);
        }
        zt__rx_free(rx);
    }
    zt_tokenizer_free(t);
}

/* where zt_tokenize_file may cut the text between added tokens (zt__tok_cut_ok), random texts of hard characters keep
   their pieces: GPT-2's, LLaMA-3's and Qwen2's hand-written rules cut the two parts as they cut the whole, and NFC
   turns the two parts into the NFC of the whole */
TEST(tokenize_cuts_keep_the_pieces) {
    static const char *const chars[] = {"a", "Z", "s", "\xc3\xa9", "'", " ", " ", "\n", "\n", "\n", "\r", "\t", "1",
                                        "\xe4\xb8\xad", "!", "\xcc\x81", "\xe1\x85\xa1", "\xe1\x84\x80", "\xc2\xa0"};
    zt_tokenizer *t = (zt_tokenizer *)calloc(1, sizeof *t);
    uint64_t seed = 11;
    static int64_t whole[256], part[256];
    static char norm[1024], norm2[1024];
    static uint32_t cps[1024];
    int cuts = 0;
    t->byte_level = 1;
    for (int p = ZT__PRE_GPT2; p <= ZT__PRE_QWEN2; p++) {
        t->pre = p, t->nfc = p == ZT__PRE_QWEN2;
        for (int k = 0; k < 3000; k++) {
            char s[256];
            size_t n = random_text(chars, sizeof chars / sizeof chars[0], &seed, s);
            int64_t nw = cut(t, NULL, p, s, n, whole, 256);
            size_t nn = t->nfc ? zt__nfc(s, n, norm, cps) : 0;
            for (size_t c = 1; c < n; c++) {
                if (!zt__tok_cut_ok(t, s, n, c)) continue;
                cuts++;
                int64_t na = cut(t, NULL, p, s, c, part, 256), nb = cut(t, NULL, p, s + c, n - c, part + na, 256 - na);
                for (int64_t i = na; i < na + nb; i++) part[i] += (int64_t)c;
                int same = na + nb == nw && memcmp(part, whole, sizeof(int64_t) * (size_t)nw) == 0;
                CHECK_MSG(same, "rules %d: \"%.*s\" cut at %zu: %lld + %lld pieces, the whole %lld", p, (int)n, s, c,
                          (long long)na, (long long)nb, (long long)nw);
                if (!t->nfc) continue;
                size_t n1 = zt__nfc(s, c, norm2, cps);
                size_t n2 = zt__nfc(s + c, n - c, norm2 + n1, cps);
                CHECK_MSG(n1 + n2 == nn && memcmp(norm, norm2, nn) == 0, "NFC of \"%.*s\" cut at %zu", (int)n, s, c);
            }
        }
    }
    CHECK(cuts > 1000); /* the rule let many through */
    zt_tokenizer_free(t);
}

/* what zt does not read is named, with where */
TEST(regex_unsupported_syntax_is_named) {
    static const struct { const char *pattern, *said; } cases[] = {
        {"(?<=a)b", "lookbehind"}, {"\\p{Han}+", "\\p{Han} is a property zt does not know"},
        {"a{3,2}", "{m,n} quantifier"}, {"[a-", "not closed"}, {"(ab", "a group is not closed"}, {"ab)", "no '('"},
        {"(?=a+)b", "lookahead of unbounded length"}, {"^a", "anchors"}, {"\\bword", "\\b at character 2"},
        {"a++", "possessive"}, {"*a", "nothing before it"}, {"[z-a]", "end is before its start"}, {"[[a]]", "nested"},
        {"(?:a?|b)+", "a repeat of what can match nothing"}, {"(?:(?:(?:){1000}){1000}){100}", "can match nothing"},
        {"\\xe9", "above 7F is a byte"}, {"(?=a)*", "a lookahead cannot be repeated"}, {"\\p{L&}", "does not know"}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char err[256] = "";
        zt__rx *rx = zt__rx_new(cases[k].pattern, strlen(cases[k].pattern), 0, err, sizeof err);
        CHECK_MSG(rx == NULL && strstr(err, cases[k].said) != NULL, "\"%s\": %s", cases[k].pattern, rx ? "compiled" : err);
        zt__rx_free(rx);
    }
}
