/* tests/gpu/ops.c - build/gpu_ops_cuda: every op of zt.h's >>ops section on the CUDA backend against the CPU
   backend, in one process. Each case makes random inputs once, gives both backends the same bits, runs the op on
   both, copies the results back and compares them. One JSON line per result tensor on stdout:

       {"phase":"ops","op":"gemm","dtype":"bf16","shape":"M 320 N 288 K 1000 TN ...","out":"c","max_err":1.9e-03,
        "tol":1e-02,"pass":true}

   max_err = max |cuda - cpu| / (max |cpu| + 1e-30) over the tensor (null: a NaN or infinity where the CPU has a
   number). Tolerances, by what the result is:
       0      the same bits (a NaN matches any NaN): copy, cast, fill, scale, add and embedding forward (exact f32
              arithmetic rounded once), AdamW's f32 master, moments and its bf16 copy (the CUDA kernel is made to
              give the CPU's bits)
       1e-5   f32 results of elementwise maths through libm (gelu, silu, swiglu, rope): a few ulp of tanhf, expf,
              sinf, cosf (rope's inverse frequencies must be the CPU's bits: see case_rope)
       2e-5   f32 products (gemm, matmul; K up to 4096): sums in another order differ by a few 1e-6, while TF32
              (10-bit inputs) would be off by 2.5e-4, so this also says cuBLAS runs plain f32
       1e-4   f32 sums taken in another order: sum_rows, the norms and their statistics, attention and its lse,
              the losses, every gradient summed over rows
       1e-2   bf16 results: the same f32 work rounded once to 8 bits, so at most one bf16 step (2^-8) apart
       3e-3   f16 results: one f16 step (2^-10) apart, with margin
       3e-7   sumsq: a double sum rounded once to f32, so at most one f32 step apart
   Backward ops accumulate (+=): their gradient buffers start out holding random values on both sides, of about the
   gradient's size, so a kernel that overwrites is off by far more than the tolerance. The cross-entropy's dlogits
   are compared element by element (each within 1e-5 of itself in f32, one rounding step in bf16 and f16): the
   softmax terms are 1e-4 of the target's, below any tolerance taken against the largest value.
   The sizes are real (rows of 4096 in the norms, vocabularies of 50304 and 128256 in the losses, attention to
   T 512 with head dims 64, 80, 128 and 256, Gemma 2's capped scores and logits, Mixtral's and Qwen3-MoE's routing), yet the phase is short: the CPU side, on every core, is the longer one
   (35 s for the CPU against itself on 2 cores).

   build/gpu_ops_cuda [--backend NAME] [OP...]: NAME is the backend under test (default cuda; "cpu" runs this
   program's own logic on a machine without a GPU); with OPs, only the cases whose op name contains one of them.
   Ends with "N passed, N failed" on stderr; exit status 0 when all passed, 1 when a check failed, 2 when the
   backend could not be created. */
#include "../../zt.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TOL_EXACT 0.0
#define TOL_F32 1e-5
#define TOL_F32_GEMM 2e-5
#define TOL_F32_SUM 1e-4
#define TOL_BF16 1e-2
#define TOL_F16 3e-3
#define TOL_SUMSQ 3e-7

/* ---- the two backends ------------------------------------------------------------------------- */

/* side 0 is the reference (the CPU backend), side 1 the backend under test */
typedef struct side { zt_backend *be; zt_arena *dev; zt_stream *s; size_t mark; } side;
static side sd[2];
#define BOTH for (int i = 0; i < 2; i++)

/* the same tensor on both sides */
typedef struct pair { zt_tensor t[2]; } pair;

static struct {
    char op[32], shape[160];
    zt_dtype dtype;
    int argc;
    char **argv; /* the op filter */
    int passed, failed;
} cur;

static double tol_of(zt_dtype result, double f32_tol) {
    return result == ZT_BF16 ? TOL_BF16 : result == ZT_F16 ? TOL_F16 : f32_tol;
}

/* ---- JSON ------------------------------------------------------------------------------------- */

static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static void json_case(void) {
    printf("{\"phase\":\"ops\",\"op\":");
    json_str(stdout, cur.op);
    printf(",\"dtype\":\"%s\",\"shape\":", zt_dtype_name(cur.dtype));
    json_str(stdout, cur.shape);
}

/* a kernel or a check that stops the process: the line says which case it was, so a partial run still reports */
static void on_fatal(const char *message, void *user) {
    (void)user;
    json_case();
    printf(",\"error\":");
    json_str(stdout, message);
    printf(",\"pass\":false}\n");
    fflush(stdout);
}

/* ---- cases ------------------------------------------------------------------------------------ */

/* starts a case (0: the filter leaves it out); what a case allocates is freed by case_end */
static int case_begin(const char *op, zt_dtype dt, const char *fmt, ...) ZT_PRINTF(3, 4);
static int case_begin(const char *op, zt_dtype dt, const char *fmt, ...) {
    int wanted = cur.argc == 0;
    for (int i = 0; i < cur.argc && !wanted; i++) wanted = strstr(op, cur.argv[i]) != NULL;
    if (!wanted) return 0;
    snprintf(cur.op, sizeof cur.op, "%s", op);
    cur.dtype = dt;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cur.shape, sizeof cur.shape, fmt, ap);
    va_end(ap);
    BOTH sd[i].mark = zt_arena_mark(sd[i].dev);
    return 1;
}
static void case_end(void) {
    BOTH {
        zt_stream_sync(sd[i].s);
        zt_arena_reset(sd[i].dev, sd[i].mark);
    }
}

/* ---- host <-> both sides ---------------------------------------------------------------------- */

/* splitmix64: the same inputs on every machine */
static uint64_t rng_state = 0x5eed;
static uint64_t rng_next(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static float rng_range(float lo, float hi) { return lo + (hi - lo) * (float)((double)(rng_next() >> 40) * 0x1.0p-24); }

static void *xmalloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) zt_fatal("out of host memory (%zu bytes)", bytes);
    return p;
}

static pair pnew(zt_dtype t, zt_shape sh) {
    pair p;
    BOTH p.t[i] = zt_tensor_new(sd[i].dev, t, ZT_DEVICE, sh);
    return p;
}
/* host values (f32, or i32 for an i32 pair) rounded once to p's dtype, the same bits on both sides */
static void pset(pair p, const void *host, zt_dtype host_t) {
    void *h = xmalloc(zt_nbytes(p.t[0]));
    zt_convert(h, p.t[0].dtype, host, host_t, zt_numel(p.t[0]));
    BOTH zt_copy(sd[i].s, p.t[i], zt_tensor_make(h, p.t[i].dtype, ZT_HOST, p.t[i].shape));
    BOTH zt_stream_sync(sd[i].s);
    free(h);
}
static pair prand(zt_dtype t, zt_shape sh, float lo, float hi) {
    pair p = pnew(t, sh);
    int64_t n = zt_numel(p.t[0]);
    float *x = (float *)xmalloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) x[i] = rng_range(lo, hi);
    pset(p, x, ZT_F32);
    free(x);
    return p;
}
static pair pids(zt_shape sh, const int32_t *ids) {
    pair p = pnew(ZT_I32, sh);
    pset(p, ids, ZT_I32);
    return p;
}
static pair pfill(zt_dtype t, zt_shape sh, float value) {
    pair p = pnew(t, sh);
    BOTH zt_fill(sd[i].s, p.t[i], value);
    return p;
}
/* an absent tensor, as optional op arguments take it */
static pair pnone(void) {
    pair p;
    memset(&p, 0, sizeof p);
    return p;
}
/* side i's tensor as raw bytes in host memory (malloc) */
static void *get_raw(int i, zt_tensor t) {
    void *h = xmalloc(zt_nbytes(t));
    zt_copy(sd[i].s, zt_tensor_make(h, t.dtype, ZT_HOST, t.shape), t);
    zt_stream_sync(sd[i].s);
    return h;
}

/* the check's JSON line, and the count */
static int report(const char *out, double worst, double tol, int pass) {
    json_case();
    printf(",\"out\":\"%s\",\"max_err\":", out);
    if (isinf(worst)) printf("null");
    else printf("%.3e", worst);
    printf(",\"tol\":%.0e,\"pass\":%s}\n", tol, pass ? "true" : "false");
    fflush(stdout);
    if (pass) cur.passed++;
    else cur.failed++;
    return pass;
}

