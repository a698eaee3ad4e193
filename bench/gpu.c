/* bench/gpu.c - build/bench_gpu_cuda: GPT-2 124M training throughput on the CUDA backend, its MFU, and where a step's
   time goes. Built by nvcc only (build.sh's GPU_PROGRAMS); tests/gpu/run.sh runs it. JSON lines:

     {"bench":"gpu_gemm_peak",..}   the anchor: zt_gemm on bf16 8192^3 matrices of random values (c = a @ b^T;
                                    constant inputs draw less power and clock higher, which reads about 12% high on
                                    an H200), 50 products to bring the clocks up, then wall clock around
                                    zt_stream_sync, the best of 3 rounds of 5: the dense bf16 rate cuBLAS reaches here
     {"bench":"gpu_train",..}       GPT-2 124M (12 layers, 12 heads, width 768, context 1024, vocabulary 50257 padded
                                    to 50304), bf16, 1024 tokens a row, micro-batch 32, no activation checkpointing:
                                    2 warm-up steps, then steps for about 10 s (3 to 20): tokens/s and MFU =
                                    (6N + 12 L d T) FLOPs per token (N: parameters with the real vocabulary; bench/
                                    train.c's formula) x tokens/s over the anchor's rate
     {"bench":"gpu_kernel",..}      each op one step runs, at the model's shapes, timed alone (repeated, then synced):
                                    microseconds a call, calls a step, and its share of the step's kernel time; sorted
                                    by share. The calls are those zt__layer_forward / zt__layer_backward and the head
                                    make for GPT-2, and the optimizer's over every parameter
     {"bench":"gpu_kernel_total",..} the table's sum against the measured step: what the table leaves out (launch gaps,
                                    copies of the batch, small ops) is the difference

   build/bench_gpu_cuda [--backend NAME] [--batch B] [--smoke]: --smoke shrinks everything (batch 1, 128 tokens, a
   1024^3 anchor, 2 steps) to check the program on a machine without a GPU (--backend cpu). */
#include "../zt.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* without dropout, as llm.c and nanoGPT pretrain and as tests/gpu/torch_gpt2.py's yardstick runs */
static const char *GPT2_124M =
    "{\"model_type\": \"gpt2\", \"n_layer\": 12, \"n_head\": 12, \"n_embd\": 768, \"n_positions\": 1024,"
    " \"vocab_size\": 50257, \"embd_pdrop\": 0, \"resid_pdrop\": 0, \"attn_pdrop\": 0}";

static int smoke;

static double now_s(void) { return (double)zt_time_ns() / 1e9; }

/* ---- the anchor ------------------------------------------------------------------------------- */

/* t (bf16) = uniform values in [-1, 1), a million at a time through a host buffer */
static void fill_random(zt_stream *s, zt_tensor t, uint64_t seed) {
    const int64_t CHUNK = 1 << 20;
    float *f = (float *)malloc(sizeof(float) * CHUNK);
    uint16_t *h = (uint16_t *)malloc(sizeof(uint16_t) * CHUNK);
    int64_t n = zt_numel(t);
    for (int64_t o = 0; o < n; o += CHUNK) {
        int64_t k = n - o < CHUNK ? n - o : CHUNK;
        for (int64_t i = 0; i < k; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            f[i] = (float)((double)(seed >> 11) * 0x1.0p-52 - 1.0);
        }
        zt_convert(h, ZT_BF16, f, ZT_F32, k);
        zt_copy(s, zt_view(t, o, zt_shape1(k)), zt_tensor_make(h, ZT_BF16, ZT_HOST, zt_shape1(k)));
        zt_stream_sync(s); /* before the buffer takes the next chunk */
    }
    free(f), free(h);
}

