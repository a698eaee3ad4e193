/* tests/test_offload.c - ZeRO-Offload on the CPU backend: every setting (optimizer to host memory or
   NVMe, stage-3 weights to host memory or NVMe, and together) at 1 and 2 ranks gives the parameters of
   the same run without offload, bit for bit, and so does a partial offload of the optimizer (ratio),
   whose checkpoints resume without offload and the other way round; offload trains within a device
   capacity the plan refuses without it; and the swap's errors: a missing or wrong path, too little
   space, a swap file truncated or changed under the job (the process stops with the reason, the swap
   directory is removed), and the directory a killed job left. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#define _POSIX_C_SOURCE 200809L
#include "test.h"
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

static const char *MODEL =
    "{\"model_type\": \"gpt2\", \"n_layer\": 2, \"n_head\": 4, \"n_embd\": 32, \"n_positions\": 32,"
    " \"vocab_size\": 61}";

enum { ROWS = 4, T = 16, STEPS = 3, MAX_N = 1 << 16 };

typedef struct result { int64_t n; float w[MAX_N]; char msg[1024]; } result;

static char nvme_dir[256];

static void remove_nvme_dir(void) { rmdir(nvme_dir); } /* empty by then: every test checks */

static const char *nvme(void) {
    if (!nvme_dir[0]) {
        snprintf(nvme_dir, sizeof nvme_dir, "/tmp/zt_offload_test_%d", (int)getpid());
        atexit(remove_nvme_dir);
    }
    mkdir(nvme_dir, 0700); /* again after a test removed it */
    return nvme_dir;
}

static zt_options offload_options(int stage, int world, zt_offload_device opt, zt_offload_device param) {
    zt_options o = zt_options_default();
    o.micro_batch = ROWS / world;
    o.seq_len = T;
    o.threads = 1;
    o.precision = ZT_PRECISION_BF16;
    o.lr = 1e-3f;
    o.weight_decay = 0.1f;
    o.max_grad_norm = 0.5f;
    o.schedule = ZT_SCHED_CONSTANT;
    o.zero_stage = stage;
    o.persistence_threshold = 0;
    o.offload_optimizer = opt;
    o.offload_param = param;
    o.offload_optimizer_path = o.offload_param_path = nvme();
    o.offload_buffer_size = 3000; /* units of 4096 elements: whole 4 KiB blocks in bf16 and f32 */
    o.aio_block_size = 4096;
    o.aio_threads = 2;
    return o;
}

static int32_t token(int s, int64_t r, int64_t i) { return (int32_t)((s * 7919 + r * 131 + i * 17 + 5) % 61); }

/* the test model, its config in mc */
static zt_model_spec model_spec(zt_model_config *mc) {
    if (zt_model_config_parse(mc, MODEL, strlen(MODEL), "test model") != ZT_OK) zt_fatal("%s", zt_last_error());
    zt_model_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.config = mc;
    return spec;
}

static zt_engine *make(zt_options o, zt_comm *c) {
    zt_model_config mc;
    zt_model_spec spec = model_spec(&mc);
    o.comm = c;
    zt_engine *e = NULL;
    return zt_init_options(&e, &spec, &o) == ZT_OK ? e : NULL;
}

static void train(zt_engine *e, int rank, int world, int first, int steps) {
    int64_t accum = zt_engine_options(e)->grad_accum, B = ROWS / world / accum;
    int32_t tok[ROWS * T];
    for (int s = first; s < steps; s++) {
        for (int64_t a = 0; a < accum; a++) {
            for (int64_t r = 0; r < B; r++)
                for (int64_t i = 0; i < T; i++) tok[r * T + i] = token(s, (a * world + rank) * B + r, i);
            zt_forward_backward(e, tok, NULL, NULL, B);
        }
        zt_step(e);
    }
}

/* set: a run saves a checkpoint after its first step and resumes from it with these settings */
static const zt_options *resume_as;
static char ckpt_dir[256];

static void clear_checkpoint(void) {
    char cmd[300];
    snprintf(ckpt_dir, sizeof ckpt_dir, "/tmp/zt_offload_ckpt_%d", (int)getpid());
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", ckpt_dir);
    if (system(cmd) != 0) zt_fatal("cannot clear %s", ckpt_dir);
}

