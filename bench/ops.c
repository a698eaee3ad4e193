/* bench/ops.c - how close zt_gemm on the CPU backend comes to this machine's fp32 FMA peak.

   The anchor: independent FMA chains in registers on every core (AVX-512 or AVX2+FMA intrinsics when
   the compiler targets them, fmaf otherwise). Then zt_gemm at the shapes of a GPT-2 small MLP layer
   with 4096 tokens: the forward product, the two backward products, and a 768x768 projection, with
   f32 and with bf16 tensors. Each result is one JSON line. Goal: forward f32 >= 50% of the peak. */
#include "peak.h"
#include <stdio.h>

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
    double peak = measure_peak(threads);
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
