/* zt_cuda.cuh - zt's CUDA backend: device memory, streams, events, and the kernels of every op.
   MIT licence, see the end of zt.h.

   This file is not included by users: zt.h's implementation includes it when nvcc compiles it (the
   translation unit that defines ZT_IMPLEMENTATION, compiled with `nvcc -x cu`). It sees everything in
   zt.h and adds one thing, the backend table zt__cuda_backend() that zt_backend_create("cuda") uses.
   Host orchestration (the engine, ZeRO, offload, checkpoints) is not here: it is in zt.h, shared with
   the CPU backend, which is the reference these kernels are checked against (tests/gpu/run.sh).

   Contents:
       checks       every CUDA and cuBLASLt call checked; errors found by kernels, reported at syncs
       dtypes       loads and stores of f32, bf16, f16 and integers by run-time dtype
       elementwise  copy, cast, fill, scale, add, gelu (tanh and erf), silu, swiglu, rope, the optimizers (AdamW, Lion, Adagrad)
       rows         embeddings, layernorm, rmsnorm, cross-entropy (a block per row); the MoE steps
       columns      bias and norm-weight gradients, sum of squares (fixed order: deterministic)
       gemm         cuBLASLt (bf16/f16/f32, fp32 accumulation, bias epilogue), a SIMT fallback
       attention    FlashAttention-2 style forward and backward, tensor cores for bf16/f16
       backend      create, reserve, streams, events, launch

   Determinism: no kernel uses floating-point atomics; every reduction is split by shape only, so the
   same run gives the same bits. Numerics follow the CPU backend (fp32 arithmetic, one rounding to the
   output dtype); the optimizers (AdamW, Lion, Adagrad) use the same operations without fused
   multiply-adds, so their f32 results are the CPU's bits. Needs CUDA 12 or newer and a GPU of compute capability 8.0 or newer (A100, RTX 30xx
   and later); build.sh compiles for sm_80, sm_86, sm_89, sm_90 and compute_80 PTX. */
#ifndef ZT_CUDA_CUH
#define ZT_CUDA_CUH

#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cublasLt.h>
#include <mma.h>
#ifndef ZT_NO_NCCL /* define it to build without NCCL: ranks then stage collectives through host memory */
#  include <nccl.h>
#endif

/* >>checks -------------------------------------------------------------------------------------- */

static void zt__cu_check(cudaError_t e, const char *call, const char *file, int line) {
    if (e != cudaSuccess)
        zt_fatal("CUDA error %s (%s) at %s:%d in %s", cudaGetErrorName(e), cudaGetErrorString(e), file, line, call);
}
static void zt__cublas_check(cublasStatus_t s, const char *call, const char *file, int line) {
    if (s != CUBLAS_STATUS_SUCCESS)
        zt_fatal("cuBLASLt error %d (%s) at %s:%d in %s", (int)s, cublasLtGetStatusString(s), file, line, call);
}
#define ZT__CU_CHECK(call) zt__cu_check((call), #call, __FILE__, __LINE__)
#ifndef ZT_NO_NCCL
static void zt__nccl_check(ncclResult_t r, const char *call, const char *file, int line) {
    if (r != ncclSuccess) zt_fatal("NCCL error %d (%s) at %s:%d in %s", (int)r, ncclGetErrorString(r), file, line, call);
}
#  define ZT__NCCL_CHECK(call) zt__nccl_check((call), #call, __FILE__, __LINE__)
#endif
#define ZT__CUBLAS_CHECK(call) zt__cublas_check((call), #call, __FILE__, __LINE__)

/* Errors a kernel finds in its data (a token id past the vocabulary) go to one record in mapped pinned
   memory: the first one wins, and the host turns it into the CPU backend's message at the next sync. */
enum { ZT__CU_E_EMBEDDING_FWD = 1, ZT__CU_E_EMBEDDING_BWD = 2, ZT__CU_E_TARGET = 3, ZT__CU_E_ATT_START = 4,
       ZT__CU_E_MOE_EXPERT = 5, ZT__CU_E_MOE_ROW = 6 };
typedef struct zt__cu_error { int what; long long a, b, c; } zt__cu_error;
static zt__cu_error *zt__cu_error_host;    /* the record, as the host sees it */
__device__ zt__cu_error *zt__cu_error_dev; /* ... and as kernels see it */

__device__ void zt__cu_fail(int what, long long a, long long b, long long c) {
    zt__cu_error *e = zt__cu_error_dev;
    if (atomicCAS(&e->what, 0, -1) == 0) { /* claimed: fill in, then publish what */
        e->a = a, e->b = b, e->c = c;
        __threadfence_system();
        atomicExch(&e->what, what);
    }
}

/* after a sync: a kernel's error becomes the fatal error its CPU twin reports; the record is cleared
   first, so that a fatal handler that returns control (tests) does not see it again at the next sync */
static void zt__cu_report(void) {
    volatile zt__cu_error *e = zt__cu_error_host;
    if (!e || e->what <= 0) return;
    int what = e->what;
    long long a = e->a, b = e->b, c = e->c;
    __atomic_store_n(&e->what, 0, __ATOMIC_SEQ_CST);
    switch (what) {
    case ZT__CU_E_EMBEDDING_FWD:
    case ZT__CU_E_EMBEDDING_BWD:
        zt_fatal("zt_embedding_%s: id %lld at %lld is outside [0, %lld)",
                 what == ZT__CU_E_EMBEDDING_FWD ? "forward" : "backward", a, b, c);
    case ZT__CU_E_TARGET:
        zt_fatal("zt_crossentropy: target %lld in row %lld is outside [0, %lld) and is not the ignore index", a, b, c);
    case ZT__CU_E_ATT_START:
        zt_fatal("attention: starts[%lld][%lld] = %lld is outside [0, %lld]", a, b, c, b);
    case ZT__CU_E_MOE_EXPERT: zt_fatal("zt_moe_sort: expert %lld at %lld is outside [0, %lld)", a, b, c);
    case ZT__CU_E_MOE_ROW: zt_fatal("zt_moe: where[%lld] = %lld is outside [0, %lld)", b, a, c);
    default: zt_fatal("a CUDA kernel reported error %d (%lld, %lld, %lld)", what, a, b, c);
    }
}

/* >>dtypes -------------------------------------------------------------------------------------- */

/* f32 to bf16 and f16 as the CPU's zt_f32_to_bf16 and zt_f32_to_f16 round: the hardware's round to nearest even,
   except that a NaN keeps its sign and payload, quieted (the conversion instruction gives the canonical NaN) */
__device__ __forceinline__ __nv_bfloat16 zt__cu_bf16(float v) {
    if (v != v) return __ushort_as_bfloat16((unsigned short)((__float_as_uint(v) >> 16) | 0x40u));
    return __float2bfloat16_rn(v);
}
__device__ __forceinline__ __half zt__cu_f16(float v) {
    if (v != v) {
        unsigned u = __float_as_uint(v);
        return __ushort_as_half((unsigned short)(((u >> 16) & 0x8000u) | 0x7e00u | ((u >> 13) & 0x3ffu)));
    }
    return __float2half_rn(v);
}

/* Element i of p in dtype t, as f32, and back, rounded to nearest even. Kernels that take any mix of
   dtypes branch on t, which is the same for every thread of a launch. */
__device__ __forceinline__ float zt__cu_ld(const void *p, int t, int64_t i) {
    switch (t) {
    case ZT_F32: return ((const float *)p)[i];
    case ZT_BF16: return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    case ZT_F16: return __half2float(((const __half *)p)[i]);
    case ZT_I32: return (float)((const int32_t *)p)[i];
    case ZT_U16: return (float)((const uint16_t *)p)[i];
    default: return (float)((const uint32_t *)p)[i];
    }
}
__device__ __forceinline__ void zt__cu_st(void *p, int t, int64_t i, float v) {
    switch (t) {
    case ZT_F32: ((float *)p)[i] = v; return;
    case ZT_BF16: ((__nv_bfloat16 *)p)[i] = zt__cu_bf16(v); return;
    case ZT_F16: ((__half *)p)[i] = zt__cu_f16(v); return;
    case ZT_I32: ((int32_t *)p)[i] = (int32_t)v; return;
    case ZT_U16: ((uint16_t *)p)[i] = (uint16_t)v; return;
    default: ((uint32_t *)p)[i] = (uint32_t)v; return;
    }
}

/* v rounded to float dtype t, as a store and a load would leave it */
__device__ __forceinline__ float zt__cu_round(int t, float v) {
    if (t == ZT_BF16) return __bfloat162float(zt__cu_bf16(v));
    if (t == ZT_F16) return __half2float(zt__cu_f16(v));
    return v;
}

/* a tensor as kernels take it: its memory and dtype */
typedef struct zt__cu_t { void *p; int t; } zt__cu_t;
static zt__cu_t zt__cu_of(zt_tensor x) {
    zt__cu_t r = {x.data, (int)x.dtype};
    return r;
}

#define ZT__CU_THREADS 256
static int zt__cu_sms = 132; /* multiprocessors of the GPU in use, set at create */

/* blocks for a grid-stride loop over n items */
static unsigned zt__cu_blocks(int64_t n, int threads) {
    int64_t b = ZT__CDIV(ZT__MAX(n, 1), threads);
    return (unsigned)ZT__MIN(b, (int64_t)zt__cu_sms * 32);
}

__device__ __forceinline__ float zt__cu_warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ double zt__cu_warp_sum_d(double v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float zt__cu_warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Sum (or max) over a block of up to 1024 threads, the same tree every time; every thread gets the
   result. `sh` holds 32 values of shared memory, reused after the call returns. */
__device__ float zt__cu_block_sum(float v, float *sh) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    v = zt__cu_warp_sum(v);
    __syncthreads(); /* sh may still be read by the previous call */
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    v = lane < warps ? sh[lane] : 0.0f;
    return zt__cu_warp_sum(v);
}
__device__ double zt__cu_block_sum_d(double v, double *sh) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    v = zt__cu_warp_sum_d(v);
    __syncthreads();
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    v = lane < warps ? sh[lane] : 0.0;
    return zt__cu_warp_sum_d(v);
}
__device__ float zt__cu_block_max(float v, float *sh) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    v = zt__cu_warp_max(v);
    __syncthreads();
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    v = lane < warps ? sh[lane] : -INFINITY;
    return zt__cu_warp_max(v);
}

/* >>elementwise --------------------------------------------------------------------------------- */

#define ZT__CU_GELU_K 0.7978845608028654f /* sqrt(2/pi) */

__device__ __forceinline__ float zt__cu_gelu(float x) {
    float u = ZT__CU_GELU_K * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + tanhf(u));
}
__device__ __forceinline__ float zt__cu_gelu_grad(float x) {
    float u = ZT__CU_GELU_K * (x + 0.044715f * x * x * x), t = tanhf(u);
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * ZT__CU_GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
}
__device__ __forceinline__ float zt__cu_gelu_erf(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }
__device__ __forceinline__ float zt__cu_gelu_erf_grad(float x) {
    return 0.5f * (1.0f + erff(x * 0.70710678118654752f)) + x * 0.39894228040143268f * expf(-0.5f * x * x);
}
__device__ __forceinline__ float zt__cu_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ __forceinline__ float zt__cu_silu(float x) { return x * zt__cu_sigmoid(x); }
__device__ __forceinline__ float zt__cu_silu_grad(float x) {
    float s = zt__cu_sigmoid(x);
    return s * (1.0f + x * (1.0f - s));
}

/* one kernel for the simple elementwise ops: out = f(a, b, out) */
typedef struct zt__cu_ew { int kind; zt__cu_t out, a, b; float value; int64_t n; } zt__cu_ew;

__global__ void zt__cu_elementwise(zt__cu_ew e) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < e.n; i += (int64_t)gridDim.x * blockDim.x) {
        switch (e.kind) {
        case ZT__OP_CAST: zt__cu_st(e.out.p, e.out.t, i, zt__cu_ld(e.a.p, e.a.t, i)); break;
        case ZT__OP_FILL: zt__cu_st(e.out.p, e.out.t, i, e.value); break;
        case ZT__OP_SCALE: zt__cu_st(e.out.p, e.out.t, i, zt__cu_ld(e.out.p, e.out.t, i) * e.value); break;
        case ZT__OP_ADD: zt__cu_st(e.out.p, e.out.t, i, zt__cu_ld(e.a.p, e.a.t, i) + zt__cu_ld(e.b.p, e.b.t, i)); break;
        case ZT__OP_GELU_FWD: zt__cu_st(e.out.p, e.out.t, i, zt__cu_gelu(zt__cu_ld(e.a.p, e.a.t, i))); break;
        case ZT__OP_GELU_ERF_FWD: zt__cu_st(e.out.p, e.out.t, i, zt__cu_gelu_erf(zt__cu_ld(e.a.p, e.a.t, i))); break;
        case ZT__OP_SILU_FWD: zt__cu_st(e.out.p, e.out.t, i, zt__cu_silu(zt__cu_ld(e.a.p, e.a.t, i))); break;
        case ZT__OP_GELU_BWD: /* out = dinp += dout (b) * f'(inp (a)) */
            zt__cu_st(e.out.p, e.out.t, i, zt__cu_ld(e.out.p, e.out.t, i) +
                      zt__cu_ld(e.b.p, e.b.t, i) * zt__cu_gelu_grad(zt__cu_ld(e.a.p, e.a.t, i)));
            break;
        case ZT__OP_GELU_ERF_BWD:
            zt__cu_st(e.out.p, e.out.t, i, zt__cu_ld(e.out.p, e.out.t, i) +
                      zt__cu_ld(e.b.p, e.b.t, i) * zt__cu_gelu_erf_grad(zt__cu_ld(e.a.p, e.a.t, i)));
            break;
        case ZT__OP_SILU_BWD:
            zt__cu_st(e.out.p, e.out.t, i, zt__cu_ld(e.out.p, e.out.t, i) +
                      zt__cu_ld(e.b.p, e.b.t, i) * zt__cu_silu_grad(zt__cu_ld(e.a.p, e.a.t, i)));
            break;
        default: break;
        }
    }
}

/* zt_add_uniform_noise, zt_mul_uniform_noise and zt_dropout: each step rounded apart, as on the CPU (no fused
   multiply-add) */
__global__ void zt__cu_noise(zt__cu_t t, int64_t n, float m, float scale, int mode, uint64_t seed, int64_t offset) {
    float lo = 1.0f - m, width = 2.0f * m;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        float u = zt_noise_uniform(seed, offset + i), x = zt__cu_ld(t.p, t.t, i);
        if (mode == ZT__NOISE_DROP) x = __fmul_rn(x, u >= m ? scale : 0.0f); /* zt_dropout_factor */
        else if (mode == ZT__NOISE_MUL) x = __fmul_rn(x, __fadd_rn(__fmul_rn(u, width), lo));
        else x = __fadd_rn(x, __fmul_rn(2.0f * u - 1.0f, m));
        zt__cu_st(t.p, t.t, i, x);
    }
}

/* fill of an integer tensor stores the value converted as the CPU's zt__store does */
__global__ void zt__cu_fill_int(zt__cu_t t, int64_t n, double value) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        if (t.t == ZT_I32) ((int32_t *)t.p)[i] = (int32_t)value;
        else if (t.t == ZT_U16) ((uint16_t *)t.p)[i] = (uint16_t)value;
        else ((uint32_t *)t.p)[i] = (uint32_t)value;
    }
}

/* SwiGLU (or with gelu, GeGLU) over (N, 2H) rows [gate | up]: one thread per (row, i) */
__global__ void zt__cu_glu(int fwd, int gelu, zt__cu_t out, zt__cu_t inp, zt__cu_t dout, int64_t N, int64_t H) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < N * H; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = e / H, i = e % H;
        float g = zt__cu_ld(inp.p, inp.t, r * 2 * H + i), u = zt__cu_ld(inp.p, inp.t, r * 2 * H + H + i);
        if (fwd) {
            zt__cu_st(out.p, out.t, e, (gelu ? zt__cu_gelu(g) : zt__cu_silu(g)) * u);
        } else { /* out is dinp (N, 2H) */
            float d = zt__cu_ld(dout.p, dout.t, e);
            int64_t gi = r * 2 * H + i, ui = gi + H;
            zt__cu_st(out.p, out.t, gi, zt__cu_ld(out.p, out.t, gi) + d * u * (gelu ? zt__cu_gelu_grad(g) : zt__cu_silu_grad(g)));
            zt__cu_st(out.p, out.t, ui, zt__cu_ld(out.p, out.t, ui) + d * (gelu ? zt__cu_gelu(g) : zt__cu_silu(g)));
        }
    }
}

/* gpt-oss's clamped SwiGLU over (N, 2H) rows of interleaved gate and up (the CPU's zt__glu_clamped_task): one thread
   per (row, i); backward adds into dinp (out) where the clamps pass */
__global__ void zt__cu_glu_clamped(int fwd, zt__cu_t out, zt__cu_t inp, zt__cu_t dout, int64_t N, int64_t H, float alpha,
                                   float limit) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < N * H; e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t gi = e / H * 2 * H + 2 * (e % H), ui = gi + 1;
        const float g0 = zt__cu_ld(inp.p, inp.t, gi), u0 = zt__cu_ld(inp.p, inp.t, ui);
        const float g = g0 < limit ? g0 : limit, u = u0 < -limit ? -limit : u0 < limit ? u0 : limit;
        const float sg = 1.0f / (1.0f + expf(-alpha * g)), glu = g * sg;
        if (fwd) {
            zt__cu_st(out.p, out.t, e, (u + 1.0f) * glu);
        } else {
            const float d = zt__cu_ld(dout.p, dout.t, e);
            if (g0 <= limit)
                zt__cu_st(out.p, out.t, gi, zt__cu_ld(out.p, out.t, gi) + d * (u + 1.0f) * (sg + alpha * g * sg * (1.0f - sg)));
            if (u0 >= -limit && u0 <= limit) zt__cu_st(out.p, out.t, ui, zt__cu_ld(out.p, out.t, ui) + d * glu);
        }
    }
}

/* Rotary embedding, one thread per (token, head, i < RD/2): pairs i and i + RD/2 (interleaved: 2i and 2i + 1) of
   the first RD dimensions (RD = rotary_dim, HD unless partial), angles as the CPU computes them, and one per passing dimension RD..HD.
   Forward may run in place (each thread reads what it writes first); backward adds the inverse rotation of
   dout (inp) into dinp (out). */
/* the frequencies of a head's pairs, computed on the host by zt__rope_inv_freq and passed by value */
#define ZT__CU_ROPE_PAIRS 256
typedef struct zt__cu_freqs { float f[ZT__CU_ROPE_PAIRS]; } zt__cu_freqs;

__global__ void zt__cu_rope(int fwd, zt__cu_t out, zt__cu_t inp, const int32_t *pos, int64_t BT, int64_t H,
                            int64_t HD, int64_t RD, int interleaved, zt__cu_freqs freqs, float mscale) {
    int64_t half = RD / 2, each = half + (HD - RD), total = BT * H * each;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t i = e % each, th = e / each, t = th / H;
        if (i >= half) { /* a dimension that passes */
            int64_t c = th * HD + RD + (i - half);
            float x = zt__cu_ld(inp.p, inp.t, c);
            zt__cu_st(out.p, out.t, c, fwd ? x : zt__cu_ld(out.p, out.t, c) + x);
            continue;
        }
        float angle = (float)pos[t] * freqs.f[i], cs = cosf(angle) * mscale, sn = sinf(angle) * mscale;
        int64_t a = th * HD + (interleaved ? 2 * i : i), b = a + (interleaved ? 1 : half); /* pair i's dimensions */
        float x0 = zt__cu_ld(inp.p, inp.t, a), x1 = zt__cu_ld(inp.p, inp.t, b);
        if (fwd) {
            zt__cu_st(out.p, out.t, a, x0 * cs - x1 * sn);
            zt__cu_st(out.p, out.t, b, x1 * cs + x0 * sn);
        } else {
            zt__cu_st(out.p, out.t, a, zt__cu_ld(out.p, out.t, a) + (x0 * cs + x1 * sn));
            zt__cu_st(out.p, out.t, b, zt__cu_ld(out.p, out.t, b) + (x1 * cs - x0 * sn));
        }
    }
}

/* The optimizers, the CPU's operations in the CPU's order (zt__adamw_f32, zt__lion_f32, zt__adagrad_f32),
   each rounded on its own (no fused multiply-add): f32 results are the CPU backend's bits. The scalars are
   the op's, computed once on the host in double (zt__optim_scalars). */
typedef struct zt__cu_optim {
    float *w, *m, *v;
    zt__cu_t grad, p16;
    int64_t n;
    zt__optim_k k;
} zt__cu_optim;

__global__ void zt__cu_optim_kernel(zt__cu_optim a) {
    const zt__optim_k k = a.k;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < a.n; i += (int64_t)gridDim.x * blockDim.x) {
        float w = a.w[i], m = a.m[i];
        float g = __fmul_rn(zt__cu_ld(a.grad.p, a.grad.t, i), k.grad_scale);
        if (k.kind == ZT_OPTIM_LION) {
            float c = __fadd_rn(__fmul_rn(m, k.beta1), __fmul_rn(g, k.w1));
            /* + (c - c): a NaN or inf in c passes on to the weight, as zt__lion_sign (zt.h) explains */
            float u = __fadd_rn(c > 0.0f ? -k.step_size : c < 0.0f ? k.step_size : 0.0f, __fsub_rn(c, c));
            w = __fadd_rn(__fmul_rn(w, k.decay), u);
            m = __fadd_rn(__fmul_rn(m, k.beta2), __fmul_rn(g, k.w2));
        } else if (k.kind == ZT_OPTIM_ADAGRAD) {
            if (k.weight_decay != 0.0f) g = __fadd_rn(g, __fmul_rn(k.weight_decay, w));
            m = __fadd_rn(m, __fmul_rn(g, g));
            float std = __fadd_rn(__fsqrt_rn(m), k.eps);
            w = __fadd_rn(w, __fmul_rn(-k.step_size, __fdiv_rn(g, std)));
        } else {
            float v = a.v[i];
            if (k.l2) g = __fadd_rn(g, __fmul_rn(k.weight_decay, w));
            else w = __fmul_rn(w, k.decay);
            m = __fadd_rn(m, __fmul_rn(k.w1, __fsub_rn(g, m)));
            v = __fadd_rn(__fmul_rn(v, k.beta2), __fmul_rn(__fmul_rn(k.w2, g), g));
            float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(v), k.bc2_sqrt), k.eps);
            w = __fadd_rn(w, __fmul_rn(-k.step_size, __fdiv_rn(m, denom)));
            a.v[i] = v;
        }
        a.w[i] = w, a.m[i] = m;
        if (a.p16.p) zt__cu_st(a.p16.p, a.p16.t, i, w);
    }
}

/* >>rows ---------------------------------------------------------------------------------------- */

