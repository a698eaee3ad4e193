/* zt.h - train transformer language models from C.          MIT licence, see the end of this file.

   zt trains GPT-2, LLaMA, Mistral and Qwen2 models (and blocks you write) with what Transformers +
   Accelerate + DeepSpeed give Python users. This file is the whole library: declarations first, then
   the implementation, compiled in exactly one translation unit:

       #define ZT_IMPLEMENTATION
       #include "zt.h"

   zt_cuda.cuh holds the CUDA kernels and is pulled in by the implementation when nvcc compiles it.
   Dependencies: libc, pthreads, jsmn (JSON) and stb_ds (setup-time tables); on Debian
   `apt-get install libjsmn-dev libstb-dev`.

   Usage (this exact example is compiled and run by the test suite: tests/test_example.c):

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

   Contents (each section starts with a grep-able banner; a section uses only those above it):
       >>base      version, build options, results and errors, asserts, logging, timer, thread pool
       >>arena     named arenas with a measure mode; stb_ds routed into an arena
       >>tensor    dtypes, shapes, tensors and views, bf16/f16 conversion
       >>backend   backends, streams, events, copies (the interface a backend implements)
       >>ops       every kernel, forward and backward, validated here and run by a backend
       >>cpu       the CPU backend (implementation only)
       >>cuda      the CUDA backend (implementation only, when compiled by nvcc)

   Options (define before including):
       ZT_IMPLEMENTATION  compile the implementation in this translation unit
       ZT_STATIC          make every function static (and marked unused): a private copy per unit
       ZT_ASSERT(c)       replace the always-on assertion (it must not return when c is false)
       ZT_NO_CUDA         do not build the CUDA backend even when nvcc compiles this file
       ZT_CPU_MAX_THREADS upper bound on CPU worker threads (default 256)

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
#if defined(__GNUC__) || defined(__clang__)
#  define ZT_PRINTF(f, a) __attribute__((format(printf, f, a)))
#  define ZT_NORETURN __attribute__((noreturn))
#else
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
/* A handler may longjmp out (tests do); if it returns, zt aborts. NULL restores the default. */
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
} zt_arena;

ZT_API void zt_arena_init(zt_arena *a, const char *name, void *memory, size_t cap_bytes);
ZT_API void zt_arena_init_measure(zt_arena *a, const char *name);
ZT_API int zt_arena_measuring(const zt_arena *a);
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

typedef struct zt_backend_desc {
    size_t device_bytes;   /* capacity of the device arena (the CPU backend honours it too) */
    size_t pinned_bytes;   /* capacity of the pinned host arena */
    int threads;           /* CPU: worker threads, 0 = every core */
    int strict;            /* CPU: stream work runs only when the host waits for it, so a missing
                              sync or event reads stale memory in a test instead of racing on a GPU */
    int device_index;      /* CUDA: which GPU */
} zt_backend_desc;

#define ZT_MAX_STREAMS 8
#define ZT_MAX_EVENTS 64

ZT_API zt_backend_desc zt_backend_desc_default(void);
/* name: "cpu" or "cuda". Allocates both arenas once; nothing is allocated after. */
ZT_API zt_result zt_backend_create(zt_backend **out, const char *name, const zt_backend_desc *desc);
ZT_API void zt_backend_destroy(zt_backend *b);   /* waits for all streams first */
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

/* dst = src: same dtype and element count, any placement (host<->device included) */
ZT_API void zt_copy(zt_stream *s, zt_tensor dst, zt_tensor src);
/* out = inp converted to out's dtype (same element count) */
ZT_API void zt_cast(zt_stream *s, zt_tensor out, zt_tensor inp);
ZT_API void zt_fill(zt_stream *s, zt_tensor t, float value);
ZT_API void zt_scale(zt_stream *s, zt_tensor t, float alpha);   /* t *= alpha */
/* out = a + b (residual add; out may alias a or b) */
ZT_API void zt_add(zt_stream *s, zt_tensor out, zt_tensor a, zt_tensor b);

/* General matrix product: c (M,N) = alpha * op(a) @ op(b) + beta * c + bias, op(x) = x or x^T.
   a is (M,K), or (K,M) with trans_a; b is (K,N), or (N,K) with trans_b; bias (N) is optional.
   Batched when a, b and c are all 3-D: dimension 0 is the batch, and a or b may have batch 1. */
ZT_API void zt_gemm(zt_stream *s, zt_tensor c, zt_tensor a, zt_tensor b, int trans_a, int trans_b,
                    float alpha, float beta, const zt_tensor *bias);
/* x (R,C) -> out (C) += column sums of x (bias gradients); summed in row order */
ZT_API void zt_sum_rows(zt_stream *s, zt_tensor out, zt_tensor x);

/* Linear layer. inp (N,C), weight (OC,C), bias (OC) -> out (N,OC) = inp @ weight^T + bias */
ZT_API void zt_matmul_forward(zt_stream *s, zt_tensor out, zt_tensor inp, zt_tensor weight,
                              const zt_tensor *bias);
/* dinp (N,C) += dout @ weight; dweight (OC,C) += dout^T @ inp; dbias (OC) += column sums of dout */
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
ZT_API void zt_layernorm_backward(zt_stream *s, zt_tensor dinp, zt_tensor dweight, zt_tensor dbias,
                                  zt_tensor dout, zt_tensor inp, zt_tensor weight, zt_tensor mean,
                                  zt_tensor rstd);
/* inp (N,C), weight (C) -> out (N,C) = inp * rstd * weight; rstd (N) f32 saved */
ZT_API void zt_rmsnorm_forward(zt_stream *s, zt_tensor out, zt_tensor rstd, zt_tensor inp,
                               zt_tensor weight, float eps);
