/* bench/train.c - training throughput of the CPU backend.
   1. The "small" GPT-2 shape (4 layers, 4 heads, width 256, context 256, vocabulary 50257 padded to 50304, batch 4),
      fp32 and bf16, as tokens/s and as MFU: (6 N + 12 L d T) FLOPs per token (N counts parameters with the real
      vocabulary) times tokens/s over this machine's fp32 FMA peak measured in the same run. bf16 is measured against
      the same fp32 peak: the CPU kernels compute in f32 whatever the storage dtype. Goal MFU >= 25%.
   2. Mixture of experts: a Mixtral shape (4 layers, width 256, 8 experts of 512, 2 per token) against the LLaMA
      shape of the same work per token (one MLP of 1024), fp32, as the ratio of their tokens/s: what routing,
      gathering, combining and the experts' smaller products cost. Goal ratio >= 0.8.
   3. Dropout: the small GPT-2 shape with transformers' default dropouts (0.1 on the embeddings, the residual branches
      and the attention's probabilities) against the same without, fp32, as the ratio of their tokens/s: what drawing
      the masks costs (each probability's hash, in the forward and again in the backward). Goal ratio >= 0.85.
   One JSON line each. (1 and 2 train without dropout, as llm.c and nanoGPT pretrain.) */
#include "peak.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SMALL_SHAPE "\"model_type\": \"gpt2\", \"n_layer\": 4, \"n_head\": 4, \"n_embd\": 256, \"n_positions\": 256," \
                    " \"vocab_size\": 50257"
static const char *SMALL = "{" SMALL_SHAPE ", \"embd_pdrop\": 0, \"resid_pdrop\": 0, \"attn_pdrop\": 0}";
static const char *SMALL_DROPOUT = "{" SMALL_SHAPE "}"; /* transformers' defaults: 0.1 */
#define SHAPE "\"num_hidden_layers\": 4, \"num_attention_heads\": 4, \"num_key_value_heads\": 4, \"hidden_size\": 256," \
              " \"max_position_embeddings\": 256, \"vocab_size\": 4096"
static const char *DENSE = "{\"model_type\": \"llama\", " SHAPE ", \"intermediate_size\": 1024}";
static const char *MOE = "{\"model_type\": \"mixtral\", " SHAPE ", \"intermediate_size\": 512, \"num_local_experts\": 8,"
                         " \"num_experts_per_tok\": 2}";

static zt_model_config config_of(const char *json) {
    zt_model_config c;
    if (zt_model_config_parse(&c, json, strlen(json), "bench") != ZT_OK) {
        fprintf(stderr, "%s\n", zt_last_error());
        exit(1);
    }
    return c;
}

/* tokens/s of `steps` training steps after a warm-up one; *params: the model's parameters */
static double tokens_per_s(const zt_model_config *c, zt_precision precision, int64_t B, int64_t T, int steps,
                           double *params) {
    int32_t *tok = (int32_t *)malloc(sizeof(int32_t) * (size_t)(B * T));
    for (int64_t i = 0; i < B * T; i++) tok[i] = (int32_t)((i * 7919) % c->vocab);
    zt_model_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.config = c;
    zt_options o = zt_options_default();
    o.micro_batch = B;
    o.seq_len = T;
    o.precision = precision;
    o.max_steps = steps + 1;
    zt_engine *e = NULL;
    if (zt_init_options(&e, &spec, &o) != ZT_OK) {
        fprintf(stderr, "%s\n", zt_last_error());
        exit(1);
    }
    zt_forward_backward(e, tok, NULL, NULL, B); /* warm-up */
    zt_step(e);
    uint64_t t0 = zt_time_ns();
    for (int s = 0; s < steps; s++) {
        zt_forward_backward(e, tok, NULL, NULL, B);
        zt_step(e);
    }
    double sec = (double)(zt_time_ns() - t0) / 1e9;
    *params = (double)zt_engine_param_count(e);
    zt_shutdown(e);
    free(tok);
    return (double)(B * T * steps) / sec;
}

int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 4;
    int threads = zt_cpu_count();
    double peak = measure_peak(threads);
    printf("{\"bench\":\"peak\",\"isa\":\"%s\",\"threads\":%d,\"gflops\":%.1f}\n", PEAK_ISA, threads, peak);
    zt_model_config c = config_of(SMALL);
    const int64_t B = 4, T = 256;
    zt_precision precisions[2] = {ZT_PRECISION_FP32, ZT_PRECISION_BF16};
    for (int pi = 0; pi < 2; pi++) {
        double N = 0, tps = tokens_per_s(&c, precisions[pi], B, T, steps, &N);
        double per_token = 6.0 * N + 12.0 * (double)c.n_layer * (double)c.hidden * (double)T;
        double mfu = per_token * tps / (peak * 1e9);
        printf("{\"bench\":\"train\",\"model\":\"gpt2-small-shape\",\"dtype\":\"%s\",\"batch\":%lld,\"seq\":%lld,"
               "\"params\":%.0f,\"step_ms\":%.1f,\"tokens_per_s\":%.0f,\"flops_per_token\":%.4g,"
               "\"peak_gflops\":%.1f,\"mfu\":%.3f}\n",
               pi ? "bf16" : "f32", (long long)B, (long long)T, N, 1e3 * (double)(B * T) / tps, tps, per_token, peak,
               mfu);
        fflush(stdout);
    }
    zt_model_config dense = config_of(DENSE), moe = config_of(MOE);
    double nd = 0, nm = 0, td = tokens_per_s(&dense, ZT_PRECISION_FP32, B, T, steps, &nd);
    double tm = tokens_per_s(&moe, ZT_PRECISION_FP32, B, T, steps, &nm);
    printf("{\"bench\":\"train_moe\",\"model\":\"mixtral-shape 8x512 top-2\",\"dtype\":\"f32\",\"params\":%.0f,"
           "\"tokens_per_s\":%.0f,\"anchor\":\"llama-shape 1024\",\"anchor_params\":%.0f,\"anchor_tokens_per_s\":%.0f,"
           "\"ratio\":%.3f}\n", nm, tm, nd, td, tm / td);
    fflush(stdout);
    zt_model_config dropout = config_of(SMALL_DROPOUT);
    double n0 = 0, n1 = 0, t0 = tokens_per_s(&c, ZT_PRECISION_FP32, B, T, steps, &n0);
    double t1 = tokens_per_s(&dropout, ZT_PRECISION_FP32, B, T, steps, &n1);
    printf("{\"bench\":\"train_dropout\",\"model\":\"gpt2-small-shape, dropout 0.1\",\"dtype\":\"f32\",\"tokens_per_s\":%.0f,"
           "\"anchor\":\"the same without dropout\",\"anchor_tokens_per_s\":%.0f,\"ratio\":%.3f}\n", t1, t0, t1 / t0);
    return 0;
}