__global__ void __launch_bounds__(1024) zt__cu_embedding_fwd(zt__cu_t out, const int32_t *ids, zt__cu_t table, int64_t N, int64_t V,
                                     int64_t C, int accumulate) {
    for (int64_t n = blockIdx.x; n < N; n += gridDim.x) {
        int64_t id = ids[n];
        if (id < 0 || id >= V) {
            if (threadIdx.x == 0) zt__cu_fail(ZT__CU_E_EMBEDDING_FWD, id, n, V);
            continue;
        }
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
            float x = zt__cu_ld(table.p, table.t, id * C + c);
            if (accumulate) x += zt__cu_ld(out.p, out.t, n * C + c);
            zt__cu_st(out.p, out.t, n * C + c, x);
        }
    }
}

/* Embedding backward without atomics: the block of position n works only when n is the first
   position with its id; it then adds the dout rows of every position with that id, in order of
   position, to the table row (kept in shared memory meanwhile, rounded to the table's dtype after each
   addition as the CPU's load-add-store rounds it), as the CPU does: the same bits in every dtype.
   Positions are scanned a block-width chunk at a time, skipping chunks without a match. */
__global__ void zt__cu_embedding_bwd(zt__cu_t dtable, zt__cu_t dout, const int32_t *ids, int64_t N, int64_t V,
                                     int64_t C) {
    extern __shared__ float zt__cu_smem[];
    float *acc = zt__cu_smem;                               /* C */
    int *hit = (int *)(acc + C);                            /* blockDim.x */
    for (int64_t n = blockIdx.x; n < N; n += gridDim.x) {
        int id = ids[n];
        if (id < 0 || id >= V) {
            if (threadIdx.x == 0) zt__cu_fail(ZT__CU_E_EMBEDDING_BWD, id, n, V);
            continue;
        }
        int earlier = 0;
        for (int64_t j0 = 0; j0 < n && !earlier; j0 += blockDim.x) {
            int64_t j = j0 + threadIdx.x;
            earlier = __syncthreads_or(j < n && ids[j] == id);
        }
        if (earlier) continue;
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) acc[c] = zt__cu_ld(dtable.p, dtable.t, (int64_t)id * C + c);
        for (int64_t j0 = n; j0 < N; j0 += blockDim.x) {
            int64_t j = j0 + threadIdx.x;
            int mine = j < N && ids[j] == id;
            __syncthreads(); /* the previous chunk's hits are read */
            hit[threadIdx.x] = mine;
            if (!__syncthreads_or(mine)) continue;
            int64_t nj = ZT__MIN((int64_t)blockDim.x, N - j0);
            for (int64_t q = 0; q < nj; q++) /* each thread owns its columns: no sync needed */
                if (hit[q])
                    for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
                        acc[c] = zt__cu_round(dtable.t, acc[c] + zt__cu_ld(dout.p, dout.t, (j0 + q) * C + c));
        }
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) zt__cu_st(dtable.p, dtable.t, (int64_t)id * C + c, acc[c]);
        __syncthreads();
    }
}

/* layernorm (mean present) or rmsnorm, a block per row; mean and rstd saved in f32; row r by weight row r % G */
__global__ void __launch_bounds__(1024) zt__cu_norm_fwd(zt__cu_t out, float *mean_out, float *rstd_out, zt__cu_t inp, zt__cu_t weight,
                                zt__cu_t bias, int64_t N, int64_t C, int64_t G, float eps, float offset) {
    __shared__ float sh[32];
    for (int64_t r = blockIdx.x; r < N; r += gridDim.x) {
        const int64_t o = r * C, wo = (r % G) * C;
        float mean = 0.0f, s = 0.0f;
        if (mean_out) {
            for (int64_t c = threadIdx.x; c < C; c += blockDim.x) s += zt__cu_ld(inp.p, inp.t, o + c);
            mean = zt__cu_block_sum(s, sh) / (float)C;
        }
        s = 0.0f;
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
            float d = zt__cu_ld(inp.p, inp.t, o + c) - mean;
            s += d * d;
        }
        float rstd = 1.0f / sqrtf(zt__cu_block_sum(s, sh) / (float)C + eps);
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
            float y = (zt__cu_ld(inp.p, inp.t, o + c) - mean) * rstd * (zt__cu_ld(weight.p, weight.t, wo + c) + offset);
            if (mean_out && bias.p) y += zt__cu_ld(bias.p, bias.t, c); /* a layernorm's bias may be absent */
            zt__cu_st(out.p, out.t, o + c, y);
        }
        if (threadIdx.x == 0) {
            if (mean_out) mean_out[r] = mean;
            rstd_out[r] = rstd;
        }
    }
}

/* dinp += rstd * (g*w - mean(g*w) - xhat * mean(g*w*xhat)); rmsnorm (mean NULL) has no mean(g*w) */
__global__ void __launch_bounds__(1024) zt__cu_norm_bwd(zt__cu_t dinp, zt__cu_t dout, zt__cu_t inp, zt__cu_t weight, const float *mean,
                                const float *rstd, int64_t N, int64_t C, int64_t G, float offset) {
    __shared__ float sh[32];
    for (int64_t r = blockIdx.x; r < N; r += gridDim.x) {
        const int64_t o = r * C, wo = (r % G) * C;
        float mu = mean ? mean[r] : 0.0f, rs = rstd[r], s_gw = 0.0f, s_gwx = 0.0f;
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
            float gw = zt__cu_ld(dout.p, dout.t, o + c) * (zt__cu_ld(weight.p, weight.t, wo + c) + offset);
            s_gw += gw;
            s_gwx += gw * ((zt__cu_ld(inp.p, inp.t, o + c) - mu) * rs);
        }
        float mean_gw = mean ? zt__cu_block_sum(s_gw, sh) / (float)C : 0.0f;
        float mean_gwx = zt__cu_block_sum(s_gwx, sh) / (float)C;
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
            float gw = zt__cu_ld(dout.p, dout.t, o + c) * (zt__cu_ld(weight.p, weight.t, wo + c) + offset);
            float xh = (zt__cu_ld(inp.p, inp.t, o + c) - mu) * rs;
            zt__cu_st(dinp.p, dinp.t, o + c, zt__cu_ld(dinp.p, dinp.t, o + c) + rs * (gw - mean_gw - xh * mean_gwx));
        }
    }
}

/* a logit as the loss sees it: capped to cap * tanh(x / cap) where cap > 0 (the CPU's rule) */
static __device__ __forceinline__ float zt__cu_capped(zt__cu_t logits, int64_t i, float cap) {
    const float x = zt__cu_ld(logits.p, logits.t, i);
    return cap > 0.0f ? cap * tanhf(x / cap) : x;
}

/* Softmax + cross-entropy, a block per row: the max, the sum of exponentials in double (128k terms),
   the loss; with dlogits (which may be the logits), (softmax - onehot) * dloss and zero padding. With label
   smoothing e, the CPU's rule: the logits' sum too (in double), and (softmax - (1 - e) onehot - e / V) dloss. */
__global__ void __launch_bounds__(1024) zt__cu_crossentropy(float *losses, zt__cu_t dlogits, zt__cu_t logits, const int32_t *targets,
                                    int64_t N, int64_t Vp, int64_t V, int ignore_index, float dloss, float cap,
                                    float e) {
    __shared__ float sh[32];
    __shared__ double shd[32];
    for (int64_t r = blockIdx.x; r < N; r += gridDim.x) {
        const int64_t o = r * Vp;
        int64_t t = targets[r];
        int ignored = t == ignore_index;
        if (!ignored && (t < 0 || t >= V)) {
            if (threadIdx.x == 0) zt__cu_fail(ZT__CU_E_TARGET, t, r, V);
            ignored = 1;
        }
        float m = -INFINITY;
        for (int64_t c = threadIdx.x; c < V; c += blockDim.x) m = fmaxf(m, zt__cu_capped(logits, o + c, cap));
        m = zt__cu_block_max(m, sh);
        double s = 0.0;
        for (int64_t c = threadIdx.x; c < V; c += blockDim.x) s += (double)expf(zt__cu_capped(logits, o + c, cap) - m);
        double sum = zt__cu_block_sum_d(s, shd), total = 0.0;
        if (e > 0.0f) {
            double part = 0.0;
            for (int64_t c = threadIdx.x; c < V; c += blockDim.x) part += (double)zt__cu_capped(logits, o + c, cap);
            total = zt__cu_block_sum_d(part, shd);
        }
        float lse = m + (float)log(sum);
        float xt = ignored ? 0.0f : zt__cu_capped(logits, o + t, cap);
        __syncthreads(); /* every thread has read logits[t] before dlogits (maybe the same memory) is written */
        float loss = e > 0.0f ? (1.0f - e) * (lse - xt) + e * (lse - (float)(total / (double)V)) : lse - xt;
        if (threadIdx.x == 0) losses[r] = ignored ? 0.0f : loss;
        if (!dlogits.p) continue;
        float scale = ignored ? 0.0f : (float)(dloss / sum), uniform = ignored ? 0.0f : e * dloss / (float)V;
        for (int64_t c = threadIdx.x; c < Vp; c += blockDim.x) {
            float d = 0.0f;
            if (c < V) {
                const float x = zt__cu_capped(logits, o + c, cap);
                d = expf(x - m) * scale - uniform;
                if (!ignored && c == t) d -= (1.0f - e) * dloss;
                if (cap > 0.0f) d *= 1.0f - (x / cap) * (x / cap); /* through the cap */
            }
            zt__cu_st(dlogits.p, dlogits.t, o + c, d);
        }
    }
}

/* Mixture of experts. Routing: a warp per token; top-k by k rounds of a warp argmax that prefers the lower
   expert on a tie, as the CPU's scan does. */
__device__ __forceinline__ void zt__cu_argmax(float *v, int *i) {
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, *v, o);
        int oi = __shfl_xor_sync(0xffffffffu, *i, o);
        if (oi >= 0 && (*i < 0 || ov > *v || (ov == *v && oi < *i))) *v = ov, *i = oi;
    }
}

/* A warp per token: its probabilities (softmax, or each logit's sigmoid), the groups it may choose from (lane 0
   ranks them), then its k choices by probability (+ the fixed bias), as the CPU backend's */
__global__ void zt__cu_moe_route_fwd(int32_t *idx, float *weight, float *probs, zt__cu_t logits, const float *bias,
                                     int64_t N, int64_t E, int k, int normalize, int sigmoid, int groups, int topk_groups,
                                     int group_max, float scale) {
    int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    int64_t per = E / groups;
    for (int64_t t = (int64_t)blockIdx.x * warps + (threadIdx.x >> 5); t < N; t += (int64_t)gridDim.x * warps) {
        float *p = probs + t * E, top = -INFINITY, sum = 0.0f, chosen = 0.0f;
        if (sigmoid) {
            for (int64_t e = lane; e < E; e += 32) p[e] = 1.0f / (1.0f + expf(-zt__cu_ld(logits.p, logits.t, t * E + e)));
        } else {
            for (int64_t e = lane; e < E; e += 32) top = fmaxf(top, zt__cu_ld(logits.p, logits.t, t * E + e));
            top = zt__cu_warp_max(top);
            for (int64_t e = lane; e < E; e += 32) sum += (p[e] = expf(zt__cu_ld(logits.p, logits.t, t * E + e) - top));
            sum = zt__cu_warp_sum(sum);
            for (int64_t e = lane; e < E; e += 32) p[e] /= sum;
        }
        __syncwarp();
        unsigned long long keep = ~0ull;
        if (groups > 1) {
            if (lane == 0) {
                float score[ZT_MOE_MAX_GROUPS];
                for (int g = 0; g < groups; g++) {
                    float b1 = -INFINITY, b2 = -INFINITY;
                    for (int64_t e = g * per; e < (g + 1) * per; e++) {
                        float c = bias ? p[e] + bias[e] : p[e];
                        if (c > b1) b2 = b1, b1 = c;
                        else if (c > b2) b2 = c;
                    }
                    score[g] = group_max ? b1 : b1 + b2;
                }
                keep = 0;
                for (int i = 0; i < topk_groups; i++) {
                    int best = -1;
                    for (int g = 0; g < groups; g++)
                        if (!(keep >> g & 1) && (best < 0 || score[g] > score[best])) best = g;
                    keep |= 1ull << best;
                }
            }
            keep = __shfl_sync(0xffffffffu, keep, 0);
        }
        int sel[ZT_MOE_MAX_K];
        for (int j = 0; j < k; j++) {
            float bv = 0.0f;
            int bi = -1;
            for (int64_t e = lane; e < E; e += 32) {
                int taken = 0;
                for (int i = 0; i < j; i++) taken |= sel[i] == e;
                float c = !(keep >> (e / per) & 1) ? -INFINITY : bias ? p[e] + bias[e] : p[e];
                if (!taken && (bi < 0 || c > bv)) bv = c, bi = (int)e;
            }
            zt__cu_argmax(&bv, &bi);
            sel[j] = bi;
            chosen += p[bi];
        }
        if (lane == 0) {
            for (int j = 1; j < k; j++)
                for (int i = j; i > 0 && sel[i - 1] > sel[i]; i--) {
                    int v = sel[i];
                    sel[i] = sel[i - 1], sel[i - 1] = v;
                }
            for (int j = 0; j < k; j++)
                idx[t * k + j] = sel[j], weight[t * k + j] = (normalize ? p[sel[j]] / chosen : p[sel[j]]) * scale;
        }
    }
}

__global__ void zt__cu_moe_route_bwd(zt__cu_t dlogits, const float *dweight, const float *probs, const int32_t *idx,
                                     int64_t N, int64_t E, int k, int normalize, int sigmoid, float scale) {
    int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    for (int64_t t = (int64_t)blockIdx.x * warps + (threadIdx.x >> 5); t < N; t += (int64_t)gridDim.x * warps) {
        const float *p = probs + t * E, *dw = dweight + t * k;
        const int32_t *ix = idx + t * k;
        float S = 0.0f, dot = 0.0f, pd = 0.0f, dp[ZT_MOE_MAX_K];
        for (int j = 0; j < k; j++) S += p[ix[j]];
        for (int j = 0; j < k; j++) dot += dw[j] * (p[ix[j]] / S);
        for (int j = 0; j < k; j++) dp[j] = (normalize ? (dw[j] - dot) / S : dw[j]) * scale;
        for (int j = 0; j < k; j++) pd += dp[j] * p[ix[j]];
        for (int64_t e = lane; e < E; e += 32) {
            float d = sigmoid ? 0.0f : -pd;
            for (int j = 0; j < k; j++) d += ix[j] == e ? dp[j] : 0.0f;
            int64_t at = t * E + e;
            zt__cu_st(dlogits.p, dlogits.t, at,
                      zt__cu_ld(dlogits.p, dlogits.t, at) + d * (sigmoid ? p[e] * (1.0f - p[e]) : p[e]));
        }
    }
}

/* the balancing loss: a warp per token, d_e = p_e (g_e - sum_i p_i g_i) */
__global__ void zt__cu_moe_balance_bwd(zt__cu_t dlogits, const float *probs, const float *g, int64_t N, int64_t E) {
    int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    for (int64_t t = (int64_t)blockIdx.x * warps + (threadIdx.x >> 5); t < N; t += (int64_t)gridDim.x * warps) {
        const float *p = probs + t * E;
        float pg = 0.0f;
        for (int64_t e = lane; e < E; e += 32) pg += p[e] * g[e];
        pg = zt__cu_warp_sum(pg);
        for (int64_t e = lane; e < E; e += 32) {
            int64_t at = t * E + e;
            zt__cu_st(dlogits.p, dlogits.t, at, zt__cu_ld(dlogits.p, dlogits.t, at) + p[e] * (g[e] - pg));
        }
    }
}

/* The sort, in one block: counts, then the choices a block-width chunk at a time; a choice's place is its
   expert's next free one plus the same expert's choices before it in the chunk (warp peers by
   __match_any_sync, earlier warps by a shared table). Integer atomics only: the same result every time. */
#define ZT__CU_MOE_SORT_THREADS 256
__global__ void __launch_bounds__(ZT__CU_MOE_SORT_THREADS) zt__cu_moe_sort(int32_t *order, int32_t *where,
                                                                            int32_t *counts, const int32_t *idx,
                                                                            int64_t n, int E) {
    extern __shared__ int zt__cu_ismem[];
    int *next = zt__cu_ismem, *table = next + E; /* table: warps x E, each warp's count of each expert */
    int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, warps = blockDim.x >> 5;
    for (int q = tid; q < E; q += blockDim.x) next[q] = 0;
    for (int q = tid; q < warps * E; q += blockDim.x) table[q] = 0;
    __syncthreads();
    for (int64_t i = tid; i < n; i += blockDim.x) {
        int e = idx[i];
        if (e < 0 || e >= E) zt__cu_fail(ZT__CU_E_MOE_EXPERT, e, i, E);
        else atomicAdd(&next[e], 1);
    }
    __syncthreads();
    if (tid == 0)
        for (int e = 0, at = 0; e < E; e++) {
            int c = next[e];
            counts[e] = c, next[e] = at, at += c;
        }
    __syncthreads();
    for (int64_t base = 0; base < n; base += blockDim.x) {
        int64_t i = base + tid;
        int e = i < n ? idx[i] : -1;
        if (e >= E) e = -1;
        unsigned peers = __match_any_sync(0xffffffffu, e);
        int before = __popc(peers & ((1u << lane) - 1u)), lead = e >= 0 && before == 0;
        if (lead) table[warp * E + e] = __popc(peers);
        __syncthreads();
        if (e >= 0) {
            int r = next[e] + before;
            for (int w = 0; w < warp; w++) r += table[w * E + e];
            order[r] = (int32_t)i, where[i] = r;
        }
        __syncthreads();
        if (lead) atomicAdd(&next[e], __popc(peers)), table[warp * E + e] = 0;
        __syncthreads();
    }
}

/* gather: a block per row of xs; its backward and the combine: a block per token, its k rows in j order */
__global__ void zt__cu_moe_gather_fwd(zt__cu_t xs, zt__cu_t x, const int32_t *order, int64_t n, int64_t N, int64_t C,
                                      int64_t k) {
    for (int64_t r = blockIdx.x; r < n; r += gridDim.x) {
        int64_t t = order[r] / k;
        if (order[r] < 0 || t >= N) {
            if (threadIdx.x == 0) zt__cu_fail(ZT__CU_E_MOE_ROW, order[r], r, n);
            continue;
        }
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) zt__cu_st(xs.p, xs.t, r * C + c, zt__cu_ld(x.p, x.t, t * C + c));
    }
}

__device__ __forceinline__ int64_t zt__cu_moe_row(const int32_t *where, int64_t choice, int64_t n) {
    int64_t r = where[choice];
    if (r < 0 || r >= n) {
        if (threadIdx.x == 0) zt__cu_fail(ZT__CU_E_MOE_ROW, r, choice, n);
        return -1;
    }
    return r;
}

__global__ void zt__cu_moe_gather_bwd(zt__cu_t dx, zt__cu_t dxs, const int32_t *where, int64_t N, int64_t C, int64_t k) {
    for (int64_t t = blockIdx.x; t < N; t += gridDim.x)
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
            float acc = zt__cu_ld(dx.p, dx.t, t * C + c);
            for (int64_t j = 0; j < k; j++) {
                int64_t r = zt__cu_moe_row(where, t * k + j, N * k);
                if (r >= 0) acc += zt__cu_ld(dxs.p, dxs.t, r * C + c);
            }
            zt__cu_st(dx.p, dx.t, t * C + c, acc);
        }
}

__global__ void zt__cu_moe_combine_fwd(zt__cu_t out, zt__cu_t ys, const float *weight, const int32_t *where, int64_t N,
                                       int64_t C, int64_t k) {
    for (int64_t t = blockIdx.x; t < N; t += gridDim.x)
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
            float acc = 0.0f;
            for (int64_t j = 0; j < k; j++) {
                int64_t r = zt__cu_moe_row(where, t * k + j, N * k);
                if (r >= 0) acc += weight[t * k + j] * zt__cu_ld(ys.p, ys.t, r * C + c);
            }
            zt__cu_st(out.p, out.t, t * C + c, acc);
        }
}

__global__ void __launch_bounds__(1024) zt__cu_moe_combine_bwd(zt__cu_t dys, float *dweight, zt__cu_t dout, zt__cu_t ys,
                                                               const float *weight, const int32_t *where, int64_t N,
                                                               int64_t C, int64_t k) {
    __shared__ float sh[32];
    for (int64_t t = blockIdx.x; t < N; t += gridDim.x)
        for (int64_t j = 0; j < k; j++) {
            int64_t r = zt__cu_moe_row(where, t * k + j, N * k);
            if (r < 0) continue; /* the same for every thread: where[] is read by all */
            float w = weight[t * k + j], dot = 0.0f;
            for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
                float g = zt__cu_ld(dout.p, dout.t, t * C + c);
                dot += g * zt__cu_ld(ys.p, ys.t, r * C + c);
                zt__cu_st(dys.p, dys.t, r * C + c, zt__cu_ld(dys.p, dys.t, r * C + c) + w * g);
            }
            dot = zt__cu_block_sum(dot, sh);
            if (threadIdx.x == 0) dweight[t * k + j] += dot;
        }
}

/* the gated add (Qwen2-MoE's shared expert): a block per row; the gate's gradient a block sum */
__global__ void __launch_bounds__(1024) zt__cu_gated_add(int fwd, zt__cu_t out_or_dy, zt__cu_t dgate, zt__cu_t dout,
                                                         zt__cu_t y, zt__cu_t gate, int64_t N, int64_t C) {
    __shared__ float sh[32];
    for (int64_t n = blockIdx.x; n < N; n += gridDim.x) {
        float sg = 1.0f / (1.0f + expf(-zt__cu_ld(gate.p, gate.t, n))), dot = 0.0f;
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
            int64_t i = n * C + c;
            float yv = zt__cu_ld(y.p, y.t, i), d = fwd ? yv : zt__cu_ld(dout.p, dout.t, i);
            dot += d * yv;
            zt__cu_st(out_or_dy.p, out_or_dy.t, i, zt__cu_ld(out_or_dy.p, out_or_dy.t, i) + sg * d);
        }
        if (fwd) continue; /* the same for every block */
        dot = zt__cu_block_sum(dot, sh);
        if (threadIdx.x == 0) zt__cu_st(dgate.p, dgate.t, n, zt__cu_ld(dgate.p, dgate.t, n) + dot * sg * (1.0f - sg));
    }
}

/* columns between heads (zt_head_cols_*): a block per row, a thread per (head, column) of the written side; backward
   sums the heads that read one head in order, as the CPU backend */
__global__ void __launch_bounds__(1024) zt__cu_head_cols(int fwd, zt__cu_t dst, int64_t d0, zt__cu_t src, int64_t s0,
                                                         int64_t D, int64_t R, int64_t HO, int64_t DO, int64_t HI,
                                                         int64_t DI) {
    for (int64_t n = blockIdx.x; n < R; n += gridDim.x) {
        if (fwd) {
            for (int64_t i = threadIdx.x; i < HO * D; i += blockDim.x) {
                int64_t h = i / D, j = i % D;
                float x = zt__cu_ld(src.p, src.t, (n * HI + (HI == 1 ? 0 : h)) * DI + s0 + j);
                zt__cu_st(dst.p, dst.t, (n * HO + h) * DO + d0 + j, x);
            }
            continue;
        }
        for (int64_t i = threadIdx.x; i < HI * D; i += blockDim.x) {
            int64_t hi = i / D, j = i % D, at = (n * HI + hi) * DI + d0 + j;
            float acc = 0.0f;
            for (int64_t h = HI == 1 ? 0 : hi; h < (HI == 1 ? HO : hi + 1); h++)
                acc += zt__cu_ld(src.p, src.t, (n * HO + h) * DO + s0 + j);
            zt__cu_st(dst.p, dst.t, at, zt__cu_ld(dst.p, dst.t, at) + acc);
        }
    }
}