static int rank_main(zt_options o, zt_comm *c, int rank, int world, result *out) {
    zt_engine *e = make(o, c);
    if (!e) {
        snprintf(out->msg, sizeof out->msg, "%s", zt_last_error());
        return 3;
    }
    train(e, rank, world, 0, resume_as ? 1 : STEPS);
    if (resume_as) {
        zt_result r = zt_save(e, ckpt_dir, NULL);
        zt_shutdown(e);
        if (r != ZT_OK || !(e = make(*resume_as, c)) || zt_load(e, ckpt_dir, NULL) != ZT_OK) {
            snprintf(out->msg, sizeof out->msg, "%s", zt_last_error());
            if (e) zt_shutdown(e);
            return 5;
        }
        train(e, rank, world, 1, STEPS);
    }
    static float mine[MAX_N];
    int64_t n = test_read_params(e, rank == 0 ? out->w : mine, MAX_N, 0);
    zt_shutdown(e);
    if (rank == 0) out->n = n;
    return n < 0 ? 4 : 0;
}

static result *shared(void) {
    void *m = mmap(NULL, sizeof(result), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) zt_fatal("cannot map a result");
    memset(m, 0, sizeof(result));
    return (result *)m;
}

/* `world` ranks of one run, forked; their stderr to `err` when not NULL */
static int run(zt_options o, int world, result *out) {
    int fd = -1;
    if (world > 1 && zt_comm_shm_create(world, 1 << 16, &fd) != ZT_OK) return 0;
    pid_t pids[2];
    for (int r = 0; r < world; r++)
        if ((pids[r] = fork()) == 0) {
            zt_comm *c = NULL;
            if (world > 1 && zt_comm_shm_attach(&c, fd, r, world) != ZT_OK) _exit(2);
            _exit(rank_main(o, c, r, world, out));
        }
    int good = 0;
    for (int r = 0; r < world; r++) {
        int status = 0;
        waitpid(pids[r], &status, 0);
        good += WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    if (fd >= 0) close(fd);
    return good == world;
}

static int swap_dirs_left(void) {
    int n = 0;
    DIR *d = opendir(nvme());
    for (struct dirent *de; d && (de = readdir(d)) != NULL;) n += strncmp(de->d_name, "zt-swap-", 8) == 0;
    if (d) closedir(d);
    return n;
}

TEST(offload_every_setting_is_bitwise_the_run_without) {
    static const struct { int stage; zt_offload_device opt, param; const char *name; } cases[] = {
        {2, ZT_OFFLOAD_CPU, ZT_OFFLOAD_NONE, "stage 2, optimizer to host memory"},
        {3, ZT_OFFLOAD_CPU, ZT_OFFLOAD_NONE, "optimizer to host memory"},
        {3, ZT_OFFLOAD_NVME, ZT_OFFLOAD_NONE, "optimizer to NVMe"},
        {3, ZT_OFFLOAD_NONE, ZT_OFFLOAD_CPU, "parameters to host memory"},
        {3, ZT_OFFLOAD_NONE, ZT_OFFLOAD_NVME, "parameters to NVMe"},
        {3, ZT_OFFLOAD_CPU, ZT_OFFLOAD_CPU, "both to host memory"},
        {3, ZT_OFFLOAD_NVME, ZT_OFFLOAD_NVME, "both to NVMe"},
    };
    result *base = shared(), *r = shared();
    for (int world = 1; world <= 2; world++) {
        CHECK_MSG(run(offload_options(3, world, ZT_OFFLOAD_NONE, ZT_OFFLOAD_NONE), world, base), "world %d: %s", world,
                  base->msg);
        /* also with overlap_comm (offloaded slices come in on the communication stream, the reduced ones
           go out from it: at one rank too), every other case in strict stream mode */
        for (int overlap = 0; overlap <= 1; overlap++)
            for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                zt_options o = offload_options(cases[i].stage, world, cases[i].opt, cases[i].param);
                o.overlap_comm = overlap, o.strict = overlap && i % 2;
                memset(r, 0, sizeof *r);
                CHECK_MSG(run(o, world, r), "world %d, %s, overlap_comm %d: %s", world, cases[i].name, overlap, r->msg);
                CHECK_MSG(r->n == base->n && memcmp(r->w, base->w, sizeof(float) * (size_t)base->n) == 0,
                          "world %d, %s, overlap_comm %d: not the run without offload", world, cases[i].name, overlap);
            }
    }
    /* with gradient accumulation (ZeRO-Offload adds each micro-batch's reduced slice to the one in host
       memory), at stages 2 and 3, 1 and 2 ranks, with and without overlap_comm */
    for (int world = 1; world <= 2; world++) {
        zt_options o = offload_options(3, world, ZT_OFFLOAD_NONE, ZT_OFFLOAD_NONE);
        o.grad_accum = 2, o.micro_batch = ROWS / world / 2;
        CHECK_MSG(run(o, world, base), "%s", base->msg);
        for (int i = 0; i < 6; i++) {
            static const char *names[3] = {"stage 2, optimizer to host memory", "optimizer to host memory", "both to NVMe"};
            int c = i % 3;
            o = offload_options(c == 0 ? 2 : 3, world, c == 2 ? ZT_OFFLOAD_NVME : ZT_OFFLOAD_CPU,
                                c == 2 ? ZT_OFFLOAD_NVME : ZT_OFFLOAD_NONE);
            o.grad_accum = 2, o.micro_batch = ROWS / world / 2;
            o.overlap_comm = i >= 3, o.strict = i == 4;
            memset(r, 0, sizeof *r);
            CHECK_MSG(run(o, world, r), "%s", r->msg);
            CHECK_MSG(memcmp(r->w, base->w, sizeof(float) * (size_t)base->n) == 0, "accumulation, world %d, %s, "
                      "overlap_comm %d: not the run without", world, names[c], i >= 3);
        }
    }
    munmap(base, sizeof *base);
    munmap(r, sizeof *r);
    CHECK_EQ_INT(swap_dirs_left(), 0);
}