/* Compares p's two sides; tol 0 asks for the same bits. Prints the check's JSON line. */
static int check(const char *out, pair p, double tol) {
    int64_t n = zt_numel(p.t[0]);
    size_t es = zt_dtype_size(p.t[0].dtype);
    void *raw[2];
    float *x[2];
    BOTH {
        raw[i] = get_raw(i, p.t[i]);
        x[i] = (float *)xmalloc(sizeof(float) * (size_t)n);
        zt_convert(x[i], ZT_F32, raw[i], p.t[i].dtype, n);
    }
    double scale = 0, worst = 0;
    int same_bits = 1;
    for (int64_t k = 0; k < n; k++) scale = fmax(scale, fabs((double)x[0][k]));
    for (int64_t k = 0; k < n; k++) {
        double a = x[0][k], b = x[1][k], d = fabs(a - b) / (scale + 1e-30);
        int both_nan = isnan(a) && isnan(b);
        if (both_nan) d = 0;
        else if (isnan(d)) d = INFINITY;
        worst = fmax(worst, d);
        if (same_bits && !both_nan && memcmp((char *)raw[0] + k * es, (char *)raw[1] + k * es, es) != 0) same_bits = 0;
    }
    int pass = tol == 0 ? same_bits : worst <= tol;
    BOTH free(raw[i]), free(x[i]);
    return report(out, worst, tol, pass);
}

/* Compares p's two sides element by element: max |cuda - cpu| / (|cpu| + floor) within tol, each element
   against its own size: one rounding step of dt (two in bf16, where neighbours are 2^-7 apart), 1e-5 in f32;
   f16's floor is two steps of its subnormals */
static int check_each(const char *out, pair p, zt_dtype dt) {
    int64_t n = zt_numel(p.t[0]);
    double tol = dt == ZT_BF16 ? 1.6e-2 : dt == ZT_F16 ? 2e-3 : 1e-5, floor = dt == ZT_F16 ? 1.2e-7 : 1e-30, worst = 0;
    float *x[2];
    BOTH {
        void *raw = get_raw(i, p.t[i]);
        x[i] = (float *)xmalloc(sizeof(float) * (size_t)n);
        zt_convert(x[i], ZT_F32, raw, p.t[i].dtype, n);
        free(raw);
    }
    for (int64_t k = 0; k < n; k++) {
        double a = x[0][k], b = x[1][k], d = fabs(a - b) / (fabs(a) + floor);
        worst = fmax(worst, isnan(d) ? INFINITY : d);
    }
    BOTH free(x[i]);
    return report(out, worst, tol, worst <= tol);
}

/* ---- copies and elementwise ops --------------------------------------------------------------- */

static void case_copy(zt_dtype dt) {
    const int64_t n = (1 << 20) + 3;
    if (!case_begin("copy", dt, "n %lld: host->device, device->device (a slice, a view), device->host", (long long)n))
        return;
    pair a = prand(dt, zt_shape1(n), -3, 3);
    pair b = pnew(dt, zt_shape2(n, 1));
    BOTH zt_copy(sd[i].s, b.t[i], a.t[i]);
    BOTH zt_copy(sd[i].s, zt_slice(b.t[i], 1000, 5000), zt_slice(zt_view(a.t[i], 0, zt_shape2(n, 1)), 7, 5000));
    BOTH zt_copy(sd[i].s, zt_view(b.t[i], 99, zt_shape1(3)), zt_view(a.t[i], 12345, zt_shape1(3)));
    check("dst", b, TOL_EXACT);
    case_end();
}

static void case_ids_copy(void) {
    const int64_t n = 4097;
    if (!case_begin("copy", ZT_I32, "n %lld", (long long)n)) return;
    int32_t *ids = (int32_t *)xmalloc(sizeof(int32_t) * n);
    for (int64_t k = 0; k < n; k++) ids[k] = (int32_t)(rng_next() >> 33) - (1 << 30);
    pair a = pids(zt_shape1(n), ids), b = pnew(ZT_I32, zt_shape1(n));
    BOTH zt_copy(sd[i].s, b.t[i], a.t[i]);
    check("dst", b, TOL_EXACT);
    free(ids);
    case_end();
}

/* casts between every pair of float dtypes: every 16-bit pattern from bf16 and f16, and f32 values at the
   edges (ties, subnormals, overflow, infinities, NaN) among random ones of every magnitude */
static void case_cast(zt_dtype from, zt_dtype to) {
    const int64_t n = 65536 * 4;
    char what[64];
    snprintf(what, sizeof what, "%s -> %s, n %lld, edge values", zt_dtype_name(from), zt_dtype_name(to), (long long)n);
    if (!case_begin("cast", to, "%s", what)) return;
    pair src = pnew(from, zt_shape1(n)), dst = pnew(to, zt_shape1(n));
    void *h = xmalloc((size_t)n * 4);
    if (from == ZT_F32) {
        static const uint32_t edge[] = {0x00000000u, 0x80000000u, 0x3f808000u, 0x3f818000u, 0x3f80c000u, 0x00000001u,
                                        0x007fffffu, 0x00800000u, 0x33000000u, 0x33000001u, 0x387fc000u, 0x477ff000u,
                                        0x477fefffu, 0x47800000u, 0x7f7fffffu, 0xff7fffffu, 0x7f800000u, 0xff800000u,
                                        0x7fc00000u, 0xffc00001u, 0x7f800001u, 0x7fbfffffu};
        uint32_t *u = (uint32_t *)h;
        for (int64_t k = 0; k < n; k++) {
            float f = ldexpf(rng_range(-1, 1), (int)(rng_next() % 80) - 40);
            memcpy(&u[k], &f, 4);
            if (k % 7 == 0) u[k] = (uint32_t)rng_next(); /* any pattern: NaNs, subnormals, huge */
        }
        memcpy(u, edge, sizeof edge);
    } else {
        uint16_t *u = (uint16_t *)h;
        for (int64_t k = 0; k < n; k++) u[k] = (uint16_t)k; /* every pattern, four times */
    }
    BOTH zt_copy(sd[i].s, src.t[i], zt_tensor_make(h, from, ZT_HOST, src.t[i].shape));
    BOTH zt_cast(sd[i].s, dst.t[i], src.t[i]);
    check("out", dst, TOL_EXACT);
    free(h);
    case_end();
}

static void case_fill_scale_add(zt_dtype dt) {
    const int64_t n = (4 << 20) + 1;
    if (case_begin("fill", dt, "n %lld, then rows 2..4 of a (7, 143) view of it", (long long)n)) {
        pair f = pfill(dt, zt_shape1(n), 0.1f);
        BOTH zt_fill(sd[i].s, zt_slice(zt_view(f.t[i], 0, zt_shape2(7, 143)), 2, 3), -2.5f);
        check("t", f, TOL_EXACT);
        case_end();
    }
    if (case_begin("scale", dt, "n %lld by 0.3", (long long)n)) {
        pair a = prand(dt, zt_shape1(n), -3, 3);
        BOTH zt_scale(sd[i].s, a.t[i], 0.3f);
        check("t", a, TOL_EXACT);
        case_end();
    }
    if (case_begin("uniform noise", dt, "n %lld, magnitude 0.3, offset 12345; then jitter 0.1, dropout 0.1",
                   (long long)n)) {
        pair a = prand(dt, zt_shape1(n), -3, 3);
        BOTH zt_add_uniform_noise(sd[i].s, a.t[i], 0.3f, 0x5eedull, 12345);
        check("t", a, TOL_EXACT);
        BOTH zt_mul_uniform_noise(sd[i].s, a.t[i], 0.1f, 0x5eedull, 99);
        check("t jittered", a, TOL_EXACT);
        BOTH zt_dropout(sd[i].s, a.t[i], 0.1f, 0x5eedull, 7);
        check("t dropped", a, TOL_EXACT);
        case_end();
    }
    if (case_begin("add", dt, "n %lld; out apart, aliasing a, aliasing b", (long long)n)) {
        pair a = prand(dt, zt_shape1(n), -3, 3), b = prand(dt, zt_shape1(n), -3, 3), out = pnew(dt, zt_shape1(n));
        pair a2 = pnew(dt, zt_shape1(n)), b2 = pnew(dt, zt_shape1(n));
        BOTH {
            zt_copy(sd[i].s, a2.t[i], a.t[i]);
            zt_copy(sd[i].s, b2.t[i], b.t[i]);
            zt_add(sd[i].s, out.t[i], a.t[i], b.t[i]);
            zt_add(sd[i].s, a2.t[i], a2.t[i], b.t[i]);
            zt_add(sd[i].s, b2.t[i], a.t[i], b2.t[i]);
        }
        check("out", out, TOL_EXACT);
        check("out (= a)", a2, TOL_EXACT);
        check("out (= b)", b2, TOL_EXACT);
        case_end();
    }
}

/* ---- products --------------------------------------------------------------------------------- */