/* >>columns ------------------------------------------------------------------------------------- */

/* Column sums over rows, for bias gradients (mode 0: out[c] += sum_r x) and norm weights (mode 1:
   dweight[c] += sum_r dout * xhat, dbias[c] += sum_r dout). A block of 32 x 32 threads owns 32
   columns; thread row y sums rows y, y+32, ...; the 32 partial sums are then added in order of y.
   Splitting depends on the shape only, so the result does not change between runs. A norm of G weight
   rows is summed G rows at a time, (R, C) = (rows / G, G * its C): column c's statistics are row r * G + c / (C / G)'s. */
#define ZT__CU_COLS 32
__global__ void __launch_bounds__(1024) zt__cu_colsum(int mode, zt__cu_t out, zt__cu_t out2, zt__cu_t x, zt__cu_t inp, const float *mean,
                              const float *rstd, int64_t R, int64_t C, int64_t G) {
    __shared__ float part[2][ZT__CU_COLS][ZT__CU_COLS + 1];
    int64_t c = blockIdx.x * (int64_t)ZT__CU_COLS + threadIdx.x;
    float s = 0.0f, s2 = 0.0f;
    if (c < C)
        for (int64_t r = threadIdx.y; r < R; r += ZT__CU_COLS) {
            float g = zt__cu_ld(x.p, x.t, r * C + c);
            if (mode == 0) {
                s += g;
            } else {
                int64_t row = G > 1 ? r * G + c / (C / G) : r;
                float mu = mean ? mean[row] : 0.0f;
                s += g * ((zt__cu_ld(inp.p, inp.t, r * C + c) - mu) * rstd[row]);
                s2 += g;
            }
        }
    part[0][threadIdx.y][threadIdx.x] = s;
    part[1][threadIdx.y][threadIdx.x] = s2;
    __syncthreads();
    if (threadIdx.y != 0 || c >= C) return;
    s = 0.0f, s2 = 0.0f;
    for (int y = 0; y < ZT__CU_COLS; y++) s += part[0][y][threadIdx.x], s2 += part[1][y][threadIdx.x];
    if (out.p) zt__cu_st(out.p, out.t, c, zt__cu_ld(out.p, out.t, c) + s);
    if (out2.p) zt__cu_st(out2.p, out2.t, c, zt__cu_ld(out2.p, out2.t, c) + s2);
}

/* sum of squares: part p of zt__sumsq_chunk(n) elements in double by block p, then the parts in order */
__global__ void zt__cu_sumsq_parts(double *parts, zt__cu_t x, int64_t n, int64_t chunk) {
    __shared__ double sh[32];
    int64_t i0 = blockIdx.x * chunk, i1 = ZT__MIN(n, i0 + chunk);
    double s = 0.0;
    for (int64_t i = i0 + threadIdx.x; i < i1; i += blockDim.x) {
        double v = (double)zt__cu_ld(x.p, x.t, i);
        s += v * v;
    }
    s = zt__cu_block_sum_d(s, sh);
    if (threadIdx.x == 0) parts[blockIdx.x] = s;
}
__global__ void zt__cu_sumsq_total(float *out, const double *parts, int64_t n_parts) {
    double s = 0.0;
    for (int64_t i = 0; i < n_parts; i++) s += parts[i];
    *out = (float)s;
}

/* ---- GEMM fallback: any dtype mix, 32 x 32 tiles of c in fp32, one rounding ---- */

typedef struct zt__cu_gemm_args {
    zt__cu_t a, b, c, bias;
    int64_t M, N, K, a_stride, b_stride, c_stride; /* batch strides in elements (0: shared operand) */
    int64_t a_si, a_sk, b_sk, b_sj;                /* op(a)(i,k) at i*a_si + k*a_sk; op(b)(k,j) at k*b_sk + j*b_sj */
    float alpha, beta;
} zt__cu_gemm_args;

__global__ void __launch_bounds__(1024) zt__cu_gemm_simt(zt__cu_gemm_args g, int64_t batch) {
    __shared__ float as[32][33], bs[32][33];
    int64_t row_tiles = ZT__CDIV(g.M, 32);
    for (int64_t bi = blockIdx.z; bi < batch; bi += gridDim.z) /* grid y and z are at most 65535 */
        for (int64_t ty = blockIdx.y; ty < row_tiles; ty += gridDim.y) {
            int64_t i = ty * 32 + threadIdx.y, j = blockIdx.x * 32 + threadIdx.x;
            int64_t ao = bi * g.a_stride, bo = bi * g.b_stride;
            float acc = 0.0f;
            for (int64_t k0 = 0; k0 < g.K; k0 += 32) {
                int64_t ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
                as[threadIdx.y][threadIdx.x] = i < g.M && ka < g.K ? zt__cu_ld(g.a.p, g.a.t, ao + i * g.a_si + ka * g.a_sk) : 0.0f;
                bs[threadIdx.y][threadIdx.x] = kb < g.K && j < g.N ? zt__cu_ld(g.b.p, g.b.t, bo + kb * g.b_sk + j * g.b_sj) : 0.0f;
                __syncthreads();
                for (int k = 0; k < 32; k++) acc += as[threadIdx.y][k] * bs[k][threadIdx.x];
                __syncthreads();
            }
            if (i < g.M && j < g.N) {
                int64_t ci = bi * g.c_stride + i * g.N + j;
                float v = g.alpha * acc;
                if (g.beta != 0.0f) v += g.beta * zt__cu_ld(g.c.p, g.c.t, ci);
                if (g.bias.p) v += zt__cu_ld(g.bias.p, g.bias.t, j);
                zt__cu_st(g.c.p, g.c.t, ci, v);
            }
        }
}

/* >>gemm -------------------------------------------------------------------------------------- */

/* cuBLASLt computes column-major products; zt's tensors are row-major. A row-major c (M,N) is a
   column-major c^T (N,M), and c^T = op(b)^T op(a)^T, so the call passes b as cuBLASLt's A and a as its
   B. A plan (descriptors, layouts and the algorithm the heuristic chose) is made the first time a
   shape is seen and kept: a training step's shapes repeat, so after the first step no gemm creates
   anything. */
#define ZT__CU_PLANS 256
#define ZT__CU_WORKSPACE ((size_t)32 << 20)
#define ZT__CU_STAGE ((size_t)16 << 20)

typedef struct zt__cu_plan_key {
    int64_t M, N, K, batch, a_stride, b_stride, c_stride;
    int ta, tb, dt_a, dt_b, dt_c, bias, align;
} zt__cu_plan_key;

typedef struct zt__cu_plan {
    zt__cu_plan_key key;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
    int usable; /* 0: the heuristic found nothing; the SIMT kernel runs instead */
} zt__cu_plan;

static cudaDataType_t zt__cu_type(zt_dtype t) {
    return t == ZT_BF16 ? CUDA_R_16BF : t == ZT_F16 ? CUDA_R_16F : CUDA_R_32F;
}

/* the largest power of two, at most 16, dividing every pointer the product touches. cuBLASLt's kernels
   ask for 16 bytes at most (vector loads, Hopper's TMA); stopping there gives a product one plan, so one
   algorithm and the same bits, wherever the arena put its operands: stage 0 and ZeRO's buffers, the two
   overlap_comm buffers, with and without activation checkpointing */
static int zt__cu_alignment(const void *const *ptrs, int n) {
    uintptr_t bits = 16;
    for (int i = 0; i < n; i++)
        if (ptrs[i]) bits |= (uintptr_t)ptrs[i];
    return (int)(bits & (~bits + 1));
}

static cublasLtMatrixLayout_t zt__cu_layout(zt_dtype t, int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                                            int64_t stride) {
    cublasLtMatrixLayout_t l;
    ZT__CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, zt__cu_type(t), (uint64_t)rows, (uint64_t)cols, ld));
    if (batch > 1) {
        int32_t count = (int32_t)batch;
        ZT__CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
        ZT__CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
    }
    return l;
}

/* >>backend ------------------------------------------------------------------------------------- */

typedef struct zt__cuda {
    int device, major, minor, sms;
    char name[256];
    void *device_mem, *pinned_mem;
    cudaStream_t streams[ZT_MAX_STREAMS];
    cudaEvent_t events[ZT_MAX_EVENTS];
    double *sumsq_parts[ZT_MAX_STREAMS]; /* ZT__SUMSQ_PARTS per stream */
    cublasLtHandle_t lt;
    void *workspace[ZT_MAX_STREAMS]; /* cuBLASLt's scratch, one per stream: products on two streams may overlap */
    uint8_t *stage; /* ZT__CU_STAGE bytes of pinned memory for collectives through shared memory */
#ifndef ZT_NO_NCCL
    /* NCCL, for the communicator `nccl_for`; a watchdog thread turns a dead rank or a timeout during
       a collective into a message naming the rank, aborting the communicator instead of hanging */
    ncclComm_t nccl;
    zt_comm *nccl_for;
    cudaEvent_t nccl_done;      /* recorded after the latest collective */
    uint64_t nccl_since;        /* when the latest collective was queued (ns) */
    pthread_t watchdog;
    int watching, stop_watch;
#endif
    zt__cu_plan plans[ZT__CU_PLANS];
    int n_plans, plans_full_warned, plans_slow_warned;
} zt__cuda;

static zt__cuda *zt__cuda_of(zt_backend *b) { return (zt__cuda *)b->impl; }
static cudaStream_t zt__cu_stream(zt_stream *s) { return zt__cuda_of(s->backend)->streams[s->index]; }

static zt__cu_plan *zt__cu_plan_for(zt__cuda *cu, const zt__cu_plan_key *k, zt__cu_plan *spare) {
    for (int i = 0; i < cu->n_plans; i++)
        if (memcmp(&cu->plans[i].key, k, sizeof *k) == 0) return &cu->plans[i];
    zt__cu_plan *p = spare;
    if (cu->n_plans < ZT__CU_PLANS) p = &cu->plans[cu->n_plans++];
    else if (!cu->plans_full_warned) {
        cu->plans_full_warned = 1;
        zt_log(ZT_LOG_WARN, "more than %d gemm shapes: plans beyond them are made at every call", ZT__CU_PLANS);
    }
    memset(p, 0, sizeof *p);
    p->key = *k;
    /* cuBLASLt's A is op(b)^T (N,K): b (K,N) row-major is that matrix column-major; b (N,K) is its transpose */
    zt_dtype da = (zt_dtype)k->dt_a, db = (zt_dtype)k->dt_b, dc = (zt_dtype)k->dt_c;
    cublasOperation_t opa = k->tb ? CUBLAS_OP_T : CUBLAS_OP_N, opb = k->ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    p->la = k->tb ? zt__cu_layout(db, k->K, k->N, k->K, k->batch, k->b_stride)
                  : zt__cu_layout(db, k->N, k->K, k->N, k->batch, k->b_stride);
    p->lb = k->ta ? zt__cu_layout(da, k->M, k->K, k->M, k->batch, k->a_stride)
                  : zt__cu_layout(da, k->K, k->M, k->K, k->batch, k->a_stride);
    p->lc = zt__cu_layout(dc, k->N, k->M, k->N, k->batch, k->c_stride);
    ZT__CUBLAS_CHECK(cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    ZT__CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa));
    ZT__CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb));
    if (k->bias) { /* a stand-in bias address with the real one's alignment, for the heuristic */
        cublasLtEpilogue_t ep = CUBLASLT_EPILOGUE_BIAS;
        const void *stand_in = (const void *)(uintptr_t)k->align;
        ZT__CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof ep));
        ZT__CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &stand_in, sizeof stand_in));
    }
    cublasLtMatmulPreference_t pref;
    ZT__CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    uint64_t ws = ZT__CU_WORKSPACE;
    uint32_t align = (uint32_t)k->align;
    ZT__CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    ZT__CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align, sizeof align));
    ZT__CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align, sizeof align));
    ZT__CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align, sizeof align));
    ZT__CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align, sizeof align));
    cublasLtMatmulHeuristicResult_t h;
    int found = 0;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(cu->lt, p->desc, p->la, p->lb, p->lc, p->lc, pref, 1, &h, &found);
    ZT__CUBLAS_CHECK(cublasLtMatmulPreferenceDestroy(pref));
    p->usable = st == CUBLAS_STATUS_SUCCESS && found > 0;
    if (p->usable) p->algo = h.algo;
    else if (cu->plans_slow_warned < 8) { /* said, since it costs 10-100x: a GPU run's log shows which shapes and why */
        cu->plans_slow_warned++;
        zt_log(ZT_LOG_WARN, "cuBLASLt has no algorithm for the %s x %s -> %s product M %lld N %lld K %lld (batch %lld, "
               "transposes %d %d, alignment %d, bias %d; %s): zt's SIMT kernel computes it, far slower",
               zt_dtype_name(da), zt_dtype_name(db), zt_dtype_name(dc), (long long)k->M, (long long)k->N,
               (long long)k->K, (long long)k->batch, k->ta, k->tb, k->align, k->bias,
               st == CUBLAS_STATUS_SUCCESS ? "none found" : cublasGetStatusString(st));
    }
    return p;
}

static void zt__cu_plan_destroy(zt__cu_plan *p) {
    if (p->desc) cublasLtMatmulDescDestroy(p->desc);
    if (p->la) cublasLtMatrixLayoutDestroy(p->la);
    if (p->lb) cublasLtMatrixLayoutDestroy(p->lb);
    if (p->lc) cublasLtMatrixLayoutDestroy(p->lc);
    memset(p, 0, sizeof *p);
}

static void zt__cu_gemm(zt__cuda *cu, int si, const zt__args_gemm *g) {
    cudaStream_t st = cu->streams[si];
    int batched = g->a.shape.ndim == 3 && g->b.shape.ndim == 3 && g->c.shape.ndim == 3;
    int64_t ar, ac, br, bc, cr, cc;
    zt__matrix_dims(g->a, batched, &ar, &ac);
    zt__matrix_dims(g->b, batched, &br, &bc);
    zt__matrix_dims(g->c, batched, &cr, &cc);
    int64_t M = cr, N = cc, K = g->trans_a ? ar : ac, batch = batched ? g->c.shape.d[0] : 1;
    if (M == 0 || N == 0 || batch == 0) return;
    int64_t a_stride = batch > 1 && g->a.shape.d[0] > 1 ? ar * ac : 0;
    int64_t b_stride = batch > 1 && g->b.shape.d[0] > 1 ? br * bc : 0;
    int has_bias = zt__present(g->bias);
    zt_dtype da = g->a.dtype, db = g->b.dtype, dc = g->c.dtype;
    /* cuBLASLt takes a and b of one dtype, c of that dtype or f32, a bias epilogue in c's dtype */
    int lt = da == db && (dc == da || dc == ZT_F32) && K > 0 && (!has_bias || (g->bias.dtype == dc && batch == 1));
    if (lt) {
        const void *ptrs[4] = {g->a.data, g->b.data, g->c.data, has_bias ? g->bias.data : NULL};
        zt__cu_plan_key k;
        memset(&k, 0, sizeof k); /* compared with memcmp: no stray padding bytes */
        k.M = M, k.N = N, k.K = K, k.batch = batch, k.a_stride = a_stride, k.b_stride = b_stride, k.c_stride = M * N;
        k.ta = g->trans_a, k.tb = g->trans_b, k.dt_a = (int)da, k.dt_b = (int)db, k.dt_c = (int)dc, k.bias = has_bias;
        k.align = zt__cu_alignment(ptrs, 4);
        zt__cu_plan spare, *p = zt__cu_plan_for(cu, &k, &spare);
        if (p->usable) {
            float alpha = g->alpha, beta = g->beta;
            if (has_bias) ZT__CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                                        &g->bias.data, sizeof g->bias.data));
            ZT__CUBLAS_CHECK(cublasLtMatmul(cu->lt, p->desc, &alpha, g->b.data, p->la, g->a.data, p->lb, &beta, g->c.data,
                                            p->lc, g->c.data, p->lc, &p->algo, cu->workspace[si], ZT__CU_WORKSPACE, st));
        }
        int done = p->usable;
        if (p == &spare) zt__cu_plan_destroy(p);
        if (done) return;
    }
    zt__cu_gemm_args a;
    a.a = zt__cu_of(g->a), a.b = zt__cu_of(g->b), a.c = zt__cu_of(g->c), a.bias = zt__cu_of(g->bias);
    if (!has_bias) a.bias.p = NULL;
    a.M = M, a.N = N, a.K = K, a.a_stride = a_stride, a.b_stride = b_stride, a.c_stride = M * N;
    a.a_si = g->trans_a ? 1 : ac, a.a_sk = g->trans_a ? ac : 1; /* op(a)(i,k): a (M,K) or a (K,M) */
    a.b_sk = g->trans_b ? 1 : bc, a.b_sj = g->trans_b ? bc : 1; /* op(b)(k,j): b (K,N) or b (N,K) */
    a.alpha = g->alpha, a.beta = g->beta;
    dim3 grid((unsigned)ZT__CDIV(N, 32), (unsigned)ZT__MIN(ZT__CDIV(M, 32), (int64_t)65535),
              (unsigned)ZT__MIN(batch, (int64_t)65535)), block(32, 32);
    zt__cu_gemm_simt<<<grid, block, 0, st>>>(a, batch);
    ZT__CU_CHECK(cudaGetLastError());
}


/* >>attention ----------------------------------------------------------------------------------- */

/*@@ATTENTION@@*/
/* ---- attention: causal, grouped-query, FlashAttention-2 style ------------------------------------

   The CPU reference is zt__att_fwd_task, zt__att_dq_task and zt__att_dkv_task in zt.h; these kernels
   compute the same thing. q (B,T,NH,HD), k and v (B,T,NKV,HD), head h reads kv head h / (NH/NKV);
   out (B,T,NH,HD); lse (B,NH,T) f32, natural log. Query t sees keys [starts[b*T+t], t], or [0, t]
   without starts. A block owns a tile of queries (forward, dq) or of keys (dk, dv) and walks the tiles
   of the other side through shared memory with an online softmax: no T x T matrix exists anywhere.

   Backward accumulates (+=) like the CPU and is deterministic: no atomics. dq is one kernel (a block
   per query tile and head), dk and dv another (a block per key tile and kv head, summing the group's
   query heads and then its query tiles in increasing order). D_i = dot(dout_i, out_i) is computed
   where it is needed (the backend has no scratch for it).

   Masking. Key j is visible to query i iff i < T and start_i <= j <= i. Rows past T get start
   ZT__CUATT_NONE, which fails start_i <= j for every j, so one comparison pair covers causality,
   starts, and the ragged last tile. Key tiles that end before the smallest start of a query tile are
   never loaded (the CPU's kmin - kmin % KB); a query tile none of whose rows sees a key tile is skipped
   in dk/dv. Rows past T in shared tiles are zero, since a masked P or dS of 0 times uninitialised
   shared memory could be NaN. Online softmax: a row that has seen no visible key keeps m = -inf; its
   update uses m_use = 0 instead, so exp(-inf - m_use) = 0 and no inf - inf NaN arises. Every real row
   sees at least itself, so its final m is finite and l >= 1.
   A starts value outside [0, t] is reported with zt__cu_fail(ZT__CU_E_ATT_START, b, t, value) (the
   host raises it at the next sync, as the CPU's zt_fatal) and clamped so the kernel stays in bounds.
   Sinks (gpt-oss's, a logit per head): the forward's last step adds exp(sink) to each row's sum under the larger of
   the two maxima, so out and lse include it; dq and dk/dv need nothing more (D_i = dout_i . out_i already is the sum
   over the keys alone, the sink having no value); zt__cuatt_dsinks sums each head's -exp(sink - lse) D_i.

   Two paths, chosen on the host per call:

   wmma (tensor cores): q, k, v, out (backward also dout, dq, dk, dv) all bf16 or all f16, HD % 16 == 0,
   HD <= 128, every data pointer 16-byte aligned, compute capability >= 8.0. nvcuda::wmma 16x16x16 with
   f32 accumulators. 4 warps; forward and dq own 64 queries (16 per warp) and walk 64-key tiles; dk/dv
   own 64 keys (16 per warp) and walk 64-query tiles. P and dS are rounded to the 16-bit dtype before
   their products, as FlashAttention does (with f16, dS below ~6e-8 flushes to 0: use loss scaling as
   for any f16 training). Exponentials are exp2f of log2(e)-scaled scores (MUFU.EX2 plus denormal
   handling, 2 ulp); lse is stored in natural log.
     No accumulator element layout is assumed: every accumulator goes through store_matrix_sync into
   shared memory before a lane reads it. Fragments used (PTX wmma, all 16x16x16):
     matrix_a row_major at p, ldm: element (r, k) at p[r*ldm + k]   (Q, dO, K, V rows; P, dS)
     matrix_b col_major at p, ldm: element (k, n) at p[n*ldm + k]   (K^T, V^T, Q^T, dO^T from row tiles)
     matrix_b row_major at p, ldm: element (k, n) at p[k*ldm + n]   (V, K, dO, Q as right factors)
     store_matrix_sync(p, acc, ldm, mem_row_major): element (r, c) at p[r*ldm + c]
   ldm is a multiple of 8 (16-bit) or 4 (f32) and every fragment pointer is 32-byte aligned: tiles
   start at multiples of 32 bytes of a 128-byte aligned base and rows/columns step by 16.
     A lane reads a warp's 16 x 64 f32 tile (row stride ZT__CUATT_SLD = 72) as row lane/2, columns
   8i + 4(lane&1) + e (i < 8, e < 4): with stride 72 the 8 lanes of each float4 phase hit distinct
   banks. The forward keeps O in registers in that layout (16 columns of HD per 16 x 16 block: 4(lane&1)
   + e and 8 + 4(lane&1) + e) and adds each P V block staged through a 16 x 16 tile (stride 24).
   16-bit tiles have row stride HD + 8, so the 8 rows of each ldmatrix phase start 16 bytes apart mod
   128 (conflict-free for HD = 64, 80, 128).

   simt (fallback): any float dtype per tensor, HD <= 256 (larger: zt_fatal). f32 math and expf as
   the CPU. 4 warps x 4 rows: forward and dq own 16 queries and walk 32-key tiles with a key per lane;
   dk/dv own 16 keys and walk 32-query tiles with a query per lane. f32 shared tiles, row stride HD
   rounded up to 8 plus 4 (zero padded), so the float4 dot products of 8 lanes on 8 rows do not
   conflict.

   Dynamic shared memory, bytes (LD = HD + 8; ld = HD rounded up to 8, + 4):
     wmma forward   3*64*LD*2 + 4*16*72*4 + 64*4     HD 64: 46336   80: 52480   128: 70912
     wmma dq, dk/dv 4*64*LD*2 + 4*16*72*4 + 3*64*4   HD 64: 56064   80: 64256   128: 88832
     simt forward   (16+32+32)*ld*4 + 16*4           HD 64: 21824  128: 42304   256: 83264
     simt dq        (16+16+32+32)*ld*4 + 16*4        HD 64: 26176  128: 50752   256: 99904
     simt dk/dv     (16+16+32+32)*ld*4 + 3*32*4      HD 64: 26496  128: 51072   256: 100224
   All within the 99 KB (101376 bytes) per block of sm_86/89; above 48 KB the kernel's limit is raised
   with cudaFuncSetAttribute at launch, and a device with less (sm_75: 64 KB) gets a zt_fatal that
   names the head dimension. */

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#define ZT__CUATT_ALL 0xffffffffu
#define ZT__CUATT_NONE 0x7fffffff /* start of a row past T: sees no key */
#define ZT__CUATT_LOG2E 1.4426950408889634f
#define ZT__CUATT_LN2 0.6931471805599453f
#define ZT__CUATT_THREADS 128     /* every kernel: 4 warps */

