/* tests/test_core.c - base, arena, tensor and backend plumbing: conversions, arenas and their measure
   mode, stb_ds in the metadata arena, the pool, streams and events in strict mode, error messages. */
#define _POSIX_C_SOURCE 200809L /* fork, pipe */
#include "test.h"
#include <setjmp.h>
#include <unistd.h>
#include <sys/wait.h>
#define STB_DS_IMPLEMENTATION
#include <stb/stb_ds.h>
#if defined(__F16C__)
#include <immintrin.h>
#endif

static uint32_t bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float from_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

TEST(bf16_rounds_to_nearest_even) {
    /* 1 + 2^-8 is exactly half way between bf16 1.0 and 1 + 2^-7: ties go to the even mantissa */
    CHECK_EQ_INT(zt_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);
    CHECK_EQ_INT(zt_f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82); /* tie, odd below: rounds up */
    CHECK_EQ_INT(zt_f32_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81); /* above the tie */
    CHECK_EQ_INT(zt_f32_to_bf16(-2.0f), 0xc000);
    CHECK_EQ_INT(zt_f32_to_bf16(-0.0f), 0x8000);
    CHECK_EQ_INT(zt_f32_to_bf16(INFINITY), 0x7f80);
    CHECK_EQ_INT(zt_f32_to_bf16(-INFINITY), 0xff80);
    CHECK_EQ_INT(zt_f32_to_bf16(from_bits(0x7f7fffff)), 0x7f80); /* FLT_MAX rounds to infinity */
    CHECK_EQ_INT(zt_f32_to_bf16(from_bits(0x00000001)), 0x0000); /* smallest subnormal: to zero */
    CHECK_EQ_INT(zt_f32_to_bf16(from_bits(0x00010000)), 0x0001); /* bf16 subnormal kept */
}

TEST(bf16_nan_stays_nan) {
    uint32_t nans[] = {0x7fc00000u, 0x7f800001u, 0xffffffffu, 0x7fffffffu, 0x7f80ffffu};
    for (int i = 0; i < 5; i++) {
        uint16_t h = zt_f32_to_bf16(from_bits(nans[i]));
        CHECK_MSG((h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0, "NaN %08x became %04x", nans[i], h);
        CHECK_MSG(h & 0x40, "NaN %08x became a signalling NaN %04x", nans[i], h);
        CHECK(isnan(zt_bf16_to_f32(h)));
    }
}

TEST(bf16_round_trips_every_value) {
    for (uint32_t h = 0; h < 65536; h++) {
        float f = zt_bf16_to_f32((uint16_t)h);
        CHECK_EQ_INT(bits(f), h << 16);
        if (isnan(f)) continue;
        CHECK_EQ_INT(zt_f32_to_bf16(f), h);
    }
}

TEST(f16_edge_cases) {
    CHECK_EQ_INT(zt_f32_to_f16(1.0f), 0x3c00);
    CHECK_EQ_INT(zt_f32_to_f16(65504.0f), 0x7bff);     /* largest finite */
    CHECK_EQ_INT(zt_f32_to_f16(65519.99f), 0x7bff);    /* just below the tie */
    CHECK_EQ_INT(zt_f32_to_f16(65520.0f), 0x7c00);     /* the tie rounds to even: infinity */
    CHECK_EQ_INT(zt_f32_to_f16(-1e10f), 0xfc00);
    CHECK_EQ_INT(zt_f32_to_f16(0x1p-14f), 0x0400);     /* smallest normal */
    CHECK_EQ_INT(zt_f32_to_f16(0x1p-24f), 0x0001);     /* smallest subnormal */
    CHECK_EQ_INT(zt_f32_to_f16(0x1p-25f), 0x0000);     /* half of it: tie to even, zero */
    CHECK_EQ_INT(zt_f32_to_f16(0x1.8p-24f), 0x0002);   /* 1.5 ulp: tie to even, 2 */
    CHECK_EQ_INT(zt_f32_to_f16(0x1.000002p-25f), 0x0001); /* just above half */
    CHECK_EQ_INT(zt_f32_to_f16(-0.0f), 0x8000);
    CHECK_EQ_INT(zt_f32_to_f16(0x1.ffcp-15f), 0x0400); /* largest subnormal + rounding carries to normal */
    uint16_t n = zt_f32_to_f16(from_bits(0x7f800001u));
    CHECK_MSG((n & 0x7c00) == 0x7c00 && (n & 0x3ff) != 0, "sNaN became %04x", n);
    CHECK(isnan(zt_f16_to_f32(n)));
    CHECK(zt_f16_to_f32(0x7c00) == INFINITY);
    CHECK(zt_f16_to_f32(0x0001) == 0x1p-24f);
}

TEST(f16_round_trips_every_value) {
    for (uint32_t h = 0; h < 65536; h++) {
        float f = zt_f16_to_f32((uint16_t)h);
        if (isnan(f)) continue;
        CHECK_MSG(zt_f32_to_f16(f) == h, "f16 %04x -> %a -> %04x", h, f, zt_f32_to_f16(f));
    }
}

#if defined(__F16C__)
/* The processor's own conversion rounds to nearest even too: agree with it on a million values. */
TEST(f16_agrees_with_hardware) {
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 1000000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        float f = from_bits((uint32_t)x);
        if (i % 3 == 0) f = from_bits(((uint32_t)x & 0x87ffffffu) | 0x30000000u); /* near f16 range */
        if (isnan(f)) continue;
        uint16_t hw = _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
        CHECK_MSG(zt_f32_to_f16(f) == hw, "%a: zt %04x, hardware %04x", f, zt_f32_to_f16(f), hw);
    }
}
#endif

