/* tests/test_ops.c - every op against a naive double-precision reference (tests/ref_ops.h).
   ref_fd_*: each reference backward against central finite differences of its reference forward,
             d(sum(w * out))/d(input) for a fixed random weighting w.
   ops_*:    each CPU kernel, f32, bf16 and f16, against the reference on the same (rounded) inputs; odd sizes
             and a grouped-query attention case. Backward kernels accumulate, so their gradient outputs
             are pre-filled with random values and must come out as prefill + gradient.
   Thread-count independence and strict mode are in tests/test_threads.c. */
#include "ops_harness.h"

/* >>finite differences ========================================================================= */

/* Central differences with step FD_H on values of size ~1: truncation error ~FD_H^2 (1e-12) and
   cancellation ~1e-16 * |f| / FD_H (~1e-9 here), both far below FD_TOL of the gradient's scale. */
#define FD_H 1e-6
#define FD_TOL 1e-6

/* A reference forward with its inputs captured in ctx; fd_check perturbs those inputs in place. */
typedef void (*fd_forward)(void *ctx, double *out);
typedef struct fd_fn {
    fd_forward fwd;
    void *ctx;
    int64_t n_out;
    const double *w; /* the weighting: f = sum(w * out) */
    double *out;     /* scratch for fwd */
} fd_fn;

static double fd_eval(const fd_fn *f) {
    f->fwd(f->ctx, f->out);
    double s = 0;
    for (int64_t i = 0; i < f->n_out; i++) s += f->w[i] * f->out[i];
    return s;
}

/* grad (n) must be d f / d x (n); records a failure naming the first element that is off. */
static int fd_check_(const char *file, int line, const char *what, const fd_fn *f, double *x, int64_t n,
                     const double *grad) {
    double scale = 0;
    for (int64_t i = 0; i < n; i++)
        if (fabs(grad[i]) > scale) scale = fabs(grad[i]);
    if (scale < 1e-3) scale = 1e-3;
    for (int64_t i = 0; i < n; i++) {
        double x0 = x[i];
        x[i] = x0 + FD_H;
        double fp = fd_eval(f);
        x[i] = x0 - FD_H;
        double fm = fd_eval(f);
        x[i] = x0;
        double fd = (fp - fm) / (2 * FD_H);
        if (!(fabs(fd - grad[i]) <= FD_TOL * scale)) {
            zt_test_fail(file, line, "%s: [%lld] backward %.12g, finite difference %.12g (tol %.3g)",
                         what, (long long)i, grad[i], fd, FD_TOL * scale);
            return 0;
        }
    }
    return 1;
}
#define FD_CHECK(what, f, x, n, grad) fd_check_(__FILE__, __LINE__, what, f, x, n, grad)

static fd_fn fd_make(fd_forward fwd, void *ctx, int64_t n_out, rng *r) {
    fd_fn f = {fwd, ctx, n_out, drand(r, n_out, -1, 1), dbuf(n_out)};
    return f;
}

typedef struct { double *inp, *weight, *bias; int64_t N, C, OC; } fd_matmul_ctx;
static void fd_matmul_fwd(void *p, double *out) {
    fd_matmul_ctx *c = (fd_matmul_ctx *)p;
    ref_matmul_forward(out, c->inp, c->weight, c->bias, c->N, c->C, c->OC);
}
TEST(ref_fd_matmul) {
    rng r = {11};
    fd_matmul_ctx c = {NULL, NULL, NULL, 5, 7, 6};
    c.inp = drand(&r, c.N * c.C, -1, 1), c.weight = drand(&r, c.OC * c.C, -1, 1);
    c.bias = drand(&r, c.OC, -1, 1);
    fd_fn f = fd_make(fd_matmul_fwd, &c, c.N * c.OC, &r);
    double *dinp = dbuf(c.N * c.C), *dw = dbuf(c.OC * c.C), *db = dbuf(c.OC);
    ref_matmul_backward(dinp, dw, db, f.w, c.inp, c.weight, c.N, c.C, c.OC);
    FD_CHECK("matmul dinp", &f, c.inp, c.N * c.C, dinp);
    FD_CHECK("matmul dweight", &f, c.weight, c.OC * c.C, dw);
    FD_CHECK("matmul dbias", &f, c.bias, c.OC, db);
    bufs_free();
}

typedef struct { double *table; const int32_t *ids; int64_t N, C; } fd_emb_ctx;
static void fd_emb_fwd(void *p, double *out) {
    fd_emb_ctx *c = (fd_emb_ctx *)p;
    ref_embedding_forward(out, c->ids, c->table, c->N, c->C, 0);
}
TEST(ref_fd_embedding) {
    rng r = {12};
    static const int32_t ids[7] = {3, 0, 3, 4, 1, 3, 0}; /* repeated ids; id 2 unused */
    fd_emb_ctx c = {NULL, ids, 7, 5};
    c.table = drand(&r, 5 * c.C, -1, 1);
    fd_fn f = fd_make(fd_emb_fwd, &c, c.N * c.C, &r);
    double *dt = dbuf(5 * c.C);
    ref_embedding_backward(dt, f.w, ids, c.N, c.C);
    FD_CHECK("embedding dtable", &f, c.table, 5 * c.C, dt);
    bufs_free();
}

typedef struct { double *inp, *weight, *bias; int64_t N, C; double eps; } fd_norm_ctx;
static void fd_layernorm_fwd(void *p, double *out) {
    fd_norm_ctx *c = (fd_norm_ctx *)p;
    ref_layernorm_forward(out, NULL, NULL, c->inp, c->weight, c->bias, c->N, c->C, c->eps);
}
TEST(ref_fd_layernorm) {
    rng r = {13};
    fd_norm_ctx c = {NULL, NULL, NULL, 4, 9, 1e-5};
    c.inp = drand(&r, c.N * c.C, -1, 2), c.weight = drand(&r, c.C, 0.5, 1.5);
    c.bias = drand(&r, c.C, -0.5, 0.5);
    fd_fn f = fd_make(fd_layernorm_fwd, &c, c.N * c.C, &r);
    double *dinp = dbuf(c.N * c.C), *dw = dbuf(c.C), *db = dbuf(c.C);
    ref_layernorm_backward(dinp, dw, db, f.w, c.inp, c.weight, c.N, c.C, c.eps);
    FD_CHECK("layernorm dinp", &f, c.inp, c.N * c.C, dinp);
    FD_CHECK("layernorm dweight", &f, c.weight, c.C, dw);
    FD_CHECK("layernorm dbias", &f, c.bias, c.C, db);
    bufs_free();
}

static void fd_rmsnorm_fwd(void *p, double *out) {
    fd_norm_ctx *c = (fd_norm_ctx *)p;
    ref_rmsnorm_forward(out, NULL, c->inp, c->weight, c->N, c->C, c->eps);
}
TEST(ref_fd_rmsnorm) {
    rng r = {14};
    fd_norm_ctx c = {NULL, NULL, NULL, 4, 9, 1e-6};
    c.inp = drand(&r, c.N * c.C, -1, 2), c.weight = drand(&r, c.C, 0.5, 1.5);
    fd_fn f = fd_make(fd_rmsnorm_fwd, &c, c.N * c.C, &r);
    double *dinp = dbuf(c.N * c.C), *dw = dbuf(c.C);
    ref_rmsnorm_backward(dinp, dw, f.w, c.inp, c.weight, c.N, c.C, c.eps);
    FD_CHECK("rmsnorm dinp", &f, c.inp, c.N * c.C, dinp);
    FD_CHECK("rmsnorm dweight", &f, c.weight, c.C, dw);
    bufs_free();
}

typedef struct { double *inp; int64_t n, H; } fd_pointwise_ctx;
static void fd_gelu_fwd(void *p, double *out) {
    fd_pointwise_ctx *c = (fd_pointwise_ctx *)p;
    ref_gelu_forward(out, c->inp, c->n);
}
static void fd_gelu_erf_fwd(void *p, double *out) {
    fd_pointwise_ctx *c = (fd_pointwise_ctx *)p;
    ref_gelu_erf_forward(out, c->inp, c->n);
}
static void fd_silu_fwd(void *p, double *out) {
    fd_pointwise_ctx *c = (fd_pointwise_ctx *)p;
    ref_silu_forward(out, c->inp, c->n);
}
static void fd_swiglu_fwd(void *p, double *out) {
    fd_pointwise_ctx *c = (fd_pointwise_ctx *)p;
    ref_swiglu_forward(out, c->inp, c->n, c->H);
}
static void fd_geglu_fwd(void *p, double *out) {
    fd_pointwise_ctx *c = (fd_pointwise_ctx *)p;
    ref_geglu_forward(out, c->inp, c->n, c->H);
}
static void fd_swiglu_clamped_fwd(void *p, double *out) {
    fd_pointwise_ctx *c = (fd_pointwise_ctx *)p;
    ref_swiglu_clamped_forward(out, c->inp, c->n, c->H, 1.702, 2.0);
}
TEST(ref_fd_gelu_silu_swiglu) {
    rng r = {15};
    fd_pointwise_ctx c = {NULL, 41, 0};
    c.inp = drand(&r, c.n, -5, 5);
    fd_fn f = fd_make(fd_gelu_fwd, &c, c.n, &r);
    double *d = dbuf(c.n);
    ref_gelu_backward(d, f.w, c.inp, c.n);
    FD_CHECK("gelu dinp", &f, c.inp, c.n, d);

    f = fd_make(fd_gelu_erf_fwd, &c, c.n, &r);
    d = dbuf(c.n);
    ref_gelu_erf_backward(d, f.w, c.inp, c.n);
    FD_CHECK("gelu (erf) dinp", &f, c.inp, c.n, d);

    f = fd_make(fd_silu_fwd, &c, c.n, &r);
    d = dbuf(c.n);
    ref_silu_backward(d, f.w, c.inp, c.n);
    FD_CHECK("silu dinp", &f, c.inp, c.n, d);

    fd_pointwise_ctx g = {NULL, 3, 7}; /* n is the row count here */
    g.inp = drand(&r, g.n * 2 * g.H, -4, 4);
    f = fd_make(fd_swiglu_fwd, &g, g.n * g.H, &r);
    d = dbuf(g.n * 2 * g.H);
    ref_swiglu_backward(d, f.w, g.inp, g.n, g.H);
    FD_CHECK("swiglu dinp", &f, g.inp, g.n * 2 * g.H, d);

    f = fd_make(fd_geglu_fwd, &g, g.n * g.H, &r);
    d = dbuf(g.n * 2 * g.H);
    ref_geglu_backward(d, f.w, g.inp, g.n, g.H);
    FD_CHECK("geglu dinp", &f, g.inp, g.n * 2 * g.H, d);

    /* gpt-oss's, its limit 2 so that inputs in [-4, 4] land on both sides of both clamps (none within FD_H of one) */
    f = fd_make(fd_swiglu_clamped_fwd, &g, g.n * g.H, &r);
    d = dbuf(g.n * 2 * g.H);
    ref_swiglu_clamped_backward(d, f.w, g.inp, g.n, g.H, 1.702, 2.0);
    int cut = 0;
    for (int64_t i = 0; i < g.n * 2 * g.H; i++) cut += fabs(g.inp[i]) > 2.0 && d[i] == 0.0;
    CHECK(cut > 3); /* a clamp that cuts passes no gradient */
    FD_CHECK("clamped swiglu dinp", &f, g.inp, g.n * 2 * g.H, d);
    bufs_free();
}

/* MoE routing: the weights as a function of the logits, the choices held (no ties near the random logits);
   combining: the output as a function of the experts' rows and the weights */
typedef struct { double *logits, *ys, *weight; const int32_t *idx, *where; int64_t N, E, k, C; int normalize; } fd_moe_ctx;
static const double fd_sigmoid_bias[8] = {0.05, -0.1, 0.0, 0.2, -0.05, 0.1, 0.02, -0.2};
static void fd_moe_route_sigmoid_fwd(void *p, double *out) { /* 8 experts in 4 groups, 2 of them, times 2.5 */
    fd_moe_ctx *c = (fd_moe_ctx *)p;
    int32_t *idx = ibuf(c->N * c->k);
    ref_moe_route_sigmoid_forward(idx, out, dbuf(c->N * c->E), c->logits, fd_sigmoid_bias, c->N, c->E, c->k, 4, 2, 2.5,
                                  c->normalize);
    for (int64_t i = 0; i < c->N * c->k; i++) ZT_ASSERT(idx[i] == c->idx[i]); /* the choices stay put */
}
static void fd_moe_route_fwd(void *p, double *out) {
    fd_moe_ctx *c = (fd_moe_ctx *)p;
    int32_t *idx = ibuf(c->N * c->k);
    ref_moe_route_forward(idx, out, dbuf(c->N * c->E), c->logits, c->N, c->E, c->k, c->normalize);
    for (int64_t i = 0; i < c->N * c->k; i++) ZT_ASSERT(idx[i] == c->idx[i]); /* the choices stay put */
}
static void fd_moe_prob_sums(void *p, double *out) {
    fd_moe_ctx *c = (fd_moe_ctx *)p;
    double *probs = dbuf(c->N * c->E);
    ref_moe_route_forward(ibuf(c->N * c->k), dbuf(c->N * c->k), probs, c->logits, c->N, c->E, c->k, 0);
    ref_moe_prob_sums(out, probs, c->N, c->E);
}
static void fd_moe_combine_fwd(void *p, double *out) {
    fd_moe_ctx *c = (fd_moe_ctx *)p;
    ref_moe_combine_forward(out, c->ys, c->weight, c->where, c->N, c->C, c->k);
}
static void fd_gated_add_fwd(void *p, double *out) {
    fd_moe_ctx *c = (fd_moe_ctx *)p;
    memset(out, 0, sizeof(double) * (size_t)(c->N * c->C));
    ref_gated_add_forward(out, c->ys, c->weight, c->N, c->C);
}
TEST(ref_fd_moe) {
    rng r = {18};
    for (int normalize = 0; normalize < 2; normalize++) {
        fd_moe_ctx c = {NULL, NULL, NULL, NULL, NULL, 5, 6, 3, 0, normalize};
        c.logits = drand(&r, c.N * c.E, -2, 2);
        int32_t *idx = ibuf(c.N * c.k);
        double *probs = dbuf(c.N * c.E), *weight = dbuf(c.N * c.k);
        ref_moe_route_forward(idx, weight, probs, c.logits, c.N, c.E, c.k, normalize);
        c.idx = idx;
        fd_fn f = fd_make(fd_moe_route_fwd, &c, c.N * c.k, &r);
        double *dl = dbuf(c.N * c.E);
        ref_moe_route_backward(dl, f.w, probs, idx, c.N, c.E, c.k, normalize);
        FD_CHECK(normalize ? "moe route dlogits (normalized)" : "moe route dlogits", &f, c.logits, c.N * c.E, dl);
        fd_moe_ctx s = {NULL, NULL, NULL, NULL, NULL, 5, 8, 3, 0, normalize}; /* DeepSeek-V3's sigmoid routing */
        s.logits = drand(&r, s.N * s.E, -2, 2);
        idx = ibuf(s.N * s.k), probs = dbuf(s.N * s.E), weight = dbuf(s.N * s.k);
        ref_moe_route_sigmoid_forward(idx, weight, probs, s.logits, fd_sigmoid_bias, s.N, s.E, s.k, 4, 2, 2.5, normalize);
        s.idx = idx;
        f = fd_make(fd_moe_route_sigmoid_fwd, &s, s.N * s.k, &r);
        dl = dbuf(s.N * s.E);
        ref_moe_route_sigmoid_backward(dl, f.w, probs, idx, s.N, s.E, s.k, 2.5, normalize);
        FD_CHECK(normalize ? "moe sigmoid route dlogits (normalized)" : "moe sigmoid route dlogits", &f, s.logits,
                 s.N * s.E, dl);
    }
    fd_moe_ctx b = {NULL, NULL, NULL, NULL, NULL, 7, 5, 2, 0, 0}; /* the balance: probability sums of the logits */
    b.logits = drand(&r, b.N * b.E, -2, 2);
    double *bprobs = dbuf(b.N * b.E);
    ref_moe_route_forward(ibuf(b.N * b.k), dbuf(b.N * b.k), bprobs, b.logits, b.N, b.E, b.k, 0);
    fd_fn bf = fd_make(fd_moe_prob_sums, &b, b.E, &r);
    double *bdl = dbuf(b.N * b.E);
    ref_moe_balance_backward(bdl, bprobs, bf.w, b.N, b.E);
    FD_CHECK("moe balance dlogits", &bf, b.logits, b.N * b.E, bdl);
    fd_moe_ctx c = {NULL, NULL, NULL, NULL, NULL, 4, 0, 2, 5, 0};
    int32_t where[8] = {3, 0, 6, 1, 7, 2, 4, 5};
    c.where = where;
    c.ys = drand(&r, 8 * c.C, -1, 1), c.weight = drand(&r, c.N * c.k, 0, 1);
    fd_fn f = fd_make(fd_moe_combine_fwd, &c, c.N * c.C, &r);
    double *dys = dbuf(8 * c.C), *dw = dbuf(c.N * c.k);
    ref_moe_combine_backward(dys, dw, f.w, c.ys, c.weight, where, c.N, c.C, c.k);
    FD_CHECK("moe combine dys", &f, c.ys, 8 * c.C, dys);
    FD_CHECK("moe combine dweight", &f, c.weight, c.N * c.k, dw);
    c.ys = drand(&r, c.N * c.C, -1, 1), c.weight = drand(&r, c.N, -3, 3); /* the gated add: y and its gates */
    f = fd_make(fd_gated_add_fwd, &c, c.N * c.C, &r);
    double *dy = dbuf(c.N * c.C), *dg = dbuf(c.N);
    ref_gated_add_backward(dy, dg, f.w, c.ys, c.weight, c.N, c.C);
    FD_CHECK("gated add dy", &f, c.ys, c.N * c.C, dy);
    FD_CHECK("gated add dgate", &f, c.weight, c.N, dg);
    bufs_free();
}