/* Lion and Adagrad keep one state array (exp_avg; sum): ZeRO stages 0-2 at 2 ranks and every offload of their
   state (host memory, NVMe, with the weights on NVMe too) are stage 3's run bit for bit, and a checkpoint after
   the first step resumes into another setting (without offload into NVMe) with the same bits */
TEST(offload_lion_and_adagrad_are_bitwise_the_run_without) {
    static const struct { int stage; zt_offload_device opt, param; const char *name; } cases[] = {
        {0, ZT_OFFLOAD_NONE, ZT_OFFLOAD_NONE, "stage 0"},
        {2, ZT_OFFLOAD_NONE, ZT_OFFLOAD_NONE, "stage 2"},
        {2, ZT_OFFLOAD_CPU, ZT_OFFLOAD_NONE, "stage 2, optimizer to host memory"},
        {3, ZT_OFFLOAD_NVME, ZT_OFFLOAD_NONE, "optimizer to NVMe"},
        {3, ZT_OFFLOAD_NVME, ZT_OFFLOAD_NVME, "both to NVMe"},
    };
    result *base = shared(), *r = shared(), *adamw = shared();
    CHECK_MSG(run(offload_options(3, 2, ZT_OFFLOAD_NONE, ZT_OFFLOAD_NONE), 2, adamw), "AdamW: %s", adamw->msg);
    for (int kind = ZT_OPTIM_LION; kind <= ZT_OPTIM_ADAGRAD; kind++) {
        const char *name = zt_optim_name((zt_optimizer)kind);
        zt_options o = offload_options(3, 2, ZT_OFFLOAD_NONE, ZT_OFFLOAD_NONE);
        o.optimizer = (zt_optimizer)kind;
        CHECK_MSG(run(o, 2, base), "%s: %s", name, base->msg);
        CHECK_MSG(memcmp(adamw->w, base->w, sizeof(float) * (size_t)base->n) != 0, "%s trains as AdamW does", name);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            o = offload_options(cases[i].stage, 2, cases[i].opt, cases[i].param);
            o.optimizer = (zt_optimizer)kind;
            memset(r, 0, sizeof *r);
            CHECK_MSG(run(o, 2, r), "%s, %s: %s", name, cases[i].name, r->msg);
            CHECK_MSG(r->n == base->n && memcmp(r->w, base->w, sizeof(float) * (size_t)base->n) == 0,
                      "%s, %s: not stage 3's run without offload", name, cases[i].name);
        }
        zt_options to = offload_options(3, 2, ZT_OFFLOAD_NVME, ZT_OFFLOAD_NVME);
        to.optimizer = o.optimizer = (zt_optimizer)kind;
        o = offload_options(3, 2, ZT_OFFLOAD_NONE, ZT_OFFLOAD_NONE);
        o.optimizer = (zt_optimizer)kind;
        clear_checkpoint();
        resume_as = &to;
        memset(r, 0, sizeof *r);
        int ran = run(o, 2, r);
        resume_as = NULL;
        CHECK_MSG(ran, "%s, resumed into NVMe: %s", name, r->msg);
        CHECK_MSG(memcmp(r->w, base->w, sizeof(float) * (size_t)base->n) == 0, "%s: resumed into NVMe, not the run "
                  "without", name);
        clear_checkpoint();
    }
    munmap(base, sizeof *base);
    munmap(r, sizeof *r);
    munmap(adamw, sizeof *adamw);
    CHECK_EQ_INT(swap_dirs_left(), 0);
}

