/* tests/fuzz/fuzz_files.c - libFuzzer target for the files a run reads besides its configs: training
   data (llm.c, headerless and text token files, with and without a mask file) and checkpoints (the
   state JSON and the tensor file zt_load reads into a tiny engine). The first input byte picks what and
   how; the rest is the file's bytes (a checkpoint's two files split at a length in the next two bytes).
   Built and run by ./build.sh fuzz; the seeds are made by the target itself (ZT_FUZZ_SEEDS=DIR). */
#define ZT_IMPLEMENTATION
#include "../../zt.h"
#include <sys/stat.h>

static void quiet(zt_log_level level, const char *msg, void *user) { (void)level, (void)msg, (void)user; }

static char dir[256];
static int verbose; /* ZT_FUZZ_VERBOSE: each input's result on stderr (to see the seeds load) */

static void said(const char *what, zt_result r) {
    if (verbose) fprintf(stderr, "%s: %s\n", what, r == ZT_OK ? "read" : zt_last_error());
}

static void write_file(const char *name, const uint8_t *p, size_t n) {
    char path[400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(p, 1, n, f) != n)) zt_fatal("fuzz_files: cannot write %s", path);
    fclose(f);
}

/* the engine checkpoints load into, made once: a tiny LLaMA whose checkpoint is the seed */
static zt_engine *engine(void) {
    static zt_engine *e;
    if (e) return e;
    const char *json = "{\"model_type\": \"llama\", \"num_hidden_layers\": 1, \"num_attention_heads\": 2, "
                       "\"num_key_value_heads\": 1, \"hidden_size\": 8, \"intermediate_size\": 12, "
                       "\"max_position_embeddings\": 16, \"vocab_size\": 11}";
    zt_model_config c;
    if (zt_model_config_parse(&c, json, strlen(json), "tiny") != ZT_OK) zt_fatal("%s", zt_last_error());
    zt_model_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.config = &c;
    zt_options o = zt_options_default();
    o.micro_batch = 1, o.seq_len = 4, o.threads = 1;
    if (zt_init_options(&e, &spec, &o) != ZT_OK) zt_fatal("%s", zt_last_error());
    return e;
}

/* how: bit 0 two rows and two ranks, bits 1-3 the format (of 5), bit 4 a mask file (then two bytes of
   the token file's length lead), bit 5 the GPT-2 vocabulary and the last rank, bit 6 rows of T + 1
   (stride), bit 7 T = 4 (else 2) */
static void fuzz_data(uint8_t how, const uint8_t *p, size_t n) {
    size_t tokens = n;
    if (how & 0x10) {
        if (n < 2) return;
        tokens = ZT__MIN((size_t)(p[0] | p[1] << 8), n - 2), p += 2, n -= 2;
        write_file("data.mask", p + tokens, n - tokens);
    }
    write_file("data.bin", p, tokens);
    char data[400], mask[400];
    snprintf(data, sizeof data, "%s/data.bin", dir);
    snprintf(mask, sizeof mask, "%s/data.mask", dir);
    zt_data_desc d;
    memset(&d, 0, sizeof d);
    d.path = data;
    d.mask_path = how & 0x10 ? mask : NULL;
    d.format = (zt_data_format)(((how >> 1) & 7) % 5);
    d.vocab = how & 0x20 ? 50257 : 300;
    d.seq_len = how & 0x80 ? 4 : 2, d.rows = 1 + (how & 1);
    d.stride = how & 0x40 ? d.seq_len + 1 : 0;
    d.shuffle = 1, d.seed = how;
    d.world = 1 + (how & 1), d.rank = how & 0x20 ? d.world - 1 : 0;
    zt_data *z = NULL;
    zt_result r = zt_data_open(&z, &d);
    said("data", r);
    if (r != ZT_OK) return;
    int32_t tok[2 * 4], tgt[2 * 4];
    for (int i = 0; i < 6; i++) zt_data_next(z, tok, tgt, -100);
    zt_data_seek(z, how, (int64_t)how * 7919);
    zt_data_next(z, tok, tgt, -100);
    zt_data_close(z);
}

static void fuzz_checkpoint(const uint8_t *p, size_t n) {
    if (n < 2) return;
    size_t state = ZT__MIN((size_t)(p[0] | p[1] << 8), n - 2);
    write_file("ckpt/" ZT__CKPT_STATE, p + 2, state);
    write_file("ckpt/" ZT__CKPT_TENSORS, p + 2 + state, n - 2 - state);
    char ckpt[400];
    snprintf(ckpt, sizeof ckpt, "%s/ckpt", dir);
    said("checkpoint", zt_load(engine(), ckpt, NULL));
}