#define ZT__CUATT_GR 4  /* simt: rows (queries; keys in dk/dv) per warp */
#define ZT__CUATT_GQ 16 /* simt: rows per block, 4 warps x GR */
#define ZT__CUATT_GK 32 /* simt: keys per tile (queries per tile in dk/dv), one per lane */

#define ZT__CUATT_BQ 64  /* wmma: queries per block (forward, dq) and per tile (dk/dv), 16 per warp */
#define ZT__CUATT_BK 64  /* wmma: keys per tile (forward, dq) and per block (dk/dv), 16 per warp */
#define ZT__CUATT_SLD 72 /* wmma: row stride (floats) of a warp's 16 x 64 f32 score tile */
#define ZT__CUATT_OLD 24 /* wmma: row stride (floats) of the forward's 16 x 16 staging tile */

extern __shared__ __align__(128) unsigned char zt__cuatt_smem[];

/* What a kernel needs of zt__args_attention. o is written by the forward and read by the backward;
   the dtypes matter to the simt path only (the wmma path's are one 16-bit type, its template). */
typedef struct zt__cuatt_p {
    const void *q, *k, *v, *dout;
    void *o, *dq, *dk, *dv;
    float *lse;            /* (B,NH,T) */
    const int32_t *starts; /* (B,T), or NULL: every query starts at key 0 */
    int tq, tk, tv, to, tdout, tdq, tdk, tdv;
    int T, NH, NKV, HD, group;
    float scale, cap;      /* cap > 0: scores capped as cap * tanh(score / cap) (simt path only) */
    int window;            /* > 0: query t sees no key before t - window + 1 */
    float drop, dscale;    /* drop > 0: attention dropout, the kept probabilities times dscale */
    uint64_t dseed;
    int64_t doffset;
    const void *sinks;     /* (NH) or NULL: gpt-oss's sinks, in the forward's last step and dsinks' kernel */
    int tsinks;
} zt__cuatt_p;

typedef void (*zt__cuatt_kernel)(zt__cuatt_p);

/* a scaled score through the cap (the CPU's zt__att_score), and d capped / d scaled from the capped one */
static __device__ __forceinline__ float zt__cuatt_cap(const zt__cuatt_p &p, float dot) {
    const float s = dot * p.scale;
    return p.cap > 0.0f ? p.cap * tanhf(s / p.cap) : s;
}
static __device__ __forceinline__ float zt__cuatt_cap_grad(const zt__cuatt_p &p, float capped) {
    if (p.cap <= 0.0f) return 1.0f;
    const float t = capped / p.cap;
    return 1.0f - t * t;
}

/* what dropout multiplies probability (b, h, i, j) by (the CPU's zt__att_drop): 1 without dropout */
static __device__ __forceinline__ float zt__cuatt_drop(const zt__cuatt_p &p, int b, int h, int i, int j) {
    if (p.drop <= 0.0f) return 1.0f;
    return zt_dropout_factor(p.dseed, p.doffset + (((int64_t)b * p.NH + h) * p.T + i) * p.T + j, p.drop, p.dscale);
}

/* element offset of row (b, t) of head h in a (B,T,H,HD) tensor */
static __device__ __forceinline__ int64_t zt__cuatt_off(int b, int t, int h, int T, int H, int HD) {
    return (((int64_t)b * T + t) * H + h) * HD;
}

/* the first key query t of batch b sees, its document's or its window's (the CPU's zt__att_start);
   ZT__CUATT_NONE past T */
static __device__ __forceinline__ int zt__cuatt_start(const zt__cuatt_p &p, int b, int t) {
    const int T = p.T;
    if (t >= T) return ZT__CUATT_NONE;
    int s = p.starts ? p.starts[(int64_t)b * T + t] : 0;
    if (s < 0 || s > t) {
        zt__cu_fail(ZT__CU_E_ATT_START, b, t, s);
        s = s < 0 ? 0 : t;
    }
    return p.window > 0 ? max(s, t - p.window + 1) : s;
}

static __device__ __forceinline__ float zt__cuatt_wsum(float x) {
    for (int o = 16; o; o >>= 1) x += __shfl_xor_sync(ZT__CUATT_ALL, x, o);
    return x;
}
static __device__ __forceinline__ float zt__cuatt_wmax(float x) {
    for (int o = 16; o; o >>= 1) x = fmaxf(x, __shfl_xor_sync(ZT__CUATT_ALL, x, o));
    return x;
}

/* min and max of n <= 64 ints in shared memory, in every lane of the calling warp */
static __device__ __forceinline__ void zt__cuatt_minmax(const int *v, int n, int *mn, int *mx) {
    int a = ZT__CUATT_NONE, c = -1;
    for (int i = (int)(threadIdx.x & 31); i < n; i += 32) {
        a = min(a, v[i]);
        c = max(c, v[i]);
    }
    for (int o = 16; o; o >>= 1) {
        a = min(a, __shfl_xor_sync(ZT__CUATT_ALL, a, o));
        c = max(c, __shfl_xor_sync(ZT__CUATT_ALL, c, o));
    }
    *mn = a;
    *mx = c;
}

/* ---- simt path ---- */

static __device__ __forceinline__ float zt__cuatt_ld(const void *p, int dt, int64_t i) {
    if (dt == ZT_F32) return ((const float *)p)[i];
    if (dt == ZT_BF16) return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    return __half2float(((const __half *)p)[i]);
}
static __device__ __forceinline__ void zt__cuatt_st(void *p, int dt, int64_t i, float x) {
    if (dt == ZT_F32) ((float *)p)[i] = x;
    else if (dt == ZT_BF16) ((__nv_bfloat16 *)p)[i] = zt__cu_bf16(x);
    else ((__half *)p)[i] = zt__cu_f16(x);
}

/* row stride (floats) of a simt shared tile */
static __host__ __device__ __forceinline__ int zt__cuatt_gld(int HD) { return (HD + 7) / 8 * 8 + 4; }

/* rows [t0, t0 + rows) of head h of x (B,T,H,HD) as f32 into dst (row stride ld), zero past HD and T */
static __device__ __forceinline__ void zt__cuatt_gload(float *dst, int rows, int ld, const void *x, int dt, int b,
                                                       int t0, int h, int T, int H, int HD) {
    for (int e = threadIdx.x; e < rows * ld; e += ZT__CUATT_THREADS) {
        const int r = e / ld, c = e - r * ld, t = t0 + r;
        dst[e] = t < T && c < HD ? zt__cuatt_ld(x, dt, zt__cuatt_off(b, t, h, T, H, HD) + c) : 0.0f;
    }
}

/* Forward, simt. Block (query tile from the last, head, batch); warp w owns queries t0 + 4w + r. A lane
   scores key k0 + lane against its warp's 4 rows, then P V broadcasts p by shuffle while the lane
   accumulates O columns lane + 32cc (NC = ceil(HD/32) of them). */
template <int NC>
__global__ void __launch_bounds__(ZT__CUATT_THREADS) zt__cuatt_fwd_simt(zt__cuatt_p p) {
    const int T = p.T, HD = p.HD, ld = zt__cuatt_gld(HD), n4 = (HD + 3) / 4;
    const int t0 = (int)(gridDim.x - 1 - blockIdx.x) * ZT__CUATT_GQ, h = blockIdx.y, b = blockIdx.z;
    const int kvh = h / p.group, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    float *sQ = (float *)zt__cuatt_smem, *sK = sQ + ZT__CUATT_GQ * ld, *sV = sK + ZT__CUATT_GK * ld;
    int *sStart = (int *)(sV + ZT__CUATT_GK * ld);
    if (threadIdx.x < ZT__CUATT_GQ) sStart[threadIdx.x] = zt__cuatt_start(p, b, t0 + threadIdx.x);
    zt__cuatt_gload(sQ, ZT__CUATT_GQ, ld, p.q, p.tq, b, t0, h, T, p.NH, HD);
    __syncthreads();
    int kmin, kmax;
    zt__cuatt_minmax(sStart, ZT__CUATT_GQ, &kmin, &kmax);
    const int tlast = min(t0 + ZT__CUATT_GQ, T) - 1;
    int lo[ZT__CUATT_GR], hi[ZT__CUATT_GR];
    float m[ZT__CUATT_GR], l[ZT__CUATT_GR], o[ZT__CUATT_GR][NC]; /* l: this lane's keys only */
#pragma unroll
    for (int r = 0; r < ZT__CUATT_GR; r++) {
        const int row = warp * ZT__CUATT_GR + r;
        lo[r] = sStart[row];
        hi[r] = t0 + row;
        m[r] = -INFINITY;
        l[r] = 0.0f;
#pragma unroll
        for (int cc = 0; cc < NC; cc++) o[r][cc] = 0.0f;
    }
    for (int k0 = kmin - kmin % ZT__CUATT_GK; k0 <= tlast; k0 += ZT__CUATT_GK) {
        __syncthreads(); /* the previous tile's readers are done */
        zt__cuatt_gload(sK, ZT__CUATT_GK, ld, p.k, p.tk, b, k0, kvh, T, p.NKV, HD);
        zt__cuatt_gload(sV, ZT__CUATT_GK, ld, p.v, p.tv, b, k0, kvh, T, p.NKV, HD);
        __syncthreads();
        float s[ZT__CUATT_GR];
#pragma unroll
        for (int r = 0; r < ZT__CUATT_GR; r++) s[r] = 0.0f;
        const float4 *kr = (const float4 *)(sK + lane * ld);
        for (int i = 0; i < n4; i++) {
            const float4 kv = kr[i];
#pragma unroll
            for (int r = 0; r < ZT__CUATT_GR; r++) {
                const float4 qv = ((const float4 *)(sQ + (warp * ZT__CUATT_GR + r) * ld))[i];
                s[r] += qv.x * kv.x + qv.y * kv.y + qv.z * kv.z + qv.w * kv.w;
            }
        }
        const int j = k0 + lane;
#pragma unroll
        for (int r = 0; r < ZT__CUATT_GR; r++) {
            const float x = j >= lo[r] && j <= hi[r] ? zt__cuatt_cap(p, s[r]) : -INFINITY;
            const float mnew = fmaxf(m[r], zt__cuatt_wmax(x)), muse = mnew == -INFINITY ? 0.0f : mnew;
            const float corr = expf(m[r] - muse);
            s[r] = expf(x - muse);
            l[r] = l[r] * corr + s[r];
            s[r] *= zt__cuatt_drop(p, b, h, t0 + warp * ZT__CUATT_GR + r, j); /* after the sum: lse's */
            m[r] = mnew;
#pragma unroll
            for (int cc = 0; cc < NC; cc++) o[r][cc] *= corr;
        }
        const int jn = min(ZT__CUATT_GK, tlast + 1 - k0); /* later keys are masked for every row */
        for (int jj = 0; jj < jn; jj++) {
            float vv[NC];
#pragma unroll
            for (int cc = 0; cc < NC; cc++) {
                const int c = lane + 32 * cc;
                vv[cc] = c < HD ? sV[jj * ld + c] : 0.0f;
            }
#pragma unroll
            for (int r = 0; r < ZT__CUATT_GR; r++) {
                const float pj = __shfl_sync(ZT__CUATT_ALL, s[r], jj);
#pragma unroll
                for (int cc = 0; cc < NC; cc++) o[r][cc] += pj * vv[cc];
            }
        }
    }
    const float sink = p.sinks ? zt__cuatt_ld(p.sinks, p.tsinks, h) : -INFINITY; /* none: exp(sink - m) is 0 */
#pragma unroll
    for (int r = 0; r < ZT__CUATT_GR; r++) {
        const int t = t0 + warp * ZT__CUATT_GR + r;
        const float lt = zt__cuatt_wsum(l[r]);
        if (t >= T) continue;
        /* the sink joins the sum last, under the larger of the two maxima (the CPU's order) */
        const float mt = fmaxf(m[r], sink), keep = expf(m[r] - mt), sum = lt * keep + expf(sink - mt);
        const float inv = keep / sum;
        const int64_t off = zt__cuatt_off(b, t, h, T, p.NH, HD);
#pragma unroll
        for (int cc = 0; cc < NC; cc++) {
            const int c = lane + 32 * cc;
            if (c < HD) zt__cuatt_st(p.o, p.to, off + c, o[r][cc] * inv);
        }
        if (lane == 0) p.lse[((int64_t)b * p.NH + h) * T + t] = mt + logf(sum);
    }
}

/* dq, simt: as the forward, with dq_i += scale * sum_j p_ij (z_ij dO_i.v_j - D_i) k_j (z_ij: dropout's factor) */
template <int NC>
__global__ void __launch_bounds__(ZT__CUATT_THREADS) zt__cuatt_dq_simt(zt__cuatt_p p) {
    const int T = p.T, HD = p.HD, ld = zt__cuatt_gld(HD), n4 = (HD + 3) / 4;
    const int t0 = (int)(gridDim.x - 1 - blockIdx.x) * ZT__CUATT_GQ, h = blockIdx.y, b = blockIdx.z;
    const int kvh = h / p.group, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    float *sQ = (float *)zt__cuatt_smem, *sdO = sQ + ZT__CUATT_GQ * ld, *sK = sdO + ZT__CUATT_GQ * ld;
    float *sV = sK + ZT__CUATT_GK * ld;
    int *sStart = (int *)(sV + ZT__CUATT_GK * ld);
    if (threadIdx.x < ZT__CUATT_GQ) sStart[threadIdx.x] = zt__cuatt_start(p, b, t0 + threadIdx.x);
    zt__cuatt_gload(sQ, ZT__CUATT_GQ, ld, p.q, p.tq, b, t0, h, T, p.NH, HD);
    zt__cuatt_gload(sdO, ZT__CUATT_GQ, ld, p.dout, p.tdout, b, t0, h, T, p.NH, HD);
    __syncthreads();
    int kmin, kmax;
    zt__cuatt_minmax(sStart, ZT__CUATT_GQ, &kmin, &kmax);
    const int tlast = min(t0 + ZT__CUATT_GQ, T) - 1;
    int lo[ZT__CUATT_GR], hi[ZT__CUATT_GR];
    float D[ZT__CUATT_GR], lse[ZT__CUATT_GR], acc[ZT__CUATT_GR][NC];
#pragma unroll
    for (int r = 0; r < ZT__CUATT_GR; r++) {
        const int row = warp * ZT__CUATT_GR + r, t = t0 + row;
        lo[r] = sStart[row];
        hi[r] = t;
        float d = 0.0f;
        if (t < T) {
            const int64_t off = zt__cuatt_off(b, t, h, T, p.NH, HD);
            for (int c = lane; c < HD; c += 32) d += sdO[row * ld + c] * zt__cuatt_ld(p.o, p.to, off + c);
        }
        D[r] = zt__cuatt_wsum(d);
        lse[r] = t < T ? p.lse[((int64_t)b * p.NH + h) * T + t] : 0.0f;
#pragma unroll
        for (int cc = 0; cc < NC; cc++) acc[r][cc] = 0.0f;
    }
    for (int k0 = kmin - kmin % ZT__CUATT_GK; k0 <= tlast; k0 += ZT__CUATT_GK) {
        __syncthreads();
        zt__cuatt_gload(sK, ZT__CUATT_GK, ld, p.k, p.tk, b, k0, kvh, T, p.NKV, HD);
        zt__cuatt_gload(sV, ZT__CUATT_GK, ld, p.v, p.tv, b, k0, kvh, T, p.NKV, HD);
        __syncthreads();
        float s[ZT__CUATT_GR], dp[ZT__CUATT_GR];
#pragma unroll
        for (int r = 0; r < ZT__CUATT_GR; r++) s[r] = dp[r] = 0.0f;
        const float4 *kr = (const float4 *)(sK + lane * ld), *vr = (const float4 *)(sV + lane * ld);
        for (int i = 0; i < n4; i++) {
            const float4 kv = kr[i], vv = vr[i];
#pragma unroll
            for (int r = 0; r < ZT__CUATT_GR; r++) {
                const float4 qv = ((const float4 *)(sQ + (warp * ZT__CUATT_GR + r) * ld))[i];
                const float4 gv = ((const float4 *)(sdO + (warp * ZT__CUATT_GR + r) * ld))[i];
                s[r] += qv.x * kv.x + qv.y * kv.y + qv.z * kv.z + qv.w * kv.w;
                dp[r] += gv.x * vv.x + gv.y * vv.y + gv.z * vv.z + gv.w * vv.w;
            }
        }
        const int j = k0 + lane;
#pragma unroll
        for (int r = 0; r < ZT__CUATT_GR; r++) {
            const float sc = zt__cuatt_cap(p, s[r]);
            const float pr = j >= lo[r] && j <= hi[r] ? expf(sc - lse[r]) : 0.0f;
            const float z = zt__cuatt_drop(p, b, h, hi[r], j);
            s[r] = pr * (z * dp[r] - D[r]) * zt__cuatt_cap_grad(p, sc) * p.scale; /* ds * scale, by key */
        }
        const int jn = min(ZT__CUATT_GK, tlast + 1 - k0);
        for (int jj = 0; jj < jn; jj++) {
            float kk[NC];
#pragma unroll
            for (int cc = 0; cc < NC; cc++) {
                const int c = lane + 32 * cc;
                kk[cc] = c < HD ? sK[jj * ld + c] : 0.0f;
            }
#pragma unroll
            for (int r = 0; r < ZT__CUATT_GR; r++) {
                const float dsj = __shfl_sync(ZT__CUATT_ALL, s[r], jj);
#pragma unroll
                for (int cc = 0; cc < NC; cc++) acc[r][cc] += dsj * kk[cc];
            }
        }
    }
#pragma unroll
    for (int r = 0; r < ZT__CUATT_GR; r++) {
        const int t = t0 + warp * ZT__CUATT_GR + r;
        if (t >= T) continue;
        const int64_t off = zt__cuatt_off(b, t, h, T, p.NH, HD);
#pragma unroll
        for (int cc = 0; cc < NC; cc++) {
            const int c = lane + 32 * cc;
            if (c < HD) zt__cuatt_st(p.dq, p.tdq, off + c, zt__cuatt_ld(p.dq, p.tdq, off + c) + acc[r][cc]);
        }
    }
}

/* dk and dv, simt. Block (key tile, kv head, batch); warp w owns keys k0 + 4w + r and walks, for each
   query head of the group and each 32-query tile from the key tile's on, the queries one per lane:
   dv_j += sum_i p_ij z_ij dO_i, dk_j += scale * sum_i ds_ij q_i (z_ij: dropout's factor). */
template <int NC>
__global__ void __launch_bounds__(ZT__CUATT_THREADS) zt__cuatt_dkv_simt(zt__cuatt_p p) {
    const int T = p.T, HD = p.HD, ld = zt__cuatt_gld(HD), n4 = (HD + 3) / 4;
    const int k0 = blockIdx.x * ZT__CUATT_GQ, kvh = blockIdx.y, b = blockIdx.z;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    float *sK = (float *)zt__cuatt_smem, *sV = sK + ZT__CUATT_GQ * ld, *sQ = sV + ZT__CUATT_GQ * ld;
    float *sdO = sQ + ZT__CUATT_GK * ld, *sLse = sdO + ZT__CUATT_GK * ld, *sD = sLse + ZT__CUATT_GK;
    int *sStart = (int *)(sD + ZT__CUATT_GK);
    zt__cuatt_gload(sK, ZT__CUATT_GQ, ld, p.k, p.tk, b, k0, kvh, T, p.NKV, HD);
    zt__cuatt_gload(sV, ZT__CUATT_GQ, ld, p.v, p.tv, b, k0, kvh, T, p.NKV, HD);
    const int klast = min(k0 + ZT__CUATT_GQ, T) - 1;
    float dk[ZT__CUATT_GR][NC], dv[ZT__CUATT_GR][NC];
#pragma unroll
    for (int r = 0; r < ZT__CUATT_GR; r++)
#pragma unroll
        for (int cc = 0; cc < NC; cc++) dk[r][cc] = dv[r][cc] = 0.0f;
    for (int h = kvh * p.group; h < (kvh + 1) * p.group; h++) {
        for (int i0 = k0 - k0 % ZT__CUATT_GK; i0 < T; i0 += ZT__CUATT_GK) {
            __syncthreads(); /* readers of the previous tile are done (the first time: sK, sV are written) */
            int need = 0;
            if (threadIdx.x < ZT__CUATT_GK) {
                const int i = i0 + threadIdx.x, st = zt__cuatt_start(p, b, i);
                sStart[threadIdx.x] = st;
                sLse[threadIdx.x] = i < T ? p.lse[((int64_t)b * p.NH + h) * T + i] : 0.0f;
                need = i >= k0 && st <= klast;
            }
            if (!__syncthreads_or(need)) continue;
            zt__cuatt_gload(sQ, ZT__CUATT_GK, ld, p.q, p.tq, b, i0, h, T, p.NH, HD);
            zt__cuatt_gload(sdO, ZT__CUATT_GK, ld, p.dout, p.tdout, b, i0, h, T, p.NH, HD);
            __syncthreads();
            for (int row = warp; row < ZT__CUATT_GK; row += ZT__CUATT_THREADS / 32) {
                const int i = i0 + row;
                float d = 0.0f;
                if (i < T) {
                    const int64_t off = zt__cuatt_off(b, i, h, T, p.NH, HD);
                    for (int c = lane; c < HD; c += 32) d += sdO[row * ld + c] * zt__cuatt_ld(p.o, p.to, off + c);
                }
                d = zt__cuatt_wsum(d);
                if (lane == 0) sD[row] = d;
            }
            __syncthreads();
            const int i = i0 + lane, lo = sStart[lane]; /* lo = NONE past T */
            const float lse = sLse[lane], Di = sD[lane];
            float s[ZT__CUATT_GR], dp[ZT__CUATT_GR];
#pragma unroll
            for (int r = 0; r < ZT__CUATT_GR; r++) s[r] = dp[r] = 0.0f;
            const float4 *qr = (const float4 *)(sQ + lane * ld), *gr = (const float4 *)(sdO + lane * ld);
            for (int c4 = 0; c4 < n4; c4++) {
                const float4 qv = qr[c4], gv = gr[c4];
#pragma unroll
                for (int r = 0; r < ZT__CUATT_GR; r++) {
                    const float4 kv = ((const float4 *)(sK + (warp * ZT__CUATT_GR + r) * ld))[c4];
                    const float4 vv = ((const float4 *)(sV + (warp * ZT__CUATT_GR + r) * ld))[c4];
                    s[r] += qv.x * kv.x + qv.y * kv.y + qv.z * kv.z + qv.w * kv.w;
                    dp[r] += gv.x * vv.x + gv.y * vv.y + gv.z * vv.z + gv.w * vv.w;
                }
            }
#pragma unroll
            for (int r = 0; r < ZT__CUATT_GR; r++) {
                const int j = k0 + warp * ZT__CUATT_GR + r;
                const float sc = zt__cuatt_cap(p, s[r]);
                const float pr = j >= lo && j <= i ? expf(sc - lse) : 0.0f, z = zt__cuatt_drop(p, b, h, i, j);
                s[r] = pr * z;                                                   /* p z, by query */
                dp[r] = pr * (z * dp[r] - Di) * zt__cuatt_cap_grad(p, sc) * p.scale; /* ds * scale, by query */
            }
            /* queries before the key tile or past T contribute nothing */
            const int ibeg = max(0, k0 - i0), iend = min(ZT__CUATT_GK, T - i0);
            for (int ii = ibeg; ii < iend; ii++) {
                float gq[NC], qq[NC];
#pragma unroll
                for (int cc = 0; cc < NC; cc++) {
                    const int c = lane + 32 * cc;
                    gq[cc] = c < HD ? sdO[ii * ld + c] : 0.0f;
                    qq[cc] = c < HD ? sQ[ii * ld + c] : 0.0f;
                }
#pragma unroll
                for (int r = 0; r < ZT__CUATT_GR; r++) {
                    const float pj = __shfl_sync(ZT__CUATT_ALL, s[r], ii);
                    const float dsj = __shfl_sync(ZT__CUATT_ALL, dp[r], ii);
#pragma unroll
                    for (int cc = 0; cc < NC; cc++) {
                        dv[r][cc] += pj * gq[cc];
                        dk[r][cc] += dsj * qq[cc];
                    }
                }
            }
        }
    }
#pragma unroll
    for (int r = 0; r < ZT__CUATT_GR; r++) {
        const int j = k0 + warp * ZT__CUATT_GR + r;
        if (j >= T) continue;
        const int64_t off = zt__cuatt_off(b, j, kvh, T, p.NKV, HD);
#pragma unroll
        for (int cc = 0; cc < NC; cc++) {
            const int c = lane + 32 * cc;
            if (c >= HD) continue;
            zt__cuatt_st(p.dk, p.tdk, off + c, zt__cuatt_ld(p.dk, p.tdk, off + c) + dk[r][cc]);
            zt__cuatt_st(p.dv, p.tdv, off + c, zt__cuatt_ld(p.dv, p.tdv, off + c) + dv[r][cc]);
        }
    }
}

