/* tests/noalloc.c - nothing is allocated during training steps.
   This program defines malloc, calloc, realloc, free, posix_memalign and aligned_alloc itself (so
   glibc's own calls are counted too) and counts every call made after the first step, across steps
   that include an fp16 step skipped for overflow, a checkpoint save, an evaluation, reading data,
   DeepSpeed's tensorboard and csv_monitor files, its timers, flops profile and memory reports, at ZeRO
   stage 3, then in steps offloaded to NVMe.
   Built without sanitizers (they replace malloc themselves); ./build.sh test runs it as one test. */
#define _GNU_SOURCE
#include "../zt.h"
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);
extern void *__libc_memalign(size_t align, size_t n);

static volatile int counting;
static long reports;
static void quiet(zt_log_level level, const char *msg, void *user) {
    (void)level, (void)user;
    reports += strncmp(msg, "memory Engine ", 14) == 0;
}
static long calls;
static void count(void) {
    if (counting) __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
}

void *malloc(size_t n) {
    count();
    return __libc_malloc(n);
}
void *calloc(size_t n, size_t size) {
    count();
    return __libc_calloc(n, size);
}
void *realloc(void *p, size_t n) {
    count();
    return __libc_realloc(p, n);
}
void free(void *p) {
    if (p) count();
    __libc_free(p);
}
int posix_memalign(void **out, size_t align, size_t n) {
    count();
    void *p = __libc_memalign(align, n);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}
void *aligned_alloc(size_t align, size_t n) {
    count();
    return __libc_memalign(align, n);
}

static const char *MODEL =
    "{\"model_type\": \"gpt2\", \"n_layer\": 2, \"n_head\": 2, \"n_embd\": 32, \"n_positions\": 32, \"vocab_size\": 61}";

int main(void) {
    char dir[128], path[192];
    snprintf(dir, sizeof dir, "/tmp/zt_noalloc_%d", (int)getpid());
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/train.u16", dir);
    uint16_t tok[4000];
    for (int i = 0; i < 4000; i++) tok[i] = (uint16_t)((i * 13 + i / 5) % 61);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, tok, sizeof tok) != (ssize_t)sizeof tok) return 1;
    close(fd);

    zt_model_config c;
    if (zt_model_config_parse(&c, MODEL, strlen(MODEL), "model") != ZT_OK) return puts(zt_last_error()), 1;
    zt_model_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.config = &c;
    zt_options o = zt_options_default();
    o.micro_batch = 2;
    o.seq_len = 16;
    o.threads = 2;
    o.precision = ZT_PRECISION_FP16;
    o.initial_scale_power = 24; /* large enough to overflow at first: skipped steps come early */
    o.hysteresis = 1;
    o.max_steps = 100;
    o.zero_stage = 3; /* the ZeRO paths too: weights gathered, gradients reduced into slices */
    o.persistence_threshold = 0;
    char tb[160], csv[160]; /* DeepSpeed's monitors write after each step */
    snprintf(tb, sizeof tb, "%s/tb", dir);
    snprintf(csv, sizeof csv, "%s/csv", dir);
    o.tensorboard_dir = tb, o.csv_monitor_dir = csv;
    char profile[192]; /* DeepSpeed's timers after each step, and the flops profile at step 3 into a file */
    snprintf(profile, sizeof profile, "%s/profile/flops.txt", dir);
    o.wall_clock_breakdown = o.flops_profiler = o.memory_breakdown = 1;
    o.profile_step = 2;
    o.profile_output = profile;
    zt_engine *e = NULL;
    if (zt_init_options(&e, &spec, &o) != ZT_OK) return puts(zt_last_error()), 1;
    zt_data_desc d;
    memset(&d, 0, sizeof d);
    d.path = path;
    d.format = ZT_DATA_U16;
    d.vocab = 61;
    d.seq_len = 16;
    d.rows = 2;
    d.shuffle = 1;
    zt_data *data = NULL;
    if (zt_data_open(&data, &d) != ZT_OK) return puts(zt_last_error()), 1;
    int32_t x[32], y[32];
    int skipped = 0, taken = 0, saved = 0;
    int out = dup(1), null = open("/dev/null", O_WRONLY); /* the timers' lines */
    fflush(stdout);
    dup2(null, 1);
    zt_set_log(quiet, NULL); /* the memory reports */
    for (int step = 0; step < 60 && !(skipped && taken > 2); step++) {
        if (step == 1) counting = 1; /* everything after the first step */
        for (int m = 0; m < 2; m++) {
            int64_t n = zt_data_next(data, x, y, -100);
            zt_forward_backward(e, x, y, NULL, n);
        }
        zt_step_info s = zt_step(e);
        if (step >= 1) {
            skipped += s.skipped;
            taken += !s.skipped;
        }
        if (step == 3) {
            saved = zt_save(e, dir, data) == ZT_OK;
            zt_eval(e, x, NULL, NULL, 2, NULL, NULL);
        }
    }
    counting = 0;
    zt_set_log(NULL, NULL);
    fflush(stdout);
    dup2(out, 1);
    close(out), close(null);
    zt_data_close(data);
    zt_shutdown(e);
    zt_remove_checkpoint(dir, 4);
    int profiled = unlink(profile) == 0;
    snprintf(path, sizeof path, "%s/profile", dir);
    rmdir(path);
    char rm[400];
    snprintf(rm, sizeof rm, "%s/Train_Samples_loss_scale.csv", csv);
    int monitored = access(rm, R_OK) == 0; /* written (fp16: the loss scale too) */
    snprintf(rm, sizeof rm, "rm -rf '%s' '%s'", tb, csv);
    monitored = system(rm) == 0 && monitored;
    o.tensorboard_dir = o.csv_monitor_dir = NULL;
    o.wall_clock_breakdown = o.flops_profiler = o.memory_breakdown = 0;
    /* ZeRO-Offload to NVMe: the host optimizer, the I/O threads and the swap files, in steps */
    long before = calls;
    o.precision = ZT_PRECISION_BF16;
    o.offload_optimizer = o.offload_param = ZT_OFFLOAD_NVME;
    o.offload_optimizer_path = o.offload_param_path = dir;
    o.offload_buffer_size = 2048;
    o.aio_block_size = 4096;
    o.aio_threads = 2;
    if (zt_init_options(&e, &spec, &o) != ZT_OK) return puts(zt_last_error()), 1;
    int offloaded = 0;
    for (int step = 0; step < 4; step++, offloaded++) {
        if (step == 1) counting = 1;
        zt_forward_backward(e, x, y, NULL, 2);
        zt_step(e);
    }
    counting = 0;
    zt_shutdown(e);
    unlink(path);
    snprintf(path, sizeof path, "%s/latest", dir);
    unlink(path);
    rmdir(dir);
    printf("noalloc: %ld allocation calls in ZeRO-3 steps (%d skipped fp16 steps, %d taken, checkpoint %s, an evaluation, "
           "monitor files%s, timers, %s flops profile, %ld memory reports), %ld in %d steps offloaded to NVMe\n", before, skipped, taken,
           saved ? "saved" : "NOT saved", monitored ? "" : " NOT removed", profiled ? "a" : "NO", reports, calls - before, offloaded - 1);
    return calls == 0 && skipped > 0 && taken > 0 && saved && monitored && profiled && reports > 0 ? 0 : 1;
}