typedef struct { double *inp; const int32_t *pos; int64_t R, H, HD, rd; float theta; int il; } fd_rope_ctx;
static void fd_rope_fwd(void *p, double *out) {
    fd_rope_ctx *c = (fd_rope_ctx *)p;
    ref_rope_il_forward(out, c->inp, c->pos, c->R, c->H, c->HD, c->rd, c->il, c->theta);
}
TEST(ref_fd_rope) {
    rng r = {16};
    static const int32_t pos[3] = {0, 5, 9000};
    fd_rope_ctx c = {NULL, pos, 3, 2, 8, 8, 10000.0f, 0};
    c.inp = drand(&r, c.R * c.H * c.HD, -1, 1);
    fd_fn f = fd_make(fd_rope_fwd, &c, c.R * c.H * c.HD, &r);
    double *d = dbuf(c.R * c.H * c.HD);
    ref_rope_backward(d, f.w, pos, c.R, c.H, c.HD, c.theta);
    FD_CHECK("rope dinp", &f, c.inp, c.R * c.H * c.HD, d);
    c.rd = 6; /* a partial rotation: 3 pairs of 4, two dimensions pass */
    f = fd_make(fd_rope_fwd, &c, c.R * c.H * c.HD, &r);
    double *dp = dbuf(c.R * c.H * c.HD);
    ref_rope_part_backward(dp, f.w, pos, c.R, c.H, c.HD, c.rd, c.theta);
    FD_CHECK("rope dinp, 6 of 8 dimensions rotated", &f, c.inp, c.R * c.H * c.HD, dp);
    c.rd = 4, c.il = 1; /* GLM's: half the head, in interleaved pairs */
    f = fd_make(fd_rope_fwd, &c, c.R * c.H * c.HD, &r);
    double *di = dbuf(c.R * c.H * c.HD);
    ref_rope_il_backward(di, f.w, pos, c.R, c.H, c.HD, c.rd, 1, c.theta);
    FD_CHECK("rope dinp, 4 of 8 dimensions rotated in interleaved pairs", &f, c.inp, c.R * c.H * c.HD, di);
    /* position 0 is the identity */
    double *out = dbuf(c.R * c.H * c.HD);
    ref_rope_forward(out, c.inp, pos, c.R, c.H, c.HD, c.theta);
    CHECK(EXPECT_EXACT("rope at position 0", out, c.inp, c.H * c.HD));
    bufs_free();
}

typedef struct {
    double *q, *k, *v;
    const int32_t *starts;
    int64_t B, T, NH, NKV, HD;
    double scale, cap;
    int64_t window;
    const double *z;
    double *sinks;
} fd_attn_ctx;
static void fd_attn_fwd(void *p, double *out) {
    fd_attn_ctx *c = (fd_attn_ctx *)p;
    ref_attention_sink_forward(out, NULL, c->q, c->k, c->v, c->starts, c->B, c->T, c->NH, c->NKV, c->HD, c->scale,
                               c->cap, c->window, c->z, c->sinks);
}
/* scale 0: 1/sqrt(HD); cap 0: none; window 0: none; z: dropout's factors (B,NH,T,T), or NULL */
/* ... with sinks: each head's sink logit in every row's softmax, its gradient checked too */
static void fd_attention_sink_case(rng *r, const int32_t *starts, int64_t B, int64_t T, int64_t NH, int64_t NKV,
                                   int64_t HD, double scale, double cap, int64_t window, const double *z, int sinks) {
    fd_attn_ctx c = {NULL, NULL, NULL, starts, B, T, NH, NKV, HD, scale, cap, window, z, NULL};
    int64_t nq = B * T * NH * HD, nk = B * T * NKV * HD;
    c.q = drand(r, nq, -1.5, 1.5), c.k = drand(r, nk, -1.5, 1.5), c.v = drand(r, nk, -1, 1);
    if (sinks) c.sinks = drand(r, NH, -1, 2);
    fd_fn f = fd_make(fd_attn_fwd, &c, nq, r);
    double *dq = dbuf(nq), *dk = dbuf(nk), *dv = dbuf(nk), *ds = dbuf(NH);
    ref_attention_sink_backward(dq, dk, dv, ds, f.w, c.q, c.k, c.v, starts, B, T, NH, NKV, HD, scale, cap, window, z,
                                c.sinks);
    const char *cfg = label("attention B%lld T%lld NH%lld NKV%lld HD%lld%s scale %g cap %g window %lld%s%s", (long long)B,
                            (long long)T, (long long)NH, (long long)NKV, (long long)HD, starts ? " starts" : "", scale, cap,
                            (long long)window, z ? " dropout" : "", sinks ? " sinks" : "");
    FD_CHECK(label("%s dq", cfg), &f, c.q, nq, dq);
    FD_CHECK(label("%s dk", cfg), &f, c.k, nk, dk);
    FD_CHECK(label("%s dv", cfg), &f, c.v, nk, dv);
    if (sinks) FD_CHECK(label("%s dsinks", cfg), &f, c.sinks, NH, ds);
}
static void fd_attention_drop_case(rng *r, const int32_t *starts, int64_t B, int64_t T, int64_t NH, int64_t NKV,
                                   int64_t HD, double scale, double cap, int64_t window, const double *z) {
    fd_attention_sink_case(r, starts, B, T, NH, NKV, HD, scale, cap, window, z, 0);
}
static void fd_attention_case(rng *r, const int32_t *starts, int64_t B, int64_t T, int64_t NH, int64_t NKV,
                              int64_t HD, double scale, double cap, int64_t window) {
    fd_attention_drop_case(r, starts, B, T, NH, NKV, HD, scale, cap, window, NULL);
}
/* attention dropout's factors of every probability (B,NH,T,T), as zt_attention_opts documents them */
static double *drop_factors(int64_t B, int64_t NH, int64_t T, float p, uint64_t seed, int64_t offset) {
    double *z = dbuf(B * NH * T * T);
    for (int64_t i = 0; i < B * NH * T * T; i++) z[i] = zt_dropout_factor(seed, offset + i, p, p < 1 ? 1.0f / (1.0f - p) : 0);
    return z;
}
TEST(ref_fd_attention) {
    rng r = {17};
    fd_attention_case(&r, NULL, 2, 5, 8, 2, 3, 0, 0, 0); /* grouped-query: 8 heads read 2 */
    static const int32_t starts[2 * 6] = {0, 0, 0, 3, 3, 3, 0, 1, 1, 1, 4, 4};
    fd_attention_case(&r, starts, 2, 6, 4, 2, 5, 0, 0, 0);
    fd_attention_case(&r, starts, 2, 6, 4, 2, 5, 0.9, 1.2, 0); /* Gemma 2: its own scale, scores capped */
    fd_attention_case(&r, starts, 2, 6, 4, 2, 5, 0, 0, 2);     /* a sliding window of 2 keys, and documents */
    /* dropout after the softmax: a third of the probabilities dropped, the rest times 1.5 */
    fd_attention_drop_case(&r, NULL, 2, 5, 8, 2, 3, 0, 0, 0, drop_factors(2, 8, 5, 1.0f / 3, 99, 0));
    fd_attention_drop_case(&r, starts, 2, 6, 4, 2, 5, 0.9, 1.2, 2, drop_factors(2, 4, 6, 0.5f, 7, 1000));
    /* gpt-oss's sinks: alone, with a window and documents, and with dropout */
    fd_attention_sink_case(&r, NULL, 2, 5, 8, 2, 3, 0, 0, 0, NULL, 1);
    fd_attention_sink_case(&r, starts, 2, 6, 4, 2, 5, 0, 0, 2, NULL, 1);
    fd_attention_sink_case(&r, starts, 2, 6, 4, 2, 5, 0, 0, 0, drop_factors(2, 4, 6, 0.5f, 7, 1000), 1);
    /* the first query sees one key: its output is that value, whatever q and k are */
    double q[4] = {1, 2, 3, 4}, k[4] = {-1, 0.5, 2, 0}, v[4] = {0.25, -3, 7, 1}, out[4], lse[1];
    ref_attention_forward(out, lse, q, k, v, NULL, 1, 1, 1, 1, 4);
    CHECK(EXPECT_EXACT("attention of one key", out, v, 4));
    CHECK_NEAR(lse[0], (-1 + 1 + 6) / 2.0, 1e-15); /* lse of one score is the score: q.k / sqrt(4) */
    bufs_free();
}

typedef struct { double *logits; const int32_t *targets; int64_t N, Vp, vocab; double cap, smoothing; } fd_ce_ctx;
static void fd_ce_fwd(void *p, double *out) {
    fd_ce_ctx *c = (fd_ce_ctx *)p;
    ref_crossentropy_smoothed(out, NULL, c->logits, c->targets, NULL, c->N, c->Vp, c->vocab, -100, c->cap, c->smoothing);
}
TEST(ref_fd_crossentropy) {
    rng r = {18};
    static const int32_t targets[5] = {2, -100, 0, 6, 2}; /* row 1 ignored; vocab 7 of 9 columns */
    fd_ce_ctx c = {NULL, targets, 5, 9, 7, 0, 0};
    c.logits = drand(&r, c.N * c.Vp, -3, 3);
    fd_fn f = fd_make(fd_ce_fwd, &c, c.N, &r);
    double *d = dbuf(c.N * c.Vp), *losses = dbuf(c.N);
    ref_crossentropy(losses, d, c.logits, targets, f.w, c.N, c.Vp, c.vocab, -100);
    FD_CHECK("crossentropy dlogits", &f, c.logits, c.N * c.Vp, d);
    CHECK(losses[1] == 0);
    c.cap = 2.5; /* Gemma 2's final_logit_softcapping */
    double *dc = dbuf(c.N * c.Vp);
    ref_crossentropy_capped(losses, dc, c.logits, targets, f.w, c.N, c.Vp, c.vocab, -100, c.cap);
    FD_CHECK("capped crossentropy dlogits", &f, c.logits, c.N * c.Vp, dc);
    c.smoothing = 0.1; /* the Trainer's label_smoothing_factor, capped and not */
    ref_crossentropy_smoothed(losses, dc, c.logits, targets, f.w, c.N, c.Vp, c.vocab, -100, c.cap, c.smoothing);
    FD_CHECK("smoothed capped crossentropy dlogits", &f, c.logits, c.N * c.Vp, dc);
    c.cap = 0, c.smoothing = 0.3;
    ref_crossentropy_smoothed(losses, dc, c.logits, targets, f.w, c.N, c.Vp, c.vocab, -100, c.cap, c.smoothing);
    FD_CHECK("smoothed crossentropy dlogits", &f, c.logits, c.N * c.Vp, dc);
    /* uniform logits: the loss is log(vocab) */
    double flat[9] = {0}, l;
    int32_t t = 3;
    ref_crossentropy(&l, NULL, flat, &t, NULL, 1, 9, 7, -100);
    CHECK_NEAR(l, log(7.0), 1e-15);
    bufs_free();
}

typedef struct { double *hidden, *weight; const int32_t *targets; int64_t N, C, Vp, vocab; } fd_ol_ctx;
static void fd_ol_fwd(void *p, double *out) {
    fd_ol_ctx *c = (fd_ol_ctx *)p;
    ref_output_loss(out, NULL, NULL, c->hidden, c->weight, c->targets, NULL, c->N, c->C, c->Vp,
                    c->vocab, -100);
}
TEST(ref_fd_output_loss) {
    rng r = {19};
    static const int32_t targets[4] = {4, 0, -100, 7};
    fd_ol_ctx c = {NULL, NULL, targets, 4, 6, 10, 8};
    c.hidden = drand(&r, c.N * c.C, -1, 1), c.weight = drand(&r, c.Vp * c.C, -1, 1);
    fd_fn f = fd_make(fd_ol_fwd, &c, c.N, &r);
    double *dh = dbuf(c.N * c.C), *dw = dbuf(c.Vp * c.C), *losses = dbuf(c.N);
    ref_output_loss(losses, dh, dw, c.hidden, c.weight, targets, f.w, c.N, c.C, c.Vp, c.vocab, -100);
    FD_CHECK("output_loss dhidden", &f, c.hidden, c.N * c.C, dh);
    FD_CHECK("output_loss dweight", &f, c.weight, c.Vp * c.C, dw);
    bufs_free();
}

/* The other references have no backward; check them against facts instead. */
TEST(ref_forward_facts) {
    /* gemm: 2x2 by hand, every transpose combination gives the same product */
    double a[4] = {1, 2, 3, 4}, at[4] = {1, 3, 2, 4}, b[4] = {5, 6, 7, 8}, bt[4] = {5, 7, 6, 8};
    double bias[2] = {0.5, -0.5}, want[4] = {19 * 2 + 1 + 0.5, 22 * 2 + 1 - 0.5, 43 * 2 + 1 + 0.5,
                                             50 * 2 + 1 - 0.5};
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            double c[4] = {2, 2, 2, 2};
            ref_gemm(c, ta ? at : a, tb ? bt : b, 2, 2, 2, ta, tb, 2.0, 0.5, bias);
            CHECK(EXPECT_EXACT(label("ref_gemm ta %d tb %d", ta, tb), c, want, 4));
        }
    /* gelu_new and silu at known points */
    CHECK_NEAR(ref_gelu(1.0), 0.8411919906082768, 1e-15);
    CHECK_NEAR(ref_gelu(-2.0), -0.04540230591222, 1e-13);
    CHECK_NEAR(ref_silu(1.0), 0.7310585786300049, 1e-15);
    /* rope's first pair turns by exactly pos radians (inv_freq 1) */
    CHECK(ref_rope_angle(12345, 0, 64, 10000.0f) == 12345.0);
    /* adamw step 1 without decay moves each parameter by lr * sign(g) (up to eps) */
    double p = 1, m = 0, v = 0, g = -0.3;
    ref_adamw(&p, &m, &v, &g, 1, 0.01, 0.9, 0.999, 0, 0, 1, 1, 0);
    CHECK_NEAR(p, 1.01, 1e-15);
    /* the reference conversions at their edges */
    CHECK(ref_f32_to_bf16(1.0f + 0x1p-8f) == 0x3f80);          /* tie to even, down */
    CHECK(ref_f32_to_bf16(1.0f + 3 * 0x1p-8f) == 0x3f82);      /* tie to even, up */
    CHECK(ref_f32_to_f16(65504.0f) == 0x7bff && ref_f32_to_f16(65520.0f) == 0x7c00);
    CHECK(ref_f32_to_f16(0x1p-24f) == 0x0001 && ref_f32_to_f16(0x1p-25f) == 0x0000);
    CHECK(ref_f32_to_f16(0x1.8p-25f) == 0x0001 && ref_f32_to_f16(1.0f) == 0x3c00);
    CHECK(ref_f16_to_f32(0x0001) == 0x1p-24f && ref_f16_to_f32(0xc000) == -2.0f);
}

/* >>kernels vs reference ======================================================================= */

static const char *dt_name(zt_dtype t) { return zt_dtype_name(t); }

/* gemm: every transpose combination, alpha/beta/bias, batched with and without a batch-1 operand */
static void check_gemm(zt_dtype dt) {
    cpu_dev d;
    if (!cpu_open(&d, 2, 0)) return;
    rng r = {100};
    const int64_t M = 13, N = 37, K = 29;
    double tol = tol_for(dt);
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int variant = 0; variant < 3; variant++) {
                /* 0: plain product; 1: alpha, beta and bias; 2: beta 1 (accumulate), no bias */
                float alpha = variant == 1 ? 0.75f : 1.0f;
                float beta = variant == 0 ? 0.0f : variant == 1 ? 0.5f : 1.0f;
                double *a = drand(&r, M * K, -1, 1), *b = drand(&r, K * N, -1, 1);
                double *c = drand(&r, M * N, -1, 1), *bias = drand(&r, N, -1, 1);
                zt_tensor A = to_dev(&d, dt, ta ? zt_shape2(K, M) : zt_shape2(M, K), a);
                zt_tensor B = to_dev(&d, dt, tb ? zt_shape2(N, K) : zt_shape2(K, N), b);
                zt_tensor Cd = to_dev(&d, dt, zt_shape2(M, N), c);
                zt_tensor Bias = to_dev(&d, dt, zt_shape1(N), bias);
                zt_gemm(d.s, Cd, A, B, ta, tb, alpha, beta, variant == 1 ? &Bias : NULL);
                ref_gemm(c, a, b, M, N, K, ta, tb, alpha, beta, variant == 1 ? bias : NULL);
                EXPECT_CLOSE(label("gemm %s ta %d tb %d alpha %g beta %g%s (M %lld N %lld K %lld): c",
                                   dt_name(dt), ta, tb, alpha, beta, variant == 1 ? " bias" : "",
                                   (long long)M, (long long)N, (long long)K),
                             download(&d, Cd), c, M * N, tol);
            }
    /* larger than one tile in every dimension (the CPU kernel blocks M by 96, N and K by 256) */
    for (int tt = 0; tt < 2; tt++) {
        const int64_t BM = 101, BN = 263, BK = 261;
        int ta = tt, tb = tt;
        double *a = drand(&r, BM * BK, -1, 1), *b = drand(&r, BK * BN, -1, 1);
        double *c = drand(&r, BM * BN, -1, 1), *bias = drand(&r, BN, -1, 1);
        zt_tensor A = to_dev(&d, dt, ta ? zt_shape2(BK, BM) : zt_shape2(BM, BK), a);
        zt_tensor B = to_dev(&d, dt, tb ? zt_shape2(BN, BK) : zt_shape2(BK, BN), b);
        zt_tensor Cd = to_dev(&d, dt, zt_shape2(BM, BN), c);
        zt_tensor Bias = to_dev(&d, dt, zt_shape1(BN), bias);
        zt_gemm(d.s, Cd, A, B, ta, tb, 0.5f, 1.0f, &Bias);
        ref_gemm(c, a, b, BM, BN, BK, ta, tb, 0.5, 1.0, bias);
        EXPECT_CLOSE(label("gemm %s ta %d tb %d alpha 0.5 beta 1 bias (M %lld N %lld K %lld): c", dt_name(dt),
                           ta, tb, (long long)BM, (long long)BN, (long long)BK),
                     download(&d, Cd), c, BM * BN, tol);
    }
    /* 3-D a and c with a 2-D b is not batched: the leading dimensions are flattened into rows */
    {
        double *a = drand(&r, 2 * 7 * K, -1, 1), *b = drand(&r, N * K, -1, 1), *c = dbuf(2 * 7 * N);
        zt_tensor A = to_dev(&d, dt, zt_shape3(2, 7, K), a), B = to_dev(&d, dt, zt_shape2(N, K), b);
        zt_tensor Cd = dev_new(&d, dt, zt_shape3(2, 7, N));
        zt_gemm(d.s, Cd, A, B, 0, 1, 1.0f, 0.0f, NULL);
        ref_gemm(c, a, b, 14, N, K, 0, 1, 1.0, 0.0, NULL);
        EXPECT_CLOSE(label("gemm %s a (2,7,K) @ b^T (N,K), flattened: c", dt_name(dt)), download(&d, Cd), c,
                     14 * N, tol);
    }
    /* batched: (batch a, batch b) = (3,3), (1,3), (3,1); one transpose combination each */
    static const int64_t batches[3][2] = {{3, 3}, {1, 3}, {3, 1}};
    for (int i = 0; i < 3; i++) {
        int64_t ba = batches[i][0], bb = batches[i][1], nb = 3;
        int ta = i == 1, tb = i != 0;
        float alpha = 1.25f, beta = 0.25f;
        double *a = drand(&r, ba * M * K, -1, 1), *b = drand(&r, bb * K * N, -1, 1);
        double *c = drand(&r, nb * M * N, -1, 1), *bias = drand(&r, N, -1, 1);
        zt_tensor A = to_dev(&d, dt, ta ? zt_shape3(ba, K, M) : zt_shape3(ba, M, K), a);
        zt_tensor B = to_dev(&d, dt, tb ? zt_shape3(bb, N, K) : zt_shape3(bb, K, N), b);
        zt_tensor Cd = to_dev(&d, dt, zt_shape3(nb, M, N), c);
        zt_tensor Bias = to_dev(&d, dt, zt_shape1(N), bias);
        zt_gemm(d.s, Cd, A, B, ta, tb, alpha, beta, &Bias);
        for (int64_t z = 0; z < nb; z++)
            ref_gemm(c + z * M * N, a + (ba == 1 ? 0 : z) * M * K, b + (bb == 1 ? 0 : z) * K * N, M, N,
                     K, ta, tb, alpha, beta, bias);
        EXPECT_CLOSE(label("gemm %s batched: a batch %lld, b batch %lld, ta %d tb %d, bias: c",
                           dt_name(dt), (long long)ba, (long long)bb, ta, tb),
                     download(&d, Cd), c, nb * M * N, tol);
    }
    cpu_close(&d);
    bufs_free();
}
TEST(ops_gemm_f32) { check_gemm(ZT_F32); }
TEST(ops_gemm_bf16) { check_gemm(ZT_BF16); }
TEST(ops_gemm_f16) { check_gemm(ZT_F16); }

