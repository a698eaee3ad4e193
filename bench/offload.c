/* bench/offload.c - what ZeRO-Offload costs, one JSON line each:
   - the host AdamW (zt_optim_step_host on every core): elements/s, and the bytes it moves (30 per element:
     master, moments and gradient read, master and moments written, bf16 weights written) as a ratio of
     this machine's memory bandwidth, an in-place update of a 64 MiB array on every core (each byte read
     and written once, as AdamW's state is) in the same run (goal: at least 60%);
   - the NVMe swap (zt's I/O threads, O_DIRECT, a checksum per block): write and read throughput of a
     file as a ratio of a plain sequential O_DIRECT write and read of the same size in the same
     directory, in the same run (goal: at least 80%); the directory is $ZT_BENCH_NVME, else /tmp;
   - step time of each offload setting over no offload, on a small shape at stage 3;
   - the largest LLaMA shape one 80 GB and one 141 GB GPU can train with each setting, by the planner
     (bf16, micro-batch 1 x 2048, activation checkpointing), with at most 512 GB of pinned host memory
     (a server's share per GPU); the NVMe bytes are printed beside.
   It includes the implementation itself (ZT_STATIC) to time the swap, which has no public API. */
#define ZT_IMPLEMENTATION
#define ZT_STATIC
#include "../zt.h"
#include <stdio.h>

static double now(void) { return (double)zt_time_ns() / 1e9; }

/* the anchor: an in-place update of one large array (read and write each byte once, as AdamW does with
   its state), on every core */
typedef struct scale_job { float *x; int64_t n, per; } scale_job;
static void scale_task(void *ctx, int64_t task, int thread) {
    const scale_job *j = (const scale_job *)ctx;
    (void)thread;
    int64_t at = task * j->per, n = ZT__MIN(j->per, j->n - at);
    for (int64_t i = 0; i < n; i++) j->x[at + i] *= 0.999f;
}

static void adamw(zt_pool *pool) {
    const int64_t n = (int64_t)1 << 24; /* 16M elements: 480 MB of traffic a step */
    float *master = (float *)malloc(4 * (size_t)n), *m = (float *)malloc(4 * (size_t)n);
    float *v = (float *)malloc(4 * (size_t)n), *g = (float *)malloc(4 * (size_t)n);
    uint16_t *w = (uint16_t *)malloc(2 * (size_t)n);
    for (int64_t i = 0; i < n; i++) master[i] = 0.01f * (float)(i % 97), m[i] = 0, v[i] = 0, g[i] = 1e-3f * (float)(i % 13);
    /* the anchor over 256 MiB, best of 5 */
    scale_job sj = {master, n, n / (4 * zt_pool_threads(pool))};
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        double t0 = now();
        zt_pool_run(pool, ZT__CDIV(n, sj.per), scale_task, &sj);
        best = ZT__MIN(best, now() - t0);
    }
    double bandwidth = 8.0 * (double)n / best; /* each f32 read and written */
    zt_optim_params p = zt_optim_defaults(ZT_OPTIM_ADAMW);
    double t_best = 1e30;
    for (int r = 0; r < 5; r++) {
        p.step = r + 1;
        double t0 = now();
        zt_optim_step_host(pool, master, m, v, g, w, ZT_BF16, n, p);
        t_best = ZT__MIN(t_best, now() - t0);
    }
    double moved = 30.0 * (double)n / t_best;
    printf("{\"bench\": \"host_adamw\", \"threads\": %d, \"elements\": %lld, \"elements_per_s\": %.3g, \"gb_per_s\": %.2f, "
           "\"update_in_place_gb_per_s\": %.2f, \"of_memory_bandwidth\": %.3f, \"goal\": 0.6}\n", zt_pool_threads(pool),
           (long long)n, (double)n / t_best, moved / 1e9, bandwidth / 1e9, moved / bandwidth);
    fflush(stdout);
    free(master), free(m), free(v), free(g), free(w);
}

/* a plain sequential O_DIRECT pass over a file: 8 MiB requests, one thread */
static double plain(const char *path, uint8_t *buf, int64_t bytes, int write) {
    int fd = open(path, (write ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY) | O_DIRECT | O_CLOEXEC, 0600);
    if (fd < 0) fd = open(path, (write ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY) | O_CLOEXEC, 0600);
    if (fd < 0) zt_fatal("cannot open %s", path);
    const int64_t step = 8 << 20;
    double t0 = now();
    for (int64_t at = 0; at < bytes; at += step) {
        ssize_t n = write ? pwrite(fd, buf + at, (size_t)step, (off_t)at) : pread(fd, buf + at, (size_t)step, (off_t)at);
        if (n != (ssize_t)step) zt_fatal("short %s on %s", write ? "write" : "read", path);
    }
    if (write) fsync(fd);
    double t = now() - t0;
    close(fd);
    return (double)bytes / t;
}

