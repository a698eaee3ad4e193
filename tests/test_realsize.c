/* tests/test_realsize.c - one-layer tests at the sizes of real models, which the small shapes of
   tests/test_ops.c miss, each against the same double-precision references (tests/ref_ops.h):
   realsize_attention_*: head dims 64, 80 and 128 with 32 query heads reading 8 key/value heads;
   realsize_rope_*:      HD 128 at positions 8190..8210 and around 131072, theta 500000 (LLaMA-3) and
                         10000, angles computed in f32 as transformers does;
   realsize_crossentropy_*: a 128k vocabulary, unpadded and padded, padding columns holding +50;
   realsize_output_loss_*:  hidden 64, a (128256, 64) output weight, logits_buf of 3 rows.
   Row 3 of the cross-entropy cases (bf16 logits near 100, coarsely quantised) is where a 128k-term
   normaliser summed in one f32 accumulator loses ~3e-4 of the loss, beyond TOL_F32: the kernel sums
   it in double. Short sequences and few rows keep each test well under a second. */
#include "ops_harness.h"

#define RS_IGNORE (-100)

/* A CPU backend whose device arena holds a real output layer: the harness's 64 MiB arena is too
   small for an f32 (128256, 64) weight and its gradient together. */
static int rs_open(cpu_dev *d, size_t device_bytes) {
    if (!cpu_open(d, 2, 0)) return 0;
    if (zt_backend_reserve(d->be, device_bytes, (size_t)1 << 20) != ZT_OK) {
        zt_test_fail(__FILE__, __LINE__, "zt_backend_reserve(%zu device bytes): %s", device_bytes,
                     zt_last_error());
        cpu_close(d);
        return 0;
    }
    d->dev = zt_backend_device_arena(d->be);
    return 1;
}

/* got and exp where keep[i], packed into two new test buffers; returns how many */
static int64_t rs_pack(double **gp, double **ep, const double *got, const double *exp,
                       const unsigned char *keep, int64_t n) {
    double *g = dbuf(n), *e = dbuf(n);
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++)
        if (keep[i]) g[m] = got[i], e[m] = exp[i], m++;
    *gp = g, *ep = e;
    return m;
}

/* >>attention ================================================================================== */

static void rs_attention_case(cpu_dev *d, rng *r, zt_dtype dt, int64_t B, int64_t T, int64_t NH,
                              int64_t NKV, int64_t HD) {
    const char *cfg = label("attention %s B %lld T %lld NH %lld NKV %lld HD %lld", zt_dtype_name(dt),
                            (long long)B, (long long)T, (long long)NH, (long long)NKV, (long long)HD);
    int64_t nq = B * T * NH * HD, nk = B * T * NKV * HD;
    zt_shape qs = zt_shape4(B, T, NH, HD), ks = zt_shape4(B, T, NKV, HD);
    double *q = drand(r, nq, -2, 2), *k = drand(r, nk, -2, 2), *v = drand(r, nk, -1, 1);
    zt_tensor Q = to_dev(d, dt, qs, q), K = to_dev(d, dt, ks, k), V = to_dev(d, dt, ks, v);
    zt_tensor Out = dev_new(d, dt, qs), Lse = dev_new(d, ZT_F32, zt_shape3(B, NH, T));
    zt_attention_forward(d->s, Out, Lse, Q, K, V, NULL);
    double *out = dbuf(nq), *lse = dbuf(B * NH * T);
    ref_attention_forward(out, lse, q, k, v, NULL, B, T, NH, NKV, HD);
    EXPECT_CLOSE(label("%s: out", cfg), download(d, Out), out, nq, tol_for(dt));
    EXPECT_CLOSE(label("%s: lse (f32)", cfg), download(d, Lse), lse, B * NH * T, TOL_F32);

    /* gradients accumulate: pre-filled, they must come out as prefill + gradient */
    double *dout = drand(r, nq, -1, 1), *dq = drand(r, nq, -1, 1), *dk = drand(r, nk, -1, 1);
    double *dv = drand(r, nk, -1, 1);
    zt_tensor Dout = to_dev(d, dt, qs, dout), Dq = to_dev(d, dt, qs, dq);
    zt_tensor Dk = to_dev(d, dt, ks, dk), Dv = to_dev(d, dt, ks, dv);
    zt_attention_backward(d->s, Dq, Dk, Dv, Dout, Q, K, V, Out, Lse, NULL);
    ref_attention_backward(dq, dk, dv, dout, q, k, v, NULL, B, T, NH, NKV, HD);
    EXPECT_CLOSE(label("%s backward: dq = prefill + grad", cfg), download(d, Dq), dq, nq, tol_for(dt));
    EXPECT_CLOSE(label("%s backward: dk = prefill + grad", cfg), download(d, Dk), dk, nk, tol_for(dt));
    EXPECT_CLOSE(label("%s backward: dv = prefill + grad", cfg), download(d, Dv), dv, nk, tol_for(dt));
}