/* ZT_FUZZ_SEEDS=DIR: writes seed inputs (a saved checkpoint, data files of each format) into DIR and exits */
static void write_seeds(const char *out) {
    char path[600], ckpt[400];
    snprintf(ckpt, sizeof ckpt, "%s/seed", dir);
    if (zt_save(engine(), ckpt, NULL) != ZT_OK) zt_fatal("%s", zt_last_error());
    uint8_t *state = NULL, *tensors = NULL;
    size_t ns = 0, nt = 0;
    zt_arena a;
    void *mem = malloc(1 << 22);
    zt_arena_init(&a, "seeds", mem, 1 << 22);
    snprintf(path, sizeof path, "%s/global_step0/%s", ckpt, ZT__CKPT_STATE);
    if (zt__read_file(&a, path, (char **)&state, &ns) != ZT_OK) zt_fatal("%s", zt_last_error());
    snprintf(path, sizeof path, "%s/global_step0/%s", ckpt, ZT__CKPT_TENSORS);
    if (zt__read_file(&a, path, (char **)&tensors, &nt) != ZT_OK) zt_fatal("%s", zt_last_error());
    const char *saved[] = {"global_step0/" ZT__CKPT_STATE, "global_step0/" ZT__CKPT_TENSORS, "global_step0", "latest", ""};
    for (int i = 0; i < 5; i++) snprintf(path, sizeof path, "%s/%s", ckpt, saved[i]), remove(path);
    snprintf(path, sizeof path, "%s/checkpoint", out);
    FILE *f = fopen(path, "wb");
    uint8_t how = 0x80 | 1, len[2] = {(uint8_t)ns, (uint8_t)(ns >> 8)};
    if (!f || ns > 0xffff) zt_fatal("cannot write %s", path);
    fwrite(&how, 1, 1, f), fwrite(len, 1, 2, f), fwrite(state, 1, ns, f), fwrite(tensors, 1, nt, f);
    fclose(f);
    /* an llm.c file of 40 uint16 tokens with a mask, the same tokens headerless (uint16, uint32), and text */
    uint16_t ids[40];
    uint32_t wide[40];
    uint8_t keep[40];
    int32_t head[256] = {20240520, 1, 40};
    for (int i = 0; i < 40; i++) ids[i] = (uint16_t)(i * 7 % 300), wide[i] = ids[i], keep[i] = i % 3 != 0;
    for (int format = 1; format <= 4; format++) {
        snprintf(path, sizeof path, "%s/data_%d", out, format);
        f = fopen(path, "wb");
        if (!f) zt_fatal("cannot write %s", path);
        uint8_t h = (uint8_t)(format << 1 | (format == 1 ? 0x10 : 0)), n[2] = {(1024 + 80) & 0xff, (1024 + 80) >> 8};
        fwrite(&h, 1, 1, f);
        if (format == 1) fwrite(n, 1, 2, f), fwrite(head, 1, sizeof head, f), fwrite(ids, 1, sizeof ids, f), fwrite(keep, 1, sizeof keep, f);
        if (format == 2) fwrite(ids, 1, sizeof ids, f);
        if (format == 3) fwrite(wide, 1, sizeof wide, f);
        if (format == 4) fwrite("the quick brown fox jumps over the lazy dog", 1, 43, f);
        fclose(f);
    }
    free(mem);
}

static void clean_up(void) {
    const char *files[] = {"data.bin", "data.mask", "ckpt/" ZT__CKPT_STATE, "ckpt/" ZT__CKPT_TENSORS, "ckpt", ""};
    char path[400];
    for (int i = 0; i < 6; i++) snprintf(path, sizeof path, "%s/%s", dir, files[i]), remove(path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    zt_set_log(quiet, NULL);
    verbose = getenv("ZT_FUZZ_VERBOSE") != NULL;
    snprintf(dir, sizeof dir, "/tmp/zt_fuzz_files_%d", (int)getpid());
    char sub[300];
    snprintf(sub, sizeof sub, "%s/ckpt", dir);
    mkdir(dir, 0755);
    mkdir(sub, 0755);
    atexit(clean_up);
    if (getenv("ZT_FUZZ_SEEDS")) {
        write_seeds(getenv("ZT_FUZZ_SEEDS"));
        exit(0);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    if (data[0] & 0x80 && data[0] & 1) fuzz_checkpoint(data + 1, size - 1);
    else fuzz_data(data[0], data + 1, size - 1);
    return 0;
}
