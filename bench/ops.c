/* bench/ops.c - how close zt_gemm on the CPU backend comes to this machine's fp32 FMA peak.

   The anchor: independent FMA chains in registers on every core (AVX-512 or AVX2+FMA intrinsics when
   the compiler targets them, fmaf otherwise). Then zt_gemm at the shapes of a GPT-2 small MLP layer
   with 4096 tokens: the forward product, the two backward products, and a 768x768 projection, with
   f32 and with bf16 tensors. Each result is one JSON line. Goal: forward f32 >= 50% of the peak. */
#include "../zt.h"
#include <pthread.h>
#include <stdio.h>
#include <math.h>
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#  include <immintrin.h>
#endif

/* ---- peak: 12 independent accumulators, enough to cover FMA latency on two FMA ports ---------- */

#define PEAK_ITERS 200000000LL /* per thread, each iteration 12 FMAs of one vector */
#if defined(__AVX512F__)
#  define PEAK_ISA "avx512"
#  define PEAK_LANES 16
typedef __m512 vec;
#  define VSET(x) _mm512_set1_ps(x)
#  define VFMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#  define VSUM(v) _mm512_reduce_add_ps(v)
#elif defined(__AVX2__) && defined(__FMA__)
#  define PEAK_ISA "avx2"
#  define PEAK_LANES 8
typedef __m256 vec;
#  define VSET(x) _mm256_set1_ps(x)
#  define VFMA(a, b, c) _mm256_fmadd_ps(a, b, c)
static float VSUM(__m256 v) {
    float f[8];
    _mm256_storeu_ps(f, v);
    return f[0] + f[1] + f[2] + f[3] + f[4] + f[5] + f[6] + f[7];
}
#else
#  define PEAK_ISA "scalar"
#  define PEAK_LANES 1
typedef float vec;
#  define VSET(x) (x)
#  define VFMA(a, b, c) fmaf(a, b, c)
#  define VSUM(v) (v)
#endif

static volatile float peak_sink[256]; /* keeps the chains from being optimised away */

static void *peak_thread(void *arg) {
    int id = (int)(intptr_t)arg;
    vec m = VSET(0.999999f), c = VSET(1e-7f);
    vec a0 = VSET(0.1f), a1 = VSET(0.2f), a2 = VSET(0.3f), a3 = VSET(0.4f), a4 = VSET(0.5f),
        a5 = VSET(0.6f), a6 = VSET(0.7f), a7 = VSET(0.8f), a8 = VSET(0.9f), a9 = VSET(1.0f),
        a10 = VSET(1.1f), a11 = VSET(1.2f);
    for (long long i = 0; i < PEAK_ITERS; i++) {
        a0 = VFMA(a0, m, c), a1 = VFMA(a1, m, c), a2 = VFMA(a2, m, c), a3 = VFMA(a3, m, c);
        a4 = VFMA(a4, m, c), a5 = VFMA(a5, m, c), a6 = VFMA(a6, m, c), a7 = VFMA(a7, m, c);
        a8 = VFMA(a8, m, c), a9 = VFMA(a9, m, c), a10 = VFMA(a10, m, c), a11 = VFMA(a11, m, c);
    }
    peak_sink[id % 256] = VSUM(a0) + VSUM(a1) + VSUM(a2) + VSUM(a3) + VSUM(a4) + VSUM(a5) + VSUM(a6) +
                          VSUM(a7) + VSUM(a8) + VSUM(a9) + VSUM(a10) + VSUM(a11);
    return NULL;
}

/* GFLOP/s of all cores running peak_thread at once */
static double measure_peak(int threads) {
    pthread_t tid[256];
    if (threads > 256) threads = 256;
    uint64_t t0 = zt_time_ns();
    for (int i = 0; i < threads; i++) pthread_create(&tid[i], NULL, peak_thread, (void *)(intptr_t)i);
    for (int i = 0; i < threads; i++) pthread_join(tid[i], NULL);
    double sec = (double)(zt_time_ns() - t0) / 1e9;
    double flops = 2.0 * 12 * PEAK_LANES * (double)PEAK_ITERS * threads;
    return flops / sec / 1e9;
}

/* ---- zt_gemm ---------------------------------------------------------------------------------- */