static double gemm_peak(zt_backend *be, int64_t n) {
    zt_arena dev = *zt_backend_device_arena(be); /* scratch: freed on return */
    zt_stream *s = zt_backend_stream(be);
    zt_tensor a = zt_tensor_new(&dev, ZT_BF16, ZT_DEVICE, zt_shape2(n, n));
    zt_tensor b = zt_tensor_new(&dev, ZT_BF16, ZT_DEVICE, zt_shape2(n, n));
    zt_tensor c = zt_tensor_new(&dev, ZT_BF16, ZT_DEVICE, zt_shape2(n, n));
    fill_random(s, a, 1);
    fill_random(s, b, 2);
    for (int i = 0; i < (smoke ? 1 : 50); i++) zt_gemm(s, c, a, b, 0, 1, 1.0f, 0.0f, NULL); /* the kernel, the clocks */
    zt_stream_sync(s);
    double best = 1e30;
    int reps = smoke ? 1 : 5;
    for (int round = 0; round < 3; round++) {
        double t0 = now_s();
        for (int i = 0; i < reps; i++) zt_gemm(s, c, a, b, 0, 1, 1.0f, 0.0f, NULL);
        zt_stream_sync(s);
        best = fmin(best, (now_s() - t0) / reps);
    }
    double tflops = 2.0 * (double)n * (double)n * (double)n / best / 1e12;
    printf("{\"bench\":\"gpu_gemm_peak\",\"backend\":\"%s\",\"M\":%lld,\"N\":%lld,\"K\":%lld,\"dtype\":\"bf16\","
           "\"ms\":%.3f,\"tflops\":%.1f}\n", zt_backend_name(be), (long long)n, (long long)n, (long long)n, best * 1e3,
           tflops);
    fflush(stdout);
    return tflops;
}

/* ---- training --------------------------------------------------------------------------------- */

typedef struct train_result { double step_s; int ok; } train_result;

static train_result train(const char *backend, const zt_model_config *c, int64_t B, int64_t T, double peak) {
    train_result res = {0, 0};
    zt_model_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.config = c;
    zt_options o = zt_options_default();
    o.backend = backend;
    o.micro_batch = B;
    o.seq_len = T;
    o.precision = ZT_PRECISION_BF16;
    o.gradient_checkpointing = 0;
    o.max_steps = 100;
    o.lr = 6e-4f;
    zt_engine *e = NULL;
    double t_init = now_s();
    if (zt_init_options(&e, &spec, &o) != ZT_OK) {
        fprintf(stderr, "bench_gpu: cannot start GPT-2 124M on %s: %s\n", backend, zt_last_error());
        return res;
    }
    t_init = now_s() - t_init;
    int32_t *tok = (int32_t *)malloc(sizeof(int32_t) * (size_t)(B * T));
    for (int64_t i = 0; i < B * T; i++) tok[i] = (int32_t)((i * 7919) % c->vocab);
    int warm = smoke ? 1 : 2, max_steps = smoke ? 2 : 20;
    float first = 0, last = 0;
    for (int i = 0; i < warm; i++) {
        zt_forward_backward(e, tok, NULL, NULL, B);
        float loss = zt_step(e).loss;
        if (i == 0) first = loss;
    }
    int steps = 0;
    double t0 = now_s(), sec = 0;
    while (steps < max_steps && (steps < 3 || sec < 10.0)) {
        zt_forward_backward(e, tok, NULL, NULL, B);
        last = zt_step(e).loss;
        steps++;
        sec = now_s() - t0;
    }
    res.step_s = sec / steps;
    double tps = (double)(B * T) / res.step_s;
    double N = (double)zt_engine_param_count(e);
    double per_token = 6.0 * N + 12.0 * (double)c->n_layer * (double)c->hidden * (double)T;
    res.ok = isfinite(first) && isfinite(last);
    printf("{\"bench\":\"gpu_train\",\"backend\":\"%s\",\"model\":\"gpt2-124M\",\"dtype\":\"bf16\",\"batch\":%lld,"
           "\"seq\":%lld,\"checkpointing\":false,\"params\":%.0f,\"init_s\":%.2f,\"steps\":%d,\"step_ms\":%.1f,"
           "\"tokens_per_s\":%.0f,\"flops_per_token\":%.4g,\"dense_tflops\":%.1f,\"mfu\":%.3f,\"loss_first\":%.4f,"
           "\"loss_last\":%.4f}\n", backend, (long long)B, (long long)T, N, t_init, steps, res.step_s * 1e3, tps,
           per_token, peak, per_token * tps / (peak * 1e12), (double)first, (double)last);
    fflush(stdout);
    free(tok);
    zt_shutdown(e);
    return res;
}

/* ---- the kernel table ------------------------------------------------------------------------- */

