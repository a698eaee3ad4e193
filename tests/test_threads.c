/* tests/test_threads.c - thread-count independence and strict mode.
   Work is split by shape, never by thread count (DESIGN.md, Determinism), so each op run on CPU
   backends with 1, 2 and 3 threads must give identical bits; and strict mode, which runs stream work
   only when the host waits, must give the same bits as ordinary mode once the host has synced.
   Sizes are larger than in test_ops.c so that the CPU kernels split every op into several tasks. */
#include "ops_harness.h"

/* The outputs of one scenario run, as raw bytes per named tensor. */
#define MAX_OUTPUTS 8
typedef struct outputs {
    int n;
    const char *name[MAX_OUTPUTS];
    zt_dtype dtype[MAX_OUTPUTS];
    size_t bytes[MAX_OUTPUTS];
    void *data[MAX_OUTPUTS];
} outputs;

static void keep(outputs *o, cpu_dev *d, const char *name, zt_tensor t) {
    ZT_ASSERT(o->n < MAX_OUTPUTS);
    o->name[o->n] = name, o->dtype[o->n] = t.dtype, o->bytes[o->n] = zt_nbytes(t);
    o->data[o->n] = download_raw(d, t);
    o->n++;
}

/* A scenario builds its inputs from a fixed seed, queues its ops without syncing in between (the
   uploads sync), and keeps its outputs. */
typedef void (*scenario_fn)(cpu_dev *d, outputs *o);

static void scen_gemm(cpu_dev *d, outputs *o) {
    rng r = {300};
    const int64_t M = 200, N = 300, K = 93; /* several 96 x 256 tiles */
    zt_tensor A = to_dev(d, ZT_F32, zt_shape2(M, K), drand(&r, M * K, -1, 1));
    zt_tensor B = to_dev(d, ZT_F32, zt_shape2(N, K), drand(&r, N * K, -1, 1));
    zt_tensor Bias = to_dev(d, ZT_F32, zt_shape1(N), drand(&r, N, -1, 1));
    zt_tensor C = to_dev(d, ZT_F32, zt_shape2(M, N), drand(&r, M * N, -1, 1));
    zt_gemm(d->s, C, A, B, 0, 1, 0.75f, 0.5f, &Bias);
    zt_tensor Bn = to_dev(d, ZT_BF16, zt_shape2(M, N), drand(&r, M * N, -1, 1));
    zt_tensor C2 = to_dev(d, ZT_BF16, zt_shape2(K, N), drand(&r, K * N, -1, 1));
    zt_tensor At16 = to_dev(d, ZT_BF16, zt_shape2(M, K), drand(&r, M * K, -1, 1));
    zt_gemm(d->s, C2, At16, Bn, 1, 0, 1.0f, 1.0f, NULL); /* a weight-gradient shaped product */
    zt_tensor A3 = to_dev(d, ZT_F32, zt_shape3(4, M, K), drand(&r, 4 * M * K, -1, 1));
    zt_tensor B3 = to_dev(d, ZT_F32, zt_shape3(1, K, N), drand(&r, K * N, -1, 1));
    zt_tensor C3 = dev_new(d, ZT_F32, zt_shape3(4, M, N));
    zt_gemm(d->s, C3, A3, B3, 0, 0, 1.0f, 0.0f, NULL);
    keep(o, d, "gemm f32 c", C);
    keep(o, d, "gemm bf16 trans_a c", C2);
    keep(o, d, "gemm batched c", C3);
}