/* c (M,N) = alpha op(a) @ op(b) + beta c + bias; c starts random (NaN when beta is 0: it must not be read) */
static void case_gemm(zt_dtype dt, int64_t M, int64_t N, int64_t K, int ta, int tb, float alpha, float beta, int bias) {
    if (!case_begin("gemm", dt, "M %lld N %lld K %lld %s%s alpha %g beta %g%s", (long long)M, (long long)N,
                    (long long)K, ta ? "T" : "N", tb ? "T" : "N", (double)alpha, (double)beta, bias ? " bias" : ""))
        return;
    pair a = prand(dt, ta ? zt_shape2(K, M) : zt_shape2(M, K), -1, 1);
    pair b = prand(dt, tb ? zt_shape2(N, K) : zt_shape2(K, N), -1, 1);
    pair c = beta == 0 ? pfill(dt, zt_shape2(M, N), NAN) : prand(dt, zt_shape2(M, N), -1, 1);
    pair bi = prand(dt, zt_shape1(N), -1, 1);
    BOTH zt_gemm(sd[i].s, c.t[i], a.t[i], b.t[i], ta, tb, alpha, beta, bias ? &bi.t[i] : NULL);
    check("c", c, tol_of(dt, TOL_F32_GEMM));
    case_end();
}

/* batched: a (nb,M,K) or (1,M,K) with b (nb,K,N) or (1,K,N) (one of them shared), c (nb,M,N) */
static void case_gemm_batched(zt_dtype dt, int64_t nb, int a1, int tb) {
    const int64_t M = 256, N = 300, K = 64;
    if (!case_begin("gemm", dt, "batched %lld x (M %lld N %lld K %lld) N%s, %s has batch 1, beta 1", (long long)nb,
                    (long long)M, (long long)N, (long long)K, tb ? "T" : "N", a1 ? "a" : "b"))
        return;
    pair a = prand(dt, zt_shape3(a1 ? 1 : nb, M, K), -1, 1);
    pair b = prand(dt, tb ? zt_shape3(a1 ? nb : 1, N, K) : zt_shape3(a1 ? nb : 1, K, N), -1, 1);
    pair c = prand(dt, zt_shape3(nb, M, N), -1, 1);
    BOTH zt_gemm(sd[i].s, c.t[i], a.t[i], b.t[i], 0, tb, 1.0f, 1.0f, NULL);
    check("c", c, tol_of(dt, TOL_F32_GEMM));
    case_end();
}

static void case_sum_rows(zt_dtype dt) {
    const int64_t R = 8192, C = 768;
    if (!case_begin("sum_rows", dt, "x (%lld, %lld)", (long long)R, (long long)C)) return;
    pair x = prand(dt, zt_shape2(R, C), -1, 1), out = prand(dt, zt_shape1(C), -50, 50);
    BOTH zt_sum_rows(sd[i].s, out.t[i], x.t[i]);
    check("out += column sums", out, tol_of(dt, TOL_F32_SUM));
    case_end();
}

/* a linear layer forward and backward; gd is the dtype of dweight and dbias (the engine's are f32) */
static void case_matmul(zt_dtype dt, zt_dtype gd, int frozen) {
    const int64_t N = 1024, C = 768, OC = 3072;
    if (!case_begin("matmul", dt, "inp (%lld, %lld) weight (%lld, %lld) bias; dweight, dbias %s", (long long)N,
                    (long long)C, (long long)OC, (long long)C, frozen ? "absent (frozen)" : zt_dtype_name(gd)))
        return;
    pair inp = prand(dt, zt_shape2(N, C), -1, 1), w = prand(dt, zt_shape2(OC, C), -0.1f, 0.1f);
    pair bias = prand(dt, zt_shape1(OC), -1, 1), out = pnew(dt, zt_shape2(N, OC));
    BOTH zt_matmul_forward(sd[i].s, out.t[i], inp.t[i], w.t[i], &bias.t[i]);
    check("out", out, tol_of(dt, TOL_F32_GEMM));
    pair dout = prand(dt, zt_shape2(N, OC), -1, 1), dinp = prand(dt, zt_shape2(N, C), -5, 5);
    pair dw = prand(gd, zt_shape2(OC, C), -20, 20), db = prand(gd, zt_shape1(OC), -20, 20);
    BOTH zt_matmul_backward(sd[i].s, &dinp.t[i], frozen ? NULL : &dw.t[i], frozen ? NULL : &db.t[i], dout.t[i],
                            inp.t[i], w.t[i]);
    check("dinp += dout @ weight", dinp, tol_of(dt, TOL_F32_GEMM));
    if (!frozen) {
        check("dweight += dout^T @ inp", dw, tol_of(gd, TOL_F32_GEMM));
        check("dbias += column sums of dout", db, tol_of(gd, TOL_F32_SUM));
    }
    case_end();
}

/* ---- embeddings and norms --------------------------------------------------------------------- */

/* token ids with many repeats (half from 64 ids) scattered over GPT-2's padded vocabulary */
static void case_embedding(zt_dtype dt, zt_dtype gd) {
    const int64_t V = 50304, C = 768, N = 4096;
    if (!case_begin("embedding", dt, "table (%lld, %lld), %lld ids, half of them among 64; dtable %s", (long long)V,
                    (long long)C, (long long)N, zt_dtype_name(gd)))
        return;
    int32_t *ids = (int32_t *)xmalloc(sizeof(int32_t) * N);
    for (int64_t k = 0; k < N; k++) ids[k] = (int32_t)(rng_next() % (uint64_t)(k % 2 ? 64 : V));
    ids[0] = 0, ids[1] = (int32_t)V - 1;
    pair id = pids(zt_shape1(N), ids), table = prand(dt, zt_shape2(V, C), -1, 1);
    pair out = pnew(dt, zt_shape2(N, C)), acc = prand(dt, zt_shape2(N, C), -1, 1);
    BOTH {
        zt_embedding_forward(sd[i].s, out.t[i], id.t[i], table.t[i], 0);
        zt_embedding_forward(sd[i].s, acc.t[i], id.t[i], table.t[i], 1);
    }
    check("out = table[ids]", out, TOL_EXACT);
    check("out += table[ids]", acc, TOL_EXACT);
    pair dout = prand(dt, zt_shape2(N, C), -1, 1), dtable = prand(gd, zt_shape2(V, C), -4, 4);
    BOTH zt_embedding_backward(sd[i].s, dtable.t[i], dout.t[i], id.t[i]);
    check("dtable += dout rows by id", dtable, TOL_EXACT); /* the CPU's additions in its order and roundings */
    free(ids);
    case_end();
}

/* layernorm (rms 0; -1: without a bias, Cohere's) or rmsnorm (rms 1; rms 2: Gemma's, of 1 + weight): inputs
   off-centre, as residual streams are; dweight (and dbias) absent when frozen */
static void case_norm(int rms, zt_dtype dt, int64_t N, int64_t C, int frozen) {
    int unbiased = rms < 0;
    if (!case_begin(rms == 2 ? "rmsnorm (1 + weight)" : rms > 0 ? "rmsnorm" : unbiased ? "layernorm without a bias"
                                                                                         : "layernorm",
                    dt, "inp (%lld, %lld)%s", (long long)N, (long long)C, frozen ? ", dweight absent (frozen)" : ""))
        return;
    if (unbiased) rms = 0;
    float eps = rms ? 1e-6f : 1e-5f, off = rms == 2 ? 1.0f : 0.0f;
    pair inp = prand(dt, zt_shape2(N, C), -1, 3), w = prand(dt, zt_shape1(C), 0.5f - off, 1.5f - off);
    pair b = unbiased ? pnone() : prand(dt, zt_shape1(C), -0.5f, 0.5f), out = pnew(dt, zt_shape2(N, C));
    pair mean = pnew(ZT_F32, zt_shape1(N)), rstd = pnew(ZT_F32, zt_shape1(N));
    BOTH {
        if (rms) zt_rmsnorm_offset_forward(sd[i].s, out.t[i], rstd.t[i], inp.t[i], w.t[i], off, eps);
        else zt_layernorm_forward(sd[i].s, out.t[i], mean.t[i], rstd.t[i], inp.t[i], w.t[i], b.t[i], eps);
    }
    check("out", out, tol_of(dt, TOL_F32_SUM));
    if (!rms) check("mean (f32)", mean, TOL_F32_SUM);
    check("rstd (f32)", rstd, TOL_F32_SUM);
    /* dinp is ~|dout| * |w| * rstd; the weight gradients sum N rows */
    float gsum = sqrtf((float)N);
    pair dout = prand(dt, zt_shape2(N, C), -1, 1), dinp = prand(dt, zt_shape2(N, C), -1, 1);
    pair dw = frozen ? pnone() : prand(ZT_F32, zt_shape1(C), -gsum, gsum);
    pair db = frozen || rms || unbiased ? pnone() : prand(ZT_F32, zt_shape1(C), -gsum, gsum);
    BOTH {
        if (rms) zt_rmsnorm_offset_backward(sd[i].s, dinp.t[i], dw.t[i], dout.t[i], inp.t[i], w.t[i], off, rstd.t[i]);
        else zt_layernorm_backward(sd[i].s, dinp.t[i], dw.t[i], db.t[i], dout.t[i], inp.t[i], w.t[i], mean.t[i],
                                   rstd.t[i]);
    }
    check("dinp +=", dinp, tol_of(dt, TOL_F32_SUM));
    if (!frozen) check("dweight (f32) +=", dw, TOL_F32_SUM);
    if (!frozen && !rms && !unbiased) check("dbias (f32) +=", db, TOL_F32_SUM);
    case_end();
}