/* ---- wmma path ---- */

/* two 16-bit values in a 32-bit word, element 0 in the low half (the lower address) */
template <typename E> struct zt__cuatt_16;
template <> struct zt__cuatt_16<__nv_bfloat16> {
    static __device__ __forceinline__ unsigned pack(float a, float b) {
        __nv_bfloat162 x = __halves2bfloat162(zt__cu_bf16(a), zt__cu_bf16(b));
        unsigned u;
        memcpy(&u, &x, 4);
        return u;
    }
    static __device__ __forceinline__ float2 unpack(unsigned u) {
        __nv_bfloat162 x;
        memcpy(&x, &u, 4);
        return __bfloat1622float2(x);
    }
};
template <> struct zt__cuatt_16<__half> {
    static __device__ __forceinline__ unsigned pack(float a, float b) {
        __half2 x = __halves2half2(zt__cu_f16(a), zt__cu_f16(b));
        unsigned u;
        memcpy(&u, &x, 4);
        return u;
    }
    static __device__ __forceinline__ float2 unpack(unsigned u) {
        __half2 x;
        memcpy(&x, &u, 4);
        return __half22float2(x);
    }
};

template <typename E> static __device__ __forceinline__ float zt__cuatt_dot8(uint4 a, uint4 b) {
    const float2 a0 = zt__cuatt_16<E>::unpack(a.x), a1 = zt__cuatt_16<E>::unpack(a.y);
    const float2 a2 = zt__cuatt_16<E>::unpack(a.z), a3 = zt__cuatt_16<E>::unpack(a.w);
    const float2 b0 = zt__cuatt_16<E>::unpack(b.x), b1 = zt__cuatt_16<E>::unpack(b.y);
    const float2 b2 = zt__cuatt_16<E>::unpack(b.z), b3 = zt__cuatt_16<E>::unpack(b.w);
    return a0.x * b0.x + a0.y * b0.y + a1.x * b1.x + a1.y * b1.y + a2.x * b2.x + a2.y * b2.y + a3.x * b3.x +
           a3.y * b3.y;
}

/* rows [t0, t0 + 64) of head h of x (B,T,H,HD) into a shared 64 x (HD + 8) tile, 16 bytes a thread;
   rows past T are zero */
template <typename E, int HD>
static __device__ __forceinline__ void zt__cuatt_fload(E *dst, const void *x, int b, int t0, int h, int T, int H) {
    constexpr int CPR = HD / 8, LD = HD + 8;
#pragma unroll
    for (int e = threadIdx.x; e < 64 * CPR; e += ZT__CUATT_THREADS) {
        const int r = e / CPR, c = (e - r * CPR) * 8, t = t0 + r;
        uint4 v = make_uint4(0u, 0u, 0u, 0u);
        if (t < T) v = *(const uint4 *)((const E *)x + zt__cuatt_off(b, t, h, T, H, HD) + c);
        *(uint4 *)(dst + r * LD + c) = v;
    }
}

/* sD[r] = dot(dout, out) of row t0 + r of head h, r < 64: dO from its shared tile, out from global.
   Two threads a row taking alternate 16-byte chunks (HD/8 of them, an even number). */
template <typename E, int HD>
static __device__ __forceinline__ void zt__cuatt_fdelta(float *sD, const E *sdO, const void *o, int b, int t0, int h,
                                                        int T, int H) {
    constexpr int LD = HD + 8;
    const int row = threadIdx.x >> 1, half = threadIdx.x & 1, t = t0 + row;
    float d = 0.0f;
    if (t < T) {
        const E *orow = (const E *)o + zt__cuatt_off(b, t, h, T, H, HD);
#pragma unroll
        for (int c = 8 * half; c < HD; c += 16)
            d += zt__cuatt_dot8<E>(*(const uint4 *)(orow + c), *(const uint4 *)(sdO + row * LD + c));
    }
    d += __shfl_xor_sync(ZT__CUATT_ALL, d, 1);
    if (!half) sD[row] = d;
}

/* rows [t0, t0 + 16) of head h of x (B,T,H,HD) += a warp's staged 16 x HD f32 tile (row stride HD + 4);
   rows past T are left alone. One rounding, like the CPU's load, accumulate in f32, store. */
template <typename E, int HD>
static __device__ __forceinline__ void zt__cuatt_fadd(void *x, const float *stage, int b, int t0, int h, int T, int H) {
    constexpr int CPR = HD / 8;
    for (int e = threadIdx.x & 31; e < 16 * CPR; e += 32) {
        const int r = e / CPR, c = (e - r * CPR) * 8, t = t0 + r;
        if (t >= T) continue;
        uint4 *g = (uint4 *)((E *)x + zt__cuatt_off(b, t, h, T, H, HD) + c);
        uint4 u = *g;
        const float4 s0 = *(const float4 *)(stage + r * (HD + 4) + c);
        const float4 s1 = *(const float4 *)(stage + r * (HD + 4) + c + 4);
        float2 a;
        a = zt__cuatt_16<E>::unpack(u.x), u.x = zt__cuatt_16<E>::pack(a.x + s0.x, a.y + s0.y);
        a = zt__cuatt_16<E>::unpack(u.y), u.y = zt__cuatt_16<E>::pack(a.x + s0.z, a.y + s0.w);
        a = zt__cuatt_16<E>::unpack(u.z), u.z = zt__cuatt_16<E>::pack(a.x + s1.x, a.y + s1.y);
        a = zt__cuatt_16<E>::unpack(u.w), u.w = zt__cuatt_16<E>::pack(a.x + s1.z, a.y + s1.w);
        *g = u;
    }
}

/* this lane's 32 values of a warp's 16 x 64 f32 tile: row lane/2, columns 8i + 4(lane&1) + e */
static __device__ __forceinline__ void zt__cuatt_read32(float *v, const float *tile) {
    const int lane = threadIdx.x & 31;
    const float *row = tile + (lane >> 1) * ZT__CUATT_SLD + 4 * (lane & 1);
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const float4 x = *(const float4 *)(row + 8 * i);
        v[4 * i] = x.x, v[4 * i + 1] = x.y, v[4 * i + 2] = x.z, v[4 * i + 3] = x.w;
    }
}
/* the same 32 places of a 16 x 64 tile of E (row stride SLD elements), rounded; a half warp's 8-byte
   stores cover 8 rows at bank offsets 4r + 2(lane&1): conflict-free */
template <typename E> static __device__ __forceinline__ void zt__cuatt_write32(E *tile, const float *v) {
    const int lane = threadIdx.x & 31;
    E *row = tile + (lane >> 1) * ZT__CUATT_SLD + 4 * (lane & 1);
#pragma unroll
    for (int i = 0; i < 8; i++)
        *(uint2 *)(row + 8 * i) = make_uint2(zt__cuatt_16<E>::pack(v[4 * i], v[4 * i + 1]),
                                             zt__cuatt_16<E>::pack(v[4 * i + 2], v[4 * i + 3]));
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
/* A 16-bit fragment from shared memory. The bf16 loads of mma.h reach PTX without the .shared state
   space (CUDA 13; its f16 loads get it), which costs 64-bit generic addresses, registers and spills in
   dk/dv. For bf16 this issues the same PTX instruction with .shared and fills the 4 registers of the
   fragment in the order the load of mma.h fills them (its storage as int[4]); f16 goes through mma.h.
   (No apostrophes in comments from here to the host section: host preprocessing skips these blocks.) */
template <typename F, typename E>
static __device__ __forceinline__ void zt__cuatt_wload(F &f, const E *p, unsigned ldm) {
    nvcuda::wmma::load_matrix_sync(f, p, ldm);
}
#define ZT__CUATT_WLOAD_BF16(frag, ptx)                                                                     \
    static __device__ __forceinline__ void zt__cuatt_wload(frag &f, const __nv_bfloat16 *p, unsigned ldm) { \
        unsigned u[4];                                                                                    \
        asm volatile(ptx " {%0, %1, %2, %3}, [%4], %5;"                                                   \
                     : "=r"(u[0]), "=r"(u[1]), "=r"(u[2]), "=r"(u[3])                                     \
                     : "r"((unsigned)__cvta_generic_to_shared(p)), "r"(ldm)                               \
                     : "memory");                                                                         \
        static_assert(sizeof f.x == sizeof u, "a bf16 m16n16k16 a/b fragment is 4 registers");          \
        memcpy(f.x, u, sizeof u);                                                                         \
    }
typedef nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, __nv_bfloat16, nvcuda::wmma::row_major> zt__cuatt_bf16_a;
typedef nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, __nv_bfloat16, nvcuda::wmma::col_major> zt__cuatt_bf16_bc;
typedef nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, __nv_bfloat16, nvcuda::wmma::row_major> zt__cuatt_bf16_br;
ZT__CUATT_WLOAD_BF16(zt__cuatt_bf16_a, "wmma.load.a.sync.aligned.row.m16n16k16.shared.bf16")
ZT__CUATT_WLOAD_BF16(zt__cuatt_bf16_bc, "wmma.load.b.sync.aligned.col.m16n16k16.shared.bf16")
ZT__CUATT_WLOAD_BF16(zt__cuatt_bf16_br, "wmma.load.b.sync.aligned.row.m16n16k16.shared.bf16")

/* c (16 x 64 f32, row stride SLD) = a (16 x HD) b^T, b 64 x HD; a and b shared tiles of stride HD + 8.
   The 16 x 16 block (kd, n) of b^T is matrix_b col_major at b + 16n*LD + 16kd. */
template <typename E, int NB>
static __device__ __forceinline__ void zt__cuatt_abt(float *c, const E *a, const E *b) {
    using namespace nvcuda;
    constexpr int LD = 16 * NB + 8;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4];
#pragma unroll
    for (int n = 0; n < 4; n++) wmma::fill_fragment(acc[n], 0.0f);
#pragma unroll
    for (int kd = 0; kd < NB; kd++) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, E, wmma::row_major> fa;
        zt__cuatt_wload(fa, a + 16 * kd, LD);
#pragma unroll
        for (int n = 0; n < 4; n++) {
            wmma::fragment<wmma::matrix_b, 16, 16, 16, E, wmma::col_major> fb;
            zt__cuatt_wload(fb, b + 16 * n * LD + 16 * kd, LD);
            wmma::mma_sync(acc[n], fa, fb, acc[n]);
        }
    }
#pragma unroll
    for (int n = 0; n < 4; n++) wmma::store_matrix_sync(c + 16 * n, acc[n], ZT__CUATT_SLD, wmma::mem_row_major);
}

/* acc[n] += a (16 x 64, stride SLD) b[:, 16n:16n+16], b a shared 64 x HD tile of stride HD + 8 */
template <typename E, int NB>
static __device__ __forceinline__ void zt__cuatt_ab(nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> *acc,
                                                    const E *a, const E *b) {
    using namespace nvcuda;
    constexpr int LD = 16 * NB + 8;
#pragma unroll
    for (int kk = 0; kk < 4; kk++) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, E, wmma::row_major> fa;
        zt__cuatt_wload(fa, a + 16 * kk, ZT__CUATT_SLD);
#pragma unroll
        for (int n = 0; n < NB; n++) {
            wmma::fragment<wmma::matrix_b, 16, 16, 16, E, wmma::row_major> fb;
            zt__cuatt_wload(fb, b + 16 * kk * LD + 16 * n, LD);
            wmma::mma_sync(acc[n], fa, fb, acc[n]);
        }
    }
}

/* scale * acc (16 x HD) through the staging tile of a warp (stride HD + 4) into rows [t0, t0+16) of x, += */
template <typename E, int NB>
static __device__ __forceinline__ void zt__cuatt_flush(nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> *acc,
                                                       float scale, float *stage, void *x, int b, int t0, int h, int T,
                                                       int H) {
    using namespace nvcuda;
    constexpr int HD = 16 * NB;
#pragma unroll
    for (int n = 0; n < NB; n++) {
        for (int e = 0; e < acc[n].num_elements; e++) acc[n].x[e] *= scale; /* any layout: every element */
        wmma::store_matrix_sync(stage + 16 * n, acc[n], HD + 4, wmma::mem_row_major);
    }
    __syncwarp();
    zt__cuatt_fadd<E, HD>(x, stage, b, t0, h, T, H);
    __syncwarp(); /* the stage is read before it is written again */
}
#endif

/* Forward, wmma. Block (64-query tile from the last, head, batch); warp w owns rows t0 + 16w + r.
   Per 64-key tile: S = Q_w K^T (4 accumulators) -> shared -> registers, online softmax in the log2
   domain (two lanes a row, combined by one shuffle), P (16-bit) -> shared, O = O corr + P V with each
   16 x 16 block of P V staged and added into the registers of the lane. */
template <typename E, int NB>
__global__ void __launch_bounds__(ZT__CUATT_THREADS) zt__cuatt_fwd_wmma(zt__cuatt_p p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    using namespace nvcuda;
    constexpr int HD = 16 * NB, LD = HD + 8, SLD = ZT__CUATT_SLD, BQ = ZT__CUATT_BQ, BK = ZT__CUATT_BK;
    const int T = p.T, t0 = (int)(gridDim.x - 1 - blockIdx.x) * BQ, h = blockIdx.y, b = blockIdx.z;
    const int kvh = h / p.group, warp = threadIdx.x >> 5, lane = threadIdx.x & 31, r = lane >> 1, hh = lane & 1;
    E *sQ = (E *)zt__cuatt_smem, *sK = sQ + BQ * LD, *sV = sK + BK * LD;
    float *sS = (float *)(sV + BK * LD) + warp * 16 * SLD; /* the 16 x 64 scores of this warp */
    E *sP = (E *)sS;                                       /* P over the first half of the scores */
    float *sO = sS + 16 * SLD / 2;                         /* 16 x 16 staging, second half */
    int *sStart = (int *)((float *)(sV + BK * LD) + 4 * 16 * SLD);
    if (threadIdx.x < BQ) sStart[threadIdx.x] = zt__cuatt_start(p, b, t0 + threadIdx.x);
    zt__cuatt_fload<E, HD>(sQ, p.q, b, t0, h, T, p.NH);
    __syncthreads();
    int kmin, smax;
    zt__cuatt_minmax(sStart, BQ, &kmin, &smax);
    const int qi = t0 + 16 * warp + r, lo = sStart[16 * warp + r], hi = qi;
    const int tlast = min(t0 + BQ, T) - 1;
    const float sl2 = p.scale * ZT__CUATT_LOG2E;
    float o[NB][8], m = -INFINITY, l = 0.0f; /* m in log2 units; l: the half row of this lane */
#pragma unroll
    for (int n = 0; n < NB; n++)
#pragma unroll
        for (int e = 0; e < 8; e++) o[n][e] = 0.0f;
    for (int k0 = kmin - kmin % BK; k0 <= tlast; k0 += BK) {
        __syncthreads();
        zt__cuatt_fload<E, HD>(sK, p.k, b, k0, kvh, T, p.NKV);
        zt__cuatt_fload<E, HD>(sV, p.v, b, k0, kvh, T, p.NKV);
        __syncthreads();
        zt__cuatt_abt<E, NB>(sS, sQ + 16 * warp * LD, sK);
        __syncwarp();
        float s[32];
        zt__cuatt_read32(s, sS);
        /* every key of the tile visible to every row: no mask */
        const bool full = k0 + BK - 1 <= t0 && k0 >= smax && t0 + BQ <= T;
        float mt = -INFINITY;
#pragma unroll
        for (int e = 0; e < 32; e++) {
            const int kj = k0 + 8 * (e >> 2) + 4 * hh + (e & 3);
            s[e] = full || (kj >= lo && kj <= hi) ? s[e] * sl2 : -INFINITY;
            mt = fmaxf(mt, s[e]);
        }
        mt = fmaxf(mt, __shfl_xor_sync(ZT__CUATT_ALL, mt, 1));
        const float mnew = fmaxf(m, mt), muse = mnew == -INFINITY ? 0.0f : mnew;
        const float corr = exp2f(m - muse);
        float ls = 0.0f;
#pragma unroll
        for (int e = 0; e < 32; e++) {
            s[e] = exp2f(s[e] - muse);
            ls += s[e];
        }
        if (p.drop > 0.0f) { /* after the sum: lse's */
#pragma unroll
            for (int e = 0; e < 32; e++) s[e] *= zt__cuatt_drop(p, b, h, qi, k0 + 8 * (e >> 2) + 4 * hh + (e & 3));
        }
        l = l * corr + ls;
        m = mnew;
        __syncwarp(); /* every lane has read its scores before P overwrites them */
        zt__cuatt_write32<E>(sP, s);
        __syncwarp();
#pragma unroll
        for (int n = 0; n < NB; n++)
#pragma unroll
            for (int e = 0; e < 8; e++) o[n][e] *= corr;
        wmma::fragment<wmma::matrix_a, 16, 16, 16, E, wmma::row_major> fp[4];
#pragma unroll
        for (int kk = 0; kk < 4; kk++) zt__cuatt_wload(fp[kk], sP + 16 * kk, SLD);
#pragma unroll
        for (int n = 0; n < NB; n++) {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
            wmma::fill_fragment(acc, 0.0f);
#pragma unroll
            for (int kk = 0; kk < 4; kk++) {
                wmma::fragment<wmma::matrix_b, 16, 16, 16, E, wmma::row_major> fv;
                zt__cuatt_wload(fv, sV + 16 * kk * LD + 16 * n, LD);
                wmma::mma_sync(acc, fp[kk], fv, acc);
            }
            wmma::store_matrix_sync(sO, acc, ZT__CUATT_OLD, wmma::mem_row_major);
            __syncwarp();
            const float4 x0 = *(const float4 *)(sO + r * ZT__CUATT_OLD + 4 * hh);
            const float4 x1 = *(const float4 *)(sO + r * ZT__CUATT_OLD + 8 + 4 * hh);
            o[n][0] += x0.x, o[n][1] += x0.y, o[n][2] += x0.z, o[n][3] += x0.w;
            o[n][4] += x1.x, o[n][5] += x1.y, o[n][6] += x1.z, o[n][7] += x1.w;
            __syncwarp();
        }
    }
    l += __shfl_xor_sync(ZT__CUATT_ALL, l, 1);
    if (qi < T) { /* the sink (log2 units as m) joins the sum last, under the larger of the two maxima */
        const float sink = p.sinks ? zt__cuatt_ld(p.sinks, p.tsinks, h) * ZT__CUATT_LOG2E : -INFINITY;
        const float mt = fmaxf(m, sink), keep = exp2f(m - mt);
        m = mt, l = l * keep + exp2f(sink - mt);
        const float inv = keep / l;
        E *orow = (E *)p.o + zt__cuatt_off(b, qi, h, T, p.NH, HD) + 4 * hh;
#pragma unroll
        for (int n = 0; n < NB; n++) {
            *(uint2 *)(orow + 16 * n) = make_uint2(zt__cuatt_16<E>::pack(o[n][0] * inv, o[n][1] * inv),
                                                   zt__cuatt_16<E>::pack(o[n][2] * inv, o[n][3] * inv));
            *(uint2 *)(orow + 16 * n + 8) = make_uint2(zt__cuatt_16<E>::pack(o[n][4] * inv, o[n][5] * inv),
                                                       zt__cuatt_16<E>::pack(o[n][6] * inv, o[n][7] * inv));
        }
        if (hh == 0) p.lse[((int64_t)b * p.NH + h) * T + qi] = (m + log2f(l)) * ZT__CUATT_LN2;
    }
#else
    (void)p;
#endif
}

/* dq, wmma. Block as the forward. Per 64-key tile: S = Q_w K^T -> p = exp2(s log2e scale - lse log2e),
   dP = dO_w V^T -> dS = p (z dP - D) (16-bit; z: dropout's factor) -> dq_acc += dS K; dq += scale * dq_acc at
   the end. */
