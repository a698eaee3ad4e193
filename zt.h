/* zt.h - train transformer language models from C.          MIT licence, see the end of this file.

   zt trains GPT-2, LLaMA, Mistral, Qwen2, Qwen3, Phi-3 and Gemma 1-3 models (and blocks you write) with what
   Transformers + Accelerate + DeepSpeed give Python users. This file is the whole library: declarations
   first, then the implementation, compiled in exactly one translation unit:

       #define ZT_IMPLEMENTATION
       #include "zt.h"

   Dependencies: libc, pthreads, jsmn (JSON) and stb_ds (setup-time tables); on Debian
   `apt-get install libjsmn-dev libstb-dev`.

   Usage (this exact example is compiled and run by the test suite: build.sh cuts it out of this comment
   into tests/example_main.c's program and checks what it prints):

   //>>example
       zt_backend *be = NULL;
       zt_backend_desc desc = zt_backend_desc_default();
       desc.device_bytes = 1 << 20;
       if (zt_backend_create(&be, "cpu", &desc) != ZT_OK) { puts(zt_last_error()); return 1; }
       zt_arena *dev = zt_backend_device_arena(be);
       zt_stream *s = zt_backend_stream(be);
       zt_tensor x = zt_tensor_new(dev, ZT_F32, ZT_DEVICE, zt_shape2(2, 3));
       zt_tensor w = zt_tensor_new(dev, ZT_F32, ZT_DEVICE, zt_shape2(4, 3));
       zt_tensor y = zt_tensor_new(dev, ZT_F32, ZT_DEVICE, zt_shape2(2, 4));
       zt_fill(s, x, 1.0f);
       zt_fill(s, w, 0.5f);
       zt_matmul_forward(s, y, x, w, NULL);            // y = x @ w^T
       float host[8];
       zt_copy(s, zt_tensor_make(host, ZT_F32, ZT_HOST, zt_shape2(2, 4)), y);
       zt_stream_sync(s);                              // host memory is valid only after a sync
       printf("y[0] = %.2f\n", host[0]);               // prints y[0] = 1.50
       zt_backend_destroy(be);
   //<<example

   Contents (each section starts with a grep-able banner, declarations first, then the implementation):
       >>base        version, build options, results and errors, asserts, logging, timer, thread pool
       >>arena       named arenas with a measure mode; stb_ds routed into an arena
       >>tensor      dtypes, shapes, tensors and views, bf16/f16 conversion
       >>backend     backends, streams, events, copies (the interface a backend implements)
       >>ops         every kernel, forward and backward, validated here and run by a backend
       >>model       Hugging Face config.json, the block interface, GPT-2 and LLaMA-family blocks
       >>engine      zt_init, zt_forward_backward, zt_step, zt_eval, zt_generate; options, schedules;
                     ZeRO stages 0-3 (overlap_comm: collectives on a stream of their own), offload to
                     host memory and NVMe, the memory plan
       >>comm        collectives (single rank, shared memory, direct between ranks' memory), the launcher
       >>config      DeepSpeed's JSON config (DeepSpeed 0.19.8's meaning)
       >>io          token data: llm.c, headerless and text files, masks, epochs, ranks
       >>tokenizer   Hugging Face tokenizer.json (byte-level and SentencePiece-style BPE), chat templates
                     (Jinja), token files
       >>checkpoint  zt_save / zt_load in DeepSpeed's layout; Hugging Face safetensors in and out
       >>json        (implementation only) a validating reader over jsmn
       >>cpu         (implementation only) the CPU backend: streams and kernels
   The CUDA backend is zt_cuda.cuh, next to this file: compiled by nvcc, this implementation includes it
   and zt_backend_create(.., "cuda", ..) works (cuBLASLt, NCCL; ZT_NO_NCCL builds without NCCL).

   Options (define before including):
       ZT_IMPLEMENTATION  compile the implementation in this translation unit (include zt.h first there)
       ZT_STATIC          make every function static (and marked unused): a private copy per unit
       ZT_ASSERT(c)       replace the always-on assertion (it must not return when c is false)
       ZT_CPU_MAX_THREADS upper bound on CPU worker threads (default 256)
       ZT_NO_NCCL         (nvcc builds) no NCCL: ranks stage collectives through pinned host memory

   Version: ZT_VERSION_STRING below. Licence: MIT (end of file).
*/
#ifndef ZT_H
#define ZT_H

/* The implementation uses Linux extensions (CPU affinity, memfd); they must be asked for before the
   first system header, so include zt.h first in the file that defines ZT_IMPLEMENTATION. */
#if defined(ZT_IMPLEMENTATION) && !defined(_GNU_SOURCE)
#  define _GNU_SOURCE 1
#endif

/* >>base ======================================================================================= */

#define ZT_VERSION_MAJOR 0
#define ZT_VERSION_MINOR 1
#define ZT_VERSION_PATCH 0
#define ZT_VERSION_STRING "0.1.0"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdarg.h>

#ifdef ZT_STATIC
#  if defined(__GNUC__) || defined(__clang__)
#    define ZT_API static __attribute__((unused))
#  else
#    define ZT_API static
#  endif
#else
#  define ZT_API extern
#endif

/* C11 and C++17 (g++, nvcc) spell these differently; zt uses only the macros. */
#ifdef __cplusplus
#  define ZT_ALIGNOF(T) alignof(T)
#  define ZT_STATIC_ASSERT(c, msg) static_assert(c, msg)
#  define ZT_THREAD_LOCAL thread_local
#  define ZT_RESTRICT __restrict__
#  define ZT_EXTERN_C_BEGIN extern "C" {
#  define ZT_EXTERN_C_END }
#else
#  define ZT_ALIGNOF(T) _Alignof(T)
#  define ZT_STATIC_ASSERT(c, msg) _Static_assert(c, msg)
#  define ZT_THREAD_LOCAL _Thread_local
#  define ZT_RESTRICT restrict
#  define ZT_EXTERN_C_BEGIN
#  define ZT_EXTERN_C_END
#endif
#ifdef __CUDACC__ /* a function of the bits that both backends compute, host and kernel alike */
#  define ZT_HOST_DEVICE __host__ __device__
#else
#  define ZT_HOST_DEVICE
#endif
#if defined(__GNUC__) || defined(__clang__)
#  define ZT_PRINTF(f, a) __attribute__((format(printf, f, a)))
#  define ZT_NORETURN __attribute__((noreturn))
#  define ZT_ALIGNED(n) __attribute__((aligned(n)))
#else
#  define ZT_ALIGNED(n)
#  define ZT_PRINTF(f, a)
#  ifdef __cplusplus
#    define ZT_NORETURN [[noreturn]]
#  else
#    define ZT_NORETURN _Noreturn
#  endif
#endif

ZT_EXTERN_C_BEGIN

/* Setup and I/O functions return a zt_result; on failure zt_last_error() holds one sentence that
   names the file, key or flag, what was expected and what was found. */
typedef enum zt_result {
    ZT_OK = 0,
    ZT_ERROR_INVALID,     /* a bad argument, flag or value given by the user */
    ZT_ERROR_IO,          /* a file could not be opened, read or written */
    ZT_ERROR_FORMAT,      /* a file's contents are malformed */
    ZT_ERROR_MEMORY,      /* an arena or the system ran out of memory */
    ZT_ERROR_UNSUPPORTED, /* valid, but not something zt implements */
    ZT_ERROR_BACKEND      /* the device, driver or a library failed */
} zt_result;

ZT_API const char *zt_last_error(void);           /* message of this thread's last failure */
ZT_API const char *zt_result_name(zt_result r);   /* "ZT_ERROR_IO", ... */
/* Records a failure message for zt_last_error() and returns code, so `return zt_fail(...)` reads well. */
ZT_API zt_result zt_fail(zt_result code, const char *fmt, ...) ZT_PRINTF(2, 3);
/* Unrecoverable: logs the message and calls the fatal handler, then abort(). */
ZT_API ZT_NORETURN void zt_fatal(const char *fmt, ...) ZT_PRINTF(1, 2);
typedef void (*zt_fatal_fn)(const char *message, void *user);
/* Called with the message of a fatal error; if it returns, zt aborts. NULL restores the default.
   Misused ops are caught on the calling thread, where a handler may longjmp out (tests do); errors
   found while a kernel runs (a token id past the vocabulary, say) come from a stream thread. */
ZT_API void zt_set_fatal_handler(zt_fatal_fn fn, void *user);
ZT_API ZT_NORETURN void zt_assert_fail(const char *expr, const char *file, int line);

/* Programmer errors: always on, never compiled out. */
#ifndef ZT_ASSERT
#  define ZT_ASSERT(c) ((c) ? (void)0 : zt_assert_fail(#c, __FILE__, __LINE__))
#endif

typedef enum zt_log_level { ZT_LOG_ERROR, ZT_LOG_WARN, ZT_LOG_INFO, ZT_LOG_DEBUG } zt_log_level;
typedef void (*zt_log_fn)(zt_log_level level, const char *message, void *user);
ZT_API void zt_set_log(zt_log_fn fn, void *user); /* NULL restores the default (stderr, INFO and up) */
ZT_API void zt_log(zt_log_level level, const char *fmt, ...) ZT_PRINTF(2, 3);

ZT_API uint64_t zt_time_ns(void);                 /* monotonic clock, nanoseconds */
ZT_API int zt_cpu_count(void);                    /* cores this process may run on */

/* Thread pool. Work is split into tasks by the caller (by shape, never by thread count, so results do
   not depend on how many threads run them); idle workers sleep. The calling thread runs tasks too. */
typedef struct zt_pool zt_pool;
typedef void (*zt_task_fn)(void *ctx, int64_t task, int thread); /* thread in [0, zt_pool_threads) */
ZT_API zt_pool *zt_pool_create(int threads);      /* threads includes the caller; 0 = zt_cpu_count() */
ZT_API void zt_pool_destroy(zt_pool *p);
ZT_API int zt_pool_threads(const zt_pool *p);
/* Runs fn(ctx, i, thread) for every i in [0, n_tasks) and returns when all are done. Callers on
   several threads are served one after another. */
ZT_API void zt_pool_run(zt_pool *p, int64_t n_tasks, zt_task_fn fn, void *ctx);

/* >>arena ====================================================================================== */

/* A named bump allocator over one block. In measure mode it has no memory: pushes return fake,
   aligned addresses and only the high-water mark is real, so running setup or a step through a
   measuring arena tells exactly how large the real one must be. Pass an arena by value to get a
   scratch arena: what the copy pushes is gone when it goes out of scope, and peaks still count.
   An arena must not be moved after zt_arena_init (its copies point at its high-water mark). */
typedef struct zt_arena {
    const char *name;
    uint8_t *base;   /* NULL while measuring */
    size_t cap;      /* bytes; SIZE_MAX while measuring */
    size_t used;     /* bytes from base, alignment and red zones included */
    size_t *peak;    /* high-water mark of used, shared by every copy */
    size_t peak_own;
    int stream_ordered; /* device memory: reused in stream order, so a reset does not poison it */
} zt_arena;

ZT_API void zt_arena_init(zt_arena *a, const char *name, void *memory, size_t cap_bytes);
ZT_API void zt_arena_init_measure(zt_arena *a, const char *name);
ZT_API int zt_arena_measuring(const zt_arena *a);
/* Marks memory that streams use: work queued before a reset may still read it, so under ASan a reset
   leaves it addressable (the backends' arenas and the engine's are marked). */
ZT_API void zt_arena_set_stream_ordered(zt_arena *a);
/* bytes from the arena, aligned to align (a power of two); out of space is fatal and names the arena */
ZT_API void *zt_arena_push(zt_arena *a, size_t bytes, size_t align);
/* as zt_arena_push, but out of space returns NULL with zt_last_error() set and the arena unchanged */
ZT_API void *zt_arena_try_push(zt_arena *a, size_t bytes, size_t align);
ZT_API size_t zt_arena_mark(const zt_arena *a);
ZT_API void zt_arena_reset(zt_arena *a, size_t mark); /* frees everything pushed after mark */
ZT_API size_t zt_arena_peak(const zt_arena *a);
ZT_API char *zt_arena_strdup(zt_arena *a, const char *s);

#define ZT_PUSH(arena, T, n) ((T *)zt_arena_push((arena), sizeof(T) * (size_t)(n), ZT_ALIGNOF(T)))

/* stb_ds tables are routed into this thread's metadata arena (zt never calls malloc for them).
   Returns the previous one; NULL makes stb_ds calls fatal. */
ZT_API zt_arena *zt_set_meta_arena(zt_arena *a);

/* >>tensor ===================================================================================== */

typedef enum zt_dtype { ZT_F32, ZT_BF16, ZT_F16, ZT_I32, ZT_U16, ZT_U32, ZT_DTYPE_COUNT } zt_dtype;
typedef enum zt_place { ZT_HOST, ZT_DEVICE } zt_place;

#define ZT_MAX_DIMS 4
typedef struct zt_shape { int ndim; int64_t d[ZT_MAX_DIMS]; } zt_shape;
ZT_API zt_shape zt_shape1(int64_t d0);
ZT_API zt_shape zt_shape2(int64_t d0, int64_t d1);
ZT_API zt_shape zt_shape3(int64_t d0, int64_t d1, int64_t d2);
ZT_API zt_shape zt_shape4(int64_t d0, int64_t d1, int64_t d2, int64_t d3);

/* A contiguous, row-major array. It does not own its memory: arenas do. */
typedef struct zt_tensor {
    void *data;
    zt_dtype dtype;
    zt_place place;
    zt_shape shape;
} zt_tensor;

ZT_API size_t zt_dtype_size(zt_dtype t);
ZT_API const char *zt_dtype_name(zt_dtype t);
ZT_API int zt_dtype_is_float(zt_dtype t);
ZT_API zt_tensor zt_tensor_make(void *data, zt_dtype dtype, zt_place place, zt_shape shape);
/* a tensor whose memory comes from arena a (aligned to 64 bytes) */
ZT_API zt_tensor zt_tensor_new(zt_arena *a, zt_dtype dtype, zt_place place, zt_shape shape);
ZT_API int64_t zt_numel(zt_tensor t);
ZT_API size_t zt_nbytes(zt_tensor t);
ZT_API int64_t zt_rows(zt_tensor t);              /* product of all dimensions but the last */
ZT_API int64_t zt_cols(zt_tensor t);              /* the last dimension */
/* the same memory seen with another shape, starting offset elements in */
ZT_API zt_tensor zt_view(zt_tensor t, int64_t offset, zt_shape shape);
/* rows [row0, row0 + n) of the first dimension */
ZT_API zt_tensor zt_slice(zt_tensor t, int64_t row0, int64_t n);
ZT_API int zt_same_shape(zt_tensor a, zt_tensor b);
ZT_API void zt_shape_str(zt_shape s, char *buf, size_t size); /* "(2, 3, 4)" */

/* Conversions round to nearest even, keep NaN a (quiet) NaN, and handle infinities and subnormals. */
ZT_API uint16_t zt_f32_to_bf16(float f);
ZT_API float zt_bf16_to_f32(uint16_t h);
ZT_API uint16_t zt_f32_to_f16(float f);
ZT_API float zt_f16_to_f32(uint16_t h);
/* host memory: n elements of src_t to dst_t (integer <-> float conversions included) */
ZT_API void zt_convert(void *dst, zt_dtype dst_t, const void *src, zt_dtype src_t, int64_t n);

/* >>backend ==================================================================================== */

/* A backend supplies memory (a device arena and a pinned host arena), copies, streams and events, and
   the kernels of every op. All work is stream-ordered, as on a GPU: host code reads device memory only
   after a copy to host memory and a sync. The CPU backend is a complete trainer and the reference the
   CUDA kernels are checked against. */
typedef struct zt_backend zt_backend;
typedef struct zt_stream zt_stream;
typedef struct zt_event zt_event;
typedef struct zt_comm zt_comm; /* >>comm */

typedef struct zt_backend_desc {
    size_t device_bytes;   /* capacity of the device arena (the CPU backend honours it too) */
    size_t pinned_bytes;   /* capacity of the pinned host arena */
    int threads;           /* CPU: worker threads, 0 = every core */
    int strict;            /* CPU: stream work runs only when the host waits for it, so a missing
                              sync or event reads stale memory in a test instead of racing on a GPU */
    int device_index;      /* CUDA: which GPU; -1: LOCAL_RANK's (0 without it), modulo the GPUs there are */
} zt_backend_desc;

#define ZT_MAX_STREAMS 8
#define ZT_MAX_EVENTS 64

ZT_API zt_backend_desc zt_backend_desc_default(void);
/* name: "cpu" or "cuda". Allocates both arenas once; nothing is allocated after. */
ZT_API zt_result zt_backend_create(zt_backend **out, const char *name, const zt_backend_desc *desc);
ZT_API void zt_backend_destroy(zt_backend *b);   /* waits for all streams first */
/* Replaces the still unused arenas with ones of exactly these sizes: create, measure, then reserve. */
ZT_API zt_result zt_backend_reserve(zt_backend *b, size_t device_bytes, size_t pinned_bytes);
ZT_API const char *zt_backend_name(const zt_backend *b);
ZT_API zt_arena *zt_backend_device_arena(zt_backend *b);
ZT_API zt_arena *zt_backend_pinned_arena(zt_backend *b);
ZT_API zt_stream *zt_backend_stream(zt_backend *b);       /* the default compute stream */
ZT_API zt_stream *zt_stream_create(zt_backend *b);        /* at most ZT_MAX_STREAMS, at setup */
ZT_API zt_event *zt_event_create(zt_backend *b);          /* at most ZT_MAX_EVENTS, at setup */
ZT_API void zt_stream_sync(zt_stream *s);                 /* host waits for all work queued on s */
ZT_API void zt_event_record(zt_event *e, zt_stream *s);   /* e completes when s reaches this point */
ZT_API void zt_stream_wait(zt_stream *s, zt_event *e);    /* later work on s waits for e */
ZT_API void zt_event_sync(zt_event *e);                   /* host waits for e */
ZT_API void zt_backend_sync(zt_backend *b);               /* host waits for every stream */
/* When on, ops are validated but not run (tensors may come from measuring arenas). */
ZT_API void zt_backend_set_measure(zt_backend *b, int on);
ZT_API zt_backend *zt_stream_backend(zt_stream *s);

/* >>ops ======================================================================================== */

/* Every op is queued on a stream. Shapes are checked here, once, for every backend; a wrong shape or
   dtype is a programmer error (ZT_ASSERT with the shapes printed). Float tensors may be f32, bf16 or
   f16 unless a comment says otherwise; arithmetic is f32, results rounded once to the output dtype.
   Backward functions accumulate (+=) into their d* outputs; an optional tensor is passed by pointer
   and may be NULL. Leading dimensions are flattened into rows: a (B,T,C) tensor is (B*T, C). */

/* dst = src: same dtype and element count, any placement (host<->device included). Like every op it runs
   when the stream reaches it: host memory it reads must stay as it is (and alive) until then, and host
   memory it writes is valid after a sync. Pinned memory (zt_backend_pinned_arena) copies asynchronously on
   a GPU; other host memory works, slower. */
ZT_API void zt_copy(zt_stream *s, zt_tensor dst, zt_tensor src);
/* out = inp converted to out's dtype (same element count) */
ZT_API void zt_cast(zt_stream *s, zt_tensor out, zt_tensor inp);
ZT_API void zt_fill(zt_stream *s, zt_tensor t, float value);
ZT_API void zt_scale(zt_stream *s, zt_tensor t, float alpha);   /* t *= alpha */
/* out = a + b (residual add; out may alias a or b) */
ZT_API void zt_add(zt_stream *s, zt_tensor out, zt_tensor a, zt_tensor b);
/* t[i] += magnitude * (2 u - 1), u in [0, 1) a function of (seed, offset + i) alone (zt_noise_uniform):
   the same bits on every backend, and at any split of a tensor across ranks (offset: where this part
   begins). NEFTune's noise on the embeddings. */
ZT_API void zt_add_uniform_noise(zt_stream *s, zt_tensor t, float magnitude, uint64_t seed, int64_t offset);
/* t[i] *= (1 - jitter) + 2 jitter u, u as zt_add_uniform_noise draws it: uniform in [1 - jitter, 1 + jitter], as
   Mixtral's router_jitter_noise; the same call on the gradient is its backward */
ZT_API void zt_mul_uniform_noise(zt_stream *s, zt_tensor t, float jitter, uint64_t seed, int64_t offset);
/* Dropout, in place: t[i] = u >= p ? t[i] * (1 / (1 - p)) : 0, u as zt_add_uniform_noise draws it (torch's
   nn.Dropout with these draws); 0 <= p <= 1 (1: every element 0). The same call on the gradient is its backward. */
ZT_API void zt_dropout(zt_stream *s, zt_tensor t, float p, uint64_t seed, int64_t offset);
/* the u of zt_add_uniform_noise: 24 random bits, an f32 in [0, 1) */
static inline ZT_HOST_DEVICE float zt_noise_uniform(uint64_t seed, int64_t i) {
    uint64_t z = seed + ((uint64_t)i + 1) * 0x9e3779b97f4a7c15ull; /* splitmix64 at position i */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (float)((z ^ (z >> 31)) >> 40) * (1.0f / 16777216.0f);
}
/* what dropout multiplies element i by: 0 (dropped) or scale = 1 / (1 - p) (u < 1: p = 1 drops every element) */
static inline ZT_HOST_DEVICE float zt_dropout_factor(uint64_t seed, int64_t i, float p, float scale) {
    return zt_noise_uniform(seed, i) >= p ? scale : 0.0f;
}

/* General matrix product: c (M,N) = alpha * op(a) @ op(b) + beta * c + bias, op(x) = x or x^T.
   With beta == 0, c is never read (it may hold anything, NaN included).
   a is (M,K), or (K,M) with trans_a; b is (K,N), or (N,K) with trans_b; bias (N) is optional.
   Batched when a, b and c are all 3-D: dimension 0 is the batch, and a or b may have batch 1. */
ZT_API void zt_gemm(zt_stream *s, zt_tensor c, zt_tensor a, zt_tensor b, int trans_a, int trans_b,
                    float alpha, float beta, const zt_tensor *bias);
/* x (R,C) -> out (C) += column sums of x (bias gradients); summed in row order */
ZT_API void zt_sum_rows(zt_stream *s, zt_tensor out, zt_tensor x);

/* Linear layer. inp (N,C), weight (OC,C), bias (OC) -> out (N,OC) = inp @ weight^T + bias */
ZT_API void zt_matmul_forward(zt_stream *s, zt_tensor out, zt_tensor inp, zt_tensor weight,
                              const zt_tensor *bias);
/* dinp (N,C) += dout @ weight; dweight (OC,C) += dout^T @ inp; dbias (OC) += column sums of dout.
   NULL, or a pointer to an absent tensor (a frozen parameter's gradient), skips that product. */
ZT_API void zt_matmul_backward(zt_stream *s, const zt_tensor *dinp, const zt_tensor *dweight,
                               const zt_tensor *dbias, zt_tensor dout, zt_tensor inp, zt_tensor weight);

/* ids (N) i32 in [0,V), table (V,C) -> out (N,C) = table[ids] (added to out when accumulate).
   Token embeddings, and position embeddings with position ids (which restart at documents). */
ZT_API void zt_embedding_forward(zt_stream *s, zt_tensor out, zt_tensor ids, zt_tensor table,
                                 int accumulate);
/* dtable (V,C) += dout rows scattered by ids; deterministic (each row summed in order of n) */
ZT_API void zt_embedding_backward(zt_stream *s, zt_tensor dtable, zt_tensor dout, zt_tensor ids);

/* inp (N,C), weight, bias (C) -> out (N,C); mean, rstd (N) f32 saved for backward */
ZT_API void zt_layernorm_forward(zt_stream *s, zt_tensor out, zt_tensor mean, zt_tensor rstd,
                                 zt_tensor inp, zt_tensor weight, zt_tensor bias, float eps);
/* dweight and dbias may be absent (ndim 0): a frozen weight */
ZT_API void zt_layernorm_backward(zt_stream *s, zt_tensor dinp, zt_tensor dweight, zt_tensor dbias,
                                  zt_tensor dout, zt_tensor inp, zt_tensor weight, zt_tensor mean,
                                  zt_tensor rstd);
/* inp (N,C), weight (C) -> out (N,C) = inp * rstd * weight; rstd (N) f32 saved */
ZT_API void zt_rmsnorm_forward(zt_stream *s, zt_tensor out, zt_tensor rstd, zt_tensor inp,
                               zt_tensor weight, float eps);
ZT_API void zt_rmsnorm_backward(zt_stream *s, zt_tensor dinp, zt_tensor dweight, zt_tensor dout,
                                zt_tensor inp, zt_tensor weight, zt_tensor rstd);
/* The same with the weight stored as its difference from `offset`: out = inp * rstd * (offset + weight),
   all in f32 and rounded once (Gemma's RMSNorm: offset 1, the weight starts at 0). dweight as above. */
ZT_API void zt_rmsnorm_offset_forward(zt_stream *s, zt_tensor out, zt_tensor rstd, zt_tensor inp,
                                      zt_tensor weight, float offset, float eps);
ZT_API void zt_rmsnorm_offset_backward(zt_stream *s, zt_tensor dinp, zt_tensor dweight, zt_tensor dout,
                                       zt_tensor inp, zt_tensor weight, float offset, zt_tensor rstd);

/* GELU, tanh approximation (GPT-2's gelu_new). inp (N) -> out (N) */
ZT_API void zt_gelu_forward(zt_stream *s, zt_tensor out, zt_tensor inp);
ZT_API void zt_gelu_backward(zt_stream *s, zt_tensor dinp, zt_tensor dout, zt_tensor inp);
/* SiLU: x * sigmoid(x). inp (N) -> out (N) */
ZT_API void zt_silu_forward(zt_stream *s, zt_tensor out, zt_tensor inp);
ZT_API void zt_silu_backward(zt_stream *s, zt_tensor dinp, zt_tensor dout, zt_tensor inp);
/* SwiGLU: inp (N,2H), each row [gate | up] -> out (N,H) = silu(gate) * up */
ZT_API void zt_swiglu_forward(zt_stream *s, zt_tensor out, zt_tensor inp);
ZT_API void zt_swiglu_backward(zt_stream *s, zt_tensor dinp, zt_tensor dout, zt_tensor inp);
/* GeGLU: inp (N,2H), each row [gate | up] -> out (N,H) = gelu(gate) * up, the tanh GELU above (Gemma's
   gelu_pytorch_tanh) */
ZT_API void zt_geglu_forward(zt_stream *s, zt_tensor out, zt_tensor inp);
ZT_API void zt_geglu_backward(zt_stream *s, zt_tensor dinp, zt_tensor dout, zt_tensor inp);

#define ZT_MOE_MAX_EXPERTS 1024
#define ZT_MOE_MAX_K 32
/* Mixture of experts (Mixtral, Qwen3-MoE): each of N tokens goes to k of E experts, through these steps.
   Routing: logits (N,E) -> probs (N,E) f32 = softmax(logits); idx (N,k) i32, each token's k likeliest experts
   in increasing expert order (a tie goes to the lower expert); weight (N,k) f32, their probabilities, divided
   by their sum when normalize. Backward: dlogits (N,E) += the gradient through weight of dweight (N,k) f32. */
ZT_API void zt_moe_route_forward(zt_stream *s, zt_tensor idx, zt_tensor weight, zt_tensor probs, zt_tensor logits,
                                 int normalize);
ZT_API void zt_moe_route_backward(zt_stream *s, zt_tensor dlogits, zt_tensor dweight, zt_tensor probs, zt_tensor idx,
                                  int normalize);
/* The load-balancing loss's way back (output_router_logits): dlogits (N,E) += the gradient through softmax of
   dprobs (E) f32, one value per expert, on every token's probabilities probs (N,E) f32. */
ZT_API void zt_moe_balance_backward(zt_stream *s, zt_tensor dlogits, zt_tensor probs, zt_tensor dprobs);
/* The N*k choices (choice t*k+j: token t's j-th expert) grouped by expert: order (N*k) i32 lists expert 0's
   choices, then expert 1's, ..., each in token order; where (N*k) i32 is its inverse (choice -> position in
   order); counts (E) i32, each expert's choices. E = counts' length; idx (N,k) i32. */
ZT_API void zt_moe_sort(zt_stream *s, zt_tensor order, zt_tensor where, zt_tensor counts, zt_tensor idx);
/* xs (N*k, C): row r is x (N,C)'s row order[r] / k, each token once per choice, expert by expert. Backward:
   dx (N,C) += for each token, its k rows of dxs (where[t*k+j]), in j order. */
ZT_API void zt_moe_gather_forward(zt_stream *s, zt_tensor xs, zt_tensor x, zt_tensor order);
ZT_API void zt_moe_gather_backward(zt_stream *s, zt_tensor dx, zt_tensor dxs, zt_tensor where);
/* out (N,C) = sum over j of weight (N,k)[t,j] * ys (N*k, C)[where[t*k+j]], summed in j order (increasing expert,
   as transformers adds them). Backward: dys += weight * dout rows; dweight (N,k) f32 += dout . ys rows. */
ZT_API void zt_moe_combine_forward(zt_stream *s, zt_tensor out, zt_tensor ys, zt_tensor weight, zt_tensor where);
ZT_API void zt_moe_combine_backward(zt_stream *s, zt_tensor dys, zt_tensor dweight, zt_tensor dout, zt_tensor ys,
                                    zt_tensor weight, zt_tensor where);
/* A gated branch (Qwen2-MoE's shared expert): out (N,C) += sigmoid(gate (N)) * y (N,C), each row by its gate.
   Backward: dy += sigmoid(gate) * dout; dgate (N) += sigmoid'(gate) * (dout . y). */
ZT_API void zt_gated_add_forward(zt_stream *s, zt_tensor out, zt_tensor y, zt_tensor gate);
ZT_API void zt_gated_add_backward(zt_stream *s, zt_tensor dy, zt_tensor dgate, zt_tensor dout, zt_tensor y,
                                  zt_tensor gate);

/* Rotary position embedding, Hugging Face rotate-half convention: dimension i pairs with i + HD/2.
   x (B,T,H,HD), pos (B,T) i32 -> out (B,T,H,HD); out may alias inp. Angles are computed in f32 as
   transformers computes them (inv_freq = 1 / theta^(2i/HD), angle = pos * inv_freq; with scaling, LLaMA-3.1's
   "llama3" rope_type adjusts inv_freq by wavelength as transformers does, the "linear" type divides it by
   the factor, "yarn" blends the two by a ramp over the pairs and "longrope" divides each pair's by its factor,
   both also scaling cos and sin by their attention factor).
   Backward adds the rotated-back dout into dinp, so dinp must not alias dout. scaling NULL (or factor 0): none. */
typedef struct zt_rope_scaling {
    float factor, low_freq_factor, high_freq_factor, original_max_positions;
    int linear; /* rope_type "linear" (Gemma 3's global layers): only factor counts */
    int yarn;   /* rope_type "yarn" (Qwen2.5's long context): factor, original_max_positions and these count */
    double beta_fast, beta_slow; /* the ramp's ends in rotations (transformers' defaults 32 and 1; doubles, as its maths) */
    int truncate;               /* the ramp's ends rounded out to whole pairs (transformers' default) */
    float attention_factor;     /* cos and sin times this (0: 1) */
    const float *pair_factors;  /* rope_type "longrope" (Phi-3's long context): inv_freq / pair_factors[i], the
                                   short or the long factors as the batch's positions reach (zt_model_config); read
                                   when the op runs, so it must outlive the queued op (the engine's are its config's) */
    int64_t rotary_dim;         /* > 0: only a head's first rotary_dim dimensions rotate (pairs i and i + rotary_dim/2,
                                   the frequencies of a head of rotary_dim; Phi-3's partial_rotary_factor), the rest
                                   pass as they are; 0: the whole head. Even, at most HD; read whatever the factor. */
} zt_rope_scaling;
#define ZT_ROPE_MAX_PAIRS 256 /* head dims up to 512 */
ZT_API void zt_rope_forward(zt_stream *s, zt_tensor out, zt_tensor inp, zt_tensor pos, float theta,
                            const zt_rope_scaling *scaling);
ZT_API void zt_rope_backward(zt_stream *s, zt_tensor dinp, zt_tensor dout, zt_tensor pos, float theta,
                             const zt_rope_scaling *scaling);

/* Causal attention with grouped-query heads, no T x T matrix in memory.
   q (B,T,NH,HD), k and v (B,T,NKV,HD) with NH a multiple of NKV -> out (B,T,NH,HD); lse (B,NH,T) f32
   (log-sum-exp of each row's scores) saved. starts (B,T) i32, optional: query t sees keys
   [starts[t], t] (packed documents); absent, it sees [0, t]. Scores are scaled by 1/sqrt(HD). */
ZT_API void zt_attention_forward(zt_stream *s, zt_tensor out, zt_tensor lse, zt_tensor q, zt_tensor k,
                                 zt_tensor v, const zt_tensor *starts);
ZT_API void zt_attention_backward(zt_stream *s, zt_tensor dq, zt_tensor dk, zt_tensor dv,
                                  zt_tensor dout, zt_tensor q, zt_tensor k, zt_tensor v, zt_tensor out,
                                  zt_tensor lse, const zt_tensor *starts);
/* The same with the variants models take; zero fields are the defaults above (opts NULL: all of them). */
typedef struct zt_attention_opts {
    float scale;    /* the scores' scale; 0: 1/sqrt(HD) (Gemma 2: query_pre_attn_scalar^-1/2) */
    float softcap;  /* > 0: scores capped to softcap * tanh(score / softcap) before the softmax (Gemma 2's
                       attn_logit_softcapping); lse is of the capped scores */
    int64_t window; /* > 0: query t also sees no key before t - window + 1 (a sliding window, as transformers'
                       sliding_window: the window keys up to and including t) */
    float dropout;  /* > 0: attention dropout (attn_pdrop, attention_dropout): probability (b, h, i, j) times
                       zt_dropout_factor(dropout_seed, dropout_offset + ((b NH + h) T + i) T + j, ...) before it
                       weighs v (lse is of the probabilities before it); the backward takes the same options */
    uint64_t dropout_seed;
    int64_t dropout_offset; /* where batch row 0 begins in the draws (a rank's rows: its first row NH T T) */
} zt_attention_opts;
ZT_API void zt_attention_ex_forward(zt_stream *s, zt_tensor out, zt_tensor lse, zt_tensor q, zt_tensor k,
                                    zt_tensor v, const zt_tensor *starts, const zt_attention_opts *opts);
ZT_API void zt_attention_ex_backward(zt_stream *s, zt_tensor dq, zt_tensor dk, zt_tensor dv,
                                     zt_tensor dout, zt_tensor q, zt_tensor k, zt_tensor v, zt_tensor out,
                                     zt_tensor lse, const zt_tensor *starts, const zt_attention_opts *opts);

/* Softmax + cross-entropy fused. logits (N,Vp) with only the first `vocab` columns real (the rest is
   padding and never counts), targets (N) i32. losses (N) f32 = -log softmax(row)[target], 0 where
   target == ignore_index. With dlogits (N,Vp), which may alias logits: dlogits = (softmax - onehot) *
   dloss, zero in padding columns and ignored rows (written, not accumulated: logits are temporaries). */
ZT_API void zt_crossentropy(zt_stream *s, zt_tensor losses, const zt_tensor *dlogits, zt_tensor logits,
                            zt_tensor targets, int64_t vocab, int ignore_index, float dloss);
/* The output layer and the loss, in row chunks so that no (N,Vp) logits exist at once:
   hidden (N,C), weight (Vp,C), targets (N) -> losses (N); with dhidden/dweight, backward too
   (dhidden += , dweight += ). logits_buf (R,Vp) is scratch; R rows are done per chunk (fewer in backward
   when the weight's dtype is narrower: its gradient of the logits, in that dtype, shares the buffer). */
ZT_API void zt_output_loss(zt_stream *s, zt_tensor losses, const zt_tensor *dhidden,
                           const zt_tensor *dweight, zt_tensor hidden, zt_tensor weight,
                           zt_tensor targets, zt_tensor logits_buf, int64_t vocab, int ignore_index,
                           float dloss);
/* Both with the logits capped first, with softcap > 0: softcap * tanh(logit / softcap) (Gemma 2's
   final_logit_softcapping); dlogits is the gradient of the logits before the cap. */
ZT_API void zt_crossentropy_capped(zt_stream *s, zt_tensor losses, const zt_tensor *dlogits, zt_tensor logits,
                                   zt_tensor targets, int64_t vocab, int ignore_index, float dloss, float softcap);
ZT_API void zt_output_loss_capped(zt_stream *s, zt_tensor losses, const zt_tensor *dhidden,
                                  const zt_tensor *dweight, zt_tensor hidden, zt_tensor weight,
                                  zt_tensor targets, zt_tensor logits_buf, int64_t vocab, int ignore_index,
                                  float dloss, float softcap);
/* The general form of the two, with the Trainer's label smoothing (label_smoothing_factor e, transformers 5's
   LabelSmoother per token): a row's loss is (1 - e) (lse - x_t) + e (lse - the mean of its vocab logits), and
   dlogits (softmax - (1 - e) onehot - e / vocab) dloss, of the capped logits where softcap > 0. */
typedef struct zt_loss_params {
    int64_t vocab;
    int ignore_index;
    float dloss, softcap, label_smoothing; /* softcap 0: none; label_smoothing in [0, 1] */
} zt_loss_params;
ZT_API void zt_crossentropy_with(zt_stream *s, zt_tensor losses, const zt_tensor *dlogits, zt_tensor logits,
                                 zt_tensor targets, zt_loss_params p);
ZT_API void zt_output_loss_with(zt_stream *s, zt_tensor losses, const zt_tensor *dhidden, const zt_tensor *dweight,
                                zt_tensor hidden, zt_tensor weight, zt_tensor targets, zt_tensor logits_buf,
                                zt_loss_params p);

/* AdamW (decoupled weight decay, PyTorch's formula). master, m, v (n) f32; grad (n) any float dtype,
   multiplied by grad_scale first (loss-scale unscaling and clipping; with l2, the decay term is added
   after that); param16, optional, receives the updated master rounded to its dtype. step counts from 1.
   Initialise the parameters with designated fields or memset: more may be added. */
typedef struct zt_adamw_params {
    float lr, beta1, beta2, eps, weight_decay, grad_scale;
    int64_t step;
    int l2; /* 1: weight decay as L2 regularisation added to the gradient (Adam), not decoupled */
} zt_adamw_params;
ZT_API void zt_adamw(zt_stream *s, zt_tensor master, zt_tensor m, zt_tensor v, zt_tensor grad,
                     const zt_tensor *param16, zt_adamw_params p);
/* PyTorch's AdamW defaults (lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight decay 0.01), step 1 */
ZT_API zt_adamw_params zt_adamw_params_default(void);
/* The same AdamW on host memory (DeepSpeed's CPU Adam, for ZeRO-Offload): f32 master, moments and
   gradient; param16 (NULL: none) receives the updated weights in param16_dtype. Vectorised, spread over
   the pool's threads, and the same bits as the CPU backend's zt_adamw. */
ZT_API void zt_adamw_host(zt_pool *pool, float *master, float *m, float *v, const float *grad, void *param16,
                          zt_dtype param16_dtype, int64_t n, zt_adamw_params p);

/* out (1) f32 = sum of x^2, accumulated in double in chunks fixed by x's size (for gradient norms) */
ZT_API void zt_sumsq(zt_stream *s, zt_tensor out, zt_tensor x);

/* >>model ====================================================================================== */

/* A model is a list of blocks: block 0 turns tokens into (B,T,C) activations, the last block turns
   activations into per-token losses, and every block between maps (B,T,C) to (B,T,C). The built-in
   models (GPT-2, LLaMA, Mistral, Qwen2, Qwen3, Phi-3, Gemma 1-3) are written with this same interface. A block
   declares its parameters; the engine owns them (flat groups, one per block), their gradients and
   optimizer state, the activation memory, recomputation, and later sharding and offload. */

typedef struct zt_model_config {
    char model_type[16];        /* "gpt2", "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe",
                                   "phi3", "gemma", "gemma2", "gemma3_text" */
    int64_t n_layer, n_head, n_kv_head, head_dim;
    int64_t hidden, intermediate;
    int64_t max_positions, vocab, vocab_padded; /* vocab_padded: a multiple of 128, never seen */
    float norm_eps, rope_theta, init_std;
    zt_rope_scaling rope_scaling; /* rope_type "llama3" (LLaMA-3.1), "linear", "yarn" or "longrope"; factor 0: none */
    int longrope;               /* rope_type "longrope": these factors per pair, the long ones for a batch whose
                                   positions pass original_max_positions (transformers' seq_len) */
    float rope_short[ZT_ROPE_MAX_PAIRS], rope_long[ZT_ROPE_MAX_PAIRS];
    int tied_embeddings;
    int qkv_bias;               /* biases on q, k, v (GPT-2, Qwen2, LLaMA's attention_bias) */
    int out_bias;               /* biases on the attention output and the MLP (GPT-2, attention_bias) */
    int qk_norm;                /* an RMSNorm over each head of q and k before the rotation (Qwen3, Gemma 3) */
    int has_pad_token;          /* the LLaMA family: pad_token_id is the embedding's padding_idx, a token */
    int64_t pad_token_id;       /* whose uses add no gradient to its row (GPT-2 has none) */
    int fused;                  /* q, k and v in one qkv_proj, gate and up in one gate_up_proj (Phi-3) */
    int64_t sliding_window;     /* the window of the layers `windowed` marks (zt_attention_opts); 0: none */
    uint64_t windowed[64];      /* bit l % 64 of word l / 64: layer l attends within sliding_window */
    int64_t rotary_dim;         /* > 0: a head's first rotary_dim dimensions rotate, the rest pass (Phi-3's
                                   partial_rotary_factor; zt_rope_scaling.rotary_dim); 0: the whole head */
    /* Gemma's choices (0 elsewhere) */
    float embed_scale;          /* token embeddings times this, rounded to the weights' dtype (sqrt(hidden)) */
    float norm_offset;          /* RMSNorm weights stored as their difference from this (1: 1 + weight) */
    int geglu;                  /* the MLP's gate through the tanh GELU, not SiLU */
    int sandwich_norms;         /* Gemma 2 and 3: RMSNorms on the attention's and the MLP's outputs too */
    float attn_scale;           /* the scores' scale; 0: 1/sqrt(head_dim) (Gemma 2: query_pre_attn_scalar^-1/2) */
    float attn_softcap;         /* scores capped to softcap * tanh(score / softcap); 0: none (Gemma 2: 50) */
    float logit_softcap;        /* logits capped the same way before the loss and sampling (Gemma 2: 30) */
    float local_rope_theta;     /* > 0: the windowed layers' rope theta, without rope_scaling (Gemma 3) */
    /* mixture of experts (Mixtral, Qwen3-MoE; 0 experts elsewhere): the sparse layers' MLP is n_experts
       SwiGLU MLPs of expert_intermediate, each token through the experts_per_token a router picks */
    int64_t n_experts, experts_per_token, expert_intermediate;
    int64_t shared_intermediate; /* > 0: a shared expert of this size beside them, gated by a sigmoid (Qwen2-MoE) */
    int norm_topk;              /* the picked experts' weights divided by their sum (Mixtral; Qwen3-MoE's norm_topk_prob) */
    float router_aux_coef;      /* > 0: the routers' load-balancing loss times this joins the loss (output_router_logits
                                   with router_aux_loss_coef); 0: the language-model loss alone */
    float router_jitter;        /* Mixtral's router_jitter_noise: in training a sparse layer's input (router and
                                   experts alike) is multiplied by noise uniform in [1 - j, 1 + j] */
    /* dropout in training, where transformers has it (0: none; each in [0, 1]) */
    float embd_dropout;         /* GPT-2's embd_pdrop: on the embeddings' sum (tokens and positions) */
    float resid_dropout;        /* resid_pdrop (GPT-2, Phi-3): on the attention's and the MLP's outputs before
                                   each residual add */
    float attn_dropout;         /* attn_pdrop (GPT-2), attention_dropout (the others): on the attention's
                                   probabilities (zt_attention_opts.dropout) */
    uint64_t sparse[64];        /* bit l % 64 of word l / 64: layer l has the experts (the others: the dense MLP) */
} zt_model_config;

/* Reads a Hugging Face config.json (or the directory holding one). Keys that change the maths and
   are not implemented are refused by name. Keys left out take transformers' defaults (GPT-2's dropouts: 0.1). */
ZT_API zt_result zt_model_config_read(zt_model_config *c, const char *path);
ZT_API zt_result zt_model_config_parse(zt_model_config *c, const char *json, size_t len, const char *name);
ZT_API int64_t zt_model_config_params(const zt_model_config *c); /* parameters, real vocabulary */

typedef struct zt_block_def zt_block_def;
typedef enum zt_init_kind { ZT_INIT_NORMAL, ZT_INIT_ZEROS, ZT_INIT_ONES } zt_init_kind;
#define ZT_PARAM_DECAY 1u  /* weight decay applies (2-D weights) */
#define ZT_PARAM_FROZEN 2u /* no gradient, no optimizer state */
#define ZT_PARAM_JOIN 4u   /* starts where the block's previous parameter ends (no padding between), so
                              the two can be used as one tensor (LLaMA's gate and up projections) */
#define ZT_PARAM_VOCAB 8u  /* dimension 0 is the padded vocabulary: rows past the real vocabulary start
                              at zero, get no gradient and are never exported */

/* Declares a parameter of the block being defined; returns its index in ctx->param. */
ZT_API int zt_block_param(zt_block_def *def, const char *name, zt_shape shape, unsigned flags,
                          zt_init_kind init, float std);
/* Uses parameter `param` of an earlier block `block` here too (tied embeddings); its gradient is
   the sum of both uses. Returns its index in ctx->param. */
ZT_API int zt_block_tie(zt_block_def *def, int block, int param);
ZT_API int zt_block_def_index(const zt_block_def *def); /* the block's position in the model */

/* One micro-batch on the device, prepared by the engine. */
typedef struct zt_batch {
    int64_t B, T;
    zt_tensor tokens;   /* (B,T) i32 */
    zt_tensor targets;  /* (B,T) i32; ignore_index where nothing is predicted */
    zt_tensor pos;      /* (B,T) i32 positions, restarting at each document */
    zt_tensor starts;   /* (B,T) i32 first key each query may see; absent (ndim 0) without documents */
    zt_tensor losses;   /* (B,T) f32, written by the last block */
    float dloss;        /* d(total loss) / d(each token's loss), loss scale included */
    int ignore_index;
    float label_smoothing; /* the Trainer's label_smoothing_factor, for the output layer's loss (zt_loss_params) */
    float neftune_alpha;   /* zt_options.neftune_alpha, for the token embeddings in training */
    uint64_t seed;         /* the step's randomness: a function of the run's seed and the step alone (the same on every
                              rank and micro-batch, and when a block is recomputed): a block of one's own draws by
                              (seed, place among the step's rows), its offsets from first_row */
    int64_t first_row;     /* this rank's first row among all the step's rows (micro-batch m of rank r: (m world + r) B):
                              randomness by (seed, that row) is the same at any number of ranks and micro-batches */
    int64_t counted;    /* the targets that are not ignore_index: the tokens whose losses count */
    int64_t positions;  /* the largest position + 1 in the rows given (transformers' seq_len: longrope's choice) */
    /* A block may set *aux to an auxiliary loss of the micro-batch (the MoE routers' balance); it counts once per
       counted token, so d(total loss) / d(*aux) = dloss * counted. The engine sets it to 0 before the forward. */
    float *aux;
    void *shared;       /* host memory the blocks share for the micro-batch (zt_model_spec.shared_bytes), zeroed once */
    int64_t logits_at;  /* evaluation: the last block also writes the logits of token logits_at ... */
    zt_tensor logits;   /* ... here, (Vp) f32, Vp = vocab rounded up to 128; logits_at < 0: none */
} zt_batch;

typedef struct zt_block_ctx {
    zt_stream *stream;
    const void *config;        /* what the model gave this block */
    int index;                 /* position in the model */
    const zt_tensor *param;    /* parameters in declaration order, in the working dtype */
    const zt_tensor *grad;     /* their f32 gradients (+=); absent (ndim 0) when frozen */
    void *saved;               /* saved_bytes that forward fills and backward reads */
    zt_arena *keep;            /* forward: memory that must last until backward */
    zt_arena scratch;          /* temporaries: gone when the call returns */
    zt_dtype act;              /* dtype of activations */
    const zt_batch *batch;
    int training;              /* 0 in evaluation and generation: no backward follows */
} zt_block_ctx;

typedef struct zt_block_type {
    const char *name;
    size_t saved_bytes;
    /* declares the parameters (any number); called more than once at init (the first calls only count them),
       it must declare the same ones each time */
    void (*declare)(zt_block_def *def, const void *config);
    /* inp (B,T,C) -> out (B,T,C). Block 0 gets no inp (ndim 0); the last block gets no out and
       writes batch->losses. */
    void (*forward)(zt_block_ctx *ctx, zt_tensor out, zt_tensor inp);
    /* dinp += d(loss)/d(inp), grads += d(loss)/d(param). The last block gets no dout; block 0 no dinp. */
    void (*backward)(zt_block_ctx *ctx, zt_tensor dinp, zt_tensor dout, zt_tensor inp);
} zt_block_type;

ZT_API zt_tensor zt_block_keep(zt_block_ctx *ctx, zt_dtype dtype, zt_shape shape); /* until backward */
ZT_API zt_tensor zt_block_temp(zt_block_ctx *ctx, zt_dtype dtype, zt_shape shape); /* this call only */

/* The built-in blocks, for models that mix them with your own (config: a zt_model_config). */
ZT_API const zt_block_type *zt_gpt2_embedding_block(void);
ZT_API const zt_block_type *zt_gpt2_block(void);
ZT_API const zt_block_type *zt_gpt2_head_block(void);
ZT_API const zt_block_type *zt_llama_embedding_block(void);
ZT_API const zt_block_type *zt_llama_block(void);
ZT_API const zt_block_type *zt_llama_head_block(void);

/* >>engine ===================================================================================== */

typedef struct zt_engine zt_engine;

typedef struct zt_model_spec {
    const char *config_path;    /* a Hugging Face config.json or its directory: a built-in model */
    const zt_model_config *config; /* or a built-in model from a config in memory */
    /* or your own blocks: */
    int n_blocks;
    const zt_block_type *const *blocks;
    const void *const *block_configs;
    int64_t hidden;             /* C, the width between blocks */
    int64_t vocab;              /* token ids are in [0, vocab) */
    int64_t max_seq;            /* the longest sequence the model takes */
    size_t shared_bytes;        /* host memory the blocks share (zt_batch.shared) */
} zt_model_spec;

typedef enum zt_precision { ZT_PRECISION_FP32, ZT_PRECISION_BF16, ZT_PRECISION_FP16 } zt_precision;
/* The learning-rate schedules: the Transformers Trainer's (--lr_scheduler_type, with the names and formulas
   of transformers 5's optimization.py) and DeepSpeed's (a config's scheduler section) */
typedef enum zt_schedule {
    ZT_SCHED_LINEAR,        /* "linear", the Trainer's default: linear warmup, linear decay to 0 */
    ZT_SCHED_CONSTANT,      /* "constant_with_warmup" */
    ZT_SCHED_WARMUP_LR,     /* DeepSpeed WarmupLR */
    ZT_SCHED_WARMUP_DECAY_LR, /* DeepSpeed WarmupDecayLR */
    ZT_SCHED_WARMUP_COSINE_LR, /* DeepSpeed WarmupCosineLR */
    ZT_SCHED_COSINE,        /* "cosine": linear warmup, half a cosine (num_cycles) down to 0 */
    ZT_SCHED_COSINE_RESTARTS, /* "cosine_with_restarts": num_cycles hard restarts */
    ZT_SCHED_POLYNOMIAL,    /* "polynomial": down to lr_end with exponent power */
    ZT_SCHED_INVERSE_SQRT,  /* "inverse_sqrt": 1/sqrt of the steps over timescale */
    ZT_SCHED_COSINE_MIN_LR, /* "cosine_with_min_lr": cosine down to min_lr_rate x the learning rate */
    ZT_SCHED_COSINE_WARMUP_MIN_LR, /* "cosine_warmup_with_min_lr": the same, another warmup */
    ZT_SCHED_WSD,           /* "warmup_stable_decay": warmup, stable, then decay_steps of decay */
    ZT_SCHED_FLAT,          /* "constant": the learning rate throughout (no warmup, as in transformers) */
    ZT_SCHED_REDUCE_ON_PLATEAU, /* "reduce_lr_on_plateau": torch's ReduceLROnPlateau, on the evaluations */
    ZT_SCHED_GREEDY         /* "greedy": transformers' GreedyLR, on the evaluations (zt_plateau) */
} zt_schedule;
ZT_API const char *zt_schedule_name(zt_schedule s); /* "cosine", "WarmupLR", ... */

/* where ZeRO-Offload puts state: the device (none), host memory, or files on an NVMe drive */
typedef enum zt_offload_device { ZT_OFFLOAD_NONE, ZT_OFFLOAD_CPU, ZT_OFFLOAD_NVME } zt_offload_device;

typedef struct zt_options {
    const char *backend;        /* "cpu" (default) or "cuda" */
    int threads;                /* CPU threads, 0 = every core */
    int strict;                 /* CPU strict stream mode (tests) */
    int64_t micro_batch;        /* rows per micro-batch (per_device_train_batch_size) */
    int64_t seq_len;            /* T; 0 = min(1024, the model's context) */
    int64_t grad_accum;         /* micro-batches per optimizer step */
    int64_t max_steps;          /* optimizer steps of the run (the schedules need it) */
    zt_precision precision;
    int gradient_checkpointing;
    uint64_t seed;
    int ignore_index;           /* -100 */
    float label_smoothing;      /* the Trainer's label_smoothing_factor (0: none): the loss, training and evaluation,
                                   mixes in this share of the uniform distribution (zt_loss_params) */
    float neftune_alpha;        /* the Trainer's neftune_noise_alpha (0: none): in training, the token embeddings get
                                   uniform noise of magnitude alpha / sqrt(T x hidden), as NEFTune adds it */
    int32_t eot_token;          /* -1: none; else packed documents: positions restart after this token,
                                   attention does not cross it, and it predicts nothing */
    /* optimizer (AdamW, decoupled) */
    float lr, beta1, beta2, eps, weight_decay, max_grad_norm;
    int adam_w_mode;            /* 0: L2 regularisation added to the gradient (DeepSpeed Adam) */
    /* schedule */
    zt_schedule schedule;
    int64_t warmup_steps;
    double warmup_ratio;        /* with warmup_steps 0: ceil(warmup_ratio x max_steps) steps, as the Trainer
                                   counts them (--warmup_steps 0.03, or transformers 4's --warmup_ratio) */
    /* the Transformers schedules' lr_scheduler_kwargs (--lr_scheduler_kwargs '{"num_cycles": 1}') */
    double num_cycles;          /* cosine kinds; 0: theirs (0.5, cosine_with_restarts 1) */
    double min_lr, min_lr_rate; /* cosine_with_min_lr kinds: one of them (< 0: not given); min_lr_rate is
                                   also warmup_stable_decay's min_lr_ratio (default 0) */
    double warmup_lr_rate;      /* cosine_warmup_with_min_lr's first rate; < 0: 1 / warmup steps */
    double lr_end, power;       /* polynomial: 1e-7, 1 */
    int64_t timescale;          /* inverse_sqrt; 0: the warmup steps, or 10000 without */
    int64_t decay_steps, stable_steps; /* warmup_stable_decay: decay_steps needed; stable < 0: the rest */
    int warmup_shape, decay_shape; /* warmup_stable_decay: 0 "linear", 1 "cosine" (decay's default), 2 "1-sqrt" */
    /* reduce_lr_on_plateau and greedy (min_lr above is theirs too; < 0: 0, greedy 1e-3). They move the learning
       rate in double, as torch moves its Python float, from lr_exact: the flag's or config's value before its
       rounding to lr (unset, 0, or another value than lr's: lr) */
    double lr_exact;
    int plateau_max;            /* mode "max" (default "min") */
    double plateau_factor;      /* < 0: 0.1 (greedy 0.95); below 1 */
    double plateau_threshold;   /* < 0: 1e-4 (greedy 1e-6) */
    int plateau_threshold_abs;  /* threshold_mode "abs" 1, "rel" 0; < 0: rel (greedy abs) */
    int64_t plateau_patience, plateau_cooldown; /* 10, 0 */
    double plateau_eps;         /* 1e-8: smaller changes of the learning rate are not made */
    int64_t greedy_warmup;      /* greedy: evaluations held after an increase (0) */
    double greedy_max_lr;       /* greedy: 1.0 */
    int greedy_smooth, greedy_verbose; /* greedy: smooth the metric over the last window_size values */
    int64_t greedy_window, greedy_reset_start; /* 50, 500 */
    const char *lr_scheduler_kwargs; /* the JSON the fields above came from (zt_options_parse_args) */
    float warmup_min_lr, warmup_max_lr; /* WarmupLR, WarmupDecayLR */
    int warmup_log;             /* WarmupLR's warmup_type: 1 "log" (default), 0 "linear" */
    float cos_min_ratio, warmup_min_ratio; /* WarmupCosineLR */
    /* fp16 dynamic loss scaling, DeepSpeed's meaning */
    float static_loss_scale;    /* 0: dynamic */
    int initial_scale_power, loss_scale_window, hysteresis, consecutive_hysteresis;
    float min_loss_scale;
    size_t device_bytes;        /* 0: exactly what the plan needs */
    /* what a DeepSpeed config decides beyond the above (zt_ds_config_read) */
    int zero_stage;             /* 0-3: what is split across ranks (1: optimizer state, 2: + gradients,
                                   3: + parameters); also DeepSpeed's loss-scaling rule (stage 0 has no
                                   hysteresis) */
    int bf16_skip_nonfinite;    /* bf16.check_grad_overflow at ZeRO stages 1 and 2: skip such steps */
    int64_t schedule_total;     /* total_num_steps of WarmupDecayLR/WarmupCosineLR; 0 = max_steps */
    const char *nvme_path;      /* --nvme_path, for an NVMe offload without one */
    uint64_t given;             /* flags the user passed: bit i for zt_options_flag_name(i) */
    struct zt_comm *comm;       /* data-parallel ranks (zt_launch): gradients are summed across them in
                                   buckets, and zero_stage splits the state across them; NULL: one process */
    int64_t reduce_bucket_size; /* elements per gradient all-reduce or reduce-scatter, all ranks' pieces
                                   together; 0: DeepSpeed's 5e8 (a bucket never exceeds its group) */
    int64_t allgather_bucket_size; /* elements per all-gather of updated parameters (ZeRO 1-3); 0: 5e8 */
    int64_t persistence_threshold; /* ZeRO-3: groups with fewer elements stay whole on every rank; -1:
                                   DeepSpeed's 1e5 */
    int64_t max_live_parameters; /* ZeRO-3: gathered elements resident at once; 0: DeepSpeed's 1e9 */
    int comm_dtype;             /* gradients travel between ranks as this zt_dtype (communication_data_type);
                                   -1: the working dtype, DeepSpeed's default (fp32 gradients are cast) */
    int overlap_comm;           /* ZeRO 2-3 with several ranks or offload (zero_optimization.overlap_comm):
                                   collectives and offload copies run on a communication stream of their
                                   own, a block's gradient reduced (and sent to the host) while the blocks
                                   before it run their backward (two alternating full gradient buffers:
                                   one more in memory); the same bits as without */
    int64_t prefetch_bucket_size; /* ZeRO-3 with overlap_comm (stage3_prefetch_bucket_size): > 0 gathers the
                                   next block's weights while this one computes (two full weight buffers);
                                   zt prefetches whole blocks, one ahead. Default DeepSpeed's 5e7 */
    /* ZeRO-Offload (zero_optimization.offload_optimizer / offload_param): the fp32 master and Adam
       moments (stages 1-3), and at stage 3 the parameter slices, in host memory or NVMe files */
    zt_offload_device offload_optimizer, offload_param;
    const char *offload_optimizer_path, *offload_param_path; /* NVMe: directories (copied at init) */
    double offload_ratio;       /* ZeRO-3 partial offload (offload_optimizer.ratio, default 1): the share of
                                   the optimizer state offloaded. The groups in order (embeddings, layers,
                                   head) while their state fits in that share of the whole; the rest stays
                                   on the device, updated there while the host updates its groups */
    int64_t offload_buffer_size; /* elements per NVMe staging unit (offload_param.buffer_size, else
                                   sub_group_size; 0: 1e8) */
    int64_t aio_block_size, aio_threads; /* NVMe I/O: bytes per request (0: 1 MiB), I/O threads (0: 1) */
    int64_t ddp_timeout;        /* seconds a rank waits for the others at a collective (TrainingArguments' 1800) */
} zt_options;

ZT_API zt_options zt_options_default(void); /* the TrainingArguments and DeepSpeed defaults */
/* Applies Transformers TrainingArguments flags (--learning_rate 3e-4 or --learning_rate=3e-4). A switch
   (--bf16) may take a value as HfArgumentParser's do: --bf16 True, --bf16=false (true/false, yes/no, t/f,
   y/n, 1/0, any case). --optim takes AdamW's names; --tf32 is accepted and changes nothing. */
ZT_API zt_result zt_options_parse_args(zt_options *o, int argc, char **argv);
/* 1 if --name (without dashes or value) is one of the engine's flags; *takes_value: 1 it takes a value,
   2 a switch whose value may follow (one that does not start with "-"), 0 never */
ZT_API int zt_options_is_flag(const char *name, int *takes_value);
ZT_API void zt_options_help(FILE *out); /* every engine flag with its default */
/* "80GiB", "24GB", "512MiB", "1e9": bytes (K, M, G, T: powers of 1000; KiB, MiB, GiB, TiB: of 1024) */
ZT_API zt_result zt_parse_bytes(const char *text, size_t *bytes);
/* 1 if flag `name` (without dashes) was passed to zt_options_parse_args */
ZT_API int zt_options_given(const zt_options *o, const char *name);
/* the learning rate of optimizer step `step` (0-based; steps skipped for fp16 overflow not counted); the
   schedules that follow evaluations (zt_plateau) start at o->lr */
ZT_API float zt_schedule_lr(const zt_options *o, int64_t step);

/* The schedules that follow a metric instead of the step: reduce_lr_on_plateau (torch 2's ReduceLROnPlateau)
   and greedy (transformers 5's GreedyLR). After each evaluation the trainer gives zt_schedule_observe the
   metric (the Trainer steps them with metric_for_best_model, the eval loss), and the steps after it run at
   the learning rate that moved, in the same double arithmetic as theirs. The engine keeps the state and
   saves it in its checkpoints; zt_plateau_step is the same rule on a state of your own. */
#define ZT_PLATEAU_WINDOW 256 /* greedy's smoothing window_size at most */
typedef struct zt_plateau {
    double lr, best;            /* the learning rate now; the best metric (+-inf: none yet) */
    int64_t bad, good;          /* evaluations in a row without (with) an improvement */
    int64_t cooldown, warmup;   /* evaluations still held after a decrease (an increase) */
    int64_t evals, reset_left;  /* evaluations seen; greedy: evaluations at min_lr before it starts over */
    int64_t n_values;           /* greedy's smoothing: the last values, oldest first, and their running sum */
    double values[ZT_PLATEAU_WINDOW], sum;
} zt_plateau;
ZT_API zt_plateau zt_plateau_init(const zt_options *o);
ZT_API void zt_plateau_step(zt_plateau *p, const zt_options *o, double metric);

/* fp16 dynamic loss scaling as DeepSpeed does it: ZeRO stages 1-3 (o->zero_stage > 0) use its
   DynamicLossScaler (hysteresis, and an error at the minimum scale); stage 0's FP16_Optimizer halves on
   every overflow and never stops. Both double after loss_scale_window clean steps in a row. */
typedef struct zt_loss_scaler { float scale; int hysteresis_left; int64_t last_overflow, iter; } zt_loss_scaler;
ZT_API zt_loss_scaler zt_loss_scaler_init(const zt_options *o);
/* after an optimizer step: overflow or not; an error (DeepSpeed's message) when it cannot go lower */
ZT_API zt_result zt_loss_scaler_update(zt_loss_scaler *s, const zt_options *o, int overflow);
/* Plans memory, allocates it once and initialises the weights. Settings come from the flags in argv
   (argv[0], the program, is skipped) and, when ds_config_path is given, a DeepSpeed JSON config. */
ZT_API zt_result zt_init(zt_engine **out, const zt_model_spec *model, const char *ds_config_path,
                         int argc, char **argv);
/* zt_init with settings made by the caller */
ZT_API zt_result zt_init_options(zt_engine **out, const zt_model_spec *model, const zt_options *o);
ZT_API void zt_shutdown(zt_engine *e); /* frees everything zt_init made */

/* One micro-batch: tokens (n_rows, T) host i32; targets (n_rows, T) or NULL for next-token targets
   (the last position of a row predicts nothing); mask (n_rows, T) or NULL, 0 = no loss there. Rows
   past n_rows (up to micro_batch) are empty. Gradients accumulate; returns the mean loss over this
   micro-batch's predicted tokens. Gradients are weighted by token count across the step. */
ZT_API float zt_forward_backward(zt_engine *e, const int32_t *tokens, const int32_t *targets,
                                 const uint8_t *mask, int64_t n_rows);
typedef struct zt_step_info {
    int64_t step;               /* optimizer steps taken, this one included */
    float loss;                 /* mean loss over the step's tokens */
    float lr;                   /* learning rate used */
    float grad_norm;            /* before clipping */
    int skipped;                /* fp16 overflow: no update */
    float loss_scale;
    int64_t tokens;             /* predicted tokens in the step */
} zt_step_info;
/* Clipping, the optimizer, the schedule and the loss scale; zeroes the gradients. */
ZT_API zt_step_info zt_step(zt_engine *e);
/* an evaluation's metric, for the schedules that follow one (zt_plateau); the others ignore it. Every rank
   calls it with the same value. */
ZT_API void zt_schedule_observe(zt_engine *e, double metric);
/* rank 0's v, to the bit, on every rank (every rank calls it): a metric whose decisions must agree, such as a
   checkpoint that every rank saves together, whatever arithmetic each rank did. One process: v. */
ZT_API double zt_broadcast_value(zt_engine *e, double v);
/* every rank's n doubles (n <= ZT_GATHER_MAX), to the bit, on every rank: all holds world x n, rank r's at
   r x n (every rank calls it). One process: mine. Such as the loss sums of an evaluation the ranks split,
   which every rank then adds in one order. */
#define ZT_GATHER_MAX 4
ZT_API void zt_gather_values(zt_engine *e, const double *mine, int n, double *all);
/* Mean loss of rows as zt_forward_backward defines them, without gradients; sum and count optional.
   zt_eval and zt_generate gather weights under ZeRO-3: with several ranks, every rank calls them. */
ZT_API float zt_eval(zt_engine *e, const int32_t *tokens, const int32_t *targets, const uint8_t *mask,
                     int64_t n_rows, double *loss_sum, int64_t *count);
/* Appends n_new sampled tokens to prompt (n_prompt tokens) into out (n_prompt + n_new). */
ZT_API zt_result zt_generate(zt_engine *e, const int32_t *prompt, int64_t n_prompt, int32_t *out,
                             int64_t n_new, float temperature, int top_k, float top_p, uint64_t seed);
/* Device memory by category. Every category is laid out at init from the plan; activations and
   scratch are arenas whose peaks are measured as steps run (they reach the plan, never more). */
typedef enum zt_mem_category {
    ZT_MEM_PARAMS,      /* parameters in the working dtype (ZeRO-3: this rank's slices) */
    ZT_MEM_GRADS,       /* fp32 gradient accumulators (ZeRO-2/3: this rank's slices) */
    ZT_MEM_MASTER,      /* fp32 master weights (mixed precision; ZeRO 1-3: slices) */
    ZT_MEM_ADAM,        /* Adam moments (ZeRO 1-3: slices) */
    ZT_MEM_ACTIVATIONS, /* what forward keeps for backward */
    ZT_MEM_BUCKETS,     /* ZeRO: gathered parameters and open gradients of the groups in use */
    ZT_MEM_SCRATCH,     /* per-kernel temporaries */
    ZT_MEM_BUFFERS,     /* batch, losses, norm partials, staging */
    ZT_MEM_LIBRARY,     /* what the backend's libraries hold (cuBLAS, NCCL); 0 on the CPU */
    ZT_MEM_COUNT
} zt_mem_category;
ZT_API const char *zt_mem_category_name(zt_mem_category c);
typedef struct zt_memory_plan {
    int world, zero_stage, gradient_checkpointing;
    zt_offload_device offload_optimizer, offload_param;
    double offload_ratio;                  /* the share of the optimizer state offloaded (ZeRO-3 partial offload) */
    int64_t micro_batch, seq_len, params; /* params: the model's P */
    size_t bytes[ZT_MEM_COUNT];            /* one rank's device bytes, by category */
    size_t host_bytes[ZT_MEM_COUNT];       /* one rank's pinned host bytes, by category (offload) */
    size_t device, pinned, nvme;           /* one rank's totals; nvme: bytes of its swap files */
    int gpu;                               /* for a GPU backend: the library bytes (the CUDA context, cuBLASLt,
                                              NCCL) are not in a plan, which starts no GPU */
} zt_memory_plan;
/* The memory each of `world` ranks needs for this model and these settings, without allocating it
   and without ranks (any world size: it is arithmetic over the same layout code zt_init runs). */
ZT_API zt_result zt_plan_memory(zt_memory_plan *out, const zt_model_spec *model, const zt_options *o, int world);
/* one line per category, the total, and the model states beside the ZeRO paper's formula */
ZT_API void zt_memory_plan_print(const zt_memory_plan *p, FILE *out);
/* The cheapest settings whose plan fits device_bytes per rank (what zt's arenas may take: on a GPU, leave
   out what the CUDA context and libraries hold, about 1 GiB): ZeRO stage, activation checkpointing,
   then smaller micro-batches (with more accumulation, so the global batch stays), in that order of
   cost. Each rejected plan is printed to `log` (when not NULL). *fits receives the chosen options;
   ZT_ERROR_MEMORY if nothing fits. */
ZT_API zt_result zt_plan_fit(zt_options *fits, const zt_model_spec *model, const zt_options *o, int world,
                             size_t device_bytes, FILE *log);
/* the engine's categories: planned bytes, and in-use peaks as measured so far */
ZT_API void zt_memory_stats(zt_engine *e, size_t planned[ZT_MEM_COUNT], size_t peak[ZT_MEM_COUNT]);
ZT_API void zt_memory_report(zt_engine *e, const char *label); /* DeepSpeed's see_memory_usage */
ZT_API const zt_options *zt_engine_options(const zt_engine *e);
ZT_API zt_backend *zt_engine_backend(zt_engine *e);
ZT_API const zt_model_config *zt_engine_model_config(const zt_engine *e); /* NULL for custom models */
ZT_API int64_t zt_engine_param_count(const zt_engine *e);
/* A parameter by name, copied to or from host f32 memory (vocabulary rows unpadded); with grad, the
   gradient of the mean loss over the tokens accumulated since the last zt_step (ZeRO-2/3: already
   summed across ranks; stages 0-1: this rank's own). Under ZeRO with several ranks, zt_param_get is a
   collective (the parts live on different ranks): every rank calls it, in the same order. */
ZT_API zt_result zt_param_get(zt_engine *e, const char *name, float *host, int64_t n, int grad);
/* sets the weights (and the fp32 master); n must be the parameter's unpadded element count */
ZT_API zt_result zt_param_set(zt_engine *e, const char *name, const float *host, int64_t n);
ZT_API int zt_param_count(const zt_engine *e);
/* name and host shape (vocabulary unpadded) of parameter i; NULL for empty slots and tied uses */
ZT_API const char *zt_param_name(const zt_engine *e, int i, zt_shape *shape);

/* >>comm ======================================================================================= */

/* Collectives between ranks, queued on a stream like NCCL's: a collective runs when the stream reaches
   it, in order with the kernels around it. Sums run in rank order, so results are the same bits on every
   run. Backends: a single rank; shared memory between the processes of one machine (a memfd segment
   made before the processes fork; waiting ranks sleep, and a rank that disappears is noticed by its
   pid, so the others stop with a message naming it instead of hanging); TCP between hosts. */
typedef enum zt_reduce_op { ZT_REDUCE_SUM, ZT_REDUCE_AVG } zt_reduce_op;

ZT_API zt_result zt_comm_single(zt_comm **out);
/* The shared segment for `world` ranks, each moving at most chunk_bytes at a time; returns its fd,
   which the ranks inherit (fork, or exec with the fd left open) and pass to zt_comm_shm_attach. */
ZT_API zt_result zt_comm_shm_create(int world, size_t chunk_bytes, int *fd);
ZT_API zt_result zt_comm_shm_attach(zt_comm **out, int fd, int rank, int world);
/* Ranks on several hosts: a TCP connection between every two ranks. Rank 0 listens at ip:port (an
   IPv4 address or a host name); the others register there with the job's name (NULL: "zt"; another
   job's ranks are refused), learn each other's addresses and connect. Each rank sends and receives
   (W-1)/W of the data twice per all-reduce, and sums in rank order as the shared segment does, so the
   results are the same bits. A rank that exits closes its connections: the others stop with its number.
   Waits at most ZT_RDZV_TIMEOUT seconds (default 300) for every rank to join. */
ZT_API zt_result zt_comm_tcp_connect(zt_comm **out, const char *ip, int port, const char *job, int rank, int world);
ZT_API void zt_comm_destroy(zt_comm *c);
ZT_API int zt_comm_rank(const zt_comm *c);
ZT_API int zt_comm_world(const zt_comm *c);
/* seconds a rank waits for the others before it gives up (default 300) */
ZT_API void zt_comm_set_timeout(zt_comm *c, double seconds);

/* buf (n) in place: the sum (or mean) over ranks */
ZT_API void zt_all_reduce(zt_stream *s, zt_comm *c, zt_tensor buf, zt_reduce_op op);
/* Lets the ranks of one host read and write each other's device memory (the CPU backend's is a memfd):
   collectives on tensors in it then go directly between ranks instead of through the shared slots, with
   the same bits. The CUDA backend connects NCCL instead when every rank has a GPU of its own (ranks that
   share a GPU stage through pinned host memory). A collective: every rank calls it once, after its
   backend has its memory. Where it is not possible (no /proc), collectives stage as before. */
ZT_API zt_result zt_comm_share_device(zt_comm *c, zt_backend *b);
ZT_API int zt_comm_is_direct(const zt_comm *c); /* 1 once zt_comm_share_device made collectives direct */
/* before the backend shared with zt_comm_share_device goes away (zt_shutdown calls it): this rank's
   collectives stage again; not a collective */
ZT_API void zt_comm_unshare_device(zt_comm *c, zt_backend *b);
/* in (world * n) -> out (n): rank r gets the reduction of every rank's slice r */
ZT_API void zt_reduce_scatter(zt_stream *s, zt_comm *c, zt_tensor out, zt_tensor in, zt_reduce_op op);
/* in (n) -> out (world * n): slice r is rank r's in */
ZT_API void zt_all_gather(zt_stream *s, zt_comm *c, zt_tensor out, zt_tensor in);
/* buf (n): root's values everywhere */
ZT_API void zt_broadcast(zt_stream *s, zt_comm *c, zt_tensor buf, int root);
/* host-side: every rank has reached this point (their streams are not waited for) */
ZT_API zt_result zt_barrier(zt_comm *c);

/* Accelerate-style launching; call it first in main, before any thread exists. It takes Accelerate's
   flags out of argv (--num_processes N, the total; --num_machines, --machine_rank, --main_process_ip,
   --main_process_port). With N > 1 this process becomes the launcher: it starts N ranks of the same
   program (re-executed, with RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR and
   MASTER_PORT set as torchrun sets them), waits, ends the others when one fails, reports which and how,
   and returns 1 with *exit_code to exit with (ranks still there ZT_KILL_GRACE seconds, default 30, after it
   ended them are killed). A SIGTERM to the launcher goes on to its ranks, and it waits for them (they may
   save a checkpoint first, as zt_train --enable_jit_checkpoint does): then
   *exit_code is 143 (128 + SIGTERM) when each stopped by it or exited 0 or 143, else 1. Ranks that exit 143
   without it (the signal went to them, or to another machine's) are not a failure either: the launcher waits for
   the others and exits 143. In a rank, or with N <= 1, it returns 0 and *comm is the
   communicator (single-rank for one process). With --num_machines M > 1 each machine's launcher starts
   its N / M ranks, which meet over TCP at rank 0 (zt_comm_tcp_connect), listening on machine 0 at
   --main_process_ip:--main_process_port; a job token (ZT_JOB_TOKEN, --rdzv_id, or a hash of the
   arguments and world size) keeps other jobs out. A process started by torchrun, the deepspeed launcher,
   mpirun or srun takes its rank from their variables and joins at MASTER_PORT + 1 (MASTER_PORT is
   theirs): over TCP when the job spans nodes (LOCAL_WORLD_SIZE, LOCAL_SIZE or OMPI_COMM_WORLD_LOCAL_SIZE
   below the world, SLURM_NNODES > 1; ZT_COMM=tcp or shm decides instead), else through a shared segment
   rank 0 makes and hands over a Unix socket. One machine's ranks share a segment. */
ZT_API int zt_launch(int *argc, char **argv, zt_comm **comm, int *exit_code);

/* >>config ===================================================================================== */

/* DeepSpeed's JSON config, with the meaning DeepSpeed's code gives it at release v0.19.8 (where its docs
   differ, the code wins; tests/ref/deepspeed_config_reference.md has the details and tests/ref/deepspeed/
   fixtures made by DeepSpeed itself). zt reads the file with strict JSON (a duplicate key is an error,
   as in DeepSpeed), validates every value, and reports errors with the JSON path, what was expected and
   what was found. Unknown keys: an error in the sections DeepSpeed validates strictly (zero_optimization,
   its offload blocks, fp16, bf16, optimizer and scheduler params), a warning elsewhere (DeepSpeed ignores
   them silently). Flags fill keys that are absent or "auto" (as the Transformers integration fills them);
   a flag the user passed that contradicts an explicit value is an error naming both. */
#define ZT_DEEPSPEED_VERSION "0.19.8"

typedef struct zt_offload_config {
    zt_offload_device device;
    char nvme_path[512];
    int64_t buffer_count, buffer_size, max_in_cpu; /* buffer_size and max_in_cpu in elements */
    int pin_memory, pipeline_read, pipeline_write, fast_init;
    double ratio;
} zt_offload_config;

typedef struct zt_ds_config {
    char path[512];
    int64_t train_batch_size, micro_batch, grad_accum, world_size; /* resolved */
    double gradient_clipping, gradient_predivide_factor;
    int64_t steps_per_print; /* 0: never */
    int wall_clock_breakdown, prescale_gradients;
    char communication_data_type[8], grad_accum_dtype[12]; /* "" when absent */
    char optimizer_type[24], scheduler_type[24];           /* "" when absent: the Trainer's defaults */
    int fp16, bf16, fp16_auto_cast, bf16_check_grad_overflow;
    int activation_checkpointing; /* the section is present: zt recomputes every block in backward */
    int partition_activations, cpu_checkpointing, contiguous_memory_optimization, synchronize_checkpoint_boundary;
    int64_t number_checkpoints;
    int zero_stage, contiguous_gradients, overlap_comm, reduce_scatter, allgather_partitions;
    int round_robin_gradients, gather_16bit_weights_on_model_save, zero_quantized_weights, zero_quantized_gradients;
    int64_t reduce_bucket_size, allgather_bucket_size, sub_group_size, prefetch_bucket_size;
    int64_t param_persistence_threshold, model_persistence_threshold, max_live_parameters, max_reuse_distance;
    int64_t zero_hpz_partition_size;
    zt_offload_config offload_optimizer, offload_param;
    int64_t aio_block_size, aio_queue_depth, aio_intra_op_parallelism;
    int aio_single_submit, aio_overlap_events, aio_use_gds;
    char tag_validation[16];
    int load_universal, use_node_local_storage;
} zt_ds_config;

/* Reads a config file into c, and the settings it decides into o (which holds the flags already).
   world_size: data-parallel ranks; hidden: the model's width, for the "auto" bucket sizes. */
ZT_API zt_result zt_ds_config_read(zt_ds_config *c, zt_options *o, const char *path, int world_size,
                                   int64_t hidden);
ZT_API zt_result zt_ds_config_parse(zt_ds_config *c, zt_options *o, const char *json, size_t len,
                                    const char *name, int world_size, int64_t hidden);
/* The effective configuration as JSON, every key resolved, then the first learning rates. */
ZT_API void zt_ds_config_print(const zt_ds_config *c, const zt_options *o, FILE *out);
/* Accelerate's config file (what `accelerate config` writes, default_config.yaml): the launcher's
   settings, the precision and the DeepSpeed plugin, read from the YAML subset Accelerate writes (keys and
   scalars, one nested mapping level, comments). Unset numbers are -1 and unset strings "". zt_train
   --config_file FILE uses it as `accelerate launch --config_file FILE` does; flags given too win. */
typedef struct zt_accelerate_config {
    int64_t num_processes, num_machines, machine_rank, main_process_port;
    char main_process_ip[256], mixed_precision[16], distributed_type[32];
    /* deepspeed_config: a JSON file, or the settings Accelerate turns into one */
    char deepspeed_config_file[1024], offload_optimizer_device[16], offload_param_device[16];
    char offload_optimizer_nvme_path[512], offload_param_nvme_path[512];
    int64_t zero_stage, gradient_accumulation_steps;
    double gradient_clipping;
    int zero3_init_flag;
} zt_accelerate_config;
ZT_API zt_result zt_accelerate_config_read(zt_accelerate_config *c, const char *path);
ZT_API zt_result zt_accelerate_config_parse(zt_accelerate_config *c, const char *text, size_t len, const char *name);
/* the DeepSpeed JSON Accelerate would build from the inline deepspeed_config settings, into out (cap
   bytes); 0 when there are none (or a deepspeed_config_file names the JSON instead) */
ZT_API size_t zt_accelerate_deepspeed_json(const zt_accelerate_config *c, char *out, size_t cap);


/* >>io ========================================================================================= */

/* Training data: a token stream from one or more files, read as windows of T + 1 tokens (T inputs,
   T next-token targets) that never cross a file. Formats: llm.c token files (256 x int32 header; magic
   20240520 version 1 with uint16 tokens, magic 20240801 version 7 with uint32 tokens), headerless
   uint16/uint32 files, and byte-level text. An optional mask file beside each token file holds one
   byte per token: 0 = that token is not a target (a prompt, in instruction tuning). Each epoch visits
   every window once, in a seeded order; rank r of W ranks reads its own rows of each micro-batch, so
   together the ranks read what one rank would. Files are mapped, not copied. */
typedef struct zt_data zt_data;
typedef enum zt_data_format { ZT_DATA_AUTO, ZT_DATA_LLMC, ZT_DATA_U16, ZT_DATA_U32, ZT_DATA_TEXT } zt_data_format;

typedef struct zt_data_desc {
    const char *path;       /* a file or a glob ("train_*.bin"); several separated by commas */
    const char *mask_path;  /* optional: mask files, a glob matching one file per token file, in order */
    zt_data_format format;  /* AUTO: llm.c by its header, text for *.txt */
    int64_t vocab;          /* every token must be below it */
    int64_t seq_len, rows;  /* T and the rows of a micro-batch (per rank) */
    int64_t stride;         /* tokens from one window's start to the next; 0: seq_len (each token is a
                               target once). seq_len + 1 gives non-overlapping rows of seq_len + 1. */
    uint64_t seed;
    int shuffle;            /* 0: windows in file order (evaluation) */
    int rank, world;        /* world 0 means 1 */
} zt_data_desc;

/* Maps the files, checks their headers, sizes and every token against the vocabulary. */
ZT_API zt_result zt_data_open(zt_data **out, const zt_data_desc *desc);
ZT_API void zt_data_close(zt_data *d); /* unmaps the files; NULL is fine */
/* The next micro-batch: tokens and targets (rows, T); targets hold ignore_index where masked. Returns
   the rows filled: fewer than `rows` at the end of an epoch, after which the next epoch begins. */
ZT_API int64_t zt_data_next(zt_data *d, int32_t *tokens, int32_t *targets, int ignore_index);
ZT_API int64_t zt_data_tokens(const zt_data *d);   /* tokens in all files */
ZT_API int64_t zt_data_windows(const zt_data *d);  /* windows per epoch, all ranks together */
/* where reading continues: an epoch and a window index within it (the same on every rank) */
ZT_API void zt_data_cursor(const zt_data *d, int64_t *epoch, int64_t *index);
ZT_API void zt_data_seek(zt_data *d, int64_t epoch, int64_t index);

/* >>tokenizer ================================================================================== */

/* Hugging Face tokenizer.json files of the two kinds LLMs use, with the ids the `tokenizers` library
   gives: byte-level BPE (GPT-2, LLaMA-3, Qwen2: their pre-tokenizer rules, Unicode letter, number and
   space classes included) and SentencePiece-style BPE (LLaMA-2, Mistral: the ▁ word marker, byte fallback
   to <0xXX> tokens). Added (special) tokens in the text are kept whole. Loading allocates; encoding
   reuses the tokenizer's own growing buffers, so a tokenizer is for one thread at a time. */
typedef struct zt_tokenizer zt_tokenizer;
/* path: a tokenizer.json or its directory */
ZT_API zt_result zt_tokenizer_load(zt_tokenizer **out, const char *path);
ZT_API void zt_tokenizer_free(zt_tokenizer *t);
ZT_API int64_t zt_tokenizer_vocab(const zt_tokenizer *t); /* ids are in [0, this) */
/* the id of a token's text (an added token such as "<|endoftext|>", or any vocabulary entry), or -1 */
ZT_API int32_t zt_tokenizer_id(const zt_tokenizer *t, const char *token);
/* n bytes of UTF-8 text into ids (no special tokens added); returns how many, even when more than cap
   (then only cap were written) */
ZT_API int64_t zt_tokenize(zt_tokenizer *t, const char *text, size_t n, int32_t *ids, int64_t cap);
/* ids back into text, special tokens written as they are; returns the bytes, even when more than cap
   (then cap were written); out is NUL-terminated when room allows */
ZT_API size_t zt_detokenize(zt_tokenizer *t, const int32_t *ids, int64_t n, char *out, size_t cap);

/* Chat templates: the Jinja programs of tokenizer_config.json ("chat_template") and chat_template.jinja,
   run as transformers' apply_chat_template runs them (trim_blocks and lstrip_blocks, break and continue,
   {% generation %}, raise_exception, strftime_now, namespace, tojson). zt knows the statements if, for,
   set, macro, break, continue and generation, and the filters and tests chat templates use; anything else
   is an error naming the template's line. */
typedef struct zt_chat_template zt_chat_template;
/* source: n bytes of Jinja; name: where it came from, for messages */
ZT_API zt_result zt_chat_template_compile(zt_chat_template **out, const char *source, size_t n, const char *name);
ZT_API void zt_chat_template_free(zt_chat_template *c);
/* A rendering: the text (NUL-terminated) and the byte ranges {% generation %} marked in it, spans[2k] to
   spans[2k+1]; valid until the template's next use. */
typedef struct zt_chat_text { const char *text; size_t len; const int64_t *spans; int n_spans; } zt_chat_text;
/* renders with the variables of a JSON object (json, n bytes): "messages", "add_generation_prompt",
   "bos_token", "tools", ... as apply_chat_template passes them (a message's null fields are dropped;
   "tools" and "documents" are none and "add_generation_prompt" false unless given) */
ZT_API zt_result zt_chat_render(zt_chat_template *c, const char *json, size_t n, zt_chat_text *out);
/* the tokenizer's chat template, compiled at first use (NULL, with zt_last_error, when it has none or it
   does not compile): zt_tokenizer_load reads chat_template.jinja, else tokenizer_config.json's
   "chat_template" (a list of named ones: "default"), and the special tokens (bos_token, ...) there */
ZT_API zt_chat_template *zt_tokenizer_chat_template(zt_tokenizer *t);
/* a special token of tokenizer_config.json by its name there ("bos_token", "eos_token", "unk_token",
   "pad_token", "sep_token", "cls_token", "mask_token"), or NULL */
ZT_API const char *zt_tokenizer_special(const zt_tokenizer *t, const char *name);
/* replaces it with n bytes of Jinja (name: for messages) */
ZT_API zt_result zt_tokenizer_set_chat_template(zt_tokenizer *t, const char *source, size_t n, const char *name);
/* A conversation through the chat template into ids: json is an object with "messages" (a list of
   {"role", "content", ...}) and any other variables the template reads ("tools", ...); the tokenizer's
   special tokens are passed too, and add_generation_prompt is false unless json says true (a prompt to
   sample a reply from). ids are those of the whole text, as
   apply_chat_template(tokenize=True) gives them; mask[k] = 1 for a token of an assistant's turn: one that
   overlaps a {% generation %} block where the template has them, else the text each assistant message adds
   to the conversation before it rendered with add_generation_prompt (its end-of-turn tokens included).
   A template that writes an earlier turn differently once later messages follow (reasoning templates
   drop its thinking) is refused, naming the message; zt_tokenize_file with an eot unrolls such a
   conversation instead. *count is the tokens, even when more than cap (then nothing is written). */
ZT_API zt_result zt_tokenize_chat(zt_tokenizer *t, const char *json, size_t n, int32_t *ids, uint8_t *mask, int64_t cap,
                                  int64_t *count);

/* A token file for training from text or JSONL. Text (any other name): the whole file is one
   document. JSONL (*.jsonl): one object a line; the prompt field's tokens are kept out of the loss by a
   mask file (one byte a token, 0 = not a target), the response's are learned; a "messages" line goes
   through the chat template (zt_tokenize_chat). eot (-1: none) ends each document and is learned; with
   it, a conversation the template rewrites is unrolled: each assistant turn an example of its own, the
   conversation up to it with only that turn learned, eot after each. The output is llm.c's format (v1
   uint16 when the vocabulary fits, v7 uint32 otherwise), what zt_train --data and --mask read. */
typedef struct zt_tokenize_desc {
    const char *input, *output;
    const char *mask;                     /* NULL: output + ".mask" */
    const char *prompt_key, *response_key; /* NULL: "prompt" and "response" */
    int32_t eot;
} zt_tokenize_desc;
ZT_API zt_result zt_tokenize_file(zt_tokenizer *t, const zt_tokenize_desc *d, int64_t *tokens);

/* >>checkpoint ================================================================================= */

/* DeepSpeed's layout: DIR/global_step{N}/ holds the tensors (zt_rank_00000.safetensors: fp32 weights
   and Adam moments, whole and unpadded) and zt_state.json (step, schedule, loss scale, data cursor,
   the resolved settings); DIR/latest names the newest. Files are written under a temporary name,
   fsync'd and renamed, so a run killed at any moment leaves the last good checkpoint loadable. Saving
   allocates nothing: buffers are set aside at init. data (optional) contributes its cursor.
   With several ranks every rank calls zt_save (under ZeRO the state is gathered from the ranks that
   hold it, a chunk at a time) and rank 0 writes; every rank calls zt_load and takes its part. Whole
   tensors mean any world size and ZeRO stage resumes any checkpoint. (DeepSpeed writes one shard per
   rank instead; at thousands of ranks one writer becomes the bottleneck, and per-rank files are the
   way forward then.) */
ZT_API zt_result zt_save(zt_engine *e, const char *dir, const zt_data *data);
/* dir: a save directory (its `latest` is followed) or one checkpoint (DIR/global_step{N}). The model
   and settings must match the ones saved; data, if given, continues where it was. */
ZT_API zt_result zt_load(zt_engine *e, const char *dir, zt_data *data);
/* the checkpoint zt_load reads for dir, into path (cap bytes): its `latest`, or dir itself when it is one */
ZT_API zt_result zt_checkpoint_path(const char *dir, char *path, size_t cap);
/* removes DIR/global_step{step} (for --save_total_limit): zt's files and a trainer_state.json beside them */
ZT_API zt_result zt_remove_checkpoint(const char *dir, int64_t step);
ZT_API int64_t zt_engine_step(const zt_engine *e); /* optimizer steps taken */

/* Hugging Face models. zt_load_hf reads a model directory's weights: model.safetensors, or the shards
   model.safetensors.index.json names; transformers' names and layouts (GPT-2's Conv1D weights
   transposed, old GPT-2 names without "transformer.", its attention-mask buffers skipped, tied
   embeddings absent); F32, F16 and BF16 converted. Every tensor is checked (inside the file, its size,
   no overlap, the shape config.json gives) before any is copied. zt_export_hf writes config.json (the
   model's, as read; its tokenizer files are copied too) and model.safetensors in transformers' names
   and layout, unpadded, in dtype (f32, bf16 or f16); under ZeRO every rank calls it and rank 0 writes. */
ZT_API int zt_hf_has_weights(const char *dir);
ZT_API zt_result zt_load_hf(zt_engine *e, const char *dir);
ZT_API zt_result zt_export_hf(zt_engine *e, const char *dir, zt_dtype dtype);

ZT_EXTERN_C_END
#endif /* ZT_H */

/* ============================================================================================== */
/*                                       IMPLEMENTATION                                           */
/* ============================================================================================== */
#ifdef ZT_IMPLEMENTATION
#ifndef ZT_IMPLEMENTATION_INCLUDED
#define ZT_IMPLEMENTATION_INCLUDED

#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#  define ZT__ASAN 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define ZT__ASAN 1
#  endif
#endif
#ifdef ZT__ASAN
#  include <sanitizer/asan_interface.h>
#  define ZT__POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#  define ZT__UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#  define ZT__REDZONE 64 /* bytes left poisoned after each push, so overflows between pushes trap */
#else
#  define ZT__POISON(p, n) ((void)(p), (void)(n))
#  define ZT__UNPOISON(p, n) ((void)(p), (void)(n))
#  define ZT__REDZONE 0
#endif

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#  include <immintrin.h>
#endif

#ifdef ZT_STATIC
#  define ZT__PRIV static __attribute__((unused))
#else
#  define ZT__PRIV static
#endif

#define ZT__MIN(a, b) ((a) < (b) ? (a) : (b))
#define ZT__MAX(a, b) ((a) > (b) ? (a) : (b))
#define ZT__CDIV(a, b) (((a) + (b) - 1) / (b))

/* Public functions have C linkage from their declarations above; the rest is static. */

/* >>base (implementation) ---------------------------------------------------------------------- */

static ZT_THREAD_LOCAL char zt__error_msg[1024];
static zt_fatal_fn zt__fatal_fn;
static void (*zt__at_fatal)(void); /* cleanup before the process ends */
static void *zt__fatal_user;
static zt_log_fn zt__log_fn;
static void *zt__log_user;

ZT_API const char *zt_last_error(void) { return zt__error_msg; }

ZT_API const char *zt_result_name(zt_result r) {
    switch (r) {
    case ZT_OK: return "ZT_OK";
    case ZT_ERROR_INVALID: return "ZT_ERROR_INVALID";
    case ZT_ERROR_IO: return "ZT_ERROR_IO";
    case ZT_ERROR_FORMAT: return "ZT_ERROR_FORMAT";
    case ZT_ERROR_MEMORY: return "ZT_ERROR_MEMORY";
    case ZT_ERROR_UNSUPPORTED: return "ZT_ERROR_UNSUPPORTED";
    case ZT_ERROR_BACKEND: return "ZT_ERROR_BACKEND";
    }
    return "ZT_ERROR_UNKNOWN";
}

ZT_API zt_result zt_fail(zt_result code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(zt__error_msg, sizeof zt__error_msg, fmt, ap);
    va_end(ap);
    return code;
}

ZT_API void zt_set_fatal_handler(zt_fatal_fn fn, void *user) {
    zt__fatal_fn = fn;
    zt__fatal_user = user;
}

ZT_API ZT_NORETURN void zt_fatal(const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    memcpy(zt__error_msg, msg, sizeof msg);
    if (zt__at_fatal) zt__at_fatal(); /* e.g. the NVMe swap files */
    if (zt__fatal_fn) {
        zt__fatal_fn(msg, zt__fatal_user);
    } else {
        fprintf(stderr, "zt: fatal: %s\n", msg);
        fflush(stderr);
    }
    abort();
}

ZT_API ZT_NORETURN void zt_assert_fail(const char *expr, const char *file, int line) {
    zt_fatal("assertion failed: %s (%s:%d)", expr, file, line);
}

ZT_API void zt_set_log(zt_log_fn fn, void *user) {
    zt__log_fn = fn;
    zt__log_user = user;
}

ZT_API void zt_log(zt_log_level level, const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (zt__log_fn) {
        zt__log_fn(level, msg, zt__log_user);
        return;
    }
    if (level > ZT_LOG_INFO) return;
    static const char *prefix[] = {"error: ", "warning: ", "", ""};
    fprintf(stderr, "%s%s\n", prefix[level], msg);
}

/* a 64-bit hash (splitmix64's step): seeds and draws that are functions of their inputs alone */
static uint64_t zt__mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

ZT_API uint64_t zt_time_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

ZT_API int zt_cpu_count(void) {
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return ZT__MAX(1, CPU_COUNT(&set));
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* The pool runs one job at a time. A job is (fn, ctx, n_tasks); threads claim task indices from an
   atomic counter, so which thread runs a task varies but what a task computes does not. Workers wait
   on a condition variable between jobs (ranks may outnumber cores, so nobody spins). */
#ifndef ZT_CPU_MAX_THREADS
#  define ZT_CPU_MAX_THREADS 256
#endif

typedef struct zt__worker_arg { zt_pool *pool; int index; } zt__worker_arg;

struct zt_pool {
    int threads;                 /* workers + the calling thread */
    pthread_t workers[ZT_CPU_MAX_THREADS];
    zt__worker_arg args[ZT_CPU_MAX_THREADS];
    pthread_mutex_t job_lock;    /* serialises callers */
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    uint64_t generation;         /* bumped for each job; workers wait for a new one */
    int stopping;
    zt_task_fn fn;
    void *ctx;
    int64_t n_tasks;
    int64_t next;                /* next unclaimed task (atomic) */
    int active;                  /* workers still inside the current job */
};

static void zt__pool_work(zt_pool *p, int thread) {
    for (;;) {
        int64_t i = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
        if (i >= p->n_tasks) break;
        p->fn(p->ctx, i, thread);
    }
}

static void *zt__pool_main(void *arg) {
    zt__worker_arg *wa = (zt__worker_arg *)arg;
    zt_pool *p = wa->pool;
    int thread = wa->index;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->generation == seen && !p->stopping) pthread_cond_wait(&p->wake, &p->mu);
        if (p->stopping) break;
        seen = p->generation;
        pthread_mutex_unlock(&p->mu);
        zt__pool_work(p, thread);
        pthread_mutex_lock(&p->mu);
        if (--p->active == 0) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

ZT_API zt_pool *zt_pool_create(int threads) {
    if (threads <= 0) threads = zt_cpu_count();
    threads = ZT__MIN(threads, ZT_CPU_MAX_THREADS);
    zt_pool *p = (zt_pool *)calloc(1, sizeof *p); /* setup time: the pool lives until shutdown */
    ZT_ASSERT(p != NULL);
    p->threads = threads;
    pthread_mutex_init(&p->job_lock, NULL);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    for (int i = 1; i < threads; i++) {
        zt__worker_arg *wa = &p->args[i];
        wa->pool = p;
        wa->index = i;
        if (pthread_create(&p->workers[i], NULL, zt__pool_main, wa) != 0)
            zt_fatal("cannot start thread %d of the pool: %s", i, strerror(errno));
    }
    return p;
}

ZT_API void zt_pool_destroy(zt_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stopping = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->threads; i++) pthread_join(p->workers[i], NULL);
    pthread_mutex_destroy(&p->job_lock);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    free(p);
}

ZT_API int zt_pool_threads(const zt_pool *p) { return p ? p->threads : 1; }

ZT_API void zt_pool_run(zt_pool *p, int64_t n_tasks, zt_task_fn fn, void *ctx) {
    if (n_tasks <= 0) return;
    if (!p) {
        for (int64_t i = 0; i < n_tasks; i++) fn(ctx, i, 0);
        return;
    }
    pthread_mutex_lock(&p->job_lock); /* also when running alone: thread 0's scratch is shared */
    if (p->threads == 1 || n_tasks == 1) {
        for (int64_t i = 0; i < n_tasks; i++) fn(ctx, i, 0);
        pthread_mutex_unlock(&p->job_lock);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->n_tasks = n_tasks;
    p->next = 0;
    p->active = p->threads - 1;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    zt__pool_work(p, 0);
    pthread_mutex_lock(&p->mu);
    while (p->active > 0) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
    pthread_mutex_unlock(&p->job_lock);
}

/* >>arena (implementation) --------------------------------------------------------------------- */

/* Measuring arenas hand out addresses from this fake base: aligned like real ones, never touched. */
#define ZT__MEASURE_BASE ((uintptr_t)1 << 40)

ZT_API void zt_arena_init(zt_arena *a, const char *name, void *memory, size_t cap_bytes) {
    ZT_ASSERT(memory != NULL || cap_bytes == 0);
    a->name = name;
    a->base = (uint8_t *)memory;
    a->cap = cap_bytes;
    a->used = 0;
    a->peak_own = 0;
    a->peak = &a->peak_own;
    a->stream_ordered = 0;
    if (memory) ZT__POISON(memory, cap_bytes);
}

ZT_API void zt_arena_init_measure(zt_arena *a, const char *name) {
    a->name = name;
    a->base = NULL;
    a->cap = SIZE_MAX;
    a->used = 0;
    a->peak_own = 0;
    a->peak = &a->peak_own;
    a->stream_ordered = 0;
}

ZT_API int zt_arena_measuring(const zt_arena *a) { return a->base == NULL && a->cap == SIZE_MAX; }
ZT_API void zt_arena_set_stream_ordered(zt_arena *a) { a->stream_ordered = 1; }

/* Where the next push of `bytes` would start and end, or 0 if it does not fit. Offsets are aligned,
   not addresses, so a measuring arena counts exactly what a real one uses; the real one's memory must
   be aligned at least as strictly as anything pushed (backends give page-aligned memory). */
static int zt__arena_fit(const zt_arena *a, size_t bytes, size_t align, size_t *start, size_t *end) {
    ZT_ASSERT(align != 0 && (align & (align - 1)) == 0);
    if (a->base && ((uintptr_t)a->base & (align - 1)))
        zt_fatal("arena '%s' starts at %p, which is not aligned to the %zu bytes asked for", a->name,
                 (void *)a->base, align);
    size_t s = (a->used + (align - 1)) & ~(align - 1);
    if (s < a->used || bytes > SIZE_MAX - s - ZT__REDZONE) return 0;
    *start = s;
    *end = s + bytes + ZT__REDZONE;
    return *end <= a->cap;
}

static void *zt__arena_take(zt_arena *a, size_t start, size_t end, size_t bytes) {
    a->used = end;
    if (a->used > *a->peak) *a->peak = a->used;
    if (!a->base) return (void *)(ZT__MEASURE_BASE + start);
    ZT__UNPOISON(a->base + start, bytes);
    return a->base + start;
}

ZT_API void *zt_arena_try_push(zt_arena *a, size_t bytes, size_t align) {
    size_t start, end;
    if (!zt__arena_fit(a, bytes, align, &start, &end)) {
        zt_fail(ZT_ERROR_MEMORY,
                "arena '%s' is out of memory: %zu bytes requested (aligned to %zu), %zu of %zu bytes "
                "in use, %zu free",
                a->name, bytes, align, a->used, a->cap, a->cap - a->used);
        return NULL;
    }
    return zt__arena_take(a, start, end, bytes);
}

ZT_API void *zt_arena_push(zt_arena *a, size_t bytes, size_t align) {
    void *p = zt_arena_try_push(a, bytes, align);
    if (!p) zt_fatal("%s", zt_last_error());
    return p;
}

ZT_API size_t zt_arena_mark(const zt_arena *a) { return a->used; }

ZT_API void zt_arena_reset(zt_arena *a, size_t mark) {
    ZT_ASSERT(mark <= a->used);
    /* scratch copies may have pushed past our own `used`: poison up to the peak */
    if (a->base && *a->peak > mark && !a->stream_ordered) ZT__POISON(a->base + mark, *a->peak - mark);
    a->used = mark;
}

ZT_API size_t zt_arena_peak(const zt_arena *a) { return *a->peak; }

ZT_API char *zt_arena_strdup(zt_arena *a, const char *s) {
    size_t n = strlen(s) + 1;
    char *p = (char *)zt_arena_push(a, n, 1);
    if (a->base) memcpy(p, s, n);
    return p;
}

/* stb_ds, routed into the metadata arena. Its realloc gives no old size, so each block carries its
   size in a header; frees are no-ops (the arena is released whole). Its external functions are renamed
   so that a user's own stb_ds in the same program cannot clash. */
static ZT_THREAD_LOCAL zt_arena *zt__meta_arena;

ZT_API zt_arena *zt_set_meta_arena(zt_arena *a) {
    zt_arena *old = zt__meta_arena;
    zt__meta_arena = a;
    return old;
}

typedef struct zt__meta_header { size_t size; size_t pad; } zt__meta_header;

static void *zt__meta_realloc(void *old, size_t size) {
    if (!zt__meta_arena) zt_fatal("stb_ds used with no metadata arena set (zt_set_meta_arena)");
    ZT_ASSERT(!zt_arena_measuring(zt__meta_arena));
    zt__meta_header *h = (zt__meta_header *)zt_arena_push(zt__meta_arena, sizeof *h + size, 16);
    h->size = size;
    if (old) {
        zt__meta_header *oh = (zt__meta_header *)old - 1;
        memcpy(h + 1, old, ZT__MIN(oh->size, size));
    }
    return h + 1;
}

static void zt__meta_free(void *p) { (void)p; }

#ifdef INCLUDE_STB_DS_H
#  error "stb_ds.h was included before zt.h's implementation: compile ZT_IMPLEMENTATION in its own file"
#endif
/* ZT_STATIC copies get their own prefix, so one of them can sit beside a shared zt in a program */
#ifdef ZT_STATIC
#  define ZT__STBDS(name) zt__static_##name
#else
#  define ZT__STBDS(name) zt__##name
#endif
#define stbds_rand_seed ZT__STBDS(stbds_rand_seed)
#define stbds_hash_bytes ZT__STBDS(stbds_hash_bytes)
#define stbds_hash_string ZT__STBDS(stbds_hash_string)
#define stbds_stralloc ZT__STBDS(stbds_stralloc)
#define stbds_strreset ZT__STBDS(stbds_strreset)
#define stbds_unit_tests ZT__STBDS(stbds_unit_tests)
#define stbds_arrgrowf ZT__STBDS(stbds_arrgrowf)
#define stbds_arrfreef ZT__STBDS(stbds_arrfreef)
#define stbds_hmfree_func ZT__STBDS(stbds_hmfree_func)
#define stbds_hmget_key ZT__STBDS(stbds_hmget_key)
#define stbds_hmget_key_ts ZT__STBDS(stbds_hmget_key_ts)
#define stbds_hmput_default ZT__STBDS(stbds_hmput_default)
#define stbds_hmput_key ZT__STBDS(stbds_hmput_key)
#define stbds_hmdel_key ZT__STBDS(stbds_hmdel_key)
#define stbds_shmode_func ZT__STBDS(stbds_shmode_func)
#define STBDS_NO_SHORT_NAMES
#define STBDS_REALLOC(ctx, p, size) zt__meta_realloc((p), (size))
#define STBDS_FREE(ctx, p) zt__meta_free(p)
#define STB_DS_IMPLEMENTATION
#if defined(__GNUC__) || defined(__clang__)
#  pragma GCC diagnostic push
#  pragma GCC diagnostic ignored "-Wsign-compare"
#  pragma GCC diagnostic ignored "-Wunused-function"
#  pragma GCC diagnostic ignored "-Wunused-parameter"
#  ifdef __cplusplus
#    pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#  endif
#endif
#include <stb/stb_ds.h>
#if defined(__GNUC__) || defined(__clang__)
#  pragma GCC diagnostic pop
#endif
/* stb_ds takes a key's address with typeof and a compound literal; gcc's -std=c11 has no `typeof`,
   and C++ has no compound literals. zt passes lvalue keys only, so a plain address works everywhere. */
#undef STBDS_ADDRESSOF
#define STBDS_ADDRESSOF(typevar, value) &(value)

/* >>tensor (implementation) -------------------------------------------------------------------- */

ZT_API zt_shape zt_shape1(int64_t d0) { zt_shape s = {1, {d0, 0, 0, 0}}; return s; }
ZT_API zt_shape zt_shape2(int64_t d0, int64_t d1) { zt_shape s = {2, {d0, d1, 0, 0}}; return s; }
ZT_API zt_shape zt_shape3(int64_t d0, int64_t d1, int64_t d2) {
    zt_shape s = {3, {d0, d1, d2, 0}};
    return s;
}
ZT_API zt_shape zt_shape4(int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    zt_shape s = {4, {d0, d1, d2, d3}};
    return s;
}

ZT_API size_t zt_dtype_size(zt_dtype t) {
    static const size_t size[ZT_DTYPE_COUNT] = {4, 2, 2, 4, 2, 4};
    ZT_ASSERT((unsigned)t < ZT_DTYPE_COUNT);
    return size[t];
}

ZT_API const char *zt_dtype_name(zt_dtype t) {
    static const char *name[ZT_DTYPE_COUNT] = {"f32", "bf16", "f16", "i32", "u16", "u32"};
    return (unsigned)t < ZT_DTYPE_COUNT ? name[t] : "?";
}

ZT_API int zt_dtype_is_float(zt_dtype t) { return t == ZT_F32 || t == ZT_BF16 || t == ZT_F16; }

ZT_API zt_tensor zt_tensor_make(void *data, zt_dtype dtype, zt_place place, zt_shape shape) {
    ZT_ASSERT(shape.ndim >= 1 && shape.ndim <= ZT_MAX_DIMS);
    for (int i = 0; i < shape.ndim; i++) ZT_ASSERT(shape.d[i] >= 0);
    for (int i = shape.ndim; i < ZT_MAX_DIMS; i++) shape.d[i] = 0;
    zt_tensor t;
    t.data = data;
    t.dtype = dtype;
    t.place = place;
    t.shape = shape;
    return t;
}

ZT_API int64_t zt_numel(zt_tensor t) {
    int64_t n = 1;
    for (int i = 0; i < t.shape.ndim; i++) n *= t.shape.d[i];
    return n;
}

ZT_API size_t zt_nbytes(zt_tensor t) { return (size_t)zt_numel(t) * zt_dtype_size(t.dtype); }
ZT_API int64_t zt_cols(zt_tensor t) { return t.shape.d[t.shape.ndim - 1]; }
ZT_API int64_t zt_rows(zt_tensor t) {
    int64_t c = zt_cols(t);
    return c ? zt_numel(t) / c : 0;
}

ZT_API zt_tensor zt_tensor_new(zt_arena *a, zt_dtype dtype, zt_place place, zt_shape shape) {
    zt_tensor t = zt_tensor_make(NULL, dtype, place, shape);
    t.data = zt_arena_push(a, zt_nbytes(t), 64);
    return t;
}

ZT_API zt_tensor zt_view(zt_tensor t, int64_t offset, zt_shape shape) {
    zt_tensor v = zt_tensor_make(NULL, t.dtype, t.place, shape);
    ZT_ASSERT(offset >= 0 && offset + zt_numel(v) <= zt_numel(t));
    v.data = (uint8_t *)t.data + (size_t)offset * zt_dtype_size(t.dtype);
    return v;
}

ZT_API zt_tensor zt_slice(zt_tensor t, int64_t row0, int64_t n) {
    ZT_ASSERT(row0 >= 0 && n >= 0 && row0 + n <= t.shape.d[0]);
    zt_shape s = t.shape;
    s.d[0] = n;
    int64_t row = t.shape.d[0] ? zt_numel(t) / t.shape.d[0] : 0;
    return zt_view(t, row0 * row, s);
}

ZT_API int zt_same_shape(zt_tensor a, zt_tensor b) {
    if (a.shape.ndim != b.shape.ndim) return 0;
    for (int i = 0; i < a.shape.ndim; i++)
        if (a.shape.d[i] != b.shape.d[i]) return 0;
    return 1;
}

ZT_API void zt_shape_str(zt_shape s, char *buf, size_t size) {
    size_t n = 0;
    n += (size_t)snprintf(buf + n, n < size ? size - n : 0, "(");
    for (int i = 0; i < s.ndim; i++)
        n += (size_t)snprintf(buf + n, n < size ? size - n : 0, i ? ", %lld" : "%lld", (long long)s.d[i]);
    snprintf(buf + n, n < size ? size - n : 0, ")");
}

static uint32_t zt__f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float zt__bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

ZT_API uint16_t zt_f32_to_bf16(float f) {
    uint32_t u = zt__f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* NaN stays quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1);                                             /* round to nearest even */
    return (uint16_t)(u >> 16);
}

ZT_API float zt_bf16_to_f32(uint16_t h) { return zt__bits_f32((uint32_t)h << 16); }

ZT_API uint16_t zt_f32_to_f16(float f) {
    uint32_t u = zt__f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); /* NaN */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to >= 65520: infinity */
    if (a < 0x38800000u) {
        /* f16 subnormal (or zero): value = m * 2^-24; shift the full significand into place */
        if (a < 0x33000000u) return sign; /* below half the smallest subnormal: +-0 */
        uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - e; /* 14..24 */
        uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1))) r++;
        return (uint16_t)(sign | r);
    }
    a += 0xfffu + ((a >> 13) & 1); /* round the 13 dropped bits to nearest even */
    return (uint16_t)(sign | (((a >> 13) - (112u << 10)) & 0x7fffu));
}

ZT_API float zt_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) return zt__bits_f32(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        float v = (float)m * (1.0f / 16777216.0f); /* m * 2^-24, exact */
        return sign ? -v : v;
    }
    return zt__bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

/* element i of a host array as double / from double (integers convert exactly up to 2^53) */
static double zt__load(const void *p, zt_dtype t, int64_t i) {
    switch (t) {
    case ZT_F32: return ((const float *)p)[i];
    case ZT_BF16: return zt_bf16_to_f32(((const uint16_t *)p)[i]);
    case ZT_F16: return zt_f16_to_f32(((const uint16_t *)p)[i]);
    case ZT_I32: return ((const int32_t *)p)[i];
    case ZT_U16: return ((const uint16_t *)p)[i];
    case ZT_U32: return ((const uint32_t *)p)[i];
    default: break;
    }
    zt_fatal("bad dtype %d", (int)t);
}

static void zt__store(void *p, zt_dtype t, int64_t i, double v) {
    switch (t) {
    case ZT_F32: ((float *)p)[i] = (float)v; return;
    case ZT_BF16: ((uint16_t *)p)[i] = zt_f32_to_bf16((float)v); return;
    case ZT_F16: ((uint16_t *)p)[i] = zt_f32_to_f16((float)v); return;
    case ZT_I32: ((int32_t *)p)[i] = (int32_t)v; return;
    case ZT_U16: ((uint16_t *)p)[i] = (uint16_t)v; return;
    case ZT_U32: ((uint32_t *)p)[i] = (uint32_t)v; return;
    default: break;
    }
    zt_fatal("bad dtype %d", (int)t);
}

/* n floats of dtype t at p[i0..] <-> an f32 buffer: the row loads and stores of every CPU kernel */
static void zt__to_f32(float *dst, const void *p, zt_dtype t, int64_t i0, int64_t n) {
    if (t == ZT_F32) {
        memcpy(dst, (const float *)p + i0, (size_t)n * 4);
    } else if (t == ZT_BF16) {
        const uint16_t *h = (const uint16_t *)p + i0;
        for (int64_t i = 0; i < n; i++) dst[i] = zt__bits_f32((uint32_t)h[i] << 16);
    } else {
        for (int64_t i = 0; i < n; i++) dst[i] = (float)zt__load(p, t, i0 + i);
    }
}

static void zt__from_f32(void *p, zt_dtype t, int64_t i0, const float *src, int64_t n) {
    if (t == ZT_F32) {
        memcpy((float *)p + i0, src, (size_t)n * 4);
    } else if (t == ZT_BF16) {
        uint16_t *h = (uint16_t *)p + i0;
        for (int64_t i = 0; i < n; i++) h[i] = zt_f32_to_bf16(src[i]);
    } else {
        for (int64_t i = 0; i < n; i++) zt__store(p, t, i0 + i, src[i]);
    }
}

ZT_API void zt_convert(void *dst, zt_dtype dst_t, const void *src, zt_dtype src_t, int64_t n) {
    if (dst_t == src_t) {
        memmove(dst, src, (size_t)n * zt_dtype_size(src_t));
    } else if (src_t == ZT_F32 && zt_dtype_is_float(dst_t)) {
        zt__from_f32(dst, dst_t, 0, (const float *)src, n);
    } else if (dst_t == ZT_F32 && zt_dtype_is_float(src_t)) {
        zt__to_f32((float *)dst, src, src_t, 0, n);
    } else {
        for (int64_t i = 0; i < n; i++) zt__store(dst, dst_t, i, zt__load(src, src_t, i));
    }
}

/* >>backend (implementation) ------------------------------------------------------------------- */

/* Every op reaches a backend as one descriptor: its kind and its arguments, already validated.
   A backend queues it on a stream (CPU: a command ring served by a thread; CUDA: kernel launches).
   An optional tensor is absent when its ndim is 0. */
typedef enum zt__op_kind {
    ZT__OP_COPY, ZT__OP_CAST, ZT__OP_FILL, ZT__OP_SCALE, ZT__OP_ADD,
    ZT__OP_GEMM, ZT__OP_SUM_ROWS,
    ZT__OP_EMBEDDING_FWD, ZT__OP_EMBEDDING_BWD,
    ZT__OP_LAYERNORM_FWD, ZT__OP_LAYERNORM_BWD, ZT__OP_RMSNORM_FWD, ZT__OP_RMSNORM_BWD,
    ZT__OP_GELU_FWD, ZT__OP_GELU_BWD, ZT__OP_SILU_FWD, ZT__OP_SILU_BWD,
    ZT__OP_SWIGLU_FWD, ZT__OP_SWIGLU_BWD, ZT__OP_GEGLU_FWD, ZT__OP_GEGLU_BWD,
    ZT__OP_ROPE_FWD, ZT__OP_ROPE_BWD,
    ZT__OP_ATTENTION_FWD, ZT__OP_ATTENTION_BWD,
    ZT__OP_CROSSENTROPY, ZT__OP_ADAMW, ZT__OP_SUMSQ, ZT__OP_COMM,
    ZT__OP_MOE_ROUTE_FWD, ZT__OP_MOE_ROUTE_BWD, ZT__OP_MOE_SORT, ZT__OP_MOE_GATHER_FWD, ZT__OP_MOE_GATHER_BWD,
    ZT__OP_MOE_COMBINE_FWD, ZT__OP_MOE_COMBINE_BWD, ZT__OP_GATED_ADD_FWD, ZT__OP_GATED_ADD_BWD,
    ZT__OP_MOE_BALANCE_BWD, ZT__OP_NOISE, ZT__OP_COUNT
} zt__op_kind;

typedef struct zt__args_unary { zt_tensor out, inp; } zt__args_unary; /* copy cast sum_rows sumsq, fwd */
typedef struct zt__args_unary_bwd { zt_tensor dinp, dout, inp; } zt__args_unary_bwd;
typedef struct zt__args_fill { zt_tensor t; float value; } zt__args_fill; /* fill, scale */
enum { ZT__NOISE_ADD, ZT__NOISE_MUL, ZT__NOISE_DROP };
typedef struct zt__args_noise {
    zt_tensor t;
    float magnitude; /* add: t + (2u - 1) magnitude; mul: t ((1 - magnitude) + 2 magnitude u); drop: p */
    float scale;     /* drop: 1 / (1 - p) */
    int mode;        /* ZT__NOISE_* */
    uint64_t seed;
    int64_t offset;
} zt__args_noise;
typedef struct zt__args_add { zt_tensor out, a, b; } zt__args_add;
typedef struct zt__args_gemm {
    zt_tensor c, a, b, bias;
    int trans_a, trans_b;
    float alpha, beta;
} zt__args_gemm;
typedef struct zt__args_embedding { zt_tensor out, ids, table; int accumulate; } zt__args_embedding;
typedef struct zt__args_embedding_bwd { zt_tensor dtable, dout, ids; } zt__args_embedding_bwd;
/* offset: added to each weight (Gemma's RMSNorm: 1) */
typedef struct zt__args_norm { zt_tensor out, mean, rstd, inp, weight, bias; float eps, offset; } zt__args_norm;
typedef struct zt__args_norm_bwd {
    zt_tensor dinp, dweight, dbias, dout, inp, weight, mean, rstd;
    float offset;
} zt__args_norm_bwd;
typedef struct zt__args_rope { zt_tensor out, inp, pos; float theta; zt_rope_scaling scaling; } zt__args_rope;
typedef struct zt__args_attention {
    zt_tensor out, lse, q, k, v, starts;
    zt_tensor dq, dk, dv, dout; /* backward only */
    float scale, softcap;       /* scale: never 0 here (the caller's 0 becomes 1/sqrt(HD)); softcap 0: none */
    int64_t window;             /* 0: none */
    float dropout, dscale;      /* dropout 0: none; dscale 1 / (1 - dropout) */
    uint64_t dseed;
    int64_t doffset;
} zt__args_attention;
typedef struct zt__args_crossentropy {
    zt_tensor losses, dlogits, logits, targets;
    int64_t vocab;
    int ignore_index;
    float dloss, softcap, smoothing; /* softcap 0: none; smoothing: zt_loss_params.label_smoothing */
} zt__args_crossentropy;
/* the MoE ops (zt_moe_*, zt_gated_add_*): each uses the fields its function names; k choices per token;
   the gated add: out, inp (y), weight (gate); dinp (dy), dweight (dgate), dout; the balance: dinp (dlogits),
   probs, weight (dprobs) */
typedef struct zt__args_moe {
    zt_tensor out, inp, dout, dinp, idx, weight, dweight, probs, order, where, counts;
    int64_t k;
    int normalize;
} zt__args_moe;
typedef struct zt__args_adamw { zt_tensor master, m, v, grad, param16; zt_adamw_params p; } zt__args_adamw;
typedef enum zt__coll { ZT__ALL_REDUCE, ZT__REDUCE_SCATTER, ZT__ALL_GATHER, ZT__BROADCAST } zt__coll;
/* stride: elements between the ranks' parts of a reduce-scatter's input or an all-gather's output
   (0: the parts are contiguous); ZeRO's buckets are pieces of every rank's slice of a flat group */
typedef struct zt__args_comm { zt_comm *comm; zt__coll what; zt_reduce_op op; int root; zt_tensor out, inp; int64_t stride; } zt__args_comm;

typedef struct zt__op {
    zt__op_kind kind;
    union {
        zt__args_unary unary;
        zt__args_unary_bwd unary_bwd;
        zt__args_fill fill;
        zt__args_noise noise;
        zt__args_add add;
        zt__args_gemm gemm;
        zt__args_embedding embedding;
        zt__args_embedding_bwd embedding_bwd;
        zt__args_norm norm;
        zt__args_norm_bwd norm_bwd;
        zt__args_rope rope;
        zt__args_attention attention;
        zt__args_crossentropy crossentropy;
        zt__args_adamw adamw;
        zt__args_comm comm;
        zt__args_moe moe;
    };
} zt__op;

typedef struct zt__backend_vt {
    zt_result (*create)(zt_backend *b);   /* arenas, the default stream, libraries */
    void (*destroy)(zt_backend *b);
    zt_result (*stream_init)(zt_stream *s);
    zt_result (*reserve)(zt_backend *b, size_t device_bytes, size_t pinned_bytes);
    void (*launch)(zt_stream *s, const zt__op *op);
    void (*record)(zt_event *e, zt_stream *s);
    void (*wait)(zt_stream *s, zt_event *e);
    void (*stream_sync)(zt_stream *s);
    void (*event_sync)(zt_event *e);
    /* optional: collectives between the ranks' device memory (CUDA: NCCL); NULL: the shared-memory way */
    zt_result (*share)(zt_backend *b, zt_comm *c);
    void (*unshare)(zt_backend *b, zt_comm *c);
} zt__backend_vt;

struct zt_stream { zt_backend *backend; int index; void *impl; };
struct zt_event { zt_backend *backend; int index; void *impl; };

struct zt_backend {
    const zt__backend_vt *vt;
    const char *name;
    zt_backend_desc desc;
    zt_arena device, pinned;
    int measure;
    int n_streams, n_events;
    zt_stream streams[ZT_MAX_STREAMS];
    zt_event events[ZT_MAX_EVENTS];
    size_t library_bytes; /* device memory the backend's context and libraries hold (measured at create) */
    void *impl;
};

/* each backend's table, defined in its own section below (CUDA's in zt_cuda.cuh, when nvcc compiles this) */
static const zt__backend_vt *zt__cpu_backend(void);
#ifdef __CUDACC__
static const zt__backend_vt *zt__cuda_backend(void);
#endif

ZT_API zt_backend_desc zt_backend_desc_default(void) {
    zt_backend_desc d;
    memset(&d, 0, sizeof d);
    d.device_bytes = (size_t)1 << 30;
    d.pinned_bytes = (size_t)64 << 20;
    return d;
}

ZT_API zt_result zt_backend_create(zt_backend **out, const char *name, const zt_backend_desc *desc) {
    *out = NULL;
    const zt__backend_vt *vt = NULL;
    if (strcmp(name, "cpu") == 0)
        vt = zt__cpu_backend();
    else if (strcmp(name, "cuda") == 0)
#ifdef __CUDACC__
        vt = zt__cuda_backend();
#else
        return zt_fail(ZT_ERROR_UNSUPPORTED, "backend 'cuda' needs zt's implementation compiled by nvcc (the "
                       "build/*_cuda programs); this program's was compiled by a C compiler: use 'cpu'");
#endif
    else
        return zt_fail(ZT_ERROR_INVALID, "unknown backend '%s': expected 'cpu' or 'cuda'", name);
    zt_backend *b = (zt_backend *)calloc(1, sizeof *b); /* setup time, freed by zt_backend_destroy */
    if (!b) return zt_fail(ZT_ERROR_MEMORY, "out of host memory creating the %s backend", name);
    b->vt = vt;
    b->name = vt == zt__cpu_backend() ? "cpu" : "cuda";
    b->desc = desc ? *desc : zt_backend_desc_default();
    zt_result r = vt->create(b);
    if (r != ZT_OK) {
        free(b);
        return r;
    }
    *out = b;
    return ZT_OK;
}

ZT_API void zt_backend_destroy(zt_backend *b) {
    if (!b) return;
    zt_backend_sync(b);
    b->vt->destroy(b);
    free(b);
}

ZT_API zt_result zt_backend_reserve(zt_backend *b, size_t device_bytes, size_t pinned_bytes) {
    ZT_ASSERT(b->device.used == 0 && b->pinned.used == 0);
    zt_result r = b->vt->reserve(b, device_bytes, pinned_bytes);
    if (r == ZT_OK) b->desc.device_bytes = device_bytes, b->desc.pinned_bytes = pinned_bytes;
    return r;
}

ZT_API const char *zt_backend_name(const zt_backend *b) { return b->name; }
ZT_API zt_arena *zt_backend_device_arena(zt_backend *b) { return &b->device; }
ZT_API zt_arena *zt_backend_pinned_arena(zt_backend *b) { return &b->pinned; }
ZT_API zt_stream *zt_backend_stream(zt_backend *b) { return &b->streams[0]; }
ZT_API zt_backend *zt_stream_backend(zt_stream *s) { return s->backend; }
ZT_API void zt_backend_set_measure(zt_backend *b, int on) { b->measure = on; }

ZT_API zt_stream *zt_stream_create(zt_backend *b) {
    ZT_ASSERT(b->n_streams < ZT_MAX_STREAMS);
    zt_stream *s = &b->streams[b->n_streams];
    s->backend = b;
    s->index = b->n_streams;
    if (b->vt->stream_init(s) != ZT_OK) zt_fatal("%s", zt_last_error());
    b->n_streams++;
    return s;
}

ZT_API zt_event *zt_event_create(zt_backend *b) {
    ZT_ASSERT(b->n_events < ZT_MAX_EVENTS);
    zt_event *e = &b->events[b->n_events];
    e->backend = b;
    e->index = b->n_events++;
    return e;
}

ZT_API void zt_stream_sync(zt_stream *s) { s->backend->vt->stream_sync(s); }
ZT_API void zt_event_record(zt_event *e, zt_stream *s) {
    ZT_ASSERT(e->backend == s->backend);
    s->backend->vt->record(e, s);
}
ZT_API void zt_stream_wait(zt_stream *s, zt_event *e) {
    ZT_ASSERT(e->backend == s->backend);
    s->backend->vt->wait(s, e);
}
ZT_API void zt_event_sync(zt_event *e) { e->backend->vt->event_sync(e); }
ZT_API void zt_backend_sync(zt_backend *b) {
    for (int i = 0; i < b->n_streams; i++) zt_stream_sync(&b->streams[i]);
}

/* >>ops (implementation) ----------------------------------------------------------------------- */

static zt_tensor zt__none(void) {
    zt_tensor t;
    memset(&t, 0, sizeof t);
    return t;
}
static int zt__present(zt_tensor t) { return t.shape.ndim != 0; }
static zt_tensor zt__opt(const zt_tensor *t) { return t ? *t : zt__none(); }

/* A misused op is a programmer error: stop with the op's name and what was wrong. */
static void zt__need(int ok, const char *op, const char *fmt, ...) ZT_PRINTF(3, 4);
static void zt__need(int ok, const char *op, const char *fmt, ...) {
    if (ok) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    zt_fatal("%s: %s", op, msg);
}

static const char *zt__desc(zt_tensor t, char *buf, size_t size) {
    char sh[96];
    zt_shape_str(t.shape, sh, sizeof sh);
    snprintf(buf, size, "%s %s on the %s", sh, zt_dtype_name(t.dtype),
             t.place == ZT_DEVICE ? "device" : "host");
    return buf;
}

/* t must be a device tensor of a float dtype (or `dtype` when >= 0) with `numel` elements (if >= 0) */
static void zt__need_tensor(const char *op, const char *name, zt_tensor t, int dtype, int64_t numel) {
    char b[160];
    zt__need(zt__present(t) && t.data != NULL, op, "%s is missing", name);
    zt__need(t.place == ZT_DEVICE, op, "%s must be on the device, got %s", name, zt__desc(t, b, sizeof b));
    if (dtype >= 0)
        zt__need(t.dtype == (zt_dtype)dtype, op, "%s must be %s, got %s", name,
                 zt_dtype_name((zt_dtype)dtype), zt__desc(t, b, sizeof b));
    else
        zt__need(zt_dtype_is_float(t.dtype), op, "%s must be f32, bf16 or f16, got %s", name,
                 zt__desc(t, b, sizeof b));
    if (numel >= 0)
        zt__need(zt_numel(t) == numel, op, "%s must have %lld elements, got %s", name, (long long)numel,
                 zt__desc(t, b, sizeof b));
}
#define ZT__FLOAT (-1)
#define ZT__ANY_SIZE (-1)

static void zt__launch(zt_stream *s, const zt__op *op) {
    if (s->backend->measure) return;
    s->backend->vt->launch(s, op);
}

/* queues an op whose arguments are one output and one input */
static void zt__launch_unary(zt_stream *s, zt__op_kind kind, zt_tensor out, zt_tensor inp) {
    zt__op op;
    op.kind = kind;
    op.unary.out = out;
    op.unary.inp = inp;
    zt__launch(s, &op);
}

ZT_API void zt_copy(zt_stream *s, zt_tensor dst, zt_tensor src) {
    char a[160], b[160];
    zt__need(zt__present(dst) && zt__present(src) && (dst.data || !zt_numel(dst)) && (src.data || !zt_numel(src)),
             "zt_copy", "dst and src must both be tensors with memory");
    zt__need(dst.dtype == src.dtype && zt_numel(dst) == zt_numel(src), "zt_copy",
             "dst %s and src %s differ in dtype or size", zt__desc(dst, a, sizeof a), zt__desc(src, b, sizeof b));
    zt__launch_unary(s, ZT__OP_COPY, dst, src);
}

ZT_API void zt_cast(zt_stream *s, zt_tensor out, zt_tensor inp) {
    zt__need_tensor("zt_cast", "out", out, ZT__FLOAT, ZT__ANY_SIZE);
    zt__need_tensor("zt_cast", "inp", inp, ZT__FLOAT, zt_numel(out));
    zt__launch_unary(s, ZT__OP_CAST, out, inp);
}

static void zt__fill_op(zt_stream *s, zt__op_kind kind, const char *name, zt_tensor t, float value) {
    zt__need(zt__present(t) && t.place == ZT_DEVICE, name, "tensor must be on the device");
    zt__need(zt_dtype_is_float(t.dtype) || (kind == ZT__OP_FILL), name, "tensor must be a float dtype");
    zt__op op;
    op.kind = kind;
    op.fill.t = t;
    op.fill.value = value;
    zt__launch(s, &op);
}
ZT_API void zt_fill(zt_stream *s, zt_tensor t, float value) { zt__fill_op(s, ZT__OP_FILL, "zt_fill", t, value); }
ZT_API void zt_scale(zt_stream *s, zt_tensor t, float alpha) {
    zt__fill_op(s, ZT__OP_SCALE, "zt_scale", t, alpha);
}

/* what dropout p keeps times: 1 / (1 - p), rounded once (0 at p = 1, where nothing is kept) */
static float zt__dropout_scale(float p) { return p < 1 ? 1.0f / (1.0f - p) : 0.0f; }

static void zt__noise_op(zt_stream *s, const char *name, zt_tensor t, float magnitude, int mode, uint64_t seed,
                         int64_t offset) {
    zt__need_tensor(name, "t", t, ZT__FLOAT, ZT__ANY_SIZE);
    zt__need(isfinite(magnitude) && offset >= 0, name, "magnitude %g must be finite, offset %lld >= 0",
             (double)magnitude, (long long)offset);
    zt__need(mode != ZT__NOISE_DROP || (magnitude >= 0 && magnitude <= 1), name, "p must be in [0, 1], got %g",
             (double)magnitude);
    zt__op op;
    op.kind = ZT__OP_NOISE;
    op.noise.t = t;
    op.noise.magnitude = magnitude;
    op.noise.scale = mode == ZT__NOISE_DROP ? zt__dropout_scale(magnitude) : 0.0f;
    op.noise.mode = mode;
    op.noise.seed = seed;
    op.noise.offset = offset;
    zt__launch(s, &op);
}
ZT_API void zt_add_uniform_noise(zt_stream *s, zt_tensor t, float magnitude, uint64_t seed, int64_t offset) {
    zt__noise_op(s, "zt_add_uniform_noise", t, magnitude, ZT__NOISE_ADD, seed, offset);
}
ZT_API void zt_mul_uniform_noise(zt_stream *s, zt_tensor t, float jitter, uint64_t seed, int64_t offset) {
    zt__noise_op(s, "zt_mul_uniform_noise", t, jitter, ZT__NOISE_MUL, seed, offset);
}
ZT_API void zt_dropout(zt_stream *s, zt_tensor t, float p, uint64_t seed, int64_t offset) {
    zt__noise_op(s, "zt_dropout", t, p, ZT__NOISE_DROP, seed, offset);
}

ZT_API void zt_add(zt_stream *s, zt_tensor out, zt_tensor a, zt_tensor b) {
    zt__need_tensor("zt_add", "out", out, ZT__FLOAT, ZT__ANY_SIZE);
    zt__need_tensor("zt_add", "a", a, ZT__FLOAT, zt_numel(out));
    zt__need_tensor("zt_add", "b", b, ZT__FLOAT, zt_numel(out));
    zt__op op;
    op.kind = ZT__OP_ADD;
    op.add.out = out;
    op.add.a = a;
    op.add.b = b;
    zt__launch(s, &op);
}

/* (rows, cols) of a gemm operand: batched operands are (batch, rows, cols), others are flattened */
static void zt__matrix_dims(zt_tensor t, int batched, int64_t *rows, int64_t *cols) {
    *cols = zt_cols(t);
    *rows = batched ? t.shape.d[1] : zt_rows(t);
}

ZT_API void zt_gemm(zt_stream *s, zt_tensor c, zt_tensor a, zt_tensor b, int trans_a, int trans_b,
                    float alpha, float beta, const zt_tensor *bias) {
    const char *name = "zt_gemm";
    char da[160], db[160], dc[160];
    zt__need_tensor(name, "c", c, ZT__FLOAT, ZT__ANY_SIZE);
    zt__need_tensor(name, "a", a, ZT__FLOAT, ZT__ANY_SIZE);
    zt__need_tensor(name, "b", b, ZT__FLOAT, ZT__ANY_SIZE);
    int batched = a.shape.ndim == 3 && b.shape.ndim == 3 && c.shape.ndim == 3;
    int64_t ar, ac, br, bc, cr, cc;
    zt__matrix_dims(a, batched, &ar, &ac);
    zt__matrix_dims(b, batched, &br, &bc);
    zt__matrix_dims(c, batched, &cr, &cc);
    int64_t M = trans_a ? ac : ar, K = trans_a ? ar : ac;
    int64_t Kb = trans_b ? bc : br, N = trans_b ? br : bc;
    zt__need(K == Kb && M == cr && N == cc, name, "shapes do not chain: c %s = a%s %s @ b%s %s",
             zt__desc(c, dc, sizeof dc), trans_a ? "^T" : "", zt__desc(a, da, sizeof da),
             trans_b ? "^T" : "", zt__desc(b, db, sizeof db));
    if (batched) {
        int64_t nb = c.shape.d[0];
        zt__need((a.shape.d[0] == nb || a.shape.d[0] == 1) && (b.shape.d[0] == nb || b.shape.d[0] == 1),
                 name, "batch sizes differ: c %lld, a %lld, b %lld", (long long)nb,
                 (long long)a.shape.d[0], (long long)b.shape.d[0]);
    }
    zt__op op;
    op.kind = ZT__OP_GEMM;
    op.gemm.c = c;
    op.gemm.a = a;
    op.gemm.b = b;
    op.gemm.bias = zt__opt(bias);
    if (bias) zt__need_tensor(name, "bias", *bias, ZT__FLOAT, N);
    op.gemm.trans_a = trans_a != 0;
    op.gemm.trans_b = trans_b != 0;
    op.gemm.alpha = alpha;
    op.gemm.beta = beta;
    zt__launch(s, &op);
}

ZT_API void zt_sum_rows(zt_stream *s, zt_tensor out, zt_tensor x) {
    zt__need_tensor("zt_sum_rows", "x", x, ZT__FLOAT, ZT__ANY_SIZE);
    zt__need_tensor("zt_sum_rows", "out", out, ZT__FLOAT, zt_cols(x));
    zt__launch_unary(s, ZT__OP_SUM_ROWS, out, x);
}

ZT_API void zt_matmul_forward(zt_stream *s, zt_tensor out, zt_tensor inp, zt_tensor weight,
                              const zt_tensor *bias) {
    zt_gemm(s, out, inp, weight, 0, 1, 1.0f, 0.0f, bias);
}

ZT_API void zt_matmul_backward(zt_stream *s, const zt_tensor *dinp, const zt_tensor *dweight,
                               const zt_tensor *dbias, zt_tensor dout, zt_tensor inp, zt_tensor weight) {
    if (dinp && zt__present(*dinp)) zt_gemm(s, *dinp, dout, weight, 0, 0, 1.0f, 1.0f, NULL);
    if (dweight && zt__present(*dweight)) {
        /* (OC,C) += dout^T (OC,N) @ inp (N,C), with leading dims of dout and inp flattened */
        zt_tensor d2 = zt_view(dout, 0, zt_shape2(zt_rows(dout), zt_cols(dout)));
        zt_tensor i2 = zt_view(inp, 0, zt_shape2(zt_rows(inp), zt_cols(inp)));
        zt_gemm(s, *dweight, d2, i2, 1, 0, 1.0f, 1.0f, NULL);
    }
    if (dbias && zt__present(*dbias)) zt_sum_rows(s, *dbias, dout);
}

ZT_API void zt_embedding_forward(zt_stream *s, zt_tensor out, zt_tensor ids, zt_tensor table,
                                 int accumulate) {
    const char *name = "zt_embedding_forward";
    zt__need_tensor(name, "table", table, ZT__FLOAT, ZT__ANY_SIZE);
    zt__need_tensor(name, "ids", ids, ZT_I32, ZT__ANY_SIZE);
    zt__need_tensor(name, "out", out, ZT__FLOAT, zt_numel(ids) * zt_cols(table));
    zt__op op;
    op.kind = ZT__OP_EMBEDDING_FWD;
    op.embedding.out = out;
    op.embedding.ids = ids;
    op.embedding.table = table;
    op.embedding.accumulate = accumulate != 0;
    zt__launch(s, &op);
}

ZT_API void zt_embedding_backward(zt_stream *s, zt_tensor dtable, zt_tensor dout, zt_tensor ids) {
    const char *name = "zt_embedding_backward";
    zt__need_tensor(name, "dtable", dtable, ZT__FLOAT, ZT__ANY_SIZE);
    zt__need_tensor(name, "ids", ids, ZT_I32, ZT__ANY_SIZE);
    zt__need_tensor(name, "dout", dout, ZT__FLOAT, zt_numel(ids) * zt_cols(dtable));
    zt__op op;
    op.kind = ZT__OP_EMBEDDING_BWD;
    op.embedding_bwd.dtable = dtable;
    op.embedding_bwd.dout = dout;
    op.embedding_bwd.ids = ids;
    zt__launch(s, &op);
}

static void zt__need_norm(const char *name, zt_tensor inp, zt_tensor other, const char *other_name,
                          zt_tensor weight, zt_tensor bias, zt_tensor mean, zt_tensor rstd) {
    int64_t N = zt_rows(inp), C = zt_cols(inp);
    zt__need_tensor(name, "inp", inp, ZT__FLOAT, ZT__ANY_SIZE);
    zt__need_tensor(name, other_name, other, ZT__FLOAT, N * C);
    zt__need_tensor(name, "weight", weight, ZT__FLOAT, C);
    if (zt__present(bias)) zt__need_tensor(name, "bias", bias, ZT__FLOAT, C);
    if (zt__present(mean)) zt__need_tensor(name, "mean", mean, ZT_F32, N);
    zt__need_tensor(name, "rstd", rstd, ZT_F32, N);
}

ZT_API void zt_layernorm_forward(zt_stream *s, zt_tensor out, zt_tensor mean, zt_tensor rstd,
                                 zt_tensor inp, zt_tensor weight, zt_tensor bias, float eps) {
    zt__need(zt__present(mean) && zt__present(bias), "zt_layernorm_forward", "mean and bias must be given");
    zt__need_norm("zt_layernorm_forward", inp, out, "out", weight, bias, mean, rstd);
    zt__op op;
    op.kind = ZT__OP_LAYERNORM_FWD;
    zt__args_norm a = {out, mean, rstd, inp, weight, bias, eps, 0.0f};
    op.norm = a;
    zt__launch(s, &op);
}

/* dweight and dbias may be absent (ndim 0): a frozen weight */
ZT_API void zt_layernorm_backward(zt_stream *s, zt_tensor dinp, zt_tensor dweight, zt_tensor dbias,
                                  zt_tensor dout, zt_tensor inp, zt_tensor weight, zt_tensor mean,
                                  zt_tensor rstd) {
    const char *name = "zt_layernorm_backward";
    zt__need(zt__present(mean), name, "mean must be given");
    zt__need_norm(name, inp, dout, "dout", weight, zt__none(), mean, rstd);
    zt__need_norm(name, inp, dinp, "dinp", weight, zt__none(), mean, rstd);
    if (zt__present(dweight)) zt__need_tensor(name, "dweight", dweight, ZT__FLOAT, zt_cols(inp));
    if (zt__present(dbias)) zt__need_tensor(name, "dbias", dbias, ZT__FLOAT, zt_cols(inp));
    zt__op op;
    op.kind = ZT__OP_LAYERNORM_BWD;
    zt__args_norm_bwd a = {dinp, dweight, dbias, dout, inp, weight, mean, rstd, 0.0f};
    op.norm_bwd = a;
    zt__launch(s, &op);
}

ZT_API void zt_rmsnorm_offset_forward(zt_stream *s, zt_tensor out, zt_tensor rstd, zt_tensor inp,
                                      zt_tensor weight, float offset, float eps) {
    zt__need_norm("zt_rmsnorm_offset_forward", inp, out, "out", weight, zt__none(), zt__none(), rstd);
    zt__op op;
    op.kind = ZT__OP_RMSNORM_FWD;
    zt__args_norm a = {out, zt__none(), rstd, inp, weight, zt__none(), eps, offset};
    op.norm = a;
    zt__launch(s, &op);
}

ZT_API void zt_rmsnorm_offset_backward(zt_stream *s, zt_tensor dinp, zt_tensor dweight, zt_tensor dout,
                                       zt_tensor inp, zt_tensor weight, float offset, zt_tensor rstd) {
    const char *name = "zt_rmsnorm_offset_backward";
    zt__need_norm(name, inp, dout, "dout", weight, zt__none(), zt__none(), rstd);
    zt__need_norm(name, inp, dinp, "dinp", weight, zt__none(), zt__none(), rstd);
    if (zt__present(dweight)) zt__need_tensor(name, "dweight", dweight, ZT__FLOAT, zt_cols(inp));
    zt__op op;
    op.kind = ZT__OP_RMSNORM_BWD;
    zt__args_norm_bwd a = {dinp, dweight, zt__none(), dout, inp, weight, zt__none(), rstd, offset};
    op.norm_bwd = a;
    zt__launch(s, &op);
}

ZT_API void zt_rmsnorm_forward(zt_stream *s, zt_tensor out, zt_tensor rstd, zt_tensor inp,
                               zt_tensor weight, float eps) {
    zt_rmsnorm_offset_forward(s, out, rstd, inp, weight, 0.0f, eps);
}

ZT_API void zt_rmsnorm_backward(zt_stream *s, zt_tensor dinp, zt_tensor dweight, zt_tensor dout,
                                zt_tensor inp, zt_tensor weight, zt_tensor rstd) {
    zt_rmsnorm_offset_backward(s, dinp, dweight, dout, inp, weight, 0.0f, rstd);
}

/* elementwise ops; for swiglu the input is twice as wide as the output */
static void zt__unary(zt_stream *s, zt__op_kind kind, const char *name, zt_tensor out, zt_tensor inp,
                      int widen) {
    zt__need_tensor(name, "inp", inp, ZT__FLOAT, ZT__ANY_SIZE);
    zt__need_tensor(name, "out", out, ZT__FLOAT, zt_numel(inp) / widen);
    zt__need(zt_rows(out) == zt_rows(inp), name, "out and inp must have the same rows");
    zt__launch_unary(s, kind, out, inp);
}

static void zt__unary_bwd(zt_stream *s, zt__op_kind kind, const char *name, zt_tensor dinp,
                          zt_tensor dout, zt_tensor inp, int widen) {
    zt__need_tensor(name, "inp", inp, ZT__FLOAT, ZT__ANY_SIZE);
    zt__need_tensor(name, "dinp", dinp, ZT__FLOAT, zt_numel(inp));
    zt__need_tensor(name, "dout", dout, ZT__FLOAT, zt_numel(inp) / widen);
    zt__need(zt_rows(dout) == zt_rows(inp), name, "dout and inp must have the same rows");
    zt__op op;
    op.kind = kind;
    op.unary_bwd.dinp = dinp;
    op.unary_bwd.dout = dout;
    op.unary_bwd.inp = inp;
    zt__launch(s, &op);
}

ZT_API void zt_gelu_forward(zt_stream *s, zt_tensor out, zt_tensor inp) {
    zt__unary(s, ZT__OP_GELU_FWD, "zt_gelu_forward", out, inp, 1);
}
ZT_API void zt_gelu_backward(zt_stream *s, zt_tensor dinp, zt_tensor dout, zt_tensor inp) {
    zt__unary_bwd(s, ZT__OP_GELU_BWD, "zt_gelu_backward", dinp, dout, inp, 1);
}
ZT_API void zt_silu_forward(zt_stream *s, zt_tensor out, zt_tensor inp) {
    zt__unary(s, ZT__OP_SILU_FWD, "zt_silu_forward", out, inp, 1);
}
ZT_API void zt_silu_backward(zt_stream *s, zt_tensor dinp, zt_tensor dout, zt_tensor inp) {
    zt__unary_bwd(s, ZT__OP_SILU_BWD, "zt_silu_backward", dinp, dout, inp, 1);
}
ZT_API void zt_swiglu_forward(zt_stream *s, zt_tensor out, zt_tensor inp) {
    zt__need(zt_cols(inp) % 2 == 0, "zt_swiglu_forward", "inp's last dimension must be even");
    zt__unary(s, ZT__OP_SWIGLU_FWD, "zt_swiglu_forward", out, inp, 2);
}
ZT_API void zt_swiglu_backward(zt_stream *s, zt_tensor dinp, zt_tensor dout, zt_tensor inp) {
    zt__need(zt_cols(inp) % 2 == 0, "zt_swiglu_backward", "inp's last dimension must be even");
    zt__unary_bwd(s, ZT__OP_SWIGLU_BWD, "zt_swiglu_backward", dinp, dout, inp, 2);
}
ZT_API void zt_geglu_forward(zt_stream *s, zt_tensor out, zt_tensor inp) {
    zt__need(zt_cols(inp) % 2 == 0, "zt_geglu_forward", "inp's last dimension must be even");
    zt__unary(s, ZT__OP_GEGLU_FWD, "zt_geglu_forward", out, inp, 2);
}
ZT_API void zt_geglu_backward(zt_stream *s, zt_tensor dinp, zt_tensor dout, zt_tensor inp) {
    zt__need(zt_cols(inp) % 2 == 0, "zt_geglu_backward", "inp's last dimension must be even");
    zt__unary_bwd(s, ZT__OP_GEGLU_BWD, "zt_geglu_backward", dinp, dout, inp, 2);
}

/* ---- mixture of experts ---- */

static void zt__gated_add(zt_stream *s, zt__op_kind kind, const char *name, zt_tensor out_or_dy, zt_tensor dgate,
                          zt_tensor dout, zt_tensor y, zt_tensor gate) {
    int64_t N = zt_rows(y), C = zt_cols(y);
    zt__need_tensor(name, "y", y, ZT__FLOAT, ZT__ANY_SIZE);
    zt__need_tensor(name, kind == ZT__OP_GATED_ADD_FWD ? "out" : "dy", out_or_dy, ZT__FLOAT, N * C);
    zt__need_tensor(name, "gate", gate, ZT__FLOAT, N);
    zt__op op;
    memset(&op, 0, sizeof op);
    op.kind = kind;
    op.moe.inp = y, op.moe.weight = gate;
    if (kind == ZT__OP_GATED_ADD_FWD) {
        op.moe.out = out_or_dy;
    } else {
        zt__need_tensor(name, "dgate", dgate, ZT__FLOAT, N);
        zt__need_tensor(name, "dout", dout, ZT__FLOAT, N * C);
        op.moe.dinp = out_or_dy, op.moe.dweight = dgate, op.moe.dout = dout;
    }
    zt__launch(s, &op);
}
ZT_API void zt_gated_add_forward(zt_stream *s, zt_tensor out, zt_tensor y, zt_tensor gate) {
    zt__gated_add(s, ZT__OP_GATED_ADD_FWD, "zt_gated_add_forward", out, zt__none(), zt__none(), y, gate);
}
ZT_API void zt_gated_add_backward(zt_stream *s, zt_tensor dy, zt_tensor dgate, zt_tensor dout, zt_tensor y,
                                  zt_tensor gate) {
    zt__gated_add(s, ZT__OP_GATED_ADD_BWD, "zt_gated_add_backward", dy, dgate, dout, y, gate);
}

static zt__op zt__moe_op(zt__op_kind kind) {
    zt__op op;
    memset(&op, 0, sizeof op);
    op.kind = kind;
    return op;
}

ZT_API void zt_moe_route_forward(zt_stream *s, zt_tensor idx, zt_tensor weight, zt_tensor probs, zt_tensor logits,
                                 int normalize) {
    const char *name = "zt_moe_route_forward";
    int64_t N = zt_rows(logits), E = zt_cols(logits), k = zt_cols(idx);
    zt__need_tensor(name, "logits", logits, ZT__FLOAT, ZT__ANY_SIZE);
    zt__need_tensor(name, "probs", probs, ZT_F32, N * E);
    zt__need_tensor(name, "idx", idx, ZT_I32, N * k);
    zt__need_tensor(name, "weight", weight, ZT_F32, N * k);
    zt__need(k >= 1 && k <= E && k <= ZT_MOE_MAX_K && E <= ZT_MOE_MAX_EXPERTS, name,
             "idx must have 1 to min(E, ZT_MOE_MAX_K) columns, and E at most ZT_MOE_MAX_EXPERTS");
    zt__op op = zt__moe_op(ZT__OP_MOE_ROUTE_FWD);
    op.moe.idx = idx, op.moe.weight = weight, op.moe.probs = probs, op.moe.inp = logits;
    op.moe.k = k, op.moe.normalize = normalize != 0;
    zt__launch(s, &op);
}

ZT_API void zt_moe_route_backward(zt_stream *s, zt_tensor dlogits, zt_tensor dweight, zt_tensor probs, zt_tensor idx,
                                  int normalize) {
    const char *name = "zt_moe_route_backward";
    int64_t N = zt_rows(probs), E = zt_cols(probs), k = zt_cols(idx);
    zt__need_tensor(name, "probs", probs, ZT_F32, ZT__ANY_SIZE);
    zt__need_tensor(name, "dlogits", dlogits, ZT__FLOAT, N * E);
    zt__need_tensor(name, "idx", idx, ZT_I32, N * k);
    zt__need_tensor(name, "dweight", dweight, ZT_F32, N * k);
    zt__need(k >= 1 && k <= E && k <= ZT_MOE_MAX_K && E <= ZT_MOE_MAX_EXPERTS, name,
             "idx must have 1 to min(E, ZT_MOE_MAX_K) columns, and E at most ZT_MOE_MAX_EXPERTS");
    zt__op op = zt__moe_op(ZT__OP_MOE_ROUTE_BWD);
    op.moe.dinp = dlogits, op.moe.dweight = dweight, op.moe.probs = probs, op.moe.idx = idx;
    op.moe.k = k, op.moe.normalize = normalize != 0;
    zt__launch(s, &op);
}

ZT_API void zt_moe_balance_backward(zt_stream *s, zt_tensor dlogits, zt_tensor probs, zt_tensor dprobs) {
    const char *name = "zt_moe_balance_backward";
    int64_t N = zt_rows(probs), E = zt_cols(probs);
    zt__need_tensor(name, "probs", probs, ZT_F32, ZT__ANY_SIZE);
    zt__need_tensor(name, "dlogits", dlogits, ZT__FLOAT, N * E);
    zt__need_tensor(name, "dprobs", dprobs, ZT_F32, E);
    zt__need(E >= 1 && E <= ZT_MOE_MAX_EXPERTS, name, "probs must have 1 to ZT_MOE_MAX_EXPERTS columns");
    zt__op op = zt__moe_op(ZT__OP_MOE_BALANCE_BWD);
    op.moe.dinp = dlogits, op.moe.probs = probs, op.moe.weight = dprobs;
    zt__launch(s, &op);
}

ZT_API void zt_moe_sort(zt_stream *s, zt_tensor order, zt_tensor where, zt_tensor counts, zt_tensor idx) {
    const char *name = "zt_moe_sort";
    int64_t n = zt_numel(idx), E = zt_numel(counts);
    zt__need_tensor(name, "idx", idx, ZT_I32, ZT__ANY_SIZE);
    zt__need_tensor(name, "order", order, ZT_I32, n);
    zt__need_tensor(name, "where", where, ZT_I32, n);
    zt__need_tensor(name, "counts", counts, ZT_I32, ZT__ANY_SIZE);
    zt__need(E >= 1 && E <= ZT_MOE_MAX_EXPERTS && n < ((int64_t)1 << 31), name,
             "counts must have 1 to ZT_MOE_MAX_EXPERTS elements, and idx fewer than 2^31");
    zt__op op = zt__moe_op(ZT__OP_MOE_SORT);
    op.moe.order = order, op.moe.where = where, op.moe.counts = counts, op.moe.idx = idx;
    op.moe.k = zt_cols(idx);
    zt__launch(s, &op);
}

ZT_API void zt_moe_gather_forward(zt_stream *s, zt_tensor xs, zt_tensor x, zt_tensor order) {
    const char *name = "zt_moe_gather_forward";
    int64_t N = zt_rows(x), C = zt_cols(x), n = zt_numel(order);
    zt__need_tensor(name, "x", x, ZT__FLOAT, ZT__ANY_SIZE);
    zt__need_tensor(name, "order", order, ZT_I32, ZT__ANY_SIZE);
    zt__need_tensor(name, "xs", xs, ZT__FLOAT, n * C);
    zt__need(N > 0 && n % N == 0, name, "order's length must be a multiple of x's rows");
    zt__op op = zt__moe_op(ZT__OP_MOE_GATHER_FWD);
    op.moe.out = xs, op.moe.inp = x, op.moe.order = order, op.moe.k = n / N;
    zt__launch(s, &op);
}

ZT_API void zt_moe_gather_backward(zt_stream *s, zt_tensor dx, zt_tensor dxs, zt_tensor where) {
    const char *name = "zt_moe_gather_backward";
    int64_t N = zt_rows(dx), C = zt_cols(dx), n = zt_numel(where);
    zt__need_tensor(name, "dx", dx, ZT__FLOAT, ZT__ANY_SIZE);
    zt__need_tensor(name, "where", where, ZT_I32, ZT__ANY_SIZE);
    zt__need_tensor(name, "dxs", dxs, ZT__FLOAT, n * C);
    zt__need(N > 0 && n % N == 0, name, "where's length must be a multiple of dx's rows");
    zt__op op = zt__moe_op(ZT__OP_MOE_GATHER_BWD);
    op.moe.dinp = dx, op.moe.dout = dxs, op.moe.where = where, op.moe.k = n / N;
    zt__launch(s, &op);
}

ZT_API void zt_moe_combine_forward(zt_stream *s, zt_tensor out, zt_tensor ys, zt_tensor weight, zt_tensor where) {
    const char *name = "zt_moe_combine_forward";
    int64_t N = zt_rows(out), C = zt_cols(out), n = zt_numel(where);
    zt__need_tensor(name, "out", out, ZT__FLOAT, ZT__ANY_SIZE);
    zt__need_tensor(name, "where", where, ZT_I32, ZT__ANY_SIZE);
    zt__need_tensor(name, "ys", ys, ZT__FLOAT, n * C);
    zt__need_tensor(name, "weight", weight, ZT_F32, n);
    zt__need(N > 0 && n % N == 0, name, "where's length must be a multiple of out's rows");
    zt__op op = zt__moe_op(ZT__OP_MOE_COMBINE_FWD);
    op.moe.out = out, op.moe.inp = ys, op.moe.weight = weight, op.moe.where = where, op.moe.k = n / N;
    zt__launch(s, &op);
}

ZT_API void zt_moe_combine_backward(zt_stream *s, zt_tensor dys, zt_tensor dweight, zt_tensor dout, zt_tensor ys,
                                    zt_tensor weight, zt_tensor where) {
    const char *name = "zt_moe_combine_backward";
    int64_t N = zt_rows(dout), C = zt_cols(dout), n = zt_numel(where);
    zt__need_tensor(name, "dout", dout, ZT__FLOAT, ZT__ANY_SIZE);
    zt__need_tensor(name, "where", where, ZT_I32, ZT__ANY_SIZE);
    zt__need_tensor(name, "ys", ys, ZT__FLOAT, n * C);
    zt__need_tensor(name, "dys", dys, ZT__FLOAT, n * C);
    zt__need_tensor(name, "weight", weight, ZT_F32, n);
    zt__need_tensor(name, "dweight", dweight, ZT_F32, n);
    zt__need(N > 0 && n % N == 0, name, "where's length must be a multiple of dout's rows");
    zt__op op = zt__moe_op(ZT__OP_MOE_COMBINE_BWD);
    op.moe.dinp = dys, op.moe.dweight = dweight, op.moe.dout = dout, op.moe.inp = ys, op.moe.weight = weight;
    op.moe.where = where, op.moe.k = n / N;
    zt__launch(s, &op);
}

static void zt__rope(zt_stream *s, zt__op_kind kind, const char *name, zt_tensor out, zt_tensor inp,
                     zt_tensor pos, float theta, const zt_rope_scaling *scaling) {
    char b[160];
    zt__need_tensor(name, "inp", inp, ZT__FLOAT, ZT__ANY_SIZE);
    zt__need(inp.shape.ndim == 4 && zt_cols(inp) % 2 == 0, name, "inp must be (B,T,H,HD) with HD even, got %s",
             zt__desc(inp, b, sizeof b));
    zt__need_tensor(name, "out", out, ZT__FLOAT, zt_numel(inp));
    zt__need_tensor(name, "pos", pos, ZT_I32, inp.shape.d[0] * inp.shape.d[1]);
    zt__op op;
    op.kind = kind;
    op.rope.out = out;
    op.rope.inp = zt_view(inp, 0, inp.shape);
    op.rope.out.shape = inp.shape;
    op.rope.pos = pos;
    op.rope.theta = theta;
    memset(&op.rope.scaling, 0, sizeof op.rope.scaling);
    if (scaling) op.rope.scaling = *scaling; /* the kernels read a scaling's fields only where factor > 0 */
    int64_t rd = op.rope.scaling.rotary_dim;
    zt__need(rd >= 0 && rd <= zt_cols(inp) && rd % 2 == 0, name, "rotary_dim must be even and in [0, HD = %lld], got %lld",
             (long long)zt_cols(inp), (long long)rd);
    if (rd == 0) op.rope.scaling.rotary_dim = zt_cols(inp);
    zt__launch(s, &op);
}
/* the frequency of rotary pair i of HD dimensions, in f32 as transformers computes it; every backend
   takes it from here (the CUDA kernels as a table), so the angles are the same bits everywhere */
/* YaRN's pair for num_rotations rotations over the original context (transformers' find_correction_dim) */
static double zt__yarn_dim(double rotations, int64_t HD, double theta, double original) {
    return (double)HD * log(original / (rotations * 2 * 3.14159265358979323846)) / (2 * log(theta));
}

static float zt__rope_inv_freq(float theta, int64_t i, int64_t HD, const zt_rope_scaling *sc) {
    float inv_freq = 1.0f / powf(theta, (float)(2 * i) / (float)HD);
    if (sc->factor > 0 && sc->linear) {
        inv_freq /= sc->factor;
    } else if (sc->factor > 0 && sc->pair_factors) { /* longrope */
        inv_freq = 1.0f / (sc->pair_factors[i] * powf(theta, (float)(2 * i) / (float)HD));
    } else if (sc->factor > 0 && sc->yarn) { /* interpolated below the ramp's start, extrapolated past its end */
        double lo = zt__yarn_dim(sc->beta_fast, HD, theta, sc->original_max_positions);
        double hi = zt__yarn_dim(sc->beta_slow, HD, theta, sc->original_max_positions);
        if (sc->truncate) lo = floor(lo), hi = ceil(hi);
        lo = ZT__MAX(lo, 0.0), hi = ZT__MIN(hi, (double)(HD - 1));
        if (lo == hi) hi += 0.001;
        float ramp = ((float)i - (float)lo) / (float)(hi - lo);
        float extrapolated = 1.0f - ZT__MIN(ZT__MAX(ramp, 0.0f), 1.0f);
        float pos_freq = powf(theta, (float)(2 * i) / (float)HD);
        inv_freq = 1.0f / (sc->factor * pos_freq) * (1.0f - extrapolated) + 1.0f / pos_freq * extrapolated;
    } else if (sc->factor > 0) { /* "llama3": long wavelengths slowed by factor, the middle band blended */
        float wavelen = 6.2831853f / inv_freq, old = sc->original_max_positions;
        float scaled = wavelen > old / sc->low_freq_factor ? inv_freq / sc->factor : inv_freq;
        if (!(wavelen < old / sc->high_freq_factor) && !(wavelen > old / sc->low_freq_factor)) {
            float smooth = (old / wavelen - sc->low_freq_factor) / (sc->high_freq_factor - sc->low_freq_factor);
            scaled = (1.0f - smooth) * scaled / sc->factor + smooth * scaled;
        }
        inv_freq = scaled;
    }
    return inv_freq;
}

/* what cos and sin are multiplied by: YaRN's attention factor, else 1 */
static float zt__rope_mscale(const zt_rope_scaling *sc) {
    return sc->factor > 0 && sc->attention_factor > 0 ? sc->attention_factor : 1.0f;
}

ZT_API void zt_rope_forward(zt_stream *s, zt_tensor out, zt_tensor inp, zt_tensor pos, float theta,
                            const zt_rope_scaling *scaling) {
    zt__rope(s, ZT__OP_ROPE_FWD, "zt_rope_forward", out, inp, pos, theta, scaling);
}
ZT_API void zt_rope_backward(zt_stream *s, zt_tensor dinp, zt_tensor dout, zt_tensor pos, float theta,
                             const zt_rope_scaling *scaling) {
    zt__rope(s, ZT__OP_ROPE_BWD, "zt_rope_backward", dinp, dout, pos, theta, scaling);
}

static void zt__need_attention(const char *name, zt_tensor q, zt_tensor k, zt_tensor v, zt_tensor out,
                               zt_tensor lse, zt_tensor starts) {
    char b[160], c[160];
    zt__need_tensor(name, "q", q, ZT__FLOAT, ZT__ANY_SIZE);
    zt__need(q.shape.ndim == 4, name, "q must be (B,T,NH,HD), got %s", zt__desc(q, b, sizeof b));
    int64_t B = q.shape.d[0], T = q.shape.d[1], NH = q.shape.d[2], HD = q.shape.d[3];
    zt__need_tensor(name, "k", k, ZT__FLOAT, ZT__ANY_SIZE);
    zt__need(k.shape.ndim == 4 && k.shape.d[0] == B && k.shape.d[1] == T && k.shape.d[3] == HD &&
                 k.shape.d[2] > 0 && NH % k.shape.d[2] == 0,
             name, "k must be (B,T,NKV,HD) with NH a multiple of NKV; q is %s, k is %s",
             zt__desc(q, b, sizeof b), zt__desc(k, c, sizeof c));
    zt__need_tensor(name, "v", v, ZT__FLOAT, zt_numel(k));
    zt__need_tensor(name, "out", out, ZT__FLOAT, zt_numel(q));
    zt__need_tensor(name, "lse", lse, ZT_F32, B * NH * T);
    if (zt__present(starts)) zt__need_tensor(name, "starts", starts, ZT_I32, B * T);
}

static void zt__need_capping(const char *name, float scale, float softcap) {
    zt__need(isfinite(scale) && scale >= 0 && isfinite(softcap) && softcap >= 0, name,
             "scale and softcap must be finite and >= 0, got %g and %g", (double)scale, (double)softcap);
}

/* the options into the op's arguments, checked */
static void zt__attention_opts(const char *name, zt__args_attention *a, const zt_attention_opts *opts) {
    zt_attention_opts o;
    memset(&o, 0, sizeof o);
    if (opts) o = *opts;
    zt__need_capping(name, o.scale, o.softcap);
    zt__need(o.window >= 0, name, "window must be >= 0, got %lld", (long long)o.window);
    zt__need(o.dropout >= 0 && o.dropout <= 1 && o.dropout_offset >= 0, name,
             "dropout must be in [0, 1] and dropout_offset >= 0, got %g and %lld", (double)o.dropout,
             (long long)o.dropout_offset);
    a->scale = o.scale > 0 ? o.scale : 1.0f / sqrtf((float)a->q.shape.d[3]);
    a->softcap = o.softcap;
    a->window = o.window;
    a->dropout = o.dropout;
    a->dscale = zt__dropout_scale(o.dropout);
    a->dseed = o.dropout_seed;
    a->doffset = o.dropout_offset;
}

ZT_API void zt_attention_forward(zt_stream *s, zt_tensor out, zt_tensor lse, zt_tensor q, zt_tensor k,
                                 zt_tensor v, const zt_tensor *starts) {
    zt_attention_ex_forward(s, out, lse, q, k, v, starts, NULL);
}

ZT_API void zt_attention_backward(zt_stream *s, zt_tensor dq, zt_tensor dk, zt_tensor dv,
                                  zt_tensor dout, zt_tensor q, zt_tensor k, zt_tensor v, zt_tensor out,
                                  zt_tensor lse, const zt_tensor *starts) {
    zt_attention_ex_backward(s, dq, dk, dv, dout, q, k, v, out, lse, starts, NULL);
}

ZT_API void zt_attention_ex_forward(zt_stream *s, zt_tensor out, zt_tensor lse, zt_tensor q, zt_tensor k,
                                    zt_tensor v, const zt_tensor *starts, const zt_attention_opts *opts) {
    zt__need_attention("zt_attention_forward", q, k, v, out, lse, zt__opt(starts));
    zt__op op;
    memset(&op, 0, sizeof op);
    op.kind = ZT__OP_ATTENTION_FWD;
    op.attention.out = out;
    op.attention.lse = lse;
    op.attention.q = q;
    op.attention.k = k;
    op.attention.v = zt_view(v, 0, k.shape);
    op.attention.starts = zt__opt(starts);
    zt__attention_opts("zt_attention_forward", &op.attention, opts);
    zt__launch(s, &op);
}

ZT_API void zt_attention_ex_backward(zt_stream *s, zt_tensor dq, zt_tensor dk, zt_tensor dv,
                                     zt_tensor dout, zt_tensor q, zt_tensor k, zt_tensor v, zt_tensor out,
                                     zt_tensor lse, const zt_tensor *starts, const zt_attention_opts *opts) {
    const char *name = "zt_attention_backward";
    zt__need_attention(name, q, k, v, out, lse, zt__opt(starts));
    zt__need_tensor(name, "dout", dout, ZT__FLOAT, zt_numel(q));
    zt__need_tensor(name, "dq", dq, ZT__FLOAT, zt_numel(q));
    zt__need_tensor(name, "dk", dk, ZT__FLOAT, zt_numel(k));
    zt__need_tensor(name, "dv", dv, ZT__FLOAT, zt_numel(k));
    zt__op op;
    op.kind = ZT__OP_ATTENTION_BWD;
    op.attention.out = out;
    op.attention.lse = lse;
    op.attention.q = q;
    op.attention.k = k;
    op.attention.v = zt_view(v, 0, k.shape);
    op.attention.starts = zt__opt(starts);
    op.attention.dq = zt_view(dq, 0, q.shape);
    op.attention.dk = zt_view(dk, 0, k.shape);
    op.attention.dv = zt_view(dv, 0, k.shape);
    op.attention.dout = zt_view(dout, 0, q.shape);
    zt__attention_opts(name, &op.attention, opts);
    zt__launch(s, &op);
}

ZT_API void zt_crossentropy(zt_stream *s, zt_tensor losses, const zt_tensor *dlogits, zt_tensor logits,
                            zt_tensor targets, int64_t vocab, int ignore_index, float dloss) {
    zt_crossentropy_capped(s, losses, dlogits, logits, targets, vocab, ignore_index, dloss, 0.0f);
}

static zt_loss_params zt__loss_params(int64_t vocab, int ignore_index, float dloss, float softcap) {
    zt_loss_params p;
    p.vocab = vocab, p.ignore_index = ignore_index, p.dloss = dloss, p.softcap = softcap, p.label_smoothing = 0.0f;
    return p;
}

ZT_API void zt_crossentropy_capped(zt_stream *s, zt_tensor losses, const zt_tensor *dlogits, zt_tensor logits,
                                   zt_tensor targets, int64_t vocab, int ignore_index, float dloss, float softcap) {
    zt_crossentropy_with(s, losses, dlogits, logits, targets, zt__loss_params(vocab, ignore_index, dloss, softcap));
}

ZT_API void zt_crossentropy_with(zt_stream *s, zt_tensor losses, const zt_tensor *dlogits, zt_tensor logits,
                                 zt_tensor targets, zt_loss_params p) {
    const char *name = "zt_crossentropy";
    int64_t vocab = p.vocab;
    zt__need_capping(name, 1.0f, p.softcap);
    zt__need(p.label_smoothing >= 0.0f && p.label_smoothing <= 1.0f, name, "label_smoothing %g must be in [0, 1]",
             (double)p.label_smoothing);
    zt__need_tensor(name, "logits", logits, ZT__FLOAT, ZT__ANY_SIZE);
    int64_t N = zt_rows(logits);
    zt__need(vocab > 0 && vocab <= zt_cols(logits), name, "vocab %lld must be in [1, %lld]",
             (long long)vocab, (long long)zt_cols(logits));
    zt__need_tensor(name, "targets", targets, ZT_I32, N);
    zt__need_tensor(name, "losses", losses, ZT_F32, N);
    if (dlogits) zt__need_tensor(name, "dlogits", *dlogits, ZT__FLOAT, zt_numel(logits));
    zt__op op;
    op.kind = ZT__OP_CROSSENTROPY;
    op.crossentropy.losses = losses;
    op.crossentropy.dlogits = zt__opt(dlogits);
    op.crossentropy.logits = logits;
    op.crossentropy.targets = targets;
    op.crossentropy.vocab = vocab;
    op.crossentropy.ignore_index = p.ignore_index;
    op.crossentropy.dloss = p.dloss;
    op.crossentropy.softcap = p.softcap;
    op.crossentropy.smoothing = p.label_smoothing;
    zt__launch(s, &op);
}

ZT_API void zt_output_loss(zt_stream *s, zt_tensor losses, const zt_tensor *dhidden,
                           const zt_tensor *dweight, zt_tensor hidden, zt_tensor weight,
                           zt_tensor targets, zt_tensor logits_buf, int64_t vocab, int ignore_index,
                           float dloss) {
    zt_output_loss_capped(s, losses, dhidden, dweight, hidden, weight, targets, logits_buf, vocab, ignore_index,
                          dloss, 0.0f);
}

ZT_API void zt_output_loss_capped(zt_stream *s, zt_tensor losses, const zt_tensor *dhidden,
                                  const zt_tensor *dweight, zt_tensor hidden, zt_tensor weight,
                                  zt_tensor targets, zt_tensor logits_buf, int64_t vocab, int ignore_index,
                                  float dloss, float softcap) {
    zt_output_loss_with(s, losses, dhidden, dweight, hidden, weight, targets, logits_buf,
                        zt__loss_params(vocab, ignore_index, dloss, softcap));
}

ZT_API void zt_output_loss_with(zt_stream *s, zt_tensor losses, const zt_tensor *dhidden, const zt_tensor *dweight,
                                zt_tensor hidden, zt_tensor weight, zt_tensor targets, zt_tensor logits_buf,
                                zt_loss_params p) {
    int64_t N = zt_rows(hidden), C = zt_cols(hidden), Vp = zt_rows(weight);
    int64_t R = zt_rows(logits_buf);
    zt__need(zt_cols(weight) == C && zt_cols(logits_buf) == Vp && R > 0, "zt_output_loss",
             "hidden (N,%lld), weight (%lld,%lld) and logits_buf (R,%lld) do not agree", (long long)C,
             (long long)Vp, (long long)zt_cols(weight), (long long)zt_cols(logits_buf));
    zt_tensor h2 = zt_view(hidden, 0, zt_shape2(N, C));
    int backward = dhidden || dweight;
    /* With 16-bit weights and wider logits, the logits' gradient is written in the weights' dtype (as
       PyTorch's autocast has it), after the logits in the same buffer: the backward products then take
       two operands of one dtype, which a GPU's tensor cores need. Fewer rows fit per chunk for that. */
    size_t lsize = zt_dtype_size(logits_buf.dtype), wsize = zt_dtype_size(weight.dtype);
    int narrow = backward && wsize < lsize;
    if (narrow) R = R * (int64_t)lsize / (int64_t)(lsize + wsize);
    zt__need(R > 0, "zt_output_loss", "logits_buf has too few rows for a %s gradient beside the logits",
             zt_dtype_name(weight.dtype));
    for (int64_t r0 = 0; r0 < N; r0 += R) {
        int64_t n = ZT__MIN(R, N - r0);
        zt_tensor h = zt_slice(h2, r0, n);
        zt_tensor logits = zt_view(logits_buf, 0, zt_shape2(n, Vp)), dlogits = logits;
        if (narrow)
            dlogits = zt_tensor_make((uint8_t *)logits_buf.data + (size_t)(n * Vp) * lsize, weight.dtype, ZT_DEVICE,
                                     zt_shape2(n, Vp));
        zt_gemm(s, logits, h, weight, 0, 1, 1.0f, 0.0f, NULL);
        zt_crossentropy_with(s, zt_slice(losses, r0, n), backward ? &dlogits : NULL, logits, zt_slice(targets, r0, n), p);
        if (dhidden) {
            zt_tensor dh = zt_slice(zt_view(*dhidden, 0, zt_shape2(N, C)), r0, n);
            zt_gemm(s, dh, dlogits, weight, 0, 0, 1.0f, 1.0f, NULL);
        }
        if (dweight) zt_gemm(s, *dweight, dlogits, h, 1, 0, 1.0f, 1.0f, NULL);
    }
}

ZT_API void zt_adamw(zt_stream *s, zt_tensor master, zt_tensor m, zt_tensor v, zt_tensor grad,
                     const zt_tensor *param16, zt_adamw_params p) {
    const char *name = "zt_adamw";
    zt__need_tensor(name, "master", master, ZT_F32, ZT__ANY_SIZE);
    int64_t n = zt_numel(master);
    zt__need_tensor(name, "m", m, ZT_F32, n);
    zt__need_tensor(name, "v", v, ZT_F32, n);
    zt__need_tensor(name, "grad", grad, ZT__FLOAT, n);
    if (param16) zt__need_tensor(name, "param16", *param16, ZT__FLOAT, n);
    zt__need(p.step >= 1, name, "step counts from 1, got %lld", (long long)p.step);
    zt__op op;
    op.kind = ZT__OP_ADAMW;
    zt__args_adamw a = {master, m, v, grad, zt__opt(param16), p};
    op.adamw = a;
    zt__launch(s, &op);
}

ZT_API zt_adamw_params zt_adamw_params_default(void) {
    zt_adamw_params p;
    memset(&p, 0, sizeof p);
    p.lr = 1e-3f;
    p.beta1 = 0.9f;
    p.beta2 = 0.999f;
    p.eps = 1e-8f;
    p.weight_decay = 0.01f;
    p.grad_scale = 1.0f;
    p.step = 1;
    return p;
}

ZT_API void zt_sumsq(zt_stream *s, zt_tensor out, zt_tensor x) {
    zt__need_tensor("zt_sumsq", "x", x, ZT__FLOAT, ZT__ANY_SIZE);
    zt__need_tensor("zt_sumsq", "out", out, ZT_F32, 1);
    zt__launch_unary(s, ZT__OP_SUMSQ, out, x);
}

/* >>json (implementation) ---------------------------------------------------------------------- */

/* jsmn finds the tokens; zt checks what jsmn lets through: literals (`tru`, `01`, `1.2.3`), string
   escapes, duplicate keys, and that nothing but whitespace follows the root object. */
#define JSMN_STATIC
#define JSMN_STRICT
#define JSMN_PARENT_LINKS
#include <jsmn.h>

typedef struct zt__json {
    const char *file; /* for messages */
    const char *text;
    int len;
    jsmntok_t *tok;
    int n;
} zt__json;

static void zt__json_where(const zt__json *j, int offset, int *line, int *col) {
    *line = 1;
    *col = 1;
    for (int i = 0; i < offset && i < j->len; i++) {
        if (j->text[i] == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

static zt_result zt__json_error(const zt__json *j, int offset, const char *what) {
    int line, col;
    zt__json_where(j, offset, &line, &col);
    return zt_fail(ZT_ERROR_FORMAT, "%s: malformed JSON at line %d, column %d: %s", j->file, line, col, what);
}

/* index of the token after t's whole subtree */
static int zt__json_skip(const zt__json *j, int t) {
    int end = j->tok[t].end, i = t + 1;
    while (i < j->n && j->tok[i].start < end) i++;
    return i;
}

static int zt__json_is_number(const char *s, int n) {
    int i = 0;
    if (i < n && s[i] == '-') i++;
    if (i >= n) return 0;
    if (s[i] == '0') {
        i++;
    } else if (s[i] >= '1' && s[i] <= '9') {
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    } else {
        return 0;
    }
    if (i < n && s[i] == '.') {
        i++;
        if (i >= n || s[i] < '0' || s[i] > '9') return 0;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) i++;
        if (i >= n || s[i] < '0' || s[i] > '9') return 0;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    }
    return i == n;
}

static int zt__json_eq(const zt__json *j, int t, const char *s) {
    int n = j->tok[t].end - j->tok[t].start;
    return (int)strlen(s) == n && memcmp(j->text + j->tok[t].start, s, (size_t)n) == 0;
}

/* where token t's text begins and ends, quotes included */
static int zt__json_begin(const zt__json *j, int t) { return j->tok[t].start - (j->tok[t].type == JSMN_STRING); }
static int zt__json_end(const zt__json *j, int t) { return j->tok[t].end + (j->tok[t].type == JSMN_STRING); }

/* text[from, to) must be whitespace around exactly one `sep` (or only whitespace when sep is 0) */
static zt_result zt__json_gap(const zt__json *j, int from, int to, char sep, const char *what) {
    int seen = 0;
    for (int i = from; i < to; i++) {
        char c = j->text[i];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n') continue;
        if (sep && c == sep && !seen) {
            seen = 1;
            continue;
        }
        return zt__json_error(j, i, what);
    }
    if (sep && !seen) return zt__json_error(j, to, what);
    return ZT_OK;
}

/* jsmn accepts `{"a": 1,}`, `[1,]` and some missing separators: check the text between tokens */
static zt_result zt__json_check_separators(const zt__json *j) {
    for (int t = 0; t < j->n; t++) {
        const jsmntok_t *k = &j->tok[t];
        if (k->type != JSMN_OBJECT && k->type != JSMN_ARRAY) continue;
        int obj = k->type == JSMN_OBJECT, at = k->start + 1, child = t + 1;
        zt_result r;
        for (int i = 0; i < k->size; i++) {
            if (child >= j->n || j->tok[child].start >= k->end || (obj && (child + 1 >= j->n || j->tok[child + 1].start >= k->end)))
                return zt__json_error(j, k->end - 1, obj ? "a key without a value" : "a missing value");
            if (i > 0 && (r = zt__json_gap(j, at, zt__json_begin(j, child), ',', "expected a comma")) != ZT_OK) return r;
            if (i == 0 && (r = zt__json_gap(j, at, zt__json_begin(j, child), 0, "unexpected character")) != ZT_OK) return r;
            if (obj) {
                if (j->tok[child].type != JSMN_STRING) return zt__json_error(j, j->tok[child].start, "keys must be strings");
                int value = child + 1;
                if ((r = zt__json_gap(j, zt__json_end(j, child), zt__json_begin(j, value), ':', "expected a colon")) != ZT_OK)
                    return r;
                child = value;
            }
            at = zt__json_end(j, child);
            child = zt__json_skip(j, child);
        }
        if ((r = zt__json_gap(j, at, k->end - 1, 0, k->size ? "a comma before the closing bracket, or junk" : "unexpected character")) != ZT_OK)
            return r;
    }
    return ZT_OK;
}

/* qsort has no context argument in C11: the JSON being sorted is set here, on this thread */
static ZT_THREAD_LOCAL const zt__json *zt__json_sorting;
static int zt__json_key_order(const void *pa, const void *pb) {
    const zt__json *j = zt__json_sorting;
    int a = *(const int *)pa, b = *(const int *)pb;
    int na = j->tok[a].end - j->tok[a].start, nb = j->tok[b].end - j->tok[b].start;
    if (na != nb) return na < nb ? -1 : 1;
    return memcmp(j->text + j->tok[a].start, j->text + j->tok[b].start, (size_t)na);
}

static zt_result zt__json_check(const zt__json *j) {
    for (int t = 0; t < j->n; t++) {
        const jsmntok_t *k = &j->tok[t];
        const char *s = j->text + k->start;
        int n = k->end - k->start;
        if (k->type == JSMN_PRIMITIVE) {
            if (!(zt__json_eq(j, t, "true") || zt__json_eq(j, t, "false") || zt__json_eq(j, t, "null") ||
                  zt__json_is_number(s, n)))
                return zt__json_error(j, k->start, "not a number, true, false or null");
        } else if (k->type == JSMN_STRING) {
            for (int i = 0; i < n; i++) {
                unsigned char c = (unsigned char)s[i];
                if (c < 0x20) return zt__json_error(j, k->start + i, "control character inside a string");
                if (c != '\\') continue;
                if (++i >= n) return zt__json_error(j, k->start + i, "unfinished escape");
                if (s[i] == 'u') {
                    for (int h = 1; h <= 4; h++)
                        if (i + h >= n || !strchr("0123456789abcdefABCDEF", s[i + h]) || s[i + h] == 0)
                            return zt__json_error(j, k->start + i, "\\u needs four hex digits");
                    i += 4;
                } else if (!strchr("\"\\/bfnrt", s[i]) || s[i] == 0) {
                    return zt__json_error(j, k->start + i, "unknown escape");
                }
            }
        } else if (k->type == JSMN_OBJECT && k->size > 1) {
            /* keys must be unique: sorted, so that a header of many thousand tensors stays fast */
            int *keys = (int *)malloc(sizeof(int) * (size_t)k->size); /* parse time, never during a step */
            if (!keys) return zt_fail(ZT_ERROR_MEMORY, "%s: out of memory checking keys", j->file);
            for (int a = 0, key = t + 1; a < k->size; a++, key = zt__json_skip(j, key + 1)) keys[a] = key;
            zt__json_sorting = j;
            qsort(keys, (size_t)k->size, sizeof(int), zt__json_key_order);
            zt_result r = ZT_OK;
            for (int a = 1; a < k->size && r == ZT_OK; a++) {
                if (zt__json_key_order(&keys[a - 1], &keys[a]) != 0) continue;
                int dup = keys[a - 1] > keys[a] ? keys[a - 1] : keys[a]; /* report the later one */
                int kn = j->tok[dup].end - j->tok[dup].start;
                char msg[160];
                snprintf(msg, sizeof msg, "duplicate key \"%.*s\"", kn < 100 ? kn : 100, j->text + j->tok[dup].start);
                r = zt__json_error(j, zt__json_begin(j, dup), msg);
            }
            free(keys);
            if (r != ZT_OK) return r;
        }
    }
    return ZT_OK;
}

/* Parses text (len bytes, which must hold no NUL) into tokens from arena a. */
static zt_result zt__json_parse(zt__json *j, zt_arena *a, const char *file, const char *text, size_t len) {
    memset(j, 0, sizeof *j);
    j->file = file;
    j->text = text;
    if (len > (size_t)0x7fffffff) return zt_fail(ZT_ERROR_FORMAT, "%s: too large for a JSON file", file);
    j->len = (int)len;
    if (memchr(text, 0, len)) return zt__json_error(j, (int)((const char *)memchr(text, 0, len) - text), "NUL byte");
    jsmn_parser p;
    jsmn_init(&p);
    int n = jsmn_parse(&p, text, len, NULL, 0);
    if (n < 0) return zt__json_error(j, (int)p.pos, n == JSMN_ERROR_PART ? "unexpected end of file" : "invalid character");
    if (n == 0) return zt__json_error(j, 0, "empty file");
    j->tok = (jsmntok_t *)zt_arena_try_push(a, sizeof(jsmntok_t) * (size_t)n, ZT_ALIGNOF(jsmntok_t));
    if (!j->tok)
        return zt_fail(ZT_ERROR_FORMAT, "%s: %d JSON tokens are more than zt reads in one file (%zu bytes set aside)",
                       file, n, a->cap);
    jsmn_init(&p);
    j->n = jsmn_parse(&p, text, len, j->tok, (unsigned)n); /* counting does not check nesting: this does */
    if (j->n < 0)
        return zt__json_error(j, (int)p.pos, j->n == JSMN_ERROR_PART ? "unexpected end of file" : "invalid character");
    if (j->tok[0].type != JSMN_OBJECT) return zt__json_error(j, j->tok[0].start, "the file must hold one object");
    for (int i = j->tok[0].end; i < j->len; i++)
        if (!strchr(" \t\r\n", text[i])) return zt__json_error(j, i, "text after the end of the object");
    zt_result r = zt__json_check_separators(j);
    if (r != ZT_OK) return r;
    return zt__json_check(j);
}

/* the value token of key in object obj, or -1 */
static int zt__json_get(const zt__json *j, int obj, const char *key) {
    if (obj < 0 || j->tok[obj].type != JSMN_OBJECT) return -1;
    int t = obj + 1;
    for (int i = 0; i < j->tok[obj].size; i++) {
        if (zt__json_eq(j, t, key)) return t + 1;
        t = zt__json_skip(j, t + 1);
    }
    return -1;
}

static int zt__json_is_null(const zt__json *j, int t) {
    return t >= 0 && j->tok[t].type == JSMN_PRIMITIVE && zt__json_eq(j, t, "null");
}

static zt_result zt__json_type_error(const zt__json *j, int t, const char *key, const char *expected) {
    int n = j->tok[t].end - j->tok[t].start;
    const char *q = j->tok[t].type == JSMN_STRING ? "\"" : "";
    const char *what = j->tok[t].type == JSMN_OBJECT ? "an object" : j->tok[t].type == JSMN_ARRAY ? "an array" : NULL;
    if (what) return zt_fail(ZT_ERROR_INVALID, "%s: \"%s\" must be %s, found %s", j->file, key, expected, what);
    return zt_fail(ZT_ERROR_INVALID, "%s: \"%s\" must be %s, found %s%.*s%s%s", j->file, key, expected, q,
                   n < 60 ? n : 60, j->text + j->tok[t].start, n < 60 ? "" : "...", q);
}

/* a number (integers included); t < 0 leaves *out as it is */
static zt_result zt__json_number(const zt__json *j, int t, const char *key, double *out) {
    if (t < 0) return ZT_OK;
    if (j->tok[t].type != JSMN_PRIMITIVE || !zt__json_is_number(j->text + j->tok[t].start, j->tok[t].end - j->tok[t].start))
        return zt__json_type_error(j, t, key, "a number");
    char buf[64];
    int n = j->tok[t].end - j->tok[t].start;
    if (n >= (int)sizeof buf) return zt__json_type_error(j, t, key, "a number of fewer than 64 characters");
    memcpy(buf, j->text + j->tok[t].start, (size_t)n);
    buf[n] = 0;
    *out = strtod(buf, NULL);
    return ZT_OK;
}

static zt_result zt__json_int(const zt__json *j, int t, const char *key, int64_t *out) {
    double v = 0;
    if (t < 0) return ZT_OK;
    if (j->tok[t].type != JSMN_PRIMITIVE || zt__json_number(j, t, key, &v) != ZT_OK || v != floor(v) ||
        fabs(v) > 9007199254740992.0)
        return zt__json_type_error(j, t, key, "an integer");
    *out = (int64_t)v;
    return ZT_OK;
}

static zt_result zt__json_bool(const zt__json *j, int t, const char *key, int *out) {
    if (t < 0) return ZT_OK;
    if (zt__json_eq(j, t, "true") && j->tok[t].type == JSMN_PRIMITIVE) *out = 1;
    else if (zt__json_eq(j, t, "false") && j->tok[t].type == JSMN_PRIMITIVE) *out = 0;
    else return zt__json_type_error(j, t, key, "true or false");
    return ZT_OK;
}

/* code point c as UTF-8 into o: its length */
static int zt__put_utf8(char *o, uint32_t c) {
    if (c < 0x80) return o[0] = (char)c, 1;
    if (c < 0x800) return o[0] = (char)(0xc0 | c >> 6), o[1] = (char)(0x80 | (c & 0x3f)), 2;
    if (c < 0x10000) return o[0] = (char)(0xe0 | c >> 12), o[1] = (char)(0x80 | (c >> 6 & 0x3f)), o[2] = (char)(0x80 | (c & 0x3f)), 3;
    o[0] = (char)(0xf0 | c >> 18), o[1] = (char)(0x80 | (c >> 12 & 0x3f)), o[2] = (char)(0x80 | (c >> 6 & 0x3f));
    o[3] = (char)(0x80 | (c & 0x3f));
    return 4;
}

/* a JSON string's text, decoded (surrogate pairs joined), into out (cap bytes); its length or -1 */
static int64_t zt__json_text(const zt__json *j, int tk, char *out, size_t cap) {
    if (tk < 0 || j->tok[tk].type != JSMN_STRING) return -1;
    const char *s = j->text + j->tok[tk].start;
    size_t n = (size_t)(j->tok[tk].end - j->tok[tk].start), o = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t c = (uint8_t)s[i];
        char enc[4] = {(char)c, 0, 0, 0};
        int len = 1;
        if (c != '\\') {
            enc[0] = (char)c;
        } else if (i + 1 < n) {
            char e = s[++i];
            if (e == 'u' && i + 4 < n) {
                char hex[5] = {s[i + 1], s[i + 2], s[i + 3], s[i + 4], 0};
                c = (uint32_t)strtoul(hex, NULL, 16);
                i += 4;
                if (c >= 0xd800 && c < 0xdc00 && i + 6 < n && s[i + 1] == '\\' && s[i + 2] == 'u') {
                    char lo[5] = {s[i + 3], s[i + 4], s[i + 5], s[i + 6], 0};
                    uint32_t l = (uint32_t)strtoul(lo, NULL, 16);
                    if (l >= 0xdc00 && l < 0xe000) c = 0x10000 + ((c - 0xd800) << 10) + (l - 0xdc00), i += 6;
                }
            } else {
                c = e == 'b' ? '\b' : e == 'f' ? '\f' : e == 'n' ? '\n' : e == 'r' ? '\r' : e == 't' ? '\t' : (uint8_t)e;
            }
            len = zt__put_utf8(enc, c);
        }
        if (o + (size_t)len > cap) return -1;
        memcpy(out + o, enc, (size_t)len);
        o += (size_t)len;
    }
    return (int64_t)o;
}

/* a string, escapes decoded (zt__json_text), NUL-terminated; t < 0 leaves out as it is */
static zt_result zt__json_string(const zt__json *j, int t, const char *key, char *out, size_t size) {
    if (t < 0) return ZT_OK;
    if (j->tok[t].type != JSMN_STRING) return zt__json_type_error(j, t, key, "a string");
    int64_t n = zt__json_text(j, t, out, size - 1);
    if (n < 0) return zt__json_type_error(j, t, key, "a shorter string");
    if (memchr(out, 0, (size_t)n)) return zt__json_type_error(j, t, key, "a string without NUL characters");
    out[n] = 0;
    return ZT_OK;
}

/* room for the tokens of len bytes of JSON: every token takes at least two characters */
static size_t zt__json_token_bytes(size_t len) { return sizeof(jsmntok_t) * (len / 2 + 16) + 64; }

/* Setup-time memory for reading one file (its text or its JSON tokens): one allocation, which the
   caller frees; without it, the arena is empty and the first push fails with a message. */
static void *zt__setup_arena(zt_arena *a, const char *name, size_t bytes) {
    void *m = NULL;
    if (posix_memalign(&m, 64, bytes) != 0) m = NULL;
    zt_arena_init(a, name, m, m ? bytes : 0);
    return m;
}

/* Reads a whole file into arena memory, NUL-terminated. */
static zt_result zt__read_file(zt_arena *a, const char *path, char **text, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return zt_fail(ZT_ERROR_IO, "cannot open %s: %s", path, strerror(errno));
    if (fseek(f, 0, SEEK_END) != 0) {
        fclose(f);
        return zt_fail(ZT_ERROR_IO, "cannot read %s: not a regular file", path);
    }
    long n = ftell(f);
    if (n < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return zt_fail(ZT_ERROR_IO, "cannot read %s: not a regular file", path);
    }
    char *buf = (char *)zt_arena_try_push(a, (size_t)n + 1, 16);
    if (!buf) {
        fclose(f);
        return zt_fail(ZT_ERROR_MEMORY, "%s (%ld bytes) does not fit in memory set aside for reading it", path, n);
    }
    size_t got = fread(buf, 1, (size_t)n, f);
    fclose(f);
    if (got != (size_t)n) return zt_fail(ZT_ERROR_IO, "cannot read %s: got %zu of %ld bytes", path, got, n);
    buf[n] = 0;
    *text = buf;
    *len = (size_t)n;
    return ZT_OK;
}

/* >>model (implementation) --------------------------------------------------------------------- */

/* keys that change the maths: zt refuses what it does not implement rather than train something else */
static zt_result zt__config_refuse(const zt__json *j, const char *key, const char *why) {
    return zt_fail(ZT_ERROR_UNSUPPORTED, "%s: \"%s\" %s; zt does not implement it", j->file, key, why);
}

static zt_result zt__config_gpt2(zt_model_config *c, const zt__json *j) {
    zt_result r = ZT_OK;
    int64_t n_inner = 0;
    double eps = 1e-5, std = 0.02;
    int scale_weights = 1, by_layer = 0, upcast = 0, cross = 0;
    char act[32] = "gelu_new";
    if ((r = zt__json_int(j, zt__json_get(j, 0, "n_layer"), "n_layer", &c->n_layer)) ||
        (r = zt__json_int(j, zt__json_get(j, 0, "n_head"), "n_head", &c->n_head)) ||
        (r = zt__json_int(j, zt__json_get(j, 0, "n_embd"), "n_embd", &c->hidden)) ||
        (r = zt__json_int(j, zt__json_get(j, 0, "n_positions"), "n_positions", &c->max_positions)) ||
        (r = zt__json_int(j, zt__json_get(j, 0, "vocab_size"), "vocab_size", &c->vocab)) ||
        (r = zt__json_number(j, zt__json_get(j, 0, "layer_norm_epsilon"), "layer_norm_epsilon", &eps)) ||
        (r = zt__json_number(j, zt__json_get(j, 0, "initializer_range"), "initializer_range", &std)) ||
        (r = zt__json_bool(j, zt__json_get(j, 0, "tie_word_embeddings"), "tie_word_embeddings", &c->tied_embeddings)) ||
        (r = zt__json_string(j, zt__json_get(j, 0, "activation_function"), "activation_function", act, sizeof act)) ||
        (r = zt__json_bool(j, zt__json_get(j, 0, "scale_attn_weights"), "scale_attn_weights", &scale_weights)) ||
        (r = zt__json_bool(j, zt__json_get(j, 0, "scale_attn_by_inverse_layer_idx"), "scale_attn_by_inverse_layer_idx", &by_layer)) ||
        (r = zt__json_bool(j, zt__json_get(j, 0, "reorder_and_upcast_attn"), "reorder_and_upcast_attn", &upcast)) ||
        (r = zt__json_bool(j, zt__json_get(j, 0, "add_cross_attention"), "add_cross_attention", &cross)))
        return r;
    int t = zt__json_get(j, 0, "n_inner");
    if (!zt__json_is_null(j, t) && (r = zt__json_int(j, t, "n_inner", &n_inner))) return r;
    if (n_inner < 0) return zt_fail(ZT_ERROR_INVALID, "%s: \"n_inner\" must be positive or null, found %lld", j->file, (long long)n_inner);
    if (strcmp(act, "gelu_new") != 0 && strcmp(act, "gelu_pytorch_tanh") != 0)
        return zt_fail(ZT_ERROR_UNSUPPORTED, "%s: \"activation_function\" is \"%s\"; zt implements gelu_new "
                       "(the tanh approximation) only", j->file, act);
    if (!scale_weights) return zt__config_refuse(j, "scale_attn_weights", "is false");
    if (by_layer) return zt__config_refuse(j, "scale_attn_by_inverse_layer_idx", "is true");
    if (upcast) return zt__config_refuse(j, "reorder_and_upcast_attn", "is true");
    if (cross) return zt__config_refuse(j, "add_cross_attention", "is true");
    c->n_kv_head = c->n_head;
    c->intermediate = n_inner > 0 ? n_inner : 4 * c->hidden;
    c->norm_eps = (float)eps;
    c->init_std = (float)std;
    c->qkv_bias = c->out_bias = 1;
    return ZT_OK;
}

/* Which layers attend within sliding_window: every layer (Mistral, Phi-3); with use_sliding_window, Qwen2's
   and Qwen3's from max_window_layers on; with a pattern P (Gemma 2: 2, Gemma 3: 6), all but every P-th layer.
   Where "layer_types" is written out (transformers 5 writes it), it names them ("sliding_attention"). */
static zt_result zt__config_windows(zt_model_config *c, const zt__json *j, int use_window, int64_t pattern, int every) {
    int64_t from = 0, layers = 0, n = 0;
    int lt = zt__json_get(j, 0, "layer_types"), t = zt__json_get(j, 0, "max_window_layers");
    zt_result r = ZT_OK;
    memset(c->windowed, 0, sizeof c->windowed);
    if (!pattern && !every && !use_window) c->sliding_window = 0; /* Qwen: no window without use_sliding_window */
    if (c->sliding_window <= 0) return c->sliding_window = 0, ZT_OK;
    if ((r = zt__json_int(j, zt__json_get(j, 0, "num_hidden_layers"), "num_hidden_layers", &layers))) return r;
    if (layers <= 0 || layers > 64 * 64) return ZT_OK; /* refused later, with the other sizes */
    if (!pattern && !every && !zt__json_is_null(j, t) && (r = zt__json_int(j, t, "max_window_layers", &from))) return r;
    if (!every && lt >= 0 && j->tok[lt].type == JSMN_ARRAY) {
        for (int k = 0, it = lt + 1; k < j->tok[lt].size; k++, it = zt__json_skip(j, it), n++) {
            char kind[32] = "";
            if ((r = zt__json_string(j, it, "layer_types", kind, sizeof kind))) return r;
            if (strcmp(kind, "sliding_attention") && strcmp(kind, "full_attention"))
                return zt_fail(ZT_ERROR_UNSUPPORTED, "%s: layer_types[%d] is \"%s\"; zt knows full_attention and "
                               "sliding_attention", j->file, k, kind);
            if (k < layers && strcmp(kind, "sliding_attention") == 0) c->windowed[k / 64] |= (uint64_t)1 << (k % 64);
        }
        if (n != layers)
            return zt_fail(ZT_ERROR_INVALID, "%s: \"layer_types\" names %lld layers; num_hidden_layers is %lld", j->file,
                           (long long)n, (long long)layers);
    } else {
        for (int64_t l = 0; l < layers; l++) {
            int on = every || (pattern ? (l + 1) % pattern != 0 : use_window && l >= from);
            if (on) c->windowed[l / 64] |= (uint64_t)1 << (l % 64);
        }
    }
    uint64_t any = 0;
    for (int w = 0; w < 64; w++) any |= c->windowed[w];
    if (!any) c->sliding_window = 0;
    return ZT_OK;
}

/* Mixtral, Qwen2-MoE and Qwen3-MoE: the experts' count, size and choice, Qwen2-MoE's shared expert, and which
   layers have them (the Qwens: every decoder_sparse_step-th but those in mlp_only_layers, as transformers builds
   them). output_router_logits adds the routers' load-balancing loss times router_aux_loss_coef, as transformers'
   training does; Mixtral's router_jitter_noise multiplies the sparse layers' inputs by noise in training (the
   Qwens' configs carry the key, which their models do not read). */
static zt_result zt__config_moe(zt_model_config *c, const zt__json *j) {
    int mixtral = strcmp(c->model_type, "mixtral") == 0, qwen2 = strcmp(c->model_type, "qwen2_moe") == 0;
    int64_t step = 1, layers = c->n_layer;
    int logits_out = 0;
    double jitter = 0, coef = 0.001;
    zt_result r = ZT_OK;
    /* the transformers configs' defaults */
    c->n_experts = mixtral ? 8 : qwen2 ? 60 : 128, c->experts_per_token = mixtral ? 2 : qwen2 ? 4 : 8;
    c->expert_intermediate = mixtral ? c->intermediate : qwen2 ? 1408 : 768, c->norm_topk = mixtral;
    c->shared_intermediate = qwen2 ? 5632 : 0;
    if (qwen2 && (r = zt__json_int(j, zt__json_get(j, 0, "shared_expert_intermediate_size"),
                                   "shared_expert_intermediate_size", &c->shared_intermediate)))
        return r;
    if (qwen2 && (c->shared_intermediate < 1 || c->shared_intermediate > 200000))
        return zt_fail(ZT_ERROR_INVALID, "%s: \"shared_expert_intermediate_size\" must be 1 to 200000, found %lld",
                       j->file, (long long)c->shared_intermediate);
    int t = zt__json_get(j, 0, "num_local_experts");
    if (t < 0) t = zt__json_get(j, 0, "num_experts"); /* the hub's Qwen3-MoE configs */
    if ((r = zt__json_int(j, t, "num_local_experts", &c->n_experts)) ||
        (r = zt__json_int(j, zt__json_get(j, 0, "num_experts_per_tok"), "num_experts_per_tok", &c->experts_per_token)) ||
        (!mixtral && (r = zt__json_int(j, zt__json_get(j, 0, "moe_intermediate_size"), "moe_intermediate_size",
                                       &c->expert_intermediate))) ||
        (!mixtral && (r = zt__json_bool(j, zt__json_get(j, 0, "norm_topk_prob"), "norm_topk_prob", &c->norm_topk))) ||
        (!mixtral && (r = zt__json_int(j, zt__json_get(j, 0, "decoder_sparse_step"), "decoder_sparse_step", &step))) ||
        (r = zt__json_bool(j, zt__json_get(j, 0, "output_router_logits"), "output_router_logits", &logits_out)))
        return r;
    t = zt__json_get(j, 0, "router_jitter_noise"); /* read by transformers' Mixtral alone (the Qwens keep it unused) */
    if (!zt__json_is_null(j, t) && (r = zt__json_number(j, t, "router_jitter_noise", &jitter))) return r;
    t = zt__json_get(j, 0, "router_aux_loss_coef");
    if (!zt__json_is_null(j, t) && (r = zt__json_number(j, t, "router_aux_loss_coef", &coef))) return r;
    if (!(coef >= 0 && coef <= 1e6))
        return zt_fail(ZT_ERROR_INVALID, "%s: \"router_aux_loss_coef\" must be 0 or more (at most 1e6), found %g",
                       j->file, coef);
    c->router_aux_coef = logits_out ? (float)coef : 0.0f;
    if (!(jitter >= 0 && jitter < 1))
        return zt_fail(ZT_ERROR_INVALID, "%s: \"router_jitter_noise\" must be 0 (none) or more, below 1, found %g", j->file,
                       jitter);
    if (!mixtral && jitter != 0)
        zt_log(ZT_LOG_WARN, "%s: router_jitter_noise %g is left out, as transformers' %s leaves it (Mixtral's alone "
               "adds it)", j->file, jitter, c->model_type);
    c->router_jitter = mixtral ? (float)jitter : 0.0f;
    if (c->n_experts < 1 || c->n_experts > ZT_MOE_MAX_EXPERTS)
        return zt_fail(ZT_ERROR_UNSUPPORTED, "%s: \"num_local_experts\" is %lld; zt takes 1 to %d experts", j->file,
                       (long long)c->n_experts, ZT_MOE_MAX_EXPERTS);
    if (c->experts_per_token < 1 || c->experts_per_token > ZT__MIN(c->n_experts, ZT_MOE_MAX_K))
        return zt_fail(ZT_ERROR_INVALID, "%s: \"num_experts_per_tok\" is %lld; it must be 1 to the %lld experts (zt "
                       "takes at most %d)", j->file, (long long)c->experts_per_token, (long long)c->n_experts, ZT_MOE_MAX_K);
    if (c->expert_intermediate < 1 || c->expert_intermediate > 200000)
        return zt_fail(ZT_ERROR_INVALID, "%s: the experts' intermediate size must be 1 to 200000, found %lld", j->file,
                       (long long)c->expert_intermediate);
    if (step < 1) return zt_fail(ZT_ERROR_INVALID, "%s: \"decoder_sparse_step\" must be at least 1, found %lld", j->file,
                                 (long long)step);
    memset(c->sparse, 0, sizeof c->sparse);
    t = zt__json_get(j, 0, "mlp_only_layers");
    int dense = !mixtral && t >= 0 && !zt__json_is_null(j, t);
    if (dense && j->tok[t].type != JSMN_ARRAY) return zt__json_type_error(j, t, "mlp_only_layers", "a list of layer numbers");
    if (layers <= 0 || layers > 64 * 64) return ZT_OK; /* refused later, with the other sizes */
    for (int64_t l = 0; l < layers; l++)
        if ((l + 1) % step == 0) c->sparse[l / 64] |= (uint64_t)1 << (l % 64);
    if (dense) {
        for (int k = 0, it = t + 1; k < j->tok[t].size; k++, it = zt__json_skip(j, it)) {
            int64_t l = -1;
            if ((r = zt__json_int(j, it, "mlp_only_layers", &l))) return r;
            if (l >= 0 && l < layers) c->sparse[l / 64] &= ~((uint64_t)1 << (l % 64)); /* transformers ignores others */
        }
    }
    return ZT_OK;
}

static int zt__layer_sparse(const zt_model_config *c, int64_t layer) {
    return c->n_experts > 0 && layer >= 0 && layer < 64 * 64 && (c->sparse[layer / 64] >> (layer % 64) & 1);
}

static int64_t zt__sparse_layers(const zt_model_config *c) {
    int64_t n = 0;
    for (int64_t l = 0; l < c->n_layer; l++) n += zt__layer_sparse(c, l);
    return n;
}

/* The routers' tally of a micro-batch in zt_batch.shared, for the load-balancing loss: by layer (dense layers'
   rows stay 0), each expert's choices, then each expert's probabilities summed over the tokens. */
static size_t zt__tally_bytes(const zt_model_config *c) {
    return c->n_experts > 0 && c->router_aux_coef > 0 ? (size_t)(c->n_layer * c->n_experts) * 8 : 0;
}
static int32_t *zt__tally_counts(const zt_model_config *c, const zt_batch *b, int64_t layer) {
    return (int32_t *)b->shared + layer * c->n_experts;
}
static float *zt__tally_probs(const zt_model_config *c, const zt_batch *b, int64_t layer) {
    return (float *)((int32_t *)b->shared + c->n_layer * c->n_experts) + layer * c->n_experts;
}

/* transformers' load_balancing_loss_func, times the coefficient: E * sum over experts of f_e P_e, f_e the share of
   the sparse layers' token rows that chose expert e (the shares sum to k) and P_e its mean probability there */
static float zt__balance_loss(const zt_model_config *c, const zt_batch *b) {
    int64_t E = c->n_experts;
    double rows = (double)zt__sparse_layers(c) * (double)(b->B * b->T), sum = 0.0;
    for (int64_t e = 0; e < E; e++) {
        double n = 0.0, p = 0.0;
        for (int64_t l = 0; l < c->n_layer; l++)
            if (zt__layer_sparse(c, l)) n += zt__tally_counts(c, b, l)[e], p += zt__tally_probs(c, b, l)[e];
        sum += n / rows * (p / rows);
    }
    return (float)(c->router_aux_coef * (double)E * sum);
}

static int zt__layer_windowed(const zt_model_config *c, int64_t layer) {
    return c->sliding_window > 0 && layer >= 0 && layer < 64 * 64 && (c->windowed[layer / 64] >> (layer % 64) & 1);
}

/* transformers' original_max_position_embeddings for yarn and longrope: the config's own before the rope section's,
   else max_position_embeddings; Phi-3's config always has its own (4096 unless given), which wins */
static zt_result zt__rope_original(const zt_model_config *c, const zt__json *j, int t, double *out) {
    zt_result r;
    int top = zt__json_get(j, 0, "original_max_position_embeddings");
    *out = (double)c->max_positions;
    if (strcmp(c->model_type, "phi3") == 0) *out = 4096;
    else if ((r = zt__json_number(j, zt__json_get(j, t, "original_max_position_embeddings"),
                                  "original_max_position_embeddings", out)))
        return r;
    if (top >= 0 && !zt__json_is_null(j, top) &&
        (r = zt__json_number(j, top, "original_max_position_embeddings", out)))
        return r;
    if (!(*out >= 1 && *out < 1e9))
        return zt_fail(ZT_ERROR_INVALID, "%s: original_max_position_embeddings must be 1 or more, found %g", j->file, *out);
    return ZT_OK;
}

/* longrope's short_factor or long_factor: one positive number for each of the head's pairs */
static zt_result zt__rope_pair_factors(const zt__json *j, int t, const char *where, const char *key, int64_t pairs,
                                       float *out) {
    int a = zt__json_get(j, t, key);
    if (a < 0 || j->tok[a].type != JSMN_ARRAY || j->tok[a].size != pairs || pairs > ZT_ROPE_MAX_PAIRS)
        return zt_fail(ZT_ERROR_INVALID, "%s: %s of type longrope needs \"%s\", a list of %lld numbers (one for each "
                       "pair of the head's dimensions; at most %d)", j->file, where, key, (long long)pairs, ZT_ROPE_MAX_PAIRS);
    zt_result r;
    for (int k = 0, it = a + 1; k < pairs; k++, it = zt__json_skip(j, it)) {
        double v = 0;
        if ((r = zt__json_number(j, it, key, &v))) return r;
        if (!(v > 0 && isfinite(v)))
            return zt_fail(ZT_ERROR_INVALID, "%s: %s.%s[%d] must be a positive number, found %g", j->file, where, key, k, v);
        out[k] = (float)v;
    }
    return ZT_OK;
}

/* One rope section, t (absent or null: nothing): its type (default, llama3, linear, dynamic, yarn or longrope) into *sc, and its
   rope_theta (where theta is given) and partial_rotary_factor. */
static zt_result zt__config_rope(zt_model_config *c, const zt__json *j, int t, const char *where, double *theta,
                                 zt_rope_scaling *sc, double *partial) {
    zt_result r = ZT_OK;
    if (t < 0 || zt__json_is_null(j, t)) return ZT_OK;
    char type[32] = "default", key[96];
    int ty = zt__json_get(j, t, "rope_type");
    if (ty < 0) ty = zt__json_get(j, t, "type");
    if ((r = zt__json_string(j, ty, "rope_type", type, sizeof type))) return r;
    snprintf(key, sizeof key, "%s.rope_theta", where);
    if (theta && (r = zt__json_number(j, zt__json_get(j, t, "rope_theta"), key, theta))) return r;
    if ((r = zt__json_number(j, zt__json_get(j, t, "partial_rotary_factor"), "partial_rotary_factor", partial))) return r;
    if (strcmp(c->model_type, "phi3") == 0 && (strcmp(type, "su") == 0 || strcmp(type, "yarn") == 0))
        strcpy(type, "longrope"); /* Phi-3's old names for it, as its transformers config maps them */
    if (strcmp(c->model_type, "phi3") == 0 && strcmp(type, "default") != 0 && strcmp(type, "longrope") != 0)
        return zt_fail(ZT_ERROR_INVALID, "%s: %s of type \"%s\": Phi-3 takes default and longrope (as transformers' "
                       "Phi3Config)", j->file, where, type);
    int llama3 = strcmp(type, "llama3") == 0, linear = strcmp(type, "linear") == 0;
    if (llama3 || linear) {
        double v[4] = {0, 0, 0, 0};
        const char *keys[4] = {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"};
        for (int k = 0; k < (llama3 ? 4 : 1); k++) {
            int vt = zt__json_get(j, t, keys[k]);
            if (vt < 0) return zt_fail(ZT_ERROR_INVALID, "%s: %s of type %s needs \"%s\"", j->file, where, type, keys[k]);
            if ((r = zt__json_number(j, vt, keys[k], &v[k]))) return r;
        }
        if (linear && !(v[0] > 0 && isfinite(v[0])))
            return zt_fail(ZT_ERROR_INVALID, "%s: %s needs factor > 0, found %g", j->file, where, v[0]);
        if (llama3 && !(v[0] > 0 && v[1] > 0 && v[2] > v[1] && v[3] > 0))
            return zt_fail(ZT_ERROR_INVALID, "%s: %s needs factor > 0, 0 < low_freq_factor < high_freq_factor and "
                           "original_max_position_embeddings > 0", j->file, where);
        memset(sc, 0, sizeof *sc);
        sc->factor = (float)v[0], sc->low_freq_factor = (float)v[1];
        sc->high_freq_factor = (float)v[2], sc->original_max_positions = (float)v[3];
        sc->linear = linear;
    } else if (strcmp(type, "yarn") == 0) { /* transformers' _compute_yarn_parameters, with its defaults */
        double factor = 0, original = 0, attention = 0, fast = 0, slow = 0, mscale = 0, mscale_all = 0;
        int truncate = 1, tt = zt__json_get(j, t, "truncate");
        const char *keys[6] = {"factor", "attention_factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim"};
        double *vals[6] = {&factor, &attention, &fast, &slow, &mscale, &mscale_all};
        if (zt__json_get(j, t, "factor") < 0) /* transformers reads it (a null: inferred below) */
            return zt_fail(ZT_ERROR_INVALID, "%s: %s of type yarn needs \"factor\"", j->file, where);
        for (int k = 0; k < 6; k++) {
            int vt = zt__json_get(j, t, keys[k]);
            if (vt >= 0 && !zt__json_is_null(j, vt) && (r = zt__json_number(j, vt, keys[k], vals[k]))) return r;
        }
        if ((r = zt__rope_original(c, j, t, &original))) return r;
        if (factor == 0) factor = (double)c->max_positions / original; /* as transformers infers it */
        if (tt >= 0 && zt__json_is_null(j, tt)) truncate = 0; /* a null is false to transformers' "if truncate" */
        else if ((r = zt__json_bool(j, tt, "truncate", &truncate))) return r;
        if (!(factor > 0 && isfinite(factor) && original >= 1 && original < 1e9 && attention >= 0 && fast >= 0 &&
              slow >= 0 && isfinite(attention) && isfinite(fast) && isfinite(slow)))
            return zt_fail(ZT_ERROR_INVALID, "%s: %s of type yarn needs factor > 0, original_max_position_embeddings >= 1 "
                           "and attention_factor, beta_fast, beta_slow >= 0", j->file, where);
        if (attention == 0) { /* yarn_get_mscale: 0.1 m ln(factor) + 1 (1 up to factor 1); DeepSeek's ratio of two */
            double ln = factor > 1 ? log(factor) : 0;
            attention = mscale > 0 && mscale_all > 0 ? (0.1 * mscale * ln + 1) / (0.1 * mscale_all * ln + 1) : 0.1 * ln + 1;
        }
        memset(sc, 0, sizeof *sc);
        sc->factor = (float)factor, sc->original_max_positions = (float)original, sc->yarn = 1;
        sc->beta_fast = fast > 0 ? fast : 32.0, sc->beta_slow = slow > 0 ? slow : 1.0;
        sc->truncate = truncate, sc->attention_factor = (float)attention;
    } else if (strcmp(type, "longrope") == 0) { /* transformers' _compute_longrope_parameters */
        double factor = 0, original = 0, attention = 0;
        int64_t pairs = (int64_t)((double)(c->head_dim > 0 ? c->head_dim : c->n_head > 0 ? c->hidden / c->n_head : 0) *
                                  *partial) / 2; /* the rotated part's */
        int ft = zt__json_get(j, t, "factor"), at = zt__json_get(j, t, "attention_factor");
        if ((ft >= 0 && !zt__json_is_null(j, ft) && (r = zt__json_number(j, ft, "factor", &factor))) ||
            (at >= 0 && !zt__json_is_null(j, at) && (r = zt__json_number(j, at, "attention_factor", &attention))) ||
            (r = zt__rope_original(c, j, t, &original)) ||
            (r = zt__rope_pair_factors(j, t, where, "short_factor", pairs, c->rope_short)) ||
            (r = zt__rope_pair_factors(j, t, where, "long_factor", pairs, c->rope_long)))
            return r;
        if (factor == 0) factor = (double)c->max_positions / original;
        if (!(factor > 0 && isfinite(factor) && attention >= 0 && isfinite(attention)))
            return zt_fail(ZT_ERROR_INVALID, "%s: %s of type longrope needs factor > 0 and attention_factor >= 0",
                           j->file, where);
        if (attention == 0) attention = factor <= 1 ? 1.0 : sqrt(1 + log(factor) / log(original));
        memset(sc, 0, sizeof *sc);
        sc->factor = (float)factor, sc->original_max_positions = (float)original, sc->attention_factor = (float)attention;
        c->longrope = 1;
    } else if (strcmp(type, "dynamic") == 0) {
        /* transformers' dynamic NTK rope: theta times ((factor s / max_position_embeddings) - (factor - 1))^(d/(d-2))
           at a batch of s > max_position_embeddings positions, theta itself up to there. zt's rows never pass
           max_position_embeddings (zt_init refuses longer ones), so it is the plain rope; factor is checked alone. */
        double factor = 0;
        int ft = zt__json_get(j, t, "factor");
        if (ft < 0) return zt_fail(ZT_ERROR_INVALID, "%s: %s of type dynamic needs \"factor\"", j->file, where);
        if ((r = zt__json_number(j, ft, "factor", &factor))) return r;
        if (!(factor > 0 && isfinite(factor)))
            return zt_fail(ZT_ERROR_INVALID, "%s: %s of type dynamic needs factor > 0, found %g", j->file, where, factor);
        memset(sc, 0, sizeof *sc);
    } else if (strcmp(type, "default") != 0) {
        return zt_fail(ZT_ERROR_UNSUPPORTED, "%s: \"%s\" of type \"%s\" is not implemented in zt (default, llama3, "
                       "linear, dynamic, yarn and longrope are)", j->file, where, type);
    }
    return ZT_OK;
}

/* Gemma (version 1), Gemma 2 and Gemma 3: embeddings times sqrt(hidden), norms of (1 + weight), a GeGLU MLP;
   from Gemma 2 on, norms on the attention's and the MLP's outputs, its own attention scale, capped logits and
   (Gemma 2's only: Gemma 3's attention does not read the key) capped scores. act: hidden_act as read
   (hidden_activation, where given, names it instead). */
static zt_result zt__config_gemma(zt_model_config *c, const zt__json *j, char *act, int version) {
    int gemma2 = version >= 2;
    zt_result r = ZT_OK;
    int t = zt__json_get(j, 0, "hidden_activation");
    if (t >= 0 && !zt__json_is_null(j, t) && (r = zt__json_string(j, t, "hidden_activation", act, 32))) return r;
    if (!gemma2 && strcmp(act, "gelu") == 0) /* transformers' rule for Gemma's first configs */
        snprintf(act, 32, "gelu_pytorch_tanh");
    if (strcmp(act, "gelu_pytorch_tanh") && strcmp(act, "gelu_new"))
        return zt_fail(ZT_ERROR_UNSUPPORTED, "%s: the activation is \"%s\"; zt implements Gemma's gelu_pytorch_tanh",
                       j->file, act);
    c->geglu = 1;
    c->norm_offset = 1.0f;
    c->embed_scale = (float)sqrt((double)c->hidden);
    if (!gemma2) return ZT_OK;
    double scalar = 256, attn_cap = version == 2 ? 50 : 0, logit_cap = version == 2 ? 30 : 0;
    int bidirectional = 0;
    struct { const char *key; double *v; } num[] = {{"query_pre_attn_scalar", &scalar},
                                                    {"attn_logit_softcapping", &attn_cap},
                                                    {"final_logit_softcapping", &logit_cap}};
    for (size_t k = 0; k < sizeof num / sizeof num[0]; k++) {
        t = zt__json_get(j, 0, num[k].key);
        if (t >= 0 && zt__json_is_null(j, t)) *num[k].v = 0; /* null: none */
        else if ((r = zt__json_number(j, t, num[k].key, num[k].v))) return r;
        if (!(isfinite(*num[k].v) && *num[k].v >= 0 && *num[k].v < 1e30))
            return zt_fail(ZT_ERROR_INVALID, "%s: \"%s\" must be a positive number or null, found %g", j->file,
                           num[k].key, *num[k].v);
    }
    if (scalar <= 0) return zt_fail(ZT_ERROR_INVALID, "%s: \"query_pre_attn_scalar\" must be positive", j->file);
    t = zt__json_get(j, 0, "use_bidirectional_attention"); /* null: false */
    if (!zt__json_is_null(j, t) && (r = zt__json_bool(j, t, "use_bidirectional_attention", &bidirectional))) return r;
    if (bidirectional) return zt__config_refuse(j, "use_bidirectional_attention", "is true (an encoder, not causal)");
    c->sandwich_norms = 1;
    c->attn_scale = (float)pow(scalar, -0.5);
    c->attn_softcap = version == 2 ? (float)attn_cap : 0.0f, c->logit_softcap = (float)logit_cap;
    return ZT_OK;
}

static zt_result zt__config_llama(zt_model_config *c, const zt__json *j) {
    zt_result r = ZT_OK;
    double eps = 1e-6, theta = 10000.0, std = 0.02, partial = 1.0;
    int attention_bias = 0, mlp_bias = 0, use_window = 0;
    int is_qwen2 = strcmp(c->model_type, "qwen2") == 0 || strcmp(c->model_type, "qwen2_moe") == 0;
    int is_qwen3 = strcmp(c->model_type, "qwen3") == 0 || strcmp(c->model_type, "qwen3_moe") == 0;
    int is_moe = strcmp(c->model_type, "mixtral") == 0 || strcmp(c->model_type, "qwen2_moe") == 0 ||
                 strcmp(c->model_type, "qwen3_moe") == 0;
    int qkv_bias = is_qwen2; /* Qwen2's always; Qwen2-MoE's by its qkv_bias, true by default */
    int is_gemma2 = strcmp(c->model_type, "gemma2") == 0, is_gemma3 = strcmp(c->model_type, "gemma3_text") == 0;
    int is_gemma = is_gemma2 || is_gemma3 || strcmp(c->model_type, "gemma") == 0;
    char act[32];
    snprintf(act, sizeof act, "%s", is_gemma ? "gelu_pytorch_tanh" : "silu");
    if (is_gemma2 || is_gemma3) c->sliding_window = 4096; /* Gemma2Config's and Gemma3TextConfig's defaults */
    if (is_gemma3) theta = 1000000.0;
    c->n_kv_head = 0;
    c->head_dim = 0;
    if ((r = zt__json_int(j, zt__json_get(j, 0, "num_hidden_layers"), "num_hidden_layers", &c->n_layer)) ||
        (r = zt__json_int(j, zt__json_get(j, 0, "num_attention_heads"), "num_attention_heads", &c->n_head)) ||
        (r = zt__json_int(j, zt__json_get(j, 0, "hidden_size"), "hidden_size", &c->hidden)) ||
        (r = zt__json_int(j, zt__json_get(j, 0, "intermediate_size"), "intermediate_size", &c->intermediate)) ||
        (r = zt__json_int(j, zt__json_get(j, 0, "max_position_embeddings"), "max_position_embeddings", &c->max_positions)) ||
        (r = zt__json_int(j, zt__json_get(j, 0, "vocab_size"), "vocab_size", &c->vocab)) ||
        (r = zt__json_number(j, zt__json_get(j, 0, "rms_norm_eps"), "rms_norm_eps", &eps)) ||
        (r = zt__json_number(j, zt__json_get(j, 0, "rope_theta"), "rope_theta", &theta)) ||
        (r = zt__json_number(j, zt__json_get(j, 0, "initializer_range"), "initializer_range", &std)) ||
        (r = zt__json_bool(j, zt__json_get(j, 0, "tie_word_embeddings"), "tie_word_embeddings", &c->tied_embeddings)) ||
        (r = zt__json_bool(j, zt__json_get(j, 0, "attention_bias"), "attention_bias", &attention_bias)) ||
        (r = zt__json_bool(j, zt__json_get(j, 0, "mlp_bias"), "mlp_bias", &mlp_bias)) ||
        (r = zt__json_bool(j, zt__json_get(j, 0, "use_sliding_window"), "use_sliding_window", &use_window)) ||
        (r = zt__json_string(j, zt__json_get(j, 0, "hidden_act"), "hidden_act", act, sizeof act)))
        return r;
    int t = zt__json_get(j, 0, "num_key_value_heads");
    if (!zt__json_is_null(j, t) && (r = zt__json_int(j, t, "num_key_value_heads", &c->n_kv_head))) return r;
    t = zt__json_get(j, 0, "head_dim");
    if (!zt__json_is_null(j, t) && (r = zt__json_int(j, t, "head_dim", &c->head_dim))) return r;
    t = zt__json_get(j, 0, "sliding_window");
    if (!zt__json_is_null(j, t) && (r = zt__json_int(j, t, "sliding_window", &c->sliding_window))) return r;
    if (t >= 0 && zt__json_is_null(j, t)) c->sliding_window = 0;
    /* transformers' LLaMA has no window; Mistral and Phi-3 window every layer; Gemma 2 all but every second layer,
       Gemma 3 all but every sixth (its old configs' sliding_window_pattern) */
    int every = strcmp(c->model_type, "mistral") == 0 || strcmp(c->model_type, "mixtral") == 0 ||
                strcmp(c->model_type, "phi3") == 0;
    int64_t pattern = is_gemma2 ? 2 : 0;
    if (is_gemma3) {
        pattern = 6;
        if ((r = zt__json_int(j, zt__json_get(j, 0, "sliding_window_pattern"), "sliding_window_pattern", &pattern))) return r;
        if (pattern < 1) return zt_fail(ZT_ERROR_INVALID, "%s: \"sliding_window_pattern\" must be at least 1", j->file);
    }
    if (!every && !is_qwen2 && !is_qwen3 && !is_gemma) c->sliding_window = 0;
    if ((r = zt__config_windows(c, j, use_window, pattern, every))) return r;
    /* transformers 5 writes "rope_parameters": {"rope_theta", "rope_type", ...} (Gemma 3: one such per layer
       type); older files a top-level rope_theta, an optional "rope_scaling" and Gemma 3's rope_local_base_freq.
       A top-level partial_rotary_factor is the rope's unless the rope has its own (Phi3Config's setdefault). */
    if ((r = zt__json_number(j, zt__json_get(j, 0, "partial_rotary_factor"), "partial_rotary_factor", &partial))) return r;
    int rp = zt__json_get(j, 0, "rope_parameters"), rs = zt__json_get(j, 0, "rope_scaling");
    int per_type = is_gemma3 && rp >= 0 && j->tok[rp].type == JSMN_OBJECT && zt__json_get(j, rp, "full_attention") >= 0;
    if (per_type) {
        double local = 10000.0;
        zt_rope_scaling none;
        memset(&none, 0, sizeof none);
        if ((r = zt__config_rope(c, j, zt__json_get(j, rp, "full_attention"), "rope_parameters.full_attention", &theta,
                                 &c->rope_scaling, &partial)) ||
            (r = zt__config_rope(c, j, zt__json_get(j, rp, "sliding_attention"), "rope_parameters.sliding_attention",
                                 &local, &none, &partial)))
            return r;
        if (none.factor > 0)
            return zt_fail(ZT_ERROR_UNSUPPORTED, "%s: rope_parameters.sliding_attention is scaled; zt scales the full "
                           "attention layers' rope only (as Gemma 3 does)", j->file);
        c->local_rope_theta = (float)local;
    } else {
        if ((r = zt__config_rope(c, j, rp, "rope_parameters", &theta, &c->rope_scaling, &partial)) ||
            (r = zt__config_rope(c, j, rs, "rope_scaling", NULL, &c->rope_scaling, &partial)))
            return r;
        if (is_gemma3) {
            double local = 10000.0;
            if ((r = zt__json_number(j, zt__json_get(j, 0, "rope_local_base_freq"), "rope_local_base_freq", &local))) return r;
            c->local_rope_theta = (float)local;
        }
    }
    if (is_gemma3 && !(c->local_rope_theta > 0 && isfinite(c->local_rope_theta)))
        return zt_fail(ZT_ERROR_INVALID, "%s: the sliding layers' rope theta must be positive, found %g", j->file,
                       (double)c->local_rope_theta);
    if (partial != 1.0 && strcmp(c->model_type, "phi3") != 0)
        return zt_fail(ZT_ERROR_UNSUPPORTED, "%s: \"partial_rotary_factor\" is %g; transformers' %s rotates the whole head "
                       "(Phi-3's alone rotates a part), and so does zt", j->file, partial, c->model_type);
    if (is_gemma && (r = zt__config_gemma(c, j, act, is_gemma3 ? 3 : is_gemma2 ? 2 : 1))) return r;
    if (!is_gemma && strcmp(act, "silu") != 0)
        return zt_fail(ZT_ERROR_UNSUPPORTED, "%s: \"hidden_act\" is \"%s\"; zt implements silu only", j->file, act);
    if (mlp_bias) return zt__config_refuse(j, "mlp_bias", "is true");
    if (c->n_kv_head == 0) c->n_kv_head = c->n_head;
    if (c->head_dim == 0 && c->n_head > 0) c->head_dim = c->hidden / c->n_head;
    if (partial != 1.0) { /* Phi-4-mini's 0.75: the first int(head_dim x partial) dimensions rotate, as transformers */
        double rd = floor((double)c->head_dim * partial);
        if (!(partial > 0 && partial <= 1 && rd >= 2 && fmod(rd, 2) == 0))
            return zt_fail(ZT_ERROR_INVALID, "%s: \"partial_rotary_factor\" %g of a head of %lld rotates %g dimensions; "
                           "zt takes a factor in (0, 1] that rotates an even number of them, at least 2", j->file, partial,
                           (long long)c->head_dim, rd);
        c->rotary_dim = (int64_t)rd == c->head_dim ? 0 : (int64_t)rd;
    }
    c->norm_eps = (float)eps;
    c->rope_theta = (float)theta;
    c->init_std = (float)std;
    if (strcmp(c->model_type, "qwen2_moe") == 0 &&
        (r = zt__json_bool(j, zt__json_get(j, 0, "qkv_bias"), "qkv_bias", &qkv_bias)))
        return r;
    c->qkv_bias = qkv_bias || attention_bias;
    c->out_bias = attention_bias;
    c->qk_norm = is_qwen3 || is_gemma3;
    c->fused = strcmp(c->model_type, "phi3") == 0;
    t = zt__json_get(j, 0, "pad_token_id"); /* transformers builds nn.Embedding(vocab, hidden, padding_idx) */
    c->has_pad_token = t >= 0 && !zt__json_is_null(j, t);
    if (is_gemma && t < 0) c->has_pad_token = 1, c->pad_token_id = 0; /* GemmaConfig's default */
    if (c->has_pad_token && (r = zt__json_int(j, t, "pad_token_id", &c->pad_token_id))) return r;
    if (is_moe && (r = zt__config_moe(c, j))) return r;
    return ZT_OK;
}

static zt_result zt__model_config_parse(zt_model_config *c, const char *text, size_t len, const char *name,
                                        zt_arena *tokens);

/* The dropouts each model has in transformers, with its config's defaults: GPT-2's on the embeddings, the
   residual branches and the attention (0.1 each); Phi-3's on the residual branches and the attention; the
   others' on the attention alone (0). Keys a model does not read (Phi-3's embd_pdrop) are left unused. 1 drops
   everything, as torch's. */
static zt_result zt__config_dropout(zt_model_config *c, const zt__json *j) {
    int gpt2 = strcmp(c->model_type, "gpt2") == 0, phi3 = strcmp(c->model_type, "phi3") == 0;
    struct { const char *key; float *out; double value; } keys[] = {
        {gpt2 ? "embd_pdrop" : NULL, &c->embd_dropout, 0.1},
        {gpt2 || phi3 ? "resid_pdrop" : NULL, &c->resid_dropout, gpt2 ? 0.1 : 0.0},
        {gpt2 ? "attn_pdrop" : "attention_dropout", &c->attn_dropout, gpt2 ? 0.1 : 0.0}};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        if (!keys[i].key) continue;
        int t = zt__json_get(j, 0, keys[i].key); /* null: the default (transformers' configs type it Optional) */
        zt_result r = zt__json_is_null(j, t) ? ZT_OK : zt__json_number(j, t, keys[i].key, &keys[i].value);
        if (r != ZT_OK) return r;
        if (!(keys[i].value >= 0 && keys[i].value <= 1))
            return zt_fail(ZT_ERROR_INVALID, "%s: \"%s\" must be a probability in [0, 1], found %g", j->file,
                           keys[i].key, keys[i].value);
        *keys[i].out = (float)keys[i].value;
    }
    return ZT_OK;
}

ZT_API zt_result zt_model_config_parse(zt_model_config *c, const char *text, size_t len, const char *name) {
    zt_arena a;
    void *mem = zt__setup_arena(&a, "config.json tokens", zt__json_token_bytes(len));
    zt_result r = zt__model_config_parse(c, text, len, name, &a);
    free(mem);
    return r;
}

static zt_result zt__model_config_parse(zt_model_config *c, const char *text, size_t len, const char *name,
                                        zt_arena *tokens) {
    zt_arena a = *tokens;
    memset(c, 0, sizeof *c);
    zt__json j;
    zt_result r = zt__json_parse(&j, &a, name, text, len);
    if (r != ZT_OK) return r;
    r = zt__json_string(&j, zt__json_get(&j, 0, "model_type"), "model_type", c->model_type, sizeof c->model_type);
    if (r != ZT_OK) return r;
    int gpt2 = strcmp(c->model_type, "gpt2") == 0;
    int gemma = strcmp(c->model_type, "gemma") == 0 || strcmp(c->model_type, "gemma2") == 0 ||
                strcmp(c->model_type, "gemma3_text") == 0;
    if (strcmp(c->model_type, "gemma3") == 0)
        return zt_fail(ZT_ERROR_UNSUPPORTED, "%s: \"model_type\" is \"gemma3\" (Gemma 3 with its vision tower); zt trains "
                       "the text model alone, model_type \"gemma3_text\" (Gemma 3 1B, or a text_config saved by itself)", name);
    if (!gpt2 && !gemma && strcmp(c->model_type, "llama") && strcmp(c->model_type, "mistral") &&
        strcmp(c->model_type, "mixtral") && strcmp(c->model_type, "qwen2") && strcmp(c->model_type, "qwen2_moe") &&
        strcmp(c->model_type, "qwen3") && strcmp(c->model_type, "qwen3_moe") && strcmp(c->model_type, "phi3"))
        return zt_fail(ZT_ERROR_UNSUPPORTED, "%s: \"model_type\" is \"%s\"; zt trains gpt2, llama, mistral, mixtral, "
                       "qwen2, qwen2_moe, qwen3, qwen3_moe, phi3, gemma, gemma2 and gemma3_text", name,
                       c->model_type[0] ? c->model_type : "(missing)");
    c->tied_embeddings = gpt2 || gemma; /* the transformers defaults */
    r = gpt2 ? zt__config_gpt2(c, &j) : zt__config_llama(c, &j);
    if (r != ZT_OK) return r;
    struct { const char *key; int64_t v; } need[] = {
        {gpt2 ? "n_layer" : "num_hidden_layers", c->n_layer}, {gpt2 ? "n_head" : "num_attention_heads", c->n_head},
        {gpt2 ? "n_embd" : "hidden_size", c->hidden}, {"vocab_size", c->vocab},
        {gpt2 ? "n_positions" : "max_position_embeddings", c->max_positions},
        {gpt2 ? "n_inner" : "intermediate_size", c->intermediate}};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (need[i].v <= 0)
            return zt_fail(ZT_ERROR_INVALID, "%s: \"%s\" must be a positive integer, found %lld", name, need[i].key,
                           (long long)need[i].v);
    struct { const char *key; int64_t v, max; } bound[] = {
        {gpt2 ? "n_layer" : "num_hidden_layers", c->n_layer, 4096}, {gpt2 ? "n_head" : "num_attention_heads", c->n_head, 4096},
        {gpt2 ? "n_embd" : "hidden_size", c->hidden, 131072}, {"vocab_size", c->vocab, 1 << 20},
        {gpt2 ? "n_positions" : "max_position_embeddings", c->max_positions, 1 << 24},
        {gpt2 ? "n_inner" : "intermediate_size", c->intermediate, 200000}};
    for (size_t i = 0; i < sizeof bound / sizeof bound[0]; i++) /* the CPU kernels' rows, and sane sizes */
        if (bound[i].v > bound[i].max)
            return zt_fail(ZT_ERROR_UNSUPPORTED, "%s: \"%s\" is %lld; zt takes at most %lld", name, bound[i].key,
                           (long long)bound[i].v, (long long)bound[i].max);
    if (!(c->norm_eps > 0 && isfinite(c->norm_eps)) || (!gpt2 && !(c->rope_theta > 0 && isfinite(c->rope_theta))) ||
        !(c->init_std >= 0 && isfinite(c->init_std)))
        return zt_fail(ZT_ERROR_INVALID, "%s: the norm epsilon, rope_theta and initializer_range must be positive and "
                       "finite (found %g, %g, %g)", name, (double)c->norm_eps, (double)c->rope_theta, (double)c->init_std);
    if (gpt2) c->head_dim = c->hidden / c->n_head;
    if (c->n_head * c->head_dim != c->hidden && gpt2)
        return zt_fail(ZT_ERROR_INVALID, "%s: n_embd %lld is not a multiple of n_head %lld", name,
                       (long long)c->hidden, (long long)c->n_head);
    if (c->head_dim <= 0 || c->head_dim % 2 || c->head_dim > 1024)
        return zt_fail(ZT_ERROR_INVALID, "%s: the head dimension must be even, positive and at most 1024, found %lld", name,
                       (long long)c->head_dim);
    if (c->n_kv_head <= 0 || c->n_head % c->n_kv_head)
        return zt_fail(ZT_ERROR_INVALID, "%s: num_attention_heads %lld is not a multiple of num_key_value_heads %lld",
                       name, (long long)c->n_head, (long long)c->n_kv_head);
    if (c->vocab > 0x7fffffff) return zt_fail(ZT_ERROR_INVALID, "%s: vocab_size %lld is too large", name, (long long)c->vocab);
    c->vocab_padded = ZT__CDIV(c->vocab, 128) * 128;
    if (c->has_pad_token && c->pad_token_id < 0 && c->pad_token_id >= -c->vocab) c->pad_token_id += c->vocab; /* torch's rule */
    if (c->has_pad_token && (c->pad_token_id < 0 || c->pad_token_id >= c->vocab))
        return zt_fail(ZT_ERROR_INVALID, "%s: \"pad_token_id\" %lld is not a token of the vocabulary of %lld (transformers "
                       "would refuse it as the embedding's padding_idx)", name, (long long)c->pad_token_id, (long long)c->vocab);
    return zt__config_dropout(c, &j);
}

ZT_API zt_result zt_model_config_read(zt_model_config *c, const char *path) {
    char file[4096];
    size_t n = strlen(path);
    if (n >= 5 && strcmp(path + n - 5, ".json") == 0)
        snprintf(file, sizeof file, "%s", path);
    else
        snprintf(file, sizeof file, "%s/config.json", path);
    zt_arena a;
    void *mem = zt__setup_arena(&a, "config.json text", (size_t)1 << 20);
    char *text = NULL;
    size_t len = 0;
    zt_result r = zt__read_file(&a, file, &text, &len);
    if (r == ZT_OK) r = zt_model_config_parse(c, text, len, file);
    free(mem);
    return r;
}

ZT_API int64_t zt_model_config_params(const zt_model_config *c) {
    int64_t C = c->hidden, q = c->n_head * c->head_dim, kv = c->n_kv_head * c->head_dim, I = c->intermediate;
    int gpt2 = strcmp(c->model_type, "gpt2") == 0;
    int64_t attn = C * q + 2 * C * kv + q * C + (c->qkv_bias ? q + 2 * kv : 0) + (c->out_bias ? C : 0);
    int64_t mlp = gpt2 ? 2 * C * I + (I + C) : 3 * C * I + (c->out_bias && gpt2 ? I + C : 0);
    int64_t experts = c->n_experts * (C + 3 * C * c->expert_intermediate), sparse = 0; /* the router's row too */
    experts += c->shared_intermediate > 0 ? 3 * C * c->shared_intermediate + C : 0;
    for (int64_t l = 0; l < c->n_layer; l++) sparse += zt__layer_sparse(c, l);
    int64_t norms = gpt2 ? 4 * C : 2 * C + (c->qk_norm ? 2 * c->head_dim : 0) + (c->sandwich_norms ? 2 * C : 0);
    int64_t embed = c->vocab * C + (gpt2 ? c->max_positions * C : 0);
    int64_t head = (c->tied_embeddings ? 0 : c->vocab * C) + (gpt2 ? 2 * C : C);
    return embed + c->n_layer * (attn + norms) + (c->n_layer - sparse) * mlp + sparse * experts + head;
}

/* The built-in blocks. Parameter names are transformers' names; weights are (out, in) as in
   nn.Linear (GPT-2's Conv1D weights are transposed on the way in and out). */

/* a zeroed temporary: backward ops accumulate */
static zt_tensor zt__temp0(zt_block_ctx *ctx, zt_dtype dtype, zt_shape shape) {
    zt_tensor t = zt_block_temp(ctx, dtype, shape);
    zt_fill(ctx->stream, t, 0.0f);
    return t;
}

/* rows [r0, r0+n) of a 2-D parameter, and of a 1-D one: the q, k and v parts of GPT-2's c_attn */
static zt_tensor zt__rows_of(zt_tensor w, int64_t r0, int64_t n) {
    if (!zt__present(w)) return w;
    if (w.shape.ndim == 1) return zt_view(w, r0, zt_shape1(n));
    return zt_view(w, r0 * zt_cols(w), zt_shape2(n, zt_cols(w)));
}

static const zt_tensor *zt__maybe(const zt_tensor *t) { return zt__present(*t) ? t : NULL; }

/* (B,T,H,HD) seen as the (B*T, H*HD) matrix a linear layer reads or writes */
static zt_tensor zt__flat(zt_tensor t) { return zt_view(t, 0, zt_shape2(t.shape.d[0] * t.shape.d[1], zt_numel(t) / (t.shape.d[0] * t.shape.d[1]))); }

/* ---- token (and position) embeddings ---- */

enum { ZT__EMB_WTE, ZT__EMB_WPE };

static void zt__gpt2_embedding_declare(zt_block_def *def, const void *config) {
    const zt_model_config *c = (const zt_model_config *)config;
    int gpt2 = strcmp(c->model_type, "gpt2") == 0;
    zt_block_param(def, gpt2 ? "transformer.wte.weight" : "model.embed_tokens.weight",
                   zt_shape2(c->vocab_padded, c->hidden), ZT_PARAM_DECAY | ZT_PARAM_VOCAB, ZT_INIT_NORMAL, c->init_std);
    if (gpt2)
        zt_block_param(def, "transformer.wpe.weight", zt_shape2(c->max_positions, c->hidden), ZT_PARAM_DECAY,
                       ZT_INIT_NORMAL, c->init_std);
}

/* Where dropout falls, each site of each block with its own draws: a function of the micro-batch's seed, the
   site and the block (router jitter's seeds have no site bits), then of the element by global row, so that any
   number of ranks, and a recomputed forward, draws the same masks. */
enum { ZT__DROP_ATTN = 1, ZT__DROP_RESID_ATTN, ZT__DROP_RESID_MLP, ZT__DROP_EMBD };
static uint64_t zt__drop_seed(const zt_block_ctx *ctx, int site) {
    return zt__mix(ctx->batch->seed ^ ((uint64_t)site << 56) ^ (uint64_t)ctx->index);
}

/* dropout p on x, this rank's rows of the micro-batch: in the forward, and on the gradient in the backward */
static void zt__drop_rows(const zt_block_ctx *ctx, zt_tensor x, float p, int site) {
    const zt_batch *b = ctx->batch;
    zt_dropout(ctx->stream, x, p, zt__drop_seed(ctx, site), b->first_row * (zt_numel(x) / b->B));
}

/* x's gradient dout through dropout p: a copy, with the forward's mask */
static zt_tensor zt__drop_grad(zt_block_ctx *ctx, zt_tensor dout, zt_shape shape, float p, int site) {
    zt_tensor d = zt_block_temp(ctx, dout.dtype, shape);
    zt_copy(ctx->stream, d, zt_view(dout, 0, shape));
    zt__drop_rows(ctx, d, p, site);
    return d;
}

/* Gemma's embedding scale, rounded to the weights' dtype as transformers rounds it */
static float zt__embed_scale(const zt_model_config *c, zt_dtype weights) {
    if (weights == ZT_BF16) return zt_bf16_to_f32(zt_f32_to_bf16(c->embed_scale));
    if (weights == ZT_F16) return zt_f16_to_f32(zt_f32_to_f16(c->embed_scale));
    return c->embed_scale;
}

static void zt__embedding_forward(zt_block_ctx *ctx, zt_tensor out, zt_tensor inp) {
    (void)inp;
    const zt_batch *b = ctx->batch;
    const zt_model_config *c = (const zt_model_config *)ctx->config;
    zt_embedding_forward(ctx->stream, out, b->tokens, ctx->param[ZT__EMB_WTE], 0);
    if (c->embed_scale > 0) zt_scale(ctx->stream, out, zt__embed_scale(c, ctx->param[ZT__EMB_WTE].dtype));
    if (ctx->training && b->neftune_alpha > 0) { /* on the token embedding module's output, as transformers hooks it */
        int64_t per_row = b->T * c->hidden;
        zt_add_uniform_noise(ctx->stream, out, b->neftune_alpha / sqrtf((float)per_row), b->seed, b->first_row * per_row);
    }
    if (strcmp(c->model_type, "gpt2") == 0) zt_embedding_forward(ctx->stream, out, b->pos, ctx->param[ZT__EMB_WPE], 1);
    if (ctx->training && c->embd_dropout > 0) zt__drop_rows(ctx, out, c->embd_dropout, ZT__DROP_EMBD); /* GPT-2's drop */
}

static void zt__embedding_backward(zt_block_ctx *ctx, zt_tensor dinp, zt_tensor dout, zt_tensor inp) {
    (void)dinp;
    (void)inp;
    const zt_batch *b = ctx->batch;
    const zt_model_config *c = (const zt_model_config *)ctx->config;
    zt_tensor dwte = ctx->grad[ZT__EMB_WTE];
    if (c->embd_dropout > 0) dout = zt__drop_grad(ctx, dout, dout.shape, c->embd_dropout, ZT__DROP_EMBD);
    if (zt__present(dwte) && c->embed_scale > 0) { /* through the scale, in f32 */
        zt_tensor scaled = zt_block_temp(ctx, ZT_F32, dout.shape);
        zt_cast(ctx->stream, scaled, dout);
        zt_scale(ctx->stream, scaled, zt__embed_scale(c, ctx->param[ZT__EMB_WTE].dtype));
        dout = scaled;
    }
    if (zt__present(dwte) && c->has_pad_token) { /* padding_idx: the pad token's uses add nothing to its row */
        zt_tensor row = zt_view(dwte, c->pad_token_id * c->hidden, zt_shape1(c->hidden));
        zt_tensor kept = zt_block_temp(ctx, row.dtype, row.shape); /* what the row holds: the tied head's part */
        zt_copy(ctx->stream, kept, row);
        zt_embedding_backward(ctx->stream, dwte, dout, b->tokens);
        zt_copy(ctx->stream, row, kept);
    } else if (zt__present(dwte)) {
        zt_embedding_backward(ctx->stream, dwte, dout, b->tokens);
    }
    if (strcmp(c->model_type, "gpt2") == 0 && zt__present(ctx->grad[ZT__EMB_WPE]))
        zt_embedding_backward(ctx->stream, ctx->grad[ZT__EMB_WPE], dout, b->pos);
}

static const zt_block_type zt__gpt2_embedding = {"gpt2.embedding", 0, zt__gpt2_embedding_declare,
                                                 zt__embedding_forward, zt__embedding_backward};
static const zt_block_type zt__llama_embedding = {"llama.embedding", 0, zt__gpt2_embedding_declare,
                                                  zt__embedding_forward, zt__embedding_backward};
ZT_API const zt_block_type *zt_gpt2_embedding_block(void) { return &zt__gpt2_embedding; }
ZT_API const zt_block_type *zt_llama_embedding_block(void) { return &zt__llama_embedding; }

/* ---- the final norm, the output layer and the loss ---- */

enum { ZT__HEAD_NORM_W, ZT__HEAD_NORM_B, ZT__HEAD_OUT };
typedef struct zt__head_saved { zt_tensor x, mean, rstd, dx; } zt__head_saved;

static void zt__head_declare(zt_block_def *def, const void *config) {
    const zt_model_config *c = (const zt_model_config *)config;
    int gpt2 = strcmp(c->model_type, "gpt2") == 0;
    zt_block_param(def, gpt2 ? "transformer.ln_f.weight" : "model.norm.weight", zt_shape1(c->hidden), 0,
                   c->norm_offset != 0 ? ZT_INIT_ZEROS : ZT_INIT_ONES, 0);
    if (gpt2) zt_block_param(def, "transformer.ln_f.bias", zt_shape1(c->hidden), 0, ZT_INIT_ZEROS, 0);
    else zt_block_param(def, NULL, zt_shape1(0), 0, ZT_INIT_ZEROS, 0);
    if (c->tied_embeddings)
        zt_block_tie(def, 0, ZT__EMB_WTE);
    else
        zt_block_param(def, "lm_head.weight", zt_shape2(c->vocab_padded, c->hidden), ZT_PARAM_DECAY | ZT_PARAM_VOCAB,
                       ZT_INIT_NORMAL, c->init_std);
}

/* rows of logits computed at once: about 16M floats of scratch (few passes over the output layer's
   gradient, enough rows for every thread), never all B*T rows of a large vocabulary */
static int64_t zt__logit_rows(int64_t N, int64_t Vp) { return ZT__MAX(1, ZT__MIN(N, ((int64_t)1 << 24) / Vp)); }

/* The loss is the end of the graph, so in training the forward pass also computes the output layer's
   gradients (the logits are made once); this block is never recomputed, so that happens once. */
static void zt__head_forward(zt_block_ctx *ctx, zt_tensor out, zt_tensor inp) {
    (void)out;
    const zt_model_config *c = (const zt_model_config *)ctx->config;
    const zt_batch *b = ctx->batch;
    zt__head_saved *sv = (zt__head_saved *)ctx->saved;
    int gpt2 = strcmp(c->model_type, "gpt2") == 0;
    int64_t N = b->B * b->T, C = c->hidden, Vp = c->vocab_padded;
    if (c->router_aux_coef > 0 && b->shared && b->aux) *b->aux = zt__balance_loss(c, b); /* the layers' tally is in */
    sv->x = zt_block_keep(ctx, ctx->act, zt_shape2(N, C));
    sv->rstd = zt_block_keep(ctx, ZT_F32, zt_shape1(N));
    if (gpt2) {
        sv->mean = zt_block_keep(ctx, ZT_F32, zt_shape1(N));
        zt_layernorm_forward(ctx->stream, sv->x, sv->mean, sv->rstd, inp, ctx->param[ZT__HEAD_NORM_W],
                             ctx->param[ZT__HEAD_NORM_B], c->norm_eps);
    } else {
        zt_rmsnorm_offset_forward(ctx->stream, sv->x, sv->rstd, inp, ctx->param[ZT__HEAD_NORM_W], c->norm_offset, c->norm_eps);
    }
    zt_tensor logits = zt_block_temp(ctx, ZT_F32, zt_shape2(zt__logit_rows(N, Vp), Vp));
    zt_tensor losses = zt_view(b->losses, 0, zt_shape1(N)), targets = zt_view(b->targets, 0, zt_shape1(N));
    zt_loss_params lp;
    lp.vocab = c->vocab, lp.ignore_index = b->ignore_index, lp.dloss = b->dloss, lp.softcap = c->logit_softcap;
    lp.label_smoothing = b->label_smoothing; /* the evaluation's loss too, as the Trainer's compute_loss has it */
    if (!ctx->training) {
        lp.dloss = 0.0f;
        zt_output_loss_with(ctx->stream, losses, NULL, NULL, sv->x, ctx->param[ZT__HEAD_OUT], targets, logits, lp);
        if (b->logits_at >= 0) /* for sampling: one row's logits (capped where the model caps them, by the sampler) */
            zt_gemm(ctx->stream, zt_view(b->logits, 0, zt_shape2(1, Vp)), zt_slice(sv->x, b->logits_at, 1),
                    ctx->param[ZT__HEAD_OUT], 0, 1, 1.0f, 0.0f, NULL);
        return;
    }
    sv->dx = zt_block_keep(ctx, ctx->act, zt_shape2(N, C));
    zt_fill(ctx->stream, sv->dx, 0.0f);
    zt_output_loss_with(ctx->stream, losses, &sv->dx, zt__maybe(&ctx->grad[ZT__HEAD_OUT]), sv->x, ctx->param[ZT__HEAD_OUT],
                        targets, logits, lp);
}

static void zt__head_backward(zt_block_ctx *ctx, zt_tensor dinp, zt_tensor dout, zt_tensor inp) {
    (void)dout;
    const zt_model_config *c = (const zt_model_config *)ctx->config;
    zt__head_saved *sv = (zt__head_saved *)ctx->saved;
    zt_tensor dw = ctx->grad[ZT__HEAD_NORM_W];
    if (strcmp(c->model_type, "gpt2") == 0)
        zt_layernorm_backward(ctx->stream, dinp, dw, ctx->grad[ZT__HEAD_NORM_B], sv->dx, inp, ctx->param[ZT__HEAD_NORM_W],
                              sv->mean, sv->rstd);
    else
        zt_rmsnorm_offset_backward(ctx->stream, dinp, dw, sv->dx, inp, ctx->param[ZT__HEAD_NORM_W], c->norm_offset, sv->rstd);
}

static const zt_block_type zt__gpt2_head = {"gpt2.head", sizeof(zt__head_saved), zt__head_declare, zt__head_forward,
                                            zt__head_backward};
static const zt_block_type zt__llama_head = {"llama.head", sizeof(zt__head_saved), zt__head_declare,
                                             zt__head_forward, zt__head_backward};
ZT_API const zt_block_type *zt_gpt2_head_block(void) { return &zt__gpt2_head; }
ZT_API const zt_block_type *zt_llama_head_block(void) { return &zt__llama_head; }

/* ---- a transformer layer: GPT-2 (layernorm, gelu MLP, biases) and LLaMA (rmsnorm, rope, swiglu) ---- */

enum {
    ZT__L_NORM1_W, ZT__L_NORM1_B, ZT__L_QKV_W, ZT__L_QKV_B, ZT__L_K_W, ZT__L_K_B, ZT__L_V_W, ZT__L_V_B,
    ZT__L_O_W, ZT__L_O_B, ZT__L_NORM2_W, ZT__L_NORM2_B, ZT__L_UP_W, ZT__L_UP_B, ZT__L_DOWN_W, ZT__L_DOWN_B,
    ZT__L_QNORM_W, ZT__L_KNORM_W, ZT__L_POST_ATTN_W, ZT__L_POST_MLP_W, ZT__L_COUNT
};

typedef struct zt__layer_saved {
    zt_tensor n1, mean1, rstd1, q, k, v, att, lse, x2, n2, mean2, rstd2, h, a;
    zt_tensor q0, k0, qrstd, krstd; /* qk_norm: q and k before their norms, and each head's 1/rms */
    zt_tensor pa, rstd_pa, pm, rstd_pm; /* sandwich norms: the attention's and the MLP's outputs before theirs */
    /* experts: the router's probabilities, each token's choices and their weights, the choices grouped by expert
       (order) and back (where), the gathered rows and the experts' outputs; h and a above are the experts' too */
    zt_tensor probs, idx, rw, order, where, xs, ys;
    zt_tensor sh, sa, sy, sg; /* Qwen2-MoE's shared expert: its [gate | up] product, SwiGLU, output, and its gate */
    int32_t counts[ZT_MOE_MAX_EXPERTS]; /* each expert's rows, on the host (their products are launched by row) */
    float dbalance[ZT_MOE_MAX_EXPERTS]; /* the balancing loss's gradient on each expert's probability, to copy */
} zt__layer_saved;

/* the first parameter slot of a sparse layer's experts: its router, then gate, up and down of each expert */
static int zt__moe_slot(const zt_model_config *c) {
    return ZT__L_DOWN_B + 1 + (c->qk_norm || c->sandwich_norms ? 2 : 0) + (c->sandwich_norms ? 2 : 0);
}

static void zt__layer_declare(zt_block_def *def, const void *config) {
    const zt_model_config *c = (const zt_model_config *)config;
    int gpt2 = strcmp(c->model_type, "gpt2") == 0;
    int64_t C = c->hidden, HD = c->head_dim, q = c->n_head * HD, kv = c->n_kv_head * HD, I = c->intermediate;
    int layer = zt_block_def_index(def) - 1;
    float std = c->init_std, proj_std = gpt2 ? c->init_std / sqrtf(2.0f * (float)c->n_layer) : c->init_std;
    char p[64], n[192];
    snprintf(p, sizeof p, gpt2 ? "transformer.h.%d." : "model.layers.%d.", layer);
#define ZT__P(suffix) (snprintf(n, sizeof n, "%s%s", p, suffix), n)
    /* every slot is declared (absent ones empty) so the enum indexes them for both families, up to
       ZT__L_DOWN_B; the q/k norms after it only where the model has them (a parameter's initial values
       follow its number, which a declaration added before it would change) */
    if (gpt2) {
        zt_block_param(def, ZT__P("ln_1.weight"), zt_shape1(C), 0, ZT_INIT_ONES, 0);
        zt_block_param(def, ZT__P("ln_1.bias"), zt_shape1(C), 0, ZT_INIT_ZEROS, 0);
        zt_block_param(def, ZT__P("attn.c_attn.weight"), zt_shape2(3 * C, C), ZT_PARAM_DECAY, ZT_INIT_NORMAL, std);
        zt_block_param(def, ZT__P("attn.c_attn.bias"), zt_shape1(3 * C), 0, ZT_INIT_ZEROS, 0);
        for (int i = 0; i < 4; i++) zt_block_param(def, NULL, zt_shape1(0), 0, ZT_INIT_ZEROS, 0); /* k, v: in c_attn */
        zt_block_param(def, ZT__P("attn.c_proj.weight"), zt_shape2(C, C), ZT_PARAM_DECAY, ZT_INIT_NORMAL, proj_std);
        zt_block_param(def, ZT__P("attn.c_proj.bias"), zt_shape1(C), 0, ZT_INIT_ZEROS, 0);
        zt_block_param(def, ZT__P("ln_2.weight"), zt_shape1(C), 0, ZT_INIT_ONES, 0);
        zt_block_param(def, ZT__P("ln_2.bias"), zt_shape1(C), 0, ZT_INIT_ZEROS, 0);
        zt_block_param(def, ZT__P("mlp.c_fc.weight"), zt_shape2(I, C), ZT_PARAM_DECAY, ZT_INIT_NORMAL, std);
        zt_block_param(def, ZT__P("mlp.c_fc.bias"), zt_shape1(I), 0, ZT_INIT_ZEROS, 0);
        zt_block_param(def, ZT__P("mlp.c_proj.weight"), zt_shape2(C, I), ZT_PARAM_DECAY, ZT_INIT_NORMAL, proj_std);
        zt_block_param(def, ZT__P("mlp.c_proj.bias"), zt_shape1(C), 0, ZT_INIT_ZEROS, 0);
    } else if (c->fused) { /* Phi-3: q, k and v rows in one matrix, [gate | up] in another */
        zt_block_param(def, ZT__P("input_layernorm.weight"), zt_shape1(C), 0, ZT_INIT_ONES, 0);
        zt_block_param(def, NULL, zt_shape1(0), 0, ZT_INIT_ZEROS, 0);
        zt_block_param(def, ZT__P("self_attn.qkv_proj.weight"), zt_shape2(q + 2 * kv, C), ZT_PARAM_DECAY, ZT_INIT_NORMAL, std);
        for (int i = 0; i < 5; i++) zt_block_param(def, NULL, zt_shape1(0), 0, ZT_INIT_ZEROS, 0); /* q's bias, k, v */
        zt_block_param(def, ZT__P("self_attn.o_proj.weight"), zt_shape2(C, q), ZT_PARAM_DECAY, ZT_INIT_NORMAL, proj_std);
        zt_block_param(def, NULL, zt_shape1(0), 0, ZT_INIT_ZEROS, 0);
        zt_block_param(def, ZT__P("post_attention_layernorm.weight"), zt_shape1(C), 0, ZT_INIT_ONES, 0);
        zt_block_param(def, NULL, zt_shape1(0), 0, ZT_INIT_ZEROS, 0);
        zt_block_param(def, ZT__P("mlp.gate_up_proj.weight"), zt_shape2(2 * I, C), ZT_PARAM_DECAY, ZT_INIT_NORMAL, std);
        zt_block_param(def, NULL, zt_shape1(0), 0, ZT_INIT_ZEROS, 0);
        zt_block_param(def, ZT__P("mlp.down_proj.weight"), zt_shape2(C, I), ZT_PARAM_DECAY, ZT_INIT_NORMAL, proj_std);
        zt_block_param(def, NULL, zt_shape1(0), 0, ZT_INIT_ZEROS, 0);
    } else {
        zt_init_kind ones = c->norm_offset != 0 ? ZT_INIT_ZEROS : ZT_INIT_ONES; /* Gemma stores weight - 1 */
        zt_block_param(def, ZT__P("input_layernorm.weight"), zt_shape1(C), 0, ones, 0);
        zt_block_param(def, NULL, zt_shape1(0), 0, ZT_INIT_ZEROS, 0);
        zt_block_param(def, ZT__P("self_attn.q_proj.weight"), zt_shape2(q, C), ZT_PARAM_DECAY, ZT_INIT_NORMAL, std);
        zt_block_param(def, c->qkv_bias ? ZT__P("self_attn.q_proj.bias") : NULL, zt_shape1(c->qkv_bias ? q : 0), 0, ZT_INIT_ZEROS, 0);
        zt_block_param(def, ZT__P("self_attn.k_proj.weight"), zt_shape2(kv, C), ZT_PARAM_DECAY, ZT_INIT_NORMAL, std);
        zt_block_param(def, c->qkv_bias ? ZT__P("self_attn.k_proj.bias") : NULL, zt_shape1(c->qkv_bias ? kv : 0), 0, ZT_INIT_ZEROS, 0);
        zt_block_param(def, ZT__P("self_attn.v_proj.weight"), zt_shape2(kv, C), ZT_PARAM_DECAY, ZT_INIT_NORMAL, std);
        zt_block_param(def, c->qkv_bias ? ZT__P("self_attn.v_proj.bias") : NULL, zt_shape1(c->qkv_bias ? kv : 0), 0, ZT_INIT_ZEROS, 0);
        zt_block_param(def, ZT__P("self_attn.o_proj.weight"), zt_shape2(C, q), ZT_PARAM_DECAY, ZT_INIT_NORMAL, proj_std);
        zt_block_param(def, c->out_bias ? ZT__P("self_attn.o_proj.bias") : NULL, zt_shape1(c->out_bias ? C : 0), 0, ZT_INIT_ZEROS, 0);
        /* Gemma 2's post_attention_layernorm is on the attention's output; its pre-MLP norm has another name */
        zt_block_param(def, c->sandwich_norms ? ZT__P("pre_feedforward_layernorm.weight") : ZT__P("post_attention_layernorm.weight"),
                       zt_shape1(C), 0, ones, 0);
        zt_block_param(def, NULL, zt_shape1(0), 0, ZT_INIT_ZEROS, 0);
        /* gate and up back to back: one (2I, C) product gives each row [gate | up] for swiglu */
        int sparse = zt__layer_sparse(c, layer);
        if (sparse) I = 0; /* the experts' MLPs come after the norms */
        zt_block_param(def, sparse ? NULL : ZT__P("mlp.gate_proj.weight"), zt_shape2(I, C), ZT_PARAM_DECAY, ZT_INIT_NORMAL, std);
        zt_block_param(def, sparse ? NULL : ZT__P("mlp.up_proj.weight"), zt_shape2(I, C), ZT_PARAM_DECAY | ZT_PARAM_JOIN,
                       ZT_INIT_NORMAL, std);
        zt_block_param(def, sparse ? NULL : ZT__P("mlp.down_proj.weight"), zt_shape2(C, I), ZT_PARAM_DECAY, ZT_INIT_NORMAL,
                       proj_std);
        zt_block_param(def, NULL, zt_shape1(0), 0, ZT_INIT_ZEROS, 0);
        if (c->qk_norm) { /* the last slots, declared only here: the other models' parameters keep their numbers */
            zt_block_param(def, ZT__P("self_attn.q_norm.weight"), zt_shape1(HD), 0, ones, 0);
            zt_block_param(def, ZT__P("self_attn.k_norm.weight"), zt_shape1(HD), 0, ones, 0);
        } else if (c->sandwich_norms) {
            for (int i = 0; i < 2; i++) zt_block_param(def, NULL, zt_shape1(0), 0, ZT_INIT_ZEROS, 0);
        }
        if (c->sandwich_norms) {
            zt_block_param(def, ZT__P("post_attention_layernorm.weight"), zt_shape1(C), 0, ones, 0);
            zt_block_param(def, ZT__P("post_feedforward_layernorm.weight"), zt_shape1(C), 0, ones, 0);
        }
        if (sparse) { /* at zt__moe_slot: the router, then each expert's gate and up (joined) and down, by the
                         checkpoints' names (Mixtral's w1, w3 and w2) */
            int mixtral = strcmp(c->model_type, "mixtral") == 0;
            int64_t E = c->n_experts, EI = c->expert_intermediate;
            const char *moe = mixtral ? "block_sparse_moe" : "mlp", *names[3] = {"gate_proj", "up_proj", "down_proj"};
            if (mixtral) names[0] = "w1", names[1] = "w3", names[2] = "w2";
            char what[96];
            snprintf(what, sizeof what, "%s.gate.weight", moe);
            zt_block_param(def, ZT__P(what), zt_shape2(E, C), ZT_PARAM_DECAY, ZT_INIT_NORMAL, std);
            for (int64_t e = 0; e < E; e++)
                for (int w = 0; w < 3; w++) {
                    snprintf(what, sizeof what, "%s.experts.%lld.%s.weight", moe, (long long)e, names[w]);
                    zt_block_param(def, ZT__P(what), w == 2 ? zt_shape2(C, EI) : zt_shape2(EI, C),
                                   ZT_PARAM_DECAY | (w == 1 ? ZT_PARAM_JOIN : 0), ZT_INIT_NORMAL, w == 2 ? proj_std : std);
                }
            if (c->shared_intermediate > 0) { /* Qwen2-MoE: then the shared expert and its gate */
                int64_t SI = c->shared_intermediate;
                zt_block_param(def, ZT__P("mlp.shared_expert.gate_proj.weight"), zt_shape2(SI, C), ZT_PARAM_DECAY,
                               ZT_INIT_NORMAL, std);
                zt_block_param(def, ZT__P("mlp.shared_expert.up_proj.weight"), zt_shape2(SI, C),
                               ZT_PARAM_DECAY | ZT_PARAM_JOIN, ZT_INIT_NORMAL, std);
                zt_block_param(def, ZT__P("mlp.shared_expert.down_proj.weight"), zt_shape2(C, SI), ZT_PARAM_DECAY,
                               ZT_INIT_NORMAL, proj_std);
                zt_block_param(def, ZT__P("mlp.shared_expert_gate.weight"), zt_shape2(1, C), ZT_PARAM_DECAY,
                               ZT_INIT_NORMAL, std);
            }
        }
    }
#undef ZT__P
}

/* the projections of one layer, as views: GPT-2's c_attn holds q, k and v; LLaMA's gate and up are joined */
typedef struct zt__layer_weights { zt_tensor wq, bq, wk, bk, wv, bv, wo, bo, wup, bup, wdown, bdown; int has_qkv_bias, has_out_bias; } zt__layer_weights;

static zt__layer_weights zt__layer_views(const zt_model_config *c, const zt_tensor *p) {
    zt__layer_weights w;
    int gpt2 = strcmp(c->model_type, "gpt2") == 0;
    int64_t q = c->n_head * c->head_dim, kv = c->n_kv_head * c->head_dim;
    if (gpt2) {
        w.wq = zt__rows_of(p[ZT__L_QKV_W], 0, q);
        w.wk = zt__rows_of(p[ZT__L_QKV_W], q, kv);
        w.wv = zt__rows_of(p[ZT__L_QKV_W], q + kv, kv);
        w.bq = zt__rows_of(p[ZT__L_QKV_B], 0, q);
        w.bk = zt__rows_of(p[ZT__L_QKV_B], q, kv);
        w.bv = zt__rows_of(p[ZT__L_QKV_B], q + kv, kv);
        w.wup = p[ZT__L_UP_W];
        w.bup = p[ZT__L_UP_B];
    } else {
        w.wq = p[ZT__L_QKV_W], w.bq = p[ZT__L_QKV_B];
        w.wk = p[ZT__L_K_W], w.bk = p[ZT__L_K_B];
        w.wv = p[ZT__L_V_W], w.bv = p[ZT__L_V_B];
        if (c->fused) { /* Phi-3's qkv_proj: the rows of q, then k, then v */
            w.wq = zt__rows_of(p[ZT__L_QKV_W], 0, q);
            w.wk = zt__rows_of(p[ZT__L_QKV_W], q, kv);
            w.wv = zt__rows_of(p[ZT__L_QKV_W], q + kv, kv);
        }
        /* gate_proj (slot ZT__L_UP_W) and up_proj (the next slot) were declared joined: one (2I, C) matrix
           (Phi-3's gate_up_proj is that matrix already) */
        zt_tensor gate = p[ZT__L_UP_W];
        w.wup = zt__present(gate) ? zt_tensor_make(gate.data, gate.dtype, gate.place,
                                                   zt_shape2(2 * c->intermediate, c->hidden)) : gate;
        w.bup = zt__none();
    }
    w.wo = p[ZT__L_O_W], w.bo = p[ZT__L_O_B];
    w.wdown = p[ZT__L_DOWN_W], w.bdown = p[ZT__L_DOWN_B];
    w.has_qkv_bias = c->qkv_bias;
    w.has_out_bias = c->out_bias;
    return w;
}

/* (B, T, H, HD) as (B*T*H, HD): one row per head, for the per-head norms */
static zt_tensor zt__heads(zt_tensor x) {
    return zt_tensor_make(x.data, x.dtype, x.place, zt_shape2(zt_numel(x) / x.shape.d[3], x.shape.d[3]));
}

/* layer `layer`'s rope theta and scaling: Gemma 3's windowed layers have a theta of their own, unscaled */
static float zt__layer_rope(const zt_model_config *c, const zt_batch *b, int64_t layer, zt_rope_scaling *sc) {
    int local = c->local_rope_theta > 0 && zt__layer_windowed(c, layer);
    memset(sc, 0, sizeof *sc);
    if (!local) *sc = c->rope_scaling;
    if (!local && c->longrope) /* the long factors once the batch's positions pass the original context */
        sc->pair_factors = (double)b->positions > (double)sc->original_max_positions ? c->rope_long : c->rope_short;
    sc->rotary_dim = c->rotary_dim;
    return local ? c->local_rope_theta : c->rope_theta;
}

/* this layer's attention: its scale, cap and window, and its dropout in training */
static zt_attention_opts zt__layer_attention(const zt_block_ctx *ctx) {
    const zt_model_config *c = (const zt_model_config *)ctx->config;
    const zt_batch *b = ctx->batch;
    int64_t layer = ctx->index - 1;
    zt_attention_opts o;
    memset(&o, 0, sizeof o);
    o.scale = c->attn_scale, o.softcap = c->attn_softcap;
    o.window = zt__layer_windowed(c, layer) ? c->sliding_window : 0;
    if (ctx->training && c->attn_dropout > 0) {
        o.dropout = c->attn_dropout;
        o.dropout_seed = zt__drop_seed(ctx, ZT__DROP_ATTN);
        o.dropout_offset = b->first_row * c->n_head * b->T * b->T;
    }
    return o;
}

static const zt_tensor *zt__bias(const zt_tensor *b, int has) { return has && zt__present(*b) && zt_numel(*b) ? b : NULL; }

/* ---- the experts of a sparse layer (Mixtral, Qwen3-MoE): n2 (N,C) -> out (N,C) ---- */

/* expert e's [gate | up] (2EI, C) and down (C, EI), of the parameters or of their gradients */
static zt_tensor zt__expert_up(const zt_model_config *c, const zt_tensor *p, int64_t e) {
    zt_tensor gate = p[zt__moe_slot(c) + 1 + 3 * e];
    return zt__present(gate) ? zt_tensor_make(gate.data, gate.dtype, gate.place, zt_shape2(2 * c->expert_intermediate,
                                                                                         c->hidden)) : gate;
}
static zt_tensor zt__expert_down(const zt_model_config *c, const zt_tensor *p, int64_t e) {
    return p[zt__moe_slot(c) + 3 + 3 * e];
}

/* router_jitter_noise on a sparse layer's (N, C) input, or on its gradient: each layer's own noise, by global row */
static void zt__jitter(const zt_block_ctx *ctx, zt_tensor x) {
    const zt_model_config *c = (const zt_model_config *)ctx->config;
    const zt_batch *b = ctx->batch;
    zt_mul_uniform_noise(ctx->stream, x, c->router_jitter, zt__mix(b->seed ^ (uint64_t)ctx->index),
                         b->first_row * b->T * c->hidden);
}

/* Route each token to its experts; group the tokens' rows by expert; each expert's SwiGLU MLP on its rows (the
   row counts come to the host: one sync per layer); the outputs weighted back into the tokens' rows. */
static void zt__moe_forward(zt_block_ctx *ctx, zt_tensor out) {
    const zt_model_config *c = (const zt_model_config *)ctx->config;
    zt__layer_saved *sv = (zt__layer_saved *)ctx->saved;
    zt_stream *s = ctx->stream;
    zt_dtype A = ctx->act;
    int64_t N = zt_rows(sv->n2), C = c->hidden, E = c->n_experts, k = c->experts_per_token, EI = c->expert_intermediate;
    zt_tensor logits = zt_block_temp(ctx, A, zt_shape2(N, E)), counts = zt_block_temp(ctx, ZT_I32, zt_shape1(E));
    if (ctx->training && c->router_jitter > 0) zt__jitter(ctx, sv->n2); /* Mixtral's, in place: router and experts */
    zt_matmul_forward(s, logits, sv->n2, ctx->param[zt__moe_slot(c)], NULL);
    sv->probs = zt_block_keep(ctx, ZT_F32, zt_shape2(N, E));
    sv->idx = zt_block_keep(ctx, ZT_I32, zt_shape2(N, k)), sv->rw = zt_block_keep(ctx, ZT_F32, zt_shape2(N, k));
    zt_moe_route_forward(s, sv->idx, sv->rw, sv->probs, logits, c->norm_topk);
    sv->order = zt_block_keep(ctx, ZT_I32, zt_shape1(N * k)), sv->where = zt_block_keep(ctx, ZT_I32, zt_shape1(N * k));
    zt_moe_sort(s, sv->order, sv->where, counts, sv->idx);
    for (int64_t e = 0; e < E; e++) sv->counts[e] = e == 0 ? (int32_t)(N * k) : 0; /* what a measuring pass sees */
    zt_copy(s, zt_tensor_make(sv->counts, ZT_I32, ZT_HOST, zt_shape1(E)), counts);
    int balance = c->router_aux_coef > 0 && ctx->batch->shared;
    if (balance) { /* the tally: this layer's probability sums (its counts after the sync) */
        zt_tensor sums = zt__temp0(ctx, ZT_F32, zt_shape1(E));
        zt_sum_rows(s, sums, sv->probs);
        zt_copy(s, zt_tensor_make(zt__tally_probs(c, ctx->batch, ctx->index - 1), ZT_F32, ZT_HOST, zt_shape1(E)), sums);
    }
    sv->xs = zt_block_keep(ctx, A, zt_shape2(N * k, C));
    zt_moe_gather_forward(s, sv->xs, sv->n2, sv->order);
    sv->h = zt_block_keep(ctx, A, zt_shape2(N * k, 2 * EI));
    sv->a = zt_block_keep(ctx, A, zt_shape2(N * k, EI));
    sv->ys = zt_block_keep(ctx, A, zt_shape2(N * k, C));
    zt_stream_sync(s); /* the counts */
    if (balance) memcpy(zt__tally_counts(c, ctx->batch, ctx->index - 1), sv->counts, (size_t)E * sizeof(int32_t));
    for (int64_t e = 0, r = 0; e < E; r += sv->counts[e], e++) {
        int64_t n = sv->counts[e];
        if (n < 0 || r + n > N * k) zt_fatal("an MoE layer's row counts are damaged (expert %lld: %lld)", (long long)e, (long long)n);
        if (n == 0) continue;
        zt_matmul_forward(s, zt_slice(sv->h, r, n), zt_slice(sv->xs, r, n), zt__expert_up(c, ctx->param, e), NULL);
    }
    zt_swiglu_forward(s, sv->a, sv->h);
    for (int64_t e = 0, r = 0; e < E; r += sv->counts[e], e++)
        if (sv->counts[e] > 0)
            zt_matmul_forward(s, zt_slice(sv->ys, r, sv->counts[e]), zt_slice(sv->a, r, sv->counts[e]),
                              zt__expert_down(c, ctx->param, e), NULL);
    zt_moe_combine_forward(s, out, sv->ys, sv->rw, sv->where);
    if (c->shared_intermediate > 0) { /* + sigmoid(n2 . w_gate) * the shared expert's MLP of n2 */
        int64_t SI = c->shared_intermediate, at = zt__moe_slot(c) + 1 + 3 * E;
        zt_tensor wgu = ctx->param[at];
        wgu = zt_tensor_make(wgu.data, wgu.dtype, wgu.place, zt_shape2(2 * SI, C));
        sv->sh = zt_block_keep(ctx, A, zt_shape2(N, 2 * SI)), sv->sa = zt_block_keep(ctx, A, zt_shape2(N, SI));
        sv->sy = zt_block_keep(ctx, A, zt_shape2(N, C)), sv->sg = zt_block_keep(ctx, A, zt_shape2(N, 1));
        zt_matmul_forward(s, sv->sh, sv->n2, wgu, NULL);
        zt_swiglu_forward(s, sv->sa, sv->sh);
        zt_matmul_forward(s, sv->sy, sv->sa, ctx->param[at + 2], NULL);
        zt_matmul_forward(s, sv->sg, sv->n2, ctx->param[at + 3], NULL);
        zt_gated_add_forward(s, out, sv->sy, sv->sg);
    }
}

/* dn (N,C) += the gradient through the experts and the router of dout (N,C), with respect to their input n2 */
static void zt__moe_backward(zt_block_ctx *ctx, zt_tensor dn, zt_tensor dout) {
    const zt_model_config *c = (const zt_model_config *)ctx->config;
    zt__layer_saved *sv = (zt__layer_saved *)ctx->saved;
    zt_stream *s = ctx->stream;
    zt_dtype A = ctx->act;
    int64_t N = zt_rows(sv->n2), C = c->hidden, E = c->n_experts, k = c->experts_per_token, EI = c->expert_intermediate;
    if (c->shared_intermediate > 0) { /* the shared expert and its gate, into dn */
        int64_t SI = c->shared_intermediate, at = zt__moe_slot(c) + 1 + 3 * E;
        zt_tensor wgu = ctx->param[at], ggu = ctx->grad[at];
        wgu = zt_tensor_make(wgu.data, wgu.dtype, wgu.place, zt_shape2(2 * SI, C));
        if (zt__present(ggu)) ggu = zt_tensor_make(ggu.data, ggu.dtype, ggu.place, zt_shape2(2 * SI, C));
        zt_tensor dsy = zt__temp0(ctx, A, zt_shape2(N, C)), dsg = zt__temp0(ctx, A, zt_shape2(N, 1));
        zt_gated_add_backward(s, dsy, dsg, dout, sv->sy, sv->sg);
        zt_matmul_backward(s, &dn, zt__maybe(&ctx->grad[at + 3]), NULL, dsg, sv->n2, ctx->param[at + 3]);
        zt_tensor dsa = zt__temp0(ctx, A, zt_shape2(N, SI)), dsh = zt__temp0(ctx, A, zt_shape2(N, 2 * SI));
        zt_matmul_backward(s, &dsa, zt__maybe(&ctx->grad[at + 2]), NULL, dsy, sv->sa, ctx->param[at + 2]);
        zt_swiglu_backward(s, dsh, dsa, sv->sh);
        zt_matmul_backward(s, &dn, zt__maybe(&ggu), NULL, dsh, sv->n2, wgu);
    }
    zt_tensor dys = zt__temp0(ctx, A, zt_shape2(N * k, C)), drw = zt__temp0(ctx, ZT_F32, zt_shape2(N, k));
    zt_moe_combine_backward(s, dys, drw, dout, sv->ys, sv->rw, sv->where);
    zt_tensor da = zt__temp0(ctx, A, zt_shape2(N * k, EI)), dh = zt__temp0(ctx, A, zt_shape2(N * k, 2 * EI));
    zt_tensor dxs = zt__temp0(ctx, A, zt_shape2(N * k, C));
    for (int64_t e = 0, r = 0; e < E; r += sv->counts[e], e++) {
        int64_t n = sv->counts[e];
        if (n == 0) continue;
        zt_tensor da_e = zt_slice(da, r, n), gd = zt__expert_down(c, ctx->grad, e);
        zt_matmul_backward(s, &da_e, zt__maybe(&gd), NULL, zt_slice(dys, r, n), zt_slice(sv->a, r, n),
                           zt__expert_down(c, ctx->param, e));
    }
    zt_swiglu_backward(s, dh, da, sv->h);
    for (int64_t e = 0, r = 0; e < E; r += sv->counts[e], e++) {
        int64_t n = sv->counts[e];
        if (n == 0) continue;
        zt_tensor dxs_e = zt_slice(dxs, r, n), gu = zt__expert_up(c, ctx->grad, e);
        zt_matmul_backward(s, &dxs_e, zt__maybe(&gu), NULL, zt_slice(dh, r, n), zt_slice(sv->xs, r, n),
                           zt__expert_up(c, ctx->param, e));
    }
    zt_moe_gather_backward(s, dn, dxs, sv->where);
    zt_tensor dlogits = zt__temp0(ctx, A, zt_shape2(N, E)), gr = ctx->grad[zt__moe_slot(c)];
    zt_moe_route_backward(s, dlogits, drw, sv->probs, sv->idx, c->norm_topk);
    if (c->router_aux_coef > 0 && ctx->batch->shared) { /* the balancing loss through each token's probabilities */
        const zt_batch *b = ctx->batch;
        double rows = (double)zt__sparse_layers(c) * (double)N, d = (double)b->dloss * (double)b->counted;
        for (int64_t e = 0; e < E; e++) { /* d(coef E sum f_e P_e) / d p_te = coef E f_e / rows, f_e of every layer */
            double n = 0.0;
            for (int64_t l = 0; l < c->n_layer; l++) n += zt__layer_sparse(c, l) ? zt__tally_counts(c, b, l)[e] : 0;
            sv->dbalance[e] = (float)(c->router_aux_coef * (double)E * (n / rows) / rows * d);
        }
        zt_tensor g = zt_block_temp(ctx, ZT_F32, zt_shape1(E));
        zt_copy(s, g, zt_tensor_make(sv->dbalance, ZT_F32, ZT_HOST, zt_shape1(E)));
        zt_moe_balance_backward(s, dlogits, sv->probs, g);
    }
    zt_matmul_backward(s, &dn, zt__maybe(&gr), NULL, dlogits, sv->n2, ctx->param[zt__moe_slot(c)]);
}

static void zt__layer_forward(zt_block_ctx *ctx, zt_tensor out, zt_tensor inp) {
    const zt_model_config *c = (const zt_model_config *)ctx->config;
    const zt_batch *b = ctx->batch;
    zt_stream *s = ctx->stream;
    zt__layer_saved *sv = (zt__layer_saved *)ctx->saved;
    int gpt2 = strcmp(c->model_type, "gpt2") == 0;
    int64_t B = b->B, T = b->T, C = c->hidden, HD = c->head_dim, NH = c->n_head, NKV = c->n_kv_head;
    int64_t N = B * T, I = c->intermediate;
    zt__layer_weights w = zt__layer_views(c, ctx->param);
    const zt_tensor *starts = zt__present(b->starts) ? &b->starts : NULL;
    zt_dtype A = ctx->act;

    sv->n1 = zt_block_keep(ctx, A, zt_shape2(N, C));
    sv->rstd1 = zt_block_keep(ctx, ZT_F32, zt_shape1(N));
    if (gpt2) {
        sv->mean1 = zt_block_keep(ctx, ZT_F32, zt_shape1(N));
        zt_layernorm_forward(s, sv->n1, sv->mean1, sv->rstd1, inp, ctx->param[ZT__L_NORM1_W], ctx->param[ZT__L_NORM1_B], c->norm_eps);
    } else {
        zt_rmsnorm_offset_forward(s, sv->n1, sv->rstd1, inp, ctx->param[ZT__L_NORM1_W], c->norm_offset, c->norm_eps);
    }
    sv->q = zt_block_keep(ctx, A, zt_shape4(B, T, NH, HD));
    sv->k = zt_block_keep(ctx, A, zt_shape4(B, T, NKV, HD));
    sv->v = zt_block_keep(ctx, A, zt_shape4(B, T, NKV, HD));
    if (c->qk_norm) { /* Qwen3: each head of q and k normalised (RMSNorm over its HD) before the rotation */
        sv->q0 = zt_block_keep(ctx, A, sv->q.shape), sv->k0 = zt_block_keep(ctx, A, sv->k.shape);
        sv->qrstd = zt_block_keep(ctx, ZT_F32, zt_shape1(N * NH)), sv->krstd = zt_block_keep(ctx, ZT_F32, zt_shape1(N * NKV));
        zt_matmul_forward(s, zt__flat(sv->q0), sv->n1, w.wq, zt__bias(&w.bq, w.has_qkv_bias));
        zt_matmul_forward(s, zt__flat(sv->k0), sv->n1, w.wk, zt__bias(&w.bk, w.has_qkv_bias));
        zt_rmsnorm_offset_forward(s, zt__heads(sv->q), sv->qrstd, zt__heads(sv->q0), ctx->param[ZT__L_QNORM_W],
                                  c->norm_offset, c->norm_eps);
        zt_rmsnorm_offset_forward(s, zt__heads(sv->k), sv->krstd, zt__heads(sv->k0), ctx->param[ZT__L_KNORM_W],
                                  c->norm_offset, c->norm_eps);
    } else {
        zt_matmul_forward(s, zt__flat(sv->q), sv->n1, w.wq, zt__bias(&w.bq, w.has_qkv_bias));
        zt_matmul_forward(s, zt__flat(sv->k), sv->n1, w.wk, zt__bias(&w.bk, w.has_qkv_bias));
    }
    zt_matmul_forward(s, zt__flat(sv->v), sv->n1, w.wv, zt__bias(&w.bv, w.has_qkv_bias));
    if (!gpt2) { /* rotary positions, in place: backward rotates the gradients back */
        zt_rope_scaling rs;
        float theta = zt__layer_rope(c, b, ctx->index - 1, &rs);
        zt_rope_forward(s, sv->q, sv->q, b->pos, theta, &rs);
        zt_rope_forward(s, sv->k, sv->k, b->pos, theta, &rs);
    }
    sv->att = zt_block_keep(ctx, A, zt_shape4(B, T, NH, HD));
    sv->lse = zt_block_keep(ctx, ZT_F32, zt_shape3(B, NH, T));
    zt_attention_opts ao = zt__layer_attention(ctx);
    zt_attention_ex_forward(s, sv->att, sv->lse, sv->q, sv->k, sv->v, starts, &ao);
    int sandwich = c->sandwich_norms;
    zt_tensor proj = sandwich ? (sv->pa = zt_block_keep(ctx, A, zt_shape2(N, C))) : zt_block_temp(ctx, A, zt_shape2(N, C));
    zt_matmul_forward(s, proj, zt__flat(sv->att), w.wo, zt__bias(&w.bo, w.has_out_bias));
    if (sandwich) { /* Gemma 2: the attention's output normed before the residual add */
        sv->rstd_pa = zt_block_keep(ctx, ZT_F32, zt_shape1(N));
        proj = zt_block_temp(ctx, A, zt_shape2(N, C));
        zt_rmsnorm_offset_forward(s, proj, sv->rstd_pa, sv->pa, ctx->param[ZT__L_POST_ATTN_W], c->norm_offset, c->norm_eps);
    }
    if (ctx->training && c->resid_dropout > 0) zt__drop_rows(ctx, proj, c->resid_dropout, ZT__DROP_RESID_ATTN);
    sv->x2 = zt_block_keep(ctx, A, zt_shape2(N, C));
    zt_add(s, sv->x2, inp, proj);

    sv->n2 = zt_block_keep(ctx, A, zt_shape2(N, C));
    sv->rstd2 = zt_block_keep(ctx, ZT_F32, zt_shape1(N));
    if (gpt2) {
        sv->mean2 = zt_block_keep(ctx, ZT_F32, zt_shape1(N));
        zt_layernorm_forward(s, sv->n2, sv->mean2, sv->rstd2, sv->x2, ctx->param[ZT__L_NORM2_W], ctx->param[ZT__L_NORM2_B], c->norm_eps);
    } else {
        zt_rmsnorm_offset_forward(s, sv->n2, sv->rstd2, sv->x2, ctx->param[ZT__L_NORM2_W], c->norm_offset, c->norm_eps);
    }
    if (sandwich) proj = sv->pm = zt_block_keep(ctx, A, zt_shape2(N, C));
    if (zt__layer_sparse(c, ctx->index - 1)) {
        zt__moe_forward(ctx, proj);
    } else {
        int64_t H = gpt2 ? I : 2 * I; /* LLaMA: [gate | up] */
        sv->h = zt_block_keep(ctx, A, zt_shape2(N, H));
        zt_matmul_forward(s, sv->h, sv->n2, w.wup, zt__bias(&w.bup, w.has_out_bias && gpt2));
        sv->a = zt_block_keep(ctx, A, zt_shape2(N, I));
        if (gpt2) zt_gelu_forward(s, sv->a, sv->h);
        else if (c->geglu) zt_geglu_forward(s, sv->a, sv->h);
        else zt_swiglu_forward(s, sv->a, sv->h);
        zt_matmul_forward(s, proj, sv->a, w.wdown, zt__bias(&w.bdown, w.has_out_bias && gpt2));
    }
    if (sandwich) { /* and the MLP's */
        sv->rstd_pm = zt_block_keep(ctx, ZT_F32, zt_shape1(N));
        proj = zt_block_temp(ctx, A, zt_shape2(N, C));
        zt_rmsnorm_offset_forward(s, proj, sv->rstd_pm, sv->pm, ctx->param[ZT__L_POST_MLP_W], c->norm_offset, c->norm_eps);
    }
    if (ctx->training && c->resid_dropout > 0) zt__drop_rows(ctx, proj, c->resid_dropout, ZT__DROP_RESID_MLP);
    zt_add(s, out, sv->x2, proj);
}

static void zt__layer_backward(zt_block_ctx *ctx, zt_tensor dinp, zt_tensor dout, zt_tensor inp) {
    const zt_model_config *c = (const zt_model_config *)ctx->config;
    const zt_batch *b = ctx->batch;
    zt_stream *s = ctx->stream;
    zt__layer_saved *sv = (zt__layer_saved *)ctx->saved;
    int gpt2 = strcmp(c->model_type, "gpt2") == 0;
    int64_t N = b->B * b->T, C = c->hidden, I = c->intermediate, H = gpt2 ? I : 2 * I;
    int64_t q = c->n_head * c->head_dim, kv = c->n_kv_head * c->head_dim;
    zt__layer_weights w = zt__layer_views(c, ctx->param);
    zt__layer_weights g = zt__layer_views(c, ctx->grad);
    const zt_tensor *starts = zt__present(b->starts) ? &b->starts : NULL;
    zt_dtype A = ctx->act;
    int ob = w.has_out_bias && gpt2;

    float off = c->norm_offset;
    /* MLP: out = x2 + dropout(act(n2 @ Wup^T) @ Wdown^T) (Gemma 2: that product normed) */
    zt_tensor dm = dout;
    if (c->resid_dropout > 0) dm = zt__drop_grad(ctx, dout, zt_shape2(N, C), c->resid_dropout, ZT__DROP_RESID_MLP);
    if (c->sandwich_norms) {
        zt_tensor dd = dm;
        dm = zt__temp0(ctx, A, zt_shape2(N, C));
        zt_rmsnorm_offset_backward(s, dm, ctx->grad[ZT__L_POST_MLP_W], dd, sv->pm, ctx->param[ZT__L_POST_MLP_W], off,
                                   sv->rstd_pm);
    }
    zt_tensor dn = zt__temp0(ctx, A, zt_shape2(N, C));
    if (zt__layer_sparse(c, ctx->index - 1)) {
        zt__moe_backward(ctx, dn, dm);
        if (c->router_jitter > 0) zt__jitter(ctx, dn); /* dn held the jittered n2's gradient alone: now the norm's */
    } else {
        zt_tensor da = zt__temp0(ctx, A, zt_shape2(N, I));
        zt_matmul_backward(s, &da, zt__maybe(&g.wdown), ob ? zt__maybe(&g.bdown) : NULL, dm, sv->a, w.wdown);
        zt_tensor dh = zt__temp0(ctx, A, zt_shape2(N, H));
        if (gpt2) zt_gelu_backward(s, dh, da, sv->h);
        else if (c->geglu) zt_geglu_backward(s, dh, da, sv->h);
        else zt_swiglu_backward(s, dh, da, sv->h);
        zt_matmul_backward(s, &dn, zt__maybe(&g.wup), ob ? zt__maybe(&g.bup) : NULL, dh, sv->n2, w.wup);
    }
    zt_tensor dx2 = zt_block_temp(ctx, A, zt_shape2(N, C));
    zt_copy(s, dx2, zt_view(dout, 0, dx2.shape)); /* the residual path */
    if (gpt2)
        zt_layernorm_backward(s, dx2, ctx->grad[ZT__L_NORM2_W], ctx->grad[ZT__L_NORM2_B], dn, sv->x2,
                              ctx->param[ZT__L_NORM2_W], sv->mean2, sv->rstd2);
    else
        zt_rmsnorm_offset_backward(s, dx2, ctx->grad[ZT__L_NORM2_W], dn, sv->x2, ctx->param[ZT__L_NORM2_W], off, sv->rstd2);

    /* attention: x2 = inp + dropout(attention(n1) @ Wo^T) (Gemma 2: that product normed) */
    zt_add(s, dinp, dinp, dx2);
    zt_tensor dpa = dx2;
    if (c->resid_dropout > 0) dpa = zt__drop_grad(ctx, dx2, dx2.shape, c->resid_dropout, ZT__DROP_RESID_ATTN);
    if (c->sandwich_norms) {
        zt_tensor dd = dpa;
        dpa = zt__temp0(ctx, A, zt_shape2(N, C));
        zt_rmsnorm_offset_backward(s, dpa, ctx->grad[ZT__L_POST_ATTN_W], dd, sv->pa, ctx->param[ZT__L_POST_ATTN_W], off,
                                   sv->rstd_pa);
    }
    zt_tensor datt = zt__temp0(ctx, A, sv->att.shape), datt2 = zt__flat(datt);
    zt_matmul_backward(s, &datt2, zt__maybe(&g.wo), w.has_out_bias ? zt__maybe(&g.bo) : NULL, dpa, zt__flat(sv->att), w.wo);
    zt_tensor dq = zt__temp0(ctx, A, sv->q.shape), dk = zt__temp0(ctx, A, sv->k.shape), dv = zt__temp0(ctx, A, sv->v.shape);
    zt_attention_opts ao = zt__layer_attention(ctx);
    zt_attention_ex_backward(s, dq, dk, dv, datt, sv->q, sv->k, sv->v, sv->att, sv->lse, starts, &ao);
    if (!gpt2) { /* rotate the gradients of the rotated q and k back */
        zt_tensor t = zt__temp0(ctx, A, dq.shape);
        zt_rope_scaling rs;
        float theta = zt__layer_rope(c, b, ctx->index - 1, &rs);
        zt_rope_backward(s, t, dq, b->pos, theta, &rs);
        dq = t;
        t = zt__temp0(ctx, A, dk.shape);
        zt_rope_backward(s, t, dk, b->pos, theta, &rs);
        dk = t;
    }
    if (c->qk_norm) { /* through each head's norm, to q and k as the projections made them */
        zt_tensor t = zt__temp0(ctx, A, dq.shape);
        zt_rmsnorm_offset_backward(s, zt__heads(t), ctx->grad[ZT__L_QNORM_W], zt__heads(dq), zt__heads(sv->q0),
                                   ctx->param[ZT__L_QNORM_W], off, sv->qrstd);
        dq = t;
        t = zt__temp0(ctx, A, dk.shape);
        zt_rmsnorm_offset_backward(s, zt__heads(t), ctx->grad[ZT__L_KNORM_W], zt__heads(dk), zt__heads(sv->k0),
                                   ctx->param[ZT__L_KNORM_W], off, sv->krstd);
        dk = t;
    }
    zt_fill(s, dn, 0.0f);
    int qb = w.has_qkv_bias;
    dq = zt__flat(dq), dk = zt__flat(dk), dv = zt__flat(dv);
    if (gpt2) {
        zt_tensor gw = ctx->grad[ZT__L_QKV_W], gb = ctx->grad[ZT__L_QKV_B];
        zt_tensor gwq = zt__rows_of(gw, 0, q), gwk = zt__rows_of(gw, q, kv), gwv = zt__rows_of(gw, q + kv, kv);
        zt_tensor gbq = zt__rows_of(gb, 0, q), gbk = zt__rows_of(gb, q, kv), gbv = zt__rows_of(gb, q + kv, kv);
        zt_matmul_backward(s, &dn, zt__maybe(&gwq), zt__maybe(&gbq), dq, sv->n1, w.wq);
        zt_matmul_backward(s, &dn, zt__maybe(&gwk), zt__maybe(&gbk), dk, sv->n1, w.wk);
        zt_matmul_backward(s, &dn, zt__maybe(&gwv), zt__maybe(&gbv), dv, sv->n1, w.wv);
        zt_layernorm_backward(s, dinp, ctx->grad[ZT__L_NORM1_W], ctx->grad[ZT__L_NORM1_B], dn, inp,
                              ctx->param[ZT__L_NORM1_W], sv->mean1, sv->rstd1);
    } else {
        zt_matmul_backward(s, &dn, zt__maybe(&g.wq), qb ? zt__maybe(&g.bq) : NULL, dq, sv->n1, w.wq);
        zt_matmul_backward(s, &dn, zt__maybe(&g.wk), qb ? zt__maybe(&g.bk) : NULL, dk, sv->n1, w.wk);
        zt_matmul_backward(s, &dn, zt__maybe(&g.wv), qb ? zt__maybe(&g.bv) : NULL, dv, sv->n1, w.wv);
        zt_rmsnorm_offset_backward(s, dinp, ctx->grad[ZT__L_NORM1_W], dn, inp, ctx->param[ZT__L_NORM1_W], off, sv->rstd1);
    }
}

static const zt_block_type zt__gpt2_layer = {"gpt2.layer", sizeof(zt__layer_saved), zt__layer_declare,
                                             zt__layer_forward, zt__layer_backward};
static const zt_block_type zt__llama_layer = {"llama.layer", sizeof(zt__layer_saved), zt__layer_declare,
                                              zt__layer_forward, zt__layer_backward};
ZT_API const zt_block_type *zt_gpt2_block(void) { return &zt__gpt2_layer; }
ZT_API const zt_block_type *zt_llama_block(void) { return &zt__llama_layer; }

/* >>comm (implementation) ---------------------------------------------------------------------- */

#include <fcntl.h>
#include <signal.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#define ZT__COMM_MAX_RANKS 256
#define ZT__COMM_MAGIC 0x7a74636f6d6d3031ull /* "ztcomm01" */

/* The shared segment: this header (one page), then one slot of chunk_bytes per rank, then a result
   slot. The barrier is a counter and a generation word that waiting ranks sleep on (a futex). */
typedef struct zt__shm_header {
    uint64_t magic;
    uint64_t chunk_bytes;
    int32_t world;
    uint32_t arrived, generation;
    int32_t abort_rank; /* -1, or the rank whose loss stopped the job */
    int32_t pids[ZT__COMM_MAX_RANKS];
    uint64_t call[ZT__COMM_MAX_RANKS]; /* what each rank's current collective is, to catch a mismatch */
    char abort_msg[256];
    /* shared device memory (zt_comm_share_device): each rank's memfd and size, whether it mapped every
       other rank's, and where the current collective's tensors lie in it (-1: elsewhere) */
    int32_t share_fd[ZT__COMM_MAX_RANKS], share_ok[ZT__COMM_MAX_RANKS];
    uint64_t share_bytes[ZT__COMM_MAX_RANKS];
    int64_t off_in[ZT__COMM_MAX_RANKS], off_out[ZT__COMM_MAX_RANKS];
} zt__shm_header;
#define ZT__SHM_HEADER ((size_t)16384)
ZT_STATIC_ASSERT(sizeof(zt__shm_header) <= ZT__SHM_HEADER, "the header fits in its pages");

struct zt_comm {
    int rank, world, shm;
    uint64_t calls; /* collectives run so far */
    double timeout;
    zt__shm_header *h;
    uint8_t *slots, *result;
    size_t chunk, map_bytes;
    int zero_copy;                           /* every rank maps every other's device memory */
    int device_direct;                       /* the backend moves collectives itself (CUDA: NCCL) */
    uint8_t *peer[ZT__COMM_MAX_RANKS];       /* ... at these addresses (this rank's own: its own) */
    size_t peer_bytes[ZT__COMM_MAX_RANKS];
    int tcp;                                 /* ranks on several hosts: a connection to every other rank */
    int fd[ZT__COMM_MAX_RANKS];              /* ... this rank's to rank q (-1: itself) */
    uint8_t *stage;                          /* TCP: a slot of `chunk` bytes for what each rank sends */
    char failed[256];                        /* TCP: why this rank's collectives stopped ("": they did not) */
};

/* more than one rank, through the shared segment or TCP */
static int zt__comm_several(const zt_comm *c) { return c->shm || c->tcp; }

static size_t zt__shm_bytes(int world, size_t chunk) { return ZT__SHM_HEADER + (size_t)(world + 1) * chunk; }

ZT_API zt_result zt_comm_single(zt_comm **out) {
    zt_comm *c = (zt_comm *)calloc(1, sizeof *c); /* setup time */
    if (!c) return zt_fail(ZT_ERROR_MEMORY, "out of host memory creating a communicator");
    c->world = 1;
    c->timeout = 300;
    *out = c;
    return ZT_OK;
}

ZT_API zt_result zt_comm_shm_create(int world, size_t chunk_bytes, int *fd) {
    if (world < 1 || world > ZT__COMM_MAX_RANKS)
        return zt_fail(ZT_ERROR_INVALID, "a shared-memory job has 1 to %d ranks, not %d", ZT__COMM_MAX_RANKS, world);
    if (chunk_bytes < 4096 || chunk_bytes > ((size_t)1 << 30))
        return zt_fail(ZT_ERROR_INVALID, "a shared-memory slot is 4 KiB to 1 GiB, not %zu bytes", chunk_bytes);
    chunk_bytes = (chunk_bytes + 4095) / 4096 * 4096;
    /* a memfd, not /dev/shm: containers often give /dev/shm only 64 MB */
    *fd = (int)syscall(SYS_memfd_create, "zt-comm", 0);
    if (*fd < 0) return zt_fail(ZT_ERROR_BACKEND, "cannot create the shared-memory segment: %s", strerror(errno));
    size_t bytes = zt__shm_bytes(world, chunk_bytes);
    if (ftruncate(*fd, (off_t)bytes) != 0) {
        close(*fd);
        return zt_fail(ZT_ERROR_MEMORY, "cannot size the shared-memory segment to %zu bytes: %s", bytes, strerror(errno));
    }
    zt__shm_header *h = (zt__shm_header *)mmap(NULL, ZT__SHM_HEADER, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
    if (h == MAP_FAILED) {
        close(*fd);
        return zt_fail(ZT_ERROR_BACKEND, "cannot map the shared-memory segment: %s", strerror(errno));
    }
    memset(h, 0, sizeof *h);
    h->magic = ZT__COMM_MAGIC;
    h->chunk_bytes = chunk_bytes;
    h->world = world;
    h->abort_rank = -1;
    munmap(h, ZT__SHM_HEADER);
    return ZT_OK;
}

ZT_API zt_result zt_comm_shm_attach(zt_comm **out, int fd, int rank, int world) {
    *out = NULL;
    zt__shm_header head;
    if (pread(fd, &head, sizeof head, 0) != (ssize_t)sizeof head || head.magic != ZT__COMM_MAGIC)
        return zt_fail(ZT_ERROR_INVALID, "fd %d is not a zt shared-memory segment", fd);
    if (head.world != world || rank < 0 || rank >= world)
        return zt_fail(ZT_ERROR_INVALID, "rank %d of %d cannot join a segment made for %d ranks", rank, world, head.world);
    zt_comm *c = (zt_comm *)calloc(1, sizeof *c); /* setup time */
    if (!c) return zt_fail(ZT_ERROR_MEMORY, "out of host memory creating a communicator");
    c->rank = rank, c->world = world, c->shm = 1, c->timeout = 300;
    c->chunk = head.chunk_bytes;
    c->map_bytes = zt__shm_bytes(world, c->chunk);
    void *m = mmap(NULL, c->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        free(c);
        return zt_fail(ZT_ERROR_BACKEND, "cannot map the shared-memory segment: %s", strerror(errno));
    }
    c->h = (zt__shm_header *)m;
    c->slots = (uint8_t *)m + ZT__SHM_HEADER;
    c->result = c->slots + (size_t)world * c->chunk;
    int32_t none = 0, me = (int32_t)getpid();
    if (!__atomic_compare_exchange_n(&c->h->pids[rank], &none, me, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) && none != me) {
        munmap(m, c->map_bytes);
        free(c);
        return zt_fail(ZT_ERROR_INVALID, "rank %d of %d has already joined this job (pid %d): two processes were "
                       "started as the same rank", rank, world, (int)none);
    }
    *out = c;
    return ZT_OK;
}

static void zt__comm_unshare(zt_comm *c);

ZT_API void zt_comm_destroy(zt_comm *c) {
    if (!c) return;
    zt__comm_unshare(c);
    if (c->shm) munmap(c->h, c->map_bytes);
    for (int q = 0; q < c->world && c->tcp; q++)
        if (c->fd[q] >= 0) close(c->fd[q]);
    free(c->stage);
    free(c);
}

static int zt__cpu_share(zt_backend *b, void **base, size_t *bytes);
static zt_result zt__shm_barrier(zt_comm *c);

/* this rank stops using the others' memory (its own is going away): collectives stage again, every rank
   agreeing per collective, since this one now posts no offsets */
static void zt__comm_unshare(zt_comm *c) {
    for (int q = 0; q < c->world && c->shm; q++) {
        if (q != c->rank && c->peer[q]) munmap(c->peer[q], c->peer_bytes[q]);
        c->peer[q] = NULL, c->peer_bytes[q] = 0;
    }
    c->zero_copy = 0;
}

ZT_API zt_result zt_comm_share_device(zt_comm *c, zt_backend *b) {
    if (c->tcp && c->world > 1) return b->vt->share ? b->vt->share(b, c) : ZT_OK; /* other hosts: no mapping */
    if (!c->shm || c->world == 1) return ZT_OK;
    zt__comm_unshare(c); /* an earlier engine's memory */
    if (b->vt->share) return b->vt->share(b, c);
    int R = c->rank, W = c->world, ok = 1;
    void *base = NULL;
    size_t bytes = 0;
    int fd = zt__cpu_share(b, &base, &bytes);
    c->h->share_fd[R] = fd, c->h->share_bytes[R] = bytes, c->h->share_ok[R] = 0;
    zt_result r = zt__shm_barrier(c);
    if (r != ZT_OK) return r;
    c->peer[R] = (uint8_t *)base, c->peer_bytes[R] = bytes;
    for (int q = 0; q < W && ok; q++) { /* each other rank's memfd, through /proc */
        if (q == R) continue;
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)c->h->pids[q], (int)c->h->share_fd[q]);
        int pfd = c->h->share_fd[q] >= 0 && fd >= 0 ? open(path, O_RDWR | O_CLOEXEC) : -1;
        void *m = pfd >= 0 ? mmap(NULL, (size_t)c->h->share_bytes[q], PROT_READ | PROT_WRITE, MAP_SHARED, pfd, 0) : MAP_FAILED;
        if (pfd >= 0) close(pfd);
        if (m == MAP_FAILED) ok = 0;
        else c->peer[q] = (uint8_t *)m, c->peer_bytes[q] = (size_t)c->h->share_bytes[q];
    }
    c->h->share_ok[R] = ok;
    if ((r = zt__shm_barrier(c)) != ZT_OK) return r;
    c->zero_copy = 1;
    for (int q = 0; q < W; q++) c->zero_copy &= c->h->share_ok[q];
    if ((r = zt__shm_barrier(c)) != ZT_OK) return r; /* every rank has read every flag */
    if (!c->zero_copy) zt__comm_unshare(c); /* one rank could not: every rank stages through the slots */
    return ZT_OK;
}

ZT_API int zt_comm_is_direct(const zt_comm *c) { return c->zero_copy || c->device_direct; }
ZT_API void zt_comm_unshare_device(zt_comm *c, zt_backend *b) {
    if (b->vt->unshare) {
        b->vt->unshare(b, c);
        return;
    }
    void *base = NULL;
    size_t bytes = 0;
    zt__cpu_share(b, &base, &bytes);
    if (c->peer[c->rank] && c->peer[c->rank] == (uint8_t *)base) zt__comm_unshare(c); /* that backend's memory */
}
ZT_API int zt_comm_rank(const zt_comm *c) { return c->rank; }
ZT_API int zt_comm_world(const zt_comm *c) { return c->world; }
ZT_API void zt_comm_set_timeout(zt_comm *c, double seconds) { c->timeout = seconds; }

/* a process that exited is gone even while it is a zombie its parent has not reaped */
static int zt__pid_alive(int pid) {
    if (pid <= 0) return 1; /* not attached yet */
    if (kill(pid, 0) != 0 && errno == ESRCH) return 0;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 1; /* no /proc: trust kill */
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 1;
    buf[n] = 0;
    const char *paren = strrchr(buf, ')');
    return !(paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X'));
}

static void zt__comm_abort(zt_comm *c, int rank, const char *msg) {
    if (!c->shm) { /* TCP: the others learn it from this rank's closed connections */
        if (!c->failed[0]) snprintf(c->failed, sizeof c->failed, "%s", msg);
        return;
    }
    int32_t none = -1;
    if (__atomic_compare_exchange_n(&c->h->abort_rank, &none, rank, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        snprintf(c->h->abort_msg, sizeof c->h->abort_msg, "%s", msg);
    __atomic_add_fetch(&c->h->generation, 0x10000, __ATOMIC_RELEASE); /* wake every waiter */
    syscall(SYS_futex, &c->h->generation, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

static zt_result zt__comm_failed(zt_comm *c) {
    return zt_fail(ZT_ERROR_BACKEND, "rank %d of %d: %s", c->rank, c->world, c->shm ? c->h->abort_msg : c->failed);
}

/* Every rank arrives, then all go on. Waiters sleep on the generation word and look at the others'
   pids a few times a second: a rank that died stops everyone with its number. */
static zt_result zt__shm_barrier(zt_comm *c) {
    zt__shm_header *h = c->h;
    if (__atomic_load_n(&h->abort_rank, __ATOMIC_ACQUIRE) >= 0) return zt__comm_failed(c);
    uint32_t gen = __atomic_load_n(&h->generation, __ATOMIC_ACQUIRE);
    if (__atomic_add_fetch(&h->arrived, 1, __ATOMIC_ACQ_REL) == (uint32_t)c->world) {
        __atomic_store_n(&h->arrived, 0, __ATOMIC_RELAXED);
        __atomic_add_fetch(&h->generation, 1, __ATOMIC_RELEASE);
        syscall(SYS_futex, &h->generation, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
        return ZT_OK;
    }
    uint64_t start = zt_time_ns(), checked = start;
    while (__atomic_load_n(&h->generation, __ATOMIC_ACQUIRE) == gen) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        syscall(SYS_futex, &h->generation, FUTEX_WAIT, gen, &ts, NULL, 0);
        if (__atomic_load_n(&h->abort_rank, __ATOMIC_ACQUIRE) >= 0) return zt__comm_failed(c);
        if (__atomic_load_n(&h->generation, __ATOMIC_ACQUIRE) != gen) break; /* done while we slept */
        uint64_t now = zt_time_ns();
        if (now - checked > 200 * 1000 * 1000) {
            checked = now;
            for (int r = 0; r < c->world; r++) {
                int pid = __atomic_load_n(&h->pids[r], __ATOMIC_ACQUIRE);
                if (r == c->rank || zt__pid_alive(pid)) continue;
                if (__atomic_load_n(&h->generation, __ATOMIC_ACQUIRE) != gen) break; /* it left after finishing */
                char msg[200];
                snprintf(msg, sizeof msg, "rank %d (pid %d) is gone: it exited or was killed during a collective", r, pid);
                zt__comm_abort(c, r, msg);
                return zt__comm_failed(c);
            }
        }
        if ((double)(now - start) / 1e9 > c->timeout) {
            char msg[200];
            snprintf(msg, sizeof msg, "rank %d waited %.0f s for the others at a collective (the timeout)", c->rank, c->timeout);
            zt__comm_abort(c, c->rank, msg);
            return zt__comm_failed(c);
        }
    }
    if (__atomic_load_n(&h->abort_rank, __ATOMIC_ACQUIRE) >= 0) return zt__comm_failed(c); /* woken by an abort */
    return ZT_OK;
}

static zt_result zt__tcp_barrier(zt_comm *c);
static zt_result zt__tcp_run(const zt__args_comm *a);

ZT_API zt_result zt_barrier(zt_comm *c) { return c->tcp ? zt__tcp_barrier(c) : c->shm ? zt__shm_barrier(c) : ZT_OK; }

/* The sum over ranks of src[r][0..n), in rank order in f32 (times scale), written to each of n_dst
   destinations; every collective reduces through here, so every path gives the same bits. A block is
   read whole before it is written, so a destination may be one of the sources. */
static void zt__reduce_into(uint8_t *const *dst, int n_dst, zt_dtype t, const uint8_t *const *src, int world, int64_t n,
                            float scale) {
    float acc[1024], tmp[1024];
    for (int64_t i0 = 0; i0 < n; i0 += 1024) {
        int64_t k = ZT__MIN(1024, n - i0);
        zt__to_f32(acc, src[0], t, i0, k);
        for (int r = 1; r < world; r++) {
            const float *x = tmp;
            if (t == ZT_F32) x = (const float *)src[r] + i0; /* no widening to do */
            else zt__to_f32(tmp, src[r], t, i0, k);
            for (int64_t i = 0; i < k; i++) acc[i] += x[i];
        }
        if (scale != 1.0f)
            for (int64_t i = 0; i < k; i++) acc[i] *= scale;
        for (int d = 0; d < n_dst; d++) zt__from_f32(dst[d], t, i0, acc, k);
    }
}

/* dst[0..n) = the sum over ranks of src_r[0..n), src_r = base + r * stride bytes */
static void zt__reduce_ranks(void *dst, zt_dtype t, const uint8_t *base, size_t stride, int world, int64_t n, float scale) {
    const uint8_t *src[ZT__COMM_MAX_RANKS];
    uint8_t *d = (uint8_t *)dst;
    for (int r = 0; r < world; r++) src[r] = base + (size_t)r * stride;
    zt__reduce_into(&d, 1, t, src, world, n, scale);
}

/* where tensor x lies in this rank's shared device memory, or -1 */
static int64_t zt__share_off(const zt_comm *c, zt_tensor x) {
    const uint8_t *p = (const uint8_t *)x.data, *base = c->peer[c->rank];
    size_t bytes = zt_nbytes(x);
    if (!c->zero_copy || !p || p < base || p + bytes > base + c->peer_bytes[c->rank]) return -1;
    return (int64_t)(p - base);
}

/* a collective on every rank's device memory directly (zt_comm_share_device), no staging: each rank
   reduces its own share of the elements, reading every rank's input and writing every rank's output */
static zt_result zt__comm_direct(zt_comm *c, const zt__args_comm *a) {
    int W = c->world, R = c->rank;
    zt_dtype t = a->out.dtype;
    size_t es = zt_dtype_size(t);
    int64_t n = zt_numel(a->out);
    float scale = a->op == ZT_REDUCE_AVG ? 1.0f / (float)W : 1.0f;
    const uint8_t *in[ZT__COMM_MAX_RANKS];
    uint8_t *out[ZT__COMM_MAX_RANKS];
    for (int q = 0; q < W; q++) in[q] = c->peer[q] + c->h->off_in[q], out[q] = c->peer[q] + c->h->off_out[q];
    switch (a->what) {
    case ZT__ALL_REDUCE: {
        int64_t lo = n * R / W, hi = n * (R + 1) / W;
        for (int q = 0; q < W; q++) in[q] += (size_t)lo * es, out[q] += (size_t)lo * es;
        zt__reduce_into(out, W, t, in, W, hi - lo, scale);
        break;
    }
    case ZT__REDUCE_SCATTER: { /* this rank's part of every input into its output */
        int64_t stride = a->stride ? a->stride : n;
        for (int q = 0; q < W; q++) in[q] += (size_t)R * (size_t)stride * es;
        zt__reduce_into(&out[R], 1, t, in, W, n, scale);
        break;
    }
    case ZT__ALL_GATHER: { /* this rank's part into every output */
        int64_t part = a->stride ? zt_numel(a->inp) : n / W, stride = a->stride ? a->stride : part;
        for (int q = 0; q < W; q++) memmove(out[q] + (size_t)R * (size_t)stride * es, in[R], (size_t)part * es);
        break;
    }
    case ZT__BROADCAST:
        if (R != a->root) memcpy(out[R], in[a->root], (size_t)n * es);
        break;
    }
    return zt__shm_barrier(c); /* no rank goes on to change its buffers while another still reads them */
}

static uint64_t zt__comm_mix(uint64_t x) {
    x = (x ^ (x >> 33)) * 0xff51afd7ed558ccdull;
    return x ^ (x >> 29);
}

/* what this rank's next collective is (its number, kind, dtype, root and size), as a word to compare */
static uint64_t zt__comm_call(zt_comm *c, const zt__args_comm *a) {
    uint64_t n = (uint64_t)zt_numel(a->out);
    return zt__comm_mix(++c->calls ^ zt__comm_mix(((uint64_t)a->what << 56) ^ ((uint64_t)a->out.dtype << 48) ^
                                                  ((uint64_t)a->root << 40) ^ n));
}

/* a: the collective this rank is at (NULL: a barrier) */
static void zt__comm_mismatch(const zt_comm *c, const zt__args_comm *a, int q, char *msg, size_t cap) {
    static const char *names[] = {"all_reduce", "reduce_scatter", "all_gather", "broadcast"};
    char what[96] = "a barrier";
    if (a) snprintf(what, sizeof what, "%s of %lld %s elements", names[a->what], (long long)zt_numel(a->out),
                    zt_dtype_name(a->out.dtype));
    snprintf(msg, cap, "collective #%llu differs between ranks (rank %d: %s; rank %d another): every rank must run the "
             "same collectives in the same order", (unsigned long long)c->calls, c->rank, what, q);
}

/* a collective, run on host-visible memory (the CPU backend's device memory is host memory) */
static zt_result zt__comm_run(const zt__args_comm *a) {
    zt_comm *c = a->comm;
    int W = c->world, R = c->rank;
    zt_dtype t = a->out.dtype;
    size_t es = zt_dtype_size(t);
    float scale = a->op == ZT_REDUCE_AVG ? 1.0f / (float)W : 1.0f;
    uint8_t *out = (uint8_t *)a->out.data;
    const uint8_t *in = (const uint8_t *)a->inp.data;
    int64_t n = zt_numel(a->out);
    zt_result r = ZT_OK;
    if (c->tcp) return zt__tcp_run(a);
    if (!c->shm) { /* one rank */
        if (a->what == ZT__REDUCE_SCATTER || a->what == ZT__ALL_GATHER) memmove(out, in, (size_t)n * es);
        return ZT_OK;
    }
    /* every rank must be at the same collective with the same size: compare, then go on together */
    uint64_t call = zt__comm_call(c, a);
    c->h->off_in[R] = zt__share_off(c, a->inp);
    c->h->off_out[R] = zt__share_off(c, a->out);
    __atomic_store_n(&c->h->call[R], call, __ATOMIC_RELEASE);
    if ((r = zt__shm_barrier(c))) return r;
    for (int q = 0; q < W; q++)
        if (__atomic_load_n(&c->h->call[q], __ATOMIC_ACQUIRE) != call) {
            char msg[200];
            zt__comm_mismatch(c, a, q, msg, sizeof msg);
            zt__comm_abort(c, R, msg);
            return zt__comm_failed(c);
        }
    int direct = c->zero_copy; /* every rank's tensors in shared memory: no staging through the slots */
    for (int q = 0; q < W && direct; q++) direct = c->h->off_in[q] >= 0 && c->h->off_out[q] >= 0;
    if ((r = zt__shm_barrier(c))) return r;
    if (direct) return zt__comm_direct(c, a);
    int64_t m = (int64_t)(c->chunk / es), stride = 0; /* elements a slot holds */
    uint8_t *mine = c->slots + (size_t)R * c->chunk;
    switch (a->what) {
    case ZT__ALL_REDUCE:
        for (int64_t o = 0; o < n && r == ZT_OK; o += m) {
            int64_t k = ZT__MIN(m, n - o), lo = k * R / W, hi = k * (R + 1) / W;
            memcpy(mine, out + (size_t)o * es, (size_t)k * es);
            if ((r = zt__shm_barrier(c))) break;
            zt__reduce_ranks(c->result + (size_t)lo * es, t, c->slots + (size_t)lo * es, c->chunk, W, hi - lo, scale);
            if ((r = zt__shm_barrier(c))) break;
            memcpy(out + (size_t)o * es, c->result, (size_t)k * es);
            r = zt__shm_barrier(c);
        }
        return r;
    case ZT__REDUCE_SCATTER: /* in (W parts of n, `stride` apart) -> out (n) */
        m /= W;
        stride = a->stride ? a->stride : n;
        for (int64_t o = 0; o < n && r == ZT_OK; o += m) {
            int64_t k = ZT__MIN(m, n - o);
            for (int s = 0; s < W; s++) memcpy(mine + (size_t)s * (size_t)k * es, in + ((size_t)s * (size_t)stride + (size_t)o) * es, (size_t)k * es);
            if ((r = zt__shm_barrier(c))) break;
            zt__reduce_ranks(out + (size_t)o * es, t, c->slots + (size_t)R * (size_t)k * es, c->chunk, W, k, scale);
            r = zt__shm_barrier(c);
        }
        return r;
    case ZT__ALL_GATHER: { /* in (part) -> out (W parts, `stride` apart) */
        int64_t part = a->stride ? zt_numel(a->inp) : n / W;
        stride = a->stride ? a->stride : part;
        for (int64_t o = 0; o < part && r == ZT_OK; o += m) {
            int64_t k = ZT__MIN(m, part - o);
            memcpy(mine, in + (size_t)o * es, (size_t)k * es);
            if ((r = zt__shm_barrier(c))) break;
            for (int s = 0; s < W; s++) memcpy(out + ((size_t)s * (size_t)stride + (size_t)o) * es, c->slots + (size_t)s * c->chunk, (size_t)k * es);
            r = zt__shm_barrier(c);
        }
        return r;
    }
    case ZT__BROADCAST:
        for (int64_t o = 0; o < n && r == ZT_OK; o += m) {
            int64_t k = ZT__MIN(m, n - o);
            if (R == a->root) memcpy(c->result, out + (size_t)o * es, (size_t)k * es);
            if ((r = zt__shm_barrier(c))) break;
            if (R != a->root) memcpy(out + (size_t)o * es, c->result, (size_t)k * es);
            r = zt__shm_barrier(c);
        }
        return r;
    }
    return r;
}

/* A collective on memory the host cannot touch (a GPU's), staged through a host buffer: the data is
   fetched with get, the collective runs on host memory, the results go back with put. Chunks depend on
   the collective's size and the buffer's only, and every rank's buffer is the same size, so every rank
   runs the same sequence of collectives. Reduce-scatter and all-gather pieces `stride` apart (ZeRO's
   buckets) are fetched and stored piece by piece; in place is fine (a chunk is read before it is
   written, and a rank's own piece comes back unchanged). */
typedef void (*zt__mover)(void *ctx, void *dst, const void *src, size_t bytes);

static zt_result zt__comm_staged(const zt__args_comm *a, uint8_t *stage, size_t stage_bytes, zt__mover get,
                                 zt__mover put, void *ctx) {
    int W = a->comm->world;
    zt_dtype t = a->out.dtype;
    size_t es = zt_dtype_size(t);
    uint8_t *out = (uint8_t *)a->out.data;
    const uint8_t *in = (const uint8_t *)a->inp.data;
    int64_t n = zt_numel(a->out), m = (int64_t)(stage_bytes / es / (size_t)(W + 1)); /* a chunk: W + 1 parts */
    ZT_ASSERT(m > 0);
    zt__args_comm c = *a;
    c.stride = 0;
    zt_result r = ZT_OK;
    switch (a->what) {
    case ZT__ALL_REDUCE:
    case ZT__BROADCAST:
        for (int64_t o = 0; o < n && r == ZT_OK; o += m) {
            int64_t k = ZT__MIN(m, n - o);
            c.out = c.inp = zt_tensor_make(stage, t, ZT_HOST, zt_shape1(k));
            get(ctx, stage, out + (size_t)o * es, (size_t)k * es);
            if ((r = zt__comm_run(&c)) == ZT_OK) put(ctx, out + (size_t)o * es, stage, (size_t)k * es);
        }
        return r;
    case ZT__REDUCE_SCATTER: { /* in (W parts of n, `stride` apart) -> out (n) */
        int64_t stride = a->stride ? a->stride : n;
        for (int64_t o = 0; o < n && r == ZT_OK; o += m) {
            int64_t k = ZT__MIN(m, n - o);
            for (int q = 0; q < W; q++)
                get(ctx, stage + (size_t)q * (size_t)k * es, in + ((size_t)q * (size_t)stride + (size_t)o) * es, (size_t)k * es);
            c.inp = zt_tensor_make(stage, t, ZT_HOST, zt_shape1((int64_t)W * k));
            c.out = zt_tensor_make(stage + (size_t)W * (size_t)k * es, t, ZT_HOST, zt_shape1(k));
            if ((r = zt__comm_run(&c)) == ZT_OK) put(ctx, out + (size_t)o * es, c.out.data, (size_t)k * es);
        }
        return r;
    }
    case ZT__ALL_GATHER: { /* in (part) -> out (W parts, `stride` apart) */
        int64_t part = a->stride ? zt_numel(a->inp) : n / W, stride = a->stride ? a->stride : part;
        for (int64_t o = 0; o < part && r == ZT_OK; o += m) {
            int64_t k = ZT__MIN(m, part - o);
            get(ctx, stage, in + (size_t)o * es, (size_t)k * es);
            c.inp = zt_tensor_make(stage, t, ZT_HOST, zt_shape1(k));
            c.out = zt_tensor_make(stage + (size_t)k * es, t, ZT_HOST, zt_shape1((int64_t)W * k));
            if ((r = zt__comm_run(&c)) != ZT_OK) break;
            for (int q = 0; q < W; q++)
                put(ctx, out + ((size_t)q * (size_t)stride + (size_t)o) * es, stage + (size_t)(q + 1) * (size_t)k * es,
                    (size_t)k * es);
        }
        return r;
    }
    }
    return r;
}

static void zt__comm_launch(zt_stream *s, zt_comm *c, zt__coll what, zt_reduce_op op, int root, zt_tensor out,
                            zt_tensor inp, int64_t stride, const char *name) {
    zt__need_tensor(name, "out", out, (int)out.dtype, ZT__ANY_SIZE);
    zt__need(zt_dtype_is_float(out.dtype) || what == ZT__ALL_GATHER || what == ZT__BROADCAST, name,
             "reductions take f32, bf16 or f16");
    zt__need(c != NULL, name, "no communicator");
    zt__op o;
    memset(&o, 0, sizeof o);
    o.kind = ZT__OP_COMM;
    zt__args_comm a = {c, what, op, root, out, inp, stride};
    o.comm = a;
    zt__launch(s, &o);
}

ZT_API void zt_all_reduce(zt_stream *s, zt_comm *c, zt_tensor buf, zt_reduce_op op) {
    zt__comm_launch(s, c, ZT__ALL_REDUCE, op, 0, buf, buf, 0, "zt_all_reduce");
}

ZT_API void zt_reduce_scatter(zt_stream *s, zt_comm *c, zt_tensor out, zt_tensor in, zt_reduce_op op) {
    zt__need_tensor("zt_reduce_scatter", "in", in, (int)out.dtype, zt_numel(out) * zt_comm_world(c));
    zt__comm_launch(s, c, ZT__REDUCE_SCATTER, op, 0, out, in, 0, "zt_reduce_scatter");
}

ZT_API void zt_all_gather(zt_stream *s, zt_comm *c, zt_tensor out, zt_tensor in) {
    zt__need_tensor("zt_all_gather", "in", in, (int)out.dtype, ZT__ANY_SIZE);
    zt__need(zt_numel(out) == zt_numel(in) * zt_comm_world(c), "zt_all_gather", "out must hold world x in elements");
    zt__comm_launch(s, c, ZT__ALL_GATHER, ZT_REDUCE_SUM, 0, out, in, 0, "zt_all_gather");
}

/* ZeRO's bucketed collectives over the flat groups: piece [o, o+k) of every rank's slice of `full`
   (slices of `slice` elements, rank r's at r*slice). reduce-scatter sums the pieces into this rank's
   own piece, in place; all-gather spreads each rank's own piece to the others. */
static zt_tensor zt__pieces(zt_tensor full, int64_t slice, int world, int64_t o, int64_t k) {
    return zt_view(full, o, zt_shape1((int64_t)(world - 1) * slice + k));
}
static void zt__reduce_scatter_piece(zt_stream *s, zt_comm *c, zt_tensor full, int64_t slice, int64_t o, int64_t k) {
    int R = zt_comm_rank(c), W = zt_comm_world(c);
    zt__comm_launch(s, c, ZT__REDUCE_SCATTER, ZT_REDUCE_SUM, 0, zt_view(full, (int64_t)R * slice + o, zt_shape1(k)),
                    zt__pieces(full, slice, W, o, k), slice, "zt_reduce_scatter");
}
static void zt__all_gather_piece(zt_stream *s, zt_comm *c, zt_tensor full, int64_t slice, int64_t o, int64_t k,
                                 zt_tensor mine) {
    int W = zt_comm_world(c);
    zt__comm_launch(s, c, ZT__ALL_GATHER, ZT_REDUCE_SUM, 0, zt__pieces(full, slice, W, o, k), mine, slice,
                    "zt_all_gather");
}

ZT_API void zt_broadcast(zt_stream *s, zt_comm *c, zt_tensor buf, int root) {
    zt__need(root >= 0 && root < zt_comm_world(c), "zt_broadcast", "root %d is not a rank of %d", root, zt_comm_world(c));
    zt__comm_launch(s, c, ZT__BROADCAST, ZT_REDUCE_SUM, root, buf, buf, 0, "zt_broadcast");
}

/* ---- the launcher and the rendezvous ---- */

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

/* removes argv[i] (and its value when `with_value`) */
static void zt__drop_arg(int *argc, char **argv, int i, int with_value) {
    int n = with_value && i + 1 < *argc && !strchr(argv[i], '=') ? 2 : 1;
    for (int k = i; k + n <= *argc; k++) argv[k] = argv[k + n];
    *argc -= n;
}

static const char *zt__arg_value(int argc, char **argv, int i) {
    const char *eq = strchr(argv[i], '=');
    return eq ? eq + 1 : i + 1 < argc ? argv[i + 1] : "";
}

static void zt__describe_exit(int status, char *buf, size_t size) {
    if (WIFEXITED(status)) snprintf(buf, size, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status)) snprintf(buf, size, "was killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else snprintf(buf, size, "stopped (status %d)", status);
}

static uint64_t zt__fnv(uint64_t h, const char *s) {
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

/* The job token keeps strays out: ZT_JOB_TOKEN, else --rdzv_id, else a hash of the --model and --config
   arguments and the world size, so a machine started with another model or config is refused. */
static uint64_t zt__job_token(const char *rdzv_id, int argc, char **argv, int world) {
    const char *t = getenv("ZT_JOB_TOKEN");
    if (t && *t) return zt__fnv(0xcbf29ce484222325ull, t);
    if (rdzv_id && *rdzv_id) return zt__fnv(0xcbf29ce484222325ull, rdzv_id);
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 1; i < argc; i++) {
        size_t len = strcspn(argv[i], "=");
        if ((len == 7 && strncmp(argv[i], "--model", 7) == 0) || (len == 8 && strncmp(argv[i], "--config", 8) == 0))
            h = zt__fnv(zt__fnv(zt__fnv(h, argv[i]), "="), zt__arg_value(argc, argv, i));
    }
    char w[32];
    snprintf(w, sizeof w, "world %d", world);
    return zt__fnv(h, w);
}

/* the abstract Unix socket beside the TCP port: where the shared segment's fd is handed over */
static socklen_t zt__rdzv_unix(struct sockaddr_un *a, int port) {
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    int n = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "zt-rdzv-%d", port);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static int zt__wait_readable(int fd, int ms) {
    struct pollfd p = {fd, POLLIN, 0};
    return poll(&p, 1, ms) == 1;
}

/* ---- collectives over TCP: ranks on several hosts ---- */

#include <netdb.h>
#include <netinet/tcp.h>

/* Every message of a collective starts with the collective's word (zt__comm_call) and the bytes that
   follow, so a rank at another collective, or at this one with another size, is caught as the shared
   segment catches it. */
typedef struct zt__tcp_head { uint64_t call, bytes; } zt__tcp_head;
/* what one exchange moves between this rank and another */
typedef struct zt__tcp_xfer { const uint8_t *send; uint64_t send_n; uint8_t *recv; uint64_t recv_n; } zt__tcp_xfer;

static zt_result zt__tcp_stop(zt_comm *c, const char *msg) {
    zt__comm_abort(c, c->rank, msg);
    return zt__comm_failed(c);
}

/* what became of the connection to rank q, for the message: err 0 when it closed, else the errno that
   ended it. A killed process's host closes its connections at once; a host that went silent (off, or
   cut from the network) is found by the keepalive probes (zt__tcp_tune), which end with ETIMEDOUT. */
static void zt__tcp_lost(int q, int err, char *msg, size_t n) {
    if (err == 0 || err == ECONNRESET || err == EPIPE)
        snprintf(msg, n, "rank %d is gone: its connection closed during a collective (it exited or was killed)", q);
    else if (err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH || err == EHOSTDOWN || err == ENETDOWN)
        snprintf(msg, n, "rank %d stopped answering during a collective: its host is down or cut off from the network "
                 "(%s)", q, strerror(err));
    else
        snprintf(msg, n, "rank %d: the connection to it failed during a collective (%s)", q, strerror(err));
}

/* One step of a collective: with every other rank at once, send x[q].send and receive into x[q].recv,
   each behind a header, by non-blocking sends and receives as poll says they can go, so no two ranks
   wait for each other's full buffers. A connection that ended names its rank; so does the timeout. */
static zt_result zt__tcp_exchange(zt_comm *c, const zt__args_comm *a, uint64_t call, const zt__tcp_xfer *x) {
    enum { H = sizeof(zt__tcp_head) };
    int W = c->world, R = c->rank;
    if (c->failed[0]) return zt__comm_failed(c);
    zt__tcp_head head[ZT__COMM_MAX_RANKS], in[ZT__COMM_MAX_RANKS];
    uint64_t sent[ZT__COMM_MAX_RANKS], got[ZT__COMM_MAX_RANKS]; /* bytes so far, the header's included */
    struct pollfd p[ZT__COMM_MAX_RANKS];
    int who[ZT__COMM_MAX_RANKS];
    char msg[256];
    for (int q = 0; q < W; q++) head[q].call = call, head[q].bytes = x[q].send_n, sent[q] = got[q] = 0;
    uint64_t quiet = zt_time_ns(); /* when bytes last moved */
    for (;;) {
        int n = 0;
        for (int q = 0; q < W; q++) {
            if (q == R) continue;
            short ev = (short)((sent[q] < H + x[q].send_n ? POLLOUT : 0) | (got[q] < H + x[q].recv_n ? POLLIN : 0));
            if (ev) p[n].fd = c->fd[q], p[n].events = ev, p[n].revents = 0, who[n++] = q;
        }
        if (n == 0) return ZT_OK;
        if (poll(p, (nfds_t)n, 500) < 0 && errno != EINTR) {
            snprintf(msg, sizeof msg, "poll failed during a collective: %s", strerror(errno));
            return zt__tcp_stop(c, msg);
        }
        for (int i = 0; i < n; i++) {
            int q = who[i], moved = 0;
            if (p[i].revents && got[q] < H + x[q].recv_n) {
                uint8_t *dst = got[q] < H ? (uint8_t *)&in[q] + got[q] : x[q].recv + (got[q] - H);
                uint64_t want = got[q] < H ? H - got[q] : H + x[q].recv_n - got[q];
                ssize_t k = recv(c->fd[q], dst, (size_t)want, MSG_DONTWAIT);
                if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
                    zt__tcp_lost(q, k == 0 ? 0 : errno, msg, sizeof msg);
                    return zt__tcp_stop(c, msg);
                }
                moved = k > 0;
                if (k > 0 && (got[q] += (uint64_t)k) == H && (in[q].call != call || in[q].bytes != x[q].recv_n)) {
                    zt__comm_mismatch(c, a, q, msg, sizeof msg);
                    return zt__tcp_stop(c, msg);
                }
            }
            if (p[i].revents && sent[q] < H + x[q].send_n) {
                const uint8_t *src = sent[q] < H ? (const uint8_t *)&head[q] + sent[q] : x[q].send + (sent[q] - H);
                uint64_t want = sent[q] < H ? H - sent[q] : H + x[q].send_n - sent[q];
                ssize_t m = send(c->fd[q], src, (size_t)want, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (m < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                    zt__tcp_lost(q, errno, msg, sizeof msg);
                    return zt__tcp_stop(c, msg);
                }
                if (m > 0) sent[q] += (uint64_t)m, moved = 1;
            }
            if (moved) quiet = zt_time_ns();
        }
        double waited = (double)(zt_time_ns() - quiet) / 1e9;
        if (waited > c->timeout) {
            snprintf(msg, sizeof msg, "waited %.0f s for rank %d at a collective (the timeout)", waited, who[0]);
            return zt__tcp_stop(c, msg);
        }
    }
}

/* the parts of a round of k elements from o: rank q sums [o + k q / W, o + k (q + 1) / W) */
static int64_t zt__tcp_lo(int64_t o, int64_t k, int q, int W) { return o + k * q / W; }

static zt_result zt__tcp_run(const zt__args_comm *a) {
    zt_comm *c = a->comm;
    int W = c->world, R = c->rank;
    zt_dtype t = a->out.dtype;
    size_t es = zt_dtype_size(t);
    float scale = a->op == ZT_REDUCE_AVG ? 1.0f / (float)W : 1.0f;
    uint8_t *out = (uint8_t *)a->out.data;
    const uint8_t *in = (const uint8_t *)a->inp.data;
    int64_t n = zt_numel(a->out), m = (int64_t)(c->chunk / es), o = 0; /* elements a slot holds */
    uint64_t call = zt__comm_call(c, a);
    zt__tcp_xfer x[ZT__COMM_MAX_RANKS];
    const uint8_t *src[ZT__COMM_MAX_RANKS];
    memset(x, 0, sizeof(zt__tcp_xfer) * (size_t)W);
    zt_result r = ZT_OK;
    switch (a->what) {
    case ZT__ALL_REDUCE: /* rank q sums part q of a round, then sends it to every rank */
        do {
            int64_t k = ZT__MIN(m * W, n - o), lo = zt__tcp_lo(o, k, R, W), mine = zt__tcp_lo(o, k, R + 1, W) - lo;
            for (int q = 0; q < W; q++) {
                int64_t ql = zt__tcp_lo(o, k, q, W);
                x[q].send = out + (size_t)ql * es, x[q].send_n = (uint64_t)(zt__tcp_lo(o, k, q + 1, W) - ql) * es;
                x[q].recv = c->stage + (size_t)q * c->chunk, x[q].recv_n = (uint64_t)mine * es;
                src[q] = q == R ? out + (size_t)lo * es : x[q].recv;
            }
            if ((r = zt__tcp_exchange(c, a, call, x)) != ZT_OK) break;
            uint8_t *dst = out + (size_t)lo * es;
            zt__reduce_into(&dst, 1, t, src, W, mine, scale);
            for (int q = 0; q < W; q++) { /* the sums go the other way */
                const uint8_t *s = x[q].send;
                uint64_t sn = x[q].send_n;
                x[q].send = dst, x[q].send_n = (uint64_t)mine * es;
                x[q].recv = (uint8_t *)s, x[q].recv_n = sn;
            }
            r = zt__tcp_exchange(c, a, call, x);
            o += k;
        } while (o < n && r == ZT_OK);
        return r;
    case ZT__REDUCE_SCATTER: { /* in (W parts of n, `stride` apart) -> out (n): part q goes to rank q */
        int64_t stride = a->stride ? a->stride : n;
        do {
            int64_t k = ZT__MIN(m, n - o);
            for (int q = 0; q < W; q++) {
                x[q].send = in + ((size_t)q * (size_t)stride + (size_t)o) * es, x[q].send_n = (uint64_t)k * es;
                x[q].recv = c->stage + (size_t)q * c->chunk, x[q].recv_n = (uint64_t)k * es;
                src[q] = q == R ? x[q].send : x[q].recv;
            }
            if ((r = zt__tcp_exchange(c, a, call, x)) != ZT_OK) break;
            uint8_t *dst = out + (size_t)o * es;
            zt__reduce_into(&dst, 1, t, src, W, k, scale);
            o += k;
        } while (o < n && r == ZT_OK);
        return r;
    }
    case ZT__ALL_GATHER: { /* in (part) -> out (W parts, `stride` apart): straight into place */
        int64_t part = a->stride ? zt_numel(a->inp) : n / W, stride = a->stride ? a->stride : part;
        for (int q = 0; q < W; q++) {
            x[q].send = in, x[q].send_n = (uint64_t)part * es;
            x[q].recv = out + (size_t)q * (size_t)stride * es, x[q].recv_n = (uint64_t)part * es;
        }
        if ((r = zt__tcp_exchange(c, a, call, x)) == ZT_OK && out + (size_t)R * (size_t)stride * es != in)
            memmove(out + (size_t)R * (size_t)stride * es, in, (size_t)part * es);
        return r;
    }
    case ZT__BROADCAST: /* the root to every rank; the others trade headers only */
        for (int q = 0; q < W; q++) {
            if (R == a->root) x[q].send = out, x[q].send_n = (uint64_t)n * es;
            if (q == a->root) x[q].recv = out, x[q].recv_n = (uint64_t)n * es;
        }
        return zt__tcp_exchange(c, a, call, x);
    }
    return r;
}

static zt_result zt__tcp_barrier(zt_comm *c) {
    zt__tcp_xfer x[ZT__COMM_MAX_RANKS];
    memset(x, 0, sizeof(zt__tcp_xfer) * (size_t)c->world);
    return zt__tcp_exchange(c, NULL, zt__comm_mix(++c->calls ^ 0x6261727269657221ull), x);
}

/* ip:port as an IPv4 address: dotted, or a host name looked up */
static zt_result zt__tcp_address(const char *ip, int port, struct sockaddr_in *a) {
    memset(a, 0, sizeof *a);
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, ip, &a->sin_addr) == 1) return ZT_OK;
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    int e = getaddrinfo(ip, NULL, &hints, &res);
    if (e != 0 || !res)
        return zt_fail(ZT_ERROR_INVALID, "the main process's address %s is neither an IPv4 address nor a host name this "
                       "machine can look up (%s)", ip, gai_strerror(e));
    a->sin_addr = ((struct sockaddr_in *)res->ai_addr)->sin_addr;
    freeaddrinfo(res);
    return ZT_OK;
}

/* setup-time messages: all n bytes within ms milliseconds, or 0 */
static int zt__read_full(int fd, void *buf, size_t n, int ms) {
    uint8_t *p = (uint8_t *)buf;
    uint64_t end = zt_time_ns() + (uint64_t)ms * 1000000u;
    while (n > 0) {
        uint64_t now = zt_time_ns();
        if (now >= end || !zt__wait_readable(fd, (int)((end - now) / 1000000u) + 1)) return 0;
        ssize_t k = read(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return 0;
        p += k, n -= (size_t)k;
    }
    return 1;
}
static int zt__write_full(int fd, const void *buf, size_t n) {
    const uint8_t *p = (const uint8_t *)buf;
    while (n > 0) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return 0;
        p += k, n -= (size_t)k;
    }
    return 1;
}

#define ZT__TCP_MAGIC 0x7a74746370303031ull /* "zttcp001" */
/* a rank's first message to rank 0 (with the port it listens at) and to each rank below it */
typedef struct zt__tcp_hello { uint64_t magic, token; int32_t world, rank, port, pad; } zt__tcp_hello;
/* rank 0's answer: 0 and every rank's address, or 1 and why not */
typedef struct zt__tcp_reply { int32_t status, pad; char why[248]; } zt__tcp_reply;
typedef struct zt__tcp_peer { uint32_t ip; int32_t port; } zt__tcp_peer;

static int zt__rdzv_seconds(void) {
    const char *limit = getenv("ZT_RDZV_TIMEOUT");
    return ZT__MIN(ZT__MAX(limit ? atoi(limit) : 300, 1), 86400);
}

/* a listening socket on every address of this host at `port` (0: any free one), or -1 */
static int zt__tcp_listen(int port, int backlog) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, backlog) != 0) {
        int err = errno;
        if (s >= 0) close(s);
        errno = err;
        return -1;
    }
    return s;
}

/* a connection to a, tried again until `seconds` pass (the other side may not listen yet), or -1. Each
   try waits only for what is left of them: a host that drops the packets (a firewall, a wrong address)
   would otherwise hold one connect for TCP's two minutes of retries. */
static int zt__tcp_dial(const struct sockaddr_in *a, int seconds, int *err) {
    uint64_t end = zt_time_ns() + (uint64_t)seconds * 1000000000u;
    for (;;) {
        int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (s < 0) {
            *err = errno;
            return -1;
        }
        int r = connect(s, (const struct sockaddr *)a, sizeof *a);
        if (r != 0 && errno == EINPROGRESS) {
            uint64_t now = zt_time_ns();
            struct pollfd p = {s, POLLOUT, 0};
            int e = ETIMEDOUT; /* no answer in time; else the connect's own result */
            socklen_t el = sizeof e;
            if (poll(&p, 1, now < end ? (int)ZT__MIN((end - now) / 1000000u + 1, 1000000u) : 1) == 1 &&
                getsockopt(s, SOL_SOCKET, SO_ERROR, &e, &el) != 0)
                e = errno;
            r = e ? -1 : 0, errno = e;
        }
        if (r == 0 && fcntl(s, F_SETFL, fcntl(s, F_GETFL) & ~O_NONBLOCK) == 0) return s; /* blocking from here */
        *err = errno;
        close(s);
        if (zt_time_ns() >= end) return -1;
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* why the main process at ip:port could not be reached in `seconds`, from the last try's errno */
static zt_result zt__dial_failed(const char *ip, int port, int seconds, int err) {
    const char *hint = err == ECONNREFUSED ? ": nothing listens there (machine 0 not started yet, or another port)"
                     : err == ETIMEDOUT ? ": that host does not answer (a wrong address, or a firewall drops the port)" : "";
    return zt_fail(ZT_ERROR_IO, "cannot reach the main process at %s:%d for %d s: %s%s", ip, port, seconds, strerror(err), hint);
}

/* rank 0: every other rank registers; strays (another token or world size, a rank twice) are told why
   and the wait goes on; then each gets the table of addresses */
static zt_result zt__tcp_serve(zt_comm *c, const char *ip, int port, uint64_t token, zt__tcp_peer *peers) {
    int W = c->world, s = zt__tcp_listen(port, ZT__COMM_MAX_RANKS), seconds = zt__rdzv_seconds();
    if (s < 0)
        return zt_fail(ZT_ERROR_IO, "the rendezvous port %s:%d is busy (%s): another job runs there; pass "
                       "--main_process_port", ip, port, strerror(errno));
    uint64_t start = zt_time_ns();
    zt_result r = ZT_OK;
    for (int joined = 0; joined < W - 1 && r == ZT_OK;) {
        int left = seconds * 1000 - (int)((zt_time_ns() - start) / 1000000u);
        if (left <= 0 || !zt__wait_readable(s, ZT__MIN(left, 1000))) {
            for (int q = 1; q < W && r == ZT_OK; q++) { /* a rank that registered and then died ends the wait */
                char b;
                if (c->fd[q] >= 0 && recv(c->fd[q], &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0)
                    r = zt_fail(ZT_ERROR_IO, "rank %d left the rendezvous at %s:%d before every rank joined (%d of %d had)",
                                q, ip, port, joined + 1, W);
            }
            if (r == ZT_OK && left <= 1000)
                r = zt_fail(ZT_ERROR_IO, "%d of %d ranks joined the rendezvous at %s:%d within %d s", joined + 1, W, ip,
                            port, seconds);
            continue;
        }
        struct sockaddr_in from;
        socklen_t fl = sizeof from;
        int k = accept(s, (struct sockaddr *)&from, &fl);
        if (k < 0) continue;
        zt__tcp_hello h;
        zt__tcp_reply no;
        memset(&no, 0, sizeof no);
        no.status = 1;
        if (!zt__read_full(k, &h, sizeof h, 5000) || h.magic != ZT__TCP_MAGIC)
            snprintf(no.why, sizeof no.why, "that is not a zt rendezvous message");
        else if (h.token != token)
            snprintf(no.why, sizeof no.why, "the job token differs: this port runs another job (another config, model or "
                     "world size); set the same ZT_JOB_TOKEN or --rdzv_id on every machine to join it");
        else if (h.world != W)
            snprintf(no.why, sizeof no.why, "world size %d, but the job has %d ranks", h.world, W);
        else if (h.rank < 1 || h.rank >= W)
            snprintf(no.why, sizeof no.why, "rank %d is not a rank of %d", h.rank, W);
        else if (c->fd[h.rank] >= 0)
            snprintf(no.why, sizeof no.why, "rank %d has joined already (a second job with the same settings on this port, "
                     "or two machines given the same --machine_rank)", h.rank);
        if (no.why[0]) {
            zt__write_full(k, &no, sizeof no);
            close(k);
            continue;
        }
        c->fd[h.rank] = k;
        peers[h.rank].ip = from.sin_addr.s_addr, peers[h.rank].port = h.port;
        joined++;
    }
    close(s);
    zt__tcp_reply yes;
    memset(&yes, 0, sizeof yes);
    for (int q = 1; q < W && r == ZT_OK; q++)
        if (!zt__write_full(c->fd[q], &yes, sizeof yes) || !zt__write_full(c->fd[q], peers, sizeof *peers * (size_t)W))
            r = zt_fail(ZT_ERROR_IO, "rank %d left the rendezvous before it ended", q);
    return r;
}

/* rank r > 0: registers with rank 0, connects to the ranks below it and takes the ones above */
static zt_result zt__tcp_join(zt_comm *c, const char *ip, int port, uint64_t token, zt__tcp_peer *peers) {
    int W = c->world, R = c->rank, seconds = zt__rdzv_seconds(), err = 0;
    struct sockaddr_in main_at, mine;
    zt_result r = zt__tcp_address(ip, port, &main_at);
    if (r != ZT_OK) return r;
    int l = zt__tcp_listen(0, ZT__COMM_MAX_RANKS);
    socklen_t ml = sizeof mine;
    if (l < 0 || getsockname(l, (struct sockaddr *)&mine, &ml) != 0) {
        if (l >= 0) close(l);
        return zt_fail(ZT_ERROR_IO, "rank %d cannot listen for the other ranks: %s", R, strerror(errno));
    }
    zt__tcp_hello h = {ZT__TCP_MAGIC, token, W, R, (int32_t)ntohs(mine.sin_port), 0};
    zt__tcp_reply answer;
    if ((c->fd[0] = zt__tcp_dial(&main_at, seconds, &err)) < 0) {
        r = zt__dial_failed(ip, port, seconds, err);
    } else if (!zt__write_full(c->fd[0], &h, sizeof h) ||
               !zt__read_full(c->fd[0], &answer, sizeof answer, seconds * 1000 + 5000)) {
        r = zt_fail(ZT_ERROR_IO, "the main process at %s:%d ended the rendezvous without an answer (it stopped, or not "
                    "every rank joined within its timeout)", ip, port);
    } else if (answer.status != 0) {
        answer.why[sizeof answer.why - 1] = 0;
        r = zt_fail(ZT_ERROR_INVALID, "the main process at %s:%d refused rank %d: %s", ip, port, R, answer.why);
    } else if (!zt__read_full(c->fd[0], peers, sizeof *peers * (size_t)W, 30000)) {
        r = zt_fail(ZT_ERROR_IO, "the main process at %s:%d left during the rendezvous", ip, port);
    }
    for (int q = 1; q < R && r == ZT_OK; q++) { /* the ranks below listen already: they registered first */
        struct sockaddr_in at;
        memset(&at, 0, sizeof at);
        at.sin_family = AF_INET;
        at.sin_addr.s_addr = peers[q].ip;
        at.sin_port = htons((uint16_t)peers[q].port);
        h.port = 0;
        if ((c->fd[q] = zt__tcp_dial(&at, 30, &err)) < 0 || !zt__write_full(c->fd[q], &h, sizeof h)) {
            char a[INET_ADDRSTRLEN] = "?";
            inet_ntop(AF_INET, &at.sin_addr, a, sizeof a);
            r = zt_fail(ZT_ERROR_IO, "rank %d cannot reach rank %d at %s:%d: %s", R, q, a, peers[q].port, strerror(err));
        }
    }
    uint64_t start = zt_time_ns();
    for (int joined = R + 1; joined < W && r == ZT_OK;) {
        int left = seconds * 1000 - (int)((zt_time_ns() - start) / 1000000u);
        int k = left > 0 && zt__wait_readable(l, left) ? accept(l, NULL, NULL) : -1;
        zt__tcp_hello their;
        if (k < 0) {
            r = zt_fail(ZT_ERROR_IO, "rank %d: %d of the ranks above it connected within %d s", R, joined - R - 1, seconds);
        } else if (!zt__read_full(k, &their, sizeof their, 5000) || their.magic != ZT__TCP_MAGIC || their.token != token ||
                   their.rank <= R || their.rank >= W || c->fd[their.rank] >= 0) {
            close(k); /* a stray */
        } else {
            c->fd[their.rank] = k;
            joined++;
        }
    }
    close(l);
    return r;
}

/* A connection between two ranks: small messages go at once (no Nagle), and keepalive probes a
   connection idle for 10 s (a rank waiting for one that computes, or for NCCL, which carries the data
   beside it) every 5 s, ending it after 4 unanswered: a host that died or was cut off is named in about
   30 s rather than at the collective's timeout. A slow rank's host still answers the probes. (With
   data unacknowledged on it a connection is not idle: then the collective's timeout, or TCP giving up
   its retransmissions, ends the wait. TCP_USER_TIMEOUT would be quicker there, but it also ends the
   connection of a rank that reads nothing for that long, such as one saving a checkpoint.)
   ZT_TEST_TCP_KEEPALIVE: 1 s and 2 probes, for the test. */
static void zt__tcp_tune(int fd) {
    int one = 1, idle = 10, every = 5, probes = 4;
    if (getenv("ZT_TEST_TCP_KEEPALIVE")) idle = every = 1, probes = 2;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
#ifdef TCP_KEEPIDLE
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
#endif
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &every, sizeof every);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
}

static zt_result zt__tcp_connect(zt_comm **out, const char *ip, int port, uint64_t token, int rank, int world) {
    *out = NULL;
    if (world <= 1) return zt_comm_single(out);
    if (world > ZT__COMM_MAX_RANKS || rank < 0 || rank >= world)
        return zt_fail(ZT_ERROR_INVALID, "rank %d of %d: a TCP job has 1 to %d ranks", rank, world, ZT__COMM_MAX_RANKS);
    zt_comm *c = (zt_comm *)calloc(1, sizeof *c); /* setup time */
    zt__tcp_peer *peers = (zt__tcp_peer *)calloc((size_t)world, sizeof *peers);
    const char *test_chunk = getenv("ZT_TEST_TCP_CHUNK"); /* small slots in tests: collectives of many rounds */
    size_t chunk = test_chunk ? (size_t)ZT__MAX(atol(test_chunk), 64) : ZT__MIN(ZT__MAX(((size_t)64 << 20) / (size_t)world,
                                                                                       (size_t)64 << 10), (size_t)4 << 20);
    if (c) c->stage = (uint8_t *)malloc(chunk * (size_t)world);
    if (!c || !peers || !c->stage) {
        if (c) free(c->stage);
        free(c), free(peers);
        return zt_fail(ZT_ERROR_MEMORY, "out of host memory creating a communicator");
    }
    c->rank = rank, c->world = world, c->tcp = 1, c->timeout = 300, c->chunk = chunk;
    for (int q = 0; q < world; q++) c->fd[q] = -1;
    zt_result r = rank == 0 ? zt__tcp_serve(c, ip, port, token, peers) : zt__tcp_join(c, ip, port, token, peers);
    free(peers);
    for (int q = 0; q < world && r == ZT_OK; q++)
        if (q != rank) zt__tcp_tune(c->fd[q]);
    if (r == ZT_OK) r = zt__tcp_barrier(c); /* every connection carries a message both ways */
    c->calls = 0;                           /* the job's collectives count from 1, as in the shared segment */
    if (r != ZT_OK) {
        zt_comm_destroy(c);
        return r;
    }
    *out = c;
    return ZT_OK;
}

ZT_API zt_result zt_comm_tcp_connect(zt_comm **out, const char *ip, int port, const char *job, int rank, int world) {
    return zt__tcp_connect(out, ip, port, zt__fnv(0xcbf29ce484222325ull, job ? job : "zt"), rank, world);
}

/* The main process: waits for `expect` registrations (machines, or ranks started by another launcher),
   refuses strays by token or world size, and hands each one the segment's fd. */
static zt_result zt__rdzv_serve(const char *ip, int port, uint64_t token, int world, int expect, int segment) {
    int tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), un = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    struct sockaddr_in in;
    memset(&in, 0, sizeof in);
    in.sin_family = AF_INET;
    in.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, ip, &in.sin_addr) != 1) in.sin_addr.s_addr = htonl(INADDR_ANY);
    setsockopt(tcp, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_un ua;
    socklen_t ul = zt__rdzv_unix(&ua, port);
    if (bind(tcp, (struct sockaddr *)&in, sizeof in) != 0 || listen(tcp, 64) != 0 ||
        bind(un, (struct sockaddr *)&ua, ul) != 0 || listen(un, 64) != 0) {
        zt_result r = zt_fail(ZT_ERROR_IO, "the rendezvous port %s:%d is busy (%s): another job runs there; pass "
                              "--main_process_port", ip, port, strerror(errno));
        close(tcp), close(un);
        return r;
    }
    const char *limit = getenv("ZT_RDZV_TIMEOUT");
    int timeout_ms = ZT__MIN(ZT__MAX(limit ? atoi(limit) : 300, 1), 86400) * 1000;
    uint64_t start = zt_time_ns();
    zt_result r = ZT_OK;
    for (int joined = 0; joined < expect && r == ZT_OK;) {
        int left = timeout_ms - (int)((zt_time_ns() - start) / 1000000);
        if (left <= 0 || !zt__wait_readable(tcp, left)) {
            r = zt_fail(ZT_ERROR_IO, "%d of %d machines or ranks joined the rendezvous at %s:%d within %d s", joined,
                        expect, ip, port, timeout_ms / 1000);
            break;
        }
        int c = accept(tcp, NULL, NULL);
        if (c < 0) { /* out of descriptors, say: do not spin */
            struct timespec ts = {0, 100 * 1000 * 1000};
            nanosleep(&ts, NULL);
            continue;
        }
        char line[256] = "", reply[256];
        ssize_t got = zt__wait_readable(c, ZT__MIN(left, 5000)) ? read(c, line, sizeof line - 1) : -1;
        unsigned long long their = 0;
        int their_world = 0;
        if (got <= 0 || sscanf(line, "ZT1 %llx %d", &their, &their_world) != 2) {
            snprintf(reply, sizeof reply, "ERR that is not a zt rendezvous message\n");
        } else if (their != token) {
            snprintf(reply, sizeof reply, "ERR the job token differs: this port runs another job (another config, "
                     "model or world size); set the same ZT_JOB_TOKEN or --rdzv_id on every machine to join it\n");
        } else if (their_world != world) {
            snprintf(reply, sizeof reply, "ERR world size %d, but the job has %d ranks\n", their_world, world);
        } else {
            snprintf(reply, sizeof reply, "OK\n");
        }
        if (write(c, reply, strlen(reply)) < 0) reply[0] = 'E';
        close(c);
        if (reply[0] != 'O') continue; /* a stray: keep waiting for the job's own */
        int u = zt__wait_readable(un, 10000) ? accept(un, NULL, NULL) : -1;
        if (u < 0) continue;
        struct ucred who;
        socklen_t wl = sizeof who;
        if (getsockopt(u, SOL_SOCKET, SO_PEERCRED, &who, &wl) != 0 || who.uid != getuid()) { /* only our own user */
            close(u);
            continue;
        }
        char byte = 'z', control[CMSG_SPACE(sizeof(int))];
        struct iovec io = {&byte, 1};
        struct msghdr m;
        memset(&m, 0, sizeof m);
        memset(control, 0, sizeof control);
        m.msg_iov = &io, m.msg_iovlen = 1, m.msg_control = control, m.msg_controllen = sizeof control;
        struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
        cm->cmsg_level = SOL_SOCKET, cm->cmsg_type = SCM_RIGHTS, cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &segment, sizeof segment);
        if (sendmsg(u, &m, 0) == 1) joined++;
        close(u);
    }
    close(tcp), close(un);
    return r;
}

/* Another machine's launcher, or a rank started by another launcher: registers, and gets the fd. */
static zt_result zt__rdzv_join(const char *ip, int port, uint64_t token, int world, int *segment) {
    struct sockaddr_in in;
    int seconds = zt__rdzv_seconds(), err = 0, c = -1;
    zt_result r = zt__tcp_address(ip, port, &in);
    if (r != ZT_OK) return r;
    if ((c = zt__tcp_dial(&in, seconds, &err)) < 0) return zt__dial_failed(ip, port, seconds, err);
    char line[256];
    int n = snprintf(line, sizeof line, "ZT1 %llx %d\n", (unsigned long long)token, world);
    ssize_t got = write(c, line, (size_t)n) == n && zt__wait_readable(c, 300000) ? read(c, line, sizeof line - 1) : -1;
    close(c);
    if (got <= 0) return zt_fail(ZT_ERROR_IO, "the main process at %s:%d did not answer the rendezvous", ip, port);
    line[got] = 0;
    line[strcspn(line, "\n")] = 0;
    if (strncmp(line, "OK", 2) != 0)
        return zt_fail(ZT_ERROR_INVALID, "the main process at %s:%d refused this machine: %s", ip, port, line + 4);
    struct sockaddr_un ua;
    socklen_t ul = zt__rdzv_unix(&ua, port);
    int u = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(u, (struct sockaddr *)&ua, ul) != 0) {
        close(u);
        return zt_fail(ZT_ERROR_UNSUPPORTED, "the main process at %s:%d is on another host, but this rank was started "
                       "as one of a single host's: set ZT_COMM=tcp on every rank (or LOCAL_WORLD_SIZE as torchrun does)",
                       ip, port);
    }
    char byte, control[CMSG_SPACE(sizeof(int))];
    struct iovec io = {&byte, 1};
    struct msghdr m;
    memset(&m, 0, sizeof m);
    m.msg_iov = &io, m.msg_iovlen = 1, m.msg_control = control, m.msg_controllen = sizeof control;
    ssize_t k = recvmsg(u, &m, 0);
    close(u);
    struct cmsghdr *cm = k == 1 ? CMSG_FIRSTHDR(&m) : NULL;
    if (!cm || cm->cmsg_type != SCM_RIGHTS) return zt_fail(ZT_ERROR_IO, "the main process did not hand over the shared segment");
    memcpy(segment, CMSG_DATA(cm), sizeof *segment);
    return ZT_OK;
}

/* a rank started by torchrun, the deepspeed launcher, mpirun or srun: its rank and world from there, and
   whether the job spans hosts (fewer ranks on this one than in all; ZT_COMM=tcp or shm says so instead) */
static int zt__external_rank(int *argc, char **argv, int *rank, int *world, int *several_hosts) {
    const char *r = getenv("RANK"), *w = getenv("WORLD_SIZE");
    if (!r || !w) r = getenv("OMPI_COMM_WORLD_RANK"), w = getenv("OMPI_COMM_WORLD_SIZE");
    if (!r || !w) r = getenv("SLURM_PROCID"), w = getenv("SLURM_NTASKS");
    for (int i = 1; i < *argc;) { /* the deepspeed launcher passes --local_rank=N; its env has RANK too */
        if (strncmp(argv[i], "--local_rank", 12) == 0) zt__drop_arg(argc, argv, i, argv[i][12] != '=');
        else i++;
    }
    if (!r || !w) return 0;
    *rank = atoi(r), *world = atoi(w);
    const char *local = getenv("LOCAL_WORLD_SIZE"), *nodes = getenv("SLURM_NNODES"), *force = getenv("ZT_COMM");
    if (!local) local = getenv("LOCAL_SIZE"); /* the deepspeed launcher's */
    if (!local) local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    *several_hosts = (local && atoi(local) < *world) || (nodes && atoi(nodes) > 1);
    if (force && *force) *several_hosts = strcmp(force, "tcp") == 0;
    return *world > 1;
}

/* a rank of a job on several hosts: the TCP communicator, through rank 0 at ip:port */
static int zt__tcp_rank(zt_comm **comm, const char *ip, int port, uint64_t token, int rank, int world, int *exit_code) {
    if (zt__tcp_connect(comm, ip, port, token, rank, world) == ZT_OK) return 0;
    fprintf(stderr, "zt: rank %d of %d: %s\n", rank, world, zt_last_error());
    *exit_code = 1;
    return 1;
}

/* the launcher's ranks, for its SIGTERM handler, which passes the signal on (kill is async-signal-safe) */
static pid_t zt__launched[ZT__COMM_MAX_RANKS];
static volatile sig_atomic_t zt__launched_n, zt__launch_term, zt__launch_late;
/* the grace after ending the ranks is over: those still there are killed */
static void zt__launch_on_alarm(int sig) {
    int saved = errno;
    zt__launch_late = sig;
    for (int r = 0; r < zt__launched_n; r++)
        if (zt__launched[r] > 0) kill(zt__launched[r], SIGKILL);
    errno = saved;
}
static void zt__launch_on_term(int sig) {
    int saved = errno;
    zt__launch_term = 1;
    for (int r = 0; r < zt__launched_n; r++)
        if (zt__launched[r] > 0) kill(zt__launched[r], sig);
    errno = saved;
}

/* a rank that stopped on SIGTERM: exited 143 (128 + SIGTERM) after saving, as zt_train --enable_jit_checkpoint does,
   whoever sent it the signal (this launcher, or a scheduler to it or to another machine's ranks); or, after this
   launcher passed one on, killed by it */
static int zt__stopped_by_term(int status) {
    return (WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM) ||
           (zt__launch_term && WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
}

/* a rank: the segment's fd in its environment, its rank and world */
static int zt__attach_rank(zt_comm **comm, int fd, int rank, int world, int *exit_code) {
    zt_result r = zt_comm_shm_attach(comm, fd, rank, world);
    /* the mapping keeps the segment; programs this rank starts must not join the job in its place */
    close(fd);
    unsetenv("ZT_COMM_FD");
    if (r != ZT_OK) {
        fprintf(stderr, "zt: rank %d: %s\n", rank, zt_last_error());
        *exit_code = 1;
        return 1;
    }
    return 0;
}

ZT_API int zt_launch(int *argc, char **argv, zt_comm **comm, int *exit_code) {
    int n = 1, machines = 1, machine = 0, port = 29500;
    const char *ip = getenv("MASTER_ADDR") ? getenv("MASTER_ADDR") : "127.0.0.1", *rdzv_id = NULL;
    if (getenv("MASTER_PORT")) port = atoi(getenv("MASTER_PORT"));
    *exit_code = 0;
    *comm = NULL;
    for (int i = 1; i < *argc;) {
        const char *a = argv[i];
        size_t len = strcspn(a, "=");
#define ZT__IS(name) (len == strlen(name) && strncmp(a, name, len) == 0)
        if (ZT__IS("--num_processes")) n = atoi(zt__arg_value(*argc, argv, i));
        else if (ZT__IS("--num_machines")) machines = atoi(zt__arg_value(*argc, argv, i));
        else if (ZT__IS("--machine_rank")) machine = atoi(zt__arg_value(*argc, argv, i));
        else if (ZT__IS("--main_process_ip")) ip = zt__arg_value(*argc, argv, i);
        else if (ZT__IS("--main_process_port")) port = atoi(zt__arg_value(*argc, argv, i));
        else if (ZT__IS("--rdzv_id")) rdzv_id = zt__arg_value(*argc, argv, i);
        else {
            i++;
            continue;
        }
#undef ZT__IS
        zt__drop_arg(argc, argv, i, 1);
    }
    const char *fd_env = getenv("ZT_COMM_FD"), *tcp_env = getenv("ZT_COMM_TCP");
    if (fd_env && getenv("RANK") && getenv("WORLD_SIZE")) /* a rank zt_launch started */
        return zt__attach_rank(comm, atoi(fd_env), atoi(getenv("RANK")), atoi(getenv("WORLD_SIZE")), exit_code);
    if (tcp_env && getenv("RANK") && getenv("WORLD_SIZE")) { /* ... on one of several machines */
        uint64_t token = strtoull(tcp_env, NULL, 16);
        unsetenv("ZT_COMM_TCP"); /* programs this rank starts must not join the job in its place */
        return zt__tcp_rank(comm, ip, port, token, atoi(getenv("RANK")), atoi(getenv("WORLD_SIZE")), exit_code);
    }
    int rank = 0, world = 1, fd = -1, several_hosts = 0;
    if (zt__external_rank(argc, argv, &rank, &world, &several_hosts)) { /* torchrun, mpirun, srun, deepspeed */
        uint64_t token = zt__job_token(rdzv_id, *argc, argv, world);
        port += 1; /* MASTER_PORT itself is the other launcher's (torchrun's store listens there) */
        if (several_hosts) return zt__tcp_rank(comm, ip, port, token, rank, world, exit_code);
        zt_result r = rank == 0 ? zt_comm_shm_create(world, (size_t)4 << 20, &fd) : zt__rdzv_join(ip, port, token, world, &fd);
        if (r == ZT_OK && rank == 0 && world > 1) r = zt__rdzv_serve(ip, port, token, world, world - 1, fd);
        if (r != ZT_OK) {
            fprintf(stderr, "zt: rank %d of %d: %s\n", rank, world, zt_last_error());
            *exit_code = 1;
            return 1;
        }
        return zt__attach_rank(comm, fd, rank, world, exit_code);
    }
    if (n <= 1) return zt_comm_single(comm) == ZT_OK ? 0 : (*exit_code = 1, 1);
    if (machines < 1 || n % machines || machine < 0 || machine >= machines) {
        fprintf(stderr, "zt: --num_processes %d (the total) must split evenly over --num_machines %d, and --machine_rank "
                "%d must be below it\n", n, machines, machine);
        *exit_code = 2;
        return 1;
    }
    /* one machine: a shared segment for its ranks; several: the ranks meet over TCP at rank 0, which
       listens at the main process's address (machine 0's), so the launchers need not meet at all */
    int local = n / machines, first = machine * local;
    uint64_t token = zt__job_token(rdzv_id, *argc, argv, n);
    if (machines == 1 && zt_comm_shm_create(n, (size_t)4 << 20, &fd) != ZT_OK) {
        fprintf(stderr, "zt: machine %d: %s\n", machine, zt_last_error());
        *exit_code = 2;
        return 1;
    }
    char ports[16], tokens[32];
    snprintf(ports, sizeof ports, "%d", port);
    snprintf(tokens, sizeof tokens, "%llx", (unsigned long long)token);
    pid_t *pids = zt__launched;
    struct sigaction term, old_term;
    memset(&term, 0, sizeof term);
    term.sa_handler = zt__launch_on_term;
    sigemptyset(&term.sa_mask);
    sigaction(SIGTERM, &term, &old_term);
    sigset_t term_only, unblocked; /* held while a rank starts: it is then killed with the others, or not yet born */
    sigemptyset(&term_only);
    sigaddset(&term_only, SIGTERM);
    /* the launcher writes each rank's pid, so a rank that dies before it attaches is noticed too */
    zt__shm_header *head = fd < 0 ? (zt__shm_header *)MAP_FAILED
                                  : (zt__shm_header *)mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    n = local; /* from here on: this machine's ranks */
    for (int r = 0; r < n; r++) {
        sigprocmask(SIG_BLOCK, &term_only, &unblocked);
        pids[r] = fork();
        if (pids[r] < 0) {
            sigprocmask(SIG_SETMASK, &unblocked, NULL);
            fprintf(stderr, "zt: cannot start rank %d: %s\n", first + r, strerror(errno));
            for (int k = 0; k < r; k++) kill(pids[k], SIGTERM);
            n = r;
            *exit_code = 1;
            break;
        }
        if (pids[r] == 0) {
            sigaction(SIGTERM, &old_term, NULL);
            sigprocmask(SIG_SETMASK, &unblocked, NULL);
            prctl(PR_SET_PDEATHSIG, SIGTERM); /* a killed launcher takes its ranks along */
            char v[32];
            snprintf(v, sizeof v, "%d", first + r);
            setenv("RANK", v, 1);
            snprintf(v, sizeof v, "%d", r);
            setenv("LOCAL_RANK", v, 1);
            snprintf(v, sizeof v, "%d", local * machines);
            setenv("WORLD_SIZE", v, 1);
            snprintf(v, sizeof v, "%d", local);
            setenv("LOCAL_WORLD_SIZE", v, 1);
            setenv("MASTER_ADDR", ip, 1);
            setenv("MASTER_PORT", ports, 1);
            snprintf(v, sizeof v, "%d", fd);
            if (fd >= 0) setenv("ZT_COMM_FD", v, 1);
            else setenv("ZT_COMM_TCP", tokens, 1);
            execv("/proc/self/exe", argv);
            fprintf(stderr, "zt: rank %d cannot start /proc/self/exe: %s\n", first + r, strerror(errno));
            _exit(127);
        }
        if (head != MAP_FAILED) __atomic_store_n(&head->pids[first + r], (int32_t)pids[r], __ATOMIC_RELEASE);
        zt__launched_n = r + 1;
        sigprocmask(SIG_SETMASK, &unblocked, NULL); /* a SIGTERM held meanwhile reaches this rank too */
        if (zt__launch_term) { /* the ranks started are told; start no more */
            n = r + 1;
            break;
        }
    }
    if (head != MAP_FAILED) munmap(head, 4096);
    if (fd >= 0) close(fd);
    /* wait; the first rank to fail ends the others (they would stop by themselves within seconds), and those
       that take ZT_KILL_GRACE seconds more (default 30: a rank that saves on SIGTERM, away from any collective)
       are killed */
    int left = n, failed = -1, told = 0, stopped = 0;
    struct sigaction alarm_on, old_alarm;
    memset(&alarm_on, 0, sizeof alarm_on);
    alarm_on.sa_handler = zt__launch_on_alarm; /* no SA_RESTART: the wait returns */
    sigemptyset(&alarm_on.sa_mask);
    sigaction(SIGALRM, &alarm_on, &old_alarm);
    zt__launch_late = 0;
    while (left > 0) {
        int status = 0;
        pid_t pid = waitpid(-1, &status, 0);
        if (zt__launch_term && !told) {
            fprintf(stderr, "zt: SIGTERM passed on to the ranks; waiting for them to stop\n");
            told = 1;
        }
        if (zt__launch_late == SIGALRM) { /* the handler killed them */
            zt__launch_late = -1;
            for (int k = 0; k < n; k++)
                if (pids[k] > 0 && pids[k] != pid)
                    fprintf(stderr, "zt: rank %d (pid %d) did not stop within ZT_KILL_GRACE seconds of SIGTERM; killed\n",
                            first + k, (int)pids[k]);
        }
        if (pid < 0 && errno == EINTR) continue;
        if (pid < 0) break;
        int r = 0;
        while (r < n && pids[r] != pid) r++;
        if (r == n) continue;
        pids[r] = 0;
        left--;
        if (zt__stopped_by_term(status)) {
            stopped = 1;
            continue;
        }
        if (status != 0 && failed < 0) {
            char how[96];
            zt__describe_exit(status, how, sizeof how);
            fprintf(stderr, "zt: rank %d (pid %d) %s; ending the other ranks\n", first + r, (int)pid, how);
            failed = r;
            *exit_code = 1;
            for (int k = 0; k < n; k++)
                if (pids[k] > 0) kill(pids[k], SIGTERM);
            const char *grace = getenv("ZT_KILL_GRACE");
            alarm(grace && atoi(grace) > 0 ? (unsigned)atoi(grace) : 30u);
        }
    }
    alarm(0);
    sigaction(SIGALRM, &old_alarm, NULL);
    zt__launched_n = 0;
    sigaction(SIGTERM, &old_term, NULL);
    if ((zt__launch_term || stopped) && failed < 0) *exit_code = 128 + SIGTERM;
    return 1;
}

/* >>config (implementation) -------------------------------------------------------------------- */

/* One config being read: the tokens, the file name for messages, and what was seen so far. */
typedef struct zt__cfg {
    zt__json j;
    zt_ds_config *c;
    zt_options *o;
    char unused[1024];    /* keys read but not acted on yet, for one warning */
    char mismatch[2048];  /* explicit values that contradict flags, for one error */
} zt__cfg;

/* where a token is, for messages */
static void zt__cfg_where(const zt__cfg *g, int t, char *buf, size_t size) {
    int line, col;
    zt__json_where(&g->j, zt__json_begin(&g->j, t), &line, &col);
    snprintf(buf, size, "line %d, column %d", line, col);
}

static zt_result zt__cfg_bad(const zt__cfg *g, int t, const char *path, const char *expected) {
    char where[64];
    int n = g->j.tok[t].end - g->j.tok[t].start;
    const char *q = g->j.tok[t].type == JSMN_STRING ? "\"" : "";
    zt__cfg_where(g, t, where, sizeof where);
    if (g->j.tok[t].type == JSMN_OBJECT || g->j.tok[t].type == JSMN_ARRAY)
        return zt_fail(ZT_ERROR_INVALID, "%s: %s must be %s, found %s (%s)", g->j.file, path, expected,
                       g->j.tok[t].type == JSMN_OBJECT ? "an object" : "an array", where);
    return zt_fail(ZT_ERROR_INVALID, "%s: %s must be %s, found %s%.*s%s (%s)", g->j.file, path, expected, q,
                   n < 60 ? n : 60, g->j.text + g->j.tok[t].start, q, where);
}

static int zt__cfg_is_auto(const zt__cfg *g, int t) {
    return t >= 0 && g->j.tok[t].type == JSMN_STRING && zt__json_eq(&g->j, t, "auto");
}

/* edit distance, for "did you mean" */
static int zt__distance(const char *a, int na, const char *b) {
    int nb = (int)strlen(b), row[64];
    if (na >= 63 || nb >= 63) return 99;
    for (int j = 0; j <= nb; j++) row[j] = j;
    for (int i = 1; i <= na; i++) {
        int prev = row[0];
        row[0] = i;
        for (int j = 1; j <= nb; j++) {
            int cur = row[j];
            int sub = prev + (a[i - 1] != b[j - 1]);
            row[j] = ZT__MIN(ZT__MIN(row[j] + 1, row[j - 1] + 1), sub);
            prev = cur;
        }
    }
    return row[nb];
}

/* Every key of object `obj` (JSON path `path`) must be in `known` (NULL-terminated). Unknown keys
   are an error in a strict section, with the nearest known key offered; a warning elsewhere. */
static zt_result zt__cfg_keys(zt__cfg *g, int obj, const char *path, const char *const *known, int strict) {
    const zt__json *j = &g->j;
    int key = obj + 1;
    for (int i = 0; i < j->tok[obj].size; i++, key = zt__json_skip(j, key + 1)) {
        const char *k = j->text + j->tok[key].start;
        int n = j->tok[key].end - j->tok[key].start, found = 0, best = 99;
        const char *near = NULL;
        for (int m = 0; known[m]; m++) {
            if ((int)strlen(known[m]) == n && memcmp(known[m], k, (size_t)n) == 0) found = 1;
            int d = zt__distance(k, n, known[m]);
            if (d < best) best = d, near = known[m];
        }
        if (found) continue;
        char where[64], hint[128] = "";
        zt__cfg_where(g, key, where, sizeof where);
        if (near && best <= 3) snprintf(hint, sizeof hint, "; did you mean \"%s\"?", near);
        if (n == 12 && memcmp(k, "thread_count", 12) == 0) /* documented once, gone from DeepSpeed 0.19.8's code */
            snprintf(hint, sizeof hint, "; intra_op_parallelism is the setting (thread_count was its old name)");
        if (strict)
            return zt_fail(ZT_ERROR_INVALID, "%s: unknown key %s%s%.*s (%s): DeepSpeed rejects unknown keys here%s",
                           j->file, path, *path ? "." : "", n, k, where, hint);
        zt_log(ZT_LOG_WARN, "%s: unknown key %s%s%.*s (%s) is ignored, as DeepSpeed ignores it%s", j->file, path,
               *path ? "." : "", n, k, where, hint);
    }
    return ZT_OK;
}

static zt_result zt__cfg_object(zt__cfg *g, int t, const char *path) {
    if (t >= 0 && g->j.tok[t].type != JSMN_OBJECT) return zt__cfg_bad(g, t, path, "an object");
    return ZT_OK;
}

/* typed values: absent (t < 0) leaves *out; "auto" is handled by the callers that allow it */
static zt_result zt__cfg_bool(zt__cfg *g, int t, const char *path, int *out) {
    if (t < 0) return ZT_OK;
    if (g->j.tok[t].type == JSMN_PRIMITIVE && (zt__json_eq(&g->j, t, "true") || zt__json_eq(&g->j, t, "1")))
        *out = 1;
    else if (g->j.tok[t].type == JSMN_PRIMITIVE && (zt__json_eq(&g->j, t, "false") || zt__json_eq(&g->j, t, "0")))
        *out = 0;
    else
        return zt__cfg_bad(g, t, path, "true or false");
    return ZT_OK;
}

static zt_result zt__cfg_num(zt__cfg *g, int t, const char *path, double lo, double hi, double *out) {
    double v = 0;
    if (t < 0) return ZT_OK;
    if (g->j.tok[t].type != JSMN_PRIMITIVE || zt__json_eq(&g->j, t, "true") || zt__json_eq(&g->j, t, "false") ||
        zt__json_eq(&g->j, t, "null") || zt__json_number(&g->j, t, path, &v) != ZT_OK)
        return zt__cfg_bad(g, t, path, "a number");
    if (!(v >= lo && v <= hi)) {
        char what[96];
        if (hi >= 1e300) snprintf(what, sizeof what, "a number >= %g", lo);
        else snprintf(what, sizeof what, "a number in [%g, %g]", lo, hi);
        return zt__cfg_bad(g, t, path, what);
    }
    *out = v;
    return ZT_OK;
}

/* integers as DeepSpeed's pydantic takes them: 5e8 is 500000000, 5.5 is an error */
static zt_result zt__cfg_int(zt__cfg *g, int t, const char *path, int64_t lo, int64_t *out) {
    double v = 0;
    if (t < 0) return ZT_OK;
    zt_result r = zt__cfg_num(g, t, path, -9.2e18, 9.2e18, &v);
    if (r != ZT_OK) return zt__cfg_bad(g, t, path, "an integer");
    if (v != floor(v)) return zt__cfg_bad(g, t, path, "an integer (it has a fractional part)");
    if (v < (double)lo) {
        char what[64];
        snprintf(what, sizeof what, "an integer >= %lld", (long long)lo);
        return zt__cfg_bad(g, t, path, what);
    }
    *out = (int64_t)v;
    return ZT_OK;
}

/* a string from a list of choices (NULL-terminated); returns its index in *out */
static zt_result zt__cfg_choice(zt__cfg *g, int t, const char *path, const char *const *choices, int *out) {
    if (t < 0) return ZT_OK;
    char v[64] = "", expected[256];
    size_t n = (size_t)snprintf(expected, sizeof expected, "one of");
    for (int i = 0; choices[i]; i++) n += (size_t)snprintf(expected + n, sizeof expected - n, "%s \"%s\"", i ? "," : "", choices[i]);
    if (g->j.tok[t].type != JSMN_STRING || zt__json_string(&g->j, t, path, v, sizeof v) != ZT_OK)
        return zt__cfg_bad(g, t, path, expected);
    for (int i = 0; choices[i]; i++)
        if (strcmp(v, choices[i]) == 0) return (*out = i), ZT_OK;
    return zt__cfg_bad(g, t, path, expected);
}

static void zt__cfg_note_unused(zt__cfg *g, const char *path) {
    size_t n = strlen(g->unused);
    if (strstr(g->unused, path)) return;
    snprintf(g->unused + n, sizeof g->unused - n, "%s%s", n ? ", " : "", path);
}

/* An explicit config value against the flag that also sets it: contradicting is an error if the flag
   was passed; otherwise the config's value wins. */
static void zt__cfg_match(zt__cfg *g, const char *path, double config, double flag, const char *flag_name) {
    if (!zt_options_given(g->o, flag_name) || fabs(config - flag) <= 1e-12 * fabs(flag)) return;
    size_t n = strlen(g->mismatch);
    snprintf(g->mismatch + n, sizeof g->mismatch - n, "\n- %s=%g vs --%s=%g", path, config, flag_name, flag);
}

/* a number that may be "auto" (then `fill`), compared with the flag it shares */
static zt_result zt__cfg_num_flag(zt__cfg *g, int obj, const char *key, const char *path, double lo, double hi,
                                  const char *flag, double fill, double *out) {
    int t = zt__json_get(&g->j, obj, key);
    *out = fill;
    if (t < 0 || zt__cfg_is_auto(g, t)) return ZT_OK;
    zt_result r = zt__cfg_num(g, t, path, lo, hi, out);
    if (r == ZT_OK && flag) zt__cfg_match(g, path, *out, fill, flag);
    return r;
}

/* ---- the sections ---- */

static const char *const zt__ds_top[] = {
    "train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "gradient_clipping",
    "steps_per_print", "wall_clock_breakdown", "prescale_gradients", "gradient_predivide_factor",
    "communication_data_type", "data_types", "optimizer", "scheduler", "fp16", "bf16", "bfloat16",
    "activation_checkpointing", "zero_optimization", "aio", "checkpoint", "zero_allow_untested_optimizer",
    "zero_force_ds_cpu_optimizer", "gradient_allreduce_op", "dump_state", "disable_allgather", "memory_breakdown",
    "dataloader_drop_last", "vocabulary_size", "flops_profiler", "autotuning", "comms_logger", "tensorboard", "wandb",
    "csv_monitor", "comet", "timers", "hybrid_engine", "pipeline", "data_efficiency", "compile", "tensor_parallel",
    "torch_autocast", "seq_parallel_communication_data_type", "sequence_parallel_size", "log_level",
    "managed_gradient_accumulation", "disable_python_gc", NULL};
/* keys DeepSpeed 0.19.8 removed: it stops with an error, and so does zt */
static const char *const zt__ds_removed[] = {"nebula", "compression_training", "amp", "quantize_training",
                                             "sparse_gradients", "eigenvalue", "sparse_attention", "elasticity",
                                             "graph_harvesting", "curriculum_learning", "progressive_layer_drop", NULL};
static const char *const zt__ds_zero[] = {
    "stage", "contiguous_gradients", "reduce_scatter", "reduce_bucket_size", "use_multi_rank_bucket_allreduce",
    "allgather_partitions", "allgather_bucket_size", "overlap_comm", "compute_grad_norm", "load_from_fp32_weights",
    "elastic_checkpoint", "offload_param", "offload_optimizer", "zenflow", "sub_group_size", "prefetch_bucket_size",
    "stage3_prefetch_bucket_size", "param_persistence_threshold", "stage3_param_persistence_threshold",
    "model_persistence_threshold", "stage3_model_persistence_threshold", "max_live_parameters",
    "stage3_max_live_parameters", "max_reuse_distance", "stage3_max_reuse_distance",
    "gather_16bit_weights_on_model_save", "stage3_gather_16bit_weights_on_model_save",
    "stage3_gather_fp16_weights_on_model_save", "module_granularity_threshold",
    "stage3_module_granularity_threshold", "use_all_reduce_for_fetch_params",
    "stage3_use_all_reduce_for_fetch_params", "allgather_sequential", "stage3_allgather_sequential",
    "ignore_unused_parameters", "legacy_stage1", "round_robin_gradients", "parameter_alignment",
    "zero_hpz_partition_size", "zero_quantized_weights", "zero_quantized_nontrainable_weights",
    "zero_quantized_gradients", "memory_efficient_linear", "pipeline_loading_checkpoint", "override_module_apply",
    "log_trace_cache_warnings", "enable_sanity_checks", "save_muon_momentum_buffer_in_memory", "leaf_module",
    "cpu_offload", "cpu_offload_param", "cpu_offload_use_pin_memory", NULL};
static const char *const zt__ds_offload_opt[] = {"device", "nvme_path", "buffer_count", "pin_memory", "pipeline_read",
                                                 "pipeline_write", "fast_init", "ratio", "super_offload",
                                                 "cpuadam_cores_perc", NULL};
static const char *const zt__ds_offload_param[] = {"device", "nvme_path", "buffer_count", "buffer_size", "max_in_cpu",
                                                   "pin_memory", NULL};
static const char *const zt__ds_fp16[] = {"enabled", "auto_cast", "loss_scale", "initial_scale_power",
                                          "loss_scale_window", "hysteresis", "consecutive_hysteresis", "min_loss_scale",
                                          "fp16_master_weights_and_grads", NULL};
static const char *const zt__ds_bf16[] = {"enabled", "immediate_grad_update", "check_grad_overflow",
                                          "bf16_master_weights_and_grads", "bf16_optimizer_states", NULL};
static const char *const zt__ds_adam[] = {"lr", "betas", "eps", "weight_decay", "adam_w_mode", "torch_adam",
                                          "bias_correction", "amsgrad", "fused", "foreach", NULL};
static const char *const zt__ds_sched[] = {"warmup_min_lr", "warmup_max_lr", "warmup_num_steps", "warmup_type",
                                           "total_num_steps", "warmup_min_ratio", "cos_min_ratio", "last_batch_iteration",
                                           NULL};
static const char *const zt__ds_act[] = {"partition_activations", "contiguous_memory_optimization", "cpu_checkpointing",
                                         "number_checkpoints", "synchronize_checkpoint_boundary", "profile", NULL};
static const char *const zt__ds_aio[] = {"block_size", "queue_depth", "intra_op_parallelism", "single_submit",
                                         "overlap_events", "use_gds", NULL};
static const char *const zt__ds_ckpt[] = {"tag_validation", "load_universal", "use_node_local_storage",
                                          "parallel_write", NULL};
static const char *const zt__ds_types[] = {"grad_accum_dtype", "param_dtype", NULL};

/* batch sizes: DeepSpeed's _set_batch_related_parameters and _batch_assertion, messages included */
static zt_result zt__cfg_batch(zt__cfg *g) {
    zt_ds_config *c = g->c;
    zt_options *o = g->o;
    const char *keys[3] = {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"};
    int64_t v[3] = {0, 0, 0};
    int has[3];
    for (int i = 0; i < 3; i++) {
        int t = zt__json_get(&g->j, 0, keys[i]);
        has[i] = t >= 0 && !zt__cfg_is_auto(g, t);
        if (t >= 0 && zt__cfg_is_auto(g, t)) { /* filled from the flags, as the Transformers integration does */
            has[i] = 1;
            v[i] = i == 0 ? o->micro_batch * o->grad_accum * c->world_size : i == 1 ? o->micro_batch : o->grad_accum;
        } else {
            zt_result r = zt__cfg_int(g, t, keys[i], INT64_MIN / 2, &v[i]);
            if (r != ZT_OK) return r;
            if (has[i] && i == 1) zt__cfg_match(g, keys[i], (double)v[i], (double)o->micro_batch, "per_device_train_batch_size");
            if (has[i] && i == 2) zt__cfg_match(g, keys[i], (double)v[i], (double)o->grad_accum, "gradient_accumulation_steps");
        }
    }
    for (int i = 0; i < 3; i++)
        if (v[i] > ((int64_t)1 << 30) || v[i] < -((int64_t)1 << 30))
            return zt_fail(ZT_ERROR_INVALID, "%s: %s %lld is out of range", g->j.file, keys[i], (long long)v[i]);
    int64_t tbs = v[0], mbs = v[1], gas = v[2], ws = c->world_size;
    if (!has[0] && !has[1] && !has[2]) { /* none given: the flags decide, as with no config */
        mbs = o->micro_batch;
        gas = o->grad_accum;
        tbs = mbs * gas * ws;
    } else if (!has[0] && !has[1]) {
        return zt_fail(ZT_ERROR_INVALID, "%s: Either train_batch_size or train_micro_batch_size_per_gpu needs to be "
                       "provided", g->j.file);
    } else if (has[0] && has[1] && has[2]) {
    } else if (has[0] && has[1]) {
        if (mbs == 0 || ws == 0) return zt_fail(ZT_ERROR_INVALID, "%s: train_micro_batch_size_per_gpu is 0", g->j.file);
        gas = tbs / mbs / ws;
    } else if (has[0] && has[2]) {
        if (gas == 0) return zt_fail(ZT_ERROR_INVALID, "%s: gradient_accumulation_steps is 0", g->j.file);
        mbs = tbs / ws / gas;
    } else if (has[1] && has[2]) {
        tbs = mbs * gas * ws;
    } else if (has[0]) {
        gas = 1;
        mbs = tbs / ws;
    } else {
        tbs = mbs * ws;
        gas = 1;
    }
    if (tbs <= 0) return zt_fail(ZT_ERROR_INVALID, "%s: Train batch size: %lld has to be greater than 0", g->j.file, (long long)tbs);
    if (mbs <= 0) return zt_fail(ZT_ERROR_INVALID, "%s: Micro batch size per gpu: %lld has to be greater than 0", g->j.file, (long long)mbs);
    if (gas <= 0) return zt_fail(ZT_ERROR_INVALID, "%s: Gradient accumulation steps: %lld has to be greater than 0", g->j.file, (long long)gas);
    if (tbs != mbs * gas * ws)
        return zt_fail(ZT_ERROR_INVALID, "%s: Check batch related parameters. train_batch_size is not equal to "
                       "micro_batch_per_gpu * gradient_acc_step * world_size %lld != %lld * %lld * %lld", g->j.file,
                       (long long)tbs, (long long)mbs, (long long)gas, (long long)ws);
    c->train_batch_size = tbs, c->micro_batch = mbs, c->grad_accum = gas;
    o->micro_batch = mbs, o->grad_accum = gas;
    return ZT_OK;
}

static zt_result zt__cfg_optimizer(zt__cfg *g) {
    zt_options *o = g->o;
    int t = zt__json_get(&g->j, 0, "optimizer"), p = -1;
    zt_result r;
    if ((r = zt__cfg_object(g, t, "optimizer")) != ZT_OK) return r;
    if (t < 0) return ZT_OK; /* the Trainer's AdamW from the flags */
    char type[24] = "";
    int tt = zt__json_get(&g->j, t, "type");
    if (tt < 0) return ZT_OK;
    if ((r = zt__json_string(&g->j, tt, "optimizer.type", type, sizeof type)) != ZT_OK) return zt__cfg_bad(g, tt, "optimizer.type", "a string");
    char lower[24];
    for (size_t i = 0; i < sizeof lower; i++) lower[i] = (char)((type[i] >= 'A' && type[i] <= 'Z') ? type[i] + 32 : type[i]);
    if (strcmp(lower, "adam") != 0 && strcmp(lower, "adamw") != 0)
        return zt_fail(ZT_ERROR_UNSUPPORTED, "%s: optimizer.type \"%s\" is not implemented in zt (Adam and AdamW are)",
                       g->j.file, type);
    snprintf(g->c->optimizer_type, sizeof g->c->optimizer_type, "%s", lower);
    p = zt__json_get(&g->j, t, "params");
    if ((r = zt__cfg_object(g, p, "optimizer.params")) != ZT_OK) return r;
    if (p < 0) p = -1;
    if (p >= 0 && zt__json_get(&g->j, p, "max_grad_norm") >= 0)
        return zt_fail(ZT_ERROR_INVALID, "%s: 'max_grad_norm' is not supported as an optimizer parameter, please switch "
                       "to using the deepspeed parameter 'gradient_clipping'", g->j.file);
    if (p >= 0 && (r = zt__cfg_keys(g, p, "optimizer.params", zt__ds_adam, 1)) != ZT_OK) return r;
    double lr, eps, wd, b1 = o->beta1, b2 = o->beta2;
    if ((r = zt__cfg_num_flag(g, p, "lr", "optimizer.params.lr", 0, 1e300, "learning_rate", o->lr, &lr)) ||
        (r = zt__cfg_num_flag(g, p, "eps", "optimizer.params.eps", 0, 1e300, "adam_epsilon", o->eps, &eps)) ||
        (r = zt__cfg_num_flag(g, p, "weight_decay", "optimizer.params.weight_decay", 0, 1e300, "weight_decay",
                              o->weight_decay, &wd)))
        return r;
    int bt = p >= 0 ? zt__json_get(&g->j, p, "betas") : -1;
    if (bt >= 0 && !zt__cfg_is_auto(g, bt)) {
        if (g->j.tok[bt].type != JSMN_ARRAY || g->j.tok[bt].size != 2) return zt__cfg_bad(g, bt, "optimizer.params.betas", "two numbers");
        if ((r = zt__cfg_num(g, bt + 1, "optimizer.params.betas[0]", 0, 0.999999999, &b1)) ||
            (r = zt__cfg_num(g, bt + 2, "optimizer.params.betas[1]", 0, 0.999999999, &b2)))
            return r;
        zt__cfg_match(g, "optimizer.params.betas[0]", b1, o->beta1, "adam_beta1");
        zt__cfg_match(g, "optimizer.params.betas[1]", b2, o->beta2, "adam_beta2");
    }
    int mode = 1, amsgrad = 0, bias_correction = 1, unused = 0;
    if (p >= 0 && ((r = zt__cfg_bool(g, zt__json_get(&g->j, p, "adam_w_mode"), "optimizer.params.adam_w_mode", &mode)) ||
                   (r = zt__cfg_bool(g, zt__json_get(&g->j, p, "amsgrad"), "optimizer.params.amsgrad", &amsgrad)) ||
                   (r = zt__cfg_bool(g, zt__json_get(&g->j, p, "bias_correction"), "optimizer.params.bias_correction", &bias_correction)) ||
                   (r = zt__cfg_bool(g, zt__json_get(&g->j, p, "torch_adam"), "optimizer.params.torch_adam", &unused))))
        return r;
    if (amsgrad) return zt_fail(ZT_ERROR_UNSUPPORTED, "%s: optimizer.params.amsgrad is not implemented in zt", g->j.file);
    if (!bias_correction) return zt_fail(ZT_ERROR_UNSUPPORTED, "%s: optimizer.params.bias_correction false is not implemented in zt", g->j.file);
    if ((float)lr != o->lr) o->lr_exact = lr; /* "auto", or the flag's value again: the flag's digits */
    o->lr = (float)lr, o->eps = (float)eps, o->weight_decay = (float)wd, o->beta1 = (float)b1, o->beta2 = (float)b2;
    o->adam_w_mode = strcmp(lower, "adamw") == 0 || mode; /* "Adam" is AdamW unless adam_w_mode is false */
    return ZT_OK;
}

static const char *const zt__schedule_names[] = {"linear", "constant_with_warmup", "WarmupLR", "WarmupDecayLR",
    "WarmupCosineLR", "cosine", "cosine_with_restarts", "polynomial", "inverse_sqrt", "cosine_with_min_lr",
    "cosine_warmup_with_min_lr", "warmup_stable_decay", "constant", "reduce_lr_on_plateau", "greedy"};
ZT_API const char *zt_schedule_name(zt_schedule s) {
    return (int)s >= 0 && s <= ZT_SCHED_GREEDY ? zt__schedule_names[s] : "?";
}
static int zt__metric_schedule(zt_schedule s) { return s == ZT_SCHED_REDUCE_ON_PLATEAU || s == ZT_SCHED_GREEDY; }

/* The metric-following schedules' settings, theirs where not given: ReduceLROnPlateau's defaults, or GreedyLR's */
typedef struct zt__plateau_cfg { double factor, threshold, min_lr; int abs; } zt__plateau_cfg;
static zt__plateau_cfg zt__plateau_settings(const zt_options *o) {
    int greedy = o->schedule == ZT_SCHED_GREEDY;
    zt__plateau_cfg c;
    c.factor = o->plateau_factor >= 0 ? o->plateau_factor : greedy ? 0.95 : 0.1;
    c.threshold = o->plateau_threshold >= 0 ? o->plateau_threshold : greedy ? 1e-6 : 1e-4;
    c.abs = o->plateau_threshold_abs >= 0 ? o->plateau_threshold_abs : greedy;
    c.min_lr = o->min_lr >= 0 ? o->min_lr : greedy ? 1e-3 : 0.0;
    return c;
}
static int zt__hf_schedule(int s) { return s != ZT_SCHED_WARMUP_LR && s != ZT_SCHED_WARMUP_DECAY_LR && s != ZT_SCHED_WARMUP_COSINE_LR; }

static int64_t zt__warmup_steps(const zt_options *o);

/* the Transformers schedules' num_cycles (0: the schedule's own default) and min_lr_rate (or min_lr over
   the learning rate, as transformers turns one into the other) */
static double zt__num_cycles(const zt_options *o) {
    return o->num_cycles != 0 ? o->num_cycles : o->schedule == ZT_SCHED_COSINE_RESTARTS ? 1.0 : 0.5;
}
static double zt__min_lr_rate(const zt_options *o) { return o->min_lr >= 0 ? o->min_lr / o->lr : o->min_lr_rate; }

static zt_result zt__cfg_scheduler(zt__cfg *g) {
    zt_options *o = g->o;
    int t = zt__json_get(&g->j, 0, "scheduler");
    zt_result r;
    if ((r = zt__cfg_object(g, t, "scheduler")) != ZT_OK) return r;
    int tt = t >= 0 ? zt__json_get(&g->j, t, "type") : -1;
    if (tt < 0) return ZT_OK; /* the Trainer's schedule from the flags */
    static const char *const types[] = {"WarmupLR", "WarmupDecayLR", "WarmupCosineLR", NULL};
    int kind = 0;
    if (zt__cfg_choice(g, tt, "scheduler.type", types, &kind) != ZT_OK) {
        char type[32] = "";
        zt__json_string(&g->j, tt, "scheduler.type", type, sizeof type);
        return zt_fail(ZT_ERROR_UNSUPPORTED, "%s: scheduler.type \"%s\" is not implemented in zt (WarmupLR, "
                       "WarmupDecayLR and WarmupCosineLR are)", g->j.file, type);
    }
    snprintf(g->c->scheduler_type, sizeof g->c->scheduler_type, "%s", types[kind]);
    if (zt_options_given(o, "lr_scheduler_type") || o->lr_scheduler_kwargs) /* as the Transformers integration */
        zt_log(ZT_LOG_WARN, "%s: the config's scheduler %s replaces --lr_scheduler_type %s and its kwargs", g->j.file,
               types[kind], zt_schedule_name(o->schedule));
    int p = zt__json_get(&g->j, t, "params");
    if (p < 0) return zt_fail(ZT_ERROR_INVALID, "%s: scheduler.params is missing (DeepSpeed needs it for %s)", g->j.file, types[kind]);
    if ((r = zt__cfg_object(g, p, "scheduler.params")) || (r = zt__cfg_keys(g, p, "scheduler.params", zt__ds_sched, 1)))
        return r;
    /* warmup_num_steps must be a positive integer (a JSON 10.0 is refused, as DeepSpeed refuses it) */
    int wt = zt__json_get(&g->j, p, "warmup_num_steps");
    int64_t warm = 1000;
    if (zt__cfg_is_auto(g, wt)) {
        warm = ZT__MAX(1, zt__warmup_steps(o)); /* the Trainer's get_warmup_steps */
    } else if (wt >= 0) {
        const char *v = g->j.text + g->j.tok[wt].start;
        int n = g->j.tok[wt].end - g->j.tok[wt].start;
        int integer = g->j.tok[wt].type == JSMN_PRIMITIVE && zt__json_is_number(v, n) && !memchr(v, '.', (size_t)n) &&
                      !memchr(v, 'e', (size_t)n) && !memchr(v, 'E', (size_t)n);
        if (!integer || zt__cfg_int(g, wt, "scheduler.params.warmup_num_steps", 1, &warm) != ZT_OK)
            return zt_fail(ZT_ERROR_INVALID, "%s: warmup_num_steps must be a positive integer, got %.*s", g->j.file, n, v);
        zt__cfg_match(g, "scheduler.params.warmup_num_steps", (double)warm, (double)zt__warmup_steps(o), "warmup_steps");
    }
    static const char *const wtypes[] = {"log", "linear", NULL};
    int linear = 0;
    if ((r = zt__cfg_choice(g, zt__json_get(&g->j, p, "warmup_type"), "scheduler.params.warmup_type", wtypes, &linear)))
        return r;
    double min_lr, max_lr, total, wmr = 0.0, cmr = 1e-4;
    /* absent: WarmupLR the optimizer's lr, WarmupDecayLR 0.001 (DeepSpeed's defaults); "auto" and a value
       given are the learning rate's, filled and compared as the Transformers integration does */
    double max_default = kind == 1 && zt__json_get(&g->j, p, "warmup_max_lr") < 0 ? 0.001 : o->lr;
    if ((r = zt__cfg_num_flag(g, p, "warmup_min_lr", "scheduler.params.warmup_min_lr", 0, 1e300, NULL, 0.0, &min_lr)) ||
        (r = zt__cfg_num_flag(g, p, "warmup_max_lr", "scheduler.params.warmup_max_lr", 0, 1e300,
                              kind == 2 ? NULL : "learning_rate", max_default, &max_lr)) ||
        (r = zt__cfg_num_flag(g, p, "total_num_steps", "scheduler.params.total_num_steps", 1, 1e15, "max_steps",
                              (double)o->max_steps, &total)) ||
        (r = zt__cfg_num_flag(g, p, "warmup_min_ratio", "scheduler.params.warmup_min_ratio", 0, 1, NULL, 0.0, &wmr)) ||
        (r = zt__cfg_num_flag(g, p, "cos_min_ratio", "scheduler.params.cos_min_ratio", 0, 1, NULL, 1e-4, &cmr)))
        return r;
    int tn = zt__json_get(&g->j, p, "total_num_steps");
    if (kind > 0 && tn < 0)
        return zt_fail(ZT_ERROR_INVALID, "%s: scheduler.params.total_num_steps is required by %s", g->j.file, types[kind]);
    if (kind == 0 && zt__json_get(&g->j, p, "warmup_max_lr") < 0 && zt__json_get(&g->j, g->j.tok[0].size ? 0 : 0, "optimizer") < 0)
        max_lr = o->lr;
    o->schedule = kind == 0 ? ZT_SCHED_WARMUP_LR : kind == 1 ? ZT_SCHED_WARMUP_DECAY_LR : ZT_SCHED_WARMUP_COSINE_LR;
    o->warmup_steps = warm, o->warmup_ratio = 0;
    o->warmup_log = !linear;
    o->warmup_min_lr = (float)min_lr, o->warmup_max_lr = (float)max_lr;
    o->warmup_min_ratio = (float)wmr, o->cos_min_ratio = (float)cmr;
    o->schedule_total = kind > 0 ? (int64_t)total : 0;
    return ZT_OK;
}

static zt_result zt__cfg_precision(zt__cfg *g) {
    zt_ds_config *c = g->c;
    zt_options *o = g->o;
    zt_result r;
    int f = zt__json_get(&g->j, 0, "fp16"), b = zt__json_get(&g->j, 0, "bf16");
    if (b < 0) b = zt__json_get(&g->j, 0, "bfloat16");
    if ((r = zt__cfg_object(g, f, "fp16")) || (r = zt__cfg_object(g, b, "bf16"))) return r;
    if (f >= 0 && (r = zt__cfg_keys(g, f, "fp16", zt__ds_fp16, 1))) return r;
    if (b >= 0 && (r = zt__cfg_keys(g, b, "bf16", zt__ds_bf16, 1))) return r;
    int fe = o->precision == ZT_PRECISION_FP16, be = o->precision == ZT_PRECISION_BF16;
    int ft = f >= 0 ? zt__json_get(&g->j, f, "enabled") : -1, bt = b >= 0 ? zt__json_get(&g->j, b, "enabled") : -1;
    if (ft >= 0 && !zt__cfg_is_auto(g, ft)) {
        if ((r = zt__cfg_bool(g, ft, "fp16.enabled", &fe))) return r;
        zt__cfg_match(g, "fp16.enabled", fe, o->precision == ZT_PRECISION_FP16, "fp16");
    }
    if (bt >= 0 && !zt__cfg_is_auto(g, bt)) {
        if ((r = zt__cfg_bool(g, bt, "bf16.enabled", &be))) return r;
        zt__cfg_match(g, "bf16.enabled", be, o->precision == ZT_PRECISION_BF16, "bf16");
    }
    if (fe && be) return zt_fail(ZT_ERROR_INVALID, "%s: bfloat16 and fp16 modes cannot be simultaneously enabled", g->j.file);
    c->fp16 = fe, c->bf16 = be;
    o->precision = fe ? ZT_PRECISION_FP16 : be ? ZT_PRECISION_BF16 : ZT_PRECISION_FP32;
    int64_t power = o->initial_scale_power, window = o->loss_scale_window, hyst = o->hysteresis, min_scale = 1;
    double scale = 0;
    int consecutive = o->consecutive_hysteresis, master = 0;
    c->bf16_check_grad_overflow = 1;
    if (f >= 0 && ((r = zt__cfg_bool(g, zt__json_get(&g->j, f, "auto_cast"), "fp16.auto_cast", &c->fp16_auto_cast)) ||
                   (r = zt__cfg_num(g, zt__json_get(&g->j, f, "loss_scale"), "fp16.loss_scale", 0, 1e300, &scale)) ||
                   (r = zt__cfg_int(g, zt__json_get(&g->j, f, "initial_scale_power"), "fp16.initial_scale_power", 0, &power)) ||
                   (power > 64 && (r = zt__cfg_bad(g, zt__json_get(&g->j, f, "initial_scale_power"), "fp16.initial_scale_power", "an integer in [0, 64]"))) ||
                   (r = zt__cfg_int(g, zt__json_get(&g->j, f, "loss_scale_window"), "fp16.loss_scale_window", 0, &window)) ||
                   (r = zt__cfg_int(g, zt__json_get(&g->j, f, "hysteresis"), "fp16.hysteresis", 0, &hyst)) ||
                   (r = zt__cfg_bool(g, zt__json_get(&g->j, f, "consecutive_hysteresis"), "fp16.consecutive_hysteresis", &consecutive)) ||
                   (r = zt__cfg_int(g, zt__json_get(&g->j, f, "min_loss_scale"), "fp16.min_loss_scale", 0, &min_scale)) ||
                   (r = zt__cfg_bool(g, zt__json_get(&g->j, f, "fp16_master_weights_and_grads"), "fp16.fp16_master_weights_and_grads", &master))))
        return r;
    if (window > INT32_MAX || hyst > INT32_MAX || min_scale > INT32_MAX)
        return zt_fail(ZT_ERROR_INVALID, "%s: fp16.loss_scale_window, hysteresis and min_loss_scale must be below 2^31", g->j.file);
    if (fe && scale == 0 && window <= 0)
        return zt_fail(ZT_ERROR_INVALID, "%s: fp16.loss_scale_window must be > 0 when dynamic loss scaling is enabled (loss_scale=0)", g->j.file);
    if (fe && scale == 0 && min_scale <= 0)
        return zt_fail(ZT_ERROR_INVALID, "%s: fp16.min_loss_scale must be > 0 when dynamic loss scaling is enabled (loss_scale=0)", g->j.file);
    if (master) zt__cfg_note_unused(g, "fp16.fp16_master_weights_and_grads");
    if (c->fp16_auto_cast) zt__cfg_note_unused(g, "fp16.auto_cast");
    o->static_loss_scale = (float)scale;
    o->initial_scale_power = (int)power, o->loss_scale_window = (int)window, o->hysteresis = (int)hyst;
    o->consecutive_hysteresis = consecutive, o->min_loss_scale = (float)min_scale;
    if (b >= 0) {
        int unused = 0;
        if ((r = zt__cfg_bool(g, zt__json_get(&g->j, b, "check_grad_overflow"), "bf16.check_grad_overflow", &c->bf16_check_grad_overflow)) ||
            (r = zt__cfg_bool(g, zt__json_get(&g->j, b, "immediate_grad_update"), "bf16.immediate_grad_update", &unused)))
            return r;
        static const char *const later[] = {"bf16_master_weights_and_grads", "bf16_optimizer_states", NULL};
        for (int i = 0; later[i]; i++) {
            int v = 0, k = zt__json_get(&g->j, b, later[i]);
            char path[64];
            snprintf(path, sizeof path, "bf16.%s", later[i]);
            if ((r = zt__cfg_bool(g, k, path, &v))) return r;
            if (v) zt__cfg_note_unused(g, path);
        }
    }
    return ZT_OK;
}

static zt_result zt__cfg_offload(zt__cfg *g, int t, const char *path, zt_offload_config *off, int param) {
    zt_result r;
    memset(off, 0, sizeof *off);
    off->buffer_count = param ? 5 : 4;
    off->buffer_size = 100000000;
    off->max_in_cpu = 1000000000;
    off->pin_memory = 1; /* true since DeepSpeed 0.18 (false before) */
    off->ratio = 1.0;
    if (t < 0 || zt__json_is_null(&g->j, t)) return ZT_OK;
    if ((r = zt__cfg_object(g, t, path)) || (r = zt__cfg_keys(g, t, path, param ? zt__ds_offload_param : zt__ds_offload_opt, 1)))
        return r;
    static const char *const devices[] = {"none", "cpu", "nvme", NULL};
    char p[128];
    int dev = 0;
#define ZT__P(k) (snprintf(p, sizeof p, "%s.%s", path, k), p)
    int k = zt__json_get(&g->j, t, "device");
    if (!zt__cfg_is_auto(g, k) && (r = zt__cfg_choice(g, k, ZT__P("device"), devices, &dev))) return r;
    off->device = (zt_offload_device)dev;
    int nt = zt__json_get(&g->j, t, "nvme_path");
    if (nt >= 0 && !zt__json_is_null(&g->j, nt) &&
        (g->j.tok[nt].type != JSMN_STRING || zt__json_string(&g->j, nt, ZT__P("nvme_path"), off->nvme_path, sizeof off->nvme_path)))
        return zt__cfg_bad(g, nt, ZT__P("nvme_path"), "a path");
    if ((r = zt__cfg_int(g, zt__json_get(&g->j, t, "buffer_count"), ZT__P("buffer_count"), 0, &off->buffer_count)) ||
        (r = zt__cfg_bool(g, zt__json_get(&g->j, t, "pin_memory"), ZT__P("pin_memory"), &off->pin_memory)) ||
        (r = zt__cfg_bool(g, zt__json_get(&g->j, t, "pipeline_read"), ZT__P("pipeline_read"), &off->pipeline_read)) ||
        (r = zt__cfg_bool(g, zt__json_get(&g->j, t, "pipeline_write"), ZT__P("pipeline_write"), &off->pipeline_write)) ||
        (r = zt__cfg_bool(g, zt__json_get(&g->j, t, "fast_init"), ZT__P("fast_init"), &off->fast_init)) ||
        (r = zt__cfg_num(g, zt__json_get(&g->j, t, "ratio"), ZT__P("ratio"), 0, 1, &off->ratio)) ||
        (r = zt__cfg_int(g, zt__json_get(&g->j, t, "buffer_size"), ZT__P("buffer_size"), 0, &off->buffer_size)) ||
        (r = zt__cfg_int(g, zt__json_get(&g->j, t, "max_in_cpu"), ZT__P("max_in_cpu"), 0, &off->max_in_cpu)))
        return r;
#undef ZT__P
    return ZT_OK;
}

/* one of DeepSpeed's renamed keys (the old stage3_ name or the new): its token and path, or -1; giving
   both names is an error, as in DeepSpeed */
static zt_result zt__cfg_alias_token(zt__cfg *g, int z, const char *name, const char *alias, int *t, char *path,
                                     size_t size) {
    int a = zt__json_get(&g->j, z, name), b = zt__json_get(&g->j, z, alias);
    if (a >= 0 && b >= 0)
        return zt_fail(ZT_ERROR_INVALID, "%s: zero_optimization.%s and zero_optimization.%s are the same setting; give one",
                       g->j.file, alias, name);
    *t = a >= 0 ? a : b;
    snprintf(path, size, "zero_optimization.%s", a >= 0 ? name : alias);
    return ZT_OK;
}

static zt_result zt__cfg_alias(zt__cfg *g, int z, const char *name, const char *alias, int64_t lo, int64_t fill_auto,
                               int64_t *out) {
    char path[96];
    int t = -1;
    zt_result r = zt__cfg_alias_token(g, z, name, alias, &t, path, sizeof path);
    if (r != ZT_OK) return r;
    if (zt__cfg_is_auto(g, t)) {
        if (fill_auto >= 0) *out = fill_auto;
        return ZT_OK;
    }
    return zt__cfg_int(g, t, path, lo, out);
}

static zt_result zt__cfg_zero(zt__cfg *g, int64_t hidden) {
    zt_ds_config *c = g->c;
    zt_result r;
    int z = zt__json_get(&g->j, 0, "zero_optimization");
    c->contiguous_gradients = c->reduce_scatter = c->allgather_partitions = 1;
    c->reduce_bucket_size = c->allgather_bucket_size = 500000000;
    c->sub_group_size = 1000000000;
    c->prefetch_bucket_size = 50000000;
    c->param_persistence_threshold = 100000;
    c->model_persistence_threshold = INT64_MAX;
    c->max_live_parameters = c->max_reuse_distance = 1000000000;
    c->zero_hpz_partition_size = 1;
    c->overlap_comm = -1;
    zt__cfg_offload(g, -1, "", &c->offload_optimizer, 0); /* the defaults, when there is no block */
    zt__cfg_offload(g, -1, "", &c->offload_param, 1);
    if (z >= 0 && g->j.tok[z].type == JSMN_PRIMITIVE) { /* the old boolean form: stage 1 or 0 */
        int on = 0;
        if ((r = zt__cfg_bool(g, z, "zero_optimization", &on))) return r;
        c->zero_stage = on;
        z = -1;
    }
    if (z >= 0) {
        if ((r = zt__cfg_object(g, z, "zero_optimization"))) return r;
        static const char *const removed[] = {"mics_shard_size", "mics_hierarchical_params_gather", "zeropp_loco_param", NULL};
        for (int i = 0; removed[i]; i++)
            if (zt__json_get(&g->j, z, removed[i]) >= 0)
                return zt_fail(ZT_ERROR_UNSUPPORTED, "%s: 'zero_optimization.%s' is no longer supported by DeepSpeed "
                               "(removed before %s)", g->j.file, removed[i], ZT_DEEPSPEED_VERSION);
        if ((r = zt__cfg_keys(g, z, "zero_optimization", zt__ds_zero, 1))) return r;
        int64_t stage = 0;
        int st = zt__json_get(&g->j, z, "stage");
        if (!zt__cfg_is_auto(g, st) && (r = zt__cfg_int(g, st, "zero_optimization.stage", 0, &stage))) return r;
        if (stage > 3) return zt__cfg_bad(g, st, "zero_optimization.stage", "0, 1, 2 or 3");
        c->zero_stage = (int)stage;
        int h2 = hidden > 0;
        int64_t hh = hidden * hidden;
        int rb = zt__json_get(&g->j, z, "reduce_bucket_size");
        if (zt__cfg_is_auto(g, rb)) { if (h2) c->reduce_bucket_size = hh; }
        else if ((r = zt__cfg_int(g, rb, "zero_optimization.reduce_bucket_size", 1, &c->reduce_bucket_size))) return r;
        int ab = zt__json_get(&g->j, z, "allgather_bucket_size");
        if (!zt__cfg_is_auto(g, ab) && (r = zt__cfg_int(g, ab, "zero_optimization.allgather_bucket_size", 0, &c->allgather_bucket_size))) return r;
        int s3 = stage == 3 && h2;
        if ((r = zt__cfg_alias(g, z, "prefetch_bucket_size", "stage3_prefetch_bucket_size", 0, s3 ? (int64_t)(0.9 * (double)hh) : -1, &c->prefetch_bucket_size)) ||
            (r = zt__cfg_alias(g, z, "param_persistence_threshold", "stage3_param_persistence_threshold", 0, s3 ? 10 * hidden : -1, &c->param_persistence_threshold)) ||
            (r = zt__cfg_alias(g, z, "model_persistence_threshold", "stage3_model_persistence_threshold", 0, -1, &c->model_persistence_threshold)) ||
            (r = zt__cfg_alias(g, z, "max_live_parameters", "stage3_max_live_parameters", 0, -1, &c->max_live_parameters)) ||
            (r = zt__cfg_alias(g, z, "max_reuse_distance", "stage3_max_reuse_distance", 0, -1, &c->max_reuse_distance)))
            return r;
        char gpath[96];
        int gt = -1, gold = zt__json_get(&g->j, z, "stage3_gather_fp16_weights_on_model_save");
        if ((r = zt__cfg_alias_token(g, z, "gather_16bit_weights_on_model_save", "stage3_gather_16bit_weights_on_model_save",
                                     &gt, gpath, sizeof gpath)))
            return r;
        if (gt < 0 && gold >= 0) {
            zt_log(ZT_LOG_WARN, "%s: Config parameter stage3_gather_fp16_weights_on_model_save is deprecated use "
                   "gather_16bit_weights_on_model_save instead", g->j.file);
            gt = gold;
            snprintf(gpath, sizeof gpath, "zero_optimization.stage3_gather_fp16_weights_on_model_save");
        }
        if (!zt__cfg_is_auto(g, gt) && (r = zt__cfg_bool(g, gt, gpath, &c->gather_16bit_weights_on_model_save))) return r;
        struct { const char *key; int *out; } bools[] = {
            {"contiguous_gradients", &c->contiguous_gradients}, {"reduce_scatter", &c->reduce_scatter},
            {"allgather_partitions", &c->allgather_partitions}, {"round_robin_gradients", &c->round_robin_gradients},
            {"overlap_comm", &c->overlap_comm}, {"zero_quantized_weights", &c->zero_quantized_weights},
            {"zero_quantized_gradients", &c->zero_quantized_gradients}};
        for (size_t i = 0; i < sizeof bools / sizeof bools[0]; i++) {
            char path[96];
            snprintf(path, sizeof path, "zero_optimization.%s", bools[i].key);
            int t = zt__json_get(&g->j, z, bools[i].key);
            if (!zt__cfg_is_auto(g, t) && (r = zt__cfg_bool(g, t, path, bools[i].out))) return r;
        }
        if ((r = zt__cfg_int(g, zt__json_get(&g->j, z, "sub_group_size"), "zero_optimization.sub_group_size", 0, &c->sub_group_size)) ||
            (r = zt__cfg_int(g, zt__json_get(&g->j, z, "zero_hpz_partition_size"), "zero_optimization.zero_hpz_partition_size", 0, &c->zero_hpz_partition_size)))
            return r;
        int legacy = 0;
        if ((r = zt__cfg_bool(g, zt__json_get(&g->j, z, "legacy_stage1"), "zero_optimization.legacy_stage1", &legacy))) return r;
        if (legacy) return zt_fail(ZT_ERROR_UNSUPPORTED, "%s: zero_optimization.legacy_stage1: the deprecated version of ZeRO Stage 1 is not supported", g->j.file);
        /* the deprecated cpu_offload: true means offload_optimizer {device: cpu} */
        int cpu_off = 0, oo = zt__json_get(&g->j, z, "offload_optimizer"), op = zt__json_get(&g->j, z, "offload_param");
        if ((r = zt__cfg_bool(g, zt__json_get(&g->j, z, "cpu_offload"), "zero_optimization.cpu_offload", &cpu_off))) return r;
        if (zt__json_get(&g->j, z, "cpu_offload") >= 0 && oo >= 0)
            return zt_fail(ZT_ERROR_INVALID, "%s: Cannot provide deprecated parameter 'cpu_offload' and replacing parameter 'offload_optimizer' together", g->j.file);
        if ((r = zt__cfg_offload(g, oo, "zero_optimization.offload_optimizer", &c->offload_optimizer, 0)) ||
            (r = zt__cfg_offload(g, op, "zero_optimization.offload_param", &c->offload_param, 1)))
            return r;
        if (cpu_off) {
            zt_log(ZT_LOG_WARN, "%s: Config parameter cpu_offload is deprecated use offload_optimizer instead", g->j.file);
            c->offload_optimizer.device = ZT_OFFLOAD_CPU;
        }
    }
    if (c->overlap_comm < 0) c->overlap_comm = c->zero_stage == 3; /* DeepSpeed's stage-dependent default */
    g->o->zero_stage = c->zero_stage;
    g->o->overlap_comm = c->overlap_comm;
    g->o->prefetch_bucket_size = c->prefetch_bucket_size;
    g->o->reduce_bucket_size = c->reduce_bucket_size;
    g->o->allgather_bucket_size = c->allgather_bucket_size;
    g->o->persistence_threshold = c->param_persistence_threshold;
    g->o->max_live_parameters = c->max_live_parameters;
    g->o->offload_optimizer = c->offload_optimizer.device;
    g->o->offload_param = c->offload_param.device;
    /* combinations */
    if (c->offload_optimizer.device == ZT_OFFLOAD_NVME && c->zero_stage < 3)
        return zt_fail(ZT_ERROR_INVALID, "%s: zero_optimization.offload_optimizer.device is \"nvme\" at stage %d: NVMe "
                       "optimizer offload needs stage 3 (DeepSpeed would silently offload to CPU memory)", g->j.file, c->zero_stage);
    if (c->offload_optimizer.ratio < 1.0 && c->zero_stage < 3)
        return zt_fail(ZT_ERROR_INVALID, "%s: zero_optimization.offload_optimizer.ratio: Partial offloading only supported for ZeRO Stage 3.", g->j.file);
    if (c->offload_param.device != ZT_OFFLOAD_NONE && c->zero_stage < 3) {
        zt_log(ZT_LOG_WARN, "%s: zero_optimization.offload_param is ignored below stage 3 (stage %d), as DeepSpeed ignores it",
               g->j.file, c->zero_stage);
        c->offload_param.device = ZT_OFFLOAD_NONE;
    }
    zt_offload_config *offs[2] = {&c->offload_optimizer, &c->offload_param};
    const char *names[2] = {"offload_optimizer", "offload_param"};
    for (int i = 0; i < 2; i++) {
        if (offs[i]->device != ZT_OFFLOAD_NVME || offs[i]->nvme_path[0]) continue;
        const char *from = g->o->nvme_path ? g->o->nvme_path : getenv("ZT_NVME_PATH");
        if (!from || !*from)
            return zt_fail(ZT_ERROR_INVALID, "%s: zero_optimization.%s.device is \"nvme\" but zero_optimization.%s.nvme_path "
                           "is not set; set it, or pass --nvme_path, or set ZT_NVME_PATH", g->j.file, names[i], names[i]);
        snprintf(offs[i]->nvme_path, sizeof offs[i]->nvme_path, "%s", from);
    }
    if (c->offload_optimizer.device != ZT_OFFLOAD_NONE && c->zero_stage == 0)
        return zt_fail(ZT_ERROR_INVALID, "%s: zero_optimization.offload_optimizer needs ZeRO stage 1, 2 or 3; the stage is 0",
                       g->j.file);
    if (c->offload_optimizer.device == ZT_OFFLOAD_NONE && c->offload_optimizer.ratio < 1.0)
        zt__cfg_note_unused(g, "zero_optimization.offload_optimizer.ratio (offload_optimizer.device is none)");
    g->o->offload_ratio = c->offload_optimizer.ratio;
    g->o->offload_optimizer_path = c->offload_optimizer.nvme_path[0] ? c->offload_optimizer.nvme_path : NULL;
    g->o->offload_param_path = c->offload_param.nvme_path[0] ? c->offload_param.nvme_path : NULL;
    /* the staging unit: offload_param's buffer_size, else (DeepSpeed's optimizer swapper) sub_group_size */
    g->o->offload_buffer_size = c->offload_param.device == ZT_OFFLOAD_NVME ? c->offload_param.buffer_size : c->sub_group_size;
    return ZT_OK;
}

/* the lenient sections: activation_checkpointing, aio, checkpoint, data_types and top-level scalars */
static zt_result zt__cfg_rest(zt__cfg *g) {
    zt_ds_config *c = g->c;
    zt_options *o = g->o;
    zt_result r;
    double clip;
    if ((r = zt__cfg_num_flag(g, 0, "gradient_clipping", "gradient_clipping", 0, 1e300, "max_grad_norm", o->max_grad_norm, &clip)))
        return r;
    c->gradient_clipping = clip;
    o->max_grad_norm = (float)clip;
    c->gradient_predivide_factor = 1.0;
    if ((r = zt__cfg_int(g, zt__json_get(&g->j, 0, "steps_per_print"), "steps_per_print", 0, &c->steps_per_print)) ||
        (r = zt__cfg_bool(g, zt__json_get(&g->j, 0, "wall_clock_breakdown"), "wall_clock_breakdown", &c->wall_clock_breakdown)) ||
        (r = zt__cfg_bool(g, zt__json_get(&g->j, 0, "prescale_gradients"), "prescale_gradients", &c->prescale_gradients)) ||
        (r = zt__cfg_num(g, zt__json_get(&g->j, 0, "gradient_predivide_factor"), "gradient_predivide_factor", 0, 1e300, &c->gradient_predivide_factor)))
        return r;
    static const char *const cdt[] = {"fp32", "fp16", "bf16", NULL};
    int k = 0, t = zt__json_get(&g->j, 0, "communication_data_type");
    if (t >= 0 && !zt__json_is_null(&g->j, t)) {
        if ((r = zt__cfg_choice(g, t, "communication_data_type", cdt, &k))) return r;
        snprintf(c->communication_data_type, sizeof c->communication_data_type, "%s", cdt[k]);
        o->comm_dtype = k == 0 ? ZT_F32 : k == 1 ? ZT_F16 : ZT_BF16;
    }
    int dt = zt__json_get(&g->j, 0, "data_types");
    if ((r = zt__cfg_object(g, dt, "data_types"))) return r;
    if (dt >= 0) {
        if ((r = zt__cfg_keys(g, dt, "data_types", zt__ds_types, 0))) return r;
        static const char *const gad[] = {"fp32", "float32", "float", "fp16", "float16", "half", "bf16", "bfloat16", NULL};
        int ga = zt__json_get(&g->j, dt, "grad_accum_dtype");
        if (ga >= 0 && !zt__json_is_null(&g->j, ga)) {
            if ((r = zt__cfg_choice(g, ga, "data_types.grad_accum_dtype", gad, &k))) return r;
            snprintf(c->grad_accum_dtype, sizeof c->grad_accum_dtype, "%s", gad[k]);
            if (k >= 3) zt__cfg_note_unused(g, "data_types.grad_accum_dtype (zt accumulates gradients in fp32)");
        }
    }
    int a = zt__json_get(&g->j, 0, "activation_checkpointing");
    if ((r = zt__cfg_object(g, a, "activation_checkpointing"))) return r;
    if (a >= 0) {
        int profile = 0;
        if ((r = zt__cfg_keys(g, a, "activation_checkpointing", zt__ds_act, 0)) ||
            (r = zt__cfg_bool(g, zt__json_get(&g->j, a, "partition_activations"), "activation_checkpointing.partition_activations", &c->partition_activations)) ||
            (r = zt__cfg_bool(g, zt__json_get(&g->j, a, "contiguous_memory_optimization"), "activation_checkpointing.contiguous_memory_optimization", &c->contiguous_memory_optimization)) ||
            (r = zt__cfg_bool(g, zt__json_get(&g->j, a, "cpu_checkpointing"), "activation_checkpointing.cpu_checkpointing", &c->cpu_checkpointing)) ||
            (r = zt__cfg_bool(g, zt__json_get(&g->j, a, "synchronize_checkpoint_boundary"), "activation_checkpointing.synchronize_checkpoint_boundary", &c->synchronize_checkpoint_boundary)) ||
            (r = zt__cfg_bool(g, zt__json_get(&g->j, a, "profile"), "activation_checkpointing.profile", &profile)))
            return r;
        int nc = zt__json_get(&g->j, a, "number_checkpoints");
        if (nc >= 0 && !zt__json_is_null(&g->j, nc) && (r = zt__cfg_int(g, nc, "activation_checkpointing.number_checkpoints", 0, &c->number_checkpoints)))
            return r;
        c->activation_checkpointing = 1; /* zt: recompute every block; the keys below shape how, in DeepSpeed */
        o->gradient_checkpointing = 1;
        if (c->cpu_checkpointing) zt__cfg_note_unused(g, "activation_checkpointing.cpu_checkpointing");
        if (c->partition_activations) zt__cfg_note_unused(g, "activation_checkpointing.partition_activations (model parallelism)");
    }
    int io = zt__json_get(&g->j, 0, "aio");
    c->aio_block_size = 1048576, c->aio_queue_depth = 8, c->aio_intra_op_parallelism = 1, c->aio_overlap_events = 1;
    if ((r = zt__cfg_object(g, io, "aio"))) return r;
    if (io >= 0 && ((r = zt__cfg_keys(g, io, "aio", zt__ds_aio, 0)) ||
                    (r = zt__cfg_int(g, zt__json_get(&g->j, io, "block_size"), "aio.block_size", 1, &c->aio_block_size)) ||
                    (r = zt__cfg_int(g, zt__json_get(&g->j, io, "queue_depth"), "aio.queue_depth", 1, &c->aio_queue_depth)) ||
                    (r = zt__cfg_int(g, zt__json_get(&g->j, io, "intra_op_parallelism"), "aio.intra_op_parallelism", 1, &c->aio_intra_op_parallelism)) ||
                    (r = zt__cfg_bool(g, zt__json_get(&g->j, io, "single_submit"), "aio.single_submit", &c->aio_single_submit)) ||
                    (r = zt__cfg_bool(g, zt__json_get(&g->j, io, "overlap_events"), "aio.overlap_events", &c->aio_overlap_events)) ||
                    (r = zt__cfg_bool(g, zt__json_get(&g->j, io, "use_gds"), "aio.use_gds", &c->aio_use_gds))))
        return r;
    o->aio_block_size = c->aio_block_size;
    o->aio_threads = c->aio_intra_op_parallelism;
    int ck = zt__json_get(&g->j, 0, "checkpoint");
    snprintf(c->tag_validation, sizeof c->tag_validation, "WARN");
    if ((r = zt__cfg_object(g, ck, "checkpoint"))) return r;
    if (ck >= 0) {
        if ((r = zt__cfg_keys(g, ck, "checkpoint", zt__ds_ckpt, 0)) ||
            (r = zt__cfg_bool(g, zt__json_get(&g->j, ck, "load_universal"), "checkpoint.load_universal", &c->load_universal)) ||
            (r = zt__cfg_bool(g, zt__json_get(&g->j, ck, "use_node_local_storage"), "checkpoint.use_node_local_storage", &c->use_node_local_storage)))
            return r;
        int tv = zt__json_get(&g->j, ck, "tag_validation");
        if (tv >= 0) {
            char v[16] = "";
            if (g->j.tok[tv].type != JSMN_STRING || zt__json_string(&g->j, tv, "checkpoint.tag_validation", v, sizeof v))
                return zt__cfg_bad(g, tv, "checkpoint.tag_validation", "\"Warn\", \"Ignore\" or \"Fail\"");
            for (char *p = v; *p; p++) *p = (char)((*p >= 'a' && *p <= 'z') ? *p - 32 : *p);
            if (strcmp(v, "WARN") && strcmp(v, "IGNORE") && strcmp(v, "FAIL"))
                return zt_fail(ZT_ERROR_INVALID, "%s: Checkpoint config contains invalid tag_validation value of %s, "
                               "expecting one of ['WARN', 'IGNORE', 'FAIL']", g->j.file, v);
            snprintf(c->tag_validation, sizeof c->tag_validation, "%s", v);
        }
    }
    if (c->prescale_gradients || c->gradient_predivide_factor != 1.0) zt__cfg_note_unused(g, "prescale_gradients / gradient_predivide_factor");
    if (c->wall_clock_breakdown) zt__cfg_note_unused(g, "wall_clock_breakdown");
    return ZT_OK;
}

/* top-level keys: the known, the removed (an error, as in DeepSpeed) and the misplaced (a warning that
   says where the key belongs) */
static zt_result zt__cfg_top(zt__cfg *g) {
    const zt__json *j = &g->j;
    int key = 1;
    for (int i = 0; i < j->tok[0].size; i++, key = zt__json_skip(j, key + 1)) {
        const char *k = j->text + j->tok[key].start;
        int n = j->tok[key].end - j->tok[key].start;
        for (int m = 0; zt__ds_removed[m]; m++)
            if ((int)strlen(zt__ds_removed[m]) == n && memcmp(zt__ds_removed[m], k, (size_t)n) == 0)
                return zt_fail(ZT_ERROR_UNSUPPORTED, "%s: \"%s\" was removed from DeepSpeed before %s and zt does not "
                               "support it", j->file, zt__ds_removed[m], ZT_DEEPSPEED_VERSION);
        int known = 0;
        for (int m = 0; zt__ds_top[m]; m++)
            if ((int)strlen(zt__ds_top[m]) == n && memcmp(zt__ds_top[m], k, (size_t)n) == 0) known = 1;
        if (known) continue;
        struct { const char *const *keys; const char *section; } homes[] = {
            {zt__ds_zero, "zero_optimization"}, {zt__ds_fp16, "fp16"}, {zt__ds_adam, "optimizer.params"},
            {zt__ds_sched, "scheduler.params"}, {zt__ds_aio, "aio"}, {zt__ds_act, "activation_checkpointing"}};
        const char *home = NULL;
        for (size_t h = 0; h < sizeof homes / sizeof homes[0] && !home; h++)
            for (int m = 0; homes[h].keys[m]; m++)
                if ((int)strlen(homes[h].keys[m]) == n && memcmp(homes[h].keys[m], k, (size_t)n) == 0 &&
                    strcmp(homes[h].keys[m], "enabled") != 0)
                    home = homes[h].section;
        char where[64];
        zt__cfg_where(g, key, where, sizeof where);
        if (home)
            zt_log(ZT_LOG_WARN, "%s: %.*s at top level (%s) is ignored by DeepSpeed; it belongs under %s", j->file, n, k,
                   where, home);
        else
            zt_log(ZT_LOG_WARN, "%s: unknown top-level key %.*s (%s) is ignored, as DeepSpeed ignores it", j->file, n, k,
                   where);
    }
    return ZT_OK;
}

static zt_result zt__ds_config_parse(zt_ds_config *c, zt_options *o, const char *json, size_t len, const char *name,
                                     int world_size, int64_t hidden, zt_arena *tokens);

ZT_API zt_result zt_ds_config_parse(zt_ds_config *c, zt_options *o, const char *json, size_t len, const char *name,
                                    int world_size, int64_t hidden) {
    zt_arena a;
    void *mem = zt__setup_arena(&a, "DeepSpeed config tokens", zt__json_token_bytes(len));
    zt_result r = zt__ds_config_parse(c, o, json, len, name, world_size, hidden, &a);
    free(mem);
    return r;
}

static zt_result zt__ds_config_parse(zt_ds_config *c, zt_options *o, const char *json, size_t len, const char *name,
                                     int world_size, int64_t hidden, zt_arena *tokens) {
    zt_arena a = *tokens;
    zt__cfg g;
    memset(&g, 0, sizeof g);
    memset(c, 0, sizeof *c);
    snprintf(c->path, sizeof c->path, "%s", name);
    c->world_size = world_size > 0 ? world_size : 1;
    g.c = c;
    g.o = o;
    zt_result r = zt__json_parse(&g.j, &a, name, json, len);
    if (r != ZT_OK) return r;
    if ((r = zt__cfg_top(&g)) || (r = zt__cfg_precision(&g)) || (r = zt__cfg_optimizer(&g)) ||
        (r = zt__cfg_scheduler(&g)) || (r = zt__cfg_batch(&g)) || (r = zt__cfg_zero(&g, hidden)) || (r = zt__cfg_rest(&g)))
        return r;
    if (g.mismatch[0])
        return zt_fail(ZT_ERROR_INVALID, "%s: Please correct the following DeepSpeed config values that mismatch the "
                       "flags:%s\nThe easiest method is to set these DeepSpeed config values to 'auto'.", name, g.mismatch);
    if (!c->optimizer_type[0] || !c->scheduler_type[0]) {
        char sched[64] = "";
        if (!c->scheduler_type[0]) snprintf(sched, sizeof sched, "\"%s\" schedule", zt_schedule_name(o->schedule));
        zt_log(ZT_LOG_INFO, "%s: no %s%s%s section: the Transformers Trainer's %s%s%s, from the flags", name,
               c->optimizer_type[0] ? "" : "optimizer", !c->optimizer_type[0] && !c->scheduler_type[0] ? " or " : "",
               c->scheduler_type[0] ? "" : "scheduler", c->optimizer_type[0] ? "" : "AdamW",
               !c->optimizer_type[0] && !c->scheduler_type[0] ? " and the " : "", sched);
    }
    o->bf16_skip_nonfinite = c->bf16 && c->bf16_check_grad_overflow && (c->zero_stage == 1 || c->zero_stage == 2);
    if (g.unused[0]) zt_log(ZT_LOG_WARN, "%s: zt %s reads but does not act on yet: %s", name, ZT_VERSION_STRING, g.unused);
    return ZT_OK;
}

ZT_API zt_result zt_ds_config_read(zt_ds_config *c, zt_options *o, const char *path, int world_size, int64_t hidden) {
    zt_arena a;
    void *mem = zt__setup_arena(&a, "DeepSpeed config text", (size_t)1 << 22);
    char *text = NULL;
    size_t len = 0;
    zt_result r = zt__read_file(&a, path, &text, &len);
    if (r == ZT_OK) r = zt_ds_config_parse(c, o, text, len, path, world_size, hidden);
    free(mem);
    return r;
}

ZT_API void zt_ds_config_print(const zt_ds_config *c, const zt_options *o, FILE *out) {
    static const char *dev[] = {"none", "cpu", "nvme"};
    fprintf(out, "{\n  \"deepspeed_semantics\": \"%s\",\n  \"zt_version\": \"%s\",\n", ZT_DEEPSPEED_VERSION, ZT_VERSION_STRING);
    fprintf(out, "  \"train_batch_size\": %lld,\n  \"train_micro_batch_size_per_gpu\": %lld,\n  \"gradient_accumulation_steps\": %lld,\n",
            (long long)(o->micro_batch * o->grad_accum * (c->world_size > 0 ? c->world_size : 1)), (long long)o->micro_batch, (long long)o->grad_accum);
    fprintf(out, "  \"gradient_clipping\": %g,\n  \"steps_per_print\": %lld,\n  \"wall_clock_breakdown\": %s,\n",
            (double)o->max_grad_norm, (long long)c->steps_per_print, c->wall_clock_breakdown ? "true" : "false");
    fprintf(out, "  \"prescale_gradients\": %s,\n  \"gradient_predivide_factor\": %g,\n  \"communication_data_type\": \"%s\",\n",
            c->prescale_gradients ? "true" : "false", c->gradient_predivide_factor ? c->gradient_predivide_factor : 1.0,
            c->communication_data_type[0] ? c->communication_data_type : o->precision == ZT_PRECISION_BF16 ? "bf16" : o->precision == ZT_PRECISION_FP16 ? "fp16" : "fp32");
    fprintf(out, "  \"data_types\": {\"grad_accum_dtype\": \"fp32\"},\n");
    fprintf(out, "  \"optimizer\": {\"type\": \"%s\", \"params\": {\"lr\": %g, \"betas\": [%g, %g], \"eps\": %g, \"weight_decay\": %g, \"adam_w_mode\": %s}},\n",
            c->optimizer_type[0] ? c->optimizer_type : "AdamW (Transformers)", (double)o->lr, (double)o->beta1, (double)o->beta2,
            (double)o->eps, (double)o->weight_decay, o->adam_w_mode ? "true" : "false");
    if (zt__metric_schedule(o->schedule)) { /* torch's ReduceLROnPlateau or GreedyLR, with every argument */
        zt__plateau_cfg pc = zt__plateau_settings(o);
        fprintf(out, "  \"scheduler\": {\"type\": \"%s (Transformers)\", \"params\": {\"mode\": \"%s\", \"factor\": %g, "
                "\"patience\": %lld, \"threshold\": %g, \"threshold_mode\": \"%s\", \"cooldown\": %lld, \"min_lr\": %g, "
                "\"eps\": %g", zt_schedule_name(o->schedule), o->plateau_max ? "max" : "min", pc.factor,
                (long long)o->plateau_patience, pc.threshold, pc.abs ? "abs" : "rel", (long long)o->plateau_cooldown,
                pc.min_lr, o->plateau_eps);
        if (o->schedule == ZT_SCHED_GREEDY)
            fprintf(out, ", \"warmup\": %lld, \"max_lr\": %g, \"smooth\": %s, \"window_size\": %lld, \"reset_start\": %lld",
                    (long long)o->greedy_warmup, o->greedy_max_lr, o->greedy_smooth ? "true" : "false",
                    (long long)o->greedy_window, (long long)o->greedy_reset_start);
        fprintf(out, "}},\n");
    } else if (zt__hf_schedule(o->schedule)) { /* the Trainer's, with every argument its function gets */
        static const char *const shapes[] = {"linear", "cosine", "1-sqrt"};
        fprintf(out, "  \"scheduler\": {\"type\": \"%s (Transformers)\", \"params\": {\"num_warmup_steps\": %lld, "
                "\"num_training_steps\": %lld, \"num_cycles\": %g, \"min_lr_rate\": %g, \"warmup_lr_rate\": %g, \"lr_end\": %g, "
                "\"power\": %g, \"timescale\": %lld, \"num_decay_steps\": %lld, \"num_stable_steps\": %lld, \"warmup_type\": "
                "\"%s\", \"decay_type\": \"%s\"}},\n", zt_schedule_name(o->schedule), (long long)zt__warmup_steps(o),
                (long long)o->max_steps, zt__num_cycles(o), zt__min_lr_rate(o), o->warmup_lr_rate,
                o->lr_end, o->power, (long long)o->timescale, (long long)o->decay_steps, (long long)o->stable_steps,
                shapes[o->warmup_shape % 3], shapes[o->decay_shape % 3]);
    } else {
        fprintf(out, "  \"scheduler\": {\"type\": \"%s\", \"params\": {\"warmup_num_steps\": %lld, \"warmup_type\": \"%s\", "
                "\"warmup_min_lr\": %g, \"warmup_max_lr\": %g, \"total_num_steps\": %lld, \"warmup_min_ratio\": %g, "
                "\"cos_min_ratio\": %g}},\n", zt_schedule_name(o->schedule), (long long)o->warmup_steps,
                o->warmup_log ? "log" : "linear", (double)o->warmup_min_lr, (double)o->warmup_max_lr,
                (long long)(o->schedule_total ? o->schedule_total : o->max_steps), (double)o->warmup_min_ratio,
                (double)o->cos_min_ratio);
    }
    fprintf(out, "  \"fp16\": {\"enabled\": %s, \"loss_scale\": %g, \"initial_scale_power\": %d, \"loss_scale_window\": %d, "
            "\"hysteresis\": %d, \"consecutive_hysteresis\": %s, \"min_loss_scale\": %g},\n",
            o->precision == ZT_PRECISION_FP16 ? "true" : "false", (double)o->static_loss_scale, o->initial_scale_power,
            o->loss_scale_window, o->hysteresis, o->consecutive_hysteresis ? "true" : "false", (double)o->min_loss_scale);
    fprintf(out, "  \"bf16\": {\"enabled\": %s, \"check_grad_overflow\": %s},\n", o->precision == ZT_PRECISION_BF16 ? "true" : "false",
            c->bf16_check_grad_overflow ? "true" : "false");
    fprintf(out, "  \"activation_checkpointing\": {\"zt_recompute_blocks\": %s, \"partition_activations\": %s, "
            "\"cpu_checkpointing\": %s, \"contiguous_memory_optimization\": %s, \"number_checkpoints\": %lld},\n",
            o->gradient_checkpointing ? "true" : "false", c->partition_activations ? "true" : "false",
            c->cpu_checkpointing ? "true" : "false", c->contiguous_memory_optimization ? "true" : "false", (long long)c->number_checkpoints);
    fprintf(out, "  \"zero_optimization\": {\"stage\": %d, \"contiguous_gradients\": %s, \"overlap_comm\": %s, \"reduce_scatter\": %s, "
            "\"reduce_bucket_size\": %lld, \"allgather_partitions\": %s, \"allgather_bucket_size\": %lld, \"sub_group_size\": %lld, "
            "\"stage3_prefetch_bucket_size\": %lld, \"stage3_param_persistence_threshold\": %lld, \"stage3_max_live_parameters\": %lld, "
            "\"stage3_max_reuse_distance\": %lld, \"stage3_gather_16bit_weights_on_model_save\": %s, \"round_robin_gradients\": %s,\n",
            c->zero_stage, c->contiguous_gradients ? "true" : "false", c->overlap_comm ? "true" : "false", c->reduce_scatter ? "true" : "false",
            (long long)c->reduce_bucket_size, c->allgather_partitions ? "true" : "false", (long long)c->allgather_bucket_size,
            (long long)c->sub_group_size, (long long)c->prefetch_bucket_size, (long long)c->param_persistence_threshold,
            (long long)c->max_live_parameters, (long long)c->max_reuse_distance, c->gather_16bit_weights_on_model_save ? "true" : "false",
            c->round_robin_gradients ? "true" : "false");
    for (int i = 0; i < 2; i++) {
        const zt_offload_config *f = i ? &c->offload_param : &c->offload_optimizer;
        fprintf(out, "    \"%s\": {\"device\": \"%s\", \"nvme_path\": \"%s\", \"buffer_count\": %lld, \"pin_memory\": %s",
                i ? "offload_param" : "offload_optimizer", dev[f->device], f->nvme_path, (long long)f->buffer_count,
                f->pin_memory ? "true" : "false");
        if (i) fprintf(out, ", \"buffer_size\": %lld, \"max_in_cpu\": %lld}\n", (long long)f->buffer_size, (long long)f->max_in_cpu);
        else fprintf(out, ", \"ratio\": %g},\n", f->ratio);
    }
    fprintf(out, "  },\n  \"aio\": {\"block_size\": %lld, \"queue_depth\": %lld, \"intra_op_parallelism\": %lld, "
            "\"single_submit\": %s, \"overlap_events\": %s, \"use_gds\": %s},\n",
            (long long)c->aio_block_size, (long long)c->aio_queue_depth, (long long)c->aio_intra_op_parallelism,
            c->aio_single_submit ? "true" : "false", c->aio_overlap_events ? "true" : "false", c->aio_use_gds ? "true" : "false");
    fprintf(out, "  \"checkpoint\": {\"tag_validation\": \"%s\", \"load_universal\": %s, \"use_node_local_storage\": %s},\n",
            c->tag_validation[0] ? c->tag_validation : "WARN", c->load_universal ? "true" : "false", c->use_node_local_storage ? "true" : "false");
    fprintf(out, "  \"learning_rates\": [");
    for (int k = 0; k < 10; k++) fprintf(out, "%s%.6g", k ? ", " : "", (double)zt_schedule_lr(o, k));
    fprintf(out, "]\n}\n");
}

/* ---- Accelerate's YAML config ---- */

static const char *const zt__acc_quiet[] = { /* Accelerate's keys that mean nothing to zt */
    "compute_environment", "downcast_bf16", "enable_cpu_affinity", "gpu_ids", "main_training_function",
    "rdzv_backend", "same_network", "tpu_env", "tpu_use_cluster", "tpu_use_sudo", "use_cpu", "debug",
    "dynamo_config", "fsdp_config", "megatron_lm_config", "ipex_config", "mpirun_config", "deepspeed_multinode_launcher",
    "zero3_save_16bit_model", "deepspeed_hostfile", NULL};

static int zt__in_list(const char *const *list, const char *s) {
    for (int i = 0; list[i]; i++)
        if (strcmp(list[i], s) == 0) return 1;
    return 0;
}

/* a YAML scalar: quotes removed, "null" and "~" empty */
static void zt__yaml_scalar(const char *v, size_t n, char *out, size_t cap) {
    while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\r')) n--;
    if (n >= 2 && ((v[0] == '"' && v[n - 1] == '"') || (v[0] == '\'' && v[n - 1] == '\''))) v++, n -= 2;
    else if ((n == 4 && memcmp(v, "null", 4) == 0) || (n == 1 && v[0] == '~')) n = 0;
    if (n >= cap) n = cap - 1;
    memcpy(out, v, n);
    out[n] = 0;
}

static zt_result zt__acc_str(const char *name, int line, const char *key, const char *v, char *out, size_t cap) {
    size_t n = strlen(v);
    if (n >= cap) return zt_fail(ZT_ERROR_INVALID, "%s:%d: %s is longer than zt takes (%zu bytes)", name, line, key, cap - 1);
    memcpy(out, v, n + 1);
    return ZT_OK;
}

static zt_result zt__acc_int(const char *name, int line, const char *key, const char *v, int64_t *out) {
    char *end = NULL;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (!*v || *end || errno || x < 0)
        return zt_fail(ZT_ERROR_INVALID, "%s:%d: %s must be a non-negative integer, found \"%s\"", name, line, key, v);
    *out = x;
    return ZT_OK;
}

ZT_API zt_result zt_accelerate_config_parse(zt_accelerate_config *c, const char *text, size_t len, const char *name) {
    memset(c, 0, sizeof *c);
    c->num_processes = c->num_machines = c->machine_rank = c->main_process_port = -1;
    c->zero_stage = c->gradient_accumulation_steps = -1;
    c->gradient_clipping = -1;
    char section[64] = "", key[64], val[1024], unknown[160] = "";
    int line = 0;
    for (size_t i = 0; i < len;) {
        const char *nl = (const char *)memchr(text + i, '\n', len - i);
        size_t n = nl ? (size_t)(nl - (text + i)) : len - i;
        const char *s = text + i;
        i += n + 1;
        line++;
        if (memchr(s, 0, n)) return zt_fail(ZT_ERROR_FORMAT, "%s:%d: a NUL byte", name, line);
        size_t indent = 0;
        while (indent < n && s[indent] == ' ') indent++;
        if (indent == n || s[indent] == '#' || (n - indent >= 3 && memcmp(s + indent, "---", 3) == 0)) continue;
        if (s[indent] == '\t') return zt_fail(ZT_ERROR_FORMAT, "%s:%d: a tab in the indentation (YAML takes spaces)", name, line);
        if (s[indent] == '-')
            return zt_fail(ZT_ERROR_UNSUPPORTED, "%s:%d: a list item; zt reads the keys and values Accelerate writes", name, line);
        const char *colon = (const char *)memchr(s + indent, ':', n - indent);
        size_t kl = colon ? (size_t)(colon - (s + indent)) : 0;
        if (!colon || kl == 0 || kl >= sizeof key)
            return zt_fail(ZT_ERROR_FORMAT, "%s:%d: expected \"key: value\", found \"%.*s\"", name, line, (int)(n < 60 ? n : 60), s);
        memcpy(key, s + indent, kl);
        key[kl] = 0;
        const char *v = colon + 1;
        size_t vn = (size_t)(s + n - v);
        while (vn > 0 && *v == ' ') v++, vn--;
        const char *hash = vn && *v != '"' && *v != '\'' ? (const char *)memchr(v, '#', vn) : NULL; /* a comment */
        if (hash) vn = (size_t)(hash - v);
        zt__yaml_scalar(v, vn, val, sizeof val);
        if (indent == 0 && !val[0] && vn == 0) { /* a mapping: its keys follow, indented */
            snprintf(section, sizeof section, "%s", key);
            continue;
        }
        if (indent == 0) section[0] = 0;
        else if (!section[0]) return zt_fail(ZT_ERROR_FORMAT, "%s:%d: an indented key outside a mapping", name, line);
        zt_result r = ZT_OK;
        char full[140];
        snprintf(full, sizeof full, "%s%s%s", section, section[0] ? "." : "", key);
        if (!strcmp(full, "num_processes")) r = zt__acc_int(name, line, full, val, &c->num_processes);
        else if (!strcmp(full, "num_machines")) r = zt__acc_int(name, line, full, val, &c->num_machines);
        else if (!strcmp(full, "machine_rank")) r = zt__acc_int(name, line, full, val, &c->machine_rank);
        else if (!strcmp(full, "main_process_port")) r = val[0] ? zt__acc_int(name, line, full, val, &c->main_process_port) : ZT_OK;
        else if (!strcmp(full, "main_process_ip")) r = zt__acc_str(name, line, full, val, c->main_process_ip, sizeof c->main_process_ip);
        else if (!strcmp(full, "distributed_type")) r = zt__acc_str(name, line, full, val, c->distributed_type, sizeof c->distributed_type);
        else if (!strcmp(full, "mixed_precision")) {
            r = zt__acc_str(name, line, full, val, c->mixed_precision, sizeof c->mixed_precision);
            if (r != ZT_OK) return r;
            if (strcmp(val, "no") && strcmp(val, "bf16") && strcmp(val, "fp16") && strcmp(val, "fp8"))
                r = zt_fail(ZT_ERROR_INVALID, "%s:%d: mixed_precision is no, fp16 or bf16, not \"%s\"", name, line, val);
            else if (!strcmp(val, "fp8"))
                r = zt_fail(ZT_ERROR_UNSUPPORTED, "%s:%d: mixed_precision fp8 is not built in zt (bf16 or fp16)", name, line);
        } else if (!strcmp(full, "deepspeed_config.deepspeed_config_file"))
            r = zt__acc_str(name, line, full, val, c->deepspeed_config_file, sizeof c->deepspeed_config_file);
        else if (!strcmp(full, "deepspeed_config.zero_stage")) r = zt__acc_int(name, line, full, val, &c->zero_stage);
        else if (!strcmp(full, "deepspeed_config.gradient_accumulation_steps"))
            r = zt__acc_int(name, line, full, val, &c->gradient_accumulation_steps);
        else if (!strcmp(full, "deepspeed_config.gradient_clipping")) {
            char *end = NULL;
            c->gradient_clipping = strtod(val, &end);
            if (!val[0] || *end || !(c->gradient_clipping >= 0))
                r = zt_fail(ZT_ERROR_INVALID, "%s:%d: %s must be a number, found \"%s\"", name, line, full, val);
        } else if (!strcmp(full, "deepspeed_config.offload_optimizer_device"))
            r = zt__acc_str(name, line, full, val, c->offload_optimizer_device, sizeof c->offload_optimizer_device);
        else if (!strcmp(full, "deepspeed_config.offload_param_device"))
            r = zt__acc_str(name, line, full, val, c->offload_param_device, sizeof c->offload_param_device);
        else if (!strcmp(full, "deepspeed_config.offload_optimizer_nvme_path"))
            r = zt__acc_str(name, line, full, val, c->offload_optimizer_nvme_path, sizeof c->offload_optimizer_nvme_path);
        else if (!strcmp(full, "deepspeed_config.offload_param_nvme_path"))
            r = zt__acc_str(name, line, full, val, c->offload_param_nvme_path, sizeof c->offload_param_nvme_path);
        else if (!strcmp(full, "deepspeed_config.zero3_init_flag")) c->zero3_init_flag = !strcmp(val, "true");
        else if (!zt__in_list(zt__acc_quiet, section[0] ? section : key) && !zt__in_list(zt__acc_quiet, key) && !unknown[0])
            snprintf(unknown, sizeof unknown, "%s", full);
        if (r != ZT_OK) return r;
        static const char *const devices[] = {"none", "cpu", "nvme", NULL};
        if ((c->offload_optimizer_device[0] && !zt__in_list(devices, c->offload_optimizer_device)) ||
            (c->offload_param_device[0] && !zt__in_list(devices, c->offload_param_device)))
            return zt_fail(ZT_ERROR_INVALID, "%s:%d: an offload device is none, cpu or nvme", name, line);
    }
    if (unknown[0]) zt_log(ZT_LOG_WARN, "%s: %s is not one of the Accelerate keys zt reads; ignored", name, unknown);
    return ZT_OK;
}

ZT_API zt_result zt_accelerate_config_read(zt_accelerate_config *c, const char *path) {
    zt_arena a;
    void *mem = zt__setup_arena(&a, "Accelerate config", (size_t)1 << 20);
    char *text = NULL;
    size_t len = 0;
    zt_result r = zt__read_file(&a, path, &text, &len);
    if (r == ZT_OK) r = zt_accelerate_config_parse(c, text, len, path);
    free(mem);
    return r;
}

ZT_API size_t zt_accelerate_deepspeed_json(const zt_accelerate_config *c, char *out, size_t cap) {
    if (c->deepspeed_config_file[0] || (c->zero_stage < 0 && !c->offload_optimizer_device[0] && !c->offload_param_device[0] &&
                                        c->gradient_accumulation_steps < 0 && c->gradient_clipping < 0))
        return 0;
    int n = snprintf(out, cap, "{\"zero_optimization\": {\"stage\": %lld", (long long)(c->zero_stage >= 0 ? c->zero_stage : 0));
    const char *dev[2] = {c->offload_optimizer_device, c->offload_param_device}, *path[2] = {c->offload_optimizer_nvme_path,
                                                                                          c->offload_param_nvme_path};
    const char *keys[2] = {"offload_optimizer", "offload_param"};
    for (int k = 0; k < 2; k++)
        if (dev[k][0] && strcmp(dev[k], "none") != 0) {
            n += snprintf(out + n, cap > (size_t)n ? cap - (size_t)n : 0, ", \"%s\": {\"device\": \"%s\"", keys[k], dev[k]);
            if (path[k][0] && !strchr(path[k], '"') && !strchr(path[k], '\\'))
                n += snprintf(out + n, cap > (size_t)n ? cap - (size_t)n : 0, ", \"nvme_path\": \"%s\"", path[k]);
            n += snprintf(out + n, cap > (size_t)n ? cap - (size_t)n : 0, "}");
        }
    n += snprintf(out + n, cap > (size_t)n ? cap - (size_t)n : 0, "}");
    if (c->gradient_accumulation_steps >= 0)
        n += snprintf(out + n, cap > (size_t)n ? cap - (size_t)n : 0, ", \"gradient_accumulation_steps\": %lld",
                      (long long)c->gradient_accumulation_steps);
    if (c->gradient_clipping >= 0)
        n += snprintf(out + n, cap > (size_t)n ? cap - (size_t)n : 0, ", \"gradient_clipping\": %.9g", c->gradient_clipping);
    n += snprintf(out + n, cap > (size_t)n ? cap - (size_t)n : 0, ", \"train_micro_batch_size_per_gpu\": \"auto\"}");
    return (size_t)n;
}

/* >>engine (implementation) -------------------------------------------------------------------- */

/* The engine owns the parameters (one flat group per block), their gradients, master weights and Adam
   state, the activations and the batch buffers. zt_init lays all of it out twice through the same code:
   once into measuring arenas (the activations by running a step with the backend measuring), then,
   after one allocation of exactly that size, for real. */

#define ZT__PARAM_ALIGN 16 /* elements: each parameter of a group starts on a multiple (unless joined) */
#define ZT__STAGE_FLOATS ((int64_t)1 << 20) /* pinned staging for host <-> device parameter copies */
#define ZT__HOST_TASK ((int64_t)16384)      /* elements per task of the host optimizer */
#define ZT__PATH 4096                       /* bytes of a path zt makes (longer ones are refused) */

typedef struct zt__param {
    const char *name;   /* NULL: an empty slot */
    zt_shape shape;
    unsigned flags;
    zt_init_kind init;
    float std;
    int block, tied;    /* tied: the parameter this one shares, or -1 */
    int64_t offset;     /* elements into its group */
} zt__param;

/* A group is one block's parameters in one flat buffer of world x shard elements; rank r owns
   [r*shard, (r+1)*shard). What each rank holds depends on the ZeRO stage:
     stage 0: everything whole;  1: master and Adam state are the owned slice;  2: gradients too
     (reduced during backward into the slice);  3: the weights too (gathered before use).
   A group whose weights or gradients are split is computed on in a "full" buffer: its own when other
   blocks use it too (tied embeddings), else one shared by every such group, used by one at a time. */
typedef struct zt__group {
    int first, n;       /* its parameters: e->params[first .. first+n) */
    int64_t numel;      /* padded: world x shard */
    int64_t shard;      /* elements each rank owns */
    int trainable;
    int split_w, split_grad, shared_with_others; /* shared: another block's parameters view this group */
    int64_t own;        /* the first owned element: rank x shard (stage 0: 0, every element is "owned") */
    zt_tensor w;        /* working dtype: whole, or (split_w) the owned slice */
    zt_tensor grad;     /* f32: whole, or (split_grad) the owned slice */
    zt_tensor master, m, v; /* f32: whole at stage 0, else the owned slice (master absent in fp32 training) */
    zt_tensor full_w, full_grad; /* split groups: where their whole weights / gradient are assembled */
    int w_ready, grad_open;
    int64_t nv_state, nv_w; /* NVMe offload: byte offsets of its state (master, m, v) and weight slice */
    zt_offload_device opt_at; /* where its optimizer state lives and is updated: the device (NONE), host
                                 memory or NVMe (offload_optimizer, all groups unless offload_ratio < 1) */
} zt__group;

static const char *zt__mem_names[ZT_MEM_COUNT] = {"parameters", "gradients", "fp32 master", "Adam moments",
                                                  "activations", "buckets", "scratch", "buffers", "library"};
ZT_API const char *zt_mem_category_name(zt_mem_category c) {
    return (int)c >= 0 && c < ZT_MEM_COUNT ? zt__mem_names[c] : "?";
}

/* counting: the first of the two declaration passes, which only counts the parameters and their names'
   bytes (the engine's metadata is sized from them); the second records them */
struct zt_block_def { zt_engine *e; int index; int counting, count; size_t name_bytes; };

struct zt_engine {
    zt_options opt;
    zt_model_config cfg;
    int has_cfg;
    zt_backend *be;
    zt_stream *s;
    int n_blocks;
    const zt_block_type **types;
    const void **configs;
    int64_t C, vocab, max_seq, B, T;
    zt_dtype wdtype, act;
    /* data parallelism and ZeRO (zt__group) */
    zt_comm *comm;      /* NULL: one rank, or planning */
    int world, rank, stage, planning; /* planning: laid out for `world` ranks, never run */
    zt_tensor shared_w[2], shared_grad[2]; /* the full buffers of split groups no other block uses: one of
                                              each, or two that alternate blocks take (zt__slot) */
    int shared_w_group[2], shared_grad_group[2]; /* which group is in each, or -1 */
    /* overlap_comm: every collective runs on cs, one stream, so that all ranks meet them in the order
       the host issued them (collectives on two streams would race for the communicator); without it
       cs is s. prefetch: stage 3 gathers the next block's weights while this one computes. */
    zt_stream *cs;
    int overlap, prefetch;
    zt_event *ev_s, *ev_cs;          /* cs after s's work so far (zt__cs_after_s); s after cs's */
    zt_event *ev_gathered[3];        /* the latest gather into each shared weight buffer, and any other */
    zt_event *ev_reduced[2];         /* the latest reduction out of each shared gradient buffer */
    zt_tensor dstage;   /* f32 staging for reading slices that live on several ranks */
    zt_dtype cdtype;    /* gradients between ranks: f32 in place, or 16-bit through cbuf, a bucket */
    zt_tensor cbuf;
    /* ZeRO-Offload: the optimizer state (and at stage 3 the weight slices) in pinned host memory or
       NVMe swap files; a host AdamW updates it a unit of elements at a time */
    zt_offload_device off_opt, off_param;
    size_t hmem[ZT_MEM_COUNT];       /* pinned host bytes by category */
    int64_t nvme[2], block;          /* bytes of the swap files (0: optimizer state, 1: weights); alignment */
    uint64_t *nvme_sums[2];          /* a checksum per block */
    struct zt__swap *swap;
    zt_pool *hpool;                  /* the host optimizer's threads */
    int hthreads;
    int64_t unit;                    /* elements per unit of the offloaded update and the swap */
    float *h_grad, *h_state[2][3];   /* a unit of gradient; two units of NVMe state (master, m, v) */
    void *h_w, *h_slice[2], *bounce; /* a unit of weights; two of an NVMe weight slice; unaligned swap I/O */
    zt_event *ev_slice[2];           /* the latest copy out of each h_slice */
    int64_t bounce_bytes;
    zt_tensor wstage;                /* device: an offloaded weight slice on its way in or out */
    zt_tensor gacc;                  /* device: host gradients being added to (zt__add_to_host) */
    int64_t micro;      /* micro-batches since the last zt_step */
    /* metadata: one arena from the host */
    void *meta_mem;
    zt_arena meta;
    const char *model_path; /* the config.json (or its directory) the model came from, or NULL */
    int n_params, cap_params;
    zt__param *params;
    int *block_first, *block_count, *block_cap; /* each block's slots in `slots`: from first, count of cap */
    size_t counted_slots; /* all blocks' parameters, as the first declaration pass counted them */
    int *slots;                     /* global parameter index of each block-local slot */
    zt__group *groups;
    zt_tensor **bparam, **bgrad;    /* per block, per slot: what ctx->param and ctx->grad point at */
    void **saved;
    /* device memory */
    size_t mem[ZT_MEM_COUNT], keep_bytes, scratch_bytes;
    zt_arena keep, scratch;
    zt_tensor *outs, dbuf[2], norm_parts;
    zt_batch full;  /* batch buffers of the planned size */
    zt_batch batch; /* the current batch: views of `full` */
    /* pinned host memory */
    int32_t *h_tokens, *h_targets, *h_pos, *h_starts;
    float *h_losses, *h_norms, *h_stage, *h_logits, *h_stats, *h_values;
    float aux;            /* the blocks' auxiliary loss of the current micro-batch (zt_batch.aux) */
    void *shared;         /* zt_batch.shared */
    zt_tensor stats; /* (2) f32: tokens and loss sum of a step, summed across ranks */
    zt_tensor values; /* f32: zt_gather_values' doubles as bits, this rank's then every rank's */
    int32_t *h_order;
    /* training state */
    size_t plan_device, plan_pinned; /* what the plan asked of the arenas */
    int64_t step, sched_step, adam_step, tokens_in_step;
    double loss_sum;
    zt_loss_scaler scaler;
    zt_plateau plateau; /* the metric-following schedules' state */
    /* checkpoints: set aside at init, so saving allocates nothing */
    char *ckpt_text;
    size_t ckpt_text_bytes;
    struct zt__ckpt_item *ckpt_items;
};

/* ---- block definitions ---- */

ZT_API int zt_block_def_index(const zt_block_def *def) { return def->index; }

static int zt__new_param(zt_block_def *def) {
    zt_engine *e = def->e;
    if (def->counting) return def->count++;
    if (e->block_count[def->index] == e->block_cap[def->index]) { /* more than counted: zt__declare refuses it */
        def->count++;
        return -1;
    }
    int p = e->n_params++;
    memset(&e->params[p], 0, sizeof e->params[p]);
    e->params[p].block = def->index;
    e->params[p].tied = -1;
    e->slots[e->block_first[def->index] + e->block_count[def->index]++] = p;
    return e->block_count[def->index] - 1;
}

ZT_API int zt_block_param(zt_block_def *def, const char *name, zt_shape shape, unsigned flags,
                          zt_init_kind init, float std) {
    int slot = zt__new_param(def);
    if (def->counting || slot < 0) {
        def->name_bytes += name ? strlen(name) + 1 : 0;
        return def->count - 1;
    }
    zt__param *p = &def->e->params[def->e->slots[def->e->block_first[def->index] + slot]];
    if (name) { /* names go into checkpoint and safetensors headers as they are */
        size_t n = strlen(name);
        ZT_ASSERT(n > 0 && n < 256);
        for (size_t i = 0; i < n; i++)
            if (name[i] < 0x20 || name[i] == '"' || name[i] == '\\' || (unsigned char)name[i] >= 0x7f)
                zt_fatal("parameter name \"%s\" has a character other than printable ASCII without quotes", name);
    }
    p->name = name ? zt_arena_strdup(&def->e->meta, name) : NULL;
    p->shape = shape;
    p->flags = flags;
    p->init = init;
    p->std = std;
    return slot;
}

ZT_API int zt_block_tie(zt_block_def *def, int block, int param) {
    zt_engine *e = def->e;
    ZT_ASSERT(block >= 0 && block < def->index && param >= 0);
    int slot = zt__new_param(def);
    if (def->counting || slot < 0) return def->count - 1;
    ZT_ASSERT(param < e->block_count[block]);
    zt__param *p = &e->params[e->slots[e->block_first[def->index] + slot]];
    int target = e->slots[e->block_first[block] + param];
    *p = e->params[target];
    p->block = def->index;
    p->tied = target;
    return slot;
}

static int64_t zt__numel_of(zt_shape s) {
    int64_t n = 1;
    for (int i = 0; i < s.ndim; i++) n *= s.d[i];
    return n;
}

/* ---- options ---- */

ZT_API zt_options zt_options_default(void) {
    zt_options o;
    memset(&o, 0, sizeof o);
    o.backend = "cpu";
    o.micro_batch = 8;     /* per_device_train_batch_size */
    o.grad_accum = 1;
    o.max_steps = 1000;
    o.precision = ZT_PRECISION_FP32;
    o.seed = 42;
    o.ignore_index = -100;
    o.eot_token = -1;
    o.ddp_timeout = 1800;
    o.persistence_threshold = -1;
    o.comm_dtype = -1;
    o.prefetch_bucket_size = 50000000;
    o.offload_ratio = 1.0;
    o.min_lr = o.min_lr_rate = o.warmup_lr_rate = -1.0;
    o.lr_end = 1e-7, o.power = 1.0;
    o.decay_steps = o.stable_steps = -1;
    o.decay_shape = 1;
    o.plateau_factor = o.plateau_threshold = -1.0, o.plateau_threshold_abs = -1;
    o.plateau_patience = 10, o.plateau_eps = 1e-8;
    o.greedy_max_lr = 1.0, o.greedy_window = 50, o.greedy_reset_start = 500;
    o.lr = 5e-5f;          /* the TrainingArguments defaults */
    o.beta1 = 0.9f;
    o.beta2 = 0.999f;
    o.eps = 1e-8f;
    o.weight_decay = 0.0f;
    o.max_grad_norm = 1.0f;
    o.adam_w_mode = 1;
    o.schedule = ZT_SCHED_LINEAR;
    o.warmup_max_lr = 1e-3f; /* DeepSpeed's WarmupLR defaults */
    o.warmup_log = 1;
    o.cos_min_ratio = 1e-4f;
    o.initial_scale_power = 16; /* DeepSpeed's fp16 defaults */
    o.loss_scale_window = 1000;
    o.hysteresis = 2;
    o.min_loss_scale = 1.0f;
    return o;
}

typedef enum { ZT__F_INT, ZT__F_FLOAT, ZT__F_BOOL, ZT__F_STR, ZT__F_BYTES, ZT__F_RATIO, ZT__F_WARMUP, ZT__F_SCHEDULE } zt__flag_kind;
typedef struct zt__flag { const char *name; zt__flag_kind kind; size_t offset; const char *help; } zt__flag;
#define ZT__FLAG(name, kind, field, help) {name, kind, offsetof(zt_options, field), help}
static const zt__flag zt__flags[] = {
    ZT__FLAG("per_device_train_batch_size", ZT__F_INT, micro_batch, "rows per micro-batch"),
    ZT__FLAG("gradient_accumulation_steps", ZT__F_INT, grad_accum, "micro-batches per optimizer step"),
    ZT__FLAG("max_steps", ZT__F_INT, max_steps, "optimizer steps"),
    ZT__FLAG("seq_len", ZT__F_INT, seq_len, "tokens per row (0: min(1024, the model's context))"),
    ZT__FLAG("learning_rate", ZT__F_FLOAT, lr, "peak learning rate"),
    ZT__FLAG("weight_decay", ZT__F_FLOAT, weight_decay, "AdamW weight decay (2-D weights only)"),
    ZT__FLAG("adam_beta1", ZT__F_FLOAT, beta1, "Adam beta1"),
    ZT__FLAG("adam_beta2", ZT__F_FLOAT, beta2, "Adam beta2"),
    ZT__FLAG("adam_epsilon", ZT__F_FLOAT, eps, "Adam epsilon"),
    ZT__FLAG("max_grad_norm", ZT__F_FLOAT, max_grad_norm, "global gradient-norm clipping (0: off)"),
    ZT__FLAG("warmup_steps", ZT__F_WARMUP, warmup_steps, "learning-rate warmup steps; below 1, a share of max_steps"),
    ZT__FLAG("warmup_ratio", ZT__F_RATIO, warmup_ratio, "warmup as a share of max_steps (transformers 4's flag)"),
    ZT__FLAG("lr_scheduler_type", ZT__F_SCHEDULE, schedule, "linear, cosine, cosine_with_restarts, polynomial, constant, "
             "constant_with_warmup, inverse_sqrt, cosine_with_min_lr, cosine_warmup_with_min_lr, warmup_stable_decay; "
             "reduce_lr_on_plateau and greedy follow the evaluations"),
    ZT__FLAG("lr_scheduler_kwargs", ZT__F_STR, lr_scheduler_kwargs, "the schedule's arguments as JSON, e.g. '{\"num_cycles\": 2}'"),
    ZT__FLAG("seed", ZT__F_INT, seed, "seed of initialisation and sampling"),
    ZT__FLAG("label_smoothing_factor", ZT__F_FLOAT, label_smoothing, "the loss's share of the uniform distribution (0: none)"),
    ZT__FLAG("neftune_noise_alpha", ZT__F_FLOAT, neftune_alpha, "NEFTune: noise on the token embeddings in training (0: none)"),
    ZT__FLAG("gradient_checkpointing", ZT__F_BOOL, gradient_checkpointing, "recompute each block in backward"),
    ZT__FLAG("backend", ZT__F_STR, backend, "cpu or cuda"),
    ZT__FLAG("threads", ZT__F_INT, threads, "CPU threads (0: every core)"),
    ZT__FLAG("nvme_path", ZT__F_STR, nvme_path, "directory for NVMe offload when the config names none"),
    ZT__FLAG("ddp_timeout", ZT__F_INT, ddp_timeout, "seconds a rank waits for the others at a collective"),
    ZT__FLAG("device_memory", ZT__F_BYTES, device_bytes, "device memory per rank, e.g. 80GiB (0: what the plan needs)"),
};
#define ZT__N_FLAGS (sizeof zt__flags / sizeof zt__flags[0])
enum { ZT__GIVEN_BF16 = 62, ZT__GIVEN_FP16 = 63 }; /* bits of zt_options.given beyond the table */

static int zt__ieq(const char *a, const char *b) { /* ASCII, any case */
    for (; *a && *b; a++, b++)
        if ((*a | 0x20) != (*b | 0x20)) return 0;
    return *a == *b;
}

/* a switch's value as HfArgumentParser's string_to_bool reads it; -1: not one */
static int zt__parse_bool(const char *v) {
    static const char *const yes[] = {"true", "t", "yes", "y", "1"}, *const no[] = {"false", "f", "no", "n", "0"};
    for (int k = 0; k < 5; k++) {
        if (zt__ieq(v, yes[k])) return 1;
        if (zt__ieq(v, no[k])) return 0;
    }
    return -1;
}

/* --optim: the Trainer's optimizers that are AdamW with PyTorch's maths (fused or not is the kernel, not the
   numbers); the others are named in the error */
static zt_result zt__check_optim(const char *v) {
    static const char *const adamw[] = {"adamw_torch", "adamw_torch_fused", "adamw_apex_fused"};
    for (int k = 0; k < 3; k++)
        if (strcmp(v, adamw[k]) == 0) return ZT_OK;
    return zt_fail(ZT_ERROR_UNSUPPORTED, "--optim %s is not built: zt trains with AdamW, PyTorch's (adamw_torch, "
                   "adamw_torch_fused and adamw_apex_fused are its names; a DeepSpeed config's optimizer section takes Adam "
                   "and AdamW)", v);
}

static zt_result zt__set_flag(zt_options *o, const zt__flag *f, const char *value) {
    char *end = NULL;
    void *field = (uint8_t *)o + f->offset;
    errno = 0;
    switch (f->kind) {
    case ZT__F_INT: {
        long long v = strtoll(value, &end, 10);
        if (!*value || *end || errno || v < 0)
            return zt_fail(ZT_ERROR_INVALID, "flag --%s expects a non-negative integer, found \"%s\"", f->name, value);
        if (f->offset == offsetof(zt_options, seed)) *(uint64_t *)field = (uint64_t)v;
        else if (f->offset == offsetof(zt_options, threads)) *(int *)field = (int)v;
        else *(int64_t *)field = v;
        return ZT_OK;
    }
    case ZT__F_FLOAT: {
        double v = strtod(value, &end);
        if (!*value || *end || errno || !isfinite(v))
            return zt_fail(ZT_ERROR_INVALID, "flag --%s expects a number, found \"%s\"", f->name, value);
        *(float *)field = (float)v;
        if (field == (void *)&o->lr) o->lr_exact = v;
        return ZT_OK;
    }
    case ZT__F_BOOL: {
        int b = zt__parse_bool(value);
        if (b < 0) return zt_fail(ZT_ERROR_INVALID, "flag --%s expects true or false, found \"%s\"", f->name, value);
        *(int *)field = b;
        return ZT_OK;
    }
    case ZT__F_STR: *(const char **)field = value; return ZT_OK;
    case ZT__F_RATIO:
    case ZT__F_WARMUP: { /* the Trainer's rule: a number of steps, or below 1 a share of them */
        double v = strtod(value, &end);
        if (!*value || *end || errno || !(v >= 0) || !isfinite(v) || (f->kind == ZT__F_RATIO && v > 1))
            return zt_fail(ZT_ERROR_INVALID, "flag --%s expects %s, found \"%s\"", f->name,
                           f->kind == ZT__F_RATIO ? "a share between 0 and 1" : "a number of steps, or a share below 1", value);
        if (f->kind == ZT__F_RATIO) o->warmup_ratio = v;
        else if (v < 1) o->warmup_steps = 0, o->warmup_ratio = v;
        else o->warmup_steps = (int64_t)v, o->warmup_ratio = 0;
        return ZT_OK;
    }
    case ZT__F_SCHEDULE:
        for (int k = 0; k <= (int)ZT_SCHED_GREEDY; k++)
            if (zt__hf_schedule(k) && strcmp(value, zt_schedule_name((zt_schedule)k)) == 0)
                return (o->schedule = (zt_schedule)k), ZT_OK;
        return zt_fail(ZT_ERROR_INVALID, "--lr_scheduler_type \"%s\" is not one of transformers' schedules (linear, cosine, "
                       "cosine_with_restarts, polynomial, constant, constant_with_warmup, inverse_sqrt, cosine_with_min_lr, "
                       "cosine_warmup_with_min_lr, warmup_stable_decay, reduce_lr_on_plateau, greedy)", value);
    case ZT__F_BYTES:
        if (zt_parse_bytes(value, (size_t *)field) != ZT_OK)
            return zt_fail(ZT_ERROR_INVALID, "flag --%s expects a size such as 80GiB, 24GB or 512MiB, found \"%s\"",
                           f->name, value);
        return ZT_OK;
    }
    return ZT_OK;
}

ZT_API zt_result zt_parse_bytes(const char *text, size_t *out) {
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (!*text || errno || !(v >= 0) || end == text) return ZT_ERROR_INVALID;
    static const struct { const char *unit; double scale; } units[] = {
        {"", 1}, {"B", 1}, {"K", 1e3}, {"KB", 1e3}, {"M", 1e6}, {"MB", 1e6}, {"G", 1e9}, {"GB", 1e9}, {"T", 1e12},
        {"TB", 1e12}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(end, units[i].unit) == 0 && v * units[i].scale < 1.8e19) {
            *out = (size_t)(v * units[i].scale);
            return ZT_OK;
        }
    return ZT_ERROR_INVALID;
}

ZT_API int zt_options_given(const zt_options *o, const char *name) {
    if (strcmp(name, "bf16") == 0) return (int)(o->given >> ZT__GIVEN_BF16 & 1);
    if (strcmp(name, "fp16") == 0) return (int)(o->given >> ZT__GIVEN_FP16 & 1);
    for (size_t k = 0; k < ZT__N_FLAGS; k++)
        if (strcmp(zt__flags[k].name, name) == 0) return (int)(o->given >> k & 1);
    return 0;
}

/* the switches outside the table: the precision, and --tf32, which changes nothing in zt */
static int zt__is_switch(const char *name, size_t n) {
    return n == 4 && (strncmp(name, "bf16", 4) == 0 || strncmp(name, "fp16", 4) == 0 || strncmp(name, "tf32", 4) == 0);
}

ZT_API int zt_options_is_flag(const char *name, int *takes_value) {
    size_t n = strcspn(name, "=");
    if (zt__is_switch(name, n)) {
        if (takes_value) *takes_value = 2;
        return 1;
    }
    if (n == 5 && strncmp(name, "optim", 5) == 0) {
        if (takes_value) *takes_value = 1;
        return 1;
    }
    for (size_t k = 0; k < sizeof zt__flags / sizeof zt__flags[0]; k++)
        if (strlen(zt__flags[k].name) == n && strncmp(zt__flags[k].name, name, n) == 0) {
            if (takes_value) *takes_value = zt__flags[k].kind != ZT__F_BOOL ? 1 : 2;
            return 1;
        }
    return 0;
}

ZT_API void zt_options_help(FILE *out) {
    zt_options d = zt_options_default();
    for (size_t k = 0; k < sizeof zt__flags / sizeof zt__flags[0]; k++) {
        const zt__flag *f = &zt__flags[k];
        const void *v = (const uint8_t *)&d + f->offset;
        char def[64];
        if (f->kind == ZT__F_FLOAT) snprintf(def, sizeof def, "%g", (double)*(const float *)v);
        else if (f->kind == ZT__F_BOOL) snprintf(def, sizeof def, "%s", *(const int *)v ? "true" : "false");
        else if (f->kind == ZT__F_STR) snprintf(def, sizeof def, "%s", *(const char *const *)v);
        else if (f->kind == ZT__F_BYTES) snprintf(def, sizeof def, "%zu", *(const size_t *)v);
        else if (f->kind == ZT__F_RATIO) snprintf(def, sizeof def, "%g", *(const double *)v);
        else if (f->kind == ZT__F_SCHEDULE) snprintf(def, sizeof def, "%s", zt_schedule_name(*(const zt_schedule *)v));
        else if (f->offset == offsetof(zt_options, seed)) snprintf(def, sizeof def, "%llu", (unsigned long long)d.seed);
        else if (f->offset == offsetof(zt_options, threads)) snprintf(def, sizeof def, "%d", d.threads);
        else snprintf(def, sizeof def, "%lld", (long long)*(const int64_t *)v);
        fprintf(out, "  --%-30s %s (default %s)\n", f->name, f->help, def);
    }
    fprintf(out, "  --%-30s %s\n", "bf16", "bf16 weights, activations and gradients, fp32 master weights");
    fprintf(out, "  --%-30s %s\n", "fp16", "fp16 with DeepSpeed's dynamic loss scaling");
    fprintf(out, "  --%-30s %s\n", "optim", "adamw_torch (the default), adamw_torch_fused or adamw_apex_fused: AdamW");
    fprintf(out, "  --%-30s %s\n", "tf32", "accepted; zt's f32 products stay f32 (TF32 is not built)");
}

/* --lr_scheduler_kwargs: the keyword arguments transformers passes to the schedule's function, each
   refused where that function does not take it (Python's TypeError), into the fields of zt_options */
static zt_result zt__schedule_kwargs_read(zt_options *o, const zt__json *jp) {
    static const char *const takes[] = { /* by zt_schedule; DeepSpeed's take none from here */
        "", "", "", "", "", "num_cycles", "num_cycles", "lr_end power", "timescale", "num_cycles min_lr min_lr_rate",
        "num_cycles min_lr min_lr_rate warmup_lr_rate",
        "num_decay_steps num_stable_steps warmup_type decay_type min_lr_ratio num_cycles", "",
        "mode factor patience threshold threshold_mode cooldown min_lr eps",
        ("mode factor patience threshold threshold_mode cooldown warmup min_lr max_lr eps verbose smooth window_size "
         "reset_start")};
    const char *text = o->lr_scheduler_kwargs, *name = zt_schedule_name(o->schedule);
    const zt__json j = *jp;
    if (!zt__hf_schedule(o->schedule) && j.tok[0].size > 0)
        return zt_fail(ZT_ERROR_INVALID, "--lr_scheduler_kwargs: DeepSpeed's %s takes its settings from the config's "
                       "scheduler.params", name);
    for (int k = 0, t = 1; k < j.tok[0].size; k++, t = zt__json_skip(&j, t + 1)) {
        char key[32];
        int n = j.tok[t].end - j.tok[t].start, v = t + 1;
        snprintf(key, sizeof key, "%.*s", n, text + j.tok[t].start);
        const char *list = takes[o->schedule];
        int known = 0;
        for (const char *w = list; *w && !known; w += strcspn(w, " "), w += *w == ' ')
            known = strcspn(w, " ") == strlen(key) && !strncmp(w, key, strlen(key));
        if (n >= (int)sizeof key || !known)
            return zt_fail(ZT_ERROR_INVALID, "--lr_scheduler_kwargs: the %s schedule does not take \"%.*s\" (%s%s)", name, n,
                           text + j.tok[t].start, *list ? "it takes: " : "it takes none", list);
        const char *val = text + j.tok[v].start;
        int vn = j.tok[v].end - j.tok[v].start;
        if (!strcmp(key, "warmup_type") || !strcmp(key, "decay_type")) {
            static const char *const shapes[] = {"linear", "cosine", "1-sqrt"};
            int shape = -1;
            for (int s = 0; s < 3; s++)
                if (j.tok[v].type == JSMN_STRING && vn == (int)strlen(shapes[s]) && !strncmp(val, shapes[s], (size_t)vn)) shape = s;
            if (shape < 0)
                return zt_fail(ZT_ERROR_INVALID, "--lr_scheduler_kwargs: %s is \"linear\", \"cosine\" or \"1-sqrt\", not %s%.*s%s",
                               key, j.tok[v].type == JSMN_STRING ? "\"" : "", vn, val, j.tok[v].type == JSMN_STRING ? "\"" : "");
            *(key[0] == 'w' ? &o->warmup_shape : &o->decay_shape) = shape;
            continue;
        }
        if (!strcmp(key, "mode") || !strcmp(key, "threshold_mode")) { /* the metric-following schedules' names */
            const char *a = key[0] == 'm' ? "min" : "rel", *b = key[0] == 'm' ? "max" : "abs";
            int is_a = vn == 3 && !strncmp(val, a, 3), is_b = vn == 3 && !strncmp(val, b, 3);
            if (j.tok[v].type != JSMN_STRING || (!is_a && !is_b))
                return zt_fail(ZT_ERROR_INVALID, "--lr_scheduler_kwargs: %s is \"%s\" or \"%s\", not %s%.*s%s", key, a, b,
                               j.tok[v].type == JSMN_STRING ? "\"" : "", vn, val, j.tok[v].type == JSMN_STRING ? "\"" : "");
            *(key[0] == 'm' ? &o->plateau_max : &o->plateau_threshold_abs) = is_b;
            continue;
        }
        if (!strcmp(key, "verbose") || !strcmp(key, "smooth")) {
            int on = vn == 4 && !strncmp(val, "true", 4), off = vn == 5 && !strncmp(val, "false", 5);
            if (j.tok[v].type != JSMN_PRIMITIVE || (!on && !off))
                return zt_fail(ZT_ERROR_INVALID, "--lr_scheduler_kwargs: %s is true or false, not %.*s", key, vn, val);
            *(key[0] == 'v' ? &o->greedy_verbose : &o->greedy_smooth) = on;
            continue;
        }
        char num[64], *end = NULL;
        snprintf(num, sizeof num, "%.*s", vn < 63 ? vn : 63, val);
        double x = strtod(num, &end);
        if (j.tok[v].type != JSMN_PRIMITIVE || end == num || *end || !isfinite(x))
            return zt_fail(ZT_ERROR_INVALID, "--lr_scheduler_kwargs: %s must be a number, found %s%.*s%s", key,
                           j.tok[v].type == JSMN_STRING ? "\"" : "", vn, val, j.tok[v].type == JSMN_STRING ? "\"" : "");
        int whole = !strcmp(key, "timescale") || !strcmp(key, "num_decay_steps") || !strcmp(key, "num_stable_steps");
        if (whole && (x != floor(x) || x < (strcmp(key, "timescale") ? 0 : 1) || x > 1e15))
            return zt_fail(ZT_ERROR_INVALID, "--lr_scheduler_kwargs: %s must be a whole number of steps%s, found %.*s", key,
                           strcmp(key, "timescale") ? "" : " above 0", vn, val);
        int counts = !strcmp(key, "patience") || !strcmp(key, "cooldown") || !strcmp(key, "warmup") ||
                     !strcmp(key, "window_size") || !strcmp(key, "reset_start");
        if (counts && (x != floor(x) || x < 0 || x > 1e15))
            return zt_fail(ZT_ERROR_INVALID, "--lr_scheduler_kwargs: %s must be a whole number of evaluations, found %.*s", key,
                           vn, val);
        if (!strcmp(key, "window_size") && (x < 1 || x > ZT_PLATEAU_WINDOW))
            return zt_fail(ZT_ERROR_INVALID, "--lr_scheduler_kwargs: window_size is 1 to %d in zt, found %.*s",
                           ZT_PLATEAU_WINDOW, vn, val);
        if (!strcmp(key, "factor") && !(x > 0 && x < 1))
            return zt_fail(ZT_ERROR_INVALID, "--lr_scheduler_kwargs: factor should be < 1.0 (and above 0), found %.*s", vn, val);
        int plateau = zt__metric_schedule(o->schedule);
        if (plateau && x < 0 && (!strcmp(key, "threshold") || !strcmp(key, "min_lr") || !strcmp(key, "max_lr") ||
                                 !strcmp(key, "eps")))
            return zt_fail(ZT_ERROR_INVALID, "--lr_scheduler_kwargs: %s must be 0 or more, found %.*s", key, vn, val);
        if (!strcmp(key, "num_cycles")) o->num_cycles = x;
        else if (!strcmp(key, "min_lr")) o->min_lr = x;
        else if (!strcmp(key, "min_lr_rate") || !strcmp(key, "min_lr_ratio")) o->min_lr_rate = x;
        else if (!strcmp(key, "warmup_lr_rate")) o->warmup_lr_rate = x;
        else if (!strcmp(key, "lr_end")) o->lr_end = x;
        else if (!strcmp(key, "power")) o->power = x;
        else if (!strcmp(key, "timescale")) o->timescale = (int64_t)x;
        else if (!strcmp(key, "num_decay_steps")) o->decay_steps = (int64_t)x;
        else if (!strcmp(key, "num_stable_steps")) o->stable_steps = (int64_t)x;
        else if (!strcmp(key, "factor")) o->plateau_factor = x;
        else if (!strcmp(key, "threshold")) o->plateau_threshold = x;
        else if (!strcmp(key, "eps")) o->plateau_eps = x;
        else if (!strcmp(key, "max_lr")) o->greedy_max_lr = x;
        else if (!strcmp(key, "patience")) o->plateau_patience = (int64_t)x;
        else if (!strcmp(key, "cooldown")) o->plateau_cooldown = (int64_t)x;
        else if (!strcmp(key, "warmup")) o->greedy_warmup = (int64_t)x;
        else if (!strcmp(key, "window_size")) o->greedy_window = (int64_t)x;
        else o->greedy_reset_start = (int64_t)x;
    }
    return ZT_OK;
}

static zt_result zt__schedule_kwargs(zt_options *o) {
    if (!o->lr_scheduler_kwargs) return ZT_OK;
    size_t len = strlen(o->lr_scheduler_kwargs);
    zt_arena a;
    void *mem = zt__setup_arena(&a, "lr_scheduler_kwargs", zt__json_token_bytes(len)); /* at setup: freed below */
    zt__json j;
    zt_result r = zt__json_parse(&j, &a, "--lr_scheduler_kwargs", o->lr_scheduler_kwargs, len);
    if (r == ZT_OK) r = zt__schedule_kwargs_read(o, &j);
    free(mem);
    return r;
}

ZT_API zt_result zt_options_parse_args(zt_options *o, int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0) return zt_fail(ZT_ERROR_INVALID, "unexpected argument \"%s\": flags start with --", a);
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t n = eq ? (size_t)(eq - name) : strlen(name);
        /* a switch's value follows it, as HfArgumentParser takes it, unless the next argument is a flag */
        int next_is_value = !eq && i + 1 < argc && argv[i + 1][0] != '-';
        if (zt__is_switch(name, n)) {
            const char *v = eq ? eq + 1 : next_is_value ? argv[++i] : "true";
            int on = zt__parse_bool(v);
            if (on < 0) return zt_fail(ZT_ERROR_INVALID, "flag --%.4s expects true or false, found \"%s\"", name, v);
            if (name[0] == 't') {
                if (on) zt_log(ZT_LOG_WARN, "--tf32: zt's f32 products stay f32 (TF32 is not built); the flag changes nothing");
                continue;
            }
            if (on) o->precision = name[0] == 'b' ? ZT_PRECISION_BF16 : ZT_PRECISION_FP16;
            if (on) o->given |= (uint64_t)1 << (name[0] == 'b' ? ZT__GIVEN_BF16 : ZT__GIVEN_FP16);
            continue;
        }
        if (n == 5 && strncmp(name, "optim", 5) == 0) {
            const char *v = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
            if (!v) return zt_fail(ZT_ERROR_INVALID, "flag --optim needs a value");
            zt_result r = zt__check_optim(v);
            if (r != ZT_OK) return r;
            continue;
        }
        const zt__flag *f = NULL;
        for (size_t k = 0; k < sizeof zt__flags / sizeof zt__flags[0]; k++)
            if (strlen(zt__flags[k].name) == n && strncmp(zt__flags[k].name, name, n) == 0) f = &zt__flags[k];
        if (!f) return zt_fail(ZT_ERROR_INVALID, "unknown flag --%.*s", (int)n, name);
        const char *value = eq ? eq + 1 : NULL;
        if (!value && f->kind == ZT__F_BOOL) value = next_is_value ? argv[++i] : "true";
        if (!value) {
            if (i + 1 >= argc) return zt_fail(ZT_ERROR_INVALID, "flag --%s needs a value", f->name);
            value = argv[++i];
        }
        zt_result r = zt__set_flag(o, f, value);
        if (r != ZT_OK) return r;
        o->given |= (uint64_t)1 << (f - zt__flags);
    }
    return zt__schedule_kwargs(o);
}

/* ---- learning-rate schedules and the fp16 loss scaler ---- */

/* The warmup steps of a run: warmup_steps, or the Trainer's ceil(warmup_ratio x max_steps) */
static int64_t zt__warmup_steps(const zt_options *o) {
    return o->warmup_steps > 0 ? o->warmup_steps : (int64_t)ceil((double)o->max_steps * o->warmup_ratio);
}

/* a Transformers schedule's factor at step k of T, after w warmup steps (transformers 5, optimization.py) */
static double zt__hf_factor(const zt_options *o, double k, double w, double T) {
    double pi = 3.14159265358979323846, ramp = k / ZT__MAX(1.0, w), p = (k - w) / ZT__MAX(1.0, T - w);
    double cycles = zt__num_cycles(o), rate = zt__min_lr_rate(o);
    switch (o->schedule) {
    case ZT_SCHED_FLAT: return 1.0;
    case ZT_SCHED_CONSTANT: return k < w ? ramp : 1.0;
    case ZT_SCHED_LINEAR: return k < w ? ramp : ZT__MAX(0.0, (T - k) / ZT__MAX(1.0, T - w));
    case ZT_SCHED_COSINE: return k < w ? ramp : ZT__MAX(0.0, 0.5 * (1.0 + cos(pi * cycles * 2.0 * p)));
    case ZT_SCHED_COSINE_RESTARTS: {
        if (k < w) return ramp;
        if (p >= 1.0) return 0.0;
        double f = fmod(cycles * p, 1.0);
        return ZT__MAX(0.0, 0.5 * (1.0 + cos(pi * (f < 0 ? f + 1.0 : f))));
    }
    case ZT_SCHED_POLYNOMIAL: {
        double lr0 = o->lr;
        if (k < w) return ramp;
        if (k > T) return o->lr_end / lr0;
        double left = 1.0 - (k - w) / ZT__MAX(1.0, T - w); /* transformers divides by T - w, 0 only at T = w */
        return ((lr0 - o->lr_end) * pow(left, o->power) + o->lr_end) / lr0;
    }
    case ZT_SCHED_INVERSE_SQRT: {
        if (k < w) return ramp;
        double ts = o->timescale > 0 ? (double)o->timescale : w > 0 ? w : 10000.0;
        return 1.0 / sqrt((k + ts - w) / ts);
    }
    case ZT_SCHED_COSINE_MIN_LR:
        if (k < w) return ramp;
        return ZT__MAX(0.0, 0.5 * (1.0 + cos(pi * cycles * 2.0 * p)) * (1.0 - rate) + rate);
    case ZT_SCHED_COSINE_WARMUP_MIN_LR: {
        if (k < w)
            return o->warmup_lr_rate < 0 ? (k + 1.0) / ZT__MAX(1.0, w)
                                         : o->warmup_lr_rate + (1.0 - o->warmup_lr_rate) * k / ZT__MAX(1.0, w - 1.0);
        double q = (k - w + 1.0) / ZT__MAX(1.0, T - w);
        return ZT__MAX(0.0, 0.5 * (1.0 + cos(pi * cycles * 2.0 * q)) * (1.0 - rate) + rate);
    }
    case ZT_SCHED_WSD: {
        double lo = o->min_lr_rate >= 0 ? o->min_lr_rate : 0.0, d = (double)o->decay_steps, f;
        double stable = o->stable_steps >= 0 ? (double)o->stable_steps : T - w - d;
        int shape = k < w ? o->warmup_shape : o->decay_shape;
        if (k < w) {
            double q = k / ZT__MAX(1.0, w);
            f = shape == 0 ? q : shape == 1 ? 0.5 * (1.0 - cos(pi * q)) : 1.0 - sqrt(1.0 - q);
        } else if (k < w + stable) {
            return 1.0;
        } else if (k < w + stable + d) {
            double q = (k - w - stable) / ZT__MAX(1.0, d);
            f = shape == 0 ? 1.0 - q : shape == 1 ? 0.5 * (1.0 + cos(pi * cycles * 2.0 * q)) : 1.0 - sqrt(q);
        } else {
            return lo;
        }
        return ZT__MAX(0.0, f * (1.0 - lo) + lo);
    }
    case ZT_SCHED_REDUCE_ON_PLATEAU:
    case ZT_SCHED_GREEDY: return 1.0; /* they move with the evaluations: zt_plateau */
    default: return 1.0; /* DeepSpeed's: zt_schedule_lr */
    }
}

/* The learning rate of optimizer step k (0-based, skipped steps not counted). The Transformers
   schedules are LambdaLR at k over max_steps. DeepSpeed's are built at iteration -1 and stepped after
   each applied optimizer step, so step k runs at iteration t = k - 1 (DeepSpeed 0.19.8, lr_schedules.py). */
ZT_API float zt_schedule_lr(const zt_options *o, int64_t k) {
    double lr = o->lr, w = (double)zt__warmup_steps(o), it = (double)k;
    double total = (double)(o->schedule_total > 0 ? o->schedule_total : o->max_steps);
    double t = it - 1.0, W = ZT__MAX(2.0, w), g = 0.0; /* DeepSpeed's iteration and warmup length */
    if (t >= 0 && t < W) g = o->warmup_log ? log(t + 1.0) / log(W) : t / W;
    switch (o->schedule) {
    case ZT_SCHED_WARMUP_LR:
    case ZT_SCHED_WARMUP_DECAY_LR: {
        if (t >= W) g = o->schedule == ZT_SCHED_WARMUP_DECAY_LR ? ZT__MAX(0.0, (total - t) / ZT__MAX(1.0, total - W)) : 1.0;
        return (float)(o->warmup_min_lr + ((double)o->warmup_max_lr - o->warmup_min_lr) * g);
    }
    case ZT_SCHED_WARMUP_COSINE_LR: {
        double ratio;
        if (t < 0) ratio = 0.0; /* the first step runs at lr 0 */
        else if (t < W) ratio = o->warmup_min_ratio + g * (1.0 - o->warmup_min_ratio);
        else {
            double p = ZT__MIN(1.0, (t - W + 1.0) / ZT__MAX(1.0, total - W));
            ratio = ZT__MAX(0.0, o->cos_min_ratio + (1.0 - o->cos_min_ratio) * (1.0 + cos(3.14159265358979323846 * p)) / 2.0);
        }
        return (float)(lr * ratio);
    }
    default: return (float)(lr * zt__hf_factor(o, it, w, (double)o->max_steps));
    }
}

ZT_API zt_plateau zt_plateau_init(const zt_options *o) {
    zt_plateau p;
    memset(&p, 0, sizeof p);
    p.lr = o->lr_exact != 0 && (float)o->lr_exact == o->lr ? o->lr_exact : (double)o->lr;
    p.best = o->plateau_max ? -INFINITY : INFINITY;
    p.reset_left = o->greedy_reset_start;
    return p;
}

/* a beats best by the threshold, relative or absolute, in the direction of the mode */
static int zt__plateau_better(const zt_options *o, const zt__plateau_cfg *c, double a, double best) {
    if (!o->plateau_max) return c->abs ? a < best - c->threshold : a < best * (1.0 - c->threshold);
    return c->abs ? a > best + c->threshold : a > best * (c->threshold + 1.0);
}

/* the learning rate times factor, or divided by it, within [min_lr, max_lr]; moves of eps or less are not made */
static void zt__plateau_move(zt_plateau *p, const zt_options *o, const zt__plateau_cfg *c, int up) {
    double old = p->lr, lr = up ? old / c->factor : old * c->factor;
    if (up && o->greedy_max_lr < lr) lr = o->greedy_max_lr; /* Python's min(new, max_lr): the first of equals */
    if (!up && c->min_lr > lr) lr = c->min_lr;
    if ((up ? lr - old : old - lr) > o->plateau_eps) {
        p->lr = lr;
        if (o->greedy_verbose)
            zt_log(ZT_LOG_INFO, "greedy: evaluation %lld: learning rate %s to %.4e", (long long)p->evals,
                   up ? "up" : "down", lr);
    }
}

ZT_API void zt_plateau_step(zt_plateau *p, const zt_options *o, double metric) {
    zt__plateau_cfg c = zt__plateau_settings(o);
    p->evals++;
    if (o->schedule == ZT_SCHED_REDUCE_ON_PLATEAU) { /* torch's order: compare, then cooldown, then patience */
        if (zt__plateau_better(o, &c, metric, p->best)) p->best = metric, p->bad = 0;
        else p->bad++;
        if (p->cooldown > 0) p->cooldown--, p->bad = 0;
        if (p->bad > o->plateau_patience) {
            zt__plateau_move(p, o, &c, 0);
            p->cooldown = o->plateau_cooldown, p->bad = 0;
        }
        return;
    }
    if (o->schedule != ZT_SCHED_GREEDY) return;
    if (o->greedy_smooth) { /* the mean of the last window_size values */
        int64_t w = ZT__MIN(ZT__MAX(o->greedy_window, 1), ZT_PLATEAU_WINDOW);
        int full = p->n_values >= w; /* theirs appends, then drops the oldest: the same sums, in their order */
        double oldest = p->values[0];
        if (full) memmove(p->values, p->values + 1, sizeof(double) * (size_t)--p->n_values);
        p->values[p->n_values++] = metric;
        p->sum += metric;
        if (full) p->sum -= oldest;
        metric = p->sum / (double)p->n_values;
    }
    if (p->cooldown > 0) p->cooldown--, p->bad = p->good = 0;
    else if (p->warmup > 0) p->warmup--, p->bad = p->good = 0;
    else {
        if (zt__plateau_better(o, &c, metric, p->best)) p->best = metric, p->bad = 0, p->good++;
        else p->bad++, p->good = 0;
        if (p->good > o->plateau_patience) {
            zt__plateau_move(p, o, &c, 1);
            p->warmup = o->greedy_warmup, p->good = 0;
            p->reset_left = o->greedy_reset_start;
        } else if (p->bad > o->plateau_patience) {
            zt__plateau_move(p, o, &c, 0);
            if (!(p->lr > c.min_lr) && --p->reset_left <= 0) { /* at the floor too long: anew */
                int64_t evals = p->evals;
                *p = zt_plateau_init(o);
                p->evals = evals;
            }
            p->cooldown = o->plateau_cooldown, p->bad = 0;
        }
    }
}

ZT_API zt_loss_scaler zt_loss_scaler_init(const zt_options *o) {
    zt_loss_scaler s;
    s.scale = o->precision != ZT_PRECISION_FP16 ? 1.0f
            : o->static_loss_scale > 0 ? o->static_loss_scale : ldexpf(1.0f, o->initial_scale_power);
    s.hysteresis_left = o->hysteresis;
    s.last_overflow = -1;
    s.iter = 0;
    return s;
}

ZT_API zt_result zt_loss_scaler_update(zt_loss_scaler *s, const zt_options *o, int overflow) {
    if (o->precision != ZT_PRECISION_FP16 || o->static_loss_scale > 0) return ZT_OK;
    int zero = o->zero_stage > 0;
    if (overflow) {
        if (!zero) {
            s->scale = ZT__MAX(s->scale / 2.0f, o->min_loss_scale);
        } else if (o->hysteresis == 1 || s->hysteresis_left == 1) {
            if (s->scale == o->min_loss_scale)
                return zt_fail(ZT_ERROR_INVALID, "Current loss scale already at minimum - cannot decrease scale anymore. "
                               "Exiting run.");
            s->scale = ZT__MAX(s->scale / 2.0f, o->min_loss_scale);
        } else {
            s->hysteresis_left--;
        }
        s->last_overflow = s->iter;
    } else {
        if (zero && o->consecutive_hysteresis) s->hysteresis_left = o->hysteresis;
        int64_t stable = s->iter - s->last_overflow - 1;
        if (stable > 0 && o->loss_scale_window > 0 && stable % o->loss_scale_window == 0) {
            if (zero && !o->consecutive_hysteresis) s->hysteresis_left = o->hysteresis;
            s->scale *= 2.0f;
        }
    }
    s->iter++;
    return ZT_OK;
}

/* once per optimizer step; the minimum scale reached under ZeRO stops the run, as in DeepSpeed */
static void zt__scaler_update(zt_engine *e, int overflow) {
    if (zt_loss_scaler_update(&e->scaler, &e->opt, overflow) != ZT_OK) zt_fatal("%s", zt_last_error());
}

/* ---- layout: the same code measures and allocates ---- */

static zt_tensor zt__dev(zt_arena *a, zt_dtype t, zt_shape s, size_t *count) {
    size_t before = a->used;
    zt_tensor x = zt_tensor_new(a, t, ZT_DEVICE, s);
    if (count) *count += a->used - before;
    return x;
}

static int64_t zt__param_host_numel(const zt_engine *e, const zt__param *p);

/* elements of an all-reduce bucket: never more than the group it serves (DeepSpeed's default: 5e8) */
static int64_t zt__bucket(int64_t bucket, int64_t numel) {
    return ZT__MIN(bucket > 0 ? bucket : 500000000, ZT__MAX(numel, 1));
}

/* elements of each rank's piece of a reduce-scatter or all-gather bucket: all ranks' pieces together
   make the bucket, which never exceeds the group it serves */
static int64_t zt__piece(const zt_engine *e, int64_t bucket, int64_t shard) {
    int64_t k = (bucket > 0 ? bucket : 500000000) / e->world;
    return ZT__MIN(ZT__MAX(k, 1), ZT__MAX(shard, 1));
}

/* the views of block b's parameters and gradients that its forward and backward see */
static void zt__bind(zt_engine *e, int b) {
    for (int k = 0; k < e->block_count[b]; k++) {
        int pi = e->slots[e->block_first[b] + k];
        const zt__param *p = &e->params[pi];
        const zt__param *o = &e->params[p->tied >= 0 ? p->tied : pi];
        const zt__group *g = &e->groups[o->block];
        e->bparam[b][k] = zt_view(g->split_w ? g->full_w : g->w, o->offset, o->shape);
        e->bgrad[b][k] = g->trainable && !(o->flags & ZT_PARAM_FROZEN) && zt__numel_of(o->shape) > 0
                             ? zt_view(g->split_grad ? g->full_grad : g->grad, o->offset, o->shape) : zt__none();
    }
}

static zt_tensor zt__host(zt_arena *a, zt_dtype t, zt_shape s, size_t *count) {
    size_t before = a->used;
    zt_tensor x = zt_tensor_new(a, t, ZT_HOST, s);
    *count += a->used - before;
    return x;
}

/* pinned host memory for the swap's I/O: block aligned, whole blocks */
static void *zt__host_block(zt_engine *e, zt_arena *a, int64_t bytes) {
    size_t before = a->used;
    void *p = zt_arena_push(a, (size_t)(ZT__CDIV(bytes, e->block) * e->block), 4096);
    e->hmem[ZT_MEM_BUFFERS] += a->used - before;
    return p;
}

/* a region of swap file k: whole blocks */
static int64_t zt__nvme_region(zt_engine *e, int k, int64_t bytes) {
    int64_t at = e->nvme[k];
    e->nvme[k] += ZT__CDIV(bytes, e->block) * e->block;
    return at;
}

/* which of the two shared full buffers block b's group takes: alternate blocks when there are two */
static int zt__slot(int b, int two) { return two ? b % 2 : 0; }

static void zt__layout(zt_engine *e, zt_arena *dev, zt_arena *pinned) {
    memset(e->mem, 0, sizeof e->mem);
    e->mem[ZT_MEM_LIBRARY] = e->be ? e->be->library_bytes : 0; /* measured by the backend, beside its arenas */
    memset(e->hmem, 0, sizeof e->hmem);
    e->nvme[0] = e->nvme[1] = 0;
    int mixed = e->opt.precision != ZT_PRECISION_FP32;
    size_t *buckets = &e->mem[ZT_MEM_BUCKETS], es = zt_dtype_size(e->wdtype);
    int64_t shared_w = 0, shared_grad = 0, away = 0, most = 1;
    int host_opt = 0; /* groups whose optimizer runs on the host */
    for (int b = 0; b < e->n_blocks; b++) {
        zt__group *g = &e->groups[b];
        zt_shape whole = zt_shape1(ZT__MAX(g->numel, 1)), slice = zt_shape1(ZT__MAX(g->shard, 1));
        zt_shape owned = e->stage > 0 ? slice : whole;
        g->grad = g->master = g->m = g->v = g->full_w = g->full_grad = zt__none();
        g->w_ready = g->grad_open = 0;
        if (g->split_w && e->off_param == ZT_OFFLOAD_CPU) g->w = zt__host(pinned, e->wdtype, slice, &e->hmem[ZT_MEM_PARAMS]);
        else if (g->split_w && e->off_param == ZT_OFFLOAD_NVME) g->w = zt__none(), g->nv_w = zt__nvme_region(e, 1, g->shard * (int64_t)es);
        else g->w = zt__dev(dev, e->wdtype, g->split_w ? slice : whole, &e->mem[ZT_MEM_PARAMS]);
        if (g->split_w && e->off_param != ZT_OFFLOAD_NONE) away = ZT__MAX(away, g->shard);
        if (g->split_w && g->shared_with_others) g->full_w = zt__dev(dev, e->wdtype, whole, buckets);
        else if (g->split_w) shared_w = ZT__MAX(shared_w, g->numel);
        if (!g->trainable) continue;
        host_opt += g->opt_at != ZT_OFFLOAD_NONE;
        if (g->split_grad && g->opt_at != ZT_OFFLOAD_NONE) /* ZeRO-Offload: the reduced slice goes to the host */
            g->grad = zt__host(pinned, ZT_F32, slice, &e->hmem[ZT_MEM_GRADS]);
        else
            g->grad = zt__dev(dev, ZT_F32, g->split_grad ? slice : whole, &e->mem[ZT_MEM_GRADS]);
        if (g->split_grad && g->shared_with_others) g->full_grad = zt__dev(dev, ZT_F32, whole, buckets);
        else if (g->split_grad) shared_grad = ZT__MAX(shared_grad, g->numel);
        most = ZT__MAX(most, owned.d[0]);
        if (g->opt_at == ZT_OFFLOAD_CPU) { /* the host optimizer keeps an fp32 master also in fp32 training */
            g->master = zt__host(pinned, ZT_F32, owned, &e->hmem[ZT_MEM_MASTER]);
            g->m = zt__host(pinned, ZT_F32, owned, &e->hmem[ZT_MEM_ADAM]);
            g->v = zt__host(pinned, ZT_F32, owned, &e->hmem[ZT_MEM_ADAM]);
        } else if (g->opt_at == ZT_OFFLOAD_NVME) {
            g->nv_state = zt__nvme_region(e, 0, 3 * ZT__CDIV(owned.d[0] * 4, e->block) * e->block);
        } else {
            if (mixed) g->master = zt__dev(dev, ZT_F32, owned, &e->mem[ZT_MEM_MASTER]);
            g->m = zt__dev(dev, ZT_F32, owned, &e->mem[ZT_MEM_ADAM]);
            g->v = zt__dev(dev, ZT_F32, owned, &e->mem[ZT_MEM_ADAM]);
        }
    }
    /* offload: a device stage for weight slices, host units for the host optimizer and the swap */
    e->wstage = away ? zt__dev(dev, e->wdtype, zt_shape1(away), buckets) : zt__none();
    int opt_nvme = e->off_opt == ZT_OFFLOAD_NVME && host_opt, nvme = opt_nvme || e->off_param == ZT_OFFLOAD_NVME;
    e->unit = ZT__MIN(ZT__STAGE_FLOATS, ZT__MAX(most, away));
    if (nvme) { /* buffer_size elements, whole blocks in every dtype */
        int64_t half = e->block / 2, want = e->opt.offload_buffer_size > 0 ? e->opt.offload_buffer_size : 100000000;
        e->unit = ZT__CDIV(ZT__MIN(want, ZT__MAX(most, away)), half) * half;
    }
    int host_grads = e->stage >= 2 && host_opt;
    e->gacc = host_grads ? zt__dev(dev, ZT_F32, zt_shape1(ZT__MIN(e->unit, ZT__STAGE_FLOATS)), buckets) : zt__none();
    e->h_grad = NULL, e->h_w = e->bounce = NULL;
    if (host_opt) {
        e->h_grad = (float *)zt__host_block(e, pinned, e->unit * 4);
        e->h_w = zt__host_block(e, pinned, e->unit * 4);
    }
    for (int set = 0; set < 2; set++)
        for (int a = 0; a < 3; a++)
            e->h_state[set][a] = opt_nvme ? (float *)zt__host_block(e, pinned, e->unit * 4) : NULL;
    for (int set = 0; set < 2; set++)
        e->h_slice[set] = e->off_param == ZT_OFFLOAD_NVME ? zt__host_block(e, pinned, e->unit * 4) : NULL;
    e->bounce_bytes = nvme ? ZT__STAGE_FLOATS * 4 + 2 * e->block : 0;
    if (nvme) e->bounce = zt__host_block(e, pinned, e->bounce_bytes);
    for (int k = 0; k < 2; k++)
        e->nvme_sums[k] = e->nvme[k] ? (uint64_t *)zt__host_block(e, pinned, e->nvme[k] / e->block * 8) : NULL;
    /* full buffers for the weights and the gradients of the split groups used by one block: one each,
       or two (prefetch, overlap_comm), so that one block's buffer is gathered or reduced while the block
       beside it computes in the other */
    for (int k = 0; k < 2; k++) {
        e->shared_w[k] = !shared_w ? zt__none() : k == 0 || e->prefetch ? zt__dev(dev, e->wdtype, zt_shape1(shared_w), buckets)
                                                                        : e->shared_w[0];
        e->shared_grad[k] = !shared_grad ? zt__none() : k == 0 || e->overlap ? zt__dev(dev, ZT_F32, zt_shape1(shared_grad), buckets)
                                                                             : e->shared_grad[0];
        e->shared_w_group[k] = e->shared_grad_group[k] = -1;
    }
    for (int b = 0; b < e->n_blocks; b++) {
        zt__group *g = &e->groups[b];
        if (g->split_w && !g->shared_with_others) g->full_w = zt_view(e->shared_w[zt__slot(b, e->prefetch)], 0, zt_shape1(g->numel));
        if (g->split_grad && !g->shared_with_others)
            g->full_grad = zt_view(e->shared_grad[zt__slot(b, e->overlap)], 0, zt_shape1(g->numel));
    }
    for (int b = 0; b < e->n_blocks; b++) zt__bind(e, b);
    size_t *buf = &e->mem[ZT_MEM_BUFFERS];
    zt_shape bt = zt_shape2(e->B, e->T);
    memset(&e->full, 0, sizeof e->full);
    e->full.tokens = zt__dev(dev, ZT_I32, bt, buf);
    e->full.targets = zt__dev(dev, ZT_I32, bt, buf);
    e->full.pos = zt__dev(dev, ZT_I32, bt, buf);
    e->full.starts = e->opt.eot_token >= 0 ? zt__dev(dev, ZT_I32, bt, buf) : zt__none();
    e->full.losses = zt__dev(dev, ZT_F32, bt, buf);
    e->full.logits = zt__dev(dev, ZT_F32, zt_shape1(ZT__CDIV(e->vocab, 128) * 128), buf);
    e->full.B = e->B;
    e->full.T = e->T;
    e->full.ignore_index = e->opt.ignore_index;
    e->full.label_smoothing = e->opt.label_smoothing;
    e->full.neftune_alpha = e->opt.neftune_alpha;
    e->full.first_row = (int64_t)e->rank * e->B;
    e->full.logits_at = -1;
    e->full.aux = &e->aux;
    e->full.shared = e->shared;
    e->batch = e->full;
    e->norm_parts = zt__dev(dev, ZT_F32, zt_shape1((int64_t)e->n_blocks * e->world), buf);
    int64_t largest = 1; /* reads of split state go a parameter chunk at a time */
    for (int p = 0; p < e->n_params; p++) largest = ZT__MAX(largest, zt__param_host_numel(e, &e->params[p]));
    e->dstage = e->world > 1 && e->stage > 0 ? zt__dev(dev, ZT_F32, zt_shape1(ZT__MIN(ZT__STAGE_FLOATS, largest)), buf)
                                             : zt__none();
    e->stats = zt__dev(dev, ZT_F32, zt_shape1(2), buf);
    e->values = zt__dev(dev, ZT_F32, zt_shape1(2 * ZT_GATHER_MAX * (1 + (int64_t)e->world)), buf);
    int64_t bucket = 0; /* the largest bucket of 16-bit gradients, all ranks' pieces together */
    for (int b = 0; b < e->n_blocks && e->world > 1 && e->cdtype != ZT_F32; b++) {
        const zt__group *g = &e->groups[b];
        if (!g->trainable) continue;
        bucket = ZT__MAX(bucket, e->stage == 0 ? zt__bucket(e->opt.reduce_bucket_size, g->numel)
                                               : e->world * zt__piece(e, e->opt.reduce_bucket_size, g->shard));
    }
    e->cbuf = bucket ? zt__dev(dev, e->cdtype, zt_shape1(bucket), buckets) : zt__none();
    for (int i = 0; i < 2; i++) e->dbuf[i] = zt__dev(dev, e->act, zt_shape3(e->B, e->T, e->C), buf);
    /* activations and scratch: regions measured by running a step (zt__measure_activations) */
    size_t before = dev->used;
    void *k = zt_arena_push(dev, e->keep_bytes, 64);
    void *s = zt_arena_push(dev, e->scratch_bytes, 64);
    e->mem[ZT_MEM_ACTIVATIONS] = e->keep_bytes;
    e->mem[ZT_MEM_SCRATCH] = e->scratch_bytes;
    *buf += dev->used - before - e->keep_bytes - e->scratch_bytes; /* alignment */
    if (zt_arena_measuring(dev)) {
        zt_arena_init_measure(&e->keep, "activations");
        zt_arena_init_measure(&e->scratch, "scratch");
    } else {
        zt_arena_init(&e->keep, "activations", k, e->keep_bytes);
        zt_arena_init(&e->scratch, "scratch", s, e->scratch_bytes);
        zt_arena_set_stream_ordered(&e->keep);
        zt_arena_set_stream_ordered(&e->scratch);
    }
    /* pinned host memory: batch staging, losses, norms, parameter staging, sampling */
    int64_t N = e->B * e->T, V = e->full.logits.shape.d[0];
    e->h_tokens = ZT_PUSH(pinned, int32_t, N);
    e->h_targets = ZT_PUSH(pinned, int32_t, N);
    e->h_pos = ZT_PUSH(pinned, int32_t, N);
    e->h_starts = ZT_PUSH(pinned, int32_t, N);
    e->h_losses = ZT_PUSH(pinned, float, N);
    e->h_norms = ZT_PUSH(pinned, float, (int64_t)e->n_blocks * e->world);
    e->h_stats = ZT_PUSH(pinned, float, 2);
    e->h_values = ZT_PUSH(pinned, float, 2 * ZT_GATHER_MAX * (1 + (int64_t)e->world));
    e->h_stage = ZT_PUSH(pinned, float, ZT__STAGE_FLOATS);
    e->h_logits = ZT_PUSH(pinned, float, V);
    e->h_order = ZT_PUSH(pinned, int32_t, V);
}

static zt_block_ctx zt__ctx(zt_engine *e, int b, int training) {
    zt_block_ctx c;
    c.stream = e->s;
    c.config = e->configs[b];
    c.index = b;
    c.param = e->bparam[b];
    c.grad = e->bgrad[b];
    c.saved = e->saved[b];
    c.keep = &e->keep;
    c.scratch = e->scratch;
    c.act = e->act;
    c.batch = &e->batch;
    c.training = training;
    return c;
}

ZT_API zt_tensor zt_block_keep(zt_block_ctx *ctx, zt_dtype dtype, zt_shape shape) {
    return zt_tensor_new(ctx->keep, dtype, ZT_DEVICE, shape);
}
ZT_API zt_tensor zt_block_temp(zt_block_ctx *ctx, zt_dtype dtype, zt_shape shape) {
    return zt_tensor_new(&ctx->scratch, dtype, ZT_DEVICE, shape);
}

/* ---- offload: NVMe swap files ---- */

/* Each rank keeps its offloaded state in two files (0: optimizer state, 1: parameter slices) in a
   directory of its own, <nvme_path>/zt-swap-<host>-<pid>, removed at exit (also after zt_fatal); one a
   killed job left is removed at the next start. I/O goes through threads made at init, a block
   (aio.block_size) per request, with O_DIRECT where the file system has it. Each block's checksum is
   kept from its write, so a file truncated or changed under the job is an error, not wrong numbers.
   (Each engine of a process has a directory of its own: the name ends in a count.) */
#include <dirent.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#define ZT__IO_QUEUE 64  /* requests waiting for an I/O thread */
#define ZT__IO_BATCHES 8 /* groups of requests waited for together */
#define ZT__IO_THREADS 16

typedef struct zt__io_req { int file, write, batch; uint8_t *buf; int64_t at, bytes; } zt__io_req;

typedef struct zt__swap {
    char dir[2][ZT__PATH], path[2][ZT__PATH];
    int fd[2], direct[2];
    int64_t bytes[2];  /* each file's size */
    uint64_t *sums[2]; /* a checksum per block; 0: never written (reads as zeros) */
    int64_t block;
    int n_threads;
    pthread_t threads[ZT__IO_THREADS];
    pthread_mutex_t mu;
    pthread_cond_t work, space, done;
    zt__io_req q[ZT__IO_QUEUE];
    uint64_t head, tail;
    int pending[ZT__IO_BATCHES], next_batch, stop;
    char error[600];
} zt__swap;

static zt__swap *zt__swaps[8]; /* live ones, removed at exit and after zt_fatal */

static void zt__swap_remove_files(zt__swap *sw) {
    for (int k = 0; k < 2; k++) {
        if (sw->path[k][0]) unlink(sw->path[k]);
        if (sw->dir[k][0]) rmdir(sw->dir[k]);
    }
}

static void zt__swap_cleanup_all(void) {
    for (int i = 0; i < 8; i++)
        if (zt__swaps[i]) zt__swap_remove_files(zt__swaps[i]);
}

/* four lanes of multiply-add over 8-byte words: fast enough to run at I/O speed; never 0 */
static uint64_t zt__checksum(const uint8_t *p, int64_t n) {
    uint64_t h[4] = {1, 2, 3, 4};
    int64_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int l = 0; l < 4; l++) {
            uint64_t w;
            memcpy(&w, p + i + 8 * l, 8);
            h[l] = (h[l] ^ w) * 0x100000001b3ull;
        }
    for (; i < n; i++) h[0] = (h[0] ^ p[i]) * 0x100000001b3ull;
    return (zt__mix(h[0] ^ zt__mix(h[1] ^ zt__mix(h[2] ^ zt__mix(h[3] ^ (uint64_t)n))))) | 1;
}

static void zt__swap_fail(zt__swap *sw, const char *fmt, ...) ZT_PRINTF(2, 3);
static void zt__swap_fail(zt__swap *sw, const char *fmt, ...) {
    if (sw->error[0]) return; /* the first error is the one to report */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sw->error, sizeof sw->error, fmt, ap);
    va_end(ap);
}

/* one request: a block, written with its checksum or read and checked against it */
static void zt__swap_do(zt__swap *sw, const zt__io_req *r) {
    uint64_t *sum = &sw->sums[r->file][r->at / sw->block];
    const char *path = sw->path[r->file];
    if (!r->write && *sum == 0) { /* never written: zeros, as a fresh file would read */
        memset(r->buf, 0, (size_t)r->bytes);
        return;
    }
    uint64_t want = r->write ? zt__checksum(r->buf, r->bytes) : *sum;
    int64_t done = 0;
    while (done < r->bytes) {
        ssize_t n = r->write ? pwrite(sw->fd[r->file], r->buf + done, (size_t)(r->bytes - done), (off_t)(r->at + done))
                             : pread(sw->fd[r->file], r->buf + done, (size_t)(r->bytes - done), (off_t)(r->at + done));
        if (n < 0 && errno == EINTR) continue;
        pthread_mutex_lock(&sw->mu);
        if (n < 0) zt__swap_fail(sw, "cannot %s the swap file %s at byte %lld: %s", r->write ? "write" : "read", path,
                                 (long long)(r->at + done), strerror(errno));
        else if (n == 0) zt__swap_fail(sw, "the swap file %s ends at byte %lld, before the %lld bytes zt wrote there: it "
                                      "was truncated under the running job", path, (long long)(r->at + done),
                                      (long long)(r->at + r->bytes));
        pthread_mutex_unlock(&sw->mu);
        if (n <= 0) return;
        done += n;
    }
    if (r->write) {
        *sum = want;
    } else if (zt__checksum(r->buf, r->bytes) != want) {
        pthread_mutex_lock(&sw->mu);
        zt__swap_fail(sw, "the swap file %s does not hold at bytes %lld-%lld what zt wrote there (checksum): it was "
                      "changed or replaced under the running job", path, (long long)r->at, (long long)(r->at + r->bytes));
        pthread_mutex_unlock(&sw->mu);
    }
}

static void *zt__swap_thread(void *arg) {
    zt__swap *sw = (zt__swap *)arg;
    pthread_mutex_lock(&sw->mu);
    for (;;) {
        while (sw->head == sw->tail && !sw->stop) pthread_cond_wait(&sw->work, &sw->mu);
        if (sw->head == sw->tail) break;
        zt__io_req r = sw->q[sw->head++ % ZT__IO_QUEUE];
        pthread_cond_signal(&sw->space);
        pthread_mutex_unlock(&sw->mu);
        zt__swap_do(sw, &r);
        pthread_mutex_lock(&sw->mu);
        if (--sw->pending[r.batch] == 0) pthread_cond_broadcast(&sw->done);
    }
    pthread_mutex_unlock(&sw->mu);
    return NULL;
}

/* waits for a batch of requests; an I/O error ends the process with its message */
static void zt__swap_wait(zt__swap *sw, int batch) {
    pthread_mutex_lock(&sw->mu);
    while (sw->pending[batch] > 0) pthread_cond_wait(&sw->done, &sw->mu);
    int failed = sw->error[0] != 0;
    pthread_mutex_unlock(&sw->mu);
    if (failed) zt_fatal("%s", sw->error);
}

/* a new batch of requests, waited for together (a slot is reused only when its last use is done) */
static int zt__swap_batch(zt__swap *sw) {
    int batch = sw->next_batch;
    sw->next_batch = (batch + 1) % ZT__IO_BATCHES;
    zt__swap_wait(sw, batch);
    return batch;
}

/* adds bytes [at, at+n) of file k from or to buf to a batch (block aligned: at and buf; n is rounded up
   to blocks, which the file's layout leaves room for) */
static void zt__swap_add(zt__swap *sw, int batch, int k, int64_t at, int64_t n, void *buf, int write) {
    ZT_ASSERT(at % sw->block == 0 && ((uintptr_t)buf & 4095) == 0 && at + ZT__CDIV(n, sw->block) * sw->block <= sw->bytes[k]);
    pthread_mutex_lock(&sw->mu);
    for (int64_t o = 0; o < n; o += sw->block) {
        while (sw->tail - sw->head == ZT__IO_QUEUE) pthread_cond_wait(&sw->space, &sw->mu);
        zt__io_req r = {k, write, batch, (uint8_t *)buf + o, at + o, sw->block};
        sw->q[sw->tail++ % ZT__IO_QUEUE] = r;
        sw->pending[batch]++;
        pthread_cond_signal(&sw->work);
    }
    pthread_mutex_unlock(&sw->mu);
}

/* one transfer, waited for */
static void zt__swap_io(zt__swap *sw, int k, int64_t at, int64_t n, void *buf, int write) {
    int batch = zt__swap_batch(sw);
    zt__swap_add(sw, batch, k, at, n, buf, write);
    zt__swap_wait(sw, batch);
}

/* <path>/zt-swap-<host>-<pid>-<n>: made here; one of this host whose process is gone is a killed job's */
static zt_result zt__swap_dir(char *dir, const char *path, const char *key) {
    struct stat st;
    if (stat(path, &st) != 0) return zt_fail(ZT_ERROR_IO, "%s %s does not exist: %s", key, path, strerror(errno));
    if (!S_ISDIR(st.st_mode)) return zt_fail(ZT_ERROR_IO, "%s %s is not a directory", key, path);
    char host[64] = "host", prefix[128];
    gethostname(host, sizeof host - 1);
    for (char *c = host; *c; c++) if (*c == '/' || *c == '-') *c = '_';
    int n = snprintf(prefix, sizeof prefix, "zt-swap-%s-", host);
    DIR *d = opendir(path);
    for (struct dirent *de; d && (de = readdir(d)) != NULL;) {
        char *end = NULL;
        if (strncmp(de->d_name, prefix, (size_t)n) != 0) continue;
        long pid = strtol(de->d_name + n, &end, 10);
        if (!end || (*end && *end != '-') || pid <= 0 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        char stale[ZT__PATH], file[ZT__PATH + 32];
        if (snprintf(stale, sizeof stale, "%s/%s", path, de->d_name) >= (int)sizeof stale) continue;
        DIR *sd = opendir(stale);
        for (struct dirent *f; sd && (f = readdir(sd)) != NULL;)
            if (f->d_name[0] != '.' && snprintf(file, sizeof file, "%s/%s", stale, f->d_name) < (int)sizeof file) unlink(file);
        if (sd) closedir(sd);
        if (rmdir(stale) == 0) zt_log(ZT_LOG_WARN, "removed %s, the swap directory of a job that was killed", stale);
    }
    if (d) closedir(d);
    static int engines; /* several engines of one process: a directory each */
    if (snprintf(dir, ZT__PATH, "%s/%s%ld-%d", path, prefix, (long)getpid(), __atomic_fetch_add(&engines, 1, __ATOMIC_RELAXED)) >= ZT__PATH)
        return zt_fail(ZT_ERROR_INVALID, "%s %s is too long a path", key, path);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return zt_fail(ZT_ERROR_IO, "%s %s is not writable: cannot create %s: %s", key, path, dir, strerror(errno));
    return ZT_OK;
}

/* The swap files of sizes bytes[0] and bytes[1] (0: not used) under paths[k]: checked (a directory,
   writable, room for the planned bytes, O_DIRECT or a warning), then made at full size. */
static zt_result zt__swap_open(zt__swap *sw, const char *const paths[2], const char *const keys[2], const int64_t bytes[2],
                               int64_t block, int threads, uint64_t *sums[2]) {
    memset(sw, 0, sizeof *sw);
    sw->fd[0] = sw->fd[1] = -1;
    sw->block = block;
    zt_result r = ZT_OK;
    for (int k = 0; k < 2 && r == ZT_OK; k++) {
        if (!bytes[k]) continue;
        sw->bytes[k] = bytes[k];
        sw->sums[k] = sums[k];
        if (k == 1 && sw->dir[0][0] && strcmp(paths[0], paths[1]) == 0) memcpy(sw->dir[1], sw->dir[0], ZT__PATH); /* one directory */
        else if ((r = zt__swap_dir(sw->dir[k], paths[k], keys[k])) != ZT_OK) break;
        struct statvfs vfs;
        double free_bytes = statvfs(sw->dir[k], &vfs) == 0 ? (double)vfs.f_bavail * (double)vfs.f_frsize : 0;
        if (getenv("ZT_TEST_NVME_FREE")) free_bytes = atof(getenv("ZT_TEST_NVME_FREE")); /* the tests' hook */
        int same = bytes[0] && bytes[1] && strcmp(paths[0], paths[1]) == 0; /* one directory: both files, checked first */
        if (same && k == 1) free_bytes = 1e300;
        int64_t need = same ? bytes[0] + bytes[1] : bytes[k];
        if ((double)need > free_bytes) {
            r = zt_fail(ZT_ERROR_IO, "%s %s has %.1f MiB free; this rank's swap files need %.1f MiB (zt_train --plan "
                        "shows them)", keys[k], paths[k], free_bytes / 1048576.0, (double)need / 1048576.0);
            break;
        }
        char file[ZT__PATH];
        int len = snprintf(file, sizeof file, "%s/%s", sw->dir[k], k == 0 ? "optimizer" : "parameters");
        if (len < 0 || len >= ZT__PATH) {
            r = zt_fail(ZT_ERROR_INVALID, "%s %s is too long a path", keys[k], paths[k]);
            break;
        }
        memcpy(sw->path[k], file, (size_t)len + 1);
        sw->fd[k] = open(sw->path[k], O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_DIRECT, 0600);
        sw->direct[k] = sw->fd[k] >= 0;
        if (sw->fd[k] < 0 && errno == EINVAL) { /* tmpfs and some others */
            sw->fd[k] = open(sw->path[k], O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
            if (sw->fd[k] >= 0)
                zt_log(ZT_LOG_WARN, "%s %s does not take O_DIRECT: swapping through the page cache", keys[k], paths[k]);
        }
        if (sw->fd[k] < 0) {
            r = zt_fail(ZT_ERROR_IO, "%s %s is not writable: cannot create %s: %s", keys[k], paths[k], sw->path[k],
                        strerror(errno));
            break;
        }
        int rc = posix_fallocate(sw->fd[k], 0, (off_t)bytes[k]); /* the space taken now, not at some later write */
        if ((rc == EOPNOTSUPP || rc == EINVAL) && ftruncate(sw->fd[k], (off_t)bytes[k]) != 0) rc = errno;
        else if (rc == EOPNOTSUPP || rc == EINVAL) rc = 0;
        if (rc != 0) r = zt_fail(ZT_ERROR_IO, "%s %s: cannot make the %.1f MiB swap file %s: %s", keys[k], paths[k],
                                 (double)bytes[k] / 1048576.0, sw->path[k], strerror(rc));
    }
    for (int i = 0; i < 8; i++)
        if (!zt__swaps[i]) {
            zt__swaps[i] = sw;
            break;
        }
    if (r != ZT_OK) return r;
    pthread_mutex_init(&sw->mu, NULL);
    pthread_cond_init(&sw->work, NULL);
    pthread_cond_init(&sw->space, NULL);
    pthread_cond_init(&sw->done, NULL);
    sw->n_threads = ZT__MIN(ZT__MAX(threads, 1), ZT__IO_THREADS);
    for (int t = 0; t < sw->n_threads; t++)
        if (pthread_create(&sw->threads[t], NULL, zt__swap_thread, sw) != 0) {
            sw->n_threads = t;
            return zt_fail(ZT_ERROR_MEMORY, "cannot start the NVMe I/O threads");
        }
    return ZT_OK;
}

static void zt__swap_close(zt__swap *sw) {
    if (sw->n_threads) {
        pthread_mutex_lock(&sw->mu);
        sw->stop = 1;
        pthread_cond_broadcast(&sw->work);
        pthread_mutex_unlock(&sw->mu);
        for (int t = 0; t < sw->n_threads; t++) pthread_join(sw->threads[t], NULL);
        pthread_mutex_destroy(&sw->mu);
        pthread_cond_destroy(&sw->work);
        pthread_cond_destroy(&sw->space);
        pthread_cond_destroy(&sw->done);
        sw->n_threads = 0;
    }
    for (int k = 0; k < 2; k++)
        if (sw->fd[k] >= 0) close(sw->fd[k]), sw->fd[k] = -1;
    zt__swap_remove_files(sw);
    for (int i = 0; i < 8; i++)
        if (zt__swaps[i] == sw) zt__swaps[i] = NULL;
}

/* ---- offload: state between the device, host memory and the swap files ---- */

static int zt__has_master(const zt__group *g) {
    return zt__present(g->master) || g->opt_at == ZT_OFFLOAD_NVME;
}

/* bytes of each of a group's three swapped state arrays (master, exp_avg, exp_avg_sq) */
static int64_t zt__state_bytes(const zt_engine *e, const zt__group *g) {
    return ZT__CDIV((e->stage > 0 ? g->shard : g->numel) * 4, e->block) * e->block;
}

/* elements [lo, lo+n) (es bytes each) of the swapped array at byte `base` of file k, to or from host
   memory, through the bounce buffer: whole blocks are read, and written back with the new bytes in them */
static void zt__swap_array(zt_engine *e, int k, int64_t base, size_t es, int64_t lo, int64_t n, void *host, int write) {
    int64_t B = e->block, most = (e->bounce_bytes - 2 * B) / (int64_t)es;
    uint8_t *h = (uint8_t *)host, *bounce = (uint8_t *)e->bounce;
    while (n > 0) {
        int64_t m = ZT__MIN(n, most), off = base + lo * (int64_t)es, b0 = off / B * B;
        int64_t b1 = ZT__CDIV(off + m * (int64_t)es, B) * B;
        zt__swap_io(e->swap, k, b0, b1 - b0, bounce, 0);
        if (write) {
            memcpy(bounce + (off - b0), h, (size_t)m * es);
            zt__swap_io(e->swap, k, b0, b1 - b0, bounce, 1);
        } else {
            memcpy(h, bounce + (off - b0), (size_t)m * es);
        }
        h += (size_t)m * es, lo += m, n -= m;
    }
}

/* unit u of group g's NVMe weight slice, read into h_slice[j] once the copy out of it that was queued
   last (on any stream) is done: the batch to wait for */
static int zt__slice_read(zt_engine *e, const zt__group *g, int64_t u, int j) {
    int64_t U = e->unit, es = (int64_t)zt_dtype_size(e->wdtype);
    zt_event_sync(e->ev_slice[j]);
    int batch = zt__swap_batch(e->swap);
    zt__swap_add(e->swap, batch, 1, g->nv_w + u * U * es, ZT__MIN(U, g->shard - u * U) * es, e->h_slice[j], 0);
    return batch;
}

/* an offloaded weight slice to a device tensor, on stream s: from host memory, or from the swap a unit
   at a time (the next unit read while the last is copied). The host waits for the copy out of a buffer
   only when it reads into it again, so a slice of one unit comes in without the host waiting for s. */
static void zt__slice_load(zt_engine *e, zt_stream *s, const zt__group *g, zt_tensor dst) {
    if (e->off_param == ZT_OFFLOAD_CPU) {
        zt_copy(s, dst, g->w);
        return;
    }
    if (!e->swap) return; /* measuring */
    int64_t U = e->unit, units = ZT__CDIV(g->shard, U);
    int batch[2] = {zt__slice_read(e, g, 0, 0), -1};
    for (int64_t u = 0; u < units; u++) {
        int j = (int)(u % 2);
        int64_t k = ZT__MIN(U, g->shard - u * U);
        if (u + 1 < units) batch[1 - j] = zt__slice_read(e, g, u + 1, 1 - j);
        zt__swap_wait(e->swap, batch[j]);
        zt_copy(s, zt_view(dst, u * U, zt_shape1(k)), zt_tensor_make(e->h_slice[j], e->wdtype, ZT_HOST, zt_shape1(k)));
        zt_event_record(e->ev_slice[j], s);
    }
}

/* ... and back, after an update on the device */
static void zt__slice_store(zt_engine *e, const zt__group *g, zt_tensor src) {
    if (e->off_param == ZT_OFFLOAD_CPU) {
        zt_copy(e->s, g->w, src);
        return;
    }
    if (!e->swap) return;
    int64_t U = e->unit, es = (int64_t)zt_dtype_size(e->wdtype), units = ZT__CDIV(g->shard, U);
    int batch[2] = {-1, -1};
    for (int64_t u = 0; u < units; u++) {
        int64_t k = ZT__MIN(U, g->shard - u * U);
        if (batch[u % 2] >= 0) zt__swap_wait(e->swap, batch[u % 2]);
        zt_event_sync(e->ev_slice[u % 2]); /* a load's copy out of it is done */
        zt_copy(e->s, zt_tensor_make(e->h_slice[u % 2], e->wdtype, ZT_HOST, zt_shape1(k)), zt_view(src, u * U, zt_shape1(k)));
        zt_stream_sync(e->s);
        batch[u % 2] = zt__swap_batch(e->swap);
        zt__swap_add(e->swap, batch[u % 2], 1, g->nv_w + u * U * es, k * es, e->h_slice[u % 2], 1);
    }
    for (int i = 0; i < 2; i++)
        if (batch[i] >= 0) zt__swap_wait(e->swap, batch[i]);
}

static zt_adamw_params zt__adamw_params(const zt_engine *e, const zt__param *pr, float lr, double grad_scale) {
    zt_adamw_params ap = zt_adamw_params_default();
    ap.lr = lr;
    ap.beta1 = e->opt.beta1;
    ap.beta2 = e->opt.beta2;
    ap.eps = e->opt.eps;
    ap.weight_decay = pr->flags & ZT_PARAM_DECAY ? e->opt.weight_decay : 0.0f;
    ap.grad_scale = (float)grad_scale;
    ap.step = e->adam_step;
    ap.l2 = !e->opt.adam_w_mode;
    return ap;
}

/* the parameters of group b a step updates, as ranges [*lo, *hi) of the group clipped to [from, to) */
static int zt__updated(const zt_engine *e, const zt__param *pr, int64_t from, int64_t to, int64_t *lo, int64_t *hi) {
    int64_t n = zt__numel_of(pr->shape);
    if (pr->tied >= 0 || n == 0 || pr->flags & ZT_PARAM_FROZEN) return 0;
    (void)e;
    *lo = ZT__MAX(pr->offset, from), *hi = ZT__MIN(pr->offset + n, to);
    return *hi > *lo;
}

/* the update on the device: the state is there; an offloaded weight slice comes in and goes back */
static void zt__update_device(zt_engine *e, zt__group *g, float lr, double grad_scale) {
    int away = g->split_w && e->off_param != ZT_OFFLOAD_NONE;
    zt_tensor w_all = away ? zt_view(e->wstage, 0, zt_shape1(g->shard)) : g->w;
    if (away) zt__slice_load(e, e->s, g, w_all);
    int64_t owned = e->stage > 0 ? g->shard : g->numel, lo, hi;
    for (int p = g->first; p < g->first + g->n; p++) {
        const zt__param *pr = &e->params[p];
        if (!zt__updated(e, pr, g->own, g->own + owned, &lo, &hi)) continue;
        zt_shape k = zt_shape1(hi - lo);
        zt_tensor w = zt_view(w_all, lo - (g->split_w ? g->own : 0), k);
        zt_tensor master = zt__present(g->master) ? zt_view(g->master, lo - g->own, k) : w;
        zt_adamw(e->s, master, zt_view(g->m, lo - g->own, k), zt_view(g->v, lo - g->own, k),
                 zt_view(g->grad, lo - (g->split_grad ? g->own : 0), k), zt__present(g->master) ? &w : NULL,
                 zt__adamw_params(e, pr, lr, grad_scale));
    }
    if (away) zt__slice_store(e, g, w_all);
}

/* the update on the host (offload_optimizer), a unit of the rank's slice at a time: its gradient comes
   over, the state is there (or read from the swap, the next unit while this one is updated, and written
   back), and the updated weights go to wherever the weights live */
static void zt__update_host(zt_engine *e, zt__group *g, float lr, double grad_scale) {
    int64_t owned = g->shard, U = e->unit, units = ZT__CDIV(owned, U), A = zt__state_bytes(e, g), lo, hi;
    int64_t es = (int64_t)zt_dtype_size(e->wdtype);
    int nv = g->opt_at == ZT_OFFLOAD_NVME && e->swap, w_host = g->split_w && e->off_param == ZT_OFFLOAD_CPU;
    int w_swap = g->split_w && e->off_param == ZT_OFFLOAD_NVME, reads[2] = {-1, -1}, writes[2] = {-1, -1};
    if (g->opt_at == ZT_OFFLOAD_NVME && !e->swap) return; /* measuring */
    for (int64_t u = 0; u < units; u++) {
        int set = (int)(u % 2);
        int64_t c0 = u * U, k = ZT__MIN(U, owned - c0), at = g->own + c0;
        for (int64_t v = u; nv && v <= u + 1 && v < units; v++) { /* this unit (the first time) and the next */
            int vs = (int)(v % 2);
            if (reads[vs] >= 0 && v == u) continue;
            if (writes[vs] >= 0) zt__swap_wait(e->swap, writes[vs]), writes[vs] = -1;
            reads[vs] = zt__swap_batch(e->swap);
            for (int a = 0; a < 3; a++)
                zt__swap_add(e->swap, reads[vs], 0, g->nv_state + a * A + v * U * 4, ZT__MIN(U, owned - v * U) * 4,
                             e->h_state[vs][a], 0);
        }
        const float *grad = e->h_grad;
        if (g->grad.place == ZT_HOST) {
            grad = (const float *)g->grad.data + c0; /* stages 2-3: the slice is here already */
        } else {
            zt_copy(e->s, zt_tensor_make(e->h_grad, ZT_F32, ZT_HOST, zt_shape1(k)), zt_view(g->grad, g->split_grad ? c0 : at, zt_shape1(k)));
            zt_stream_sync(e->s);
        }
        float *st[3];
        if (nv) {
            zt__swap_wait(e->swap, reads[set]);
            reads[set] = -1;
            for (int a = 0; a < 3; a++) st[a] = e->h_state[set][a];
        } else {
            st[0] = (float *)g->master.data + c0, st[1] = (float *)g->m.data + c0, st[2] = (float *)g->v.data + c0;
        }
        uint8_t *w = w_host ? (uint8_t *)g->w.data + c0 * es : (uint8_t *)e->h_w;
        if (w_swap) zt__swap_io(e->swap, 1, g->nv_w + c0 * es, k * es, e->h_w, 0); /* frozen parts stay as they are */
        for (int p = g->first; p < g->first + g->n; p++) {
            const zt__param *pr = &e->params[p];
            if (!zt__updated(e, pr, at, at + k, &lo, &hi)) continue;
            int64_t o = lo - at;
            zt_adamw_host(e->hpool, st[0] + o, st[1] + o, st[2] + o, grad + o, w + o * es, e->wdtype, hi - lo,
                          zt__adamw_params(e, pr, lr, grad_scale));
            if (!w_host && !w_swap) /* the weights are on the device */
                zt_copy(e->s, zt_view(g->w, lo - (g->split_w ? g->own : 0), zt_shape1(hi - lo)),
                        zt_tensor_make(w + o * es, e->wdtype, ZT_HOST, zt_shape1(hi - lo)));
        }
        if (w_swap) zt__swap_io(e->swap, 1, g->nv_w + c0 * es, k * es, e->h_w, 1);
        if (nv) {
            writes[set] = zt__swap_batch(e->swap);
            for (int a = 0; a < 3; a++)
                zt__swap_add(e->swap, writes[set], 0, g->nv_state + a * A + c0 * 4, k * 4, e->h_state[set][a], 1);
        }
        zt_stream_sync(e->s); /* the unit of weights has gone over */
    }
    for (int i = 0; i < 2; i++)
        if (writes[i] >= 0) zt__swap_wait(e->swap, writes[i]);
}

/* ---- ZeRO: slices of the flat groups across ranks ---- */

/* The communication stream. With overlap_comm every collective of the engine runs on e->cs; these
   order it against the compute stream (without overlap_comm cs is s and they do nothing). */
static zt_stream *zt__cs_after_s(zt_engine *e) { /* cs's later work waits for what s has queued so far */
    if (e->cs != e->s) {
        zt_event_record(e->ev_s, e->s);
        zt_stream_wait(e->cs, e->ev_s);
    }
    return e->cs;
}

static void zt__s_after_cs(zt_engine *e) { /* ... and s's later work for what cs has */
    if (e->cs != e->s) {
        zt_event_record(e->ev_cs, e->cs);
        zt_stream_wait(e->s, e->ev_cs);
    }
}

/* every rank's slice of f32 gradients `full` summed into this rank's own slice, bucket by bucket, in
   the communication type, on cs */
static void zt__reduce_slices(zt_engine *e, zt_tensor full, int64_t shard) {
    if (e->planning || e->world == 1) return;
    zt_stream *cs = e->cs;
    int64_t k = zt__piece(e, e->opt.reduce_bucket_size, shard);
    for (int64_t o = 0; o < shard; o += k) {
        int64_t n = ZT__MIN(k, shard - o);
        if (e->cdtype == ZT_F32) {
            zt__reduce_scatter_piece(cs, e->comm, full, shard, o, n);
            continue;
        }
        for (int r = 0; r < e->world; r++) /* each rank's piece, one after another in the bucket */
            zt_cast(cs, zt_view(e->cbuf, (int64_t)r * n, zt_shape1(n)), zt_view(full, (int64_t)r * shard + o, zt_shape1(n)));
        zt_tensor mine = zt_view(e->cbuf, (int64_t)e->rank * n, zt_shape1(n));
        zt_reduce_scatter(cs, e->comm, mine, zt_view(e->cbuf, 0, zt_shape1((int64_t)e->world * n)), ZT_REDUCE_SUM);
        zt_cast(cs, zt_view(full, (int64_t)e->rank * shard + o, zt_shape1(n)), mine);
    }
}

/* stage 0: f32 gradients summed on every rank, bucket by bucket, in the communication type, on cs */
static void zt__all_reduce_grads(zt_engine *e, zt_tensor grad) {
    zt_stream *cs = e->cs;
    int64_t total = zt_numel(grad), k = zt__bucket(e->opt.reduce_bucket_size, total);
    for (int64_t o = 0; o < total; o += k) {
        zt_tensor x = zt_view(grad, o, zt_shape1(ZT__MIN(k, total - o)));
        if (e->cdtype == ZT_F32) {
            zt_all_reduce(cs, e->comm, x, ZT_REDUCE_SUM);
            continue;
        }
        zt_tensor b = zt_view(e->cbuf, 0, x.shape);
        zt_cast(cs, b, x);
        zt_all_reduce(cs, e->comm, b, ZT_REDUCE_SUM);
        zt_cast(cs, x, b);
    }
}

/* `full` assembled from every rank's slice, on cs; `mine` is this rank's (it may be its place in `full`) */
static void zt__gather_slices(zt_engine *e, zt_tensor full, int64_t shard, zt_tensor mine) {
    if (e->planning) return;
    zt_tensor place = zt_view(full, (int64_t)e->rank * shard, zt_shape1(shard));
    if (e->world == 1) {
        if (place.data != mine.data) zt_copy(e->cs, place, mine);
        return;
    }
    int64_t k = zt__piece(e, e->opt.allgather_bucket_size, shard);
    for (int64_t o = 0; o < shard; o += k) {
        int64_t n = ZT__MIN(k, shard - o);
        zt__all_gather_piece(e->cs, e->comm, full, shard, o, n, zt_view(mine, o, zt_shape1(n)));
    }
}

/* calls f(e, group) once for each group whose parameters block b views: its own, and those it is tied to */
static void zt__each_group(zt_engine *e, int b, void (*f)(zt_engine *, int)) {
    f(e, b);
    for (int k = 0; k < e->block_count[b]; k++) {
        const zt__param *p = &e->params[e->slots[e->block_first[b] + k]];
        if (p->tied >= 0 && e->params[p->tied].block != b) f(e, e->params[p->tied].block);
    }
}

/* which ev_gathered a split group's gathers record */
static int zt__gather_event(const zt_engine *e, int gi) {
    return e->groups[gi].shared_with_others ? 2 : zt__slot(gi, e->prefetch);
}

/* ZeRO-3: a split group's whole weights, gathered on cs unless they are there or on their way (the
   compute that reads them waits with zt__await_group). The buffer's previous group and the slice's last
   update were queued on s before now, so cs waits for s's work so far. */
static void zt__gather_group(zt_engine *e, int gi) {
    zt__group *g = &e->groups[gi];
    if (!g->split_w || g->w_ready) return;
    if (!g->shared_with_others) {
        int k = zt__slot(gi, e->prefetch);
        if (e->shared_w_group[k] >= 0) e->groups[e->shared_w_group[k]].w_ready = 0;
        e->shared_w_group[k] = gi;
    }
    zt_stream *cs = zt__cs_after_s(e);
    zt_tensor mine = g->w;
    if (e->off_param != ZT_OFFLOAD_NONE) { /* the slice comes in from host memory or the swap first */
        mine = zt_view(e->wstage, 0, zt_shape1(g->shard));
        zt__slice_load(e, cs, g, mine);
    }
    zt__gather_slices(e, g->full_w, g->shard, mine);
    if (cs != e->s) zt_event_record(e->ev_gathered[zt__gather_event(e, gi)], cs);
    g->w_ready = 1;
}

/* ... and compute on s reads them only after that gather. An event's latest record is at or after the
   group's own gather: a later gather into the same buffer would have made the group not ready. */
static void zt__await_group(zt_engine *e, int gi) {
    if (e->groups[gi].split_w && e->cs != e->s) zt_stream_wait(e->s, e->ev_gathered[zt__gather_event(e, gi)]);
}

/* after the weights change: every gathered copy is stale */
static void zt__weights_changed(zt_engine *e) {
    for (int b = 0; b < e->n_blocks; b++) e->groups[b].w_ready = 0;
    e->shared_w_group[0] = e->shared_w_group[1] = -1;
}

static float zt__sumsq_host(zt_pool *pool, const float *x, int64_t n); /* zt_sumsq's bits, on host memory */

/* host += device, on stream s: a piece of the host's values at a time comes over to the device stage
   gacc, is added to there (zt_add's f32 bits) and goes back. All of it in stream order, so the host
   queues the rest of the backward meanwhile, as DeepSpeed accumulates offloaded gradients via the GPU. */
static void zt__add_to_host(zt_engine *e, zt_stream *s, zt_tensor host, zt_tensor dev) {
    int64_t n = zt_numel(dev), piece = zt_numel(e->gacc);
    for (int64_t o = 0; o < n; o += piece) {
        zt_shape k = zt_shape1(ZT__MIN(piece, n - o));
        zt_tensor h = zt_view(host, o, k), d = zt_view(e->gacc, 0, k);
        zt_copy(s, d, h);
        zt_add(s, d, d, zt_view(dev, o, k));
        zt_copy(s, h, d);
    }
}

/* ZeRO-2/3: a group's whole gradient, zeroed when a block's backward first writes it, in a buffer whose
   previous group's reduction (on cs) is done */
static void zt__open_grad(zt_engine *e, int gi) {
    zt__group *g = &e->groups[gi];
    if (!g->split_grad || g->grad_open) return;
    if (!g->shared_with_others) {
        int k = zt__slot(gi, e->overlap);
        ZT_ASSERT(e->shared_grad_group[k] < 0); /* the block that opened it closes it */
        e->shared_grad_group[k] = gi;
        if (e->cs != e->s) zt_stream_wait(e->s, e->ev_reduced[k]);
    }
    zt_fill(e->s, g->full_grad, 0.0f);
    g->grad_open = 1;
}

/* ... and, after its own block's backward (the last that writes it), reduced across ranks into this
   rank's slice, which accumulates the step's micro-batches. On cs: with overlap_comm the backward goes
   on meanwhile; the same operations in the same order, so the same bits. */
static void zt__close_grad(zt_engine *e, int gi) {
    zt__group *g = &e->groups[gi];
    if (!g->grad_open) return;
    zt_stream *cs = zt__cs_after_s(e);
    zt__reduce_slices(e, g->full_grad, g->shard);
    zt_tensor mine = zt_view(g->full_grad, g->own, zt_shape1(g->shard));
    if (e->micro == 0) zt_copy(cs, g->grad, mine);
    else if (g->grad.place == ZT_DEVICE) zt_add(cs, g->grad, g->grad, mine);
    else zt__add_to_host(e, cs, g->grad, mine);
    g->grad_open = 0;
    if (!g->shared_with_others) {
        int k = zt__slot(gi, e->overlap);
        if (cs != e->s) zt_event_record(e->ev_reduced[k], cs);
        e->shared_grad_group[k] = -1;
    }
}

/* ZeRO-3: block b's weights gathered, and with prefetch those of block `next` (-1: none) set going
   while b computes */
static void zt__weights_for(zt_engine *e, int b, int next) {
    zt__each_group(e, b, zt__gather_group);
    if (e->prefetch && next >= 0) zt__each_group(e, next, zt__gather_group);
    zt__each_group(e, b, zt__await_group);
}

/* Forward through every block for the current batch; in training, then backward. Rows B and T of
   the batch may be smaller than the planned ones (evaluation and sampling use B = 1). */
static void zt__run(zt_engine *e, int training) {
    int L = e->n_blocks;
    int64_t B = e->batch.B, T = e->batch.T;
    int ckpt = training && e->opt.gradient_checkpointing;
    zt_arena_reset(&e->keep, 0);
    zt_arena_reset(&e->scratch, 0);
    e->aux = 0.0f;
    zt_tensor x = zt__none();
    for (int b = 0; b < L; b++) {
        zt_tensor out = b < L - 1 ? zt_tensor_new(&e->keep, e->act, ZT_DEVICE, zt_shape3(B, T, e->C)) : zt__none();
        size_t mark = zt_arena_mark(&e->keep);
        zt__weights_for(e, b, b + 1 < L ? b + 1 : -1);
        if (training && b == L - 1) zt__each_group(e, b, zt__open_grad); /* the head's forward writes gradients */
        zt_block_ctx c = zt__ctx(e, b, training);
        e->types[b]->forward(&c, out, x);
        /* evaluation keeps nothing for a backward; checkpointing keeps block outputs only (the last
           block, whose forward computed its gradients, is never recomputed) */
        if (!training || (ckpt && b < L - 1)) zt_arena_reset(&e->keep, mark);
        e->outs[b] = out;
        x = out;
    }
    if (!training) return;
    zt_tensor dout = zt__none();
    for (int b = L - 1; b >= 0; b--) {
        zt_tensor inp = b > 0 ? e->outs[b - 1] : zt__none();
        size_t mark = zt_arena_mark(&e->keep);
        zt__weights_for(e, b, b - 1);
        zt__each_group(e, b, zt__open_grad);
        zt_block_ctx c = zt__ctx(e, b, 1);
        if (ckpt && b < L - 1) e->types[b]->forward(&c, e->outs[b], inp); /* the same bits again */
        zt_tensor dinp = zt__none();
        if (b > 0) {
            dinp = zt_view(e->dbuf[b % 2], 0, zt_shape3(B, T, e->C));
            zt_fill(e->s, dinp, 0.0f);
        }
        c = zt__ctx(e, b, 1);
        e->types[b]->backward(&c, dinp, dout, inp);
        zt__close_grad(e, b);
        if (ckpt && b < L - 1) zt_arena_reset(&e->keep, mark);
        dout = dinp;
    }
    zt__s_after_cs(e); /* what follows (the step, the next micro-batch's gradients) sees every reduction */
}

/* the batch tensors seen with B rows of T (they are planned for the largest) */
static zt_batch zt__batch_view(zt_engine *e, int64_t B, int64_t T) {
    zt_batch b = e->full;
    zt_shape s = zt_shape2(B, T);
    ZT_ASSERT(B <= e->B && T <= e->T);
    b.B = B;
    b.T = T;
    b.tokens = zt_view(e->full.tokens, 0, s);
    b.targets = zt_view(e->full.targets, 0, s);
    b.pos = zt_view(e->full.pos, 0, s);
    b.losses = zt_view(e->full.losses, 0, s);
    if (zt__present(e->full.starts)) b.starts = zt_view(e->full.starts, 0, s);
    return b;
}

/* the batch: rows of host tokens into the pinned staging, then to the device */
static int64_t zt__load_batch(zt_engine *e, const int32_t *tokens, const int32_t *targets, const uint8_t *mask,
                              int64_t n_rows, int64_t B, int64_t T) {
    ZT_ASSERT(n_rows >= 0 && n_rows <= B);
    int64_t valid = 0, positions = 1;
    int32_t eot = e->opt.eot_token;
    for (int64_t r = 0; r < B; r++) {
        int32_t doc = 0; /* where the current document began */
        for (int64_t t = 0; t < T; t++) {
            int64_t i = r * T + t;
            int32_t tok = r < n_rows ? tokens[i] : 0, tgt = e->opt.ignore_index;
            if (tok < 0 || tok >= e->vocab)
                zt_fatal("token %d at row %lld, position %lld is outside the vocabulary [0, %lld)", tok,
                         (long long)r, (long long)t, (long long)e->vocab);
            if (r < n_rows) {
                if (targets) tgt = targets[i];
                else if (t + 1 < T) tgt = tokens[i + 1];
                if (mask && !mask[i]) tgt = e->opt.ignore_index;
                if (tgt != e->opt.ignore_index && (tgt < 0 || tgt >= e->vocab))
                    zt_fatal("target %d at row %lld, position %lld is outside the vocabulary [0, %lld)", tgt,
                             (long long)r, (long long)t, (long long)e->vocab);
            }
            if (eot >= 0 && tok == eot) tgt = e->opt.ignore_index; /* a document's end predicts nothing */
            e->h_tokens[i] = tok;
            e->h_targets[i] = tgt;
            e->h_pos[i] = (int32_t)t - doc;
            e->h_starts[i] = doc;
            if (eot >= 0 && tok == eot) doc = (int32_t)t + 1;
            valid += tgt != e->opt.ignore_index;
            if (r < n_rows) positions = ZT__MAX(positions, (int64_t)e->h_pos[i] + 1);
        }
    }
    e->batch = zt__batch_view(e, B, T);
    e->batch.counted = valid;
    e->batch.positions = positions;
    zt_shape s = zt_shape2(B, T);
    zt_copy(e->s, e->batch.tokens, zt_tensor_make(e->h_tokens, ZT_I32, ZT_HOST, s));
    zt_copy(e->s, e->batch.targets, zt_tensor_make(e->h_targets, ZT_I32, ZT_HOST, s));
    zt_copy(e->s, e->batch.pos, zt_tensor_make(e->h_pos, ZT_I32, ZT_HOST, s));
    if (zt__present(e->batch.starts)) zt_copy(e->s, e->batch.starts, zt_tensor_make(e->h_starts, ZT_I32, ZT_HOST, s));
    return valid;
}

static double zt__loss_sum(zt_engine *e, int64_t n) {
    zt_copy(e->s, zt_tensor_make(e->h_losses, ZT_F32, ZT_HOST, zt_shape1(n)), zt_view(e->batch.losses, 0, zt_shape1(n)));
    zt_stream_sync(e->s);
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) sum += e->h_losses[i];
    return sum;
}

/* ---- parameters: initialisation and host access ---- */

/* element i of parameter p's initial value: a function of (seed, p, i) alone */
static float zt__init_value(const zt_engine *e, int p, int64_t i) {
    const zt__param *pr = &e->params[p];
    if (pr->flags & ZT_PARAM_VOCAB && i / pr->shape.d[pr->shape.ndim - 1] >= e->vocab) return 0.0f;
    if (pr->init == ZT_INIT_ZEROS) return 0.0f;
    if (pr->init == ZT_INIT_ONES) return 1.0f;
    uint64_t h = zt__mix(e->opt.seed ^ zt__mix(((uint64_t)p << 40) ^ (uint64_t)i));
    double u1 = ((double)(h >> 11) + 0.5) / 9007199254740992.0, u2 = (double)(zt__mix(h) >> 11) / 9007199254740992.0;
    return (float)(pr->std * sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2));
}

/* elements of parameter p as the host sees it: without the padded vocabulary rows */
static int64_t zt__param_host_numel(const zt_engine *e, const zt__param *p) {
    int64_t n = zt__numel_of(p->shape);
    return p->flags & ZT_PARAM_VOCAB ? n / p->shape.d[0] * e->vocab : n;
}

/* Elements [at, at+k) of a group (k <= ZT__STAGE_FLOATS) from the f32 values in the pinned staging:
   which 0 sets the weights (and the fp32 master), 1 and 2 the Adam moments. Each rank writes the
   part it holds, wherever it lives: the device, host memory or the swap. */
static void zt__group_write(zt_engine *e, zt__group *g, int which, int64_t at, int64_t k) {
    int64_t owned = e->stage > 0 ? g->shard : g->numel;
    int64_t lo = ZT__MAX(at, g->own), hi = ZT__MIN(at + k, g->own + owned);
    if (which > 0 || zt__has_master(g)) {
        zt_tensor dst = which == 1 ? g->m : which == 2 ? g->v : g->master;
        if (hi > lo && g->opt_at == ZT_OFFLOAD_NVME && e->swap)
            zt__swap_array(e, 0, g->nv_state + which * zt__state_bytes(e, g), 4, lo - g->own, hi - lo, e->h_stage + (lo - at), 1);
        else if (hi > lo && zt__present(dst))
            zt_copy(e->s, zt_view(dst, lo - g->own, zt_shape1(hi - lo)),
                    zt_tensor_make(e->h_stage + (lo - at), ZT_F32, ZT_HOST, zt_shape1(hi - lo)));
        zt_stream_sync(e->s); /* the staging is read before it is narrowed below */
    }
    if (which > 0) return;
    int64_t wlo = g->split_w ? lo : at, whi = g->split_w ? hi : at + k; /* the weights: whole or the slice */
    if (whi <= wlo) return;
    void *src = e->h_stage + (wlo - at);
    if (e->wdtype != ZT_F32) { /* narrowed in place, front to back: each write lands behind what is still unread */
        for (int64_t i = 0; i < whi - wlo; i++) zt__store(e->h_stage, e->wdtype, i, e->h_stage[wlo - at + i]);
        src = e->h_stage;
    }
    int64_t w_at = wlo - (g->split_w ? g->own : 0);
    if (g->split_w && e->off_param == ZT_OFFLOAD_NVME) {
        if (e->swap) zt__swap_array(e, 1, g->nv_w, zt_dtype_size(e->wdtype), w_at, whi - wlo, src, 1);
    } else {
        zt_copy(e->s, zt_view(g->w, w_at, zt_shape1(whi - wlo)), zt_tensor_make(src, e->wdtype, ZT_HOST, zt_shape1(whi - wlo)));
    }
    zt_stream_sync(e->s);
}

/* Elements [at, at+k) of a group's f32 state into the pinned staging: which 0 the weights (the master
   when there is one), 1 and 2 the Adam moments, 3 the gradient. State split across ranks is summed
   across them from zeros where a rank holds nothing (exact): a collective, the same on every rank. */
static void zt__group_read(zt_engine *e, const zt__group *g, int which, int64_t at, int64_t k) {
    zt_tensor src = zt__none();
    int64_t src_at, src_n, nv_at = -1; /* nv_at: the swapped array's byte offset, in file nv_file */
    int nv_file = 0;
    zt_dtype dt = ZT_F32;
    if (which == 3) {
        src = g->grad, src_at = g->split_grad ? g->own : 0, src_n = g->split_grad ? g->shard : g->numel;
    } else if (which == 0 && !zt__has_master(g)) {
        src = g->w, dt = e->wdtype, src_at = g->split_w ? g->own : 0, src_n = g->split_w ? g->shard : g->numel;
        if (g->split_w && e->off_param == ZT_OFFLOAD_NVME) nv_file = 1, nv_at = g->nv_w;
    } else {
        src = which == 1 ? g->m : which == 2 ? g->v : g->master, src_at = g->own, src_n = e->stage > 0 ? g->shard : g->numel;
        if (g->opt_at == ZT_OFFLOAD_NVME) nv_at = g->nv_state + which * zt__state_bytes(e, g);
    }
    int64_t lo = ZT__MAX(at, src_at), hi = ZT__MIN(at + k, src_at + src_n);
    int gather = src_n != g->numel && e->world > 1; /* the same decision on every rank */
    if (hi > lo) { /* this rank's part, raw, then widened in place from the end */
        if (nv_at >= 0) {
            if (e->swap) zt__swap_array(e, nv_file, nv_at, zt_dtype_size(dt), lo - src_at, hi - lo, e->h_stage, 0);
        } else {
            zt_copy(e->s, zt_tensor_make(e->h_stage, dt, ZT_HOST, zt_shape1(hi - lo)), zt_view(src, lo - src_at, zt_shape1(hi - lo)));
            zt_stream_sync(e->s);
        }
        if (dt != ZT_F32)
            for (int64_t i = hi - lo - 1; i >= 0; i--) e->h_stage[i] = (float)zt__load(e->h_stage, dt, i);
    }
    if (!gather) return; /* the whole range was here */
    zt_tensor d = zt_view(e->dstage, 0, zt_shape1(k));
    zt_fill(e->s, d, 0.0f);
    if (hi > lo) zt_copy(e->s, zt_view(d, lo - at, zt_shape1(hi - lo)), zt_tensor_make(e->h_stage, ZT_F32, ZT_HOST, zt_shape1(hi - lo)));
    zt_all_reduce(zt__cs_after_s(e), e->comm, d, ZT_REDUCE_SUM);
    zt__s_after_cs(e);
    zt_copy(e->s, zt_tensor_make(e->h_stage, ZT_F32, ZT_HOST, zt_shape1(k)), d);
    zt_stream_sync(e->s);
}

/* parameter p from host f32 values (NULL: its initial values), through the pinned staging; padded
   vocabulary rows become zero */
static void zt__param_write(zt_engine *e, int p, const float *host) {
    const zt__param *pr = &e->params[p];
    zt__group *g = &e->groups[pr->block];
    int64_t n = zt__numel_of(pr->shape), nh = zt__param_host_numel(e, pr);
    for (int64_t i0 = 0; i0 < n; i0 += ZT__STAGE_FLOATS) {
        int64_t k = ZT__MIN(ZT__STAGE_FLOATS, n - i0);
        for (int64_t i = 0; i < k; i++)
            e->h_stage[i] = !host ? zt__init_value(e, p, i0 + i) : i0 + i < nh ? host[i0 + i] : 0.0f;
        zt__group_write(e, g, 0, pr->offset + i0, k);
    }
    zt__weights_changed(e);
}

static int zt__find_param(const zt_engine *e, const char *name) {
    for (int p = 0; p < e->n_params; p++)
        if (e->params[p].name && e->params[p].tied < 0 && strcmp(e->params[p].name, name) == 0) return p;
    return -1;
}

ZT_API int zt_param_count(const zt_engine *e) { return e->n_params; }
ZT_API const char *zt_param_name(const zt_engine *e, int i, zt_shape *shape) {
    if (i < 0 || i >= e->n_params || e->params[i].tied >= 0) return NULL;
    if (shape) {
        *shape = e->params[i].shape;
        if (e->params[i].flags & ZT_PARAM_VOCAB) shape->d[0] = e->vocab;
    }
    return e->params[i].name;
}

static zt_result zt__param_lookup(zt_engine *e, const char *name, int64_t n, int *out) {
    int p = zt__find_param(e, name);
    if (p < 0) return zt_fail(ZT_ERROR_INVALID, "the model has no parameter named \"%s\"", name);
    int64_t want = zt__param_host_numel(e, &e->params[p]);
    if (n != want)
        return zt_fail(ZT_ERROR_INVALID, "parameter \"%s\" has %lld elements, %lld were given", name, (long long)want,
                       (long long)n);
    *out = p;
    return ZT_OK;
}

ZT_API zt_result zt_param_set(zt_engine *e, const char *name, const float *host, int64_t n) {
    int p;
    zt_result r = zt__param_lookup(e, name, n, &p);
    if (r == ZT_OK) zt__param_write(e, p, host);
    return r;
}

/* accumulated gradients hold sum(loss_scale / (B*T) * d token loss); this brings them to the mean */
static double zt__to_mean(const zt_engine *e) {
    return e->tokens_in_step ? (double)(e->B * e->T) / ((double)e->scaler.scale * (double)e->tokens_in_step) : 0.0;
}

ZT_API zt_result zt_param_get(zt_engine *e, const char *name, float *host, int64_t n, int grad) {
    int p;
    zt_result r = zt__param_lookup(e, name, n, &p);
    if (r != ZT_OK) return r;
    const zt__param *pr = &e->params[p];
    const zt__group *g = &e->groups[pr->block];
    if (grad && (!g->trainable || pr->flags & ZT_PARAM_FROZEN))
        return zt_fail(ZT_ERROR_INVALID, "parameter \"%s\" is frozen: it has no gradient", name);
    double to_mean = zt__to_mean(e);
    for (int64_t i0 = 0; i0 < n; i0 += ZT__STAGE_FLOATS) {
        int64_t k = ZT__MIN(ZT__STAGE_FLOATS, n - i0);
        zt__group_read(e, g, grad ? 3 : 0, pr->offset + i0, k);
        if (grad) /* the accumulated sums, as the gradient of the mean loss over the tokens so far */
            for (int64_t i = 0; i < k; i++) e->h_stage[i] = (float)(e->h_stage[i] * to_mean);
        memcpy(host + i0, e->h_stage, (size_t)k * sizeof(float));
    }
    return ZT_OK;
}

/* ---- init ---- */

/* Where each trainable group's optimizer state lives. offload_optimizer moves all of it; with
   offload_ratio < 1 (ZeRO-3's partial offload) the groups in order, while the elements offloaded stay
   within that share of every trainable group's, and the rest stay on the device. DeepSpeed counts its
   sub-groups, which are of one size; zt's groups are blocks of different sizes, so it counts elements. */
static void zt__place_optimizer(zt_engine *e) {
    int64_t total = 0, taken = 0;
    for (int b = 0; b < e->n_blocks; b++) total += e->groups[b].trainable ? e->groups[b].numel : 0;
    int open = e->off_opt != ZT_OFFLOAD_NONE;
    for (int b = 0; b < e->n_blocks; b++) {
        zt__group *g = &e->groups[b];
        g->opt_at = ZT_OFFLOAD_NONE;
        if (!g->trainable || !open) continue;
        taken += g->numel;
        if ((double)taken <= e->opt.offload_ratio * (double)total) g->opt_at = e->off_opt;
        else open = 0;
    }
}

/* declare every block's parameters and lay the groups out */
static zt_result zt__declare(zt_engine *e) {
    e->block_first = ZT_PUSH(&e->meta, int, e->n_blocks);
    e->block_count = ZT_PUSH(&e->meta, int, e->n_blocks);
    e->block_cap = ZT_PUSH(&e->meta, int, e->n_blocks);
    int cap_slots = 0;
    for (int b = 0; b < e->n_blocks; b++) { /* the first pass counts: each block's slots, back to back */
        zt_block_def def = {e, b, 1, 0, 0};
        e->types[b]->declare(&def, e->configs[b]);
        e->block_first[b] = cap_slots, e->block_cap[b] = def.count;
        cap_slots += def.count;
        if (b == e->n_blocks - 1 && (size_t)cap_slots != e->counted_slots)
            return zt_fail(ZT_ERROR_INVALID, "the model's blocks declared %d parameters, and %zu when they were counted "
                           "first: each block's declare must declare the same ones each time", cap_slots, e->counted_slots);
    }
    e->cap_params = cap_slots;
    e->params = ZT_PUSH(&e->meta, zt__param, ZT__MAX(1, cap_slots));
    e->slots = ZT_PUSH(&e->meta, int, ZT__MAX(1, cap_slots));
    e->groups = ZT_PUSH(&e->meta, zt__group, e->n_blocks);
    e->bparam = ZT_PUSH(&e->meta, zt_tensor *, e->n_blocks);
    e->bgrad = ZT_PUSH(&e->meta, zt_tensor *, e->n_blocks);
    e->saved = ZT_PUSH(&e->meta, void *, e->n_blocks);
    e->outs = ZT_PUSH(&e->meta, zt_tensor, e->n_blocks);
    for (int b = 0; b < e->n_blocks; b++) {
        e->block_count[b] = 0;
        zt_block_def def = {e, b, 0, 0, 0};
        int before = e->n_params;
        e->types[b]->declare(&def, e->configs[b]);
        if (def.count > 0 || e->block_count[b] != e->block_cap[b]) /* def.count: those past what was counted */
            return zt_fail(ZT_ERROR_INVALID, "block %d (%s) declared %d parameters, and %d when they were counted: its "
                           "declare must declare the same ones each time", b, e->types[b]->name,
                           e->block_count[b] + def.count, e->block_cap[b]);
        zt__group *g = &e->groups[b];
        g->first = before;
        g->n = e->n_params - before;
        g->numel = 0;
        g->trainable = 0;
        for (int k = 0; k < e->block_count[b]; k++) {
            zt__param *p = &e->params[e->slots[e->block_first[b] + k]];
            if (p->tied >= 0) continue;
            int64_t n = zt__numel_of(p->shape);
            p->offset = p->flags & ZT_PARAM_JOIN ? g->numel : ZT__CDIV(g->numel, ZT__PARAM_ALIGN) * ZT__PARAM_ALIGN;
            g->numel = p->offset + n;
            if (n > 0 && !(p->flags & ZT_PARAM_FROZEN)) g->trainable = 1;
        }
        /* world x shard elements, the shard a multiple of the alignment: any world size takes any model */
        int64_t raw = g->numel;
        g->shard = ZT__CDIV(ZT__CDIV(raw, ZT__PARAM_ALIGN), e->world) * ZT__PARAM_ALIGN;
        g->numel = g->shard * e->world;
        g->own = e->stage > 0 ? e->rank * g->shard : 0;
        g->split_grad = e->stage >= 2 && g->trainable;
        int64_t persist = e->opt.persistence_threshold >= 0 ? e->opt.persistence_threshold : 100000;
        g->split_w = e->stage == 3 && raw > 0 && raw >= persist;
        g->shared_with_others = 0;
        e->bparam[b] = ZT_PUSH(&e->meta, zt_tensor, ZT__MAX(1, e->block_count[b]));
        e->bgrad[b] = ZT_PUSH(&e->meta, zt_tensor, ZT__MAX(1, e->block_count[b]));
        e->saved[b] = zt_arena_push(&e->meta, ZT__MAX(1, e->types[b]->saved_bytes), 64);
    }
    for (int b = 0; b < e->n_blocks; b++) /* tied uses: the owner's group is shared (only earlier blocks are tied to) */
        for (int k = 0; k < e->block_count[b]; k++) {
            const zt__param *p = &e->params[e->slots[e->block_first[b] + k]];
            if (p->tied >= 0 && e->params[p->tied].block != b) e->groups[e->params[p->tied].block].shared_with_others = 1;
        }
    zt__place_optimizer(e);
    return ZT_OK;
}

/* run a training step, an evaluation and a sampling pass with the backend measuring, to learn the
   high-water marks of the activation and scratch arenas */
static void zt__measure_activations(zt_engine *e) {
    zt_backend_set_measure(e->be, 1);
    zt_arena dev, pinned;
    zt_arena_init_measure(&dev, "device (measuring)");
    zt_arena_init_measure(&pinned, "pinned (measuring)");
    e->keep_bytes = e->scratch_bytes = 0;
    zt__layout(e, &dev, &pinned); /* every tensor at a fake address: nothing runs */
    size_t keep = 0, scratch = 0;
    for (int pass = 0; pass < 3; pass++) {
        int training = pass == 0;
        int64_t B = pass == 2 ? 1 : e->B;
        e->batch = zt__batch_view(e, B, e->T);
        e->batch.logits_at = pass == 2 ? e->T - 1 : -1;
        zt__run(e, training);
        keep = ZT__MAX(keep, zt_arena_peak(&e->keep));
        scratch = ZT__MAX(scratch, zt_arena_peak(&e->scratch));
    }
    e->keep_bytes = keep;
    e->scratch_bytes = scratch;
    zt_backend_set_measure(e->be, 0);
}

/* the Transformers schedules' arguments, refused as transformers refuses them */
static zt_result zt__check_schedule(const zt_options *o) {
    const char *name = zt_schedule_name(o->schedule);
    if ((int)o->schedule < 0 || o->schedule > ZT_SCHED_GREEDY)
        return zt_fail(ZT_ERROR_INVALID, "zt_options.schedule %d is not a zt_schedule", (int)o->schedule);
    if (!(o->warmup_ratio >= 0 && o->warmup_ratio <= 1))
        return zt_fail(ZT_ERROR_INVALID, "warmup_ratio %g: the share of the steps that warm up is between 0 and 1", o->warmup_ratio);
    int min_lr = o->schedule == ZT_SCHED_COSINE_MIN_LR || o->schedule == ZT_SCHED_COSINE_WARMUP_MIN_LR;
    if (min_lr && o->min_lr >= 0 && o->min_lr_rate >= 0)
        return zt_fail(ZT_ERROR_INVALID, "--lr_scheduler_kwargs: %s takes one of min_lr and min_lr_rate, not both", name);
    if (min_lr && o->min_lr < 0 && o->min_lr_rate < 0)
        return zt_fail(ZT_ERROR_INVALID, "%s needs min_lr or min_lr_rate in --lr_scheduler_kwargs, e.g. '{\"min_lr_rate\": 0.1}'", name);
    if (o->schedule == ZT_SCHED_WSD && o->decay_steps < 0)
        return zt_fail(ZT_ERROR_INVALID, "warmup_stable_decay needs num_decay_steps in --lr_scheduler_kwargs, e.g. "
                       "'{\"num_decay_steps\": 100}'");
    if (o->schedule == ZT_SCHED_POLYNOMIAL && !(o->lr > o->lr_end))
        return zt_fail(ZT_ERROR_INVALID, "polynomial: lr_end (%g) must be smaller than initial lr (%g)", o->lr_end, (double)o->lr);
    if (zt__metric_schedule(o->schedule)) {
        zt__plateau_cfg c = zt__plateau_settings(o);
        if (!(c.factor > 0 && c.factor < 1))
            return zt_fail(ZT_ERROR_INVALID, "%s: factor should be < 1.0 (and above 0), found %g", name, c.factor);
        if (o->plateau_patience < 0 || o->plateau_cooldown < 0 || o->greedy_warmup < 0 || o->greedy_reset_start < 0 ||
            o->greedy_window < 1 || o->greedy_window > ZT_PLATEAU_WINDOW || !(o->plateau_eps >= 0))
            return zt_fail(ZT_ERROR_INVALID, "%s: patience, cooldown, warmup and reset_start are 0 or more, window_size "
                           "1 to %d and eps 0 or more", name, ZT_PLATEAU_WINDOW);
    }
    return ZT_OK;
}

static zt_result zt__check_options(zt_engine *e) {
    const zt_options *o = &e->opt;
    if (o->micro_batch < 1) return zt_fail(ZT_ERROR_INVALID, "--per_device_train_batch_size must be at least 1");
    if (o->grad_accum < 1) return zt_fail(ZT_ERROR_INVALID, "--gradient_accumulation_steps must be at least 1");
    if (e->T < 2 || e->T > e->max_seq)
        return zt_fail(ZT_ERROR_INVALID, "--seq_len %lld must be in [2, %lld] (the model's context)", (long long)e->T,
                       (long long)e->max_seq);
    if (o->micro_batch > (1 << 20) || e->T * o->micro_batch > ((int64_t)1 << 28))
        return zt_fail(ZT_ERROR_INVALID, "--per_device_train_batch_size %lld x --seq_len %lld tokens is more than zt "
                       "takes in one micro-batch (2^28)", (long long)o->micro_batch, (long long)e->T);
    if (o->precision == ZT_PRECISION_FP16 && o->static_loss_scale <= 0 && (o->loss_scale_window <= 0 || o->min_loss_scale <= 0))
        return zt_fail(ZT_ERROR_INVALID, "fp16 dynamic loss scaling needs loss_scale_window > 0 and min_loss_scale > 0");
    if (o->comm_dtype >= 0 && o->comm_dtype != ZT_F32 && o->comm_dtype != ZT_BF16 && o->comm_dtype != ZT_F16)
        return zt_fail(ZT_ERROR_INVALID, "communication_data_type must be fp32, fp16 or bf16");
    if (o->zero_stage < 0 || o->zero_stage > 3)
        return zt_fail(ZT_ERROR_INVALID, "zero_optimization.stage %d: ZeRO has stages 0, 1, 2 and 3", o->zero_stage);
    if ((o->offload_optimizer != ZT_OFFLOAD_NONE && o->zero_stage == 0) ||
        (o->offload_optimizer == ZT_OFFLOAD_NVME && o->zero_stage < 3) || (o->offload_param != ZT_OFFLOAD_NONE && o->zero_stage < 3))
        return zt_fail(ZT_ERROR_INVALID, "offload needs ZeRO: the optimizer to host memory at stages 1-3, to NVMe and the "
                       "parameters at stage 3 (the stage is %d)", o->zero_stage);
    if (!(o->label_smoothing >= 0.0f && o->label_smoothing <= 1.0f))
        return zt_fail(ZT_ERROR_INVALID, "--label_smoothing_factor %g: the share of the uniform distribution is between 0 "
                       "and 1", (double)o->label_smoothing);
    if (!(o->neftune_alpha >= 0.0f && isfinite(o->neftune_alpha)))
        return zt_fail(ZT_ERROR_INVALID, "--neftune_noise_alpha %g: NEFTune's alpha is a finite number >= 0 (5 in its "
                       "paper)", (double)o->neftune_alpha);
    zt_result r = zt__check_schedule(o);
    if (r != ZT_OK) return r;
    if (!(o->offload_ratio >= 0 && o->offload_ratio <= 1))
        return zt_fail(ZT_ERROR_INVALID, "offload_optimizer.ratio %g: the share of the optimizer state to offload is "
                       "between 0 and 1", o->offload_ratio);
    if (o->offload_ratio < 1 && o->offload_optimizer != ZT_OFFLOAD_NONE && o->zero_stage < 3)
        return zt_fail(ZT_ERROR_INVALID, "offload_optimizer.ratio %g: a partial offload needs ZeRO stage 3, as in "
                       "DeepSpeed (the stage is %d)", o->offload_ratio, o->zero_stage);
    if ((o->offload_optimizer == ZT_OFFLOAD_NVME && !o->offload_optimizer_path) ||
        (o->offload_param == ZT_OFFLOAD_NVME && !o->offload_param_path))
        return zt_fail(ZT_ERROR_INVALID, "NVMe offload needs a directory: zero_optimization.offload_*.nvme_path, "
                       "--nvme_path or ZT_NVME_PATH");
    if (o->lr < 0 || o->eps <= 0 || o->beta1 < 0 || o->beta1 >= 1 || o->beta2 < 0 || o->beta2 >= 1)
        return zt_fail(ZT_ERROR_INVALID, "optimizer settings out of range: learning rate %g, betas (%g, %g), eps %g",
                       (double)o->lr, (double)o->beta1, (double)o->beta2, (double)o->eps);
    return ZT_OK;
}

static zt_result zt__out_of_memory(zt_engine *e, const zt_model_spec *model, size_t need, size_t given);

/* the host optimizer's threads and the swap files, once the layout is real */
static zt_result zt__offload_start(zt_engine *e) {
    if (e->off_opt != ZT_OFFLOAD_NONE && !(e->hpool = zt_pool_create(e->hthreads)))
        return zt_fail(ZT_ERROR_MEMORY, "cannot start the host optimizer's threads");
    if (!e->nvme[0] && !e->nvme[1]) return ZT_OK;
    for (int k = 0; k < 2; k++)
        if (e->nvme_sums[k]) memset(e->nvme_sums[k], 0, (size_t)(e->nvme[k] / e->block) * 8);
    static int at_exit;
    if (!at_exit && atexit(zt__swap_cleanup_all) == 0) at_exit = 1;
    zt__at_fatal = zt__swap_cleanup_all;
    e->swap = (zt__swap *)calloc(1, sizeof *e->swap); /* setup time, freed by zt_shutdown */
    if (!e->swap) return zt_fail(ZT_ERROR_MEMORY, "out of host memory for the swap");
    const char *paths[2] = {e->opt.offload_optimizer_path, e->opt.offload_param_path};
    const char *keys[2] = {"zero_optimization.offload_optimizer.nvme_path", "zero_optimization.offload_param.nvme_path"};
    if (!paths[0]) paths[0] = paths[1];
    if (!paths[1]) paths[1] = paths[0];
    return zt__swap_open(e->swap, paths, keys, e->nvme, e->block, (int)(e->opt.aio_threads > 0 ? e->opt.aio_threads : 1),
                         e->nvme_sums);
}

/* ZeRO-3: stage3_max_live_parameters bounds what DeepSpeed keeps gathered; zt gathers a whole block at
   a time (sub-groups are not built), so a block larger than the limit exceeds it: said once */
static void zt__check_live(const zt_engine *e) {
    if (e->stage < 3 || e->planning) return;
    int64_t limit = e->opt.max_live_parameters > 0 ? e->opt.max_live_parameters : 1000000000, shared = 0, live = 0;
    for (int b = 0; b < e->n_blocks; b++) {
        const zt__group *g = &e->groups[b];
        if (g->split_w && g->shared_with_others) live += g->numel;
        else if (g->split_w) shared = ZT__MAX(shared, g->numel);
    }
    if (e->prefetch) shared *= 2; /* the block that computes and the next one */
    if (live + shared > limit && e->rank == 0)
        zt_log(ZT_LOG_WARN, "zero_optimization.stage3_max_live_parameters is %lld, but this model keeps up to %lld "
               "gathered elements resident (a whole block, two while the next is prefetched, plus tied embeddings): "
               "zt gathers whole blocks and does not split them into sub-groups yet, so the limit is exceeded by "
               "that much", (long long)limit, (long long)(live + shared));
}

/* settings that do less than they seem to, said once: warmup under "constant", and which blocks' optimizer
   state a partial offload moved */
static void zt__say_settings(const zt_engine *e) {
    if (e->planning || e->rank != 0) return;
    if (e->opt.schedule == ZT_SCHED_FLAT && zt__warmup_steps(&e->opt) > 0)
        zt_log(ZT_LOG_WARN, "lr_scheduler_type constant has no warmup (as in transformers): the %lld warmup steps are "
               "not taken; constant_with_warmup takes them", (long long)zt__warmup_steps(&e->opt));
    if (zt__metric_schedule(e->opt.schedule) && zt__warmup_steps(&e->opt) > 0)
        zt_log(ZT_LOG_WARN, "lr_scheduler_type %s has no warmup (transformers builds it without one): the %lld warmup "
               "steps are not taken", zt_schedule_name(e->opt.schedule), (long long)zt__warmup_steps(&e->opt));
    if (e->off_opt == ZT_OFFLOAD_NONE || e->opt.offload_ratio >= 1) return;
    int64_t total = 0, away = 0;
    int n = 0, trainable = 0;
    for (int b = 0; b < e->n_blocks; b++) {
        const zt__group *g = &e->groups[b];
        total += g->trainable ? g->numel : 0, trainable += g->trainable;
        if (g->opt_at != ZT_OFFLOAD_NONE) away += g->numel, n++;
    }
    if (n == 0)
        zt_log(ZT_LOG_INFO, "offload_optimizer.ratio %g: the first block's optimizer state is more than that share "
               "of the whole, so all of it stays on the device", e->opt.offload_ratio);
    else
        zt_log(ZT_LOG_INFO, "offload_optimizer.ratio %g: the optimizer state of the first %d of %d trainable blocks "
               "(%.1f%% of its elements) on %s, the rest on the device", e->opt.offload_ratio, n, trainable,
               100.0 * (double)away / (double)total, e->off_opt == ZT_OFFLOAD_NVME ? "NVMe" : "the host");
}

/* block b of the model: a built-in one's from its config, or the caller's */
static const zt_block_type *zt__block_at(zt_engine *e, const zt_model_spec *model, int n_blocks, int b,
                                         const void **config) {
    if (!e->has_cfg) {
        *config = model->block_configs ? model->block_configs[b] : NULL;
        return model->blocks[b];
    }
    int gpt2 = strcmp(e->cfg.model_type, "gpt2") == 0;
    *config = &e->cfg;
    return b == 0 ? (gpt2 ? zt_gpt2_embedding_block() : zt_llama_embedding_block())
         : b == n_blocks - 1 ? (gpt2 ? zt_gpt2_head_block() : zt_llama_head_block())
         : (gpt2 ? zt_gpt2_block() : zt_llama_block());
}

static zt_result zt__init(zt_engine *e, const zt_model_spec *model) {
    zt_result r = ZT_OK;
    /* the model: a built-in one from its config, or the caller's blocks */
    int builtin = model->config_path || model->config;
    int n_blocks = builtin ? 0 : model->n_blocks;
    if (model->config_path) r = zt_model_config_read(&e->cfg, model->config_path);
    else if (model->config) e->cfg = *model->config;
    if (r != ZT_OK) return r;
    if (builtin && e->opt.label_smoothing > 0 && e->cfg.router_aux_coef > 0) {
        /* the Trainer smooths from the logits alone, with the labels kept from the model: it adds no balance loss */
        if (e->opt.comm == NULL || zt_comm_rank(e->opt.comm) == 0)
            zt_log(ZT_LOG_WARN, "label_smoothing_factor with output_router_logits: the routers' balance loss is left "
                   "out, as the Trainer leaves it out (its LabelSmoother reads the logits alone)");
        e->cfg.router_aux_coef = 0.0f;
    }
    if (!builtin && e->opt.neftune_alpha > 0 && !e->planning && (e->opt.comm == NULL || zt_comm_rank(e->opt.comm) == 0))
        zt_log(ZT_LOG_INFO, "neftune_noise_alpha: the built-in models' embedding adds the noise; a block of one's own "
               "adds it where it reads zt_batch.neftune_alpha (zt_add_uniform_noise)");
    if (builtin) {
        e->has_cfg = 1;
        n_blocks = (int)e->cfg.n_layer + 2;
        e->C = e->cfg.hidden;
        e->vocab = e->cfg.vocab;
        e->max_seq = e->cfg.max_positions;
    } else {
        if (n_blocks < 2 || !model->blocks) {
            return zt_fail(ZT_ERROR_INVALID, "a model needs a config or at least two blocks (tokens in, loss out)");
        }
        e->C = model->hidden;
        e->vocab = model->vocab;
        e->max_seq = model->max_seq;
    }
    /* metadata: one host allocation, sized from the declarations (a first pass that only counts) */
    size_t name_bytes = 0, n_slots = 0;
    for (int b = 0; b < n_blocks; b++) {
        const void *config;
        const zt_block_type *type = zt__block_at(e, model, n_blocks, b, &config);
        zt_block_def def = {e, b, 1, 0, 0};
        type->declare(&def, config);
        n_slots += (size_t)def.count, name_bytes += def.name_bytes;
    }
    e->counted_slots = n_slots;
    size_t shared = builtin ? zt__tally_bytes(&e->cfg) : model->shared_bytes;
    size_t meta_bytes = (size_t)(n_blocks + 8) * 24 * 1024 + (1 << 20) + n_slots * 1024 + 8 * name_bytes + shared;
    if (posix_memalign(&e->meta_mem, 4096, meta_bytes) != 0) e->meta_mem = NULL;
    if (!e->meta_mem) return zt_fail(ZT_ERROR_MEMORY, "out of host memory for the engine's metadata");
    zt_arena_init(&e->meta, "metadata", e->meta_mem, meta_bytes);
    e->n_blocks = n_blocks;
    e->model_path = model->config_path ? zt_arena_strdup(&e->meta, model->config_path) : NULL;
    e->types = ZT_PUSH(&e->meta, const zt_block_type *, n_blocks);
    e->configs = ZT_PUSH(&e->meta, const void *, n_blocks);
    for (int b = 0; b < n_blocks; b++) e->types[b] = zt__block_at(e, model, n_blocks, b, &e->configs[b]);
    if (shared > 0) e->shared = memset(zt_arena_push(&e->meta, shared, 64), 0, shared);
    e->B = e->opt.micro_batch;
    e->T = e->opt.seq_len > 0 ? e->opt.seq_len : ZT__MIN(1024, e->max_seq);
    e->opt.seq_len = e->T;
    e->wdtype = e->act = e->opt.precision == ZT_PRECISION_BF16 ? ZT_BF16
                       : e->opt.precision == ZT_PRECISION_FP16 ? ZT_F16 : ZT_F32;
    if (!e->planning) { /* a plan sets its world itself */
        e->comm = e->opt.comm;
        e->world = e->comm ? zt_comm_world(e->comm) : 1;
        e->rank = e->comm ? zt_comm_rank(e->comm) : 0;
    }
    e->stage = e->opt.zero_stage;
    e->off_opt = e->opt.offload_optimizer;
    e->off_param = e->opt.offload_param;
    /* one rank has nothing to reduce, but an offloaded gradient or weight slice to copy */
    int offloading = e->off_opt != ZT_OFFLOAD_NONE || e->off_param != ZT_OFFLOAD_NONE;
    e->overlap = e->opt.overlap_comm && e->stage >= 2 && (e->world > 1 || offloading);
    e->prefetch = e->overlap && e->stage == 3 && e->opt.prefetch_bucket_size > 0;
    e->cdtype = e->opt.comm_dtype >= 0 ? (zt_dtype)e->opt.comm_dtype : e->wdtype;
    e->block = e->opt.aio_block_size > 0 ? ZT__CDIV(e->opt.aio_block_size, 4096) * 4096 : 1 << 20;
    e->hthreads = e->off_opt != ZT_OFFLOAD_NONE ? (e->opt.threads > 0 ? e->opt.threads : zt_cpu_count()) : 0;
    if ((r = zt__check_options(e)) != ZT_OK) return r;
    if ((r = zt__declare(e)) != ZT_OK) return r;
    zt__check_live(e);
    zt__say_settings(e);
    e->ckpt_text_bytes = 8192 + 26 * ZT_PLATEAU_WINDOW; /* zt_state.json too: its lr_plateau values */
    for (int p = 0; p < e->n_params; p++)
        if (e->params[p].name) e->ckpt_text_bytes += 3 * (strlen(e->params[p].name) + 128);
    e->ckpt_text = ZT_PUSH(&e->meta, char, e->ckpt_text_bytes);
    e->ckpt_items = (struct zt__ckpt_item *)zt_arena_push(&e->meta, (size_t)(3 * e->n_params + 1) * 2 * sizeof(int), 16);
    /* the backend, measured, then given exactly what the layout needs */
    zt_backend_desc desc = zt_backend_desc_default();
    desc.device_bytes = desc.pinned_bytes = 0;
    desc.threads = e->opt.threads;
    desc.strict = e->opt.strict;
    desc.device_index = -1; /* CUDA: the GPU of this rank's LOCAL_RANK, as torchrun places ranks */
    /* a plan runs nothing: the CPU backend measures it for any backend, without a GPU */
    if ((r = zt_backend_create(&e->be, e->planning ? "cpu" : e->opt.backend, &desc)) != ZT_OK) return r;
    e->s = e->cs = zt_backend_stream(e->be);
    if (e->overlap) {
        e->cs = zt_stream_create(e->be);
        e->ev_s = zt_event_create(e->be), e->ev_cs = zt_event_create(e->be);
        for (int k = 0; k < 3; k++) e->ev_gathered[k] = zt_event_create(e->be);
        for (int k = 0; k < 2; k++) e->ev_reduced[k] = zt_event_create(e->be);
    }
    for (int k = 0; k < 2 && e->off_param == ZT_OFFLOAD_NVME; k++) e->ev_slice[k] = zt_event_create(e->be);
    zt__measure_activations(e);
    {
        zt_arena dev, pinned;
        zt_arena_init_measure(&dev, "device (measuring)");
        zt_arena_init_measure(&pinned, "pinned (measuring)");
        zt__layout(e, &dev, &pinned);
        size_t need = zt_arena_peak(&dev), pinned_need = zt_arena_peak(&pinned);
        e->plan_device = need;
        e->plan_pinned = pinned_need;
        if (e->planning) return ZT_OK;
        size_t dev_bytes = e->opt.device_bytes ? e->opt.device_bytes : need;
        if (dev_bytes < need) return zt__out_of_memory(e, model, need, dev_bytes);
        if ((r = zt_backend_reserve(e->be, dev_bytes, pinned_need)) != ZT_OK) return r;
        zt__layout(e, zt_backend_device_arena(e->be), zt_backend_pinned_arena(e->be));
    }
    if ((r = zt__offload_start(e)) != ZT_OK) return r;
    if (e->comm && (r = zt_comm_share_device(e->comm, e->be)) != ZT_OK) return r;
    /* initial values, zeroed gradients and optimizer state */
    for (int p = 0; p < e->n_params; p++)
        if (e->params[p].tied < 0 && zt__numel_of(e->params[p].shape) > 0) zt__param_write(e, p, NULL);
    for (int b = 0; b < e->n_blocks; b++) {
        zt__group *g = &e->groups[b];
        if (!g->trainable) continue;
        if (g->grad.place == ZT_HOST) memset(g->grad.data, 0, zt_nbytes(g->grad));
        else zt_fill(e->s, g->grad, 0.0f);
        for (int a = 0; a < 2; a++) { /* swapped moments read as zeros until first written */
            zt_tensor t = a ? g->v : g->m;
            if (zt__present(t) && t.place == ZT_HOST) memset(t.data, 0, zt_nbytes(t));
            else if (zt__present(t)) zt_fill(e->s, t, 0.0f);
        }
    }
    zt_stream_sync(e->s);
    e->scaler = zt_loss_scaler_init(&e->opt);
    e->plateau = zt_plateau_init(&e->opt);
    if (e->opt.comm) zt_comm_set_timeout(e->opt.comm, (double)e->opt.ddp_timeout);
    return ZT_OK;
}

ZT_API zt_result zt_init_options(zt_engine **out, const zt_model_spec *model, const zt_options *o) {
    *out = NULL;
    zt_engine *e = (zt_engine *)calloc(1, sizeof *e); /* setup time: freed by zt_shutdown */
    if (!e) return zt_fail(ZT_ERROR_MEMORY, "out of host memory creating the engine");
    e->opt = *o;
    zt_result r = zt__init(e, model);
    if (r != ZT_OK) {
        zt_shutdown(e);
        return r;
    }
    *out = e;
    return ZT_OK;
}

ZT_API zt_result zt_init(zt_engine **out, const zt_model_spec *model, const char *ds_config_path, int argc,
                         char **argv) {
    *out = NULL;
    zt_options o = zt_options_default();
    zt_result r = zt_options_parse_args(&o, argc, argv);
    if (r != ZT_OK) return r;
    if (ds_config_path) { /* the config needs the model's width for its "auto" bucket sizes */
        zt_model_config mc;
        int64_t hidden = model->hidden;
        if (model->config) hidden = model->config->hidden;
        else if (model->config_path && (r = zt_model_config_read(&mc, model->config_path)) != ZT_OK) return r;
        else if (model->config_path) hidden = mc.hidden;
        zt_ds_config ds;
        int world = o.comm ? zt_comm_world(o.comm) : 1;
        if ((r = zt_ds_config_read(&ds, &o, ds_config_path, world, hidden)) != ZT_OK) return r;
    }
    return zt_init_options(out, model, &o);
}

ZT_API void zt_shutdown(zt_engine *e) {
    if (!e) return;
    if (e->be) zt_backend_sync(e->be); /* every collective queued has run before the ranks part */
    if (e->comm && e->be) zt_comm_unshare_device(e->comm, e->be);
    if (e->swap) zt__swap_close(e->swap);
    free(e->swap);
    zt_pool_destroy(e->hpool);
    if (e->be) zt_backend_destroy(e->be);
    free(e->meta_mem);
    free(e);
}

/* ---- the memory plan ---- */

ZT_API zt_result zt_plan_memory(zt_memory_plan *out, const zt_model_spec *model, const zt_options *o, int world) {
    memset(out, 0, sizeof *out);
    if (world < 1) return zt_fail(ZT_ERROR_INVALID, "a plan needs at least one rank, not %d", world);
    zt_engine *e = (zt_engine *)calloc(1, sizeof *e); /* planning time */
    if (!e) return zt_fail(ZT_ERROR_MEMORY, "out of host memory planning");
    e->opt = *o;
    e->opt.comm = NULL;
    e->opt.threads = 1; /* the backend only measures */
    e->planning = 1;
    e->world = world;
    e->rank = 0; /* rank 0 holds the most: a bucket or a slice is never larger on another rank */
    zt_result r = zt__init(e, model);
    if (r == ZT_OK) {
        out->world = world;
        out->zero_stage = e->stage;
        out->gradient_checkpointing = e->opt.gradient_checkpointing;
        out->micro_batch = e->opt.micro_batch;
        out->seq_len = e->T;
        out->params = zt_engine_param_count(e);
        out->offload_optimizer = e->off_opt;
        out->offload_ratio = e->opt.offload_ratio;
        out->offload_param = e->off_param;
        memcpy(out->bytes, e->mem, sizeof out->bytes);
        memcpy(out->host_bytes, e->hmem, sizeof out->host_bytes);
        out->device = e->plan_device;
        out->pinned = e->plan_pinned;
        out->nvme = (size_t)(e->nvme[0] + e->nvme[1]);
        out->gpu = o->backend && strcmp(o->backend, "cpu") != 0;
    }
    zt_shutdown(e);
    return r;
}

ZT_API void zt_memory_plan_print(const zt_memory_plan *p, FILE *out) {
    double P = (double)p->params, N = (double)p->world, MiB = 1048576.0;
    static const char *where[3] = {"none", "cpu", "nvme"};
    char share[32] = "";
    if (p->offload_optimizer != ZT_OFFLOAD_NONE && p->offload_ratio < 1) snprintf(share, sizeof share, " (ratio %g)", p->offload_ratio);
    fprintf(out, "memory plan: %lld parameters, %d rank%s, ZeRO stage %d, micro-batch %lld x %lld tokens, "
            "activation checkpointing %s, offload optimizer %s%s, parameters %s; per rank:\n", (long long)p->params,
            p->world, p->world > 1 ? "s" : "", p->zero_stage, (long long)p->micro_batch, (long long)p->seq_len,
            p->gradient_checkpointing ? "on" : "off", where[p->offload_optimizer], share, where[p->offload_param]);
    fprintf(out, "  %-18s %12s %16s\n", "", "device", "pinned host");
    for (int c = 0; c < ZT_MEM_COUNT; c++)
        if (c == ZT_MEM_LIBRARY && p->gpu)
            fprintf(out, "  %-18s  not in a plan: a plan starts no GPU; the CUDA context, cuBLASLt's workspaces and "
                    "NCCL take about 1 GiB more, measured at init\n", zt__mem_names[c]);
        else
            fprintf(out, "  %-18s %12.2f %12.2f MiB\n", zt__mem_names[c], (double)p->bytes[c] / MiB,
                    (double)p->host_bytes[c] / MiB);
    size_t states = 0;
    for (int c = ZT_MEM_PARAMS; c <= ZT_MEM_ADAM; c++) states += p->bytes[c] + p->host_bytes[c];
    states += p->nvme;
    /* the ZeRO paper's model states for 16-bit training with Adam (K = 12) */
    double paper = p->zero_stage == 0 ? 16 * P : p->zero_stage == 1 ? 4 * P + 12 * P / N
                 : p->zero_stage == 2 ? 2 * P + 14 * P / N : 16 * P / N;
    fprintf(out, "  %-18s %12.2f %12.2f MiB", "total", (double)p->device / MiB, (double)p->pinned / MiB);
    if (p->nvme) fprintf(out, ", and %.2f MiB of NVMe swap files", (double)p->nvme / MiB);
    fprintf(out, "\n");
    fprintf(out, "  model states %.2f MiB; the ZeRO paper's %s for 16-bit training: %.2f MiB (zt keeps gradients in "
            "fp32: 2 bytes more per %s)\n", (double)states / MiB,
            p->zero_stage == 0 ? "16P" : p->zero_stage == 1 ? "4P + 12P/N" : p->zero_stage == 2 ? "2P + 14P/N" : "16P/N",
            paper / MiB, p->zero_stage < 2 ? "parameter" : "parameter per rank");
}

/* settings in order of cost: what a step pays for the memory it saves. Without offload first, at every
   micro-batch (the collectives of stages 1-3 cost about what stage 0's all-reduce does; recomputation a
   third more compute); then offload, which moves the optimizer's work to the host and its traffic over
   PCIe (and NVMe only where a path is set): a part of the optimizer first (ZeRO-3's partial offload, the
   smallest share that fits: the device updates the rest, as fast as without offload), then all of it */
typedef struct zt__fit { int stage, ckpt; zt_offload_device opt, param; double ratio; } zt__fit;
static const zt__fit zt__fit_order[] = {
    {0, 0, ZT_OFFLOAD_NONE, ZT_OFFLOAD_NONE, 1}, {1, 0, ZT_OFFLOAD_NONE, ZT_OFFLOAD_NONE, 1},
    {2, 0, ZT_OFFLOAD_NONE, ZT_OFFLOAD_NONE, 1}, {2, 1, ZT_OFFLOAD_NONE, ZT_OFFLOAD_NONE, 1},
    {3, 0, ZT_OFFLOAD_NONE, ZT_OFFLOAD_NONE, 1}, {3, 1, ZT_OFFLOAD_NONE, ZT_OFFLOAD_NONE, 1},
    {3, 1, ZT_OFFLOAD_CPU, ZT_OFFLOAD_NONE, 0.25}, {3, 1, ZT_OFFLOAD_CPU, ZT_OFFLOAD_NONE, 0.5},
    {3, 1, ZT_OFFLOAD_CPU, ZT_OFFLOAD_NONE, 0.75}, {2, 1, ZT_OFFLOAD_CPU, ZT_OFFLOAD_NONE, 1},
    {3, 1, ZT_OFFLOAD_CPU, ZT_OFFLOAD_NONE, 1}, {3, 1, ZT_OFFLOAD_CPU, ZT_OFFLOAD_CPU, 1},
    {3, 1, ZT_OFFLOAD_NVME, ZT_OFFLOAD_CPU, 1}, {3, 1, ZT_OFFLOAD_NVME, ZT_OFFLOAD_NVME, 1}};
#define ZT__N_FIT (int)(sizeof zt__fit_order / sizeof zt__fit_order[0])

static const char *zt__where(zt_offload_device d) { return d == ZT_OFFLOAD_CPU ? "cpu" : d == ZT_OFFLOAD_NVME ? "nvme" : "none"; }

ZT_API zt_result zt_plan_fit(zt_options *fits, const zt_model_spec *model, const zt_options *o, int world,
                             size_t device_bytes, FILE *log) {
    const char *nvme = o->offload_param_path ? o->offload_param_path : o->offload_optimizer_path ? o->offload_optimizer_path
                     : o->nvme_path ? o->nvme_path : getenv("ZT_NVME_PATH");
    for (int offload = 0; offload <= 1; offload++)
        for (int64_t mb = o->micro_batch; mb >= 1; mb /= 2) {
            if (mb != o->micro_batch && o->micro_batch % mb != 0) continue;
            for (int i = 0; i < ZT__N_FIT; i++) {
                zt__fit f = zt__fit_order[i];
                if ((f.opt != ZT_OFFLOAD_NONE) != offload || (f.ckpt && !f.stage)) continue;
                if ((f.opt == ZT_OFFLOAD_NVME || f.param == ZT_OFFLOAD_NVME) && !nvme) continue; /* no path to swap to */
                if (o->gradient_checkpointing && !f.ckpt && i + 1 < ZT__N_FIT && zt__fit_order[i + 1].ckpt &&
                    zt__fit_order[i + 1].stage == f.stage && zt__fit_order[i + 1].opt == f.opt)
                    continue; /* checkpointing is on already: the next entry is the same */
                zt_options t = *o;
                t.zero_stage = f.stage;
                t.gradient_checkpointing = o->gradient_checkpointing || f.ckpt;
                t.offload_optimizer = f.opt;
                t.offload_param = f.param;
                t.offload_ratio = f.ratio;
                if (f.opt == ZT_OFFLOAD_NVME && !t.offload_optimizer_path) t.offload_optimizer_path = nvme;
                if (f.param == ZT_OFFLOAD_NVME && !t.offload_param_path) t.offload_param_path = nvme;
                t.micro_batch = mb;
                t.grad_accum = o->grad_accum * (o->micro_batch / mb);
                t.device_bytes = 0;
                zt_memory_plan p;
                zt_result r = zt_plan_memory(&p, model, &t, world);
                if (r != ZT_OK) return r;
                char what[192], share[24] = "";
                if (f.ratio < 1) snprintf(share, sizeof share, " (ratio %g)", f.ratio);
                snprintf(what, sizeof what, "ZeRO stage %d, activation checkpointing %s, offload optimizer %s%s, parameters %s, "
                         "micro-batch %lld", t.zero_stage, t.gradient_checkpointing ? "on" : "off", zt__where(f.opt), share,
                         zt__where(f.param), (long long)mb);
                if (p.device <= device_bytes) {
                    *fits = t;
                    if (log)
                        fprintf(log, "fits: %s x %lld accumulation: %.2f MiB of %.2f MiB (pinned host %.2f MiB, NVMe %.2f MiB)\n",
                                what, (long long)t.grad_accum, (double)p.device / 1048576.0,
                                (double)device_bytes / 1048576.0, (double)p.pinned / 1048576.0, (double)p.nvme / 1048576.0);
                    return ZT_OK;
                }
                if (log)
                    fprintf(log, "rejected: %s: %.2f MiB (parameters %.2f, gradients %.2f, master %.2f, Adam %.2f, activations "
                            "%.2f, buckets %.2f, scratch %.2f, buffers %.2f)\n", what, (double)p.device / 1048576.0,
                            p.bytes[0] / 1048576.0, p.bytes[1] / 1048576.0, p.bytes[2] / 1048576.0, p.bytes[3] / 1048576.0,
                            p.bytes[4] / 1048576.0, p.bytes[5] / 1048576.0, p.bytes[6] / 1048576.0, p.bytes[7] / 1048576.0);
            }
        }
    return zt_fail(ZT_ERROR_MEMORY, "nothing fits in %.2f MiB per rank at %d rank%s: not ZeRO-3 with activation "
                   "checkpointing, offload%s and a micro-batch of 1", (double)device_bytes / 1048576.0, world,
                   world > 1 ? "s" : "", nvme ? "" : " to host memory (NVMe needs --nvme_path)");
}

/* the error before step 1: the largest category, the shortfall, and the cheapest settings that fit */
static zt_result zt__out_of_memory(zt_engine *e, const zt_model_spec *model, size_t need, size_t given) {
    int big = 0;
    for (int c = 1; c < ZT_MEM_COUNT; c++) if (e->mem[c] > e->mem[big]) big = c;
    char hint[400] = "nothing fits: not ZeRO-3 with activation checkpointing, offload and a micro-batch of 1";
    zt_options fits = e->opt;
    if (zt_plan_fit(&fits, model, &e->opt, e->world, given, NULL) == ZT_OK) {
        const char *with[4] = {NULL, NULL, NULL, NULL};
        char opt[48] = "", par[48] = "";
        int n = 0;
        if (fits.offload_optimizer && fits.offload_ratio < 1)
            snprintf(opt, sizeof opt, "offload_optimizer %s and ratio %g", zt__where(fits.offload_optimizer), fits.offload_ratio);
        else if (fits.offload_optimizer)
            snprintf(opt, sizeof opt, "offload_optimizer %s", zt__where(fits.offload_optimizer));
        if (fits.offload_optimizer) with[n++] = opt;
        if (fits.offload_param) snprintf(par, sizeof par, "offload_param %s", zt__where(fits.offload_param)), with[n++] = par;
        if (fits.gradient_checkpointing && !e->opt.gradient_checkpointing) with[n++] = "--gradient_checkpointing";
        if (fits.micro_batch != e->opt.micro_batch) with[n++] = "a smaller micro-batch";
        int k = snprintf(hint, sizeof hint, "zero_optimization.stage %d", fits.zero_stage);
        for (int i = 0; i < n; i++) k += snprintf(hint + k, sizeof hint - (size_t)k, "%s%s", i ? ", " : " with ", with[i]);
        snprintf(hint + k, sizeof hint - (size_t)k, " would fit (zt_train --plan --fit shows the plan)");
    }
    return zt_fail(ZT_ERROR_MEMORY, "out of device memory before step 1: each rank needs %.2f MiB, %.2f MiB were given "
                   "(%.2f MiB short); the largest part is %s (%.2f MiB) at ZeRO stage %d; %s", need / 1048576.0,
                   given / 1048576.0, (need - given) / 1048576.0, zt__mem_names[big], e->mem[big] / 1048576.0, e->stage, hint);
}

ZT_API void zt_memory_stats(zt_engine *e, size_t planned[ZT_MEM_COUNT], size_t peak[ZT_MEM_COUNT]) {
    for (int c = 0; c < ZT_MEM_COUNT; c++) {
        if (planned) planned[c] = e->mem[c];
        if (peak) peak[c] = c == ZT_MEM_ACTIVATIONS ? zt_arena_peak(&e->keep)
                          : c == ZT_MEM_SCRATCH ? zt_arena_peak(&e->scratch) : e->mem[c];
    }
}

ZT_API const zt_options *zt_engine_options(const zt_engine *e) { return &e->opt; }
ZT_API zt_backend *zt_engine_backend(zt_engine *e) { return e->be; }
ZT_API const zt_model_config *zt_engine_model_config(const zt_engine *e) { return e->has_cfg ? &e->cfg : NULL; }
ZT_API int64_t zt_engine_param_count(const zt_engine *e) {
    int64_t n = 0;
    for (int p = 0; p < e->n_params; p++) {
        const zt__param *pr = &e->params[p];
        if (pr->tied >= 0) continue;
        int64_t k = zt__numel_of(pr->shape);
        if (pr->flags & ZT_PARAM_VOCAB) k = k / pr->shape.d[0] * e->vocab;
        n += k;
    }
    return n;
}

/* ---- training ---- */

ZT_API float zt_forward_backward(zt_engine *e, const int32_t *tokens, const int32_t *targets, const uint8_t *mask,
                                 int64_t n_rows) {
    int64_t valid = zt__load_batch(e, tokens, targets, mask, n_rows, e->B, e->T);
    e->batch.dloss = e->scaler.scale / (float)(e->B * e->T);
    /* the step's randomness, drawn by the row's place among all the step's rows: every split of them into ranks and
       micro-batches draws the same */
    e->batch.seed = zt__mix(e->opt.seed ^ zt__mix((uint64_t)e->step << 20 ^ 0x6e6f697365ull));
    e->batch.first_row = ((int64_t)e->micro * e->world + e->rank) * e->B;
    zt__run(e, 1);
    e->micro++;
    double sum = zt__loss_sum(e, e->B * e->T) + (double)e->aux * (double)valid;
    e->tokens_in_step += valid;
    e->loss_sum += sum;
    return valid ? (float)(sum / (double)valid) : 0.0f;
}

/* Data parallelism: the step's token count and loss sum across ranks, and the gradients: stage 0
   all-reduces them in buckets, stage 1 reduce-scatters them (each rank keeps the sum of its slice),
   stages 2 and 3 have already reduced them during backward. Sums run in rank order, so the step is the
   one a single process would take over all ranks' rows, and every stage gets the same bits. */
static void zt__sum_across_ranks(zt_engine *e) {
    e->h_stats[0] = (float)e->tokens_in_step; /* exact up to 2^24 tokens a step */
    e->h_stats[1] = (float)e->loss_sum;
    zt_copy(e->s, e->stats, zt_tensor_make(e->h_stats, ZT_F32, ZT_HOST, zt_shape1(2)));
    zt_stream *cs = zt__cs_after_s(e);
    for (int b = 0; b < e->n_blocks; b++) {
        const zt__group *g = &e->groups[b];
        if (!g->trainable) continue;
        if (e->stage == 0) zt__all_reduce_grads(e, g->grad);
        else if (e->stage == 1) zt__reduce_slices(e, g->grad, g->shard);
    }
    zt_all_reduce(cs, e->comm, e->stats, ZT_REDUCE_SUM);
    zt__s_after_cs(e);
    zt_copy(e->s, zt_tensor_make(e->h_stats, ZT_F32, ZT_HOST, zt_shape1(2)), e->stats);
    zt_stream_sync(e->s);
    e->tokens_in_step = (int64_t)e->h_stats[0];
    e->loss_sum = e->h_stats[1];
}

/* The squared global gradient norm: one partial per (group, rank slice), in every stage, combined in
   that order; a rank computes the partials of the slices it holds summed, the others are zero there
   and the partials are summed across ranks (adding zeros is exact). */
static double zt__grad_sumsq(zt_engine *e) {
    int W = e->world;
    for (int b = 0; b < e->n_blocks; b++) {
        const zt__group *g = &e->groups[b];
        for (int r = 0; r < W; r++) {
            zt_tensor part = zt_view(e->norm_parts, (int64_t)b * W + r, zt_shape1(1));
            if (g->trainable && (e->stage == 0 || r == e->rank) && g->grad.place == ZT_HOST) {
                zt_stream_sync(e->s); /* the reductions into it are done */
                e->h_stats[0] = zt__sumsq_host(e->hpool, (const float *)g->grad.data, g->shard);
                zt_copy(e->s, part, zt_tensor_make(e->h_stats, ZT_F32, ZT_HOST, zt_shape1(1)));
                zt_stream_sync(e->s);
            } else if (g->trainable && (e->stage == 0 || r == e->rank)) {
                zt_sumsq(e->s, part, g->split_grad ? g->grad : zt_view(g->grad, (int64_t)r * g->shard, zt_shape1(g->shard)));
            } else {
                zt_fill(e->s, part, 0.0f);
            }
        }
    }
    if (e->stage > 0 && W > 1) {
        zt_all_reduce(zt__cs_after_s(e), e->comm, e->norm_parts, ZT_REDUCE_SUM);
        zt__s_after_cs(e);
    }
    int64_t n = (int64_t)e->n_blocks * W;
    zt_copy(e->s, zt_tensor_make(e->h_norms, ZT_F32, ZT_HOST, zt_shape1(n)), e->norm_parts);
    zt_stream_sync(e->s);
    double sq = 0.0;
    for (int64_t i = 0; i < n; i++) sq += e->h_norms[i];
    return sq;
}

/* AdamW over this rank's slice of every trainable group, a parameter at a time (each has its own
   weight decay), on the device or (offload_optimizer) the host; then the updated weights gathered
   where every rank holds them whole. The device's updates are queued first, so that under a partial
   offload they run while the host updates its groups (each group's own arithmetic: the same bits). */
static void zt__update(zt_engine *e, float lr, double grad_scale) {
    for (int host = 0; host < 2; host++)
        for (int b = 0; b < e->n_blocks; b++) {
            zt__group *g = &e->groups[b];
            if (!g->trainable || (g->opt_at != ZT_OFFLOAD_NONE) != host) continue;
            if (host) zt__update_host(e, g, lr, grad_scale);
            else zt__update_device(e, g, lr, grad_scale);
        }
    zt__cs_after_s(e);
    for (int b = 0; b < e->n_blocks && e->stage > 0; b++) {
        zt__group *g = &e->groups[b];
        if (g->trainable && !g->split_w) zt__gather_slices(e, g->w, g->shard, zt_view(g->w, g->own, zt_shape1(g->shard)));
    }
    zt__s_after_cs(e);
    zt__weights_changed(e);
}

ZT_API double zt_broadcast_value(zt_engine *e, double v) {
    if (e->world <= 1 || !e->comm) return v;
    zt_tensor host = zt_tensor_make(e->h_stats, ZT_F32, ZT_HOST, zt_shape1(2)); /* the double's 8 bytes */
    memcpy(e->h_stats, &v, sizeof v);
    zt_copy(e->s, e->stats, host);
    zt_stream *cs = zt__cs_after_s(e);
    zt_broadcast(cs, e->comm, e->stats, 0);
    zt__s_after_cs(e);
    zt_copy(e->s, host, e->stats);
    zt_stream_sync(e->s);
    memcpy(&v, e->h_stats, sizeof v);
    return v;
}

ZT_API void zt_gather_values(zt_engine *e, const double *mine, int n, double *all) {
    ZT_ASSERT(n >= 0 && n <= ZT_GATHER_MAX);
    if (e->world <= 1 || !e->comm) {
        memcpy(all, mine, sizeof(double) * (size_t)n);
        return;
    }
    int64_t words = 2 * (int64_t)n; /* a double travels as two f32 words: collectives copy bits */
    zt_tensor in = zt_view(e->values, 0, zt_shape1(words));
    zt_tensor out = zt_view(e->values, 2 * ZT_GATHER_MAX, zt_shape1(words * e->world));
    memcpy(e->h_values, mine, sizeof(double) * (size_t)n);
    zt_copy(e->s, in, zt_tensor_make(e->h_values, ZT_F32, ZT_HOST, in.shape));
    zt_stream *cs = zt__cs_after_s(e);
    zt_all_gather(cs, e->comm, out, in);
    zt__s_after_cs(e);
    zt_copy(e->s, zt_tensor_make(e->h_values, ZT_F32, ZT_HOST, out.shape), out);
    zt_stream_sync(e->s);
    memcpy(all, e->h_values, sizeof(double) * (size_t)n * (size_t)e->world);
}

ZT_API void zt_schedule_observe(zt_engine *e, double metric) {
    if (zt__metric_schedule(e->opt.schedule)) zt_plateau_step(&e->plateau, &e->opt, metric);
}

ZT_API zt_step_info zt_step(zt_engine *e) {
    zt_step_info info;
    memset(&info, 0, sizeof info);
    if (e->world > 1) zt__sum_across_ranks(e);
    info.tokens = e->tokens_in_step;
    info.loss = e->tokens_in_step ? (float)(e->loss_sum / (double)e->tokens_in_step) : 0.0f;
    info.loss_scale = e->scaler.scale;
    double to_mean = zt__to_mean(e);
    double norm = sqrt(zt__grad_sumsq(e)) * to_mean;
    info.grad_norm = (float)norm;
    int overflow = !isfinite(norm); /* the same on every rank: the partials were summed across them */
    e->step++;
    info.step = e->step;
    if (overflow && (e->opt.precision == ZT_PRECISION_FP16 ||
                     (e->opt.precision == ZT_PRECISION_BF16 && e->opt.bf16_skip_nonfinite))) {
        info.skipped = 1;
        zt__scaler_update(e, 1);
    } else {
        double clip = 1.0;
        if (e->opt.max_grad_norm > 0 && norm > e->opt.max_grad_norm) clip = e->opt.max_grad_norm / (norm + 1e-6);
        float lr = zt__metric_schedule(e->opt.schedule) ? (float)e->plateau.lr : zt_schedule_lr(&e->opt, e->sched_step);
        info.lr = lr;
        e->adam_step++;
        zt__update(e, lr, to_mean * clip);
        e->sched_step++;
        zt__scaler_update(e, 0);
    }
    for (int b = 0; b < e->n_blocks; b++) {
        zt_tensor gr = e->groups[b].grad;
        if (e->groups[b].trainable && gr.place == ZT_HOST) memset(gr.data, 0, zt_nbytes(gr));
        else if (e->groups[b].trainable) zt_fill(e->s, gr, 0.0f);
    }
    zt_stream_sync(e->s);
    e->tokens_in_step = 0;
    e->loss_sum = 0.0;
    e->micro = 0;
    return info;
}

ZT_API float zt_eval(zt_engine *e, const int32_t *tokens, const int32_t *targets, const uint8_t *mask,
                     int64_t n_rows, double *loss_sum, int64_t *count) {
    int64_t valid = zt__load_batch(e, tokens, targets, mask, n_rows, e->B, e->T);
    zt__run(e, 0);
    double sum = zt__loss_sum(e, e->B * e->T) + (double)e->aux * (double)valid;
    if (loss_sum) *loss_sum = sum;
    if (count) *count = valid;
    return valid ? (float)(sum / (double)valid) : 0.0f;
}

static double zt__uniform(uint64_t *state) {
    *state = zt__mix(*state);
    return (double)(*state >> 11) / 9007199254740992.0;
}

/* a min-heap of token ids by logit: sorting with it leaves the largest logits first */
static void zt__sift(const float *x, int32_t *idx, int64_t root, int64_t n) {
    for (;;) {
        int64_t child = 2 * root + 1;
        if (child >= n) return;
        if (child + 1 < n && x[idx[child + 1]] < x[idx[child]]) child++;
        if (x[idx[root]] <= x[idx[child]]) return;
        int32_t tmp = idx[root];
        idx[root] = idx[child], idx[child] = tmp;
        root = child;
    }
}

/* sample a token from logits: temperature, then top-k, then top-p (nucleus), as transformers orders them */
static int32_t zt__sample(zt_engine *e, int64_t V, float temperature, int top_k, float top_p, uint64_t *rng) {
    float *x = e->h_logits;
    int32_t *idx = e->h_order;
    float cap = e->has_cfg ? e->cfg.logit_softcap : 0.0f; /* Gemma 2's final_logit_softcapping, as in its forward */
    for (int64_t i = 0; i < V && cap > 0; i++) x[i] = cap * tanhf(x[i] / cap);
    if (temperature <= 0.0f) { /* greedy */
        int64_t best = 0;
        for (int64_t i = 1; i < V; i++) if (x[i] > x[best]) best = i;
        return (int32_t)best;
    }
    int64_t n = V;
    for (int64_t i = 0; i < V; i++) idx[i] = (int32_t)i;
    if (top_k > 0 || top_p < 1.0f) { /* the likeliest first: a heap sort in place, O(V log V), no memory */
        for (int64_t root = V / 2 - 1; root >= 0; root--) zt__sift(x, idx, root, V);
        for (int64_t end = V - 1; end > 0; end--) {
            int32_t tmp = idx[0];
            idx[0] = idx[end], idx[end] = tmp;
            zt__sift(x, idx, 0, end);
        }
        n = top_k > 0 ? ZT__MIN((int64_t)top_k, V) : V;
    }
    double m = x[idx[0]], total = 0.0;
    for (int64_t i = 0; i < n; i++) m = ZT__MAX(m, (double)x[idx[i]]);
    for (int64_t i = 0; i < n; i++) total += exp((x[idx[i]] - m) / temperature);
    if (top_p < 1.0f) { /* the smallest prefix whose probability reaches top_p */
        double acc = 0.0;
        int64_t k = 0;
        while (k < n) {
            acc += exp((x[idx[k]] - m) / temperature) / total;
            k++;
            if (acc >= top_p) break;
        }
        n = k;
        total = 0.0;
        for (int64_t i = 0; i < n; i++) total += exp((x[idx[i]] - m) / temperature);
    }
    double u = zt__uniform(rng) * total, acc = 0.0;
    for (int64_t i = 0; i < n; i++) {
        acc += exp((x[idx[i]] - m) / temperature);
        if (u < acc) return idx[i];
    }
    return idx[n - 1];
}

ZT_API zt_result zt_generate(zt_engine *e, const int32_t *prompt, int64_t n_prompt, int32_t *out, int64_t n_new,
                             float temperature, int top_k, float top_p, uint64_t seed) {
    if (n_prompt < 1) return zt_fail(ZT_ERROR_INVALID, "zt_generate needs at least one prompt token");
    for (int64_t i = 0; i < n_prompt; i++) {
        if (prompt[i] < 0 || prompt[i] >= e->vocab)
            return zt_fail(ZT_ERROR_INVALID, "prompt token %d at %lld is outside the vocabulary [0, %lld)", prompt[i],
                           (long long)i, (long long)e->vocab);
        out[i] = prompt[i];
    }
    uint64_t rng = seed;
    for (int64_t n = n_prompt; n < n_prompt + n_new; n++) {
        int64_t T = ZT__MIN(n, e->T), start = n - T; /* the last T tokens */
        zt__load_batch(e, out + start, NULL, NULL, 1, 1, T);
        e->batch.logits_at = T - 1;
        zt__run(e, 0);
        int64_t V = e->vocab;
        zt_copy(e->s, zt_tensor_make(e->h_logits, ZT_F32, ZT_HOST, zt_shape1(V)),
                zt_view(e->full.logits, 0, zt_shape1(V)));
        zt_stream_sync(e->s);
        out[n] = zt__sample(e, V, temperature, top_k, top_p, &rng);
    }
    return ZT_OK;
}

ZT_API void zt_memory_report(zt_engine *e, const char *label) {
    zt_arena *dev = zt_backend_device_arena(e->be);
    size_t planned[ZT_MEM_COUNT], peak[ZT_MEM_COUNT];
    zt_memory_stats(e, planned, peak);
    char line[2048];
    int n = snprintf(line, sizeof line, "memory %s | rank %d | device %.2f MiB (peak %.2f of %.2f)", label ? label : "",
                     e->rank, dev->used / 1048576.0, zt_arena_peak(dev) / 1048576.0, dev->cap / 1048576.0);
    for (int c = 0; c < ZT_MEM_COUNT && n < (int)sizeof line; c++) {
        if (planned[c] == 0) continue;
        if (c == ZT_MEM_ACTIVATIONS || c == ZT_MEM_SCRATCH)
            n += snprintf(line + n, sizeof line - (size_t)n, " | %s %.2f (peak %.2f)", zt__mem_names[c],
                          planned[c] / 1048576.0, peak[c] / 1048576.0);
        else
            n += snprintf(line + n, sizeof line - (size_t)n, " | %s %.2f", zt__mem_names[c], planned[c] / 1048576.0);
    }
    n += snprintf(line + n, sizeof line - (size_t)n, " | pinned host %.2f MiB", zt_backend_pinned_arena(e->be)->used / 1048576.0);
    for (int c = 0; c < ZT_MEM_COUNT && n < (int)sizeof line; c++)
        if (e->hmem[c]) n += snprintf(line + n, sizeof line - (size_t)n, " | host %s %.2f", zt__mem_names[c], e->hmem[c] / 1048576.0);
    if (e->nvme[0] + e->nvme[1] && n < (int)sizeof line)
        snprintf(line + n, sizeof line - (size_t)n, " | NVMe swap %.2f MiB", (double)(e->nvme[0] + e->nvme[1]) / 1048576.0);
    zt_log(ZT_LOG_INFO, "%s", line);
}

/* >>io (implementation) ------------------------------------------------------------------------ */

#include <fcntl.h>
#include <glob.h>
#include <sys/mman.h>
#include <sys/stat.h>

#define ZT__LLMC_HEADER 1024 /* bytes: 256 x int32 */

typedef struct zt__data_file {
    const uint8_t *map;     /* the whole file, mapped */
    size_t map_bytes;
    const uint8_t *tokens;  /* first token */
    int elem;               /* bytes per token: 1, 2 or 4 */
    int64_t n;              /* tokens */
    const uint8_t *mask;    /* one byte per token, or NULL */
    size_t mask_bytes;
    int64_t first_window;   /* windows before this file */
} zt__data_file;

struct zt_data {
    zt_data_desc d;
    int n_files;
    zt__data_file *files;
    int64_t windows, tokens;
    int64_t epoch, cursor;  /* the next window index of this epoch (all ranks) */
};

static zt_result zt__map(const char *path, const uint8_t **map, size_t *bytes) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return zt_fail(ZT_ERROR_IO, "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return zt_fail(ZT_ERROR_IO, "%s is not a regular file", path);
    }
    *bytes = (size_t)st.st_size;
    *map = NULL;
    if (st.st_size > 0) {
        void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            close(fd);
            return zt_fail(ZT_ERROR_IO, "cannot map %s: %s", path, strerror(errno));
        }
        *map = (const uint8_t *)m;
    }
    close(fd);
    return ZT_OK;
}

static int32_t zt__le32(const uint8_t *p) {
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

static int64_t zt__token_at(const zt__data_file *f, int64_t i) {
    const uint8_t *p = f->tokens + (size_t)i * (size_t)f->elem;
    if (f->elem == 1) return p[0];
    if (f->elem == 2) return (int64_t)p[0] | (int64_t)p[1] << 8;
    return (int64_t)(uint32_t)zt__le32(p);
}

/* what kind of file `path` is and where its tokens are */
static zt_result zt__data_file_open(zt__data_file *f, const char *path, const zt_data_desc *d) {
    zt_result r = zt__map(path, &f->map, &f->map_bytes);
    if (r != ZT_OK) return r;
    zt_data_format fmt = d->format;
    size_t len = strlen(path);
    if (fmt == ZT_DATA_AUTO) fmt = len > 4 && strcmp(path + len - 4, ".txt") == 0 ? ZT_DATA_TEXT : ZT_DATA_LLMC;
    if (fmt == ZT_DATA_TEXT) {
        f->elem = 1;
        f->tokens = f->map;
        f->n = (int64_t)f->map_bytes;
    } else if (fmt == ZT_DATA_U16 || fmt == ZT_DATA_U32) {
        f->elem = fmt == ZT_DATA_U16 ? 2 : 4;
        if (f->map_bytes % (size_t)f->elem)
            return zt_fail(ZT_ERROR_FORMAT, "%s: %zu bytes is not a whole number of %d-byte tokens", path, f->map_bytes,
                           f->elem);
        f->tokens = f->map;
        f->n = (int64_t)(f->map_bytes / (size_t)f->elem);
    } else {
        if (f->map_bytes < ZT__LLMC_HEADER)
            return zt_fail(ZT_ERROR_FORMAT, "%s: %zu bytes is too short for an llm.c token file (a 1024-byte header); "
                           "for headerless tokens use --data_dtype u16 or u32", path, f->map_bytes);
        int32_t magic = zt__le32(f->map), version = zt__le32(f->map + 4), count = zt__le32(f->map + 8);
        if (magic == 20240520 && version == 1) f->elem = 2;
        else if (magic == 20240801 && version == 7) f->elem = 4;
        else
            return zt_fail(ZT_ERROR_FORMAT, "%s: magic %d, version %d is not an llm.c token file (20240520 v1 or "
                           "20240801 v7); for headerless tokens use --data_dtype u16 or u32", path, magic, version);
        size_t want = ZT__LLMC_HEADER + (size_t)(uint32_t)count * (size_t)f->elem;
        if (count < 0 || want != f->map_bytes)
            return zt_fail(ZT_ERROR_FORMAT, "%s: the header says %d tokens (%zu bytes with the header), the file has "
                           "%zu bytes", path, count, want, f->map_bytes);
        f->tokens = f->map + ZT__LLMC_HEADER;
        f->n = count;
    }
    for (int64_t i = 0; i < f->n; i++) {
        int64_t t = zt__token_at(f, i);
        if (t >= d->vocab)
            return zt_fail(ZT_ERROR_FORMAT, "%s: token %lld at position %lld is outside the model's vocabulary of %lld",
                           path, (long long)t, (long long)i, (long long)d->vocab);
    }
    return ZT_OK;
}

/* every path of a comma-separated list of files and globs, sorted within each glob */
static zt_result zt__expand(const char *list, glob_t *g) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", list);
    int flags = 0;
    memset(g, 0, sizeof *g);
    for (char *save = NULL, *part = strtok_r(buf, ",", &save); part; part = strtok_r(NULL, ",", &save)) {
        size_t before = g->gl_pathc;
        int rc = glob(part, flags | GLOB_NOCHECK, NULL, g);
        if (rc != 0) return zt_fail(ZT_ERROR_IO, "cannot expand %s", part);
        flags = GLOB_APPEND;
        if (g->gl_pathc == before + 1 && strcmp(g->gl_pathv[before], part) == 0 && strpbrk(part, "*?[")) {
            globfree(g);
            return zt_fail(ZT_ERROR_IO, "no file matches %s", part);
        }
    }
    return ZT_OK;
}

ZT_API void zt_data_close(zt_data *d) {
    if (!d) return;
    for (int i = 0; i < d->n_files; i++) {
        if (d->files[i].map) munmap((void *)(uintptr_t)d->files[i].map, d->files[i].map_bytes);
        if (d->files[i].mask) munmap((void *)(uintptr_t)d->files[i].mask, d->files[i].mask_bytes);
    }
    free(d->files);
    free(d);
}

ZT_API zt_result zt_data_open(zt_data **out, const zt_data_desc *desc) {
    *out = NULL;
    if (!desc->path || !*desc->path) return zt_fail(ZT_ERROR_INVALID, "no data file given (--data)");
    if (desc->seq_len < 1 || desc->rows < 1 || desc->vocab < 1)
        return zt_fail(ZT_ERROR_INVALID, "data needs a positive sequence length, rows and vocabulary");
    glob_t g, gm;
    zt_result r = zt__expand(desc->path, &g);
    if (r != ZT_OK) return r;
    memset(&gm, 0, sizeof gm);
    if (desc->mask_path && (r = zt__expand(desc->mask_path, &gm)) != ZT_OK) {
        globfree(&g);
        return r;
    }
    if (desc->mask_path && gm.gl_pathc != g.gl_pathc) {
        r = zt_fail(ZT_ERROR_INVALID, "%zu mask files (%s) for %zu token files (%s): there must be one per token file",
                    gm.gl_pathc, desc->mask_path, g.gl_pathc, desc->path);
        globfree(&g);
        globfree(&gm);
        return r;
    }
    zt_data *d = (zt_data *)calloc(1, sizeof *d); /* setup time, freed by zt_data_close */
    zt__data_file *files = (zt__data_file *)calloc(g.gl_pathc ? g.gl_pathc : 1, sizeof *files);
    if (!d || !files) {
        free(d);
        free(files);
        globfree(&g);
        globfree(&gm);
        return zt_fail(ZT_ERROR_MEMORY, "out of host memory opening the data");
    }
    d->d = *desc;
    if (d->d.world < 1) d->d.world = 1;
    if (d->d.stride < 1) d->d.stride = desc->seq_len;
    d->d.path = d->d.mask_path = NULL; /* the caller's strings may not outlive us */
    d->files = files;
    int64_t T = desc->seq_len;
    for (size_t i = 0; i < g.gl_pathc && r == ZT_OK; i++) {
        zt__data_file *f = &d->files[d->n_files++];
        r = zt__data_file_open(f, g.gl_pathv[i], desc);
        if (r == ZT_OK && desc->mask_path) {
            const char *mp = gm.gl_pathv[i];
            r = zt__map(mp, &f->mask, &f->mask_bytes);
            if (r == ZT_OK && (int64_t)f->mask_bytes != f->n)
                r = zt_fail(ZT_ERROR_FORMAT, "%s has %zu mask bytes for the %lld tokens of %s: one byte per token", mp,
                            f->mask_bytes, (long long)f->n, g.gl_pathv[i]);
        }
        f->first_window = d->windows;
        d->windows += f->n >= T + 1 ? (f->n - (T + 1)) / d->d.stride + 1 : 0;
        d->tokens += f->n;
    }
    if (r == ZT_OK && d->windows == 0)
        r = zt_fail(ZT_ERROR_INVALID, "%s holds %lld tokens: not one window of --seq_len %lld + 1", desc->path,
                    (long long)d->tokens, (long long)T);
    globfree(&g);
    globfree(&gm);
    if (r != ZT_OK) {
        zt_data_close(d);
        return r;
    }
    *out = d;
    return ZT_OK;
}

ZT_API int64_t zt_data_tokens(const zt_data *d) { return d->tokens; }
ZT_API int64_t zt_data_windows(const zt_data *d) { return d->windows; }
ZT_API void zt_data_cursor(const zt_data *d, int64_t *epoch, int64_t *index) {
    *epoch = d->epoch;
    *index = d->cursor;
}
ZT_API void zt_data_seek(zt_data *d, int64_t epoch, int64_t index) {
    d->epoch = epoch;
    d->cursor = index;
}

/* A permutation of [0, n) that needs no memory: a four-round Feistel network over the smallest even
   number of bits that covers n, walking the cycle until the value falls inside [0, n). */
static int64_t zt__permute(int64_t i, int64_t n, uint64_t key) {
    int bits = 2;
    while (((int64_t)1 << bits) < n) bits += 2;
    int half = bits / 2;
    uint64_t mask = ((uint64_t)1 << half) - 1, x = (uint64_t)i;
    do {
        uint64_t l = x >> half, r = x & mask;
        for (int round = 0; round < 4; round++) {
            uint64_t f = zt__mix(key ^ ((uint64_t)round << 56) ^ r) & mask;
            uint64_t nl = r;
            r = l ^ f;
            l = nl;
        }
        x = l << half | r;
    } while ((int64_t)x >= n);
    return (int64_t)x;
}

/* window w of the epoch's order: its file and first token */
static void zt__window(const zt_data *d, int64_t w, const zt__data_file **file, int64_t *start) {
    int lo = 0, hi = d->n_files - 1;
    while (lo < hi) { /* the last file whose first window is <= w */
        int mid = (lo + hi + 1) / 2;
        if (d->files[mid].first_window <= w) lo = mid;
        else hi = mid - 1;
    }
    *file = &d->files[lo];
    *start = (w - d->files[lo].first_window) * d->d.stride;
}

ZT_API int64_t zt_data_next(zt_data *d, int32_t *tokens, int32_t *targets, int ignore_index) {
    int64_t T = d->d.seq_len, B = d->d.rows, filled = 0;
    if (d->cursor >= d->windows) {
        d->epoch++;
        d->cursor = 0;
    }
    uint64_t key = zt__mix(d->d.seed ^ zt__mix((uint64_t)d->epoch + 0x5eed));
    for (int64_t r = 0; r < B; r++) {
        int64_t k = d->cursor + (int64_t)d->d.rank * B + r; /* this rank's rows of the global batch */
        if (k >= d->windows) break;
        int64_t w = d->d.shuffle ? zt__permute(k, d->windows, key) : k, start;
        const zt__data_file *f;
        zt__window(d, w, &f, &start);
        for (int64_t t = 0; t < T; t++) {
            tokens[r * T + t] = (int32_t)zt__token_at(f, start + t);
            int counts = !f->mask || f->mask[start + t + 1];
            targets[r * T + t] = counts ? (int32_t)zt__token_at(f, start + t + 1) : ignore_index;
        }
        filled++;
    }
    d->cursor += B * d->d.world;
    return filled;
}

/* >>checkpoint (implementation) ---------------------------------------------------------------- */

#define ZT__CKPT_TENSORS "zt_rank_00000.safetensors"

/* dir/name into out (ZT__PATH bytes); a path that does not fit is refused, not truncated */
static zt_result zt__path(char *out, const char *dir, const char *name) {
    int n = snprintf(out, ZT__PATH, "%s/%s", dir, name);
    if (n < 0 || n >= ZT__PATH) return zt_fail(ZT_ERROR_INVALID, "the path %s/%s is too long", dir, name);
    return ZT_OK;
}
#define ZT__CKPT_STATE "zt_state.json"

/* each saved tensor: a parameter's fp32 value and its two Adam moments (unpadded) */
typedef struct zt__ckpt_item { int param; int what; /* 0 value, 1 exp_avg, 2 exp_avg_sq */ } zt__ckpt_item;
static const char *zt__ckpt_suffix[3] = {"", ".exp_avg", ".exp_avg_sq"};

static int zt__ckpt_items(const zt_engine *e, zt__ckpt_item *items) {
    int n = 0;
    for (int p = 0; p < e->n_params; p++) {
        const zt__param *pr = &e->params[p];
        if (pr->tied >= 0 || !pr->name || zt__numel_of(pr->shape) == 0) continue;
        int adam = e->groups[pr->block].trainable && !(pr->flags & ZT_PARAM_FROZEN);
        for (int w = 0; w < (adam ? 3 : 1); w++) {
            if (items) items[n].param = p, items[n].what = w;
            n++;
        }
    }
    return n;
}

static zt_result zt__pwrite_all(int fd, const void *buf, size_t n, off_t at, const char *path) {
    const uint8_t *p = (const uint8_t *)buf;
    while (n > 0) {
        ssize_t w = pwrite(fd, p, n, at);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return zt_fail(ZT_ERROR_IO, "cannot write %s: %s", path, strerror(errno));
        p += w, n -= (size_t)w, at += w;
    }
    return ZT_OK;
}

static zt_result zt__fsync_path(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return zt_fail(ZT_ERROR_IO, "cannot open %s to sync it: %s", path, strerror(errno));
    int rc = fsync(fd);
    close(fd);
    if (rc != 0 && errno != EINVAL) return zt_fail(ZT_ERROR_IO, "cannot sync %s: %s", path, strerror(errno));
    return ZT_OK;
}

/* the safetensors header of this engine's checkpoint, into e->ckpt_text; returns its padded length */
static size_t zt__ckpt_header(zt_engine *e, const zt__ckpt_item *items, int n_items) {
    char *b = e->ckpt_text;
    size_t cap = e->ckpt_text_bytes - 8, n = 0;
    uint64_t off = 0;
    n += (size_t)snprintf(b + n, cap - n, "{\"__metadata__\":{\"format\":\"pt\",\"writer\":\"zt %s\"}", ZT_VERSION_STRING);
    for (int i = 0; i < n_items; i++) {
        const zt__param *pr = &e->params[items[i].param];
        zt_shape s = pr->shape;
        if (pr->flags & ZT_PARAM_VOCAB) s.d[0] = e->vocab;
        uint64_t bytes = (uint64_t)zt__param_host_numel(e, pr) * 4;
        n += (size_t)snprintf(b + n, cap - n, ",\"%s%s\":{\"dtype\":\"F32\",\"shape\":[", pr->name,
                              zt__ckpt_suffix[items[i].what]);
        for (int d = 0; d < s.ndim; d++) n += (size_t)snprintf(b + n, cap - n, d ? ",%lld" : "%lld", (long long)s.d[d]);
        n += (size_t)snprintf(b + n, cap - n, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                              (unsigned long long)(off + bytes));
        off += bytes;
    }
    n += (size_t)snprintf(b + n, cap - n, "}");
    ZT_ASSERT(n < cap);
    while (n % 8) b[n++] = ' ';
    return n;
}

/* Every rank takes part (state split across ranks is gathered a chunk at a time); rank 0 writes the
   file (path NULL elsewhere). After an error rank 0 goes on gathering, so no rank waits for ever. */
static zt_result zt__ckpt_write_tensors(zt_engine *e, const char *path) {
    zt__ckpt_item *items = e->ckpt_items;
    int n_items = zt__ckpt_items(e, items);
    size_t hlen = zt__ckpt_header(e, items, n_items);
    int fd = -1;
    zt_result r = ZT_OK;
    if (path && (fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
        r = zt_fail(ZT_ERROR_IO, "cannot create %s: %s", path, strerror(errno));
    uint8_t len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (uint8_t)((uint64_t)hlen >> (8 * i));
    if (fd >= 0) r = zt__pwrite_all(fd, len8, 8, 0, path);
    if (fd >= 0 && r == ZT_OK) r = zt__pwrite_all(fd, e->ckpt_text, hlen, 8, path);
    off_t at = (off_t)(8 + hlen);
    for (int i = 0; i < n_items; i++) {
        const zt__param *pr = &e->params[items[i].param];
        int64_t n = zt__param_host_numel(e, pr);
        for (int64_t i0 = 0; i0 < n; i0 += ZT__STAGE_FLOATS) {
            int64_t k = ZT__MIN(ZT__STAGE_FLOATS, n - i0);
            zt__group_read(e, &e->groups[pr->block], items[i].what, pr->offset + i0, k);
            if (fd >= 0 && r == ZT_OK) r = zt__pwrite_all(fd, e->h_stage, (size_t)k * 4, at, path);
            at += (off_t)k * 4;
        }
    }
    if (fd >= 0 && r == ZT_OK && fsync(fd) != 0) r = zt_fail(ZT_ERROR_IO, "cannot sync %s: %s", path, strerror(errno));
    if (fd >= 0) close(fd);
    return r;
}

/* the metric-following schedule's state, as the last key of zt_state.json (doubles to the bit; an infinite best,
   none yet, as null) */
static int zt__ckpt_plateau_text(const zt_plateau *p, char *b, size_t cap) {
    char best[32] = "null";
    if (isfinite(p->best)) snprintf(best, sizeof best, "%.17g", p->best);
    size_t n = (size_t)snprintf(b, cap, ",\n  \"lr_plateau\": {\"lr\": %.17g, \"best\": %s, \"bad\": %lld, \"good\": %lld, "
                                "\"cooldown\": %lld, \"warmup\": %lld, \"evaluations\": %lld, \"reset_left\": %lld, "
                                "\"sum\": %.17g, \"values\": [", p->lr, best, (long long)p->bad, (long long)p->good,
                                (long long)p->cooldown, (long long)p->warmup, (long long)p->evals, (long long)p->reset_left, p->sum);
    for (int64_t i = 0; i < p->n_values && n < cap; i++) n += (size_t)snprintf(b + n, cap - n, i ? ", %.17g" : "%.17g", p->values[i]);
    if (n < cap) n += (size_t)snprintf(b + n, cap - n, "]}");
    return (int)n;
}

static zt_result zt__ckpt_read_plateau(const zt__json *j, int t, zt_plateau *p) {
    if (t < 0) return ZT_OK; /* saved under another schedule: this one starts anew */
    if (j->tok[t].type != JSMN_OBJECT) return zt__json_type_error(j, t, "lr_plateau", "an object");
    static const char *const keys[10] = {"bad", "good", "cooldown", "warmup", "evaluations", "reset_left", "lr", "sum",
                                         "best", "values"};
    int at[10];
    for (int k = 0; k < 10; k++)
        if ((at[k] = zt__json_get(j, t, keys[k])) < 0)
            return zt_fail(ZT_ERROR_FORMAT, "%s: lr_plateau.%s is missing", j->file, keys[k]);
    int64_t *counters[6] = {&p->bad, &p->good, &p->cooldown, &p->warmup, &p->evals, &p->reset_left};
    zt_result r = ZT_OK;
    for (int k = 0; k < 6 && r == ZT_OK; k++) r = zt__json_int(j, at[k], keys[k], counters[k]);
    if (r == ZT_OK) r = zt__json_number(j, at[6], "lr", &p->lr);
    if (r == ZT_OK) r = zt__json_number(j, at[7], "sum", &p->sum);
    if (r == ZT_OK && !zt__json_is_null(j, at[8])) r = zt__json_number(j, at[8], "best", &p->best);
    if (r != ZT_OK) return r;
    if (j->tok[at[9]].type != JSMN_ARRAY) return zt__json_type_error(j, at[9], "values", "an array of numbers");
    if (j->tok[at[9]].size > ZT_PLATEAU_WINDOW)
        return zt_fail(ZT_ERROR_FORMAT, "%s: lr_plateau.values holds %d numbers, more than the %d of zt's window", j->file,
                       j->tok[at[9]].size, ZT_PLATEAU_WINDOW);
    p->n_values = j->tok[at[9]].size;
    for (int64_t i = 0; i < p->n_values && r == ZT_OK; i++) r = zt__json_number(j, at[9] + 1 + (int)i, "values", &p->values[i]);
    for (int k = 0; k < 6 && r == ZT_OK; k++)
        if (*counters[k] < 0)
            r = zt_fail(ZT_ERROR_FORMAT, "%s: lr_plateau.%s is %lld, and counts are 0 or more", j->file, keys[k],
                        (long long)*counters[k]);
    if (r == ZT_OK && !(p->lr >= 0 && isfinite(p->lr) && isfinite(p->sum)))
        r = zt_fail(ZT_ERROR_FORMAT, "%s: lr_plateau's lr %g and sum %g should be finite (and the lr 0 or more)", j->file,
                    p->lr, p->sum);
    return r;
}

static zt_result zt__ckpt_write_state(zt_engine *e, const char *path, const zt_data *data) {
    int64_t epoch = 0, index = 0;
    if (data) zt_data_cursor(data, &epoch, &index);
    const zt_options *o = &e->opt;
    int n = snprintf(e->ckpt_text, e->ckpt_text_bytes,
                     "{\n  \"zt_version\": \"%s\",\n  \"global_step\": %lld,\n  \"adam_step\": %lld,\n"
                     "  \"schedule_step\": %lld,\n  \"loss_scale\": %.9g,\n  \"hysteresis_left\": %d,\n"
                     "  \"last_overflow\": %lld,\n  \"scaler_iter\": %lld,\n  \"data_epoch\": %lld,\n"
                     "  \"data_index\": %lld,\n  \"world_size\": %d,\n  \"zero_stage\": %d,\n  \"parameters\": %d,\n"
                     "  \"settings\": {\"precision\": \"%s\", \"micro_batch\": %lld, \"seq_len\": %lld, "
                     "\"gradient_accumulation_steps\": %lld, \"learning_rate\": %.9g, \"weight_decay\": %.9g, "
                     "\"betas\": [%.9g, %.9g], \"eps\": %.9g, \"max_grad_norm\": %.9g, \"warmup_steps\": %lld, "
                     "\"max_steps\": %lld, \"seed\": %llu}",
                     ZT_VERSION_STRING, (long long)e->step, (long long)e->adam_step, (long long)e->sched_step,
                     (double)e->scaler.scale, e->scaler.hysteresis_left, (long long)e->scaler.last_overflow, (long long)e->scaler.iter,
                     (long long)epoch, (long long)index, e->world, e->stage, zt__ckpt_items(e, NULL),
                     o->precision == ZT_PRECISION_BF16 ? "bf16" : o->precision == ZT_PRECISION_FP16 ? "fp16" : "fp32",
                     (long long)o->micro_batch, (long long)e->T, (long long)o->grad_accum, (double)o->lr,
                     (double)o->weight_decay, (double)o->beta1, (double)o->beta2, (double)o->eps,
                     (double)o->max_grad_norm, (long long)o->warmup_steps, (long long)o->max_steps,
                     (unsigned long long)o->seed);
    ZT_ASSERT(n > 0 && (size_t)n < e->ckpt_text_bytes);
    if (zt__metric_schedule(o->schedule)) n += zt__ckpt_plateau_text(&e->plateau, e->ckpt_text + n, e->ckpt_text_bytes - (size_t)n);
    ZT_ASSERT((size_t)n + 4 < e->ckpt_text_bytes);
    n += snprintf(e->ckpt_text + n, e->ckpt_text_bytes - (size_t)n, "\n}\n");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return zt_fail(ZT_ERROR_IO, "cannot create %s: %s", path, strerror(errno));
    zt_result r = zt__pwrite_all(fd, e->ckpt_text, (size_t)n, 0, path);
    if (r == ZT_OK && fsync(fd) != 0) r = zt_fail(ZT_ERROR_IO, "cannot sync %s: %s", path, strerror(errno));
    close(fd);
    return r;
}

/* removes a checkpoint directory zt wrote (its two files, the trainer_state.json a trainer such as zt_train keeps
   beside them, then the directory) */
static void zt__ckpt_rmdir(const char *path) {
    char f[ZT__PATH];
    if (zt__path(f, path, ZT__CKPT_TENSORS) == ZT_OK) unlink(f);
    if (zt__path(f, path, ZT__CKPT_STATE) == ZT_OK) unlink(f);
    if (zt__path(f, path, "trainer_state.json") == ZT_OK) unlink(f);
    rmdir(path);
}

ZT_API zt_result zt_remove_checkpoint(const char *dir, int64_t step) {
    char tag[64], path[ZT__PATH];
    snprintf(tag, sizeof tag, "global_step%lld", (long long)step);
    zt_result r = zt__path(path, dir, tag);
    if (r == ZT_OK) zt__ckpt_rmdir(path);
    return r;
}

ZT_API int64_t zt_engine_step(const zt_engine *e) { return e->step; }

ZT_API zt_result zt_save(zt_engine *e, const char *dir, const zt_data *data) {
    char tag[64], final[ZT__PATH], tmp[ZT__PATH], file[ZT__PATH], old[ZT__PATH], latest[ZT__PATH];
    zt_result r;
    if (e->rank > 0) return zt__ckpt_write_tensors(e, NULL); /* rank 0 writes what all hold */
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return zt_fail(ZT_ERROR_IO, "cannot create the checkpoint directory %s: %s", dir, strerror(errno));
    snprintf(tag, sizeof tag, "global_step%lld", (long long)e->step);
    if ((r = zt__path(final, dir, tag)) || (r = zt__path(tmp, dir, "tmp")) || (r = zt__path(old, dir, "old")) ||
        (r = zt__path(latest, dir, "latest")))
        return r;
    /* DIR/global_step{N}.tmp: written whole, then renamed */
    if (snprintf(tmp, sizeof tmp, "%s.tmp", final) >= (int)sizeof tmp ||
        snprintf(old, sizeof old, "%s.old", final) >= (int)sizeof old)
        return zt_fail(ZT_ERROR_INVALID, "the path %s is too long", final);
    zt__ckpt_rmdir(tmp); /* what a killed save left */
    if (mkdir(tmp, 0755) != 0) return zt_fail(ZT_ERROR_IO, "cannot create %s: %s", tmp, strerror(errno));
    if ((r = zt__path(file, tmp, ZT__CKPT_TENSORS)) || (r = zt__ckpt_write_tensors(e, file))) return r;
    if ((r = zt__path(file, tmp, ZT__CKPT_STATE)) || (r = zt__ckpt_write_state(e, file, data))) return r;
    if ((r = zt__fsync_path(tmp)) != ZT_OK) return r;
    int replacing = rename(final, old) == 0;
    if (rename(tmp, final) != 0) return zt_fail(ZT_ERROR_IO, "cannot rename %s to %s: %s", tmp, final, strerror(errno));
    if (replacing) zt__ckpt_rmdir(old);
    if ((r = zt__fsync_path(dir)) != ZT_OK) return r;
    /* then `latest`, the same way */
    if ((r = zt__path(file, dir, "latest.tmp")) != ZT_OK) return r;
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return zt_fail(ZT_ERROR_IO, "cannot create %s: %s", file, strerror(errno));
    r = zt__pwrite_all(fd, tag, strlen(tag), 0, file);
    if (r == ZT_OK && fsync(fd) != 0) r = zt_fail(ZT_ERROR_IO, "cannot sync %s: %s", file, strerror(errno));
    close(fd);
    if (r != ZT_OK) return r;
    if (rename(file, latest) != 0) return zt_fail(ZT_ERROR_IO, "cannot rename %s: %s", file, strerror(errno));
    return zt__fsync_path(dir);
}

/* ---- loading ---- */

static zt_result zt__ckpt_int(const zt__json *j, const char *key, int64_t *out) {
    int t = zt__json_get(j, 0, key);
    if (t < 0) return zt_fail(ZT_ERROR_FORMAT, "%s: \"%s\" is missing", j->file, key);
    return zt__json_int(j, t, key, out);
}

/* reads a checkpoint's tensors into the engine; every expected tensor must be there with its shape */
static zt_result zt__ckpt_read_tensors(zt_engine *e, const char *path) {
    const uint8_t *map = NULL;
    size_t bytes = 0;
    zt_result r = zt__map(path, &map, &bytes);
    if (r != ZT_OK) return r;
    zt__json j;
    uint64_t hlen = 0;
    for (int i = 0; i < 8 && bytes >= 8; i++) hlen |= (uint64_t)map[i] << (8 * i);
    void *mem = NULL;
    if (bytes < 8 || hlen > bytes - 8) {
        r = zt_fail(ZT_ERROR_FORMAT, "%s: the header length %llu does not fit in the file's %zu bytes", path,
                    (unsigned long long)hlen, bytes);
        goto done;
    }
    {
        size_t tokens = hlen / 2 + 64; /* a token needs at least two characters */
        mem = malloc(tokens * sizeof(jsmntok_t) + 64); /* load time, freed below */
        zt_arena a;
        zt_arena_init(&a, "checkpoint header", mem, tokens * sizeof(jsmntok_t) + 64);
        if (!mem || (r = zt__json_parse(&j, &a, path, (const char *)map + 8, (size_t)hlen)) != ZT_OK) {
            if (!mem) r = zt_fail(ZT_ERROR_MEMORY, "out of memory reading %s", path);
            goto done;
        }
    }
    {
        /* every tensor is checked before any is copied: a bad file leaves the engine as it was */
        uint64_t data_bytes = bytes - 8 - hlen;
        const uint8_t *data = map + 8 + hlen;
        int n_items = zt__ckpt_items(e, e->ckpt_items);
        int64_t *offsets = (int64_t *)malloc(sizeof(int64_t) * (size_t)(n_items + 1)); /* load time */
        if (!offsets) {
            r = zt_fail(ZT_ERROR_MEMORY, "out of memory reading %s", path);
            goto done;
        }
        for (int i = 0; i < n_items && r == ZT_OK; i++) {
            zt__ckpt_item it = e->ckpt_items[i];
            const zt__param *pr = &e->params[it.param];
            char key[512];
            snprintf(key, sizeof key, "%s%s", pr->name, zt__ckpt_suffix[it.what]);
            int t = zt__json_get(&j, 0, key);
            if (t < 0) {
                r = zt_fail(ZT_ERROR_FORMAT, "%s has no tensor \"%s\": it was saved from another model", path, key);
                break;
            }
            char dtype[16] = "";
            int to = zt__json_get(&j, t, "data_offsets"), ts = zt__json_get(&j, t, "shape");
            zt__json_string(&j, zt__json_get(&j, t, "dtype"), "dtype", dtype, sizeof dtype);
            int64_t n = zt__param_host_numel(e, pr), b0 = -1, b1 = -1, count = 1;
            if (to >= 0 && j.tok[to].type == JSMN_ARRAY && j.tok[to].size == 2) {
                zt__json_int(&j, to + 1, "data_offsets", &b0);
                zt__json_int(&j, to + 2, "data_offsets", &b1);
            }
            if (ts >= 0 && j.tok[ts].type == JSMN_ARRAY)
                for (int d = 0, c = ts + 1; d < j.tok[ts].size; d++, c++) {
                    int64_t v = -1;
                    zt__json_int(&j, c, "shape", &v);
                    count = v >= 0 && count <= INT64_MAX / (v ? v : 1) ? count * v : -1;
                }
            if (strcmp(dtype, "F32") != 0 || count != n || b0 < 0 || b1 - b0 != n * 4 || (uint64_t)b1 > data_bytes)
                r = zt_fail(ZT_ERROR_FORMAT, "%s: tensor \"%s\" should be F32 with %lld elements inside the file; found "
                            "dtype \"%s\", %lld elements, bytes [%lld, %lld) of %llu", path, key, (long long)n, dtype,
                            (long long)count, (long long)b0, (long long)b1, (unsigned long long)data_bytes);
            offsets[i] = b0;
        }
        for (int i = 0; i < n_items && r == ZT_OK; i++) { /* each rank copies the parts it holds */
            zt__ckpt_item it = e->ckpt_items[i];
            const zt__param *pr = &e->params[it.param];
            int64_t n = zt__param_host_numel(e, pr);
            for (int64_t i0 = 0; i0 < n; i0 += ZT__STAGE_FLOATS) {
                int64_t k = ZT__MIN(ZT__STAGE_FLOATS, n - i0);
                memcpy(e->h_stage, data + offsets[i] + i0 * 4, (size_t)k * 4);
                zt__group_write(e, &e->groups[pr->block], it.what, pr->offset + i0, k);
            }
        }
        zt__weights_changed(e);
        free(offsets);
        zt_stream_sync(e->s);
    }
done:
    free(mem);
    if (map) munmap((void *)(uintptr_t)map, bytes);
    return r;
}

ZT_API zt_result zt_checkpoint_path(const char *dir, char *out, size_t cap) {
    char path[ZT__PATH], file[ZT__PATH], tag[256] = "";
    struct stat st;
    zt_result r = zt__path(file, dir, "latest");
    if (r != ZT_OK) return r;
    if (stat(file, &st) == 0) {
        FILE *f = fopen(file, "r");
        if (!f || !fgets(tag, sizeof tag, f)) {
            if (f) fclose(f);
            return zt_fail(ZT_ERROR_IO, "cannot read %s", file);
        }
        fclose(f);
        tag[strcspn(tag, " \t\r\n")] = 0;
        if (!tag[0] || strchr(tag, '/')) return zt_fail(ZT_ERROR_FORMAT, "%s should name a checkpoint, found \"%s\"", file, tag);
        if ((r = zt__path(path, dir, tag)) != ZT_OK) return r;
        char old[ZT__PATH]; /* a save of the same step killed between its two renames left only .old */
        if (stat(path, &st) != 0 && snprintf(old, sizeof old, "%s.old", path) < (int)sizeof old && stat(old, &st) == 0)
            snprintf(path, sizeof path, "%s", old);
    } else {
        snprintf(path, sizeof path, "%s", dir);
        if ((r = zt__path(file, path, ZT__CKPT_STATE)) != ZT_OK) return r;
        if (stat(file, &st) != 0)
            return zt_fail(ZT_ERROR_IO, "%s has no `latest` file and is not a checkpoint (no %s)", dir, ZT__CKPT_STATE);
    }
    if (snprintf(out, cap, "%s", path) >= (int)cap) return zt_fail(ZT_ERROR_INVALID, "the path %s is too long", path);
    return ZT_OK;
}

ZT_API zt_result zt_load(zt_engine *e, const char *dir, zt_data *data) {
    char path[ZT__PATH], file[ZT__PATH];
    zt_result r = zt_checkpoint_path(dir, path, sizeof path);
    if (r != ZT_OK) return r;
    /* the state */
    if ((r = zt__path(file, path, ZT__CKPT_STATE)) != ZT_OK) return r;
    size_t cap = 1 << 20;
    void *mem = malloc(cap); /* load time */
    if (!mem) return zt_fail(ZT_ERROR_MEMORY, "out of memory reading %s", file);
    zt_arena a;
    zt_arena_init(&a, "checkpoint state", mem, cap);
    char *text = NULL;
    size_t len = 0;
    zt__json j;
    int64_t step = 0, adam = 0, sched = 0, hyst = 0, last = 0, iter = 0, epoch = 0, index = 0, world = 0, params = 0;
    double scale = 1;
    r = zt__read_file(&a, file, &text, &len);
    if (r == ZT_OK) r = zt__json_parse(&j, &a, file, text, len);
    if (r == ZT_OK && !(r = zt__ckpt_int(&j, "global_step", &step)) && !(r = zt__ckpt_int(&j, "adam_step", &adam)) &&
        !(r = zt__ckpt_int(&j, "schedule_step", &sched)) && !(r = zt__ckpt_int(&j, "hysteresis_left", &hyst)) &&
        !(r = zt__ckpt_int(&j, "last_overflow", &last)) && !(r = zt__ckpt_int(&j, "scaler_iter", &iter)) &&
        !(r = zt__ckpt_int(&j, "data_epoch", &epoch)) && !(r = zt__ckpt_int(&j, "data_index", &index)) &&
        !(r = zt__ckpt_int(&j, "world_size", &world)) && !(r = zt__ckpt_int(&j, "parameters", &params)))
        r = zt__json_number(&j, zt__json_get(&j, 0, "loss_scale"), "loss_scale", &scale);
    zt_plateau plateau = zt_plateau_init(&e->opt);
    if (r == ZT_OK && zt__metric_schedule(e->opt.schedule)) r = zt__ckpt_read_plateau(&j, zt__json_get(&j, 0, "lr_plateau"), &plateau);
    int64_t saved_T = e->T, saved_B = e->opt.micro_batch, saved_gas = e->opt.grad_accum;
    if (r == ZT_OK) {
        int set = zt__json_get(&j, 0, "settings");
        zt__json_int(&j, zt__json_get(&j, set, "seq_len"), "settings.seq_len", &saved_T);
        zt__json_int(&j, zt__json_get(&j, set, "micro_batch"), "settings.micro_batch", &saved_B);
        zt__json_int(&j, zt__json_get(&j, set, "gradient_accumulation_steps"), "settings.gradient_accumulation_steps", &saved_gas);
    }
    free(mem);
    if (r != ZT_OK) return r;
    if (step < 0 || adam < 0 || adam > step || sched < 0 || sched > step || iter < 0 || last < -1 || epoch < 0 ||
        index < 0 || !(scale > 0 && isfinite(scale)))
        return zt_fail(ZT_ERROR_FORMAT, "%s: the counters or the loss scale are out of range (global_step %lld, adam_step "
                       "%lld, schedule_step %lld, loss_scale %g)", file, (long long)step, (long long)adam, (long long)sched, scale);
    /* the same step: rows of the same length, as many a step (any split across ranks and micro-batches) */
    int64_t saved_rows = saved_B * saved_gas * (world > 0 ? world : 1), rows = e->opt.micro_batch * e->opt.grad_accum * e->world;
    if (saved_T != e->T || saved_rows != rows)
        return zt_fail(ZT_ERROR_INVALID, "%s was saved with --seq_len %lld and %lld rows a step (%lld ranks x "
                       "--per_device_train_batch_size %lld x --gradient_accumulation_steps %lld); this run has %lld and "
                       "%lld (%d x %lld x %lld): resume with the same rows a step, split any way", file, (long long)saved_T,
                       (long long)saved_rows, (long long)world, (long long)saved_B, (long long)saved_gas, (long long)e->T,
                       (long long)rows, e->world, (long long)e->opt.micro_batch, (long long)e->opt.grad_accum);
    if (params != zt__ckpt_items(e, NULL))
        return zt_fail(ZT_ERROR_FORMAT, "%s holds %lld tensors, this model has %d: it was saved from another model", file,
                       (long long)params, zt__ckpt_items(e, NULL));
    /* tensors are saved whole and unpadded: any world size and ZeRO stage resumes them */
    if ((r = zt__path(file, path, ZT__CKPT_TENSORS)) || (r = zt__ckpt_read_tensors(e, file))) return r;
    e->step = step;
    e->adam_step = adam;
    e->sched_step = sched;
    e->scaler.scale = (float)scale;
    e->scaler.hysteresis_left = (int)hyst; /* negative is possible: hysteresis 0 never lowers the scale */
    e->scaler.last_overflow = last;
    e->scaler.iter = iter;
    e->plateau = plateau;
    if (data) zt_data_seek(data, epoch, index);
    return ZT_OK;
}

/* ---- Hugging Face models: safetensors in and out ---- */

/* A safetensors file: 8 bytes of header length, a JSON header naming each tensor's dtype, shape and
   byte range in the data that follows. Every range is checked against the file before anything is
   read: inside it, of the size the dtype and shape give, not overlapping another. */
#define ZT__ST_FILES 256
#define ZT__ST_DIMS 8

typedef struct zt__st_entry {
    const char *name; /* into the mapped header: transformers' names have no JSON escapes */
    int name_len, file, ndim, used;
    int esize;        /* bytes per element; dtype is set only for the float types zt converts */
    zt_dtype dtype;
    int convertible;
    int64_t shape[ZT__ST_DIMS], numel;
    const uint8_t *data;
    int64_t begin, end; /* in the file's data section */
} zt__st_entry;

typedef struct zt__st {
    int n_files;
    char path[ZT__ST_FILES][ZT__PATH];
    const uint8_t *map[ZT__ST_FILES];
    size_t bytes[ZT__ST_FILES];
    zt__st_entry *e;
    int n, cap;
    void *mem[ZT__ST_FILES + 1]; /* each file's JSON tokens, and the index's */
} zt__st;

static void zt__st_close(zt__st *st) {
    for (int f = 0; f < st->n_files; f++)
        if (st->map[f]) munmap((void *)(uintptr_t)st->map[f], st->bytes[f]);
    for (int f = 0; f <= ZT__ST_FILES; f++) free(st->mem[f]);
    free(st->e);
    memset(st, 0, sizeof *st);
}

static int zt__st_order(const void *a, const void *b) {
    const zt__st_entry *x = (const zt__st_entry *)a, *y = (const zt__st_entry *)b;
    return x->file != y->file ? (x->file < y->file ? -1 : 1) : x->begin < y->begin ? -1 : x->begin > y->begin;
}

/* the element size of a safetensors dtype, and whether zt converts it (F32, F16, BF16); 0 if unknown */
static int zt__st_dtype(const char *s, zt_dtype *dt, int *convertible) {
    static const struct { const char *name; int size; int dt; } k[] = {
        {"F32", 4, ZT_F32}, {"F16", 2, ZT_F16}, {"BF16", 2, ZT_BF16}, {"F64", 8, -1}, {"I64", 8, -1}, {"U64", 8, -1},
        {"I32", 4, -1}, {"U32", 4, -1}, {"I16", 2, -1}, {"U16", 2, -1}, {"I8", 1, -1}, {"U8", 1, -1}, {"BOOL", 1, -1},
        {"F8_E4M3", 1, -1}, {"F8_E5M2", 1, -1}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (strcmp(s, k[i].name) == 0) {
            *convertible = k[i].dt >= 0;
            if (k[i].dt >= 0) *dt = (zt_dtype)k[i].dt;
            return k[i].size;
        }
    return 0;
}

/* the entries of file f (st->map[f], st->bytes[f] bytes), every one checked */
static zt_result zt__st_parse(zt__st *st, int f) {
    const char *path = st->path[f];
    zt_result r = ZT_OK;
    const uint8_t *m = st->map[f];
    size_t size = st->bytes[f];
    uint64_t hlen = 0;
    for (int i = 0; i < 8 && size >= 8; i++) hlen |= (uint64_t)m[i] << (8 * i);
    if (size < 8 || hlen > size - 8 || hlen > ((uint64_t)100 << 20))
        return zt_fail(ZT_ERROR_FORMAT, "%s: the header length %llu does not fit in the file's %zu bytes: not a "
                       "safetensors file, or a truncated one", path, (unsigned long long)hlen, size);
    zt_arena a;
    st->mem[f] = zt__setup_arena(&a, "safetensors header", zt__json_token_bytes((size_t)hlen));
    zt__json j;
    if ((r = zt__json_parse(&j, &a, path, (const char *)m + 8, (size_t)hlen)) != ZT_OK) return r;
    uint64_t data_bytes = size - 8 - hlen;
    int t = 1;
    for (int k = 0; k < j.tok[0].size; k++, t = zt__json_skip(&j, t + 1)) {
        const jsmntok_t *key = &j.tok[t];
        if (zt__json_eq(&j, t, "__metadata__")) continue;
        if (memchr(j.text + key->start, '\\', (size_t)(key->end - key->start)))
            return zt_fail(ZT_ERROR_FORMAT, "%s: a tensor name with a JSON escape in it, which zt does not read", path);
        int v = t + 1;
        char name[256], dtype[16] = "";
        snprintf(name, sizeof name, "%.*s", key->end - key->start, j.text + key->start);
        if (j.tok[v].type != JSMN_OBJECT) return zt_fail(ZT_ERROR_FORMAT, "%s: tensor \"%s\" is not an object", path, name);
        if (st->n == st->cap) {
            int cap = st->cap ? 2 * st->cap : 256;
            zt__st_entry *e = (zt__st_entry *)realloc(st->e, sizeof *e * (size_t)cap); /* load time */
            if (!e) return zt_fail(ZT_ERROR_MEMORY, "out of memory reading %s", path);
            st->e = e, st->cap = cap;
        }
        zt__st_entry *e = &st->e[st->n];
        memset(e, 0, sizeof *e);
        e->name = j.text + key->start, e->name_len = key->end - key->start, e->file = f;
        int td = zt__json_get(&j, v, "dtype"), ts = zt__json_get(&j, v, "shape"), to = zt__json_get(&j, v, "data_offsets");
        if (td < 0 || ts < 0 || to < 0)
            return zt_fail(ZT_ERROR_FORMAT, "%s: tensor \"%s\" needs \"dtype\", \"shape\" and \"data_offsets\"", path, name);
        if ((r = zt__json_string(&j, td, "dtype", dtype, sizeof dtype)) != ZT_OK) return r;
        if (!(e->esize = zt__st_dtype(dtype, &e->dtype, &e->convertible)))
            return zt_fail(ZT_ERROR_FORMAT, "%s: tensor \"%s\" has the unknown dtype \"%s\"", path, name, dtype);
        if (j.tok[ts].type != JSMN_ARRAY || j.tok[ts].size > ZT__ST_DIMS)
            return zt_fail(ZT_ERROR_FORMAT, "%s: tensor \"%s\": \"shape\" must be an array of at most %d sizes", path, name,
                           ZT__ST_DIMS);
        e->ndim = j.tok[ts].size, e->numel = 1;
        for (int d = 0; d < e->ndim; d++) {
            int64_t s = -1;
            if ((r = zt__json_int(&j, ts + 1 + d, "shape", &s)) != ZT_OK) return r;
            if (s < 0 || (s > 0 && e->numel > ((int64_t)1 << 50) / s))
                return zt_fail(ZT_ERROR_FORMAT, "%s: tensor \"%s\" has a bad size %lld in its shape", path, name, (long long)s);
            e->shape[d] = s, e->numel *= s;
        }
        if (j.tok[to].type != JSMN_ARRAY || j.tok[to].size != 2 ||
            (r = zt__json_int(&j, to + 1, "data_offsets", &e->begin)) != ZT_OK ||
            (r = zt__json_int(&j, to + 2, "data_offsets", &e->end)) != ZT_OK)
            return r != ZT_OK ? r : zt_fail(ZT_ERROR_FORMAT, "%s: tensor \"%s\": \"data_offsets\" must be [begin, end]", path, name);
        if (e->begin < 0 || e->end < e->begin || (uint64_t)e->end > data_bytes || e->end - e->begin != e->numel * e->esize)
            return zt_fail(ZT_ERROR_FORMAT, "%s: tensor \"%s\" (%s, %lld elements) claims bytes [%lld, %lld) of a data section "
                           "of %llu: it should be %lld bytes inside it", path, name, dtype, (long long)e->numel,
                           (long long)e->begin, (long long)e->end, (unsigned long long)data_bytes,
                           (long long)(e->numel * e->esize));
        e->data = m + 8 + hlen + e->begin;
        st->n++;
    }
    return ZT_OK;
}

/* maps one safetensors file and adds its entries */
static zt_result zt__st_add(zt__st *st, const char *path) {
    if (st->n_files == ZT__ST_FILES) return zt_fail(ZT_ERROR_UNSUPPORTED, "%s: more than %d shards", path, ZT__ST_FILES);
    int f = st->n_files++;
    snprintf(st->path[f], ZT__PATH, "%s", path);
    zt_result r = zt__map(path, &st->map[f], &st->bytes[f]);
    return r != ZT_OK ? r : zt__st_parse(st, f);
}

/* no two tensors of a file share a byte */
static zt_result zt__st_check_overlaps(zt__st *st) {
    zt_result r = ZT_OK;
    zt__st_entry *sorted = (zt__st_entry *)malloc(sizeof *sorted * (size_t)(st->n ? st->n : 1)); /* load time */
    if (!sorted) return zt_fail(ZT_ERROR_MEMORY, "out of memory reading %s", st->path[0]);
    memcpy(sorted, st->e, sizeof *sorted * (size_t)st->n);
    qsort(sorted, (size_t)st->n, sizeof *sorted, zt__st_order);
    int last = -1; /* the non-empty tensor reaching furthest so far in this file */
    for (int i = 0; i < st->n && r == ZT_OK; i++) {
        if (sorted[i].end == sorted[i].begin) continue;
        if (last >= 0 && sorted[last].file != sorted[i].file) last = -1;
        if (last >= 0 && sorted[i].begin < sorted[last].end)
            r = zt_fail(ZT_ERROR_FORMAT, "%s: tensors \"%.*s\" and \"%.*s\" overlap (bytes %lld and %lld of the data)",
                        st->path[sorted[i].file], sorted[last].name_len, sorted[last].name, sorted[i].name_len,
                        sorted[i].name, (long long)sorted[last].begin, (long long)sorted[i].begin);
        if (last < 0 || sorted[i].end > sorted[last].end) last = i;
    }
    free(sorted);
    return r;
}

/* model.safetensors, or every shard model.safetensors.index.json names; then no two ranges overlap */
static zt_result zt__st_open(zt__st *st, const char *dir) {
    memset(st, 0, sizeof *st);
    char path[ZT__PATH];
    zt_result r = zt__path(path, dir, "model.safetensors.index.json");
    struct stat sb;
    if (r == ZT_OK && stat(path, &sb) == 0) {
        zt_arena a;
        st->mem[ZT__ST_FILES] = zt__setup_arena(&a, "safetensors index", (size_t)sb.st_size * 2 + zt__json_token_bytes((size_t)sb.st_size));
        char *text = NULL;
        size_t len = 0;
        zt__json j;
        if ((r = zt__read_file(&a, path, &text, &len)) != ZT_OK || (r = zt__json_parse(&j, &a, path, text, len)) != ZT_OK)
            return r;
        int map = zt__json_get(&j, 0, "weight_map");
        if (map < 0 || j.tok[map].type != JSMN_OBJECT)
            return zt_fail(ZT_ERROR_FORMAT, "%s: \"weight_map\" must be an object of tensor names and files", path);
        int t = map + 1;
        for (int k = 0; k < j.tok[map].size && r == ZT_OK; k++, t = zt__json_skip(&j, t + 1)) {
            char file[512], shard[ZT__PATH];
            if ((r = zt__json_string(&j, t + 1, "weight_map", file, sizeof file)) != ZT_OK) break;
            if (strchr(file, '/') || file[0] == '.')
                return zt_fail(ZT_ERROR_FORMAT, "%s: shard \"%s\" is not a file name in the same directory", path, file);
            if ((r = zt__path(shard, dir, file)) != ZT_OK) break;
            int seen = 0;
            for (int f = 0; f < st->n_files && !seen; f++) seen = strcmp(st->path[f], shard) == 0;
            if (!seen) r = zt__st_add(st, shard);
        }
        if (r != ZT_OK) return r;
    } else {
        if ((r = zt__path(path, dir, "model.safetensors")) != ZT_OK) return r;
        if (stat(path, &sb) != 0)
            return zt_fail(ZT_ERROR_IO, "%s has no model.safetensors (nor model.safetensors.index.json): zt reads weights "
                           "in safetensors only (transformers' save_pretrained writes them)", dir);
        if ((r = zt__st_add(st, path)) != ZT_OK) return r;
    }
    return zt__st_check_overlaps(st);
}

static zt__st_entry *zt__st_find(zt__st *st, const char *name) {
    size_t n = strlen(name);
    for (int i = 0; i < st->n; i++)
        if ((size_t)st->e[i].name_len == n && memcmp(st->e[i].name, name, n) == 0) return &st->e[i];
    return NULL;
}

static int zt__ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* GPT-2's Conv1D weights are stored (in, out); zt's weights are (out, in) as nn.Linear's */
static int zt__hf_transposed(const zt_engine *e, const char *name) {
    return e->has_cfg && strcmp(e->cfg.model_type, "gpt2") == 0 &&
           (zt__ends_with(name, "attn.c_attn.weight") || zt__ends_with(name, "attn.c_proj.weight") ||
            zt__ends_with(name, "mlp.c_fc.weight") || zt__ends_with(name, "mlp.c_proj.weight"));
}

/* tensors in transformers' files that are not parameters: GPT-2's causal-mask buffers, rotary tables */
static int zt__hf_buffer(const char *name, int n) {
    char s[256];
    snprintf(s, sizeof s, "%.*s", n, name);
    return zt__ends_with(s, ".attn.bias") || zt__ends_with(s, ".attn.masked_bias") || zt__ends_with(s, "rotary_emb.inv_freq");
}

ZT_API int zt_hf_has_weights(const char *dir) {
    char path[ZT__PATH];
    struct stat sb;
    return (zt__path(path, dir, "model.safetensors") == ZT_OK && stat(path, &sb) == 0) ||
           (zt__path(path, dir, "model.safetensors.index.json") == ZT_OK && stat(path, &sb) == 0);
}

ZT_API zt_result zt_load_hf(zt_engine *e, const char *dir) {
    zt__st *stp = (zt__st *)malloc(sizeof *stp); /* load time: a megabyte of paths */
    if (!stp) return zt_fail(ZT_ERROR_MEMORY, "out of memory loading %s", dir);
    zt_result r = zt__st_open(stp, dir);
    int n_params = zt_param_count(e);
    zt__st_entry **found = (zt__st_entry **)calloc((size_t)(n_params ? n_params : 1), sizeof *found); /* load time */
    if (!found && r == ZT_OK) r = zt_fail(ZT_ERROR_MEMORY, "out of memory loading %s", dir);
    /* every parameter found, with its shape and a dtype zt converts, before any is copied */
    for (int p = 0; p < n_params && r == ZT_OK; p++) {
        zt_shape s;
        const char *name = zt_param_name(e, p, &s);
        if (!name) continue;
        zt__st_entry *t = zt__st_find(stp, name);
        if (!t && strncmp(name, "transformer.", 12) == 0) t = zt__st_find(stp, name + 12); /* old GPT-2 files */
        if (!t) {
            r = zt_fail(ZT_ERROR_FORMAT, "%s has no tensor \"%s\", which its config.json's model has", dir, name);
            break;
        }
        int tr = zt__hf_transposed(e, name), same = t->ndim == s.ndim;
        for (int d = 0; d < s.ndim && same; d++) same = t->shape[d] == s.d[tr ? s.ndim - 1 - d : d];
        if (!same || !t->convertible) {
            char want[96] = "", got[96] = "";
            for (int d = 0; d < s.ndim; d++)
                snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", d ? ", " : "", (long long)s.d[tr ? s.ndim - 1 - d : d]);
            for (int d = 0; d < t->ndim; d++)
                snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", d ? ", " : "", (long long)t->shape[d]);
            r = zt_fail(ZT_ERROR_FORMAT, "%s: tensor \"%s\" should be F32, F16 or BF16 of shape [%s] (config.json), found "
                        "shape [%s]%s", stp->path[t->file], name, want, got, t->convertible ? "" : " of another dtype");
            break;
        }
        t->used = 1;
        found[p] = t;
    }
    int unused = 0;
    const zt__st_entry *first = NULL;
    for (int i = 0; i < stp->n && r == ZT_OK; i++)
        if (!stp->e[i].used && !zt__hf_buffer(stp->e[i].name, stp->e[i].name_len) &&
            !(stp->e[i].name_len == 14 && memcmp(stp->e[i].name, "lm_head.weight", 14) == 0 && e->has_cfg && e->cfg.tied_embeddings)) {
            if (!first) first = &stp->e[i];
            unused++;
        }
    if (unused && first)
        zt_log(ZT_LOG_WARN, "%s: %d tensor%s the model does not use (\"%.*s\"%s)", dir, unused, unused > 1 ? "s" : "",
               first->name_len, first->name, unused > 1 ? ", ..." : "");
    /* then each one, widened to f32 (and GPT-2's Conv1D weights transposed) */
    for (int p = 0; p < n_params && r == ZT_OK; p++) {
        zt__st_entry *t = found[p];
        if (!t) continue;
        float *buf = (float *)malloc(sizeof(float) * (size_t)(t->numel ? t->numel : 1)); /* load time */
        if (!buf) {
            r = zt_fail(ZT_ERROR_MEMORY, "out of memory loading %s", dir);
            break;
        }
        zt_shape s;
        const char *name = zt_param_name(e, p, &s);
        int tr = zt__hf_transposed(e, name);
        int64_t rows = tr ? t->shape[0] : 1, cols = tr ? t->shape[1] : t->numel;
        for (int64_t i = 0; i < rows; i++)
            for (int64_t k = 0; k < cols; k++) {
                int64_t src = i * cols + k, dst = tr ? k * rows + i : src;
                uint8_t raw[4];
                memcpy(raw, t->data + src * t->esize, (size_t)t->esize);
                buf[dst] = (float)zt__load(raw, t->dtype, 0);
            }
        r = zt_param_set(e, name, buf, t->numel);
        free(buf);
    }
    free(found);
    zt__st_close(stp);
    free(stp);
    return r;
}

/* one tensor's JSON entry in a safetensors header */
static int zt__st_header_entry(char *b, size_t cap, const char *name, const char *dtype, const int64_t *shape, int ndim,
                               int64_t begin, int64_t end) {
    int n = snprintf(b, cap, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", name, dtype);
    for (int d = 0; d < ndim; d++) n += snprintf(b + n, cap - (size_t)n, d ? ",%lld" : "%lld", (long long)shape[d]);
    n += snprintf(b + n, cap - (size_t)n, "],\"data_offsets\":[%lld,%lld]}", (long long)begin, (long long)end);
    return n;
}

ZT_API zt_result zt_export_hf(zt_engine *e, const char *dir, zt_dtype dtype) {
    if (dtype != ZT_F32 && dtype != ZT_BF16 && dtype != ZT_F16)
        return zt_fail(ZT_ERROR_INVALID, "an export is f32, bf16 or f16, not %s", zt_dtype_name(dtype));
    int n_params = zt_param_count(e), writer = e->rank == 0;
    size_t es = zt_dtype_size(dtype), cap = 4096;
    for (int p = 0; p < n_params; p++) cap += e->params[p].name ? strlen(e->params[p].name) + 160 : 0;
    char *header = (char *)malloc(cap), path[ZT__PATH], tmp[ZT__PATH]; /* export time */
    zt_result r = header ? ZT_OK : zt_fail(ZT_ERROR_MEMORY, "out of memory exporting");
    if (r == ZT_OK && writer && mkdir(dir, 0755) != 0 && errno != EEXIST)
        r = zt_fail(ZT_ERROR_IO, "cannot create the export directory %s: %s", dir, strerror(errno));
    if (r == ZT_OK) r = zt__path(path, dir, "model.safetensors");
    if (r == ZT_OK && snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) r = zt_fail(ZT_ERROR_INVALID, "%s is too long", path);
    /* the header: each parameter in transformers' name and layout */
    size_t n = header ? (size_t)snprintf(header, cap, "{\"__metadata__\":{\"format\":\"pt\"}") : 0;
    int64_t off = 0;
    for (int p = 0; p < n_params && r == ZT_OK; p++) {
        zt_shape s;
        const char *name = zt_param_name(e, p, &s);
        if (!name) continue;
        int64_t shape[ZT_MAX_DIMS], numel = 1;
        int tr = zt__hf_transposed(e, name);
        for (int d = 0; d < s.ndim; d++) shape[d] = s.d[tr ? s.ndim - 1 - d : d], numel *= s.d[d];
        n += (size_t)zt__st_header_entry(header + n, cap - n, name, dtype == ZT_F32 ? "F32" : dtype == ZT_BF16 ? "BF16" : "F16",
                                         shape, s.ndim, off, off + numel * (int64_t)es);
        off += numel * (int64_t)es;
    }
    if (header) n += (size_t)snprintf(header + n, cap - n, "}");
    while (header && n % 8) header[n++] = ' ';
    int fd = -1;
    if (r == ZT_OK && writer && (fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
        r = zt_fail(ZT_ERROR_IO, "cannot create %s: %s", tmp, strerror(errno));
    uint8_t len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (uint8_t)((uint64_t)n >> (8 * i));
    if (fd >= 0) r = zt__pwrite_all(fd, len8, 8, 0, tmp);
    if (fd >= 0 && r == ZT_OK) r = zt__pwrite_all(fd, header, n, 8, tmp);
    /* the tensors: gathered from the ranks (a collective under ZeRO: every rank runs this loop) */
    off_t at = (off_t)(8 + n);
    for (int p = 0; p < n_params && header; p++) {
        zt_shape s;
        const char *name = zt_param_name(e, p, &s);
        if (!name) continue;
        int64_t numel = 1;
        for (int d = 0; d < s.ndim; d++) numel *= s.d[d];
        float *v = (float *)malloc(sizeof(float) * (size_t)(numel ? numel : 1)); /* export time */
        uint8_t *out = (uint8_t *)malloc(es * (size_t)(numel ? numel : 1));
        if (!v || !out) zt_fatal("out of memory exporting %s", name); /* the others wait at the next collective */
        zt_result g = zt_param_get(e, name, v, numel, 0);
        if (g != ZT_OK && r == ZT_OK) r = g;
        int tr = zt__hf_transposed(e, name);
        int64_t rows = tr ? s.d[0] : 1, cols = tr ? s.d[1] : numel;
        for (int64_t i = 0; i < rows; i++)
            for (int64_t k = 0; k < cols; k++) zt__store(out, dtype, tr ? k * rows + i : i * cols + k, v[i * cols + k]);
        if (fd >= 0 && r == ZT_OK) r = zt__pwrite_all(fd, out, es * (size_t)numel, at, tmp);
        at += (off_t)(es * (size_t)numel);
        free(v), free(out);
    }
    if (fd >= 0 && r == ZT_OK && fsync(fd) != 0) r = zt_fail(ZT_ERROR_IO, "cannot sync %s: %s", tmp, strerror(errno));
    if (fd >= 0) close(fd);
    if (fd >= 0 && r == ZT_OK && rename(tmp, path) != 0) r = zt_fail(ZT_ERROR_IO, "cannot rename %s: %s", tmp, strerror(errno));
    free(header);
    /* config.json, the model's own as it was read, and the tokenizer's files beside it */
    static const char *const side[] = {"config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                                       "generation_config.json", "chat_template.jinja"};
    char src_dir[ZT__PATH] = "";
    if (e->model_path) {
        snprintf(src_dir, sizeof src_dir, "%s", e->model_path);
        size_t len = strlen(src_dir);
        if (len >= 5 && strcmp(src_dir + len - 5, ".json") == 0) {
            char *slash = strrchr(src_dir, '/');
            if (slash) *slash = 0;
            else snprintf(src_dir, sizeof src_dir, ".");
        }
    }
    for (size_t k = 0; k < sizeof side / sizeof side[0] && r == ZT_OK && writer && src_dir[0]; k++) {
        char from[ZT__PATH], to[ZT__PATH];
        struct stat sb;
        size_t len = strlen(e->model_path);
        if (k == 0 && len >= 5 && strcmp(e->model_path + len - 5, ".json") == 0) snprintf(from, sizeof from, "%s", e->model_path);
        else if ((r = zt__path(from, src_dir, side[k])) != ZT_OK) break;
        if (stat(from, &sb) != 0) continue; /* only config.json is always there */
        if ((r = zt__path(to, dir, side[k])) != ZT_OK || snprintf(tmp, sizeof tmp, "%s.tmp", to) >= (int)sizeof tmp) break;
        zt_arena a;
        void *mem = zt__setup_arena(&a, side[k], (size_t)sb.st_size + 4096);
        char *text = NULL;
        size_t tl = 0;
        if ((r = zt__read_file(&a, from, &text, &tl)) == ZT_OK) {
            int cf = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            r = cf < 0 ? zt_fail(ZT_ERROR_IO, "cannot create %s: %s", tmp, strerror(errno)) : zt__pwrite_all(cf, text, tl, 0, tmp);
            if (cf >= 0) close(cf);
            if (r == ZT_OK && rename(tmp, to) != 0) r = zt_fail(ZT_ERROR_IO, "cannot rename %s: %s", tmp, strerror(errno));
        }
        free(mem);
    }
    return r;
}

/* >>tokenizer (implementation) ----------------------------------------------------------------- */

/* made by tests/ref/make_unicode_tables.py from Unicode 14.0.0 */
static const uint32_t zt__uni_letter[][2] = { /* 648 ranges */
    {0x41, 0x5a}, {0x61, 0x7a}, {0xaa, 0xaa}, {0xb5, 0xb5}, {0xba, 0xba}, {0xc0, 0xd6}, {0xd8, 0xf6}, {0xf8, 0x2c1},
    {0x2c6, 0x2d1}, {0x2e0, 0x2e4}, {0x2ec, 0x2ec}, {0x2ee, 0x2ee}, {0x370, 0x374}, {0x376, 0x377}, {0x37a, 0x37d},
    {0x37f, 0x37f}, {0x386, 0x386}, {0x388, 0x38a}, {0x38c, 0x38c}, {0x38e, 0x3a1}, {0x3a3, 0x3f5}, {0x3f7, 0x481},
    {0x48a, 0x52f}, {0x531, 0x556}, {0x559, 0x559}, {0x560, 0x588}, {0x5d0, 0x5ea}, {0x5ef, 0x5f2}, {0x620, 0x64a},
    {0x66e, 0x66f}, {0x671, 0x6d3}, {0x6d5, 0x6d5}, {0x6e5, 0x6e6}, {0x6ee, 0x6ef}, {0x6fa, 0x6fc}, {0x6ff, 0x6ff},
    {0x710, 0x710}, {0x712, 0x72f}, {0x74d, 0x7a5}, {0x7b1, 0x7b1}, {0x7ca, 0x7ea}, {0x7f4, 0x7f5}, {0x7fa, 0x7fa},
    {0x800, 0x815}, {0x81a, 0x81a}, {0x824, 0x824}, {0x828, 0x828}, {0x840, 0x858}, {0x860, 0x86a}, {0x870, 0x887},
    {0x889, 0x88e}, {0x8a0, 0x8c9}, {0x904, 0x939}, {0x93d, 0x93d}, {0x950, 0x950}, {0x958, 0x961}, {0x971, 0x980},
    {0x985, 0x98c}, {0x98f, 0x990}, {0x993, 0x9a8}, {0x9aa, 0x9b0}, {0x9b2, 0x9b2}, {0x9b6, 0x9b9}, {0x9bd, 0x9bd},
    {0x9ce, 0x9ce}, {0x9dc, 0x9dd}, {0x9df, 0x9e1}, {0x9f0, 0x9f1}, {0x9fc, 0x9fc}, {0xa05, 0xa0a}, {0xa0f, 0xa10},
    {0xa13, 0xa28}, {0xa2a, 0xa30}, {0xa32, 0xa33}, {0xa35, 0xa36}, {0xa38, 0xa39}, {0xa59, 0xa5c}, {0xa5e, 0xa5e},
    {0xa72, 0xa74}, {0xa85, 0xa8d}, {0xa8f, 0xa91}, {0xa93, 0xaa8}, {0xaaa, 0xab0}, {0xab2, 0xab3}, {0xab5, 0xab9},
    {0xabd, 0xabd}, {0xad0, 0xad0}, {0xae0, 0xae1}, {0xaf9, 0xaf9}, {0xb05, 0xb0c}, {0xb0f, 0xb10}, {0xb13, 0xb28},
    {0xb2a, 0xb30}, {0xb32, 0xb33}, {0xb35, 0xb39}, {0xb3d, 0xb3d}, {0xb5c, 0xb5d}, {0xb5f, 0xb61}, {0xb71, 0xb71},
    {0xb83, 0xb83}, {0xb85, 0xb8a}, {0xb8e, 0xb90}, {0xb92, 0xb95}, {0xb99, 0xb9a}, {0xb9c, 0xb9c}, {0xb9e, 0xb9f},
    {0xba3, 0xba4}, {0xba8, 0xbaa}, {0xbae, 0xbb9}, {0xbd0, 0xbd0}, {0xc05, 0xc0c}, {0xc0e, 0xc10}, {0xc12, 0xc28},
    {0xc2a, 0xc39}, {0xc3d, 0xc3d}, {0xc58, 0xc5a}, {0xc5d, 0xc5d}, {0xc60, 0xc61}, {0xc80, 0xc80}, {0xc85, 0xc8c},
    {0xc8e, 0xc90}, {0xc92, 0xca8}, {0xcaa, 0xcb3}, {0xcb5, 0xcb9}, {0xcbd, 0xcbd}, {0xcdd, 0xcde}, {0xce0, 0xce1},
    {0xcf1, 0xcf2}, {0xd04, 0xd0c}, {0xd0e, 0xd10}, {0xd12, 0xd3a}, {0xd3d, 0xd3d}, {0xd4e, 0xd4e}, {0xd54, 0xd56},
    {0xd5f, 0xd61}, {0xd7a, 0xd7f}, {0xd85, 0xd96}, {0xd9a, 0xdb1}, {0xdb3, 0xdbb}, {0xdbd, 0xdbd}, {0xdc0, 0xdc6},
    {0xe01, 0xe30}, {0xe32, 0xe33}, {0xe40, 0xe46}, {0xe81, 0xe82}, {0xe84, 0xe84}, {0xe86, 0xe8a}, {0xe8c, 0xea3},
    {0xea5, 0xea5}, {0xea7, 0xeb0}, {0xeb2, 0xeb3}, {0xebd, 0xebd}, {0xec0, 0xec4}, {0xec6, 0xec6}, {0xedc, 0xedf},
    {0xf00, 0xf00}, {0xf40, 0xf47}, {0xf49, 0xf6c}, {0xf88, 0xf8c}, {0x1000, 0x102a}, {0x103f, 0x103f},
    {0x1050, 0x1055}, {0x105a, 0x105d}, {0x1061, 0x1061}, {0x1065, 0x1066}, {0x106e, 0x1070}, {0x1075, 0x1081},
    {0x108e, 0x108e}, {0x10a0, 0x10c5}, {0x10c7, 0x10c7}, {0x10cd, 0x10cd}, {0x10d0, 0x10fa}, {0x10fc, 0x1248},
    {0x124a, 0x124d}, {0x1250, 0x1256}, {0x1258, 0x1258}, {0x125a, 0x125d}, {0x1260, 0x1288}, {0x128a, 0x128d},
    {0x1290, 0x12b0}, {0x12b2, 0x12b5}, {0x12b8, 0x12be}, {0x12c0, 0x12c0}, {0x12c2, 0x12c5}, {0x12c8, 0x12d6},
    {0x12d8, 0x1310}, {0x1312, 0x1315}, {0x1318, 0x135a}, {0x1380, 0x138f}, {0x13a0, 0x13f5}, {0x13f8, 0x13fd},
    {0x1401, 0x166c}, {0x166f, 0x167f}, {0x1681, 0x169a}, {0x16a0, 0x16ea}, {0x16f1, 0x16f8}, {0x1700, 0x1711},
    {0x171f, 0x1731}, {0x1740, 0x1751}, {0x1760, 0x176c}, {0x176e, 0x1770}, {0x1780, 0x17b3}, {0x17d7, 0x17d7},
    {0x17dc, 0x17dc}, {0x1820, 0x1878}, {0x1880, 0x1884}, {0x1887, 0x18a8}, {0x18aa, 0x18aa}, {0x18b0, 0x18f5},
    {0x1900, 0x191e}, {0x1950, 0x196d}, {0x1970, 0x1974}, {0x1980, 0x19ab}, {0x19b0, 0x19c9}, {0x1a00, 0x1a16},
    {0x1a20, 0x1a54}, {0x1aa7, 0x1aa7}, {0x1b05, 0x1b33}, {0x1b45, 0x1b4c}, {0x1b83, 0x1ba0}, {0x1bae, 0x1baf},
    {0x1bba, 0x1be5}, {0x1c00, 0x1c23}, {0x1c4d, 0x1c4f}, {0x1c5a, 0x1c7d}, {0x1c80, 0x1c88}, {0x1c90, 0x1cba},
    {0x1cbd, 0x1cbf}, {0x1ce9, 0x1cec}, {0x1cee, 0x1cf3}, {0x1cf5, 0x1cf6}, {0x1cfa, 0x1cfa}, {0x1d00, 0x1dbf},
    {0x1e00, 0x1f15}, {0x1f18, 0x1f1d}, {0x1f20, 0x1f45}, {0x1f48, 0x1f4d}, {0x1f50, 0x1f57}, {0x1f59, 0x1f59},
    {0x1f5b, 0x1f5b}, {0x1f5d, 0x1f5d}, {0x1f5f, 0x1f7d}, {0x1f80, 0x1fb4}, {0x1fb6, 0x1fbc}, {0x1fbe, 0x1fbe},
    {0x1fc2, 0x1fc4}, {0x1fc6, 0x1fcc}, {0x1fd0, 0x1fd3}, {0x1fd6, 0x1fdb}, {0x1fe0, 0x1fec}, {0x1ff2, 0x1ff4},
    {0x1ff6, 0x1ffc}, {0x2071, 0x2071}, {0x207f, 0x207f}, {0x2090, 0x209c}, {0x2102, 0x2102}, {0x2107, 0x2107},
    {0x210a, 0x2113}, {0x2115, 0x2115}, {0x2119, 0x211d}, {0x2124, 0x2124}, {0x2126, 0x2126}, {0x2128, 0x2128},
    {0x212a, 0x212d}, {0x212f, 0x2139}, {0x213c, 0x213f}, {0x2145, 0x2149}, {0x214e, 0x214e}, {0x2183, 0x2184},
    {0x2c00, 0x2ce4}, {0x2ceb, 0x2cee}, {0x2cf2, 0x2cf3}, {0x2d00, 0x2d25}, {0x2d27, 0x2d27}, {0x2d2d, 0x2d2d},
    {0x2d30, 0x2d67}, {0x2d6f, 0x2d6f}, {0x2d80, 0x2d96}, {0x2da0, 0x2da6}, {0x2da8, 0x2dae}, {0x2db0, 0x2db6},
    {0x2db8, 0x2dbe}, {0x2dc0, 0x2dc6}, {0x2dc8, 0x2dce}, {0x2dd0, 0x2dd6}, {0x2dd8, 0x2dde}, {0x2e2f, 0x2e2f},
    {0x3005, 0x3006}, {0x3031, 0x3035}, {0x303b, 0x303c}, {0x3041, 0x3096}, {0x309d, 0x309f}, {0x30a1, 0x30fa},
    {0x30fc, 0x30ff}, {0x3105, 0x312f}, {0x3131, 0x318e}, {0x31a0, 0x31bf}, {0x31f0, 0x31ff}, {0x3400, 0x4dbf},
    {0x4e00, 0xa48c}, {0xa4d0, 0xa4fd}, {0xa500, 0xa60c}, {0xa610, 0xa61f}, {0xa62a, 0xa62b}, {0xa640, 0xa66e},
    {0xa67f, 0xa69d}, {0xa6a0, 0xa6e5}, {0xa717, 0xa71f}, {0xa722, 0xa788}, {0xa78b, 0xa7ca}, {0xa7d0, 0xa7d1},
    {0xa7d3, 0xa7d3}, {0xa7d5, 0xa7d9}, {0xa7f2, 0xa801}, {0xa803, 0xa805}, {0xa807, 0xa80a}, {0xa80c, 0xa822},
    {0xa840, 0xa873}, {0xa882, 0xa8b3}, {0xa8f2, 0xa8f7}, {0xa8fb, 0xa8fb}, {0xa8fd, 0xa8fe}, {0xa90a, 0xa925},
    {0xa930, 0xa946}, {0xa960, 0xa97c}, {0xa984, 0xa9b2}, {0xa9cf, 0xa9cf}, {0xa9e0, 0xa9e4}, {0xa9e6, 0xa9ef},
    {0xa9fa, 0xa9fe}, {0xaa00, 0xaa28}, {0xaa40, 0xaa42}, {0xaa44, 0xaa4b}, {0xaa60, 0xaa76}, {0xaa7a, 0xaa7a},
    {0xaa7e, 0xaaaf}, {0xaab1, 0xaab1}, {0xaab5, 0xaab6}, {0xaab9, 0xaabd}, {0xaac0, 0xaac0}, {0xaac2, 0xaac2},
    {0xaadb, 0xaadd}, {0xaae0, 0xaaea}, {0xaaf2, 0xaaf4}, {0xab01, 0xab06}, {0xab09, 0xab0e}, {0xab11, 0xab16},
    {0xab20, 0xab26}, {0xab28, 0xab2e}, {0xab30, 0xab5a}, {0xab5c, 0xab69}, {0xab70, 0xabe2}, {0xac00, 0xd7a3},
    {0xd7b0, 0xd7c6}, {0xd7cb, 0xd7fb}, {0xf900, 0xfa6d}, {0xfa70, 0xfad9}, {0xfb00, 0xfb06}, {0xfb13, 0xfb17},
    {0xfb1d, 0xfb1d}, {0xfb1f, 0xfb28}, {0xfb2a, 0xfb36}, {0xfb38, 0xfb3c}, {0xfb3e, 0xfb3e}, {0xfb40, 0xfb41},
    {0xfb43, 0xfb44}, {0xfb46, 0xfbb1}, {0xfbd3, 0xfd3d}, {0xfd50, 0xfd8f}, {0xfd92, 0xfdc7}, {0xfdf0, 0xfdfb},
    {0xfe70, 0xfe74}, {0xfe76, 0xfefc}, {0xff21, 0xff3a}, {0xff41, 0xff5a}, {0xff66, 0xffbe}, {0xffc2, 0xffc7},
    {0xffca, 0xffcf}, {0xffd2, 0xffd7}, {0xffda, 0xffdc}, {0x10000, 0x1000b}, {0x1000d, 0x10026}, {0x10028, 0x1003a},
    {0x1003c, 0x1003d}, {0x1003f, 0x1004d}, {0x10050, 0x1005d}, {0x10080, 0x100fa}, {0x10280, 0x1029c},
    {0x102a0, 0x102d0}, {0x10300, 0x1031f}, {0x1032d, 0x10340}, {0x10342, 0x10349}, {0x10350, 0x10375},
    {0x10380, 0x1039d}, {0x103a0, 0x103c3}, {0x103c8, 0x103cf}, {0x10400, 0x1049d}, {0x104b0, 0x104d3},
    {0x104d8, 0x104fb}, {0x10500, 0x10527}, {0x10530, 0x10563}, {0x10570, 0x1057a}, {0x1057c, 0x1058a},
    {0x1058c, 0x10592}, {0x10594, 0x10595}, {0x10597, 0x105a1}, {0x105a3, 0x105b1}, {0x105b3, 0x105b9},
    {0x105bb, 0x105bc}, {0x10600, 0x10736}, {0x10740, 0x10755}, {0x10760, 0x10767}, {0x10780, 0x10785},
    {0x10787, 0x107b0}, {0x107b2, 0x107ba}, {0x10800, 0x10805}, {0x10808, 0x10808}, {0x1080a, 0x10835},
    {0x10837, 0x10838}, {0x1083c, 0x1083c}, {0x1083f, 0x10855}, {0x10860, 0x10876}, {0x10880, 0x1089e},
    {0x108e0, 0x108f2}, {0x108f4, 0x108f5}, {0x10900, 0x10915}, {0x10920, 0x10939}, {0x10980, 0x109b7},
    {0x109be, 0x109bf}, {0x10a00, 0x10a00}, {0x10a10, 0x10a13}, {0x10a15, 0x10a17}, {0x10a19, 0x10a35},
    {0x10a60, 0x10a7c}, {0x10a80, 0x10a9c}, {0x10ac0, 0x10ac7}, {0x10ac9, 0x10ae4}, {0x10b00, 0x10b35},
    {0x10b40, 0x10b55}, {0x10b60, 0x10b72}, {0x10b80, 0x10b91}, {0x10c00, 0x10c48}, {0x10c80, 0x10cb2},
    {0x10cc0, 0x10cf2}, {0x10d00, 0x10d23}, {0x10e80, 0x10ea9}, {0x10eb0, 0x10eb1}, {0x10f00, 0x10f1c},
    {0x10f27, 0x10f27}, {0x10f30, 0x10f45}, {0x10f70, 0x10f81}, {0x10fb0, 0x10fc4}, {0x10fe0, 0x10ff6},
    {0x11003, 0x11037}, {0x11071, 0x11072}, {0x11075, 0x11075}, {0x11083, 0x110af}, {0x110d0, 0x110e8},
    {0x11103, 0x11126}, {0x11144, 0x11144}, {0x11147, 0x11147}, {0x11150, 0x11172}, {0x11176, 0x11176},
    {0x11183, 0x111b2}, {0x111c1, 0x111c4}, {0x111da, 0x111da}, {0x111dc, 0x111dc}, {0x11200, 0x11211},
    {0x11213, 0x1122b}, {0x11280, 0x11286}, {0x11288, 0x11288}, {0x1128a, 0x1128d}, {0x1128f, 0x1129d},
    {0x1129f, 0x112a8}, {0x112b0, 0x112de}, {0x11305, 0x1130c}, {0x1130f, 0x11310}, {0x11313, 0x11328},
    {0x1132a, 0x11330}, {0x11332, 0x11333}, {0x11335, 0x11339}, {0x1133d, 0x1133d}, {0x11350, 0x11350},
    {0x1135d, 0x11361}, {0x11400, 0x11434}, {0x11447, 0x1144a}, {0x1145f, 0x11461}, {0x11480, 0x114af},
    {0x114c4, 0x114c5}, {0x114c7, 0x114c7}, {0x11580, 0x115ae}, {0x115d8, 0x115db}, {0x11600, 0x1162f},
    {0x11644, 0x11644}, {0x11680, 0x116aa}, {0x116b8, 0x116b8}, {0x11700, 0x1171a}, {0x11740, 0x11746},
    {0x11800, 0x1182b}, {0x118a0, 0x118df}, {0x118ff, 0x11906}, {0x11909, 0x11909}, {0x1190c, 0x11913},
    {0x11915, 0x11916}, {0x11918, 0x1192f}, {0x1193f, 0x1193f}, {0x11941, 0x11941}, {0x119a0, 0x119a7},
    {0x119aa, 0x119d0}, {0x119e1, 0x119e1}, {0x119e3, 0x119e3}, {0x11a00, 0x11a00}, {0x11a0b, 0x11a32},
    {0x11a3a, 0x11a3a}, {0x11a50, 0x11a50}, {0x11a5c, 0x11a89}, {0x11a9d, 0x11a9d}, {0x11ab0, 0x11af8},
    {0x11c00, 0x11c08}, {0x11c0a, 0x11c2e}, {0x11c40, 0x11c40}, {0x11c72, 0x11c8f}, {0x11d00, 0x11d06},
    {0x11d08, 0x11d09}, {0x11d0b, 0x11d30}, {0x11d46, 0x11d46}, {0x11d60, 0x11d65}, {0x11d67, 0x11d68},
    {0x11d6a, 0x11d89}, {0x11d98, 0x11d98}, {0x11ee0, 0x11ef2}, {0x11fb0, 0x11fb0}, {0x12000, 0x12399},
    {0x12480, 0x12543}, {0x12f90, 0x12ff0}, {0x13000, 0x1342e}, {0x14400, 0x14646}, {0x16800, 0x16a38},
    {0x16a40, 0x16a5e}, {0x16a70, 0x16abe}, {0x16ad0, 0x16aed}, {0x16b00, 0x16b2f}, {0x16b40, 0x16b43},
    {0x16b63, 0x16b77}, {0x16b7d, 0x16b8f}, {0x16e40, 0x16e7f}, {0x16f00, 0x16f4a}, {0x16f50, 0x16f50},
    {0x16f93, 0x16f9f}, {0x16fe0, 0x16fe1}, {0x16fe3, 0x16fe3}, {0x17000, 0x187f7}, {0x18800, 0x18cd5},
    {0x18d00, 0x18d08}, {0x1aff0, 0x1aff3}, {0x1aff5, 0x1affb}, {0x1affd, 0x1affe}, {0x1b000, 0x1b122},
    {0x1b150, 0x1b152}, {0x1b164, 0x1b167}, {0x1b170, 0x1b2fb}, {0x1bc00, 0x1bc6a}, {0x1bc70, 0x1bc7c},
    {0x1bc80, 0x1bc88}, {0x1bc90, 0x1bc99}, {0x1d400, 0x1d454}, {0x1d456, 0x1d49c}, {0x1d49e, 0x1d49f},
    {0x1d4a2, 0x1d4a2}, {0x1d4a5, 0x1d4a6}, {0x1d4a9, 0x1d4ac}, {0x1d4ae, 0x1d4b9}, {0x1d4bb, 0x1d4bb},
    {0x1d4bd, 0x1d4c3}, {0x1d4c5, 0x1d505}, {0x1d507, 0x1d50a}, {0x1d50d, 0x1d514}, {0x1d516, 0x1d51c},
    {0x1d51e, 0x1d539}, {0x1d53b, 0x1d53e}, {0x1d540, 0x1d544}, {0x1d546, 0x1d546}, {0x1d54a, 0x1d550},
    {0x1d552, 0x1d6a5}, {0x1d6a8, 0x1d6c0}, {0x1d6c2, 0x1d6da}, {0x1d6dc, 0x1d6fa}, {0x1d6fc, 0x1d714},
    {0x1d716, 0x1d734}, {0x1d736, 0x1d74e}, {0x1d750, 0x1d76e}, {0x1d770, 0x1d788}, {0x1d78a, 0x1d7a8},
    {0x1d7aa, 0x1d7c2}, {0x1d7c4, 0x1d7cb}, {0x1df00, 0x1df1e}, {0x1e100, 0x1e12c}, {0x1e137, 0x1e13d},
    {0x1e14e, 0x1e14e}, {0x1e290, 0x1e2ad}, {0x1e2c0, 0x1e2eb}, {0x1e7e0, 0x1e7e6}, {0x1e7e8, 0x1e7eb},
    {0x1e7ed, 0x1e7ee}, {0x1e7f0, 0x1e7fe}, {0x1e800, 0x1e8c4}, {0x1e900, 0x1e943}, {0x1e94b, 0x1e94b},
    {0x1ee00, 0x1ee03}, {0x1ee05, 0x1ee1f}, {0x1ee21, 0x1ee22}, {0x1ee24, 0x1ee24}, {0x1ee27, 0x1ee27},
    {0x1ee29, 0x1ee32}, {0x1ee34, 0x1ee37}, {0x1ee39, 0x1ee39}, {0x1ee3b, 0x1ee3b}, {0x1ee42, 0x1ee42},
    {0x1ee47, 0x1ee47}, {0x1ee49, 0x1ee49}, {0x1ee4b, 0x1ee4b}, {0x1ee4d, 0x1ee4f}, {0x1ee51, 0x1ee52},
    {0x1ee54, 0x1ee54}, {0x1ee57, 0x1ee57}, {0x1ee59, 0x1ee59}, {0x1ee5b, 0x1ee5b}, {0x1ee5d, 0x1ee5d},
    {0x1ee5f, 0x1ee5f}, {0x1ee61, 0x1ee62}, {0x1ee64, 0x1ee64}, {0x1ee67, 0x1ee6a}, {0x1ee6c, 0x1ee72},
    {0x1ee74, 0x1ee77}, {0x1ee79, 0x1ee7c}, {0x1ee7e, 0x1ee7e}, {0x1ee80, 0x1ee89}, {0x1ee8b, 0x1ee9b},
    {0x1eea1, 0x1eea3}, {0x1eea5, 0x1eea9}, {0x1eeab, 0x1eebb}, {0x20000, 0x2a6df}, {0x2a700, 0x2b738},
    {0x2b740, 0x2b81d}, {0x2b820, 0x2cea1}, {0x2ceb0, 0x2ebe0}, {0x2f800, 0x2fa1d}, {0x30000, 0x3134a},
};
static const uint32_t zt__uni_number[][2] = { /* 134 ranges */
    {0x30, 0x39}, {0xb2, 0xb3}, {0xb9, 0xb9}, {0xbc, 0xbe}, {0x660, 0x669}, {0x6f0, 0x6f9}, {0x7c0, 0x7c9},
    {0x966, 0x96f}, {0x9e6, 0x9ef}, {0x9f4, 0x9f9}, {0xa66, 0xa6f}, {0xae6, 0xaef}, {0xb66, 0xb6f}, {0xb72, 0xb77},
    {0xbe6, 0xbf2}, {0xc66, 0xc6f}, {0xc78, 0xc7e}, {0xce6, 0xcef}, {0xd58, 0xd5e}, {0xd66, 0xd78}, {0xde6, 0xdef},
    {0xe50, 0xe59}, {0xed0, 0xed9}, {0xf20, 0xf33}, {0x1040, 0x1049}, {0x1090, 0x1099}, {0x1369, 0x137c},
    {0x16ee, 0x16f0}, {0x17e0, 0x17e9}, {0x17f0, 0x17f9}, {0x1810, 0x1819}, {0x1946, 0x194f}, {0x19d0, 0x19da},
    {0x1a80, 0x1a89}, {0x1a90, 0x1a99}, {0x1b50, 0x1b59}, {0x1bb0, 0x1bb9}, {0x1c40, 0x1c49}, {0x1c50, 0x1c59},
    {0x2070, 0x2070}, {0x2074, 0x2079}, {0x2080, 0x2089}, {0x2150, 0x2182}, {0x2185, 0x2189}, {0x2460, 0x249b},
    {0x24ea, 0x24ff}, {0x2776, 0x2793}, {0x2cfd, 0x2cfd}, {0x3007, 0x3007}, {0x3021, 0x3029}, {0x3038, 0x303a},
    {0x3192, 0x3195}, {0x3220, 0x3229}, {0x3248, 0x324f}, {0x3251, 0x325f}, {0x3280, 0x3289}, {0x32b1, 0x32bf},
    {0xa620, 0xa629}, {0xa6e6, 0xa6ef}, {0xa830, 0xa835}, {0xa8d0, 0xa8d9}, {0xa900, 0xa909}, {0xa9d0, 0xa9d9},
    {0xa9f0, 0xa9f9}, {0xaa50, 0xaa59}, {0xabf0, 0xabf9}, {0xff10, 0xff19}, {0x10107, 0x10133}, {0x10140, 0x10178},
    {0x1018a, 0x1018b}, {0x102e1, 0x102fb}, {0x10320, 0x10323}, {0x10341, 0x10341}, {0x1034a, 0x1034a},
    {0x103d1, 0x103d5}, {0x104a0, 0x104a9}, {0x10858, 0x1085f}, {0x10879, 0x1087f}, {0x108a7, 0x108af},
    {0x108fb, 0x108ff}, {0x10916, 0x1091b}, {0x109bc, 0x109bd}, {0x109c0, 0x109cf}, {0x109d2, 0x109ff},
    {0x10a40, 0x10a48}, {0x10a7d, 0x10a7e}, {0x10a9d, 0x10a9f}, {0x10aeb, 0x10aef}, {0x10b58, 0x10b5f},
    {0x10b78, 0x10b7f}, {0x10ba9, 0x10baf}, {0x10cfa, 0x10cff}, {0x10d30, 0x10d39}, {0x10e60, 0x10e7e},
    {0x10f1d, 0x10f26}, {0x10f51, 0x10f54}, {0x10fc5, 0x10fcb}, {0x11052, 0x1106f}, {0x110f0, 0x110f9},
    {0x11136, 0x1113f}, {0x111d0, 0x111d9}, {0x111e1, 0x111f4}, {0x112f0, 0x112f9}, {0x11450, 0x11459},
    {0x114d0, 0x114d9}, {0x11650, 0x11659}, {0x116c0, 0x116c9}, {0x11730, 0x1173b}, {0x118e0, 0x118f2},
    {0x11950, 0x11959}, {0x11c50, 0x11c6c}, {0x11d50, 0x11d59}, {0x11da0, 0x11da9}, {0x11fc0, 0x11fd4},
    {0x12400, 0x1246e}, {0x16a60, 0x16a69}, {0x16ac0, 0x16ac9}, {0x16b50, 0x16b59}, {0x16b5b, 0x16b61},
    {0x16e80, 0x16e96}, {0x1d2e0, 0x1d2f3}, {0x1d360, 0x1d378}, {0x1d7ce, 0x1d7ff}, {0x1e140, 0x1e149},
    {0x1e2f0, 0x1e2f9}, {0x1e8c7, 0x1e8cf}, {0x1e950, 0x1e959}, {0x1ec71, 0x1ecab}, {0x1ecad, 0x1ecaf},
    {0x1ecb1, 0x1ecb4}, {0x1ed01, 0x1ed2d}, {0x1ed2f, 0x1ed3d}, {0x1f100, 0x1f10c}, {0x1fbf0, 0x1fbf9},
};
static const uint32_t zt__uni_space[][2] = { /* 10 ranges */
    {0x9, 0xd}, {0x20, 0x20}, {0x85, 0x85}, {0xa0, 0xa0}, {0x1680, 0x1680}, {0x2000, 0x200a}, {0x2028, 0x2029},
    {0x202f, 0x202f}, {0x205f, 0x205f}, {0x3000, 0x3000},
};
static const uint32_t zt__uni_decomp[][3] = { /* 2061 rows */
    {0xc0, 0x41, 0x300}, {0xc1, 0x41, 0x301}, {0xc2, 0x41, 0x302}, {0xc3, 0x41, 0x303}, {0xc4, 0x41, 0x308},
    {0xc5, 0x41, 0x30a}, {0xc7, 0x43, 0x327}, {0xc8, 0x45, 0x300}, {0xc9, 0x45, 0x301}, {0xca, 0x45, 0x302},
    {0xcb, 0x45, 0x308}, {0xcc, 0x49, 0x300}, {0xcd, 0x49, 0x301}, {0xce, 0x49, 0x302}, {0xcf, 0x49, 0x308},
    {0xd1, 0x4e, 0x303}, {0xd2, 0x4f, 0x300}, {0xd3, 0x4f, 0x301}, {0xd4, 0x4f, 0x302}, {0xd5, 0x4f, 0x303},
    {0xd6, 0x4f, 0x308}, {0xd9, 0x55, 0x300}, {0xda, 0x55, 0x301}, {0xdb, 0x55, 0x302}, {0xdc, 0x55, 0x308},
    {0xdd, 0x59, 0x301}, {0xe0, 0x61, 0x300}, {0xe1, 0x61, 0x301}, {0xe2, 0x61, 0x302}, {0xe3, 0x61, 0x303},
    {0xe4, 0x61, 0x308}, {0xe5, 0x61, 0x30a}, {0xe7, 0x63, 0x327}, {0xe8, 0x65, 0x300}, {0xe9, 0x65, 0x301},
    {0xea, 0x65, 0x302}, {0xeb, 0x65, 0x308}, {0xec, 0x69, 0x300}, {0xed, 0x69, 0x301}, {0xee, 0x69, 0x302},
    {0xef, 0x69, 0x308}, {0xf1, 0x6e, 0x303}, {0xf2, 0x6f, 0x300}, {0xf3, 0x6f, 0x301}, {0xf4, 0x6f, 0x302},
    {0xf5, 0x6f, 0x303}, {0xf6, 0x6f, 0x308}, {0xf9, 0x75, 0x300}, {0xfa, 0x75, 0x301}, {0xfb, 0x75, 0x302},
    {0xfc, 0x75, 0x308}, {0xfd, 0x79, 0x301}, {0xff, 0x79, 0x308}, {0x100, 0x41, 0x304}, {0x101, 0x61, 0x304},
    {0x102, 0x41, 0x306}, {0x103, 0x61, 0x306}, {0x104, 0x41, 0x328}, {0x105, 0x61, 0x328}, {0x106, 0x43, 0x301},
    {0x107, 0x63, 0x301}, {0x108, 0x43, 0x302}, {0x109, 0x63, 0x302}, {0x10a, 0x43, 0x307}, {0x10b, 0x63, 0x307},
    {0x10c, 0x43, 0x30c}, {0x10d, 0x63, 0x30c}, {0x10e, 0x44, 0x30c}, {0x10f, 0x64, 0x30c}, {0x112, 0x45, 0x304},
    {0x113, 0x65, 0x304}, {0x114, 0x45, 0x306}, {0x115, 0x65, 0x306}, {0x116, 0x45, 0x307}, {0x117, 0x65, 0x307},
    {0x118, 0x45, 0x328}, {0x119, 0x65, 0x328}, {0x11a, 0x45, 0x30c}, {0x11b, 0x65, 0x30c}, {0x11c, 0x47, 0x302},
    {0x11d, 0x67, 0x302}, {0x11e, 0x47, 0x306}, {0x11f, 0x67, 0x306}, {0x120, 0x47, 0x307}, {0x121, 0x67, 0x307},
    {0x122, 0x47, 0x327}, {0x123, 0x67, 0x327}, {0x124, 0x48, 0x302}, {0x125, 0x68, 0x302}, {0x128, 0x49, 0x303},
    {0x129, 0x69, 0x303}, {0x12a, 0x49, 0x304}, {0x12b, 0x69, 0x304}, {0x12c, 0x49, 0x306}, {0x12d, 0x69, 0x306},
    {0x12e, 0x49, 0x328}, {0x12f, 0x69, 0x328}, {0x130, 0x49, 0x307}, {0x134, 0x4a, 0x302}, {0x135, 0x6a, 0x302},
    {0x136, 0x4b, 0x327}, {0x137, 0x6b, 0x327}, {0x139, 0x4c, 0x301}, {0x13a, 0x6c, 0x301}, {0x13b, 0x4c, 0x327},
    {0x13c, 0x6c, 0x327}, {0x13d, 0x4c, 0x30c}, {0x13e, 0x6c, 0x30c}, {0x143, 0x4e, 0x301}, {0x144, 0x6e, 0x301},
    {0x145, 0x4e, 0x327}, {0x146, 0x6e, 0x327}, {0x147, 0x4e, 0x30c}, {0x148, 0x6e, 0x30c}, {0x14c, 0x4f, 0x304},
    {0x14d, 0x6f, 0x304}, {0x14e, 0x4f, 0x306}, {0x14f, 0x6f, 0x306}, {0x150, 0x4f, 0x30b}, {0x151, 0x6f, 0x30b},
    {0x154, 0x52, 0x301}, {0x155, 0x72, 0x301}, {0x156, 0x52, 0x327}, {0x157, 0x72, 0x327}, {0x158, 0x52, 0x30c},
    {0x159, 0x72, 0x30c}, {0x15a, 0x53, 0x301}, {0x15b, 0x73, 0x301}, {0x15c, 0x53, 0x302}, {0x15d, 0x73, 0x302},
    {0x15e, 0x53, 0x327}, {0x15f, 0x73, 0x327}, {0x160, 0x53, 0x30c}, {0x161, 0x73, 0x30c}, {0x162, 0x54, 0x327},
    {0x163, 0x74, 0x327}, {0x164, 0x54, 0x30c}, {0x165, 0x74, 0x30c}, {0x168, 0x55, 0x303}, {0x169, 0x75, 0x303},
    {0x16a, 0x55, 0x304}, {0x16b, 0x75, 0x304}, {0x16c, 0x55, 0x306}, {0x16d, 0x75, 0x306}, {0x16e, 0x55, 0x30a},
    {0x16f, 0x75, 0x30a}, {0x170, 0x55, 0x30b}, {0x171, 0x75, 0x30b}, {0x172, 0x55, 0x328}, {0x173, 0x75, 0x328},
    {0x174, 0x57, 0x302}, {0x175, 0x77, 0x302}, {0x176, 0x59, 0x302}, {0x177, 0x79, 0x302}, {0x178, 0x59, 0x308},
    {0x179, 0x5a, 0x301}, {0x17a, 0x7a, 0x301}, {0x17b, 0x5a, 0x307}, {0x17c, 0x7a, 0x307}, {0x17d, 0x5a, 0x30c},
    {0x17e, 0x7a, 0x30c}, {0x1a0, 0x4f, 0x31b}, {0x1a1, 0x6f, 0x31b}, {0x1af, 0x55, 0x31b}, {0x1b0, 0x75, 0x31b},
    {0x1cd, 0x41, 0x30c}, {0x1ce, 0x61, 0x30c}, {0x1cf, 0x49, 0x30c}, {0x1d0, 0x69, 0x30c}, {0x1d1, 0x4f, 0x30c},
    {0x1d2, 0x6f, 0x30c}, {0x1d3, 0x55, 0x30c}, {0x1d4, 0x75, 0x30c}, {0x1d5, 0xdc, 0x304}, {0x1d6, 0xfc, 0x304},
    {0x1d7, 0xdc, 0x301}, {0x1d8, 0xfc, 0x301}, {0x1d9, 0xdc, 0x30c}, {0x1da, 0xfc, 0x30c}, {0x1db, 0xdc, 0x300},
    {0x1dc, 0xfc, 0x300}, {0x1de, 0xc4, 0x304}, {0x1df, 0xe4, 0x304}, {0x1e0, 0x226, 0x304}, {0x1e1, 0x227, 0x304},
    {0x1e2, 0xc6, 0x304}, {0x1e3, 0xe6, 0x304}, {0x1e6, 0x47, 0x30c}, {0x1e7, 0x67, 0x30c}, {0x1e8, 0x4b, 0x30c},
    {0x1e9, 0x6b, 0x30c}, {0x1ea, 0x4f, 0x328}, {0x1eb, 0x6f, 0x328}, {0x1ec, 0x1ea, 0x304}, {0x1ed, 0x1eb, 0x304},
    {0x1ee, 0x1b7, 0x30c}, {0x1ef, 0x292, 0x30c}, {0x1f0, 0x6a, 0x30c}, {0x1f4, 0x47, 0x301}, {0x1f5, 0x67, 0x301},
    {0x1f8, 0x4e, 0x300}, {0x1f9, 0x6e, 0x300}, {0x1fa, 0xc5, 0x301}, {0x1fb, 0xe5, 0x301}, {0x1fc, 0xc6, 0x301},
    {0x1fd, 0xe6, 0x301}, {0x1fe, 0xd8, 0x301}, {0x1ff, 0xf8, 0x301}, {0x200, 0x41, 0x30f}, {0x201, 0x61, 0x30f},
    {0x202, 0x41, 0x311}, {0x203, 0x61, 0x311}, {0x204, 0x45, 0x30f}, {0x205, 0x65, 0x30f}, {0x206, 0x45, 0x311},
    {0x207, 0x65, 0x311}, {0x208, 0x49, 0x30f}, {0x209, 0x69, 0x30f}, {0x20a, 0x49, 0x311}, {0x20b, 0x69, 0x311},
    {0x20c, 0x4f, 0x30f}, {0x20d, 0x6f, 0x30f}, {0x20e, 0x4f, 0x311}, {0x20f, 0x6f, 0x311}, {0x210, 0x52, 0x30f},
    {0x211, 0x72, 0x30f}, {0x212, 0x52, 0x311}, {0x213, 0x72, 0x311}, {0x214, 0x55, 0x30f}, {0x215, 0x75, 0x30f},
    {0x216, 0x55, 0x311}, {0x217, 0x75, 0x311}, {0x218, 0x53, 0x326}, {0x219, 0x73, 0x326}, {0x21a, 0x54, 0x326},
    {0x21b, 0x74, 0x326}, {0x21e, 0x48, 0x30c}, {0x21f, 0x68, 0x30c}, {0x226, 0x41, 0x307}, {0x227, 0x61, 0x307},
    {0x228, 0x45, 0x327}, {0x229, 0x65, 0x327}, {0x22a, 0xd6, 0x304}, {0x22b, 0xf6, 0x304}, {0x22c, 0xd5, 0x304},
    {0x22d, 0xf5, 0x304}, {0x22e, 0x4f, 0x307}, {0x22f, 0x6f, 0x307}, {0x230, 0x22e, 0x304}, {0x231, 0x22f, 0x304},
    {0x232, 0x59, 0x304}, {0x233, 0x79, 0x304}, {0x340, 0x300, 0x0}, {0x341, 0x301, 0x0}, {0x343, 0x313, 0x0},
    {0x344, 0x308, 0x301}, {0x374, 0x2b9, 0x0}, {0x37e, 0x3b, 0x0}, {0x385, 0xa8, 0x301}, {0x386, 0x391, 0x301},
    {0x387, 0xb7, 0x0}, {0x388, 0x395, 0x301}, {0x389, 0x397, 0x301}, {0x38a, 0x399, 0x301}, {0x38c, 0x39f, 0x301},
    {0x38e, 0x3a5, 0x301}, {0x38f, 0x3a9, 0x301}, {0x390, 0x3ca, 0x301}, {0x3aa, 0x399, 0x308}, {0x3ab, 0x3a5, 0x308},
    {0x3ac, 0x3b1, 0x301}, {0x3ad, 0x3b5, 0x301}, {0x3ae, 0x3b7, 0x301}, {0x3af, 0x3b9, 0x301}, {0x3b0, 0x3cb, 0x301},
    {0x3ca, 0x3b9, 0x308}, {0x3cb, 0x3c5, 0x308}, {0x3cc, 0x3bf, 0x301}, {0x3cd, 0x3c5, 0x301}, {0x3ce, 0x3c9, 0x301},
    {0x3d3, 0x3d2, 0x301}, {0x3d4, 0x3d2, 0x308}, {0x400, 0x415, 0x300}, {0x401, 0x415, 0x308}, {0x403, 0x413, 0x301},
    {0x407, 0x406, 0x308}, {0x40c, 0x41a, 0x301}, {0x40d, 0x418, 0x300}, {0x40e, 0x423, 0x306}, {0x419, 0x418, 0x306},
    {0x439, 0x438, 0x306}, {0x450, 0x435, 0x300}, {0x451, 0x435, 0x308}, {0x453, 0x433, 0x301}, {0x457, 0x456, 0x308},
    {0x45c, 0x43a, 0x301}, {0x45d, 0x438, 0x300}, {0x45e, 0x443, 0x306}, {0x476, 0x474, 0x30f}, {0x477, 0x475, 0x30f},
    {0x4c1, 0x416, 0x306}, {0x4c2, 0x436, 0x306}, {0x4d0, 0x410, 0x306}, {0x4d1, 0x430, 0x306}, {0x4d2, 0x410, 0x308},
    {0x4d3, 0x430, 0x308}, {0x4d6, 0x415, 0x306}, {0x4d7, 0x435, 0x306}, {0x4da, 0x4d8, 0x308}, {0x4db, 0x4d9, 0x308},
    {0x4dc, 0x416, 0x308}, {0x4dd, 0x436, 0x308}, {0x4de, 0x417, 0x308}, {0x4df, 0x437, 0x308}, {0x4e2, 0x418, 0x304},
    {0x4e3, 0x438, 0x304}, {0x4e4, 0x418, 0x308}, {0x4e5, 0x438, 0x308}, {0x4e6, 0x41e, 0x308}, {0x4e7, 0x43e, 0x308},
    {0x4ea, 0x4e8, 0x308}, {0x4eb, 0x4e9, 0x308}, {0x4ec, 0x42d, 0x308}, {0x4ed, 0x44d, 0x308}, {0x4ee, 0x423, 0x304},
    {0x4ef, 0x443, 0x304}, {0x4f0, 0x423, 0x308}, {0x4f1, 0x443, 0x308}, {0x4f2, 0x423, 0x30b}, {0x4f3, 0x443, 0x30b},
    {0x4f4, 0x427, 0x308}, {0x4f5, 0x447, 0x308}, {0x4f8, 0x42b, 0x308}, {0x4f9, 0x44b, 0x308}, {0x622, 0x627, 0x653},
    {0x623, 0x627, 0x654}, {0x624, 0x648, 0x654}, {0x625, 0x627, 0x655}, {0x626, 0x64a, 0x654}, {0x6c0, 0x6d5, 0x654},
    {0x6c2, 0x6c1, 0x654}, {0x6d3, 0x6d2, 0x654}, {0x929, 0x928, 0x93c}, {0x931, 0x930, 0x93c}, {0x934, 0x933, 0x93c},
    {0x958, 0x915, 0x93c}, {0x959, 0x916, 0x93c}, {0x95a, 0x917, 0x93c}, {0x95b, 0x91c, 0x93c}, {0x95c, 0x921, 0x93c},
    {0x95d, 0x922, 0x93c}, {0x95e, 0x92b, 0x93c}, {0x95f, 0x92f, 0x93c}, {0x9cb, 0x9c7, 0x9be}, {0x9cc, 0x9c7, 0x9d7},
    {0x9dc, 0x9a1, 0x9bc}, {0x9dd, 0x9a2, 0x9bc}, {0x9df, 0x9af, 0x9bc}, {0xa33, 0xa32, 0xa3c}, {0xa36, 0xa38, 0xa3c},
    {0xa59, 0xa16, 0xa3c}, {0xa5a, 0xa17, 0xa3c}, {0xa5b, 0xa1c, 0xa3c}, {0xa5e, 0xa2b, 0xa3c}, {0xb48, 0xb47, 0xb56},
    {0xb4b, 0xb47, 0xb3e}, {0xb4c, 0xb47, 0xb57}, {0xb5c, 0xb21, 0xb3c}, {0xb5d, 0xb22, 0xb3c}, {0xb94, 0xb92, 0xbd7},
    {0xbca, 0xbc6, 0xbbe}, {0xbcb, 0xbc7, 0xbbe}, {0xbcc, 0xbc6, 0xbd7}, {0xc48, 0xc46, 0xc56}, {0xcc0, 0xcbf, 0xcd5},
    {0xcc7, 0xcc6, 0xcd5}, {0xcc8, 0xcc6, 0xcd6}, {0xcca, 0xcc6, 0xcc2}, {0xccb, 0xcca, 0xcd5}, {0xd4a, 0xd46, 0xd3e},
    {0xd4b, 0xd47, 0xd3e}, {0xd4c, 0xd46, 0xd57}, {0xdda, 0xdd9, 0xdca}, {0xddc, 0xdd9, 0xdcf}, {0xddd, 0xddc, 0xdca},
    {0xdde, 0xdd9, 0xddf}, {0xf43, 0xf42, 0xfb7}, {0xf4d, 0xf4c, 0xfb7}, {0xf52, 0xf51, 0xfb7}, {0xf57, 0xf56, 0xfb7},
    {0xf5c, 0xf5b, 0xfb7}, {0xf69, 0xf40, 0xfb5}, {0xf73, 0xf71, 0xf72}, {0xf75, 0xf71, 0xf74}, {0xf76, 0xfb2, 0xf80},
    {0xf78, 0xfb3, 0xf80}, {0xf81, 0xf71, 0xf80}, {0xf93, 0xf92, 0xfb7}, {0xf9d, 0xf9c, 0xfb7}, {0xfa2, 0xfa1, 0xfb7},
    {0xfa7, 0xfa6, 0xfb7}, {0xfac, 0xfab, 0xfb7}, {0xfb9, 0xf90, 0xfb5}, {0x1026, 0x1025, 0x102e},
    {0x1b06, 0x1b05, 0x1b35}, {0x1b08, 0x1b07, 0x1b35}, {0x1b0a, 0x1b09, 0x1b35}, {0x1b0c, 0x1b0b, 0x1b35},
    {0x1b0e, 0x1b0d, 0x1b35}, {0x1b12, 0x1b11, 0x1b35}, {0x1b3b, 0x1b3a, 0x1b35}, {0x1b3d, 0x1b3c, 0x1b35},
    {0x1b40, 0x1b3e, 0x1b35}, {0x1b41, 0x1b3f, 0x1b35}, {0x1b43, 0x1b42, 0x1b35}, {0x1e00, 0x41, 0x325},
    {0x1e01, 0x61, 0x325}, {0x1e02, 0x42, 0x307}, {0x1e03, 0x62, 0x307}, {0x1e04, 0x42, 0x323}, {0x1e05, 0x62, 0x323},
    {0x1e06, 0x42, 0x331}, {0x1e07, 0x62, 0x331}, {0x1e08, 0xc7, 0x301}, {0x1e09, 0xe7, 0x301}, {0x1e0a, 0x44, 0x307},
    {0x1e0b, 0x64, 0x307}, {0x1e0c, 0x44, 0x323}, {0x1e0d, 0x64, 0x323}, {0x1e0e, 0x44, 0x331}, {0x1e0f, 0x64, 0x331},
    {0x1e10, 0x44, 0x327}, {0x1e11, 0x64, 0x327}, {0x1e12, 0x44, 0x32d}, {0x1e13, 0x64, 0x32d},
    {0x1e14, 0x112, 0x300}, {0x1e15, 0x113, 0x300}, {0x1e16, 0x112, 0x301}, {0x1e17, 0x113, 0x301},
    {0x1e18, 0x45, 0x32d}, {0x1e19, 0x65, 0x32d}, {0x1e1a, 0x45, 0x330}, {0x1e1b, 0x65, 0x330},
    {0x1e1c, 0x228, 0x306}, {0x1e1d, 0x229, 0x306}, {0x1e1e, 0x46, 0x307}, {0x1e1f, 0x66, 0x307},
    {0x1e20, 0x47, 0x304}, {0x1e21, 0x67, 0x304}, {0x1e22, 0x48, 0x307}, {0x1e23, 0x68, 0x307}, {0x1e24, 0x48, 0x323},
    {0x1e25, 0x68, 0x323}, {0x1e26, 0x48, 0x308}, {0x1e27, 0x68, 0x308}, {0x1e28, 0x48, 0x327}, {0x1e29, 0x68, 0x327},
    {0x1e2a, 0x48, 0x32e}, {0x1e2b, 0x68, 0x32e}, {0x1e2c, 0x49, 0x330}, {0x1e2d, 0x69, 0x330}, {0x1e2e, 0xcf, 0x301},
    {0x1e2f, 0xef, 0x301}, {0x1e30, 0x4b, 0x301}, {0x1e31, 0x6b, 0x301}, {0x1e32, 0x4b, 0x323}, {0x1e33, 0x6b, 0x323},
    {0x1e34, 0x4b, 0x331}, {0x1e35, 0x6b, 0x331}, {0x1e36, 0x4c, 0x323}, {0x1e37, 0x6c, 0x323},
    {0x1e38, 0x1e36, 0x304}, {0x1e39, 0x1e37, 0x304}, {0x1e3a, 0x4c, 0x331}, {0x1e3b, 0x6c, 0x331},
    {0x1e3c, 0x4c, 0x32d}, {0x1e3d, 0x6c, 0x32d}, {0x1e3e, 0x4d, 0x301}, {0x1e3f, 0x6d, 0x301}, {0x1e40, 0x4d, 0x307},
    {0x1e41, 0x6d, 0x307}, {0x1e42, 0x4d, 0x323}, {0x1e43, 0x6d, 0x323}, {0x1e44, 0x4e, 0x307}, {0x1e45, 0x6e, 0x307},
    {0x1e46, 0x4e, 0x323}, {0x1e47, 0x6e, 0x323}, {0x1e48, 0x4e, 0x331}, {0x1e49, 0x6e, 0x331}, {0x1e4a, 0x4e, 0x32d},
    {0x1e4b, 0x6e, 0x32d}, {0x1e4c, 0xd5, 0x301}, {0x1e4d, 0xf5, 0x301}, {0x1e4e, 0xd5, 0x308}, {0x1e4f, 0xf5, 0x308},
    {0x1e50, 0x14c, 0x300}, {0x1e51, 0x14d, 0x300}, {0x1e52, 0x14c, 0x301}, {0x1e53, 0x14d, 0x301},
    {0x1e54, 0x50, 0x301}, {0x1e55, 0x70, 0x301}, {0x1e56, 0x50, 0x307}, {0x1e57, 0x70, 0x307}, {0x1e58, 0x52, 0x307},
    {0x1e59, 0x72, 0x307}, {0x1e5a, 0x52, 0x323}, {0x1e5b, 0x72, 0x323}, {0x1e5c, 0x1e5a, 0x304},
    {0x1e5d, 0x1e5b, 0x304}, {0x1e5e, 0x52, 0x331}, {0x1e5f, 0x72, 0x331}, {0x1e60, 0x53, 0x307},
    {0x1e61, 0x73, 0x307}, {0x1e62, 0x53, 0x323}, {0x1e63, 0x73, 0x323}, {0x1e64, 0x15a, 0x307},
    {0x1e65, 0x15b, 0x307}, {0x1e66, 0x160, 0x307}, {0x1e67, 0x161, 0x307}, {0x1e68, 0x1e62, 0x307},
    {0x1e69, 0x1e63, 0x307}, {0x1e6a, 0x54, 0x307}, {0x1e6b, 0x74, 0x307}, {0x1e6c, 0x54, 0x323},
    {0x1e6d, 0x74, 0x323}, {0x1e6e, 0x54, 0x331}, {0x1e6f, 0x74, 0x331}, {0x1e70, 0x54, 0x32d}, {0x1e71, 0x74, 0x32d},
    {0x1e72, 0x55, 0x324}, {0x1e73, 0x75, 0x324}, {0x1e74, 0x55, 0x330}, {0x1e75, 0x75, 0x330}, {0x1e76, 0x55, 0x32d},
    {0x1e77, 0x75, 0x32d}, {0x1e78, 0x168, 0x301}, {0x1e79, 0x169, 0x301}, {0x1e7a, 0x16a, 0x308},
    {0x1e7b, 0x16b, 0x308}, {0x1e7c, 0x56, 0x303}, {0x1e7d, 0x76, 0x303}, {0x1e7e, 0x56, 0x323},
    {0x1e7f, 0x76, 0x323}, {0x1e80, 0x57, 0x300}, {0x1e81, 0x77, 0x300}, {0x1e82, 0x57, 0x301}, {0x1e83, 0x77, 0x301},
    {0x1e84, 0x57, 0x308}, {0x1e85, 0x77, 0x308}, {0x1e86, 0x57, 0x307}, {0x1e87, 0x77, 0x307}, {0x1e88, 0x57, 0x323},
    {0x1e89, 0x77, 0x323}, {0x1e8a, 0x58, 0x307}, {0x1e8b, 0x78, 0x307}, {0x1e8c, 0x58, 0x308}, {0x1e8d, 0x78, 0x308},
    {0x1e8e, 0x59, 0x307}, {0x1e8f, 0x79, 0x307}, {0x1e90, 0x5a, 0x302}, {0x1e91, 0x7a, 0x302}, {0x1e92, 0x5a, 0x323},
    {0x1e93, 0x7a, 0x323}, {0x1e94, 0x5a, 0x331}, {0x1e95, 0x7a, 0x331}, {0x1e96, 0x68, 0x331}, {0x1e97, 0x74, 0x308},
    {0x1e98, 0x77, 0x30a}, {0x1e99, 0x79, 0x30a}, {0x1e9b, 0x17f, 0x307}, {0x1ea0, 0x41, 0x323},
    {0x1ea1, 0x61, 0x323}, {0x1ea2, 0x41, 0x309}, {0x1ea3, 0x61, 0x309}, {0x1ea4, 0xc2, 0x301}, {0x1ea5, 0xe2, 0x301},
    {0x1ea6, 0xc2, 0x300}, {0x1ea7, 0xe2, 0x300}, {0x1ea8, 0xc2, 0x309}, {0x1ea9, 0xe2, 0x309}, {0x1eaa, 0xc2, 0x303},
    {0x1eab, 0xe2, 0x303}, {0x1eac, 0x1ea0, 0x302}, {0x1ead, 0x1ea1, 0x302}, {0x1eae, 0x102, 0x301},
    {0x1eaf, 0x103, 0x301}, {0x1eb0, 0x102, 0x300}, {0x1eb1, 0x103, 0x300}, {0x1eb2, 0x102, 0x309},
    {0x1eb3, 0x103, 0x309}, {0x1eb4, 0x102, 0x303}, {0x1eb5, 0x103, 0x303}, {0x1eb6, 0x1ea0, 0x306},
    {0x1eb7, 0x1ea1, 0x306}, {0x1eb8, 0x45, 0x323}, {0x1eb9, 0x65, 0x323}, {0x1eba, 0x45, 0x309},
    {0x1ebb, 0x65, 0x309}, {0x1ebc, 0x45, 0x303}, {0x1ebd, 0x65, 0x303}, {0x1ebe, 0xca, 0x301}, {0x1ebf, 0xea, 0x301},
    {0x1ec0, 0xca, 0x300}, {0x1ec1, 0xea, 0x300}, {0x1ec2, 0xca, 0x309}, {0x1ec3, 0xea, 0x309}, {0x1ec4, 0xca, 0x303},
    {0x1ec5, 0xea, 0x303}, {0x1ec6, 0x1eb8, 0x302}, {0x1ec7, 0x1eb9, 0x302}, {0x1ec8, 0x49, 0x309},
    {0x1ec9, 0x69, 0x309}, {0x1eca, 0x49, 0x323}, {0x1ecb, 0x69, 0x323}, {0x1ecc, 0x4f, 0x323}, {0x1ecd, 0x6f, 0x323},
    {0x1ece, 0x4f, 0x309}, {0x1ecf, 0x6f, 0x309}, {0x1ed0, 0xd4, 0x301}, {0x1ed1, 0xf4, 0x301}, {0x1ed2, 0xd4, 0x300},
    {0x1ed3, 0xf4, 0x300}, {0x1ed4, 0xd4, 0x309}, {0x1ed5, 0xf4, 0x309}, {0x1ed6, 0xd4, 0x303}, {0x1ed7, 0xf4, 0x303},
    {0x1ed8, 0x1ecc, 0x302}, {0x1ed9, 0x1ecd, 0x302}, {0x1eda, 0x1a0, 0x301}, {0x1edb, 0x1a1, 0x301},
    {0x1edc, 0x1a0, 0x300}, {0x1edd, 0x1a1, 0x300}, {0x1ede, 0x1a0, 0x309}, {0x1edf, 0x1a1, 0x309},
    {0x1ee0, 0x1a0, 0x303}, {0x1ee1, 0x1a1, 0x303}, {0x1ee2, 0x1a0, 0x323}, {0x1ee3, 0x1a1, 0x323},
    {0x1ee4, 0x55, 0x323}, {0x1ee5, 0x75, 0x323}, {0x1ee6, 0x55, 0x309}, {0x1ee7, 0x75, 0x309},
    {0x1ee8, 0x1af, 0x301}, {0x1ee9, 0x1b0, 0x301}, {0x1eea, 0x1af, 0x300}, {0x1eeb, 0x1b0, 0x300},
    {0x1eec, 0x1af, 0x309}, {0x1eed, 0x1b0, 0x309}, {0x1eee, 0x1af, 0x303}, {0x1eef, 0x1b0, 0x303},
    {0x1ef0, 0x1af, 0x323}, {0x1ef1, 0x1b0, 0x323}, {0x1ef2, 0x59, 0x300}, {0x1ef3, 0x79, 0x300},
    {0x1ef4, 0x59, 0x323}, {0x1ef5, 0x79, 0x323}, {0x1ef6, 0x59, 0x309}, {0x1ef7, 0x79, 0x309}, {0x1ef8, 0x59, 0x303},
    {0x1ef9, 0x79, 0x303}, {0x1f00, 0x3b1, 0x313}, {0x1f01, 0x3b1, 0x314}, {0x1f02, 0x1f00, 0x300},
    {0x1f03, 0x1f01, 0x300}, {0x1f04, 0x1f00, 0x301}, {0x1f05, 0x1f01, 0x301}, {0x1f06, 0x1f00, 0x342},
    {0x1f07, 0x1f01, 0x342}, {0x1f08, 0x391, 0x313}, {0x1f09, 0x391, 0x314}, {0x1f0a, 0x1f08, 0x300},
    {0x1f0b, 0x1f09, 0x300}, {0x1f0c, 0x1f08, 0x301}, {0x1f0d, 0x1f09, 0x301}, {0x1f0e, 0x1f08, 0x342},
    {0x1f0f, 0x1f09, 0x342}, {0x1f10, 0x3b5, 0x313}, {0x1f11, 0x3b5, 0x314}, {0x1f12, 0x1f10, 0x300},
    {0x1f13, 0x1f11, 0x300}, {0x1f14, 0x1f10, 0x301}, {0x1f15, 0x1f11, 0x301}, {0x1f18, 0x395, 0x313},
    {0x1f19, 0x395, 0x314}, {0x1f1a, 0x1f18, 0x300}, {0x1f1b, 0x1f19, 0x300}, {0x1f1c, 0x1f18, 0x301},
    {0x1f1d, 0x1f19, 0x301}, {0x1f20, 0x3b7, 0x313}, {0x1f21, 0x3b7, 0x314}, {0x1f22, 0x1f20, 0x300},
    {0x1f23, 0x1f21, 0x300}, {0x1f24, 0x1f20, 0x301}, {0x1f25, 0x1f21, 0x301}, {0x1f26, 0x1f20, 0x342},
    {0x1f27, 0x1f21, 0x342}, {0x1f28, 0x397, 0x313}, {0x1f29, 0x397, 0x314}, {0x1f2a, 0x1f28, 0x300},
    {0x1f2b, 0x1f29, 0x300}, {0x1f2c, 0x1f28, 0x301}, {0x1f2d, 0x1f29, 0x301}, {0x1f2e, 0x1f28, 0x342},
    {0x1f2f, 0x1f29, 0x342}, {0x1f30, 0x3b9, 0x313}, {0x1f31, 0x3b9, 0x314}, {0x1f32, 0x1f30, 0x300},
    {0x1f33, 0x1f31, 0x300}, {0x1f34, 0x1f30, 0x301}, {0x1f35, 0x1f31, 0x301}, {0x1f36, 0x1f30, 0x342},
    {0x1f37, 0x1f31, 0x342}, {0x1f38, 0x399, 0x313}, {0x1f39, 0x399, 0x314}, {0x1f3a, 0x1f38, 0x300},
    {0x1f3b, 0x1f39, 0x300}, {0x1f3c, 0x1f38, 0x301}, {0x1f3d, 0x1f39, 0x301}, {0x1f3e, 0x1f38, 0x342},
    {0x1f3f, 0x1f39, 0x342}, {0x1f40, 0x3bf, 0x313}, {0x1f41, 0x3bf, 0x314}, {0x1f42, 0x1f40, 0x300},
    {0x1f43, 0x1f41, 0x300}, {0x1f44, 0x1f40, 0x301}, {0x1f45, 0x1f41, 0x301}, {0x1f48, 0x39f, 0x313},
    {0x1f49, 0x39f, 0x314}, {0x1f4a, 0x1f48, 0x300}, {0x1f4b, 0x1f49, 0x300}, {0x1f4c, 0x1f48, 0x301},
    {0x1f4d, 0x1f49, 0x301}, {0x1f50, 0x3c5, 0x313}, {0x1f51, 0x3c5, 0x314}, {0x1f52, 0x1f50, 0x300},
    {0x1f53, 0x1f51, 0x300}, {0x1f54, 0x1f50, 0x301}, {0x1f55, 0x1f51, 0x301}, {0x1f56, 0x1f50, 0x342},
    {0x1f57, 0x1f51, 0x342}, {0x1f59, 0x3a5, 0x314}, {0x1f5b, 0x1f59, 0x300}, {0x1f5d, 0x1f59, 0x301},
    {0x1f5f, 0x1f59, 0x342}, {0x1f60, 0x3c9, 0x313}, {0x1f61, 0x3c9, 0x314}, {0x1f62, 0x1f60, 0x300},
    {0x1f63, 0x1f61, 0x300}, {0x1f64, 0x1f60, 0x301}, {0x1f65, 0x1f61, 0x301}, {0x1f66, 0x1f60, 0x342},
    {0x1f67, 0x1f61, 0x342}, {0x1f68, 0x3a9, 0x313}, {0x1f69, 0x3a9, 0x314}, {0x1f6a, 0x1f68, 0x300},
    {0x1f6b, 0x1f69, 0x300}, {0x1f6c, 0x1f68, 0x301}, {0x1f6d, 0x1f69, 0x301}, {0x1f6e, 0x1f68, 0x342},
    {0x1f6f, 0x1f69, 0x342}, {0x1f70, 0x3b1, 0x300}, {0x1f71, 0x3ac, 0x0}, {0x1f72, 0x3b5, 0x300},
    {0x1f73, 0x3ad, 0x0}, {0x1f74, 0x3b7, 0x300}, {0x1f75, 0x3ae, 0x0}, {0x1f76, 0x3b9, 0x300}, {0x1f77, 0x3af, 0x0},
    {0x1f78, 0x3bf, 0x300}, {0x1f79, 0x3cc, 0x0}, {0x1f7a, 0x3c5, 0x300}, {0x1f7b, 0x3cd, 0x0},
    {0x1f7c, 0x3c9, 0x300}, {0x1f7d, 0x3ce, 0x0}, {0x1f80, 0x1f00, 0x345}, {0x1f81, 0x1f01, 0x345},
    {0x1f82, 0x1f02, 0x345}, {0x1f83, 0x1f03, 0x345}, {0x1f84, 0x1f04, 0x345}, {0x1f85, 0x1f05, 0x345},
    {0x1f86, 0x1f06, 0x345}, {0x1f87, 0x1f07, 0x345}, {0x1f88, 0x1f08, 0x345}, {0x1f89, 0x1f09, 0x345},
    {0x1f8a, 0x1f0a, 0x345}, {0x1f8b, 0x1f0b, 0x345}, {0x1f8c, 0x1f0c, 0x345}, {0x1f8d, 0x1f0d, 0x345},
    {0x1f8e, 0x1f0e, 0x345}, {0x1f8f, 0x1f0f, 0x345}, {0x1f90, 0x1f20, 0x345}, {0x1f91, 0x1f21, 0x345},
    {0x1f92, 0x1f22, 0x345}, {0x1f93, 0x1f23, 0x345}, {0x1f94, 0x1f24, 0x345}, {0x1f95, 0x1f25, 0x345},
    {0x1f96, 0x1f26, 0x345}, {0x1f97, 0x1f27, 0x345}, {0x1f98, 0x1f28, 0x345}, {0x1f99, 0x1f29, 0x345},
    {0x1f9a, 0x1f2a, 0x345}, {0x1f9b, 0x1f2b, 0x345}, {0x1f9c, 0x1f2c, 0x345}, {0x1f9d, 0x1f2d, 0x345},
    {0x1f9e, 0x1f2e, 0x345}, {0x1f9f, 0x1f2f, 0x345}, {0x1fa0, 0x1f60, 0x345}, {0x1fa1, 0x1f61, 0x345},
    {0x1fa2, 0x1f62, 0x345}, {0x1fa3, 0x1f63, 0x345}, {0x1fa4, 0x1f64, 0x345}, {0x1fa5, 0x1f65, 0x345},
    {0x1fa6, 0x1f66, 0x345}, {0x1fa7, 0x1f67, 0x345}, {0x1fa8, 0x1f68, 0x345}, {0x1fa9, 0x1f69, 0x345},
    {0x1faa, 0x1f6a, 0x345}, {0x1fab, 0x1f6b, 0x345}, {0x1fac, 0x1f6c, 0x345}, {0x1fad, 0x1f6d, 0x345},
    {0x1fae, 0x1f6e, 0x345}, {0x1faf, 0x1f6f, 0x345}, {0x1fb0, 0x3b1, 0x306}, {0x1fb1, 0x3b1, 0x304},
    {0x1fb2, 0x1f70, 0x345}, {0x1fb3, 0x3b1, 0x345}, {0x1fb4, 0x3ac, 0x345}, {0x1fb6, 0x3b1, 0x342},
    {0x1fb7, 0x1fb6, 0x345}, {0x1fb8, 0x391, 0x306}, {0x1fb9, 0x391, 0x304}, {0x1fba, 0x391, 0x300},
    {0x1fbb, 0x386, 0x0}, {0x1fbc, 0x391, 0x345}, {0x1fbe, 0x3b9, 0x0}, {0x1fc1, 0xa8, 0x342},
    {0x1fc2, 0x1f74, 0x345}, {0x1fc3, 0x3b7, 0x345}, {0x1fc4, 0x3ae, 0x345}, {0x1fc6, 0x3b7, 0x342},
    {0x1fc7, 0x1fc6, 0x345}, {0x1fc8, 0x395, 0x300}, {0x1fc9, 0x388, 0x0}, {0x1fca, 0x397, 0x300},
    {0x1fcb, 0x389, 0x0}, {0x1fcc, 0x397, 0x345}, {0x1fcd, 0x1fbf, 0x300}, {0x1fce, 0x1fbf, 0x301},
    {0x1fcf, 0x1fbf, 0x342}, {0x1fd0, 0x3b9, 0x306}, {0x1fd1, 0x3b9, 0x304}, {0x1fd2, 0x3ca, 0x300},
    {0x1fd3, 0x390, 0x0}, {0x1fd6, 0x3b9, 0x342}, {0x1fd7, 0x3ca, 0x342}, {0x1fd8, 0x399, 0x306},
    {0x1fd9, 0x399, 0x304}, {0x1fda, 0x399, 0x300}, {0x1fdb, 0x38a, 0x0}, {0x1fdd, 0x1ffe, 0x300},
    {0x1fde, 0x1ffe, 0x301}, {0x1fdf, 0x1ffe, 0x342}, {0x1fe0, 0x3c5, 0x306}, {0x1fe1, 0x3c5, 0x304},
    {0x1fe2, 0x3cb, 0x300}, {0x1fe3, 0x3b0, 0x0}, {0x1fe4, 0x3c1, 0x313}, {0x1fe5, 0x3c1, 0x314},
    {0x1fe6, 0x3c5, 0x342}, {0x1fe7, 0x3cb, 0x342}, {0x1fe8, 0x3a5, 0x306}, {0x1fe9, 0x3a5, 0x304},
    {0x1fea, 0x3a5, 0x300}, {0x1feb, 0x38e, 0x0}, {0x1fec, 0x3a1, 0x314}, {0x1fed, 0xa8, 0x300}, {0x1fee, 0x385, 0x0},
    {0x1fef, 0x60, 0x0}, {0x1ff2, 0x1f7c, 0x345}, {0x1ff3, 0x3c9, 0x345}, {0x1ff4, 0x3ce, 0x345},
    {0x1ff6, 0x3c9, 0x342}, {0x1ff7, 0x1ff6, 0x345}, {0x1ff8, 0x39f, 0x300}, {0x1ff9, 0x38c, 0x0},
    {0x1ffa, 0x3a9, 0x300}, {0x1ffb, 0x38f, 0x0}, {0x1ffc, 0x3a9, 0x345}, {0x1ffd, 0xb4, 0x0}, {0x2000, 0x2002, 0x0},
    {0x2001, 0x2003, 0x0}, {0x2126, 0x3a9, 0x0}, {0x212a, 0x4b, 0x0}, {0x212b, 0xc5, 0x0}, {0x219a, 0x2190, 0x338},
    {0x219b, 0x2192, 0x338}, {0x21ae, 0x2194, 0x338}, {0x21cd, 0x21d0, 0x338}, {0x21ce, 0x21d4, 0x338},
    {0x21cf, 0x21d2, 0x338}, {0x2204, 0x2203, 0x338}, {0x2209, 0x2208, 0x338}, {0x220c, 0x220b, 0x338},
    {0x2224, 0x2223, 0x338}, {0x2226, 0x2225, 0x338}, {0x2241, 0x223c, 0x338}, {0x2244, 0x2243, 0x338},
    {0x2247, 0x2245, 0x338}, {0x2249, 0x2248, 0x338}, {0x2260, 0x3d, 0x338}, {0x2262, 0x2261, 0x338},
    {0x226d, 0x224d, 0x338}, {0x226e, 0x3c, 0x338}, {0x226f, 0x3e, 0x338}, {0x2270, 0x2264, 0x338},
    {0x2271, 0x2265, 0x338}, {0x2274, 0x2272, 0x338}, {0x2275, 0x2273, 0x338}, {0x2278, 0x2276, 0x338},
    {0x2279, 0x2277, 0x338}, {0x2280, 0x227a, 0x338}, {0x2281, 0x227b, 0x338}, {0x2284, 0x2282, 0x338},
    {0x2285, 0x2283, 0x338}, {0x2288, 0x2286, 0x338}, {0x2289, 0x2287, 0x338}, {0x22ac, 0x22a2, 0x338},
    {0x22ad, 0x22a8, 0x338}, {0x22ae, 0x22a9, 0x338}, {0x22af, 0x22ab, 0x338}, {0x22e0, 0x227c, 0x338},
    {0x22e1, 0x227d, 0x338}, {0x22e2, 0x2291, 0x338}, {0x22e3, 0x2292, 0x338}, {0x22ea, 0x22b2, 0x338},
    {0x22eb, 0x22b3, 0x338}, {0x22ec, 0x22b4, 0x338}, {0x22ed, 0x22b5, 0x338}, {0x2329, 0x3008, 0x0},
    {0x232a, 0x3009, 0x0}, {0x2adc, 0x2add, 0x338}, {0x304c, 0x304b, 0x3099}, {0x304e, 0x304d, 0x3099},
    {0x3050, 0x304f, 0x3099}, {0x3052, 0x3051, 0x3099}, {0x3054, 0x3053, 0x3099}, {0x3056, 0x3055, 0x3099},
    {0x3058, 0x3057, 0x3099}, {0x305a, 0x3059, 0x3099}, {0x305c, 0x305b, 0x3099}, {0x305e, 0x305d, 0x3099},
    {0x3060, 0x305f, 0x3099}, {0x3062, 0x3061, 0x3099}, {0x3065, 0x3064, 0x3099}, {0x3067, 0x3066, 0x3099},
    {0x3069, 0x3068, 0x3099}, {0x3070, 0x306f, 0x3099}, {0x3071, 0x306f, 0x309a}, {0x3073, 0x3072, 0x3099},
    {0x3074, 0x3072, 0x309a}, {0x3076, 0x3075, 0x3099}, {0x3077, 0x3075, 0x309a}, {0x3079, 0x3078, 0x3099},
    {0x307a, 0x3078, 0x309a}, {0x307c, 0x307b, 0x3099}, {0x307d, 0x307b, 0x309a}, {0x3094, 0x3046, 0x3099},
    {0x309e, 0x309d, 0x3099}, {0x30ac, 0x30ab, 0x3099}, {0x30ae, 0x30ad, 0x3099}, {0x30b0, 0x30af, 0x3099},
    {0x30b2, 0x30b1, 0x3099}, {0x30b4, 0x30b3, 0x3099}, {0x30b6, 0x30b5, 0x3099}, {0x30b8, 0x30b7, 0x3099},
    {0x30ba, 0x30b9, 0x3099}, {0x30bc, 0x30bb, 0x3099}, {0x30be, 0x30bd, 0x3099}, {0x30c0, 0x30bf, 0x3099},
    {0x30c2, 0x30c1, 0x3099}, {0x30c5, 0x30c4, 0x3099}, {0x30c7, 0x30c6, 0x3099}, {0x30c9, 0x30c8, 0x3099},
    {0x30d0, 0x30cf, 0x3099}, {0x30d1, 0x30cf, 0x309a}, {0x30d3, 0x30d2, 0x3099}, {0x30d4, 0x30d2, 0x309a},
    {0x30d6, 0x30d5, 0x3099}, {0x30d7, 0x30d5, 0x309a}, {0x30d9, 0x30d8, 0x3099}, {0x30da, 0x30d8, 0x309a},
    {0x30dc, 0x30db, 0x3099}, {0x30dd, 0x30db, 0x309a}, {0x30f4, 0x30a6, 0x3099}, {0x30f7, 0x30ef, 0x3099},
    {0x30f8, 0x30f0, 0x3099}, {0x30f9, 0x30f1, 0x3099}, {0x30fa, 0x30f2, 0x3099}, {0x30fe, 0x30fd, 0x3099},
    {0xf900, 0x8c48, 0x0}, {0xf901, 0x66f4, 0x0}, {0xf902, 0x8eca, 0x0}, {0xf903, 0x8cc8, 0x0}, {0xf904, 0x6ed1, 0x0},
    {0xf905, 0x4e32, 0x0}, {0xf906, 0x53e5, 0x0}, {0xf907, 0x9f9c, 0x0}, {0xf908, 0x9f9c, 0x0}, {0xf909, 0x5951, 0x0},
    {0xf90a, 0x91d1, 0x0}, {0xf90b, 0x5587, 0x0}, {0xf90c, 0x5948, 0x0}, {0xf90d, 0x61f6, 0x0}, {0xf90e, 0x7669, 0x0},
    {0xf90f, 0x7f85, 0x0}, {0xf910, 0x863f, 0x0}, {0xf911, 0x87ba, 0x0}, {0xf912, 0x88f8, 0x0}, {0xf913, 0x908f, 0x0},
    {0xf914, 0x6a02, 0x0}, {0xf915, 0x6d1b, 0x0}, {0xf916, 0x70d9, 0x0}, {0xf917, 0x73de, 0x0}, {0xf918, 0x843d, 0x0},
    {0xf919, 0x916a, 0x0}, {0xf91a, 0x99f1, 0x0}, {0xf91b, 0x4e82, 0x0}, {0xf91c, 0x5375, 0x0}, {0xf91d, 0x6b04, 0x0},
    {0xf91e, 0x721b, 0x0}, {0xf91f, 0x862d, 0x0}, {0xf920, 0x9e1e, 0x0}, {0xf921, 0x5d50, 0x0}, {0xf922, 0x6feb, 0x0},
    {0xf923, 0x85cd, 0x0}, {0xf924, 0x8964, 0x0}, {0xf925, 0x62c9, 0x0}, {0xf926, 0x81d8, 0x0}, {0xf927, 0x881f, 0x0},
    {0xf928, 0x5eca, 0x0}, {0xf929, 0x6717, 0x0}, {0xf92a, 0x6d6a, 0x0}, {0xf92b, 0x72fc, 0x0}, {0xf92c, 0x90ce, 0x0},
    {0xf92d, 0x4f86, 0x0}, {0xf92e, 0x51b7, 0x0}, {0xf92f, 0x52de, 0x0}, {0xf930, 0x64c4, 0x0}, {0xf931, 0x6ad3, 0x0},
    {0xf932, 0x7210, 0x0}, {0xf933, 0x76e7, 0x0}, {0xf934, 0x8001, 0x0}, {0xf935, 0x8606, 0x0}, {0xf936, 0x865c, 0x0},
    {0xf937, 0x8def, 0x0}, {0xf938, 0x9732, 0x0}, {0xf939, 0x9b6f, 0x0}, {0xf93a, 0x9dfa, 0x0}, {0xf93b, 0x788c, 0x0},
    {0xf93c, 0x797f, 0x0}, {0xf93d, 0x7da0, 0x0}, {0xf93e, 0x83c9, 0x0}, {0xf93f, 0x9304, 0x0}, {0xf940, 0x9e7f, 0x0},
    {0xf941, 0x8ad6, 0x0}, {0xf942, 0x58df, 0x0}, {0xf943, 0x5f04, 0x0}, {0xf944, 0x7c60, 0x0}, {0xf945, 0x807e, 0x0},
    {0xf946, 0x7262, 0x0}, {0xf947, 0x78ca, 0x0}, {0xf948, 0x8cc2, 0x0}, {0xf949, 0x96f7, 0x0}, {0xf94a, 0x58d8, 0x0},
    {0xf94b, 0x5c62, 0x0}, {0xf94c, 0x6a13, 0x0}, {0xf94d, 0x6dda, 0x0}, {0xf94e, 0x6f0f, 0x0}, {0xf94f, 0x7d2f, 0x0},
    {0xf950, 0x7e37, 0x0}, {0xf951, 0x964b, 0x0}, {0xf952, 0x52d2, 0x0}, {0xf953, 0x808b, 0x0}, {0xf954, 0x51dc, 0x0},
    {0xf955, 0x51cc, 0x0}, {0xf956, 0x7a1c, 0x0}, {0xf957, 0x7dbe, 0x0}, {0xf958, 0x83f1, 0x0}, {0xf959, 0x9675, 0x0},
    {0xf95a, 0x8b80, 0x0}, {0xf95b, 0x62cf, 0x0}, {0xf95c, 0x6a02, 0x0}, {0xf95d, 0x8afe, 0x0}, {0xf95e, 0x4e39, 0x0},
    {0xf95f, 0x5be7, 0x0}, {0xf960, 0x6012, 0x0}, {0xf961, 0x7387, 0x0}, {0xf962, 0x7570, 0x0}, {0xf963, 0x5317, 0x0},
    {0xf964, 0x78fb, 0x0}, {0xf965, 0x4fbf, 0x0}, {0xf966, 0x5fa9, 0x0}, {0xf967, 0x4e0d, 0x0}, {0xf968, 0x6ccc, 0x0},
    {0xf969, 0x6578, 0x0}, {0xf96a, 0x7d22, 0x0}, {0xf96b, 0x53c3, 0x0}, {0xf96c, 0x585e, 0x0}, {0xf96d, 0x7701, 0x0},
    {0xf96e, 0x8449, 0x0}, {0xf96f, 0x8aaa, 0x0}, {0xf970, 0x6bba, 0x0}, {0xf971, 0x8fb0, 0x0}, {0xf972, 0x6c88, 0x0},
    {0xf973, 0x62fe, 0x0}, {0xf974, 0x82e5, 0x0}, {0xf975, 0x63a0, 0x0}, {0xf976, 0x7565, 0x0}, {0xf977, 0x4eae, 0x0},
    {0xf978, 0x5169, 0x0}, {0xf979, 0x51c9, 0x0}, {0xf97a, 0x6881, 0x0}, {0xf97b, 0x7ce7, 0x0}, {0xf97c, 0x826f, 0x0},
    {0xf97d, 0x8ad2, 0x0}, {0xf97e, 0x91cf, 0x0}, {0xf97f, 0x52f5, 0x0}, {0xf980, 0x5442, 0x0}, {0xf981, 0x5973, 0x0},
    {0xf982, 0x5eec, 0x0}, {0xf983, 0x65c5, 0x0}, {0xf984, 0x6ffe, 0x0}, {0xf985, 0x792a, 0x0}, {0xf986, 0x95ad, 0x0},
    {0xf987, 0x9a6a, 0x0}, {0xf988, 0x9e97, 0x0}, {0xf989, 0x9ece, 0x0}, {0xf98a, 0x529b, 0x0}, {0xf98b, 0x66c6, 0x0},
    {0xf98c, 0x6b77, 0x0}, {0xf98d, 0x8f62, 0x0}, {0xf98e, 0x5e74, 0x0}, {0xf98f, 0x6190, 0x0}, {0xf990, 0x6200, 0x0},
    {0xf991, 0x649a, 0x0}, {0xf992, 0x6f23, 0x0}, {0xf993, 0x7149, 0x0}, {0xf994, 0x7489, 0x0}, {0xf995, 0x79ca, 0x0},
    {0xf996, 0x7df4, 0x0}, {0xf997, 0x806f, 0x0}, {0xf998, 0x8f26, 0x0}, {0xf999, 0x84ee, 0x0}, {0xf99a, 0x9023, 0x0},
    {0xf99b, 0x934a, 0x0}, {0xf99c, 0x5217, 0x0}, {0xf99d, 0x52a3, 0x0}, {0xf99e, 0x54bd, 0x0}, {0xf99f, 0x70c8, 0x0},
    {0xf9a0, 0x88c2, 0x0}, {0xf9a1, 0x8aaa, 0x0}, {0xf9a2, 0x5ec9, 0x0}, {0xf9a3, 0x5ff5, 0x0}, {0xf9a4, 0x637b, 0x0},
    {0xf9a5, 0x6bae, 0x0}, {0xf9a6, 0x7c3e, 0x0}, {0xf9a7, 0x7375, 0x0}, {0xf9a8, 0x4ee4, 0x0}, {0xf9a9, 0x56f9, 0x0},
    {0xf9aa, 0x5be7, 0x0}, {0xf9ab, 0x5dba, 0x0}, {0xf9ac, 0x601c, 0x0}, {0xf9ad, 0x73b2, 0x0}, {0xf9ae, 0x7469, 0x0},
    {0xf9af, 0x7f9a, 0x0}, {0xf9b0, 0x8046, 0x0}, {0xf9b1, 0x9234, 0x0}, {0xf9b2, 0x96f6, 0x0}, {0xf9b3, 0x9748, 0x0},
    {0xf9b4, 0x9818, 0x0}, {0xf9b5, 0x4f8b, 0x0}, {0xf9b6, 0x79ae, 0x0}, {0xf9b7, 0x91b4, 0x0}, {0xf9b8, 0x96b8, 0x0},
    {0xf9b9, 0x60e1, 0x0}, {0xf9ba, 0x4e86, 0x0}, {0xf9bb, 0x50da, 0x0}, {0xf9bc, 0x5bee, 0x0}, {0xf9bd, 0x5c3f, 0x0},
    {0xf9be, 0x6599, 0x0}, {0xf9bf, 0x6a02, 0x0}, {0xf9c0, 0x71ce, 0x0}, {0xf9c1, 0x7642, 0x0}, {0xf9c2, 0x84fc, 0x0},
    {0xf9c3, 0x907c, 0x0}, {0xf9c4, 0x9f8d, 0x0}, {0xf9c5, 0x6688, 0x0}, {0xf9c6, 0x962e, 0x0}, {0xf9c7, 0x5289, 0x0},
    {0xf9c8, 0x677b, 0x0}, {0xf9c9, 0x67f3, 0x0}, {0xf9ca, 0x6d41, 0x0}, {0xf9cb, 0x6e9c, 0x0}, {0xf9cc, 0x7409, 0x0},
    {0xf9cd, 0x7559, 0x0}, {0xf9ce, 0x786b, 0x0}, {0xf9cf, 0x7d10, 0x0}, {0xf9d0, 0x985e, 0x0}, {0xf9d1, 0x516d, 0x0},
    {0xf9d2, 0x622e, 0x0}, {0xf9d3, 0x9678, 0x0}, {0xf9d4, 0x502b, 0x0}, {0xf9d5, 0x5d19, 0x0}, {0xf9d6, 0x6dea, 0x0},
    {0xf9d7, 0x8f2a, 0x0}, {0xf9d8, 0x5f8b, 0x0}, {0xf9d9, 0x6144, 0x0}, {0xf9da, 0x6817, 0x0}, {0xf9db, 0x7387, 0x0},
    {0xf9dc, 0x9686, 0x0}, {0xf9dd, 0x5229, 0x0}, {0xf9de, 0x540f, 0x0}, {0xf9df, 0x5c65, 0x0}, {0xf9e0, 0x6613, 0x0},
    {0xf9e1, 0x674e, 0x0}, {0xf9e2, 0x68a8, 0x0}, {0xf9e3, 0x6ce5, 0x0}, {0xf9e4, 0x7406, 0x0}, {0xf9e5, 0x75e2, 0x0},
    {0xf9e6, 0x7f79, 0x0}, {0xf9e7, 0x88cf, 0x0}, {0xf9e8, 0x88e1, 0x0}, {0xf9e9, 0x91cc, 0x0}, {0xf9ea, 0x96e2, 0x0},
    {0xf9eb, 0x533f, 0x0}, {0xf9ec, 0x6eba, 0x0}, {0xf9ed, 0x541d, 0x0}, {0xf9ee, 0x71d0, 0x0}, {0xf9ef, 0x7498, 0x0},
    {0xf9f0, 0x85fa, 0x0}, {0xf9f1, 0x96a3, 0x0}, {0xf9f2, 0x9c57, 0x0}, {0xf9f3, 0x9e9f, 0x0}, {0xf9f4, 0x6797, 0x0},
    {0xf9f5, 0x6dcb, 0x0}, {0xf9f6, 0x81e8, 0x0}, {0xf9f7, 0x7acb, 0x0}, {0xf9f8, 0x7b20, 0x0}, {0xf9f9, 0x7c92, 0x0},
    {0xf9fa, 0x72c0, 0x0}, {0xf9fb, 0x7099, 0x0}, {0xf9fc, 0x8b58, 0x0}, {0xf9fd, 0x4ec0, 0x0}, {0xf9fe, 0x8336, 0x0},
    {0xf9ff, 0x523a, 0x0}, {0xfa00, 0x5207, 0x0}, {0xfa01, 0x5ea6, 0x0}, {0xfa02, 0x62d3, 0x0}, {0xfa03, 0x7cd6, 0x0},
    {0xfa04, 0x5b85, 0x0}, {0xfa05, 0x6d1e, 0x0}, {0xfa06, 0x66b4, 0x0}, {0xfa07, 0x8f3b, 0x0}, {0xfa08, 0x884c, 0x0},
    {0xfa09, 0x964d, 0x0}, {0xfa0a, 0x898b, 0x0}, {0xfa0b, 0x5ed3, 0x0}, {0xfa0c, 0x5140, 0x0}, {0xfa0d, 0x55c0, 0x0},
    {0xfa10, 0x585a, 0x0}, {0xfa12, 0x6674, 0x0}, {0xfa15, 0x51de, 0x0}, {0xfa16, 0x732a, 0x0}, {0xfa17, 0x76ca, 0x0},
    {0xfa18, 0x793c, 0x0}, {0xfa19, 0x795e, 0x0}, {0xfa1a, 0x7965, 0x0}, {0xfa1b, 0x798f, 0x0}, {0xfa1c, 0x9756, 0x0},
    {0xfa1d, 0x7cbe, 0x0}, {0xfa1e, 0x7fbd, 0x0}, {0xfa20, 0x8612, 0x0}, {0xfa22, 0x8af8, 0x0}, {0xfa25, 0x9038, 0x0},
    {0xfa26, 0x90fd, 0x0}, {0xfa2a, 0x98ef, 0x0}, {0xfa2b, 0x98fc, 0x0}, {0xfa2c, 0x9928, 0x0}, {0xfa2d, 0x9db4, 0x0},
    {0xfa2e, 0x90de, 0x0}, {0xfa2f, 0x96b7, 0x0}, {0xfa30, 0x4fae, 0x0}, {0xfa31, 0x50e7, 0x0}, {0xfa32, 0x514d, 0x0},
    {0xfa33, 0x52c9, 0x0}, {0xfa34, 0x52e4, 0x0}, {0xfa35, 0x5351, 0x0}, {0xfa36, 0x559d, 0x0}, {0xfa37, 0x5606, 0x0},
    {0xfa38, 0x5668, 0x0}, {0xfa39, 0x5840, 0x0}, {0xfa3a, 0x58a8, 0x0}, {0xfa3b, 0x5c64, 0x0}, {0xfa3c, 0x5c6e, 0x0},
    {0xfa3d, 0x6094, 0x0}, {0xfa3e, 0x6168, 0x0}, {0xfa3f, 0x618e, 0x0}, {0xfa40, 0x61f2, 0x0}, {0xfa41, 0x654f, 0x0},
    {0xfa42, 0x65e2, 0x0}, {0xfa43, 0x6691, 0x0}, {0xfa44, 0x6885, 0x0}, {0xfa45, 0x6d77, 0x0}, {0xfa46, 0x6e1a, 0x0},
    {0xfa47, 0x6f22, 0x0}, {0xfa48, 0x716e, 0x0}, {0xfa49, 0x722b, 0x0}, {0xfa4a, 0x7422, 0x0}, {0xfa4b, 0x7891, 0x0},
    {0xfa4c, 0x793e, 0x0}, {0xfa4d, 0x7949, 0x0}, {0xfa4e, 0x7948, 0x0}, {0xfa4f, 0x7950, 0x0}, {0xfa50, 0x7956, 0x0},
    {0xfa51, 0x795d, 0x0}, {0xfa52, 0x798d, 0x0}, {0xfa53, 0x798e, 0x0}, {0xfa54, 0x7a40, 0x0}, {0xfa55, 0x7a81, 0x0},
    {0xfa56, 0x7bc0, 0x0}, {0xfa57, 0x7df4, 0x0}, {0xfa58, 0x7e09, 0x0}, {0xfa59, 0x7e41, 0x0}, {0xfa5a, 0x7f72, 0x0},
    {0xfa5b, 0x8005, 0x0}, {0xfa5c, 0x81ed, 0x0}, {0xfa5d, 0x8279, 0x0}, {0xfa5e, 0x8279, 0x0}, {0xfa5f, 0x8457, 0x0},
    {0xfa60, 0x8910, 0x0}, {0xfa61, 0x8996, 0x0}, {0xfa62, 0x8b01, 0x0}, {0xfa63, 0x8b39, 0x0}, {0xfa64, 0x8cd3, 0x0},
    {0xfa65, 0x8d08, 0x0}, {0xfa66, 0x8fb6, 0x0}, {0xfa67, 0x9038, 0x0}, {0xfa68, 0x96e3, 0x0}, {0xfa69, 0x97ff, 0x0},
    {0xfa6a, 0x983b, 0x0}, {0xfa6b, 0x6075, 0x0}, {0xfa6c, 0x242ee, 0x0}, {0xfa6d, 0x8218, 0x0},
    {0xfa70, 0x4e26, 0x0}, {0xfa71, 0x51b5, 0x0}, {0xfa72, 0x5168, 0x0}, {0xfa73, 0x4f80, 0x0}, {0xfa74, 0x5145, 0x0},
    {0xfa75, 0x5180, 0x0}, {0xfa76, 0x52c7, 0x0}, {0xfa77, 0x52fa, 0x0}, {0xfa78, 0x559d, 0x0}, {0xfa79, 0x5555, 0x0},
    {0xfa7a, 0x5599, 0x0}, {0xfa7b, 0x55e2, 0x0}, {0xfa7c, 0x585a, 0x0}, {0xfa7d, 0x58b3, 0x0}, {0xfa7e, 0x5944, 0x0},
    {0xfa7f, 0x5954, 0x0}, {0xfa80, 0x5a62, 0x0}, {0xfa81, 0x5b28, 0x0}, {0xfa82, 0x5ed2, 0x0}, {0xfa83, 0x5ed9, 0x0},
    {0xfa84, 0x5f69, 0x0}, {0xfa85, 0x5fad, 0x0}, {0xfa86, 0x60d8, 0x0}, {0xfa87, 0x614e, 0x0}, {0xfa88, 0x6108, 0x0},
    {0xfa89, 0x618e, 0x0}, {0xfa8a, 0x6160, 0x0}, {0xfa8b, 0x61f2, 0x0}, {0xfa8c, 0x6234, 0x0}, {0xfa8d, 0x63c4, 0x0},
    {0xfa8e, 0x641c, 0x0}, {0xfa8f, 0x6452, 0x0}, {0xfa90, 0x6556, 0x0}, {0xfa91, 0x6674, 0x0}, {0xfa92, 0x6717, 0x0},
    {0xfa93, 0x671b, 0x0}, {0xfa94, 0x6756, 0x0}, {0xfa95, 0x6b79, 0x0}, {0xfa96, 0x6bba, 0x0}, {0xfa97, 0x6d41, 0x0},
    {0xfa98, 0x6edb, 0x0}, {0xfa99, 0x6ecb, 0x0}, {0xfa9a, 0x6f22, 0x0}, {0xfa9b, 0x701e, 0x0}, {0xfa9c, 0x716e, 0x0},
    {0xfa9d, 0x77a7, 0x0}, {0xfa9e, 0x7235, 0x0}, {0xfa9f, 0x72af, 0x0}, {0xfaa0, 0x732a, 0x0}, {0xfaa1, 0x7471, 0x0},
    {0xfaa2, 0x7506, 0x0}, {0xfaa3, 0x753b, 0x0}, {0xfaa4, 0x761d, 0x0}, {0xfaa5, 0x761f, 0x0}, {0xfaa6, 0x76ca, 0x0},
    {0xfaa7, 0x76db, 0x0}, {0xfaa8, 0x76f4, 0x0}, {0xfaa9, 0x774a, 0x0}, {0xfaaa, 0x7740, 0x0}, {0xfaab, 0x78cc, 0x0},
    {0xfaac, 0x7ab1, 0x0}, {0xfaad, 0x7bc0, 0x0}, {0xfaae, 0x7c7b, 0x0}, {0xfaaf, 0x7d5b, 0x0}, {0xfab0, 0x7df4, 0x0},
    {0xfab1, 0x7f3e, 0x0}, {0xfab2, 0x8005, 0x0}, {0xfab3, 0x8352, 0x0}, {0xfab4, 0x83ef, 0x0}, {0xfab5, 0x8779, 0x0},
    {0xfab6, 0x8941, 0x0}, {0xfab7, 0x8986, 0x0}, {0xfab8, 0x8996, 0x0}, {0xfab9, 0x8abf, 0x0}, {0xfaba, 0x8af8, 0x0},
    {0xfabb, 0x8acb, 0x0}, {0xfabc, 0x8b01, 0x0}, {0xfabd, 0x8afe, 0x0}, {0xfabe, 0x8aed, 0x0}, {0xfabf, 0x8b39, 0x0},
    {0xfac0, 0x8b8a, 0x0}, {0xfac1, 0x8d08, 0x0}, {0xfac2, 0x8f38, 0x0}, {0xfac3, 0x9072, 0x0}, {0xfac4, 0x9199, 0x0},
    {0xfac5, 0x9276, 0x0}, {0xfac6, 0x967c, 0x0}, {0xfac7, 0x96e3, 0x0}, {0xfac8, 0x9756, 0x0}, {0xfac9, 0x97db, 0x0},
    {0xfaca, 0x97ff, 0x0}, {0xfacb, 0x980b, 0x0}, {0xfacc, 0x983b, 0x0}, {0xfacd, 0x9b12, 0x0}, {0xface, 0x9f9c, 0x0},
    {0xfacf, 0x2284a, 0x0}, {0xfad0, 0x22844, 0x0}, {0xfad1, 0x233d5, 0x0}, {0xfad2, 0x3b9d, 0x0},
    {0xfad3, 0x4018, 0x0}, {0xfad4, 0x4039, 0x0}, {0xfad5, 0x25249, 0x0}, {0xfad6, 0x25cd0, 0x0},
    {0xfad7, 0x27ed3, 0x0}, {0xfad8, 0x9f43, 0x0}, {0xfad9, 0x9f8e, 0x0}, {0xfb1d, 0x5d9, 0x5b4},
    {0xfb1f, 0x5f2, 0x5b7}, {0xfb2a, 0x5e9, 0x5c1}, {0xfb2b, 0x5e9, 0x5c2}, {0xfb2c, 0xfb49, 0x5c1},
    {0xfb2d, 0xfb49, 0x5c2}, {0xfb2e, 0x5d0, 0x5b7}, {0xfb2f, 0x5d0, 0x5b8}, {0xfb30, 0x5d0, 0x5bc},
    {0xfb31, 0x5d1, 0x5bc}, {0xfb32, 0x5d2, 0x5bc}, {0xfb33, 0x5d3, 0x5bc}, {0xfb34, 0x5d4, 0x5bc},
    {0xfb35, 0x5d5, 0x5bc}, {0xfb36, 0x5d6, 0x5bc}, {0xfb38, 0x5d8, 0x5bc}, {0xfb39, 0x5d9, 0x5bc},
    {0xfb3a, 0x5da, 0x5bc}, {0xfb3b, 0x5db, 0x5bc}, {0xfb3c, 0x5dc, 0x5bc}, {0xfb3e, 0x5de, 0x5bc},
    {0xfb40, 0x5e0, 0x5bc}, {0xfb41, 0x5e1, 0x5bc}, {0xfb43, 0x5e3, 0x5bc}, {0xfb44, 0x5e4, 0x5bc},
    {0xfb46, 0x5e6, 0x5bc}, {0xfb47, 0x5e7, 0x5bc}, {0xfb48, 0x5e8, 0x5bc}, {0xfb49, 0x5e9, 0x5bc},
    {0xfb4a, 0x5ea, 0x5bc}, {0xfb4b, 0x5d5, 0x5b9}, {0xfb4c, 0x5d1, 0x5bf}, {0xfb4d, 0x5db, 0x5bf},
    {0xfb4e, 0x5e4, 0x5bf}, {0x1109a, 0x11099, 0x110ba}, {0x1109c, 0x1109b, 0x110ba}, {0x110ab, 0x110a5, 0x110ba},
    {0x1112e, 0x11131, 0x11127}, {0x1112f, 0x11132, 0x11127}, {0x1134b, 0x11347, 0x1133e},
    {0x1134c, 0x11347, 0x11357}, {0x114bb, 0x114b9, 0x114ba}, {0x114bc, 0x114b9, 0x114b0},
    {0x114be, 0x114b9, 0x114bd}, {0x115ba, 0x115b8, 0x115af}, {0x115bb, 0x115b9, 0x115af},
    {0x11938, 0x11935, 0x11930}, {0x1d15e, 0x1d157, 0x1d165}, {0x1d15f, 0x1d158, 0x1d165},
    {0x1d160, 0x1d15f, 0x1d16e}, {0x1d161, 0x1d15f, 0x1d16f}, {0x1d162, 0x1d15f, 0x1d170},
    {0x1d163, 0x1d15f, 0x1d171}, {0x1d164, 0x1d15f, 0x1d172}, {0x1d1bb, 0x1d1b9, 0x1d165},
    {0x1d1bc, 0x1d1ba, 0x1d165}, {0x1d1bd, 0x1d1bb, 0x1d16e}, {0x1d1be, 0x1d1bc, 0x1d16e},
    {0x1d1bf, 0x1d1bb, 0x1d16f}, {0x1d1c0, 0x1d1bc, 0x1d16f}, {0x2f800, 0x4e3d, 0x0}, {0x2f801, 0x4e38, 0x0},
    {0x2f802, 0x4e41, 0x0}, {0x2f803, 0x20122, 0x0}, {0x2f804, 0x4f60, 0x0}, {0x2f805, 0x4fae, 0x0},
    {0x2f806, 0x4fbb, 0x0}, {0x2f807, 0x5002, 0x0}, {0x2f808, 0x507a, 0x0}, {0x2f809, 0x5099, 0x0},
    {0x2f80a, 0x50e7, 0x0}, {0x2f80b, 0x50cf, 0x0}, {0x2f80c, 0x349e, 0x0}, {0x2f80d, 0x2063a, 0x0},
    {0x2f80e, 0x514d, 0x0}, {0x2f80f, 0x5154, 0x0}, {0x2f810, 0x5164, 0x0}, {0x2f811, 0x5177, 0x0},
    {0x2f812, 0x2051c, 0x0}, {0x2f813, 0x34b9, 0x0}, {0x2f814, 0x5167, 0x0}, {0x2f815, 0x518d, 0x0},
    {0x2f816, 0x2054b, 0x0}, {0x2f817, 0x5197, 0x0}, {0x2f818, 0x51a4, 0x0}, {0x2f819, 0x4ecc, 0x0},
    {0x2f81a, 0x51ac, 0x0}, {0x2f81b, 0x51b5, 0x0}, {0x2f81c, 0x291df, 0x0}, {0x2f81d, 0x51f5, 0x0},
    {0x2f81e, 0x5203, 0x0}, {0x2f81f, 0x34df, 0x0}, {0x2f820, 0x523b, 0x0}, {0x2f821, 0x5246, 0x0},
    {0x2f822, 0x5272, 0x0}, {0x2f823, 0x5277, 0x0}, {0x2f824, 0x3515, 0x0}, {0x2f825, 0x52c7, 0x0},
    {0x2f826, 0x52c9, 0x0}, {0x2f827, 0x52e4, 0x0}, {0x2f828, 0x52fa, 0x0}, {0x2f829, 0x5305, 0x0},
    {0x2f82a, 0x5306, 0x0}, {0x2f82b, 0x5317, 0x0}, {0x2f82c, 0x5349, 0x0}, {0x2f82d, 0x5351, 0x0},
    {0x2f82e, 0x535a, 0x0}, {0x2f82f, 0x5373, 0x0}, {0x2f830, 0x537d, 0x0}, {0x2f831, 0x537f, 0x0},
    {0x2f832, 0x537f, 0x0}, {0x2f833, 0x537f, 0x0}, {0x2f834, 0x20a2c, 0x0}, {0x2f835, 0x7070, 0x0},
    {0x2f836, 0x53ca, 0x0}, {0x2f837, 0x53df, 0x0}, {0x2f838, 0x20b63, 0x0}, {0x2f839, 0x53eb, 0x0},
    {0x2f83a, 0x53f1, 0x0}, {0x2f83b, 0x5406, 0x0}, {0x2f83c, 0x549e, 0x0}, {0x2f83d, 0x5438, 0x0},
    {0x2f83e, 0x5448, 0x0}, {0x2f83f, 0x5468, 0x0}, {0x2f840, 0x54a2, 0x0}, {0x2f841, 0x54f6, 0x0},
    {0x2f842, 0x5510, 0x0}, {0x2f843, 0x5553, 0x0}, {0x2f844, 0x5563, 0x0}, {0x2f845, 0x5584, 0x0},
    {0x2f846, 0x5584, 0x0}, {0x2f847, 0x5599, 0x0}, {0x2f848, 0x55ab, 0x0}, {0x2f849, 0x55b3, 0x0},
    {0x2f84a, 0x55c2, 0x0}, {0x2f84b, 0x5716, 0x0}, {0x2f84c, 0x5606, 0x0}, {0x2f84d, 0x5717, 0x0},
    {0x2f84e, 0x5651, 0x0}, {0x2f84f, 0x5674, 0x0}, {0x2f850, 0x5207, 0x0}, {0x2f851, 0x58ee, 0x0},
    {0x2f852, 0x57ce, 0x0}, {0x2f853, 0x57f4, 0x0}, {0x2f854, 0x580d, 0x0}, {0x2f855, 0x578b, 0x0},
    {0x2f856, 0x5832, 0x0}, {0x2f857, 0x5831, 0x0}, {0x2f858, 0x58ac, 0x0}, {0x2f859, 0x214e4, 0x0},
    {0x2f85a, 0x58f2, 0x0}, {0x2f85b, 0x58f7, 0x0}, {0x2f85c, 0x5906, 0x0}, {0x2f85d, 0x591a, 0x0},
    {0x2f85e, 0x5922, 0x0}, {0x2f85f, 0x5962, 0x0}, {0x2f860, 0x216a8, 0x0}, {0x2f861, 0x216ea, 0x0},
    {0x2f862, 0x59ec, 0x0}, {0x2f863, 0x5a1b, 0x0}, {0x2f864, 0x5a27, 0x0}, {0x2f865, 0x59d8, 0x0},
    {0x2f866, 0x5a66, 0x0}, {0x2f867, 0x36ee, 0x0}, {0x2f868, 0x36fc, 0x0}, {0x2f869, 0x5b08, 0x0},
    {0x2f86a, 0x5b3e, 0x0}, {0x2f86b, 0x5b3e, 0x0}, {0x2f86c, 0x219c8, 0x0}, {0x2f86d, 0x5bc3, 0x0},
    {0x2f86e, 0x5bd8, 0x0}, {0x2f86f, 0x5be7, 0x0}, {0x2f870, 0x5bf3, 0x0}, {0x2f871, 0x21b18, 0x0},
    {0x2f872, 0x5bff, 0x0}, {0x2f873, 0x5c06, 0x0}, {0x2f874, 0x5f53, 0x0}, {0x2f875, 0x5c22, 0x0},
    {0x2f876, 0x3781, 0x0}, {0x2f877, 0x5c60, 0x0}, {0x2f878, 0x5c6e, 0x0}, {0x2f879, 0x5cc0, 0x0},
    {0x2f87a, 0x5c8d, 0x0}, {0x2f87b, 0x21de4, 0x0}, {0x2f87c, 0x5d43, 0x0}, {0x2f87d, 0x21de6, 0x0},
    {0x2f87e, 0x5d6e, 0x0}, {0x2f87f, 0x5d6b, 0x0}, {0x2f880, 0x5d7c, 0x0}, {0x2f881, 0x5de1, 0x0},
    {0x2f882, 0x5de2, 0x0}, {0x2f883, 0x382f, 0x0}, {0x2f884, 0x5dfd, 0x0}, {0x2f885, 0x5e28, 0x0},
    {0x2f886, 0x5e3d, 0x0}, {0x2f887, 0x5e69, 0x0}, {0x2f888, 0x3862, 0x0}, {0x2f889, 0x22183, 0x0},
    {0x2f88a, 0x387c, 0x0}, {0x2f88b, 0x5eb0, 0x0}, {0x2f88c, 0x5eb3, 0x0}, {0x2f88d, 0x5eb6, 0x0},
    {0x2f88e, 0x5eca, 0x0}, {0x2f88f, 0x2a392, 0x0}, {0x2f890, 0x5efe, 0x0}, {0x2f891, 0x22331, 0x0},
    {0x2f892, 0x22331, 0x0}, {0x2f893, 0x8201, 0x0}, {0x2f894, 0x5f22, 0x0}, {0x2f895, 0x5f22, 0x0},
    {0x2f896, 0x38c7, 0x0}, {0x2f897, 0x232b8, 0x0}, {0x2f898, 0x261da, 0x0}, {0x2f899, 0x5f62, 0x0},
    {0x2f89a, 0x5f6b, 0x0}, {0x2f89b, 0x38e3, 0x0}, {0x2f89c, 0x5f9a, 0x0}, {0x2f89d, 0x5fcd, 0x0},
    {0x2f89e, 0x5fd7, 0x0}, {0x2f89f, 0x5ff9, 0x0}, {0x2f8a0, 0x6081, 0x0}, {0x2f8a1, 0x393a, 0x0},
    {0x2f8a2, 0x391c, 0x0}, {0x2f8a3, 0x6094, 0x0}, {0x2f8a4, 0x226d4, 0x0}, {0x2f8a5, 0x60c7, 0x0},
    {0x2f8a6, 0x6148, 0x0}, {0x2f8a7, 0x614c, 0x0}, {0x2f8a8, 0x614e, 0x0}, {0x2f8a9, 0x614c, 0x0},
    {0x2f8aa, 0x617a, 0x0}, {0x2f8ab, 0x618e, 0x0}, {0x2f8ac, 0x61b2, 0x0}, {0x2f8ad, 0x61a4, 0x0},
    {0x2f8ae, 0x61af, 0x0}, {0x2f8af, 0x61de, 0x0}, {0x2f8b0, 0x61f2, 0x0}, {0x2f8b1, 0x61f6, 0x0},
    {0x2f8b2, 0x6210, 0x0}, {0x2f8b3, 0x621b, 0x0}, {0x2f8b4, 0x625d, 0x0}, {0x2f8b5, 0x62b1, 0x0},
    {0x2f8b6, 0x62d4, 0x0}, {0x2f8b7, 0x6350, 0x0}, {0x2f8b8, 0x22b0c, 0x0}, {0x2f8b9, 0x633d, 0x0},
    {0x2f8ba, 0x62fc, 0x0}, {0x2f8bb, 0x6368, 0x0}, {0x2f8bc, 0x6383, 0x0}, {0x2f8bd, 0x63e4, 0x0},
    {0x2f8be, 0x22bf1, 0x0}, {0x2f8bf, 0x6422, 0x0}, {0x2f8c0, 0x63c5, 0x0}, {0x2f8c1, 0x63a9, 0x0},
    {0x2f8c2, 0x3a2e, 0x0}, {0x2f8c3, 0x6469, 0x0}, {0x2f8c4, 0x647e, 0x0}, {0x2f8c5, 0x649d, 0x0},
    {0x2f8c6, 0x6477, 0x0}, {0x2f8c7, 0x3a6c, 0x0}, {0x2f8c8, 0x654f, 0x0}, {0x2f8c9, 0x656c, 0x0},
    {0x2f8ca, 0x2300a, 0x0}, {0x2f8cb, 0x65e3, 0x0}, {0x2f8cc, 0x66f8, 0x0}, {0x2f8cd, 0x6649, 0x0},
    {0x2f8ce, 0x3b19, 0x0}, {0x2f8cf, 0x6691, 0x0}, {0x2f8d0, 0x3b08, 0x0}, {0x2f8d1, 0x3ae4, 0x0},
    {0x2f8d2, 0x5192, 0x0}, {0x2f8d3, 0x5195, 0x0}, {0x2f8d4, 0x6700, 0x0}, {0x2f8d5, 0x669c, 0x0},
    {0x2f8d6, 0x80ad, 0x0}, {0x2f8d7, 0x43d9, 0x0}, {0x2f8d8, 0x6717, 0x0}, {0x2f8d9, 0x671b, 0x0},
    {0x2f8da, 0x6721, 0x0}, {0x2f8db, 0x675e, 0x0}, {0x2f8dc, 0x6753, 0x0}, {0x2f8dd, 0x233c3, 0x0},
    {0x2f8de, 0x3b49, 0x0}, {0x2f8df, 0x67fa, 0x0}, {0x2f8e0, 0x6785, 0x0}, {0x2f8e1, 0x6852, 0x0},
    {0x2f8e2, 0x6885, 0x0}, {0x2f8e3, 0x2346d, 0x0}, {0x2f8e4, 0x688e, 0x0}, {0x2f8e5, 0x681f, 0x0},
    {0x2f8e6, 0x6914, 0x0}, {0x2f8e7, 0x3b9d, 0x0}, {0x2f8e8, 0x6942, 0x0}, {0x2f8e9, 0x69a3, 0x0},
    {0x2f8ea, 0x69ea, 0x0}, {0x2f8eb, 0x6aa8, 0x0}, {0x2f8ec, 0x236a3, 0x0}, {0x2f8ed, 0x6adb, 0x0},
    {0x2f8ee, 0x3c18, 0x0}, {0x2f8ef, 0x6b21, 0x0}, {0x2f8f0, 0x238a7, 0x0}, {0x2f8f1, 0x6b54, 0x0},
    {0x2f8f2, 0x3c4e, 0x0}, {0x2f8f3, 0x6b72, 0x0}, {0x2f8f4, 0x6b9f, 0x0}, {0x2f8f5, 0x6bba, 0x0},
    {0x2f8f6, 0x6bbb, 0x0}, {0x2f8f7, 0x23a8d, 0x0}, {0x2f8f8, 0x21d0b, 0x0}, {0x2f8f9, 0x23afa, 0x0},
    {0x2f8fa, 0x6c4e, 0x0}, {0x2f8fb, 0x23cbc, 0x0}, {0x2f8fc, 0x6cbf, 0x0}, {0x2f8fd, 0x6ccd, 0x0},
    {0x2f8fe, 0x6c67, 0x0}, {0x2f8ff, 0x6d16, 0x0}, {0x2f900, 0x6d3e, 0x0}, {0x2f901, 0x6d77, 0x0},
    {0x2f902, 0x6d41, 0x0}, {0x2f903, 0x6d69, 0x0}, {0x2f904, 0x6d78, 0x0}, {0x2f905, 0x6d85, 0x0},
    {0x2f906, 0x23d1e, 0x0}, {0x2f907, 0x6d34, 0x0}, {0x2f908, 0x6e2f, 0x0}, {0x2f909, 0x6e6e, 0x0},
    {0x2f90a, 0x3d33, 0x0}, {0x2f90b, 0x6ecb, 0x0}, {0x2f90c, 0x6ec7, 0x0}, {0x2f90d, 0x23ed1, 0x0},
    {0x2f90e, 0x6df9, 0x0}, {0x2f90f, 0x6f6e, 0x0}, {0x2f910, 0x23f5e, 0x0}, {0x2f911, 0x23f8e, 0x0},
    {0x2f912, 0x6fc6, 0x0}, {0x2f913, 0x7039, 0x0}, {0x2f914, 0x701e, 0x0}, {0x2f915, 0x701b, 0x0},
    {0x2f916, 0x3d96, 0x0}, {0x2f917, 0x704a, 0x0}, {0x2f918, 0x707d, 0x0}, {0x2f919, 0x7077, 0x0},
    {0x2f91a, 0x70ad, 0x0}, {0x2f91b, 0x20525, 0x0}, {0x2f91c, 0x7145, 0x0}, {0x2f91d, 0x24263, 0x0},
    {0x2f91e, 0x719c, 0x0}, {0x2f91f, 0x243ab, 0x0}, {0x2f920, 0x7228, 0x0}, {0x2f921, 0x7235, 0x0},
    {0x2f922, 0x7250, 0x0}, {0x2f923, 0x24608, 0x0}, {0x2f924, 0x7280, 0x0}, {0x2f925, 0x7295, 0x0},
    {0x2f926, 0x24735, 0x0}, {0x2f927, 0x24814, 0x0}, {0x2f928, 0x737a, 0x0}, {0x2f929, 0x738b, 0x0},
    {0x2f92a, 0x3eac, 0x0}, {0x2f92b, 0x73a5, 0x0}, {0x2f92c, 0x3eb8, 0x0}, {0x2f92d, 0x3eb8, 0x0},
    {0x2f92e, 0x7447, 0x0}, {0x2f92f, 0x745c, 0x0}, {0x2f930, 0x7471, 0x0}, {0x2f931, 0x7485, 0x0},
    {0x2f932, 0x74ca, 0x0}, {0x2f933, 0x3f1b, 0x0}, {0x2f934, 0x7524, 0x0}, {0x2f935, 0x24c36, 0x0},
    {0x2f936, 0x753e, 0x0}, {0x2f937, 0x24c92, 0x0}, {0x2f938, 0x7570, 0x0}, {0x2f939, 0x2219f, 0x0},
    {0x2f93a, 0x7610, 0x0}, {0x2f93b, 0x24fa1, 0x0}, {0x2f93c, 0x24fb8, 0x0}, {0x2f93d, 0x25044, 0x0},
    {0x2f93e, 0x3ffc, 0x0}, {0x2f93f, 0x4008, 0x0}, {0x2f940, 0x76f4, 0x0}, {0x2f941, 0x250f3, 0x0},
    {0x2f942, 0x250f2, 0x0}, {0x2f943, 0x25119, 0x0}, {0x2f944, 0x25133, 0x0}, {0x2f945, 0x771e, 0x0},
    {0x2f946, 0x771f, 0x0}, {0x2f947, 0x771f, 0x0}, {0x2f948, 0x774a, 0x0}, {0x2f949, 0x4039, 0x0},
    {0x2f94a, 0x778b, 0x0}, {0x2f94b, 0x4046, 0x0}, {0x2f94c, 0x4096, 0x0}, {0x2f94d, 0x2541d, 0x0},
    {0x2f94e, 0x784e, 0x0}, {0x2f94f, 0x788c, 0x0}, {0x2f950, 0x78cc, 0x0}, {0x2f951, 0x40e3, 0x0},
    {0x2f952, 0x25626, 0x0}, {0x2f953, 0x7956, 0x0}, {0x2f954, 0x2569a, 0x0}, {0x2f955, 0x256c5, 0x0},
    {0x2f956, 0x798f, 0x0}, {0x2f957, 0x79eb, 0x0}, {0x2f958, 0x412f, 0x0}, {0x2f959, 0x7a40, 0x0},
    {0x2f95a, 0x7a4a, 0x0}, {0x2f95b, 0x7a4f, 0x0}, {0x2f95c, 0x2597c, 0x0}, {0x2f95d, 0x25aa7, 0x0},
    {0x2f95e, 0x25aa7, 0x0}, {0x2f95f, 0x7aee, 0x0}, {0x2f960, 0x4202, 0x0}, {0x2f961, 0x25bab, 0x0},
    {0x2f962, 0x7bc6, 0x0}, {0x2f963, 0x7bc9, 0x0}, {0x2f964, 0x4227, 0x0}, {0x2f965, 0x25c80, 0x0},
    {0x2f966, 0x7cd2, 0x0}, {0x2f967, 0x42a0, 0x0}, {0x2f968, 0x7ce8, 0x0}, {0x2f969, 0x7ce3, 0x0},
    {0x2f96a, 0x7d00, 0x0}, {0x2f96b, 0x25f86, 0x0}, {0x2f96c, 0x7d63, 0x0}, {0x2f96d, 0x4301, 0x0},
    {0x2f96e, 0x7dc7, 0x0}, {0x2f96f, 0x7e02, 0x0}, {0x2f970, 0x7e45, 0x0}, {0x2f971, 0x4334, 0x0},
    {0x2f972, 0x26228, 0x0}, {0x2f973, 0x26247, 0x0}, {0x2f974, 0x4359, 0x0}, {0x2f975, 0x262d9, 0x0},
    {0x2f976, 0x7f7a, 0x0}, {0x2f977, 0x2633e, 0x0}, {0x2f978, 0x7f95, 0x0}, {0x2f979, 0x7ffa, 0x0},
    {0x2f97a, 0x8005, 0x0}, {0x2f97b, 0x264da, 0x0}, {0x2f97c, 0x26523, 0x0}, {0x2f97d, 0x8060, 0x0},
    {0x2f97e, 0x265a8, 0x0}, {0x2f97f, 0x8070, 0x0}, {0x2f980, 0x2335f, 0x0}, {0x2f981, 0x43d5, 0x0},
    {0x2f982, 0x80b2, 0x0}, {0x2f983, 0x8103, 0x0}, {0x2f984, 0x440b, 0x0}, {0x2f985, 0x813e, 0x0},
    {0x2f986, 0x5ab5, 0x0}, {0x2f987, 0x267a7, 0x0}, {0x2f988, 0x267b5, 0x0}, {0x2f989, 0x23393, 0x0},
    {0x2f98a, 0x2339c, 0x0}, {0x2f98b, 0x8201, 0x0}, {0x2f98c, 0x8204, 0x0}, {0x2f98d, 0x8f9e, 0x0},
    {0x2f98e, 0x446b, 0x0}, {0x2f98f, 0x8291, 0x0}, {0x2f990, 0x828b, 0x0}, {0x2f991, 0x829d, 0x0},
    {0x2f992, 0x52b3, 0x0}, {0x2f993, 0x82b1, 0x0}, {0x2f994, 0x82b3, 0x0}, {0x2f995, 0x82bd, 0x0},
    {0x2f996, 0x82e6, 0x0}, {0x2f997, 0x26b3c, 0x0}, {0x2f998, 0x82e5, 0x0}, {0x2f999, 0x831d, 0x0},
    {0x2f99a, 0x8363, 0x0}, {0x2f99b, 0x83ad, 0x0}, {0x2f99c, 0x8323, 0x0}, {0x2f99d, 0x83bd, 0x0},
    {0x2f99e, 0x83e7, 0x0}, {0x2f99f, 0x8457, 0x0}, {0x2f9a0, 0x8353, 0x0}, {0x2f9a1, 0x83ca, 0x0},
    {0x2f9a2, 0x83cc, 0x0}, {0x2f9a3, 0x83dc, 0x0}, {0x2f9a4, 0x26c36, 0x0}, {0x2f9a5, 0x26d6b, 0x0},
    {0x2f9a6, 0x26cd5, 0x0}, {0x2f9a7, 0x452b, 0x0}, {0x2f9a8, 0x84f1, 0x0}, {0x2f9a9, 0x84f3, 0x0},
    {0x2f9aa, 0x8516, 0x0}, {0x2f9ab, 0x273ca, 0x0}, {0x2f9ac, 0x8564, 0x0}, {0x2f9ad, 0x26f2c, 0x0},
    {0x2f9ae, 0x455d, 0x0}, {0x2f9af, 0x4561, 0x0}, {0x2f9b0, 0x26fb1, 0x0}, {0x2f9b1, 0x270d2, 0x0},
    {0x2f9b2, 0x456b, 0x0}, {0x2f9b3, 0x8650, 0x0}, {0x2f9b4, 0x865c, 0x0}, {0x2f9b5, 0x8667, 0x0},
    {0x2f9b6, 0x8669, 0x0}, {0x2f9b7, 0x86a9, 0x0}, {0x2f9b8, 0x8688, 0x0}, {0x2f9b9, 0x870e, 0x0},
    {0x2f9ba, 0x86e2, 0x0}, {0x2f9bb, 0x8779, 0x0}, {0x2f9bc, 0x8728, 0x0}, {0x2f9bd, 0x876b, 0x0},
    {0x2f9be, 0x8786, 0x0}, {0x2f9bf, 0x45d7, 0x0}, {0x2f9c0, 0x87e1, 0x0}, {0x2f9c1, 0x8801, 0x0},
    {0x2f9c2, 0x45f9, 0x0}, {0x2f9c3, 0x8860, 0x0}, {0x2f9c4, 0x8863, 0x0}, {0x2f9c5, 0x27667, 0x0},
    {0x2f9c6, 0x88d7, 0x0}, {0x2f9c7, 0x88de, 0x0}, {0x2f9c8, 0x4635, 0x0}, {0x2f9c9, 0x88fa, 0x0},
    {0x2f9ca, 0x34bb, 0x0}, {0x2f9cb, 0x278ae, 0x0}, {0x2f9cc, 0x27966, 0x0}, {0x2f9cd, 0x46be, 0x0},
    {0x2f9ce, 0x46c7, 0x0}, {0x2f9cf, 0x8aa0, 0x0}, {0x2f9d0, 0x8aed, 0x0}, {0x2f9d1, 0x8b8a, 0x0},
    {0x2f9d2, 0x8c55, 0x0}, {0x2f9d3, 0x27ca8, 0x0}, {0x2f9d4, 0x8cab, 0x0}, {0x2f9d5, 0x8cc1, 0x0},
    {0x2f9d6, 0x8d1b, 0x0}, {0x2f9d7, 0x8d77, 0x0}, {0x2f9d8, 0x27f2f, 0x0}, {0x2f9d9, 0x20804, 0x0},
    {0x2f9da, 0x8dcb, 0x0}, {0x2f9db, 0x8dbc, 0x0}, {0x2f9dc, 0x8df0, 0x0}, {0x2f9dd, 0x208de, 0x0},
    {0x2f9de, 0x8ed4, 0x0}, {0x2f9df, 0x8f38, 0x0}, {0x2f9e0, 0x285d2, 0x0}, {0x2f9e1, 0x285ed, 0x0},
    {0x2f9e2, 0x9094, 0x0}, {0x2f9e3, 0x90f1, 0x0}, {0x2f9e4, 0x9111, 0x0}, {0x2f9e5, 0x2872e, 0x0},
    {0x2f9e6, 0x911b, 0x0}, {0x2f9e7, 0x9238, 0x0}, {0x2f9e8, 0x92d7, 0x0}, {0x2f9e9, 0x92d8, 0x0},
    {0x2f9ea, 0x927c, 0x0}, {0x2f9eb, 0x93f9, 0x0}, {0x2f9ec, 0x9415, 0x0}, {0x2f9ed, 0x28bfa, 0x0},
    {0x2f9ee, 0x958b, 0x0}, {0x2f9ef, 0x4995, 0x0}, {0x2f9f0, 0x95b7, 0x0}, {0x2f9f1, 0x28d77, 0x0},
    {0x2f9f2, 0x49e6, 0x0}, {0x2f9f3, 0x96c3, 0x0}, {0x2f9f4, 0x5db2, 0x0}, {0x2f9f5, 0x9723, 0x0},
    {0x2f9f6, 0x29145, 0x0}, {0x2f9f7, 0x2921a, 0x0}, {0x2f9f8, 0x4a6e, 0x0}, {0x2f9f9, 0x4a76, 0x0},
    {0x2f9fa, 0x97e0, 0x0}, {0x2f9fb, 0x2940a, 0x0}, {0x2f9fc, 0x4ab2, 0x0}, {0x2f9fd, 0x29496, 0x0},
    {0x2f9fe, 0x980b, 0x0}, {0x2f9ff, 0x980b, 0x0}, {0x2fa00, 0x9829, 0x0}, {0x2fa01, 0x295b6, 0x0},
    {0x2fa02, 0x98e2, 0x0}, {0x2fa03, 0x4b33, 0x0}, {0x2fa04, 0x9929, 0x0}, {0x2fa05, 0x99a7, 0x0},
    {0x2fa06, 0x99c2, 0x0}, {0x2fa07, 0x99fe, 0x0}, {0x2fa08, 0x4bce, 0x0}, {0x2fa09, 0x29b30, 0x0},
    {0x2fa0a, 0x9b12, 0x0}, {0x2fa0b, 0x9c40, 0x0}, {0x2fa0c, 0x9cfd, 0x0}, {0x2fa0d, 0x4cce, 0x0},
    {0x2fa0e, 0x4ced, 0x0}, {0x2fa0f, 0x9d67, 0x0}, {0x2fa10, 0x2a0ce, 0x0}, {0x2fa11, 0x4cf8, 0x0},
    {0x2fa12, 0x2a105, 0x0}, {0x2fa13, 0x2a20e, 0x0}, {0x2fa14, 0x2a291, 0x0}, {0x2fa15, 0x9ebb, 0x0},
    {0x2fa16, 0x4d56, 0x0}, {0x2fa17, 0x9ef9, 0x0}, {0x2fa18, 0x9efe, 0x0}, {0x2fa19, 0x9f05, 0x0},
    {0x2fa1a, 0x9f0f, 0x0}, {0x2fa1b, 0x9f16, 0x0}, {0x2fa1c, 0x9f3b, 0x0}, {0x2fa1d, 0x2a600, 0x0},
};
static const uint32_t zt__uni_compose[][3] = { /* 941 rows */
    {0x3c, 0x338, 0x226e}, {0x3d, 0x338, 0x2260}, {0x3e, 0x338, 0x226f}, {0x41, 0x300, 0xc0}, {0x41, 0x301, 0xc1},
    {0x41, 0x302, 0xc2}, {0x41, 0x303, 0xc3}, {0x41, 0x304, 0x100}, {0x41, 0x306, 0x102}, {0x41, 0x307, 0x226},
    {0x41, 0x308, 0xc4}, {0x41, 0x309, 0x1ea2}, {0x41, 0x30a, 0xc5}, {0x41, 0x30c, 0x1cd}, {0x41, 0x30f, 0x200},
    {0x41, 0x311, 0x202}, {0x41, 0x323, 0x1ea0}, {0x41, 0x325, 0x1e00}, {0x41, 0x328, 0x104}, {0x42, 0x307, 0x1e02},
    {0x42, 0x323, 0x1e04}, {0x42, 0x331, 0x1e06}, {0x43, 0x301, 0x106}, {0x43, 0x302, 0x108}, {0x43, 0x307, 0x10a},
    {0x43, 0x30c, 0x10c}, {0x43, 0x327, 0xc7}, {0x44, 0x307, 0x1e0a}, {0x44, 0x30c, 0x10e}, {0x44, 0x323, 0x1e0c},
    {0x44, 0x327, 0x1e10}, {0x44, 0x32d, 0x1e12}, {0x44, 0x331, 0x1e0e}, {0x45, 0x300, 0xc8}, {0x45, 0x301, 0xc9},
    {0x45, 0x302, 0xca}, {0x45, 0x303, 0x1ebc}, {0x45, 0x304, 0x112}, {0x45, 0x306, 0x114}, {0x45, 0x307, 0x116},
    {0x45, 0x308, 0xcb}, {0x45, 0x309, 0x1eba}, {0x45, 0x30c, 0x11a}, {0x45, 0x30f, 0x204}, {0x45, 0x311, 0x206},
    {0x45, 0x323, 0x1eb8}, {0x45, 0x327, 0x228}, {0x45, 0x328, 0x118}, {0x45, 0x32d, 0x1e18}, {0x45, 0x330, 0x1e1a},
    {0x46, 0x307, 0x1e1e}, {0x47, 0x301, 0x1f4}, {0x47, 0x302, 0x11c}, {0x47, 0x304, 0x1e20}, {0x47, 0x306, 0x11e},
    {0x47, 0x307, 0x120}, {0x47, 0x30c, 0x1e6}, {0x47, 0x327, 0x122}, {0x48, 0x302, 0x124}, {0x48, 0x307, 0x1e22},
    {0x48, 0x308, 0x1e26}, {0x48, 0x30c, 0x21e}, {0x48, 0x323, 0x1e24}, {0x48, 0x327, 0x1e28}, {0x48, 0x32e, 0x1e2a},
    {0x49, 0x300, 0xcc}, {0x49, 0x301, 0xcd}, {0x49, 0x302, 0xce}, {0x49, 0x303, 0x128}, {0x49, 0x304, 0x12a},
    {0x49, 0x306, 0x12c}, {0x49, 0x307, 0x130}, {0x49, 0x308, 0xcf}, {0x49, 0x309, 0x1ec8}, {0x49, 0x30c, 0x1cf},
    {0x49, 0x30f, 0x208}, {0x49, 0x311, 0x20a}, {0x49, 0x323, 0x1eca}, {0x49, 0x328, 0x12e}, {0x49, 0x330, 0x1e2c},
    {0x4a, 0x302, 0x134}, {0x4b, 0x301, 0x1e30}, {0x4b, 0x30c, 0x1e8}, {0x4b, 0x323, 0x1e32}, {0x4b, 0x327, 0x136},
    {0x4b, 0x331, 0x1e34}, {0x4c, 0x301, 0x139}, {0x4c, 0x30c, 0x13d}, {0x4c, 0x323, 0x1e36}, {0x4c, 0x327, 0x13b},
    {0x4c, 0x32d, 0x1e3c}, {0x4c, 0x331, 0x1e3a}, {0x4d, 0x301, 0x1e3e}, {0x4d, 0x307, 0x1e40}, {0x4d, 0x323, 0x1e42},
    {0x4e, 0x300, 0x1f8}, {0x4e, 0x301, 0x143}, {0x4e, 0x303, 0xd1}, {0x4e, 0x307, 0x1e44}, {0x4e, 0x30c, 0x147},
    {0x4e, 0x323, 0x1e46}, {0x4e, 0x327, 0x145}, {0x4e, 0x32d, 0x1e4a}, {0x4e, 0x331, 0x1e48}, {0x4f, 0x300, 0xd2},
    {0x4f, 0x301, 0xd3}, {0x4f, 0x302, 0xd4}, {0x4f, 0x303, 0xd5}, {0x4f, 0x304, 0x14c}, {0x4f, 0x306, 0x14e},
    {0x4f, 0x307, 0x22e}, {0x4f, 0x308, 0xd6}, {0x4f, 0x309, 0x1ece}, {0x4f, 0x30b, 0x150}, {0x4f, 0x30c, 0x1d1},
    {0x4f, 0x30f, 0x20c}, {0x4f, 0x311, 0x20e}, {0x4f, 0x31b, 0x1a0}, {0x4f, 0x323, 0x1ecc}, {0x4f, 0x328, 0x1ea},
    {0x50, 0x301, 0x1e54}, {0x50, 0x307, 0x1e56}, {0x52, 0x301, 0x154}, {0x52, 0x307, 0x1e58}, {0x52, 0x30c, 0x158},
    {0x52, 0x30f, 0x210}, {0x52, 0x311, 0x212}, {0x52, 0x323, 0x1e5a}, {0x52, 0x327, 0x156}, {0x52, 0x331, 0x1e5e},
    {0x53, 0x301, 0x15a}, {0x53, 0x302, 0x15c}, {0x53, 0x307, 0x1e60}, {0x53, 0x30c, 0x160}, {0x53, 0x323, 0x1e62},
    {0x53, 0x326, 0x218}, {0x53, 0x327, 0x15e}, {0x54, 0x307, 0x1e6a}, {0x54, 0x30c, 0x164}, {0x54, 0x323, 0x1e6c},
    {0x54, 0x326, 0x21a}, {0x54, 0x327, 0x162}, {0x54, 0x32d, 0x1e70}, {0x54, 0x331, 0x1e6e}, {0x55, 0x300, 0xd9},
    {0x55, 0x301, 0xda}, {0x55, 0x302, 0xdb}, {0x55, 0x303, 0x168}, {0x55, 0x304, 0x16a}, {0x55, 0x306, 0x16c},
    {0x55, 0x308, 0xdc}, {0x55, 0x309, 0x1ee6}, {0x55, 0x30a, 0x16e}, {0x55, 0x30b, 0x170}, {0x55, 0x30c, 0x1d3},
    {0x55, 0x30f, 0x214}, {0x55, 0x311, 0x216}, {0x55, 0x31b, 0x1af}, {0x55, 0x323, 0x1ee4}, {0x55, 0x324, 0x1e72},
    {0x55, 0x328, 0x172}, {0x55, 0x32d, 0x1e76}, {0x55, 0x330, 0x1e74}, {0x56, 0x303, 0x1e7c}, {0x56, 0x323, 0x1e7e},
    {0x57, 0x300, 0x1e80}, {0x57, 0x301, 0x1e82}, {0x57, 0x302, 0x174}, {0x57, 0x307, 0x1e86}, {0x57, 0x308, 0x1e84},
    {0x57, 0x323, 0x1e88}, {0x58, 0x307, 0x1e8a}, {0x58, 0x308, 0x1e8c}, {0x59, 0x300, 0x1ef2}, {0x59, 0x301, 0xdd},
    {0x59, 0x302, 0x176}, {0x59, 0x303, 0x1ef8}, {0x59, 0x304, 0x232}, {0x59, 0x307, 0x1e8e}, {0x59, 0x308, 0x178},
    {0x59, 0x309, 0x1ef6}, {0x59, 0x323, 0x1ef4}, {0x5a, 0x301, 0x179}, {0x5a, 0x302, 0x1e90}, {0x5a, 0x307, 0x17b},
    {0x5a, 0x30c, 0x17d}, {0x5a, 0x323, 0x1e92}, {0x5a, 0x331, 0x1e94}, {0x61, 0x300, 0xe0}, {0x61, 0x301, 0xe1},
    {0x61, 0x302, 0xe2}, {0x61, 0x303, 0xe3}, {0x61, 0x304, 0x101}, {0x61, 0x306, 0x103}, {0x61, 0x307, 0x227},
    {0x61, 0x308, 0xe4}, {0x61, 0x309, 0x1ea3}, {0x61, 0x30a, 0xe5}, {0x61, 0x30c, 0x1ce}, {0x61, 0x30f, 0x201},
    {0x61, 0x311, 0x203}, {0x61, 0x323, 0x1ea1}, {0x61, 0x325, 0x1e01}, {0x61, 0x328, 0x105}, {0x62, 0x307, 0x1e03},
    {0x62, 0x323, 0x1e05}, {0x62, 0x331, 0x1e07}, {0x63, 0x301, 0x107}, {0x63, 0x302, 0x109}, {0x63, 0x307, 0x10b},
    {0x63, 0x30c, 0x10d}, {0x63, 0x327, 0xe7}, {0x64, 0x307, 0x1e0b}, {0x64, 0x30c, 0x10f}, {0x64, 0x323, 0x1e0d},
    {0x64, 0x327, 0x1e11}, {0x64, 0x32d, 0x1e13}, {0x64, 0x331, 0x1e0f}, {0x65, 0x300, 0xe8}, {0x65, 0x301, 0xe9},
    {0x65, 0x302, 0xea}, {0x65, 0x303, 0x1ebd}, {0x65, 0x304, 0x113}, {0x65, 0x306, 0x115}, {0x65, 0x307, 0x117},
    {0x65, 0x308, 0xeb}, {0x65, 0x309, 0x1ebb}, {0x65, 0x30c, 0x11b}, {0x65, 0x30f, 0x205}, {0x65, 0x311, 0x207},
    {0x65, 0x323, 0x1eb9}, {0x65, 0x327, 0x229}, {0x65, 0x328, 0x119}, {0x65, 0x32d, 0x1e19}, {0x65, 0x330, 0x1e1b},
    {0x66, 0x307, 0x1e1f}, {0x67, 0x301, 0x1f5}, {0x67, 0x302, 0x11d}, {0x67, 0x304, 0x1e21}, {0x67, 0x306, 0x11f},
    {0x67, 0x307, 0x121}, {0x67, 0x30c, 0x1e7}, {0x67, 0x327, 0x123}, {0x68, 0x302, 0x125}, {0x68, 0x307, 0x1e23},
    {0x68, 0x308, 0x1e27}, {0x68, 0x30c, 0x21f}, {0x68, 0x323, 0x1e25}, {0x68, 0x327, 0x1e29}, {0x68, 0x32e, 0x1e2b},
    {0x68, 0x331, 0x1e96}, {0x69, 0x300, 0xec}, {0x69, 0x301, 0xed}, {0x69, 0x302, 0xee}, {0x69, 0x303, 0x129},
    {0x69, 0x304, 0x12b}, {0x69, 0x306, 0x12d}, {0x69, 0x308, 0xef}, {0x69, 0x309, 0x1ec9}, {0x69, 0x30c, 0x1d0},
    {0x69, 0x30f, 0x209}, {0x69, 0x311, 0x20b}, {0x69, 0x323, 0x1ecb}, {0x69, 0x328, 0x12f}, {0x69, 0x330, 0x1e2d},
    {0x6a, 0x302, 0x135}, {0x6a, 0x30c, 0x1f0}, {0x6b, 0x301, 0x1e31}, {0x6b, 0x30c, 0x1e9}, {0x6b, 0x323, 0x1e33},
    {0x6b, 0x327, 0x137}, {0x6b, 0x331, 0x1e35}, {0x6c, 0x301, 0x13a}, {0x6c, 0x30c, 0x13e}, {0x6c, 0x323, 0x1e37},
    {0x6c, 0x327, 0x13c}, {0x6c, 0x32d, 0x1e3d}, {0x6c, 0x331, 0x1e3b}, {0x6d, 0x301, 0x1e3f}, {0x6d, 0x307, 0x1e41},
    {0x6d, 0x323, 0x1e43}, {0x6e, 0x300, 0x1f9}, {0x6e, 0x301, 0x144}, {0x6e, 0x303, 0xf1}, {0x6e, 0x307, 0x1e45},
    {0x6e, 0x30c, 0x148}, {0x6e, 0x323, 0x1e47}, {0x6e, 0x327, 0x146}, {0x6e, 0x32d, 0x1e4b}, {0x6e, 0x331, 0x1e49},
    {0x6f, 0x300, 0xf2}, {0x6f, 0x301, 0xf3}, {0x6f, 0x302, 0xf4}, {0x6f, 0x303, 0xf5}, {0x6f, 0x304, 0x14d},
    {0x6f, 0x306, 0x14f}, {0x6f, 0x307, 0x22f}, {0x6f, 0x308, 0xf6}, {0x6f, 0x309, 0x1ecf}, {0x6f, 0x30b, 0x151},
    {0x6f, 0x30c, 0x1d2}, {0x6f, 0x30f, 0x20d}, {0x6f, 0x311, 0x20f}, {0x6f, 0x31b, 0x1a1}, {0x6f, 0x323, 0x1ecd},
    {0x6f, 0x328, 0x1eb}, {0x70, 0x301, 0x1e55}, {0x70, 0x307, 0x1e57}, {0x72, 0x301, 0x155}, {0x72, 0x307, 0x1e59},
    {0x72, 0x30c, 0x159}, {0x72, 0x30f, 0x211}, {0x72, 0x311, 0x213}, {0x72, 0x323, 0x1e5b}, {0x72, 0x327, 0x157},
    {0x72, 0x331, 0x1e5f}, {0x73, 0x301, 0x15b}, {0x73, 0x302, 0x15d}, {0x73, 0x307, 0x1e61}, {0x73, 0x30c, 0x161},
    {0x73, 0x323, 0x1e63}, {0x73, 0x326, 0x219}, {0x73, 0x327, 0x15f}, {0x74, 0x307, 0x1e6b}, {0x74, 0x308, 0x1e97},
    {0x74, 0x30c, 0x165}, {0x74, 0x323, 0x1e6d}, {0x74, 0x326, 0x21b}, {0x74, 0x327, 0x163}, {0x74, 0x32d, 0x1e71},
    {0x74, 0x331, 0x1e6f}, {0x75, 0x300, 0xf9}, {0x75, 0x301, 0xfa}, {0x75, 0x302, 0xfb}, {0x75, 0x303, 0x169},
    {0x75, 0x304, 0x16b}, {0x75, 0x306, 0x16d}, {0x75, 0x308, 0xfc}, {0x75, 0x309, 0x1ee7}, {0x75, 0x30a, 0x16f},
    {0x75, 0x30b, 0x171}, {0x75, 0x30c, 0x1d4}, {0x75, 0x30f, 0x215}, {0x75, 0x311, 0x217}, {0x75, 0x31b, 0x1b0},
    {0x75, 0x323, 0x1ee5}, {0x75, 0x324, 0x1e73}, {0x75, 0x328, 0x173}, {0x75, 0x32d, 0x1e77}, {0x75, 0x330, 0x1e75},
    {0x76, 0x303, 0x1e7d}, {0x76, 0x323, 0x1e7f}, {0x77, 0x300, 0x1e81}, {0x77, 0x301, 0x1e83}, {0x77, 0x302, 0x175},
    {0x77, 0x307, 0x1e87}, {0x77, 0x308, 0x1e85}, {0x77, 0x30a, 0x1e98}, {0x77, 0x323, 0x1e89}, {0x78, 0x307, 0x1e8b},
    {0x78, 0x308, 0x1e8d}, {0x79, 0x300, 0x1ef3}, {0x79, 0x301, 0xfd}, {0x79, 0x302, 0x177}, {0x79, 0x303, 0x1ef9},
    {0x79, 0x304, 0x233}, {0x79, 0x307, 0x1e8f}, {0x79, 0x308, 0xff}, {0x79, 0x309, 0x1ef7}, {0x79, 0x30a, 0x1e99},
    {0x79, 0x323, 0x1ef5}, {0x7a, 0x301, 0x17a}, {0x7a, 0x302, 0x1e91}, {0x7a, 0x307, 0x17c}, {0x7a, 0x30c, 0x17e},
    {0x7a, 0x323, 0x1e93}, {0x7a, 0x331, 0x1e95}, {0xa8, 0x300, 0x1fed}, {0xa8, 0x301, 0x385}, {0xa8, 0x342, 0x1fc1},
    {0xc2, 0x300, 0x1ea6}, {0xc2, 0x301, 0x1ea4}, {0xc2, 0x303, 0x1eaa}, {0xc2, 0x309, 0x1ea8}, {0xc4, 0x304, 0x1de},
    {0xc5, 0x301, 0x1fa}, {0xc6, 0x301, 0x1fc}, {0xc6, 0x304, 0x1e2}, {0xc7, 0x301, 0x1e08}, {0xca, 0x300, 0x1ec0},
    {0xca, 0x301, 0x1ebe}, {0xca, 0x303, 0x1ec4}, {0xca, 0x309, 0x1ec2}, {0xcf, 0x301, 0x1e2e}, {0xd4, 0x300, 0x1ed2},
    {0xd4, 0x301, 0x1ed0}, {0xd4, 0x303, 0x1ed6}, {0xd4, 0x309, 0x1ed4}, {0xd5, 0x301, 0x1e4c}, {0xd5, 0x304, 0x22c},
    {0xd5, 0x308, 0x1e4e}, {0xd6, 0x304, 0x22a}, {0xd8, 0x301, 0x1fe}, {0xdc, 0x300, 0x1db}, {0xdc, 0x301, 0x1d7},
    {0xdc, 0x304, 0x1d5}, {0xdc, 0x30c, 0x1d9}, {0xe2, 0x300, 0x1ea7}, {0xe2, 0x301, 0x1ea5}, {0xe2, 0x303, 0x1eab},
    {0xe2, 0x309, 0x1ea9}, {0xe4, 0x304, 0x1df}, {0xe5, 0x301, 0x1fb}, {0xe6, 0x301, 0x1fd}, {0xe6, 0x304, 0x1e3},
    {0xe7, 0x301, 0x1e09}, {0xea, 0x300, 0x1ec1}, {0xea, 0x301, 0x1ebf}, {0xea, 0x303, 0x1ec5}, {0xea, 0x309, 0x1ec3},
    {0xef, 0x301, 0x1e2f}, {0xf4, 0x300, 0x1ed3}, {0xf4, 0x301, 0x1ed1}, {0xf4, 0x303, 0x1ed7}, {0xf4, 0x309, 0x1ed5},
    {0xf5, 0x301, 0x1e4d}, {0xf5, 0x304, 0x22d}, {0xf5, 0x308, 0x1e4f}, {0xf6, 0x304, 0x22b}, {0xf8, 0x301, 0x1ff},
    {0xfc, 0x300, 0x1dc}, {0xfc, 0x301, 0x1d8}, {0xfc, 0x304, 0x1d6}, {0xfc, 0x30c, 0x1da}, {0x102, 0x300, 0x1eb0},
    {0x102, 0x301, 0x1eae}, {0x102, 0x303, 0x1eb4}, {0x102, 0x309, 0x1eb2}, {0x103, 0x300, 0x1eb1},
    {0x103, 0x301, 0x1eaf}, {0x103, 0x303, 0x1eb5}, {0x103, 0x309, 0x1eb3}, {0x112, 0x300, 0x1e14},
    {0x112, 0x301, 0x1e16}, {0x113, 0x300, 0x1e15}, {0x113, 0x301, 0x1e17}, {0x14c, 0x300, 0x1e50},
    {0x14c, 0x301, 0x1e52}, {0x14d, 0x300, 0x1e51}, {0x14d, 0x301, 0x1e53}, {0x15a, 0x307, 0x1e64},
    {0x15b, 0x307, 0x1e65}, {0x160, 0x307, 0x1e66}, {0x161, 0x307, 0x1e67}, {0x168, 0x301, 0x1e78},
    {0x169, 0x301, 0x1e79}, {0x16a, 0x308, 0x1e7a}, {0x16b, 0x308, 0x1e7b}, {0x17f, 0x307, 0x1e9b},
    {0x1a0, 0x300, 0x1edc}, {0x1a0, 0x301, 0x1eda}, {0x1a0, 0x303, 0x1ee0}, {0x1a0, 0x309, 0x1ede},
    {0x1a0, 0x323, 0x1ee2}, {0x1a1, 0x300, 0x1edd}, {0x1a1, 0x301, 0x1edb}, {0x1a1, 0x303, 0x1ee1},
    {0x1a1, 0x309, 0x1edf}, {0x1a1, 0x323, 0x1ee3}, {0x1af, 0x300, 0x1eea}, {0x1af, 0x301, 0x1ee8},
    {0x1af, 0x303, 0x1eee}, {0x1af, 0x309, 0x1eec}, {0x1af, 0x323, 0x1ef0}, {0x1b0, 0x300, 0x1eeb},
    {0x1b0, 0x301, 0x1ee9}, {0x1b0, 0x303, 0x1eef}, {0x1b0, 0x309, 0x1eed}, {0x1b0, 0x323, 0x1ef1},
    {0x1b7, 0x30c, 0x1ee}, {0x1ea, 0x304, 0x1ec}, {0x1eb, 0x304, 0x1ed}, {0x226, 0x304, 0x1e0}, {0x227, 0x304, 0x1e1},
    {0x228, 0x306, 0x1e1c}, {0x229, 0x306, 0x1e1d}, {0x22e, 0x304, 0x230}, {0x22f, 0x304, 0x231},
    {0x292, 0x30c, 0x1ef}, {0x391, 0x300, 0x1fba}, {0x391, 0x301, 0x386}, {0x391, 0x304, 0x1fb9},
    {0x391, 0x306, 0x1fb8}, {0x391, 0x313, 0x1f08}, {0x391, 0x314, 0x1f09}, {0x391, 0x345, 0x1fbc},
    {0x395, 0x300, 0x1fc8}, {0x395, 0x301, 0x388}, {0x395, 0x313, 0x1f18}, {0x395, 0x314, 0x1f19},
    {0x397, 0x300, 0x1fca}, {0x397, 0x301, 0x389}, {0x397, 0x313, 0x1f28}, {0x397, 0x314, 0x1f29},
    {0x397, 0x345, 0x1fcc}, {0x399, 0x300, 0x1fda}, {0x399, 0x301, 0x38a}, {0x399, 0x304, 0x1fd9},
    {0x399, 0x306, 0x1fd8}, {0x399, 0x308, 0x3aa}, {0x399, 0x313, 0x1f38}, {0x399, 0x314, 0x1f39},
    {0x39f, 0x300, 0x1ff8}, {0x39f, 0x301, 0x38c}, {0x39f, 0x313, 0x1f48}, {0x39f, 0x314, 0x1f49},
    {0x3a1, 0x314, 0x1fec}, {0x3a5, 0x300, 0x1fea}, {0x3a5, 0x301, 0x38e}, {0x3a5, 0x304, 0x1fe9},
    {0x3a5, 0x306, 0x1fe8}, {0x3a5, 0x308, 0x3ab}, {0x3a5, 0x314, 0x1f59}, {0x3a9, 0x300, 0x1ffa},
    {0x3a9, 0x301, 0x38f}, {0x3a9, 0x313, 0x1f68}, {0x3a9, 0x314, 0x1f69}, {0x3a9, 0x345, 0x1ffc},
    {0x3ac, 0x345, 0x1fb4}, {0x3ae, 0x345, 0x1fc4}, {0x3b1, 0x300, 0x1f70}, {0x3b1, 0x301, 0x3ac},
    {0x3b1, 0x304, 0x1fb1}, {0x3b1, 0x306, 0x1fb0}, {0x3b1, 0x313, 0x1f00}, {0x3b1, 0x314, 0x1f01},
    {0x3b1, 0x342, 0x1fb6}, {0x3b1, 0x345, 0x1fb3}, {0x3b5, 0x300, 0x1f72}, {0x3b5, 0x301, 0x3ad},
    {0x3b5, 0x313, 0x1f10}, {0x3b5, 0x314, 0x1f11}, {0x3b7, 0x300, 0x1f74}, {0x3b7, 0x301, 0x3ae},
    {0x3b7, 0x313, 0x1f20}, {0x3b7, 0x314, 0x1f21}, {0x3b7, 0x342, 0x1fc6}, {0x3b7, 0x345, 0x1fc3},
    {0x3b9, 0x300, 0x1f76}, {0x3b9, 0x301, 0x3af}, {0x3b9, 0x304, 0x1fd1}, {0x3b9, 0x306, 0x1fd0},
    {0x3b9, 0x308, 0x3ca}, {0x3b9, 0x313, 0x1f30}, {0x3b9, 0x314, 0x1f31}, {0x3b9, 0x342, 0x1fd6},
    {0x3bf, 0x300, 0x1f78}, {0x3bf, 0x301, 0x3cc}, {0x3bf, 0x313, 0x1f40}, {0x3bf, 0x314, 0x1f41},
    {0x3c1, 0x313, 0x1fe4}, {0x3c1, 0x314, 0x1fe5}, {0x3c5, 0x300, 0x1f7a}, {0x3c5, 0x301, 0x3cd},
    {0x3c5, 0x304, 0x1fe1}, {0x3c5, 0x306, 0x1fe0}, {0x3c5, 0x308, 0x3cb}, {0x3c5, 0x313, 0x1f50},
    {0x3c5, 0x314, 0x1f51}, {0x3c5, 0x342, 0x1fe6}, {0x3c9, 0x300, 0x1f7c}, {0x3c9, 0x301, 0x3ce},
    {0x3c9, 0x313, 0x1f60}, {0x3c9, 0x314, 0x1f61}, {0x3c9, 0x342, 0x1ff6}, {0x3c9, 0x345, 0x1ff3},
    {0x3ca, 0x300, 0x1fd2}, {0x3ca, 0x301, 0x390}, {0x3ca, 0x342, 0x1fd7}, {0x3cb, 0x300, 0x1fe2},
    {0x3cb, 0x301, 0x3b0}, {0x3cb, 0x342, 0x1fe7}, {0x3ce, 0x345, 0x1ff4}, {0x3d2, 0x301, 0x3d3},
    {0x3d2, 0x308, 0x3d4}, {0x406, 0x308, 0x407}, {0x410, 0x306, 0x4d0}, {0x410, 0x308, 0x4d2}, {0x413, 0x301, 0x403},
    {0x415, 0x300, 0x400}, {0x415, 0x306, 0x4d6}, {0x415, 0x308, 0x401}, {0x416, 0x306, 0x4c1}, {0x416, 0x308, 0x4dc},
    {0x417, 0x308, 0x4de}, {0x418, 0x300, 0x40d}, {0x418, 0x304, 0x4e2}, {0x418, 0x306, 0x419}, {0x418, 0x308, 0x4e4},
    {0x41a, 0x301, 0x40c}, {0x41e, 0x308, 0x4e6}, {0x423, 0x304, 0x4ee}, {0x423, 0x306, 0x40e}, {0x423, 0x308, 0x4f0},
    {0x423, 0x30b, 0x4f2}, {0x427, 0x308, 0x4f4}, {0x42b, 0x308, 0x4f8}, {0x42d, 0x308, 0x4ec}, {0x430, 0x306, 0x4d1},
    {0x430, 0x308, 0x4d3}, {0x433, 0x301, 0x453}, {0x435, 0x300, 0x450}, {0x435, 0x306, 0x4d7}, {0x435, 0x308, 0x451},
    {0x436, 0x306, 0x4c2}, {0x436, 0x308, 0x4dd}, {0x437, 0x308, 0x4df}, {0x438, 0x300, 0x45d}, {0x438, 0x304, 0x4e3},
    {0x438, 0x306, 0x439}, {0x438, 0x308, 0x4e5}, {0x43a, 0x301, 0x45c}, {0x43e, 0x308, 0x4e7}, {0x443, 0x304, 0x4ef},
    {0x443, 0x306, 0x45e}, {0x443, 0x308, 0x4f1}, {0x443, 0x30b, 0x4f3}, {0x447, 0x308, 0x4f5}, {0x44b, 0x308, 0x4f9},
    {0x44d, 0x308, 0x4ed}, {0x456, 0x308, 0x457}, {0x474, 0x30f, 0x476}, {0x475, 0x30f, 0x477}, {0x4d8, 0x308, 0x4da},
    {0x4d9, 0x308, 0x4db}, {0x4e8, 0x308, 0x4ea}, {0x4e9, 0x308, 0x4eb}, {0x627, 0x653, 0x622}, {0x627, 0x654, 0x623},
    {0x627, 0x655, 0x625}, {0x648, 0x654, 0x624}, {0x64a, 0x654, 0x626}, {0x6c1, 0x654, 0x6c2}, {0x6d2, 0x654, 0x6d3},
    {0x6d5, 0x654, 0x6c0}, {0x928, 0x93c, 0x929}, {0x930, 0x93c, 0x931}, {0x933, 0x93c, 0x934}, {0x9c7, 0x9be, 0x9cb},
    {0x9c7, 0x9d7, 0x9cc}, {0xb47, 0xb3e, 0xb4b}, {0xb47, 0xb56, 0xb48}, {0xb47, 0xb57, 0xb4c}, {0xb92, 0xbd7, 0xb94},
    {0xbc6, 0xbbe, 0xbca}, {0xbc6, 0xbd7, 0xbcc}, {0xbc7, 0xbbe, 0xbcb}, {0xc46, 0xc56, 0xc48}, {0xcbf, 0xcd5, 0xcc0},
    {0xcc6, 0xcc2, 0xcca}, {0xcc6, 0xcd5, 0xcc7}, {0xcc6, 0xcd6, 0xcc8}, {0xcca, 0xcd5, 0xccb}, {0xd46, 0xd3e, 0xd4a},
    {0xd46, 0xd57, 0xd4c}, {0xd47, 0xd3e, 0xd4b}, {0xdd9, 0xdca, 0xdda}, {0xdd9, 0xdcf, 0xddc}, {0xdd9, 0xddf, 0xdde},
    {0xddc, 0xdca, 0xddd}, {0x1025, 0x102e, 0x1026}, {0x1b05, 0x1b35, 0x1b06}, {0x1b07, 0x1b35, 0x1b08},
    {0x1b09, 0x1b35, 0x1b0a}, {0x1b0b, 0x1b35, 0x1b0c}, {0x1b0d, 0x1b35, 0x1b0e}, {0x1b11, 0x1b35, 0x1b12},
    {0x1b3a, 0x1b35, 0x1b3b}, {0x1b3c, 0x1b35, 0x1b3d}, {0x1b3e, 0x1b35, 0x1b40}, {0x1b3f, 0x1b35, 0x1b41},
    {0x1b42, 0x1b35, 0x1b43}, {0x1e36, 0x304, 0x1e38}, {0x1e37, 0x304, 0x1e39}, {0x1e5a, 0x304, 0x1e5c},
    {0x1e5b, 0x304, 0x1e5d}, {0x1e62, 0x307, 0x1e68}, {0x1e63, 0x307, 0x1e69}, {0x1ea0, 0x302, 0x1eac},
    {0x1ea0, 0x306, 0x1eb6}, {0x1ea1, 0x302, 0x1ead}, {0x1ea1, 0x306, 0x1eb7}, {0x1eb8, 0x302, 0x1ec6},
    {0x1eb9, 0x302, 0x1ec7}, {0x1ecc, 0x302, 0x1ed8}, {0x1ecd, 0x302, 0x1ed9}, {0x1f00, 0x300, 0x1f02},
    {0x1f00, 0x301, 0x1f04}, {0x1f00, 0x342, 0x1f06}, {0x1f00, 0x345, 0x1f80}, {0x1f01, 0x300, 0x1f03},
    {0x1f01, 0x301, 0x1f05}, {0x1f01, 0x342, 0x1f07}, {0x1f01, 0x345, 0x1f81}, {0x1f02, 0x345, 0x1f82},
    {0x1f03, 0x345, 0x1f83}, {0x1f04, 0x345, 0x1f84}, {0x1f05, 0x345, 0x1f85}, {0x1f06, 0x345, 0x1f86},
    {0x1f07, 0x345, 0x1f87}, {0x1f08, 0x300, 0x1f0a}, {0x1f08, 0x301, 0x1f0c}, {0x1f08, 0x342, 0x1f0e},
    {0x1f08, 0x345, 0x1f88}, {0x1f09, 0x300, 0x1f0b}, {0x1f09, 0x301, 0x1f0d}, {0x1f09, 0x342, 0x1f0f},
    {0x1f09, 0x345, 0x1f89}, {0x1f0a, 0x345, 0x1f8a}, {0x1f0b, 0x345, 0x1f8b}, {0x1f0c, 0x345, 0x1f8c},
    {0x1f0d, 0x345, 0x1f8d}, {0x1f0e, 0x345, 0x1f8e}, {0x1f0f, 0x345, 0x1f8f}, {0x1f10, 0x300, 0x1f12},
    {0x1f10, 0x301, 0x1f14}, {0x1f11, 0x300, 0x1f13}, {0x1f11, 0x301, 0x1f15}, {0x1f18, 0x300, 0x1f1a},
    {0x1f18, 0x301, 0x1f1c}, {0x1f19, 0x300, 0x1f1b}, {0x1f19, 0x301, 0x1f1d}, {0x1f20, 0x300, 0x1f22},
    {0x1f20, 0x301, 0x1f24}, {0x1f20, 0x342, 0x1f26}, {0x1f20, 0x345, 0x1f90}, {0x1f21, 0x300, 0x1f23},
    {0x1f21, 0x301, 0x1f25}, {0x1f21, 0x342, 0x1f27}, {0x1f21, 0x345, 0x1f91}, {0x1f22, 0x345, 0x1f92},
    {0x1f23, 0x345, 0x1f93}, {0x1f24, 0x345, 0x1f94}, {0x1f25, 0x345, 0x1f95}, {0x1f26, 0x345, 0x1f96},
    {0x1f27, 0x345, 0x1f97}, {0x1f28, 0x300, 0x1f2a}, {0x1f28, 0x301, 0x1f2c}, {0x1f28, 0x342, 0x1f2e},
    {0x1f28, 0x345, 0x1f98}, {0x1f29, 0x300, 0x1f2b}, {0x1f29, 0x301, 0x1f2d}, {0x1f29, 0x342, 0x1f2f},
    {0x1f29, 0x345, 0x1f99}, {0x1f2a, 0x345, 0x1f9a}, {0x1f2b, 0x345, 0x1f9b}, {0x1f2c, 0x345, 0x1f9c},
    {0x1f2d, 0x345, 0x1f9d}, {0x1f2e, 0x345, 0x1f9e}, {0x1f2f, 0x345, 0x1f9f}, {0x1f30, 0x300, 0x1f32},
    {0x1f30, 0x301, 0x1f34}, {0x1f30, 0x342, 0x1f36}, {0x1f31, 0x300, 0x1f33}, {0x1f31, 0x301, 0x1f35},
    {0x1f31, 0x342, 0x1f37}, {0x1f38, 0x300, 0x1f3a}, {0x1f38, 0x301, 0x1f3c}, {0x1f38, 0x342, 0x1f3e},
    {0x1f39, 0x300, 0x1f3b}, {0x1f39, 0x301, 0x1f3d}, {0x1f39, 0x342, 0x1f3f}, {0x1f40, 0x300, 0x1f42},
    {0x1f40, 0x301, 0x1f44}, {0x1f41, 0x300, 0x1f43}, {0x1f41, 0x301, 0x1f45}, {0x1f48, 0x300, 0x1f4a},
    {0x1f48, 0x301, 0x1f4c}, {0x1f49, 0x300, 0x1f4b}, {0x1f49, 0x301, 0x1f4d}, {0x1f50, 0x300, 0x1f52},
    {0x1f50, 0x301, 0x1f54}, {0x1f50, 0x342, 0x1f56}, {0x1f51, 0x300, 0x1f53}, {0x1f51, 0x301, 0x1f55},
    {0x1f51, 0x342, 0x1f57}, {0x1f59, 0x300, 0x1f5b}, {0x1f59, 0x301, 0x1f5d}, {0x1f59, 0x342, 0x1f5f},
    {0x1f60, 0x300, 0x1f62}, {0x1f60, 0x301, 0x1f64}, {0x1f60, 0x342, 0x1f66}, {0x1f60, 0x345, 0x1fa0},
    {0x1f61, 0x300, 0x1f63}, {0x1f61, 0x301, 0x1f65}, {0x1f61, 0x342, 0x1f67}, {0x1f61, 0x345, 0x1fa1},
    {0x1f62, 0x345, 0x1fa2}, {0x1f63, 0x345, 0x1fa3}, {0x1f64, 0x345, 0x1fa4}, {0x1f65, 0x345, 0x1fa5},
    {0x1f66, 0x345, 0x1fa6}, {0x1f67, 0x345, 0x1fa7}, {0x1f68, 0x300, 0x1f6a}, {0x1f68, 0x301, 0x1f6c},
    {0x1f68, 0x342, 0x1f6e}, {0x1f68, 0x345, 0x1fa8}, {0x1f69, 0x300, 0x1f6b}, {0x1f69, 0x301, 0x1f6d},
    {0x1f69, 0x342, 0x1f6f}, {0x1f69, 0x345, 0x1fa9}, {0x1f6a, 0x345, 0x1faa}, {0x1f6b, 0x345, 0x1fab},
    {0x1f6c, 0x345, 0x1fac}, {0x1f6d, 0x345, 0x1fad}, {0x1f6e, 0x345, 0x1fae}, {0x1f6f, 0x345, 0x1faf},
    {0x1f70, 0x345, 0x1fb2}, {0x1f74, 0x345, 0x1fc2}, {0x1f7c, 0x345, 0x1ff2}, {0x1fb6, 0x345, 0x1fb7},
    {0x1fbf, 0x300, 0x1fcd}, {0x1fbf, 0x301, 0x1fce}, {0x1fbf, 0x342, 0x1fcf}, {0x1fc6, 0x345, 0x1fc7},
    {0x1ff6, 0x345, 0x1ff7}, {0x1ffe, 0x300, 0x1fdd}, {0x1ffe, 0x301, 0x1fde}, {0x1ffe, 0x342, 0x1fdf},
    {0x2190, 0x338, 0x219a}, {0x2192, 0x338, 0x219b}, {0x2194, 0x338, 0x21ae}, {0x21d0, 0x338, 0x21cd},
    {0x21d2, 0x338, 0x21cf}, {0x21d4, 0x338, 0x21ce}, {0x2203, 0x338, 0x2204}, {0x2208, 0x338, 0x2209},
    {0x220b, 0x338, 0x220c}, {0x2223, 0x338, 0x2224}, {0x2225, 0x338, 0x2226}, {0x223c, 0x338, 0x2241},
    {0x2243, 0x338, 0x2244}, {0x2245, 0x338, 0x2247}, {0x2248, 0x338, 0x2249}, {0x224d, 0x338, 0x226d},
    {0x2261, 0x338, 0x2262}, {0x2264, 0x338, 0x2270}, {0x2265, 0x338, 0x2271}, {0x2272, 0x338, 0x2274},
    {0x2273, 0x338, 0x2275}, {0x2276, 0x338, 0x2278}, {0x2277, 0x338, 0x2279}, {0x227a, 0x338, 0x2280},
    {0x227b, 0x338, 0x2281}, {0x227c, 0x338, 0x22e0}, {0x227d, 0x338, 0x22e1}, {0x2282, 0x338, 0x2284},
    {0x2283, 0x338, 0x2285}, {0x2286, 0x338, 0x2288}, {0x2287, 0x338, 0x2289}, {0x2291, 0x338, 0x22e2},
    {0x2292, 0x338, 0x22e3}, {0x22a2, 0x338, 0x22ac}, {0x22a8, 0x338, 0x22ad}, {0x22a9, 0x338, 0x22ae},
    {0x22ab, 0x338, 0x22af}, {0x22b2, 0x338, 0x22ea}, {0x22b3, 0x338, 0x22eb}, {0x22b4, 0x338, 0x22ec},
    {0x22b5, 0x338, 0x22ed}, {0x3046, 0x3099, 0x3094}, {0x304b, 0x3099, 0x304c}, {0x304d, 0x3099, 0x304e},
    {0x304f, 0x3099, 0x3050}, {0x3051, 0x3099, 0x3052}, {0x3053, 0x3099, 0x3054}, {0x3055, 0x3099, 0x3056},
    {0x3057, 0x3099, 0x3058}, {0x3059, 0x3099, 0x305a}, {0x305b, 0x3099, 0x305c}, {0x305d, 0x3099, 0x305e},
    {0x305f, 0x3099, 0x3060}, {0x3061, 0x3099, 0x3062}, {0x3064, 0x3099, 0x3065}, {0x3066, 0x3099, 0x3067},
    {0x3068, 0x3099, 0x3069}, {0x306f, 0x3099, 0x3070}, {0x306f, 0x309a, 0x3071}, {0x3072, 0x3099, 0x3073},
    {0x3072, 0x309a, 0x3074}, {0x3075, 0x3099, 0x3076}, {0x3075, 0x309a, 0x3077}, {0x3078, 0x3099, 0x3079},
    {0x3078, 0x309a, 0x307a}, {0x307b, 0x3099, 0x307c}, {0x307b, 0x309a, 0x307d}, {0x309d, 0x3099, 0x309e},
    {0x30a6, 0x3099, 0x30f4}, {0x30ab, 0x3099, 0x30ac}, {0x30ad, 0x3099, 0x30ae}, {0x30af, 0x3099, 0x30b0},
    {0x30b1, 0x3099, 0x30b2}, {0x30b3, 0x3099, 0x30b4}, {0x30b5, 0x3099, 0x30b6}, {0x30b7, 0x3099, 0x30b8},
    {0x30b9, 0x3099, 0x30ba}, {0x30bb, 0x3099, 0x30bc}, {0x30bd, 0x3099, 0x30be}, {0x30bf, 0x3099, 0x30c0},
    {0x30c1, 0x3099, 0x30c2}, {0x30c4, 0x3099, 0x30c5}, {0x30c6, 0x3099, 0x30c7}, {0x30c8, 0x3099, 0x30c9},
    {0x30cf, 0x3099, 0x30d0}, {0x30cf, 0x309a, 0x30d1}, {0x30d2, 0x3099, 0x30d3}, {0x30d2, 0x309a, 0x30d4},
    {0x30d5, 0x3099, 0x30d6}, {0x30d5, 0x309a, 0x30d7}, {0x30d8, 0x3099, 0x30d9}, {0x30d8, 0x309a, 0x30da},
    {0x30db, 0x3099, 0x30dc}, {0x30db, 0x309a, 0x30dd}, {0x30ef, 0x3099, 0x30f7}, {0x30f0, 0x3099, 0x30f8},
    {0x30f1, 0x3099, 0x30f9}, {0x30f2, 0x3099, 0x30fa}, {0x30fd, 0x3099, 0x30fe}, {0x11099, 0x110ba, 0x1109a},
    {0x1109b, 0x110ba, 0x1109c}, {0x110a5, 0x110ba, 0x110ab}, {0x11131, 0x11127, 0x1112e},
    {0x11132, 0x11127, 0x1112f}, {0x11347, 0x1133e, 0x1134b}, {0x11347, 0x11357, 0x1134c},
    {0x114b9, 0x114b0, 0x114bc}, {0x114b9, 0x114ba, 0x114bb}, {0x114b9, 0x114bd, 0x114be},
    {0x115b8, 0x115af, 0x115ba}, {0x115b9, 0x115af, 0x115bb}, {0x11935, 0x11930, 0x11938},
};
static const uint32_t zt__uni_ccc[][3] = { /* 382 rows */
    {0x300, 0x314, 0xe6}, {0x315, 0x315, 0xe8}, {0x316, 0x319, 0xdc}, {0x31a, 0x31a, 0xe8}, {0x31b, 0x31b, 0xd8},
    {0x31c, 0x320, 0xdc}, {0x321, 0x322, 0xca}, {0x323, 0x326, 0xdc}, {0x327, 0x328, 0xca}, {0x329, 0x333, 0xdc},
    {0x334, 0x338, 0x1}, {0x339, 0x33c, 0xdc}, {0x33d, 0x344, 0xe6}, {0x345, 0x345, 0xf0}, {0x346, 0x346, 0xe6},
    {0x347, 0x349, 0xdc}, {0x34a, 0x34c, 0xe6}, {0x34d, 0x34e, 0xdc}, {0x350, 0x352, 0xe6}, {0x353, 0x356, 0xdc},
    {0x357, 0x357, 0xe6}, {0x358, 0x358, 0xe8}, {0x359, 0x35a, 0xdc}, {0x35b, 0x35b, 0xe6}, {0x35c, 0x35c, 0xe9},
    {0x35d, 0x35e, 0xea}, {0x35f, 0x35f, 0xe9}, {0x360, 0x361, 0xea}, {0x362, 0x362, 0xe9}, {0x363, 0x36f, 0xe6},
    {0x483, 0x487, 0xe6}, {0x591, 0x591, 0xdc}, {0x592, 0x595, 0xe6}, {0x596, 0x596, 0xdc}, {0x597, 0x599, 0xe6},
    {0x59a, 0x59a, 0xde}, {0x59b, 0x59b, 0xdc}, {0x59c, 0x5a1, 0xe6}, {0x5a2, 0x5a7, 0xdc}, {0x5a8, 0x5a9, 0xe6},
    {0x5aa, 0x5aa, 0xdc}, {0x5ab, 0x5ac, 0xe6}, {0x5ad, 0x5ad, 0xde}, {0x5ae, 0x5ae, 0xe4}, {0x5af, 0x5af, 0xe6},
    {0x5b0, 0x5b0, 0xa}, {0x5b1, 0x5b1, 0xb}, {0x5b2, 0x5b2, 0xc}, {0x5b3, 0x5b3, 0xd}, {0x5b4, 0x5b4, 0xe},
    {0x5b5, 0x5b5, 0xf}, {0x5b6, 0x5b6, 0x10}, {0x5b7, 0x5b7, 0x11}, {0x5b8, 0x5b8, 0x12}, {0x5b9, 0x5ba, 0x13},
    {0x5bb, 0x5bb, 0x14}, {0x5bc, 0x5bc, 0x15}, {0x5bd, 0x5bd, 0x16}, {0x5bf, 0x5bf, 0x17}, {0x5c1, 0x5c1, 0x18},
    {0x5c2, 0x5c2, 0x19}, {0x5c4, 0x5c4, 0xe6}, {0x5c5, 0x5c5, 0xdc}, {0x5c7, 0x5c7, 0x12}, {0x610, 0x617, 0xe6},
    {0x618, 0x618, 0x1e}, {0x619, 0x619, 0x1f}, {0x61a, 0x61a, 0x20}, {0x64b, 0x64b, 0x1b}, {0x64c, 0x64c, 0x1c},
    {0x64d, 0x64d, 0x1d}, {0x64e, 0x64e, 0x1e}, {0x64f, 0x64f, 0x1f}, {0x650, 0x650, 0x20}, {0x651, 0x651, 0x21},
    {0x652, 0x652, 0x22}, {0x653, 0x654, 0xe6}, {0x655, 0x656, 0xdc}, {0x657, 0x65b, 0xe6}, {0x65c, 0x65c, 0xdc},
    {0x65d, 0x65e, 0xe6}, {0x65f, 0x65f, 0xdc}, {0x670, 0x670, 0x23}, {0x6d6, 0x6dc, 0xe6}, {0x6df, 0x6e2, 0xe6},
    {0x6e3, 0x6e3, 0xdc}, {0x6e4, 0x6e4, 0xe6}, {0x6e7, 0x6e8, 0xe6}, {0x6ea, 0x6ea, 0xdc}, {0x6eb, 0x6ec, 0xe6},
    {0x6ed, 0x6ed, 0xdc}, {0x711, 0x711, 0x24}, {0x730, 0x730, 0xe6}, {0x731, 0x731, 0xdc}, {0x732, 0x733, 0xe6},
    {0x734, 0x734, 0xdc}, {0x735, 0x736, 0xe6}, {0x737, 0x739, 0xdc}, {0x73a, 0x73a, 0xe6}, {0x73b, 0x73c, 0xdc},
    {0x73d, 0x73d, 0xe6}, {0x73e, 0x73e, 0xdc}, {0x73f, 0x741, 0xe6}, {0x742, 0x742, 0xdc}, {0x743, 0x743, 0xe6},
    {0x744, 0x744, 0xdc}, {0x745, 0x745, 0xe6}, {0x746, 0x746, 0xdc}, {0x747, 0x747, 0xe6}, {0x748, 0x748, 0xdc},
    {0x749, 0x74a, 0xe6}, {0x7eb, 0x7f1, 0xe6}, {0x7f2, 0x7f2, 0xdc}, {0x7f3, 0x7f3, 0xe6}, {0x7fd, 0x7fd, 0xdc},
    {0x816, 0x819, 0xe6}, {0x81b, 0x823, 0xe6}, {0x825, 0x827, 0xe6}, {0x829, 0x82d, 0xe6}, {0x859, 0x85b, 0xdc},
    {0x898, 0x898, 0xe6}, {0x899, 0x89b, 0xdc}, {0x89c, 0x89f, 0xe6}, {0x8ca, 0x8ce, 0xe6}, {0x8cf, 0x8d3, 0xdc},
    {0x8d4, 0x8e1, 0xe6}, {0x8e3, 0x8e3, 0xdc}, {0x8e4, 0x8e5, 0xe6}, {0x8e6, 0x8e6, 0xdc}, {0x8e7, 0x8e8, 0xe6},
    {0x8e9, 0x8e9, 0xdc}, {0x8ea, 0x8ec, 0xe6}, {0x8ed, 0x8ef, 0xdc}, {0x8f0, 0x8f0, 0x1b}, {0x8f1, 0x8f1, 0x1c},
    {0x8f2, 0x8f2, 0x1d}, {0x8f3, 0x8f5, 0xe6}, {0x8f6, 0x8f6, 0xdc}, {0x8f7, 0x8f8, 0xe6}, {0x8f9, 0x8fa, 0xdc},
    {0x8fb, 0x8ff, 0xe6}, {0x93c, 0x93c, 0x7}, {0x94d, 0x94d, 0x9}, {0x951, 0x951, 0xe6}, {0x952, 0x952, 0xdc},
    {0x953, 0x954, 0xe6}, {0x9bc, 0x9bc, 0x7}, {0x9cd, 0x9cd, 0x9}, {0x9fe, 0x9fe, 0xe6}, {0xa3c, 0xa3c, 0x7},
    {0xa4d, 0xa4d, 0x9}, {0xabc, 0xabc, 0x7}, {0xacd, 0xacd, 0x9}, {0xb3c, 0xb3c, 0x7}, {0xb4d, 0xb4d, 0x9},
    {0xbcd, 0xbcd, 0x9}, {0xc3c, 0xc3c, 0x7}, {0xc4d, 0xc4d, 0x9}, {0xc55, 0xc55, 0x54}, {0xc56, 0xc56, 0x5b},
    {0xcbc, 0xcbc, 0x7}, {0xccd, 0xccd, 0x9}, {0xd3b, 0xd3c, 0x9}, {0xd4d, 0xd4d, 0x9}, {0xdca, 0xdca, 0x9},
    {0xe38, 0xe39, 0x67}, {0xe3a, 0xe3a, 0x9}, {0xe48, 0xe4b, 0x6b}, {0xeb8, 0xeb9, 0x76}, {0xeba, 0xeba, 0x9},
    {0xec8, 0xecb, 0x7a}, {0xf18, 0xf19, 0xdc}, {0xf35, 0xf35, 0xdc}, {0xf37, 0xf37, 0xdc}, {0xf39, 0xf39, 0xd8},
    {0xf71, 0xf71, 0x81}, {0xf72, 0xf72, 0x82}, {0xf74, 0xf74, 0x84}, {0xf7a, 0xf7d, 0x82}, {0xf80, 0xf80, 0x82},
    {0xf82, 0xf83, 0xe6}, {0xf84, 0xf84, 0x9}, {0xf86, 0xf87, 0xe6}, {0xfc6, 0xfc6, 0xdc}, {0x1037, 0x1037, 0x7},
    {0x1039, 0x103a, 0x9}, {0x108d, 0x108d, 0xdc}, {0x135d, 0x135f, 0xe6}, {0x1714, 0x1715, 0x9},
    {0x1734, 0x1734, 0x9}, {0x17d2, 0x17d2, 0x9}, {0x17dd, 0x17dd, 0xe6}, {0x18a9, 0x18a9, 0xe4},
    {0x1939, 0x1939, 0xde}, {0x193a, 0x193a, 0xe6}, {0x193b, 0x193b, 0xdc}, {0x1a17, 0x1a17, 0xe6},
    {0x1a18, 0x1a18, 0xdc}, {0x1a60, 0x1a60, 0x9}, {0x1a75, 0x1a7c, 0xe6}, {0x1a7f, 0x1a7f, 0xdc},
    {0x1ab0, 0x1ab4, 0xe6}, {0x1ab5, 0x1aba, 0xdc}, {0x1abb, 0x1abc, 0xe6}, {0x1abd, 0x1abd, 0xdc},
    {0x1abf, 0x1ac0, 0xdc}, {0x1ac1, 0x1ac2, 0xe6}, {0x1ac3, 0x1ac4, 0xdc}, {0x1ac5, 0x1ac9, 0xe6},
    {0x1aca, 0x1aca, 0xdc}, {0x1acb, 0x1ace, 0xe6}, {0x1b34, 0x1b34, 0x7}, {0x1b44, 0x1b44, 0x9},
    {0x1b6b, 0x1b6b, 0xe6}, {0x1b6c, 0x1b6c, 0xdc}, {0x1b6d, 0x1b73, 0xe6}, {0x1baa, 0x1bab, 0x9},
    {0x1be6, 0x1be6, 0x7}, {0x1bf2, 0x1bf3, 0x9}, {0x1c37, 0x1c37, 0x7}, {0x1cd0, 0x1cd2, 0xe6},
    {0x1cd4, 0x1cd4, 0x1}, {0x1cd5, 0x1cd9, 0xdc}, {0x1cda, 0x1cdb, 0xe6}, {0x1cdc, 0x1cdf, 0xdc},
    {0x1ce0, 0x1ce0, 0xe6}, {0x1ce2, 0x1ce8, 0x1}, {0x1ced, 0x1ced, 0xdc}, {0x1cf4, 0x1cf4, 0xe6},
    {0x1cf8, 0x1cf9, 0xe6}, {0x1dc0, 0x1dc1, 0xe6}, {0x1dc2, 0x1dc2, 0xdc}, {0x1dc3, 0x1dc9, 0xe6},
    {0x1dca, 0x1dca, 0xdc}, {0x1dcb, 0x1dcc, 0xe6}, {0x1dcd, 0x1dcd, 0xea}, {0x1dce, 0x1dce, 0xd6},
    {0x1dcf, 0x1dcf, 0xdc}, {0x1dd0, 0x1dd0, 0xca}, {0x1dd1, 0x1df5, 0xe6}, {0x1df6, 0x1df6, 0xe8},
    {0x1df7, 0x1df8, 0xe4}, {0x1df9, 0x1df9, 0xdc}, {0x1dfa, 0x1dfa, 0xda}, {0x1dfb, 0x1dfb, 0xe6},
    {0x1dfc, 0x1dfc, 0xe9}, {0x1dfd, 0x1dfd, 0xdc}, {0x1dfe, 0x1dfe, 0xe6}, {0x1dff, 0x1dff, 0xdc},
    {0x20d0, 0x20d1, 0xe6}, {0x20d2, 0x20d3, 0x1}, {0x20d4, 0x20d7, 0xe6}, {0x20d8, 0x20da, 0x1},
    {0x20db, 0x20dc, 0xe6}, {0x20e1, 0x20e1, 0xe6}, {0x20e5, 0x20e6, 0x1}, {0x20e7, 0x20e7, 0xe6},
    {0x20e8, 0x20e8, 0xdc}, {0x20e9, 0x20e9, 0xe6}, {0x20ea, 0x20eb, 0x1}, {0x20ec, 0x20ef, 0xdc},
    {0x20f0, 0x20f0, 0xe6}, {0x2cef, 0x2cf1, 0xe6}, {0x2d7f, 0x2d7f, 0x9}, {0x2de0, 0x2dff, 0xe6},
    {0x302a, 0x302a, 0xda}, {0x302b, 0x302b, 0xe4}, {0x302c, 0x302c, 0xe8}, {0x302d, 0x302d, 0xde},
    {0x302e, 0x302f, 0xe0}, {0x3099, 0x309a, 0x8}, {0xa66f, 0xa66f, 0xe6}, {0xa674, 0xa67d, 0xe6},
    {0xa69e, 0xa69f, 0xe6}, {0xa6f0, 0xa6f1, 0xe6}, {0xa806, 0xa806, 0x9}, {0xa82c, 0xa82c, 0x9},
    {0xa8c4, 0xa8c4, 0x9}, {0xa8e0, 0xa8f1, 0xe6}, {0xa92b, 0xa92d, 0xdc}, {0xa953, 0xa953, 0x9},
    {0xa9b3, 0xa9b3, 0x7}, {0xa9c0, 0xa9c0, 0x9}, {0xaab0, 0xaab0, 0xe6}, {0xaab2, 0xaab3, 0xe6},
    {0xaab4, 0xaab4, 0xdc}, {0xaab7, 0xaab8, 0xe6}, {0xaabe, 0xaabf, 0xe6}, {0xaac1, 0xaac1, 0xe6},
    {0xaaf6, 0xaaf6, 0x9}, {0xabed, 0xabed, 0x9}, {0xfb1e, 0xfb1e, 0x1a}, {0xfe20, 0xfe26, 0xe6},
    {0xfe27, 0xfe2d, 0xdc}, {0xfe2e, 0xfe2f, 0xe6}, {0x101fd, 0x101fd, 0xdc}, {0x102e0, 0x102e0, 0xdc},
    {0x10376, 0x1037a, 0xe6}, {0x10a0d, 0x10a0d, 0xdc}, {0x10a0f, 0x10a0f, 0xe6}, {0x10a38, 0x10a38, 0xe6},
    {0x10a39, 0x10a39, 0x1}, {0x10a3a, 0x10a3a, 0xdc}, {0x10a3f, 0x10a3f, 0x9}, {0x10ae5, 0x10ae5, 0xe6},
    {0x10ae6, 0x10ae6, 0xdc}, {0x10d24, 0x10d27, 0xe6}, {0x10eab, 0x10eac, 0xe6}, {0x10f46, 0x10f47, 0xdc},
    {0x10f48, 0x10f4a, 0xe6}, {0x10f4b, 0x10f4b, 0xdc}, {0x10f4c, 0x10f4c, 0xe6}, {0x10f4d, 0x10f50, 0xdc},
    {0x10f82, 0x10f82, 0xe6}, {0x10f83, 0x10f83, 0xdc}, {0x10f84, 0x10f84, 0xe6}, {0x10f85, 0x10f85, 0xdc},
    {0x11046, 0x11046, 0x9}, {0x11070, 0x11070, 0x9}, {0x1107f, 0x1107f, 0x9}, {0x110b9, 0x110b9, 0x9},
    {0x110ba, 0x110ba, 0x7}, {0x11100, 0x11102, 0xe6}, {0x11133, 0x11134, 0x9}, {0x11173, 0x11173, 0x7},
    {0x111c0, 0x111c0, 0x9}, {0x111ca, 0x111ca, 0x7}, {0x11235, 0x11235, 0x9}, {0x11236, 0x11236, 0x7},
    {0x112e9, 0x112e9, 0x7}, {0x112ea, 0x112ea, 0x9}, {0x1133b, 0x1133c, 0x7}, {0x1134d, 0x1134d, 0x9},
    {0x11366, 0x1136c, 0xe6}, {0x11370, 0x11374, 0xe6}, {0x11442, 0x11442, 0x9}, {0x11446, 0x11446, 0x7},
    {0x1145e, 0x1145e, 0xe6}, {0x114c2, 0x114c2, 0x9}, {0x114c3, 0x114c3, 0x7}, {0x115bf, 0x115bf, 0x9},
    {0x115c0, 0x115c0, 0x7}, {0x1163f, 0x1163f, 0x9}, {0x116b6, 0x116b6, 0x9}, {0x116b7, 0x116b7, 0x7},
    {0x1172b, 0x1172b, 0x9}, {0x11839, 0x11839, 0x9}, {0x1183a, 0x1183a, 0x7}, {0x1193d, 0x1193e, 0x9},
    {0x11943, 0x11943, 0x7}, {0x119e0, 0x119e0, 0x9}, {0x11a34, 0x11a34, 0x9}, {0x11a47, 0x11a47, 0x9},
    {0x11a99, 0x11a99, 0x9}, {0x11c3f, 0x11c3f, 0x9}, {0x11d42, 0x11d42, 0x7}, {0x11d44, 0x11d45, 0x9},
    {0x11d97, 0x11d97, 0x9}, {0x16af0, 0x16af4, 0x1}, {0x16b30, 0x16b36, 0xe6}, {0x16ff0, 0x16ff1, 0x6},
    {0x1bc9e, 0x1bc9e, 0x1}, {0x1d165, 0x1d166, 0xd8}, {0x1d167, 0x1d169, 0x1}, {0x1d16d, 0x1d16d, 0xe2},
    {0x1d16e, 0x1d172, 0xd8}, {0x1d17b, 0x1d182, 0xdc}, {0x1d185, 0x1d189, 0xe6}, {0x1d18a, 0x1d18b, 0xdc},
    {0x1d1aa, 0x1d1ad, 0xe6}, {0x1d242, 0x1d244, 0xe6}, {0x1e000, 0x1e006, 0xe6}, {0x1e008, 0x1e018, 0xe6},
    {0x1e01b, 0x1e021, 0xe6}, {0x1e023, 0x1e024, 0xe6}, {0x1e026, 0x1e02a, 0xe6}, {0x1e130, 0x1e136, 0xe6},
    {0x1e2ae, 0x1e2ae, 0xe6}, {0x1e2ec, 0x1e2ef, 0xe6}, {0x1e8d0, 0x1e8d6, 0xdc}, {0x1e944, 0x1e949, 0xe6},
    {0x1e94a, 0x1e94a, 0x7},
};

static int zt__uni_in(const uint32_t (*t)[2], int n, uint32_t c) {
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (c < t[mid][0]) hi = mid - 1;
        else if (c > t[mid][1]) lo = mid + 1;
        else return 1;
    }
    return 0;
}
#define ZT__N(t) (int)(sizeof t / sizeof t[0])
static int zt__is_letter(uint32_t c) {
    return c < 128 ? (c | 32) - 'a' < 26 : zt__uni_in(zt__uni_letter, ZT__N(zt__uni_letter), c);
}
static int zt__is_number(uint32_t c) { return c < 128 ? c - '0' < 10 : zt__uni_in(zt__uni_number, ZT__N(zt__uni_number), c); }
static int zt__is_space(uint32_t c) { return zt__uni_in(zt__uni_space, ZT__N(zt__uni_space), c); }

/* ---- NFC (canonical decomposition, then canonical composition), as the normalizer of tokenizer.json ---- */

static int zt__ccc(uint32_t c) {
    int lo = 0, hi = ZT__N(zt__uni_ccc) - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (c < zt__uni_ccc[mid][0]) hi = mid - 1;
        else if (c > zt__uni_ccc[mid][1]) lo = mid + 1;
        else return (int)zt__uni_ccc[mid][2];
    }
    return 0;
}

enum { ZT__SBASE = 0xac00, ZT__LBASE = 0x1100, ZT__VBASE = 0x1161, ZT__TBASE = 0x11a7, ZT__LCOUNT = 19, ZT__VCOUNT = 21,
       ZT__TCOUNT = 28, ZT__NCOUNT = 588, ZT__SCOUNT = 11172 };

/* the full canonical decomposition of c appended to out (room for 4 more: Unicode's longest is 4) */
static int zt__decompose(uint32_t c, uint32_t *out) {
    if (c >= ZT__SBASE && c < ZT__SBASE + ZT__SCOUNT) { /* Hangul syllables, by arithmetic */
        uint32_t s = c - ZT__SBASE, t = s % ZT__TCOUNT;
        out[0] = ZT__LBASE + s / ZT__NCOUNT, out[1] = ZT__VBASE + (s % ZT__NCOUNT) / ZT__TCOUNT;
        if (t) out[2] = ZT__TBASE + t;
        return t ? 3 : 2;
    }
    int lo = 0, hi = ZT__N(zt__uni_decomp) - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (c < zt__uni_decomp[mid][0]) hi = mid - 1;
        else if (c > zt__uni_decomp[mid][0]) lo = mid + 1;
        else {
            int n = zt__decompose(zt__uni_decomp[mid][1], out);
            return zt__uni_decomp[mid][2] ? n + zt__decompose(zt__uni_decomp[mid][2], out + n) : n;
        }
    }
    out[0] = c;
    return 1;
}

/* the primary composite of a and b, or 0 */
static uint32_t zt__compose(uint32_t a, uint32_t b) {
    if (a >= ZT__LBASE && a < ZT__LBASE + ZT__LCOUNT && b >= ZT__VBASE && b < ZT__VBASE + ZT__VCOUNT)
        return ZT__SBASE + ((a - ZT__LBASE) * ZT__VCOUNT + (b - ZT__VBASE)) * ZT__TCOUNT;
    if (a >= ZT__SBASE && a < ZT__SBASE + ZT__SCOUNT && (a - ZT__SBASE) % ZT__TCOUNT == 0 && b > ZT__TBASE &&
        b < ZT__TBASE + ZT__TCOUNT)
        return a + (b - ZT__TBASE);
    int lo = 0, hi = ZT__N(zt__uni_compose) - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        const uint32_t *e = zt__uni_compose[mid];
        if (a < e[0] || (a == e[0] && b < e[1])) hi = mid - 1;
        else if (a > e[0] || b > e[1]) lo = mid + 1;
        else return e[2];
    }
    return 0;
}

static uint32_t zt__utf8(const char *s, size_t n, size_t i, int *len);
static int zt__put_utf8(char *o, uint32_t c);

/* NFC of n bytes of UTF-8 into out (room for 3n + 16 bytes: a composed text is never longer than its
   decomposition, which is at most 3 times the bytes); cps: room for 4n + 4 code points. Its length. */
static size_t zt__nfc(const char *s, size_t n, char *out, uint32_t *cps) {
    size_t m = 0;
    for (size_t i = 0; i < n;) { /* decompose */
        int len;
        uint32_t c = zt__utf8(s, n, i, &len);
        m += (size_t)zt__decompose(c, cps + m);
        i += (size_t)len;
    }
    for (size_t i = 1; i < m; i++) { /* canonical order: marks sorted by class, stably, between starters */
        for (size_t k = i; k > 0; k--) {
            int a = zt__ccc(cps[k - 1]), b = zt__ccc(cps[k]);
            if (b == 0 || a <= b) break;
            uint32_t x = cps[k - 1];
            cps[k - 1] = cps[k], cps[k] = x;
        }
    }
    size_t w = 0, starter = (size_t)-1;
    for (size_t i = 0; i < m; i++) { /* compose, each mark with the starter before it unless blocked */
        uint32_t c = cps[i];
        int cc = zt__ccc(c);
        if (starter != (size_t)-1) {
            int last = w - 1 > starter ? zt__ccc(cps[w - 1]) : -1; /* -1: c follows the starter */
            uint32_t comp = (last < 0 || (last != 0 && last < cc)) ? zt__compose(cps[starter], c) : 0;
            if (comp) {
                cps[starter] = comp;
                continue;
            }
        }
        if (cc == 0) starter = w;
        cps[w++] = c;
    }
    size_t o = 0;
    for (size_t i = 0; i < w; i++) o += (size_t)zt__put_utf8(out + o, cps[i]);
    return o;
}

/* the code point at s[i] (n bytes) and its length; a malformed byte stands for itself */
static uint32_t zt__utf8(const char *s, size_t n, size_t i, int *len) {
    const uint8_t *u = (const uint8_t *)s + i;
    size_t left = n - i;
    if (u[0] < 0x80 || left < 2) return *len = 1, u[0];
    if ((u[0] & 0xe0) == 0xc0 && (u[1] & 0xc0) == 0x80) return *len = 2, (uint32_t)(u[0] & 0x1f) << 6 | (u[1] & 0x3f);
    if ((u[0] & 0xf0) == 0xe0 && left >= 3 && (u[1] & 0xc0) == 0x80 && (u[2] & 0xc0) == 0x80)
        return *len = 3, (uint32_t)(u[0] & 0x0f) << 12 | (uint32_t)(u[1] & 0x3f) << 6 | (u[2] & 0x3f);
    if ((u[0] & 0xf8) == 0xf0 && left >= 4 && (u[1] & 0xc0) == 0x80 && (u[2] & 0xc0) == 0x80 && (u[3] & 0xc0) == 0x80)
        return *len = 4, (uint32_t)(u[0] & 0x07) << 18 | (uint32_t)(u[1] & 0x3f) << 12 | (uint32_t)(u[2] & 0x3f) << 6 | (u[3] & 0x3f);
    return *len = 1, u[0];
}


enum { ZT__PRE_NONE, ZT__PRE_GPT2, ZT__PRE_LLAMA3, ZT__PRE_QWEN2 };
#define ZT__SPECIAL 7

struct zt_tokenizer {
    int byte_level;          /* else SentencePiece-style */
    int pre;                 /* the pre-tokenizer's rules */
    int prefix_space;        /* ByteLevel add_prefix_space */
    int sp_prepend;          /* ▁ before: 0 nothing, 1 every segment (normalizer Prepend), 2 the text's start and
                                3 every segment (Metaspace "first", "always": unless one is there already) */
    int sp_split;            /* Metaspace split: pieces start at each ▁ */
    int sp_words;            /* no token has ▁ after another character: BPE runs a word at a time, the same */
    int byte_fallback, fuse_unk, ignore_merges, strip_left;
    int nfc;                 /* the normalizer composes to NFC first */
    char *norm;              /* NFC text of a segment, and its code points (grown as needed) */
    uint32_t *norm_cps;
    size_t norm_cap;
    int32_t unk;
    int64_t n_vocab;
    char *pool;              /* every token's text */
    int64_t *off;            /* per id: its text in pool (off[id], off[id+1]) */
    int32_t *table;          /* open addressing by text: ids, -1 empty */
    int64_t table_mask;
    uint64_t *mkey;          /* merges: (left << 32 | right) + 1, 0 empty */
    int32_t *mrank, *mres;
    int64_t merge_mask;
    int n_added;
    int32_t *added;          /* ids of added tokens, longest first */
    int32_t byte_id[256];    /* byte-level: the id of each byte's character; SentencePiece: of <0xXX> */
    uint32_t byte_char[256]; /* byte-level: the printable character standing for each byte */
    int16_t char_byte[512];  /* ... and back (-1: none) */
    char *chat_src;          /* the chat template's source (compiled at first use into chat) */
    size_t chat_n;
    char chat_name[ZT__PATH + 32];
    zt_chat_template *chat;
    char *special[ZT__SPECIAL]; /* bos_token, eos_token, ... of tokenizer_config.json (NULL: none) */
    /* encoding buffers, grown as needed */
    char *buf;
    size_t buf_cap;
    int32_t *sym, *prev, *next;
    uint64_t *heap;
    int64_t sym_cap;
};

static uint64_t zt__hash_bytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
    return h;
}

static int32_t zt__tok_find(const zt_tokenizer *t, const char *s, size_t n) {
    for (int64_t i = (int64_t)(zt__hash_bytes(s, n) & (uint64_t)t->table_mask);; i = (i + 1) & t->table_mask) {
        int32_t id = t->table[i];
        if (id < 0) return -1;
        if ((size_t)(t->off[id + 1] - t->off[id]) == n && memcmp(t->pool + t->off[id], s, n) == 0) return id;
    }
}

static int64_t zt__merge_slot(const zt_tokenizer *t, uint64_t key) {
    int64_t i = (int64_t)(zt__mix(key) & (uint64_t)t->merge_mask);
    while (t->mkey[i] && t->mkey[i] != key) i = (i + 1) & t->merge_mask;
    return i;
}

ZT_API void zt_tokenizer_free(zt_tokenizer *t) {
    if (!t) return;
    free(t->pool), free(t->off), free(t->table), free(t->mkey), free(t->mrank), free(t->mres), free(t->added);
    free(t->buf), free(t->sym), free(t->prev), free(t->next), free(t->heap), free(t->norm), free(t->norm_cps);
    free(t->chat_src);
    zt_chat_template_free(t->chat);
    for (int k = 0; k < ZT__SPECIAL; k++) free(t->special[k]);
    free(t);
}

ZT_API int64_t zt_tokenizer_vocab(const zt_tokenizer *t) { return t->n_vocab; }
ZT_API int32_t zt_tokenizer_id(const zt_tokenizer *t, const char *token) { return zt__tok_find(t, token, strlen(token)); }

static const char *const zt__pre_regex[4] = {
    NULL, NULL,
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"};

/* the pre-tokenizer, normalizer and decoder zt knows, from the file */
static zt_result zt__tok_pipeline(zt_tokenizer *t, const zt__json *j, const char *path) {
    int pre = zt__json_get(j, 0, "pre_tokenizer"), norm = zt__json_get(j, 0, "normalizer");
    int dec = zt__json_get(j, 0, "decoder");
    char type[32] = "", buf[512];
    if (pre >= 0 && !zt__json_is_null(j, pre)) {
        zt__json_string(j, zt__json_get(j, pre, "type"), "type", type, sizeof type);
        if (strcmp(type, "ByteLevel") == 0) {
            int regex = 1;
            zt__json_bool(j, zt__json_get(j, pre, "use_regex"), "use_regex", &regex);
            zt__json_bool(j, zt__json_get(j, pre, "add_prefix_space"), "add_prefix_space", &t->prefix_space);
            t->byte_level = 1, t->pre = regex ? ZT__PRE_GPT2 : ZT__PRE_NONE;
        } else if (strcmp(type, "Sequence") == 0) {
            int list = zt__json_get(j, pre, "pretokenizers");
            int ok = list >= 0 && j->tok[list].type == JSMN_ARRAY && j->tok[list].size == 2;
            int split = ok ? list + 1 : -1, bl = ok ? zt__json_skip(j, split) : -1;
            int pattern = split >= 0 ? zt__json_get(j, zt__json_get(j, split, "pattern"), "Regex") : -1;
            int64_t n = zt__json_text(j, pattern, buf, sizeof buf - 1);
            if (n >= 0) buf[n] = 0;
            for (int k = ZT__PRE_LLAMA3; k <= ZT__PRE_QWEN2 && n >= 0; k++)
                if (strcmp(buf, zt__pre_regex[k]) == 0) t->pre = k;
            char bl_type[32] = "";
            if (bl >= 0) zt__json_string(j, zt__json_get(j, bl, "type"), "type", bl_type, sizeof bl_type);
            if (!t->pre || strcmp(bl_type, "ByteLevel") != 0)
                return zt_fail(ZT_ERROR_UNSUPPORTED, "%s: the pre-tokenizer is a Sequence zt does not know: zt knows "
                               "GPT-2's ByteLevel, and the Split regexes of LLaMA-3 and Qwen2 followed by ByteLevel", path);
            t->byte_level = 1;
        } else if (strcmp(type, "Metaspace") == 0) {
            char scheme[16] = "always";
            zt__json_string(j, zt__json_get(j, pre, "prepend_scheme"), "prepend_scheme", scheme, sizeof scheme);
            zt__json_bool(j, zt__json_get(j, pre, "split"), "split", &t->sp_split);
            t->sp_prepend = strcmp(scheme, "first") == 0 ? 2 : strcmp(scheme, "never") == 0 ? 0 : 3;
        } else {
            return zt_fail(ZT_ERROR_UNSUPPORTED, "%s: pre_tokenizer \"%s\" is not one zt reads (ByteLevel, a Split and "
                           "ByteLevel Sequence, Metaspace)", path, type);
        }
    }
    if (norm >= 0 && !zt__json_is_null(j, norm)) {
        zt__json_string(j, zt__json_get(j, norm, "type"), "type", type, sizeof type);
        int list = zt__json_get(j, norm, "normalizers"), ok = strcmp(type, "NFC") == 0;
        t->nfc = ok; /* Qwen2's */
        if (strcmp(type, "Sequence") == 0 && list >= 0) ok = 1;
        if (strcmp(type, "Replace") == 0) { /* Gemma's: only " " by "▁", nothing prepended */
            char from[8] = "", to[8] = "";
            zt__json_string(j, zt__json_get(j, zt__json_get(j, norm, "pattern"), "String"), "pattern", from, sizeof from);
            zt__json_string(j, zt__json_get(j, norm, "content"), "content", to, sizeof to);
            ok = strcmp(from, " ") == 0 && strcmp(to, "\xe2\x96\x81") == 0;
            list = -1;
        }
        for (int k = 0, it = list + 1; ok && !t->nfc && list >= 0 && k < j->tok[list].size; k++, it = zt__json_skip(j, it)) {
            char ty[32] = "";
            zt__json_string(j, zt__json_get(j, it, "type"), "type", ty, sizeof ty);
            if (strcmp(ty, "Prepend") == 0) t->sp_prepend = 1;
            else if (strcmp(ty, "NFC") == 0) t->nfc = 1;
            else if (strcmp(ty, "Replace") != 0) ok = 0; /* the space to ▁ replacement */
        }
        if (!ok)
            return zt_fail(ZT_ERROR_UNSUPPORTED, "%s: normalizer \"%s\" is not one zt reads (NFC, and LLaMA-2's Prepend "
                           "and Replace of \" \" by \"\xe2\x96\x81\", or Gemma's Replace alone; NFKC, lowercasing and "
                           "the others are not built)", path, type);
    }
    if (dec >= 0 && !zt__json_is_null(j, dec)) { /* the Strip of SentencePiece decoders: a leading space goes */
        for (int it = dec; it < zt__json_skip(j, dec); it++)
            if (zt__json_eq(j, it, "Strip")) t->strip_left = 1;
        zt__json_string(j, zt__json_get(j, dec, "type"), "type", type, sizeof type);
        if (strcmp(type, "Metaspace") == 0) t->strip_left = t->sp_prepend != 0;
    }
    return ZT_OK;
}

static zt_result zt__tokenizer_parse(zt_tokenizer **out, const char *text, size_t len, const char *file);

static zt_result zt__tokenizer_side(zt_tokenizer *t, const char *dir);

ZT_API zt_result zt_tokenizer_load(zt_tokenizer **out, const char *path) {
    *out = NULL;
    char file[ZT__PATH];
    size_t pl = strlen(path);
    if (pl >= 5 && strcmp(path + pl - 5, ".json") == 0) snprintf(file, sizeof file, "%s", path);
    else if (zt__path(file, path, "tokenizer.json") != ZT_OK) return zt_fail(ZT_ERROR_INVALID, "%s is too long", path);
    struct stat sb;
    if (stat(file, &sb) != 0) return zt_fail(ZT_ERROR_IO, "cannot open %s: %s", file, strerror(errno));
    zt_arena a;
    void *mem = zt__setup_arena(&a, "tokenizer.json", (size_t)sb.st_size + 4096);
    char *text = NULL;
    size_t len = 0;
    zt_result r = zt__read_file(&a, file, &text, &len);
    if (r == ZT_OK) r = zt__tokenizer_parse(out, text, len, file);
    free(mem);
    if (r == ZT_OK) { /* the chat template and special tokens beside it */
        char *slash = strrchr(file, '/');
        if (slash) *slash = 0;
        r = zt__tokenizer_side(*out, slash ? file : ".");
        if (r != ZT_OK) zt_tokenizer_free(*out), *out = NULL;
    }
    return r;
}

/* a tokenizer from the text of a tokenizer.json (file names it in messages) */
static zt_result zt__tokenizer_parse(zt_tokenizer **out, const char *text, size_t len, const char *file) {
    *out = NULL;
    zt_arena a;
    void *mem = zt__setup_arena(&a, "tokenizer.json tokens", zt__json_token_bytes(len));
    zt_tokenizer *t = (zt_tokenizer *)calloc(1, sizeof *t); /* load time, freed by zt_tokenizer_free */
    char tmp[1024];
    zt__json j;
    if (!t) {
        free(mem);
        return zt_fail(ZT_ERROR_MEMORY, "out of memory loading %s", file);
    }
    zt_result r = zt__json_parse(&j, &a, file, text, len);
    int model = r == ZT_OK ? zt__json_get(&j, 0, "model") : -1, vocab = zt__json_get(&j, model, "vocab");
    int merges = zt__json_get(&j, model, "merges"), added = r == ZT_OK ? zt__json_get(&j, 0, "added_tokens") : -1;
    char type[32] = "";
    if (r == ZT_OK) zt__json_string(&j, zt__json_get(&j, model, "type"), "model.type", type, sizeof type);
    if (r == ZT_OK && strcmp(type, "BPE") != 0)
        r = zt_fail(ZT_ERROR_UNSUPPORTED, "%s: model.type is \"%s\"; zt reads BPE tokenizers (GPT-2, LLaMA, Mistral, "
                    "Qwen2)", file, type);
    if (r == ZT_OK && (vocab < 0 || j.tok[vocab].type != JSMN_OBJECT || merges < 0 || j.tok[merges].type != JSMN_ARRAY))
        r = zt_fail(ZT_ERROR_FORMAT, "%s: model.vocab must be an object and model.merges an array", file);
    if (r == ZT_OK) r = zt__tok_pipeline(t, &j, file);
    if (r == ZT_OK) {
        zt__json_bool(&j, zt__json_get(&j, model, "byte_fallback"), "byte_fallback", &t->byte_fallback);
        zt__json_bool(&j, zt__json_get(&j, model, "fuse_unk"), "fuse_unk", &t->fuse_unk);
        zt__json_bool(&j, zt__json_get(&j, model, "ignore_merges"), "ignore_merges", &t->ignore_merges);
    }
    /* the vocabulary: ids may come in any order; added tokens may lie beyond it */
    int64_t n_vocab = 0, pool = 0;
    int n_added = added >= 0 && j.tok[added].type == JSMN_ARRAY ? j.tok[added].size : 0;
    for (int k = 0, it = vocab + 1; r == ZT_OK && k < j.tok[vocab].size; k++, it = zt__json_skip(&j, it + 1)) {
        int64_t id = -1;
        if ((r = zt__json_int(&j, it + 1, "model.vocab", &id)) != ZT_OK) break;
        if (id < 0 || id >= (1 << 24)) r = zt_fail(ZT_ERROR_FORMAT, "%s: a vocabulary id %lld out of range", file, (long long)id);
        n_vocab = ZT__MAX(n_vocab, id + 1);
        pool += j.tok[it].end - j.tok[it].start + 8;
    }
    for (int k = 0, it = added + 1; r == ZT_OK && k < n_added; k++, it = zt__json_skip(&j, it)) {
        int64_t id = -1;
        int c = zt__json_get(&j, it, "content");
        if ((r = zt__json_int(&j, zt__json_get(&j, it, "id"), "added_tokens.id", &id)) != ZT_OK) break;
        if (id < 0 || id >= (1 << 24) || c < 0) r = zt_fail(ZT_ERROR_FORMAT, "%s: added token %d has no id or content", file, k);
        else n_vocab = ZT__MAX(n_vocab, id + 1), pool += j.tok[c].end - j.tok[c].start + 8;
    }
    int64_t cap = 64, count = (r == ZT_OK ? j.tok[vocab].size : 0) + n_added;
    if (r == ZT_OK && n_vocab > 2 * count + 256)
        r = zt_fail(ZT_ERROR_FORMAT, "%s: the ids go up to %lld for %lld tokens: a vocabulary's ids are dense", file,
                    (long long)n_vocab - 1, (long long)count);
    while (cap < 2 * n_vocab) cap *= 2;
    if (r == ZT_OK) {
        t->n_vocab = n_vocab, t->table_mask = cap - 1;
        t->pool = (char *)malloc((size_t)pool + 1), t->off = (int64_t *)calloc((size_t)n_vocab + 1, sizeof(int64_t));
        t->table = (int32_t *)malloc(sizeof(int32_t) * (size_t)cap), t->added = (int32_t *)malloc(sizeof(int32_t) * (size_t)(n_added + 1));
        if (!t->pool || !t->off || !t->table || !t->added) r = zt_fail(ZT_ERROR_MEMORY, "out of memory loading %s", file);
    }
    /* texts in id order: each id's text, then the table */
    int64_t *start = r == ZT_OK ? (int64_t *)malloc(sizeof(int64_t) * (size_t)n_vocab * 2 + 16) : NULL;
    if (r == ZT_OK && !start) r = zt_fail(ZT_ERROR_MEMORY, "out of memory loading %s", file);
    if (r == ZT_OK) {
        for (int64_t i = 0; i < 2 * n_vocab; i++) start[i] = -1; /* token index of each id's text (key or content) */
        for (int k = 0, it = vocab + 1; k < j.tok[vocab].size; k++, it = zt__json_skip(&j, it + 1)) {
            int64_t id = 0;
            zt__json_int(&j, it + 1, "model.vocab", &id);
            start[2 * id] = it;
        }
        for (int k = 0, it = added + 1; k < n_added; k++, it = zt__json_skip(&j, it)) {
            int64_t id = 0;
            zt__json_int(&j, zt__json_get(&j, it, "id"), "id", &id);
            start[2 * id] = zt__json_get(&j, it, "content");
            t->added[t->n_added++] = (int32_t)id;
        }
        int64_t o = 0;
        for (int64_t id = 0; id < n_vocab && r == ZT_OK; id++) {
            t->off[id] = o;
            if (start[2 * id] < 0) continue; /* a hole in the ids: an empty text no input can match */
            int64_t n = zt__json_text(&j, (int)start[2 * id], t->pool + o, (size_t)(pool - o));
            if (n < 0) r = zt_fail(ZT_ERROR_FORMAT, "%s: the text of token %lld is not a string", file, (long long)id);
            else o += n;
        }
        t->off[n_vocab] = o;
        for (int64_t i = 0; i < cap; i++) t->table[i] = -1;
        for (int64_t id = 0; id < n_vocab && r == ZT_OK; id++) {
            if (start[2 * id] < 0) continue;
            const char *s = t->pool + t->off[id];
            size_t n = (size_t)(t->off[id + 1] - t->off[id]);
            if (zt__tok_find(t, s, n) >= 0) continue; /* the first id of a text wins */
            int64_t i = (int64_t)(zt__hash_bytes(s, n) & (uint64_t)t->table_mask);
            while (t->table[i] >= 0) i = (i + 1) & t->table_mask;
            t->table[i] = (int32_t)id;
        }
    }
    free(start);
    /* added tokens, longest first (the first of equal ones matches) */
    for (int a1 = 1; a1 < t->n_added; a1++)
        for (int a2 = a1; a2 > 0; a2--) {
            int32_t x = t->added[a2 - 1], y = t->added[a2];
            if (t->off[y + 1] - t->off[y] <= t->off[x + 1] - t->off[x]) break;
            t->added[a2 - 1] = y, t->added[a2] = x;
        }
    /* merges: "a b" strings or ["a", "b"] pairs, ranked by position */
    int64_t n_merges = r == ZT_OK ? j.tok[merges].size : 0, mcap = 64;
    while (mcap < 2 * n_merges) mcap *= 2;
    if (r == ZT_OK) {
        t->merge_mask = mcap - 1;
        t->mkey = (uint64_t *)calloc((size_t)mcap, 8), t->mrank = (int32_t *)malloc(4 * (size_t)mcap), t->mres = (int32_t *)malloc(4 * (size_t)mcap);
        if (!t->mkey || !t->mrank || !t->mres) r = zt_fail(ZT_ERROR_MEMORY, "out of memory loading %s", file);
    }
    for (int64_t k = 0, it = merges + 1; r == ZT_OK && k < n_merges; k++, it = zt__json_skip(&j, it)) {
        char left[512], right[512];
        int64_t nl = -1, nr = -1;
        if (j.tok[it].type == JSMN_ARRAY && j.tok[it].size == 2) {
            nl = zt__json_text(&j, it + 1, left, sizeof left);
            nr = zt__json_text(&j, zt__json_skip(&j, it + 1), right, sizeof right);
        } else if (j.tok[it].type == JSMN_STRING) {
            int64_t n = zt__json_text(&j, it, tmp, sizeof tmp);
            char *sp = n > 0 ? (char *)memchr(tmp, ' ', (size_t)n) : NULL;
            if (sp && sp - tmp < (int64_t)sizeof left && n - (sp - tmp) - 1 < (int64_t)sizeof right) {
                nl = sp - tmp, nr = n - nl - 1;
                memcpy(left, tmp, (size_t)nl), memcpy(right, sp + 1, (size_t)nr);
            }
        }
        if (nl < 0 || nr < 0 || nl + nr >= (int64_t)sizeof tmp) {
            r = zt_fail(ZT_ERROR_FORMAT, "%s: merge %lld is neither \"a b\" nor [\"a\", \"b\"]", file, (long long)k);
            break;
        }
        memcpy(tmp, left, (size_t)nl), memcpy(tmp + nl, right, (size_t)nr);
        int32_t a = zt__tok_find(t, left, (size_t)nl), b = zt__tok_find(t, right, (size_t)nr), c = zt__tok_find(t, tmp, (size_t)(nl + nr));
        if (a < 0 || b < 0 || c < 0) continue; /* a merge into nothing the vocabulary has: never used */
        uint64_t key = ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1;
        int64_t slot = zt__merge_slot(t, key);
        if (t->mkey[slot]) continue; /* the first rank of a pair wins */
        t->mkey[slot] = key, t->mrank[slot] = (int32_t)k, t->mres[slot] = c;
    }
    /* bytes: byte-level's printable stand-ins (GPT-2's table), or SentencePiece's <0xXX> tokens */
    for (int i = 0; i < 512; i++) t->char_byte[i] = -1;
    for (int b = 0, extra = 0; b < 256 && r == ZT_OK; b++) {
        int printable = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
        t->byte_char[b] = printable ? (uint32_t)b : 256 + (uint32_t)extra++;
        t->char_byte[t->byte_char[b]] = (int16_t)b;
        char s[8];
        int n = t->byte_level ? zt__put_utf8(s, t->byte_char[b]) : snprintf(s, sizeof s, "<0x%02X>", b);
        t->byte_id[b] = zt__tok_find(t, s, (size_t)n);
    }
    /* SentencePiece-style: when no token holds a ▁ after another character, no merge crosses the start of
       a word, so BPE a word at a time gives the ids of BPE over the whole text, in bounded memory */
    t->sp_words = !t->byte_level;
    for (int64_t id = 0; id < t->n_vocab && t->sp_words && r == ZT_OK; id++) {
        const char *p = t->pool + t->off[id];
        size_t len = (size_t)(t->off[id + 1] - t->off[id]);
        for (size_t i = 1; i + 3 <= len && t->sp_words; i++)
            if (memcmp(p + i, "\xe2\x96\x81", 3) == 0 && !(i >= 3 && memcmp(p + i - 3, "\xe2\x96\x81", 3) == 0))
                t->sp_words = 0;
    }
    t->unk = -1;
    int unk = zt__json_get(&j, model, "unk_token");
    int64_t un = r == ZT_OK && unk >= 0 ? zt__json_text(&j, unk, tmp, sizeof tmp) : -1;
    if (un > 0) t->unk = zt__tok_find(t, tmp, (size_t)un);
    free(mem);
    if (r != ZT_OK) {
        zt_tokenizer_free(t);
        return r;
    }
    *out = t;
    return ZT_OK;
}

/* room in the encoding buffers for n symbols and bytes */
static int zt__tok_grow(zt_tokenizer *t, int64_t n) {
    if (n <= t->sym_cap && (size_t)n * 4 + 16 <= t->buf_cap) return 1;
    int64_t cap = ZT__MAX(2 * t->sym_cap, n + 64);
    int32_t *s = (int32_t *)realloc(t->sym, 4 * (size_t)cap), *p = NULL, *x = NULL;
    if (s) t->sym = s, p = (int32_t *)realloc(t->prev, 4 * (size_t)cap);
    if (p) t->prev = p, x = (int32_t *)realloc(t->next, 4 * (size_t)cap);
    uint64_t *h = x ? (t->next = x, (uint64_t *)realloc(t->heap, 8 * (size_t)cap * 2)) : NULL;
    char *b = h ? (t->heap = h, (char *)realloc(t->buf, (size_t)cap * 4 + 16)) : NULL;
    if (!b) return 0;
    t->buf = b, t->buf_cap = (size_t)cap * 4 + 16, t->sym_cap = cap;
    return 1;
}

/* a heap of (rank << 32 | position): the lowest rank first, then the leftmost */
static void zt__heap_push(uint64_t *h, int64_t *n, uint64_t v) {
    int64_t i = (*n)++;
    while (i > 0 && h[(i - 1) / 2] > v) h[i] = h[(i - 1) / 2], i = (i - 1) / 2;
    h[i] = v;
}
static uint64_t zt__heap_pop(uint64_t *h, int64_t *n) {
    uint64_t top = h[0], v = h[--*n];
    int64_t i = 0;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && h[c + 1] < h[c]) c++;
        if (h[c] >= v) break;
        h[i] = h[c], i = c;
    }
    h[i] = v;
    return top;
}

static void zt__bpe_pair(zt_tokenizer *t, int64_t *nh, int32_t i) {
    if (i < 0 || t->next[i] < 0) return;
    int32_t k = t->next[i];
    uint64_t key = ((uint64_t)(uint32_t)t->sym[i] << 32 | (uint32_t)t->sym[k]) + 1;
    int64_t slot = zt__merge_slot(t, key);
    if (t->mkey[slot]) zt__heap_push(t->heap, nh, (uint64_t)(uint32_t)t->mrank[slot] << 32 | (uint32_t)i);
}

/* BPE over symbols t->sym[0, n): the lowest-ranked adjacent pair merged first (leftmost on ties),
   as the tokenizers library does; appends the ids */
static int64_t zt__bpe(zt_tokenizer *t, int64_t n, int32_t *ids, int64_t cap, int64_t at) {
    int64_t nh = 0;
    for (int32_t i = 0; i < n; i++) t->prev[i] = i - 1, t->next[i] = i + 1 < n ? i + 1 : -1;
    for (int32_t i = 0; i + 1 < n; i++) zt__bpe_pair(t, &nh, i);
    while (nh > 0) {
        uint64_t top = zt__heap_pop(t->heap, &nh);
        int32_t i = (int32_t)(uint32_t)top, k = t->next[i];
        if (t->sym[i] < 0 || k < 0) continue;
        uint64_t key = ((uint64_t)(uint32_t)t->sym[i] << 32 | (uint32_t)t->sym[k]) + 1;
        int64_t slot = zt__merge_slot(t, key);
        if (!t->mkey[slot] || (uint32_t)t->mrank[slot] != (uint32_t)(top >> 32)) continue; /* stale */
        t->sym[i] = t->mres[slot];
        t->sym[k] = -1;
        t->next[i] = t->next[k];
        if (t->next[k] >= 0) t->prev[t->next[k]] = i;
        zt__bpe_pair(t, &nh, t->prev[i]);
        zt__bpe_pair(t, &nh, i);
    }
    for (int32_t i = 0; i >= 0 && n > 0; i = t->next[i]) {
        if (at < cap) ids[at] = t->sym[i];
        at++;
    }
    return at;
}

/* one byte-level piece (raw bytes) */
static int64_t zt__tok_bytes(zt_tokenizer *t, const char *s, size_t n, int32_t *ids, int64_t cap, int64_t at) {
    if (n > (size_t)INT32_MAX / 4) zt_fatal("a piece of %zu bytes is more than zt tokenizes at once", n);
    if (!zt__tok_grow(t, (int64_t)n)) zt_fatal("out of memory tokenizing");
    if (t->ignore_merges) { /* the whole piece, when the vocabulary has it */
        size_t m = 0;
        for (size_t i = 0; i < n; i++) m += (size_t)zt__put_utf8(t->buf + m, t->byte_char[(uint8_t)s[i]]);
        int32_t id = zt__tok_find(t, t->buf, m);
        if (id >= 0) {
            if (at < cap) ids[at] = id;
            return at + 1;
        }
    }
    int64_t ns = 0; /* a byte the vocabulary lacks (and no unk token): dropped, as the tokenizers library does */
    for (size_t i = 0; i < n; i++) {
        int32_t id = t->byte_id[(uint8_t)s[i]] >= 0 ? t->byte_id[(uint8_t)s[i]] : t->unk;
        if (id >= 0) t->sym[ns++] = id;
    }
    return zt__bpe(t, ns, ids, cap, at);
}

/* the pre-tokenizer's next piece at s[i]: its end */
static size_t zt__pre_next(const zt_tokenizer *t, const char *s, size_t n, size_t i) {
    int len, l2;
    uint32_t c = zt__utf8(s, n, i, &len);
    if (c == '\'' && i + 1 < n) { /* contractions */
        char a = s[i + 1], b = i + 2 < n ? s[i + 2] : 0;
        int ci = t->pre != ZT__PRE_GPT2;
        if (ci) a = (char)(a | (a >= 'A' && a <= 'Z' ? 32 : 0)), b = (char)(b | (b >= 'A' && b <= 'Z' ? 32 : 0));
        if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
    }
    size_t j = i + (size_t)len;
    uint32_t d = j < n ? zt__utf8(s, n, j, &l2) : 0;
    if (t->pre == ZT__PRE_GPT2) {
        size_t k = i;
        if (c == ' ' && j < n && !zt__is_space(d)) k = j, c = d; /* " ?" before letters, numbers or others */
        if (k < n && !zt__is_space(c)) {
            int kind = zt__is_letter(c) ? 1 : zt__is_number(c) ? 2 : 3;
            while (k < n) {
                uint32_t e = zt__utf8(s, n, k, &l2);
                int ek = zt__is_space(e) ? 0 : zt__is_letter(e) ? 1 : zt__is_number(e) ? 2 : 3;
                if (ek != kind) break;
                k += (size_t)l2;
            }
            return k;
        }
    } else {
        /* [^\r\n\p{L}\p{N}]?\p{L}+ */
        size_t k = i;
        if (!zt__is_letter(c) && !zt__is_number(c) && c != '\r' && c != '\n' && j < n && zt__is_letter(d)) k = j;
        if (k < n && zt__is_letter(zt__utf8(s, n, k, &l2))) {
            while (k < n && zt__is_letter(zt__utf8(s, n, k, &l2))) k += (size_t)l2;
            return k;
        }
        if (zt__is_number(c)) { /* \p{N}{1,3} or \p{N} */
            int most = t->pre == ZT__PRE_LLAMA3 ? 3 : 1, count = 0;
            k = i;
            while (k < n && count < most && zt__is_number(zt__utf8(s, n, k, &l2))) k += (size_t)l2, count++;
            return k;
        }
        /*  ?[^\s\p{L}\p{N}]+[\r\n]* */
        k = c == ' ' ? j : i;
        size_t k0 = k;
        while (k < n) {
            uint32_t e = zt__utf8(s, n, k, &l2);
            if (zt__is_space(e) || zt__is_letter(e) || zt__is_number(e)) break;
            k += (size_t)l2;
        }
        if (k > k0) {
            while (k < n && (s[k] == '\r' || s[k] == '\n')) k++;
            return k;
        }
    }
    /* white space: \s*[\r\n]+ (not GPT-2), \s+(?!\S), \s+ */
    size_t k = i, last_nl = 0, last = i;
    int nl = 0;
    while (k < n) {
        uint32_t e = zt__utf8(s, n, k, &l2);
        if (!zt__is_space(e)) break;
        if (e == '\r' || e == '\n') nl = 1, last_nl = k + (size_t)l2;
        last = k;
        k += (size_t)l2;
    }
    if (k == i) return i + (size_t)len; /* not reached: every character is one of the classes */
    if (t->pre != ZT__PRE_GPT2 && nl) return last_nl;
    if (k < n && last > i) return last; /* leave the last space to the piece after it */
    return k;
}

/* a SentencePiece-style segment: ▁ for spaces (and before it, as the file says), then BPE over its
   characters, unknown ones as their bytes' <0xXX> tokens */
static int64_t zt__tok_sp(zt_tokenizer *t, const char *s, size_t n, int first, int32_t *ids, int64_t cap, int64_t at) {
    if (n > (size_t)INT32_MAX / 4) zt_fatal("a text of %zu bytes between added tokens is more than zt tokenizes in one piece", n);
    if (!zt__tok_grow(t, (int64_t)n * 3 + 8)) zt_fatal("out of memory tokenizing");
    char *b = t->buf;
    size_t m = 0;
    int marked = n > 0 && s[0] == ' '; /* Metaspace adds no ▁ where a space already makes one */
    if (t->sp_prepend == 1 || (((t->sp_prepend == 2 && first) || t->sp_prepend == 3) && !marked))
        memcpy(b, "\xe2\x96\x81", 3), m = 3;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ' ') memcpy(b + m, "\xe2\x96\x81", 3), m += 3;
        else b[m++] = s[i];
    }
    int64_t ns = 0;
    int after_mark = 0; /* the character before was a ▁ */
    for (size_t i = 0; i < m;) {
        int len;
        zt__utf8(b, m, i, &len);
        int mark = len == 3 && memcmp(b + i, "\xe2\x96\x81", 3) == 0;
        if (ns > 0 && mark && (t->sp_split || (t->sp_words && !after_mark))) { /* a new word */
            at = zt__bpe(t, ns, ids, cap, at);
            ns = 0;
        }
        after_mark = mark;
        int32_t id = zt__tok_find(t, b + i, (size_t)len);
        if (id >= 0) {
            t->sym[ns++] = id;
        } else if (t->byte_fallback) {
            for (int k = 0; k < len; k++)
                if (t->byte_id[(uint8_t)b[i + k]] >= 0) t->sym[ns++] = t->byte_id[(uint8_t)b[i + k]];
        } else if (t->unk >= 0 && !(t->fuse_unk && ns > 0 && t->sym[ns - 1] == t->unk)) {
            t->sym[ns++] = t->unk;
        }
        i += (size_t)len;
    }
    return zt__bpe(t, ns, ids, cap, at);
}

/* the text between added tokens */
static int64_t zt__tok_segment(zt_tokenizer *t, const char *s, size_t n, int first, int32_t *ids, int64_t cap, int64_t at) {
    if (t->nfc) { /* the normalizer first (the text between added tokens is what it sees) */
        if (t->norm_cap < 4 * n + 16) {
            char *b = (char *)realloc(t->norm, 4 * n + 16);
            uint32_t *c = b ? (uint32_t *)realloc(t->norm_cps, sizeof(uint32_t) * (4 * n + 16)) : NULL;
            if (b) t->norm = b;
            if (!c) zt_fatal("out of memory tokenizing");
            t->norm_cps = c, t->norm_cap = 4 * n + 16;
        }
        n = zt__nfc(s, n, t->norm, t->norm_cps);
        s = t->norm;
    }
    if (!t->byte_level) return zt__tok_sp(t, s, n, first, ids, cap, at);
    first = 1; /* add_prefix_space applies between every pair of added tokens */
    if (t->prefix_space && first && n > 0 && s[0] != ' ') { /* ByteLevel's add_prefix_space: " " + each piece */
        char *spaced = (char *)malloc(n + 1);
        if (!spaced) zt_fatal("out of memory tokenizing");
        spaced[0] = ' ';
        memcpy(spaced + 1, s, n);
        at = zt__tok_segment(t, spaced, n + 1, 0, ids, cap, at);
        free(spaced);
        return at;
    }
    if (t->pre == ZT__PRE_NONE) return zt__tok_bytes(t, s, n, ids, cap, at);
    for (size_t i = 0; i < n;) {
        size_t k = zt__pre_next(t, s, n, i);
        at = zt__tok_bytes(t, s + i, k - i, ids, cap, at);
        i = k;
    }
    return at;
}

/* the added token text[i, ...) starts with (the longest), or -1 */
static int32_t zt__tok_added_at(const zt_tokenizer *t, const char *text, size_t n, size_t i) {
    for (int a = 0; a < t->n_added && i < n; a++) {
        int32_t id = t->added[a];
        size_t len = (size_t)(t->off[id + 1] - t->off[id]);
        if (len && len <= n - i && memcmp(text + i, t->pool + t->off[id], len) == 0) return id;
    }
    return -1;
}

ZT_API int64_t zt_tokenize(zt_tokenizer *t, const char *text, size_t n, int32_t *ids, int64_t cap) {
    int64_t at = 0;
    size_t seg = 0;
    for (size_t i = 0; i <= n;) {
        int32_t hit = zt__tok_added_at(t, text, n, i);
        if (hit < 0 && i < n) {
            i++;
            continue;
        }
        if (i > seg) at = zt__tok_segment(t, text + seg, i - seg, seg == 0, ids, cap, at); /* "first": at the text's start */
        if (hit < 0) break;
        if (at < cap) ids[at] = hit;
        at++;
        i += (size_t)(t->off[hit + 1] - t->off[hit]);
        seg = i;
    }
    return at;
}

/* lead: drop a space the text starts with (the decoder's Strip) */
static size_t zt__detok(zt_tokenizer *t, const int32_t *ids, int64_t n, char *out, size_t cap, int lead) {
    size_t o = 0;
    for (int64_t k = 0; k < n; k++) {
        int32_t id = ids[k];
        if (id < 0 || id >= t->n_vocab) continue;
        const char *s = t->pool + t->off[id];
        size_t len = (size_t)(t->off[id + 1] - t->off[id]);
        int added = 0;
        for (int a = 0; a < t->n_added && !added; a++) added = t->added[a] == id;
        for (size_t i = 0; i < len;) {
            int l;
            uint32_t c = zt__utf8(s, len, i, &l);
            char b[4];
            int bn = 0;
            if (added) {
                memcpy(b, s + i, (size_t)l), bn = l;
            } else if (t->byte_level) {
                if (c < 512 && t->char_byte[c] >= 0) b[0] = (char)t->char_byte[c], bn = 1;
            } else if (len == 6 && i == 0 && s[0] == '<' && s[1] == '0' && s[2] == 'x' && s[5] == '>') {
                b[0] = (char)strtol(s + 3, NULL, 16), bn = 1, l = 6; /* byte fallback */
            } else if (c == 0x2581) {
                b[0] = ' ', bn = 1;
            } else {
                memcpy(b, s + i, (size_t)l), bn = l;
            }
            for (int x = 0; x < bn; x++) {
                if (lead && o == 0 && b[x] == ' ') {
                    lead = 0;
                    continue;
                }
                lead = 0;
                if (o < cap) out[o] = b[x];
                o++;
            }
            i += (size_t)l;
        }
    }
    if (o < cap) out[o] = 0;
    return o;
}

ZT_API size_t zt_detokenize(zt_tokenizer *t, const int32_t *ids, int64_t n, char *out, size_t cap) {
    return zt__detok(t, ids, n, out, cap, t->strip_left);
}

/* ---- chat templates: the Jinja that Hugging Face chat templates are written in ---- */

/* A chat template is a Jinja program (tokenizer_config.json's "chat_template", or chat_template.jinja).
   zt runs the part of Jinja that chat templates use, with the settings transformers gives it: trim_blocks,
   lstrip_blocks, break and continue, {% generation %}, raise_exception, strftime_now, namespace, and a
   tojson that writes non-ASCII text as it is. The template is lexed into one token array and parsed into a
   tree once; each render walks the tree over values made from JSON. A render's values live in one heap
   freed whole afterwards, so an error anywhere in it longjmps straight back to zt_chat_render: there is
   nothing to unwind. Strings are UTF-8 and indexed, sliced and counted by code point, as Python does;
   upper, lower, title and capitalize change ASCII letters only. */
#include <setjmp.h>

#define ZT__J_STEPS ((int64_t)10 * 1000 * 1000) /* a render stops after this many evaluations: a runaway loop */
#define ZT__J_BYTES ((size_t)256 << 20)         /* ... or this much memory */
#define ZT__J_DEPTH 200                          /* nesting in the source: brackets, expressions, blocks */
#define ZT__J_EVAL_DEPTH 1000                    /* nesting as it runs: a chain a ~ b ~ ..., macro calls, values */

typedef struct zt__jblock { struct zt__jblock *next; size_t used, cap; } zt__jblock;
typedef struct zt__jheap { zt__jblock *head; size_t bytes; } zt__jheap;

static void zt__jheap_free(zt__jheap *h) {
    while (h->head) {
        zt__jblock *b = h->head;
        h->head = b->next;
        free(b); /* data preparation, not a training step */
    }
    h->bytes = 0;
}

/* n bytes, 16-aligned; NULL past ZT__J_BYTES or without memory */
static void *zt__jheap_alloc(zt__jheap *h, size_t n) {
    n = (n + 15) & ~(size_t)15;
    zt__jblock *b = h->head;
    if (!b || b->cap - b->used < n) {
        size_t cap = ZT__MAX(n, (size_t)1 << 16), head = (sizeof(zt__jblock) + 15) & ~(size_t)15;
        if (n > ZT__J_BYTES || h->bytes + cap > ZT__J_BYTES) return NULL;
        b = (zt__jblock *)malloc(head + cap);
        if (!b) return NULL;
        b->next = h->head, b->used = head, b->cap = head + cap;
        h->head = b, h->bytes += cap;
    }
    void *p = (char *)b + b->used;
    b->used += n;
    return p;
}

typedef enum zt__jtype {
    ZT__JU,     /* undefined: a name or key that is not there (u.s names it) */
    ZT__JNONE, ZT__JBOOL, ZT__JINT, ZT__JFLOAT, ZT__JSTR,
    ZT__JLIST,  /* sub = 1: a tuple (only its printing differs) */
    ZT__JDICT,  /* keys in insertion order; sub = 1: a namespace(), the one value a template may change */
    ZT__JFN,    /* a builtin function or a method of self (sub: which) */
    ZT__JMACRO
} zt__jtype;

typedef struct zt__jv zt__jv;
typedef struct zt__jdict { int64_t n, cap; zt__jv *keys, *vals; } zt__jdict;
typedef struct zt__jn zt__jn;
struct zt__jv {
    int type, sub;
    int64_t n; /* bytes of a string, items of a list */
    union { int64_t i; double f; const char *s; zt__jv *items; zt__jdict *d; const zt__jn *macro; } u;
    const zt__jv *self;
};

/* the tree: expressions and statements */
typedef enum zt__jkind {
    ZT__N_CONST, ZT__N_NAME, ZT__N_ATTR, ZT__N_INDEX, ZT__N_SLICE, ZT__N_CALL, ZT__N_KWARG, ZT__N_FILTER,
    ZT__N_TEST, ZT__N_NEG, ZT__N_POS, ZT__N_NOT, ZT__N_AND, ZT__N_OR, ZT__N_BIN, ZT__N_CMP, ZT__N_COND,
    ZT__N_LIST, ZT__N_TUPLE, ZT__N_DICT, ZT__N_PAIR,
    ZT__N_TEXT, ZT__N_OUT, ZT__N_IF, ZT__N_FOR, ZT__N_SET, ZT__N_SETBLOCK, ZT__N_MACRO, ZT__N_PARAM,
    ZT__N_BREAK, ZT__N_CONTINUE, ZT__N_GENERATION
} zt__jkind;

struct zt__jn {
    int kind, line;
    int op;                 /* BIN, CMP: the operator; TEST: negated; FOR: two targets */
    zt__jn *a, *b, *c, *d;  /* children (the kinds say which) */
    zt__jn *next;           /* the next statement, argument, item or comparison */
    const char *s, *s2;     /* names, text */
    int64_t n, n2;
    zt__jv v;               /* CONST */
};

typedef enum zt__jtk { ZT__T_TEXT, ZT__T_VBEGIN, ZT__T_VEND, ZT__T_BBEGIN, ZT__T_BEND, ZT__T_NAME, ZT__T_STR,
                       ZT__T_NUM, ZT__T_OP, ZT__T_EOF } zt__jtk;
typedef struct zt__jtok { int kind, line; const char *s; int64_t n; zt__jv v; } zt__jtok;

struct zt_chat_template {
    char name[256];             /* for messages: where the template came from */
    char *src;                  /* the source, newlines made "\n" */
    size_t n;
    zt__jheap code;             /* the tree and the tokens' texts */
    zt__jtok *tok;
    int64_t ntok, tok_cap, at;  /* at: the parser's position */
    zt__jn *root;
    int has_generation, depth, loops; /* loops: around the statement being parsed */
    jmp_buf fail;               /* parse errors come back here */
    char msg[1000];
    /* a render */
    zt__jheap heap;
    char *out;
    size_t len, cap;
    int64_t *spans;
    int n_spans, spans_cap;
};

/* ---- values ---- */

static zt__jv zt__jnone(void) { zt__jv v; memset(&v, 0, sizeof v); v.type = ZT__JNONE; return v; }
static zt__jv zt__jundef(const char *name, int64_t n) {
    zt__jv v = zt__jnone();
    v.type = ZT__JU, v.u.s = name, v.n = n;
    return v;
}
static zt__jv zt__jbool(int b) { zt__jv v = zt__jnone(); v.type = ZT__JBOOL, v.u.i = b != 0; return v; }
static zt__jv zt__jint(int64_t i) { zt__jv v = zt__jnone(); v.type = ZT__JINT, v.u.i = i; return v; }
static zt__jv zt__jfloat(double f) { zt__jv v = zt__jnone(); v.type = ZT__JFLOAT, v.u.f = f; return v; }
static zt__jv zt__jstr(const char *s, int64_t n) {
    zt__jv v = zt__jnone();
    v.type = ZT__JSTR, v.u.s = s, v.n = n;
    return v;
}
static zt__jv zt__jlist(zt__jv *items, int64_t n) {
    zt__jv v = zt__jnone();
    v.type = ZT__JLIST, v.u.items = items, v.n = n;
    return v;
}

/* one render: the template, its scopes and where output goes */
typedef struct zt__jscope { struct zt__jscope *up; zt__jdict vars; } zt__jscope;
typedef struct zt__jr {
    zt_chat_template *c;
    jmp_buf fail;
    int line;             /* of the node being evaluated, for messages */
    int64_t steps;
    int depth, ctl;       /* ctl: 1 after break, 2 after continue */
    zt__jscope *scope, *globals;
    char *out;            /* where text goes: the template's buffer, or a macro's or set block's */
    size_t len, cap;
    int top;              /* out is the template's own buffer (generation spans are counted there) */
    const char *where;    /* set: errors name this (a file and line of data) instead of the template's line */
} zt__jr;

ZT_NORETURN static void zt__jfail(zt__jr *R, const char *fmt, ...) ZT_PRINTF(2, 3);
static void zt__jfail(zt__jr *R, const char *fmt, ...) {
    char m[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    if (R->where) snprintf(R->c->msg, sizeof R->c->msg, "%.300s: %s", R->where, m);
    else snprintf(R->c->msg, sizeof R->c->msg, "%.300s, line %d: %s", R->c->name, R->line, m);
    longjmp(R->fail, 1);
}

static void *zt__jalloc(zt__jr *R, size_t n) {
    void *p = zt__jheap_alloc(&R->c->heap, n);
    if (!p) zt__jfail(R, "the template used more than %zu MiB", ZT__J_BYTES >> 20);
    return p;
}

static zt__jv *zt__jitems(zt__jr *R, int64_t n) {
    if (n < 0 || (uint64_t)n > ZT__J_BYTES / sizeof(zt__jv)) zt__jfail(R, "a list of %lld items is too long", (long long)n);
    return (zt__jv *)zt__jalloc(R, sizeof(zt__jv) * (size_t)(n ? n : 1));
}

static char *zt__jchars(zt__jr *R, int64_t n) {
    if (n < 0 || (uint64_t)n >= ZT__J_BYTES) zt__jfail(R, "a string of %lld bytes is too long", (long long)n);
    return (char *)zt__jalloc(R, (size_t)n + 1);
}

static zt__jv zt__jcat(zt__jr *R, const char *a, int64_t na, const char *b, int64_t nb) {
    char *s = zt__jchars(R, na + nb);
    if (na) memcpy(s, a, (size_t)na);
    if (nb) memcpy(s + na, b, (size_t)nb);
    s[na + nb] = 0;
    return zt__jstr(s, na + nb);
}

static zt__jv zt__jdict_new(zt__jr *R, int ns) {
    zt__jv v = zt__jnone();
    v.type = ZT__JDICT, v.sub = ns;
    v.u.d = (zt__jdict *)zt__jalloc(R, sizeof(zt__jdict));
    memset(v.u.d, 0, sizeof *v.u.d);
    return v;
}

static int zt__jstreq(const zt__jv *v, const char *s, int64_t n) {
    return v->type == ZT__JSTR && v->n == n && memcmp(v->u.s, s, (size_t)n) == 0;
}

static int64_t zt__jdict_find(const zt__jdict *d, const char *k, int64_t n) {
    for (int64_t i = 0; i < d->n; i++)
        if (zt__jstreq(&d->keys[i], k, n)) return i;
    return -1;
}

/* key after the others, for a key known to be new */
static void zt__jdict_append(zt__jr *R, zt__jdict *d, zt__jv key, zt__jv val) {
    if (d->n == d->cap) {
        int64_t cap = d->cap ? 2 * d->cap : 8;
        zt__jv *k = zt__jitems(R, cap), *v = zt__jitems(R, cap);
        if (d->n) memcpy(k, d->keys, sizeof(zt__jv) * (size_t)d->n), memcpy(v, d->vals, sizeof(zt__jv) * (size_t)d->n);
        d->keys = k, d->vals = v, d->cap = cap;
    }
    d->keys[d->n] = key, d->vals[d->n++] = val;
}

/* sets key (a string value) in d: a new key goes last, as Python's dict keeps order */
static int zt__jeq(zt__jr *R, const zt__jv *a, const zt__jv *b);
static void zt__jdict_set(zt__jr *R, zt__jdict *d, zt__jv key, zt__jv val) {
    int64_t i = key.type == ZT__JSTR ? zt__jdict_find(d, key.u.s, key.n) : -1;
    for (int64_t k = 0; key.type != ZT__JSTR && k < d->n && i < 0; k++) /* 1, 1.0 and true are one key, as in Python */
        if (zt__jeq(R, &d->keys[k], &key)) i = k;
    if (i >= 0) d->vals[i] = val;
    else zt__jdict_append(R, d, key, val);
}


static void zt__jdict_put(zt__jr *R, zt__jdict *d, const char *k, zt__jv val) {
    zt__jdict_set(R, d, zt__jstr(k, (int64_t)strlen(k)), val);
}

static int zt__jtruthy(const zt__jv *v) {
    switch (v->type) {
    case ZT__JBOOL: case ZT__JINT: return v->u.i != 0;
    case ZT__JFLOAT: return v->u.f != 0;
    case ZT__JSTR: case ZT__JLIST: return v->n != 0;
    case ZT__JDICT: return v->sub || v->u.d->n != 0;
    case ZT__JFN: case ZT__JMACRO: return 1;
    default: return 0;
    }
}

static const char *zt__jtype_name(const zt__jv *v) {
    static const char *const names[] = {"undefined", "none", "a boolean", "an integer", "a float", "a string",
                                        "a list", "a dict", "a function", "a macro"};
    if (v->type == ZT__JLIST && v->sub) return "a tuple";
    if (v->type == ZT__JDICT && v->sub) return "a namespace";
    return names[v->type];
}

/* code points of UTF-8 text, and the byte where code point k starts (n for k at the end) */
static int64_t zt__jcps(const char *s, int64_t n) {
    int64_t c = 0;
    for (int64_t i = 0; i < n; i++) c += ((uint8_t)s[i] & 0xc0) != 0x80;
    return c;
}
static int64_t zt__jcp_at(const char *s, int64_t n, int64_t k) {
    int64_t i = 0;
    for (; i < n; i++)
        if (((uint8_t)s[i] & 0xc0) != 0x80 && k-- == 0) return i;
    return n;
}

/* where each of the cps code points of s starts, and n at [cps]: indexing a string in one pass */
static int64_t *zt__jcp_starts(zt__jr *R, const char *s, int64_t n, int64_t cps) {
    int64_t *at = (int64_t *)zt__jalloc(R, sizeof(int64_t) * (size_t)(cps + 1)), k = 0;
    for (int64_t i = 0; i < n; i++)
        if (((uint8_t)s[i] & 0xc0) != 0x80 && k < cps) at[k++] = i;
    at[k] = n;
    return at;
}

/* work in proportion to n bytes (scanning a string) counts toward the step limit */
static void zt__jstep(zt__jr *R);
static void zt__jwork(zt__jr *R, int64_t n) {
    R->steps += n >> 5;
    zt__jstep(R);
}

static int64_t zt__jlen(zt__jr *R, const zt__jv *v) {
    if (v->type == ZT__JSTR) {
        zt__jwork(R, v->n);
        return zt__jcps(v->u.s, v->n);
    }
    if (v->type == ZT__JLIST) return v->n;
    if (v->type == ZT__JDICT) return v->u.d->n;
    if (v->type == ZT__JU) return 0;
    zt__jfail(R, "%s has no length", zt__jtype_name(v));
    return 0;
}

/* ---- printing: Python's str() and repr(), and json.dumps ---- */

typedef struct zt__jbuf { zt__jr *R; char *p; int64_t n, cap; } zt__jbuf;

static void zt__jput(zt__jbuf *b, const char *s, int64_t n) {
    if (n <= 0) return; /* nothing: a buffer never written stays NULL, read as "" */
    if (b->n + n + 1 > b->cap) {
        int64_t cap = ZT__MAX(2 * b->cap, b->n + n + 64);
        char *p = zt__jchars(b->R, cap);
        if (b->n) memcpy(p, b->p, (size_t)b->n);
        b->p = p, b->cap = cap;
    }
    memcpy(b->p + b->n, s, (size_t)n);
    b->n += n;
    b->p[b->n] = 0;
}
static void zt__jputs(zt__jbuf *b, const char *s) { zt__jput(b, s, (int64_t)strlen(s)); }

/* Python's repr of a float: the shortest digits that read back the same; fixed from 1e-4 up to 1e16 */
static void zt__jfloat_text(double f, char *out, size_t cap, int json) {
    if (f != f) { snprintf(out, cap, json ? "NaN" : "nan"); return; }
    if (f == INFINITY || f == -INFINITY) { snprintf(out, cap, "%s%s", f < 0 ? "-" : "", json ? "Infinity" : "inf"); return; }
    char e[40], dig[24];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(e, sizeof e, "%.*e", prec - 1, f);
        if (strtod(e, NULL) == f) break;
    }
    int neg = e[0] == '-', m = 0;
    char *p = e + neg;
    for (; *p && *p != 'e'; p++)
        if (*p != '.') dig[m++] = *p;
    while (m > 1 && dig[m - 1] == '0') m--;
    dig[m] = 0;
    int x = atoi(p + 1);
    size_t o = 0;
    if (neg) out[o++] = '-';
    if (x >= -4 && x < 16) {
        if (x < 0) {
            o += (size_t)snprintf(out + o, cap - o, "0.");
            for (int i = 0; i < -x - 1; i++) out[o++] = '0';
            snprintf(out + o, cap - o, "%s", dig);
        } else {
            for (int i = 0; i <= x; i++) out[o++] = i < m ? dig[i] : '0';
            snprintf(out + o, cap - o, ".%s", m > x + 1 ? dig + x + 1 : "0");
        }
    } else {
        out[o++] = dig[0];
        if (m > 1) o += (size_t)snprintf(out + o, cap - o, ".%s", dig + 1);
        snprintf(out + o, cap - o, "e%c%02d", x < 0 ? '-' : '+', x < 0 ? -x : x);
    }
}

static void zt__jrepr_str(zt__jbuf *b, const char *s, int64_t n) {
    int sq = memchr(s, '\'', (size_t)n) != NULL, dq = memchr(s, '"', (size_t)n) != NULL;
    char q = sq && !dq ? '"' : '\'';
    zt__jput(b, &q, 1);
    for (int64_t i = 0; i < n; i++) {
        char c = s[i], e[8];
        if (c == q || c == '\\') e[0] = '\\', e[1] = c, zt__jput(b, e, 2);
        else if (c == '\n') zt__jputs(b, "\\n");
        else if (c == '\r') zt__jputs(b, "\\r");
        else if (c == '\t') zt__jputs(b, "\\t");
        else if ((uint8_t)c < 0x20 || c == 0x7f) snprintf(e, sizeof e, "\\x%02x", (uint8_t)c), zt__jputs(b, e);
        else zt__jput(b, &c, 1);
    }
    zt__jput(b, &q, 1);
}

static void zt__jwrite(zt__jbuf *b, const zt__jv *v, int repr) {
    char num[64];
    if (b->R->depth > ZT__J_EVAL_DEPTH) zt__jfail(b->R, "a value printed is nested more than %d deep", ZT__J_EVAL_DEPTH);
    b->R->depth++;
    switch (v->type) {
    case ZT__JU:
        if (repr) zt__jputs(b, "Undefined");
        break;
    case ZT__JNONE: zt__jputs(b, "None"); break;
    case ZT__JBOOL: zt__jputs(b, v->u.i ? "True" : "False"); break;
    case ZT__JINT: snprintf(num, sizeof num, "%lld", (long long)v->u.i), zt__jputs(b, num); break;
    case ZT__JFLOAT: zt__jfloat_text(v->u.f, num, sizeof num, 0), zt__jputs(b, num); break;
    case ZT__JSTR:
        if (repr) zt__jrepr_str(b, v->u.s, v->n);
        else zt__jput(b, v->u.s, v->n);
        break;
    case ZT__JLIST:
        zt__jputs(b, v->sub ? "(" : "[");
        for (int64_t i = 0; i < v->n; i++) {
            if (i) zt__jputs(b, ", ");
            zt__jwrite(b, &v->u.items[i], 1);
        }
        zt__jputs(b, v->sub ? (v->n == 1 ? ",)" : ")") : "]");
        break;
    case ZT__JDICT:
        zt__jputs(b, v->sub ? "<Namespace {" : "{");
        for (int64_t i = 0; i < v->u.d->n; i++) {
            if (i) zt__jputs(b, ", ");
            zt__jwrite(b, &v->u.d->keys[i], 1);
            zt__jputs(b, ": ");
            zt__jwrite(b, &v->u.d->vals[i], 1);
        }
        zt__jputs(b, v->sub ? "}>" : "}");
        break;
    case ZT__JFN: zt__jputs(b, "<built-in function>"); break;
    default:
        zt__jputs(b, "<Macro '");
        zt__jput(b, v->u.macro->s, v->u.macro->n);
        zt__jputs(b, "'>");
    }
    b->R->depth--;
}

/* json.dumps(v, ensure_ascii=False, indent, separators, sort_keys), as transformers' tojson */
typedef struct zt__jjson {
    int pretty;                   /* indent given: newlines, and indent (n spaces or a string) per level */
    zt__jv indent;
    const char *item_sep, *key_sep;
    int sort, ascii;              /* sort_keys, ensure_ascii (\\uXXXX for all but ASCII) */
} zt__jjson;

static void zt__jjson_str(zt__jbuf *b, const char *s, int64_t n, int ascii) {
    zt__jputs(b, "\"");
    for (int64_t i = 0; i < n; i++) {
        char c = s[i], e[16];
        if (c == '"' || c == '\\') e[0] = '\\', e[1] = c, zt__jput(b, e, 2);
        else if (c == '\n') zt__jputs(b, "\\n");
        else if (c == '\r') zt__jputs(b, "\\r");
        else if (c == '\t') zt__jputs(b, "\\t");
        else if (c == '\b') zt__jputs(b, "\\b");
        else if (c == '\f') zt__jputs(b, "\\f");
        else if ((uint8_t)c < 0x20) snprintf(e, sizeof e, "\\u%04x", (uint8_t)c), zt__jputs(b, e);
        else if (ascii && ((uint8_t)c & 0x80)) { /* a code point as \\uXXXX, beyond the BMP as its surrogate pair */
            int len;
            uint32_t cp = zt__utf8(s, (size_t)n, (size_t)i, &len);
            if (cp >= 0x10000) snprintf(e, sizeof e, "\\u%04x\\u%04x", 0xd800 + ((cp - 0x10000) >> 10), 0xdc00 + ((cp - 0x10000) & 0x3ff));
            else snprintf(e, sizeof e, "\\u%04x", cp);
            zt__jputs(b, e);
            i += len - 1;
        } else zt__jput(b, &c, 1);
    }
    zt__jputs(b, "\"");
}

static void zt__jjson_nl(zt__jbuf *b, const zt__jjson *o, int level) {
    zt__jputs(b, "\n");
    for (int i = 0; i < level; i++) {
        if (o->indent.type == ZT__JSTR) zt__jput(b, o->indent.u.s, o->indent.n);
        else for (int64_t k = 0; k < o->indent.u.i; k++) zt__jputs(b, " ");
    }
}

static int zt__jstr_cmp(const zt__jv *a, const zt__jv *b) {
    int c = memcmp(a->u.s, b->u.s, (size_t)(a->n < b->n ? a->n : b->n));
    return c ? c : (a->n > b->n) - (a->n < b->n);
}

static void zt__jjson_write(zt__jbuf *b, const zt__jv *v, const zt__jjson *o, int level) {
    zt__jr *R = b->R;
    if (++R->depth > ZT__J_EVAL_DEPTH) zt__jfail(R, "tojson: nested more than %d deep", ZT__J_EVAL_DEPTH);
    char num[64];
    switch (v->type) {
    case ZT__JNONE: zt__jputs(b, "null"); break;
    case ZT__JBOOL: zt__jputs(b, v->u.i ? "true" : "false"); break;
    case ZT__JINT: snprintf(num, sizeof num, "%lld", (long long)v->u.i), zt__jputs(b, num); break;
    case ZT__JFLOAT: zt__jfloat_text(v->u.f, num, sizeof num, 1), zt__jputs(b, num); break;
    case ZT__JSTR: zt__jjson_str(b, v->u.s, v->n, o->ascii); break;
    case ZT__JLIST:
        zt__jputs(b, "[");
        for (int64_t i = 0; i < v->n; i++) {
            if (i) zt__jputs(b, o->item_sep);
            if (o->pretty) zt__jjson_nl(b, o, level + 1);
            zt__jjson_write(b, &v->u.items[i], o, level + 1);
        }
        if (o->pretty && v->n) zt__jjson_nl(b, o, level);
        zt__jputs(b, "]");
        break;
    case ZT__JDICT: {
        if (v->sub) zt__jfail(R, "tojson: a namespace is not JSON");
        const zt__jdict *d = v->u.d;
        int64_t *order = (int64_t *)zt__jalloc(R, sizeof(int64_t) * (size_t)(d->n + 1));
        zt__jv *keys = zt__jitems(R, d->n); /* as json.dumps writes them: numbers, true, false and null as strings */
        for (int64_t i = 0; i < d->n; i++) {
            const zt__jv *k = &d->keys[i];
            if (k->type == ZT__JSTR) {
                keys[i] = *k;
            } else if (k->type == ZT__JNONE || k->type == ZT__JBOOL || k->type == ZT__JINT || k->type == ZT__JFLOAT) {
                zt__jbuf kb = {R, NULL, 0, 0};
                zt__jjson_write(&kb, k, o, 0);
                keys[i] = zt__jstr(kb.p, kb.n);
            } else {
                zt__jfail(R, "tojson: a key is %s, not a string", zt__jtype_name(k));
            }
            order[i] = i;
        }
        for (int64_t i = 1; o->sort && i < d->n; i++) /* insertion sort: dicts in templates are small */
            for (int64_t k = i; k > 0 && zt__jstr_cmp(&keys[order[k - 1]], &keys[order[k]]) > 0; k--) {
                int64_t t = order[k];
                order[k] = order[k - 1], order[k - 1] = t;
            }
        zt__jputs(b, "{");
        for (int64_t i = 0; i < d->n; i++) {
            if (i) zt__jputs(b, o->item_sep);
            if (o->pretty) zt__jjson_nl(b, o, level + 1);
            zt__jjson_str(b, keys[order[i]].u.s, keys[order[i]].n, o->ascii);
            zt__jputs(b, o->key_sep);
            zt__jjson_write(b, &d->vals[order[i]], o, level + 1);
        }
        if (o->pretty && d->n) zt__jjson_nl(b, o, level);
        zt__jputs(b, "}");
        break;
    }
    default: zt__jfail(R, "tojson: %s is not JSON", zt__jtype_name(v));
    }
    R->depth--;
}

static zt__jv zt__jto_str(zt__jr *R, const zt__jv *v) {
    if (v->type == ZT__JSTR) return *v;
    zt__jbuf b = {R, NULL, 0, 0};
    zt__jwrite(&b, v, 0);
    return b.p ? zt__jstr(b.p, b.n) : zt__jstr("", 0);
}

/* ---- values from JSON ---- */

static zt__jv zt__jfrom_json(zt__jr *R, const zt__json *j, int *t) {
    const jsmntok_t *k = &j->tok[*t];
    const char *s = j->text + k->start;
    int n = k->end - k->start;
    (*t)++;
    if (k->type == JSMN_STRING) {
        char *out = zt__jchars(R, n);
        int64_t len = zt__json_text(j, (int)(k - j->tok), out, (size_t)n + 1);
        if (len < 0) zt__jfail(R, "an unreadable JSON string");
        out[len] = 0;
        return zt__jstr(out, len);
    }
    if (k->type == JSMN_PRIMITIVE) {
        if (s[0] == 't') return zt__jbool(1);
        if (s[0] == 'f') return zt__jbool(0);
        if (s[0] == 'n') return zt__jnone();
        char num[64];
        snprintf(num, sizeof num, "%.*s", n < 63 ? n : 63, s);
        int integral = !strpbrk(num, ".eE");
        double f = strtod(num, NULL);
        errno = 0;
        long long iv = integral ? strtoll(num, NULL, 10) : 0;
        if (integral && errno != ERANGE) return zt__jint(iv);
        return zt__jfloat(f);
    }
    if (k->type == JSMN_ARRAY) {
        zt__jv *items = zt__jitems(R, k->size);
        for (int i = 0; i < k->size; i++) items[i] = zt__jfrom_json(R, j, t);
        return zt__jlist(items, k->size);
    }
    zt__jv d = zt__jdict_new(R, 0);
    for (int i = 0; i < k->size; i++) {
        zt__jv key = zt__jfrom_json(R, j, t);
        zt__jv val = zt__jfrom_json(R, j, t);
        zt__jdict_append(R, d.u.d, key, val); /* the reader refused duplicate keys: no search */
    }
    return d;
}

/* the filters and tests zt knows, by name (aliases share an id) */
typedef enum zt__jfilter_id {
    ZT__FL_TRIM, ZT__FL_LENGTH, ZT__FL_TOJSON, ZT__FL_UPPER, ZT__FL_LOWER, ZT__FL_TITLE, ZT__FL_CAPITALIZE,
    ZT__FL_DEFAULT, ZT__FL_FIRST, ZT__FL_LAST, ZT__FL_JOIN, ZT__FL_STRING, ZT__FL_SAFE, ZT__FL_INT, ZT__FL_FLOAT,
    ZT__FL_LIST, ZT__FL_REVERSE, ZT__FL_ITEMS, ZT__FL_MAP, ZT__FL_SELECT, ZT__FL_REJECT, ZT__FL_SELECTATTR,
    ZT__FL_REJECTATTR, ZT__FL_REPLACE, ZT__FL_INDENT, ZT__FL_ABS, ZT__FL_ROUND, ZT__FL_UNIQUE, ZT__FL_SUM, ZT__FL_MIN,
    ZT__FL_MAX, ZT__FL_SORT, ZT__FL_DICTSORT, ZT__FL_WORDCOUNT
} zt__jfilter_id;
typedef struct zt__jname_id { const char *name; int id; } zt__jname_id;
static const zt__jname_id zt__jfilters[] = {
    {"trim", ZT__FL_TRIM}, {"length", ZT__FL_LENGTH}, {"count", ZT__FL_LENGTH}, {"tojson", ZT__FL_TOJSON},
    {"upper", ZT__FL_UPPER}, {"lower", ZT__FL_LOWER}, {"title", ZT__FL_TITLE}, {"capitalize", ZT__FL_CAPITALIZE},
    {"default", ZT__FL_DEFAULT}, {"d", ZT__FL_DEFAULT}, {"first", ZT__FL_FIRST}, {"last", ZT__FL_LAST},
    {"join", ZT__FL_JOIN}, {"string", ZT__FL_STRING}, {"safe", ZT__FL_SAFE}, {"int", ZT__FL_INT},
    {"float", ZT__FL_FLOAT}, {"list", ZT__FL_LIST}, {"reverse", ZT__FL_REVERSE}, {"items", ZT__FL_ITEMS},
    {"map", ZT__FL_MAP}, {"select", ZT__FL_SELECT}, {"reject", ZT__FL_REJECT}, {"selectattr", ZT__FL_SELECTATTR},
    {"rejectattr", ZT__FL_REJECTATTR}, {"replace", ZT__FL_REPLACE}, {"indent", ZT__FL_INDENT}, {"abs", ZT__FL_ABS},
    {"round", ZT__FL_ROUND}, {"unique", ZT__FL_UNIQUE}, {"sum", ZT__FL_SUM}, {"min", ZT__FL_MIN}, {"max", ZT__FL_MAX},
    {"sort", ZT__FL_SORT}, {"dictsort", ZT__FL_DICTSORT}, {"wordcount", ZT__FL_WORDCOUNT}};
typedef enum zt__jtest_id {
    ZT__IS_DEFINED, ZT__IS_UNDEFINED, ZT__IS_NONE, ZT__IS_STRING, ZT__IS_NUMBER, ZT__IS_INTEGER, ZT__IS_FLOAT,
    ZT__IS_MAPPING, ZT__IS_ITERABLE, ZT__IS_SEQUENCE, ZT__IS_BOOLEAN, ZT__IS_TRUE, ZT__IS_FALSE, ZT__IS_EVEN, ZT__IS_ODD,
    ZT__IS_LOWER, ZT__IS_UPPER, ZT__IS_CALLABLE,
    ZT__IS_DIVISIBLEBY, ZT__IS_IN, ZT__IS_EQ, ZT__IS_NE, ZT__IS_LT, ZT__IS_LE, ZT__IS_GT, ZT__IS_GE, ZT__IS_SAMEAS
} zt__jtest_id; /* from ZT__IS_DIVISIBLEBY on, a test takes an argument */
static const zt__jname_id zt__jtests[] = {
    {"defined", ZT__IS_DEFINED}, {"undefined", ZT__IS_UNDEFINED}, {"none", ZT__IS_NONE}, {"string", ZT__IS_STRING},
    {"number", ZT__IS_NUMBER}, {"integer", ZT__IS_INTEGER}, {"float", ZT__IS_FLOAT}, {"mapping", ZT__IS_MAPPING},
    {"iterable", ZT__IS_ITERABLE}, {"sequence", ZT__IS_SEQUENCE}, {"boolean", ZT__IS_BOOLEAN}, {"true", ZT__IS_TRUE},
    {"false", ZT__IS_FALSE}, {"even", ZT__IS_EVEN}, {"odd", ZT__IS_ODD}, {"lower", ZT__IS_LOWER}, {"upper", ZT__IS_UPPER},
    {"callable", ZT__IS_CALLABLE}, {"divisibleby", ZT__IS_DIVISIBLEBY}, {"in", ZT__IS_IN}, {"eq", ZT__IS_EQ},
    {"equalto", ZT__IS_EQ}, {"==", ZT__IS_EQ}, {"ne", ZT__IS_NE}, {"!=", ZT__IS_NE}, {"lt", ZT__IS_LT},
    {"lessthan", ZT__IS_LT}, {"<", ZT__IS_LT}, {"le", ZT__IS_LE}, {"<=", ZT__IS_LE}, {"gt", ZT__IS_GT},
    {"greaterthan", ZT__IS_GT}, {">", ZT__IS_GT}, {"ge", ZT__IS_GE}, {">=", ZT__IS_GE}, {"sameas", ZT__IS_SAMEAS}};

static int zt__jfind_id(const zt__jname_id *table, int n, const char *s, int64_t len) {
    for (int i = 0; i < n; i++)
        if ((int64_t)strlen(table[i].name) == len && memcmp(table[i].name, s, (size_t)len) == 0) return table[i].id;
    return -1;
}

/* ---- lexing: text, and the tokens inside {{ }} and {% %}, with Jinja's white-space rules ---- */

/* Python's str.isspace, for strip() and split() */
static int zt__jspace_at(const char *s, int64_t n, int64_t i, int *len) {
    uint32_t c = zt__utf8(s, (size_t)n, (size_t)i, len);
    return (c >= 0x1c && c <= 0x1f) || zt__is_space(c);
}

/* the end of s[from, end) once the white space at its end is gone (Unicode's too, as Python's rstrip) */
static size_t zt__jrstrip(const char *s, size_t from, size_t end) {
    while (end > from) {
        size_t p = end - 1;
        while (p > from && ((uint8_t)s[p] & 0xc0) == 0x80) p--;
        int len;
        if (!zt__jspace_at(s, (int64_t)end, (int64_t)p, &len) || p + (size_t)len != end) break;
        end = p;
    }
    return end;
}

/* past the white space at s[i] (what "-%}" strips), counting its lines; *newline: it ended with one */
static size_t zt__jlstrip(const char *s, size_t n, size_t i, int *line, int *newline) {
    int len;
    while (i < n && zt__jspace_at(s, (int64_t)n, (int64_t)i, &len)) {
        *newline = s[i] == '\n';
        *line += s[i] == '\n';
        i += (size_t)len;
    }
    return i;
}

ZT_NORETURN static void zt__jperr(zt_chat_template *c, int line, const char *fmt, ...) ZT_PRINTF(3, 4);
static void zt__jperr(zt_chat_template *c, int line, const char *fmt, ...) {
    char m[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    snprintf(c->msg, sizeof c->msg, "%.300s, line %d: %s", c->name, line, m);
    longjmp(c->fail, 1);
}

static void *zt__jcode(zt_chat_template *c, size_t n) {
    void *p = zt__jheap_alloc(&c->code, n);
    if (!p) zt__jperr(c, 0, "the template is too large");
    memset(p, 0, n);
    return p;
}

static zt__jtok *zt__jemit(zt_chat_template *c, int kind, int line, const char *s, int64_t n) {
    if (c->ntok == c->tok_cap) {
        int64_t cap = c->tok_cap ? 2 * c->tok_cap : 256;
        zt__jtok *t = (zt__jtok *)realloc(c->tok, sizeof(zt__jtok) * (size_t)cap);
        if (!t) zt__jperr(c, line, "out of memory");
        c->tok = t, c->tok_cap = cap;
    }
    zt__jtok *t = &c->tok[c->ntok++];
    memset(t, 0, sizeof *t);
    t->kind = kind, t->line = line, t->s = s, t->n = n;
    return t;
}

static int zt__jws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

static int zt__jlines(const char *s, size_t n) {
    int l = 0;
    for (size_t i = 0; i < n; i++) l += s[i] == '\n';
    return l;
}

/* a string literal at s[i] (quote q) into the code heap, Python's escapes decoded; returns its end */
static size_t zt__jlex_string(zt_chat_template *c, const char *s, size_t n, size_t i, int line, zt__jtok *t) {
    char q = s[i++];
    size_t end = i; /* the closing quote first: the decoded text is never longer than the literal */
    while (end < n && s[end] != q) end += s[end] == '\\' ? 2 : 1;
    char *out = (char *)zt__jcode(c, (end < n ? end : n) - i + 1);
    int64_t o = 0;
    for (; i < n && s[i] != q; i++) {
        if (s[i] != '\\' || i + 1 >= n) {
            out[o++] = s[i];
            continue;
        }
        char e = s[++i];
        if (e == '\n') continue; /* a line continued */
        const char *simple = strchr("nrtbfva\\'\"", e);
        if (simple && e) {
            static const char map[] = "\n\r\t\b\f\v\a\\'\"";
            out[o++] = map[simple - "nrtbfva\\'\""];
        } else if (e == 'x' || e == 'u' || e == 'U') {
            int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            uint32_t cp = 0;
            for (int k = 0; k < digits; k++) {
                char h = i + 1 + (size_t)k < n ? s[i + 1 + (size_t)k] : 0;
                int v = h >= '0' && h <= '9' ? h - '0' : (h | 32) >= 'a' && (h | 32) <= 'f' ? (h | 32) - 'a' + 10 : -1;
                if (v < 0) zt__jperr(c, line, "a \\%c escape needs %d hex digits", e, digits);
                cp = cp * 16 + (uint32_t)v;
            }
            if (cp > 0x10ffff) zt__jperr(c, line, "\\%c escape beyond Unicode", e);
            i += (size_t)digits;
            o += zt__put_utf8(out + o, cp);
        } else if (e >= '0' && e <= '7') {
            uint32_t cp = 0;
            for (int k = 0; k < 3 && i < n && s[i] >= '0' && s[i] <= '7'; k++) cp = cp * 8 + (uint32_t)(s[i++] - '0');
            i--;
            o += zt__put_utf8(out + o, cp);
        } else {
            out[o++] = '\\', out[o++] = e; /* Python keeps an unknown escape as it is */
        }
    }
    if (i >= n) zt__jperr(c, line, "a string that does not end");
    out[o] = 0;
    t->v = zt__jstr(out, o);
    return i + 1;
}

/* past the digits at s[i]: \d+(_\d+)*, as Python writes numbers */
static size_t zt__jdigits(const char *s, size_t n, size_t i) {
    while (i < n && ((s[i] >= '0' && s[i] <= '9') || (s[i] == '_' && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '9'))) i++;
    return i;
}

/* the tokens of one {{ }} or {% %}, from s[i]; returns the end of its closing delimiter */
static size_t zt__jlex_tag(zt_chat_template *c, size_t i, int *line, int block, int *ended_newline) {
    const char *s = c->src;
    size_t n = c->n;
    char stack[ZT__J_DEPTH];
    int depth = 0;
    for (;;) {
        while (i < n && zt__jws(s[i])) *line += s[i++] == '\n';
        if (i >= n) zt__jperr(c, *line, "a %s that does not end", block ? "{% tag %}" : "{{ expression }}");
        char ch = s[i], d1 = i + 1 < n ? s[i + 1] : 0, d2 = i + 2 < n ? s[i + 2] : 0;
        char close = block ? '%' : '}';
        int sign = (ch == '-' || (block && ch == '+')) && d1 == close && d2 == '}';
        if (depth == 0 && (sign || (ch == close && d1 == '}'))) {
            zt__jemit(c, block ? ZT__T_BEND : ZT__T_VEND, *line, NULL, 0);
            i += 2 + (size_t)sign;
            *ended_newline = 0;
            if (sign && ch == '-') {
                i = zt__jlstrip(s, n, i, line, ended_newline);
            } else if (block && !sign && i < n && s[i] == '\n') { /* trim_blocks */
                i++, (*line)++, *ended_newline = 1;
            }
            return i;
        }
        if (ch == '"' || ch == '\'') {
            zt__jtok *t = zt__jemit(c, ZT__T_STR, *line, s + i, 0);
            size_t e = zt__jlex_string(c, s, n, i, *line, t);
            *line += zt__jlines(s + i, e - i);
            i = e;
        } else if (ch >= '0' && ch <= '9') {
            size_t k = zt__jdigits(s, n, i);
            int fl = 0, after_dot = i > 0 && s[i - 1] == '.';
            if (!after_dot && k + 1 < n && s[k] == '.' && s[k + 1] >= '0' && s[k + 1] <= '9') fl = 1, k = zt__jdigits(s, n, k + 1);
            if (k < n && (s[k] == 'e' || s[k] == 'E')) {
                size_t x = k + 1 + (k + 1 < n && (s[k + 1] == '+' || s[k + 1] == '-'));
                if (x < n && s[x] >= '0' && s[x] <= '9') {
                    fl = 1, k = x;
                    while (k < n && s[k] >= '0' && s[k] <= '9') k++;
                }
            }
            char num[64];
            size_t m = 0;
            for (size_t q = i; q < k && m < sizeof num - 1; q++)
                if (s[q] != '_') num[m++] = s[q];
            num[m] = 0;
            zt__jtok *t = zt__jemit(c, ZT__T_NUM, *line, s + i, (int64_t)(k - i));
            double f = strtod(num, NULL);
            errno = 0;
            long long iv = fl ? 0 : strtoll(num, NULL, 10);
            t->v = fl || errno == ERANGE ? zt__jfloat(f) : zt__jint(iv); /* past int64: a float */
            i = k;
        } else if (((ch | 32) >= 'a' && (ch | 32) <= 'z') || ch == '_') {
            size_t k = i;
            while (k < n && (((s[k] | 32) >= 'a' && (s[k] | 32) <= 'z') || (s[k] >= '0' && s[k] <= '9') || s[k] == '_')) k++;
            zt__jemit(c, ZT__T_NAME, *line, s + i, (int64_t)(k - i));
            i = k;
        } else {
            static const char *const two[] = {"//", "**", "==", "!=", "<=", ">="};
            int len = 0;
            for (int k = 0; k < 6 && !len; k++)
                if (ch == two[k][0] && d1 == two[k][1]) len = 2;
            if (!len && strchr("+-*/%~<>=()[]{},.:|", ch) && ch) len = 1;
            if (!len) zt__jperr(c, *line, "unexpected character '%c'", ch);
            if (strchr("([{", ch) && len == 1) {
                if (depth == ZT__J_DEPTH) zt__jperr(c, *line, "brackets nested more than %d deep", ZT__J_DEPTH);
                stack[depth++] = ch == '(' ? ')' : ch == '[' ? ']' : '}';
            } else if (strchr(")]}", ch) && len == 1) {
                if (depth == 0 || stack[depth - 1] != ch) zt__jperr(c, *line, "unexpected '%c'", ch);
                depth--;
            }
            zt__jemit(c, ZT__T_OP, *line, s + i, len);
            i += (size_t)len;
        }
    }
}

/* the end of the text s[i, j) before a tag of kind ('{', '%', '#') and sign ('-', '+' or 0), after
   the tag's white-space rule: "-" strips all of it, lstrip_blocks the blanks of a block tag alone on its line */
static size_t zt__jtext_end(const char *s, size_t i, size_t j, char kind, char sign, int line_starting) {
    if (sign == '-') return zt__jrstrip(s, i, j);
    if (sign == '+' || kind == '{') return j;
    size_t l = j;
    while (l > i && s[l - 1] != '\n') l--;
    return zt__jrstrip(s, l, j) == l && (l > i || line_starting) ? l : j;
}

/* a {% raw %} or {% endraw %} tag (word) from s[i], just after its "{%" and sign: the end of its "%}", or 0 */
static size_t zt__jraw_tag(const char *s, size_t n, size_t i, const char *word, char *right) {
    size_t w = strlen(word);
    while (i < n && zt__jws(s[i])) i++;
    if (i + w > n || memcmp(s + i, word, w) != 0) return 0;
    i += w;
    while (i < n && zt__jws(s[i])) i++;
    *right = i < n && (s[i] == '-' || s[i] == '+') ? s[i] : 0;
    i += *right != 0;
    return i + 1 < n && s[i] == '%' && s[i + 1] == '}' ? i + 2 : 0;
}

/* after a block tag's "%}": "-" strips the white space that follows, else trim_blocks one newline */
static size_t zt__jafter_block(const char *s, size_t n, size_t i, char right, int *line, int *line_starting) {
    *line_starting = 0;
    if (right == '-') return zt__jlstrip(s, n, i, line, line_starting);
    if (right == '+' || i >= n || s[i] != '\n') return i;
    (*line)++;
    *line_starting = 1;
    return i + 1;
}

static void zt__jlex(zt_chat_template *c) {
    const char *s = c->src;
    size_t n = c->n, i = 0;
    int line = 1, line_starting = 1;
    while (i < n) {
        size_t j = i;
        while (j + 1 < n && !(s[j] == '{' && (s[j + 1] == '{' || s[j + 1] == '%' || s[j + 1] == '#'))) j++;
        if (j + 1 >= n) j = n;
        char kind = j < n ? s[j + 1] : 0, sign = j + 2 < n && (s[j + 2] == '-' || s[j + 2] == '+') ? s[j + 2] : 0;
        size_t end = j < n ? zt__jtext_end(s, i, j, kind, sign, line_starting) : j;
        if (end > i) zt__jemit(c, ZT__T_TEXT, line, s + i, (int64_t)(end - i));
        line += zt__jlines(s + i, j - i);
        if (j >= n) break;
        i = j + 2 + (sign != 0);
        char right = 0;
        size_t k = kind == '%' ? zt__jraw_tag(s, n, i, "raw", &right) : 0;
        if (k) { /* {% raw %}...{% endraw %}: text as it is */
            size_t from = zt__jafter_block(s, n, k, right, &line, &line_starting), e = from, close = 0;
            char esign = 0;
            for (; e + 1 < n && !close; e++) {
                if (s[e] != '{' || s[e + 1] != '%') continue;
                esign = e + 2 < n && (s[e + 2] == '-' || s[e + 2] == '+') ? s[e + 2] : 0;
                close = zt__jraw_tag(s, n, e + 2 + (esign != 0), "endraw", &right);
            }
            if (!close) zt__jperr(c, line, "a {%% raw %%} block that does not end");
            e--;
            size_t text_end = zt__jtext_end(s, from, e, '%', esign, line_starting);
            if (text_end > from) zt__jemit(c, ZT__T_TEXT, line, s + from, (int64_t)(text_end - from));
            line += zt__jlines(s + from, close - from);
            i = zt__jafter_block(s, n, close, right, &line, &line_starting);
            continue;
        }
        if (kind == '#') {
            k = i;
            while (k + 1 < n && !(s[k] == '#' && s[k + 1] == '}')) k++;
            if (k + 1 >= n) zt__jperr(c, line, "a {# comment #} that does not end");
            char cright = k > i && (s[k - 1] == '-' || s[k - 1] == '+') ? s[k - 1] : 0;
            line += zt__jlines(s + i, k - i);
            i = zt__jafter_block(s, n, k + 2, cright, &line, &line_starting);
            continue;
        }
        zt__jemit(c, kind == '%' ? ZT__T_BBEGIN : ZT__T_VBEGIN, line, NULL, 0);
        i = zt__jlex_tag(c, i, &line, kind == '%', &line_starting);
    }
    zt__jemit(c, ZT__T_EOF, line, NULL, 0);
}

/* ---- parsing: Jinja's grammar, by recursive descent ---- */

static zt__jtok *zt__jpeek(zt_chat_template *c) { return &c->tok[c->at]; }
static zt__jtok *zt__jnext(zt_chat_template *c) {
    zt__jtok *t = &c->tok[c->at];
    if (t->kind != ZT__T_EOF) c->at++;
    return t;
}
static int zt__jis(const zt__jtok *t, int kind, const char *s) {
    return t->kind == kind && (!s || ((size_t)t->n == strlen(s) && memcmp(t->s, s, (size_t)t->n) == 0));
}
static int zt__jaccept(zt_chat_template *c, int kind, const char *s) {
    if (!zt__jis(zt__jpeek(c), kind, s)) return 0;
    zt__jnext(c);
    return 1;
}

static void zt__jwhat(const zt__jtok *t, char *out, size_t cap) {
    static const char *const kinds[] = {"text", "'{{'", "'}}'", "'{%'", "'%}'", "name", "string", "number", "", "the end of the template"};
    if (t->kind == ZT__T_NAME || t->kind == ZT__T_OP || t->kind == ZT__T_NUM) snprintf(out, cap, "'%.*s'", (int)(t->n < 40 ? t->n : 40), t->s);
    else snprintf(out, cap, "%s", kinds[t->kind]);
}

static void zt__jexpect(zt_chat_template *c, int kind, const char *s, const char *what) {
    zt__jtok *t = zt__jpeek(c);
    if (zt__jis(t, kind, s)) {
        zt__jnext(c);
        return;
    }
    char found[64];
    zt__jwhat(t, found, sizeof found);
    zt__jperr(c, t->line, "expected %s, found %s", what, found);
}

static zt__jn *zt__jnode(zt_chat_template *c, int kind, int line) {
    zt__jn *e = (zt__jn *)zt__jcode(c, sizeof(zt__jn));
    e->kind = kind, e->line = line;
    return e;
}

static zt__jn *zt__jparse_expr(zt_chat_template *c);
static zt__jn *zt__jparse_unary(zt_chat_template *c, int with_filter);
static zt__jn *zt__jparse_or(zt_chat_template *c);

static void zt__jenter(zt_chat_template *c, int line) {
    if (++c->depth > ZT__J_DEPTH) zt__jperr(c, line, "nested more than %d deep", ZT__J_DEPTH);
}

/* (args) of a call, a filter or a test: positional, then name=value */
static zt__jn *zt__jparse_args(zt_chat_template *c) {
    zt__jn *head = NULL, **tail = &head;
    while (!zt__jis(zt__jpeek(c), ZT__T_OP, ")")) {
        if (head) zt__jexpect(c, ZT__T_OP, ",", "',' or ')'");
        if (zt__jis(zt__jpeek(c), ZT__T_OP, ")")) break;
        zt__jtok *t = zt__jpeek(c);
        zt__jn *arg;
        if (t->kind == ZT__T_NAME && zt__jis(&c->tok[c->at + 1], ZT__T_OP, "=")) {
            c->at += 2;
            arg = zt__jnode(c, ZT__N_KWARG, t->line);
            arg->s = t->s, arg->n = t->n, arg->a = zt__jparse_expr(c);
        } else {
            arg = zt__jparse_expr(c);
        }
        *tail = arg, tail = &arg->next;
    }
    zt__jnext(c);
    return head;
}

static zt__jn *zt__jparse_primary(zt_chat_template *c) {
    zt__jtok *t = zt__jnext(c);
    zt__jn *e;
    if (t->kind == ZT__T_NAME) {
        static const char *const lits[] = {"true", "True", "false", "False", "none", "None"};
        for (int k = 0; k < 6; k++)
            if (zt__jis(t, ZT__T_NAME, lits[k])) {
                e = zt__jnode(c, ZT__N_CONST, t->line);
                e->v = k < 4 ? zt__jbool(k < 2) : zt__jnone();
                return e;
            }
        e = zt__jnode(c, ZT__N_NAME, t->line);
        e->s = t->s, e->n = t->n;
        return e;
    }
    if (t->kind == ZT__T_STR) { /* adjacent strings are one */
        e = zt__jnode(c, ZT__N_CONST, t->line);
        e->v = t->v;
        while (zt__jpeek(c)->kind == ZT__T_STR) {
            zt__jtok *u = zt__jnext(c);
            char *s = (char *)zt__jcode(c, (size_t)(e->v.n + u->v.n + 1));
            memcpy(s, e->v.u.s, (size_t)e->v.n), memcpy(s + e->v.n, u->v.u.s, (size_t)u->v.n);
            e->v = zt__jstr(s, e->v.n + u->v.n);
        }
        return e;
    }
    if (t->kind == ZT__T_NUM) {
        e = zt__jnode(c, ZT__N_CONST, t->line);
        e->v = t->v;
        return e;
    }
    if (zt__jis(t, ZT__T_OP, "(")) { /* (x), or a tuple */
        if (zt__jaccept(c, ZT__T_OP, ")")) return zt__jnode(c, ZT__N_TUPLE, t->line);
        zt__jn *first = zt__jparse_expr(c);
        if (zt__jaccept(c, ZT__T_OP, ")")) return first;
        e = zt__jnode(c, ZT__N_TUPLE, t->line);
        e->b = first;
        zt__jn **tail = &first->next;
        while (zt__jaccept(c, ZT__T_OP, ",")) {
            if (zt__jis(zt__jpeek(c), ZT__T_OP, ")")) break;
            *tail = zt__jparse_expr(c), tail = &(*tail)->next;
        }
        zt__jexpect(c, ZT__T_OP, ")", "')'");
        return e;
    }
    if (zt__jis(t, ZT__T_OP, "[") || zt__jis(t, ZT__T_OP, "{")) {
        int dict = t->s[0] == '{';
        const char *close = dict ? "}" : "]";
        e = zt__jnode(c, dict ? ZT__N_DICT : ZT__N_LIST, t->line);
        zt__jn **tail = &e->b;
        while (!zt__jaccept(c, ZT__T_OP, close)) {
            if (e->b) zt__jexpect(c, ZT__T_OP, ",", dict ? "',' or '}'" : "',' or ']'");
            if (zt__jaccept(c, ZT__T_OP, close)) break;
            zt__jn *item = zt__jparse_expr(c);
            if (dict) {
                zt__jn *pair = zt__jnode(c, ZT__N_PAIR, item->line);
                zt__jexpect(c, ZT__T_OP, ":", "':'");
                pair->a = item, pair->b = zt__jparse_expr(c);
                item = pair;
            }
            *tail = item, tail = &item->next;
        }
        return e;
    }
    char found[64];
    zt__jwhat(t, found, sizeof found);
    zt__jperr(c, t->line, "expected an expression, found %s", found);
    return NULL;
}

/* .name, [index], [a:b:c] and (args) after a primary */
static zt__jn *zt__jparse_postfix(zt_chat_template *c, zt__jn *e) {
    for (;;) {
        zt__jtok *t = zt__jpeek(c);
        if (zt__jaccept(c, ZT__T_OP, ".")) {
            zt__jtok *name = zt__jnext(c);
            if (name->kind != ZT__T_NAME && !(name->kind == ZT__T_NUM && name->v.type == ZT__JINT))
                zt__jperr(c, t->line, "expected a name after '.'");
            zt__jn *x = zt__jnode(c, name->kind == ZT__T_NUM ? ZT__N_INDEX : ZT__N_ATTR, t->line);
            x->a = e, x->s = name->s, x->n = name->n;
            if (name->kind == ZT__T_NUM) { /* x.0 is x[0], as Jinja reads it */
                x->b = zt__jnode(c, ZT__N_CONST, t->line);
                x->b->v = name->v;
            }
            e = x;
        } else if (zt__jaccept(c, ZT__T_OP, "[")) {
            zt__jn *parts[3] = {NULL, NULL, NULL};
            int colons = 0;
            for (;;) {
                if (zt__jis(zt__jpeek(c), ZT__T_OP, ":")) {
                    if (++colons > 2) zt__jperr(c, t->line, "a slice has at most two ':'");
                    zt__jnext(c);
                } else if (zt__jis(zt__jpeek(c), ZT__T_OP, "]")) {
                    break;
                } else {
                    if (parts[colons]) zt__jexpect(c, ZT__T_OP, "]", "']'");
                    parts[colons] = zt__jparse_expr(c);
                }
            }
            zt__jnext(c);
            zt__jn *x = zt__jnode(c, colons ? ZT__N_SLICE : ZT__N_INDEX, t->line);
            if (!colons && !parts[0]) zt__jperr(c, t->line, "an empty []");
            x->a = e, x->b = parts[0], x->c = parts[1], x->d = parts[2];
            e = x;
        } else if (zt__jaccept(c, ZT__T_OP, "(")) {
            zt__jn *x = zt__jnode(c, ZT__N_CALL, t->line);
            x->a = e, x->b = zt__jparse_args(c);
            e = x;
        } else {
            return e;
        }
    }
}

/* | filter(args) and "is [not] test" after a unary expression */
static zt__jn *zt__jparse_filters(zt_chat_template *c, zt__jn *e) {
    for (;;) {
        zt__jtok *t = zt__jpeek(c);
        if (zt__jaccept(c, ZT__T_OP, "|")) {
            zt__jtok *name = zt__jnext(c);
            if (name->kind != ZT__T_NAME) zt__jperr(c, t->line, "expected a filter's name after '|'");
            zt__jn *x = zt__jnode(c, ZT__N_FILTER, t->line);
            x->a = e, x->s = name->s, x->n = name->n;
            if (zt__jaccept(c, ZT__T_OP, "(")) x->b = zt__jparse_args(c);
            e = x;
        } else if (zt__jaccept(c, ZT__T_NAME, "is")) {
            zt__jn *x = zt__jnode(c, ZT__N_TEST, t->line);
            x->op = zt__jaccept(c, ZT__T_NAME, "not");
            zt__jtok *name = zt__jnext(c);
            if (name->kind != ZT__T_NAME && !zt__jis(name, ZT__T_OP, "==") && !zt__jis(name, ZT__T_OP, "!="))
                zt__jperr(c, t->line, "expected a test's name after 'is'");
            x->a = e, x->s = name->s, x->n = name->n;
            zt__jtok *u = zt__jpeek(c);
            if (zt__jaccept(c, ZT__T_OP, "(")) {
                x->b = zt__jparse_args(c);
            } else if (u->kind == ZT__T_STR || u->kind == ZT__T_NUM || zt__jis(u, ZT__T_OP, "[") || zt__jis(u, ZT__T_OP, "{") ||
                       (u->kind == ZT__T_NAME && !zt__jis(u, ZT__T_NAME, "else") && !zt__jis(u, ZT__T_NAME, "or") &&
                        !zt__jis(u, ZT__T_NAME, "and") && !zt__jis(u, ZT__T_NAME, "if") && !zt__jis(u, ZT__T_NAME, "is") &&
                        !zt__jis(u, ZT__T_NAME, "in") && !zt__jis(u, ZT__T_NAME, "not"))) {
                x->b = zt__jparse_postfix(c, zt__jparse_primary(c)); /* "is divisibleby 3": one argument */
            }
            e = x;
        } else if (zt__jis(t, ZT__T_OP, "(")) {
            e = zt__jparse_postfix(c, e);
        } else {
            return e;
        }
    }
}

static zt__jn *zt__jparse_unary(zt_chat_template *c, int with_filter) {
    zt__jtok *t = zt__jpeek(c);
    zt__jenter(c, t->line);
    zt__jn *e;
    if (zt__jaccept(c, ZT__T_OP, "-") || zt__jaccept(c, ZT__T_OP, "+")) {
        e = zt__jnode(c, t->s[0] == '-' ? ZT__N_NEG : ZT__N_POS, t->line);
        e->a = zt__jparse_unary(c, 0);
    } else {
        e = zt__jparse_postfix(c, zt__jparse_primary(c));
    }
    if (with_filter) e = zt__jparse_filters(c, e);
    c->depth--;
    return e;
}

static zt__jn *zt__jbinary(zt_chat_template *c, int op, zt__jn *a, zt__jn *b, int line) {
    zt__jn *e = zt__jnode(c, ZT__N_BIN, line);
    e->op = op, e->a = a, e->b = b;
    return e;
}

/* binary operators, tightest last: + - (math1), ~, * / // %, ** */
static zt__jn *zt__jparse_pow(zt_chat_template *c) {
    zt__jn *e = zt__jparse_unary(c, 1);
    while (zt__jis(zt__jpeek(c), ZT__T_OP, "**")) {
        int line = zt__jnext(c)->line;
        e = zt__jbinary(c, 'P', e, zt__jparse_unary(c, 1), line);
    }
    return e;
}
static zt__jn *zt__jparse_math2(zt_chat_template *c) {
    zt__jn *e = zt__jparse_pow(c);
    for (;;) {
        zt__jtok *t = zt__jpeek(c);
        int op = zt__jis(t, ZT__T_OP, "*") ? '*' : zt__jis(t, ZT__T_OP, "/") ? '/' : zt__jis(t, ZT__T_OP, "//") ? 'F'
               : zt__jis(t, ZT__T_OP, "%") ? '%' : 0;
        if (!op) return e;
        zt__jnext(c);
        e = zt__jbinary(c, op, e, zt__jparse_pow(c), t->line);
    }
}
static zt__jn *zt__jparse_concat(zt_chat_template *c) {
    zt__jn *e = zt__jparse_math2(c);
    while (zt__jis(zt__jpeek(c), ZT__T_OP, "~")) {
        int line = zt__jnext(c)->line;
        e = zt__jbinary(c, '~', e, zt__jparse_math2(c), line);
    }
    return e;
}
static zt__jn *zt__jparse_math1(zt_chat_template *c) {
    zt__jn *e = zt__jparse_concat(c);
    for (;;) {
        zt__jtok *t = zt__jpeek(c);
        int op = zt__jis(t, ZT__T_OP, "+") ? '+' : zt__jis(t, ZT__T_OP, "-") ? '-' : 0;
        if (!op) return e;
        zt__jnext(c);
        e = zt__jbinary(c, op, e, zt__jparse_concat(c), t->line);
    }
}

/* comparisons chain as Python's do: a < b < c is a < b and b < c */
enum { ZT__CMP_EQ = 1, ZT__CMP_NE, ZT__CMP_LT, ZT__CMP_LE, ZT__CMP_GT, ZT__CMP_GE, ZT__CMP_IN, ZT__CMP_NOTIN };
static zt__jn *zt__jparse_compare(zt_chat_template *c) {
    zt__jn *first = zt__jparse_math1(c), *e = NULL, **tail = NULL;
    for (;;) {
        zt__jtok *t = zt__jpeek(c);
        static const char *const ops[] = {"==", "!=", "<", "<=", ">", ">="};
        int op = 0;
        for (int k = 0; k < 6 && !op; k++)
            if (zt__jis(t, ZT__T_OP, ops[k])) op = k + 1;
        if (op) zt__jnext(c);
        else if (zt__jaccept(c, ZT__T_NAME, "in")) op = ZT__CMP_IN;
        else if (zt__jis(t, ZT__T_NAME, "not") && zt__jis(&c->tok[c->at + 1], ZT__T_NAME, "in")) c->at += 2, op = ZT__CMP_NOTIN;
        if (!op) return e ? e : first;
        if (!e) {
            e = zt__jnode(c, ZT__N_CMP, t->line);
            e->a = first, tail = &e->b;
        }
        zt__jn *rhs = zt__jnode(c, ZT__N_CMP, t->line); /* one link of the chain: op and its right side */
        rhs->op = op, rhs->a = zt__jparse_math1(c);
        *tail = rhs, tail = &rhs->next;
    }
}
static zt__jn *zt__jparse_not(zt_chat_template *c) {
    zt__jtok *t = zt__jpeek(c);
    if (!zt__jaccept(c, ZT__T_NAME, "not")) return zt__jparse_compare(c);
    zt__jenter(c, t->line);
    zt__jn *e = zt__jnode(c, ZT__N_NOT, t->line);
    e->a = zt__jparse_not(c);
    c->depth--;
    return e;
}
static zt__jn *zt__jparse_and(zt_chat_template *c) {
    zt__jn *e = zt__jparse_not(c);
    while (zt__jis(zt__jpeek(c), ZT__T_NAME, "and")) {
        zt__jn *x = zt__jnode(c, ZT__N_AND, zt__jnext(c)->line);
        x->a = e, x->b = zt__jparse_not(c);
        e = x;
    }
    return e;
}
static zt__jn *zt__jparse_or(zt_chat_template *c) {
    zt__jn *e = zt__jparse_and(c);
    while (zt__jis(zt__jpeek(c), ZT__T_NAME, "or")) {
        zt__jn *x = zt__jnode(c, ZT__N_OR, zt__jnext(c)->line);
        x->a = e, x->b = zt__jparse_and(c);
        e = x;
    }
    return e;
}
/* a if cond else b (no else: undefined) */
static zt__jn *zt__jparse_expr(zt_chat_template *c) {
    zt__jenter(c, zt__jpeek(c)->line);
    zt__jn *e = zt__jparse_or(c);
    while (zt__jis(zt__jpeek(c), ZT__T_NAME, "if")) {
        zt__jn *x = zt__jnode(c, ZT__N_COND, zt__jnext(c)->line);
        x->a = e, x->b = zt__jparse_or(c);
        if (zt__jaccept(c, ZT__T_NAME, "else")) x->c = zt__jparse_expr(c);
        e = x;
    }
    c->depth--;
    return e;
}

/* ---- statements ---- */

static zt__jn *zt__jparse_body(zt_chat_template *c, const char *const *ends, int n_ends, int *which);

static zt__jtok *zt__jname(zt_chat_template *c, const char *what) {
    zt__jtok *t = zt__jnext(c);
    if (t->kind != ZT__T_NAME) {
        char found[64];
        zt__jwhat(t, found, sizeof found);
        zt__jperr(c, t->line, "expected %s, found %s", what, found);
    }
    return t;
}

/* if cond %} ... [elif: an if of its own, which ends the chain] [else %} ...] endif %} */
static zt__jn *zt__jparse_if(zt_chat_template *c, int line) {
    static const char *const ends[] = {"elif", "else", "endif"};
    int which;
    zt__jn *e = zt__jnode(c, ZT__N_IF, line);
    e->a = zt__jparse_expr(c);
    zt__jexpect(c, ZT__T_BEND, NULL, "'%}'");
    e->b = zt__jparse_body(c, ends, 3, &which);
    if (which == 0) {
        e->c = zt__jparse_if(c, c->tok[c->at - 1].line);
        return e;
    }
    if (which == 1) {
        zt__jexpect(c, ZT__T_BEND, NULL, "'%}'");
        e->c = zt__jparse_body(c, ends + 2, 1, &which);
    }
    zt__jexpect(c, ZT__T_BEND, NULL, "'%}'");
    return e;
}

static zt__jn *zt__jparse_stmt(zt_chat_template *c, zt__jtok *kw) {
    int line = kw->line, which;
    zt__jn *e;
    if (zt__jis(kw, ZT__T_NAME, "if")) return zt__jparse_if(c, line);
    if (zt__jis(kw, ZT__T_NAME, "for")) {
        static const char *const ends[] = {"else", "endfor"};
        e = zt__jnode(c, ZT__N_FOR, line);
        int paren = zt__jaccept(c, ZT__T_OP, "(");
        zt__jtok *v = zt__jname(c, "a loop variable");
        e->s = v->s, e->n = v->n;
        if (zt__jaccept(c, ZT__T_OP, ",")) {
            v = zt__jname(c, "a second loop variable");
            e->s2 = v->s, e->n2 = v->n, e->op = 1;
        }
        if (paren) zt__jexpect(c, ZT__T_OP, ")", "')'");
        zt__jexpect(c, ZT__T_NAME, "in", "'in'");
        e->a = zt__jparse_or(c); /* not parse_expr: "if" here filters the loop */
        if (zt__jaccept(c, ZT__T_NAME, "if")) e->d = zt__jparse_expr(c);
        if (zt__jaccept(c, ZT__T_NAME, "recursive")) zt__jperr(c, line, "recursive loops are not supported");
        zt__jexpect(c, ZT__T_BEND, NULL, "'%}'");
        c->loops++;
        e->b = zt__jparse_body(c, ends, 2, &which);
        c->loops--;
        zt__jexpect(c, ZT__T_BEND, NULL, "'%}'");
        if (which == 0) {
            e->c = zt__jparse_body(c, ends + 1, 1, &which);
            zt__jexpect(c, ZT__T_BEND, NULL, "'%}'");
        }
        return e;
    }
    if (zt__jis(kw, ZT__T_NAME, "set")) {
        zt__jtok *v = zt__jname(c, "a variable's name");
        e = zt__jnode(c, ZT__N_SET, line);
        e->s = v->s, e->n = v->n;
        if (zt__jaccept(c, ZT__T_OP, ".")) { /* set ns.attr = value */
            zt__jtok *attr = zt__jname(c, "an attribute's name");
            e->s2 = attr->s, e->n2 = attr->n, e->op = 1;
        }
        if (!e->op && zt__jaccept(c, ZT__T_BEND, NULL)) { /* {% set x %}...{% endset %} */
            static const char *const ends[] = {"endset"};
            e->kind = ZT__N_SETBLOCK;
            e->b = zt__jparse_body(c, ends, 1, &which);
            zt__jexpect(c, ZT__T_BEND, NULL, "'%}'");
            return e;
        }
        zt__jexpect(c, ZT__T_OP, "=", "'='");
        e->a = zt__jparse_expr(c);
        if (zt__jis(zt__jpeek(c), ZT__T_OP, ",")) { /* set x = a, b: a tuple */
            zt__jn *t = zt__jnode(c, ZT__N_TUPLE, line), **tail = &e->a->next;
            t->b = e->a;
            while (zt__jaccept(c, ZT__T_OP, ",")) *tail = zt__jparse_expr(c), tail = &(*tail)->next;
            e->a = t;
        }
        zt__jexpect(c, ZT__T_BEND, NULL, "'%}'");
        return e;
    }
    if (zt__jis(kw, ZT__T_NAME, "macro")) {
        static const char *const ends[] = {"endmacro"};
        zt__jtok *v = zt__jname(c, "a macro's name");
        e = zt__jnode(c, ZT__N_MACRO, line);
        e->s = v->s, e->n = v->n;
        zt__jexpect(c, ZT__T_OP, "(", "'('");
        zt__jn **tail = &e->b;
        int defaults = 0; /* a parameter before has one */
        while (!zt__jaccept(c, ZT__T_OP, ")")) {
            if (e->b) zt__jexpect(c, ZT__T_OP, ",", "',' or ')'");
            zt__jtok *p = zt__jname(c, "a parameter's name");
            for (zt__jn *q = e->b; q; q = q->next)
                if (q->n == p->n && memcmp(q->s, p->s, (size_t)p->n) == 0)
                    zt__jperr(c, p->line, "macro '%.*s' names its parameter '%.*s' twice", (int)e->n, e->s, (int)p->n, p->s);
            zt__jn *param = zt__jnode(c, ZT__N_PARAM, p->line);
            param->s = p->s, param->n = p->n;
            if (zt__jaccept(c, ZT__T_OP, "=")) param->a = zt__jparse_expr(c), defaults = 1;
            else if (defaults) zt__jperr(c, p->line, "macro '%.*s': a parameter without a default follows one with", (int)e->n, e->s);
            *tail = param, tail = &param->next;
        }
        zt__jexpect(c, ZT__T_BEND, NULL, "'%}'");
        int loops = c->loops;
        c->loops = 0;
        e->c = zt__jparse_body(c, ends, 1, &which);
        c->loops = loops;
        zt__jexpect(c, ZT__T_BEND, NULL, "'%}'");
        return e;
    }
    if (zt__jis(kw, ZT__T_NAME, "break") || zt__jis(kw, ZT__T_NAME, "continue")) {
        if (!c->loops) zt__jperr(c, line, "'{%% %.*s %%}' outside a loop", (int)kw->n, kw->s);
        e = zt__jnode(c, kw->s[0] == 'b' ? ZT__N_BREAK : ZT__N_CONTINUE, line);
        zt__jexpect(c, ZT__T_BEND, NULL, "'%}'");
        return e;
    }
    if (zt__jis(kw, ZT__T_NAME, "generation")) {
        static const char *const ends[] = {"endgeneration"};
        e = zt__jnode(c, ZT__N_GENERATION, line);
        zt__jexpect(c, ZT__T_BEND, NULL, "'%}'");
        int loops = c->loops; /* its body is a block of its own, as transformers' extension makes it */
        c->loops = 0;
        e->b = zt__jparse_body(c, ends, 1, &which);
        c->loops = loops;
        zt__jexpect(c, ZT__T_BEND, NULL, "'%}'");
        c->has_generation = 1;
        return e;
    }
    zt__jperr(c, line, "'{%% %.*s %%}' is not a statement zt's chat templates know (if, for, set, macro, break, continue, "
              "generation)", (int)(kw->n < 40 ? kw->n : 40), kw->s);
    return NULL;
}

/* statements up to one of ends ({% end... %}: which one comes back in *which, the tag's rest is left
   to the caller), or to the end of the template when ends is NULL */
static zt__jn *zt__jparse_body(zt_chat_template *c, const char *const *ends, int n_ends, int *which) {
    zt__jn *head = NULL, **tail = &head;
    zt__jenter(c, zt__jpeek(c)->line);
    for (;;) {
        zt__jtok *t = zt__jnext(c);
        zt__jn *e = NULL;
        if (t->kind == ZT__T_EOF) {
            if (!ends) break;
            zt__jperr(c, t->line, "the template ends inside a block: expected {%% %s %%}", ends[n_ends - 1]);
        } else if (t->kind == ZT__T_TEXT) {
            e = zt__jnode(c, ZT__N_TEXT, t->line);
            e->s = t->s, e->n = t->n;
        } else if (t->kind == ZT__T_VBEGIN) {
            e = zt__jnode(c, ZT__N_OUT, t->line);
            e->a = zt__jparse_expr(c);
            zt__jexpect(c, ZT__T_VEND, NULL, "'}}'");
        } else if (t->kind == ZT__T_BBEGIN) {
            zt__jtok *kw = zt__jname(c, "a statement");
            for (int k = 0; k < n_ends; k++)
                if (zt__jis(kw, ZT__T_NAME, ends[k])) {
                    *which = k;
                    c->depth--;
                    return head;
                }
            e = zt__jparse_stmt(c, kw);
        } else {
            char found[64];
            zt__jwhat(t, found, sizeof found);
            zt__jperr(c, t->line, "unexpected %s", found);
        }
        *tail = e, tail = &e->next;
    }
    c->depth--;
    return head;
}

/* ---- evaluation ---- */

static void zt__jstep(zt__jr *R) {
    if (++R->steps > ZT__J_STEPS) zt__jfail(R, "the template ran for more than %lld steps (a loop that does not end?)", (long long)ZT__J_STEPS);
}

static int zt__jnum(const zt__jv *v) { return v->type == ZT__JBOOL || v->type == ZT__JINT || v->type == ZT__JFLOAT; }
static double zt__jf(const zt__jv *v) { return v->type == ZT__JFLOAT ? v->u.f : (double)v->u.i; }

/* Python's ==: numbers by value (True == 1), a tuple is never a list */
static int zt__jeq(zt__jr *R, const zt__jv *a, const zt__jv *b) {
    if (zt__jnum(a) && zt__jnum(b))
        return a->type == ZT__JFLOAT || b->type == ZT__JFLOAT ? zt__jf(a) == zt__jf(b) : a->u.i == b->u.i;
    if (a->type != b->type) return 0;
    int same = 1;
    if (++R->depth > ZT__J_EVAL_DEPTH) zt__jfail(R, "values compared nested more than %d deep", ZT__J_EVAL_DEPTH);
    switch (a->type) {
    case ZT__JSTR: same = a->n == b->n && memcmp(a->u.s, b->u.s, (size_t)a->n) == 0; break;
    case ZT__JLIST:
        same = a->n == b->n && a->sub == b->sub;
        for (int64_t i = 0; i < a->n && same; i++) same = zt__jeq(R, &a->u.items[i], &b->u.items[i]);
        break;
    case ZT__JDICT:
        if (a->sub || b->sub) {
            same = a->u.d == b->u.d;
            break;
        }
        same = a->u.d->n == b->u.d->n;
        for (int64_t i = 0; i < a->u.d->n && same; i++) {
            int64_t k = -1;
            for (int64_t m = 0; m < b->u.d->n && k < 0; m++)
                if (zt__jeq(R, &a->u.d->keys[i], &b->u.d->keys[m])) k = m;
            same = k >= 0 && zt__jeq(R, &a->u.d->vals[i], &b->u.d->vals[k]);
        }
        break;
    case ZT__JFN: same = a->sub == b->sub && a->self == b->self; break;
    case ZT__JMACRO: same = a->u.macro == b->u.macro; break;
    default: break; /* none, undefined */
    }
    R->depth--;
    return same;
}

/* Python's ordering: numbers, strings (by code point, which is UTF-8's byte order), lists item by item */
static int zt__jcmp(zt__jr *R, const zt__jv *a, const zt__jv *b) {
    if (zt__jnum(a) && zt__jnum(b)) {
        if (a->type != ZT__JFLOAT && b->type != ZT__JFLOAT) return (a->u.i > b->u.i) - (a->u.i < b->u.i);
        return (zt__jf(a) > zt__jf(b)) - (zt__jf(a) < zt__jf(b));
    }
    if (a->type == ZT__JSTR && b->type == ZT__JSTR) return zt__jstr_cmp(a, b);
    if (a->type == ZT__JLIST && b->type == ZT__JLIST) {
        if (++R->depth > ZT__J_EVAL_DEPTH) zt__jfail(R, "values compared nested more than %d deep", ZT__J_EVAL_DEPTH);
        int c = 0;
        for (int64_t i = 0; i < a->n && i < b->n && !c; i++) c = zt__jcmp(R, &a->u.items[i], &b->u.items[i]);
        R->depth--;
        return c ? c : (a->n > b->n) - (a->n < b->n);
    }
    zt__jfail(R, "cannot order %s and %s", zt__jtype_name(a), zt__jtype_name(b));
    return 0;
}

static int zt__jcontains(zt__jr *R, const zt__jv *hay, const zt__jv *needle) {
    if (hay->type == ZT__JSTR) {
        if (needle->type != ZT__JSTR) zt__jfail(R, "'in <string>' needs a string on the left, found %s", zt__jtype_name(needle));
        if (needle->n == 0) return 1;
        for (int64_t i = 0; i + needle->n <= hay->n; i++) {
            const char *p = (const char *)memchr(hay->u.s + i, needle->u.s[0], (size_t)(hay->n - needle->n - i + 1));
            if (!p) return 0;
            i = p - hay->u.s;
            zt__jwork(R, needle->n);
            if (memcmp(p, needle->u.s, (size_t)needle->n) == 0) return 1;
        }
        return 0;
    }
    if (hay->type == ZT__JLIST) {
        R->steps += hay->n;
        zt__jstep(R);
        for (int64_t i = 0; i < hay->n; i++)
            if (zt__jeq(R, &hay->u.items[i], needle)) return 1;
        return 0;
    }
    if (hay->type == ZT__JDICT) {
        for (int64_t i = 0; i < hay->u.d->n; i++)
            if (zt__jeq(R, &hay->u.d->keys[i], needle)) return 1;
        return 0;
    }
    if (hay->type == ZT__JU) return 0;
    zt__jfail(R, "'in' needs a string, list or dict on the right, found %s", zt__jtype_name(hay));
    return 0;
}

static zt__jv zt__jarith(zt__jr *R, int op, const zt__jv *a, const zt__jv *b) {
    if (op == '~') {
        zt__jv x = zt__jto_str(R, a), y = zt__jto_str(R, b);
        return zt__jcat(R, x.u.s, x.n, y.u.s, y.n);
    }
    if (op == '+' && a->type == ZT__JSTR && b->type == ZT__JSTR) return zt__jcat(R, a->u.s, a->n, b->u.s, b->n);
    if (op == '+' && a->type == ZT__JLIST && b->type == ZT__JLIST) {
        zt__jv *items = zt__jitems(R, a->n + b->n);
        if (a->n) memcpy(items, a->u.items, sizeof(zt__jv) * (size_t)a->n);
        if (b->n) memcpy(items + a->n, b->u.items, sizeof(zt__jv) * (size_t)b->n);
        zt__jv v = zt__jlist(items, a->n + b->n);
        v.sub = a->sub;
        return v;
    }
    if (op == '*' && (b->type == ZT__JSTR || b->type == ZT__JLIST) && (a->type == ZT__JINT || a->type == ZT__JBOOL)) {
        const zt__jv *t = a; /* 3 * "ab" is "ab" * 3 */
        a = b, b = t;
    }
    if (op == '*' && (a->type == ZT__JSTR || a->type == ZT__JLIST) && (b->type == ZT__JINT || b->type == ZT__JBOOL)) {
        int64_t times = b->u.i < 0 ? 0 : b->u.i, unit = a->type == ZT__JSTR ? a->n : a->n * (int64_t)sizeof(zt__jv);
        if (unit == 0) times = 0; /* nothing, however often */
        if (unit && times > (int64_t)ZT__J_BYTES / unit) zt__jfail(R, "a repetition of %lld is too long", (long long)times);
        R->steps += times;
        if (a->type == ZT__JSTR) {
            char *s = zt__jchars(R, a->n * times);
            for (int64_t i = 0; i < times; i++) memcpy(s + i * a->n, a->u.s, (size_t)a->n);
            s[a->n * times] = 0;
            return zt__jstr(s, a->n * times);
        }
        zt__jv *items = zt__jitems(R, a->n * times);
        for (int64_t i = 0; i < times; i++) memcpy(items + i * a->n, a->u.items, sizeof(zt__jv) * (size_t)a->n);
        return zt__jlist(items, a->n * times);
    }
    if (!zt__jnum(a) || !zt__jnum(b)) {
        char o[3] = {(char)op, 0, 0};
        if (op == 'F') strcpy(o, "//");
        if (op == 'P') strcpy(o, "**");
        zt__jfail(R, "'%s' between %s and %s", o, zt__jtype_name(a), zt__jtype_name(b));
    }
    int ints = a->type != ZT__JFLOAT && b->type != ZT__JFLOAT;
    double x = zt__jf(a), y = zt__jf(b);
    int64_t i = a->u.i, k = b->u.i;
    int64_t r;
    switch (op) { /* ints stay ints while they fit (past int64 Python has big ones: zt goes to a float) */
    case '+': if (ints && !__builtin_add_overflow(i, k, &r)) return zt__jint(r); return zt__jfloat(x + y);
    case '-': if (ints && !__builtin_sub_overflow(i, k, &r)) return zt__jint(r); return zt__jfloat(x - y);
    case '*': if (ints && !__builtin_mul_overflow(i, k, &r)) return zt__jint(r); return zt__jfloat(x * y);
    case '/': if (y == 0) zt__jfail(R, "division by zero"); return zt__jfloat(x / y);
    case 'F':
    case '%':
        if (y == 0) zt__jfail(R, "division by zero");
        if (ints && !(k == -1 && i == INT64_MIN)) {
            int64_t q = i / k, r = i % k;
            if (r != 0 && ((r < 0) != (k < 0))) q--, r += k; /* Python rounds toward minus infinity */
            return zt__jint(op == 'F' ? q : r);
        } else { /* CPython's float divmod: the remainder has the divisor's sign */
            double r = fmod(x, y), q = (x - r) / y;
            if (r != 0 && ((r < 0) != (y < 0))) r += y, q -= 1;
            if (r == 0) r = copysign(0.0, y);
            double f = q != 0 ? floor(q) : copysign(0.0, x / y);
            if (q != 0 && q - f > 0.5) f += 1;
            return zt__jfloat(op == 'F' ? f : r);
        }
    default: /* ** */
        if (x == 0 && y < 0) zt__jfail(R, "0 cannot be raised to a negative power");
        if (ints && k >= 0 && fabs(pow(x, y)) < 9e18) { /* by squaring: exact, and quick for 1 ** 10**12 */
            int64_t p = 1, base = i;
            for (int64_t e = k; e > 0; e >>= 1) { /* a square taken is at most the result, which fits */
                if (e & 1) p *= base;
                if (e > 1) base *= base;
            }
            return zt__jint(p);
        }
        return zt__jfloat(pow(x, y));
    }
}

/* the builtin functions, methods and filters, by name */
enum {
    ZT__F_RANGE = 1, ZT__F_NAMESPACE, ZT__F_RAISE, ZT__F_STRFTIME, ZT__F_DICT,
    ZT__M_STARTSWITH, ZT__M_ENDSWITH, ZT__M_STRIP, ZT__M_LSTRIP, ZT__M_RSTRIP, ZT__M_SPLIT, ZT__M_UPPER, ZT__M_LOWER,
    ZT__M_TITLE, ZT__M_CAPITALIZE, ZT__M_REPLACE, ZT__M_FIND, ZT__M_COUNT, ZT__M_JOIN, ZT__M_ISDIGIT,
    ZT__M_ISALPHA, ZT__M_ISALNUM, ZT__M_ISSPACE, ZT__M_ISLOWER, ZT__M_ISUPPER, ZT__M_SPLITLINES, ZT__M_RFIND, ZT__M_INDEX,
    ZT__M_REMOVEPREFIX, ZT__M_REMOVESUFFIX, ZT__M_CASEFOLD, ZT__M_SWAPCASE,
    ZT__M_ITEMS, ZT__M_KEYS, ZT__M_VALUES, ZT__M_GET
}; /* the string methods in the order of zt__jstr_methods, the dict methods in that of zt__jdict_methods */
static const char *const zt__jglobals[] = {"range", "namespace", "raise_exception", "strftime_now", "dict"};
static const char *const zt__jstr_methods[] = {
    "startswith", "endswith", "strip", "lstrip", "rstrip", "split", "upper", "lower", "title", "capitalize", "replace", "find",
    "count", "join", "isdigit", "isalpha", "isalnum", "isspace", "islower", "isupper", "splitlines", "rfind", "index",
    "removeprefix", "removesuffix", "casefold", "swapcase"};
static const char *const zt__jdict_methods[] = {"items", "keys", "values", "get"};

static int zt__jlookup(const char *const *names, int n, const char *s, int64_t len) {
    for (int i = 0; i < n; i++)
        if ((int64_t)strlen(names[i]) == len && memcmp(names[i], s, (size_t)len) == 0) return i;
    return -1;
}

static zt__jv zt__jfn(zt__jr *R, int which, const zt__jv *self) {
    zt__jv v = zt__jnone();
    v.type = ZT__JFN, v.sub = which;
    if (self) {
        zt__jv *s = (zt__jv *)zt__jalloc(R, sizeof(zt__jv));
        *s = *self;
        v.self = s;
    }
    return v;
}

static zt__jv zt__jvar(zt__jr *R, const char *s, int64_t n) {
    for (zt__jscope *sc = R->scope; sc; sc = sc->up) {
        int64_t i = zt__jdict_find(&sc->vars, s, n);
        if (i >= 0) return sc->vars.vals[i];
    }
    int g = zt__jlookup(zt__jglobals, ZT__N(zt__jglobals), s, n);
    if (g >= 0) return zt__jfn(R, ZT__F_RANGE + g, NULL);
    return zt__jundef(s, n);
}

static void zt__jundefined(zt__jr *R, const zt__jv *v) {
    if (v->type == ZT__JU) zt__jfail(R, "'%.*s' is undefined", (int)(v->n < 60 ? v->n : 60), v->u.s ? v->u.s : "");
}

/* x.name: a method, a dict's key, a namespace's attribute */
static zt__jv zt__jattr(zt__jr *R, const zt__jv *x, const char *s, int64_t n) {
    zt__jundefined(R, x);
    if (x->type == ZT__JDICT) {
        int m = x->sub ? -1 : zt__jlookup(zt__jdict_methods, ZT__N(zt__jdict_methods), s, n);
        if (m >= 0) return zt__jfn(R, ZT__M_ITEMS + m, x);
        int64_t i = zt__jdict_find(x->u.d, s, n);
        return i >= 0 ? x->u.d->vals[i] : zt__jundef(s, n);
    }
    if (x->type == ZT__JSTR) {
        int m = zt__jlookup(zt__jstr_methods, ZT__N(zt__jstr_methods), s, n);
        if (m >= 0) return zt__jfn(R, ZT__M_STARTSWITH + m, x);
    }
    return zt__jundef(s, n);
}

/* a slice bound as Python takes it: negative from the end, then kept within [0, n] */
static int64_t zt__jclamp(int64_t i, int64_t n) {
    if (i < 0) i = i < -n ? 0 : i + n;
    return i > n ? n : i;
}

/* Python's index into n items: negative from the end; -1 outside */
static int64_t zt__jindex(int64_t i, int64_t n) {
    if (i < 0) i += n;
    return i >= 0 && i < n ? i : -1;
}

static zt__jv zt__jitem(zt__jr *R, const zt__jv *x, const zt__jv *k) {
    zt__jundefined(R, x);
    if ((x->type == ZT__JLIST || x->type == ZT__JSTR) && (k->type == ZT__JINT || k->type == ZT__JBOOL)) {
        if (x->type == ZT__JLIST) {
            int64_t i = zt__jindex(k->u.i, x->n);
            return i >= 0 ? x->u.items[i] : zt__jundef("item", 4);
        }
        zt__jwork(R, x->n);
        int64_t i = zt__jindex(k->u.i, zt__jcps(x->u.s, x->n));
        if (i < 0) return zt__jundef("item", 4);
        int64_t b = zt__jcp_at(x->u.s, x->n, i), e = zt__jcp_at(x->u.s, x->n, i + 1);
        return zt__jstr(x->u.s + b, e - b);
    }
    if (x->type == ZT__JDICT) {
        for (int64_t i = 0; i < x->u.d->n; i++)
            if (zt__jeq(R, &x->u.d->keys[i], k)) return x->u.d->vals[i];
    }
    if (k->type == ZT__JSTR) return zt__jattr(R, x, k->u.s, k->n);
    return zt__jundef("item", 4);
}

static int64_t zt__jint_of(zt__jr *R, const zt__jv *v, const char *what) {
    if (v->type != ZT__JINT && v->type != ZT__JBOOL) zt__jfail(R, "%s must be an integer, found %s", what, zt__jtype_name(v));
    return v->u.i;
}

/* x[a:b:c] of a list or a string, as Python slices */
static zt__jv zt__jslice(zt__jr *R, const zt__jv *x, const zt__jv *a, const zt__jv *b, const zt__jv *c) {
    zt__jundefined(R, x);
    if (x->type != ZT__JLIST && x->type != ZT__JSTR) return zt__jundef("slice", 5); /* as Jinja: undefined */
    int64_t n = x->type == ZT__JLIST ? x->n : zt__jcps(x->u.s, x->n);
    int64_t step = c && c->type != ZT__JNONE ? zt__jint_of(R, c, "a slice's step") : 1;
    if (step == 0) zt__jfail(R, "a slice's step cannot be zero");
    int64_t lo = step > 0 ? 0 : -1, hi = step > 0 ? n : -1, start, stop;
    if (a && a->type != ZT__JNONE) {
        start = zt__jint_of(R, a, "a slice's start");
        start = start < 0 ? ZT__MAX(start + n, lo) : ZT__MIN(start, step > 0 ? n : n - 1);
    } else {
        start = step > 0 ? 0 : n - 1;
    }
    if (b && b->type != ZT__JNONE) {
        stop = zt__jint_of(R, b, "a slice's stop");
        stop = stop < 0 ? ZT__MAX(stop + n, lo) : ZT__MIN(stop, n);
    } else {
        stop = hi;
    }
    if (step > n) step = n + 1; /* a step past the length takes one item at most, and i + step stays in range */
    if (step < -n) step = -(n + 1);
    int64_t count = 0;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) count++;
    R->steps += count;
    if (x->type == ZT__JLIST) {
        zt__jv *items = zt__jitems(R, count);
        int64_t m = 0;
        for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) items[m++] = x->u.items[i];
        zt__jv v = zt__jlist(items, count);
        v.sub = x->sub;
        return v;
    }
    int64_t *at = zt__jcp_starts(R, x->u.s, x->n, n);
    zt__jbuf out = {R, NULL, 0, 0};
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) zt__jput(&out, x->u.s + at[i], at[i + 1] - at[i]);
    return out.p ? zt__jstr(out.p, out.n) : zt__jstr("", 0);
}

/* a call's arguments, evaluated: positional ones, then name=value ones (in the render's heap) */
typedef struct zt__jargs {
    int n, nk;
    zt__jv *pos, *kv;
    const char **kn;
    int64_t *kl;
} zt__jargs;

static zt__jv zt__jeval(zt__jr *R, const zt__jn *e);

static void zt__jeval_args(zt__jr *R, const zt__jn *a, zt__jargs *args) {
    memset(args, 0, sizeof *args);
    int n = 0, nk = 0;
    for (const zt__jn *x = a; x; x = x->next) {
        if (x->kind == ZT__N_KWARG) nk++;
        else n++;
    }
    if (!n && !nk) return;
    args->pos = zt__jitems(R, n), args->kv = zt__jitems(R, nk);
    args->kn = (const char **)zt__jalloc(R, sizeof(char *) * (size_t)(nk + 1));
    args->kl = (int64_t *)zt__jalloc(R, sizeof(int64_t) * (size_t)(nk + 1));
    for (; a; a = a->next) {
        if (a->kind == ZT__N_KWARG) {
            args->kn[args->nk] = a->s, args->kl[args->nk] = a->n;
            args->kv[args->nk++] = zt__jeval(R, a->a);
        } else {
            args->pos[args->n++] = zt__jeval(R, a);
        }
    }
}

/* argument i, or the keyword name, or NULL */
static const zt__jv *zt__jarg(const zt__jargs *a, int i, const char *name) {
    if (i >= 0 && i < a->n) return &a->pos[i];
    for (int k = 0; name && k < a->nk; k++)
        if ((int64_t)strlen(name) == a->kl[k] && memcmp(a->kn[k], name, (size_t)a->kl[k]) == 0) return &a->kv[k];
    return NULL;
}

static const zt__jv *zt__jarg_str(zt__jr *R, const zt__jargs *a, int i, const char *name, const char *what) {
    const zt__jv *v = zt__jarg(a, i, name);
    if (v && v->type != ZT__JSTR && v->type != ZT__JNONE) zt__jfail(R, "%s must be a string, found %s", what, zt__jtype_name(v));
    return v && v->type == ZT__JSTR ? v : NULL;
}

/* the code point of len bytes at p is one of chars' */
static int zt__jin_chars(const zt__jv *chars, const char *p, int len) {
    for (int64_t k = 0; k < chars->n;) {
        int l;
        zt__utf8(chars->u.s, (size_t)chars->n, (size_t)k, &l);
        if (l == len && memcmp(chars->u.s + k, p, (size_t)len) == 0) return 1;
        k += l;
    }
    return 0;
}

/* str.strip (lstrip, rstrip): white space, or the code points of chars */
static zt__jv zt__jstrip(const zt__jv *s, const zt__jv *chars, int left, int right) {
    int64_t b = 0, e = s->n;
    int len;
    while (left && b < e) {
        int space = zt__jspace_at(s->u.s, e, b, &len);
        if (chars ? !zt__jin_chars(chars, s->u.s + b, len) : !space) break;
        b += len;
    }
    while (right && e > b) {
        int64_t p = e - 1; /* back to the start of the last character */
        while (p > b && ((uint8_t)s->u.s[p] & 0xc0) == 0x80) p--;
        int space = zt__jspace_at(s->u.s, e, p, &len);
        if (chars ? !zt__jin_chars(chars, s->u.s + p, (int)(e - p)) : !space) break;
        e = p;
    }
    return zt__jstr(s->u.s + b, e - b);
}

/* str.split: two passes, the first counting the pieces, so a long text takes a list of its own size */
static zt__jv zt__jsplit(zt__jr *R, const zt__jv *s, const zt__jv *sep, int64_t maxsplit) {
    zt__jwork(R, s->n * (sep ? sep->n : 1));
    if (sep && sep->n == 0) zt__jfail(R, "split: an empty separator");
    zt__jv *items = NULL;
    int64_t m = 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass) items = zt__jitems(R, m), m = 0;
        int64_t i = 0, b = 0;
        if (!sep) { /* runs of white space, none empty */
            int len;
            for (;;) {
                while (i < s->n && zt__jspace_at(s->u.s, s->n, i, &len)) i += len;
                if (i >= s->n) break;
                b = i;
                if (maxsplit >= 0 && m == maxsplit) { /* the rest, as it is after its leading white space */
                    if (pass) items[m] = zt__jstr(s->u.s + b, s->n - b);
                    m++;
                    break;
                }
                while (i < s->n && !zt__jspace_at(s->u.s, s->n, i, &len)) i += len;
                if (pass) items[m] = zt__jstr(s->u.s + b, i - b);
                m++;
            }
            continue;
        }
        while (i + sep->n <= s->n && (maxsplit < 0 || m < maxsplit)) {
            const char *p = (const char *)memchr(s->u.s + i, sep->u.s[0], (size_t)(s->n - sep->n - i + 1));
            if (!p) break;
            i = p - s->u.s;
            if (memcmp(p, sep->u.s, (size_t)sep->n) != 0) {
                i++;
                continue;
            }
            if (pass) items[m] = zt__jstr(s->u.s + b, i - b);
            m++;
            i += sep->n, b = i;
        }
        if (pass) items[m] = zt__jstr(s->u.s + b, s->n - b);
        m++;
    }
    return zt__jlist(items, m);
}

static zt__jv zt__jreplace(zt__jr *R, const zt__jv *s, const zt__jv *old, const zt__jv *with, int64_t count) {
    zt__jwork(R, s->n * (old->n ? old->n : 1));
    zt__jbuf out = {R, NULL, 0, 0};
    int64_t i = 0, done = 0;
    if (old->n == 0) { /* Python puts it between every character */
        int64_t cps = zt__jcps(s->u.s, s->n), *at = zt__jcp_starts(R, s->u.s, s->n, cps);
        for (int64_t k = 0; k <= cps; k++) {
            if (count < 0 || done < count) zt__jput(&out, with->u.s, with->n), done++;
            if (k < cps) zt__jput(&out, s->u.s + at[k], at[k + 1] - at[k]);
        }
        return out.p ? zt__jstr(out.p, out.n) : zt__jstr("", 0);
    }
    while (i < s->n) {
        if ((count < 0 || done < count) && i + old->n <= s->n && memcmp(s->u.s + i, old->u.s, (size_t)old->n) == 0) {
            zt__jput(&out, with->u.s, with->n);
            i += old->n, done++;
        } else {
            zt__jput(&out, s->u.s + i, 1), i++;
        }
    }
    return out.p ? zt__jstr(out.p, out.n) : zt__jstr("", 0);
}

/* upper (1), lower (2), str.title (3), capitalize (4) and Jinja's |title (5), on ASCII letters: str.title
   starts a word after anything but a letter, |title after "-", white space, "(", "{", "[" or "<" */
static zt__jv zt__jcase(zt__jr *R, const zt__jv *s, int how) {
    char *o = zt__jchars(R, s->n);
    int start = 1;
    for (int64_t i = 0; i < s->n; i++) {
        char c = s->u.s[i];
        int up = how == 1 || ((how == 3 || how == 5) && start) || (how == 4 && i == 0);
        int letter = (c | 32) >= 'a' && (c | 32) <= 'z';
        o[i] = letter ? (char)(up ? c & ~32 : c | 32) : c;
        if (how == 3) start = !letter && !((uint8_t)c & 0x80); /* a non-ASCII letter continues a word */
        if (how == 5) start = strchr("- \t\n\r\f\v({[<", c) != NULL && c;
    }
    o[s->n] = 0;
    return zt__jstr(o, s->n);
}

static zt__jv zt__jstr_arg(zt__jr *R, const zt__jv *v, const char *what) {
    if (v->type != ZT__JSTR) zt__jfail(R, "%s must be a string, found %s", what, zt__jtype_name(v));
    return *v;
}

static zt__jv zt__jmacro_call(zt__jr *R, const zt__jv *macro, const zt__jargs *args);
static zt__jv zt__jseq(zt__jr *R, const zt__jv *v, const char *what);
static int zt__jtest(zt__jr *R, const zt__jv *v, const char *s, int64_t n, const zt__jargs *a);

/* the bytes of a line break at s[i] as str.splitlines sees them ("\r\n" is one), or 0 */
static int zt__jline_break(const char *s, int64_t n, int64_t i) {
    uint8_t c = (uint8_t)s[i];
    if (c == '\r') return i + 1 < n && s[i + 1] == '\n' ? 2 : 1;
    if (c == '\n' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1e)) return 1;
    if (c == 0xc2 && i + 1 < n && (uint8_t)s[i + 1] == 0x85) return 2;                                   /* U+0085 */
    if (c == 0xe2 && i + 2 < n && (uint8_t)s[i + 1] == 0x80 && ((uint8_t)s[i + 2] & 0xfe) == 0xa8) return 3; /* U+2028-9 */
    return 0;
}

/* a namespace's attribute: none starts with "_", as transformers' sandbox has it */
static void zt__jns_name(zt__jr *R, const zt__jv *name) {
    if (name->type == ZT__JSTR && name->n > 0 && name->u.s[0] == '_')
        zt__jfail(R, "a namespace's attribute may not start with '_' (transformers refuses '%.*s')", (int)name->n, name->u.s);
}

static zt__jv zt__jcall(zt__jr *R, const zt__jv *f, const zt__jargs *a) {
    if (f->type == ZT__JMACRO) return zt__jmacro_call(R, f, a);
    if (f->type != ZT__JFN) {
        zt__jundefined(R, f);
        zt__jfail(R, "%s is not something to call", zt__jtype_name(f));
    }
    const zt__jv *self = f->self;
    switch (f->sub) {
    case ZT__F_RANGE: {
        int64_t lo = 0, hi, step = 1;
        if (a->n == 0 || a->n > 3) zt__jfail(R, "range takes 1 to 3 arguments");
        hi = zt__jint_of(R, &a->pos[0], "range's argument");
        if (a->n >= 2) lo = hi, hi = zt__jint_of(R, &a->pos[1], "range's stop");
        if (a->n == 3) step = zt__jint_of(R, &a->pos[2], "range's step");
        if (step == 0) zt__jfail(R, "range's step cannot be zero");
        /* in unsigned arithmetic, where the span of any two int64 values fits */
        uint64_t span = step > 0 ? (hi > lo ? (uint64_t)hi - (uint64_t)lo : 0) : (lo > hi ? (uint64_t)lo - (uint64_t)hi : 0);
        uint64_t stride = step > 0 ? (uint64_t)step : (uint64_t)(-(step + 1)) + 1;
        uint64_t count = span / stride + (span % stride != 0);
        if (count > (uint64_t)ZT__J_STEPS) zt__jfail(R, "range of %llu numbers is too long", (unsigned long long)count);
        R->steps += (int64_t)count;
        zt__jv *items = zt__jitems(R, (int64_t)count);
        for (uint64_t i = 0; i < count; i++) items[i] = zt__jint((int64_t)((uint64_t)lo + i * (uint64_t)step));
        return zt__jlist(items, (int64_t)count);
    }
    case ZT__F_NAMESPACE:
    case ZT__F_DICT: {
        zt__jv d = zt__jdict_new(R, f->sub == ZT__F_NAMESPACE);
        for (int i = 0; i < a->n; i++) {
            if (a->pos[i].type != ZT__JDICT) zt__jfail(R, "%s's positional argument must be a dict", f->sub == ZT__F_DICT ? "dict" : "namespace");
            for (int64_t k = 0; k < a->pos[i].u.d->n; k++) zt__jdict_set(R, d.u.d, a->pos[i].u.d->keys[k], a->pos[i].u.d->vals[k]);
        }
        for (int k = 0; k < a->nk; k++) zt__jdict_set(R, d.u.d, zt__jstr(a->kn[k], a->kl[k]), a->kv[k]);
        for (int64_t k = 0; f->sub == ZT__F_NAMESPACE && k < d.u.d->n; k++) zt__jns_name(R, &d.u.d->keys[k]);
        return d;
    }
    case ZT__F_RAISE: {
        zt__jv m = a->n ? zt__jto_str(R, &a->pos[0]) : zt__jstr("", 0);
        zt__jfail(R, "the template refused this conversation: %.*s", (int)(m.n < 400 ? m.n : 400), m.u.s);
    }
    case ZT__F_STRFTIME: {
        if (a->n != 1) zt__jfail(R, "strftime_now takes one argument, the format");
        zt__jv fmt = zt__jstr_arg(R, &a->pos[0], "strftime_now's format");
        char buf[4096], *z = zt__jchars(R, fmt.n);
        memcpy(z, fmt.u.s, (size_t)fmt.n), z[fmt.n] = 0;
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        size_t n = strftime(buf, sizeof buf, z, &tm);
        return zt__jcat(R, buf, (int64_t)n, "", 0);
    }
    case ZT__M_STARTSWITH:
    case ZT__M_ENDSWITH: {
        if (a->n < 1) zt__jfail(R, "%s needs an argument", f->sub == ZT__M_STARTSWITH ? "startswith" : "endswith");
        const zt__jv *p = &a->pos[0];
        if (p->type == ZT__JLIST && !p->sub) zt__jfail(R, "startswith and endswith take a string or a tuple of them, not a list");
        zt__jv part = zt__jslice(R, self, a->n > 1 ? &a->pos[1] : NULL, a->n > 2 ? &a->pos[2] : NULL, NULL);
        int64_t np = p->type == ZT__JLIST ? p->n : 1;
        for (int64_t i = 0; i < np; i++) {
            zt__jv q = zt__jstr_arg(R, p->type == ZT__JLIST ? &p->u.items[i] : p, "startswith's prefix");
            if (q.n <= part.n && memcmp(part.u.s + (f->sub == ZT__M_STARTSWITH ? 0 : part.n - q.n), q.u.s, (size_t)q.n) == 0)
                return zt__jbool(1);
        }
        return zt__jbool(0);
    }
    case ZT__M_STRIP: case ZT__M_LSTRIP: case ZT__M_RSTRIP:
        return zt__jstrip(self, zt__jarg_str(R, a, 0, NULL, "strip's characters"), f->sub != ZT__M_RSTRIP, f->sub != ZT__M_LSTRIP);
    case ZT__M_SPLIT: {
        const zt__jv *m = zt__jarg(a, 1, "maxsplit");
        return zt__jsplit(R, self, zt__jarg_str(R, a, 0, "sep", "split's separator"), m ? zt__jint_of(R, m, "maxsplit") : -1);
    }
    case ZT__M_UPPER: case ZT__M_LOWER: case ZT__M_TITLE: case ZT__M_CAPITALIZE:
        return zt__jcase(R, self, f->sub - ZT__M_UPPER + 1);
    case ZT__M_REPLACE: {
        if (a->n < 2) zt__jfail(R, "replace needs two arguments");
        zt__jv o = zt__jstr_arg(R, &a->pos[0], "replace's first argument"), w = zt__jstr_arg(R, &a->pos[1], "replace's second argument");
        return zt__jreplace(R, self, &o, &w, a->n > 2 ? zt__jint_of(R, &a->pos[2], "replace's count") : -1);
    }
    case ZT__M_FIND:
    case ZT__M_COUNT: {
        if (a->n < 1) zt__jfail(R, "find and count need an argument");
        zt__jv q = zt__jstr_arg(R, &a->pos[0], "the text to find");
        int64_t cps = zt__jcps(self->u.s, self->n), *at = zt__jcp_starts(R, self->u.s, self->n, cps), lo = 0, hi = cps;
        if (a->n > 1 && a->pos[1].type != ZT__JNONE) lo = zt__jclamp(zt__jint_of(R, &a->pos[1], "the start"), cps);
        if (a->n > 2 && a->pos[2].type != ZT__JNONE) hi = zt__jclamp(zt__jint_of(R, &a->pos[2], "the end"), cps);
        zt__jwork(R, self->n * (q.n ? q.n : 1));
        int64_t given = a->n > 1 && a->pos[1].type != ZT__JNONE ? a->pos[1].u.i : 0;
        if (hi < lo || given > cps) return zt__jint(f->sub == ZT__M_FIND ? -1 : 0); /* a start past the end finds nothing */
        if (q.n == 0) return zt__jint(f->sub == ZT__M_FIND ? lo : hi - lo + 1);
        int64_t count = 0;
        for (int64_t k = lo; k < hi && at[k] + q.n <= at[hi]; k++) /* by code point: a match starts on one */
            if (memcmp(self->u.s + at[k], q.u.s, (size_t)q.n) == 0) {
                if (f->sub == ZT__M_FIND) return zt__jint(k);
                count++;
                for (int64_t end = at[k] + q.n; k + 1 < hi && at[k + 1] < end;) k++; /* no overlaps */
            }
        return zt__jint(f->sub == ZT__M_FIND ? -1 : count);
    }
    case ZT__M_JOIN: {
        if (a->n < 1 || (a->pos[0].type != ZT__JLIST && a->pos[0].type != ZT__JSTR)) zt__jfail(R, "join needs a list");
        zt__jv list = zt__jseq(R, &a->pos[0], "join"); /* a string's characters */
        zt__jbuf out = {R, NULL, 0, 0};
        for (int64_t i = 0; i < list.n; i++) {
            if (i) zt__jput(&out, self->u.s, self->n);
            zt__jv s = zt__jstr_arg(R, &list.u.items[i], "an item joined");
            zt__jput(&out, s.u.s, s.n);
        }
        return out.p ? zt__jstr(out.p, out.n) : zt__jstr("", 0);
    }
    case ZT__M_ISDIGIT: case ZT__M_ISALPHA: case ZT__M_ISALNUM: case ZT__M_ISSPACE: { /* every character, and one at least */
        int all = self->n > 0, len;
        for (int64_t i = 0; i < self->n && all; i += len) {
            uint32_t c = zt__utf8(self->u.s, (size_t)self->n, (size_t)i, &len);
            all = f->sub == ZT__M_ISDIGIT ? zt__is_number(c) : f->sub == ZT__M_ISALPHA ? zt__is_letter(c)
                : f->sub == ZT__M_ISALNUM ? zt__is_letter(c) || zt__is_number(c) : zt__jspace_at(self->u.s, self->n, i, &len);
        }
        return zt__jbool(all);
    }
    case ZT__M_ISLOWER: case ZT__M_ISUPPER: {
        zt__jargs none;
        memset(&none, 0, sizeof none);
        return zt__jbool(zt__jtest(R, self, f->sub == ZT__M_ISLOWER ? "lower" : "upper", 5, &none));
    }
    case ZT__M_SPLITLINES: { /* at each line break, none kept, no empty line after the last */
        zt__jv *items = zt__jitems(R, self->n + 1);
        int64_t m = 0, b = 0;
        for (int64_t i = 0; i < self->n;) {
            int br = zt__jline_break(self->u.s, self->n, i);
            if (!br) {
                i++;
                continue;
            }
            items[m++] = zt__jstr(self->u.s + b, i - b);
            i += br, b = i;
        }
        if (b < self->n) items[m++] = zt__jstr(self->u.s + b, self->n - b);
        return zt__jlist(items, m);
    }
    case ZT__M_RFIND: case ZT__M_INDEX: {
        if (a->n < 1) zt__jfail(R, "rfind and index need an argument");
        zt__jv q = zt__jstr_arg(R, &a->pos[0], "the text to find");
        zt__jwork(R, self->n * (q.n ? q.n : 1));
        int64_t at = -1; /* rfind: the last match; index: the first */
        for (int64_t i = 0; i + q.n <= self->n && !(at >= 0 && f->sub == ZT__M_INDEX); i++)
            if (memcmp(self->u.s + i, q.u.s, (size_t)q.n) == 0) at = i;
        if (at < 0 && f->sub == ZT__M_INDEX) zt__jfail(R, "index: \"%.*s\" is not in the string", (int)(q.n < 60 ? q.n : 60), q.u.s);
        return zt__jint(at < 0 ? -1 : zt__jcps(self->u.s, at));
    }
    case ZT__M_REMOVEPREFIX: case ZT__M_REMOVESUFFIX: {
        if (a->n < 1) zt__jfail(R, "removeprefix and removesuffix need an argument");
        zt__jv q = zt__jstr_arg(R, &a->pos[0], "the affix");
        int pre = f->sub == ZT__M_REMOVEPREFIX;
        if (q.n > self->n || memcmp(self->u.s + (pre ? 0 : self->n - q.n), q.u.s, (size_t)q.n) != 0) return *self;
        return zt__jstr(self->u.s + (pre ? q.n : 0), self->n - q.n);
    }
    case ZT__M_CASEFOLD: return zt__jcase(R, self, 2);
    case ZT__M_SWAPCASE: {
        char *o = zt__jchars(R, self->n);
        for (int64_t i = 0; i < self->n; i++) {
            char c = self->u.s[i];
            o[i] = (c | 32) >= 'a' && (c | 32) <= 'z' ? (char)(c ^ 32) : c;
        }
        o[self->n] = 0;
        return zt__jstr(o, self->n);
    }
    case ZT__M_ITEMS: case ZT__M_KEYS: case ZT__M_VALUES: {
        const zt__jdict *d = self->u.d;
        zt__jv *items = zt__jitems(R, d->n);
        for (int64_t i = 0; i < d->n; i++) {
            if (f->sub == ZT__M_ITEMS) {
                zt__jv *pair = zt__jitems(R, 2);
                pair[0] = d->keys[i], pair[1] = d->vals[i];
                items[i] = zt__jlist(pair, 2), items[i].sub = 1;
            } else {
                items[i] = f->sub == ZT__M_KEYS ? d->keys[i] : d->vals[i];
            }
        }
        return zt__jlist(items, d->n);
    }
    default: { /* get */
        if (a->n < 1) zt__jfail(R, "get needs a key");
        for (int64_t i = 0; i < self->u.d->n; i++)
            if (zt__jeq(R, &self->u.d->keys[i], &a->pos[0])) return self->u.d->vals[i];
        return a->n > 1 ? a->pos[1] : zt__jnone();
    }
    }
}

static int zt__jtest(zt__jr *R, const zt__jv *v, const char *s, int64_t n, const zt__jargs *a) {
    int t = zt__jfind_id(zt__jtests, ZT__N(zt__jtests), s, n);
    const zt__jv *x = a && a->n ? &a->pos[0] : NULL;
    if (t >= ZT__IS_DIVISIBLEBY && !x) zt__jfail(R, "the test '%.*s' needs an argument", (int)n, s);
    switch (t) {
    case ZT__IS_DEFINED: return v->type != ZT__JU;
    case ZT__IS_UNDEFINED: return v->type == ZT__JU;
    case ZT__IS_NONE: return v->type == ZT__JNONE;
    case ZT__IS_STRING: return v->type == ZT__JSTR;
    case ZT__IS_NUMBER: return v->type == ZT__JINT || v->type == ZT__JFLOAT || v->type == ZT__JBOOL;
    case ZT__IS_INTEGER: return v->type == ZT__JINT;
    case ZT__IS_FLOAT: return v->type == ZT__JFLOAT;
    case ZT__IS_MAPPING: return v->type == ZT__JDICT && !v->sub;
    case ZT__IS_ITERABLE: return v->type == ZT__JSTR || v->type == ZT__JLIST || v->type == ZT__JDICT || v->type == ZT__JU;
    case ZT__IS_SEQUENCE: /* Jinja's undefined is an empty sequence, too */
        return v->type == ZT__JSTR || v->type == ZT__JLIST || (v->type == ZT__JDICT && !v->sub) || v->type == ZT__JU;
    case ZT__IS_BOOLEAN: return v->type == ZT__JBOOL;
    case ZT__IS_TRUE: return v->type == ZT__JBOOL && v->u.i;
    case ZT__IS_FALSE: return v->type == ZT__JBOOL && !v->u.i;
    case ZT__IS_EVEN: case ZT__IS_ODD: {
        if (!zt__jnum(v)) zt__jfail(R, "'even' and 'odd' need a number, found %s", zt__jtype_name(v));
        double r = fmod(zt__jf(v), 2);
        return v->type == ZT__JFLOAT ? (t == ZT__IS_ODD ? fabs(r) == 1 : r == 0) : (v->u.i % 2 != 0) == (t == ZT__IS_ODD);
    }
    case ZT__IS_LOWER: case ZT__IS_UPPER: { /* str(value).islower(): some cased letter, and none of the other case */
        zt__jv str = zt__jto_str(R, v);
        int cased = 0;
        for (int64_t i = 0; i < str.n; i++) {
            char c = str.u.s[i];
            if (t == ZT__IS_LOWER ? (c >= 'A' && c <= 'Z') : (c >= 'a' && c <= 'z')) return 0;
            cased |= (c | 32) >= 'a' && (c | 32) <= 'z';
        }
        return cased;
    }
    case ZT__IS_CALLABLE: return v->type == ZT__JFN || v->type == ZT__JMACRO || v->type == ZT__JU;
    case ZT__IS_DIVISIBLEBY: {
        int64_t d = zt__jint_of(R, x, "divisibleby's argument");
        if (d == 0) zt__jfail(R, "divisibleby 0");
        return zt__jint_of(R, v, "the value of 'divisibleby'") % d == 0;
    }
    case ZT__IS_IN: return zt__jcontains(R, x, v);
    case ZT__IS_EQ: return zt__jeq(R, v, x);
    case ZT__IS_NE: return !zt__jeq(R, v, x);
    case ZT__IS_LT: return zt__jcmp(R, v, x) < 0;
    case ZT__IS_LE: return zt__jcmp(R, v, x) <= 0;
    case ZT__IS_GT: return zt__jcmp(R, v, x) > 0;
    case ZT__IS_GE: return zt__jcmp(R, v, x) >= 0;
    case ZT__IS_SAMEAS: return v->type == x->type && zt__jeq(R, v, x) && (v->type != ZT__JLIST || v->u.items == x->u.items);
    default: zt__jfail(R, "'%.*s' is not a test zt's chat templates know", (int)(n < 40 ? n : 40), s);
    }
}

static zt__jv zt__jfilter(zt__jr *R, const zt__jv *v, const char *s, int64_t n, const zt__jargs *a);


/* the items a filter or a loop goes through: a list's, a dict's keys, a string's characters */
static zt__jv zt__jseq(zt__jr *R, const zt__jv *v, const char *what) {
    if (v->type == ZT__JLIST) return *v;
    if (v->type == ZT__JU) return zt__jlist(NULL, 0);
    if (v->type == ZT__JDICT && !v->sub) {
        zt__jv *items = zt__jitems(R, v->u.d->n);
        for (int64_t i = 0; i < v->u.d->n; i++) items[i] = v->u.d->keys[i];
        return zt__jlist(items, v->u.d->n);
    }
    if (v->type == ZT__JSTR) {
        int64_t n = zt__jcps(v->u.s, v->n), *at = zt__jcp_starts(R, v->u.s, v->n, n);
        zt__jv *items = zt__jitems(R, n);
        R->steps += n;
        for (int64_t i = 0; i < n; i++) items[i] = zt__jstr(v->u.s + at[i], at[i + 1] - at[i]);
        return zt__jlist(items, n);
    }
    zt__jfail(R, "%s needs a list, found %s", what, zt__jtype_name(v));
    return *v;
}

/* an attribute path "a.b" of x, for map, selectattr, sort and join */
static zt__jv zt__jattr_path(zt__jr *R, const zt__jv *x, const zt__jv *path) {
    zt__jv v = *x;
    for (int64_t i = 0, b = 0; i <= path->n; i++) {
        if (i < path->n && path->u.s[i] != '.') continue;
        if (v.type == ZT__JU) return v;
        int digits = i > b;
        for (int64_t k = b; k < i; k++) digits &= path->u.s[k] >= '0' && path->u.s[k] <= '9';
        zt__jv key = digits ? zt__jint(strtoll(path->u.s + b, NULL, 10)) : zt__jstr(path->u.s + b, i - b);
        v = zt__jitem(R, &v, &key);
        b = i + 1;
    }
    return v;
}

/* select, reject, selectattr, rejectattr: a test with the rest of the arguments */
static zt__jv zt__jselect(zt__jr *R, const zt__jv *seq, const zt__jargs *a, int attr, int keep) {
    zt__jv list = zt__jseq(R, seq, "select");
    zt__jv *items = zt__jitems(R, list.n);
    int64_t m = 0;
    int first = attr ? 1 : 0;
    if (attr && (a->n < 1 || a->pos[0].type != ZT__JSTR)) zt__jfail(R, "selectattr and rejectattr need an attribute's name");
    zt__jargs rest; /* the test's own arguments: what follows its name */
    memset(&rest, 0, sizeof rest);
    if (a->n > first + 1) rest.pos = a->pos + first + 1, rest.n = a->n - first - 1;
    const zt__jv *test = a->n > first ? &a->pos[first] : NULL;
    if (test && test->type != ZT__JSTR) zt__jfail(R, "a test's name must be a string");
    for (int64_t i = 0; i < list.n; i++) {
        zt__jv x = attr ? zt__jattr_path(R, &list.u.items[i], &a->pos[0]) : list.u.items[i];
        int ok = test ? zt__jtest(R, &x, test->u.s, test->n, &rest) : zt__jtruthy(&x);
        if (ok == keep) items[m++] = list.u.items[i];
    }
    return zt__jlist(items, m);
}

/* the key Jinja sorts, compares and dedupes by: an attribute path's value, lowercased unless case counts */
static zt__jv zt__jkey(zt__jr *R, const zt__jv *x, const zt__jv *attr, int case_sensitive) {
    zt__jv k = attr ? zt__jattr_path(R, x, attr) : *x;
    return k.type == ZT__JSTR && !case_sensitive ? zt__jcase(R, &k, 2) : k;
}

/* a stable merge sort of items by their keys (keys[i] belongs to items[i]) */
static void zt__jsort(zt__jr *R, zt__jv *items, int64_t n, const zt__jv *attr, int reverse, int case_sensitive) {
    zt__jv *keys = zt__jitems(R, n), *tmp = zt__jitems(R, 2 * n);
    for (int64_t i = 0; i < n; i++) keys[i] = zt__jkey(R, &items[i], attr, case_sensitive);
    for (int64_t w = 1; w < n; w *= 2)
        for (int64_t lo = 0; lo < n - w; lo += 2 * w) {
            int64_t mid = lo + w, hi = ZT__MIN(lo + 2 * w, n), a = lo, b = mid, m = 0;
            while (a < mid || b < hi) {
                int take_b = a >= mid || (b < hi && (reverse ? zt__jcmp(R, &keys[b], &keys[a]) > 0 : zt__jcmp(R, &keys[b], &keys[a]) < 0));
                int64_t from = take_b ? b++ : a++;
                tmp[m] = items[from], tmp[n + m] = keys[from], m++;
                zt__jstep(R);
            }
            memcpy(items + lo, tmp, sizeof(zt__jv) * (size_t)m), memcpy(keys + lo, tmp + n, sizeof(zt__jv) * (size_t)m);
        }
}

static zt__jv zt__jfilter(zt__jr *R, const zt__jv *v, const char *s, int64_t n, const zt__jargs *a) {
    int f = zt__jfind_id(zt__jfilters, ZT__N(zt__jfilters), s, n);
    const zt__jv *x = zt__jarg(a, 0, NULL);
    char what[64];
    snprintf(what, sizeof what, "the value of '|%.*s'", (int)(n < 20 ? n : 20), s);
    switch (f) {
    case ZT__FL_TRIM: {
        zt__jv t = zt__jto_str(R, v);
        return zt__jstrip(&t, zt__jarg_str(R, a, 0, "chars", "trim's characters"), 1, 1);
    }
    case ZT__FL_LENGTH: return zt__jint(zt__jlen(R, v));
    case ZT__FL_TOJSON: { /* transformers' tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False) */
        const zt__jv *asc = zt__jarg(a, 0, "ensure_ascii"), *ind = zt__jarg(a, 1, "indent"), *sep = zt__jarg(a, 2, "separators"),
                     *sk = zt__jarg(a, 3, "sort_keys");
        zt__jjson o;
        memset(&o, 0, sizeof o);
        o.item_sep = ", ", o.key_sep = ": ", o.sort = sk && zt__jtruthy(sk), o.ascii = asc && zt__jtruthy(asc);
        if (ind && ind->type != ZT__JNONE) { /* a number of spaces (none below 1), or a string */
            o.pretty = 1, o.item_sep = ",";
            o.indent = ind->type == ZT__JSTR ? *ind : zt__jint(ZT__MAX(zt__jint_of(R, ind, "tojson's indent"), 0));
            if (o.indent.type != ZT__JSTR && o.indent.u.i > 64) zt__jfail(R, "tojson's indent of %lld is too wide", (long long)o.indent.u.i);
        }
        char seps[2][64];
        if (sep && sep->type != ZT__JNONE) {
            if (sep->type != ZT__JLIST || sep->n != 2) zt__jfail(R, "tojson's separators must be two strings");
            for (int k = 0; k < 2; k++) {
                zt__jv q = zt__jstr_arg(R, &sep->u.items[k], "a separator");
                snprintf(seps[k], sizeof seps[k], "%.*s", (int)(q.n < 63 ? q.n : 63), q.u.s);
            }
            o.item_sep = seps[0], o.key_sep = seps[1];
        }
        zt__jbuf b = {R, NULL, 0, 0};
        zt__jjson_write(&b, v, &o, 0);
        return zt__jstr(b.p, b.n);
    }
    case ZT__FL_UPPER: case ZT__FL_LOWER: case ZT__FL_TITLE: case ZT__FL_CAPITALIZE: {
        zt__jv t = zt__jto_str(R, v);
        return zt__jcase(R, &t, f == ZT__FL_UPPER ? 1 : f == ZT__FL_LOWER ? 2 : f == ZT__FL_TITLE ? 5 : 4);
    }
    case ZT__FL_DEFAULT: {
        const zt__jv *b = zt__jarg(a, 1, "boolean");
        int use = v->type == ZT__JU || (b && zt__jtruthy(b) && !zt__jtruthy(v));
        return use ? (x ? *x : zt__jstr("", 0)) : *v;
    }
    case ZT__FL_FIRST: case ZT__FL_LAST: {
        zt__jv l = zt__jseq(R, v, what);
        return l.n ? l.u.items[f == ZT__FL_FIRST ? 0 : l.n - 1] : zt__jundef("item", 4);
    }
    case ZT__FL_JOIN: {
        zt__jv l = zt__jseq(R, v, what), sep = x ? zt__jto_str(R, x) : zt__jstr("", 0);
        const zt__jv *attr = zt__jarg_str(R, a, 1, "attribute", "join's attribute");
        zt__jbuf b = {R, NULL, 0, 0};
        for (int64_t i = 0; i < l.n; i++) {
            if (i) zt__jput(&b, sep.u.s, sep.n);
            zt__jv it = attr ? zt__jattr_path(R, &l.u.items[i], attr) : l.u.items[i];
            zt__jv t = zt__jto_str(R, &it);
            zt__jput(&b, t.u.s, t.n);
        }
        return b.p ? zt__jstr(b.p, b.n) : zt__jstr("", 0);
    }
    case ZT__FL_STRING: return zt__jto_str(R, v);
    case ZT__FL_SAFE: return *v;
    case ZT__FL_INT: case ZT__FL_FLOAT: { /* with a default for what does not read as a number */
        double d = 0;
        int ok = 1;
        if (zt__jnum(v)) {
            if (f == ZT__FL_INT && v->type != ZT__JFLOAT) return zt__jint(v->u.i);
            d = zt__jf(v);
        } else if (v->type == ZT__JSTR) {
            char num[64], *end;
            snprintf(num, sizeof num, "%.*s", (int)(v->n < 63 ? v->n : 63), v->u.s);
            d = strtod(num, &end);
            while (*end && zt__jws(*end)) end++;
            ok = end != num && !*end && !strpbrk(num, "xXpP"); /* Python reads no hexadecimal floats */
        } else {
            ok = 0;
        }
        if (ok && f == ZT__FL_INT && !isfinite(d)) ok = 0; /* int(inf) and int(nan) fail: the default */
        if (!ok) return x ? *x : f == ZT__FL_INT ? zt__jint(0) : zt__jfloat(0);
        if (f == ZT__FL_FLOAT) return zt__jfloat(d);
        return fabs(d) < 9.2e18 ? zt__jint((int64_t)d) : zt__jfloat(trunc(d)); /* past int64: a float of its value */
    }
    case ZT__FL_LIST: return zt__jseq(R, v, what);
    case ZT__FL_REVERSE: {
        if (v->type == ZT__JSTR) {
            zt__jv m1 = zt__jint(-1);
            return zt__jslice(R, v, NULL, NULL, &m1);
        }
        zt__jv l = zt__jseq(R, v, what), *items = zt__jitems(R, l.n);
        for (int64_t i = 0; i < l.n; i++) items[i] = l.u.items[l.n - 1 - i];
        return zt__jlist(items, l.n);
    }
    case ZT__FL_ITEMS: {
        if (v->type == ZT__JU) return zt__jlist(NULL, 0);
        if (v->type != ZT__JDICT) zt__jfail(R, "|items needs a dict, found %s", zt__jtype_name(v));
        zt__jv m = zt__jfn(R, ZT__M_ITEMS, v);
        zt__jargs none;
        memset(&none, 0, sizeof none);
        return zt__jcall(R, &m, &none);
    }
    case ZT__FL_MAP: { /* map(attribute=..., default=...) or map('filter', args...) */
        zt__jv l = zt__jseq(R, v, what), *items = zt__jitems(R, l.n);
        const zt__jv *attr = zt__jarg_str(R, a, -1, "attribute", "map's attribute"), *def = zt__jarg(a, -1, "default");
        if (!attr && (!x || x->type != ZT__JSTR)) zt__jfail(R, "map needs attribute= or a filter's name");
        zt__jargs rest; /* the filter's own arguments: what follows its name */
        memset(&rest, 0, sizeof rest);
        if (a->n > 1) rest.pos = a->pos + 1, rest.n = a->n - 1;
        for (int64_t i = 0; i < l.n; i++) {
            if (attr) {
                items[i] = zt__jattr_path(R, &l.u.items[i], attr);
                if (items[i].type == ZT__JU && def) items[i] = *def;
            } else {
                items[i] = zt__jfilter(R, &l.u.items[i], x->u.s, x->n, &rest);
            }
        }
        return zt__jlist(items, l.n);
    }
    case ZT__FL_SELECT: case ZT__FL_REJECT: return zt__jselect(R, v, a, 0, f == ZT__FL_SELECT);
    case ZT__FL_SELECTATTR: case ZT__FL_REJECTATTR: return zt__jselect(R, v, a, 1, f == ZT__FL_SELECTATTR);
    case ZT__FL_REPLACE: {
        if (a->n < 2) zt__jfail(R, "|replace needs two arguments");
        zt__jv t = zt__jto_str(R, v), o = zt__jto_str(R, &a->pos[0]), w = zt__jto_str(R, &a->pos[1]);
        return zt__jreplace(R, &t, &o, &w, a->n > 2 ? zt__jint_of(R, &a->pos[2], "replace's count") : -1);
    }
    case ZT__FL_INDENT: { /* indent(width=4, first=False, blank=False) */
        zt__jv t = zt__jto_str(R, v);
        const zt__jv *w = zt__jarg(a, 0, "width"), *fi = zt__jarg(a, 1, "first"), *bl = zt__jarg(a, 2, "blank");
        zt__jv pad = w && w->type == ZT__JSTR ? *w : zt__jstr("", 0);
        int64_t width = w && w->type != ZT__JSTR ? zt__jint_of(R, w, "indent's width") : w ? 0 : 4;
        if (width > 4096) zt__jfail(R, "indent's width %lld is too wide", (long long)width);
        zt__jbuf ind = {R, NULL, 0, 0}, b = {R, NULL, 0, 0};
        zt__jput(&ind, pad.u.s, pad.n);
        for (int64_t k = 0; k < width; k++) zt__jput(&ind, " ", 1);
        /* Jinja's: the text's lines (str.splitlines, of the text and a "\n"), joined by "\n"; each after the
           first indented unless blank (blank=True: those too); first=True indents the first as well */
        int64_t line = 0;
        for (int64_t i = 0; i < t.n + 1; line++) {
            int64_t e = i, next;
            while (e < t.n && !zt__jline_break(t.u.s, t.n, e)) e++;
            next = e < t.n ? e + zt__jline_break(t.u.s, t.n, e) : e + 1;
            if (line) zt__jput(&b, "\n", 1);
            if ((line == 0 && fi && zt__jtruthy(fi)) || (line > 0 && (e > i || (bl && zt__jtruthy(bl))))) zt__jput(&b, ind.p, ind.n);
            zt__jput(&b, t.u.s + i, e - i);
            i = next;
        }
        return b.p ? zt__jstr(b.p, b.n) : zt__jstr("", 0);
    }
    case ZT__FL_ABS:
        if (!zt__jnum(v)) zt__jfail(R, "|abs needs a number, found %s", zt__jtype_name(v));
        if (v->type == ZT__JFLOAT || v->u.i == INT64_MIN) return zt__jfloat(fabs(zt__jf(v)));
        return zt__jint(v->u.i < 0 ? -v->u.i : v->u.i);
    case ZT__FL_ROUND: { /* round(precision=0, method='common') */
        if (!zt__jnum(v)) zt__jfail(R, "|round needs a number, found %s", zt__jtype_name(v));
        const zt__jv *p = zt__jarg(a, 0, "precision"), *m = zt__jarg_str(R, a, 1, "method", "round's method");
        int64_t digits = p ? zt__jint_of(R, p, "round's precision") : 0;
        int common = !m || zt__jstreq(m, "common", 6);
        if (common && v->type != ZT__JFLOAT && digits >= 0) return zt__jint(v->u.i); /* Python's round keeps an int */
        if (common && digits >= 0 && digits <= 300) { /* Python's round: the exact value, half to even */
            char num[400];
            snprintf(num, sizeof num, "%.*f", (int)digits, zt__jf(v));
            return zt__jfloat(strtod(num, NULL));
        }
        double scale = pow(10, (double)ZT__MAX(ZT__MIN(digits, 300), -300)), d = zt__jf(v) * scale;
        d = m && zt__jstreq(m, "floor", 5) ? floor(d) : m && zt__jstreq(m, "ceil", 4) ? ceil(d) : nearbyint(d);
        d /= scale;
        return v->type != ZT__JFLOAT && fabs(d) < 9e18 ? zt__jint((int64_t)d) : zt__jfloat(d);
    }
    case ZT__FL_UNIQUE: { /* unique(case_sensitive=False, attribute=None): the first of each key */
        zt__jv l = zt__jseq(R, v, what), *items = zt__jitems(R, l.n), *keys = zt__jitems(R, l.n);
        const zt__jv *cs = zt__jarg(a, 0, "case_sensitive"), *attr = zt__jarg_str(R, a, 1, "attribute", "the attribute");
        int64_t m = 0;
        for (int64_t i = 0; i < l.n; i++) {
            zt__jv k = zt__jkey(R, &l.u.items[i], attr, cs && zt__jtruthy(cs));
            int seen = 0;
            R->steps += m >> 4; /* a comparison is a sixteenth of a step: thousands of items stay cheap */
            zt__jstep(R);
            for (int64_t j = 0; j < m && !seen; j++) seen = zt__jeq(R, &keys[j], &k);
            if (!seen) keys[m] = k, items[m++] = l.u.items[i];
        }
        return zt__jlist(items, m);
    }
    case ZT__FL_SUM: { /* sum(attribute=None, start=0) */
        zt__jv l = zt__jseq(R, v, what), total = zt__jint(0);
        const zt__jv *attr = zt__jarg_str(R, a, 0, "attribute", "sum's attribute"), *start = zt__jarg(a, 1, "start");
        if (start) total = *start;
        for (int64_t i = 0; i < l.n; i++) {
            zt__jv it = attr ? zt__jattr_path(R, &l.u.items[i], attr) : l.u.items[i];
            total = zt__jarith(R, '+', &total, &it);
        }
        return total;
    }
    case ZT__FL_MIN: case ZT__FL_MAX: { /* min(case_sensitive=False, attribute=None) */
        zt__jv l = zt__jseq(R, v, what);
        if (!l.n) return zt__jundef("item", 4);
        const zt__jv *cs = zt__jarg(a, 0, "case_sensitive"), *attr = zt__jarg_str(R, a, 1, "attribute", "the attribute");
        int64_t best = 0;
        zt__jv key = zt__jkey(R, &l.u.items[0], attr, cs && zt__jtruthy(cs));
        for (int64_t i = 1; i < l.n; i++) {
            zt__jv k = zt__jkey(R, &l.u.items[i], attr, cs && zt__jtruthy(cs));
            int c = zt__jcmp(R, &k, &key);
            if (f == ZT__FL_MIN ? c < 0 : c > 0) best = i, key = k;
        }
        return l.u.items[best];
    }
    case ZT__FL_SORT: { /* sort(reverse=False, case_sensitive=False, attribute=None) */
        zt__jv l = zt__jseq(R, v, what), *items = zt__jitems(R, l.n);
        if (l.n) memcpy(items, l.u.items, sizeof(zt__jv) * (size_t)l.n);
        const zt__jv *rev = zt__jarg(a, 0, "reverse"), *cs = zt__jarg(a, 1, "case_sensitive");
        const zt__jv *attr = zt__jarg_str(R, a, 2, "attribute", "sort's attribute");
        zt__jsort(R, items, l.n, attr, rev && zt__jtruthy(rev), cs && zt__jtruthy(cs));
        return zt__jlist(items, l.n);
    }
    case ZT__FL_DICTSORT: { /* the items by key */
        if (v->type != ZT__JDICT) zt__jfail(R, "|dictsort needs a dict, found %s", zt__jtype_name(v));
        zt__jv m = zt__jfn(R, ZT__M_ITEMS, v), zero = zt__jstr("0", 1);
        zt__jargs none;
        memset(&none, 0, sizeof none);
        zt__jv l = zt__jcall(R, &m, &none);
        const zt__jv *cs = zt__jarg(a, 0, "case_sensitive"), *by = zt__jarg_str(R, a, 1, "by", "dictsort's by");
        const zt__jv *rev = zt__jarg(a, 2, "reverse");
        zt__jv one = zt__jstr("1", 1);
        zt__jsort(R, l.u.items, l.n, by && zt__jstreq(by, "value", 5) ? &one : &zero, rev && zt__jtruthy(rev), cs && zt__jtruthy(cs));
        return l;
    }
    case ZT__FL_WORDCOUNT: { /* runs of \\w: letters, digits and "_" (any non-ASCII byte taken for a letter) */
        zt__jv t = zt__jto_str(R, v);
        int64_t words = 0;
        for (int64_t i = 0, in = 0; i < t.n; i++) {
            char c = t.u.s[i];
            int w = ((c | 32) >= 'a' && (c | 32) <= 'z') || (c >= '0' && c <= '9') || c == '_' || ((uint8_t)c & 0x80);
            words += w && !in;
            in = w;
        }
        return zt__jint(words);
    }
    default: zt__jfail(R, "'%.*s' is not a filter zt's chat templates know", (int)(n < 40 ? n : 40), s);
    }
    return *v;
}

static zt__jv zt__jeval(zt__jr *R, const zt__jn *e) {
    zt__jstep(R);
    if (++R->depth > ZT__J_EVAL_DEPTH) zt__jfail(R, "expressions nested more than %d deep", ZT__J_EVAL_DEPTH);
    int line = R->line;
    R->line = e->line;
    zt__jv v = zt__jnone(), x, y;
    zt__jargs args;
    switch (e->kind) {
    case ZT__N_CONST: v = e->v; break;
    case ZT__N_NAME: v = zt__jvar(R, e->s, e->n); break;
    case ZT__N_ATTR: x = zt__jeval(R, e->a), v = zt__jattr(R, &x, e->s, e->n); break;
    case ZT__N_INDEX: x = zt__jeval(R, e->a), y = zt__jeval(R, e->b), v = zt__jitem(R, &x, &y); break;
    case ZT__N_SLICE: {
        zt__jv p[3];
        x = zt__jeval(R, e->a);
        const zt__jn *parts[3] = {e->b, e->c, e->d};
        for (int k = 0; k < 3; k++) p[k] = parts[k] ? zt__jeval(R, parts[k]) : zt__jnone();
        v = zt__jslice(R, &x, &p[0], &p[1], &p[2]);
        break;
    }
    case ZT__N_CALL:
        x = zt__jeval(R, e->a);
        zt__jeval_args(R, e->b, &args);
        R->line = e->line;
        v = zt__jcall(R, &x, &args);
        break;
    case ZT__N_FILTER:
        x = zt__jeval(R, e->a);
        zt__jeval_args(R, e->b, &args);
        R->line = e->line;
        v = zt__jfilter(R, &x, e->s, e->n, &args);
        break;
    case ZT__N_TEST:
        x = zt__jeval(R, e->a);
        zt__jeval_args(R, e->b, &args);
        R->line = e->line;
        v = zt__jbool(zt__jtest(R, &x, e->s, e->n, &args) != e->op);
        break;
    case ZT__N_NEG:
    case ZT__N_POS: {
        x = zt__jeval(R, e->a);
        zt__jundefined(R, &x);
        zt__jv zero = zt__jint(0);
        if (!zt__jnum(&x)) zt__jfail(R, "unary %c needs a number, found %s", e->kind == ZT__N_NEG ? '-' : '+', zt__jtype_name(&x));
        v = e->kind == ZT__N_POS ? x : x.type == ZT__JFLOAT ? zt__jfloat(-x.u.f) : zt__jarith(R, '-', &zero, &x);
        break;
    }
    case ZT__N_NOT: x = zt__jeval(R, e->a), v = zt__jbool(!zt__jtruthy(&x)); break;
    case ZT__N_AND: v = zt__jeval(R, e->a); if (zt__jtruthy(&v)) v = zt__jeval(R, e->b); break;
    case ZT__N_OR: v = zt__jeval(R, e->a); if (!zt__jtruthy(&v)) v = zt__jeval(R, e->b); break;
    case ZT__N_BIN:
        x = zt__jeval(R, e->a), y = zt__jeval(R, e->b);
        R->line = e->line;
        if (e->op != '~') zt__jundefined(R, &x), zt__jundefined(R, &y);
        v = zt__jarith(R, e->op, &x, &y);
        break;
    case ZT__N_CMP: {
        x = zt__jeval(R, e->a);
        v = zt__jbool(1);
        for (const zt__jn *link = e->b; link; link = link->next) {
            y = zt__jeval(R, link->a);
            R->line = e->line;
            int ok;
            switch (link->op) {
            case ZT__CMP_EQ: ok = zt__jeq(R, &x, &y); break;
            case ZT__CMP_NE: ok = !zt__jeq(R, &x, &y); break;
            case ZT__CMP_LT: ok = zt__jcmp(R, &x, &y) < 0; break;
            case ZT__CMP_LE: ok = zt__jcmp(R, &x, &y) <= 0; break;
            case ZT__CMP_GT: ok = zt__jcmp(R, &x, &y) > 0; break;
            case ZT__CMP_GE: ok = zt__jcmp(R, &x, &y) >= 0; break;
            case ZT__CMP_IN: ok = zt__jcontains(R, &y, &x); break;
            default: ok = !zt__jcontains(R, &y, &x);
            }
            if (!ok) {
                v = zt__jbool(0);
                break;
            }
            x = y;
        }
        break;
    }
    case ZT__N_COND:
        x = zt__jeval(R, e->b);
        v = zt__jtruthy(&x) ? zt__jeval(R, e->a) : e->c ? zt__jeval(R, e->c) : zt__jundef("", 0);
        break;
    case ZT__N_LIST:
    case ZT__N_TUPLE: {
        int64_t n = 0;
        for (const zt__jn *i = e->b; i; i = i->next) n++;
        zt__jv *items = zt__jitems(R, n);
        n = 0;
        for (const zt__jn *i = e->b; i; i = i->next) items[n++] = zt__jeval(R, i);
        v = zt__jlist(items, n);
        v.sub = e->kind == ZT__N_TUPLE;
        break;
    }
    case ZT__N_DICT:
        v = zt__jdict_new(R, 0);
        for (const zt__jn *p = e->b; p; p = p->next) {
            x = zt__jeval(R, p->a), y = zt__jeval(R, p->b);
            zt__jdict_set(R, v.u.d, x, y);
        }
        break;
    default: zt__jfail(R, "internal: node %d is not an expression", e->kind);
    }
    R->line = line;
    R->depth--;
    return v;
}

/* ---- statements ---- */

static void zt__jout(zt__jr *R, const char *s, int64_t n) {
    if (n <= 0) return;
    if (R->len + (size_t)n + 1 > R->cap) {
        size_t cap = ZT__MAX(2 * R->cap, R->len + (size_t)n + 4096);
        if (cap > ZT__J_BYTES) zt__jfail(R, "the template wrote more than %zu MiB", ZT__J_BYTES >> 20);
        char *p = zt__jchars(R, (int64_t)cap);
        if (R->len) memcpy(p, R->out, R->len);
        R->out = p, R->cap = cap;
    }
    memcpy(R->out + R->len, s, (size_t)n);
    R->len += (size_t)n;
    R->out[R->len] = 0;
}

static void zt__jexec(zt__jr *R, const zt__jn *s);

static void zt__jpush(zt__jr *R, zt__jscope *sc) {
    memset(sc, 0, sizeof *sc);
    sc->up = R->scope;
    R->scope = sc;
}

/* renders body into a string of its own (a macro's result, a set block) */
static zt__jv zt__jcapture(zt__jr *R, const zt__jn *body) {
    char *out = R->out;
    size_t len = R->len, cap = R->cap;
    int top = R->top;
    R->out = NULL, R->len = R->cap = 0, R->top = 0;
    zt__jexec(R, body);
    zt__jv v = R->out ? zt__jstr(R->out, (int64_t)R->len) : zt__jstr("", 0);
    R->out = out, R->len = len, R->cap = cap, R->top = top;
    return v;
}

static zt__jv zt__jmacro_call(zt__jr *R, const zt__jv *macro, const zt__jargs *a) {
    if (++R->depth > ZT__J_EVAL_DEPTH) zt__jfail(R, "macro calls nested more than %d deep", ZT__J_EVAL_DEPTH);
    const zt__jn *m = macro->u.macro;
    zt__jscope env, sc, *saved = R->scope; /* the template's variables, what the macro closed over, its arguments */
    R->scope = R->globals;
    if (macro->self) {
        zt__jpush(R, &env);
        env.vars = *macro->self->u.d;
    }
    zt__jpush(R, &sc);
    int i = 0;
    for (const zt__jn *p = m->b; p; p = p->next, i++) {
        const zt__jv *given = zt__jarg(a, i, NULL);
        for (int k = 0; !given && k < a->nk; k++)
            if (a->kl[k] == p->n && memcmp(a->kn[k], p->s, (size_t)p->n) == 0) given = &a->kv[k];
        zt__jv v = given ? *given : p->a ? zt__jeval(R, p->a) : zt__jundef(p->s, p->n);
        zt__jdict_set(R, &sc.vars, zt__jstr(p->s, p->n), v);
    }
    if (a->n > i) zt__jfail(R, "macro '%.*s' takes at most %d arguments, given %d", (int)m->n, m->s, i, a->n);
    for (int k = 0; k < a->nk; k++) {
        int known = 0;
        for (const zt__jn *p = m->b; p && !known; p = p->next) known = a->kl[k] == p->n && memcmp(a->kn[k], p->s, (size_t)p->n) == 0;
        if (!known) zt__jfail(R, "macro '%.*s' has no parameter '%.*s'", (int)m->n, m->s, (int)a->kl[k], a->kn[k]);
    }
    int ctl = R->ctl;
    R->ctl = 0;
    zt__jv v = zt__jcapture(R, m->c);
    R->ctl = ctl;
    R->scope = saved;
    R->depth--;
    return v;
}

static void zt__jfor(zt__jr *R, const zt__jn *s) {
    zt__jv it = zt__jeval(R, s->a);
    zt__jv list = zt__jseq(R, &it, "a for loop");
    zt__jv names[2] = {zt__jstr(s->s, s->n), zt__jstr(s->s2, s->n2)};
    zt__jscope sc;
    if (s->d) { /* for x in xs if cond: the loop sees only the items that pass */
        zt__jv *kept = zt__jitems(R, list.n);
        int64_t m = 0;
        for (int64_t i = 0; i < list.n; i++) {
            zt__jpush(R, &sc);
            zt__jdict_set(R, &sc.vars, names[0], list.u.items[i]);
            zt__jv c = zt__jeval(R, s->d);
            R->scope = sc.up;
            if (zt__jtruthy(&c)) kept[m++] = list.u.items[i];
        }
        list = zt__jlist(kept, m);
    }
    static const char *const fields[] = {"index", "index0", "revindex", "revindex0", "first", "last", "length",
                                         "previtem", "nextitem", "depth", "depth0"};
    zt__jv loop = zt__jdict_new(R, 0);
    for (int k = 0; k < 11; k++) zt__jdict_put(R, loop.u.d, fields[k], zt__jnone());
    zt__jpush(R, &sc); /* one scope for every pass, emptied at each: what a pass sets does not reach the next */
    for (int64_t i = 0; i < list.n; i++) {
        zt__jstep(R);
        sc.vars.n = 0;
        const zt__jv *item = &list.u.items[i];
        if (s->op) { /* for a, b in pairs */
            if (item->type != ZT__JLIST || item->n != 2) zt__jfail(R, "a loop over pairs found %s", zt__jtype_name(item));
            zt__jdict_set(R, &sc.vars, names[0], item->u.items[0]);
            zt__jdict_set(R, &sc.vars, names[1], item->u.items[1]);
        } else {
            zt__jdict_set(R, &sc.vars, names[0], *item);
        }
        zt__jv *f = loop.u.d->vals; /* in the order of fields */
        f[0] = zt__jint(i + 1), f[1] = zt__jint(i), f[2] = zt__jint(list.n - i), f[3] = zt__jint(list.n - i - 1);
        f[4] = zt__jbool(i == 0), f[5] = zt__jbool(i == list.n - 1), f[6] = zt__jint(list.n);
        f[7] = i > 0 ? list.u.items[i - 1] : zt__jundef("previtem", 8);
        f[8] = i + 1 < list.n ? list.u.items[i + 1] : zt__jundef("nextitem", 8);
        f[9] = zt__jint(1), f[10] = zt__jint(0); /* no recursive loops: always the first level */
        zt__jdict_put(R, &sc.vars, "loop", loop);
        zt__jexec(R, s->b);
        int ctl = R->ctl;
        R->ctl = 0;
        if (ctl == 1) break;
    }
    R->scope = sc.up;
    if (list.n == 0 && s->c) zt__jexec(R, s->c);
}

static void zt__jexec(zt__jr *R, const zt__jn *s) {
    for (; s && !R->ctl; s = s->next) {
        zt__jstep(R);
        R->line = s->line;
        switch (s->kind) {
        case ZT__N_TEXT: zt__jout(R, s->s, s->n); break;
        case ZT__N_OUT: {
            zt__jv v = zt__jeval(R, s->a);
            v = zt__jto_str(R, &v);
            zt__jout(R, v.u.s, v.n);
            break;
        }
        case ZT__N_IF: {
            zt__jv c = zt__jeval(R, s->a);
            zt__jexec(R, zt__jtruthy(&c) ? s->b : s->c);
            break;
        }
        case ZT__N_FOR: zt__jfor(R, s); break;
        case ZT__N_SET:
        case ZT__N_SETBLOCK: {
            zt__jv v;
            if (s->kind == ZT__N_SET) {
                v = zt__jeval(R, s->a);
            } else { /* what the block sets stays inside it */
                zt__jscope inner;
                zt__jpush(R, &inner);
                v = zt__jcapture(R, s->b);
                R->scope = inner.up;
            }
            if (s->op) {
                zt__jv ns = zt__jvar(R, s->s, s->n);
                if (ns.type != ZT__JDICT || !ns.sub)
                    zt__jfail(R, "'{%% set %.*s.%.*s %%}' needs a namespace(), found %s", (int)s->n, s->s, (int)s->n2, s->s2,
                              zt__jtype_name(&ns));
                zt__jv name = zt__jstr(s->s2, s->n2);
                zt__jns_name(R, &name);
                zt__jdict_set(R, ns.u.d, name, v);
            } else {
                zt__jdict_set(R, &R->scope->vars, zt__jstr(s->s, s->n), v);
            }
            break;
        }
        case ZT__N_MACRO: { /* with what the scopes around it hold now (a loop's variables), as a closure */
            zt__jv m = zt__jnone(), seen = zt__jdict_new(R, 0);
            m.type = ZT__JMACRO, m.u.macro = s;
            for (const zt__jscope *sc = R->scope; sc && sc != R->globals; sc = sc->up)
                for (int64_t k = 0; k < sc->vars.n; k++)
                    if (zt__jdict_find(seen.u.d, sc->vars.keys[k].u.s, sc->vars.keys[k].n) < 0)
                        zt__jdict_set(R, seen.u.d, sc->vars.keys[k], sc->vars.vals[k]);
            if (seen.u.d->n) {
                zt__jv *env = (zt__jv *)zt__jalloc(R, sizeof(zt__jv));
                *env = seen;
                m.self = env;
            }
            zt__jdict_set(R, &R->scope->vars, zt__jstr(s->s, s->n), m);
            break;
        }
        case ZT__N_BREAK: R->ctl = 1; break;
        case ZT__N_CONTINUE: R->ctl = 2; break;
        default: { /* generation: where the assistant's text is */
            size_t b = R->len;
            zt__jexec(R, s->b);
            zt_chat_template *c = R->c;
            if (!R->top) break; /* inside a macro's or set block's text: not a place in the output yet */
            if (c->n_spans + 1 > c->spans_cap) {
                int cap = c->spans_cap ? 2 * c->spans_cap : 16;
                int64_t *p = (int64_t *)realloc(c->spans, sizeof(int64_t) * 2 * (size_t)cap);
                if (!p) zt__jfail(R, "out of memory");
                c->spans = p, c->spans_cap = cap;
            }
            c->spans[2 * c->n_spans] = (int64_t)b, c->spans[2 * c->n_spans + 1] = (int64_t)R->len;
            c->n_spans++;
        }
        }
    }
}

/* renders the template with the variables of vars (a dict) into c->out and c->spans; the values made
   on the way stay in c->heap for the caller to release */
static zt_result zt__chat_run(zt_chat_template *c, const zt__jv *vars) {
    zt__jr R;
    memset(&R, 0, sizeof R);
    R.c = c, R.top = 1;
    c->n_spans = 0;
    zt__jscope given, top;
    memset(&given, 0, sizeof given);
    given.vars = *vars->u.d;
    R.scope = &given;
    zt__jpush(&R, &top); /* the template's own {% set %}s go here: the caller's variables stay as they are */
    R.globals = &top;
    if (setjmp(R.fail)) return zt_fail(ZT_ERROR_INVALID, "%s", c->msg);
    zt__jexec(&R, c->root);
    if (R.len + 1 > c->cap) {
        char *p = (char *)realloc(c->out, R.len + 1);
        if (!p) return zt_fail(ZT_ERROR_MEMORY, "out of memory rendering %s", c->name);
        c->out = p, c->cap = R.len + 1;
    }
    if (R.len) memcpy(c->out, R.out, R.len);
    c->out[R.len] = 0;
    c->len = R.len;
    return ZT_OK;
}

ZT_API void zt_chat_template_free(zt_chat_template *c) {
    if (!c) return;
    zt__jheap_free(&c->code);
    zt__jheap_free(&c->heap);
    free(c->src), free(c->tok), free(c->out), free(c->spans), free(c);
}

ZT_API zt_result zt_chat_template_compile(zt_chat_template **out, const char *source, size_t n, const char *name) {
    *out = NULL;
    zt_chat_template *c = (zt_chat_template *)calloc(1, sizeof *c);
    char *src = c ? (char *)malloc(n + 1) : NULL;
    if (!src) {
        free(c);
        return zt_fail(ZT_ERROR_MEMORY, "out of memory compiling a chat template");
    }
    snprintf(c->name, sizeof c->name, "%s", name ? name : "chat template");
    size_t m = 0;
    for (size_t i = 0; i < n; i++) { /* as Jinja: every newline "\n", and one at the very end dropped */
        if (source[i] == '\r') {
            src[m++] = '\n';
            if (i + 1 < n && source[i + 1] == '\n') i++;
        } else {
            src[m++] = source[i];
        }
    }
    if (m && src[m - 1] == '\n') m--;
    src[m] = 0;
    c->src = src, c->n = m;
    if (memchr(src, 0, m)) {
        zt_result r = zt_fail(ZT_ERROR_FORMAT, "%s: a NUL byte in the template", c->name);
        zt_chat_template_free(c);
        return r;
    }
    if (setjmp(c->fail)) {
        zt_result r = zt_fail(ZT_ERROR_FORMAT, "%s", c->msg);
        zt_chat_template_free(c);
        return r;
    }
    zt__jlex(c);
    int which = 0;
    c->root = zt__jparse_body(c, NULL, 0, &which);
    free(c->tok);
    c->tok = NULL, c->ntok = c->tok_cap = 0;
    *out = c;
    return ZT_OK;
}

/* the variables of a JSON object, as values in c->heap; messages lose their null fields and have their
   reasoning ("reasoning_content", "thinking" or "reasoning") under the first two names, as transformers
   prepares them before rendering */
static zt_result zt__chat_vars(zt_chat_template *c, const char *json, size_t n, const char *where, zt__jv *vars) {
    zt_arena a;
    void *mem = zt__setup_arena(&a, "chat JSON", zt__json_token_bytes(n));
    zt__json j;
    zt_result r = zt__json_parse(&j, &a, where, json, n);
    zt__jr R;
    memset(&R, 0, sizeof R);
    R.c = c, R.where = where;
    if (r != ZT_OK) {
        free(mem);
        return r;
    }
    if (setjmp(R.fail)) {
        r = zt_fail(ZT_ERROR_INVALID, "%s", c->msg);
    } else {
        int t = 0;
        *vars = zt__jfrom_json(&R, &j, &t);
        static const char *const given[] = {"tools", "documents", "add_generation_prompt"}; /* as apply_chat_template */
        for (int k = 0; k < 3; k++)
            if (zt__jdict_find(vars->u.d, given[k], (int64_t)strlen(given[k])) < 0)
                zt__jdict_put(&R, vars->u.d, given[k], k < 2 ? zt__jnone() : zt__jbool(0));
        int64_t mi = zt__jdict_find(vars->u.d, "messages", 8);
        zt__jv *msgs = mi >= 0 ? &vars->u.d->vals[mi] : NULL;
        for (int64_t i = 0; msgs && msgs->type == ZT__JLIST && i < msgs->n; i++) {
            zt__jv *m = &msgs->u.items[i];
            if (m->type != ZT__JDICT) continue;
            zt__jdict *d = m->u.d, *kept = zt__jdict_new(&R, 0).u.d;
            const zt__jv *reasoning = NULL; /* under any of its names, as both "thinking" and "reasoning_content" */
            static const char *const names[] = {"reasoning_content", "thinking", "reasoning"};
            for (int k = 0; k < 3 && !reasoning; k++) {
                int64_t at = zt__jdict_find(d, names[k], (int64_t)strlen(names[k]));
                if (at >= 0 && d->vals[at].type != ZT__JNONE) reasoning = &d->vals[at];
            }
            if (reasoning) zt__jdict_put(&R, kept, "thinking", *reasoning);
            for (int64_t k = 0; k < d->n; k++)
                if (d->vals[k].type != ZT__JNONE) zt__jdict_set(&R, kept, d->keys[k], d->vals[k]);
            if (reasoning) zt__jdict_put(&R, kept, "reasoning_content", *reasoning);
            m->u.d = kept;
        }
    }
    free(mem);
    return r;
}

ZT_API zt_result zt_chat_render(zt_chat_template *c, const char *json, size_t n, zt_chat_text *out) {
    memset(out, 0, sizeof *out);
    zt__jheap_free(&c->heap);
    zt__jv vars;
    zt_result r = zt__chat_vars(c, json, n, "the chat's JSON", &vars);
    if (r == ZT_OK) r = zt__chat_run(c, &vars);
    zt__jheap_free(&c->heap);
    if (r != ZT_OK) return r;
    out->text = c->out, out->len = c->len, out->spans = c->spans, out->n_spans = c->n_spans;
    return ZT_OK;
}

/* ---- token files from text and JSONL ---- */

/* grows a malloc'd buffer to hold n elements of size es */
static int zt__grow(void **p, int64_t *cap, int64_t n, size_t es) {
    if (n <= *cap) return 1;
    int64_t c = ZT__MAX(n, 2 * *cap + 1024);
    void *q = realloc(*p, (size_t)c * es); /* data preparation, not a training step */
    if (!q) return 0;
    *p = q, *cap = c;
    return 1;
}

typedef struct zt__tokbuf { int32_t *ids; uint8_t *mask; int64_t n, cap, mcap; } zt__tokbuf;

/* appends the tokens of text (mask value m for each) */
static zt_result zt__tokbuf_add(zt__tokbuf *b, zt_tokenizer *t, const char *text, size_t len, uint8_t m) {
    if (!zt__grow((void **)&b->ids, &b->cap, b->n + (int64_t)(len / 2) + 64, sizeof(int32_t))) /* most texts: one pass */
        return zt_fail(ZT_ERROR_MEMORY, "out of memory tokenizing");
    for (;;) {
        int64_t room = b->cap - b->n, got = zt_tokenize(t, text, len, b->ids + b->n, room);
        if (got <= room) {
            if (!zt__grow((void **)&b->mask, &b->mcap, b->n + got, 1)) return zt_fail(ZT_ERROR_MEMORY, "out of memory tokenizing");
            memset(b->mask + b->n, m, (size_t)got);
            b->n += got;
            return ZT_OK;
        }
        if (!zt__grow((void **)&b->ids, &b->cap, b->n + got, sizeof(int32_t))) return zt_fail(ZT_ERROR_MEMORY, "out of memory tokenizing");
    }
}

static zt_result zt__tokbuf_id(zt__tokbuf *b, int32_t id, uint8_t m) {
    if (!zt__grow((void **)&b->ids, &b->cap, b->n + 1, sizeof(int32_t)) || !zt__grow((void **)&b->mask, &b->mcap, b->n + 1, 1))
        return zt_fail(ZT_ERROR_MEMORY, "out of memory tokenizing");
    b->ids[b->n] = id, b->mask[b->n++] = m;
    return ZT_OK;
}

/* an llm.c token file: v1 (uint16) when the vocabulary fits, else v7 (uint32) */
static zt_result zt__write_tokens(const char *path, const int32_t *ids, int64_t n, int64_t vocab) {
    if (n > INT32_MAX) return zt_fail(ZT_ERROR_UNSUPPORTED, "%s: %lld tokens are more than an llm.c file holds", path, (long long)n);
    int wide = vocab > 65536;
    int32_t header[256] = {wide ? 20240801 : 20240520, wide ? 7 : 1, (int32_t)n};
    FILE *f = fopen(path, "wb");
    if (!f) return zt_fail(ZT_ERROR_IO, "cannot create %s: %s", path, strerror(errno));
    int ok = fwrite(header, 4, 256, f) == 256;
    for (int64_t i = 0; i < n && ok; i++) {
        uint16_t s = (uint16_t)ids[i];
        ok = wide ? fwrite(&ids[i], 4, 1, f) == 1 : fwrite(&s, 2, 1, f) == 1;
    }
    if (fclose(f) != 0) ok = 0;
    return ok ? ZT_OK : zt_fail(ZT_ERROR_IO, "cannot write %s: %s", path, strerror(errno));
}

/* ---- a tokenizer's chat template, and conversations into ids with the assistant's turns marked ---- */

static const char *const zt__special_names[ZT__SPECIAL] = {"bos_token", "eos_token", "unk_token", "pad_token",
                                                          "sep_token", "cls_token", "mask_token"};

/* the chat template and special tokens of the tokenizer's directory: chat_template.jinja, else
   tokenizer_config.json's "chat_template" (a string, or a list of named ones: "default"), as
   transformers reads them */
static zt_result zt__tokenizer_side(zt_tokenizer *t, const char *dir) {
    char file[ZT__PATH];
    struct stat sb;
    zt_result r = zt__path(file, dir, "chat_template.jinja");
    if (r == ZT_OK && stat(file, &sb) == 0) {
        zt_arena a;
        void *mem = zt__setup_arena(&a, "chat_template.jinja", (size_t)sb.st_size + 4096);
        char *text = NULL;
        size_t len = 0;
        r = zt__read_file(&a, file, &text, &len);
        if (r == ZT_OK) r = zt_tokenizer_set_chat_template(t, text, len, file);
        free(mem);
        if (r != ZT_OK) return r;
    }
    if (r != ZT_OK || zt__path(file, dir, "tokenizer_config.json") != ZT_OK || stat(file, &sb) != 0) return r;
    zt_arena a;
    void *mem = zt__setup_arena(&a, "tokenizer_config.json", (size_t)sb.st_size + 4096);
    char *text = NULL;
    size_t len = 0;
    r = zt__read_file(&a, file, &text, &len);
    zt_arena ta;
    void *tmem = r == ZT_OK ? zt__setup_arena(&ta, "tokenizer_config.json tokens", zt__json_token_bytes(len)) : NULL;
    zt__json j;
    if (r == ZT_OK) r = zt__json_parse(&j, &ta, file, text, len);
    for (int k = 0; k < ZT__SPECIAL && r == ZT_OK; k++) { /* "<s>", or an AddedToken {"content": "<s>", ...} */
        int v = zt__json_get(&j, 0, zt__special_names[k]);
        if (v >= 0 && j.tok[v].type == JSMN_OBJECT) v = zt__json_get(&j, v, "content");
        if (v < 0 || j.tok[v].type != JSMN_STRING) continue;
        size_t cap = (size_t)(j.tok[v].end - j.tok[v].start) + 1;
        char *s = (char *)malloc(cap); /* load time, freed with the tokenizer */
        int64_t n = s ? zt__json_text(&j, v, s, cap) : -1;
        if (n < 0) {
            free(s);
            r = zt_fail(ZT_ERROR_FORMAT, "%s: \"%s\" is not a readable string", file, zt__special_names[k]);
            break;
        }
        s[n] = 0;
        free(t->special[k]);
        t->special[k] = s;
    }
    int ct = r == ZT_OK && !t->chat_src ? zt__json_get(&j, 0, "chat_template") : -1;
    if (ct >= 0 && j.tok[ct].type == JSMN_ARRAY) { /* [{"name": ..., "template": ...}] */
        int item = ct + 1, found = -1;
        for (int i = 0; i < j.tok[ct].size; i++, item = zt__json_skip(&j, item))
            if (zt__json_eq(&j, zt__json_get(&j, item, "name"), "default")) found = zt__json_get(&j, item, "template");
        if (found < 0) r = zt_fail(ZT_ERROR_UNSUPPORTED, "%s: \"chat_template\" is a list without one named \"default\"", file);
        ct = found;
    }
    if (ct >= 0 && r == ZT_OK && !zt__json_is_null(&j, ct)) {
        if (j.tok[ct].type != JSMN_STRING) {
            r = zt__json_type_error(&j, ct, "chat_template", "a string");
        } else {
            size_t cap = (size_t)(j.tok[ct].end - j.tok[ct].start) + 1;
            char *s = (char *)malloc(cap);
            int64_t n = s ? zt__json_text(&j, ct, s, cap) : -1;
            char where[ZT__PATH + 32];
            snprintf(where, sizeof where, "%s \"chat_template\"", file);
            r = n < 0 ? zt_fail(ZT_ERROR_FORMAT, "%s: \"chat_template\" is not a readable string", file)
                      : zt_tokenizer_set_chat_template(t, s, (size_t)n, where);
            free(s);
        }
    }
    free(tmem), free(mem);
    return r;
}

ZT_API zt_result zt_tokenizer_set_chat_template(zt_tokenizer *t, const char *source, size_t n, const char *name) {
    char *s = (char *)malloc(n + 1);
    if (!s) return zt_fail(ZT_ERROR_MEMORY, "out of memory reading a chat template");
    memcpy(s, source, n);
    s[n] = 0;
    free(t->chat_src);
    zt_chat_template_free(t->chat);
    t->chat_src = s, t->chat_n = n, t->chat = NULL;
    snprintf(t->chat_name, sizeof t->chat_name, "%s", name ? name : "chat template");
    return ZT_OK;
}

ZT_API const char *zt_tokenizer_special(const zt_tokenizer *t, const char *name) {
    for (int k = 0; k < ZT__SPECIAL; k++)
        if (strcmp(zt__special_names[k], name) == 0) return t->special[k];
    return NULL;
}

ZT_API zt_chat_template *zt_tokenizer_chat_template(zt_tokenizer *t) {
    if (!t->chat && !t->chat_src) {
        zt_fail(ZT_ERROR_INVALID, "the tokenizer has no chat template (no chat_template.jinja beside its tokenizer.json, "
                "and no \"chat_template\" in tokenizer_config.json)");
        return NULL;
    }
    if (!t->chat && zt_chat_template_compile(&t->chat, t->chat_src, t->chat_n, t->chat_name) != ZT_OK) return NULL;
    return t->chat;
}

typedef struct zt__jmark { zt__jblock *head; size_t used, bytes; } zt__jmark;
static zt__jmark zt__jheap_mark(const zt__jheap *h) {
    zt__jmark m = {h->head, h->head ? h->head->used : 0, h->bytes};
    return m;
}
static void zt__jheap_reset(zt__jheap *h, zt__jmark m) { /* frees what came after m */
    while (h->head != m.head) {
        zt__jblock *b = h->head;
        h->head = b->next;
        free(b);
    }
    if (h->head) h->head->used = m.used;
    h->bytes = m.bytes;
}

/* the bytes ids decode to, with no leading space stripped: where each token ends in the decoded text */
static int64_t zt__decoded_bytes(zt_tokenizer *t, const int32_t *ids, int64_t n) { return (int64_t)zt__detok(t, ids, n, NULL, 0, 0); }

/* the ids of a segment of text (between added tokens; first: at the text's start) into tmp, grown in R's heap */
static int64_t zt__segment_ids(zt__jr *R, zt_tokenizer *t, const char *s, size_t n, int first, int32_t **tmp, int64_t *cap) {
    for (;;) {
        int64_t k = zt__tok_segment(t, s, n, first, *tmp, *cap, 0);
        if (k <= *cap) return k;
        *tmp = (int32_t *)zt__jalloc(R, sizeof(int32_t) * (size_t)k), *cap = k;
    }
}

/* where each byte position pos[0, m) (ascending) of text falls in the decoded text of its ids: the bytes
   the ids of text[0, p) decode to (the same place wherever a normalizer leaves text[0, p) a prefix of the
   whole, as at a template's tags). The text between added tokens is tokenized on its own, so each
   position costs the tokens of its own segment only. */
static void zt__decoded_offsets(zt__jr *R, zt_tokenizer *t, const char *text, size_t n, const int64_t *pos, int64_t m,
                                int64_t *out) {
    int64_t before = 0, k = 0, cap = 256; /* before: the decoded bytes of text[0, seg) */
    int32_t *tmp = (int32_t *)zt__jalloc(R, sizeof(int32_t) * (size_t)cap);
    size_t seg = 0;
    for (size_t i = 0; i <= n && k < m;) {
        int32_t hit = zt__tok_added_at(t, text, n, i);
        if (hit < 0 && i < n) {
            i++;
            continue;
        }
        for (; k < m && (size_t)pos[k] <= i; k++) { /* positions in this segment (or at its end) */
            int64_t got = (size_t)pos[k] > seg ? zt__segment_ids(R, t, text + seg, (size_t)pos[k] - seg, seg == 0, &tmp, &cap) : 0;
            out[k] = before + zt__decoded_bytes(t, tmp, got); /* an empty segment has no ids (a Prepend would make one) */
        }
        int64_t got = i > seg ? zt__segment_ids(R, t, text + seg, i - seg, seg == 0, &tmp, &cap) : 0;
        before += zt__decoded_bytes(t, tmp, got);
        if (hit < 0) break;
        size_t len = (size_t)(t->off[hit + 1] - t->off[hit]);
        for (; k < m && (size_t)pos[k] < i + len; k++) out[k] = before; /* inside an added token: its start */
        before += zt__decoded_bytes(t, &hit, 1);
        i += len, seg = i;
    }
    for (; k < m; k++) out[k] = before;
}

static int zt__chat_is_assistant(const zt__jv *all, int64_t i) {
    const zt__jdict *m = all->u.items[i].u.d;
    return zt__jstreq(&m->vals[zt__jdict_find(m, "role", 4)], "assistant", 9);
}

/* The span of assistant message i in the whole conversation `full`: from where the prompt asking for it
   (the messages before it, with add_generation_prompt) stops agreeing with full, to where the messages up
   to it do. NULL, or why it cannot be found ("p ..." the prompt, "a ..." the turn itself): the template
   renders them differently once later messages follow. */
static const char *zt__chat_turn(zt__jr *R, zt__jv *vars, zt__jv *msgs, int64_t gi, const zt__jv *all, int64_t i,
                                 const char *full, size_t len, size_t at[2]) {
    zt_chat_template *c = R->c;
    zt__jmark mark = zt__jheap_mark(&c->heap);
    for (int with = 0; with < 2; with++) {
        *msgs = zt__jlist(all->u.items, i + with);
        vars->u.d->vals[gi] = zt__jbool(!with);
        if (zt__chat_run(c, vars) != ZT_OK)
            zt__jfail(R, "rendering the conversation up to message %lld: %s", (long long)i, zt_last_error());
        size_t same = 0; /* how much of it the whole conversation starts with */
        while (same < c->len && same < len && c->out[same] == full[same]) same++;
        zt__jheap_reset(&c->heap, mark);
        if (!with && same < c->len)
            return "p (the conversation before it, with add_generation_prompt) differently from the start of the whole "
                   "conversation";
        at[with] = same; /* a turn the template ends differently when it is the last (an eos) stops there */
    }
    const zt__jdict *m = all->u.items[i].u.d;
    int64_t ci = zt__jdict_find(m, "content", 7);
    zt__jv content = ci >= 0 && m->vals[ci].type == ZT__JSTR ? zt__jstrip(&m->vals[ci], NULL, 1, 1) : zt__jstr("", 0);
    int found = content.n == 0;
    for (size_t p = at[0]; !found && p + (size_t)content.n <= at[1]; p++)
        found = memcmp(full + p, content.u.s, (size_t)content.n) == 0;
    return found ? NULL : "a differently when later messages follow it (it drops or rewrites its text)";
}

/* the ids of text (as apply_chat_template(tokenize=True) gives them) into ids[0, cap), and mask[k] = 1 for
   a token whose text overlaps one of the spans (ascending byte ranges), as transformers marks them; the
   count, even past cap (then nothing is written) */
static int64_t zt__chat_ids(zt__jr *R, zt_tokenizer *t, const char *text, size_t len, const int64_t *spans,
                            int64_t n_spans, int32_t *ids, uint8_t *mask, int64_t cap) {
    int64_t got = zt_tokenize(t, text, len, ids, cap);
    if (got <= cap && mask) {
        int64_t *at = (int64_t *)zt__jalloc(R, sizeof(int64_t) * 2 * (size_t)(n_spans + 1)), end = 0, s = 0;
        zt__decoded_offsets(R, t, text, len, spans, 2 * n_spans, at); /* spans ascend: so do their ends */
        for (int64_t k = 0; k < got; k++) {
            int64_t start = end;
            end += zt__decoded_bytes(t, ids + k, 1);
            while (s < n_spans && start >= at[2 * s + 1]) s++;
            mask[k] = s < n_spans && end > at[2 * s];
        }
    }
    return got;
}

/* Each assistant turn an example of its own: the messages up to it as the template writes them when it is
   the last, only that turn learned (what it adds to its prompt), and `split` (learned, as zt_tokenize_file
   learns the end-of-text after a line) between examples. The count, even past cap. */
static int64_t zt__chat_unrolled(zt__jr *R, zt_tokenizer *t, zt__jv *vars, zt__jv *msgs, int64_t gi, const zt__jv *all,
                                 int32_t split, int32_t *ids, uint8_t *mask, int64_t cap) {
    zt_chat_template *c = R->c;
    int64_t total = 0, last = -1;
    int fits = 1; /* everything so far was written */
    for (int64_t i = 0; i < all->n; i++)
        if (zt__chat_is_assistant(all, i)) last = i;
    for (int64_t i = 0; i <= last; i++) {
        if (!zt__chat_is_assistant(all, i)) continue;
        zt__jmark mark = zt__jheap_mark(&c->heap);
        *msgs = zt__jlist(all->u.items, i + 1); /* the conversation that ends with this turn */
        vars->u.d->vals[gi] = zt__jbool(0);
        if (zt__chat_run(c, vars) != ZT_OK)
            zt__jfail(R, "rendering the conversation up to message %lld: %s", (long long)i, zt_last_error());
        size_t len = c->len, at[2];
        char *text = zt__jchars(R, (int64_t)len);
        memcpy(text, c->out, len + 1);
        const char *wrong = zt__chat_turn(R, vars, msgs, gi, all, i, text, len, at);
        if (wrong)
            zt__jfail(R, "the template writes %s message %lld %s, even when it is the last, so zt cannot find that turn; a "
                      "template with {%% generation %%} marks the turns itself (--chat_template)", wrong[0] == 'p' ?
                      "the prompt of" : "assistant", (long long)i, wrong + 2);
        int64_t span[2] = {(int64_t)at[0], (int64_t)at[1]}, room = fits ? cap - total : 0;
        int64_t got = zt__chat_ids(R, t, text, len, span, at[1] > at[0], fits ? ids + total : NULL,
                                   fits && mask ? mask + total : NULL, room);
        fits = fits && got <= room; /* else nothing more is written: the caller asks again with room for the count */
        total += got;
        if (i < last) {
            fits = fits && total < cap;
            if (fits) ids[total] = split;
            if (fits && mask) mask[total] = 1;
            total++;
        }
        zt__jheap_reset(&c->heap, mark);
    }
    return total;
}

static zt_result zt__tokenize_chat(zt_tokenizer *t, const char *json, size_t n, const char *where, int32_t *ids,
                                   uint8_t *mask, int64_t cap, int64_t *count, int32_t split) {
    *count = 0;
    zt_chat_template *c = zt_tokenizer_chat_template(t);
    char why[1024]; /* zt_fail writes where zt_last_error's text is: a copy goes in */
    if (!c) {
        snprintf(why, sizeof why, "%s", zt_last_error());
        return zt_fail(ZT_ERROR_INVALID, "%s: %s", where, why);
    }
    zt__jheap_free(&c->heap);
    zt__jv vars;
    zt_result r = zt__chat_vars(c, json, n, where, &vars);
    if (r != ZT_OK) return r;
    zt__jr R;
    memset(&R, 0, sizeof R);
    R.c = c, R.where = where;
    if (setjmp(R.fail)) { /* everything below lives in c->heap */
        zt__jheap_free(&c->heap);
        return zt_fail(ZT_ERROR_INVALID, "%s", c->msg);
    }
    int64_t mi = zt__jdict_find(vars.u.d, "messages", 8);
    zt__jv *msgs = mi >= 0 ? &vars.u.d->vals[mi] : NULL;
    if (!msgs || msgs->type != ZT__JLIST) zt__jfail(&R, "\"messages\" must be a list of {\"role\", \"content\"} objects");
    for (int64_t i = 0; i < msgs->n; i++) {
        zt__jv *m = &msgs->u.items[i];
        int64_t role = m->type == ZT__JDICT ? zt__jdict_find(m->u.d, "role", 4) : -1;
        if (role < 0 || m->u.d->vals[role].type != ZT__JSTR)
            zt__jfail(&R, "message %lld must be an object with a \"role\" string", (long long)i);
    }
    for (int k = 0; k < ZT__SPECIAL; k++) /* what apply_chat_template passes: the special tokens, then the line's own */
        if (t->special[k] && zt__jdict_find(vars.u.d, zt__special_names[k], (int64_t)strlen(zt__special_names[k])) < 0)
            zt__jdict_put(&R, vars.u.d, zt__special_names[k], zt__jstr(t->special[k], (int64_t)strlen(t->special[k])));
    static const char *const opt[] = {"tools", "documents"};
    for (int k = 0; k < 2; k++)
        if (zt__jdict_find(vars.u.d, opt[k], (int64_t)strlen(opt[k])) < 0) zt__jdict_put(&R, vars.u.d, opt[k], zt__jnone());
    if (zt__jdict_find(vars.u.d, "add_generation_prompt", 21) < 0)
        zt__jdict_put(&R, vars.u.d, "add_generation_prompt", zt__jbool(0));
    int64_t gi = zt__jdict_find(vars.u.d, "add_generation_prompt", 21);
    msgs = &vars.u.d->vals[zt__jdict_find(vars.u.d, "messages", 8)];
    zt__jv all = *msgs;

    r = zt__chat_run(c, &vars);
    if (r != ZT_OK) {
        zt__jheap_free(&c->heap);
        snprintf(why, sizeof why, "%s", zt_last_error());
        return zt_fail(ZT_ERROR_INVALID, "%s: %s", where, why);
    }
    size_t len = c->len;
    char *full = zt__jchars(&R, (int64_t)len);
    int64_t n_spans = 0, *spans = (int64_t *)zt__jalloc(&R, sizeof(int64_t) * 2 * (size_t)(ZT__MAX(c->n_spans, all.n) + 1));
    memcpy(full, c->out, len + 1);
    if (c->has_generation) { /* the template marks the assistant's text itself */
        n_spans = c->n_spans;
        if (n_spans) memcpy(spans, c->spans, sizeof(int64_t) * 2 * (size_t)n_spans);
    } else { /* each assistant message: what it adds to the prompt that asks for it */
        const char *wrong = NULL;
        int64_t bad = -1;
        for (int64_t i = 0; i < all.n && !wrong; i++) {
            if (!zt__chat_is_assistant(&all, i)) continue;
            size_t at[2];
            wrong = zt__chat_turn(&R, &vars, msgs, gi, &all, i, full, len, at);
            if (!wrong && at[1] > at[0]) spans[2 * n_spans] = (int64_t)at[0], spans[2 * n_spans + 1] = (int64_t)at[1], n_spans++;
            bad = i;
        }
        if (wrong && split < 0)
            zt__jfail(&R, "the template writes %s message %lld %s, so zt cannot find that turn by rendering prefixes; a "
                      "template with {%% generation %%} marks the turns itself (--chat_template), and with an end-of-text "
                      "id (zt_tokenize --eot) each assistant turn becomes an example of its own", wrong[0] == 'p' ?
                      "the prompt of" : "assistant", (long long)bad, wrong + 2);
        if (wrong) { /* reasoning templates drop earlier turns' thinking: each turn an example, as it is generated */
            int64_t got = zt__chat_unrolled(&R, t, &vars, msgs, gi, &all, split, ids, mask, cap);
            *msgs = all;
            *count = got;
            zt__jheap_free(&c->heap);
            return ZT_OK;
        }
        *msgs = all;
    }
    /* the ids of the whole text, as apply_chat_template(tokenize=True) gives them */
    *count = zt__chat_ids(&R, t, full, len, spans, n_spans, ids, mask, cap);
    zt__jheap_free(&c->heap);
    return ZT_OK;
}

ZT_API zt_result zt_tokenize_chat(zt_tokenizer *t, const char *json, size_t n, int32_t *ids, uint8_t *mask, int64_t cap,
                                  int64_t *count) {
    return zt__tokenize_chat(t, json, n, "the conversation", ids, mask, cap, count, -1);
}

ZT_API zt_result zt_tokenize_file(zt_tokenizer *t, const zt_tokenize_desc *d, int64_t *tokens) {
    const uint8_t *map = NULL;
    size_t bytes = 0;
    zt_result r = zt__map(d->input, &map, &bytes);
    if (r != ZT_OK) return r;
    size_t il = strlen(d->input);
    int jsonl = il >= 6 && strcmp(d->input + il - 6, ".jsonl") == 0;
    const char *pk = d->prompt_key ? d->prompt_key : "prompt", *rk = d->response_key ? d->response_key : "response";
    if (d->eot >= zt_tokenizer_vocab(t)) {
        munmap((void *)(uintptr_t)map, bytes);
        return zt_fail(ZT_ERROR_INVALID, "end-of-text id %d is outside the tokenizer's %lld ids", d->eot,
                       (long long)zt_tokenizer_vocab(t));
    }
    zt__tokbuf b;
    memset(&b, 0, sizeof b);
    const char *text = (const char *)map;
    if (!jsonl) {
        r = zt__tokbuf_add(&b, t, text, bytes, 1);
        if (r == ZT_OK && d->eot >= 0) r = zt__tokbuf_id(&b, d->eot, 1);
    }
    int64_t line_no = 0;
    char *field = NULL;
    int64_t field_cap = 0;
    for (size_t i = 0; jsonl && i < bytes && r == ZT_OK;) { /* one object a line: the prompt out of the loss */
        const char *nl = (const char *)memchr(text + i, '\n', bytes - i);
        size_t len = nl ? (size_t)(nl - (text + i)) : bytes - i;
        line_no++;
        size_t s0 = i;
        i += len + 1;
        while (len > 0 && strchr(" \t\r", text[s0 + len - 1])) len--;
        if (len == 0) continue;
        zt_arena a;
        void *mem = zt__setup_arena(&a, "JSONL line", zt__json_token_bytes(len));
        zt__json j;
        char where[ZT__PATH + 32];
        snprintf(where, sizeof where, "%s:%lld", d->input, (long long)line_no);
        r = zt__json_parse(&j, &a, where, text + s0, len);
        if (r == ZT_OK && zt__json_get(&j, 0, "messages") >= 0) { /* a conversation: through the chat template */
            if (!zt__grow((void **)&b.ids, &b.cap, b.n + (int64_t)len + 256, sizeof(int32_t))) r = zt_fail(ZT_ERROR_MEMORY, "out of memory tokenizing");
            while (r == ZT_OK) {
                int64_t room = b.cap - b.n, got = 0;
                if (!zt__grow((void **)&b.mask, &b.mcap, b.cap, 1)) {
                    r = zt_fail(ZT_ERROR_MEMORY, "out of memory tokenizing");
                    break;
                }
                r = zt__tokenize_chat(t, text + s0, len, where, b.ids + b.n, b.mask + b.n, room, &got, d->eot);
                if (r != ZT_OK || got <= room) {
                    b.n += r == ZT_OK ? got : 0;
                    break;
                }
                if (!zt__grow((void **)&b.ids, &b.cap, b.n + got, sizeof(int32_t))) r = zt_fail(ZT_ERROR_MEMORY, "out of memory tokenizing");
            }
            if (r == ZT_OK && d->eot >= 0) r = zt__tokbuf_id(&b, d->eot, 1);
            free(mem);
            continue;
        }
        const char *keys[2] = {pk, rk};
        for (int k = 0; k < 2 && r == ZT_OK; k++) {
            int v = zt__json_get(&j, 0, keys[k]);
            if (v < 0 || j.tok[v].type != JSMN_STRING) {
                r = zt_fail(ZT_ERROR_FORMAT, "%s: \"%s\" must be a string (--prompt_key and --response_key name the fields)",
                            where, keys[k]);
                break;
            }
            int64_t need = (int64_t)(j.tok[v].end - j.tok[v].start) * 2 + 16;
            if (!zt__grow((void **)&field, &field_cap, need, 1)) {
                r = zt_fail(ZT_ERROR_MEMORY, "out of memory tokenizing");
                break;
            }
            int64_t n = zt__json_text(&j, v, field, (size_t)field_cap);
            r = n < 0 ? zt_fail(ZT_ERROR_FORMAT, "%s: \"%s\" is not a readable string", where, keys[k])
                      : zt__tokbuf_add(&b, t, field, (size_t)n, (uint8_t)k);
        }
        if (r == ZT_OK && d->eot >= 0) r = zt__tokbuf_id(&b, d->eot, 1); /* the end is learned too */
        free(mem);
    }
    free(field);
    munmap((void *)(uintptr_t)map, bytes);
    if (r == ZT_OK) r = zt__write_tokens(d->output, b.ids, b.n, zt_tokenizer_vocab(t));
    if (r == ZT_OK && jsonl) {
        char mask[ZT__PATH];
        if (d->mask) snprintf(mask, sizeof mask, "%s", d->mask);
        else if (snprintf(mask, sizeof mask, "%s.mask", d->output) >= (int)sizeof mask) r = zt_fail(ZT_ERROR_INVALID, "%s is too long", d->output);
        FILE *f = r == ZT_OK ? fopen(mask, "wb") : NULL;
        if (r == ZT_OK && (!f || fwrite(b.mask, 1, (size_t)b.n, f) != (size_t)b.n))
            r = zt_fail(ZT_ERROR_IO, "cannot write %s: %s", mask, strerror(errno));
        if (f && fclose(f) != 0 && r == ZT_OK) r = zt_fail(ZT_ERROR_IO, "cannot write %s", mask);
    }
    if (tokens) *tokens = b.n;
    free(b.ids), free(b.mask);
    return r;
}

/* >>cpu (implementation) ----------------------------------------------------------------------- */

/* Each CPU stream is a ring of commands served in order by its own thread; kernels spread their
   tasks over the backend's pool. An event is a (stream, position) pair: it completes when that stream
   has finished that many commands. In strict mode a stream thread runs commands only up to the
   position the host has asked to wait for, so work nobody waited for has not happened yet. */
#define ZT__CPU_RING 256
#define ZT__CPU_SCRATCH_FLOATS ((int64_t)1 << 20) /* per pool thread: packing buffers and rows */

typedef enum zt__cmd_type { ZT__CMD_OP, ZT__CMD_WAIT } zt__cmd_type;

typedef struct zt__cpu_stream zt__cpu_stream;
typedef struct zt__cmd {
    zt__cmd_type type;
    zt__op op;
    zt__cpu_stream *wait_stream; /* ZT__CMD_WAIT: until wait_stream has done wait_pos commands */
    uint64_t wait_pos;
} zt__cmd;

typedef struct zt__cpu zt__cpu;
struct zt__cpu_stream {
    zt__cpu *cpu;
    pthread_t thread;
    uint64_t queued, done, released; /* commands enqueued, finished, allowed to run (strict mode) */
    zt__cmd ring[ZT__CPU_RING];
};

typedef struct zt__cpu_event { zt__cpu_stream *stream; uint64_t pos; } zt__cpu_event;

struct zt__cpu {
    zt_pool *pool;
    int strict, stopping;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* broadcast on every change of any stream's counters */
    zt__cpu_stream *streams[ZT_MAX_STREAMS];
    zt__cpu_event events[ZT_MAX_EVENTS];
    float *scratch[ZT_CPU_MAX_THREADS];
    void *device_mem, *pinned_mem;
    int device_fd;        /* the device memory is a memfd's, so ranks of one host can map each other's */
    size_t device_bytes;
    uint8_t *stage;       /* the tests' hook ZT_TEST_COMM_STAGE=bytes: collectives staged as a GPU's are */
    size_t stage_bytes;
    int guard, running;   /* the tests' hook ZT_TEST_GUARD_DEVICE=1 (zt__cpu_guard); commands running now */
};

/* ZT_TEST_GUARD_DEVICE=1: the device memory is unreadable to the host except while stream commands run,
   and strict mode makes the host wait whenever they do, so a host read or write of a ZT_DEVICE tensor
   (which works on this backend and crashes on a GPU) stops the test at once with its stack. The fault
   handler finds the backends' device memory in zt__guarded. */
#include <execinfo.h>
#define ZT__GUARDED 16
static struct { void *base; size_t bytes; } zt__guarded[ZT__GUARDED];

static void zt__guard_fault(int sig, siginfo_t *si, void *context) {
    (void)context;
    for (int i = 0; i < ZT__GUARDED; i++) {
        uint8_t *b = (uint8_t *)zt__guarded[i].base, *a = (uint8_t *)si->si_addr;
        if (!b || a < b || a >= b + zt__guarded[i].bytes) continue;
        static const char msg[] = "zt: the host touched the CPU backend's device memory outside a stream command "
                                  "(ZT_TEST_GUARD_DEVICE): a host access to a ZT_DEVICE tensor, which a GPU does not "
                                  "allow; the stack:\n";
        void *frames[32];
        if (write(2, msg, sizeof msg - 1) < 0) break;
        backtrace_symbols_fd(frames, backtrace(frames, 32), 2);
        break;
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

/* open: readable while commands run; else closed again */
static void zt__cpu_guard(zt__cpu *cpu, int open) {
    if (cpu->guard && cpu->device_fd >= 0) mprotect(cpu->device_mem, cpu->device_bytes, open ? PROT_READ | PROT_WRITE : PROT_NONE);
}

static void zt__cpu_guard_start(zt__cpu *cpu) {
    static int installed;
    if (!cpu->guard || cpu->device_fd < 0) return;
    for (int i = 0; i < ZT__GUARDED; i++)
        if (!zt__guarded[i].base || zt__guarded[i].base == cpu->device_mem) {
            zt__guarded[i].base = cpu->device_mem, zt__guarded[i].bytes = cpu->device_bytes;
            break;
        }
    if (!installed++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = zt__guard_fault;
        sa.sa_flags = SA_SIGINFO;
        sigaction(SIGSEGV, &sa, NULL);
    }
    zt__cpu_guard(cpu, 0);
}

static void zt__cpu_move(void *ctx, void *dst, const void *src, size_t bytes) {
    (void)ctx;
    memmove(dst, src, bytes);
}

static void zt__cpu_exec(zt__cpu *cpu, const zt__op *op);

static zt__cpu *zt__cpu_of(zt_backend *b) { return (zt__cpu *)b->impl; }

/* Called with cpu->mu held: lets `s` run up to pos (strict mode) and waits until it has. */
static void zt__cpu_wait_locked(zt__cpu *cpu, zt__cpu_stream *s, uint64_t pos) {
    if (s->released < pos) {
        s->released = pos;
        pthread_cond_broadcast(&cpu->cv);
    }
    while (s->done < pos) pthread_cond_wait(&cpu->cv, &cpu->mu);
}

static void *zt__cpu_stream_main(void *arg) {
    zt__cpu_stream *s = (zt__cpu_stream *)arg;
    zt__cpu *cpu = s->cpu;
    pthread_mutex_lock(&cpu->mu);
    for (;;) {
        uint64_t limit = cpu->strict ? s->released : s->queued;
        while (s->done >= limit && !cpu->stopping) {
            pthread_cond_wait(&cpu->cv, &cpu->mu);
            limit = cpu->strict ? s->released : s->queued;
        }
        if (s->done >= limit) break; /* stopping, and nothing left that may run */
        zt__cmd *c = &s->ring[s->done % ZT__CPU_RING];
        if (c->type == ZT__CMD_WAIT) {
            zt__cpu_wait_locked(cpu, c->wait_stream, c->wait_pos);
        } else {
            if (cpu->running++ == 0) zt__cpu_guard(cpu, 1);
            pthread_mutex_unlock(&cpu->mu);
            zt__cpu_exec(cpu, &c->op);
            pthread_mutex_lock(&cpu->mu);
            if (--cpu->running == 0) zt__cpu_guard(cpu, 0);
        }
        s->done++;
        pthread_cond_broadcast(&cpu->cv);
    }
    pthread_mutex_unlock(&cpu->mu);
    return NULL;
}

static void zt__cpu_enqueue(zt_stream *st, zt__cmd_type type, const zt__op *op, zt__cpu_stream *ws,
                            uint64_t wpos) {
    zt__cpu *cpu = zt__cpu_of(st->backend);
    zt__cpu_stream *s = (zt__cpu_stream *)st->impl;
    pthread_mutex_lock(&cpu->mu);
    if (s->queued - s->done >= ZT__CPU_RING) zt__cpu_wait_locked(cpu, s, s->queued - ZT__CPU_RING + 1);
    zt__cmd *c = &s->ring[s->queued % ZT__CPU_RING];
    c->type = type;
    if (op) c->op = *op;
    c->wait_stream = ws;
    c->wait_pos = wpos;
    s->queued++;
    pthread_cond_broadcast(&cpu->cv);
    pthread_mutex_unlock(&cpu->mu);
}

static zt_result zt__cpu_stream_init(zt_stream *st) {
    zt__cpu *cpu = zt__cpu_of(st->backend);
    zt__cpu_stream *s = (zt__cpu_stream *)calloc(1, sizeof *s); /* setup time */
    if (!s) return zt_fail(ZT_ERROR_MEMORY, "out of host memory creating a CPU stream");
    s->cpu = cpu;
    st->impl = s;
    cpu->streams[st->index] = s;
    if (pthread_create(&s->thread, NULL, zt__cpu_stream_main, s) != 0) {
        free(s);
        return zt_fail(ZT_ERROR_BACKEND, "cannot start a CPU stream thread: %s", strerror(errno));
    }
    return ZT_OK;
}

static void *zt__cpu_alloc(size_t bytes) {
    /* one block per arena, page-aligned; calloc'd memory would hide missing initialisation less well
       under sanitizers, so it is plain memory, poisoned by the arena under ASan */
    void *p = NULL;
    if (posix_memalign(&p, 4096, bytes ? bytes : 1) != 0) return NULL;
    return p;
}

static void *zt__cpu_device_alloc(zt__cpu *cpu, size_t bytes);
static void zt__cpu_device_free(zt__cpu *cpu);

static zt_result zt__cpu_create(zt_backend *b) {
    zt__cpu *cpu = (zt__cpu *)calloc(1, sizeof *cpu);
    if (!cpu) return zt_fail(ZT_ERROR_MEMORY, "out of host memory creating the CPU backend");
    b->impl = cpu;
    const char *guard = getenv("ZT_TEST_GUARD_DEVICE");
    cpu->guard = guard && atoi(guard) > 0;
    cpu->strict = b->desc.strict || cpu->guard;
    cpu->device_fd = -1;
    cpu->device_mem = zt__cpu_device_alloc(cpu, b->desc.device_bytes);
    cpu->pinned_mem = zt__cpu_alloc(b->desc.pinned_bytes);
    if (!cpu->device_mem || !cpu->pinned_mem) {
        zt__cpu_device_free(cpu);
        free(cpu->pinned_mem);
        free(cpu);
        return zt_fail(ZT_ERROR_MEMORY, "cannot allocate the CPU backend's memory: %zu device bytes and "
                       "%zu pinned bytes were asked for", b->desc.device_bytes, b->desc.pinned_bytes);
    }
    zt_arena_init(&b->device, "device", cpu->device_mem, b->desc.device_bytes);
    zt_arena_init(&b->pinned, "pinned host", cpu->pinned_mem, b->desc.pinned_bytes);
    zt_arena_set_stream_ordered(&b->device);
    zt_arena_set_stream_ordered(&b->pinned);
    cpu->pool = zt_pool_create(b->desc.threads);
    int nt = zt_pool_threads(cpu->pool);
    for (int i = 0; i < nt; i++) {
        cpu->scratch[i] = (float *)zt__cpu_alloc((size_t)ZT__CPU_SCRATCH_FLOATS * sizeof(float));
        ZT_ASSERT(cpu->scratch[i] != NULL);
    }
    pthread_mutex_init(&cpu->mu, NULL);
    pthread_cond_init(&cpu->cv, NULL);
    const char *stage = getenv("ZT_TEST_COMM_STAGE");
    if (stage && atoll(stage) > 0) {
        cpu->stage_bytes = (size_t)atoll(stage);
        cpu->stage = (uint8_t *)zt__cpu_alloc(cpu->stage_bytes);
        ZT_ASSERT(cpu->stage != NULL);
    }
    zt_stream_create(b); /* the default stream */
    zt__cpu_guard_start(cpu);
    return ZT_OK;
}

/* the device arena: a memfd's pages (zt_comm_share_device lets the other ranks map them), else plain */
static void *zt__cpu_device_alloc(zt__cpu *cpu, size_t bytes) {
    size_t size = (ZT__MAX(bytes, 1) + 4095) / 4096 * 4096;
    int fd = (int)syscall(SYS_memfd_create, "zt-device", 1u /* MFD_CLOEXEC */);
    void *p = MAP_FAILED;
    if (fd >= 0 && ftruncate(fd, (off_t)size) == 0) p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        if (fd >= 0) close(fd);
        cpu->device_fd = -1, cpu->device_bytes = 0;
        return zt__cpu_alloc(bytes);
    }
    cpu->device_fd = fd, cpu->device_bytes = size;
    return p;
}

static void zt__cpu_device_free(zt__cpu *cpu) {
    for (int i = 0; i < ZT__GUARDED && cpu->device_mem; i++)
        if (zt__guarded[i].base == cpu->device_mem) zt__guarded[i].base = NULL;
    if (cpu->device_fd >= 0 && cpu->device_mem) { /* the arena poisoned parts of it: not the next mapping there */
        ZT__UNPOISON(cpu->device_mem, cpu->device_bytes);
        munmap(cpu->device_mem, cpu->device_bytes), close(cpu->device_fd);
    } else {
        free(cpu->device_mem);
    }
    cpu->device_mem = NULL, cpu->device_fd = -1, cpu->device_bytes = 0;
}

/* the CPU backend's device memory, to share: its memfd, base and size (-1: not shareable) */
static int zt__cpu_share(zt_backend *b, void **base, size_t *bytes) {
    if (b->vt != zt__cpu_backend()) return -1;
    zt__cpu *cpu = zt__cpu_of(b);
    *base = cpu->device_mem, *bytes = cpu->device_bytes;
    return cpu->device_fd;
}

static zt_result zt__cpu_reserve(zt_backend *b, size_t device_bytes, size_t pinned_bytes) {
    zt__cpu *cpu = zt__cpu_of(b);
    zt__cpu_device_free(cpu);
    void *d = zt__cpu_device_alloc(cpu, device_bytes), *p = zt__cpu_alloc(pinned_bytes);
    if (!d || !p) {
        if (d) cpu->device_mem = d, zt__cpu_device_free(cpu);
        free(p);
        return zt_fail(ZT_ERROR_MEMORY, "cannot allocate %zu device bytes and %zu pinned bytes for the CPU backend",
                       device_bytes, pinned_bytes);
    }
    free(cpu->pinned_mem);
    cpu->device_mem = d;
    cpu->pinned_mem = p;
    zt__cpu_guard_start(cpu);
    zt_arena_init(&b->device, "device", d, device_bytes);
    zt_arena_init(&b->pinned, "pinned host", p, pinned_bytes);
    zt_arena_set_stream_ordered(&b->device);
    zt_arena_set_stream_ordered(&b->pinned);
    return ZT_OK;
}

static void zt__cpu_destroy(zt_backend *b) {
    zt__cpu *cpu = zt__cpu_of(b);
    pthread_mutex_lock(&cpu->mu);
    cpu->stopping = 1;
    pthread_cond_broadcast(&cpu->cv);
    pthread_mutex_unlock(&cpu->mu);
    for (int i = 0; i < b->n_streams; i++) {
        pthread_join(cpu->streams[i]->thread, NULL);
        free(cpu->streams[i]);
    }
    for (int i = 0; i < zt_pool_threads(cpu->pool); i++) free(cpu->scratch[i]);
    zt_pool_destroy(cpu->pool);
    pthread_mutex_destroy(&cpu->mu);
    pthread_cond_destroy(&cpu->cv);
    zt__cpu_device_free(cpu);
    free(cpu->pinned_mem);
    free(cpu->stage);
    free(cpu);
}

static void zt__cpu_launch(zt_stream *s, const zt__op *op) { zt__cpu_enqueue(s, ZT__CMD_OP, op, NULL, 0); }

static void zt__cpu_record(zt_event *e, zt_stream *st) {
    zt__cpu *cpu = zt__cpu_of(st->backend);
    zt__cpu_stream *s = (zt__cpu_stream *)st->impl;
    pthread_mutex_lock(&cpu->mu);
    cpu->events[e->index].stream = s;
    cpu->events[e->index].pos = s->queued;
    pthread_mutex_unlock(&cpu->mu);
}

static void zt__cpu_wait(zt_stream *st, zt_event *e) {
    zt__cpu *cpu = zt__cpu_of(st->backend);
    pthread_mutex_lock(&cpu->mu);
    zt__cpu_event ev = cpu->events[e->index];
    pthread_mutex_unlock(&cpu->mu);
    if (ev.stream) zt__cpu_enqueue(st, ZT__CMD_WAIT, NULL, ev.stream, ev.pos);
}

static void zt__cpu_stream_sync(zt_stream *st) {
    zt__cpu *cpu = zt__cpu_of(st->backend);
    zt__cpu_stream *s = (zt__cpu_stream *)st->impl;
    pthread_mutex_lock(&cpu->mu);
    zt__cpu_wait_locked(cpu, s, s->queued);
    pthread_mutex_unlock(&cpu->mu);
}

static void zt__cpu_event_sync(zt_event *e) {
    zt__cpu *cpu = zt__cpu_of(e->backend);
    pthread_mutex_lock(&cpu->mu);
    zt__cpu_event ev = cpu->events[e->index];
    if (ev.stream) zt__cpu_wait_locked(cpu, ev.stream, ev.pos);
    pthread_mutex_unlock(&cpu->mu);
}

static const zt__backend_vt zt__cpu_vt = {
    zt__cpu_create, zt__cpu_destroy, zt__cpu_stream_init, zt__cpu_reserve, zt__cpu_launch,
    zt__cpu_record, zt__cpu_wait, zt__cpu_stream_sync, zt__cpu_event_sync, NULL, NULL,
};
static const zt__backend_vt *zt__cpu_backend(void) { return &zt__cpu_vt; }

/* Vector helpers pass vectors by value between static functions; gcc notes that their ABI would
   differ without AVX, which does not matter for functions that never cross a library boundary. */
#if defined(__GNUC__) && !defined(__clang__)
#  pragma GCC diagnostic ignored "-Wpsabi"
#endif

/* CPU kernels. A kernel is a task function over a zt__job; the work of each task depends only on
   the shapes, and every sum runs in an order fixed by the shapes, so results are the same bits for
   any number of threads. Rows are converted to f32 in per-thread scratch, computed, and rounded once
   on the way out. */
typedef struct zt__job {
    zt__cpu *cpu;
    const zt__op *op;
    int64_t per_task;  /* rows or elements per task, where the kernel splits that way */
    void *plan;        /* what the kernel worked out before starting its tasks (tasks may fill it) */
} zt__job;

static void zt__cpu_run(zt__cpu *cpu, const zt__op *op, int64_t n_tasks, int64_t per_task,
                        void *plan, zt_task_fn fn) {
    zt__job job = {cpu, op, per_task, plan};
    zt_pool_run(cpu->pool, n_tasks, fn, &job);
}

/* tasks of about 64K elements over `rows` rows of `cols` elements */
static int64_t zt__rows_per_task(int64_t cols) { return ZT__MAX(1, 65536 / ZT__MAX(1, cols)); }
#define ZT__CHUNK ((int64_t)16384) /* elements per task of the elementwise kernels */

/* Vectors of 8 floats for dot products and sums: lane-wise partial sums, combined in a fixed order.
   (-ffp-contract=off keeps multiply and add separate, so gcc, clang and nvcc agree.) */
typedef float zt__v8 __attribute__((vector_size(32)));

static float zt__lanes(const zt__v8 *v) { /* by pointer: no vector crosses a call without AVX */
    return (((*v)[0] + (*v)[1]) + ((*v)[2] + (*v)[3])) + (((*v)[4] + (*v)[5]) + ((*v)[6] + (*v)[7]));
}

static float zt__dot(const float *a, const float *b, int64_t n) {
    zt__v8 acc = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        zt__v8 x, y;
        memcpy(&x, a + i, sizeof x);
        memcpy(&y, b + i, sizeof y);
        acc += x * y;
    }
    float s = zt__lanes(&acc);
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

static float zt__sum(const float *a, int64_t n) {
    zt__v8 acc = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        zt__v8 x;
        memcpy(&x, a + i, sizeof x);
        acc += x;
    }
    float s = zt__lanes(&acc);
    for (; i < n; i++) s += a[i];
    return s;
}

static void zt__axpy(float *y, float a, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] += a * x[i];
}

/* element i of a float tensor's data */
static float zt__ldf(const void *p, zt_dtype t, int64_t i) {
    if (t == ZT_F32) return ((const float *)p)[i];
    if (t == ZT_BF16) return zt__bits_f32((uint32_t)((const uint16_t *)p)[i] << 16);
    return zt_f16_to_f32(((const uint16_t *)p)[i]);
}

/* A row of a float tensor as f32: the data itself when it is f32, else converted into buf. */
static const float *zt__row_in(zt_tensor t, int64_t i0, int64_t n, float *buf) {
    if (t.dtype == ZT_F32) return (const float *)t.data + i0;
    zt__to_f32(buf, t.data, t.dtype, i0, n);
    return buf;
}

/* ---- gemm: packed panels and a register-blocked micro-kernel ---- */

#if defined(__AVX512F__)
#  define ZT__VW 16
#elif defined(__AVX__)
#  define ZT__VW 8
#else
#  define ZT__VW 4 /* SSE, NEON or plain C: 16-byte vectors are passed like any other on these ABIs */
#endif
typedef float zt__vf __attribute__((vector_size(ZT__VW * 4)));
#define ZT__MR 6
#define ZT__NR (2 * ZT__VW)
#define ZT__KC 256
#define ZT__MC 288  /* multiple of ZT__MR */
#define ZT__NC 256 /* multiple of ZT__NR */
ZT_STATIC_ASSERT(ZT__MR == 6, "zt__gemm_micro is written out for six rows");

static zt__vf zt__splat(float x) {
#if defined(__AVX512F__)
    return (zt__vf)_mm512_set1_ps(x);
#elif defined(__AVX__)
    return (zt__vf)_mm256_set1_ps(x);
#elif defined(__SSE__)
    return (zt__vf)_mm_set1_ps(x);
#else
    zt__vf v;
    for (int l = 0; l < ZT__VW; l++) v[l] = x;
    return v;
#endif
}

/* a * b + c rounded once: explicit, so contraction settings cannot change it */
static zt__vf zt__fma(zt__vf a, zt__vf b, zt__vf c) {
#if defined(__AVX512F__)
    return (zt__vf)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#elif defined(__AVX2__) && defined(__FMA__)
    return (zt__vf)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#else
    zt__vf r;
    for (int l = 0; l < ZT__VW; l++) r[l] = fmaf(a[l], b[l], c[l]);
    return r;
#endif
}

/* c (MR x NR, row stride ldc) (+)= a (kc x MR panel) @ b (kc x NR panel). The twelve accumulators
   are named variables so that they stay in registers. */
static void zt__gemm_micro(int64_t kc, const float *ZT_RESTRICT a, const float *ZT_RESTRICT b,
                           float *ZT_RESTRICT c, int64_t ldc, int first) {
    zt__vf c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
#define ZT__ROW(r, x0, x1)                                                         \
    if (first) {                                                                   \
        x0 = x1 = zt__splat(0.0f);                                                 \
    } else {                                                                       \
        memcpy(&x0, c + r * ldc, sizeof x0);                                       \
        memcpy(&x1, c + r * ldc + ZT__VW, sizeof x1);                              \
    }
    ZT__ROW(0, c00, c01) ZT__ROW(1, c10, c11) ZT__ROW(2, c20, c21)
    ZT__ROW(3, c30, c31) ZT__ROW(4, c40, c41) ZT__ROW(5, c50, c51)
#undef ZT__ROW
    for (int64_t k = 0; k < kc; k++, a += ZT__MR, b += ZT__NR) {
        zt__vf b0, b1, av;
        memcpy(&b0, b, sizeof b0);
        memcpy(&b1, b + ZT__VW, sizeof b1);
#define ZT__FMA_ROW(r, x0, x1)                                                     \
        av = zt__splat(a[r]);                                                      \
        x0 = zt__fma(av, b0, x0);                                                  \
        x1 = zt__fma(av, b1, x1);
        ZT__FMA_ROW(0, c00, c01) ZT__FMA_ROW(1, c10, c11) ZT__FMA_ROW(2, c20, c21)
        ZT__FMA_ROW(3, c30, c31) ZT__FMA_ROW(4, c40, c41) ZT__FMA_ROW(5, c50, c51)
#undef ZT__FMA_ROW
    }
#define ZT__STORE_ROW(r, x0, x1)                                                   \
    memcpy(c + r * ldc, &x0, sizeof x0);                                           \
    memcpy(c + r * ldc + ZT__VW, &x1, sizeof x1);
    ZT__STORE_ROW(0, c00, c01) ZT__STORE_ROW(1, c10, c11) ZT__STORE_ROW(2, c20, c21)
    ZT__STORE_ROW(3, c30, c31) ZT__STORE_ROW(4, c40, c41) ZT__STORE_ROW(5, c50, c51)
#undef ZT__STORE_ROW
}

/* One operand of a gemm: element (i, k) of op(X) lives at data[i * si + k * sk]. */
typedef struct zt__operand { const void *data; zt_dtype dtype; int64_t si, sk; } zt__operand;

/* rows [i0, i0+mc) x k [k0, k0+kc) of op(X) into panels of `panel` rows: dst[p][k][r], zero-padded.
   Whichever of the two strides is 1 decides the loop order, so that reads are contiguous. */
static void zt__pack(float *dst, zt__operand x, int64_t i0, int64_t mc, int64_t rows, int64_t k0,
                     int64_t kc, int panel) {
    for (int64_t p = 0; p < mc; p += panel) {
        float *d = dst + p * kc;
        int live = (int)ZT__MIN((int64_t)panel, ZT__MIN(mc - p, rows - (i0 + p)));
        if (live < 0) live = 0;
        const int64_t base = (i0 + p) * x.si + k0 * x.sk;
        if (x.si == 1) { /* a panel's rows are adjacent for each k: copy `live` at a time */
            for (int64_t k = 0; k < kc; k++) {
                float *dk = d + k * panel;
                if (x.dtype == ZT_F32) memcpy(dk, (const float *)x.data + base + k * x.sk, sizeof(float) * (size_t)live);
                else zt__to_f32(dk, x.data, x.dtype, base + k * x.sk, live);
                for (int r = live; r < panel; r++) dk[r] = 0.0f;
            }
            continue;
        }
        for (int r = 0; r < panel; r++) { /* each row is contiguous over k */
            if (r >= live) {
                for (int64_t k = 0; k < kc; k++) d[k * panel + r] = 0.0f;
                continue;
            }
            int64_t at = base + r * x.si;
            if (x.dtype == ZT_F32) {
                const float *src = (const float *)x.data + at;
                for (int64_t k = 0; k < kc; k++) d[k * panel + r] = src[k * x.sk];
            } else {
                for (int64_t k = 0; k < kc; k++) d[k * panel + r] = zt__ldf(x.data, x.dtype, at + k * x.sk);
            }
        }
    }
}

typedef struct zt__gemm_plan {
    int64_t M, N, K, batch, mc, nc, m_tiles, n_tiles; /* tiles of mc x nc elements of c */
    int64_t a_batch_stride, b_batch_stride, c_batch_stride;
    zt__operand a, b;
} zt__gemm_plan;

static void zt__gemm_task(void *ctx, int64_t task, int thread) {
    zt__job *job = (zt__job *)ctx;
    const zt__args_gemm *g = &job->op->gemm;
    const zt__gemm_plan *pl = (const zt__gemm_plan *)job->plan;
    int64_t tiles = pl->m_tiles * pl->n_tiles;
    int64_t bi = task / tiles, mt = (task % tiles) / pl->n_tiles, nt = task % pl->n_tiles;
    int64_t i0 = mt * pl->mc, j0 = nt * pl->nc;
    int64_t mc = ZT__MIN(pl->mc, pl->M - i0), nc = ZT__MIN(pl->nc, pl->N - j0);
    float *apack = job->cpu->scratch[thread];
    float *bpack = apack + ZT__MC * ZT__KC;
    float *tile = bpack + ZT__KC * ZT__NC;
    zt__operand a = pl->a, b = pl->b;
    a.data = (const uint8_t *)a.data + (size_t)(g->a.shape.d[0] == 1 && pl->batch > 1 ? 0 : bi) *
                                           (size_t)pl->a_batch_stride * zt_dtype_size(a.dtype);
    b.data = (const uint8_t *)b.data + (size_t)(g->b.shape.d[0] == 1 && pl->batch > 1 ? 0 : bi) *
                                           (size_t)pl->b_batch_stride * zt_dtype_size(b.dtype);
    int64_t mpad = ZT__CDIV(mc, ZT__MR) * ZT__MR, npad = ZT__CDIV(nc, ZT__NR) * ZT__NR;
    if (pl->K == 0) memset(tile, 0, sizeof(float) * (size_t)(ZT__MC * ZT__NC));
    for (int64_t k0 = 0; k0 < pl->K; k0 += ZT__KC) {
        int64_t kc = ZT__MIN(ZT__KC, pl->K - k0);
        zt__pack(apack, a, i0, mc, pl->M, k0, kc, ZT__MR);
        /* op(B) element (k, j) is B's (j, k) as an operand whose rows are j */
        zt__pack(bpack, b, j0, nc, pl->N, k0, kc, ZT__NR);
        for (int64_t jr = 0; jr < npad; jr += ZT__NR)
            for (int64_t ir = 0; ir < mpad; ir += ZT__MR)
                zt__gemm_micro(kc, apack + ir * kc, bpack + jr * kc, tile + ir * ZT__NC + jr, ZT__NC, k0 == 0);
    }
    /* c = alpha * acc + beta * c + bias, rounded once; beta == 0 never reads c (it may be garbage) */
    void *c = (uint8_t *)g->c.data + (size_t)(bi * pl->c_batch_stride) * zt_dtype_size(g->c.dtype);
    float *row = tile; /* reused in place */
    for (int64_t i = 0; i < mc; i++) {
        float *acc = row + i * ZT__NC;
        int64_t ci = (i0 + i) * pl->N + j0;
        for (int64_t j = 0; j < nc; j++) {
            float v = g->alpha * acc[j];
            if (g->beta != 0.0f) v += g->beta * zt__ldf(c, g->c.dtype, ci + j);
            if (zt__present(g->bias)) v += zt__ldf(g->bias.data, g->bias.dtype, j0 + j);
            acc[j] = v;
        }
        zt__from_f32(c, g->c.dtype, ci, acc, nc);
    }
}

static void zt__cpu_gemm(zt__cpu *cpu, const zt__op *op) {
    const zt__args_gemm *g = &op->gemm;
    int batched = g->a.shape.ndim == 3 && g->b.shape.ndim == 3 && g->c.shape.ndim == 3;
    int64_t ar, ac, br, bc, cr, cc;
    zt__matrix_dims(g->a, batched, &ar, &ac);
    zt__matrix_dims(g->b, batched, &br, &bc);
    zt__matrix_dims(g->c, batched, &cr, &cc);
    zt__gemm_plan pl;
    pl.M = cr;
    pl.N = cc;
    pl.K = g->trans_a ? ar : ac;
    pl.batch = batched ? g->c.shape.d[0] : 1;
    /* Smaller tiles when there are too few to keep every thread busy. Each element of c is summed over
       k in the same order whatever the tiling, so this changes speed, never results. */
    pl.mc = ZT__MC;
    pl.nc = ZT__NC;
    int64_t want = 4 * (int64_t)zt_pool_threads(cpu->pool);
    while (pl.batch * ZT__CDIV(pl.M, pl.mc) * ZT__CDIV(pl.N, pl.nc) < want) {
        if (pl.nc > 2 * ZT__NR && pl.nc >= pl.mc) pl.nc /= 2;
        else if (pl.mc > 4 * ZT__MR) pl.mc /= 2;
        else break;
    }
    pl.m_tiles = ZT__CDIV(pl.M, pl.mc);
    pl.n_tiles = ZT__CDIV(pl.N, pl.nc);
    pl.a_batch_stride = ar * ac;
    pl.b_batch_stride = br * bc;
    pl.c_batch_stride = cr * cc;
    /* op(A) (i,k): A (M,K) row-major, or A (K,M) when transposed */
    zt__operand a = {g->a.data, g->a.dtype, g->trans_a ? 1 : ac, g->trans_a ? ac : 1};
    /* op(B) (k,j), seen with j as the row index: B (K,N) has (j,k) at k*N + j; B^T (N,K) at j*K + k */
    zt__operand b = {g->b.data, g->b.dtype, g->trans_b ? bc : 1, g->trans_b ? 1 : bc};
    pl.a = a;
    pl.b = b;
    if (pl.M == 0 || pl.N == 0) return;
    zt__cpu_run(cpu, op, pl.batch * pl.m_tiles * pl.n_tiles, 0, &pl, zt__gemm_task);
}

/* ---- elementwise kernels: one task function, chunks of ZT__CHUNK elements ---- */

#define ZT__GELU_K 0.7978845608028654f /* sqrt(2/pi) */

static float zt__gelu(float x) {
    float u = ZT__GELU_K * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + tanhf(u));
}
static float zt__gelu_grad(float x) {
    float u = ZT__GELU_K * (x + 0.044715f * x * x * x), t = tanhf(u);
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * ZT__GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
}
static float zt__sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
static float zt__silu(float x) { return x * zt__sigmoid(x); }
static float zt__silu_grad(float x) {
    float s = zt__sigmoid(x);
    return s * (1.0f + x * (1.0f - s));
}

/* AdamW on n f32 elements, PyTorch's order of operations (scalars computed in double, then f32) */
static void zt__adamw_f32(const zt_adamw_params *p, float *w, float *m, float *v, const float *g, int64_t n) {
    float decay = (float)(1.0 - (double)p->lr * (double)p->weight_decay);
    float w1 = (float)(1.0 - (double)p->beta1), w2 = (float)(1.0 - (double)p->beta2);
    double bc1 = 1.0 - pow((double)p->beta1, (double)p->step);
    double bc2 = 1.0 - pow((double)p->beta2, (double)p->step);
    float step_size = (float)((double)p->lr / bc1), bc2_sqrt = (float)sqrt(bc2);
    int64_t i = 0;
#if defined(__AVX512F__) || defined(__AVX__)
    /* the same operations in the same order, ZT__VW lanes at a time (sqrt and division are correctly
       rounded in both, and nothing is fused): the same bits as the loop below, which does the rest */
#  if defined(__AVX512F__)
#    define ZT__VW 16
#    define ZT__V __m512
#    define ZT__VSET _mm512_set1_ps
#    define ZT__VLD _mm512_loadu_ps
#    define ZT__VST _mm512_storeu_ps
#    define ZT__VADD _mm512_add_ps
#    define ZT__VSUB _mm512_sub_ps
#    define ZT__VMUL _mm512_mul_ps
#    define ZT__VDIV _mm512_div_ps
#    define ZT__VSQRT _mm512_sqrt_ps
#  else
#    define ZT__VW 8
#    define ZT__V __m256
#    define ZT__VSET _mm256_set1_ps
#    define ZT__VLD _mm256_loadu_ps
#    define ZT__VST _mm256_storeu_ps
#    define ZT__VADD _mm256_add_ps
#    define ZT__VSUB _mm256_sub_ps
#    define ZT__VMUL _mm256_mul_ps
#    define ZT__VDIV _mm256_div_ps
#    define ZT__VSQRT _mm256_sqrt_ps
#  endif
    ZT__V scale = ZT__VSET(p->grad_scale), wd = ZT__VSET(p->weight_decay), dec = ZT__VSET(decay), vw1 = ZT__VSET(w1);
    ZT__V vw2 = ZT__VSET(w2), b2 = ZT__VSET(p->beta2), bcs = ZT__VSET(bc2_sqrt), eps = ZT__VSET(p->eps);
    ZT__V nstep = ZT__VSET(-step_size);
    for (; i + ZT__VW <= n; i += ZT__VW) {
        ZT__V gi = ZT__VMUL(ZT__VLD(g + i), scale), wi = ZT__VLD(w + i), mi = ZT__VLD(m + i), vi = ZT__VLD(v + i);
        if (p->l2) gi = ZT__VADD(gi, ZT__VMUL(wd, wi));
        else wi = ZT__VMUL(wi, dec);
        mi = ZT__VADD(mi, ZT__VMUL(vw1, ZT__VSUB(gi, mi)));
        vi = ZT__VADD(ZT__VMUL(vi, b2), ZT__VMUL(ZT__VMUL(vw2, gi), gi));
        ZT__V denom = ZT__VADD(ZT__VDIV(ZT__VSQRT(vi), bcs), eps);
        wi = ZT__VADD(wi, ZT__VMUL(nstep, ZT__VDIV(mi, denom)));
        ZT__VST(w + i, wi), ZT__VST(m + i, mi), ZT__VST(v + i, vi);
    }
#  undef ZT__VW
#  undef ZT__V
#  undef ZT__VSET
#  undef ZT__VLD
#  undef ZT__VST
#  undef ZT__VADD
#  undef ZT__VSUB
#  undef ZT__VMUL
#  undef ZT__VDIV
#  undef ZT__VSQRT
#endif
    for (; i < n; i++) {
        float gi = g[i] * p->grad_scale;
        if (p->l2) gi = gi + p->weight_decay * w[i]; /* torch.optim.Adam's weight_decay */
        else w[i] = w[i] * decay;
        m[i] = m[i] + w1 * (gi - m[i]);
        v[i] = v[i] * p->beta2 + (w2 * gi) * gi;
        float denom = sqrtf(v[i]) / bc2_sqrt + p->eps;
        w[i] = w[i] + (-step_size) * (m[i] / denom);
    }
}

/* the kernel: gradients of any float dtype widened into scratch g, the 16-bit copy written after */
static void zt__adamw_chunk(const zt__args_adamw *a, int64_t i0, int64_t n, float *g) {
    zt__to_f32(g, a->grad.data, a->grad.dtype, i0, n);
    float *w = (float *)a->master.data + i0;
    zt__adamw_f32(&a->p, w, (float *)a->m.data + i0, (float *)a->v.data + i0, g, n);
    if (zt__present(a->param16)) zt__from_f32(a->param16.data, a->param16.dtype, i0, w, n);
}

typedef struct zt__host_adamw {
    float *master, *m, *v;
    const float *grad;
    void *param16;
    zt_dtype dtype;
    int64_t n;
    zt_adamw_params p;
} zt__host_adamw;

static void zt__host_adamw_task(void *ctx, int64_t task, int thread) {
    const zt__host_adamw *j = (const zt__host_adamw *)ctx;
    int64_t i0 = task * ZT__HOST_TASK, n = ZT__MIN(ZT__HOST_TASK, j->n - i0);
    (void)thread;
    zt__adamw_f32(&j->p, j->master + i0, j->m + i0, j->v + i0, j->grad + i0, n);
    if (j->param16) zt__from_f32(j->param16, j->dtype, i0, j->master + i0, n);
}

ZT_API void zt_adamw_host(zt_pool *pool, float *master, float *m, float *v, const float *grad, void *param16,
                          zt_dtype param16_dtype, int64_t n, zt_adamw_params p) {
    zt__host_adamw j = {master, m, v, grad, param16, param16_dtype, n, p};
    ZT_ASSERT(p.step >= 1 && (!param16 || zt_dtype_is_float(param16_dtype)));
    zt_pool_run(pool, ZT__CDIV(n, ZT__HOST_TASK), zt__host_adamw_task, &j);
}

static void zt__elementwise_task(void *ctx, int64_t task, int thread) {
    zt__job *job = (zt__job *)ctx;
    const zt__op *op = job->op;
    float *s0 = job->cpu->scratch[thread], *s1 = s0 + ZT__CHUNK, *s2 = s1 + ZT__CHUNK;
    int64_t i0 = task * ZT__CHUNK, n = ZT__MIN(ZT__CHUNK, job->per_task - i0);
    switch (op->kind) {
    case ZT__OP_COPY: {
        size_t es = zt_dtype_size(op->unary.out.dtype);
        memmove((uint8_t *)op->unary.out.data + (size_t)i0 * es, (const uint8_t *)op->unary.inp.data + (size_t)i0 * es,
                (size_t)n * es);
        return;
    }
    case ZT__OP_CAST:
        zt__to_f32(s0, op->unary.inp.data, op->unary.inp.dtype, i0, n);
        zt__from_f32(op->unary.out.data, op->unary.out.dtype, i0, s0, n);
        return;
    case ZT__OP_FILL: {
        zt_tensor t = op->fill.t;
        if (zt_dtype_is_float(t.dtype)) {
            for (int64_t i = 0; i < n; i++) s0[i] = op->fill.value;
            zt__from_f32(t.data, t.dtype, i0, s0, n);
        } else {
            for (int64_t i = 0; i < n; i++) zt__store(t.data, t.dtype, i0 + i, op->fill.value);
        }
        return;
    }
    case ZT__OP_SCALE: {
        zt_tensor t = op->fill.t;
        zt__to_f32(s0, t.data, t.dtype, i0, n);
        for (int64_t i = 0; i < n; i++) s0[i] *= op->fill.value;
        zt__from_f32(t.data, t.dtype, i0, s0, n);
        return;
    }
    case ZT__OP_NOISE: { /* rounded step by step, as the CUDA kernel: the noise, then the sum or product */
        const zt__args_noise *a = &op->noise;
        float m = a->magnitude, lo = 1.0f - m, width = 2.0f * m;
        zt__to_f32(s0, a->t.data, a->t.dtype, i0, n);
        for (int64_t i = 0; i < n; i++) {
            if (a->mode == ZT__NOISE_DROP) {
                s0[i] *= zt_dropout_factor(a->seed, a->offset + i0 + i, m, a->scale);
                continue;
            }
            float u = zt_noise_uniform(a->seed, a->offset + i0 + i);
            if (a->mode == ZT__NOISE_MUL) {
                float factor = u * width;
                factor += lo;
                s0[i] *= factor;
            } else {
                float noise = (2.0f * u - 1.0f) * m;
                s0[i] += noise;
            }
        }
        zt__from_f32(a->t.data, a->t.dtype, i0, s0, n);
        return;
    }
    case ZT__OP_ADD: {
        const zt__args_add *a = &op->add;
        zt__to_f32(s0, a->a.data, a->a.dtype, i0, n);
        zt__to_f32(s1, a->b.data, a->b.dtype, i0, n);
        for (int64_t i = 0; i < n; i++) s0[i] += s1[i];
        zt__from_f32(a->out.data, a->out.dtype, i0, s0, n);
        return;
    }
    case ZT__OP_GELU_FWD:
    case ZT__OP_SILU_FWD: {
        const zt__args_unary *a = &op->unary;
        zt__to_f32(s0, a->inp.data, a->inp.dtype, i0, n);
        if (op->kind == ZT__OP_GELU_FWD)
            for (int64_t i = 0; i < n; i++) s0[i] = zt__gelu(s0[i]);
        else
            for (int64_t i = 0; i < n; i++) s0[i] = zt__silu(s0[i]);
        zt__from_f32(a->out.data, a->out.dtype, i0, s0, n);
        return;
    }
    case ZT__OP_GELU_BWD:
    case ZT__OP_SILU_BWD: {
        const zt__args_unary_bwd *a = &op->unary_bwd;
        zt__to_f32(s0, a->inp.data, a->inp.dtype, i0, n);
        zt__to_f32(s1, a->dout.data, a->dout.dtype, i0, n);
        zt__to_f32(s2, a->dinp.data, a->dinp.dtype, i0, n);
        if (op->kind == ZT__OP_GELU_BWD)
            for (int64_t i = 0; i < n; i++) s2[i] += s1[i] * zt__gelu_grad(s0[i]);
        else
            for (int64_t i = 0; i < n; i++) s2[i] += s1[i] * zt__silu_grad(s0[i]);
        zt__from_f32(a->dinp.data, a->dinp.dtype, i0, s2, n);
        return;
    }
    case ZT__OP_ADAMW: zt__adamw_chunk(&op->adamw, i0, n, s0); return;
    default: zt_fatal("op %d is not elementwise", (int)op->kind);
    }
}

/* ---- reductions over rows, split by columns so each column is summed in row order ---- */

#define ZT__COLS_PER_TASK 64

/* t[i0, i0+n) += v, rounded once to t's dtype; buf holds n floats of scratch */
static void zt__add_into(zt_tensor t, int64_t i0, const float *v, int64_t n, float *buf) {
    zt__to_f32(buf, t.data, t.dtype, i0, n);
    for (int64_t i = 0; i < n; i++) buf[i] += v[i];
    zt__from_f32(t.data, t.dtype, i0, buf, n);
}

/* sum_rows: out[c] += sum over rows of x[r][c] */
static void zt__sum_rows_task(void *ctx, int64_t task, int thread) {
    zt__job *job = (zt__job *)ctx;
    const zt__args_unary *a = &job->op->unary;
    int64_t R = zt_rows(a->inp), C = zt_cols(a->inp);
    int64_t c0 = task * ZT__COLS_PER_TASK, nc = ZT__MIN(ZT__COLS_PER_TASK, C - c0);
    float *acc = job->cpu->scratch[thread], *buf = acc + ZT__COLS_PER_TASK;
    for (int64_t c = 0; c < nc; c++) acc[c] = 0.0f;
    for (int64_t r = 0; r < R; r++) {
        const float *x = zt__row_in(a->inp, r * C + c0, nc, buf);
        for (int64_t c = 0; c < nc; c++) acc[c] += x[c];
    }
    zt__add_into(a->out, c0, acc, nc, buf);
}

/* embedding backward: dtable[ids[n]][c] += dout[n][c], n in order, for this task's columns */
static void zt__embedding_bwd_task(void *ctx, int64_t task, int thread) {
    zt__job *job = (zt__job *)ctx;
    const zt__args_embedding_bwd *a = &job->op->embedding_bwd;
    int64_t N = zt_numel(a->ids), C = zt_cols(a->dtable), V = zt_rows(a->dtable);
    int64_t c0 = task * ZT__COLS_PER_TASK, nc = ZT__MIN(ZT__COLS_PER_TASK, C - c0);
    float *buf = job->cpu->scratch[thread], *row = buf + ZT__COLS_PER_TASK;
    const int32_t *ids = (const int32_t *)a->ids.data;
    for (int64_t n = 0; n < N; n++) {
        int64_t id = ids[n];
        if (id < 0 || id >= V) zt_fatal("zt_embedding_backward: id %lld at %lld is outside [0, %lld)",
                                        (long long)id, (long long)n, (long long)V);
        zt__add_into(a->dtable, id * C + c0, zt__row_in(a->dout, n * C + c0, nc, buf), nc, row);
    }
}

/* layernorm / rmsnorm weight gradients: dweight[c] += sum_r dout*xhat, dbias[c] += sum_r dout */
static void zt__norm_dweight_task(void *ctx, int64_t task, int thread) {
    zt__job *job = (zt__job *)ctx;
    const zt__args_norm_bwd *a = &job->op->norm_bwd;
    int64_t R = zt_rows(a->inp), C = zt_cols(a->inp);
    int64_t c0 = task * ZT__COLS_PER_TASK, nc = ZT__MIN(ZT__COLS_PER_TASK, C - c0);
    float *dw = job->cpu->scratch[thread], *db = dw + ZT__COLS_PER_TASK;
    float *xb = db + ZT__COLS_PER_TASK, *gb = xb + ZT__COLS_PER_TASK;
    int layernorm = zt__present(a->mean);
    for (int64_t c = 0; c < nc; c++) dw[c] = db[c] = 0.0f;
    for (int64_t r = 0; r < R; r++) {
        const float *x = zt__row_in(a->inp, r * C + c0, nc, xb);
        const float *g = zt__row_in(a->dout, r * C + c0, nc, gb);
        float mean = layernorm ? ((const float *)a->mean.data)[r] : 0.0f;
        float rstd = ((const float *)a->rstd.data)[r];
        for (int64_t c = 0; c < nc; c++) {
            dw[c] += g[c] * ((x[c] - mean) * rstd);
            db[c] += g[c];
        }
    }
    if (zt__present(a->dweight)) zt__add_into(a->dweight, c0, dw, nc, xb);
    if (zt__present(a->dbias)) zt__add_into(a->dbias, c0, db, nc, xb);
}

/* ---- row kernels: tasks of zt__rows_per_task(C) rows ---- */

static void zt__embedding_fwd_task(void *ctx, int64_t task, int thread) {
    zt__job *job = (zt__job *)ctx;
    const zt__args_embedding *a = &job->op->embedding;
    int64_t N = zt_numel(a->ids), C = zt_cols(a->table), V = zt_rows(a->table);
    float *buf = job->cpu->scratch[thread], *acc = buf + C;
    const int32_t *ids = (const int32_t *)a->ids.data;
    for (int64_t n = task * job->per_task; n < ZT__MIN(N, (task + 1) * job->per_task); n++) {
        int64_t id = ids[n];
        if (id < 0 || id >= V) zt_fatal("zt_embedding_forward: id %lld at %lld is outside [0, %lld)",
                                        (long long)id, (long long)n, (long long)V);
        const float *row = zt__row_in(a->table, id * C, C, buf);
        if (a->accumulate) zt__add_into(a->out, n * C, row, C, acc);
        else zt__from_f32(a->out.data, a->out.dtype, n * C, row, C);
    }
}

/* ---- mixture of experts: a token's row per task, except the sort (one pass, in order) ---- */

static void zt__moe_route_fwd_task(void *ctx, int64_t task, int thread) {
    zt__job *job = (zt__job *)ctx;
    const zt__args_moe *a = &job->op->moe;
    int64_t N = zt_rows(a->inp), E = zt_cols(a->inp), k = a->k;
    float *buf = job->cpu->scratch[thread];
    for (int64_t t = task * job->per_task; t < ZT__MIN(N, (task + 1) * job->per_task); t++) {
        const float *x = zt__row_in(a->inp, t * E, E, buf);
        float *p = (float *)a->probs.data + t * E, top = -INFINITY, sum = 0.0f, chosen = 0.0f;
        for (int64_t e = 0; e < E; e++) top = fmaxf(top, x[e]);
        for (int64_t e = 0; e < E; e++) sum += (p[e] = expf(x[e] - top));
        for (int64_t e = 0; e < E; e++) p[e] /= sum;
        int32_t *idx = (int32_t *)a->idx.data + t * k;
        for (int64_t j = 0; j < k; j++) { /* the likeliest not yet taken, the lower expert on a tie (or NaN) */
            int64_t best = -1;
            for (int64_t e = 0; e < E; e++) {
                int taken = 0;
                for (int64_t i = 0; i < j; i++) taken |= idx[i] == e;
                if (!taken && (best < 0 || p[e] > p[best])) best = e;
            }
            idx[j] = (int32_t)best;
            chosen += p[best]; /* in the order transformers sums its topk values */
        }
        for (int64_t j = 1; j < k; j++) /* increasing expert order */
            for (int64_t i = j; i > 0 && idx[i - 1] > idx[i]; i--) {
                int32_t v = idx[i];
                idx[i] = idx[i - 1], idx[i - 1] = v;
            }
        float *w = (float *)a->weight.data + t * k;
        for (int64_t j = 0; j < k; j++) w[j] = a->normalize ? p[idx[j]] / chosen : p[idx[j]];
    }
}

/* w_j = p_j / S (S: the chosen p's sum) when normalizing, else p_j; dp_j from dw, then softmax's backward */
static void zt__moe_route_bwd_task(void *ctx, int64_t task, int thread) {
    zt__job *job = (zt__job *)ctx;
    const zt__args_moe *a = &job->op->moe;
    int64_t N = zt_rows(a->probs), E = zt_cols(a->probs), k = a->k;
    float *d = job->cpu->scratch[thread], *buf = d + E;
    for (int64_t t = task * job->per_task; t < ZT__MIN(N, (task + 1) * job->per_task); t++) {
        const float *p = (const float *)a->probs.data + t * E, *dw = (const float *)a->dweight.data + t * k;
        const int32_t *idx = (const int32_t *)a->idx.data + t * k;
        float S = 0.0f, dot = 0.0f, dp[ZT_MOE_MAX_K], pd = 0.0f;
        for (int64_t j = 0; j < k; j++) S += p[idx[j]];
        for (int64_t j = 0; j < k; j++) dot += dw[j] * (p[idx[j]] / S);
        for (int64_t j = 0; j < k; j++) dp[j] = a->normalize ? (dw[j] - dot) / S : dw[j];
        for (int64_t j = 0; j < k; j++) pd += dp[j] * p[idx[j]];
        for (int64_t e = 0; e < E; e++) d[e] = -pd;
        for (int64_t j = 0; j < k; j++) d[idx[j]] += dp[j];
        for (int64_t e = 0; e < E; e++) d[e] *= p[e];
        zt__add_into(a->dinp, t * E, d, E, buf);
    }
}

/* d_e = p_e (g_e - sum_i p_i g_i): softmax's backward of the same g on every row */
static void zt__moe_balance_bwd_task(void *ctx, int64_t task, int thread) {
    zt__job *job = (zt__job *)ctx;
    const zt__args_moe *a = &job->op->moe;
    int64_t N = zt_rows(a->probs), E = zt_cols(a->probs);
    const float *g = (const float *)a->weight.data;
    float *d = job->cpu->scratch[thread], *buf = d + E;
    for (int64_t t = task * job->per_task; t < ZT__MIN(N, (task + 1) * job->per_task); t++) {
        const float *p = (const float *)a->probs.data + t * E;
        float pg = 0.0f;
        for (int64_t e = 0; e < E; e++) pg += p[e] * g[e];
        for (int64_t e = 0; e < E; e++) d[e] = p[e] * (g[e] - pg);
        zt__add_into(a->dinp, t * E, d, E, buf);
    }
}

static void zt__moe_sort_task(void *ctx, int64_t task, int thread) {
    (void)task;
    zt__job *job = (zt__job *)ctx;
    const zt__args_moe *a = &job->op->moe;
    int64_t n = zt_numel(a->idx), E = zt_numel(a->counts);
    const int32_t *idx = (const int32_t *)a->idx.data;
    int32_t *counts = (int32_t *)a->counts.data, *next = (int32_t *)job->cpu->scratch[thread];
    int32_t *order = (int32_t *)a->order.data, *where = (int32_t *)a->where.data;
    memset(counts, 0, sizeof(int32_t) * (size_t)E);
    for (int64_t i = 0; i < n; i++) {
        if (idx[i] < 0 || idx[i] >= E)
            zt_fatal("zt_moe_sort: expert %d at %lld is outside [0, %lld)", (int)idx[i], (long long)i, (long long)E);
        counts[idx[i]]++;
    }
    for (int64_t e = 0, at = 0; e < E; e++) next[e] = (int32_t)at, at += counts[e];
    for (int64_t i = 0; i < n; i++) {
        int32_t r = next[idx[i]]++;
        order[r] = (int32_t)i, where[i] = r;
    }
}

static void zt__moe_gather_fwd_task(void *ctx, int64_t task, int thread) {
    zt__job *job = (zt__job *)ctx;
    const zt__args_moe *a = &job->op->moe;
    int64_t n = zt_numel(a->order), N = zt_rows(a->inp), C = zt_cols(a->inp);
    float *buf = job->cpu->scratch[thread];
    const int32_t *order = (const int32_t *)a->order.data;
    for (int64_t r = task * job->per_task; r < ZT__MIN(n, (task + 1) * job->per_task); r++) {
        int64_t t = order[r] / a->k;
        if (order[r] < 0 || t >= N) zt_fatal("zt_moe_gather_forward: order[%lld] = %d is outside [0, %lld)",
                                             (long long)r, (int)order[r], (long long)n);
        zt__from_f32(a->out.data, a->out.dtype, r * C, zt__row_in(a->inp, t * C, C, buf), C);
    }
}

static int64_t zt__moe_where(const zt__args_moe *a, int64_t choice, const char *op) {
    int64_t r = ((const int32_t *)a->where.data)[choice];
    if (r < 0 || r >= zt_numel(a->where))
        zt_fatal("%s: where[%lld] = %lld is outside [0, %lld)", op, (long long)choice, (long long)r,
                 (long long)zt_numel(a->where));
    return r;
}

static void zt__moe_gather_bwd_task(void *ctx, int64_t task, int thread) {
    zt__job *job = (zt__job *)ctx;
    const zt__args_moe *a = &job->op->moe;
    int64_t N = zt_rows(a->dinp), C = zt_cols(a->dinp);
    float *acc = job->cpu->scratch[thread], *buf = acc + C;
    for (int64_t t = task * job->per_task; t < ZT__MIN(N, (task + 1) * job->per_task); t++) {
        zt__to_f32(acc, a->dinp.data, a->dinp.dtype, t * C, C);
        for (int64_t j = 0; j < a->k; j++) {
            const float *g = zt__row_in(a->dout, zt__moe_where(a, t * a->k + j, "zt_moe_gather_backward") * C, C, buf);
            for (int64_t c = 0; c < C; c++) acc[c] += g[c];
        }
        zt__from_f32(a->dinp.data, a->dinp.dtype, t * C, acc, C);
    }
}

static void zt__moe_combine_fwd_task(void *ctx, int64_t task, int thread) {
    zt__job *job = (zt__job *)ctx;
    const zt__args_moe *a = &job->op->moe;
    int64_t N = zt_rows(a->out), C = zt_cols(a->out);
    float *acc = job->cpu->scratch[thread], *buf = acc + C;
    for (int64_t t = task * job->per_task; t < ZT__MIN(N, (task + 1) * job->per_task); t++) {
        for (int64_t c = 0; c < C; c++) acc[c] = 0.0f;
        for (int64_t j = 0; j < a->k; j++) {
            float w = ((const float *)a->weight.data)[t * a->k + j];
            const float *y = zt__row_in(a->inp, zt__moe_where(a, t * a->k + j, "zt_moe_combine_forward") * C, C, buf);
            for (int64_t c = 0; c < C; c++) acc[c] += w * y[c];
        }
        zt__from_f32(a->out.data, a->out.dtype, t * C, acc, C);
    }
}

static void zt__moe_combine_bwd_task(void *ctx, int64_t task, int thread) {
    zt__job *job = (zt__job *)ctx;
    const zt__args_moe *a = &job->op->moe;
    int64_t N = zt_rows(a->dout), C = zt_cols(a->dout);
    float *gbuf = job->cpu->scratch[thread], *ybuf = gbuf + C, *wg = ybuf + C, *buf = wg + C;
    for (int64_t t = task * job->per_task; t < ZT__MIN(N, (task + 1) * job->per_task); t++) {
        const float *g = zt__row_in(a->dout, t * C, C, gbuf);
        for (int64_t j = 0; j < a->k; j++) {
            int64_t r = zt__moe_where(a, t * a->k + j, "zt_moe_combine_backward");
            float w = ((const float *)a->weight.data)[t * a->k + j];
            ((float *)a->dweight.data)[t * a->k + j] += zt__dot(g, zt__row_in(a->inp, r * C, C, ybuf), C);
            for (int64_t c = 0; c < C; c++) wg[c] = w * g[c];
            zt__add_into(a->dinp, r * C, wg, C, buf); /* row r is this choice's alone */
        }
    }
}

/* the gated add, a row per step: sigmoid(g) as 1 / (1 + exp(-g)), in f32 */
static void zt__gated_add_task(void *ctx, int64_t task, int thread) {
    zt__job *job = (zt__job *)ctx;
    const zt__args_moe *a = &job->op->moe;
    int64_t N = zt_rows(a->inp), C = zt_cols(a->inp);
    int fwd = job->op->kind == ZT__OP_GATED_ADD_FWD;
    float *ybuf = job->cpu->scratch[thread], *gbuf = ybuf + C, *v = gbuf + C, *buf = v + C;
    for (int64_t n = task * job->per_task; n < ZT__MIN(N, (task + 1) * job->per_task); n++) {
        float g, sg;
        zt__to_f32(&g, a->weight.data, a->weight.dtype, n, 1);
        sg = 1.0f / (1.0f + expf(-g));
        const float *y = zt__row_in(a->inp, n * C, C, ybuf);
        if (fwd) {
            for (int64_t c = 0; c < C; c++) v[c] = sg * y[c];
            zt__add_into(a->out, n * C, v, C, buf);
            continue;
        }
        const float *d = zt__row_in(a->dout, n * C, C, gbuf);
        float dg = zt__dot(d, y, C) * sg * (1.0f - sg);
        for (int64_t c = 0; c < C; c++) v[c] = sg * d[c];
        zt__add_into(a->dinp, n * C, v, C, buf);
        zt__add_into(a->dweight, n, &dg, 1, buf);
    }
}

static void zt__norm_fwd_task(void *ctx, int64_t task, int thread) {
    zt__job *job = (zt__job *)ctx;
    const zt__args_norm *a = &job->op->norm;
    int64_t N = zt_rows(a->inp), C = zt_cols(a->inp);
    int layernorm = job->op->kind == ZT__OP_LAYERNORM_FWD;
    float *xb = job->cpu->scratch[thread], *w = xb + C, *b = w + C, *y = b + C;
    zt__to_f32(w, a->weight.data, a->weight.dtype, 0, C);
    for (int64_t c = 0; c < C && a->offset != 0.0f; c++) w[c] += a->offset;
    if (layernorm) zt__to_f32(b, a->bias.data, a->bias.dtype, 0, C);
    for (int64_t r = task * job->per_task; r < ZT__MIN(N, (task + 1) * job->per_task); r++) {
        const float *x = zt__row_in(a->inp, r * C, C, xb);
        float mean = 0.0f, var;
        if (layernorm) {
            mean = zt__sum(x, C) / (float)C;
            for (int64_t c = 0; c < C; c++) y[c] = (x[c] - mean) * (x[c] - mean);
            var = zt__sum(y, C) / (float)C;
        } else {
            var = zt__dot(x, x, C) / (float)C;
        }
        float rstd = 1.0f / sqrtf(var + a->eps);
        for (int64_t c = 0; c < C; c++) y[c] = (x[c] - mean) * rstd * w[c] + (layernorm ? b[c] : 0.0f);
        zt__from_f32(a->out.data, a->out.dtype, r * C, y, C);
        if (layernorm) ((float *)a->mean.data)[r] = mean;
        ((float *)a->rstd.data)[r] = rstd;
    }
}

/* dinp += rstd * (g*w - mean(g*w) - xhat * mean(g*w*xhat)); rmsnorm has no mean(g*w) term */
static void zt__norm_bwd_task(void *ctx, int64_t task, int thread) {
    zt__job *job = (zt__job *)ctx;
    const zt__args_norm_bwd *a = &job->op->norm_bwd;
    int64_t N = zt_rows(a->inp), C = zt_cols(a->inp);
    int layernorm = zt__present(a->mean);
    float *xb = job->cpu->scratch[thread], *gb = xb + C, *w = gb + C, *gw = w + C, *xh = gw + C, *d = xh + C;
    zt__to_f32(w, a->weight.data, a->weight.dtype, 0, C);
    for (int64_t c = 0; c < C && a->offset != 0.0f; c++) w[c] += a->offset;
    for (int64_t r = task * job->per_task; r < ZT__MIN(N, (task + 1) * job->per_task); r++) {
        const float *x = zt__row_in(a->inp, r * C, C, xb);
        const float *g = zt__row_in(a->dout, r * C, C, gb);
        float mean = layernorm ? ((const float *)a->mean.data)[r] : 0.0f;
        float rstd = ((const float *)a->rstd.data)[r];
        for (int64_t c = 0; c < C; c++) {
            gw[c] = g[c] * w[c];
            xh[c] = (x[c] - mean) * rstd;
        }
        float mean_gw = layernorm ? zt__sum(gw, C) / (float)C : 0.0f;
        float mean_gwx = zt__dot(gw, xh, C) / (float)C;
        zt__to_f32(d, a->dinp.data, a->dinp.dtype, r * C, C);
        for (int64_t c = 0; c < C; c++) d[c] += rstd * (gw[c] - mean_gw - xh[c] * mean_gwx);
        zt__from_f32(a->dinp.data, a->dinp.dtype, r * C, d, C);
    }
}

/* SwiGLU and GeGLU: act(gate) * up */
static void zt__glu_task(void *ctx, int64_t task, int thread) {
    zt__job *job = (zt__job *)ctx;
    const zt__op *op = job->op;
    int fwd = op->kind == ZT__OP_SWIGLU_FWD || op->kind == ZT__OP_GEGLU_FWD;
    int gelu = op->kind == ZT__OP_GEGLU_FWD || op->kind == ZT__OP_GEGLU_BWD;
    zt_tensor inp = fwd ? op->unary.inp : op->unary_bwd.inp;
    int64_t N = zt_rows(inp), H = zt_cols(inp) / 2;
    float *xb = job->cpu->scratch[thread], *y = xb + 2 * H, *gb = y + 2 * H;
    for (int64_t r = task * job->per_task; r < ZT__MIN(N, (task + 1) * job->per_task); r++) {
        const float *x = zt__row_in(inp, r * 2 * H, 2 * H, xb); /* [gate | up] */
        if (fwd) {
            for (int64_t i = 0; i < H; i++) y[i] = (gelu ? zt__gelu(x[i]) : zt__silu(x[i])) * x[H + i];
            zt__from_f32(op->unary.out.data, op->unary.out.dtype, r * H, y, H);
        } else {
            const zt__args_unary_bwd *a = &op->unary_bwd;
            const float *g = zt__row_in(a->dout, r * H, H, gb);
            zt__to_f32(y, a->dinp.data, a->dinp.dtype, r * 2 * H, 2 * H);
            for (int64_t i = 0; i < H; i++) {
                y[i] += g[i] * x[H + i] * (gelu ? zt__gelu_grad(x[i]) : zt__silu_grad(x[i]));
                y[H + i] += g[i] * (gelu ? zt__gelu(x[i]) : zt__silu(x[i]));
            }
            zt__from_f32(a->dinp.data, a->dinp.dtype, r * 2 * H, y, 2 * H);
        }
    }
}

/* rope over tokens: the angles of a token are shared by its heads */
static void zt__rope_task(void *ctx, int64_t task, int thread) {
    zt__job *job = (zt__job *)ctx;
    const zt__args_rope *a = &job->op->rope;
    int fwd = job->op->kind == ZT__OP_ROPE_FWD;
    int64_t BT = a->inp.shape.d[0] * a->inp.shape.d[1], H = a->inp.shape.d[2], HD = a->inp.shape.d[3];
    int64_t RD = a->scaling.rotary_dim, half = RD / 2; /* dimensions RD.. pass */
    float *cs = job->cpu->scratch[thread], *sn = cs + HD / 2, *x = sn + HD / 2, *y = x + HD, *freq = y + HD;
    const int32_t *pos = (const int32_t *)a->pos.data;
    float mscale = zt__rope_mscale(&a->scaling);
    for (int64_t i = 0; i < half; i++) freq[i] = zt__rope_inv_freq(a->theta, i, RD, &a->scaling); /* once a task */
    for (int64_t t = task * job->per_task; t < ZT__MIN(BT, (task + 1) * job->per_task); t++) {
        for (int64_t i = 0; i < half; i++) {
            float angle = (float)pos[t] * freq[i];
            cs[i] = cosf(angle) * mscale;
            sn[i] = sinf(angle) * mscale;
        }
        for (int64_t h = 0; h < H; h++) {
            int64_t off = (t * H + h) * HD;
            zt__to_f32(x, a->inp.data, a->inp.dtype, off, HD);
            if (fwd) {
                for (int64_t i = 0; i < half; i++) {
                    y[i] = x[i] * cs[i] - x[half + i] * sn[i];
                    y[half + i] = x[half + i] * cs[i] + x[i] * sn[i];
                }
                for (int64_t c = RD; c < HD; c++) y[c] = x[c];
            } else { /* the transpose of the rotation, accumulated into dinp (= out) */
                zt__to_f32(y, a->out.data, a->out.dtype, off, HD);
                for (int64_t i = 0; i < half; i++) {
                    y[i] += x[i] * cs[i] + x[half + i] * sn[i];
                    y[half + i] += x[half + i] * cs[i] - x[i] * sn[i];
                }
                for (int64_t c = RD; c < HD; c++) y[c] += x[c];
            }
            zt__from_f32(a->out.data, a->out.dtype, off, y, HD);
        }
    }
}

/* ---- attention: tiled, online softmax, no T x T matrix ---- */

#define ZT__ATT_QB 32 /* queries per task */
#define ZT__ATT_KB 64 /* keys per tile */

typedef struct zt__att_dims {
    int64_t B, T, NH, NKV, HD, group;
    float scale, cap, drop, dscale;
    uint64_t dseed;
    int64_t doffset;
} zt__att_dims;

static zt__att_dims zt__att_dims_of(const zt__args_attention *a) {
    zt__att_dims d;
    d.B = a->q.shape.d[0];
    d.T = a->q.shape.d[1];
    d.NH = a->q.shape.d[2];
    d.HD = a->q.shape.d[3];
    d.NKV = a->k.shape.d[2];
    d.group = d.NH / d.NKV;
    d.scale = a->scale;
    d.cap = a->softcap;
    d.drop = a->dropout, d.dscale = a->dscale, d.dseed = a->dseed, d.doffset = a->doffset;
    return d;
}

/* what attention dropout multiplies probability (b, h, i, j) by: 1 without dropout */
static float zt__att_drop(const zt__att_dims *d, int64_t b, int64_t h, int64_t i, int64_t j) {
    if (d->drop <= 0) return 1.0f;
    return zt_dropout_factor(d->dseed, d->doffset + ((b * d->NH + h) * d->T + i) * d->T + j, d->drop, d->dscale);
}

/* a score as the softmax sees it: scaled, and capped where the model caps it */
static float zt__att_score(const zt__att_dims *d, float dot) {
    float s = dot * d->scale;
    return d->cap > 0 ? d->cap * tanhf(s / d->cap) : s;
}

/* d score / d (scaled score): 1 without a cap, 1 - tanh^2 with one (from the capped score) */
static float zt__att_cap_grad(const zt__att_dims *d, float capped) {
    if (d->cap <= 0) return 1.0f;
    float t = capped / d->cap;
    return 1.0f - t * t;
}

/* the first key query t of batch b may see: its document's first, or the window's */
static int64_t zt__att_start(const zt__args_attention *a, int64_t b, int64_t T, int64_t t) {
    int64_t s = 0;
    if (zt__present(a->starts)) {
        s = ((const int32_t *)a->starts.data)[b * T + t];
        if (s < 0 || s > t) zt_fatal("attention: starts[%lld][%lld] = %lld is outside [0, %lld]", (long long)b,
                                     (long long)t, (long long)s, (long long)t);
    }
    return a->window > 0 ? ZT__MAX(s, t - a->window + 1) : s;
}

/* rows [t0, t0+n) of head h of x (B,T,H,HD) as f32, densely packed */
static void zt__att_rows(float *dst, zt_tensor x, int64_t b, int64_t h, int64_t t0, int64_t n) {
    int64_t T = x.shape.d[1], H = x.shape.d[2], HD = x.shape.d[3];
    for (int64_t i = 0; i < n; i++) zt__to_f32(dst + i * HD, x.data, x.dtype, ((b * T + t0 + i) * H + h) * HD, HD);
}

static void zt__att_fwd_task(void *ctx, int64_t task, int thread) {
    zt__job *job = (zt__job *)ctx;
    const zt__args_attention *a = &job->op->attention;
    zt__att_dims d = zt__att_dims_of(a);
    int64_t qblocks = ZT__CDIV(d.T, ZT__ATT_QB), HD = d.HD;
    int64_t b = task / (d.NH * qblocks), h = (task / qblocks) % d.NH, t0 = (task % qblocks) * ZT__ATT_QB;
    int64_t nq = ZT__MIN(ZT__ATT_QB, d.T - t0), kvh = h / d.group;
    float *q = job->cpu->scratch[thread], *acc = q + ZT__ATT_QB * HD, *k = acc + ZT__ATT_QB * HD;
    float *v = k + ZT__ATT_KB * HD, *s = v + ZT__ATT_KB * HD, *mx = s + ZT__ATT_KB, *l = mx + ZT__ATT_QB;
    int64_t start[ZT__ATT_QB], kmin = t0;
    zt__att_rows(q, a->q, b, h, t0, nq);
    for (int64_t i = 0; i < nq; i++) {
        start[i] = zt__att_start(a, b, d.T, t0 + i);
        kmin = ZT__MIN(kmin, start[i]);
        mx[i] = -INFINITY;
        l[i] = 0.0f;
        for (int64_t c = 0; c < HD; c++) acc[i * HD + c] = 0.0f;
    }
    for (int64_t k0 = kmin - kmin % ZT__ATT_KB; k0 < t0 + nq; k0 += ZT__ATT_KB) {
        int64_t nk = ZT__MIN(ZT__ATT_KB, t0 + nq - k0);
        zt__att_rows(k, a->k, b, kvh, k0, nk);
        zt__att_rows(v, a->v, b, kvh, k0, nk);
        for (int64_t i = 0; i < nq; i++) {
            int64_t j0 = ZT__MAX(k0, start[i]), j1 = ZT__MIN(k0 + nk, t0 + i + 1);
            if (j0 >= j1) continue;
            float m = mx[i];
            for (int64_t j = j0; j < j1; j++) {
                s[j - k0] = zt__att_score(&d, zt__dot(q + i * HD, k + (j - k0) * HD, HD));
                m = ZT__MAX(m, s[j - k0]);
            }
            float corr = expf(mx[i] - m), sum = 0.0f;
            float *o = acc + i * HD;
            for (int64_t c = 0; c < HD; c++) o[c] *= corr;
            for (int64_t j = j0; j < j1; j++) {
                float p = expf(s[j - k0] - m);
                sum += p;
                zt__axpy(o, p * zt__att_drop(&d, b, h, t0 + i, j), v + (j - k0) * HD, HD); /* after the sum: lse's */
            }
            l[i] = l[i] * corr + sum;
            mx[i] = m;
        }
    }
    for (int64_t i = 0; i < nq; i++) {
        float *o = acc + i * HD, inv = 1.0f / l[i];
        for (int64_t c = 0; c < HD; c++) o[c] *= inv;
        zt__from_f32(a->out.data, a->out.dtype, ((b * d.T + t0 + i) * d.NH + h) * HD, o, HD);
        ((float *)a->lse.data)[(b * d.NH + h) * d.T + t0 + i] = mx[i] + logf(l[i]);
    }
}

/* dq for a block of queries of one head: dq_i += scale * sum_j p_ij (z_ij dO_i.v_j - D_i) k_j, z_ij the dropout
   factor (1 without); D_i = dO_i.O_i holds sum_j p_ij z_ij dO_i.v_j all the same */
static void zt__att_dq_task(void *ctx, int64_t task, int thread) {
    zt__job *job = (zt__job *)ctx;
    const zt__args_attention *a = &job->op->attention;
    zt__att_dims d = zt__att_dims_of(a);
    int64_t qblocks = ZT__CDIV(d.T, ZT__ATT_QB), HD = d.HD;
    int64_t b = task / (d.NH * qblocks), h = (task / qblocks) % d.NH, t0 = (task % qblocks) * ZT__ATT_QB;
    int64_t nq = ZT__MIN(ZT__ATT_QB, d.T - t0), kvh = h / d.group;
    float *q = job->cpu->scratch[thread], *dO = q + ZT__ATT_QB * HD, *dq = dO + ZT__ATT_QB * HD;
    float *k = dq + ZT__ATT_QB * HD, *v = k + ZT__ATT_KB * HD, *o = v + ZT__ATT_KB * HD;
    float D[ZT__ATT_QB], lse[ZT__ATT_QB];
    int64_t start[ZT__ATT_QB], kmin = t0;
    zt__att_rows(q, a->q, b, h, t0, nq);
    zt__att_rows(dO, a->dout, b, h, t0, nq);
    zt__att_rows(dq, a->dq, b, h, t0, nq);
    for (int64_t i = 0; i < nq; i++) {
        zt__att_rows(o, a->out, b, h, t0 + i, 1);
        D[i] = zt__dot(dO + i * HD, o, HD);
        lse[i] = ((const float *)a->lse.data)[(b * d.NH + h) * d.T + t0 + i];
        start[i] = zt__att_start(a, b, d.T, t0 + i);
        kmin = ZT__MIN(kmin, start[i]);
    }
    for (int64_t k0 = kmin - kmin % ZT__ATT_KB; k0 < t0 + nq; k0 += ZT__ATT_KB) {
        int64_t nk = ZT__MIN(ZT__ATT_KB, t0 + nq - k0);
        zt__att_rows(k, a->k, b, kvh, k0, nk);
        zt__att_rows(v, a->v, b, kvh, k0, nk);
        for (int64_t i = 0; i < nq; i++) {
            int64_t j0 = ZT__MAX(k0, start[i]), j1 = ZT__MIN(k0 + nk, t0 + i + 1);
            for (int64_t j = j0; j < j1; j++) {
                const float *kj = k + (j - k0) * HD;
                float sc = zt__att_score(&d, zt__dot(q + i * HD, kj, HD)), p = expf(sc - lse[i]);
                float z = zt__att_drop(&d, b, h, t0 + i, j);
                float ds = p * (z * zt__dot(dO + i * HD, v + (j - k0) * HD, HD) - D[i]) * zt__att_cap_grad(&d, sc);
                zt__axpy(dq + i * HD, ds * d.scale, kj, HD);
            }
        }
    }
    for (int64_t i = 0; i < nq; i++)
        zt__from_f32(a->dq.data, a->dq.dtype, ((b * d.T + t0 + i) * d.NH + h) * HD, dq + i * HD, HD);
}

/* dk, dv for a block of keys of one kv head, summed over its query heads and queries in order */
static void zt__att_dkv_task(void *ctx, int64_t task, int thread) {
    zt__job *job = (zt__job *)ctx;
    const zt__args_attention *a = &job->op->attention;
    zt__att_dims d = zt__att_dims_of(a);
    int64_t kblocks = ZT__CDIV(d.T, ZT__ATT_KB), HD = d.HD;
    int64_t b = task / (d.NKV * kblocks), kvh = (task / kblocks) % d.NKV, k0 = (task % kblocks) * ZT__ATT_KB;
    int64_t nk = ZT__MIN(ZT__ATT_KB, d.T - k0);
    float *k = job->cpu->scratch[thread], *v = k + ZT__ATT_KB * HD, *dk = v + ZT__ATT_KB * HD;
    float *dv = dk + ZT__ATT_KB * HD, *q = dv + ZT__ATT_KB * HD, *dO = q + HD, *o = dO + HD;
    zt__att_rows(k, a->k, b, kvh, k0, nk);
    zt__att_rows(v, a->v, b, kvh, k0, nk);
    zt__att_rows(dk, a->dk, b, kvh, k0, nk);
    zt__att_rows(dv, a->dv, b, kvh, k0, nk);
    for (int64_t h = kvh * d.group; h < (kvh + 1) * d.group; h++) {
        int64_t iend = a->window > 0 ? ZT__MIN(d.T, k0 + nk - 1 + a->window) : d.T; /* later queries' windows pass */
        for (int64_t i = k0; i < iend; i++) {
            int64_t j0 = ZT__MAX(k0, zt__att_start(a, b, d.T, i)), j1 = ZT__MIN(k0 + nk, i + 1);
            if (j0 >= j1) continue;
            zt__att_rows(q, a->q, b, h, i, 1);
            zt__att_rows(dO, a->dout, b, h, i, 1);
            zt__att_rows(o, a->out, b, h, i, 1);
            float Di = zt__dot(dO, o, HD), lse = ((const float *)a->lse.data)[(b * d.NH + h) * d.T + i];
            for (int64_t j = j0; j < j1; j++) {
                float sc = zt__att_score(&d, zt__dot(q, k + (j - k0) * HD, HD)), p = expf(sc - lse);
                float z = zt__att_drop(&d, b, h, i, j);
                float ds = p * (z * zt__dot(dO, v + (j - k0) * HD, HD) - Di) * zt__att_cap_grad(&d, sc);
                zt__axpy(dv + (j - k0) * HD, p * z, dO, HD);
                zt__axpy(dk + (j - k0) * HD, ds * d.scale, q, HD);
            }
        }
    }
    for (int64_t j = 0; j < nk; j++) {
        int64_t off = ((b * d.T + k0 + j) * d.NKV + kvh) * HD;
        zt__from_f32(a->dk.data, a->dk.dtype, off, dk + j * HD, HD);
        zt__from_f32(a->dv.data, a->dv.dtype, off, dv + j * HD, HD);
    }
}

/* ---- softmax + cross-entropy, a row at a time ---- */

static void zt__crossentropy_task(void *ctx, int64_t task, int thread) {
    zt__job *job = (zt__job *)ctx;
    const zt__args_crossentropy *a = &job->op->crossentropy;
    int64_t N = zt_rows(a->logits), Vp = zt_cols(a->logits), V = a->vocab;
    float *buf = job->cpu->scratch[thread];
    const int32_t *targets = (const int32_t *)a->targets.data;
    for (int64_t r = task * job->per_task; r < ZT__MIN(N, (task + 1) * job->per_task); r++) {
        int64_t t = targets[r];
        int ignored = t == a->ignore_index;
        if (!ignored && (t < 0 || t >= V))
            zt_fatal("zt_crossentropy: target %lld in row %lld is outside [0, %lld) and is not the ignore "
                     "index %d", (long long)t, (long long)r, (long long)V, a->ignore_index);
        float *x = buf, cap = a->softcap;
        zt__to_f32(x, a->logits.data, a->logits.dtype, r * Vp, V);
        for (int64_t c = 0; c < V && cap > 0; c++) x[c] = cap * tanhf(x[c] / cap);
        float xt = ignored ? 0.0f : x[t], e = a->smoothing;
        float m = -INFINITY;
        double sum = 0.0, total = 0.0; /* 128k terms: summed in double so the loss keeps f32 accuracy */
        for (int64_t c = 0; c < V; c++) m = ZT__MAX(m, x[c]);
        for (int64_t c = 0; e > 0 && c < V; c++) total += x[c];
        for (int64_t c = 0; c < V; c++) {
            x[c] = expf(x[c] - m);
            sum += x[c];
        }
        float lse = m + (float)log(sum);
        float loss = e > 0 ? (1.0f - e) * (lse - xt) + e * (lse - (float)(total / (double)V)) : lse - xt;
        ((float *)a->losses.data)[r] = ignored ? 0.0f : loss;
        if (!zt__present(a->dlogits)) continue;
        float scale = ignored ? 0.0f : (float)(a->dloss / sum), uniform = ignored ? 0.0f : e * a->dloss / (float)V;
        for (int64_t c = 0; c < V; c++) x[c] = x[c] * scale - uniform;
        if (!ignored) x[t] -= (1.0f - e) * a->dloss;
        for (int64_t c = 0; c < V && cap > 0; c++) { /* through the cap: (1 - tanh^2), from the logit before it */
            float th = tanhf(zt__ldf(a->logits.data, a->logits.dtype, r * Vp + c) / cap);
            x[c] *= 1.0f - th * th;
        }
        for (int64_t c = V; c < Vp; c++) x[c] = 0.0f;
        zt__from_f32(a->dlogits.data, a->dlogits.dtype, r * Vp, x, Vp);
    }
}

/* sum of squares: at most 1024 chunks, each summed in double, then added in order */
#define ZT__SUMSQ_PARTS 1024
typedef struct zt__sumsq_plan { int64_t n, chunk; double part[ZT__SUMSQ_PARTS]; } zt__sumsq_plan;

static int64_t zt__sumsq_chunk(int64_t n) { return ZT__MAX(ZT__CHUNK, ZT__CDIV(n, ZT__SUMSQ_PARTS)); }

static void zt__sumsq_task(void *ctx, int64_t task, int thread) {
    zt__job *job = (zt__job *)ctx;
    zt__sumsq_plan *pl = (zt__sumsq_plan *)job->plan;
    zt_tensor x = job->op->unary.inp;
    float *buf = job->cpu->scratch[thread];
    int64_t i0 = task * pl->chunk, n = ZT__MIN(pl->chunk, pl->n - i0);
    double s = 0.0;
    for (int64_t b0 = 0; b0 < n; b0 += ZT__CHUNK) {
        int64_t nb = ZT__MIN(ZT__CHUNK, n - b0);
        const float *v = zt__row_in(x, i0 + b0, nb, buf);
        for (int64_t i = 0; i < nb; i++) s += (double)v[i] * (double)v[i];
    }
    pl->part[task] = s;
}

typedef struct zt__host_sumsq { const float *x; zt__sumsq_plan pl; } zt__host_sumsq;

static void zt__host_sumsq_task(void *ctx, int64_t task, int thread) {
    zt__host_sumsq *j = (zt__host_sumsq *)ctx;
    int64_t i0 = task * j->pl.chunk, n = ZT__MIN(j->pl.chunk, j->pl.n - i0);
    double s = 0.0;
    (void)thread;
    for (int64_t i = 0; i < n; i++) s += (double)j->x[i0 + i] * (double)j->x[i0 + i];
    j->pl.part[task] = s;
}

/* zt_sumsq of host f32 memory: the same parts in the same order, so the same bits */
static float zt__sumsq_host(zt_pool *pool, const float *x, int64_t n) {
    zt__host_sumsq j;
    j.x = x;
    j.pl.n = n;
    j.pl.chunk = zt__sumsq_chunk(n);
    int64_t parts = ZT__CDIV(n, j.pl.chunk);
    zt_pool_run(pool, parts, zt__host_sumsq_task, &j);
    double s = 0.0;
    for (int64_t i = 0; i < parts; i++) s += j.pl.part[i];
    return (float)s;
}

/* floats of per-thread scratch a row kernel needs (the rest need a fixed amount that fits) */
static int64_t zt__cpu_scratch_need(const zt__op *op) {
    switch (op->kind) {
    case ZT__OP_EMBEDDING_FWD: return 2 * zt_cols(op->embedding.table);
    case ZT__OP_LAYERNORM_FWD:
    case ZT__OP_RMSNORM_FWD: return 4 * zt_cols(op->norm.inp);
    case ZT__OP_LAYERNORM_BWD:
    case ZT__OP_RMSNORM_BWD: return 6 * zt_cols(op->norm_bwd.inp);
    case ZT__OP_SWIGLU_FWD:
    case ZT__OP_GEGLU_FWD: return 5 * zt_cols(op->unary.inp) / 2;
    case ZT__OP_SWIGLU_BWD:
    case ZT__OP_GEGLU_BWD: return 5 * zt_cols(op->unary_bwd.inp) / 2;
    case ZT__OP_ROPE_FWD:
    case ZT__OP_ROPE_BWD: return 3 * zt_cols(op->rope.inp) + zt_cols(op->rope.inp) / 2;
    case ZT__OP_CROSSENTROPY: return zt_cols(op->crossentropy.logits);
    case ZT__OP_MOE_ROUTE_FWD: return zt_cols(op->moe.inp);
    case ZT__OP_MOE_ROUTE_BWD:
    case ZT__OP_MOE_BALANCE_BWD: return 2 * zt_cols(op->moe.probs);
    case ZT__OP_MOE_SORT: return zt_numel(op->moe.counts);
    case ZT__OP_MOE_GATHER_FWD: return zt_cols(op->moe.inp);
    case ZT__OP_MOE_GATHER_BWD: return 2 * zt_cols(op->moe.dinp);
    case ZT__OP_MOE_COMBINE_FWD: return 2 * zt_cols(op->moe.out);
    case ZT__OP_MOE_COMBINE_BWD: return 4 * zt_cols(op->moe.dout);
    case ZT__OP_GATED_ADD_FWD:
    case ZT__OP_GATED_ADD_BWD: return 4 * zt_cols(op->moe.inp);
    case ZT__OP_ATTENTION_FWD:
    case ZT__OP_ATTENTION_BWD: return (3 * ZT__ATT_QB + 5 * ZT__ATT_KB + 3) * zt_cols(op->attention.q);
    default: return 0;
    }
}

/* elements of an op that zt__elementwise_task runs, or -1 */
static int64_t zt__elementwise_numel(const zt__op *op) {
    switch (op->kind) {
    case ZT__OP_COPY:
    case ZT__OP_CAST:
    case ZT__OP_GELU_FWD:
    case ZT__OP_SILU_FWD: return zt_numel(op->unary.out);
    case ZT__OP_FILL:
    case ZT__OP_SCALE: return zt_numel(op->fill.t);
    case ZT__OP_NOISE: return zt_numel(op->noise.t);
    case ZT__OP_ADD: return zt_numel(op->add.out);
    case ZT__OP_GELU_BWD:
    case ZT__OP_SILU_BWD: return zt_numel(op->unary_bwd.inp);
    case ZT__OP_ADAMW: return zt_numel(op->adamw.master);
    default: return -1;
    }
}

static void zt__cpu_exec(zt__cpu *cpu, const zt__op *op) {
    int64_t need = zt__cpu_scratch_need(op);
    if (need > ZT__CPU_SCRATCH_FLOATS)
        zt_fatal("op %d has rows too long for the CPU backend: %lld floats of scratch per thread, %lld available",
                 (int)op->kind, (long long)need, (long long)ZT__CPU_SCRATCH_FLOATS);
    int64_t elements = zt__elementwise_numel(op);
    if (elements >= 0) {
        zt__cpu_run(cpu, op, ZT__CDIV(elements, ZT__CHUNK), elements, NULL, zt__elementwise_task);
        return;
    }
    switch (op->kind) {
    case ZT__OP_GEMM: zt__cpu_gemm(cpu, op); return;
    case ZT__OP_MOE_ROUTE_FWD:
    case ZT__OP_MOE_ROUTE_BWD:
    case ZT__OP_MOE_BALANCE_BWD:
    case ZT__OP_MOE_GATHER_BWD:
    case ZT__OP_MOE_COMBINE_FWD:
    case ZT__OP_MOE_COMBINE_BWD: {
        const zt__args_moe *a = &op->moe;
        int fwd_route = op->kind == ZT__OP_MOE_ROUTE_FWD;
        int bwd_route = op->kind == ZT__OP_MOE_ROUTE_BWD || op->kind == ZT__OP_MOE_BALANCE_BWD;
        zt_tensor rows = fwd_route ? a->inp : bwd_route ? a->probs : op->kind == ZT__OP_MOE_GATHER_BWD ? a->dinp
                       : op->kind == ZT__OP_MOE_COMBINE_FWD ? a->out : a->dout;
        int64_t per = zt__rows_per_task(zt_cols(rows) * (fwd_route || bwd_route ? 1 : a->k));
        zt_task_fn fn = fwd_route ? zt__moe_route_fwd_task : op->kind == ZT__OP_MOE_ROUTE_BWD ? zt__moe_route_bwd_task
                      : op->kind == ZT__OP_MOE_BALANCE_BWD ? zt__moe_balance_bwd_task
                      : op->kind == ZT__OP_MOE_GATHER_BWD ? zt__moe_gather_bwd_task
                      : op->kind == ZT__OP_MOE_COMBINE_FWD ? zt__moe_combine_fwd_task : zt__moe_combine_bwd_task;
        zt__cpu_run(cpu, op, ZT__CDIV(zt_rows(rows), per), per, NULL, fn);
        return;
    }
    case ZT__OP_MOE_SORT: zt__cpu_run(cpu, op, 1, 0, NULL, zt__moe_sort_task); return;
    case ZT__OP_GATED_ADD_FWD:
    case ZT__OP_GATED_ADD_BWD: {
        int64_t per = zt__rows_per_task(zt_cols(op->moe.inp));
        zt__cpu_run(cpu, op, ZT__CDIV(zt_rows(op->moe.inp), per), per, NULL, zt__gated_add_task);
        return;
    }
    case ZT__OP_MOE_GATHER_FWD: {
        int64_t per = zt__rows_per_task(zt_cols(op->moe.inp));
        zt__cpu_run(cpu, op, ZT__CDIV(zt_numel(op->moe.order), per), per, NULL, zt__moe_gather_fwd_task);
        return;
    }
    case ZT__OP_SUM_ROWS:
        zt__cpu_run(cpu, op, ZT__CDIV(zt_cols(op->unary.inp), ZT__COLS_PER_TASK), 0, NULL, zt__sum_rows_task);
        return;
    case ZT__OP_EMBEDDING_FWD: {
        int64_t per = zt__rows_per_task(zt_cols(op->embedding.table));
        zt__cpu_run(cpu, op, ZT__CDIV(zt_numel(op->embedding.ids), per), per, NULL, zt__embedding_fwd_task);
        return;
    }
    case ZT__OP_EMBEDDING_BWD:
        zt__cpu_run(cpu, op, ZT__CDIV(zt_cols(op->embedding_bwd.dtable), ZT__COLS_PER_TASK), 0, NULL,
                    zt__embedding_bwd_task);
        return;
    case ZT__OP_LAYERNORM_FWD:
    case ZT__OP_RMSNORM_FWD: {
        int64_t per = zt__rows_per_task(zt_cols(op->norm.inp));
        zt__cpu_run(cpu, op, ZT__CDIV(zt_rows(op->norm.inp), per), per, NULL, zt__norm_fwd_task);
        return;
    }
    case ZT__OP_LAYERNORM_BWD:
    case ZT__OP_RMSNORM_BWD: {
        const zt__args_norm_bwd *a = &op->norm_bwd;
        int64_t per = zt__rows_per_task(zt_cols(a->inp));
        zt__cpu_run(cpu, op, ZT__CDIV(zt_rows(a->inp), per), per, NULL, zt__norm_bwd_task);
        if (zt__present(a->dweight) || zt__present(a->dbias)) /* absent when frozen */
            zt__cpu_run(cpu, op, ZT__CDIV(zt_cols(a->inp), ZT__COLS_PER_TASK), 0, NULL, zt__norm_dweight_task);
        return;
    }
    case ZT__OP_SWIGLU_FWD:
    case ZT__OP_SWIGLU_BWD:
    case ZT__OP_GEGLU_FWD:
    case ZT__OP_GEGLU_BWD: {
        int fwd = op->kind == ZT__OP_SWIGLU_FWD || op->kind == ZT__OP_GEGLU_FWD;
        zt_tensor inp = fwd ? op->unary.inp : op->unary_bwd.inp;
        int64_t per = zt__rows_per_task(zt_cols(inp));
        zt__cpu_run(cpu, op, ZT__CDIV(zt_rows(inp), per), per, NULL, zt__glu_task);
        return;
    }
    case ZT__OP_ROPE_FWD:
    case ZT__OP_ROPE_BWD: {
        zt_tensor x = op->rope.inp;
        int64_t per = zt__rows_per_task(x.shape.d[2] * x.shape.d[3]);
        zt__cpu_run(cpu, op, ZT__CDIV(x.shape.d[0] * x.shape.d[1], per), per, NULL, zt__rope_task);
        return;
    }
    case ZT__OP_ATTENTION_FWD:
    case ZT__OP_ATTENTION_BWD: {
        zt__att_dims d = zt__att_dims_of(&op->attention);
        int64_t q_tasks = d.B * d.NH * ZT__CDIV(d.T, ZT__ATT_QB);
        if (op->kind == ZT__OP_ATTENTION_FWD) {
            zt__cpu_run(cpu, op, q_tasks, 0, NULL, zt__att_fwd_task);
        } else {
            zt__cpu_run(cpu, op, q_tasks, 0, NULL, zt__att_dq_task);
            zt__cpu_run(cpu, op, d.B * d.NKV * ZT__CDIV(d.T, ZT__ATT_KB), 0, NULL, zt__att_dkv_task);
        }
        return;
    }
    case ZT__OP_CROSSENTROPY: {
        const zt__args_crossentropy *a = &op->crossentropy;
        int64_t per = zt__rows_per_task(zt_cols(a->logits));
        zt__cpu_run(cpu, op, ZT__CDIV(zt_rows(a->logits), per), per, NULL, zt__crossentropy_task);
        return;
    }
    case ZT__OP_SUMSQ: {
        zt__sumsq_plan pl;
        pl.n = zt_numel(op->unary.inp);
        pl.chunk = zt__sumsq_chunk(pl.n);
        int64_t parts = ZT__CDIV(pl.n, pl.chunk);
        zt__cpu_run(cpu, op, parts, 0, &pl, zt__sumsq_task);
        double s = 0.0;
        for (int64_t i = 0; i < parts; i++) s += pl.part[i];
        ((float *)op->unary.out.data)[0] = (float)s;
        return;
    }
    case ZT__OP_COMM: {
        zt_result r = cpu->stage && zt__comm_several(op->comm.comm) ? zt__comm_staged(&op->comm, cpu->stage, cpu->stage_bytes,
                                                                          zt__cpu_move, zt__cpu_move, NULL)
                                                       : zt__comm_run(&op->comm);
        if (r != ZT_OK) zt_fatal("%s", zt_last_error());
        return;
    }
    default: break; /* the elementwise ops ran above */
    }
    zt_fatal("the CPU backend has no kernel for op %d", (int)op->kind);
}

#ifdef __CUDACC__
#  include "zt_cuda.cuh" /* the CUDA backend: next to this file */
#endif

#endif /* ZT_IMPLEMENTATION_INCLUDED */
#endif /* ZT_IMPLEMENTATION */

/*
MIT License

Copyright (c) 2026 the zt authors

Permission is hereby granted, free of charge, to any person obtaining a copy of this software and
associated documentation files (the "Software"), to deal in the Software without restriction,
including without limitation the rights to use, copy, modify, merge, publish, distribute, sublicense,
and/or sell copies of the Software, and to permit persons to whom the Software is furnished to do so,
subject to the following conditions:

The above copyright notice and this permission notice shall be included in all copies or substantial
portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT
LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN
NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY,
WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE
SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
*/