TEST(convert_between_dtypes) {
    float src[5] = {1.5f, -2.25f, 0.0f, 1000.0f, 3.0f};
    uint16_t bf[5];
    float back[5];
    int32_t ints[5];
    zt_convert(bf, ZT_BF16, src, ZT_F32, 5);
    zt_convert(back, ZT_F32, bf, ZT_BF16, 5);
    for (int i = 0; i < 5; i++) CHECK(back[i] == src[i]);
    zt_convert(ints, ZT_I32, src, ZT_F32, 5);
    CHECK_EQ_INT(ints[3], 1000);
    CHECK_EQ_INT(ints[1], -2);
}

/* ---- arenas ---- */

static jmp_buf fatal_jump;
static char fatal_message[1024];
static void catch_fatal(const char *msg, void *user) {
    (void)user;
    snprintf(fatal_message, sizeof fatal_message, "%s", msg);
    longjmp(fatal_jump, 1);
}

TEST(arena_exhaustion_names_the_arena_and_changes_nothing) {
    static _Alignas(64) uint8_t mem[4096];
    zt_arena a;
    zt_arena_init(&a, "activations", mem, sizeof mem);
    uint8_t *p = (uint8_t *)zt_arena_push(&a, 1000, 64);
    memset(p, 0xab, 1000);
    size_t used = a.used;
    CHECK(zt_arena_try_push(&a, 5000, 64) == NULL);
    CHECK_STR_CONTAINS(zt_last_error(), "arena 'activations'");
    CHECK_STR_CONTAINS(zt_last_error(), "5000 bytes requested");
    CHECK_STR_CONTAINS(zt_last_error(), "of 4096 bytes");
    CHECK_EQ_INT(a.used, used);
    for (int i = 0; i < 1000; i++) CHECK(p[i] == 0xab);
    CHECK(zt_arena_push(&a, 100, 16) != NULL); /* still usable */

    /* zt_arena_push does not return NULL: it stops with the same sentence */
    zt_set_fatal_handler(catch_fatal, NULL);
    volatile int reached = 0;
    if (setjmp(fatal_jump) == 0) {
        zt_arena_push(&a, 1 << 20, 64);
        reached = 1;
    }
    zt_set_fatal_handler(NULL, NULL);
    CHECK(!reached);
    CHECK_STR_CONTAINS(fatal_message, "arena 'activations' is out of memory: 1048576 bytes requested");
}

/* a "step": persistent tensors, then scratch by value that vanishes, then more */
static void arena_workload(zt_arena *a) {
    zt_tensor x = zt_tensor_new(a, ZT_F32, ZT_DEVICE, zt_shape2(13, 7));
    (void)x;
    size_t mark = zt_arena_mark(a);
    {
        zt_arena scratch = *a;
        ZT_PUSH(&scratch, double, 1000);
        zt_tensor_new(&scratch, ZT_BF16, ZT_DEVICE, zt_shape3(3, 5, 11));
    }
    ZT_PUSH(a, int32_t, 17);
    zt_arena_reset(a, mark);
    zt_tensor_new(a, ZT_BF16, ZT_DEVICE, zt_shape1(999));
    zt_arena_strdup(a, "name of a thing");
}