static void expect_error(zt_options o, const char *want) {
    zt_engine *e = make(o, NULL);
    if (e) zt_shutdown(e);
    CHECK_MSG(e == NULL, "accepted: should have said \"%s\"", want);
    CHECK_STR_CONTAINS(zt_last_error(), want);
}

/* ZeRO-3's partial offload (offload_optimizer.ratio): the groups in order while their elements fit in
   the share go to the host or NVMe, the rest stay on the device, and the run has the bits of the run
   without offload. The test model's groups: embeddings 5,120 elements (the vocabulary padded to 128
   rows), two layers of 12,704, the final norm 64 (30,592 in all), so 0.6 moves the embeddings and the
   first layer, 0.2 only the embeddings. */
TEST(offload_partial_ratio_is_bitwise_the_run_without) {
    zt_model_config mc;
    zt_model_spec spec = model_spec(&mc);
    zt_memory_plan all, part, none, without;
    zt_options o = offload_options(3, 1, ZT_OFFLOAD_CPU, ZT_OFFLOAD_NONE);
    CHECK(zt_plan_memory(&all, &spec, &o, 1) == ZT_OK);
    o.offload_ratio = 0.6;
    CHECK(zt_plan_memory(&part, &spec, &o, 1) == ZT_OK);
    o.offload_ratio = 0;
    CHECK(zt_plan_memory(&none, &spec, &o, 1) == ZT_OK);
    size_t moved = 4 * (5120 + 12704); /* f32 master of the embeddings and the first layer */
    /* (under ASan each tensor is followed by a red zone of at most 64 bytes) */
    CHECK_MSG(part.host_bytes[ZT_MEM_MASTER] >= moved && part.host_bytes[ZT_MEM_MASTER] <= moved + 2 * 64,
              "host master %zu bytes, the two groups' %zu", part.host_bytes[ZT_MEM_MASTER], moved);
    CHECK_MSG(part.host_bytes[ZT_MEM_OPTIM] >= 2 * moved && part.host_bytes[ZT_MEM_OPTIM] <= 2 * moved + 4 * 64,
              "host Adam moments %zu bytes, the two groups' %zu", part.host_bytes[ZT_MEM_OPTIM], 2 * moved);
    CHECK_EQ_INT((long long)(part.bytes[ZT_MEM_MASTER] + part.host_bytes[ZT_MEM_MASTER]), (long long)all.host_bytes[ZT_MEM_MASTER]);
    CHECK_EQ_INT((long long)(part.bytes[ZT_MEM_OPTIM] + part.host_bytes[ZT_MEM_OPTIM]), (long long)all.host_bytes[ZT_MEM_OPTIM]);
    CHECK_EQ_INT((long long)(part.bytes[ZT_MEM_GRADS] + part.host_bytes[ZT_MEM_GRADS]), (long long)all.host_bytes[ZT_MEM_GRADS]);
    CHECK(none.host_bytes[ZT_MEM_MASTER] == 0 && none.host_bytes[ZT_MEM_OPTIM] == 0 && none.host_bytes[ZT_MEM_GRADS] == 0);
    o = offload_options(3, 1, ZT_OFFLOAD_NONE, ZT_OFFLOAD_NONE);
    CHECK(zt_plan_memory(&without, &spec, &o, 1) == ZT_OK);
    CHECK(none.device == without.device && none.pinned == without.pinned); /* ratio 0: no offload at all */
    CHECK(all.device < part.device && part.device < none.device);

    static const struct { zt_offload_device opt, param; double ratio; const char *name; } cases[] = {
        {ZT_OFFLOAD_CPU, ZT_OFFLOAD_NONE, 0.6, "0.6 of the optimizer to host memory"},
        {ZT_OFFLOAD_CPU, ZT_OFFLOAD_NONE, 0.2, "0.2 of the optimizer to host memory"},
        {ZT_OFFLOAD_CPU, ZT_OFFLOAD_NONE, 0.0, "none of the optimizer to host memory"},
        {ZT_OFFLOAD_NVME, ZT_OFFLOAD_NONE, 0.6, "0.6 of the optimizer to NVMe"},
        {ZT_OFFLOAD_CPU, ZT_OFFLOAD_CPU, 0.6, "0.6 of the optimizer and the parameters to host memory"},
        {ZT_OFFLOAD_NVME, ZT_OFFLOAD_NVME, 0.6, "0.6 of the optimizer and the parameters to NVMe"},
    };
    result *base = shared(), *r = shared();
    for (int world = 1; world <= 2; world++)
        for (int accum = 1; accum <= 2; accum++) {
            o = offload_options(3, world, ZT_OFFLOAD_NONE, ZT_OFFLOAD_NONE);
            o.grad_accum = accum, o.micro_batch = ROWS / world / accum;
            CHECK_MSG(run(o, world, base), "world %d: %s", world, base->msg);
            for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                o = offload_options(3, world, cases[i].opt, cases[i].param);
                o.grad_accum = accum, o.micro_batch = ROWS / world / accum;
                o.offload_ratio = cases[i].ratio;
                o.overlap_comm = (int)(i + (size_t)accum) % 2, o.strict = o.overlap_comm && world == 2;
                memset(r, 0, sizeof *r);
                CHECK_MSG(run(o, world, r), "world %d, %s: %s", world, cases[i].name, r->msg);
                CHECK_MSG(r->n == base->n && memcmp(r->w, base->w, sizeof(float) * (size_t)base->n) == 0,
                          "world %d, accumulation %d, %s, overlap_comm %d: not the run without offload", world, accum,
                          cases[i].name, o.overlap_comm);
            }
        }
    /* a checkpoint of a partial offload resumes without offload, and one without resumes partially
       offloaded: the same bits (the state of each group is read from, and written to, where it lives) */
    for (int way = 0; way < 2; way++) {
        zt_options plain = offload_options(3, 2, ZT_OFFLOAD_NONE, ZT_OFFLOAD_NONE), partial = plain;
        partial.offload_optimizer = ZT_OFFLOAD_CPU, partial.offload_ratio = 0.6;
        CHECK(run(plain, 2, base));
        clear_checkpoint();
        resume_as = way ? &partial : &plain;
        memset(r, 0, sizeof *r);
        CHECK_MSG(run(way ? plain : partial, 2, r), "%s", r->msg);
        resume_as = NULL;
        CHECK_MSG(r->n == base->n && memcmp(r->w, base->w, sizeof(float) * (size_t)base->n) == 0,
                  "resumed %s: not the run without offload", way ? "partially offloaded" : "without offload");
    }
    clear_checkpoint();
    munmap(base, sizeof *base);
    munmap(r, sizeof *r);
    CHECK_EQ_INT(swap_dirs_left(), 0);
    o = offload_options(2, 1, ZT_OFFLOAD_CPU, ZT_OFFLOAD_NONE);
    o.offload_ratio = 0.5;
    expect_error(o, "a partial offload needs ZeRO stage 3, as in DeepSpeed (the stage is 2)");
    o = offload_options(3, 1, ZT_OFFLOAD_CPU, ZT_OFFLOAD_NONE);
    o.offload_ratio = 1.5;
    expect_error(o, "offload_optimizer.ratio 1.5: the share of the optimizer state to offload is between 0 and 1");
}

