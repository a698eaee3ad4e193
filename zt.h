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
#  define ZT_NORETURN [[noreturn]]
#  define ZT_RESTRICT __restrict__
#  define ZT_EXTERN_C_BEGIN extern "C" {
#  define ZT_EXTERN_C_END }
#else
#  define ZT_ALIGNOF(T) _Alignof(T)
#  define ZT_STATIC_ASSERT(c, msg) _Static_assert(c, msg)
#  define ZT_THREAD_LOCAL _Thread_local
#  define ZT_NORETURN _Noreturn
#  define ZT_RESTRICT restrict
#  define ZT_EXTERN_C_BEGIN
#  define ZT_EXTERN_C_END
#endif
#if defined(__GNUC__) || defined(__clang__)
#  define ZT_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#  define ZT_PRINTF(f, a)
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