template <typename E, int NB>
__global__ void __launch_bounds__(ZT__CUATT_THREADS) zt__cuatt_dq_wmma(zt__cuatt_p p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    using namespace nvcuda;
    constexpr int HD = 16 * NB, LD = HD + 8, SLD = ZT__CUATT_SLD, BQ = ZT__CUATT_BQ, BK = ZT__CUATT_BK;
    const int T = p.T, t0 = (int)(gridDim.x - 1 - blockIdx.x) * BQ, h = blockIdx.y, b = blockIdx.z;
    const int kvh = h / p.group, warp = threadIdx.x >> 5, lane = threadIdx.x & 31, r = lane >> 1, hh = lane & 1;
    E *sQ = (E *)zt__cuatt_smem, *sdO = sQ + BQ * LD, *sK = sdO + BQ * LD, *sV = sK + BK * LD;
    float *sSall = (float *)(sV + BK * LD), *sS = sSall + warp * 16 * SLD;
    E *sDS = (E *)sS; /* dS over the first half of the scores */
    float *sLse = sSall + 4 * 16 * SLD, *sD = sLse + BQ;
    int *sStart = (int *)(sD + BQ);
    if (threadIdx.x < BQ) {
        const int t = t0 + threadIdx.x;
        sStart[threadIdx.x] = zt__cuatt_start(p, b, t);
        sLse[threadIdx.x] = t < T ? p.lse[((int64_t)b * p.NH + h) * T + t] * ZT__CUATT_LOG2E : 0.0f;
    }
    zt__cuatt_fload<E, HD>(sQ, p.q, b, t0, h, T, p.NH);
    zt__cuatt_fload<E, HD>(sdO, p.dout, b, t0, h, T, p.NH);
    __syncthreads();
    zt__cuatt_fdelta<E, HD>(sD, sdO, p.o, b, t0, h, T, p.NH);
    __syncthreads();
    int kmin, smax;
    zt__cuatt_minmax(sStart, BQ, &kmin, &smax);
    const int qi = t0 + 16 * warp + r, lo = sStart[16 * warp + r], hi = qi;
    const float lse2 = sLse[16 * warp + r], Dr = sD[16 * warp + r], sl2 = p.scale * ZT__CUATT_LOG2E;
    const int tlast = min(t0 + BQ, T) - 1;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> dq[NB];
#pragma unroll
    for (int n = 0; n < NB; n++) wmma::fill_fragment(dq[n], 0.0f);
    for (int k0 = kmin - kmin % BK; k0 <= tlast; k0 += BK) {
        __syncthreads();
        zt__cuatt_fload<E, HD>(sK, p.k, b, k0, kvh, T, p.NKV);
        zt__cuatt_fload<E, HD>(sV, p.v, b, k0, kvh, T, p.NKV);
        __syncthreads();
        const bool full = k0 + BK - 1 <= t0 && k0 >= smax && t0 + BQ <= T;
        zt__cuatt_abt<E, NB>(sS, sQ + 16 * warp * LD, sK);
        __syncwarp();
        float pr[32], x[32];
        zt__cuatt_read32(x, sS);
#pragma unroll
        for (int e = 0; e < 32; e++) {
            const int kj = k0 + 8 * (e >> 2) + 4 * hh + (e & 3);
            pr[e] = full || (kj >= lo && kj <= hi) ? exp2f(fmaf(x[e], sl2, -lse2)) : 0.0f;
        }
        __syncwarp(); /* scores read before dP overwrites them */
        zt__cuatt_abt<E, NB>(sS, sdO + 16 * warp * LD, sV);
        __syncwarp();
        zt__cuatt_read32(x, sS);
#pragma unroll
        for (int e = 0; e < 32; e++) x[e] = pr[e] * (x[e] * zt__cuatt_drop(p, b, h, qi, k0 + 8 * (e >> 2) + 4 * hh + (e & 3)) - Dr);
        __syncwarp();
        zt__cuatt_write32<E>(sDS, x);
        __syncwarp();
        zt__cuatt_ab<E, NB>(dq, sDS, sK);
    }
    __syncthreads(); /* sK and sV become the staging tiles of the warps: 4 x 16 x (HD+4) floats fit */
    zt__cuatt_flush<E, NB>(dq, p.scale, (float *)sK + warp * 16 * (HD + 4), p.dq, b, t0 + 16 * warp, h, T, p.NH);
#else
    (void)p;
#endif
}

/* dk and dv, wmma. Block (64-key tile, kv head, batch); warp w owns keys k0 + 16w + r. For each query
   head of the group and each 64-query tile from k0 on (skipped when no row sees the key tile):
   S^T = K_w Q^T -> P^T, dP^T = V_w dO^T -> dS^T = P^T (Z dP^T - D), both 16-bit; dv_acc += (P^T Z) dO,
   dk_acc += dS^T Q. Accumulators stay in fragments across the whole walk (fixed order). */
template <typename E, int NB>
__global__ void __launch_bounds__(ZT__CUATT_THREADS) zt__cuatt_dkv_wmma(zt__cuatt_p p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    using namespace nvcuda;
    constexpr int HD = 16 * NB, LD = HD + 8, SLD = ZT__CUATT_SLD, BQ = ZT__CUATT_BQ, BK = ZT__CUATT_BK;
    static_assert(BQ == BK, "the first query tile of a key tile starts at k0");
    const int T = p.T, k0 = blockIdx.x * BK, kvh = blockIdx.y, b = blockIdx.z;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, r = lane >> 1, hh = lane & 1;
    E *sK = (E *)zt__cuatt_smem, *sV = sK + BK * LD, *sQ = sV + BK * LD, *sdO = sQ + BQ * LD;
    float *sSall = (float *)(sdO + BQ * LD), *sS = sSall + warp * 16 * SLD;
    E *sPT = (E *)sS, *sDST = sPT + 16 * SLD; /* P^T and dS^T over the two halves of the scores */
    float *sLse = sSall + 4 * 16 * SLD, *sD = sLse + BQ;
    int *sStart = (int *)(sD + BQ);
    zt__cuatt_fload<E, HD>(sK, p.k, b, k0, kvh, T, p.NKV);
    zt__cuatt_fload<E, HD>(sV, p.v, b, k0, kvh, T, p.NKV);
    const int kj = k0 + 16 * warp + r, klast = min(k0 + BK, T) - 1;
    const float sl2 = p.scale * ZT__CUATT_LOG2E;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> dk[NB], dv[NB];
#pragma unroll
    for (int n = 0; n < NB; n++) wmma::fill_fragment(dk[n], 0.0f), wmma::fill_fragment(dv[n], 0.0f);
    for (int h = kvh * p.group; h < (kvh + 1) * p.group; h++) {
        for (int i0 = k0; i0 < T; i0 += BQ) {
            __syncthreads(); /* readers of the previous tile are done (the first time: sK, sV are written) */
            int need = 0, seen = 1;
            if (threadIdx.x < BQ) {
                const int i = i0 + threadIdx.x, st = zt__cuatt_start(p, b, i);
                sStart[threadIdx.x] = st;
                sLse[threadIdx.x] = i < T ? p.lse[((int64_t)b * p.NH + h) * T + i] * ZT__CUATT_LOG2E : 0.0f;
                need = st <= klast; /* false past T */
                seen = st <= k0;
            }
            if (!__syncthreads_or(need)) continue;
            /* every query of the tile sees every key: no mask */
            const bool full = __syncthreads_and(seen) && k0 + BK - 1 <= i0;
            zt__cuatt_fload<E, HD>(sQ, p.q, b, i0, h, T, p.NH);
            zt__cuatt_fload<E, HD>(sdO, p.dout, b, i0, h, T, p.NH);
            __syncthreads();
            zt__cuatt_fdelta<E, HD>(sD, sdO, p.o, b, i0, h, T, p.NH);
            __syncthreads();
            zt__cuatt_abt<E, NB>(sS, sK + 16 * warp * LD, sQ);
            __syncwarp();
            float pr[32], x[32];
            zt__cuatt_read32(x, sS);
            const int c0 = 4 * hh; /* the columns (queries) of this lane: c0 + 8i + e */
#pragma unroll
            for (int i = 0; i < 8; i++) {
                const float4 ls = *(const float4 *)(sLse + c0 + 8 * i);
                const int4 st = *(const int4 *)(sStart + c0 + 8 * i);
                const float lse4[4] = {ls.x, ls.y, ls.z, ls.w};
                const int st4[4] = {st.x, st.y, st.z, st.w};
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int qi = i0 + c0 + 8 * i + e;
                    const bool ok = full || (kj <= qi && kj >= st4[e]); /* st = NONE past T */
                    pr[4 * i + e] = ok ? exp2f(fmaf(x[4 * i + e], sl2, -lse4[e])) : 0.0f;
                }
            }
            __syncwarp();
            zt__cuatt_abt<E, NB>(sS, sV + 16 * warp * LD, sdO);
            __syncwarp();
            zt__cuatt_read32(x, sS);
            if (p.drop > 0.0f) { /* dS^T = P^T (Z dP^T - D); P^T Z for dv */
#pragma unroll
                for (int i = 0; i < 8; i++) {
                    const float4 d = *(const float4 *)(sD + c0 + 8 * i);
                    const float d4[4] = {d.x, d.y, d.z, d.w};
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        const float z = zt__cuatt_drop(p, b, h, i0 + c0 + 8 * i + e, kj);
                        x[4 * i + e] = pr[4 * i + e] * (x[4 * i + e] * z - d4[e]);
                        pr[4 * i + e] *= z;
                    }
                }
            } else {
#pragma unroll
                for (int i = 0; i < 8; i++) {
                    const float4 d = *(const float4 *)(sD + c0 + 8 * i);
                    x[4 * i] = pr[4 * i] * (x[4 * i] - d.x);
                    x[4 * i + 1] = pr[4 * i + 1] * (x[4 * i + 1] - d.y);
                    x[4 * i + 2] = pr[4 * i + 2] * (x[4 * i + 2] - d.z);
                    x[4 * i + 3] = pr[4 * i + 3] * (x[4 * i + 3] - d.w);
                }
            }
            __syncwarp();
            zt__cuatt_write32<E>(sPT, pr);
            zt__cuatt_write32<E>(sDST, x);
            __syncwarp();
            zt__cuatt_ab<E, NB>(dv, sPT, sdO);
            zt__cuatt_ab<E, NB>(dk, sDST, sQ);
        }
    }
    __syncthreads(); /* sQ and sdO become the staging tiles of the warps */
    float *stage = (float *)sQ + warp * 16 * (HD + 4);
    zt__cuatt_flush<E, NB>(dk, p.scale, stage, p.dk, b, k0 + 16 * warp, kvh, T, p.NKV);
    zt__cuatt_flush<E, NB>(dv, 1.0f, stage, p.dv, b, k0 + 16 * warp, kvh, T, p.NKV);
#else
    (void)p;
#endif
}

/* ---- host ---- */

/* the current device's compute capability (major * 10 + minor) and opt-in shared memory per block,
   asked once: a zt process drives one device */
typedef struct zt__cuatt_dev { int cc, smem; } zt__cuatt_dev;
static zt__cuatt_dev zt__cuatt_device(void) {
    static zt__cuatt_dev d = {-1, 0};
    if (d.cc < 0) {
        int dev, major, minor, smem;
        ZT__CU_CHECK(cudaGetDevice(&dev));
        ZT__CU_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
        ZT__CU_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
        ZT__CU_CHECK(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
        d.smem = smem;
        d.cc = major * 10 + minor;
    }
    return d;
}

/* dsinks[h] += -sum over (b, i) of exp(sink_h - lse_bhi) D_bhi, D = dout . out (the CPU's zt__att_dsink_task): a block
   per head, warp w taking rows w, w + 4, ..., the four warps' sums added in order (deterministic, no atomics); the
   sums in double, as the CPU's (B x T rows of them: in float the error grows with the rows) */
__global__ void __launch_bounds__(ZT__CUATT_THREADS) zt__cuatt_dsinks(zt__cuatt_p p, int B, void *dsinks, int tds) {
    __shared__ double part[ZT__CUATT_THREADS / 32];
    const int h = blockIdx.x, warp = threadIdx.x >> 5, lane = threadIdx.x & 31, T = p.T, HD = p.HD;
    const float sink = zt__cuatt_ld(p.sinks, p.tsinks, h);
    double acc = 0.0;
    for (int64_t row = warp; row < (int64_t)B * T; row += ZT__CUATT_THREADS / 32) {
        const int b = (int)(row / T), t = (int)(row % T);
        const int64_t off = zt__cuatt_off(b, t, h, T, p.NH, HD);
        float d = 0.0f;
        for (int c = lane; c < HD; c += 32) d += zt__cuatt_ld(p.dout, p.tdout, off + c) * zt__cuatt_ld(p.o, p.to, off + c);
        acc += (double)expf(sink - p.lse[((int64_t)b * p.NH + h) * T + t]) * (double)zt__cuatt_wsum(d);
    }
    if (lane == 0) part[warp] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        double sum = 0.0;
        for (int w = 0; w < ZT__CUATT_THREADS / 32; w++) sum += part[w];
        zt__cuatt_st(dsinks, tds, h, zt__cuatt_ld(dsinks, tds, h) - (float)sum);
    }
}

static zt__cuatt_p zt__cuatt_params(const zt__args_attention *a, int bwd, int64_t *B) {
    zt__cuatt_p p;
    memset(&p, 0, sizeof p);
    *B = a->q.shape.d[0];
    int64_t T = a->q.shape.d[1], NH = a->q.shape.d[2], NKV = a->k.shape.d[2], HD = a->q.shape.d[3];
    if (T > (1 << 30) || NH > 65535 || *B > 65535)
        zt_fatal("attention (CUDA): B=%lld, T=%lld, NH=%lld is beyond the kernels' grid (T <= 2^30, "
                 "B and NH <= 65535)", (long long)*B, (long long)T, (long long)NH);
    p.q = a->q.data, p.k = a->k.data, p.v = a->v.data, p.o = a->out.data, p.lse = (float *)a->lse.data;
    p.tq = a->q.dtype, p.tk = a->k.dtype, p.tv = a->v.dtype, p.to = a->out.dtype;
    p.starts = zt__present(a->starts) ? (const int32_t *)a->starts.data : NULL;
    if (bwd) {
        p.dout = a->dout.data, p.dq = a->dq.data, p.dk = a->dk.data, p.dv = a->dv.data;
        p.tdout = a->dout.dtype, p.tdq = a->dq.dtype, p.tdk = a->dk.dtype, p.tdv = a->dv.dtype;
    }
    p.T = (int)T, p.NH = (int)NH, p.NKV = (int)NKV, p.HD = (int)HD, p.group = (int)(NH / NKV);
    p.scale = a->scale, p.cap = a->softcap;
    if (a->window > (1 << 30)) zt_fatal("attention (CUDA): a window of %lld keys is beyond the kernels' 2^30", (long long)a->window);
    p.window = (int)a->window;
    p.drop = a->dropout, p.dscale = a->dscale, p.dseed = a->dseed, p.doffset = a->doffset;
    p.sinks = zt__present(a->sinks) ? a->sinks.data : NULL, p.tsinks = a->sinks.dtype;
    return p;
}

/* The wmma path's condition; returns its dtype's index (0 bf16, 1 f16) or -1 for the simt path. */
static int zt__cuatt_fast(const zt__args_attention *a, int bwd) {
    const zt_tensor *ts[8] = {&a->q, &a->k, &a->v, &a->out, &a->dout, &a->dq, &a->dk, &a->dv};
    const zt_dtype dt = a->q.dtype;
    const int64_t HD = a->q.shape.d[3];
    if ((dt != ZT_BF16 && dt != ZT_F16) || HD % 16 != 0 || HD > 128 || zt__cuatt_device().cc < 80) return -1;
    if (a->softcap > 0) return -1; /* capped scores (Gemma 2): the simt kernels only, for now */
    for (int i = 0; i < (bwd ? 8 : 4); i++)
        if (ts[i]->dtype != dt || ((uintptr_t)ts[i]->data & 15) != 0) return -1;
    return dt == ZT_BF16 ? 0 : 1;
}

static void zt__cuatt_launch(zt__cuatt_kernel k, const char *what, int64_t tiles, int64_t heads, int64_t B,
                             size_t bytes, int HD, cudaStream_t st, const zt__cuatt_p *p) {
    const zt__cuatt_dev d = zt__cuatt_device();
    if (bytes > (size_t)d.smem)
        zt_fatal("attention (CUDA): %s for head dim %d needs %zu bytes of shared memory per block, this "
                 "device allows %d", what, HD, bytes, d.smem);
    /* a driver call per launch, not a static per kernel: cheap next to the kernel, and right on any device */
    if (bytes > 48 * 1024)
        ZT__CU_CHECK(cudaFuncSetAttribute((const void *)k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
    k<<<dim3((unsigned)tiles, (unsigned)heads, (unsigned)B), ZT__CUATT_THREADS, bytes, st>>>(*p);
    ZT__CU_CHECK(cudaGetLastError());
}

/* the simt kernels' NC = ceil(HD/32), 1..8; HD above 256 is refused */
static int zt__cuatt_nc(int HD) {
    if (HD > 256)
        zt_fatal("attention (CUDA): head dim %d is above 256, the largest the attention kernels support", HD);
    return (HD + 31) / 32;
}

#define ZT__CUATT_NB8(kern, E) {kern<E, 1>, kern<E, 2>, kern<E, 3>, kern<E, 4>, kern<E, 5>, kern<E, 6>, kern<E, 7>, kern<E, 8>}
#define ZT__CUATT_NC8(kern) {kern<1>, kern<2>, kern<3>, kern<4>, kern<5>, kern<6>, kern<7>, kern<8>}

/* a->out, a->lse from a->q, a->k, a->v, a->starts */
static void zt__cu_attention_forward(cudaStream_t st, const zt__args_attention *a) {
    static const zt__cuatt_kernel wmma[2][8] = {ZT__CUATT_NB8(zt__cuatt_fwd_wmma, __nv_bfloat16),
                                               ZT__CUATT_NB8(zt__cuatt_fwd_wmma, __half)};
    static const zt__cuatt_kernel simt[8] = ZT__CUATT_NC8(zt__cuatt_fwd_simt);
    int64_t B;
    const zt__cuatt_p p = zt__cuatt_params(a, 0, &B);
    if (B == 0 || p.T == 0 || p.NH == 0 || p.HD == 0) return;
    const int fast = zt__cuatt_fast(a, 0);
    if (fast >= 0) {
        const size_t LD = (size_t)p.HD + 8;
        const size_t bytes = 3 * ZT__CUATT_BQ * LD * 2 + 4 * 16 * ZT__CUATT_SLD * 4 + ZT__CUATT_BQ * 4;
        zt__cuatt_launch(wmma[fast][p.HD / 16 - 1], "the forward (wmma)", ZT__CDIV(p.T, ZT__CUATT_BQ), p.NH, B,
                         bytes, p.HD, st, &p);
    } else {
        const int nc = zt__cuatt_nc(p.HD);
        const size_t ld = (size_t)zt__cuatt_gld(p.HD);
        const size_t bytes = (ZT__CUATT_GQ + 2 * ZT__CUATT_GK) * ld * 4 + ZT__CUATT_GQ * 4;
        zt__cuatt_launch(simt[nc - 1], "the forward", ZT__CDIV(p.T, ZT__CUATT_GQ), p.NH, B, bytes, p.HD, st, &p);
    }
}

/* a->dq, a->dk, a->dv += from a->dout, a->q, a->k, a->v, a->out, a->lse, a->starts */
static void zt__cu_attention_backward(cudaStream_t st, const zt__args_attention *a) {
    static const zt__cuatt_kernel dq_wmma[2][8] = {ZT__CUATT_NB8(zt__cuatt_dq_wmma, __nv_bfloat16),
                                                  ZT__CUATT_NB8(zt__cuatt_dq_wmma, __half)};
    static const zt__cuatt_kernel dkv_wmma[2][8] = {ZT__CUATT_NB8(zt__cuatt_dkv_wmma, __nv_bfloat16),
                                                   ZT__CUATT_NB8(zt__cuatt_dkv_wmma, __half)};
    static const zt__cuatt_kernel dq_simt[8] = ZT__CUATT_NC8(zt__cuatt_dq_simt);
    static const zt__cuatt_kernel dkv_simt[8] = ZT__CUATT_NC8(zt__cuatt_dkv_simt);
    int64_t B;
    const zt__cuatt_p p = zt__cuatt_params(a, 1, &B);
    if (B == 0 || p.T == 0 || p.NH == 0 || p.HD == 0) return;
    const int fast = zt__cuatt_fast(a, 1);
    if (fast >= 0) {
        const size_t LD = (size_t)p.HD + 8;
        const size_t bytes = 4 * ZT__CUATT_BQ * LD * 2 + 4 * 16 * ZT__CUATT_SLD * 4 + 3 * ZT__CUATT_BQ * 4;
        zt__cuatt_launch(dq_wmma[fast][p.HD / 16 - 1], "dq (wmma)", ZT__CDIV(p.T, ZT__CUATT_BQ), p.NH, B, bytes,
                         p.HD, st, &p);
        zt__cuatt_launch(dkv_wmma[fast][p.HD / 16 - 1], "dk, dv (wmma)", ZT__CDIV(p.T, ZT__CUATT_BK), p.NKV, B,
                         bytes, p.HD, st, &p);
    } else {
        const int nc = zt__cuatt_nc(p.HD);
        const size_t ld = (size_t)zt__cuatt_gld(p.HD);
        const size_t rows = 2 * ZT__CUATT_GQ + 2 * ZT__CUATT_GK;
        zt__cuatt_launch(dq_simt[nc - 1], "dq", ZT__CDIV(p.T, ZT__CUATT_GQ), p.NH, B,
                         rows * ld * 4 + ZT__CUATT_GQ * 4, p.HD, st, &p);
        zt__cuatt_launch(dkv_simt[nc - 1], "dk, dv", ZT__CDIV(p.T, ZT__CUATT_GQ), p.NKV, B,
                         rows * ld * 4 + 3 * ZT__CUATT_GK * 4, p.HD, st, &p);
    }
    if (zt__present(a->dsinks)) {
        zt__cuatt_dsinks<<<(unsigned)p.NH, ZT__CUATT_THREADS, 0, st>>>(p, (int)B, a->dsinks.data, (int)a->dsinks.dtype);
        ZT__CU_CHECK(cudaGetLastError());
    }
}

/*@@END@@*/

/* >>backend (launch) ---------------------------------------------------------------------------- */

static void zt__cu_launch_ew(cudaStream_t st, int kind, zt_tensor out, zt_tensor a, zt_tensor b, float value, int64_t n) {
    if (n == 0) return;
    zt__cu_ew e = {kind, zt__cu_of(out), zt__cu_of(a), zt__cu_of(b), value, n};
    zt__cu_elementwise<<<zt__cu_blocks(n, ZT__CU_THREADS), ZT__CU_THREADS, 0, st>>>(e);
    ZT__CU_CHECK(cudaGetLastError());
}

/* threads for a block per row of `cols` elements */
static int zt__cu_row_threads(int64_t cols) {
    return cols >= 4096 ? 1024 : cols >= 1024 ? 512 : cols >= 256 ? 256 : 128;
}

static void zt__cu_colsum_launch(cudaStream_t st, int mode, zt_tensor out, zt_tensor out2, zt_tensor x, zt_tensor inp,
                                 const float *mean, const float *rstd, int64_t R, int64_t C, int64_t G) {
    if (C == 0) return;
    zt__cu_t o = zt__cu_of(out), o2 = zt__cu_of(out2);
    if (!zt__present(out)) o.p = NULL;
    if (!zt__present(out2)) o2.p = NULL;
    dim3 block(ZT__CU_COLS, ZT__CU_COLS);
    zt__cu_colsum<<<(unsigned)ZT__CDIV(C, ZT__CU_COLS), block, 0, st>>>(mode, o, o2, zt__cu_of(x), zt__cu_of(inp),
                                                                          mean, rstd, R, C, G);
    ZT__CU_CHECK(cudaGetLastError());
}

/* the staged collectives' copies: in order on the op's stream, complete when they return */
static void zt__cu_move(void *ctx, void *dst, const void *src, size_t bytes) {
    cudaStream_t st = *(cudaStream_t *)ctx;
    ZT__CU_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, st));
    ZT__CU_CHECK(cudaStreamSynchronize(st));
}

