/* bench/peak.h - this machine's fp32 FMA peak on every core, the anchor of the CPU benchmarks.
   Twelve independent FMA chains per thread (enough to cover the FMA latency on two ports), with the
   widest vectors the compiler targets. Returns GFLOP/s (an FMA counts as two). */
#ifndef ZT_BENCH_PEAK_H
#define ZT_BENCH_PEAK_H
#include "../zt.h"
#include <pthread.h>
#include <math.h>
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#  include <immintrin.h>
#endif

#define PEAK_ITERS 100000000LL /* per thread; each iteration is 12 vector FMAs */
#if defined(__AVX512F__)
#  define PEAK_ISA "avx512"
#  define PEAK_LANES 16
typedef __m512 peak_vec;
#  define PEAK_SET(x) _mm512_set1_ps(x)
#  define PEAK_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#  define PEAK_SUM(v) _mm512_reduce_add_ps(v)
#elif defined(__AVX2__) && defined(__FMA__)
#  define PEAK_ISA "avx2"
#  define PEAK_LANES 8
typedef __m256 peak_vec;
#  define PEAK_SET(x) _mm256_set1_ps(x)
#  define PEAK_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
static float PEAK_SUM(__m256 v) {
    float f[8];
    _mm256_storeu_ps(f, v);
    return f[0] + f[1] + f[2] + f[3] + f[4] + f[5] + f[6] + f[7];
}
#else
#  define PEAK_ISA "scalar"
#  define PEAK_LANES 1
typedef float peak_vec;
#  define PEAK_SET(x) (x)
#  define PEAK_FMA(a, b, c) fmaf(a, b, c)
#  define PEAK_SUM(v) (v)
#endif

static volatile float peak_sink[256]; /* keeps the chains from being optimised away */

static void *peak_thread(void *arg) {
    int id = (int)(intptr_t)arg;
    peak_vec m = PEAK_SET(0.999999f), c = PEAK_SET(1e-7f);
    peak_vec a0 = PEAK_SET(0.1f), a1 = PEAK_SET(0.2f), a2 = PEAK_SET(0.3f), a3 = PEAK_SET(0.4f),
             a4 = PEAK_SET(0.5f), a5 = PEAK_SET(0.6f), a6 = PEAK_SET(0.7f), a7 = PEAK_SET(0.8f),
             a8 = PEAK_SET(0.9f), a9 = PEAK_SET(1.0f), a10 = PEAK_SET(1.1f), a11 = PEAK_SET(1.2f);
    for (long long i = 0; i < PEAK_ITERS; i++) {
        a0 = PEAK_FMA(a0, m, c), a1 = PEAK_FMA(a1, m, c), a2 = PEAK_FMA(a2, m, c), a3 = PEAK_FMA(a3, m, c);
        a4 = PEAK_FMA(a4, m, c), a5 = PEAK_FMA(a5, m, c), a6 = PEAK_FMA(a6, m, c), a7 = PEAK_FMA(a7, m, c);
        a8 = PEAK_FMA(a8, m, c), a9 = PEAK_FMA(a9, m, c), a10 = PEAK_FMA(a10, m, c), a11 = PEAK_FMA(a11, m, c);
    }
    peak_sink[id % 256] = PEAK_SUM(a0) + PEAK_SUM(a1) + PEAK_SUM(a2) + PEAK_SUM(a3) + PEAK_SUM(a4) +
                          PEAK_SUM(a5) + PEAK_SUM(a6) + PEAK_SUM(a7) + PEAK_SUM(a8) + PEAK_SUM(a9) +
                          PEAK_SUM(a10) + PEAK_SUM(a11);
    return NULL;
}

/* GFLOP/s of `threads` threads running peak_thread at once, once */
static double measure_peak_once(int threads) {
    pthread_t tid[256];
    if (threads > 256) threads = 256;
    uint64_t t0 = zt_time_ns();
    for (int i = 0; i < threads; i++) pthread_create(&tid[i], NULL, peak_thread, (void *)(intptr_t)i);
    for (int i = 0; i < threads; i++) pthread_join(tid[i], NULL);
    double sec = (double)(zt_time_ns() - t0) / 1e9;
    return 2.0 * 12 * PEAK_LANES * (double)PEAK_ITERS * threads / sec / 1e9;
}
/* the best of three runs after a warm-up: other work on the machine only ever lowers a run */
static double measure_peak(int threads) {
    double best = 0;
    measure_peak_once(threads);
    for (int i = 0; i < 3; i++) {
        double g = measure_peak_once(threads);
        best = g > best ? g : best;
    }
    return best;
}
#endif