/* beta 0 means c is not read (BLAS semantics): a NaN left in c by earlier work must not survive */
TEST(ops_gemm_beta0_ignores_c) {
    cpu_dev d;
    if (!cpu_open(&d, 2, 0)) return;
    rng r = {101};
    double *a = drand(&r, 5 * 3, -1, 1), *b = drand(&r, 3 * 4, -1, 1), *c = dbuf(5 * 4);
    for (int i = 0; i < 20; i++) c[i] = NAN;
    zt_tensor A = to_dev(&d, ZT_F32, zt_shape2(5, 3), a), B = to_dev(&d, ZT_F32, zt_shape2(3, 4), b);
    zt_tensor Cd = to_dev(&d, ZT_F32, zt_shape2(5, 4), c);
    zt_gemm(d.s, Cd, A, B, 0, 0, 1.0f, 0.0f, NULL);
    ref_gemm(c, a, b, 5, 4, 3, 0, 0, 1.0, 0.0, NULL);
    for (int i = 0; i < 20; i++) c[i] = 0; /* the reference computed 0 * NaN: redo with c = 0 */
    ref_gemm(c, a, b, 5, 4, 3, 0, 0, 1.0, 0.0, NULL);
    EXPECT_CLOSE("gemm f32 beta 0 over a NaN-filled c: c", download(&d, Cd), c, 20, TOL_F32);
    cpu_close(&d);
    bufs_free();
}

static void check_sum_rows(zt_dtype dt) {
    cpu_dev d;
    if (!cpu_open(&d, 2, 0)) return;
    rng r = {110};
    static const int64_t sizes[2][2] = {{13, 37}, {7, 131}}; /* C 131: several column tasks */
    for (int i = 0; i < 2; i++) {
        int64_t R = sizes[i][0], C = sizes[i][1];
        double *x = drand(&r, R * C, -1, 1), *out = drand(&r, C, -1, 1);
        zt_tensor X = to_dev(&d, dt, zt_shape2(R, C), x), O = to_dev(&d, dt, zt_shape1(C), out);
        zt_sum_rows(d.s, O, X);
        ref_sum_rows(out, x, R, C);
        EXPECT_CLOSE(label("sum_rows %s (R %lld, C %lld): out = prefill + sums", dt_name(dt), (long long)R,
                           (long long)C),
                     download(&d, O), out, C, tol_for(dt));
    }
    cpu_close(&d);
    bufs_free();
}
TEST(ops_sum_rows_f32) { check_sum_rows(ZT_F32); }
TEST(ops_sum_rows_bf16) { check_sum_rows(ZT_BF16); }
TEST(ops_sum_rows_f16) { check_sum_rows(ZT_F16); }

/* act: inp, weight, out, dout, dinp; grad: dweight, dbias (f32 gradients of bf16 weights is the
   mixed-precision case) */
static void check_matmul(zt_dtype act, zt_dtype grad) {
    cpu_dev d;
    if (!cpu_open(&d, 2, 0)) return;
    rng r = {120};
    const int64_t N = 13, C = 37, OC = 29;
    const char *cfg = label("matmul %s (grads %s) N %lld C %lld OC %lld", dt_name(act), dt_name(grad),
                            (long long)N, (long long)C, (long long)OC);
    double *inp = drand(&r, N * C, -1, 1), *w = drand(&r, OC * C, -1, 1), *bias = drand(&r, OC, -1, 1);
    zt_tensor Inp = to_dev(&d, act, zt_shape2(N, C), inp), W = to_dev(&d, act, zt_shape2(OC, C), w);
    zt_tensor Bias = to_dev(&d, act, zt_shape1(OC), bias);
    for (int with_bias = 0; with_bias < 2; with_bias++) {
        double *out = drand(&r, N * OC, -1, 1); /* garbage: forward writes */
        zt_tensor Out = to_dev(&d, act, zt_shape2(N, OC), out);
        zt_matmul_forward(d.s, Out, Inp, W, with_bias ? &Bias : NULL);
        ref_matmul_forward(out, inp, w, with_bias ? bias : NULL, N, C, OC);
        EXPECT_CLOSE(label("%s%s: out", cfg, with_bias ? " bias" : ""), download(&d, Out), out, N * OC,
                     tol_for(act));
    }
    /* backward: all three gradients, then each alone (the others NULL) */
    for (int which = 0; which < 4; which++) {
        int want_inp = which == 0 || which == 1, want_w = which == 0 || which == 2;
        int want_b = which == 0 || which == 3;
        double *dout = drand(&r, N * OC, -1, 1);
        double *dinp = drand(&r, N * C, -1, 1), *dw = drand(&r, OC * C, -1, 1);
        double *db = drand(&r, OC, -1, 1);
        zt_tensor Dout = to_dev(&d, act, zt_shape2(N, OC), dout);
        zt_tensor Dinp = to_dev(&d, act, zt_shape2(N, C), dinp);
        zt_tensor Dw = to_dev(&d, grad, zt_shape2(OC, C), dw), Db = to_dev(&d, grad, zt_shape1(OC), db);
        double *dinp0 = dcopy(dinp, N * C), *dw0 = dcopy(dw, OC * C), *db0 = dcopy(db, OC);
        zt_matmul_backward(d.s, want_inp ? &Dinp : NULL, want_w ? &Dw : NULL, want_b ? &Db : NULL, Dout,
                           Inp, W);
        ref_matmul_backward(want_inp ? dinp : NULL, want_w ? dw : NULL, want_b ? db : NULL, dout, inp, w,
                            N, C, OC);
        const char *what = label("%s backward (%s%s%s)", cfg, want_inp ? " dinp" : "",
                                 want_w ? " dweight" : "", want_b ? " dbias" : "");
        EXPECT_CLOSE(label("%s: dinp = prefill + grad", what), download(&d, Dinp), dinp, N * C,
                     tol_for(act));
        EXPECT_CLOSE(label("%s: dweight = prefill + grad", what), download(&d, Dw), dw, OC * C,
                     tol_for(grad));
        EXPECT_CLOSE(label("%s: dbias = prefill + grad", what), download(&d, Db), db, OC, tol_for(grad));
        if (!want_inp) EXPECT_EXACT(label("%s: dinp untouched", what), download(&d, Dinp), dinp0, N * C);
        if (!want_w) EXPECT_EXACT(label("%s: dweight untouched", what), download(&d, Dw), dw0, OC * C);
        if (!want_b) EXPECT_EXACT(label("%s: dbias untouched", what), download(&d, Db), db0, OC);
    }
    cpu_close(&d);
    bufs_free();
}
TEST(ops_matmul_f32) { check_matmul(ZT_F32, ZT_F32); }
TEST(ops_matmul_bf16) { check_matmul(ZT_BF16, ZT_BF16); }
TEST(ops_matmul_bf16_f32_grads) { check_matmul(ZT_BF16, ZT_F32); }
TEST(ops_matmul_f16) { check_matmul(ZT_F16, ZT_F16); }

static void embedding_case(cpu_dev *d, rng *r, zt_dtype dt, int64_t V, int64_t C, int64_t N) {
    int32_t *ids = ibuf(N);
    for (int64_t n = 0; n < N; n++) ids[n] = rng_int(r, V);
    ids[0] = ids[5] = ids[12] = 3, ids[7] = 0, ids[8] = (int32_t)V - 1; /* repeats, both ends */
    double *table = drand(r, V * C, -1, 1);
    zt_tensor Ids = ids_to_dev(d, zt_shape1(N), ids), Table = to_dev(d, dt, zt_shape2(V, C), table);
    for (int acc = 0; acc < 2; acc++) {
        double *out = drand(r, N * C, -1, 1);
        zt_tensor Out = to_dev(d, dt, zt_shape2(N, C), out);
        zt_embedding_forward(d->s, Out, Ids, Table, acc);
        ref_embedding_forward(out, ids, table, N, C, acc);
        EXPECT_CLOSE(label("embedding_forward %s accumulate %d (V %lld C %lld N %lld): out", dt_name(dt),
                           acc, (long long)V, (long long)C, (long long)N),
                     download(d, Out), out, N * C, tol_for(dt));
    }
    double *dout = drand(r, N * C, -1, 1), *dtable = drand(r, V * C, -1, 1);
    zt_tensor Dout = to_dev(d, dt, zt_shape2(N, C), dout), Dt = to_dev(d, dt, zt_shape2(V, C), dtable);
    zt_embedding_backward(d->s, Dt, Dout, Ids);
    ref_embedding_backward(dtable, dout, ids, N, C);
    EXPECT_CLOSE(label("embedding_backward %s (V %lld C %lld N %lld) repeated ids: dtable = prefill + "
                       "scattered rows", dt_name(dt), (long long)V, (long long)C, (long long)N),
                 download(d, Dt), dtable, V * C, tol_for(dt));
}
static void check_embedding(zt_dtype dt) {
    cpu_dev d;
    if (!cpu_open(&d, 2, 0)) return;
    rng r = {130};
    embedding_case(&d, &r, dt, 11, 37, 13);
    embedding_case(&d, &r, dt, 11, 131, 13);
    cpu_close(&d);
    bufs_free();
}
TEST(ops_embedding_f32) { check_embedding(ZT_F32); }
TEST(ops_embedding_bf16) { check_embedding(ZT_BF16); }
TEST(ops_embedding_f16) { check_embedding(ZT_F16); }

/* biased 0: no bias and no dbias (ndim 0), Cohere's LayerNorm */
static void layernorm_case(cpu_dev *d, rng *r, zt_dtype dt, int64_t N, int64_t C, int biased) {
    const float eps = 1e-5f;
    const char *cfg = label("layernorm %s N %lld C %lld%s", dt_name(dt), (long long)N, (long long)C,
                            biased ? "" : " without a bias");
    double *inp = drand(r, N * C, -0.5, 1.5), *w = drand(r, C, 0.5, 1.5), *b = drand(r, C, -0.5, 0.5);
    zt_tensor none;
    memset(&none, 0, sizeof none);
    if (!biased) memset(b, 0, sizeof(double) * (size_t)C);
    zt_tensor Inp = to_dev(d, dt, zt_shape2(N, C), inp);
    zt_tensor W = to_dev(d, dt, zt_shape1(C), w), B = biased ? to_dev(d, dt, zt_shape1(C), b) : none;
    zt_tensor Out = dev_new(d, dt, zt_shape2(N, C));
    zt_tensor Mean = dev_new(d, ZT_F32, zt_shape1(N)), Rstd = dev_new(d, ZT_F32, zt_shape1(N));
    zt_layernorm_forward(d->s, Out, Mean, Rstd, Inp, W, B, eps);
    double *out = dbuf(N * C), *mean = dbuf(N), *rstd = dbuf(N);
    ref_layernorm_forward(out, mean, rstd, inp, w, b, N, C, eps);
    EXPECT_CLOSE(label("%s: out", cfg), download(d, Out), out, N * C, tol_for(dt));
    EXPECT_CLOSE(label("%s: mean (f32)", cfg), download(d, Mean), mean, N, TOL_F32);
    EXPECT_CLOSE(label("%s: rstd (f32)", cfg), download(d, Rstd), rstd, N, TOL_F32);

    double *dout = drand(r, N * C, -1, 1), *dinp = drand(r, N * C, -1, 1);
    double *dw = drand(r, C, -1, 1), *db = drand(r, C, -1, 1);
    zt_tensor Dout = to_dev(d, dt, zt_shape2(N, C), dout), Dinp = to_dev(d, dt, zt_shape2(N, C), dinp);
    zt_tensor Dw = to_dev(d, dt, zt_shape1(C), dw), Db = biased ? to_dev(d, dt, zt_shape1(C), db) : none;
    zt_layernorm_backward(d->s, Dinp, Dw, Db, Dout, Inp, W, Mean, Rstd);
    ref_layernorm_backward(dinp, dw, db, dout, inp, w, N, C, eps);
    EXPECT_CLOSE(label("%s backward: dinp = prefill + grad", cfg), download(d, Dinp), dinp, N * C,
                 tol_for(dt));
    EXPECT_CLOSE(label("%s backward: dweight = prefill + grad", cfg), download(d, Dw), dw, C, tol_for(dt));
    if (biased) EXPECT_CLOSE(label("%s backward: dbias = prefill + grad", cfg), download(d, Db), db, C, tol_for(dt));
}
static void check_layernorm(zt_dtype dt) {
    cpu_dev d;
    if (!cpu_open(&d, 2, 0)) return;
    rng r = {140};
    layernorm_case(&d, &r, dt, 13, 37, 1);
    layernorm_case(&d, &r, dt, 7, 131, 1);
    layernorm_case(&d, &r, dt, 9, 67, 0);
    cpu_close(&d);
    bufs_free();
}
TEST(ops_layernorm_f32) { check_layernorm(ZT_F32); }
TEST(ops_layernorm_bf16) { check_layernorm(ZT_BF16); }
TEST(ops_layernorm_f16) { check_layernorm(ZT_F16); }

/* offset 1: Gemma's norm, whose stored weight is the difference from 1 (the reference gets 1 + weight) */
static void rmsnorm_case(cpu_dev *d, rng *r, zt_dtype dt, int64_t N, int64_t C, float offset) {
    const float eps = 1e-6f;
    const char *cfg = label("rmsnorm %s N %lld C %lld offset %g", dt_name(dt), (long long)N, (long long)C, offset);
    double *inp = drand(r, N * C, -1, 1.5), *w = drand(r, C, 0.5 - offset, 1.5 - offset), *w1 = dbuf(C);
    zt_tensor Inp = to_dev(d, dt, zt_shape2(N, C), inp), W = to_dev(d, dt, zt_shape1(C), w);
    for (int64_t c = 0; c < C; c++) w1[c] = w[c] + offset; /* w, rounded to dt: what the kernel multiplies by */
    zt_tensor Out = dev_new(d, dt, zt_shape2(N, C)), Rstd = dev_new(d, ZT_F32, zt_shape1(N));
    if (offset != 0) zt_rmsnorm_offset_forward(d->s, Out, Rstd, Inp, W, offset, eps);
    else zt_rmsnorm_forward(d->s, Out, Rstd, Inp, W, eps);
    double *out = dbuf(N * C), *rstd = dbuf(N);
    ref_rmsnorm_forward(out, rstd, inp, w1, N, C, eps);
    EXPECT_CLOSE(label("%s: out", cfg), download(d, Out), out, N * C, tol_for(dt));
    EXPECT_CLOSE(label("%s: rstd (f32)", cfg), download(d, Rstd), rstd, N, TOL_F32);

    double *dout = drand(r, N * C, -1, 1), *dinp = drand(r, N * C, -1, 1), *dw = drand(r, C, -1, 1);
    zt_tensor Dout = to_dev(d, dt, zt_shape2(N, C), dout), Dinp = to_dev(d, dt, zt_shape2(N, C), dinp);
    zt_tensor Dw = to_dev(d, dt, zt_shape1(C), dw);
    if (offset != 0) zt_rmsnorm_offset_backward(d->s, Dinp, Dw, Dout, Inp, W, offset, Rstd);
    else zt_rmsnorm_backward(d->s, Dinp, Dw, Dout, Inp, W, Rstd);
    ref_rmsnorm_backward(dinp, dw, dout, inp, w1, N, C, eps);
    EXPECT_CLOSE(label("%s backward: dinp = prefill + grad", cfg), download(d, Dinp), dinp, N * C,
                 tol_for(dt));
    EXPECT_CLOSE(label("%s backward: dweight = prefill + grad", cfg), download(d, Dw), dw, C, tol_for(dt));
}
static void check_rmsnorm(zt_dtype dt) {
    cpu_dev d;
    if (!cpu_open(&d, 2, 0)) return;
    rng r = {150};
    rmsnorm_case(&d, &r, dt, 13, 37, 0);
    rmsnorm_case(&d, &r, dt, 7, 131, 0);
    rmsnorm_case(&d, &r, dt, 7, 131, 1); /* Gemma */
    cpu_close(&d);
    bufs_free();
}
TEST(ops_rmsnorm_f32) { check_rmsnorm(ZT_F32); }
TEST(ops_rmsnorm_bf16) { check_rmsnorm(ZT_BF16); }
TEST(ops_rmsnorm_f16) { check_rmsnorm(ZT_F16); }

/* a weight of G rows (Cohere's per-head q and k norms): row n normed by weight row n % G, its dweight row summing
   those rows alone; the reference row by row */