/* a capacity below every plan without offload at micro-batch 1: refused (the message names the offload
   that fits), and trained with it; the plan counts the host and NVMe bytes */
TEST(offload_trains_where_the_device_is_too_small) {
    zt_model_config mc;
    zt_model_spec spec = model_spec(&mc);
    zt_memory_plan p, off, nv;
    size_t least = (size_t)-1; /* the smallest plan without offload */
    for (int stage = 0; stage < 4; stage++)
        for (int ckpt = 0; ckpt < 2; ckpt++) {
            zt_options o = offload_options(stage, 1, ZT_OFFLOAD_NONE, ZT_OFFLOAD_NONE);
            o.micro_batch = 1, o.gradient_checkpointing = ckpt;
            CHECK(zt_plan_memory(&p, &spec, &o, 1) == ZT_OK);
            if (p.device < least) least = p.device;
        }
    zt_options o = offload_options(2, 1, ZT_OFFLOAD_CPU, ZT_OFFLOAD_NONE);
    o.micro_batch = 1, o.gradient_checkpointing = 1;
    CHECK(zt_plan_memory(&off, &spec, &o, 1) == ZT_OK);
    CHECK_MSG(off.device < least, "offload plans %zu bytes, no offload at least %zu", off.device, least);
    CHECK(off.bytes[ZT_MEM_MASTER] == 0 && off.bytes[ZT_MEM_OPTIM] == 0 && off.host_bytes[ZT_MEM_OPTIM] > 0);
    zt_options n = offload_options(3, 1, ZT_OFFLOAD_NVME, ZT_OFFLOAD_NVME);
    CHECK(zt_plan_memory(&nv, &spec, &n, 1) == ZT_OK);
    CHECK(nv.nvme > 0 && nv.bytes[ZT_MEM_PARAMS] == 0 && nv.host_bytes[ZT_MEM_PARAMS] == 0);
    size_t cap = (off.device + least) / 2;
    zt_options none = offload_options(2, 1, ZT_OFFLOAD_NONE, ZT_OFFLOAD_NONE);
    none.micro_batch = 1, none.device_bytes = cap;
    CHECK(make(none, NULL) == NULL);
    CHECK_STR_CONTAINS(zt_last_error(), "out of device memory before step 1");
    CHECK_STR_CONTAINS(zt_last_error(), "; ZeRO stage 2, activation checkpointing on, offload optimizer cpu, parameters none, "
                                        "micro-batch 1 x 1 accumulation would fit");
    o.device_bytes = cap;
    zt_engine *e = make(o, NULL);
    CHECK_MSG(e != NULL, "%s", zt_last_error());
    int32_t tok[T];
    for (int s = 0; s < 2; s++) {
        for (int i = 0; i < T; i++) tok[i] = token(s, 0, i);
        zt_forward_backward(e, tok, NULL, NULL, 1);
        CHECK(zt_step(e).loss > 0);
    }
    CHECK(zt_arena_peak(zt_backend_device_arena(zt_engine_backend(e))) <= cap);
    zt_shutdown(e);
}