ZT_API void zt_rmsnorm_backward(zt_stream *s, zt_tensor dinp, zt_tensor dweight, zt_tensor dout,
                                zt_tensor inp, zt_tensor weight, zt_tensor rstd);

/* GELU, tanh approximation (GPT-2's gelu_new). inp (N) -> out (N) */
ZT_API void zt_gelu_forward(zt_stream *s, zt_tensor out, zt_tensor inp);
ZT_API void zt_gelu_backward(zt_stream *s, zt_tensor dinp, zt_tensor dout, zt_tensor inp);
/* SiLU: x * sigmoid(x). inp (N) -> out (N) */
ZT_API void zt_silu_forward(zt_stream *s, zt_tensor out, zt_tensor inp);
ZT_API void zt_silu_backward(zt_stream *s, zt_tensor dinp, zt_tensor dout, zt_tensor inp);
/* SwiGLU: inp (N,2H), each row [gate | up] -> out (N,H) = silu(gate) * up */
ZT_API void zt_swiglu_forward(zt_stream *s, zt_tensor out, zt_tensor inp);
ZT_API void zt_swiglu_backward(zt_stream *s, zt_tensor dinp, zt_tensor dout, zt_tensor inp);

/* Rotary position embedding, Hugging Face rotate-half convention: dimension i pairs with i + HD/2.
   x (B,T,H,HD), pos (B,T) i32 -> out (B,T,H,HD); out may alias inp. Angles are computed in f32 as
   transformers computes them (inv_freq = 1 / theta^(2i/HD), angle = pos * inv_freq). */
ZT_API void zt_rope_forward(zt_stream *s, zt_tensor out, zt_tensor inp, zt_tensor pos, float theta);
ZT_API void zt_rope_backward(zt_stream *s, zt_tensor dinp, zt_tensor dout, zt_tensor pos, float theta);

/* Causal attention with grouped-query heads, no T x T matrix in memory.
   q (B,T,NH,HD), k and v (B,T,NKV,HD) with NH a multiple of NKV -> out (B,T,NH,HD); lse (B,NH,T) f32
   (log-sum-exp of each row's scores) saved. starts (B,T) i32, optional: query t sees keys
   [starts[t], t] (packed documents); absent, it sees [0, t]. Scores are scaled by 1/sqrt(HD). */
ZT_API void zt_attention_forward(zt_stream *s, zt_tensor out, zt_tensor lse, zt_tensor q, zt_tensor k,
                                 zt_tensor v, const zt_tensor *starts);
ZT_API void zt_attention_backward(zt_stream *s, zt_tensor dq, zt_tensor dk, zt_tensor dv,
                                  zt_tensor dout, zt_tensor q, zt_tensor k, zt_tensor v, zt_tensor out,
                                  zt_tensor lse, const zt_tensor *starts);

/* Softmax + cross-entropy fused. logits (N,Vp) with only the first `vocab` columns real (the rest is
   padding and never counts), targets (N) i32. losses (N) f32 = -log softmax(row)[target], 0 where
   target == ignore_index. With dlogits (N,Vp), which may alias logits: dlogits = (softmax - onehot) *
   dloss, zero in padding columns and ignored rows (written, not accumulated: logits are temporaries). */
ZT_API void zt_crossentropy(zt_stream *s, zt_tensor losses, const zt_tensor *dlogits, zt_tensor logits,
                            zt_tensor targets, int64_t vocab, int ignore_index, float dloss);
/* The output layer and the loss, in row chunks so that no (N,Vp) logits exist at once:
   hidden (N,C), weight (Vp,C), targets (N) -> losses (N); with dhidden/dweight, backward too
   (dhidden += , dweight += ). logits_buf (R,Vp) is scratch; R rows are done per chunk. */
ZT_API void zt_output_loss(zt_stream *s, zt_tensor losses, const zt_tensor *dhidden,
                           const zt_tensor *dweight, zt_tensor hidden, zt_tensor weight,
                           zt_tensor targets, zt_tensor logits_buf, int64_t vocab, int ignore_index,
                           float dloss);

/* AdamW (decoupled weight decay, PyTorch's formula). master, m, v (n) f32; grad (n) any float dtype,
   multiplied by grad_scale first (loss-scale unscaling and clipping); param16, optional, receives the
   updated master rounded to its dtype. step counts from 1. */
typedef struct zt_adamw_params {
    float lr, beta1, beta2, eps, weight_decay, grad_scale;
    int64_t step;
} zt_adamw_params;
ZT_API void zt_adamw(zt_stream *s, zt_tensor master, zt_tensor m, zt_tensor v, zt_tensor grad,
                     const zt_tensor *param16, zt_adamw_params p);

/* out (1) f32 = sum of x^2, accumulated in double in chunks fixed by x's size (for gradient norms) */
ZT_API void zt_sumsq(zt_stream *s, zt_tensor out, zt_tensor x);

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
    if (memory) ZT__POISON(memory, cap_bytes);
}

ZT_API void zt_arena_init_measure(zt_arena *a, const char *name) {
    a->name = name;
    a->base = NULL;
    a->cap = SIZE_MAX;
    a->used = 0;
    a->peak_own = 0;
    a->peak = &a->peak_own;
}

ZT_API int zt_arena_measuring(const zt_arena *a) { return a->base == NULL && a->cap == SIZE_MAX; }

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
    if (a->base && *a->peak > mark) ZT__POISON(a->base + mark, *a->peak - mark);
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
    ZT__OP_SWIGLU_FWD, ZT__OP_SWIGLU_BWD,
    ZT__OP_ROPE_FWD, ZT__OP_ROPE_BWD,
    ZT__OP_ATTENTION_FWD, ZT__OP_ATTENTION_BWD,
    ZT__OP_CROSSENTROPY, ZT__OP_ADAMW, ZT__OP_SUMSQ,
    ZT__OP_COUNT
} zt__op_kind;