static void check_realsize_attention(zt_dtype dt) {
    cpu_dev d;
    if (!cpu_open(&d, 2, 0)) return;
    rng r = {300};
    /* LLaMA-3-8B's 32 query heads on 8 key/value heads (groups of 4) at the head dims of real models */
    rs_attention_case(&d, &r, dt, 1, 12, 32, 8, 64);
    rs_attention_case(&d, &r, dt, 1, 12, 32, 8, 80);
    rs_attention_case(&d, &r, dt, 1, 12, 32, 8, 128);
    rs_attention_case(&d, &r, dt, 2, 12, 32, 8, 128); /* and a second sequence after the first */
    cpu_close(&d);
    bufs_free();
}
TEST(realsize_attention_f32) { check_realsize_attention(ZT_F32); }
TEST(realsize_attention_bf16) { check_realsize_attention(ZT_BF16); }

/* >>rope ======================================================================================= */

/* Sequence 0 at positions 8190..8210 (across 8192), sequence 1 at 131062..131082 (across 2^17, where
   the f32 angle's ulp doubles again). There an angle computed in double is ~1e-3 rad away from
   transformers' f32 angle, far outside TOL_F32, so these check that the f32 formula is the one used. */
#define RS_ROPE_T 21
static void rs_rope_positions(int32_t *pos) {
    for (int t = 0; t < RS_ROPE_T; t++) pos[t] = 8190 + t, pos[RS_ROPE_T + t] = 131062 + t;
}

static void check_realsize_rope(zt_dtype dt) {
    cpu_dev d;
    if (!cpu_open(&d, 2, 0)) return;
    rng r = {310};
    const int64_t B = 2, T = RS_ROPE_T, H = 4, HD = 128, n = B * T * H * HD;
    static const float thetas[2] = {500000.0f, 10000.0f};
    int32_t pos[2 * RS_ROPE_T];
    rs_rope_positions(pos);
    zt_tensor Pos = ids_to_dev(&d, zt_shape2(B, T), pos);
    zt_shape sh = zt_shape4(B, T, H, HD);
    for (int ti = 0; ti < 2; ti++) {
        float theta = thetas[ti];
        const char *cfg = label("rope %s B %lld T %lld H %lld HD %lld theta %g, positions 8190..8210 and "
                                "131062..131082", zt_dtype_name(dt), (long long)B, (long long)T,
                                (long long)H, (long long)HD, theta);
        /* the positions do reach the regime where f32 and double angles part */
        double worst = 0;
        for (int64_t t = 0; t < B * T; t++)
            for (int64_t i = 0; i < HD / 2; i++) {
                double exact = (double)pos[t] / pow((double)theta, (double)(2 * i) / (double)HD);
                worst = fmax(worst, fabs(ref_rope_angle(pos[t], i, HD, theta) - exact));
            }
        if (!(worst > 100 * TOL_F32))
            zt_test_fail(__FILE__, __LINE__, "%s: f32 and double angles differ by at most %.3g rad; the "
                         "positions do not test the f32 angle", cfg, worst);

        double *x = drand(&r, n, -1, 1), *out = dbuf(n);
        zt_tensor X = to_dev(&d, dt, sh, x), Out = dev_new(&d, dt, sh);
        zt_rope_forward(d.s, Out, X, Pos, theta, NULL);
        ref_rope_forward(out, x, pos, B * T, H, HD, theta);
        EXPECT_CLOSE(label("%s: out", cfg), download(&d, Out), out, n, tol_for(dt));
        zt_rope_forward(d.s, X, X, Pos, theta, NULL); /* in place, as the LLaMA block uses it */
        EXPECT_CLOSE(label("%s in place: out", cfg), download(&d, X), out, n, tol_for(dt));

        double *dout = drand(&r, n, -1, 1), *dx = drand(&r, n, -1, 1);
        zt_tensor Dout = to_dev(&d, dt, sh, dout), Dx = to_dev(&d, dt, sh, dx);
        zt_rope_backward(d.s, Dx, Dout, Pos, theta, NULL);
        ref_rope_backward(dx, dout, pos, B * T, H, HD, theta);
        EXPECT_CLOSE(label("%s backward: dinp = prefill + grad", cfg), download(&d, Dx), dx, n, tol_for(dt));
    }
    cpu_close(&d);
    bufs_free();
}
TEST(realsize_rope_f32) { check_realsize_rope(ZT_F32); }
TEST(realsize_rope_bf16) { check_realsize_rope(ZT_BF16); }