/* --plan --fit tries a part of the optimizer before all of it: in a capacity that takes 0.75 (the
   embeddings and the first layer, 58% of the state) but not 0.5 (only the embeddings, 17%), it is 0.75;
   the out-of-memory error says so */
TEST(offload_fit_takes_the_smallest_share_that_fits) {
    zt_model_config mc;
    zt_model_spec spec = model_spec(&mc);
    zt_memory_plan half, most, p;
    zt_options o = offload_options(3, 1, ZT_OFFLOAD_CPU, ZT_OFFLOAD_NONE);
    o.micro_batch = 1, o.gradient_checkpointing = 1;
    o.offload_ratio = 0.5;
    CHECK(zt_plan_memory(&half, &spec, &o, 1) == ZT_OK);
    o.offload_ratio = 0.75;
    CHECK(zt_plan_memory(&most, &spec, &o, 1) == ZT_OK);
    CHECK(most.device < half.device);
    for (int stage = 0; stage < 4; stage++) { /* nothing fits without offload */
        zt_options n = offload_options(stage, 1, ZT_OFFLOAD_NONE, ZT_OFFLOAD_NONE);
        n.micro_batch = 1, n.gradient_checkpointing = 1;
        CHECK(zt_plan_memory(&p, &spec, &n, 1) == ZT_OK);
        CHECK_MSG(p.device > most.device, "stage %d fits without offload", stage);
    }
    zt_options ask = offload_options(0, 1, ZT_OFFLOAD_NONE, ZT_OFFLOAD_NONE), fits;
    ask.micro_batch = 1;
    CHECK(zt_plan_fit(&fits, &spec, &ask, 1, most.device, NULL) == ZT_OK);
    CHECK(fits.zero_stage == 3 && fits.offload_optimizer == ZT_OFFLOAD_CPU && fits.offload_param == ZT_OFFLOAD_NONE);
    CHECK_NEAR(fits.offload_ratio, 0.75, 0);
    ask.device_bytes = most.device;
    CHECK(make(ask, NULL) == NULL);
    CHECK_STR_CONTAINS(zt_last_error(), "ZeRO stage 3, activation checkpointing on, offload optimizer cpu (ratio 0.75), "
                                        "parameters none, micro-batch 1 x 1 accumulation would fit");
}