/* Cohere's q and k norms: rows of a head's HD, each head's own weight (G = H rows of it), layernorm or rmsnorm */
static void case_norm_heads(int rms, zt_dtype dt, int64_t tokens, int64_t H, int64_t HD) {
    int64_t N = tokens * H;
    if (!case_begin(rms ? "rmsnorm, a weight a head" : "layernorm, a weight a head", dt, "inp (%lld, %lld), %lld heads",
                    (long long)N, (long long)HD, (long long)H))
        return;
    pair inp = prand(dt, zt_shape2(N, HD), -1, 3), w = prand(dt, zt_shape2(H, HD), 0.5f, 1.5f);
    pair out = pnew(dt, zt_shape2(N, HD)), mean = pnew(ZT_F32, zt_shape1(N)), rstd = pnew(ZT_F32, zt_shape1(N));
    BOTH {
        if (rms) zt_rmsnorm_forward(sd[i].s, out.t[i], rstd.t[i], inp.t[i], w.t[i], 1e-5f);
        else zt_layernorm_forward(sd[i].s, out.t[i], mean.t[i], rstd.t[i], inp.t[i], w.t[i], pnone().t[i], 1e-5f);
    }
    check("out", out, tol_of(dt, TOL_F32_SUM));
    check("rstd (f32)", rstd, TOL_F32_SUM);
    float gsum = sqrtf((float)tokens);
    pair dout = prand(dt, zt_shape2(N, HD), -1, 1), dinp = prand(dt, zt_shape2(N, HD), -1, 1);
    pair dw = prand(ZT_F32, zt_shape2(H, HD), -gsum, gsum);
    BOTH {
        if (rms) zt_rmsnorm_backward(sd[i].s, dinp.t[i], dw.t[i], dout.t[i], inp.t[i], w.t[i], rstd.t[i]);
        else zt_layernorm_backward(sd[i].s, dinp.t[i], dw.t[i], pnone().t[i], dout.t[i], inp.t[i], w.t[i], mean.t[i],
                                   rstd.t[i]);
    }
    check("dinp +=", dinp, tol_of(dt, TOL_F32_SUM));
    check("dweight (f32), a row a head +=", dw, TOL_F32_SUM);
    case_end();
}

/* ---- activations and rotary positions --------------------------------------------------------- */

static void case_pointwise(zt_dtype dt) {
    const int64_t N = 2048, I = 3072;
    static const char *const names[3] = {"gelu", "silu", "gelu_erf"};
    for (int k = 0; k < 3; k++) {
        if (!case_begin(names[k], dt, "(%lld, %lld)", (long long)N, (long long)I)) continue;
        pair inp = prand(dt, zt_shape2(N, I), -6, 6), out = pnew(dt, zt_shape2(N, I));
        pair dout = prand(dt, zt_shape2(N, I), -1, 1), dinp = prand(dt, zt_shape2(N, I), -1, 1);
        BOTH {
            if (k == 0) {
                zt_gelu_forward(sd[i].s, out.t[i], inp.t[i]);
                zt_gelu_backward(sd[i].s, dinp.t[i], dout.t[i], inp.t[i]);
            } else if (k == 1) {
                zt_silu_forward(sd[i].s, out.t[i], inp.t[i]);
                zt_silu_backward(sd[i].s, dinp.t[i], dout.t[i], inp.t[i]);
            } else {
                zt_gelu_erf_forward(sd[i].s, out.t[i], inp.t[i]);
                zt_gelu_erf_backward(sd[i].s, dinp.t[i], dout.t[i], inp.t[i]);
            }
        }
        check("out", out, tol_of(dt, TOL_F32));
        check("dinp +=", dinp, tol_of(dt, TOL_F32));
        case_end();
    }
    const int64_t R = 1024, H = 11008;
    for (int gelu = 0; gelu < 2; gelu++) { /* SwiGLU (LLaMA), GeGLU (Gemma) */
        if (!case_begin(gelu ? "geglu" : "swiglu", dt, "inp (%lld, 2 x %lld)", (long long)R, (long long)H)) continue;
        pair inp = prand(dt, zt_shape2(R, 2 * H), -6, 6), out = pnew(dt, zt_shape2(R, H));
        pair dout = prand(dt, zt_shape2(R, H), -1, 1), dinp = prand(dt, zt_shape2(R, 2 * H), -1, 1);
        BOTH {
            if (gelu) zt_geglu_forward(sd[i].s, out.t[i], inp.t[i]), zt_geglu_backward(sd[i].s, dinp.t[i], dout.t[i], inp.t[i]);
            else zt_swiglu_forward(sd[i].s, out.t[i], inp.t[i]), zt_swiglu_backward(sd[i].s, dinp.t[i], dout.t[i], inp.t[i]);
        }
        check("out", out, tol_of(dt, TOL_F32));
        check("dinp +=", dinp, tol_of(dt, TOL_F32));
        case_end();
    }
    /* gpt-oss's clamped SwiGLU (its alpha 1.702 and limit 7, inputs on both sides of the clamps; its width 2880) */
    if (case_begin("swiglu_clamped", dt, "inp (%lld, 2 x 2880)", (long long)R)) {
        pair inp = prand(dt, zt_shape2(R, 2 * 2880), -9, 9), out = pnew(dt, zt_shape2(R, 2880));
        pair dout = prand(dt, zt_shape2(R, 2880), -1, 1), dinp = prand(dt, zt_shape2(R, 2 * 2880), -1, 1);
        BOTH {
            zt_swiglu_clamped_forward(sd[i].s, out.t[i], inp.t[i], 1.702f, 7.0f);
            zt_swiglu_clamped_backward(sd[i].s, dinp.t[i], dout.t[i], inp.t[i], 1.702f, 7.0f);
        }
        check("out", out, tol_of(dt, TOL_F32));
        check("dinp +=", dinp, tol_of(dt, TOL_F32));
        case_end();
    }
}

/* B = 3 rows of positions: 0..T-1; restarting at a document boundary (t = 200); 7000 + t, far out, where an
   inverse frequency one ulp off (a device powf instead of the host's) moves an angle by ~4e-4 and fails 1e-5 */
/* scaling 1: LLaMA-3.1's llama3; 2: Qwen2.5's YaRN (4 x 32768, attention factor 0.1 ln 4 + 1) */
static void case_rope(zt_dtype dt, int64_t B, int64_t T, int64_t H, int64_t HD, float theta, int scaling) {
    zt_rope_scaling sc;
    memset(&sc, 0, sizeof sc);
    if (scaling == 1) sc.factor = 8.0f, sc.low_freq_factor = 1.0f, sc.high_freq_factor = 4.0f, sc.original_max_positions = 8192.0f;
    if (scaling == 2) sc.factor = 4.0f, sc.original_max_positions = 32768.0f, sc.yarn = 1, sc.beta_fast = 32.0f,
                      sc.beta_slow = 1.0f, sc.truncate = 1, sc.attention_factor = 1.1386294f;
    if (scaling == 3) sc.rotary_dim = HD * 3 / 4; /* Phi-4-mini's partial rotation */
    if (scaling == 4) sc.rotary_dim = HD / 2, sc.interleaved = 1; /* GLM's: half the head, pairs (2i, 2i + 1) */
    if (!case_begin("rope", dt, "x (%lld, %lld, %lld, %lld) theta %g%s", (long long)B, (long long)T, (long long)H,
                    (long long)HD, (double)theta, scaling == 1 ? " llama3 scaling" : scaling == 2 ? " yarn scaling" :
                    scaling == 3 ? " 3/4 of the head rotated" : scaling == 4 ? " half of the head rotated interleaved" : ""))
        return;
    int32_t *pos = (int32_t *)xmalloc(sizeof(int32_t) * B * T);
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++)
            pos[b * T + t] = (int32_t)(b % 3 == 0 ? t : b % 3 == 1 ? (t < 200 ? t : t - 200) : 7000 + t);
    zt_shape sh = zt_shape4(B, T, H, HD);
    pair p = pids(zt_shape2(B, T), pos), x = prand(dt, sh, -2, 2), out = pnew(dt, sh), inplace = pnew(dt, sh);
    const zt_rope_scaling *s = scaling ? &sc : NULL;
    BOTH {
        zt_rope_forward(sd[i].s, out.t[i], x.t[i], p.t[i], theta, s);
        zt_copy(sd[i].s, inplace.t[i], x.t[i]);
        zt_rope_forward(sd[i].s, inplace.t[i], inplace.t[i], p.t[i], theta, s);
    }
    check("out", out, tol_of(dt, TOL_F32));
    check("out (in place)", inplace, tol_of(dt, TOL_F32));
    pair dout = prand(dt, sh, -1, 1), dinp = prand(dt, sh, -1, 1);
    BOTH zt_rope_backward(sd[i].s, dinp.t[i], dout.t[i], p.t[i], theta, s);
    check("dinp +=", dinp, tol_of(dt, TOL_F32));
    free(pos);
    case_end();
}

