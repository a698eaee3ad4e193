/* tests/ops_harness.h - what the op tests share (tests/test_ops.c, tests/test_threads.c): a small
   deterministic RNG, a CPU backend per test, host <-> device transfers through arrays of doubles, and
   comparisons whose failure message names the op, the tensor, the index, got and expected.
   Values go to the device rounded to the tensor's dtype, and the rounding is written back into the
   caller's array, so the double reference sees exactly what the kernel sees. */
#ifndef ZT_OPS_HARNESS_H
#define ZT_OPS_HARNESS_H
#include "test.h"
#include "ref_ops.h"

#define HARNESS static __attribute__((unused))

/* Tolerances of kernel vs double reference, as a fraction of the tensor's magnitude scale (its
   largest expected |value|): rounding error of a sum is relative to the largest terms, not to each
   element, so a per-element relative tolerance would flag harmless cancellation. */
#define TOL_F32 1e-5  /* f32 arithmetic over at most a few hundred terms: ~K * 2^-24, with margin */
#define TOL_BF16 1e-2 /* output rounded once to bf16 (2^-9 relative) on top of f32 arithmetic */
#define TOL_F16 2e-3  /* output rounded once to f16 (2^-11 relative) on top of f32 arithmetic */

/* splitmix64: a fixed seed gives the same inputs on every machine */
typedef struct rng { uint64_t s; } rng;
HARNESS uint64_t rng_next(rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
HARNESS double rng_unit(rng *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; } /* [0, 1) */
HARNESS double rng_range(rng *r, double lo, double hi) { return lo + (hi - lo) * rng_unit(r); }
HARNESS int32_t rng_int(rng *r, int64_t n) { return (int32_t)(rng_next(r) % (uint64_t)n); }

/* Host buffers of a test, freed together by bufs_free() at its end. */
#define HARNESS_MAX_BUFS 4096
static void *harness_bufs[HARNESS_MAX_BUFS];
static int harness_nbufs;
HARNESS void *buf_alloc(size_t bytes) {
    ZT_ASSERT(harness_nbufs < HARNESS_MAX_BUFS);
    void *p = calloc(1, bytes ? bytes : 1);
    ZT_ASSERT(p);
    harness_bufs[harness_nbufs++] = p;
    return p;
}
HARNESS void bufs_free(void) {
    while (harness_nbufs) free(harness_bufs[--harness_nbufs]);
}
HARNESS double *dbuf(int64_t n) { return (double *)buf_alloc(sizeof(double) * (size_t)n); }
HARNESS int32_t *ibuf(int64_t n) { return (int32_t *)buf_alloc(sizeof(int32_t) * (size_t)n); }
HARNESS double *dcopy(const double *x, int64_t n) {
    double *y = dbuf(n);
    memcpy(y, x, sizeof(double) * (size_t)n);
    return y;
}
HARNESS double *drand(rng *r, int64_t n, double lo, double hi) {
    double *x = dbuf(n);
    for (int64_t i = 0; i < n; i++) x[i] = rng_range(r, lo, hi);
    return x;
}

/* x rounded to dtype t (through f32, as the kernels see it) */
HARNESS double round_to(zt_dtype t, double x) {
    float f = (float)x;
    if (t == ZT_BF16) return ref_bf16_to_f32(ref_f32_to_bf16(f));
    if (t == ZT_F16) return ref_f16_to_f32(ref_f32_to_f16(f));
    ZT_ASSERT(t == ZT_F32);
    return f;
}
HARNESS double tol_for(zt_dtype t) { return t == ZT_BF16 ? TOL_BF16 : t == ZT_F16 ? TOL_F16 : TOL_F32; }

/* A CPU backend with its device arena and default stream. */
typedef struct cpu_dev { zt_backend *be; zt_arena *dev; zt_stream *s; } cpu_dev;

HARNESS int cpu_open_(const char *file, int line, cpu_dev *d, int threads, int strict) {
    zt_backend_desc desc = zt_backend_desc_default();
    desc.device_bytes = (size_t)64 << 20;
    desc.pinned_bytes = (size_t)1 << 20;
    desc.threads = threads;
    desc.strict = strict;
    memset(d, 0, sizeof *d);
    if (zt_backend_create(&d->be, "cpu", &desc) != ZT_OK) {
        zt_test_fail(file, line, "zt_backend_create(cpu, threads %d, strict %d): %s", threads, strict,
                     zt_last_error());
        return 0;
    }
    d->dev = zt_backend_device_arena(d->be);
    d->s = zt_backend_stream(d->be);
    return 1;
}
#define cpu_open(d, threads, strict) cpu_open_(__FILE__, __LINE__, d, threads, strict)
HARNESS void cpu_close(cpu_dev *d) {
    if (d->be) zt_backend_destroy(d->be);
    d->be = NULL;
}

HARNESS zt_tensor dev_new(cpu_dev *d, zt_dtype t, zt_shape sh) {
    return zt_tensor_new(d->dev, t, ZT_DEVICE, sh);
}

/* n doubles -> n elements of dtype t in host memory (rounding through f32) */
HARNESS void encode(void *dst, zt_dtype t, const double *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        float f = (float)x[i];
        if (t == ZT_F32) ((float *)dst)[i] = f;
        else if (t == ZT_BF16) ((uint16_t *)dst)[i] = ref_f32_to_bf16(f);
        else if (t == ZT_F16) ((uint16_t *)dst)[i] = ref_f32_to_f16(f);
        else ZT_ASSERT(!"encode: not a float dtype");
    }
}
HARNESS void decode(double *x, zt_dtype t, const void *src, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        if (t == ZT_F32) x[i] = ((const float *)src)[i];
        else if (t == ZT_BF16) x[i] = ref_bf16_to_f32(((const uint16_t *)src)[i]);
        else if (t == ZT_F16) x[i] = ref_f16_to_f32(((const uint16_t *)src)[i]);
        else if (t == ZT_I32) x[i] = ((const int32_t *)src)[i];
        else ZT_ASSERT(!"decode: unexpected dtype");
    }
}