static void swap(const char *dir) {
    const int64_t bytes = (int64_t)256 << 20, block = 1 << 20;
    uint8_t *buf = NULL;
    if (posix_memalign((void **)&buf, 4096, (size_t)bytes) != 0) zt_fatal("out of memory");
    for (int64_t i = 0; i < bytes; i++) buf[i] = (uint8_t)(i * 131 >> 7);
    char path[600];
    snprintf(path, sizeof path, "%s/zt-bench-plain-%d", dir, (int)getpid());
    double pw = plain(path, buf, bytes, 1), pr = plain(path, buf, bytes, 0);
    unlink(path);
    int threads[2] = {1, 4};
    for (int t = 0; t < 2; t++) {
        zt__swap sw;
        uint64_t *sums = (uint64_t *)calloc((size_t)(bytes / block), 8);
        uint64_t *both[2] = {NULL, sums};
        const char *paths[2] = {dir, dir}, *keys[2] = {"nvme_path", "nvme_path"};
        int64_t sizes[2] = {0, bytes};
        if (zt__swap_open(&sw, paths, keys, sizes, block, threads[t], both) != ZT_OK) zt_fatal("%s", zt_last_error());
        double t0 = now();
        zt__swap_io(&sw, 1, 0, bytes, buf, 1);
        fdatasync(sw.fd[1]);
        double w = (double)bytes / (now() - t0);
        t0 = now();
        zt__swap_io(&sw, 1, 0, bytes, buf, 0);
        double r = (double)bytes / (now() - t0);
        printf("{\"bench\": \"nvme_swap\", \"dir\": \"%s\", \"o_direct\": %s, \"io_threads\": %d, \"block_bytes\": %lld, "
               "\"mib\": %lld, \"write_mb_s\": %.0f, \"plain_write_mb_s\": %.0f, \"write_of_plain\": %.3f, \"read_mb_s\": %.0f, "
               "\"plain_read_mb_s\": %.0f, \"read_of_plain\": %.3f, \"goal\": 0.8}\n", dir, sw.direct[1] ? "true" : "false",
               threads[t], (long long)block, (long long)(bytes >> 20), w / 1e6, pw / 1e6, w / pw, r / 1e6, pr / 1e6, r / pr);
        fflush(stdout);
        zt__swap_close(&sw);
        free(sums);
    }
    free(buf);
}

static zt_model_config config_of(const char *json) {
    zt_model_config c;
    if (zt_model_config_parse(&c, json, strlen(json), "bench model") != ZT_OK) zt_fatal("%s", zt_last_error());
    return c;
}

static const struct { const char *name; zt_offload_device opt, param; } SETTINGS[] = {
    {"none", ZT_OFFLOAD_NONE, ZT_OFFLOAD_NONE},       {"optimizer cpu", ZT_OFFLOAD_CPU, ZT_OFFLOAD_NONE},
    {"parameters cpu", ZT_OFFLOAD_NONE, ZT_OFFLOAD_CPU}, {"both cpu", ZT_OFFLOAD_CPU, ZT_OFFLOAD_CPU},
    {"optimizer nvme", ZT_OFFLOAD_NVME, ZT_OFFLOAD_NONE}, {"parameters nvme", ZT_OFFLOAD_NONE, ZT_OFFLOAD_NVME},
    {"both nvme", ZT_OFFLOAD_NVME, ZT_OFFLOAD_NVME}};
#define N_SETTINGS (int)(sizeof SETTINGS / sizeof SETTINGS[0])