/* one step's tensors at the model's shapes (activations and weights bf16; gradients, statistics, logits f32) */
typedef struct model_bufs {
    int64_t B, T, C, NH, HD, I, Vp, vocab, L, N, P;
    zt_tensor ids, pos, targets, losses;
    zt_tensor x, y, n, dx, dn, mean, rstd;          /* (N,C) */
    zt_tensor h, a, dh, da;                         /* (N,I) */
    zt_tensor q, k, v, att, dq, dk, dv, datt, lse;  /* (B,T,NH,HD); lse (B,NH,T) */
    zt_tensor w_cc, b_c, w_ic, b_i, w_ci, ln_w, ln_b; /* (C,C) (C) (I,C) (I) (C,I) (C) (C) */
    zt_tensor g_cc, g_c, g_ic, g_i, g_ci, g_ln_w, g_ln_b;
    zt_tensor wte, wpe, g_wte, g_wpe, logits;       /* (Vp,C) (T,C); logits (R,Vp) */
    zt_tensor master, m, v_, grad, param16, norm;   /* (P) */
} model_bufs;

typedef struct kernel {
    const char *op, *shape;
    double calls;   /* a step */
    void (*run)(zt_stream *s, const model_bufs *m);
    double us;
} kernel;

static void k_emb_wte(zt_stream *s, const model_bufs *m) { zt_embedding_forward(s, m->x, m->ids, m->wte, 0); }
static void k_emb_wpe(zt_stream *s, const model_bufs *m) { zt_embedding_forward(s, m->x, m->pos, m->wpe, 1); }
static void k_ln_fwd(zt_stream *s, const model_bufs *m) {
    zt_layernorm_forward(s, m->n, m->mean, m->rstd, m->x, m->ln_w, m->ln_b, 1e-5f);
}
static void k_mm_cc(zt_stream *s, const model_bufs *m) { zt_matmul_forward(s, m->y, m->n, m->w_cc, &m->b_c); }
static void k_attn_fwd(zt_stream *s, const model_bufs *m) {
    zt_attention_forward(s, m->att, m->lse, m->q, m->k, m->v, NULL);
}
static void k_add(zt_stream *s, const model_bufs *m) { zt_add(s, m->y, m->x, m->y); }
static void k_mm_fc(zt_stream *s, const model_bufs *m) { zt_matmul_forward(s, m->h, m->n, m->w_ic, &m->b_i); }
static void k_gelu_fwd(zt_stream *s, const model_bufs *m) { zt_gelu_forward(s, m->a, m->h); }
static void k_mm_proj(zt_stream *s, const model_bufs *m) { zt_matmul_forward(s, m->y, m->a, m->w_ci, &m->b_c); }
static void k_loss(zt_stream *s, const model_bufs *m) {
    zt_output_loss(s, m->losses, &m->dx, &m->g_wte, m->n, m->wte, m->targets, m->logits, m->vocab, -100,
                   1.0f / (float)m->N);
}
static void k_fill_nc(zt_stream *s, const model_bufs *m) { zt_fill(s, m->dn, 0.0f); }
static void k_fill_ni(zt_stream *s, const model_bufs *m) { zt_fill(s, m->da, 0.0f); }
static void k_mm_proj_bwd(zt_stream *s, const model_bufs *m) {
    zt_matmul_backward(s, &m->da, &m->g_ci, &m->g_c, m->dx, m->a, m->w_ci);
}
static void k_gelu_bwd(zt_stream *s, const model_bufs *m) { zt_gelu_backward(s, m->dh, m->da, m->h); }
static void k_mm_fc_bwd(zt_stream *s, const model_bufs *m) {
    zt_matmul_backward(s, &m->dn, &m->g_ic, &m->g_i, m->dh, m->n, m->w_ic);
}
static void k_copy(zt_stream *s, const model_bufs *m) { zt_copy(s, m->dn, m->dx); }
static void k_ln_bwd(zt_stream *s, const model_bufs *m) {
    zt_layernorm_backward(s, m->dx, m->g_ln_w, m->g_ln_b, m->dn, m->x, m->ln_w, m->mean, m->rstd);
}
static void k_mm_cc_bwd(zt_stream *s, const model_bufs *m) {
    zt_matmul_backward(s, &m->dn, &m->g_cc, &m->g_c, m->dx, m->n, m->w_cc);
}
static void k_attn_bwd(zt_stream *s, const model_bufs *m) {
    zt_attention_backward(s, m->dq, m->dk, m->dv, m->datt, m->q, m->k, m->v, m->att, m->lse, NULL);
}
static void k_emb_wte_bwd(zt_stream *s, const model_bufs *m) { zt_embedding_backward(s, m->g_wte, m->dx, m->ids); }
static void k_emb_wpe_bwd(zt_stream *s, const model_bufs *m) { zt_embedding_backward(s, m->g_wpe, m->dx, m->pos); }
static void k_sumsq(zt_stream *s, const model_bufs *m) { zt_sumsq(s, m->norm, m->grad); }
static void k_adamw(zt_stream *s, const model_bufs *m) {
    zt_optim_params p = zt_optim_defaults(ZT_OPTIM_ADAMW);
    zt_optim_step(s, m->master, m->m, m->v_, m->grad, &m->param16, p);
}
static void k_zero_grads(zt_stream *s, const model_bufs *m) { zt_fill(s, m->grad, 0.0f); }

