/* bench/train.c - training throughput of the CPU backend on the "small" GPT-2 shape (4 layers, 4 heads,
   width 256, context 256, vocabulary 50257 padded to 50304, batch 4), fp32 and bf16, as tokens/s and
   as MFU: (6 N + 12 L d T) FLOPs per token (N counts parameters with the real vocabulary) times tokens/s
   over this machine's fp32 FMA peak measured in the same run. bf16 is measured against the same fp32
   peak: the CPU kernels compute in f32 whatever the storage dtype. One JSON line each; goal MFU >= 25%. */
#include "peak.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *SMALL =
    "{\"model_type\": \"gpt2\", \"n_layer\": 4, \"n_head\": 4, \"n_embd\": 256, \"n_positions\": 256,"
    " \"vocab_size\": 50257}";

int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 4;
    int threads = zt_cpu_count();
    double peak = measure_peak(threads);
    printf("{\"bench\":\"peak\",\"isa\":\"%s\",\"threads\":%d,\"gflops\":%.1f}\n", PEAK_ISA, threads, peak);
    zt_model_config c;
    if (zt_model_config_parse(&c, SMALL, strlen(SMALL), "small") != ZT_OK) {
        fprintf(stderr, "%s\n", zt_last_error());
        return 1;
    }
    const int64_t B = 4, T = 256;
    int32_t *tok = (int32_t *)malloc(sizeof(int32_t) * B * T);
    for (int64_t i = 0; i < B * T; i++) tok[i] = (int32_t)((i * 7919) % c.vocab);
    zt_precision precisions[2] = {ZT_PRECISION_FP32, ZT_PRECISION_BF16};
    for (int pi = 0; pi < 2; pi++) {
        zt_model_spec spec;
        memset(&spec, 0, sizeof spec);
        spec.config = &c;
        zt_options o = zt_options_default();
        o.micro_batch = B;
        o.seq_len = T;
        o.precision = precisions[pi];
        o.max_steps = steps + 1;
        zt_engine *e = NULL;
        if (zt_init_options(&e, &spec, &o) != ZT_OK) {
            fprintf(stderr, "%s\n", zt_last_error());
            return 1;
        }
        zt_forward_backward(e, tok, NULL, NULL, B); /* warm-up */
        zt_step(e);
        uint64_t t0 = zt_time_ns();
        for (int s = 0; s < steps; s++) {
            zt_forward_backward(e, tok, NULL, NULL, B);
            zt_step(e);
        }
        double sec = (double)(zt_time_ns() - t0) / 1e9;
        double tps = (double)(B * T * steps) / sec;
        double N = (double)zt_engine_param_count(e);
        double per_token = 6.0 * N + 12.0 * (double)c.n_layer * (double)c.hidden * (double)T;
        double mfu = per_token * tps / (peak * 1e9);
        printf("{\"bench\":\"train\",\"model\":\"gpt2-small-shape\",\"dtype\":\"%s\",\"batch\":%lld,\"seq\":%lld,"
               "\"params\":%.0f,\"step_ms\":%.1f,\"tokens_per_s\":%.0f,\"flops_per_token\":%.4g,"
               "\"peak_gflops\":%.1f,\"mfu\":%.3f}\n",
               pi ? "bf16" : "f32", (long long)B, (long long)T, N, 1e3 * sec / steps, tps, per_token, peak, mfu);
        fflush(stdout);
        zt_shutdown(e);
    }
    free(tok);
    return 0;
}