/* >>crossentropy =============================================================================== */

/* LLaMA-3's vocabulary, 128256 tokens, a multiple of 128 already: unpadded, and a 128000-token
   vocabulary in the same 128256-wide rows, whose 256 padding columns hold +50 (they would dominate
   every row's softmax if read). */
#define RS_VP 128256
#define RS_PAD_LOGIT 50.0

/* dlogits must be exactly 0 in padding columns and ignored rows, and ignored rows' losses exactly 0 */
static int rs_expect_ce_zeros(const char *what, const double *losses, const double *dl,
                              const int32_t *targets, int64_t N, int64_t Vp, int64_t vocab) {
    for (int64_t n = 0; n < N; n++) {
        int ignored = targets[n] == RS_IGNORE;
        if (ignored && losses[n] != 0) {
            zt_test_fail(__FILE__, __LINE__, "%s: losses[%lld] = %.9g in an ignored row, expected exactly 0",
                         what, (long long)n, losses[n]);
            return 0;
        }
        if (!dl) continue;
        for (int64_t c = 0; c < Vp; c++)
            if ((ignored || c >= vocab) && dl[n * Vp + c] != 0) {
                zt_test_fail(__FILE__, __LINE__, "%s: dlogits[%lld][%lld] = %.9g, expected exactly 0 (%s)",
                             what, (long long)n, (long long)c, dl[n * Vp + c],
                             ignored ? "ignored row" : "padding column");
                return 0;
            }
    }
    return 1;
}

/* dlogits away from the targets are softmax * dloss, ~1e-5 * dloss each at this vocabulary: the
   target's (p - 1) * dloss sets the whole tensor's scale, so these are checked again on their own
   scale, where an error in the 128k-term normaliser shows. */
static void rs_expect_ce_tail(const char *what, const double *got, const double *exp, const int32_t *targets,
                              int64_t N, int64_t Vp, int64_t vocab, double tol) {
    unsigned char *keep = (unsigned char *)buf_alloc((size_t)(N * Vp));
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < vocab; c++) keep[n * Vp + c] = targets[n] != RS_IGNORE && c != targets[n];
    double *g, *e;
    int64_t m = rs_pack(&g, &e, got, exp, keep, N * Vp);
    EXPECT_CLOSE(label("%s: dlogits outside the target columns, on their own scale", what), g, e, m, tol);
}