static void steps(const char *dir) {
    zt_model_config mc = config_of("{\"model_type\": \"gpt2\", \"n_layer\": 4, \"n_head\": 4, \"n_embd\": 256, "
                                   "\"n_positions\": 128, \"vocab_size\": 256}");
    zt_model_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.config = &mc;
    int32_t tok[4 * 128];
    for (int i = 0; i < 4 * 128; i++) tok[i] = (i * 31) % 256;
    double base = 0;
    for (int s = 0; s < N_SETTINGS; s++) {
        zt_options o = zt_options_default();
        o.precision = ZT_PRECISION_BF16;
        o.micro_batch = 4, o.seq_len = 128, o.zero_stage = 3, o.persistence_threshold = 0;
        o.offload_optimizer = SETTINGS[s].opt, o.offload_param = SETTINGS[s].param;
        o.offload_optimizer_path = o.offload_param_path = dir;
        o.offload_buffer_size = 1 << 20;
        zt_engine *e = NULL;
        if (zt_init_options(&e, &spec, &o) != ZT_OK) zt_fatal("%s", zt_last_error());
        double best = 1e30;
        for (int k = 0; k < 6; k++) {
            double t0 = now();
            zt_forward_backward(e, tok, NULL, NULL, 4);
            zt_step(e);
            if (k > 0) best = ZT__MIN(best, now() - t0);
        }
        zt_shutdown(e);
        if (s == 0) base = best;
        printf("{\"bench\": \"offload_step\", \"model\": \"gpt2-4x256\", \"offload\": \"%s\", \"step_ms\": %.1f, "
               "\"over_none\": %.3f}\n", SETTINGS[s].name, best * 1e3, best / base);
        fflush(stdout);
    }
}

/* LLaMA shapes, smallest first */
static const struct { const char *name; int64_t h, layers, inter, heads, kv, vocab; } SHAPES[] = {
    {"llama-1B", 2048, 16, 8192, 32, 8, 128256},   {"llama-3B", 3072, 28, 8192, 24, 8, 128256},
    {"llama-8B", 4096, 32, 14336, 32, 8, 128256},  {"llama-13B", 5120, 40, 13824, 40, 40, 32000},
    {"llama-33B", 6656, 60, 17920, 52, 52, 32000}, {"llama-70B", 8192, 80, 28672, 64, 8, 128256},
    {"llama-180B", 14848, 80, 59392, 232, 8, 65024}};

static void fits(const char *dir) {
    static const double budgets[2] = {80e9, 141e9};
    static const int which[4] = {0, 1, 3, 6}; /* none, optimizer to host memory, both there, both to NVMe */
    for (int wi = 0; wi < 4; wi++) {
        int s = which[wi];
        for (int b = 0; b < 2; b++) {
            const char *largest = "none";
            double used = 0, host = 0, nvme = 0;
            for (size_t k = 0; k < sizeof SHAPES / sizeof SHAPES[0]; k++) {
                char json[512];
                snprintf(json, sizeof json, "{\"model_type\": \"llama\", \"hidden_size\": %lld, \"num_hidden_layers\": %lld, "
                         "\"intermediate_size\": %lld, \"num_attention_heads\": %lld, \"num_key_value_heads\": %lld, "
                         "\"vocab_size\": %lld, \"max_position_embeddings\": 2048, \"tie_word_embeddings\": false}",
                         (long long)SHAPES[k].h, (long long)SHAPES[k].layers, (long long)SHAPES[k].inter,
                         (long long)SHAPES[k].heads, (long long)SHAPES[k].kv, (long long)SHAPES[k].vocab);
                zt_model_config mc = config_of(json);
                zt_model_spec spec;
                memset(&spec, 0, sizeof spec);
                spec.config = &mc;
                zt_options o = zt_options_default();
                o.precision = ZT_PRECISION_BF16;
                o.micro_batch = 1, o.seq_len = 2048, o.gradient_checkpointing = 1;
                o.zero_stage = SETTINGS[s].opt == ZT_OFFLOAD_NONE && SETTINGS[s].param == ZT_OFFLOAD_NONE ? 0 : 3;
                o.offload_optimizer = SETTINGS[s].opt, o.offload_param = SETTINGS[s].param;
                o.offload_optimizer_path = o.offload_param_path = dir;
                zt_memory_plan p;
                if (zt_plan_memory(&p, &spec, &o, 1) != ZT_OK || (double)p.device > budgets[b] || (double)p.pinned > 512e9)
                    break;
                largest = SHAPES[k].name, used = (double)p.device, host = (double)p.pinned, nvme = (double)p.nvme;
            }
            printf("{\"bench\": \"offload_fit\", \"gpu_gb\": %.0f, \"offload\": \"%s\", \"largest\": \"%s\", \"device_gb\": %.1f, "
                   "\"pinned_host_gb\": %.1f, \"nvme_gb\": %.1f}\n", budgets[b] / 1e9, SETTINGS[s].name, largest, used / 1e9,
                   host / 1e9, nvme / 1e9);
            fflush(stdout);
        }
    }
}

int main(void) {
    const char *dir = getenv("ZT_BENCH_NVME") ? getenv("ZT_BENCH_NVME") : "/tmp";
    zt_pool *pool = zt_pool_create(0);
    adamw(pool);
    zt_pool_destroy(pool);
    swap(dir);
    steps(dir);
    fits(dir);
    return 0;
}