/* ---- attention -------------------------------------------------------------------------------- */

/* with docs, each row holds documents of different lengths whose boundaries straddle 64-key tiles; the options'
   zeros are the defaults (scale 1/sqrt(HD), no cap, no window, no dropout) */
static void case_attention_sinks(zt_dtype dt, int64_t B, int64_t T, int64_t NH, int64_t NKV, int64_t HD, int docs,
                                 float scale, float cap, int64_t window, float dropout, int with_sinks) {
    if (!case_begin("attention", dt, "B %lld T %lld heads %lld:%lld HD %lld%s%s%s%s%s", (long long)B, (long long)T,
                    (long long)NH, (long long)NKV, (long long)HD, docs ? " documents (starts)" : "",
                    scale || cap ? " own scale, capped scores" : "", window ? " sliding window" : "",
                    dropout > 0 ? " dropout" : "", with_sinks ? " sinks" : ""))
        return;
    /* dropout: the draws from a rank's offset, the second row's; sinks (gpt-oss's) in the dtype, their gradient f32 */
    zt_attention_opts ao[2] = {{scale, cap, window, dropout, 0xd409ull, dropout > 0 ? NH * T * T : 0, NULL, NULL},
                               {scale, cap, window, dropout, 0xd409ull, dropout > 0 ? NH * T * T : 0, NULL, NULL}};
    pair sinks = with_sinks ? prand(dt, zt_shape1(NH), -1, 3) : pnone();
    pair dsinks = with_sinks ? prand(ZT_F32, zt_shape1(NH), -1, 1) : pnone();
    for (int i = 0; i < 2 && with_sinks; i++) ao[i].sinks = &sinks.t[i], ao[i].dsinks = &dsinks.t[i];
    int32_t *st = (int32_t *)xmalloc(sizeof(int32_t) * B * T);
    for (int64_t b = 0; b < B; b++) {
        int64_t cut1 = b == 0 ? 100 : 37, cut2 = b == 0 ? T : 300 < T ? 300 : T;
        for (int64_t t = 0; t < T; t++) st[b * T + t] = (int32_t)(t < cut1 ? 0 : t < cut2 ? cut1 : cut2);
    }
    zt_shape qs = zt_shape4(B, T, NH, HD), ks = zt_shape4(B, T, NKV, HD);
    pair starts = docs ? pids(zt_shape2(B, T), st) : pnone();
    pair q = prand(dt, qs, -2, 2), k = prand(dt, ks, -2, 2), v = prand(dt, ks, -1, 1);
    pair out = pnew(dt, qs), lse = pnew(ZT_F32, zt_shape3(B, NH, T));
    BOTH zt_attention_ex_forward(sd[i].s, out.t[i], lse.t[i], q.t[i], k.t[i], v.t[i], docs ? &starts.t[i] : NULL, &ao[i]);
    check("out", out, tol_of(dt, TOL_F32_SUM));
    check("lse (f32)", lse, TOL_F32_SUM);
    pair dout = prand(dt, qs, -1, 1), dq = prand(dt, qs, -0.5f, 0.5f);
    pair dk = prand(dt, ks, -0.5f, 0.5f), dv = prand(dt, ks, -0.5f, 0.5f);
    /* the backward of the device under test reads its own out and lse, so each side is checked as a whole */
    BOTH zt_attention_ex_backward(sd[i].s, dq.t[i], dk.t[i], dv.t[i], dout.t[i], q.t[i], k.t[i], v.t[i], out.t[i],
                                  lse.t[i], docs ? &starts.t[i] : NULL, &ao[i]);
    check("dq +=", dq, tol_of(dt, TOL_F32_SUM));
    check("dk +=", dk, tol_of(dt, TOL_F32_SUM));
    check("dv +=", dv, tol_of(dt, TOL_F32_SUM));
    if (with_sinks) check("dsinks += (f32, sums over B T rows of dout . out)", dsinks, tol_of(dt, TOL_F32_SUM));
    free(st);
    case_end();
}
static void case_attention_drop(zt_dtype dt, int64_t B, int64_t T, int64_t NH, int64_t NKV, int64_t HD, int docs,
                                float scale, float cap, int64_t window, float dropout) {
    case_attention_sinks(dt, B, T, NH, NKV, HD, docs, scale, cap, window, dropout, 0);
}
static void case_attention_ex(zt_dtype dt, int64_t B, int64_t T, int64_t NH, int64_t NKV, int64_t HD, int docs,
                              float scale, float cap, int64_t window) {
    case_attention_drop(dt, B, T, NH, NKV, HD, docs, scale, cap, window, 0.0f);
}
static void case_attention(zt_dtype dt, int64_t B, int64_t T, int64_t NH, int64_t NKV, int64_t HD, int docs) {
    case_attention_ex(dt, B, T, NH, NKV, HD, docs, 0.0f, 0.0f, 0);
}

/* ---- losses ----------------------------------------------------------------------------------- */

#define IGNORE (-100)
/* N rows of logits (Vp columns, the first vocab real): padding columns hold 30 (they would dominate if read),
   one row is shifted by +60 (the max must be subtracted), rows 3 and N-2 are ignored */
/* the MoE steps: routing (exact choices; probabilities and weights to f32's few ulp of expf; the gradient a
   sum over the choices), the balancing loss's gradient and probability sums, the sort and the gather (exact), the combine and its backward (sums in another order) */
/* the grouped routings, exact choices: sigmoid, DeepSeek-V3's and GLM-4.5's (a correction, groups by their two best,
   normalized, times 2.5); else DeepSeek-V2's group_limited_greedy (softmax, groups by their best, unnormalized, times
   16) */
static void case_moe_grouped(int sigmoid, zt_dtype dt, int64_t N, int64_t E, int64_t k, int64_t groups,
                             int64_t topk_groups) {
    if (!case_begin(sigmoid ? "moe_sigmoid" : "moe_grouped_softmax", dt, "N %lld E %lld k %lld, %lld of %lld groups",
                    (long long)N, (long long)E, (long long)k, (long long)topk_groups, (long long)groups))
        return;
    pair logits = prand(dt, zt_shape2(N, E), -4, 4), probs = pnew(ZT_F32, zt_shape2(N, E));
    pair bias = prand(ZT_F32, zt_shape1(E), -0.1f, 0.1f);
    pair idx = pnew(ZT_I32, zt_shape2(N, k)), weight = pnew(ZT_F32, zt_shape2(N, k));
    pair dweight = prand(ZT_F32, zt_shape2(N, k), -1, 1), dlogits = prand(dt, zt_shape2(N, E), -1, 1);
    BOTH {
        zt_moe_route_params p;
        memset(&p, 0, sizeof p);
        p.normalize = sigmoid, p.sigmoid = sigmoid, p.groups = groups, p.topk_groups = topk_groups, p.group_max = !sigmoid;
        p.scale = sigmoid ? 2.5f : 16.0f, p.bias = sigmoid ? &bias.t[i] : NULL;
        zt_moe_route_with(sd[i].s, idx.t[i], weight.t[i], probs.t[i], logits.t[i], p);
        zt_moe_route_backward_with(sd[i].s, dlogits.t[i], dweight.t[i], probs.t[i], idx.t[i], p);
    }
    check("idx", idx, TOL_EXACT);
    check("probs", probs, TOL_F32);
    check("weight", weight, TOL_F32);
    check("dlogits +=", dlogits, tol_of(dt, TOL_F32_SUM));
    case_end();
}