typedef struct zt__args_unary { zt_tensor out, inp; } zt__args_unary; /* copy cast sum_rows sumsq, fwd */
typedef struct zt__args_unary_bwd { zt_tensor dinp, dout, inp; } zt__args_unary_bwd;
typedef struct zt__args_fill { zt_tensor t; float value; } zt__args_fill; /* fill, scale */
typedef struct zt__args_add { zt_tensor out, a, b; } zt__args_add;
typedef struct zt__args_gemm {
    zt_tensor c, a, b, bias;
    int trans_a, trans_b;
    float alpha, beta;
} zt__args_gemm;
typedef struct zt__args_embedding { zt_tensor out, ids, table; int accumulate; } zt__args_embedding;
typedef struct zt__args_embedding_bwd { zt_tensor dtable, dout, ids; } zt__args_embedding_bwd;
typedef struct zt__args_norm { zt_tensor out, mean, rstd, inp, weight, bias; float eps; } zt__args_norm;
typedef struct zt__args_norm_bwd {
    zt_tensor dinp, dweight, dbias, dout, inp, weight, mean, rstd;
} zt__args_norm_bwd;
typedef struct zt__args_rope { zt_tensor out, inp, pos; float theta; } zt__args_rope;
typedef struct zt__args_attention {
    zt_tensor out, lse, q, k, v, starts;
    zt_tensor dq, dk, dv, dout; /* backward only */
} zt__args_attention;
typedef struct zt__args_crossentropy {
    zt_tensor losses, dlogits, logits, targets;
    int64_t vocab;
    int ignore_index;
    float dloss;
} zt__args_crossentropy;
typedef struct zt__args_adamw { zt_tensor master, m, v, grad, param16; zt_adamw_params p; } zt__args_adamw;

typedef struct zt__op {
    zt__op_kind kind;
    union {
        zt__args_unary unary;
        zt__args_unary_bwd unary_bwd;
        zt__args_fill fill;
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
    };
} zt__op;

typedef struct zt__backend_vt {
    zt_result (*create)(zt_backend *b);   /* arenas, the default stream, libraries */
    void (*destroy)(zt_backend *b);
    zt_result (*stream_init)(zt_stream *s);
    void (*launch)(zt_stream *s, const zt__op *op);
    void (*record)(zt_event *e, zt_stream *s);
    void (*wait)(zt_stream *s, zt_event *e);
    void (*stream_sync)(zt_stream *s);
    void (*event_sync)(zt_event *e);
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
    void *impl;
};

/* each backend's table, defined in its own section below */
static const zt__backend_vt *zt__cpu_backend(void);

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
        return zt_fail(ZT_ERROR_UNSUPPORTED, "backend 'cuda' does not exist yet in zt %s: use 'cpu'",
                       ZT_VERSION_STRING);
    else
        return zt_fail(ZT_ERROR_INVALID, "unknown backend '%s': expected 'cpu' or 'cuda'", name);
    zt_backend *b = (zt_backend *)calloc(1, sizeof *b); /* setup time, freed by zt_backend_destroy */
    if (!b) return zt_fail(ZT_ERROR_MEMORY, "out of host memory creating the %s backend", name);
    b->vt = vt;
    b->name = "cpu";
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

ZT_API void zt_copy(zt_stream *s, zt_tensor dst, zt_tensor src) {
    char a[160], b[160];
    zt__need(dst.dtype == src.dtype && zt_numel(dst) == zt_numel(src), "zt_copy",
             "dst %s and src %s differ in dtype or size", zt__desc(dst, a, sizeof a), zt__desc(src, b, sizeof b));
    zt__op op;
    op.kind = ZT__OP_COPY;
    op.unary.out = dst;
    op.unary.inp = src;
    zt__launch(s, &op);
}

ZT_API void zt_cast(zt_stream *s, zt_tensor out, zt_tensor inp) {
    zt__need_tensor("zt_cast", "out", out, ZT__FLOAT, ZT__ANY_SIZE);
    zt__need_tensor("zt_cast", "inp", inp, ZT__FLOAT, zt_numel(out));
    zt__op op;
    op.kind = ZT__OP_CAST;
    op.unary.out = out;
    op.unary.inp = inp;
    zt__launch(s, &op);
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
    zt__op op;
    op.kind = ZT__OP_SUM_ROWS;
    op.unary.out = out;
    op.unary.inp = x;
    zt__launch(s, &op);
}

ZT_API void zt_matmul_forward(zt_stream *s, zt_tensor out, zt_tensor inp, zt_tensor weight,
                              const zt_tensor *bias) {
    zt_gemm(s, out, inp, weight, 0, 1, 1.0f, 0.0f, bias);
}

ZT_API void zt_matmul_backward(zt_stream *s, const zt_tensor *dinp, const zt_tensor *dweight,
                               const zt_tensor *dbias, zt_tensor dout, zt_tensor inp, zt_tensor weight) {
    if (dinp) zt_gemm(s, *dinp, dout, weight, 0, 0, 1.0f, 1.0f, NULL);
    if (dweight) {
        /* (OC,C) += dout^T (OC,N) @ inp (N,C), with leading dims of dout and inp flattened */
        zt_tensor d2 = zt_view(dout, 0, zt_shape2(zt_rows(dout), zt_cols(dout)));
        zt_tensor i2 = zt_view(inp, 0, zt_shape2(zt_rows(inp), zt_cols(inp)));
        zt_gemm(s, *dweight, d2, i2, 1, 0, 1.0f, 1.0f, NULL);
    }
    if (dbias) zt_sum_rows(s, *dbias, dout);
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
    zt__need_norm("zt_layernorm_forward", inp, out, "out", weight, bias, mean, rstd);
    zt__op op;
    op.kind = ZT__OP_LAYERNORM_FWD;
    zt__args_norm a = {out, mean, rstd, inp, weight, bias, eps};
    op.norm = a;
    zt__launch(s, &op);
}

