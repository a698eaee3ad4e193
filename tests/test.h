/* tests/test.h - the test runner's registry and checks.
   Each test file includes this and defines tests with TEST(name) { ... }. Every test is linked into one
   runner (tests/main.c) against the implementation compiled once (tests/zt_impl.c). A failed CHECK
   records the failure and returns from the test; other tests still run. */
#ifndef ZT_TEST_H
#define ZT_TEST_H
#include "../zt.h"
#include <math.h>
#include <string.h>
#include <stdlib.h>
#include <stdio.h>

typedef void (*zt_test_fn)(void);
void zt_test_register(const char *name, const char *file, zt_test_fn fn);
void zt_test_fail(const char *file, int line, const char *fmt, ...) ZT_PRINTF(3, 4);
int zt_test_failed(void); /* has the running test failed? */
int zt_test_free_port(void); /* a TCP port of 127.0.0.1 nothing listens at now */

#define TEST(name)                                                                 \
    static void test_##name(void);                                                 \
    __attribute__((constructor)) static void test_register_##name(void) {          \
        zt_test_register(#name, __FILE__, test_##name);                            \
    }                                                                              \
    static void test_##name(void)

#define CHECK(c)                                                                   \
    do {                                                                           \
        if (!(c)) { zt_test_fail(__FILE__, __LINE__, "CHECK(%s)", #c); return; }  \
    } while (0)
#define CHECK_MSG(c, ...)                                                          \
    do {                                                                           \
        if (!(c)) { zt_test_fail(__FILE__, __LINE__, __VA_ARGS__); return; }       \
    } while (0)
#define CHECK_EQ_INT(a, b)                                                         \
    do {                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                        \
        if (a_ != b_) {                                                            \
            zt_test_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, a_, b_); \
            return;                                                                \
        }                                                                          \
    } while (0)
#define CHECK_NEAR(a, b, tol)                                                      \
    do {                                                                           \
        double a_ = (double)(a), b_ = (double)(b);                                 \
        if (!(fabs(a_ - b_) <= (tol))) {                                           \
            zt_test_fail(__FILE__, __LINE__, "%s ~ %s: %.9g vs %.9g (tol %g)", #a, #b, a_, b_, \
                         (double)(tol));                                           \
            return;                                                                \
        }                                                                          \
    } while (0)
#define CHECK_STR_CONTAINS(hay, needle)                                            \
    do {                                                                           \
        const char *h_ = (hay), *n_ = (needle);                                    \
        if (!h_ || !strstr(h_, n_)) {                                              \
            zt_test_fail(__FILE__, __LINE__, "\"%s\" does not contain \"%s\"", h_ ? h_ : "(null)", n_); \
            return;                                                                \
        }                                                                          \
    } while (0)

/* a whole file, NUL-terminated, malloc'd (NULL when it cannot be opened); *len its bytes when len is given */
static inline char *test_slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = (char *)malloc((size_t)n + 1);
    if (fread(b, 1, (size_t)n, f) != (size_t)n) n = 0;
    fclose(f);
    b[n] = 0;
    if (len) *len = (size_t)n;
    return b;
}

/* hex digits (up to a newline) into bytes, NUL-terminated: their count (the fixtures' "T <hex UTF-8>" lines) */
static inline size_t test_unhex(const char *h, char *out) {
    size_t n = 0;
    for (; h[0] && h[1] && h[0] != '\n'; h += 2) {
        unsigned v = 0;
        sscanf(h, "%2x", &v);
        out[n++] = (char)v;
    }
    out[n] = 0;
    return n;
}

/* the backend the engine tests run on: ZT_TEST_BACKEND (build/gpu_models_cuda sets "cuda"), else "cpu" */
static inline const char *test_backend(void) {
    const char *b = getenv("ZT_TEST_BACKEND");
    return b && *b ? b : "cpu";
}

/* every parameter of an engine, concatenated in declaration order (out NULL: only counted); with grad,
   the gradients; -1 when more than cap floats or a read fails. A collective under ZeRO with ranks. */
static inline int64_t test_read_params(zt_engine *e, float *out, int64_t cap, int grad) {
    int64_t n = 0;
    for (int i = 0; i < zt_param_count(e); i++) {
        zt_shape s;
        const char *name = zt_param_name(e, i, &s);
        if (!name) continue;
        int64_t k = 1;
        for (int d = 0; d < s.ndim; d++) k *= s.d[d];
        if (out && (n + k > cap || zt_param_get(e, name, out + n, k, grad) != ZT_OK)) return -1;
        n += k;
    }
    return n;
}

#endif