/* Collectives. One rank: reduce-scatter and all-gather copy, the rest leave the data as it is. Shared
   memory between the ranks of one machine (ranks that may share a GPU): the stream is drained, then the
   collective runs on the host through the pinned staging buffer, a chunk at a time (zt__comm_staged,
   which the CPU tests run too); the host waits meanwhile, so this is the way to run several ranks on
   one GPU and a fallback, not a fast path. */
#ifndef ZT_NO_NCCL
static ncclDataType_t zt__nccl_type(zt_dtype t) {
    return t == ZT_BF16 ? ncclBfloat16 : t == ZT_F16 ? ncclFloat16 : t == ZT_F32 ? ncclFloat32 : ncclUint8;
}

/* A collective through NCCL on the op's stream. Pieces `stride` apart (ZeRO's buckets) are one reduce
   (or broadcast) per rank, rooted at the rank that owns the piece, in one group. */
static void zt__cu_nccl(zt__cuda *cu, cudaStream_t st, const zt__args_comm *a) {
    int W = a->comm->world;
    zt_dtype t = a->out.dtype;
    size_t es = zt_dtype_size(t);
    int64_t n = zt_numel(a->out);
    ncclDataType_t nt = zt__nccl_type(t);
    if (nt == ncclUint8) n *= (int64_t)es; /* integers move as bytes: they are never reduced */
    ncclRedOp_t op = a->op == ZT_REDUCE_AVG ? ncclAvg : ncclSum;
    uint8_t *out = (uint8_t *)a->out.data;
    const uint8_t *in = (const uint8_t *)a->inp.data;
    switch (a->what) {
    case ZT__ALL_REDUCE: ZT__NCCL_CHECK(ncclAllReduce(out, out, (size_t)n, nt, op, cu->nccl, st)); break;
    case ZT__BROADCAST: ZT__NCCL_CHECK(ncclBroadcast(out, out, (size_t)n, nt, a->root, cu->nccl, st)); break;
    case ZT__REDUCE_SCATTER:
        if (!a->stride) {
            ZT__NCCL_CHECK(ncclReduceScatter(in, out, (size_t)n, nt, op, cu->nccl, st));
            break;
        }
        ZT__NCCL_CHECK(ncclGroupStart());
        for (int q = 0; q < W; q++)
            ZT__NCCL_CHECK(ncclReduce(in + (size_t)q * (size_t)a->stride * es, out, (size_t)n, nt, op, q, cu->nccl, st));
        ZT__NCCL_CHECK(ncclGroupEnd());
        break;
    case ZT__ALL_GATHER: {
        int64_t part = a->stride ? zt_numel(a->inp) * (nt == ncclUint8 ? (int64_t)es : 1) : n / W;
        if (!a->stride) {
            ZT__NCCL_CHECK(ncclAllGather(in, out, (size_t)part, nt, cu->nccl, st));
            break;
        }
        ZT__NCCL_CHECK(ncclGroupStart());
        for (int q = 0; q < W; q++)
            ZT__NCCL_CHECK(ncclBroadcast(in, out + (size_t)q * (size_t)a->stride * es, (size_t)part, nt, q, cu->nccl, st));
        ZT__NCCL_CHECK(ncclGroupEnd());
        break;
    }
    }
    __atomic_store_n(&cu->nccl_since, zt_time_ns(), __ATOMIC_RELEASE);
    ZT__CU_CHECK(cudaEventRecord(cu->nccl_done, st));
}
#endif

static void zt__cu_comm(zt__cuda *cu, cudaStream_t st, const zt__args_comm *a) {
#ifndef ZT_NO_NCCL
    if (cu->nccl && a->comm == cu->nccl_for) {
        zt__cu_nccl(cu, st, a);
        return;
    }
#endif
    if (!zt__comm_several(a->comm)) { /* one rank: a copy (either side may be pinned host memory under offload) */
        const uint8_t *in = (const uint8_t *)a->inp.data, *out = (const uint8_t *)a->out.data;
        size_t n = zt_nbytes(a->out);
        if (!(a->what == ZT__REDUCE_SCATTER || a->what == ZT__ALL_GATHER) || in == out) return;
        if (in < out + n && out < in + n) zt_fatal("a one-rank collective's input and output overlap in part");
        ZT__CU_CHECK(cudaMemcpyAsync(a->out.data, a->inp.data, n, cudaMemcpyDefault, st));
        return;
    }
    ZT__CU_CHECK(cudaStreamSynchronize(st));
    zt__cu_report();
    if (zt__comm_staged(a, cu->stage, ZT__CU_STAGE, zt__cu_move, zt__cu_move, &st) != ZT_OK) zt_fatal("%s", zt_last_error());
}

static void zt__cuda_launch(zt_stream *s, const zt__op *op) {
    zt__cuda *cu = zt__cuda_of(s->backend);
    cudaStream_t st = zt__cu_stream(s);
    switch (op->kind) {
    case ZT__OP_COPY: {
        const uint8_t *d = (const uint8_t *)op->unary.out.data, *src = (const uint8_t *)op->unary.inp.data;
        size_t nb = zt_nbytes(op->unary.out);
        if (d != src && d < src + nb && src < d + nb)
            zt_fatal("zt_copy: on the CUDA backend, dst and src must not overlap (%zu bytes %+lld apart)", nb,
                     (long long)(d - src));
        if (nb && d != src)
            ZT__CU_CHECK(cudaMemcpyAsync(op->unary.out.data, op->unary.inp.data, nb, cudaMemcpyDefault, st));
        return;
    }
    case ZT__OP_CAST:
    case ZT__OP_GELU_FWD:
    case ZT__OP_GELU_ERF_FWD:
    case ZT__OP_SILU_FWD:
        zt__cu_launch_ew(st, op->kind, op->unary.out, op->unary.inp, op->unary.inp, 0.0f, zt_numel(op->unary.out));
        return;
    case ZT__OP_FILL:
        if (!zt_dtype_is_float(op->fill.t.dtype)) {
            int64_t n = zt_numel(op->fill.t);
            zt__cu_fill_int<<<zt__cu_blocks(n, ZT__CU_THREADS), ZT__CU_THREADS, 0, st>>>(zt__cu_of(op->fill.t), n,
                                                                                          (double)op->fill.value);
            ZT__CU_CHECK(cudaGetLastError());
            return;
        }
        [[fallthrough]];
    case ZT__OP_SCALE:
        zt__cu_launch_ew(st, op->kind, op->fill.t, op->fill.t, op->fill.t, op->fill.value, zt_numel(op->fill.t));
        return;
    case ZT__OP_ADD: zt__cu_launch_ew(st, op->kind, op->add.out, op->add.a, op->add.b, 0.0f, zt_numel(op->add.out)); return;
    case ZT__OP_NOISE: {
        const zt__args_noise *a = &op->noise;
        int64_t n = zt_numel(a->t);
        if (n == 0) return;
        zt__cu_noise<<<zt__cu_blocks(n, ZT__CU_THREADS), ZT__CU_THREADS, 0, st>>>(zt__cu_of(a->t), n, a->magnitude,
                                                                                  a->scale, a->mode, a->seed, a->offset);
        ZT__CU_CHECK(cudaGetLastError());
        return;
    }
    case ZT__OP_GELU_BWD:
    case ZT__OP_GELU_ERF_BWD:
    case ZT__OP_SILU_BWD: {
        const zt__args_unary_bwd *a = &op->unary_bwd;
        zt__cu_launch_ew(st, op->kind, a->dinp, a->inp, a->dout, 0.0f, zt_numel(a->inp));
        return;
    }
    case ZT__OP_GEMM: zt__cu_gemm(cu, s->index, &op->gemm); return;
    case ZT__OP_SUM_ROWS: {
        zt_tensor x = op->unary.inp;
        zt__cu_colsum_launch(st, 0, op->unary.out, zt__none(), x, x, NULL, NULL, zt_rows(x), zt_cols(x), 1);
        return;
    }
    case ZT__OP_EMBEDDING_FWD: {
        const zt__args_embedding *a = &op->embedding;
        int64_t N = zt_numel(a->ids), C = zt_cols(a->table);
        if (N == 0) return;
        zt__cu_embedding_fwd<<<(unsigned)ZT__MIN(N, (int64_t)1 << 20), zt__cu_row_threads(C), 0, st>>>(
            zt__cu_of(a->out), (const int32_t *)a->ids.data, zt__cu_of(a->table), N, zt_rows(a->table), C, a->accumulate);
        ZT__CU_CHECK(cudaGetLastError());
        return;
    }
    case ZT__OP_EMBEDDING_BWD: {
        const zt__args_embedding_bwd *a = &op->embedding_bwd;
        int64_t N = zt_numel(a->ids), C = zt_cols(a->dtable);
        int threads = 256;
        size_t shared = (size_t)(C + threads) * 4;
        if (shared > (size_t)96 << 10)
            zt_fatal("zt_embedding_backward: rows of %lld columns are too wide for the CUDA kernel (at most %d)",
                     (long long)C, (96 << 10) / 4 - threads);
        if (N == 0) return;
        if (shared > (size_t)48 << 10)
            ZT__CU_CHECK(cudaFuncSetAttribute(zt__cu_embedding_bwd, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared));
        zt__cu_embedding_bwd<<<(unsigned)ZT__MIN(N, (int64_t)1 << 20), threads, shared, st>>>(
            zt__cu_of(a->dtable), zt__cu_of(a->dout), (const int32_t *)a->ids.data, N, zt_rows(a->dtable), C);
        ZT__CU_CHECK(cudaGetLastError());
        return;
    }
    case ZT__OP_LAYERNORM_FWD:
    case ZT__OP_RMSNORM_FWD: {
        const zt__args_norm *a = &op->norm;
        int64_t N = zt_rows(a->inp), C = zt_cols(a->inp);
        if (N == 0) return;
        int ln = op->kind == ZT__OP_LAYERNORM_FWD;
        zt__cu_norm_fwd<<<(unsigned)ZT__MIN(N, (int64_t)1 << 20), zt__cu_row_threads(C), 0, st>>>(
            zt__cu_of(a->out), ln ? (float *)a->mean.data : NULL, (float *)a->rstd.data, zt__cu_of(a->inp),
            zt__cu_of(a->weight), zt__cu_of(a->bias), N, C, zt__norm_groups(a->inp, a->weight), a->eps, a->offset);
        ZT__CU_CHECK(cudaGetLastError());
        return;
    }
    case ZT__OP_LAYERNORM_BWD:
    case ZT__OP_RMSNORM_BWD: {
        const zt__args_norm_bwd *a = &op->norm_bwd;
        int64_t N = zt_rows(a->inp), C = zt_cols(a->inp);
        if (N == 0) return;
        const float *mean = zt__present(a->mean) ? (const float *)a->mean.data : NULL;
        int64_t G = zt__norm_groups(a->inp, a->weight);
        zt__cu_norm_bwd<<<(unsigned)ZT__MIN(N, (int64_t)1 << 20), zt__cu_row_threads(C), 0, st>>>(
            zt__cu_of(a->dinp), zt__cu_of(a->dout), zt__cu_of(a->inp), zt__cu_of(a->weight), mean,
            (const float *)a->rstd.data, N, C, G, a->offset);
        ZT__CU_CHECK(cudaGetLastError());
        if (zt__present(a->dweight) || zt__present(a->dbias)) /* absent when frozen */
            zt__cu_colsum_launch(st, 1, a->dweight, a->dbias, a->dout, a->inp, mean, (const float *)a->rstd.data, N / G,
                                 G * C, G);
        return;
    }
    case ZT__OP_SWIGLU_FWD:
    case ZT__OP_SWIGLU_BWD:
    case ZT__OP_GEGLU_FWD:
    case ZT__OP_GEGLU_BWD: {
        int fwd = op->kind == ZT__OP_SWIGLU_FWD || op->kind == ZT__OP_GEGLU_FWD;
        int gelu = op->kind == ZT__OP_GEGLU_FWD || op->kind == ZT__OP_GEGLU_BWD;
        zt_tensor inp = fwd ? op->unary.inp : op->unary_bwd.inp;
        zt_tensor out = fwd ? op->unary.out : op->unary_bwd.dinp, dout = fwd ? inp : op->unary_bwd.dout;
        int64_t N = zt_rows(inp), H = zt_cols(inp) / 2;
        if (N * H == 0) return;
        zt__cu_glu<<<zt__cu_blocks(N * H, ZT__CU_THREADS), ZT__CU_THREADS, 0, st>>>(fwd, gelu, zt__cu_of(out), zt__cu_of(inp),
                                                                                     zt__cu_of(dout), N, H);
        ZT__CU_CHECK(cudaGetLastError());
        return;
    }
    case ZT__OP_SWIGLU_CLAMPED_FWD:
    case ZT__OP_SWIGLU_CLAMPED_BWD: {
        const zt__args_glu *a = &op->glu;
        int64_t N = zt_rows(a->inp), H = zt_cols(a->inp) / 2;
        if (N * H == 0) return;
        zt__cu_glu_clamped<<<zt__cu_blocks(N * H, ZT__CU_THREADS), ZT__CU_THREADS, 0, st>>>(
            op->kind == ZT__OP_SWIGLU_CLAMPED_FWD, zt__cu_of(a->out), zt__cu_of(a->inp),
            zt__cu_of(zt__present(a->dout) ? a->dout : a->inp), N, H, a->alpha, a->limit);
        ZT__CU_CHECK(cudaGetLastError());
        return;
    }
    case ZT__OP_ROPE_FWD:
    case ZT__OP_ROPE_BWD: {
        const zt__args_rope *a = &op->rope;
        int64_t BT = a->inp.shape.d[0] * a->inp.shape.d[1], H = a->inp.shape.d[2], HD = a->inp.shape.d[3];
        int64_t RD = a->scaling.rotary_dim, n = BT * H * (RD / 2 + HD - RD);
        if (RD / 2 > ZT__CU_ROPE_PAIRS)
            zt_fatal("zt_rope: rotating %lld dimensions is more than the CUDA kernel's %d", (long long)RD, 2 * ZT__CU_ROPE_PAIRS);
        if (n == 0) return;
        zt__cu_freqs freqs;
        for (int64_t i = 0; i < RD / 2; i++) freqs.f[i] = zt__rope_inv_freq(a->theta, i, RD, &a->scaling);
        zt__cu_rope<<<zt__cu_blocks(n, ZT__CU_THREADS), ZT__CU_THREADS, 0, st>>>(
            op->kind == ZT__OP_ROPE_FWD, zt__cu_of(a->out), zt__cu_of(a->inp), (const int32_t *)a->pos.data, BT, H, HD,
            RD, a->scaling.interleaved, freqs, zt__rope_mscale(&a->scaling));
        ZT__CU_CHECK(cudaGetLastError());
        return;
    }
    case ZT__OP_ATTENTION_FWD: zt__cu_attention_forward(st, &op->attention); return;
    case ZT__OP_ATTENTION_BWD: zt__cu_attention_backward(st, &op->attention); return;
    case ZT__OP_CROSSENTROPY: {
        const zt__args_crossentropy *a = &op->crossentropy;
        int64_t N = zt_rows(a->logits), Vp = zt_cols(a->logits);
        if (N == 0) return;
        zt__cu_t d = zt__cu_of(a->dlogits);
        if (!zt__present(a->dlogits)) d.p = NULL;
        zt__cu_crossentropy<<<(unsigned)ZT__MIN(N, (int64_t)1 << 20), 1024, 0, st>>>(
            (float *)a->losses.data, d, zt__cu_of(a->logits), (const int32_t *)a->targets.data, N, Vp, a->vocab,
            a->ignore_index, a->dloss, a->softcap, a->smoothing);
        ZT__CU_CHECK(cudaGetLastError());
        return;
    }
    case ZT__OP_OPTIM: {
        const zt__args_optim *a = &op->optim;
        int64_t n = zt_numel(a->master);
        if (n == 0) return;
        zt__cu_optim k;
        k.w = (float *)a->master.data, k.m = (float *)a->m.data;
        k.v = zt__present(a->v) ? (float *)a->v.data : NULL;
        k.grad = zt__cu_of(a->grad), k.p16 = zt__cu_of(a->param16);
        if (!zt__present(a->param16)) k.p16.p = NULL;
        k.n = n, k.k = a->k;
        zt__cu_optim_kernel<<<zt__cu_blocks(n, ZT__CU_THREADS), ZT__CU_THREADS, 0, st>>>(k);
        ZT__CU_CHECK(cudaGetLastError());
        return;
    }
    case ZT__OP_SUMSQ: {
        int64_t n = zt_numel(op->unary.inp), chunk = zt__sumsq_chunk(n), parts = ZT__CDIV(n, chunk);
        double *buf = cu->sumsq_parts[s->index];
        if (parts > 0) {
            zt__cu_sumsq_parts<<<(unsigned)parts, 512, 0, st>>>(buf, zt__cu_of(op->unary.inp), n, chunk);
            ZT__CU_CHECK(cudaGetLastError());
        }
        zt__cu_sumsq_total<<<1, 1, 0, st>>>((float *)op->unary.out.data, buf, parts);
        ZT__CU_CHECK(cudaGetLastError());
        return;
    }
    case ZT__OP_COMM: zt__cu_comm(cu, st, &op->comm); return;
    case ZT__OP_MOE_ROUTE_FWD:
    case ZT__OP_MOE_ROUTE_BWD:
    case ZT__OP_MOE_BALANCE_BWD: {
        const zt__args_moe *a = &op->moe;
        int64_t N = zt_rows(a->probs), E = zt_cols(a->probs);
        if (N == 0) return;
        unsigned blocks = (unsigned)ZT__MIN(ZT__CDIV(N, 4), (int64_t)1 << 20);
        if (op->kind == ZT__OP_MOE_BALANCE_BWD)
            zt__cu_moe_balance_bwd<<<blocks, 128, 0, st>>>(zt__cu_of(a->dinp), (const float *)a->probs.data,
                                                           (const float *)a->weight.data, N, E);
        else if (op->kind == ZT__OP_MOE_ROUTE_FWD)
            zt__cu_moe_route_fwd<<<blocks, 128, 0, st>>>((int32_t *)a->idx.data, (float *)a->weight.data,
                                                         (float *)a->probs.data, zt__cu_of(a->inp),
                                                         zt__present(a->bias) ? (const float *)a->bias.data : NULL, N, E,
                                                         (int)a->k, a->normalize, a->sigmoid, a->groups, a->topk_groups,
                                                         a->group_max, a->scale);
        else
            zt__cu_moe_route_bwd<<<blocks, 128, 0, st>>>(zt__cu_of(a->dinp), (const float *)a->dweight.data,
                                                         (const float *)a->probs.data, (const int32_t *)a->idx.data, N,
                                                         E, (int)a->k, a->normalize, a->sigmoid, a->scale);
        ZT__CU_CHECK(cudaGetLastError());
        return;
    }
    case ZT__OP_MOE_SORT: {
        const zt__args_moe *a = &op->moe;
        int E = (int)zt_numel(a->counts);
        size_t shared = (size_t)(1 + ZT__CU_MOE_SORT_THREADS / 32) * (size_t)E * sizeof(int);
        if (shared > (size_t)48 << 10)
            ZT__CU_CHECK(cudaFuncSetAttribute(zt__cu_moe_sort, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared));
        zt__cu_moe_sort<<<1, ZT__CU_MOE_SORT_THREADS, shared, st>>>((int32_t *)a->order.data, (int32_t *)a->where.data,
                                                                   (int32_t *)a->counts.data,
                                                                   (const int32_t *)a->idx.data, zt_numel(a->idx), E);
        ZT__CU_CHECK(cudaGetLastError());
        return;
    }
    case ZT__OP_HEAD_COLS_FWD:
    case ZT__OP_HEAD_COLS_BWD: {
        const zt__args_cols *a = &op->cols;
        int fwd = op->kind == ZT__OP_HEAD_COLS_FWD;
        int64_t R, HO, DO, HI, DI;
        zt__heads_of(fwd ? a->dst : a->src, &R, &HO, &DO);
        zt__heads_of(fwd ? a->src : a->dst, &R, &HI, &DI);
        if (R == 0 || a->D == 0) return;
        zt__cu_head_cols<<<(unsigned)ZT__MIN(R, (int64_t)1 << 20), zt__cu_row_threads((fwd ? HO : HI) * a->D), 0, st>>>(
            fwd, zt__cu_of(a->dst), a->d0, zt__cu_of(a->src), a->s0, a->D, R, HO, DO, HI, DI);
        ZT__CU_CHECK(cudaGetLastError());
        return;
    }
    case ZT__OP_GATED_ADD_FWD:
    case ZT__OP_GATED_ADD_BWD: {
        const zt__args_moe *a = &op->moe;
        int64_t N = zt_rows(a->inp), C = zt_cols(a->inp);
        int fwd = op->kind == ZT__OP_GATED_ADD_FWD;
        if (N == 0) return;
        zt__cu_gated_add<<<(unsigned)ZT__MIN(N, (int64_t)1 << 20), zt__cu_row_threads(C), 0, st>>>(
            fwd, zt__cu_of(fwd ? a->out : a->dinp), zt__cu_of(a->dweight), zt__cu_of(a->dout), zt__cu_of(a->inp),
            zt__cu_of(a->weight), N, C);
        ZT__CU_CHECK(cudaGetLastError());
        return;
    }
    case ZT__OP_MOE_GATHER_FWD:
    case ZT__OP_MOE_GATHER_BWD:
    case ZT__OP_MOE_COMBINE_FWD:
    case ZT__OP_MOE_COMBINE_BWD: {
        const zt__args_moe *a = &op->moe;
        int64_t k = a->k, n = zt_numel(op->kind == ZT__OP_MOE_GATHER_FWD ? a->order : a->where), N = n / k;
        int64_t C = zt_cols(op->kind == ZT__OP_MOE_GATHER_FWD ? a->inp : op->kind == ZT__OP_MOE_GATHER_BWD ? a->dinp
                            : op->kind == ZT__OP_MOE_COMBINE_FWD ? a->out : a->dout);
        int threads = zt__cu_row_threads(C);
        if (n == 0) return;
        if (op->kind == ZT__OP_MOE_GATHER_FWD)
            zt__cu_moe_gather_fwd<<<(unsigned)ZT__MIN(n, (int64_t)1 << 20), threads, 0, st>>>(
                zt__cu_of(a->out), zt__cu_of(a->inp), (const int32_t *)a->order.data, n, N, C, k);
        else if (op->kind == ZT__OP_MOE_GATHER_BWD)
            zt__cu_moe_gather_bwd<<<(unsigned)ZT__MIN(N, (int64_t)1 << 20), threads, 0, st>>>(
                zt__cu_of(a->dinp), zt__cu_of(a->dout), (const int32_t *)a->where.data, N, C, k);
        else if (op->kind == ZT__OP_MOE_COMBINE_FWD)
            zt__cu_moe_combine_fwd<<<(unsigned)ZT__MIN(N, (int64_t)1 << 20), threads, 0, st>>>(
                zt__cu_of(a->out), zt__cu_of(a->inp), (const float *)a->weight.data, (const int32_t *)a->where.data, N,
                C, k);
        else
            zt__cu_moe_combine_bwd<<<(unsigned)ZT__MIN(N, (int64_t)1 << 20), threads, 0, st>>>(
                zt__cu_of(a->dinp), (float *)a->dweight.data, zt__cu_of(a->dout), zt__cu_of(a->inp),
                (const float *)a->weight.data, (const int32_t *)a->where.data, N, C, k);
        ZT__CU_CHECK(cudaGetLastError());
        return;
    }
    default: break;
    }
    zt_fatal("the CUDA backend has no kernel for op %d", (int)op->kind);
}