ZT_API void zt_layernorm_backward(zt_stream *s, zt_tensor dinp, zt_tensor dweight, zt_tensor dbias,
                                  zt_tensor dout, zt_tensor inp, zt_tensor weight, zt_tensor mean,
                                  zt_tensor rstd) {
    const char *name = "zt_layernorm_backward";
    zt__need_norm(name, inp, dout, "dout", weight, zt__none(), mean, rstd);
    zt__need_norm(name, inp, dinp, "dinp", dweight, dbias, mean, rstd);
    zt__op op;
    op.kind = ZT__OP_LAYERNORM_BWD;
    zt__args_norm_bwd a = {dinp, dweight, dbias, dout, inp, weight, mean, rstd};
    op.norm_bwd = a;
    zt__launch(s, &op);
}

ZT_API void zt_rmsnorm_forward(zt_stream *s, zt_tensor out, zt_tensor rstd, zt_tensor inp,
                               zt_tensor weight, float eps) {
    zt__need_norm("zt_rmsnorm_forward", inp, out, "out", weight, zt__none(), zt__none(), rstd);
    zt__op op;
    op.kind = ZT__OP_RMSNORM_FWD;
    zt__args_norm a = {out, zt__none(), rstd, inp, weight, zt__none(), eps};
    op.norm = a;
    zt__launch(s, &op);
}

ZT_API void zt_rmsnorm_backward(zt_stream *s, zt_tensor dinp, zt_tensor dweight, zt_tensor dout,
                                zt_tensor inp, zt_tensor weight, zt_tensor rstd) {
    const char *name = "zt_rmsnorm_backward";
    zt__need_norm(name, inp, dout, "dout", weight, zt__none(), zt__none(), rstd);
    zt__need_norm(name, inp, dinp, "dinp", dweight, zt__none(), zt__none(), rstd);
    zt__op op;
    op.kind = ZT__OP_RMSNORM_BWD;
    zt__args_norm_bwd a = {dinp, dweight, zt__none(), dout, inp, weight, zt__none(), rstd};
    op.norm_bwd = a;
    zt__launch(s, &op);
}