static void rs_crossentropy_case(cpu_dev *d, rng *r, zt_dtype dt, int64_t vocab) {
    enum { N = 6 };
    const int64_t Vp = RS_VP;
    const char *cfg = label("crossentropy %s N %d Vp %lld vocab %lld", zt_dtype_name(dt), N, (long long)Vp,
                            (long long)vocab);
    /* row 0: target 0; 1: the last real token; 2: ignored; 3: a target past 2^16, every real logit
       +100 (exp overflows f32 unless the row's max is subtracted); 4: a confident prediction (target
       +20, p ~ 1 - 1e-5); 5: an ordinary row */
    int32_t targets[N] = {0, (int32_t)vocab - 1, RS_IGNORE, 70001, 123457, 0};
    targets[5] = rng_int(r, vocab);
    double *logits = drand(r, N * Vp, -4, 4);
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = vocab; c < Vp; c++) logits[n * Vp + c] = RS_PAD_LOGIT;
    for (int64_t c = 0; c < vocab; c++) logits[3 * Vp + c] += 100;
    logits[4 * Vp + targets[4]] += 20;
    int counted = 0;
    for (int n = 0; n < N; n++) counted += targets[n] != RS_IGNORE;
    float dl1 = (float)(1.0 / counted); /* the mean over counted rows; the reference gets this float */
    double *dloss = dbuf(N);
    for (int n = 0; n < N; n++) dloss[n] = dl1;
    zt_tensor Logits = to_dev(d, dt, zt_shape2(N, Vp), logits); /* logits now hold the rounded values */
    zt_tensor Targets = ids_to_dev(d, zt_shape1(N), targets);
    double *losses = dbuf(N), *dlogits = dbuf(N * Vp);
    ref_crossentropy(losses, dlogits, logits, targets, dloss, N, Vp, vocab, RS_IGNORE);

    /* losses only, into a buffer holding garbage */
    zt_tensor Losses = to_dev(d, ZT_F32, zt_shape1(N), drand(r, N, 5, 9));
    zt_crossentropy(d->s, Losses, NULL, Logits, Targets, vocab, RS_IGNORE, dl1);
    double *got_l = download(d, Losses);
    EXPECT_CLOSE(label("%s losses only: losses (f32)", cfg), got_l, losses, N, TOL_F32);
    rs_expect_ce_zeros(label("%s losses only", cfg), got_l, NULL, targets, N, Vp, vocab);

    /* separate dlogits, pre-filled: written, not accumulated */
    zt_tensor Dl = to_dev(d, dt, zt_shape2(N, Vp), drand(r, N * Vp, -1, 1));
    zt_tensor Losses2 = dev_new(d, ZT_F32, zt_shape1(N));
    zt_crossentropy(d->s, Losses2, &Dl, Logits, Targets, vocab, RS_IGNORE, dl1);
    double *got = download(d, Dl);
    got_l = download(d, Losses2);
    EXPECT_CLOSE(label("%s with dlogits: losses (f32)", cfg), got_l, losses, N, TOL_F32);
    EXPECT_CLOSE(label("%s: dlogits (written, not accumulated)", cfg), got, dlogits, N * Vp, tol_for(dt));
    rs_expect_ce_tail(cfg, got, dlogits, targets, N, Vp, vocab, tol_for(dt));
    rs_expect_ce_zeros(cfg, got_l, got, targets, N, Vp, vocab);
    EXPECT_EXACT(label("%s: logits unchanged", cfg), download(d, Logits), logits, N * Vp);

    /* dlogits in place of the logits, as zt_output_loss uses it */
    zt_tensor Alias = to_dev(d, dt, zt_shape2(N, Vp), dcopy(logits, N * Vp));
    zt_tensor Losses3 = dev_new(d, ZT_F32, zt_shape1(N));
    zt_crossentropy(d->s, Losses3, &Alias, Alias, Targets, vocab, RS_IGNORE, dl1);
    got = download(d, Alias);
    got_l = download(d, Losses3);
    EXPECT_CLOSE(label("%s in place: losses (f32)", cfg), got_l, losses, N, TOL_F32);
    EXPECT_CLOSE(label("%s in place: dlogits", cfg), got, dlogits, N * Vp, tol_for(dt));
    rs_expect_ce_zeros(label("%s in place", cfg), got_l, got, targets, N, Vp, vocab);
}

static void check_realsize_crossentropy(zt_dtype dt) {
    cpu_dev d;
    if (!cpu_open(&d, 2, 0)) return;
    rng r = {320};
    rs_crossentropy_case(&d, &r, dt, RS_VP);  /* 128256 real tokens, no padding */
    rs_crossentropy_case(&d, &r, dt, 128000); /* 256 padding columns at +50 */
    cpu_close(&d);
    bufs_free();
}
TEST(realsize_crossentropy_f32) { check_realsize_crossentropy(ZT_F32); }
TEST(realsize_crossentropy_bf16) { check_realsize_crossentropy(ZT_BF16); }

/* >>output loss ================================================================================ */

/* hidden (7, 64) against a (128256, 64) weight, 128000 real rows, through a 3-row logits_buf (chunks of
   3, 3 and 1 rows); the working dtype for hidden, weight, logits_buf and dhidden, and f32 dweight as
   the engine keeps gradients. Hidden column 0 is 1 and the padding rows of the weight are (50, 0, ...),
   so every padding logit is exactly 50: read by the loss, it would dominate it. dweight's real rows
   start at 0 and its padding rows at random values, which must come out unchanged, bit for bit. */