static void grouped_norm_case(cpu_dev *d, rng *r, zt_dtype dt, int64_t N, int64_t C, int64_t G, int layernorm) {
    const float eps = 1e-5f;
    const char *cfg = label("%s %s N %lld C %lld, %lld weight rows", layernorm ? "layernorm" : "rmsnorm", dt_name(dt),
                            (long long)N, (long long)C, (long long)G);
    double *inp = drand(r, N * C, -0.5, 1.5), *w = drand(r, G * C, 0.5, 1.5), *b = dbuf(C);
    memset(b, 0, sizeof(double) * (size_t)C);
    zt_tensor none;
    memset(&none, 0, sizeof none);
    zt_tensor Inp = to_dev(d, dt, zt_shape2(N, C), inp), W = to_dev(d, dt, zt_shape2(G, C), w);
    zt_tensor Out = dev_new(d, dt, zt_shape2(N, C));
    zt_tensor Mean = dev_new(d, ZT_F32, zt_shape1(N)), Rstd = dev_new(d, ZT_F32, zt_shape1(N));
    if (layernorm) zt_layernorm_forward(d->s, Out, Mean, Rstd, Inp, W, none, eps);
    else zt_rmsnorm_forward(d->s, Out, Rstd, Inp, W, eps);
    double *out = dbuf(N * C), *mean = dbuf(N), *rstd = dbuf(N);
    double *dout = drand(r, N * C, -1, 1), *dinp = drand(r, N * C, -1, 1), *dw = drand(r, G * C, -1, 1);
    zt_tensor Dout = to_dev(d, dt, zt_shape2(N, C), dout), Dinp = to_dev(d, dt, zt_shape2(N, C), dinp);
    zt_tensor Dw = to_dev(d, dt, zt_shape2(G, C), dw);
    if (layernorm) zt_layernorm_backward(d->s, Dinp, Dw, none, Dout, Inp, W, Mean, Rstd);
    else zt_rmsnorm_backward(d->s, Dinp, Dw, Dout, Inp, W, Rstd);
    double *db = dbuf(C);
    for (int64_t n = 0; n < N; n++) {
        const double *wn = w + (n % G) * C;
        if (layernorm) {
            ref_layernorm_forward(out + n * C, mean + n, rstd + n, inp + n * C, wn, b, 1, C, eps);
            ref_layernorm_backward(dinp + n * C, dw + (n % G) * C, db, dout + n * C, inp + n * C, wn, 1, C, eps);
        } else {
            ref_rmsnorm_forward(out + n * C, rstd + n, inp + n * C, wn, 1, C, eps);
            ref_rmsnorm_backward(dinp + n * C, dw + (n % G) * C, dout + n * C, inp + n * C, wn, 1, C, eps);
        }
    }
    EXPECT_CLOSE(label("%s: out", cfg), download(d, Out), out, N * C, tol_for(dt));
    EXPECT_CLOSE(label("%s: rstd (f32)", cfg), download(d, Rstd), rstd, N, TOL_F32);
    EXPECT_CLOSE(label("%s backward: dinp = prefill + grad", cfg), download(d, Dinp), dinp, N * C, tol_for(dt));
    EXPECT_CLOSE(label("%s backward: dweight = prefill + grad", cfg), download(d, Dw), dw, G * C, tol_for(dt));
}
static void check_grouped_norms(zt_dtype dt) {
    cpu_dev d;
    if (!cpu_open(&d, 2, 0)) return;
    rng r = {160};
    grouped_norm_case(&d, &r, dt, 35, 37, 5, 1); /* 185 columns of weight: tasks span rows of it */
    grouped_norm_case(&d, &r, dt, 24, 16, 8, 0);
    cpu_close(&d);
    bufs_free();
}
TEST(ops_norms_with_a_weight_a_head_f32) { check_grouped_norms(ZT_F32); }
TEST(ops_norms_with_a_weight_a_head_bf16) { check_grouped_norms(ZT_BF16); }

/* gelu (tanh and erf) and silu: inputs across [-6, 6], where the tails and the curvature both show */
static void check_pointwise(zt_dtype dt) {
    cpu_dev d;
    if (!cpu_open(&d, 2, 0)) return;
    rng r = {160};
    const int64_t n = 20011; /* more than one elementwise chunk (16384) of the CPU kernel */
    double *inp = drand(&r, n, -6, 6);
    inp[0] = 0, inp[1] = -1e-3, inp[2] = 3e-3;
    zt_tensor Inp = to_dev(&d, dt, zt_shape1(n), inp);
    for (int op = 0; op < 3; op++) {
        const char *name = op == 0 ? "gelu" : op == 1 ? "silu" : "gelu (erf)";
        zt_tensor Out = dev_new(&d, dt, zt_shape1(n));
        double *out = dbuf(n), *dout = drand(&r, n, -1, 1), *dinp = drand(&r, n, -1, 1);
        zt_tensor Dout = to_dev(&d, dt, zt_shape1(n), dout), Dinp = to_dev(&d, dt, zt_shape1(n), dinp);
        if (op == 0) {
            zt_gelu_forward(d.s, Out, Inp);
            zt_gelu_backward(d.s, Dinp, Dout, Inp);
            ref_gelu_forward(out, inp, n);
            ref_gelu_backward(dinp, dout, inp, n);
        } else if (op == 1) {
            zt_silu_forward(d.s, Out, Inp);
            zt_silu_backward(d.s, Dinp, Dout, Inp);
            ref_silu_forward(out, inp, n);
            ref_silu_backward(dinp, dout, inp, n);
        } else {
            zt_gelu_erf_forward(d.s, Out, Inp);
            zt_gelu_erf_backward(d.s, Dinp, Dout, Inp);
            ref_gelu_erf_forward(out, inp, n);
            ref_gelu_erf_backward(dinp, dout, inp, n);
        }
        EXPECT_CLOSE(label("%s %s n %lld: out", name, dt_name(dt), (long long)n), download(&d, Out), out,
                     n, tol_for(dt));
        EXPECT_CLOSE(label("%s %s n %lld backward: dinp = prefill + grad", name, dt_name(dt),
                           (long long)n),
                     download(&d, Dinp), dinp, n, tol_for(dt));
    }
    const int64_t N = 13, H = 37;
    double *x = drand(&r, N * 2 * H, -4, 4), *out = dbuf(N * H);
    double *dout = drand(&r, N * H, -1, 1), *dx = drand(&r, N * 2 * H, -1, 1);
    zt_tensor X = to_dev(&d, dt, zt_shape2(N, 2 * H), x), Out = dev_new(&d, dt, zt_shape2(N, H));
    zt_tensor Dout = to_dev(&d, dt, zt_shape2(N, H), dout), Dx = to_dev(&d, dt, zt_shape2(N, 2 * H), dx);
    zt_swiglu_forward(d.s, Out, X);
    zt_swiglu_backward(d.s, Dx, Dout, X);
    ref_swiglu_forward(out, x, N, H);
    ref_swiglu_backward(dx, dout, x, N, H);
    EXPECT_CLOSE(label("swiglu %s N %lld H %lld: out", dt_name(dt), (long long)N, (long long)H),
                 download(&d, Out), out, N * H, tol_for(dt));
    EXPECT_CLOSE(label("swiglu %s N %lld H %lld backward: dinp = prefill + grad", dt_name(dt),
                       (long long)N, (long long)H),
                 download(&d, Dx), dx, N * 2 * H, tol_for(dt));
    double *dx2 = drand(&r, N * 2 * H, -1, 1);
    upload(&d, Dx, dx2);
    zt_geglu_forward(d.s, Out, X);
    zt_geglu_backward(d.s, Dx, Dout, X);
    ref_geglu_forward(out, x, N, H);
    ref_geglu_backward(dx2, dout, x, N, H);
    EXPECT_CLOSE(label("geglu %s N %lld H %lld: out", dt_name(dt), (long long)N, (long long)H),
                 download(&d, Out), out, N * H, tol_for(dt));
    EXPECT_CLOSE(label("geglu %s N %lld H %lld backward: dinp = prefill + grad", dt_name(dt),
                       (long long)N, (long long)H),
                 download(&d, Dx), dx2, N * 2 * H, tol_for(dt));
    /* gpt-oss's clamped SwiGLU (interleaved), its limit 2 inside the inputs' range */
    double *dx3 = drand(&r, N * 2 * H, -1, 1);
    upload(&d, Dx, dx3);
    zt_swiglu_clamped_forward(d.s, Out, X, 1.702f, 2.0f);
    zt_swiglu_clamped_backward(d.s, Dx, Dout, X, 1.702f, 2.0f);
    ref_swiglu_clamped_forward(out, x, N, H, 1.702, 2.0);
    ref_swiglu_clamped_backward(dx3, dout, x, N, H, 1.702, 2.0);
    EXPECT_CLOSE(label("clamped swiglu %s N %lld H %lld: out", dt_name(dt), (long long)N, (long long)H),
                 download(&d, Out), out, N * H, tol_for(dt));
    EXPECT_CLOSE(label("clamped swiglu %s N %lld H %lld backward: dinp = prefill + grad", dt_name(dt),
                       (long long)N, (long long)H),
                 download(&d, Dx), dx3, N * 2 * H, tol_for(dt));
    cpu_close(&d);
    bufs_free();
}
TEST(ops_gelu_silu_swiglu_f32) { check_pointwise(ZT_F32); }
TEST(ops_gelu_silu_swiglu_bf16) { check_pointwise(ZT_BF16); }
TEST(ops_gelu_silu_swiglu_f16) { check_pointwise(ZT_F16); }

/* the MoE steps: routing (k of E, both weightings), the sort, gathering and combining rows */
static void moe_case(cpu_dev *d, rng *r, zt_dtype dt, int64_t N, int64_t E, int64_t k, int64_t C, int normalize) {
    const char *dn = dt_name(dt);
    double *logits = drand(r, N * E, -2, 2);
    zt_tensor Logits = to_dev(d, dt, zt_shape2(N, E), logits);
    zt_tensor Idx = dev_new(d, ZT_I32, zt_shape2(N, k)), Weight = dev_new(d, ZT_F32, zt_shape2(N, k));
    zt_tensor Probs = dev_new(d, ZT_F32, zt_shape2(N, E));
    zt_moe_route_forward(d->s, Idx, Weight, Probs, Logits, normalize);
    int32_t *idx = ibuf(N * k);
    double *weight = dbuf(N * k), *probs = dbuf(N * E);
    ref_moe_route_forward(idx, weight, probs, logits, N, E, k, normalize);
    double *idx_d = dbuf(N * k);
    for (int64_t i = 0; i < N * k; i++) idx_d[i] = idx[i];
    EXPECT_EXACT(label("moe route %s N %lld E %lld k %lld: idx", dn, (long long)N, (long long)E, (long long)k),
                 download(d, Idx), idx_d, N * k);
    EXPECT_CLOSE(label("moe route %s: probs", dn), download(d, Probs), probs, N * E, TOL_F32);
    EXPECT_CLOSE(label("moe route %s: weight", dn), download(d, Weight), weight, N * k, TOL_F32);
    double *dweight = drand(r, N * k, -1, 1), *dlogits = drand(r, N * E, -1, 1);
    zt_tensor Dweight = to_dev(d, ZT_F32, zt_shape2(N, k), dweight), Dlogits = to_dev(d, dt, zt_shape2(N, E), dlogits);
    zt_moe_route_backward(d->s, Dlogits, Dweight, Probs, Idx, normalize);
    ref_moe_route_backward(dlogits, dweight, probs, idx, N, E, k, normalize);
    EXPECT_CLOSE(label("moe route %s backward: dlogits = prefill + grad", dn), download(d, Dlogits), dlogits, N * E,
                 tol_for(dt));
    double *dsums = drand(r, E, -1, 1);
    zt_tensor Dsums = to_dev(d, ZT_F32, zt_shape1(E), dsums);
    zt_moe_balance_backward(d->s, Dlogits, Probs, Dsums);
    ref_moe_balance_backward(dlogits, probs, dsums, N, E);
    EXPECT_CLOSE(label("moe balance %s backward: dlogits = prefill + grad", dn), download(d, Dlogits), dlogits, N * E,
                 tol_for(dt));

    int64_t n = N * k;
    zt_tensor Order = dev_new(d, ZT_I32, zt_shape1(n)), Where = dev_new(d, ZT_I32, zt_shape1(n));
    zt_tensor Counts = dev_new(d, ZT_I32, zt_shape1(E));
    zt_moe_sort(d->s, Order, Where, Counts, Idx);
    int32_t *order = ibuf(n), *where = ibuf(n), *counts = ibuf(E);
    ref_moe_sort(order, where, counts, idx, n, E);
    double *od = dbuf(n), *wd = dbuf(n), *cd = dbuf(E);
    for (int64_t i = 0; i < n; i++) od[i] = order[i], wd[i] = where[i];
    for (int64_t e = 0; e < E; e++) cd[e] = counts[e];
    EXPECT_EXACT(label("moe sort %s: order", dn), download(d, Order), od, n);
    EXPECT_EXACT(label("moe sort %s: where", dn), download(d, Where), wd, n);
    EXPECT_EXACT(label("moe sort %s: counts", dn), download(d, Counts), cd, E);

    double *x = drand(r, N * C, -1, 1), *xs = dbuf(n * C);
    zt_tensor X = to_dev(d, dt, zt_shape2(N, C), x), Xs = dev_new(d, dt, zt_shape2(n, C));
    zt_moe_gather_forward(d->s, Xs, X, Order);
    for (int64_t i = 0; i < n; i++) memcpy(xs + i * C, x + order[i] / k * C, sizeof(double) * (size_t)C);
    EXPECT_EXACT(label("moe gather %s C %lld: xs", dn, (long long)C), download(d, Xs), xs, n * C);
    double *dxs = drand(r, n * C, -1, 1), *dx = drand(r, N * C, -1, 1);
    zt_tensor Dxs = to_dev(d, dt, zt_shape2(n, C), dxs), Dx = to_dev(d, dt, zt_shape2(N, C), dx);
    zt_moe_gather_backward(d->s, Dx, Dxs, Where);
    for (int64_t t = 0; t < N; t++)
        for (int64_t j = 0; j < k; j++)
            for (int64_t c = 0; c < C; c++) dx[t * C + c] += dxs[where[t * k + j] * C + c];
    EXPECT_CLOSE(label("moe gather %s backward: dx = prefill + grad", dn), download(d, Dx), dx, N * C, tol_for(dt));

    double *ys = drand(r, n * C, -1, 1), *out = dbuf(N * C);
    zt_tensor Ys = to_dev(d, dt, zt_shape2(n, C), ys), Out = dev_new(d, dt, zt_shape2(N, C));
    for (int64_t i = 0; i < n; i++) weight[i] = (double)(float)weight[i];
    zt_moe_combine_forward(d->s, Out, Ys, Weight, Where);
    ref_moe_combine_forward(out, ys, weight, where, N, C, k);
    EXPECT_CLOSE(label("moe combine %s: out", dn), download(d, Out), out, N * C, tol_for(dt));
    double *dout = drand(r, N * C, -1, 1), *dys = drand(r, n * C, -1, 1), *dw = drand(r, n, -1, 1);
    zt_tensor Dout = to_dev(d, dt, zt_shape2(N, C), dout), Dys = to_dev(d, dt, zt_shape2(n, C), dys);
    zt_tensor Dw = to_dev(d, ZT_F32, zt_shape2(N, k), dw);
    zt_moe_combine_backward(d->s, Dys, Dw, Dout, Ys, Weight, Where);
    ref_moe_combine_backward(dys, dw, dout, ys, weight, where, N, C, k);
    EXPECT_CLOSE(label("moe combine %s backward: dys = prefill + grad", dn), download(d, Dys), dys, n * C, tol_for(dt));
    EXPECT_CLOSE(label("moe combine %s backward: dweight = prefill + grad", dn), download(d, Dw), dw, n, TOL_F32);

    double *gate = drand(r, N, -3, 3), *dgate = drand(r, N, -1, 1), *acc = drand(r, N * C, -1, 1);
    zt_tensor Gate = to_dev(d, dt, zt_shape1(N), gate), Dgate = to_dev(d, dt, zt_shape1(N), dgate);
    zt_tensor Acc = to_dev(d, dt, zt_shape2(N, C), acc), Y = to_dev(d, dt, zt_shape2(N, C), x);
    zt_gated_add_forward(d->s, Acc, Y, Gate);
    ref_gated_add_forward(acc, x, gate, N, C);
    EXPECT_CLOSE(label("gated add %s: out = prefill + gated y", dn), download(d, Acc), acc, N * C, tol_for(dt));
    upload(d, Dx, dx);
    zt_gated_add_backward(d->s, Dx, Dgate, Dout, Y, Gate);
    ref_gated_add_backward(dx, dgate, dout, x, gate, N, C);
    EXPECT_CLOSE(label("gated add %s backward: dy = prefill + grad", dn), download(d, Dx), dx, N * C, tol_for(dt));
    EXPECT_CLOSE(label("gated add %s backward: dgate = prefill + grad", dn), download(d, Dgate), dgate, N, tol_for(dt));
}
/* the sigmoid routing (DeepSeek-V3's, GLM-4.5's): groups, a correction bias, a scale, either weighting */
static void moe_sigmoid_case(cpu_dev *d, rng *r, zt_dtype dt, int64_t N, int64_t E, int64_t k, int64_t groups,
                             int64_t topk_groups, int normalize) {
    const char *dn = dt_name(dt);
    double *logits = drand(r, N * E, -3, 3), *bias = drand(r, E, -0.1, 0.1);
    zt_tensor Logits = to_dev(d, dt, zt_shape2(N, E), logits), Bias = to_dev(d, ZT_F32, zt_shape1(E), bias);
    zt_tensor Idx = dev_new(d, ZT_I32, zt_shape2(N, k)), Weight = dev_new(d, ZT_F32, zt_shape2(N, k));
    zt_tensor Probs = dev_new(d, ZT_F32, zt_shape2(N, E));
    zt_moe_route_params p;
    memset(&p, 0, sizeof p);
    p.normalize = normalize, p.sigmoid = 1, p.groups = groups, p.topk_groups = topk_groups, p.scale = 2.5f, p.bias = &Bias;
    zt_moe_route_with(d->s, Idx, Weight, Probs, Logits, p);
    int32_t *idx = ibuf(N * k);
    double *weight = dbuf(N * k), *probs = dbuf(N * E), *idx_d = dbuf(N * k);
    ref_moe_route_sigmoid_forward(idx, weight, probs, logits, bias, N, E, k, groups, topk_groups, 2.5, normalize);
    for (int64_t i = 0; i < N * k; i++) idx_d[i] = idx[i];
    const char *cfg = label("moe sigmoid route %s N %lld E %lld k %lld, %lld of %lld groups%s", dn, (long long)N,
                            (long long)E, (long long)k, (long long)topk_groups, (long long)groups,
                            normalize ? ", normalized" : "");
    EXPECT_EXACT(label("%s: idx", cfg), download(d, Idx), idx_d, N * k);
    EXPECT_CLOSE(label("%s: probs", cfg), download(d, Probs), probs, N * E, TOL_F32);
    EXPECT_CLOSE(label("%s: weight", cfg), download(d, Weight), weight, N * k, TOL_F32);
    double *dweight = drand(r, N * k, -1, 1), *dlogits = drand(r, N * E, -1, 1);
    zt_tensor Dweight = to_dev(d, ZT_F32, zt_shape2(N, k), dweight), Dlogits = to_dev(d, dt, zt_shape2(N, E), dlogits);
    zt_moe_route_backward_with(d->s, Dlogits, Dweight, Probs, Idx, p);
    ref_moe_route_sigmoid_backward(dlogits, dweight, probs, idx, N, E, k, 2.5, normalize);
    EXPECT_CLOSE(label("%s backward: dlogits = prefill + grad", cfg), download(d, Dlogits), dlogits, N * E, tol_for(dt));
}
/* DeepSeek-V2's routing: softmax probabilities, the choice within the topk_groups groups whose best is likeliest,
   unnormalized weights times routed_scaling_factor */