static void bufs_make(model_bufs *m, zt_arena *dev, zt_stream *s, const zt_model_config *c, int64_t B, int64_t T,
                      int64_t P) {
    memset(m, 0, sizeof *m);
    m->B = B, m->T = T, m->C = c->hidden, m->NH = c->n_head, m->HD = c->head_dim, m->I = c->intermediate;
    m->Vp = c->vocab_padded, m->vocab = c->vocab, m->L = c->n_layer, m->N = B * T, m->P = P;
    int64_t N = m->N, C = m->C, I = m->I, Vp = m->Vp;
    int64_t R = N < ((int64_t)1 << 24) / Vp ? N : ((int64_t)1 << 24) / Vp; /* the engine's logit rows */
    zt_tensor *all[64];
    int n_all = 0;
#define MK(field, dt, shape) (m->field = zt_tensor_new(dev, dt, ZT_DEVICE, shape), all[n_all++] = &m->field)
    MK(ids, ZT_I32, zt_shape1(N)), MK(pos, ZT_I32, zt_shape1(N)), MK(targets, ZT_I32, zt_shape1(N));
    MK(losses, ZT_F32, zt_shape1(N));
    MK(x, ZT_BF16, zt_shape2(N, C)), MK(y, ZT_BF16, zt_shape2(N, C)), MK(n, ZT_BF16, zt_shape2(N, C));
    MK(dx, ZT_BF16, zt_shape2(N, C)), MK(dn, ZT_BF16, zt_shape2(N, C));
    MK(mean, ZT_F32, zt_shape1(N)), MK(rstd, ZT_F32, zt_shape1(N));
    MK(h, ZT_BF16, zt_shape2(N, I)), MK(a, ZT_BF16, zt_shape2(N, I)), MK(dh, ZT_BF16, zt_shape2(N, I));
    MK(da, ZT_BF16, zt_shape2(N, I));
    zt_shape qs = zt_shape4(B, T, m->NH, m->HD);
    MK(q, ZT_BF16, qs), MK(k, ZT_BF16, qs), MK(v, ZT_BF16, qs), MK(att, ZT_BF16, qs);
    MK(dq, ZT_BF16, qs), MK(dk, ZT_BF16, qs), MK(dv, ZT_BF16, qs), MK(datt, ZT_BF16, qs);
    MK(lse, ZT_F32, zt_shape3(B, m->NH, T));
    MK(w_cc, ZT_BF16, zt_shape2(C, C)), MK(b_c, ZT_BF16, zt_shape1(C)), MK(w_ic, ZT_BF16, zt_shape2(I, C));
    MK(b_i, ZT_BF16, zt_shape1(I)), MK(w_ci, ZT_BF16, zt_shape2(C, I));
    MK(ln_w, ZT_BF16, zt_shape1(C)), MK(ln_b, ZT_BF16, zt_shape1(C));
    MK(g_cc, ZT_F32, zt_shape2(C, C)), MK(g_c, ZT_F32, zt_shape1(C)), MK(g_ic, ZT_F32, zt_shape2(I, C));
    MK(g_i, ZT_F32, zt_shape1(I)), MK(g_ci, ZT_F32, zt_shape2(C, I));
    MK(g_ln_w, ZT_F32, zt_shape1(C)), MK(g_ln_b, ZT_F32, zt_shape1(C));
    MK(wte, ZT_BF16, zt_shape2(Vp, C)), MK(wpe, ZT_BF16, zt_shape2(c->max_positions, C));
    MK(g_wte, ZT_F32, zt_shape2(Vp, C)), MK(g_wpe, ZT_F32, zt_shape2(c->max_positions, C));
    MK(logits, ZT_F32, zt_shape2(R, Vp));
    MK(master, ZT_F32, zt_shape1(P)), MK(m, ZT_F32, zt_shape1(P)), MK(v_, ZT_F32, zt_shape1(P));
    MK(grad, ZT_F32, zt_shape1(P)), MK(param16, ZT_BF16, zt_shape1(P)), MK(norm, ZT_F32, zt_shape1(1));
#undef MK
    /* small values everywhere (losses stay finite, norms are well defined); then the real ids, positions, targets */
    for (int i = 0; i < n_all; i++)
        if (all[i]->dtype != ZT_I32) zt_fill(s, *all[i], all[i] == &m->rstd || all[i] == &m->ln_w ? 1.0f : 0.01f);
    int32_t *h = (int32_t *)malloc(sizeof(int32_t) * (size_t)N);
    for (int64_t i = 0; i < N; i++) h[i] = (int32_t)((i * 7919) % c->vocab);
    zt_copy(s, m->ids, zt_tensor_make(h, ZT_I32, ZT_HOST, m->ids.shape));
    zt_copy(s, m->targets, zt_tensor_make(h, ZT_I32, ZT_HOST, m->ids.shape));
    zt_stream_sync(s);
    for (int64_t i = 0; i < N; i++) h[i] = (int32_t)(i % T);
    zt_copy(s, m->pos, zt_tensor_make(h, ZT_I32, ZT_HOST, m->pos.shape));
    zt_stream_sync(s);
    free(h);
}