/* Writes x (rounded to t, and x itself rounded in place) into the device tensor dst. */
HARNESS void upload(cpu_dev *d, zt_tensor dst, double *x) {
    int64_t n = zt_numel(dst);
    for (int64_t i = 0; i < n; i++) x[i] = round_to(dst.dtype, x[i]);
    void *h = malloc(zt_nbytes(dst) ? zt_nbytes(dst) : 1);
    encode(h, dst.dtype, x, n);
    zt_copy(d->s, dst, zt_tensor_make(h, dst.dtype, ZT_HOST, dst.shape));
    zt_stream_sync(d->s);
    free(h);
}
/* a new device tensor of dtype t holding x (rounded in place to t) */
HARNESS zt_tensor to_dev(cpu_dev *d, zt_dtype t, zt_shape sh, double *x) {
    zt_tensor dst = dev_new(d, t, sh);
    upload(d, dst, x);
    return dst;
}
HARNESS zt_tensor ids_to_dev(cpu_dev *d, zt_shape sh, const int32_t *ids) {
    zt_tensor dst = dev_new(d, ZT_I32, sh);
    zt_copy(d->s, dst, zt_tensor_make((void *)ids, ZT_I32, ZT_HOST, sh));
    zt_stream_sync(d->s);
    return dst;
}
/* the raw bytes of a device tensor, in a test buffer */
HARNESS void *download_raw(cpu_dev *d, zt_tensor t) {
    void *h = buf_alloc(zt_nbytes(t));
    zt_copy(d->s, zt_tensor_make(h, t.dtype, ZT_HOST, t.shape), t);
    zt_stream_sync(d->s);
    return h;
}
/* a device tensor as doubles, in a test buffer */
HARNESS double *download(cpu_dev *d, zt_tensor t) {
    double *x = dbuf(zt_numel(t));
    decode(x, t.dtype, download_raw(d, t), zt_numel(t));
    return x;
}

/* Records a failure (the test goes on, so one run reports every tensor that is off) unless
   |got - exp| <= tol * scale for every element, scale = max |exp| (1 if every exp is 0). */
HARNESS int expect_close_(const char *file, int line, const char *what, const double *got,
                          const double *exp, int64_t n, double tol) {
    double scale = 0;
    for (int64_t i = 0; i < n; i++)
        if (fabs(exp[i]) > scale) scale = fabs(exp[i]);
    if (scale == 0) scale = 1;
    int64_t bad = 0, first = -1, worst = -1;
    double worst_err = 0;
    for (int64_t i = 0; i < n; i++) {
        double err = fabs(got[i] - exp[i]);
        if (!(err <= tol * scale)) { /* NaN fails too */
            if (first < 0) first = i;
            bad++;
        }
        if (!(err <= worst_err)) worst_err = err, worst = i;
    }
    if (!bad) return 1;
    zt_test_fail(file, line,
                 "%s: %lld of %lld elements off; first [%lld] got %.9g expected %.9g; worst [%lld] got "
                 "%.9g expected %.9g (|err| %.3g, tol %.1e x scale %.4g = %.3g)",
                 what, (long long)bad, (long long)n, (long long)first, got[first], exp[first],
                 (long long)worst, got[worst], exp[worst], worst_err, tol, scale, tol * scale);
    return 0;
}
#define EXPECT_CLOSE(what, got, exp, n, tol) expect_close_(__FILE__, __LINE__, what, got, exp, n, tol)

/* Every element exactly equal (NaN equals NaN). */
HARNESS int expect_exact_(const char *file, int line, const char *what, const double *got,
                          const double *exp, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (!(got[i] == exp[i] || (isnan(got[i]) && isnan(exp[i])))) {
            zt_test_fail(file, line, "%s: [%lld] got %.9g expected exactly %.9g", what, (long long)i,
                         got[i], exp[i]);
            return 0;
        }
    return 1;
}
#define EXPECT_EXACT(what, got, exp, n) expect_exact_(__FILE__, __LINE__, what, got, exp, n)

/* Label for a failure message: a test buffer holding the formatted text. */
HARNESS const char *label(const char *fmt, ...) ZT_PRINTF(1, 2);
HARNESS const char *label(const char *fmt, ...) {
    char *s = (char *)buf_alloc(256);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s, 256, fmt, ap);
    va_end(ap);
    return s;
}

#endif