static void moe_grouped_case(cpu_dev *d, rng *r, zt_dtype dt, int64_t N, int64_t E, int64_t k, int64_t groups,
                             int64_t topk_groups) {
    const char *dn = dt_name(dt);
    double *logits = drand(r, N * E, -3, 3);
    zt_tensor Logits = to_dev(d, dt, zt_shape2(N, E), logits);
    zt_tensor Idx = dev_new(d, ZT_I32, zt_shape2(N, k)), Weight = dev_new(d, ZT_F32, zt_shape2(N, k));
    zt_tensor Probs = dev_new(d, ZT_F32, zt_shape2(N, E));
    zt_moe_route_params p;
    memset(&p, 0, sizeof p);
    p.groups = groups, p.topk_groups = topk_groups, p.group_max = 1, p.scale = 16.0f;
    zt_moe_route_with(d->s, Idx, Weight, Probs, Logits, p);
    int32_t *idx = ibuf(N * k);
    double *weight = dbuf(N * k), *probs = dbuf(N * E), *idx_d = dbuf(N * k);
    ref_moe_route_grouped_forward(idx, weight, probs, logits, N, E, k, groups, topk_groups, 16.0);
    for (int64_t i = 0; i < N * k; i++) idx_d[i] = idx[i];
    const char *cfg = label("moe softmax route %s N %lld E %lld k %lld, %lld of %lld groups by their best", dn,
                            (long long)N, (long long)E, (long long)k, (long long)topk_groups, (long long)groups);
    EXPECT_EXACT(label("%s: idx", cfg), download(d, Idx), idx_d, N * k);
    EXPECT_CLOSE(label("%s: probs", cfg), download(d, Probs), probs, N * E, TOL_F32);
    EXPECT_CLOSE(label("%s: weight", cfg), download(d, Weight), weight, N * k, TOL_F32);
    double *dweight = drand(r, N * k, -1, 1), *dlogits = drand(r, N * E, -1, 1), *scaled = dbuf(N * k);
    zt_tensor Dweight = to_dev(d, ZT_F32, zt_shape2(N, k), dweight), Dlogits = to_dev(d, dt, zt_shape2(N, E), dlogits);
    zt_moe_route_backward_with(d->s, Dlogits, Dweight, Probs, Idx, p);
    for (int64_t i = 0; i < N * k; i++) scaled[i] = 16.0 * dweight[i]; /* weight = scale p */
    ref_moe_route_backward(dlogits, scaled, probs, idx, N, E, k, 0);
    EXPECT_CLOSE(label("%s backward: dlogits = prefill + grad", cfg), download(d, Dlogits), dlogits, N * E, tol_for(dt));
}
static void check_moe(zt_dtype dt) {
    cpu_dev d;
    if (!cpu_open(&d, 2, 0)) return;
    rng r = {165};
    moe_sigmoid_case(&d, &r, dt, 29, 16, 3, 4, 2, 1); /* groups of 4, 2 of them */
    moe_sigmoid_case(&d, &r, dt, 300, 64, 8, 8, 4, 1); /* DeepSeek-V3's 8 groups, 4 chosen (of 64 experts) */
    moe_sigmoid_case(&d, &r, dt, 17, 8, 2, 1, 1, 0);  /* one group (GLM-4.5's), unnormalized */
    moe_grouped_case(&d, &r, dt, 300, 160, 6, 8, 3);  /* DeepSeek-V2's 160 experts in 8 groups, 3 by their best */
    moe_grouped_case(&d, &r, dt, 29, 16, 2, 4, 1);
    moe_case(&d, &r, dt, 37, 8, 2, 33, 1); /* Mixtral's 8 and 2 */
    moe_case(&d, &r, dt, 13, 16, 4, 20, 0);
    moe_case(&d, &r, dt, 300, 64, 8, 8, 1); /* more than one task of rows */
    cpu_close(&d);
    bufs_free();
}
TEST(ops_moe_f32) { check_moe(ZT_F32); }
TEST(ops_moe_bf16) { check_moe(ZT_BF16); }
TEST(ops_moe_f16) { check_moe(ZT_F16); }

/* columns between heads (MLA's keys and values): a part of each head copied, one head read by all (DeepSeek's shared
   rotary key), the rest of the written tensor untouched; backward adds back, summing over the heads where one fed all */
static void head_cols_case(cpu_dev *d, rng *r, zt_dtype dt, int64_t N, int64_t HO, int64_t DO, int64_t o0, int64_t HI,
                           int64_t DI, int64_t i0, int64_t D) {
    const char *cfg = label("head cols %s N %lld: out (%lld, %lld) [%lld, +%lld) from inp (%lld, %lld) [%lld, ..)",
                            dt_name(dt), (long long)N, (long long)HO, (long long)DO, (long long)o0, (long long)D,
                            (long long)HI, (long long)DI, (long long)i0);
    int64_t no = N * HO * DO, ni = N * HI * DI;
    zt_tensor Out = to_dev(d, dt, zt_shape3(N, HO, DO), drand(r, no, -1, 1));
    zt_tensor Inp = to_dev(d, dt, zt_shape3(N, HI, DI), drand(r, ni, -1, 1));
    double *out = download(d, Out), *inp = download(d, Inp); /* as rounded to dt */
    zt_head_cols_forward(d->s, Out, o0, Inp, i0, D);
    for (int64_t n = 0; n < N; n++)
        for (int64_t h = 0; h < HO; h++)
            for (int64_t j = 0; j < D; j++)
                out[(n * HO + h) * DO + o0 + j] = inp[(n * HI + (HI == 1 ? 0 : h)) * DI + i0 + j];
    EXPECT_EXACT(label("%s: out", cfg), download(d, Out), out, no);
    zt_tensor Dinp = to_dev(d, dt, zt_shape3(N, HI, DI), drand(r, ni, -1, 1));
    zt_tensor Dout = to_dev(d, dt, zt_shape3(N, HO, DO), drand(r, no, -1, 1));
    double *dinp = download(d, Dinp), *dout = download(d, Dout);
    zt_head_cols_backward(d->s, Dinp, i0, Dout, o0, D);
    for (int64_t n = 0; n < N; n++)
        for (int64_t h = 0; h < HO; h++)
            for (int64_t j = 0; j < D; j++)
                dinp[(n * HI + (HI == 1 ? 0 : h)) * DI + i0 + j] += dout[(n * HO + h) * DO + o0 + j];
    EXPECT_CLOSE(label("%s backward: dinp = prefill + grad", cfg), download(d, Dinp), dinp, ni, tol_for(dt));
}
static void check_head_cols(zt_dtype dt) {
    cpu_dev d;
    if (!cpu_open(&d, 2, 0)) return;
    rng r = {168};
    head_cols_case(&d, &r, dt, 37, 4, 24, 0, 4, 40, 0, 16);   /* k's nope part from kv_b_proj's heads */
    head_cols_case(&d, &r, dt, 37, 4, 24, 16, 4, 40, 16, 8);  /* ... a part inside both */
    head_cols_case(&d, &r, dt, 37, 4, 24, 16, 1, 8, 0, 8);    /* the shared rotary key into every head */
    head_cols_case(&d, &r, dt, 600, 16, 192, 128, 1, 64, 0, 64); /* DeepSeek-V3's, more than one task of rows */
    head_cols_case(&d, &r, dt, 5, 3, 7, 2, 3, 9, 4, 0);       /* nothing */
    cpu_close(&d);
    bufs_free();
}
TEST(ops_head_cols_f32) { check_head_cols(ZT_F32); }
TEST(ops_head_cols_bf16) { check_head_cols(ZT_BF16); }

/* rope: head dims 64, 80 and 128, positions beyond 8192 (where an angle computed in double instead
   of f32, as transformers does, is visibly off), two thetas; separate and in-place forward */
static void check_rope(zt_dtype dt) {
    cpu_dev d;
    if (!cpu_open(&d, 2, 0)) return;
    rng r = {170};
    const int64_t B = 2, T = 3, H = 3;
    static const int32_t pos[6] = {0, 1, 17, 8191, 8193, 40001};
    static const int64_t hds[3] = {64, 80, 128};
    static const float thetas[2] = {10000.0f, 1000000.0f};
    zt_tensor Pos = ids_to_dev(&d, zt_shape2(B, T), pos);
    for (int hi = 0; hi < 3; hi++)
        for (int ti = 0; ti < 2; ti++) {
            int64_t HD = hds[hi], n = B * T * H * HD;
            float theta = thetas[ti];
            const char *cfg = label("rope %s HD %lld theta %g", dt_name(dt), (long long)HD, theta);
            zt_shape sh = zt_shape4(B, T, H, HD);
            double *x = drand(&r, n, -1, 1), *out = dbuf(n);
            zt_tensor X = to_dev(&d, dt, sh, x), Out = dev_new(&d, dt, sh);
            zt_rope_forward(d.s, Out, X, Pos, theta, NULL);
            ref_rope_forward(out, x, pos, B * T, H, HD, theta);
            EXPECT_CLOSE(label("%s: out", cfg), download(&d, Out), out, n, tol_for(dt));
            zt_rope_forward(d.s, X, X, Pos, theta, NULL); /* in place */
            EXPECT_CLOSE(label("%s in place: out", cfg), download(&d, X), out, n, tol_for(dt));

            double *dout = drand(&r, n, -1, 1), *dx = drand(&r, n, -1, 1);
            zt_tensor Dout = to_dev(&d, dt, sh, dout), Dx = to_dev(&d, dt, sh, dx);
            zt_rope_backward(d.s, Dx, Dout, Pos, theta, NULL);
            ref_rope_backward(dx, dout, pos, B * T, H, HD, theta);
            EXPECT_CLOSE(label("%s backward: dinp = prefill + grad", cfg), download(&d, Dx), dx, n,
                         tol_for(dt));
            /* a partial rotation (Phi-4-mini's 0.75 of the head), in place and backward */
            zt_rope_scaling part;
            memset(&part, 0, sizeof part);
            part.rotary_dim = HD * 3 / 4;
            zt_tensor Xp = to_dev(&d, dt, sh, x);
            ref_rope_part_forward(out, x, pos, B * T, H, HD, part.rotary_dim, theta);
            zt_rope_forward(d.s, Out, Xp, Pos, theta, &part); /* Out held the whole head's rotation */
            EXPECT_CLOSE(label("%s, %lld dimensions rotated: out", cfg, (long long)part.rotary_dim), download(&d, Out),
                         out, n, tol_for(dt));
            zt_rope_forward(d.s, Xp, Xp, Pos, theta, &part);
            EXPECT_CLOSE(label("%s, %lld dimensions rotated, in place: out", cfg, (long long)part.rotary_dim),
                         download(&d, Xp), out, n, tol_for(dt));
            zt_rope_backward(d.s, Dx, Dout, Pos, theta, &part);
            ref_rope_part_backward(dx, dout, pos, B * T, H, HD, part.rotary_dim, theta);
            EXPECT_CLOSE(label("%s, %lld dimensions rotated, backward: dinp += grad", cfg, (long long)part.rotary_dim),
                         download(&d, Dx), dx, n, tol_for(dt));
            /* GLM's: half the head in interleaved pairs (2i, 2i + 1), in place and backward */
            part.rotary_dim = HD / 2, part.interleaved = 1;
            zt_tensor Xi = to_dev(&d, dt, sh, x);
            ref_rope_il_forward(out, x, pos, B * T, H, HD, part.rotary_dim, 1, theta);
            zt_rope_forward(d.s, Xi, Xi, Pos, theta, &part);
            EXPECT_CLOSE(label("%s, %lld dimensions rotated interleaved, in place: out", cfg, (long long)part.rotary_dim),
                         download(&d, Xi), out, n, tol_for(dt));
            zt_rope_backward(d.s, Dx, Dout, Pos, theta, &part);
            ref_rope_il_backward(dx, dout, pos, B * T, H, HD, part.rotary_dim, 1, theta);
            EXPECT_CLOSE(label("%s, %lld dimensions rotated interleaved, backward: dinp += grad", cfg,
                               (long long)part.rotary_dim), download(&d, Dx), dx, n, tol_for(dt));
        }
    cpu_close(&d);
    bufs_free();
}
TEST(ops_rope_f32) { check_rope(ZT_F32); }
TEST(ops_rope_bf16) { check_rope(ZT_BF16); }
TEST(ops_rope_f16) { check_rope(ZT_F16); }

