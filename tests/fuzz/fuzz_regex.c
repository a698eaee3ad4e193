/* tests/fuzz/fuzz_regex.c - libFuzzer target for the regular expressions of tokenizer.json's Split
   pre-tokenizers: the input is a pattern, a NUL, then a text; a pattern that compiles cuts the text as a
   Split of each behavior, inverted and not, and the pieces must tile what a Split keeps. Built and run by
   ./build.sh fuzz; the seeds are the patterns of tests/ref/tokenizers/splits.txt with some of its texts,
   written by the target itself (ZT_FUZZ_SEEDS=DIR, run from the repository root). */
#define ZT_IMPLEMENTATION
#include "../../zt.h"

static zt_tokenizer *scratch; /* the machine's and the pieces' memory, kept between inputs */

static void unhex(const char *h, char *out, size_t *n) {
    for (*n = 0; h[0] && h[1] && h[0] != '\n'; h += 2) {
        unsigned v = 0;
        sscanf(h, "%2x", &v);
        out[(*n)++] = (char)v;
    }
}

/* ZT_FUZZ_SEEDS=DIR: each pattern of splits.txt, a NUL and one of its texts (every fifth) */
static void write_seeds(const char *out) {
    FILE *f = fopen("tests/ref/tokenizers/splits.txt", "r");
    if (!f) zt_fatal("fuzz_regex: cannot open tests/ref/tokenizers/splits.txt (run from the repository root)");
    static char line[65536], seed[65536];
    char name[64] = "", hex[8192];
    size_t np = 0, nt = 0;
    int text = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == 'P') {
            hex[0] = 0;
            sscanf(line + 2, "%63s %8191s", name, hex);
            unhex(hex, seed, &np);
            seed[np++] = 0, text = 0;
        } else if (line[0] == 'T' && text++ % 5 == 0) {
            unhex(line + 2, seed + np, &nt);
            char path[400];
            snprintf(path, sizeof path, "%s/%s_%d", out, name, text);
            FILE *o = fopen(path, "wb");
            if (!o || fwrite(seed, 1, np + nt, o) != np + nt) zt_fatal("fuzz_regex: cannot write %s", path);
            fclose(o);
        }
    }
    fclose(f);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    if (getenv("ZT_FUZZ_SEEDS")) {
        write_seeds(getenv("ZT_FUZZ_SEEDS"));
        exit(0);
    }
    scratch = (zt_tokenizer *)calloc(1, sizeof *scratch);
    return scratch ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *p = (const char *)data, *nul = (const char *)memchr(data, 0, size);
    size_t np = nul ? (size_t)(nul - p) : size, nt = nul ? size - np - 1 : 0;
    char err[256];
    zt__rx *rx = zt__rx_new(p, np, 0, err, sizeof err);
    if (!rx) return 0;
    const char *text = p + np + (nul != NULL);
    for (int behavior = ZT__SPLIT_REMOVED; behavior <= ZT__SPLIT_CONTIGUOUS; behavior++)
        for (int invert = 0; invert < 2; invert++) {
            zt__pre_step st;
            memset(&st, 0, sizeof st);
            st.kind = ZT__STEP_SPLIT, st.behavior = behavior, st.invert = invert, st.rx = rx;
            zt__tok_pieces *out = &scratch->pieces[0];
            out->len = 0, out->n = 0;
            zt__pre_step_run(scratch, &st, text, nt, out);
            /* all but Removed keep every byte, in order */
            if (behavior != ZT__SPLIT_REMOVED && (out->len != nt || (nt && memcmp(out->text, text, nt) != 0)))
                zt_fatal("fuzz_regex: behavior %d (invert %d) does not keep the text", behavior, invert);
        }
    zt__rx_free(rx);
    return 0;
}