static void scen_matmul_backward(cpu_dev *d, outputs *o) {
    rng r = {301};
    const int64_t N = 257, C = 96, OC = 300;
    zt_tensor Inp = to_dev(d, ZT_F32, zt_shape2(N, C), drand(&r, N * C, -1, 1));
    zt_tensor W = to_dev(d, ZT_F32, zt_shape2(OC, C), drand(&r, OC * C, -1, 1));
    zt_tensor Dout = to_dev(d, ZT_F32, zt_shape2(N, OC), drand(&r, N * OC, -1, 1));
    zt_tensor Dinp = to_dev(d, ZT_F32, zt_shape2(N, C), drand(&r, N * C, -1, 1));
    zt_tensor Dw = to_dev(d, ZT_F32, zt_shape2(OC, C), drand(&r, OC * C, -1, 1));
    zt_tensor Db = to_dev(d, ZT_F32, zt_shape1(OC), drand(&r, OC, -1, 1));
    zt_tensor Dsum = to_dev(d, ZT_F32, zt_shape1(OC), drand(&r, OC, -1, 1));
    zt_matmul_backward(d->s, &Dinp, &Dw, &Db, Dout, Inp, W);
    zt_sum_rows(d->s, Dsum, Dout);
    keep(o, d, "matmul dinp", Dinp);
    keep(o, d, "matmul dweight", Dw);
    keep(o, d, "matmul dbias", Db);
    keep(o, d, "sum_rows out", Dsum);
}

static void scen_layernorm(cpu_dev *d, outputs *o) {
    rng r = {302};
    const int64_t N = 600, C = 259;
    zt_tensor Inp = to_dev(d, ZT_F32, zt_shape2(N, C), drand(&r, N * C, -1, 2));
    zt_tensor W = to_dev(d, ZT_F32, zt_shape1(C), drand(&r, C, 0.5, 1.5));
    zt_tensor B = to_dev(d, ZT_F32, zt_shape1(C), drand(&r, C, -1, 1));
    zt_tensor Out = dev_new(d, ZT_F32, zt_shape2(N, C));
    zt_tensor Mean = dev_new(d, ZT_F32, zt_shape1(N)), Rstd = dev_new(d, ZT_F32, zt_shape1(N));
    zt_tensor Dout = to_dev(d, ZT_F32, zt_shape2(N, C), drand(&r, N * C, -1, 1));
    zt_tensor Dinp = to_dev(d, ZT_F32, zt_shape2(N, C), drand(&r, N * C, -1, 1));
    zt_tensor Dw = to_dev(d, ZT_F32, zt_shape1(C), drand(&r, C, -1, 1));
    zt_tensor Db = to_dev(d, ZT_F32, zt_shape1(C), drand(&r, C, -1, 1));
    zt_layernorm_forward(d->s, Out, Mean, Rstd, Inp, W, B, 1e-5f);
    zt_layernorm_backward(d->s, Dinp, Dw, Db, Dout, Inp, W, Mean, Rstd);
    zt_tensor R2 = dev_new(d, ZT_F32, zt_shape1(N)), Out2 = dev_new(d, ZT_F32, zt_shape2(N, C));
    zt_tensor Dw2 = to_dev(d, ZT_F32, zt_shape1(C), drand(&r, C, -1, 1));
    zt_rmsnorm_forward(d->s, Out2, R2, Inp, W, 1e-6f);
    zt_rmsnorm_backward(d->s, Dinp, Dw2, Dout, Inp, W, R2);
    keep(o, d, "layernorm out", Out);
    keep(o, d, "layernorm rstd", Rstd);
    keep(o, d, "layernorm dweight", Dw);
    keep(o, d, "layernorm dbias", Db);
    keep(o, d, "rmsnorm out", Out2);
    keep(o, d, "layernorm + rmsnorm dinp", Dinp);
    keep(o, d, "rmsnorm dweight", Dw2);
}

static void scen_embedding(cpu_dev *d, outputs *o) {
    rng r = {303};
    const int64_t N = 333, V = 37, C = 200;
    int32_t *ids = ibuf(N);
    for (int64_t n = 0; n < N; n++) ids[n] = n % 3 ? rng_int(&r, V) : 5; /* id 5 a third of the time */
    zt_tensor Ids = ids_to_dev(d, zt_shape1(N), ids);
    zt_tensor Table = to_dev(d, ZT_BF16, zt_shape2(V, C), drand(&r, V * C, -1, 1));
    zt_tensor Out = to_dev(d, ZT_BF16, zt_shape2(N, C), drand(&r, N * C, -1, 1));
    zt_tensor Dout = to_dev(d, ZT_F32, zt_shape2(N, C), drand(&r, N * C, -1, 1));
    zt_tensor Dt = to_dev(d, ZT_F32, zt_shape2(V, C), drand(&r, V * C, -1, 1));
    zt_embedding_forward(d->s, Out, Ids, Table, 1);
    zt_embedding_backward(d->s, Dt, Dout, Ids);
    keep(o, d, "embedding out", Out);
    keep(o, d, "embedding dtable", Dt);
}