TEST(arena_measure_mode_predicts_the_real_pass_exactly) {
    zt_arena m;
    zt_arena_init_measure(&m, "measure");
    arena_workload(&m);
    CHECK(zt_arena_measuring(&m));
    size_t need = zt_arena_peak(&m);
    CHECK(need > 8000); /* the scratch doubles count toward the peak */
    uint8_t *mem = (uint8_t *)aligned_alloc(4096, (need + 4095) / 4096 * 4096);
    zt_arena real;
    zt_arena_init(&real, "real", mem, need);
    arena_workload(&real);
    CHECK_EQ_INT(zt_arena_peak(&real), need);
    CHECK_EQ_INT(real.used, m.used);
    /* one byte less and the same workload no longer fits */
    zt_arena small;
    zt_arena_init(&small, "small", mem, need - 1);
    zt_set_fatal_handler(catch_fatal, NULL);
    volatile int finished = 0;
    if (setjmp(fatal_jump) == 0) {
        arena_workload(&small);
        finished = 1;
    }
    zt_set_fatal_handler(NULL, NULL);
    free(mem);
    CHECK(!finished);
    CHECK_STR_CONTAINS(fatal_message, "arena 'small'");
}

TEST(arena_alignment) {
    static _Alignas(256) uint8_t mem[1 << 12];
    zt_arena a;
    zt_arena_init(&a, "a", mem, sizeof mem);
    zt_arena_push(&a, 3, 1);
    void *p = zt_arena_push(&a, 8, 256);
    CHECK(((uintptr_t)p & 255) == 0);
    zt_arena m;
    zt_arena_init_measure(&m, "m");
    zt_arena_push(&m, 3, 1);
    p = zt_arena_push(&m, 8, 256);
    CHECK(((uintptr_t)p & 255) == 0);
}

/* stb_ds here is the program's own copy, unprefixed: zt's renamed copy does not clash with it. */
TEST(stb_ds_beside_zt) {
    int *arr = NULL;
    for (int i = 0; i < 1000; i++) stbds_arrput(arr, i * i);
    CHECK_EQ_INT(stbds_arrlen(arr), 1000);
    CHECK_EQ_INT(arr[999], 999 * 999);
    stbds_arrfree(arr);
}

static int pool_hits[10007];
static void pool_count(void *ctx, int64_t i, int thread) {
    (void)ctx;
    (void)thread;
    __atomic_fetch_add(&pool_hits[i], 1, __ATOMIC_RELAXED);
}

TEST(pool_runs_every_task_once) {
    for (int threads = 1; threads <= 3; threads++) {
        zt_pool *p = zt_pool_create(threads);
        CHECK_EQ_INT(zt_pool_threads(p), threads);
        for (int rep = 0; rep < 20; rep++) {
            memset(pool_hits, 0, sizeof pool_hits);
            zt_pool_run(p, 10007, pool_count, NULL);
            for (int i = 0; i < 10007; i++) CHECK_EQ_INT(pool_hits[i], 1);
        }
        zt_pool_destroy(p);
    }
}

/* ---- backends, streams and events ---- */

static zt_backend *make_backend(int strict, int threads, size_t device_bytes) {
    zt_backend *be = NULL;
    zt_backend_desc d = zt_backend_desc_default();
    d.strict = strict;
    d.threads = threads;
    d.device_bytes = device_bytes;
    d.pinned_bytes = 1 << 16;
    zt_result r = zt_backend_create(&be, "cpu", &d);
    if (r != ZT_OK) zt_fatal("%s", zt_last_error());
    return be;
}

TEST(backend_names_are_checked) {
    zt_backend *be = NULL;
    CHECK(zt_backend_create(&be, "tpu", NULL) == ZT_ERROR_INVALID);
    CHECK(be == NULL);
    CHECK_STR_CONTAINS(zt_last_error(), "unknown backend 'tpu'");
}

TEST(device_capacity_is_honoured) {
    zt_backend *be = make_backend(0, 1, 1 << 16);
    zt_arena *dev = zt_backend_device_arena(be);
    CHECK(zt_arena_try_push(dev, 1 << 17, 64) == NULL);
    CHECK_STR_CONTAINS(zt_last_error(), "arena 'device'");
    CHECK_STR_CONTAINS(zt_last_error(), "of 65536 bytes");
    zt_backend_destroy(be);
}

/* In strict mode nothing runs until the host waits: a read without a sync sees the old memory,
   every time, instead of racing. */