static void check_realsize_output_loss(zt_dtype dt) {
    cpu_dev d;
    if (!rs_open(&d, (size_t)80 << 20)) return; /* f32: weight and dweight 31.3 MiB each */
    rng r = {330};
    enum { N = 7 };
    const int64_t C = 64, Vp = RS_VP, vocab = 128000, R = 3;
    const char *cfg = label("output_loss %s N %d C %lld Vp %lld vocab %lld logits_buf rows %lld "
                            "(dweight f32)", zt_dtype_name(dt), N, (long long)C, (long long)Vp,
                            (long long)vocab, (long long)R);
    int32_t targets[N] = {0, (int32_t)vocab - 1, 65536, 99999, RS_IGNORE, 0, 0};
    targets[5] = rng_int(&r, vocab), targets[6] = rng_int(&r, vocab);
    int counted = 0;
    for (int n = 0; n < N; n++) counted += targets[n] != RS_IGNORE;
    float dl1 = (float)(1.0 / counted);
    double *dloss = dbuf(N);
    for (int n = 0; n < N; n++) dloss[n] = dl1;

    double *hidden = drand(&r, N * C, -1, 1), *w = drand(&r, Vp * C, -0.5, 0.5);
    for (int64_t n = 0; n < N; n++) hidden[n * C] = 1;
    for (int64_t v = vocab; v < Vp; v++)
        for (int64_t c = 0; c < C; c++) w[v * C + c] = c == 0 ? RS_PAD_LOGIT : 0;
    double *dh0 = drand(&r, N * C, -1, 1), *dw0 = dbuf(Vp * C);
    for (int64_t i = vocab * C; i < Vp * C; i++) dw0[i] = rng_range(&r, -1, 1);
    zt_tensor Hidden = to_dev(&d, dt, zt_shape2(N, C), hidden), W = to_dev(&d, dt, zt_shape2(Vp, C), w);
    zt_tensor Targets = ids_to_dev(&d, zt_shape1(N), targets);
    zt_tensor Dh = to_dev(&d, dt, zt_shape2(N, C), dh0), Dw = to_dev(&d, ZT_F32, zt_shape2(Vp, C), dw0);
    zt_tensor Buf = dev_new(&d, dt, zt_shape2(R, Vp));
    zt_tensor Losses = dev_new(&d, ZT_F32, zt_shape1(N)), Losses_fwd = dev_new(&d, ZT_F32, zt_shape1(N));

    double *losses = dbuf(N), *dh = dcopy(dh0, N * C), *dw = dcopy(dw0, Vp * C);
    ref_output_loss(losses, dh, dw, hidden, w, targets, dloss, N, C, Vp, vocab, RS_IGNORE);

    zt_output_loss(d.s, Losses_fwd, NULL, NULL, Hidden, W, Targets, Buf, vocab, RS_IGNORE, dl1);
    zt_output_loss(d.s, Losses, &Dh, &Dw, Hidden, W, Targets, Buf, vocab, RS_IGNORE, dl1);
    /* bf16 logits are rounded in logits_buf before the loss, which the reference does not see */
    double tol = tol_for(dt);
    double *got_l = download(&d, Losses), *got_dw = download(&d, Dw);
    EXPECT_CLOSE(label("%s: losses (f32)", cfg), got_l, losses, N, tol);
    rs_expect_ce_zeros(label("%s", cfg), got_l, NULL, targets, N, Vp, vocab);
    if (memcmp(download_raw(&d, Losses), download_raw(&d, Losses_fwd), N * sizeof(float)) != 0)
        zt_test_fail(__FILE__, __LINE__, "%s: losses differ between forward-only and backward", cfg);
    EXPECT_CLOSE(label("%s: dhidden = prefill + grad", cfg), download(&d, Dh), dh, N * C, tol);
    EXPECT_CLOSE(label("%s: dweight = prefill + grad", cfg), got_dw, dw, Vp * C, tol);
    EXPECT_EXACT(label("%s: dweight padding rows keep their prefill", cfg), got_dw + vocab * C,
                 dw0 + vocab * C, (Vp - vocab) * C);
    if (dt == ZT_F32) { /* the softmax tail's rows, on their own scale (see rs_expect_ce_tail) */
        unsigned char *keep = (unsigned char *)buf_alloc((size_t)(Vp * C));
        for (int64_t v = 0; v < vocab; v++) {
            int target = 0;
            for (int n = 0; n < N; n++) target |= targets[n] == v;
            memset(keep + v * C, !target, (size_t)C);
        }
        double *g, *e;
        int64_t m = rs_pack(&g, &e, got_dw, dw, keep, Vp * C);
        EXPECT_CLOSE(label("%s: dweight rows of non-target tokens, on their own scale", cfg), g, e, m, tol);
    }
    cpu_close(&d);
    bufs_free();
}
TEST(realsize_output_loss_f32) { check_realsize_output_loss(ZT_F32); }
TEST(realsize_output_loss_bf16) { check_realsize_output_loss(ZT_BF16); }