/* scale 0: 1/sqrt(HD); cap > 0: capped scores (Gemma 2); window > 0: a sliding window; sinks: gpt-oss's */
static void attention_sink_case(cpu_dev *d, rng *r, zt_dtype dt, const int32_t *starts, int64_t B, int64_t T,
                                int64_t NH, int64_t NKV, int64_t HD, float scale, float cap, int64_t window, int sinks) {
    const char *cfg = label("attention %s B %lld T %lld NH %lld NKV %lld HD %lld%s scale %g cap %g window %lld%s",
                            dt_name(dt), (long long)B, (long long)T, (long long)NH, (long long)NKV, (long long)HD,
                            starts ? " with starts" : "", scale, cap, (long long)window, sinks ? " sinks" : "");
    zt_attention_opts ao = {scale, cap, window, 0.0f, 0, 0, NULL, NULL};
    double *sk = sinks ? drand(r, NH, -1, 3) : NULL, *dsk = sinks ? drand(r, NH, -1, 1) : NULL;
    zt_tensor Sk = sinks ? to_dev(d, dt, zt_shape1(NH), sk) : zt_tensor_make(NULL, ZT_F32, ZT_DEVICE, zt_shape1(0));
    zt_tensor Dsk = sinks ? to_dev(d, ZT_F32, zt_shape1(NH), dsk) : Sk;
    if (sinks) ao.sinks = &Sk, ao.dsinks = &Dsk;
    int ex = scale != 0 || cap != 0 || window != 0 || sinks;
    int64_t nq = B * T * NH * HD, nk = B * T * NKV * HD;
    double *q = drand(r, nq, -2, 2), *k = drand(r, nk, -2, 2), *v = drand(r, nk, -1, 1);
    zt_tensor Q = to_dev(d, dt, zt_shape4(B, T, NH, HD), q);
    zt_tensor K = to_dev(d, dt, zt_shape4(B, T, NKV, HD), k), V = to_dev(d, dt, zt_shape4(B, T, NKV, HD), v);
    zt_tensor Starts = starts ? ids_to_dev(d, zt_shape2(B, T), starts)
                              : zt_tensor_make(NULL, ZT_I32, ZT_DEVICE, zt_shape1(0)); /* unused */
    zt_tensor Out = dev_new(d, dt, zt_shape4(B, T, NH, HD)), Lse = dev_new(d, ZT_F32, zt_shape3(B, NH, T));
    if (ex) zt_attention_ex_forward(d->s, Out, Lse, Q, K, V, starts ? &Starts : NULL, &ao);
    else zt_attention_forward(d->s, Out, Lse, Q, K, V, starts ? &Starts : NULL);
    double *out = dbuf(nq), *lse = dbuf(B * NH * T);
    ref_attention_sink_forward(out, lse, q, k, v, starts, B, T, NH, NKV, HD, scale, cap, window, NULL, sk);
    EXPECT_CLOSE(label("%s: out", cfg), download(d, Out), out, nq, tol_for(dt));
    EXPECT_CLOSE(label("%s: lse (f32)", cfg), download(d, Lse), lse, B * NH * T, TOL_F32);

    double *dout = drand(r, nq, -1, 1), *dq = drand(r, nq, -1, 1), *dk = drand(r, nk, -1, 1);
    double *dv = drand(r, nk, -1, 1);
    zt_shape qs = zt_shape4(B, T, NH, HD), ks = zt_shape4(B, T, NKV, HD);
    zt_tensor Dout = to_dev(d, dt, qs, dout), Dq = to_dev(d, dt, qs, dq);
    zt_tensor Dk = to_dev(d, dt, ks, dk), Dv = to_dev(d, dt, ks, dv);
    if (ex) zt_attention_ex_backward(d->s, Dq, Dk, Dv, Dout, Q, K, V, Out, Lse, starts ? &Starts : NULL, &ao);
    else zt_attention_backward(d->s, Dq, Dk, Dv, Dout, Q, K, V, Out, Lse, starts ? &Starts : NULL);
    ref_attention_sink_backward(dq, dk, dv, dsk, dout, q, k, v, starts, B, T, NH, NKV, HD, scale, cap, window, NULL, sk);
    /* dsinks sums over rows of D_i = dout_i . out_i, out rounded to the dtype: its tolerance */
    if (sinks) EXPECT_CLOSE(label("%s backward: dsinks (f32) = prefill + grad", cfg), download(d, Dsk), dsk, NH,
                            dt == ZT_F32 ? TOL_F32 : tol_for(dt));
    EXPECT_CLOSE(label("%s backward: dq = prefill + grad", cfg), download(d, Dq), dq, nq, tol_for(dt));
    EXPECT_CLOSE(label("%s backward: dk = prefill + grad", cfg), download(d, Dk), dk, nk, tol_for(dt));
    EXPECT_CLOSE(label("%s backward: dv = prefill + grad", cfg), download(d, Dv), dv, nk, tol_for(dt));
}
static void attention_ex_case(cpu_dev *d, rng *r, zt_dtype dt, const int32_t *starts, int64_t B, int64_t T,
                              int64_t NH, int64_t NKV, int64_t HD, float scale, float cap, int64_t window) {
    attention_sink_case(d, r, dt, starts, B, T, NH, NKV, HD, scale, cap, window, 0);
}
/* attention dropout (p, seed, offset) against the reference with zt_dropout_factor's factors */
static void attention_drop_case(cpu_dev *d, rng *r, zt_dtype dt, const int32_t *starts, int64_t B, int64_t T,
                                int64_t NH, int64_t NKV, int64_t HD, float cap, int64_t window, float p, int64_t offset) {
    const char *cfg = label("attention %s B %lld T %lld NH %lld NKV %lld HD %lld%s cap %g window %lld dropout %g", dt_name(dt),
                            (long long)B, (long long)T, (long long)NH, (long long)NKV, (long long)HD,
                            starts ? " with starts" : "", cap, (long long)window, p);
    const uint64_t seed = 0xd409;
    zt_attention_opts ao;
    memset(&ao, 0, sizeof ao);
    ao.softcap = cap, ao.window = window, ao.dropout = p, ao.dropout_seed = seed, ao.dropout_offset = offset;
    double *z = drop_factors(B, NH, T, p, seed, offset);
    int64_t nq = B * T * NH * HD, nk = B * T * NKV * HD;
    double *q = drand(r, nq, -2, 2), *k = drand(r, nk, -2, 2), *v = drand(r, nk, -1, 1);
    zt_shape qs = zt_shape4(B, T, NH, HD), ks = zt_shape4(B, T, NKV, HD);
    zt_tensor Q = to_dev(d, dt, qs, q), K = to_dev(d, dt, ks, k), V = to_dev(d, dt, ks, v);
    zt_tensor Starts = starts ? ids_to_dev(d, zt_shape2(B, T), starts) : zt_tensor_make(NULL, ZT_I32, ZT_DEVICE, zt_shape1(0));
    zt_tensor Out = dev_new(d, dt, qs), Lse = dev_new(d, ZT_F32, zt_shape3(B, NH, T));
    zt_attention_ex_forward(d->s, Out, Lse, Q, K, V, starts ? &Starts : NULL, &ao);
    double *out = dbuf(nq), *lse = dbuf(B * NH * T);
    ref_attention_drop_forward(out, lse, q, k, v, starts, B, T, NH, NKV, HD, 0, cap, window, z);
    EXPECT_CLOSE(label("%s: out", cfg), download(d, Out), out, nq, tol_for(dt));
    EXPECT_CLOSE(label("%s: lse (f32, before the dropout)", cfg), download(d, Lse), lse, B * NH * T, TOL_F32);
    double *dout = drand(r, nq, -1, 1), *dq = drand(r, nq, -1, 1), *dk = drand(r, nk, -1, 1), *dv = drand(r, nk, -1, 1);
    zt_tensor Dout = to_dev(d, dt, qs, dout), Dq = to_dev(d, dt, qs, dq), Dk = to_dev(d, dt, ks, dk), Dv = to_dev(d, dt, ks, dv);
    zt_attention_ex_backward(d->s, Dq, Dk, Dv, Dout, Q, K, V, Out, Lse, starts ? &Starts : NULL, &ao);
    ref_attention_drop_backward(dq, dk, dv, dout, q, k, v, starts, B, T, NH, NKV, HD, 0, cap, window, z);
    EXPECT_CLOSE(label("%s backward: dq", cfg), download(d, Dq), dq, nq, tol_for(dt));
    EXPECT_CLOSE(label("%s backward: dk", cfg), download(d, Dk), dk, nk, tol_for(dt));
    EXPECT_CLOSE(label("%s backward: dv", cfg), download(d, Dv), dv, nk, tol_for(dt));
}
static void attention_case(cpu_dev *d, rng *r, zt_dtype dt, const int32_t *starts, int64_t B, int64_t T,
                           int64_t NH, int64_t NKV, int64_t HD) {
    attention_ex_case(d, r, dt, starts, B, T, NH, NKV, HD, 0, 0, 0);
}
static void check_attention(zt_dtype dt) {
    cpu_dev d;
    if (!cpu_open(&d, 2, 0)) return;
    rng r = {180};
    attention_case(&d, &r, dt, NULL, 2, 13, 8, 2, 16); /* grouped-query: 8 heads read 2 */
    attention_case(&d, &r, dt, NULL, 1, 9, 3, 3, 7);   /* odd head dim, one kv head per head */
    attention_case(&d, &r, dt, NULL, 1, 5, 4, 1, 80);  /* all heads share one kv head */
    /* packed documents: batch 0 holds [0,4) [4,11); batch 1 holds [0,1) [1,7) [7,11) */
    static const int32_t starts[2 * 11] = {0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 4,
                                           0, 1, 1, 1, 1, 1, 1, 7, 7, 7, 7};
    attention_case(&d, &r, dt, starts, 2, 11, 8, 2, 12);
    /* longer than one block of queries (32) and one tile of keys (64) in the CPU kernel; documents
       starting at 30 and 66 straddle both boundaries */
    attention_case(&d, &r, dt, NULL, 1, 70, 4, 2, 8);
    int32_t long_starts[70];
    for (int t = 0; t < 70; t++) long_starts[t] = t < 30 ? 0 : t < 66 ? 30 : 66;
    attention_case(&d, &r, dt, long_starts, 1, 70, 4, 2, 8);
    /* Gemma 2: query_pre_attn_scalar's scale and capped scores (cap 1.5: the cap bends most of them) */
    attention_ex_case(&d, &r, dt, long_starts, 1, 70, 4, 2, 8, 0.5f, 1.5f, 0);
    attention_ex_case(&d, &r, dt, NULL, 2, 13, 8, 2, 16, 0.0f, 2.0f, 0);
    /* sliding windows across the CPU kernel's 32-query blocks and 64-key tiles, with and without documents */
    attention_ex_case(&d, &r, dt, NULL, 1, 150, 4, 2, 8, 0.0f, 0.0f, 40);
    attention_ex_case(&d, &r, dt, long_starts, 1, 70, 4, 2, 8, 0.0f, 0.0f, 7);
    attention_ex_case(&d, &r, dt, NULL, 2, 13, 8, 2, 16, 0.5f, 2.0f, 1); /* each query sees itself only */
    /* gpt-oss's sinks: with grouped heads, with its sliding window and documents over the tiles' boundaries */
    attention_sink_case(&d, &r, dt, NULL, 2, 13, 8, 2, 16, 0.0f, 0.0f, 0, 1);
    attention_sink_case(&d, &r, dt, long_starts, 1, 70, 4, 2, 8, 0.0f, 0.0f, 7, 1);
    /* dropout: grouped heads, documents across the 32-query blocks and 64-key tiles, a cap and a window, and draws
       from an offset (a rank's rows) */
    attention_drop_case(&d, &r, dt, NULL, 2, 13, 8, 2, 16, 0.0f, 0, 0.1f, 0);
    attention_drop_case(&d, &r, dt, long_starts, 1, 70, 4, 2, 8, 1.5f, 0, 0.4f, 3 * 4 * 70 * 70);
    attention_drop_case(&d, &r, dt, NULL, 1, 150, 4, 2, 8, 0.0f, 40, 0.25f, 12345);
    cpu_close(&d);
    bufs_free();
}
TEST(ops_attention_f32) { check_attention(ZT_F32); }
TEST(ops_attention_bf16) { check_attention(ZT_BF16); }
TEST(ops_attention_f16) { check_attention(ZT_F16); }

/* Rows of the crossentropy and output_loss cases: V = 101 columns, 97 real; rows 2 and 7 ignored. */
#define CE_N 13
#define CE_VP 101
#define CE_VOCAB 97
#define CE_IGNORE (-100)
static void ce_targets(rng *r, int32_t *t) {
    for (int n = 0; n < CE_N; n++) t[n] = rng_int(r, CE_VOCAB);
    t[0] = 0, t[5] = CE_VOCAB - 1, t[2] = t[7] = CE_IGNORE;
}
static double ce_dloss(const int32_t *t) { /* the mean over counted rows, as a trainer uses it */
    int counted = 0;
    for (int n = 0; n < CE_N; n++) counted += t[n] != CE_IGNORE;
    return (float)(1.0 / counted); /* the kernel takes a float: give the reference the same value */
}

/* padding columns must read as if absent and come out 0; ignored rows come out 0 */
static void expect_ce_zeros(const char *what, const double *dl, const int32_t *targets) {
    for (int n = 0; n < CE_N; n++)
        for (int c = 0; c < CE_VP; c++) {
            int64_t i = (int64_t)n * CE_VP + c;
            if ((c >= CE_VOCAB || targets[n] == CE_IGNORE) && dl[i] != 0) {
                zt_test_fail(__FILE__, __LINE__, "%s: dlogits[%d][%d] = %.9g, expected exactly 0 (%s)", what,
                             n, c, dl[i], c >= CE_VOCAB ? "padding column" : "ignored row");
                return;
            }
        }
}

static void check_crossentropy(zt_dtype dt) {
    cpu_dev d;
    if (!cpu_open(&d, 2, 0)) return;
    rng r = {190};
    const char *cfg = label("crossentropy %s N %d Vp %d vocab %d", dt_name(dt), CE_N, CE_VP, CE_VOCAB);
    int32_t targets[CE_N];
    ce_targets(&r, targets);
    double *logits = drand(&r, CE_N * CE_VP, -4, 4);
    for (int n = 0; n < CE_N; n++)
        for (int c = CE_VOCAB; c < CE_VP; c++) logits[n * CE_VP + c] = 30; /* would dominate if read */
    for (int c = 0; c < CE_VOCAB; c++) logits[3 * CE_VP + c] += 60;     /* needs the max subtracted */
    double dl1 = ce_dloss(targets), *dloss = dbuf(CE_N);
    for (int n = 0; n < CE_N; n++) dloss[n] = dl1;
    zt_tensor Logits = to_dev(&d, dt, zt_shape2(CE_N, CE_VP), logits);
    zt_tensor Targets = ids_to_dev(&d, zt_shape1(CE_N), targets);
    double *losses = dbuf(CE_N), *dlogits = dbuf(CE_N * CE_VP);
    ref_crossentropy(losses, dlogits, logits, targets, dloss, CE_N, CE_VP, CE_VOCAB, CE_IGNORE);

    /* losses only */
    double *garbage = drand(&r, CE_N, 5, 9);
    zt_tensor Losses = to_dev(&d, ZT_F32, zt_shape1(CE_N), garbage);
    zt_crossentropy(d.s, Losses, NULL, Logits, Targets, CE_VOCAB, CE_IGNORE, (float)dl1);
    EXPECT_CLOSE(label("%s losses only: losses (f32)", cfg), download(&d, Losses), losses, CE_N, TOL_F32);

    /* separate dlogits, pre-filled: written, not accumulated */
    zt_tensor Dl = to_dev(&d, dt, zt_shape2(CE_N, CE_VP), drand(&r, CE_N * CE_VP, -1, 1));
    zt_tensor Losses2 = dev_new(&d, ZT_F32, zt_shape1(CE_N));
    zt_crossentropy(d.s, Losses2, &Dl, Logits, Targets, CE_VOCAB, CE_IGNORE, (float)dl1);
    double *got = download(&d, Dl);
    EXPECT_CLOSE(label("%s with dlogits: losses (f32)", cfg), download(&d, Losses2), losses, CE_N, TOL_F32);
    EXPECT_CLOSE(label("%s: dlogits (written, not accumulated)", cfg), got, dlogits, CE_N * CE_VP,
                 tol_for(dt));
    expect_ce_zeros(label("%s", cfg), got, targets);
    EXPECT_EXACT(label("%s: logits unchanged", cfg), download(&d, Logits), logits, CE_N * CE_VP);

    /* dlogits aliasing logits */
    zt_tensor Alias = to_dev(&d, dt, zt_shape2(CE_N, CE_VP), dcopy(logits, CE_N * CE_VP));
    zt_tensor Losses3 = dev_new(&d, ZT_F32, zt_shape1(CE_N));
    zt_crossentropy(d.s, Losses3, &Alias, Alias, Targets, CE_VOCAB, CE_IGNORE, (float)dl1);
    got = download(&d, Alias);
    EXPECT_CLOSE(label("%s in place: losses (f32)", cfg), download(&d, Losses3), losses, CE_N, TOL_F32);
    EXPECT_CLOSE(label("%s in place: dlogits", cfg), got, dlogits, CE_N * CE_VP, tol_for(dt));
    expect_ce_zeros(label("%s in place", cfg), got, targets);

    /* capped logits (Gemma 2's final_logit_softcapping), in place */
    const float cap = 5.0f;
    ref_crossentropy_capped(losses, dlogits, logits, targets, dloss, CE_N, CE_VP, CE_VOCAB, CE_IGNORE, cap);
    upload(&d, Alias, logits);
    zt_crossentropy_capped(d.s, Losses3, &Alias, Alias, Targets, CE_VOCAB, CE_IGNORE, (float)dl1, cap);
    got = download(&d, Alias);
    EXPECT_CLOSE(label("%s capped at %g: losses (f32)", cfg, cap), download(&d, Losses3), losses, CE_N, TOL_F32);
    EXPECT_CLOSE(label("%s capped at %g: dlogits", cfg, cap), got, dlogits, CE_N * CE_VP, tol_for(dt));
    expect_ce_zeros(label("%s capped", cfg), got, targets);

    /* label smoothing (the Trainer's label_smoothing_factor), capped and not, in place */
    for (int capped = 0; capped < 2; capped++) {
        zt_loss_params p = {CE_VOCAB, CE_IGNORE, (float)dl1, capped ? cap : 0.0f, 0.1f, 0.0f, NULL, NULL};
        ref_crossentropy_smoothed(losses, dlogits, logits, targets, dloss, CE_N, CE_VP, CE_VOCAB, CE_IGNORE, p.softcap,
                                  (double)p.label_smoothing);
        upload(&d, Alias, logits);
        zt_crossentropy_with(d.s, Losses3, &Alias, Alias, Targets, p);
        got = download(&d, Alias);
        EXPECT_CLOSE(label("%s smoothed 0.1 cap %g: losses (f32)", cfg, p.softcap), download(&d, Losses3), losses, CE_N,
                     TOL_F32);
        EXPECT_CLOSE(label("%s smoothed 0.1 cap %g: dlogits", cfg, p.softcap), got, dlogits, CE_N * CE_VP, tol_for(dt));
        expect_ce_zeros(label("%s smoothed", cfg), got, targets);
    }
    cpu_close(&d);
    bufs_free();
}
/* label smoothing against transformers' LabelSmoother: its loss (the mean over counted rows) and autograd's
   gradient of it, on float32 logits (tests/ref/make_label_smoothing_fixture.py) */
TEST(ops_crossentropy_label_smoothing_matches_transformers) {
    FILE *f = fopen("tests/ref/label_smoothing.txt", "r");
    CHECK_MSG(f != NULL, "cannot open tests/ref/label_smoothing.txt (run the tests from the repository root)");
    if (!f) return;
    cpu_dev d;
    if (!cpu_open(&d, 2, 0)) return;
    char head[64];
    int cases = 0;
    while (fscanf(f, " %63s", head) == 1) {
        if (head[0] == '#') { /* the header line */
            int ch;
            while ((ch = fgetc(f)) != '\n' && ch != EOF) {}
            continue;
        }
        double eps, want_loss;
        int n, v, counted = 0;
        CHECK(strcmp(head, "case") == 0 && fscanf(f, "%lf %d %d", &eps, &n, &v) == 3 && n <= 16 && v <= 64);
        int32_t targets[16];
        double *logits = dbuf(n * v), *grad = dbuf(n * v);
        for (int r = 0; r < n; r++) {
            CHECK(fscanf(f, "%d", &targets[r]) == 1);
            counted += targets[r] != -100;
            for (int c = 0; c < v; c++) CHECK(fscanf(f, "%lf", &logits[r * v + c]) == 1);
        }
        CHECK(fscanf(f, " loss %lf", &want_loss) == 1);
        for (int i = 0; i < n * v; i++) CHECK(fscanf(f, "%lf", &grad[i]) == 1);
        zt_tensor Logits = to_dev(&d, ZT_F32, zt_shape2(n, v), logits), Dl = dev_new(&d, ZT_F32, zt_shape2(n, v));
        zt_tensor Targets = ids_to_dev(&d, zt_shape1(n), targets), Losses = dev_new(&d, ZT_F32, zt_shape1(n));
        zt_loss_params p = {v, -100, (float)(1.0 / counted), 0.0f, (float)eps, 0.0f, NULL, NULL};
        zt_crossentropy_with(d.s, Losses, &Dl, Logits, Targets, p);
        double *losses = download(&d, Losses), mean = 0;
        for (int r = 0; r < n; r++) mean += losses[r] / counted;
        CHECK_MSG(fabs(mean - want_loss) <= 2e-6 * fabs(want_loss), "smoothing %g: loss %.9g, transformers %.9g", eps, mean,
                  want_loss);
        EXPECT_CLOSE(label("smoothing %g: dlogits against autograd", eps), download(&d, Dl), grad, n * v, TOL_F32);
        cases++;
    }
    fclose(f);
    CHECK(cases == 2);
    cpu_close(&d);
    bufs_free();
}

TEST(ops_crossentropy_f32) { check_crossentropy(ZT_F32); }
TEST(ops_crossentropy_bf16) { check_crossentropy(ZT_BF16); }
TEST(ops_crossentropy_f16) { check_crossentropy(ZT_F16); }

/* output_loss against the matmul + crossentropy reference, with logits_buf of 13 (one chunk), 5 (a
   partial last chunk) and 1 rows; losses and dhidden are per row and must not depend on the chunking
   at all (bit for bit); dweight sums over rows, so chunking may only reassociate that sum. */
