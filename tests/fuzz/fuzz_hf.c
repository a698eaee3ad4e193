/* tests/fuzz/fuzz_hf.c - libFuzzer target for zt_load_hf: a Hugging Face directory's weights, read into a
   tiny engine of the config.json they came with. Where fuzz_safetensors stops at the header, this goes on
   to what the loader makes of it: each parameter's name, shape and dtype against the config, the
   conversions, the quantized releases' blocks and scales (gpt-oss's MXFP4, fine-grained FP8), the
   transposed and regrouped layouts, and a sharded directory's index. The first input byte picks what:
   bit 7 clear, the model.safetensors (the rest of the input) of DIRS[byte % N_DIRS]; set, the
   model.safetensors.index.json of SHARDED over its real shards. The engines are made from tests/ref/hf
   once (run from the repository root). Built and run by ./build.sh fuzz; the seeds are the directories'
   own files, written by the target itself (ZT_FUZZ_SEEDS=DIR). */
#define ZT_IMPLEMENTATION
#include "../../zt.h"
#include <sys/stat.h>

/* the directories whose weights are fuzzed: each a path through the loader the others do not take */
static const char *const DIRS[] = {
    "gpt_oss_mxfp4",    /* MXFP4 experts: blocks and scales in place of a tensor */
    "deepseek_v3_fp8",  /* fine-grained FP8 with its scale_inv, MLA, experts with a correction bias */
    "qwen3_fp8",        /* FP8 blocks that do not divide the weights */
    "llama_bf16",       /* bf16 converted to the engine's f32 */
    "gpt2_old",         /* names without "transformer.", Conv1D weights transposed */
    "gpt_neox_buffers", /* each head's q, k and v rows regrouped; buffers among the weights */
    "glm4_moe",         /* a sigmoid router's correction, a shared expert */
    "phi3",             /* fused projections */
};
enum { N_DIRS = sizeof DIRS / sizeof DIRS[0] };
static const char *const SHARDED = "mistral_shards";
enum { N_SHARDS = 6 };

static void quiet(zt_log_level level, const char *msg, void *user) { (void)level, (void)msg, (void)user; }

static char one[256], sharded[256]; /* a directory for a lone file, one for an index over the shards */
static zt_engine *engines[N_DIRS + 1];
static int verbose; /* ZT_FUZZ_VERBOSE: each input's result on stderr (to see the seeds load) */

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) zt_fatal("fuzz_hf: cannot open %s (run from the repository root)", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = (char *)malloc((size_t)n + 1);
    if (!p || fread(p, 1, (size_t)n, f) != (size_t)n) zt_fatal("fuzz_hf: cannot read %s", path);
    fclose(f);
    p[n] = 0, *len = (size_t)n;
    return p;
}

static void spew(const char *dir, const char *name, const void *p, size_t n) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(p, 1, n, f) != n)) zt_fatal("fuzz_hf: cannot write %s", path);
    fclose(f);
}

/* dir's file, whole, as the name it has in tests/ref/hf/dir */
static char *fixture(const char *dir, const char *name, size_t *len) {
    char path[600];
    snprintf(path, sizeof path, "tests/ref/hf/%s/%s", dir, name);
    return slurp(path, len);
}

static void shard_name(char *out, size_t n, int k) { snprintf(out, n, "model-%05d-of-%05d.safetensors", k + 1, N_SHARDS); }

/* the engine of DIRS[i] (i == N_DIRS: SHARDED's), made once from its config.json */
static zt_engine *engine(int i) {
    if (engines[i]) return engines[i];
    char dir[300];
    snprintf(dir, sizeof dir, "tests/ref/hf/%s", i < N_DIRS ? DIRS[i] : SHARDED);
    zt_model_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.config_path = dir;
    zt_options o = zt_options_default();
    o.micro_batch = 1, o.seq_len = 4, o.threads = 1;
    if (zt_init_options(&engines[i], &spec, &o) != ZT_OK) zt_fatal("fuzz_hf: %s", zt_last_error());
    return engines[i];
}

/* ZT_FUZZ_SEEDS=DIR: each directory's model.safetensors after its byte, and the shards' index after 0x80 */
static void write_seeds(const char *out) {
    for (int i = 0; i <= N_DIRS; i++) {
        size_t n = 0;
        char *p = fixture(i < N_DIRS ? DIRS[i] : SHARDED, i < N_DIRS ? "model.safetensors" : "model.safetensors.index.json", &n);
        char *seed = (char *)malloc(n + 1), name[300];
        if (!seed) zt_fatal("fuzz_hf: out of memory");
        seed[0] = (char)(i < N_DIRS ? i : 0x80);
        memcpy(seed + 1, p, n);
        snprintf(name, sizeof name, "%s", i < N_DIRS ? DIRS[i] : SHARDED);
        spew(out, name, seed, n + 1);
        free(seed), free(p);
    }
}

static void clean_up(void) {
    char path[600], name[64];
    snprintf(path, sizeof path, "%s/model.safetensors", one), remove(path), rmdir(one);
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", sharded), remove(path);
    for (int k = 0; k < N_SHARDS; k++) shard_name(name, sizeof name, k), snprintf(path, sizeof path, "%s/%s", sharded, name), remove(path);
    rmdir(sharded);
    for (int i = 0; i <= N_DIRS; i++) zt_shutdown(engines[i]);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    zt_set_log(quiet, NULL);
    verbose = getenv("ZT_FUZZ_VERBOSE") != NULL;
    if (getenv("ZT_FUZZ_SEEDS")) {
        write_seeds(getenv("ZT_FUZZ_SEEDS"));
        exit(0);
    }
    snprintf(one, sizeof one, "/tmp/zt_fuzz_hf_%d", (int)getpid());
    snprintf(sharded, sizeof sharded, "/tmp/zt_fuzz_hf_%d_shards", (int)getpid());
    mkdir(one, 0755);
    mkdir(sharded, 0755);
    atexit(clean_up);
    for (int k = 0; k < N_SHARDS; k++) { /* the shards stay; only the index changes */
        char name[64];
        size_t n = 0;
        shard_name(name, sizeof name, k);
        char *p = fixture(SHARDED, name, &n);
        spew(sharded, name, p, n);
        free(p);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int index = data[0] & 0x80, i = index ? N_DIRS : data[0] % N_DIRS;
    spew(index ? sharded : one, index ? "model.safetensors.index.json" : "model.safetensors", data + 1, size - 1);
    zt_result r = zt_load_hf(engine(i), index ? sharded : one);
    if (verbose) fprintf(stderr, "%s: %s\n", i < N_DIRS ? DIRS[i] : SHARDED, r == ZT_OK ? "loaded" : zt_last_error());
    return 0;
}