/* elementwise ops; for swiglu the input is twice as wide as the output */
static void zt__unary(zt_stream *s, zt__op_kind kind, const char *name, zt_tensor out, zt_tensor inp,
                      int widen) {
    zt__need_tensor(name, "inp", inp, ZT__FLOAT, ZT__ANY_SIZE);
    zt__need_tensor(name, "out", out, ZT__FLOAT, zt_numel(inp) / widen);
    zt__need(zt_rows(out) == zt_rows(inp), name, "out and inp must have the same rows");
    zt__op op;
    op.kind = kind;
    op.unary.out = out;
    op.unary.inp = inp;
    zt__launch(s, &op);
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

static void zt__rope(zt_stream *s, zt__op_kind kind, const char *name, zt_tensor out, zt_tensor inp,
                     zt_tensor pos, float theta) {
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
    zt__launch(s, &op);
}
ZT_API void zt_rope_forward(zt_stream *s, zt_tensor out, zt_tensor inp, zt_tensor pos, float theta) {
    zt__rope(s, ZT__OP_ROPE_FWD, "zt_rope_forward", out, inp, pos, theta);
}
ZT_API void zt_rope_backward(zt_stream *s, zt_tensor dinp, zt_tensor dout, zt_tensor pos, float theta) {
    zt__rope(s, ZT__OP_ROPE_BWD, "zt_rope_backward", dinp, dout, pos, theta);
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

ZT_API void zt_attention_forward(zt_stream *s, zt_tensor out, zt_tensor lse, zt_tensor q, zt_tensor k,
                                 zt_tensor v, const zt_tensor *starts) {
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
    zt__launch(s, &op);
}

ZT_API void zt_attention_backward(zt_stream *s, zt_tensor dq, zt_tensor dk, zt_tensor dv,
                                  zt_tensor dout, zt_tensor q, zt_tensor k, zt_tensor v, zt_tensor out,
                                  zt_tensor lse, const zt_tensor *starts) {
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
    zt__launch(s, &op);
}

ZT_API void zt_crossentropy(zt_stream *s, zt_tensor losses, const zt_tensor *dlogits, zt_tensor logits,
                            zt_tensor targets, int64_t vocab, int ignore_index, float dloss) {
    const char *name = "zt_crossentropy";
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
    op.crossentropy.ignore_index = ignore_index;
    op.crossentropy.dloss = dloss;
    zt__launch(s, &op);
}

ZT_API void zt_output_loss(zt_stream *s, zt_tensor losses, const zt_tensor *dhidden,
                           const zt_tensor *dweight, zt_tensor hidden, zt_tensor weight,
                           zt_tensor targets, zt_tensor logits_buf, int64_t vocab, int ignore_index,
                           float dloss) {
    int64_t N = zt_rows(hidden), C = zt_cols(hidden), Vp = zt_rows(weight);
    int64_t R = zt_rows(logits_buf);
    zt__need(zt_cols(weight) == C && zt_cols(logits_buf) == Vp && R > 0, "zt_output_loss",
             "hidden (N,%lld), weight (%lld,%lld) and logits_buf (R,%lld) do not agree", (long long)C,
             (long long)Vp, (long long)zt_cols(weight), (long long)zt_cols(logits_buf));
    zt_tensor h2 = zt_view(hidden, 0, zt_shape2(N, C));
    int backward = dhidden || dweight;
    for (int64_t r0 = 0; r0 < N; r0 += R) {
        int64_t n = ZT__MIN(R, N - r0);
        zt_tensor h = zt_slice(h2, r0, n);
        zt_tensor logits = zt_view(logits_buf, 0, zt_shape2(n, Vp));
        zt_gemm(s, logits, h, weight, 0, 1, 1.0f, 0.0f, NULL);
        zt_crossentropy(s, zt_slice(losses, r0, n), backward ? &logits : NULL, logits,
                        zt_slice(targets, r0, n), vocab, ignore_index, dloss);
        if (dhidden) {
            zt_tensor dh = zt_slice(zt_view(*dhidden, 0, zt_shape2(N, C)), r0, n);
            zt_gemm(s, dh, logits, weight, 0, 0, 1.0f, 1.0f, NULL);
        }
        if (dweight) zt_gemm(s, *dweight, logits, h, 1, 0, 1.0f, 1.0f, NULL);
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

ZT_API void zt_sumsq(zt_stream *s, zt_tensor out, zt_tensor x) {
    zt__need_tensor("zt_sumsq", "x", x, ZT__FLOAT, ZT__ANY_SIZE);
    zt__need_tensor("zt_sumsq", "out", out, ZT_F32, 1);
    zt__op op;
    op.kind = ZT__OP_SUMSQ;
    op.unary.out = out;
    op.unary.inp = x;
    zt__launch(s, &op);
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
};

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
            pthread_mutex_unlock(&cpu->mu);
            zt__cpu_exec(cpu, &c->op);
            pthread_mutex_lock(&cpu->mu);
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

static zt_result zt__cpu_create(zt_backend *b) {
    zt__cpu *cpu = (zt__cpu *)calloc(1, sizeof *cpu);
    if (!cpu) return zt_fail(ZT_ERROR_MEMORY, "out of host memory creating the CPU backend");
    b->impl = cpu;
    cpu->strict = b->desc.strict;
    cpu->device_mem = zt__cpu_alloc(b->desc.device_bytes);
    cpu->pinned_mem = zt__cpu_alloc(b->desc.pinned_bytes);
    if (!cpu->device_mem || !cpu->pinned_mem) {
        free(cpu->device_mem);
        free(cpu->pinned_mem);
        free(cpu);
        return zt_fail(ZT_ERROR_MEMORY, "cannot allocate the CPU backend's memory: %zu device bytes and "
                       "%zu pinned bytes were asked for", b->desc.device_bytes, b->desc.pinned_bytes);
    }
    zt_arena_init(&b->device, "device", cpu->device_mem, b->desc.device_bytes);
    zt_arena_init(&b->pinned, "pinned host", cpu->pinned_mem, b->desc.pinned_bytes);
    cpu->pool = zt_pool_create(b->desc.threads);
    int nt = zt_pool_threads(cpu->pool);
    for (int i = 0; i < nt; i++) {
        cpu->scratch[i] = (float *)zt__cpu_alloc((size_t)ZT__CPU_SCRATCH_FLOATS * sizeof(float));
        ZT_ASSERT(cpu->scratch[i] != NULL);
    }
    pthread_mutex_init(&cpu->mu, NULL);
    pthread_cond_init(&cpu->cv, NULL);
    zt_stream_create(b); /* the default stream */
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
    free(cpu->device_mem);
    free(cpu->pinned_mem);
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
    zt__cpu_create, zt__cpu_destroy, zt__cpu_stream_init, zt__cpu_launch,
    zt__cpu_record, zt__cpu_wait, zt__cpu_stream_sync, zt__cpu_event_sync,
};
static const zt__backend_vt *zt__cpu_backend(void) { return &zt__cpu_vt; }

/* CPU kernels. A kernel is a task function over a zt__job; the work of each task depends only on
   the shapes, and every sum runs in an order fixed by the shapes, so results are the same bits for
   any number of threads. Rows are converted to f32 in per-thread scratch, computed, and rounded once
   on the way out. */
typedef struct zt__job {
    zt__cpu *cpu;
    const zt__op *op;
    int64_t per_task;  /* rows or elements per task, where the kernel splits that way */
    const void *plan;  /* what the kernel worked out before starting its tasks */
} zt__job;

static void zt__cpu_run(zt__cpu *cpu, const zt__op *op, int64_t n_tasks, int64_t per_task,
                        const void *plan, zt_task_fn fn) {
    zt__job job = {cpu, op, per_task, plan};
    zt_pool_run(cpu->pool, n_tasks, fn, &job);
}

/* tasks of about 64K elements over `rows` rows of `cols` elements */
static int64_t zt__rows_per_task(int64_t cols) { return ZT__MAX(1, 65536 / ZT__MAX(1, cols)); }
#define ZT__CHUNK ((int64_t)16384) /* elements per task of the elementwise kernels */

/* Vectors of 8 floats for dot products and sums: lane-wise partial sums, combined in a fixed order.
   (-ffp-contract=off keeps multiply and add separate, so gcc, clang and nvcc agree.) */
typedef float zt__v8 __attribute__((vector_size(32)));

static float zt__lanes(zt__v8 v) {
    return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
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
    float s = zt__lanes(acc);
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
    float s = zt__lanes(acc);
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
#else
#  define ZT__VW 8
#endif
typedef float zt__vf __attribute__((vector_size(ZT__VW * 4)));
#define ZT__MR 6
#define ZT__NR (2 * ZT__VW)
#define ZT__KC 256
#define ZT__MC 96  /* multiple of ZT__MR */
#define ZT__NC 256 /* multiple of ZT__NR */
ZT_STATIC_ASSERT(ZT__MR == 6, "zt__gemm_micro is written out for six rows");

static zt__vf zt__splat(float x) {
#if defined(__AVX512F__)
    return (zt__vf)_mm512_set1_ps(x);
#elif defined(__AVX__)
    return (zt__vf)_mm256_set1_ps(x);
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

/* rows [i0, i0+mc) x k [k0, k0+kc) of op(X) into panels of `panel` rows: dst[p][k][r], zero-padded */
static void zt__pack(float *dst, zt__operand x, int64_t i0, int64_t mc, int64_t rows, int64_t k0,
                     int64_t kc, int panel) {
    for (int64_t p = 0; p < mc; p += panel) {
        float *d = dst + p * kc;
        for (int r = 0; r < panel; r++) {
            int64_t i = i0 + p + r;
            if (p + r >= mc || i >= rows) {
                for (int64_t k = 0; k < kc; k++) d[k * panel + r] = 0.0f;
                continue;
            }
            int64_t base = i * x.si + k0 * x.sk;
            if (x.dtype == ZT_F32) {
                const float *src = (const float *)x.data + base;
                for (int64_t k = 0; k < kc; k++) d[k * panel + r] = src[k * x.sk];
            } else {
                for (int64_t k = 0; k < kc; k++) d[k * panel + r] = zt__ldf(x.data, x.dtype, base + k * x.sk);
            }
        }
    }
}

typedef struct zt__gemm_plan {
    int64_t M, N, K, batch, m_tiles, n_tiles;
    int64_t a_batch_stride, b_batch_stride, c_batch_stride;
    zt__operand a, b;
} zt__gemm_plan;

static void zt__gemm_task(void *ctx, int64_t task, int thread) {
    zt__job *job = (zt__job *)ctx;
    const zt__args_gemm *g = &job->op->gemm;
    const zt__gemm_plan *pl = (const zt__gemm_plan *)job->plan;
    int64_t tiles = pl->m_tiles * pl->n_tiles;
    int64_t bi = task / tiles, mt = (task % tiles) / pl->n_tiles, nt = task % pl->n_tiles;
    int64_t i0 = mt * ZT__MC, j0 = nt * ZT__NC;
    int64_t mc = ZT__MIN(ZT__MC, pl->M - i0), nc = ZT__MIN(ZT__NC, pl->N - j0);
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
    pl.m_tiles = ZT__CDIV(pl.M, ZT__MC);
    pl.n_tiles = ZT__CDIV(pl.N, ZT__NC);
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

/* AdamW on n elements, PyTorch's order of operations (scalars computed in double, then f32) */
static void zt__adamw_chunk(const zt__args_adamw *a, int64_t i0, int64_t n, float *g) {
    const zt_adamw_params *p = &a->p;
    float decay = (float)(1.0 - (double)p->lr * (double)p->weight_decay);
    float w1 = (float)(1.0 - (double)p->beta1), w2 = (float)(1.0 - (double)p->beta2);
    double bc1 = 1.0 - pow((double)p->beta1, (double)p->step);
    double bc2 = 1.0 - pow((double)p->beta2, (double)p->step);
    float step_size = (float)((double)p->lr / bc1), bc2_sqrt = (float)sqrt(bc2);
    float *w = (float *)a->master.data + i0, *m = (float *)a->m.data + i0, *v = (float *)a->v.data + i0;
    zt__to_f32(g, a->grad.data, a->grad.dtype, i0, n);
    for (int64_t i = 0; i < n; i++) {
        float gi = g[i] * p->grad_scale;
        w[i] = w[i] * decay;
        m[i] = m[i] + w1 * (gi - m[i]);
        v[i] = v[i] * p->beta2 + (w2 * gi) * gi;
        float denom = sqrtf(v[i]) / bc2_sqrt + p->eps;
        w[i] = w[i] + (-step_size) * (m[i] / denom);
    }
    if (zt__present(a->param16)) zt__from_f32(a->param16.data, a->param16.dtype, i0, w, n);
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
    zt__to_f32(buf, a->out.data, a->out.dtype, c0, nc);
    for (int64_t c = 0; c < nc; c++) buf[c] += acc[c];
    zt__from_f32(a->out.data, a->out.dtype, c0, buf, nc);
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
        const float *d = zt__row_in(a->dout, n * C + c0, nc, buf);
        zt__to_f32(row, a->dtable.data, a->dtable.dtype, id * C + c0, nc);
        for (int64_t c = 0; c < nc; c++) row[c] += d[c];
        zt__from_f32(a->dtable.data, a->dtable.dtype, id * C + c0, row, nc);
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
    zt__to_f32(xb, a->dweight.data, a->dweight.dtype, c0, nc);
    for (int64_t c = 0; c < nc; c++) xb[c] += dw[c];
    zt__from_f32(a->dweight.data, a->dweight.dtype, c0, xb, nc);
    if (zt__present(a->dbias)) {
        zt__to_f32(xb, a->dbias.data, a->dbias.dtype, c0, nc);
        for (int64_t c = 0; c < nc; c++) xb[c] += db[c];
        zt__from_f32(a->dbias.data, a->dbias.dtype, c0, xb, nc);
    }
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
        if (a->accumulate) {
            zt__to_f32(acc, a->out.data, a->out.dtype, n * C, C);
            for (int64_t c = 0; c < C; c++) acc[c] += row[c];
            row = acc;
        }
        zt__from_f32(a->out.data, a->out.dtype, n * C, row, C);
    }
}

static void zt__norm_fwd_task(void *ctx, int64_t task, int thread) {
    zt__job *job = (zt__job *)ctx;
    const zt__args_norm *a = &job->op->norm;
    int64_t N = zt_rows(a->inp), C = zt_cols(a->inp);
    int layernorm = job->op->kind == ZT__OP_LAYERNORM_FWD;
    float *xb = job->cpu->scratch[thread], *w = xb + C, *b = w + C, *y = b + C;
    zt__to_f32(w, a->weight.data, a->weight.dtype, 0, C);
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

static void zt__swiglu_task(void *ctx, int64_t task, int thread) {
    zt__job *job = (zt__job *)ctx;
    const zt__op *op = job->op;
    int fwd = op->kind == ZT__OP_SWIGLU_FWD;
    zt_tensor inp = fwd ? op->unary.inp : op->unary_bwd.inp;
    int64_t N = zt_rows(inp), H = zt_cols(inp) / 2;
    float *xb = job->cpu->scratch[thread], *y = xb + 2 * H, *gb = y + 2 * H;
    for (int64_t r = task * job->per_task; r < ZT__MIN(N, (task + 1) * job->per_task); r++) {
        const float *x = zt__row_in(inp, r * 2 * H, 2 * H, xb); /* [gate | up] */
        if (fwd) {
            for (int64_t i = 0; i < H; i++) y[i] = zt__silu(x[i]) * x[H + i];
            zt__from_f32(op->unary.out.data, op->unary.out.dtype, r * H, y, H);
        } else {
            const zt__args_unary_bwd *a = &op->unary_bwd;
            const float *g = zt__row_in(a->dout, r * H, H, gb);
            zt__to_f32(y, a->dinp.data, a->dinp.dtype, r * 2 * H, 2 * H);
            for (int64_t i = 0; i < H; i++) {
                y[i] += g[i] * x[H + i] * zt__silu_grad(x[i]);
                y[H + i] += g[i] * zt__silu(x[i]);
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
    int64_t half = HD / 2;
    float *cs = job->cpu->scratch[thread], *sn = cs + half, *x = sn + half, *y = x + HD;
    const int32_t *pos = (const int32_t *)a->pos.data;
    for (int64_t t = task * job->per_task; t < ZT__MIN(BT, (task + 1) * job->per_task); t++) {
        for (int64_t i = 0; i < half; i++) {
            float inv_freq = 1.0f / powf(a->theta, (float)(2 * i) / (float)HD);
            float angle = (float)pos[t] * inv_freq;
            cs[i] = cosf(angle);
            sn[i] = sinf(angle);
        }
        for (int64_t h = 0; h < H; h++) {
            int64_t off = (t * H + h) * HD;
            zt__to_f32(x, a->inp.data, a->inp.dtype, off, HD);
            if (fwd) {
                for (int64_t i = 0; i < half; i++) {
                    y[i] = x[i] * cs[i] - x[half + i] * sn[i];
                    y[half + i] = x[half + i] * cs[i] + x[i] * sn[i];
                }
            } else { /* the transpose of the rotation, accumulated into dinp (= out) */
                zt__to_f32(y, a->out.data, a->out.dtype, off, HD);
                for (int64_t i = 0; i < half; i++) {
                    y[i] += x[i] * cs[i] + x[half + i] * sn[i];
                    y[half + i] += x[half + i] * cs[i] - x[i] * sn[i];
                }
            }
            zt__from_f32(a->out.data, a->out.dtype, off, y, HD);
        }
    }
}

/* ---- attention: tiled, online softmax, no T x T matrix ---- */

#define ZT__ATT_QB 32 /* queries per task */
#define ZT__ATT_KB 64 /* keys per tile */

typedef struct zt__att_dims { int64_t B, T, NH, NKV, HD, group; float scale; } zt__att_dims;

static zt__att_dims zt__att_dims_of(const zt__args_attention *a) {
    zt__att_dims d;
    d.B = a->q.shape.d[0];
    d.T = a->q.shape.d[1];
    d.NH = a->q.shape.d[2];
    d.HD = a->q.shape.d[3];
    d.NKV = a->k.shape.d[2];
    d.group = d.NH / d.NKV;
    d.scale = 1.0f / sqrtf((float)d.HD);
    return d;
}

/* the first key query t of batch b may see */
static int64_t zt__att_start(const zt__args_attention *a, int64_t b, int64_t T, int64_t t) {
    if (!zt__present(a->starts)) return 0;
    int64_t s = ((const int32_t *)a->starts.data)[b * T + t];
    if (s < 0 || s > t) zt_fatal("attention: starts[%lld][%lld] = %lld is outside [0, %lld]", (long long)b,
                                 (long long)t, (long long)s, (long long)t);
    return s;
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
                s[j - k0] = zt__dot(q + i * HD, k + (j - k0) * HD, HD) * d.scale;
                m = ZT__MAX(m, s[j - k0]);
            }
            float corr = expf(mx[i] - m), sum = 0.0f;
            float *o = acc + i * HD;
            for (int64_t c = 0; c < HD; c++) o[c] *= corr;
            for (int64_t j = j0; j < j1; j++) {
                float p = expf(s[j - k0] - m);
                sum += p;
                zt__axpy(o, p, v + (j - k0) * HD, HD);
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

/* dq for a block of queries of one head: dq_i += scale * sum_j p_ij (dO_i.v_j - D_i) k_j */
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
                float p = expf(zt__dot(q + i * HD, kj, HD) * d.scale - lse[i]);
                float ds = p * (zt__dot(dO + i * HD, v + (j - k0) * HD, HD) - D[i]);
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
        for (int64_t i = k0; i < d.T; i++) {
            int64_t j0 = ZT__MAX(k0, zt__att_start(a, b, d.T, i)), j1 = ZT__MIN(k0 + nk, i + 1);
            if (j0 >= j1) continue;
            zt__att_rows(q, a->q, b, h, i, 1);
            zt__att_rows(dO, a->dout, b, h, i, 1);
            zt__att_rows(o, a->out, b, h, i, 1);
            float Di = zt__dot(dO, o, HD), lse = ((const float *)a->lse.data)[(b * d.NH + h) * d.T + i];
            for (int64_t j = j0; j < j1; j++) {
                float p = expf(zt__dot(q, k + (j - k0) * HD, HD) * d.scale - lse);
                float ds = p * (zt__dot(dO, v + (j - k0) * HD, HD) - Di);
                zt__axpy(dv + (j - k0) * HD, p, dO, HD);
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
        float *x = buf;
        zt__to_f32(x, a->logits.data, a->logits.dtype, r * Vp, V);
        float m = -INFINITY, sum = 0.0f;
        for (int64_t c = 0; c < V; c++) m = ZT__MAX(m, x[c]);
        for (int64_t c = 0; c < V; c++) {
            x[c] = expf(x[c] - m);
            sum += x[c];
        }
        float lse = m + logf(sum);
        float xt = ignored ? 0.0f : zt__ldf(a->logits.data, a->logits.dtype, r * Vp + t);
        ((float *)a->losses.data)[r] = ignored ? 0.0f : lse - xt;
        if (!zt__present(a->dlogits)) continue;
        float scale = ignored ? 0.0f : a->dloss / sum;
        for (int64_t c = 0; c < V; c++) x[c] *= scale;
        if (!ignored) x[t] -= a->dloss;
        for (int64_t c = V; c < Vp; c++) x[c] = 0.0f;
        zt__from_f32(a->dlogits.data, a->dlogits.dtype, r * Vp, x, Vp);
    }
}

/* sum of squares: at most 1024 chunks, each summed in double, then added in order */
#define ZT__SUMSQ_PARTS 1024
typedef struct zt__sumsq_plan { int64_t n, chunk; double part[ZT__SUMSQ_PARTS]; } zt__sumsq_plan;

static void zt__sumsq_task(void *ctx, int64_t task, int thread) {
    zt__job *job = (zt__job *)ctx;
    zt__sumsq_plan *pl = (zt__sumsq_plan *)(void *)(uintptr_t)job->plan;
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

static void zt__cpu_exec(zt__cpu *cpu, const zt__op *op) {
    switch (op->kind) {
    case ZT__OP_COPY:
    case ZT__OP_CAST:
    case ZT__OP_GELU_FWD:
    case ZT__OP_SILU_FWD: {
        int64_t n = zt_numel(op->unary.out);
        zt__cpu_run(cpu, op, ZT__CDIV(n, ZT__CHUNK), n, NULL, zt__elementwise_task);
        return;
    }
    case ZT__OP_FILL:
    case ZT__OP_SCALE: {
        int64_t n = zt_numel(op->fill.t);
        zt__cpu_run(cpu, op, ZT__CDIV(n, ZT__CHUNK), n, NULL, zt__elementwise_task);
        return;
    }
    case ZT__OP_ADD: {
        int64_t n = zt_numel(op->add.out);
        zt__cpu_run(cpu, op, ZT__CDIV(n, ZT__CHUNK), n, NULL, zt__elementwise_task);
        return;
    }
    case ZT__OP_GELU_BWD:
    case ZT__OP_SILU_BWD: {
        int64_t n = zt_numel(op->unary_bwd.inp);
        zt__cpu_run(cpu, op, ZT__CDIV(n, ZT__CHUNK), n, NULL, zt__elementwise_task);
        return;
    }
    case ZT__OP_ADAMW: {
        int64_t n = zt_numel(op->adamw.master);
        zt__cpu_run(cpu, op, ZT__CDIV(n, ZT__CHUNK), n, NULL, zt__elementwise_task);
        return;
    }
    case ZT__OP_GEMM: zt__cpu_gemm(cpu, op); return;
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
        zt__cpu_run(cpu, op, ZT__CDIV(zt_cols(a->inp), ZT__COLS_PER_TASK), 0, NULL, zt__norm_dweight_task);
        return;
    }
    case ZT__OP_SWIGLU_FWD:
    case ZT__OP_SWIGLU_BWD: {
        zt_tensor inp = op->kind == ZT__OP_SWIGLU_FWD ? op->unary.inp : op->unary_bwd.inp;
        int64_t per = zt__rows_per_task(zt_cols(inp));
        zt__cpu_run(cpu, op, ZT__CDIV(zt_rows(inp), per), per, NULL, zt__swiglu_task);
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
        ZT_ASSERT((3 * ZT__ATT_QB + 5 * ZT__ATT_KB + 3) * d.HD <= ZT__CPU_SCRATCH_FLOATS);
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
        ZT_ASSERT(zt_cols(a->logits) <= ZT__CPU_SCRATCH_FLOATS);
        int64_t per = zt__rows_per_task(zt_cols(a->logits));
        zt__cpu_run(cpu, op, ZT__CDIV(zt_rows(a->logits), per), per, NULL, zt__crossentropy_task);
        return;
    }
    case ZT__OP_SUMSQ: {
        zt__sumsq_plan pl;
        pl.n = zt_numel(op->unary.inp);
        pl.chunk = ZT__MAX(ZT__CHUNK, ZT__CDIV(pl.n, ZT__SUMSQ_PARTS));
        int64_t parts = ZT__CDIV(pl.n, pl.chunk);
        zt__cpu_run(cpu, op, parts, 0, &pl, zt__sumsq_task);
        double s = 0.0;
        for (int64_t i = 0; i < parts; i++) s += pl.part[i];
        ((float *)op->unary.out.data)[0] = (float)s;
        return;
    }
    case ZT__OP_COUNT: break;
    }
    zt_fatal("the CPU backend has no kernel for op %d", (int)op->kind);
}

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