static void scen_attention(cpu_dev *d, outputs *o, int with_starts) {
    rng r = {304};
    const int64_t B = 2, T = 67, NH = 8, NKV = 2, HD = 32, nq = B * T * NH * HD, nk = B * T * NKV * HD;
    int32_t *starts = ibuf(B * T);
    for (int64_t t = 0; t < B * T; t++) starts[t] = (int32_t)((t % T) < 20 ? 0 : (t % T) < 45 ? 20 : 45);
    zt_tensor St = ids_to_dev(d, zt_shape2(B, T), starts);
    zt_tensor Q = to_dev(d, ZT_F32, zt_shape4(B, T, NH, HD), drand(&r, nq, -2, 2));
    zt_tensor K = to_dev(d, ZT_F32, zt_shape4(B, T, NKV, HD), drand(&r, nk, -2, 2));
    zt_tensor V = to_dev(d, ZT_F32, zt_shape4(B, T, NKV, HD), drand(&r, nk, -1, 1));
    zt_tensor Out = dev_new(d, ZT_F32, zt_shape4(B, T, NH, HD));
    zt_tensor Lse = dev_new(d, ZT_F32, zt_shape3(B, NH, T));
    zt_tensor Dout = to_dev(d, ZT_F32, zt_shape4(B, T, NH, HD), drand(&r, nq, -1, 1));
    zt_tensor Dq = to_dev(d, ZT_F32, zt_shape4(B, T, NH, HD), drand(&r, nq, -1, 1));
    zt_tensor Dk = to_dev(d, ZT_F32, zt_shape4(B, T, NKV, HD), drand(&r, nk, -1, 1));
    zt_tensor Dv = to_dev(d, ZT_F32, zt_shape4(B, T, NKV, HD), drand(&r, nk, -1, 1));
    zt_attention_forward(d->s, Out, Lse, Q, K, V, with_starts ? &St : NULL);
    zt_attention_backward(d->s, Dq, Dk, Dv, Dout, Q, K, V, Out, Lse, with_starts ? &St : NULL);
    keep(o, d, "attention out", Out);
    keep(o, d, "attention lse", Lse);
    keep(o, d, "attention dq", Dq);
    keep(o, d, "attention dk", Dk);
    keep(o, d, "attention dv", Dv);
}
static void scen_attention_causal(cpu_dev *d, outputs *o) { scen_attention(d, o, 0); }
static void scen_attention_starts(cpu_dev *d, outputs *o) { scen_attention(d, o, 1); }

static void scen_rope_pointwise(cpu_dev *d, outputs *o) {
    rng r = {305};
    const int64_t B = 2, T = 300, H = 4, HD = 64, n = B * T * H * HD;
    int32_t *pos = ibuf(B * T);
    for (int64_t t = 0; t < B * T; t++) pos[t] = (int32_t)(t * 131);
    zt_tensor Pos = ids_to_dev(d, zt_shape2(B, T), pos);
    zt_tensor X = to_dev(d, ZT_BF16, zt_shape4(B, T, H, HD), drand(&r, n, -2, 2));
    zt_tensor Dx = to_dev(d, ZT_BF16, zt_shape4(B, T, H, HD), drand(&r, n, -2, 2));
    zt_tensor G = dev_new(d, ZT_BF16, zt_shape2(B * T * H, HD / 2));
    zt_rope_forward(d->s, X, X, Pos, 10000.0f, NULL);
    zt_rope_backward(d->s, Dx, X, Pos, 10000.0f, NULL);
    zt_swiglu_forward(d->s, G, X);
    zt_gelu_forward(d->s, X, X);
    keep(o, d, "rope in place, then gelu", X);
    keep(o, d, "rope dinp", Dx);
    keep(o, d, "swiglu out", G);
}