static void case_moe(zt_dtype dt, int64_t N, int64_t E, int64_t k, int64_t C, int normalize) {
    if (!case_begin("moe", dt, "N %lld E %lld k %lld C %lld%s", (long long)N, (long long)E, (long long)k, (long long)C,
                    normalize ? " normalized" : ""))
        return;
    int64_t n = N * k;
    pair logits = prand(dt, zt_shape2(N, E), -4, 4), probs = pnew(ZT_F32, zt_shape2(N, E));
    pair idx = pnew(ZT_I32, zt_shape2(N, k)), weight = pnew(ZT_F32, zt_shape2(N, k));
    BOTH zt_moe_route_forward(sd[i].s, idx.t[i], weight.t[i], probs.t[i], logits.t[i], normalize);
    check("idx", idx, TOL_EXACT);
    check("probs", probs, TOL_F32);
    check("weight", weight, TOL_F32);
    pair dweight = prand(ZT_F32, zt_shape2(N, k), -1, 1), dlogits = prand(dt, zt_shape2(N, E), -1, 1);
    BOTH zt_moe_route_backward(sd[i].s, dlogits.t[i], dweight.t[i], probs.t[i], idx.t[i], normalize);
    check("dlogits +=", dlogits, tol_of(dt, TOL_F32_SUM));
    pair dsums = prand(ZT_F32, zt_shape1(E), -1, 1), sums = pnew(ZT_F32, zt_shape1(E));
    BOTH zt_moe_balance_backward(sd[i].s, dlogits.t[i], probs.t[i], dsums.t[i]);
    check("dlogits += (balance)", dlogits, tol_of(dt, TOL_F32_SUM));
    BOTH zt_fill(sd[i].s, sums.t[i], 0.0f);
    BOTH zt_sum_rows(sd[i].s, sums.t[i], probs.t[i]);
    check("probability sums", sums, TOL_F32_SUM);
    pair order = pnew(ZT_I32, zt_shape1(n)), where = pnew(ZT_I32, zt_shape1(n)), counts = pnew(ZT_I32, zt_shape1(E));
    BOTH zt_moe_sort(sd[i].s, order.t[i], where.t[i], counts.t[i], idx.t[i]);
    check("order", order, TOL_EXACT);
    check("where", where, TOL_EXACT);
    check("counts", counts, TOL_EXACT);
    pair x = prand(dt, zt_shape2(N, C), -1, 1), xs = pnew(dt, zt_shape2(n, C));
    BOTH zt_moe_gather_forward(sd[i].s, xs.t[i], x.t[i], order.t[i]);
    check("xs", xs, TOL_EXACT);
    pair dxs = prand(dt, zt_shape2(n, C), -1, 1), dx = prand(dt, zt_shape2(N, C), -1, 1);
    BOTH zt_moe_gather_backward(sd[i].s, dx.t[i], dxs.t[i], where.t[i]);
    check("dx +=", dx, tol_of(dt, TOL_F32));
    pair ys = prand(dt, zt_shape2(n, C), -1, 1), out = pnew(dt, zt_shape2(N, C));
    BOTH zt_moe_combine_forward(sd[i].s, out.t[i], ys.t[i], weight.t[i], where.t[i]);
    check("out", out, tol_of(dt, TOL_F32));
    pair dout = prand(dt, zt_shape2(N, C), -1, 1), dys = prand(dt, zt_shape2(n, C), -1, 1);
    pair dw = prand(ZT_F32, zt_shape2(N, k), -1, 1);
    BOTH zt_moe_combine_backward(sd[i].s, dys.t[i], dw.t[i], dout.t[i], ys.t[i], weight.t[i], where.t[i]);
    check("dys +=", dys, tol_of(dt, TOL_F32));
    check("dweight +=", dw, TOL_F32_SUM);
    pair gate = prand(dt, zt_shape1(N), -4, 4), dgate = prand(dt, zt_shape1(N), -1, 1); /* Qwen2-MoE's shared expert */
    BOTH zt_gated_add_forward(sd[i].s, out.t[i], x.t[i], gate.t[i]);
    check("gated out +=", out, tol_of(dt, TOL_F32));
    BOTH zt_gated_add_backward(sd[i].s, dx.t[i], dgate.t[i], dout.t[i], x.t[i], gate.t[i]);
    check("gated dy +=", dx, tol_of(dt, TOL_F32));
    check("dgate +=", dgate, tol_of(dt, TOL_F32_SUM));
    case_end();
}

/* columns between heads (DeepSeek-V3's attention: each head's key from its part of the latent's projection and the
   rotary key all share, values padded): forward into a prefilled tensor, backward summing over the heads */
static void case_head_cols(zt_dtype dt, int64_t N, int64_t HO, int64_t DO, int64_t o0, int64_t HI, int64_t DI, int64_t i0,
                           int64_t D) {
    if (!case_begin("head_cols", dt, "out (%lld, %lld, %lld) [%lld, +%lld) from inp (%lld, %lld, %lld) [%lld, ..)",
                    (long long)N, (long long)HO, (long long)DO, (long long)o0, (long long)D, (long long)N, (long long)HI,
                    (long long)DI, (long long)i0))
        return;
    pair out = prand(dt, zt_shape3(N, HO, DO), -1, 1), inp = prand(dt, zt_shape3(N, HI, DI), -1, 1);
    BOTH zt_head_cols_forward(sd[i].s, out.t[i], o0, inp.t[i], i0, D);
    check("out", out, TOL_EXACT);
    pair dout = prand(dt, zt_shape3(N, HO, DO), -1, 1), dinp = prand(dt, zt_shape3(N, HI, DI), -1, 1);
    BOTH zt_head_cols_backward(sd[i].s, dinp.t[i], i0, dout.t[i], o0, D);
    check("dinp +=", dinp, TOL_EXACT); /* the same sums in the same order */
    case_end();
}

static void case_crossentropy(zt_dtype dt, int64_t N, int64_t Vp, int64_t vocab, float cap, float smoothing) {
    if (!case_begin("crossentropy", dt, "N %lld Vp %lld vocab %lld, 2 rows ignored%s%s", (long long)N, (long long)Vp,
                    (long long)vocab, cap > 0 ? ", logits capped" : "", smoothing > 0 ? ", labels smoothed" : ""))
        return;
    float *lg = (float *)xmalloc(sizeof(float) * (size_t)(N * Vp));
    int32_t *tg = (int32_t *)xmalloc(sizeof(int32_t) * N);
    for (int64_t n = 0; n < N; n++) {
        for (int64_t c = 0; c < Vp; c++) lg[n * Vp + c] = c < vocab ? rng_range(-4, 4) + (n == 5 ? 60 : 0) : 30;
        tg[n] = (int32_t)(rng_next() % (uint64_t)vocab);
    }
    tg[0] = 0, tg[1] = (int32_t)vocab - 1, tg[3] = tg[N - 2] = IGNORE;
    float dloss = 1.0f / (float)(N - 2);
    pair logits = pnew(dt, zt_shape2(N, Vp)), targets = pids(zt_shape1(N), tg);
    pset(logits, lg, ZT_F32);
    pair losses = prand(ZT_F32, zt_shape1(N), 5, 9), losses2 = pnew(ZT_F32, zt_shape1(N));
    pair losses3 = pnew(ZT_F32, zt_shape1(N));
    pair dl = prand(dt, zt_shape2(N, Vp), -1, 1), alias = pnew(dt, zt_shape2(N, Vp));
    pset(alias, lg, ZT_F32);
    zt_loss_params p = {vocab, IGNORE, dloss, cap, smoothing, 0.0f, NULL, NULL};
    BOTH {
        zt_crossentropy_with(sd[i].s, losses.t[i], NULL, logits.t[i], targets.t[i], p);
        zt_crossentropy_with(sd[i].s, losses2.t[i], &dl.t[i], logits.t[i], targets.t[i], p);
        zt_crossentropy_with(sd[i].s, losses3.t[i], &alias.t[i], alias.t[i], targets.t[i], p);
    }
    check("losses (f32), no dlogits", losses, TOL_F32_SUM);
    check("losses (f32)", losses2, TOL_F32_SUM);
    check("dlogits (written)", dl, tol_of(dt, TOL_F32_SUM));
    check_each("dlogits, element by element", dl, dt);
    check("logits unchanged", logits, TOL_EXACT);
    check("losses (f32), dlogits aliasing logits", losses3, TOL_F32_SUM);
    check("dlogits aliasing logits", alias, tol_of(dt, TOL_F32_SUM));
    check_each("dlogits aliasing logits, element by element", alias, dt);
    free(lg), free(tg);
    case_end();
}

/* the output layer and the loss in chunks of R rows (the last one partial); the engine's dtypes: logits_buf and
   dweight f32 whatever the activations are */