static void check_output_loss(zt_dtype dt) {
    cpu_dev d;
    if (!cpu_open(&d, 2, 0)) return;
    rng r = {200};
    const int64_t N = CE_N, C = 37, Vp = CE_VP, vocab = CE_VOCAB;
    int32_t targets[CE_N];
    ce_targets(&r, targets);
    double dl1 = ce_dloss(targets), *dloss = dbuf(N);
    for (int64_t n = 0; n < N; n++) dloss[n] = dl1;
    double *hidden = drand(&r, N * C, -1, 1), *w = drand(&r, Vp * C, -0.5, 0.5);
    double *dh0 = drand(&r, N * C, -1, 1), *dw0 = drand(&r, Vp * C, -1, 1);
    zt_tensor Hidden = to_dev(&d, dt, zt_shape2(N, C), hidden), W = to_dev(&d, dt, zt_shape2(Vp, C), w);
    zt_tensor Targets = ids_to_dev(&d, zt_shape1(N), targets);
    zt_tensor Dh = dev_new(&d, dt, zt_shape2(N, C)), Dw = dev_new(&d, dt, zt_shape2(Vp, C));
    upload(&d, Dh, dh0);
    upload(&d, Dw, dw0);
    double *losses = dbuf(N), *dh = dcopy(dh0, N * C), *dw = dcopy(dw0, Vp * C);
    ref_output_loss(losses, dh, dw, hidden, w, targets, dloss, N, C, Vp, vocab, CE_IGNORE);
    /* logits are rounded to the buffer's dtype before the loss: bf16 logits make bf16-sized losses */
    double tol = tol_for(dt);
    static const int64_t rows[3] = {13, 5, 1};
    void *first_losses = NULL, *first_dh = NULL;
    for (int i = 0; i < 3; i++) {
        const char *cfg = label("output_loss %s N %lld C %lld Vp %lld vocab %lld logits_buf rows %lld",
                                dt_name(dt), (long long)N, (long long)C, (long long)Vp, (long long)vocab,
                                (long long)rows[i]);
        zt_tensor Buf = dev_new(&d, dt, zt_shape2(rows[i], Vp));
        zt_tensor Losses = dev_new(&d, ZT_F32, zt_shape1(N)), Losses_fwd = dev_new(&d, ZT_F32, zt_shape1(N));
        zt_output_loss(d.s, Losses_fwd, NULL, NULL, Hidden, W, Targets, Buf, vocab, CE_IGNORE, (float)dl1);
        upload(&d, Dh, dcopy(dh0, N * C));
        upload(&d, Dw, dcopy(dw0, Vp * C));
        zt_output_loss(d.s, Losses, &Dh, &Dw, Hidden, W, Targets, Buf, vocab, CE_IGNORE, (float)dl1);
        double *got_dw = download(&d, Dw);
        EXPECT_CLOSE(label("%s: losses", cfg), download(&d, Losses), losses, N, tol);
        EXPECT_CLOSE(label("%s: dhidden = prefill + grad", cfg), download(&d, Dh), dh, N * C, tol);
        EXPECT_CLOSE(label("%s: dweight = prefill + grad", cfg), got_dw, dw, Vp * C, tol);
        EXPECT_EXACT(label("%s: dweight padding rows keep their prefill", cfg), got_dw + vocab * C,
                     dw0 + vocab * C, (Vp - vocab) * C);
        void *l = download_raw(&d, Losses), *lf = download_raw(&d, Losses_fwd), *h = download_raw(&d, Dh);
        CHECK_MSG(memcmp(l, lf, (size_t)N * 4) == 0, "%s: losses differ between forward-only and backward",
                  cfg);
        if (!first_losses) first_losses = l, first_dh = h;
        CHECK_MSG(memcmp(l, first_losses, (size_t)N * 4) == 0,
                  "%s: losses differ from those with logits_buf rows 13", cfg);
        CHECK_MSG(memcmp(h, first_dh, zt_nbytes(Dh)) == 0,
                  "%s: dhidden differs from that with logits_buf rows 13", cfg);
    }
    /* capped logits, in chunks of 5 rows */
    const float cap = 3.0f;
    dh = dcopy(dh0, N * C), dw = dcopy(dw0, Vp * C);
    ref_output_loss_capped(losses, dh, dw, hidden, w, targets, dloss, N, C, Vp, vocab, CE_IGNORE, cap);
    zt_tensor Buf = dev_new(&d, dt, zt_shape2(5, Vp)), Losses = dev_new(&d, ZT_F32, zt_shape1(N));
    upload(&d, Dh, dcopy(dh0, N * C));
    upload(&d, Dw, dcopy(dw0, Vp * C));
    zt_output_loss_capped(d.s, Losses, &Dh, &Dw, Hidden, W, Targets, Buf, vocab, CE_IGNORE, (float)dl1, cap);
    const char *cfg = label("output_loss %s capped at %g", dt_name(dt), cap);
    EXPECT_CLOSE(label("%s: losses", cfg), download(&d, Losses), losses, N, tol);
    EXPECT_CLOSE(label("%s: dhidden = prefill + grad", cfg), download(&d, Dh), dh, N * C, tol);
    EXPECT_CLOSE(label("%s: dweight = prefill + grad", cfg), download(&d, Dw), dw, Vp * C, tol);
    /* scaled logits (Granite's 1 / logits_scaling), then capped: the reference's weights times the scale give its
       logits and dhidden; its dweight is the scale times the scaled weights' */
    const float scale = 0.4f;
    double *ws = dcopy(w, Vp * C), *dwg = dbuf(Vp * C);
    for (int64_t i = 0; i < Vp * C; i++) ws[i] *= scale;
    dh = dcopy(dh0, N * C), dw = dcopy(dw0, Vp * C);
    ref_output_loss_capped(losses, dh, dwg, hidden, ws, targets, dloss, N, C, Vp, vocab, CE_IGNORE, cap);
    for (int64_t i = 0; i < Vp * C; i++) dw[i] += scale * dwg[i];
    upload(&d, Dh, dcopy(dh0, N * C));
    upload(&d, Dw, dcopy(dw0, Vp * C));
    zt_loss_params p = {vocab, CE_IGNORE, (float)dl1, cap, 0.0f, scale, NULL, NULL};
    zt_output_loss_with(d.s, Losses, &Dh, &Dw, Hidden, W, Targets, Buf, p);
    cfg = label("output_loss %s scaled by %g, capped at %g", dt_name(dt), scale, cap);
    EXPECT_CLOSE(label("%s: losses", cfg), download(&d, Losses), losses, N, tol);
    EXPECT_CLOSE(label("%s: dhidden = prefill + grad", cfg), download(&d, Dh), dh, N * C, tol);
    EXPECT_CLOSE(label("%s: dweight = prefill + grad", cfg), download(&d, Dw), dw, Vp * C, tol);
    /* a bias on the logits (Phi's lm_head.bias), in logits_buf's dtype, its gradient in f32 (+=); the padding columns
       get none */
    double *bias = drand(&r, Vp, -0.5, 0.5), *db0 = drand(&r, Vp, -1, 1), *db = dcopy(db0, Vp);
    double *lg = dbuf(N * Vp), *dlg = dbuf(N * Vp);
    zt_tensor Bias = to_dev(&d, dt, zt_shape1(Vp), bias), Db = to_dev(&d, ZT_F32, zt_shape1(Vp), db0);
    dh = dcopy(dh0, N * C), dw = dcopy(dw0, Vp * C);
    ref_matmul_forward(lg, hidden, w, bias, N, C, Vp);
    ref_crossentropy(losses, dlg, lg, targets, dloss, N, Vp, vocab, CE_IGNORE);
    ref_matmul_backward(dh, dw, db, dlg, hidden, w, N, C, Vp);
    upload(&d, Dh, dcopy(dh0, N * C));
    upload(&d, Dw, dcopy(dw0, Vp * C));
    zt_loss_params pb = {vocab, CE_IGNORE, (float)dl1, 0.0f, 0.0f, 0.0f, &Bias, &Db};
    zt_output_loss_with(d.s, Losses, &Dh, &Dw, Hidden, W, Targets, Buf, pb);
    cfg = label("output_loss %s with a bias", dt_name(dt));
    double *got_db = download(&d, Db);
    EXPECT_CLOSE(label("%s: losses", cfg), download(&d, Losses), losses, N, tol);
    EXPECT_CLOSE(label("%s: dhidden = prefill + grad", cfg), download(&d, Dh), dh, N * C, tol);
    EXPECT_CLOSE(label("%s: dweight = prefill + grad", cfg), download(&d, Dw), dw, Vp * C, tol);
    EXPECT_CLOSE(label("%s: dbias = prefill + grad", cfg), got_db, db, Vp, tol);
    EXPECT_EXACT(label("%s: dbias's padding keeps its prefill", cfg), got_db + vocab, db0 + vocab, Vp - vocab);
    cpu_close(&d);
    bufs_free();
}
TEST(ops_output_loss_f32) { check_output_loss(ZT_F32); }
TEST(ops_output_loss_bf16) { check_output_loss(ZT_BF16); }
TEST(ops_output_loss_f16) { check_output_loss(ZT_F16); }

/* AdamW: four steps (1, 2, 3, then 1000, where bias correction has faded), each against the double
   formula from the kernel's own state before it; tiny gradients, where eps is as large as sqrt(v) and
   its place in the formula matters; and the L2 (torch.optim.Adam) form of weight decay. */
#define TOL_ADAMW 1e-6 /* a step moves a parameter by ~lr = 1e-3; f32 keeps it to ~1e-7 of the scale */

/* the kernel's f32 arithmetic one element at a time: its vector lanes must give these bits exactly
   (the host optimizer of ZeRO-Offload relies on it to match the device, bit for bit) */
static void scalar_adamw(float *w, float *m, float *v, const float *g, int64_t n, zt_optim_params p) {
    float decay = (float)(1.0 - (double)p.lr * (double)p.weight_decay);
    float w1 = (float)(1.0 - (double)p.beta1), w2 = (float)(1.0 - (double)p.beta2);
    double bc1 = 1.0 - pow((double)p.beta1, (double)p.step), bc2 = 1.0 - pow((double)p.beta2, (double)p.step);
    float step_size = (float)((double)p.lr / bc1), bc2_sqrt = (float)sqrt(bc2);
    for (int64_t i = 0; i < n; i++) {
        float gi = g[i] * p.grad_scale;
        if (p.l2) gi = gi + p.weight_decay * w[i];
        else w[i] = w[i] * decay;
        m[i] = m[i] + w1 * (gi - m[i]);
        v[i] = v[i] * p.beta2 + (w2 * gi) * gi;
        float denom = sqrtf(v[i]) / bc2_sqrt + p.eps;
        w[i] = w[i] + (-step_size) * (m[i] / denom);
    }
}

static float *to_f32(const double *x, int64_t n) {
    float *f = (float *)malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) f[i] = (float)x[i];
    return f;
}
static void adamw_case(cpu_dev *d, rng *r, zt_dtype grad_dt, zt_dtype p16_dt, double gmag, int l2,
                       const char *name) {
    const int64_t n = 20011;
    zt_optim_params p = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f,
                         .grad_scale = 0.5f};
    p.l2 = l2;
    double *master = drand(r, n, -1, 1), *m = drand(r, n, -gmag, gmag), *v = dbuf(n);
    for (int64_t i = 0; i < n; i++) v[i] = m[i] * m[i] * rng_range(r, 0.5, 2);
    zt_tensor Master = to_dev(d, ZT_F32, zt_shape1(n), master), M = to_dev(d, ZT_F32, zt_shape1(n), m);
    zt_tensor V = to_dev(d, ZT_F32, zt_shape1(n), v), P16 = dev_new(d, p16_dt, zt_shape1(n));
    static const int64_t steps[4] = {1, 2, 3, 1000};
    for (int si = 0; si < 4; si++) {
        p.step = steps[si];
        const char *cfg = label("adamw %s%s grads %s param16 %s step %lld", name, l2 ? " l2" : "",
                                dt_name(grad_dt), dt_name(p16_dt), (long long)p.step);
        double *grad = drand(r, n, -gmag, gmag);
        zt_tensor G = to_dev(d, grad_dt, zt_shape1(n), grad);
        double *pe = download(d, Master), *me = download(d, M), *ve = download(d, V);
        float *sw = to_f32(pe, n), *sm = to_f32(me, n), *sv = to_f32(ve, n), *sg = to_f32(download(d, G), n);
        scalar_adamw(sw, sm, sv, sg, n, p);
        zt_optim_step(d->s, Master, M, V, G, &P16, p);
        float *kw = to_f32(download(d, Master), n), *km = to_f32(download(d, M), n), *kv = to_f32(download(d, V), n);
        int same = memcmp(sw, kw, sizeof(float) * (size_t)n) == 0 && memcmp(sm, km, sizeof(float) * (size_t)n) == 0 &&
                   memcmp(sv, kv, sizeof(float) * (size_t)n) == 0;
        free(sw), free(sm), free(sv), free(sg), free(kw), free(km), free(kv);
        CHECK_MSG(same, "%s: the kernel's bits differ from its arithmetic done one element at a time", cfg);
        ref_adamw(pe, me, ve, grad, n, p.lr, p.beta1, p.beta2, p.eps, p.weight_decay, p.grad_scale, p.step,
                  p.l2);
        double *pg = download(d, Master);
        EXPECT_CLOSE(label("%s: master", cfg), pg, pe, n, TOL_ADAMW);
        EXPECT_CLOSE(label("%s: m", cfg), download(d, M), me, n, TOL_F32);
        EXPECT_CLOSE(label("%s: v", cfg), download(d, V), ve, n, TOL_F32);
        for (int64_t i = 0; i < n; i++) pg[i] = round_to(p16_dt, pg[i]);
        EXPECT_EXACT(label("%s: param16 = master rounded", cfg), download(d, P16), pg, n);
    }
}
TEST(ops_adamw) {
    cpu_dev d;
    if (!cpu_open(&d, 2, 0)) return;
    rng r = {210};
    adamw_case(&d, &r, ZT_F32, ZT_BF16, 0.1, 0, "ordinary gradients");
    adamw_case(&d, &r, ZT_BF16, ZT_BF16, 0.1, 0, "ordinary gradients");
    adamw_case(&d, &r, ZT_F32, ZT_F16, 0.1, 0, "ordinary gradients");
    adamw_case(&d, &r, ZT_F32, ZT_BF16, 2e-8, 0, "tiny gradients (eps ~ sqrt(v))");
    adamw_case(&d, &r, ZT_F32, ZT_BF16, 0.1, 1, "ordinary gradients");
    cpu_close(&d);
    bufs_free();
}

/* Lion and Adagrad: the same four steps, each against the kernel's arithmetic one element at a time (bits)
   and the double formula (ref_lion, ref_adagrad); Lion's exact zeros (a moment and gradient of 0: the
   weight only decays) and a NaN gradient (it reaches the weight, as under AdamW) checked by hand. */
static void scalar_lion(float *w, float *m, const float *g, int64_t n, zt_optim_params p) {
    float decay = (float)(1.0 - (double)p.lr * (double)p.weight_decay);
    float w1 = (float)(1.0 - (double)p.beta1), w2 = (float)(1.0 - (double)p.beta2);
    for (int64_t i = 0; i < n; i++) {
        float gi = g[i] * p.grad_scale, c = m[i] * p.beta1 + gi * w1;
        float u = (c > 0.0f ? -p.lr : c < 0.0f ? p.lr : 0.0f) + (c - c);
        w[i] = w[i] * decay + u;
        m[i] = m[i] * p.beta2 + gi * w2;
    }
}
static void scalar_adagrad(float *w, float *sum, const float *g, int64_t n, zt_optim_params p) {
    float clr = (float)((double)p.lr / (1.0 + (double)(p.step - 1) * (double)p.lr_decay));
    for (int64_t i = 0; i < n; i++) {
        float gi = g[i] * p.grad_scale;
        if (p.weight_decay != 0.0f) gi = gi + p.weight_decay * w[i];
        sum[i] = sum[i] + gi * gi;
        w[i] = w[i] + (-clr) * (gi / (sqrtf(sum[i]) + p.eps));
    }
}