static void scen_crossentropy(cpu_dev *d, outputs *o) {
    rng r = {306};
    const int64_t N = 67, Vp = 1031, vocab = 1000;
    int32_t *t = ibuf(N);
    for (int64_t n = 0; n < N; n++) t[n] = n % 11 == 3 ? -100 : rng_int(&r, vocab);
    zt_tensor Tg = ids_to_dev(d, zt_shape1(N), t);
    zt_tensor L = to_dev(d, ZT_BF16, zt_shape2(N, Vp), drand(&r, N * Vp, -5, 5));
    zt_tensor Losses = dev_new(d, ZT_F32, zt_shape1(N));
    zt_crossentropy(d->s, Losses, &L, L, Tg, vocab, -100, 1.0f / 61);
    keep(o, d, "crossentropy losses", Losses);
    keep(o, d, "crossentropy dlogits", L);
}

static void scen_output_loss(cpu_dev *d, outputs *o) {
    rng r = {307};
    const int64_t N = 67, C = 96, Vp = 515, vocab = 500, R = 16;
    int32_t *t = ibuf(N);
    for (int64_t n = 0; n < N; n++) t[n] = n % 13 == 1 ? -100 : rng_int(&r, vocab);
    zt_tensor Tg = ids_to_dev(d, zt_shape1(N), t);
    zt_tensor H = to_dev(d, ZT_F32, zt_shape2(N, C), drand(&r, N * C, -1, 1));
    zt_tensor W = to_dev(d, ZT_F32, zt_shape2(Vp, C), drand(&r, Vp * C, -0.3, 0.3));
    zt_tensor Dh = to_dev(d, ZT_F32, zt_shape2(N, C), drand(&r, N * C, -1, 1));
    zt_tensor Dw = to_dev(d, ZT_F32, zt_shape2(Vp, C), drand(&r, Vp * C, -1, 1));
    zt_tensor Buf = dev_new(d, ZT_F32, zt_shape2(R, Vp)), Losses = dev_new(d, ZT_F32, zt_shape1(N));
    zt_output_loss(d->s, Losses, &Dh, &Dw, H, W, Tg, Buf, vocab, -100, 1.0f / 62);
    keep(o, d, "output_loss losses", Losses);
    keep(o, d, "output_loss dhidden", Dh);
    keep(o, d, "output_loss dweight", Dw);
}

static void scen_sumsq_adamw(cpu_dev *d, outputs *o) {
    rng r = {308};
    const int64_t n = 3000017;
    zt_tensor X = to_dev(d, ZT_F32, zt_shape1(n), drand(&r, n, -1, 1));
    zt_tensor Xb = to_dev(d, ZT_BF16, zt_shape1(n), drand(&r, n, -1, 1));
    zt_tensor S = dev_new(d, ZT_F32, zt_shape1(2));
    zt_sumsq(d->s, zt_slice(S, 0, 1), X);
    zt_sumsq(d->s, zt_slice(S, 1, 1), Xb);
    const int64_t np = 100003;
    zt_tensor P = to_dev(d, ZT_F32, zt_shape1(np), drand(&r, np, -1, 1));
    zt_tensor M = to_dev(d, ZT_F32, zt_shape1(np), drand(&r, np, -0.1, 0.1));
    zt_tensor V = to_dev(d, ZT_F32, zt_shape1(np), drand(&r, np, 0, 0.01));
    zt_tensor G = to_dev(d, ZT_BF16, zt_shape1(np), drand(&r, np, -0.1, 0.1));
    zt_tensor P16 = dev_new(d, ZT_BF16, zt_shape1(np));
    zt_optim_params ap = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f,
                          .grad_scale = 0.7f, .step = 3};
    zt_optim_step(d->s, P, M, V, G, &P16, ap);
    keep(o, d, "sumsq f32, bf16", S);
    keep(o, d, "adamw master", P);
    keep(o, d, "adamw v", V);
    keep(o, d, "adamw param16", P16);
}