static int by_share(const void *a, const void *b) {
    const kernel *x = (const kernel *)a, *y = (const kernel *)b;
    double u = x->us * x->calls, v = y->us * y->calls;
    return u < v ? 1 : u > v ? -1 : 0;
}

static void kernel_table(zt_backend *be, const zt_model_config *c, int64_t B, int64_t T, int64_t P, double step_s) {
    zt_arena dev = *zt_backend_device_arena(be);
    zt_stream *s = zt_backend_stream(be);
    model_bufs m;
    bufs_make(&m, &dev, s, c, B, T, P);
    char nc[48], ni[48], att[64], loss[96], p[32];
    snprintf(nc, sizeof nc, "(%lld, %lld)", (long long)m.N, (long long)m.C);
    snprintf(ni, sizeof ni, "(%lld, %lld)", (long long)m.N, (long long)m.I);
    snprintf(att, sizeof att, "B %lld T %lld heads %lld HD %lld", (long long)B, (long long)T, (long long)m.NH,
             (long long)m.HD);
    snprintf(loss, sizeof loss, "hidden %s weight (%lld, %lld) logits_buf (%lld rows)", nc, (long long)m.Vp,
             (long long)m.C, (long long)zt_rows(m.logits));
    snprintf(p, sizeof p, "(%lld)", (long long)P);
    double L = (double)m.L;
    kernel k[] = {
        {"embedding_forward wte", nc, 1, k_emb_wte, 0},
        {"embedding_forward wpe (accumulate)", nc, 1, k_emb_wpe, 0},
        {"layernorm_forward", nc, 2 * L + 1, k_ln_fwd, 0},
        {"matmul_forward q k v c_proj (C x C + bias)", nc, 4 * L, k_mm_cc, 0},
        {"attention_forward", att, L, k_attn_fwd, 0},
        {"add", nc, 3 * L, k_add, 0},
        {"matmul_forward c_fc (-> 4C + bias)", nc, L, k_mm_fc, 0},
        {"gelu_forward", ni, L, k_gelu_fwd, 0},
        {"matmul_forward mlp c_proj (4C -> C + bias)", ni, L, k_mm_proj, 0},
        {"output_loss forward and backward", loss, 1, k_loss, 0},
        {"fill 0 (N, C)", nc, 7 * L + 1, k_fill_nc, 0},
        {"fill 0 (N, 4C)", ni, 2 * L, k_fill_ni, 0},
        {"matmul_backward mlp c_proj", ni, L, k_mm_proj_bwd, 0},
        {"gelu_backward", ni, L, k_gelu_bwd, 0},
        {"matmul_backward c_fc", nc, L, k_mm_fc_bwd, 0},
        {"copy (residual gradient)", nc, L, k_copy, 0},
        {"layernorm_backward", nc, 2 * L + 1, k_ln_bwd, 0},
        {"matmul_backward q k v c_proj (C x C)", nc, 4 * L, k_mm_cc_bwd, 0},
        {"attention_backward", att, L, k_attn_bwd, 0},
        {"embedding_backward wte", nc, 1, k_emb_wte_bwd, 0},
        {"embedding_backward wpe", nc, 1, k_emb_wpe_bwd, 0},
        {"sumsq (gradient norm)", p, 1, k_sumsq, 0},
        {"adamw (f32 master, bf16 copy)", p, 1, k_adamw, 0},
        {"fill 0 (gradients)", p, 1, k_zero_grads, 0},
    };
    int n = (int)(sizeof k / sizeof k[0]);
    double total = 0;
    for (int i = 0; i < n; i++) {
        k[i].run(s, &m); /* warm-up */
        zt_stream_sync(s);
        double t0 = now_s();
        k[i].run(s, &m);
        zt_stream_sync(s);
        double once = now_s() - t0;
        int reps = smoke ? 1 : once > 0.02 ? 3 : (int)fmin(200, 0.03 / fmax(once, 1e-6));
        t0 = now_s();
        for (int r = 0; r < reps; r++) k[i].run(s, &m);
        zt_stream_sync(s);
        k[i].us = (now_s() - t0) / reps * 1e6;
        total += k[i].us * k[i].calls;
    }
    qsort(k, (size_t)n, sizeof k[0], by_share);
    for (int i = 0; i < n; i++)
        printf("{\"bench\":\"gpu_kernel\",\"op\":\"%s\",\"shape\":\"%s\",\"dtype\":\"bf16\",\"us\":%.1f,\"calls\":%.0f,"
               "\"share\":%.4f}\n", k[i].op, k[i].shape, k[i].us, k[i].calls, k[i].us * k[i].calls / total);
    printf("{\"bench\":\"gpu_kernel_total\",\"step_ms_from_kernels\":%.1f,\"step_ms_measured\":%.1f}\n", total / 1e3,
           step_s * 1e3);
    fflush(stdout);
}