/* >>backend (memory, streams, events) ----------------------------------------------------------- */

/* arenas of at least 256 bytes, so that an empty one still has an address; the pinned one starts on a
   page, as the NVMe swap's O_DIRECT buffers in it need */
static zt_result zt__cu_alloc_arenas(zt_backend *b, size_t device_bytes, size_t pinned_bytes) {
    zt__cuda *cu = zt__cuda_of(b);
    void *d = NULL, *p = NULL;
    cudaError_t e = cudaMalloc(&d, ZT__MAX(device_bytes, (size_t)256));
    if (e != cudaSuccess) {
        cudaGetLastError(); /* not sticky: clear it */
        size_t free_b = 0, total = 0;
        cudaMemGetInfo(&free_b, &total);
        return zt_fail(ZT_ERROR_MEMORY, "cannot allocate %.2f GiB on GPU %d (%s): %.2f GiB of %.2f GiB are free (%s)",
                       (double)device_bytes / (1 << 30), cu->device, cu->name, (double)free_b / (1 << 30),
                       (double)total / (1 << 30), cudaGetErrorString(e));
    }
    e = cudaMallocHost(&p, ZT__MAX(pinned_bytes, (size_t)256) + 4096);
    if (e != cudaSuccess) {
        cudaGetLastError();
        cudaFree(d);
        return zt_fail(ZT_ERROR_MEMORY, "cannot allocate %.2f GiB of pinned host memory (%s)",
                       (double)pinned_bytes / (1 << 30), cudaGetErrorString(e));
    }
    if (cu->device_mem) ZT__CU_CHECK(cudaFree(cu->device_mem));
    if (cu->pinned_mem) ZT__CU_CHECK(cudaFreeHost(cu->pinned_mem));
    cu->device_mem = d, cu->pinned_mem = p;
    zt_arena_init(&b->device, "device", d, device_bytes);
    zt_arena_init(&b->pinned, "pinned host", (void *)(((uintptr_t)p + 4095) & ~(uintptr_t)4095), pinned_bytes);
    zt_arena_set_stream_ordered(&b->device);
    zt_arena_set_stream_ordered(&b->pinned);
    return ZT_OK;
}

/* The GPU, its driver and this build are checked first, each with its own message. */
static zt_result zt__cu_open_device(zt__cuda *cu, int index) {
    int n = 0, driver = 0, runtime = 0;
    /* every module (zt's kernels, cuBLASLt's) loaded when the context is made, not at a kernel's first
       launch inside a step, where loading would allocate device memory; read when the driver starts, so
       it only takes effect if nothing in the process used CUDA before. A user's own setting wins. */
    setenv("CUDA_MODULE_LOADING", "EAGER", 0);
    cudaRuntimeGetVersion(&runtime);
    cudaDriverGetVersion(&driver);
    if (driver == 0)
        return zt_fail(ZT_ERROR_BACKEND, "no NVIDIA driver is installed (is there a GPU?): use --backend cpu");
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaErrorInsufficientDriver || driver / 1000 < runtime / 1000) { /* minor versions are compatible */
        cudaGetLastError();
        return zt_fail(ZT_ERROR_BACKEND, "the NVIDIA driver supports CUDA %d.%d, but zt was built with CUDA %d.%d: "
                       "update the driver or build with an older CUDA toolkit", driver / 1000, driver % 1000 / 10,
                       runtime / 1000, runtime % 1000 / 10);
    }
    if (e != cudaSuccess || n == 0) {
        cudaGetLastError();
        return zt_fail(ZT_ERROR_BACKEND, "no CUDA GPU found (%s): use --backend cpu",
                       e != cudaSuccess ? cudaGetErrorString(e) : "the driver lists none");
    }
    if (index < 0) { /* this rank's GPU: its place on this machine (zt_launch's, torchrun's and the deepspeed
                        launcher's LOCAL_RANK, Open MPI's, Slurm's, MPICH's), and ranks beyond the GPUs share them */
        static const char *const local[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID"};
        const char *lr = NULL;
        for (int k = 0; k < 4 && !lr; k++) lr = getenv(local[k]);
        index = (lr ? atoi(lr) : 0) % n;
    }
    if (index >= n)
        return zt_fail(ZT_ERROR_INVALID, "GPU %d does not exist: this machine has %d (0 to %d)", index, n, n - 1);
    cudaDeviceProp prop;
    if ((e = cudaGetDeviceProperties(&prop, index)) != cudaSuccess || (e = cudaSetDevice(index)) != cudaSuccess)
        return zt_fail(ZT_ERROR_BACKEND, "cannot use GPU %d: %s", index, cudaGetErrorString(e));
    cu->device = index, cu->major = prop.major, cu->minor = prop.minor, cu->sms = prop.multiProcessorCount;
    snprintf(cu->name, sizeof cu->name, "%s", prop.name);
    if (prop.major < 8)
        return zt_fail(ZT_ERROR_UNSUPPORTED, "GPU %d (%s) has compute capability %d.%d; zt's CUDA backend needs 8.0 or "
                       "newer (A100, RTX 30xx, L4, H100 and later)", index, prop.name, prop.major, prop.minor);
    cudaFuncAttributes fa; /* does this build hold code for this GPU? */
    if ((e = cudaFuncGetAttributes(&fa, zt__cu_elementwise)) != cudaSuccess) {
        cudaGetLastError();
        return zt_fail(ZT_ERROR_UNSUPPORTED, "this build of zt has no code for GPU %d (%s, sm_%d%d): %s; rebuild "
                       "with CUDA_ARCHS=\"%d%d\" ./build.sh", index, prop.name, prop.major, prop.minor,
                       cudaGetErrorString(e), prop.major, prop.minor);
    }
    return ZT_OK;
}

static void zt__cuda_destroy(zt_backend *b);
static void zt__cuda_unshare(zt_backend *b, zt_comm *c);

static zt_result zt__cuda_create(zt_backend *b) {
    zt__cuda *cu = (zt__cuda *)calloc(1, sizeof *cu); /* setup time, freed by zt__cuda_destroy */
    if (!cu) return zt_fail(ZT_ERROR_MEMORY, "out of host memory creating the CUDA backend");
    b->impl = cu;
    zt_result r = zt__cu_open_device(cu, b->desc.device_index);
    if (r != ZT_OK) {
        free(cu);
        b->impl = NULL;
        return r;
    }
    zt__cu_sms = cu->sms;
    if (!zt__cu_error_host) { /* one record per process, mapped into every GPU's address space */
        ZT__CU_CHECK(cudaHostAlloc((void **)&zt__cu_error_host, sizeof(zt__cu_error),
                                   cudaHostAllocMapped | cudaHostAllocPortable));
        memset(zt__cu_error_host, 0, sizeof(zt__cu_error));
    }
    {
        zt__cu_error *dev = NULL; /* each GPU's kernels see it through their own copy of the pointer */
        ZT__CU_CHECK(cudaHostGetDevicePointer((void **)&dev, zt__cu_error_host, 0));
        ZT__CU_CHECK(cudaMemcpyToSymbol(zt__cu_error_dev, &dev, sizeof dev));
    }
    for (int i = 0; i < ZT_MAX_EVENTS; i++)
        ZT__CU_CHECK(cudaEventCreateWithFlags(&cu->events[i], cudaEventDisableTiming));
    ZT__CUBLAS_CHECK(cublasLtCreate(&cu->lt));
    ZT__CU_CHECK(cudaMallocHost((void **)&cu->stage, ZT__CU_STAGE));
    if ((r = zt__cu_alloc_arenas(b, b->desc.device_bytes, b->desc.pinned_bytes)) != ZT_OK) {
        zt__cuda_destroy(b);
        return r;
    }
    zt_stream_create(b); /* the default stream */
    /* warm-up: one product of each dtype through cuBLASLt, so its kernels and memory exist before the
       first step; then what the context and the libraries hold is measured */
    {
        zt_stream *s = zt_backend_stream(b);
        const zt_dtype types[3] = {ZT_F32, ZT_BF16, ZT_F16};
        uint8_t *w = NULL;
        ZT__CU_CHECK(cudaMalloc((void **)&w, (size_t)192 << 10));
        for (int i = 0; i < 3; i++) {
            zt_tensor x = zt_tensor_make(w, types[i], ZT_DEVICE, zt_shape2(64, 64));
            zt_tensor y = zt_tensor_make(w + (64 << 10), types[i], ZT_DEVICE, zt_shape2(64, 64));
            zt_tensor z = zt_tensor_make(w + (128 << 10), types[i], ZT_DEVICE, zt_shape2(64, 64));
            zt_fill(s, x, 0.0f);
            zt_fill(s, y, 0.0f);
            zt_gemm(s, z, x, y, 0, 1, 1.0f, 0.0f, NULL);
        }
        zt_stream_sync(s);
        ZT__CU_CHECK(cudaFree(w));
        size_t free_b = 0, total = 0;
        ZT__CU_CHECK(cudaMemGetInfo(&free_b, &total));
        size_t ours = ZT__MAX(b->desc.device_bytes, (size_t)256); /* the rest: context, libraries, workspace */
        b->library_bytes = total - free_b > ours ? total - free_b - ours : 0;
    }
    return ZT_OK;
}

static void zt__cuda_destroy(zt_backend *b) {
    zt__cuda *cu = zt__cuda_of(b);
    if (!cu) return;
    cudaDeviceSynchronize();
#ifndef ZT_NO_NCCL
    if (cu->nccl_for) zt__cuda_unshare(b, cu->nccl_for);
#endif
    for (int i = 0; i < cu->n_plans; i++) zt__cu_plan_destroy(&cu->plans[i]);
    for (int i = 0; i < b->n_streams; i++) {
        if (cu->sumsq_parts[i]) cudaFree(cu->sumsq_parts[i]);
        if (cu->workspace[i]) cudaFree(cu->workspace[i]);
        if (cu->streams[i]) cudaStreamDestroy(cu->streams[i]);
    }
    for (int i = 0; i < ZT_MAX_EVENTS; i++)
        if (cu->events[i]) cudaEventDestroy(cu->events[i]);
    if (cu->lt) cublasLtDestroy(cu->lt);
    if (cu->stage) cudaFreeHost(cu->stage);
    if (cu->device_mem) cudaFree(cu->device_mem);
    if (cu->pinned_mem) cudaFreeHost(cu->pinned_mem);
    free(cu);
    b->impl = NULL;
}

static zt_result zt__cuda_stream_init(zt_stream *s) {
    zt__cuda *cu = zt__cuda_of(s->backend);
    cudaError_t e = cudaStreamCreateWithFlags(&cu->streams[s->index], cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaMalloc((void **)&cu->sumsq_parts[s->index], sizeof(double) * ZT__SUMSQ_PARTS);
    if (e == cudaSuccess) e = cudaMalloc(&cu->workspace[s->index], ZT__CU_WORKSPACE); /* freed by zt__cuda_destroy */
    if (e != cudaSuccess) return zt_fail(ZT_ERROR_BACKEND, "cannot create a CUDA stream: %s", cudaGetErrorString(e));
    if (s->index > 0) /* the default stream's are in what zt__cuda_create measured; a later one's are added */
        s->backend->library_bytes += ZT__CU_WORKSPACE + sizeof(double) * ZT__SUMSQ_PARTS;
    return ZT_OK;
}

static zt_result zt__cuda_reserve(zt_backend *b, size_t device_bytes, size_t pinned_bytes) {
    return zt__cu_alloc_arenas(b, device_bytes, pinned_bytes);
}

static void zt__cuda_record(zt_event *e, zt_stream *s) {
    ZT__CU_CHECK(cudaEventRecord(zt__cuda_of(s->backend)->events[e->index], zt__cu_stream(s)));
}
static void zt__cuda_wait(zt_stream *s, zt_event *e) {
    ZT__CU_CHECK(cudaStreamWaitEvent(zt__cu_stream(s), zt__cuda_of(s->backend)->events[e->index], 0));
}
static void zt__cuda_stream_sync(zt_stream *s) {
    ZT__CU_CHECK(cudaStreamSynchronize(zt__cu_stream(s)));
    zt__cu_report();
}
static void zt__cuda_event_sync(zt_event *e) {
    ZT__CU_CHECK(cudaEventSynchronize(zt__cuda_of(e->backend)->events[e->index]));
    zt__cu_report();
}

/* >>backend (collectives between GPUs) ---------------------------------------------------------- */

/* a collective of 32-bit words on host memory, through the shared segment (setup-time exchanges) */
static zt_result zt__cu_host_coll(zt_comm *c, zt__coll what, uint32_t *out, uint32_t *in, int64_t n_out) {
    zt__args_comm a;
    memset(&a, 0, sizeof a);
    a.comm = c, a.what = what, a.op = ZT_REDUCE_SUM;
    a.out = zt_tensor_make(out, ZT_U32, ZT_HOST, zt_shape1(n_out));
    a.inp = zt_tensor_make(in, ZT_U32, ZT_HOST, zt_shape1(what == ZT__ALL_GATHER ? n_out / c->world : n_out));
    return zt__comm_run(&a);
}

#ifndef ZT_NO_NCCL
/* Watches the other ranks while this one has a collective in flight: a rank that died, or a collective
   that outlasts the communicator's timeout, aborts NCCL and ends this process with a message that
   names the rank, as the shared-memory collectives do. Ranks that exit after their last collective
   are not waited for, since then nothing is in flight (a second look a second later tells a collective
   that only finishes late from one that never will). */
/* has the TCP connection to rank q ended while nothing is due on it (NCCL carries the data beside
   it)? Then msg says how */
static int zt__cu_tcp_ended(const zt_comm *c, int q, char *msg, size_t n) {
    char b;
    ssize_t k = recv(c->fd[q], &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (k > 0 || (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))) return 0;
    zt__tcp_lost(q, k == 0 ? 0 : errno, msg, n);
    return 1;
}

/* a rank that is gone, or -1, with msg saying how: its pid no longer runs (the shared segment), or its
   connection ended (TCP: closed, or its host stopped answering the keepalive probes) */
static int zt__cu_peer_gone(const zt_comm *c, char *msg, size_t n) {
    for (int q = 0; q < c->world; q++) {
        if (q == c->rank) continue;
        int pid = c->shm ? __atomic_load_n(&c->h->pids[q], __ATOMIC_ACQUIRE) : 0;
        if (c->shm && !zt__pid_alive(pid)) {
            snprintf(msg, n, "rank %d (pid %d) is gone: it exited or was killed during a collective", q, pid);
            return q;
        }
        if (c->tcp && zt__cu_tcp_ended(c, q, msg, n)) return q;
    }
    return -1;
}

static void *zt__cu_watchdog(void *arg) {
    zt__cuda *cu = (zt__cuda *)arg;
    zt_comm *c = cu->nccl_for;
    if (cudaSetDevice(cu->device) != cudaSuccess) return NULL; /* else this thread would open a context on GPU 0 */
    while (!__atomic_load_n(&cu->stop_watch, __ATOMIC_ACQUIRE)) {
        struct timespec ts = {0, 200 * 1000 * 1000};
        nanosleep(&ts, NULL);
        if (cudaEventQuery(cu->nccl_done) != cudaErrorNotReady) continue; /* nothing in flight */
        char msg[256] = "";
        int who = c->rank, gone = zt__cu_peer_gone(c, msg, sizeof msg);
        if (gone >= 0) who = gone;
        if (msg[0]) { /* a rank whose part of the last collective is done may exit before this one's finishes */
            struct timespec grace = {1, 0};
            nanosleep(&grace, NULL);
            if (cudaEventQuery(cu->nccl_done) != cudaErrorNotReady) continue;
        }
        ncclResult_t async = ncclSuccess;
        if (!msg[0] && ncclCommGetAsyncError(cu->nccl, &async) == ncclSuccess && async != ncclSuccess && async != ncclInProgress)
            snprintf(msg, sizeof msg, "NCCL failed during a collective: %s", ncclGetErrorString(async));
        double waited = (double)(zt_time_ns() - __atomic_load_n(&cu->nccl_since, __ATOMIC_ACQUIRE)) / 1e9;
        if (!msg[0] && waited > c->timeout)
            snprintf(msg, sizeof msg, "rank %d waited %.0f s for the others at a collective (the timeout)", c->rank, waited);
        if (!msg[0] && c->shm && __atomic_load_n(&c->h->abort_rank, __ATOMIC_ACQUIRE) >= 0)
            snprintf(msg, sizeof msg, "%s", c->h->abort_msg);
        if (!msg[0]) continue;
        zt__comm_abort(c, who, msg);
        ncclCommAbort(cu->nccl);
        zt_fatal("rank %d of %d: %s", c->rank, c->world, msg);
    }
    return NULL;
}
#endif

/* zt_comm_share_device for the CUDA backend: NCCL when every rank has a GPU of its own, found by the
   GPUs' UUIDs; ranks that share a GPU (and builds without NCCL) stage through pinned host memory */
static zt_result zt__cuda_share(zt_backend *b, zt_comm *c) {
    zt__cuda *cu = zt__cuda_of(b);
    int W = c->world, R = c->rank, shared = 0;
    cudaDeviceProp prop;
    ZT__CU_CHECK(cudaGetDeviceProperties(&prop, cu->device));
    uint32_t mine[4], all[4 * ZT__COMM_MAX_RANKS];
    memcpy(mine, prop.uuid.bytes, sizeof mine);
    zt_result r = zt__cu_host_coll(c, ZT__ALL_GATHER, all, mine, 4 * (int64_t)W);
    if (r != ZT_OK) return r;
    for (int p = 0; p < W; p++)
        for (int q = 0; q < p; q++) shared |= memcmp(all + 4 * p, all + 4 * q, sizeof mine) == 0;
#ifdef ZT_NO_NCCL
    shared = 1;
#endif
    if (shared) {
        if (R == 0) zt_log(ZT_LOG_INFO, "%d ranks share GPUs (or NCCL is not built in): collectives are staged "
                           "through host memory", W);
        return ZT_OK;
    }
#ifndef ZT_NO_NCCL
    ZT_STATIC_ASSERT(sizeof(ncclUniqueId) % 4 == 0 && sizeof(ncclUniqueId) <= 512, "the id travels as words");
    ncclUniqueId id;
    uint32_t words[sizeof(ncclUniqueId) / 4];
    if (R == 0) ZT__NCCL_CHECK(ncclGetUniqueId(&id));
    memcpy(words, &id, sizeof id);
    if ((r = zt__cu_host_coll(c, ZT__BROADCAST, words, words, (int64_t)(sizeof words / 4))) != ZT_OK) return r;
    memcpy(&id, words, sizeof id);
    setenv("NCCL_RUNTIME_CONNECT", "0", 0); /* every connection now, not at a step's first large collective */
    ncclResult_t nr = ncclCommInitRank(&cu->nccl, W, id, R);
    if (nr != ncclSuccess) {
        cu->nccl = NULL;
        return zt_fail(ZT_ERROR_BACKEND, "NCCL could not connect rank %d of %d (GPU %d, %s): %s", R, W, cu->device,
                       cu->name, ncclGetErrorString(nr));
    }
    ZT__CU_CHECK(cudaEventCreateWithFlags(&cu->nccl_done, cudaEventDisableTiming));
    cu->nccl_for = c;
    cu->nccl_since = zt_time_ns();
    ZT__CU_CHECK(cudaEventRecord(cu->nccl_done, cu->streams[0]));
    cu->stop_watch = 0;
    cu->watching = pthread_create(&cu->watchdog, NULL, zt__cu_watchdog, cu) == 0;
    /* warm-up: the communicator's buffers exist before the first step, and count as library memory */
    zt_stream *s = zt_backend_stream(b);
    zt_tensor x = zt_tensor_make(cu->workspace[0], ZT_F32, ZT_DEVICE, zt_shape1(1024)); /* no gemm runs meanwhile */
    zt_fill(s, x, 1.0f);
    zt_all_reduce(s, c, x, ZT_REDUCE_SUM);
    zt_stream_sync(s);
    size_t free_b = 0, total = 0;
    ZT__CU_CHECK(cudaMemGetInfo(&free_b, &total));
    if (total - free_b > b->device.cap) b->library_bytes = total - free_b - b->device.cap;
    c->device_direct = 1;
    if (R == 0) zt_log(ZT_LOG_INFO, "%d ranks, a GPU each: collectives through NCCL %d.%d.%d", W, NCCL_MAJOR, NCCL_MINOR,
                       NCCL_PATCH);
#endif
    return ZT_OK;
}

static void zt__cuda_unshare(zt_backend *b, zt_comm *c) {
    zt__cuda *cu = zt__cuda_of(b);
    (void)c;
#ifndef ZT_NO_NCCL
    if (cu->nccl_for != c) return;
    /* the collectives still queued finish first, while the watchdog still watches them: a rank that died
       in the last step's collectives ends this one with its name instead of a silent wait in ncclCommDestroy */
    ZT__CU_CHECK(cudaDeviceSynchronize());
    zt__cu_report();
    if (cu->watching) {
        __atomic_store_n(&cu->stop_watch, 1, __ATOMIC_RELEASE);
        pthread_join(cu->watchdog, NULL);
        cu->watching = 0;
    }
    if (cu->nccl) ncclCommDestroy(cu->nccl);
    if (cu->nccl_done) cudaEventDestroy(cu->nccl_done);
    cu->nccl = NULL, cu->nccl_for = NULL, cu->nccl_done = NULL;
    c->device_direct = 0;
#else
    (void)cu;
#endif
}

static const zt__backend_vt zt__cuda_vt = {
    zt__cuda_create, zt__cuda_destroy, zt__cuda_stream_init, zt__cuda_reserve, zt__cuda_launch,
    zt__cuda_record, zt__cuda_wait, zt__cuda_stream_sync, zt__cuda_event_sync, zt__cuda_share, zt__cuda_unshare,
};
static const zt__backend_vt *zt__cuda_backend(void) { return &zt__cuda_vt; }

#endif /* ZT_CUDA_CUH */