/* overlap_comm at one rank: with offload it costs a second full gradient buffer (the slice of one block
   goes to the host while the next block's backward writes the other); without offload one rank has
   nothing to overlap, and it costs nothing */
TEST(offload_overlap_comm_at_one_rank_is_planned) {
    zt_model_config mc;
    zt_model_spec spec = model_spec(&mc);
    for (int i = 0; i < 2; i++) {
        zt_options o = offload_options(2, 1, i ? ZT_OFFLOAD_CPU : ZT_OFFLOAD_NONE, ZT_OFFLOAD_NONE);
        zt_memory_plan off, on;
        CHECK(zt_plan_memory(&off, &spec, &o, 1) == ZT_OK);
        o.overlap_comm = 1;
        CHECK(zt_plan_memory(&on, &spec, &o, 1) == ZT_OK);
        long long grown = (long long)on.device - (long long)off.device;
        long long block = 4 * (12 * 32 * 32 + 13 * 32); /* the largest block's f32 gradients: a GPT-2 layer */
        CHECK_MSG(on.bytes[ZT_MEM_BUCKETS] - off.bytes[ZT_MEM_BUCKETS] == (size_t)grown, "only the buckets grow");
        if (i) CHECK_MSG(grown >= block && grown <= block + 256, "offload: overlap_comm adds %lld bytes", grown);
        else CHECK_MSG(grown == 0, "no offload: overlap_comm adds %lld bytes at one rank", grown);
    }
}


TEST(offload_refuses_bad_swap_paths) {
    zt_options o = offload_options(3, 1, ZT_OFFLOAD_NVME, ZT_OFFLOAD_NONE);
    o.offload_optimizer_path = "/nonexistent/zt";
    expect_error(o, "zero_optimization.offload_optimizer.nvme_path /nonexistent/zt does not exist");
    o = offload_options(3, 1, ZT_OFFLOAD_NONE, ZT_OFFLOAD_NVME);
    o.offload_param_path = "/dev/null";
    expect_error(o, "zero_optimization.offload_param.nvme_path /dev/null is not a directory");
    o = offload_options(3, 1, ZT_OFFLOAD_NVME, ZT_OFFLOAD_NVME);
    setenv("ZT_TEST_NVME_FREE", "4096", 1);
    expect_error(o, "MiB free; this rank's swap files need");
    unsetenv("ZT_TEST_NVME_FREE");
    o = offload_options(3, 1, ZT_OFFLOAD_NONE, ZT_OFFLOAD_NVME);
    o.offload_param_path = NULL;
    expect_error(o, "NVMe offload needs a directory");
    o = offload_options(1, 1, ZT_OFFLOAD_NVME, ZT_OFFLOAD_NONE);
    expect_error(o, "offload needs ZeRO");
    CHECK_EQ_INT(swap_dirs_left(), 0);
}

/* a path to this process's swap file `name`: the files are unlinked once made, so through the descriptor that
   holds it (/proc/self/fd/N, whose link names the file it was, "(deleted)") */
static int swap_file(char *out, size_t cap, const char *name) {
    DIR *d = opendir("/proc/self/fd");
    int found = 0;
    char want[64], fd[300], target[1024];
    snprintf(want, sizeof want, "/%s (deleted)", name);
    for (struct dirent *de; d && (de = readdir(d)) != NULL && !found;) {
        snprintf(fd, sizeof fd, "/proc/self/fd/%s", de->d_name);
        ssize_t n = readlink(fd, target, sizeof target - 1);
        if (n <= 0) continue;
        target[n] = 0;
        if (strstr(target, "/zt-swap-") && strstr(target, want)) found = snprintf(out, cap, "%s", fd) < (int)cap;
    }
    if (d) closedir(d);
    return found;
}