int main(int argc, char **argv) {
    const char *backend = "cuda";
    int64_t B = 32, T = 1024;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc) backend = argv[++i];
        else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc) B = atoll(argv[++i]);
        else if (strcmp(argv[i], "--smoke") == 0) smoke = 1;
        else {
            fprintf(stderr, "usage: %s [--backend NAME] [--batch B] [--smoke]\n", argv[0]);
            return 2;
        }
    }
    if (smoke) B = 1, T = 128;
    zt_model_config c;
    if (zt_model_config_parse(&c, GPT2_124M, strlen(GPT2_124M), "gpt2-124M") != ZT_OK) {
        fprintf(stderr, "bench_gpu: %s\n", zt_last_error());
        return 2;
    }
    zt_backend *be = NULL;
    zt_backend_desc desc = zt_backend_desc_default();
    desc.device_bytes = (size_t)(smoke ? 4 : 16) << 30;
    if (zt_backend_create(&be, backend, &desc) != ZT_OK) {
        fprintf(stderr, "bench_gpu: cannot create the %s backend: %s\n", backend, zt_last_error());
        return 2;
    }
    double peak = gemm_peak(be, smoke ? 1024 : 8192);
    train_result t = train(backend, &c, B, T, peak);
    if (t.step_s > 0) kernel_table(be, &c, B, T, zt_model_config_params(&c), t.step_s);
    zt_backend_destroy(be);
    return t.ok ? 0 : 1;
}