typedef struct gemm_case {
    const char *op;
    int64_t M, N, K;
    int trans_a, trans_b;
    float beta; /* backward products accumulate */
} gemm_case;

static void bench_gemm(zt_backend *be, gemm_case g, zt_dtype dt, double peak) {
    zt_arena dev = *zt_backend_device_arena(be); /* scratch: freed on return */
    zt_stream *s = zt_backend_stream(be);
    zt_shape sa = g.trans_a ? zt_shape2(g.K, g.M) : zt_shape2(g.M, g.K);
    zt_shape sb = g.trans_b ? zt_shape2(g.N, g.K) : zt_shape2(g.K, g.N);
    zt_tensor a = zt_tensor_new(&dev, dt, ZT_DEVICE, sa);
    zt_tensor b = zt_tensor_new(&dev, dt, ZT_DEVICE, sb);
    zt_tensor c = zt_tensor_new(&dev, dt, ZT_DEVICE, zt_shape2(g.M, g.N));
    zt_fill(s, a, 0.01f);
    zt_fill(s, b, 0.02f);
    zt_fill(s, c, 0.0f);

    zt_stream_sync(s);
    uint64_t t0 = zt_time_ns();
    zt_gemm(s, c, a, b, g.trans_a, g.trans_b, 1.0f, g.beta, NULL); /* warm-up */
    zt_stream_sync(s);
    double warm = (double)(zt_time_ns() - t0) / 1e9;
    int iters = warm > 0 ? (int)(1.5 / warm) : 10; /* about 1.5 s of timed work */
    iters = iters < 3 ? 3 : iters > 50 ? 50 : iters;

    t0 = zt_time_ns();
    for (int i = 0; i < iters; i++) zt_gemm(s, c, a, b, g.trans_a, g.trans_b, 1.0f, g.beta, NULL);
    zt_stream_sync(s);
    double sec = (double)(zt_time_ns() - t0) / 1e9 / iters;
    double gflops = 2.0 * (double)g.M * (double)g.N * (double)g.K / sec / 1e9;
    printf("{\"bench\":\"gemm\",\"op\":\"%s\",\"M\":%lld,\"N\":%lld,\"K\":%lld,\"dtype\":\"%s\","
           "\"ms\":%.3f,\"iters\":%d,\"gflops\":%.1f,\"peak_gflops\":%.1f,\"ratio\":%.3f}\n",
           g.op, (long long)g.M, (long long)g.N, (long long)g.K, zt_dtype_name(dt), sec * 1e3, iters,
           gflops, peak, gflops / peak);
    fflush(stdout);
}

int main(void) {
    int threads = zt_cpu_count();
    double peak = 0; /* the best of 3 after a warm-up: a peak is what the cores can do undisturbed */
    measure_peak(threads);
    for (int i = 0; i < 3; i++) {
        double p = measure_peak(threads);
        peak = p > peak ? p : peak;
    }
    printf("{\"bench\":\"fma_peak\",\"isa\":\"%s\",\"threads\":%d,\"gflops\":%.1f}\n", PEAK_ISA, threads,
           peak);
    fflush(stdout);

    zt_backend *be = NULL;
    zt_backend_desc desc = zt_backend_desc_default();
    desc.device_bytes = (size_t)256 << 20;
    if (zt_backend_create(&be, "cpu", &desc) != ZT_OK) { fprintf(stderr, "%s\n", zt_last_error()); return 1; }
    /* Tokens T = 4096, model width 768, MLP width 3072: out (T,3072) = inp (T,768) @ W (3072,768)^T,
       dinp (T,768) += dout (T,3072) @ W, dW (3072,768) += dout^T @ inp; and a (768,768) projection. */
    const gemm_case cases[] = {
        {"forward", 4096, 3072, 768, 0, 1, 0.0f},
        {"backward_dinp", 4096, 768, 3072, 0, 0, 1.0f},
        {"backward_dweight", 3072, 768, 4096, 1, 0, 1.0f},
        {"forward", 4096, 768, 768, 0, 1, 0.0f},
    };
    const zt_dtype dtypes[] = {ZT_F32, ZT_BF16};
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) bench_gemm(be, cases[i], dtypes[d], peak);
    zt_backend_destroy(be);
    return 0;
}