static void case_output_loss(zt_dtype dt) {
    const int64_t N = 128, C = 768, Vp = 50304, vocab = 50257, R = 50;
    if (!case_begin("output_loss", dt, "hidden (%lld, %lld) weight (%lld, %lld) vocab %lld, logits_buf f32 (%lld, "
                    "%lld)", (long long)N, (long long)C, (long long)Vp, (long long)C, (long long)vocab, (long long)R,
                    (long long)Vp))
        return;
    int32_t *tg = (int32_t *)xmalloc(sizeof(int32_t) * N);
    for (int64_t n = 0; n < N; n++) tg[n] = (int32_t)(rng_next() % (uint64_t)vocab);
    tg[7] = tg[N - 1] = IGNORE;
    float dloss = 1.0f / (float)(N - 2);
    pair targets = pids(zt_shape1(N), tg), hidden = prand(dt, zt_shape2(N, C), -1, 1);
    pair w = prand(dt, zt_shape2(Vp, C), -0.1f, 0.1f), buf = pnew(ZT_F32, zt_shape2(R, Vp));
    pair losses_fwd = pnew(ZT_F32, zt_shape1(N)), losses = pnew(ZT_F32, zt_shape1(N));
    /* dh starts at about the gradient's size (dloss x |weight| <= 1e-3), so a wrong gradient shows */
    pair dh = prand(dt, zt_shape2(N, C), -1e-3f, 1e-3f), dw = prand(ZT_F32, zt_shape2(Vp, C), -0.05f, 0.05f);
    BOTH {
        zt_output_loss(sd[i].s, losses_fwd.t[i], NULL, NULL, hidden.t[i], w.t[i], targets.t[i], buf.t[i], vocab, IGNORE,
                       dloss);
        zt_output_loss(sd[i].s, losses.t[i], &dh.t[i], &dw.t[i], hidden.t[i], w.t[i], targets.t[i], buf.t[i], vocab,
                       IGNORE, dloss);
    }
    check("losses (f32), forward only", losses_fwd, TOL_F32_SUM);
    check("losses (f32)", losses, TOL_F32_SUM);
    check("dhidden +=", dh, tol_of(dt, TOL_F32_SUM));
    check("dweight (f32) +=", dw, TOL_F32_SUM);
    /* a bias on the logits (Phi's lm_head.bias; f32, as the engine casts it for cuBLASLt's bias epilogue) */
    pair bias = prand(ZT_F32, zt_shape1(Vp), -1, 1), db = prand(ZT_F32, zt_shape1(Vp), -0.05f, 0.05f);
    pair losses_b = pnew(ZT_F32, zt_shape1(N));
    BOTH {
        zt_loss_params p = {vocab, IGNORE, dloss, 0.0f, 0.0f, 0.0f, &bias.t[i], &db.t[i]};
        zt_output_loss_with(sd[i].s, losses_b.t[i], &dh.t[i], &dw.t[i], hidden.t[i], w.t[i], targets.t[i], buf.t[i], p);
    }
    check("losses with a bias (f32)", losses_b, TOL_F32_SUM);
    check("dbias (f32) +=", db, TOL_F32_SUM);
    free(tg);
    case_end();
}

/* ---- the optimizer and the gradient norm ------------------------------------------------------ */

/* four steps (1, 2, 3 and 1000) from the same state on both sides, each with new gradients; the same bits. AdamW
   (with l2 or decoupled decay, with or without a 16-bit copy) and its two moments; Lion and Adagrad one state array
   (v unused), and Lion's exact zeros (a moment and gradient of 0 at element 0) take the select's 0 on both */
static void case_optim(zt_optimizer kind, zt_dtype gd, int l2, int with16) {
    const int64_t n = (4 << 20) + 7;
    int adamw = kind == ZT_OPTIM_ADAMW;
    const char *name = adamw ? "adamw" : kind == ZT_OPTIM_LION ? "lion" : "adagrad";
    if (!case_begin(name, gd, "n %lld, grads %s, param16 %s, %s, steps 1 2 3 1000", (long long)n, zt_dtype_name(gd),
                    with16 ? "bf16" : "none", !adamw ? "weight decay 0.1" : l2 ? "l2" : "decoupled decay"))
        return;
    zt_optim_params p = zt_optim_defaults(kind);
    if (adamw) p.lr = 1e-3f, p.beta1 = 0.9f, p.beta2 = 0.95f, p.eps = 1e-8f;
    p.weight_decay = 0.1f, p.grad_scale = 0.5f, p.l2 = l2, p.lr_decay = 0.01f;
    pair master = prand(ZT_F32, zt_shape1(n), -1, 1), p16 = pnew(ZT_BF16, zt_shape1(n));
    pair m = adamw ? prand(ZT_F32, zt_shape1(n), -0.1f, 0.1f) : prand(ZT_F32, zt_shape1(n), 0, 0.01f);
    pair v = adamw ? prand(ZT_F32, zt_shape1(n), 0, 0.01f) : pnew(ZT_F32, zt_shape1(1)); /* unused but AdamW's */
    static const int64_t steps[4] = {1, 2, 3, 1000};
    for (int k = 0; k < 4; k++) {
        p.step = steps[k];
        pair g = prand(gd, zt_shape1(n), -0.1f, 0.1f);
        if (k == 0 && !adamw) { /* a static zero: the copies are stream-ordered, and read it after this block */
            static float zero = 0.0f;
            BOTH zt_copy(sd[i].s, zt_view(m.t[i], 0, zt_shape1(1)), zt_tensor_make(&zero, ZT_F32, ZT_HOST, zt_shape1(1)));
            if (gd == ZT_F32) BOTH zt_copy(sd[i].s, zt_view(g.t[i], 0, zt_shape1(1)), zt_tensor_make(&zero, ZT_F32, ZT_HOST, zt_shape1(1)));
            BOTH zt_stream_sync(sd[i].s);
        }
        BOTH zt_optim_step(sd[i].s, master.t[i], m.t[i], v.t[i], g.t[i], with16 ? &p16.t[i] : NULL, p);
        char out[48];
        snprintf(out, sizeof out, "step %lld: master", (long long)p.step);
        check(out, master, TOL_EXACT);
        snprintf(out, sizeof out, "step %lld: %s", (long long)p.step, adamw ? "m" : "state");
        check(out, m, TOL_EXACT);
        if (adamw) {
            snprintf(out, sizeof out, "step %lld: v", (long long)p.step);
            check(out, v, TOL_EXACT);
        }
        if (with16) {
            snprintf(out, sizeof out, "step %lld: param16", (long long)p.step);
            check(out, p16, TOL_EXACT);
        }
    }
    case_end();
}

static void case_sumsq(zt_dtype dt, int64_t n) {
    if (!case_begin("sumsq", dt, "n %lld", (long long)n)) return;
    pair x = prand(dt, zt_shape1(n), -2, 2), out = pfill(ZT_F32, zt_shape1(1), 123.0f);
    BOTH zt_sumsq(sd[i].s, out.t[i], x.t[i]);
    check("out (f32, written)", out, TOL_SUMSQ);
    case_end();
}

/* ---- main ------------------------------------------------------------------------------------- */