static void optim_case(cpu_dev *d, rng *r, zt_optimizer kind, zt_dtype grad_dt, zt_dtype p16_dt, float wd) {
    const int64_t n = 20011;
    zt_optim_params p = zt_optim_defaults(kind);
    p.lr = 1e-3f, p.beta1 = 0.9f, p.beta2 = 0.99f, p.weight_decay = wd, p.grad_scale = 0.5f, p.lr_decay = 0.01f;
    double *master = drand(r, n, -1, 1), *m = drand(r, n, -0.1, 0.1);
    if (kind == ZT_OPTIM_ADAGRAD)
        for (int64_t i = 0; i < n; i++) m[i] = m[i] * m[i];
    m[5] = 0; /* with a gradient of 0 below: Lion leaves the weight to its decay */
    zt_tensor Master = to_dev(d, ZT_F32, zt_shape1(n), master), M = to_dev(d, ZT_F32, zt_shape1(n), m);
    zt_tensor P16 = dev_new(d, p16_dt, zt_shape1(n)), none;
    memset(&none, 0, sizeof none);
    static const int64_t steps[4] = {1, 2, 3, 1000};
    for (int si = 0; si < 4; si++) {
        p.step = steps[si];
        const char *cfg = label("%s wd %g grads %s param16 %s step %lld", zt_optim_name(kind), (double)wd,
                                dt_name(grad_dt), dt_name(p16_dt), (long long)p.step);
        double *grad = drand(r, n, -0.1, 0.1);
        grad[5] = 0;
        zt_tensor G = to_dev(d, grad_dt, zt_shape1(n), grad);
        double *pe = download(d, Master), *me = download(d, M);
        float *sw = to_f32(pe, n), *sm = to_f32(me, n), *sg = to_f32(download(d, G), n);
        if (kind == ZT_OPTIM_LION) scalar_lion(sw, sm, sg, n, p);
        else scalar_adagrad(sw, sm, sg, n, p);
        int zero_moment = si == 0 || kind != ZT_OPTIM_LION || me[5] == 0;
        double w5 = pe[5];
        zt_optim_step(d->s, Master, M, none, G, &P16, p);
        float *kw = to_f32(download(d, Master), n), *km = to_f32(download(d, M), n);
        int same = memcmp(sw, kw, sizeof(float) * (size_t)n) == 0 && memcmp(sm, km, sizeof(float) * (size_t)n) == 0;
        free(sw), free(sm), free(sg), free(kw), free(km);
        CHECK_MSG(same, "%s: the kernel's bits differ from its arithmetic done one element at a time", cfg);
        if (kind == ZT_OPTIM_LION) ref_lion(pe, me, grad, n, p.lr, p.beta1, p.beta2, p.weight_decay, p.grad_scale);
        else ref_adagrad(pe, me, grad, n, p.lr, p.lr_decay, p.eps, p.weight_decay, p.grad_scale, p.step);
        double *pg = download(d, Master);
        EXPECT_CLOSE(label("%s: master", cfg), pg, pe, n, TOL_ADAMW);
        EXPECT_CLOSE(label("%s: state", cfg), download(d, M), me, n, TOL_F32);
        if (kind == ZT_OPTIM_LION && zero_moment)
            CHECK_MSG((float)pg[5] == (float)((float)w5 * (float)(1.0 - (double)p.lr * (double)wd)),
                      "%s: a weight with a moment and gradient of 0 moved from %.9g to %.9g", cfg, w5, pg[5]);
        for (int64_t i = 0; i < n; i++) pg[i] = round_to(p16_dt, pg[i]);
        EXPECT_EXACT(label("%s: param16 = master rounded", cfg), download(d, P16), pg, n);
    }
    /* a NaN gradient reaches the weight (and the state), whatever the optimizer */
    double nan_grad[3] = {NAN, 0.5, -0.5}, w3[3] = {1, 1, 1}, m3[3] = {0, 0, 0};
    zt_tensor W = to_dev(d, ZT_F32, zt_shape1(3), w3), S = to_dev(d, ZT_F32, zt_shape1(3), m3);
    zt_tensor G = to_dev(d, ZT_F32, zt_shape1(3), nan_grad);
    p.step = 1;
    zt_optim_step(d->s, W, S, none, G, NULL, p);
    double *wn = download(d, W);
    CHECK_MSG(isnan(wn[0]) && isfinite(wn[1]) && isfinite(wn[2]), "%s: a NaN gradient gave the weights %g %g %g",
              zt_optim_name(kind), wn[0], wn[1], wn[2]);
}
TEST(ops_lion_adagrad) {
    cpu_dev d;
    if (!cpu_open(&d, 2, 0)) return;
    rng r = {230};
    optim_case(&d, &r, ZT_OPTIM_LION, ZT_F32, ZT_BF16, 0.0f);
    optim_case(&d, &r, ZT_OPTIM_LION, ZT_BF16, ZT_BF16, 0.1f);
    optim_case(&d, &r, ZT_OPTIM_LION, ZT_F32, ZT_F16, 0.1f);
    optim_case(&d, &r, ZT_OPTIM_ADAGRAD, ZT_F32, ZT_BF16, 0.0f);
    optim_case(&d, &r, ZT_OPTIM_ADAGRAD, ZT_BF16, ZT_BF16, 0.1f);
    optim_case(&d, &r, ZT_OPTIM_ADAGRAD, ZT_F32, ZT_F16, 0.1f);
    /* the host optimizer (ZeRO-Offload) gives the device kernel's bits */
    zt_pool *pool = zt_pool_create(2);
    CHECK(pool != NULL);
    for (int kind = 0; kind < ZT_OPTIM_COUNT && pool; kind++) {
        const int64_t n = 50021;
        zt_optim_params p = zt_optim_defaults((zt_optimizer)kind);
        p.step = 3, p.weight_decay = 0.05f;
        double *w = drand(&r, n, -1, 1), *m = drand(&r, n, 0, 0.01), *v = drand(&r, n, 0, 0.01), *g = drand(&r, n, -1, 1);
        zt_tensor W = to_dev(&d, ZT_F32, zt_shape1(n), w), M = to_dev(&d, ZT_F32, zt_shape1(n), m);
        zt_tensor V = to_dev(&d, ZT_F32, zt_shape1(n), v), G = to_dev(&d, ZT_F32, zt_shape1(n), g);
        float *hw = to_f32(w, n), *hm = to_f32(m, n), *hv = to_f32(v, n), *hg = to_f32(g, n);
        zt_optim_step(d.s, W, M, V, G, NULL, p);
        zt_optim_step_host(pool, hw, hm, kind == ZT_OPTIM_ADAMW ? hv : NULL, hg, NULL, ZT_F32, n, p);
        float *dw = to_f32(download(&d, W), n), *dm = to_f32(download(&d, M), n);
        CHECK_MSG(memcmp(dw, hw, sizeof(float) * (size_t)n) == 0 && memcmp(dm, hm, sizeof(float) * (size_t)n) == 0,
                  "%s: the host optimizer's bits differ from the CPU backend's", zt_optim_name((zt_optimizer)kind));
        free(hw), free(hm), free(hv), free(hg), free(dw), free(dm);
    }
    zt_pool_destroy(pool);
    cpu_close(&d);
    bufs_free();
}

/* sumsq: a double sum rounded once to f32, so within one f32 rounding of the exact value */
#define TOL_SUMSQ 0x1p-23
TEST(ops_sumsq) {
    cpu_dev d;
    if (!cpu_open(&d, 2, 0)) return;
    rng r = {220};
    static const int64_t sizes[4] = {1, 7, 4099, 300007};
    for (int dti = 0; dti < 2; dti++)
        for (int i = 0; i < 4; i++) {
            zt_dtype dt = dti ? ZT_BF16 : ZT_F32;
            int64_t n = sizes[i];
            double *x = drand(&r, n, -2, 2), out = 123;
            zt_tensor X = to_dev(&d, dt, zt_shape1(n), x), Out = to_dev(&d, ZT_F32, zt_shape1(1), &out);
            zt_sumsq(d.s, Out, X);
            double want = ref_sumsq(x, n);
            EXPECT_CLOSE(label("sumsq %s n %lld: out (written, not accumulated)", dt_name(dt), (long long)n),
                         download(&d, Out), &want, 1, TOL_SUMSQ);
        }
    cpu_close(&d);
    bufs_free();
}

/* add, scale, fill: f32 arithmetic rounded once to the output dtype, so exact */
static void check_elementwise(zt_dtype dt) {
    cpu_dev d;
    if (!cpu_open(&d, 2, 0)) return;
    rng r = {230};
    const int64_t n = 20011;
    double *a = drand(&r, n, -3, 3), *b = drand(&r, n, -3, 3), *want = dbuf(n);
    zt_tensor A = to_dev(&d, dt, zt_shape1(n), a), B = to_dev(&d, dt, zt_shape1(n), b);
    for (int64_t i = 0; i < n; i++) want[i] = round_to(dt, (double)((float)a[i] + (float)b[i]));
    zt_tensor Out = dev_new(&d, dt, zt_shape1(n));
    zt_add(d.s, Out, A, B);
    EXPECT_EXACT(label("add %s: out", dt_name(dt)), download(&d, Out), want, n);
    zt_tensor A2 = to_dev(&d, dt, zt_shape1(n), dcopy(a, n)), B2 = to_dev(&d, dt, zt_shape1(n), dcopy(b, n));
    zt_add(d.s, A2, A2, B);
    zt_add(d.s, B2, A, B2);
    EXPECT_EXACT(label("add %s: out aliasing a", dt_name(dt)), download(&d, A2), want, n);
    EXPECT_EXACT(label("add %s: out aliasing b", dt_name(dt)), download(&d, B2), want, n);

    zt_scale(d.s, A, 0.3f);
    for (int64_t i = 0; i < n; i++) want[i] = round_to(dt, (double)((float)a[i] * 0.3f));
    EXPECT_EXACT(label("scale %s by 0.3: t", dt_name(dt)), download(&d, A), want, n);

    zt_fill(d.s, B, 0.1f);
    for (int64_t i = 0; i < n; i++) want[i] = round_to(dt, 0.1f);
    EXPECT_EXACT(label("fill %s with 0.1: t", dt_name(dt)), download(&d, B), want, n);
    zt_fill(d.s, zt_slice(zt_view(B, 0, zt_shape2(7, 143)), 2, 3), -2.5f); /* rows 2..4 of a view */
    for (int64_t i = 2 * 143; i < 5 * 143; i++) want[i] = -2.5;
    EXPECT_EXACT(label("fill %s of a slice: t", dt_name(dt)), download(&d, B), want, n);
    cpu_close(&d);
    bufs_free();
}
/* zt_add_uniform_noise: t + (2u - 1) magnitude, rounded twice (the noise, the sum), u from (seed, offset + i)
   alone (and zt_mul_uniform_noise: t times (1 - j) + 2j u, rounded step by step): a tensor noised in two parts at their offsets gets the whole's bits; the noise lies in [-m, m) with
   uniform's mean and variance (131072 draws: within 4 standard errors), and another seed draws other noise */
static void check_noise(zt_dtype dt) {
    cpu_dev d;
    if (!cpu_open(&d, 2, 0)) return;
    rng r = {77};
    const int64_t n = 1 << 17, half = 40001;
    const float m = 0.3f;
    const uint64_t seed = 0x5eedull;
    double *x = drand(&r, n, -3, 3), *want = dbuf(n);
    zt_tensor whole = to_dev(&d, dt, zt_shape1(n), x), parts = to_dev(&d, dt, zt_shape1(n), dcopy(x, n));
    zt_add_uniform_noise(d.s, whole, m, seed, 0);
    zt_add_uniform_noise(d.s, zt_view(parts, 0, zt_shape1(half)), m, seed, 0);
    zt_add_uniform_noise(d.s, zt_view(parts, half, zt_shape1(n - half)), m, seed, half);
    double sum = 0, sumsq = 0, lo = 1, hi = -1;
    for (int64_t i = 0; i < n; i++) {
        float noise = (2.0f * zt_noise_uniform(seed, i) - 1.0f) * m;
        want[i] = round_to(dt, (double)((float)x[i] + noise));
        sum += noise, sumsq += (double)noise * noise;
        lo = fmin(lo, noise), hi = fmax(hi, noise);
    }
    EXPECT_EXACT(label("noise %s: t", dt_name(dt)), download(&d, whole), want, n);
    EXPECT_EXACT(label("noise %s in two parts: t", dt_name(dt)), download(&d, parts), want, n);
    zt_tensor jittered = to_dev(&d, dt, zt_shape1(n), dcopy(x, n)); /* zt_mul_uniform_noise: t * (lo + u * width) */
    zt_mul_uniform_noise(d.s, jittered, 0.1f, seed, 7);
    double flo = 1, fhi = 0;
    for (int64_t i = 0; i < n; i++) {
        float factor = zt_noise_uniform(seed, 7 + i) * (2.0f * 0.1f);
        factor += 1.0f - 0.1f;
        want[i] = round_to(dt, (double)((float)x[i] * factor));
        flo = fmin(flo, factor), fhi = fmax(fhi, factor);
    }
    EXPECT_EXACT(label("jitter %s: t", dt_name(dt)), download(&d, jittered), want, n);
    CHECK_MSG(flo >= 0.9f && fhi < 1.1f && flo < 0.901 && fhi > 1.099, "jitter factors in [%g, %g]", flo, fhi);
    /* zt_dropout: t times 0 or 1 / (1 - p), in one piece or two at their offsets; a fraction p dropped (within 4
       standard errors); p = 0 changes nothing */
    const float p = 0.3f, keep = 1.0f / (1.0f - p);
    zt_tensor dropped = to_dev(&d, dt, zt_shape1(n), dcopy(x, n)), split = to_dev(&d, dt, zt_shape1(n), dcopy(x, n));
    zt_dropout(d.s, dropped, p, seed, 11);
    zt_dropout(d.s, zt_view(split, 0, zt_shape1(half)), p, seed, 11);
    zt_dropout(d.s, zt_view(split, half, zt_shape1(n - half)), p, seed, 11 + half);
    int64_t zeros = 0;
    for (int64_t i = 0; i < n; i++) {
        float f = zt_noise_uniform(seed, 11 + i) >= p ? keep : 0.0f;
        want[i] = round_to(dt, (double)((float)x[i] * f));
        zeros += f == 0.0f;
    }
    EXPECT_EXACT(label("dropout %s: t", dt_name(dt)), download(&d, dropped), want, n);
    EXPECT_EXACT(label("dropout %s in two parts: t", dt_name(dt)), download(&d, split), want, n);
    double dse = sqrt(p * (1 - p) / n);
    CHECK_MSG(fabs((double)zeros / n - p) < 4 * dse, "dropout dropped %g of the elements, p is %g (standard error %g)",
              (double)zeros / n, (double)p, dse);
    zt_tensor kept = to_dev(&d, dt, zt_shape1(n), dcopy(x, n));
    zt_dropout(d.s, kept, 0.0f, seed, 0);
    for (int64_t i = 0; i < n; i++) want[i] = round_to(dt, x[i]);
    EXPECT_EXACT(label("dropout %s with p = 0: t", dt_name(dt)), download(&d, kept), want, n);
    zt_dropout(d.s, kept, 1.0f, seed, 0); /* p = 1: every element dropped, as torch's */
    for (int64_t i = 0; i < n; i++) want[i] = 0;
    EXPECT_EXACT(label("dropout %s with p = 1: t", dt_name(dt)), download(&d, kept), want, n);
    double var = (double)m * m / 3, mean_se = sqrt(var / n), var_se = sqrt(4.0 / 45.0 * pow(m, 4) / n);
    CHECK_MSG(lo >= -m && hi < m, "noise in [%g, %g], outside [-%g, %g)", lo, hi, (double)m, (double)m);
    CHECK_MSG(fabs(sum / n) < 4 * mean_se, "noise mean %g (standard error %g)", sum / n, mean_se);
    CHECK_MSG(fabs(sumsq / n - var) < 4 * var_se, "noise variance %g, uniform's %g (standard error %g)", sumsq / n, var,
              var_se);
    int64_t same = 0;
    for (int64_t i = 0; i < 1000; i++) same += zt_noise_uniform(seed, i) == zt_noise_uniform(seed + 1, i);
    CHECK_MSG(same < 5, "seeds %llu and %llu draw %lld of 1000 the same", (unsigned long long)seed,
              (unsigned long long)seed + 1, (long long)same);
    cpu_close(&d);
    bufs_free();
}
TEST(ops_uniform_noise_f32) { check_noise(ZT_F32); }
TEST(ops_uniform_noise_bf16) { check_noise(ZT_BF16); }

TEST(ops_add_scale_fill_f32) { check_elementwise(ZT_F32); }
TEST(ops_add_scale_fill_bf16) { check_elementwise(ZT_BF16); }
TEST(ops_add_scale_fill_f16) { check_elementwise(ZT_F16); }

/* cast between every pair of float dtypes, on edge values (ties, subnormals, overflow, inf, NaN) and
   random ones, against this file's own round-to-nearest-even conversions */
TEST(ops_cast) {
    cpu_dev d;
    if (!cpu_open(&d, 2, 0)) return;
    rng r = {240};
    static const double edges[] = {0.0, -0.0, 1.0, -1.5, 1.0 + 0x1p-8, 1.0 + 3 * 0x1p-8, 1.0 + 0x1p-11,
                                   1.0 + 3 * 0x1p-11, 65504.0, 65519.0, 65520.0, -1e6, 3.0e38, 1e-40,
                                   0x1p-24, 0x1p-25, 0x1.8p-25, 0x1p-14, 0x1.ff8p-15, 6e-5, INFINITY,
                                   -INFINITY, NAN};
    const int64_t ne = (int64_t)(sizeof edges / sizeof edges[0]), n = ne + 500;
    double *x = dbuf(n);
    for (int64_t i = 0; i < ne; i++) x[i] = edges[i];
    for (int64_t i = ne; i < n; i++) x[i] = rng_range(&r, -1, 1) * pow(2.0, rng_range(&r, -30, 20));
    static const zt_dtype dts[3] = {ZT_F32, ZT_BF16, ZT_F16};
    for (int si = 0; si < 3; si++)
        for (int di = 0; di < 3; di++) {
            double *src = dcopy(x, n), *want = dbuf(n);
            zt_tensor S = to_dev(&d, dts[si], zt_shape1(n), src), D = dev_new(&d, dts[di], zt_shape1(n));
            zt_cast(d.s, D, S);
            for (int64_t i = 0; i < n; i++) want[i] = round_to(dts[di], src[i]);
            double *got = download(&d, D);
            EXPECT_EXACT(label("cast %s -> %s", dt_name(dts[si]), dt_name(dts[di])), got, want, n);
            for (int64_t i = 0; i < n; i++) /* -0 and +0 compare equal above; their bits must not */
                if (want[i] == 0 && signbit(want[i]) != signbit(got[i])) {
                    zt_test_fail(__FILE__, __LINE__, "cast %s -> %s: [%lld] sign of zero lost",
                                 dt_name(dts[si]), dt_name(dts[di]), (long long)i);
                    break;
                }
        }
    cpu_close(&d);
    bufs_free();
}

/* copy: host -> device -> device -> host keeps bits; into and out of views at an offset */
TEST(ops_copy) {
    cpu_dev d;
    if (!cpu_open(&d, 2, 0)) return;
    rng r = {250};
    const int64_t n = 257;
    uint16_t *bits = (uint16_t *)buf_alloc(2 * (size_t)n), *back = (uint16_t *)buf_alloc(2 * (size_t)n);
    for (int64_t i = 0; i < n; i++) bits[i] = (uint16_t)rng_next(&r); /* NaN payloads included */
    zt_tensor A = dev_new(&d, ZT_BF16, zt_shape1(n)), B = dev_new(&d, ZT_BF16, zt_shape1(n));
    zt_copy(d.s, A, zt_tensor_make(bits, ZT_BF16, ZT_HOST, zt_shape1(n)));
    zt_copy(d.s, B, A);
    zt_copy(d.s, zt_tensor_make(back, ZT_BF16, ZT_HOST, zt_shape1(n)), B);
    zt_stream_sync(d.s);
    CHECK_MSG(memcmp(bits, back, 2 * (size_t)n) == 0,
              "copy bf16 host -> device -> device -> host changed bits");

    double *x = drand(&r, 60, -1, 1), *want = dcopy(x, 60);
    zt_tensor X = to_dev(&d, ZT_F32, zt_shape2(10, 6), x);
    for (int64_t i = 0; i < 60; i++) want[i] = x[i];
    zt_copy(d.s, zt_slice(X, 7, 2), zt_slice(X, 1, 2)); /* rows 1,2 -> rows 7,8 */
    memcpy(want + 42, x + 6, 12 * sizeof(double));
    zt_copy(d.s, zt_view(X, 5, zt_shape1(3)), zt_view(X, 50, zt_shape1(3)));
    memcpy(want + 5, want + 50, 3 * sizeof(double)); /* rows 7,8 hold the copy now */
    EXPECT_EXACT("copy between slices and views of one tensor", download(&d, X), want, 60);
    cpu_close(&d);
    bufs_free();
}