/* a child trains a step, damages its own swap file, and trains on: it must stop with `want` */
static void damaged(int truncate_it, const char *want) {
    char errpath[300];
    snprintf(errpath, sizeof errpath, "%s.err", nvme());
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 2);
        zt_engine *e = make(offload_options(3, 1, ZT_OFFLOAD_NVME, ZT_OFFLOAD_NVME), NULL);
        if (!e) _exit(3);
        train(e, 0, 1, 0, 1);
        char path[512];
        if (!swap_file(path, sizeof path, "parameters")) _exit(4);
        int sf = open(path, O_WRONLY);
        if (truncate_it) {
            if (ftruncate(sf, 4096) != 0) _exit(5);
        } else {
            char junk[4096];
            memset(junk, 0x5a, sizeof junk);
            if (pwrite(sf, junk, sizeof junk, 0) != (ssize_t)sizeof junk) _exit(5);
        }
        close(sf);
        train(e, 0, 1, 0, 1);
        _exit(0); /* not reached: the damage is found */
    }
    int status = 0;
    waitpid(pid, &status, 0);
    char msg[2048] = "";
    FILE *f = fopen(errpath, "r");
    size_t n = f ? fread(msg, 1, sizeof msg - 1, f) : 0;
    msg[n] = 0;
    if (f) fclose(f);
    unlink(errpath);
    CHECK_MSG(!(WIFEXITED(status) && WEXITSTATUS(status) == 0), "the damaged swap file went unnoticed");
    CHECK_STR_CONTAINS(msg, want);
    CHECK_EQ_INT(swap_dirs_left(), 0); /* removed on the way out */
}

TEST(offload_finds_a_swap_file_damaged_under_the_job) {
    damaged(1, "was truncated under the running job");
    damaged(0, "changed or replaced under the running job");
}

TEST(offload_clears_the_swap_directory_of_a_killed_job) {
    pid_t dead = fork();
    if (dead == 0) _exit(0);
    waitpid(dead, NULL, 0);
    char host[64] = "host", dir[512], file[600];
    gethostname(host, sizeof host - 1);
    for (char *c = host; *c; c++) if (*c == '/' || *c == '-') *c = '_';
    snprintf(dir, sizeof dir, "%s/zt-swap-%s-%d", nvme(), host, (int)dead);
    snprintf(file, sizeof file, "%s/parameters", dir);
    CHECK(mkdir(dir, 0700) == 0);
    FILE *f = fopen(file, "w");
    CHECK(f != NULL);
    fputs("left by a killed job", f);
    fclose(f);
    zt_engine *e = make(offload_options(3, 1, ZT_OFFLOAD_NONE, ZT_OFFLOAD_NVME), NULL);
    CHECK_MSG(e != NULL, "%s", zt_last_error());
    struct stat st;
    CHECK(stat(dir, &st) != 0); /* gone */
    zt_shutdown(e);
    CHECK_EQ_INT(swap_dirs_left(), 0);
    rmdir(nvme());
}

/* two engines of one process offload to the same directory: each has its own swap files */
TEST(offload_two_engines_in_one_process) {
    zt_engine *a = make(offload_options(3, 1, ZT_OFFLOAD_NVME, ZT_OFFLOAD_NVME), NULL);
    CHECK_MSG(a != NULL, "%s", zt_last_error());
    CHECK_EQ_INT(swap_dirs_left(), 0); /* unlinked once made: nothing for a killed job to leave behind */
    train(a, 0, 1, 0, 1);
    zt_engine *b = make(offload_options(3, 1, ZT_OFFLOAD_NVME, ZT_OFFLOAD_NVME), NULL);
    CHECK_MSG(b != NULL, "%s", zt_last_error());
    train(a, 0, 1, 0, 1); /* A's files are still A's */
    train(b, 0, 1, 0, 1);
    zt_shutdown(b);
    train(a, 0, 1, 0, 1);
    zt_shutdown(a);
    CHECK_EQ_INT(swap_dirs_left(), 0);
    rmdir(nvme());
}