int main(int argc, char **argv) {
    const char *name = "cuda";
    if (argc > 2 && strcmp(argv[1], "--backend") == 0) name = argv[2], argc -= 2, argv += 2;
    cur.argc = argc - 1, cur.argv = argv + 1;
    zt_backend_desc desc = zt_backend_desc_default();
    desc.device_bytes = (size_t)1 << 30;
    BOTH {
        const char *n = i ? name : "cpu";
        if (zt_backend_create(&sd[i].be, n, &desc) != ZT_OK) {
            fprintf(stderr, "gpu_ops: cannot create the %s backend: %s\n", n, zt_last_error());
            return 2;
        }
        sd[i].dev = zt_backend_device_arena(sd[i].be);
        sd[i].s = zt_backend_stream(sd[i].be);
    }
    zt_set_fatal_handler(on_fatal, NULL);
    uint64_t t0 = zt_time_ns();

    static const zt_dtype floats[3] = {ZT_F32, ZT_BF16, ZT_F16};
    for (int a = 0; a < 3; a++) {
        case_copy(floats[a]);
        for (int b = 0; b < 3; b++) case_cast(floats[a], floats[b]);
        case_fill_scale_add(floats[a]);
    }
    case_ids_copy();
    for (int a = 0; a < 3; a++) {
        zt_dtype dt = floats[a];
        for (int t = 0; t < 4; t++) case_gemm(dt, 320, 288, 1000, t & 1, t >> 1, 0.5f, 1.0f, 1);
        case_gemm(dt, 2048, 3072, 768, 0, 1, 1.0f, 0.0f, 1);
        if (dt == ZT_F16) continue;
        case_gemm(dt, 512, 512, 4096, 0, 0, 1.0f, 1.0f, 0);
        case_gemm_batched(dt, 12, 0, 0);
        case_gemm_batched(dt, 12, 1, 1);
        case_sum_rows(dt);
    }
    case_matmul(ZT_F32, ZT_F32, 0);
    case_matmul(ZT_BF16, ZT_F32, 0);
    case_matmul(ZT_BF16, ZT_BF16, 0);
    case_matmul(ZT_BF16, ZT_F32, 1);
    case_matmul(ZT_F16, ZT_F32, 0);
    case_embedding(ZT_F32, ZT_F32);
    case_embedding(ZT_BF16, ZT_F32);
    case_embedding(ZT_BF16, ZT_BF16);
    for (int a = 0; a < 3; a++) {
        zt_dtype dt = floats[a];
        case_norm(0, dt, 1024, 4096, 0);
        case_norm(1, dt, 1024, 4096, 0);
        case_norm(2, dt, 1024, 2304, 0); /* Gemma 2 2B */
        case_norm(-1, dt, 1024, 4096, 0); /* Cohere */
        case_norm_heads(0, dt, 1024, 96, 128); /* Command R+'s q norm */
        case_norm_heads(1, dt, 1024, 8, 128);
        if (dt == ZT_F16) continue;
        case_norm(0, dt, 4096, 768, 1);
        case_norm(1, dt, 4096, 768, 1);
        case_pointwise(dt);
        case_rope(dt, 3, 512, 32, 128, 500000.0f, 1);
        case_rope(dt, 3, 384, 12, 64, 10000.0f, 0);
        case_rope(dt, 3, 384, 28, 128, 1000000.0f, 2);
        case_rope(dt, 3, 384, 24, 128, 10000.0f, 3);
        case_rope(dt, 3, 384, 32, 128, 10000.0f, 4);
    }
    case_pointwise(ZT_F16);
    for (int a = 0; a < 2; a++) {
        zt_dtype dt = floats[a];
        case_attention(dt, 1, 512, 32, 8, 128, 0);
        case_attention(dt, 2, 500, 32, 8, 128, 1);
        case_attention(dt, 2, 512, 12, 12, 64, 0);
        case_attention(dt, 1, 300, 12, 12, 64, 1);
        case_attention(dt, 1, 333, 32, 8, 80, 1);
        case_attention(dt, 2, 256, 12, 12, 80, 0);
    }
    case_attention(ZT_F16, 2, 512, 12, 12, 64, 1);
    /* Gemma: heads of 256 (the simt kernels); Gemma 2 2B and 27B: their scales, scores capped at 50 and at 5
       (where the cap bends most scores) */
    case_attention(ZT_BF16, 1, 512, 8, 1, 256, 1);
    case_attention_ex(ZT_BF16, 1, 512, 8, 4, 256, 1, 1.0f / 16, 50.0f, 0);
    case_attention_ex(ZT_BF16, 2, 300, 16, 8, 128, 0, 1.0f / 12, 5.0f, 0);
    case_attention_ex(ZT_F32, 1, 200, 4, 2, 64, 1, 0.2f, 5.0f, 0);
    /* sliding windows (Mistral, Gemma 2): windows of 100 and 37 keys across 64-key tiles, tensor cores and simt */
    case_attention_ex(ZT_BF16, 2, 500, 32, 8, 128, 1, 0.0f, 0.0f, 100);
    case_attention_ex(ZT_BF16, 1, 512, 8, 4, 256, 0, 1.0f / 16, 50.0f, 37);
    case_attention_ex(ZT_F32, 1, 300, 12, 12, 64, 0, 0.0f, 0.0f, 37);
    /* attention dropout (GPT-2's 0.1, and more): tensor cores (GPT-2's heads of 64, LLaMA's 128 with grouped heads
       and documents) and simt (f32, and heads of 256 with a cap and a window) */
    case_attention_drop(ZT_BF16, 2, 512, 12, 12, 64, 0, 0.0f, 0.0f, 0, 0.1f);
    case_attention_drop(ZT_F16, 2, 500, 32, 8, 128, 1, 0.0f, 0.0f, 0, 0.3f);
    case_attention_drop(ZT_F32, 1, 300, 12, 12, 64, 1, 0.0f, 0.0f, 0, 0.1f);
    case_attention_drop(ZT_BF16, 1, 512, 8, 4, 256, 1, 1.0f / 16, 50.0f, 37, 0.2f);
    case_attention_drop(ZT_BF16, 2, 500, 32, 8, 128, 1, 0.0f, 0.0f, 100, 0.1f); /* Mistral's window, tensor cores */
    case_moe(ZT_BF16, 4096, 8, 2, 4096, 1);  /* Mixtral 8x7B */
    case_moe(ZT_BF16, 2048, 128, 8, 2048, 1); /* Qwen3-30B-A3B */
    case_moe(ZT_F32, 1000, 60, 4, 1000, 0);   /* Qwen1.5-MoE's 60 experts, unnormalized */
    case_moe_grouped(1, ZT_BF16, 2048, 256, 8, 8, 4); /* DeepSeek-V3's routing: 8 of 256 in 4 of 8 groups */
    case_moe_grouped(1, ZT_F32, 1000, 128, 8, 1, 1);  /* GLM-4.5's: one group */
    case_moe_grouped(0, ZT_BF16, 2048, 160, 6, 8, 3); /* DeepSeek-V2's: 6 of 160 in 3 of 8 groups by their best */
    case_head_cols(ZT_BF16, 1024, 128, 192, 0, 128, 256, 0, 128);  /* DeepSeek-V3: keys' nope part from kv_b_proj's */
    case_head_cols(ZT_BF16, 1024, 128, 192, 128, 1, 64, 0, 64);    /* ... the rotary key every head shares */
    case_head_cols(ZT_F32, 1000, 16, 24, 0, 16, 40, 16, 24);       /* values, padded */
    case_attention_ex(ZT_BF16, 1, 512, 16, 16, 192, 1, 0.0f, 0.0f, 0); /* its heads of 192 (simt), documents */
    /* gpt-oss's sinks: its heads (64 of 64, 8 kv heads) with its window of 128 on tensor cores, and simt (f32) */
    case_attention_sinks(ZT_BF16, 2, 512, 64, 8, 64, 1, 0.0f, 0.0f, 128, 0.0f, 1);
    case_attention_sinks(ZT_BF16, 1, 500, 64, 8, 64, 0, 0.0f, 0.0f, 0, 0.0f, 1);
    case_attention_sinks(ZT_F32, 1, 300, 16, 8, 64, 1, 0.0f, 0.0f, 37, 0.0f, 1);
    for (int a = 0; a < 3; a++) case_crossentropy(floats[a], 32, 50304, 50257, 0.0f, 0.0f);
    case_crossentropy(ZT_F32, 16, 128256, 128256, 0.0f, 0.0f);
    case_crossentropy(ZT_BF16, 16, 128256, 128256, 0.0f, 0.0f);
    case_crossentropy(ZT_BF16, 16, 256000, 256000, 30.0f, 0.0f); /* Gemma 2 */
    case_crossentropy(ZT_F32, 16, 50304, 50257, 0.0f, 0.1f);     /* --label_smoothing_factor */
    case_crossentropy(ZT_BF16, 16, 256000, 256000, 30.0f, 0.1f);
    case_output_loss(ZT_F32);
    case_output_loss(ZT_BF16);
    case_optim(ZT_OPTIM_ADAMW, ZT_F32, 0, 1);
    case_optim(ZT_OPTIM_ADAMW, ZT_BF16, 0, 1);
    case_optim(ZT_OPTIM_ADAMW, ZT_F32, 1, 1);
    case_optim(ZT_OPTIM_ADAMW, ZT_F32, 0, 0);
    for (int kind = ZT_OPTIM_LION; kind <= ZT_OPTIM_ADAGRAD; kind++)
        for (int a = 0; a < 2; a++) case_optim((zt_optimizer)kind, floats[a], 0, 1);
    static const int64_t sumsq_n[3] = {1, 4099, 10000019};
    for (int a = 0; a < 2; a++)
        for (int k = 0; k < 3; k++) case_sumsq(floats[a], sumsq_n[k]);

    BOTH zt_backend_destroy(sd[i].be);
    fprintf(stderr, "gpu_ops: %s against cpu in %.1f s\n%d passed, %d failed\n", name,
            (double)(zt_time_ns() - t0) / 1e9, cur.passed, cur.failed);
    return cur.failed ? 1 : 0;
}