TEST(strict_mode_exposes_a_missing_sync) {
    zt_backend *be = make_backend(1, 2, 1 << 20);
    zt_stream *s = zt_backend_stream(be);
    zt_tensor x = zt_tensor_new(zt_backend_device_arena(be), ZT_F32, ZT_DEVICE, zt_shape1(4));
    float host[4] = {0, 0, 0, 0};
    zt_tensor h = zt_tensor_make(host, ZT_F32, ZT_HOST, zt_shape1(4));
    zt_fill(s, x, 7.0f);
    zt_copy(s, h, x);
    CHECK(host[3] == 0.0f); /* no sync yet: not run */
    zt_stream_sync(s);
    CHECK(host[3] == 7.0f);
    zt_backend_destroy(be);
}

/* ZT_TEST_GUARD_DEVICE=1 (./build.sh test runs the whole runner so): copies through a stream still work,
   and a direct host read of a device tensor stops the process with the guard's message */
TEST(guard_mode_stops_a_host_access_to_device_memory) {
    int p[2];
    CHECK(pipe(p) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(p[1], 2);
        setenv("ZT_TEST_GUARD_DEVICE", "1", 1);
        zt_backend *be = make_backend(0, 1, 1 << 20);
        zt_stream *s = zt_backend_stream(be);
        zt_tensor x = zt_tensor_new(zt_backend_device_arena(be), ZT_F32, ZT_DEVICE, zt_shape1(4));
        float host[4] = {0, 0, 0, 0};
        zt_fill(s, x, 7.0f);
        zt_copy(s, zt_tensor_make(host, ZT_F32, ZT_HOST, zt_shape1(4)), x);
        zt_stream_sync(s);
        if (host[3] != 7.0f) _exit(3); /* through the stream: allowed */
        volatile float seen = ((float *)x.data)[0]; /* the host itself: stopped here */
        _exit(seen == 7.0f ? 4 : 5);
    }
    close(p[1]);
    int status = 0;
    waitpid(pid, &status, 0);
    char err[4096] = "";
    ssize_t got = read(p[0], err, sizeof err - 1);
    err[got > 0 ? got : 0] = 0;
    close(p[0]);
    CHECK_MSG(WIFSIGNALED(status), "the host read a device tensor (exit status %d)",
              WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    CHECK_STR_CONTAINS(err, "the host touched the CPU backend's device memory outside a stream command");
}

TEST(events_order_work_across_streams) {
    for (int strict = 0; strict <= 1; strict++) {
        zt_backend *be = make_backend(strict, 2, 1 << 20);
        zt_stream *s1 = zt_backend_stream(be), *s2 = zt_stream_create(be);
        zt_event *e = zt_event_create(be);
        zt_tensor x = zt_tensor_new(zt_backend_device_arena(be), ZT_F32, ZT_DEVICE, zt_shape1(1000));
        float host[1000];
        zt_tensor h = zt_tensor_make(host, ZT_F32, ZT_HOST, zt_shape1(1000));
        zt_fill(s1, x, 2.0f);
        zt_scale(s1, x, 3.0f);
        zt_event_record(e, s1);
        zt_stream_wait(s2, e);
        zt_copy(s2, h, x);
        zt_stream_sync(s2); /* waiting for s2 lets s1 run up to the event */
        CHECK(host[999] == 6.0f);
        if (strict) {
            /* without an event, s2 does not wait for s1: strict mode shows it */
            zt_fill(s1, x, 5.0f);
            zt_copy(s2, h, x);
            zt_stream_sync(s2);
            CHECK(host[0] == 6.0f);
            zt_event_sync(e); /* an old event is complete */
            zt_stream_sync(s1);
            zt_copy(s2, h, x);
            zt_stream_sync(s2);
            CHECK(host[0] == 5.0f);
        }
        zt_backend_destroy(be);
    }
}

TEST(long_queues_do_not_deadlock_in_strict_mode) {
    zt_backend *be = make_backend(1, 1, 1 << 20);
    zt_stream *s = zt_backend_stream(be);
    zt_tensor x = zt_tensor_new(zt_backend_device_arena(be), ZT_F32, ZT_DEVICE, zt_shape1(8));
    zt_fill(s, x, 1.0f);
    for (int i = 0; i < 1000; i++) zt_scale(s, x, 1.0f + (i % 2 ? 1.0f : -0.5f)); /* *0.5, *2 */
    float v[8];
    zt_copy(s, zt_tensor_make(v, ZT_F32, ZT_HOST, zt_shape1(8)), x);
    zt_stream_sync(s);
    CHECK(v[7] == 1.0f);
    zt_backend_destroy(be);
}

TEST(misused_ops_say_what_is_wrong) {
    zt_backend *be = make_backend(0, 1, 1 << 20);
    zt_stream *s = zt_backend_stream(be);
    zt_arena *dev = zt_backend_device_arena(be);
    zt_tensor a = zt_tensor_new(dev, ZT_F32, ZT_DEVICE, zt_shape2(4, 5));
    zt_tensor b = zt_tensor_new(dev, ZT_F32, ZT_DEVICE, zt_shape2(6, 5));
    zt_tensor c = zt_tensor_new(dev, ZT_F32, ZT_DEVICE, zt_shape2(4, 7));
    float host[20];
    zt_tensor h = zt_tensor_make(host, ZT_F32, ZT_HOST, zt_shape2(4, 5));
    zt_set_fatal_handler(catch_fatal, NULL);
    volatile int step = 0;
    if (setjmp(fatal_jump) == 0) {
        zt_matmul_forward(s, c, a, b, NULL);
        step = 1;
    }
    if (step == 0) {
        CHECK_STR_CONTAINS(fatal_message, "zt_gemm: shapes do not chain: c (4, 7)");
        if (setjmp(fatal_jump) == 0) {
            zt_gelu_forward(s, a, h); /* a host tensor given to a kernel */
            step = 2;
        }
    }
    CHECK_EQ_INT(step, 0);
    CHECK_STR_CONTAINS(fatal_message, "zt_gelu_forward: inp must be on the device, got (4, 5) f32 on the host");
    /* a layernorm without its mean (the CUDA kernel would take it for an rmsnorm) */
    zt_tensor x = zt_tensor_new(dev, ZT_F32, ZT_DEVICE, zt_shape2(4, 8)), w = zt_tensor_new(dev, ZT_F32, ZT_DEVICE, zt_shape1(8));
    zt_tensor rstd = zt_tensor_new(dev, ZT_F32, ZT_DEVICE, zt_shape1(4)), none;
    memset(&none, 0, sizeof none);
    if (setjmp(fatal_jump) == 0) {
        zt_layernorm_forward(s, x, none, rstd, x, w, w, 1e-5f);
        step = 3;
    }
    zt_set_fatal_handler(NULL, NULL);
    zt_backend_destroy(be);
    CHECK_EQ_INT(step, 0);
    CHECK_STR_CONTAINS(fatal_message, "zt_layernorm_forward: mean must be given");
}

TEST(measure_mode_runs_nothing) {
    zt_backend *be = make_backend(0, 1, 1 << 20);
    zt_stream *s = zt_backend_stream(be);
    zt_arena m;
    zt_arena_init_measure(&m, "measure");
    zt_backend_set_measure(be, 1);
    zt_tensor x = zt_tensor_new(&m, ZT_F32, ZT_DEVICE, zt_shape2(1000, 1000)); /* fake address */
    zt_fill(s, x, 1.0f);
    zt_gelu_forward(s, x, x);
    zt_stream_sync(s);
    zt_backend_set_measure(be, 0);
    zt_backend_destroy(be);
    /* the size of the tensor, and under ASan the red zone after it */
    CHECK(zt_arena_peak(&m) >= 4000000 && zt_arena_peak(&m) <= 4000000 + 64);
}

TEST(views_and_slices) {
    float data[24];
    for (int i = 0; i < 24; i++) data[i] = (float)i;
    zt_tensor t = zt_tensor_make(data, ZT_F32, ZT_HOST, zt_shape3(2, 3, 4));
    CHECK_EQ_INT(zt_numel(t), 24);
    CHECK_EQ_INT(zt_rows(t), 6);
    CHECK_EQ_INT(zt_cols(t), 4);
    zt_tensor s = zt_slice(t, 1, 1);
    CHECK(((float *)s.data)[0] == 12.0f);
    CHECK_EQ_INT(zt_numel(s), 12);
    zt_tensor v = zt_view(t, 4, zt_shape2(5, 4));
    CHECK(((float *)v.data)[0] == 4.0f);
    char buf[64];
    zt_shape_str(t.shape, buf, sizeof buf);
    CHECK(strcmp(buf, "(2, 3, 4)") == 0);
}