static const struct { const char *name; scenario_fn fn; } scenarios[] = {
    {"gemm", scen_gemm},
    {"matmul_backward + sum_rows", scen_matmul_backward},
    {"layernorm + rmsnorm", scen_layernorm},
    {"embedding", scen_embedding},
    {"attention causal", scen_attention_causal},
    {"attention with starts", scen_attention_starts},
    {"rope + swiglu + gelu", scen_rope_pointwise},
    {"crossentropy", scen_crossentropy},
    {"output_loss", scen_output_loss},
    {"sumsq + adamw", scen_sumsq_adamw},
};
#define N_SCENARIOS ((int)(sizeof scenarios / sizeof scenarios[0]))

static int run_scenario(int i, int threads, int strict, outputs *o) {
    cpu_dev d;
    memset(o, 0, sizeof *o);
    if (!cpu_open(&d, threads, strict)) return 0;
    scenarios[i].fn(&d, o);
    cpu_close(&d);
    return 1;
}

/* first differing element of two raw outputs, for the message */
static void report_diff(const char *scen, const char *what, const outputs *a, const outputs *b, int k) {
    size_t es = zt_dtype_size(a->dtype[k]), n = a->bytes[k] / es;
    for (size_t e = 0; e < n; e++)
        if (memcmp((char *)a->data[k] + e * es, (char *)b->data[k] + e * es, es) != 0) {
            double x, y;
            decode(&x, a->dtype[k], (char *)a->data[k] + e * es, 1);
            decode(&y, b->dtype[k], (char *)b->data[k] + e * es, 1);
            zt_test_fail(__FILE__, __LINE__, "%s: %s: %s differs at [%zu]: %.9g vs %.9g with 1 thread", scen,
                         what, a->name[k], e, y, x);
            return;
        }
}

/* every scenario at (threads, strict) against 1 thread, ordinary mode */
static void compare_runs(int threads, int strict) {
    for (int i = 0; i < N_SCENARIOS; i++) {
        outputs base, run;
        if (!run_scenario(i, 1, 0, &base) || !run_scenario(i, threads, strict, &run)) break;
        const char *what = label("%d threads%s", threads, strict ? ", strict" : "");
        if (base.n != run.n) {
            zt_test_fail(__FILE__, __LINE__, "%s: %s kept %d outputs, 1 thread kept %d", scenarios[i].name,
                         what, run.n, base.n);
            continue;
        }
        for (int k = 0; k < base.n; k++)
            if (memcmp(base.data[k], run.data[k], base.bytes[k]) != 0)
                report_diff(scenarios[i].name, what, &base, &run, k);
        bufs_free();
    }
    bufs_free();
}

TEST(threads_2_identical_bits) { compare_runs(2, 0); }
TEST(threads_3_identical_bits) { compare_runs(3, 0); }
TEST(strict_mode_identical_bits) { compare_runs(2, 1); }

/* The same run twice on one backend gives the same bits (no state leaks from one op to the next). */
TEST(threads_repeatable) {
    cpu_dev d;
    if (!cpu_open(&d, 3, 0)) return;
    for (int i = 0; i < N_SCENARIOS; i++) {
        outputs a, b;
        memset(&a, 0, sizeof a), memset(&b, 0, sizeof b);
        size_t mark = zt_arena_mark(d.dev);
        scenarios[i].fn(&d, &a);
        zt_arena_reset(d.dev, mark);
        scenarios[i].fn(&d, &b);
        zt_arena_reset(d.dev, mark);
        for (int k = 0; k < a.n; k++)
            if (memcmp(a.data[k], b.data[k], a.bytes[k]) != 0)
                zt_test_fail(__FILE__, __LINE__, "%s: %s differs between two runs on one backend",
                             scenarios[i].name, a.name[k]);
        bufs_free();
    }
    cpu_close(&d);
}

