/* tests/ref_ops.h - naive double-precision forward and backward of every op in zt.h's >>ops section.
   Plain loops, written for reading, not speed: the kernels are checked against these, and these are
   checked against central finite differences (tests/test_ops.c). No zt dependency: ids are int32_t,
   everything else is double. Backward functions accumulate (+=) like zt's do; shapes in the comment
   at each function, with leading dimensions flattened into rows as in zt.h. */
#ifndef ZT_REF_OPS_H
#define ZT_REF_OPS_H
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Every function here is static; one test file rarely uses them all. */
#define REF static __attribute__((unused))

/* c (M,N) = alpha * op(a) @ op(b) + beta * c + bias; a (M,K) or (K,M) with ta; b (K,N) or (N,K) with
   tb; bias (N) or NULL */
REF void ref_gemm(double *c, const double *a, const double *b, int64_t M, int64_t N, int64_t K,
                  int ta, int tb, double alpha, double beta, const double *bias) {
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double acc = 0;
            for (int64_t k = 0; k < K; k++) {
                double x = ta ? a[k * M + i] : a[i * K + k];
                double y = tb ? b[j * K + k] : b[k * N + j];
                acc += x * y;
            }
            c[i * N + j] = alpha * acc + beta * c[i * N + j] + (bias ? bias[j] : 0.0);
        }
}

/* out (C) += column sums of x (R,C) */
REF void ref_sum_rows(double *out, const double *x, int64_t R, int64_t C) {
    for (int64_t r = 0; r < R; r++)
        for (int64_t c = 0; c < C; c++) out[c] += x[r * C + c];
}

/* inp (N,C), weight (OC,C), bias (OC) or NULL -> out (N,OC) = inp @ weight^T + bias */
REF void ref_matmul_forward(double *out, const double *inp, const double *weight,
                            const double *bias, int64_t N, int64_t C, int64_t OC) {
    for (int64_t n = 0; n < N; n++)
        for (int64_t o = 0; o < OC; o++) {
            double acc = bias ? bias[o] : 0.0;
            for (int64_t c = 0; c < C; c++) acc += inp[n * C + c] * weight[o * C + c];
            out[n * OC + o] = acc;
        }
}

/* dinp (N,C) += dout @ weight; dweight (OC,C) += dout^T @ inp; dbias (OC) += column sums of dout.
   Any of dinp, dweight, dbias may be NULL. */
REF void ref_matmul_backward(double *dinp, double *dweight, double *dbias, const double *dout,
                             const double *inp, const double *weight, int64_t N, int64_t C,
                             int64_t OC) {
    for (int64_t n = 0; n < N; n++)
        for (int64_t o = 0; o < OC; o++) {
            double d = dout[n * OC + o];
            for (int64_t c = 0; c < C; c++) {
                if (dinp) dinp[n * C + c] += d * weight[o * C + c];
                if (dweight) dweight[o * C + c] += d * inp[n * C + c];
            }
            if (dbias) dbias[o] += d;
        }
}

/* ids (N), table (V,C) -> out (N,C) = table[ids], added to out when accumulate */
REF void ref_embedding_forward(double *out, const int32_t *ids, const double *table, int64_t N,
                               int64_t C, int accumulate) {
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            out[n * C + c] = (accumulate ? out[n * C + c] : 0.0) + table[(int64_t)ids[n] * C + c];
}

/* dtable (V,C) += dout (N,C) rows scattered by ids (N) */
REF void ref_embedding_backward(double *dtable, const double *dout, const int32_t *ids, int64_t N,
                                int64_t C) {
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++) dtable[(int64_t)ids[n] * C + c] += dout[n * C + c];
}

/* inp (N,C), weight, bias (C) -> out (N,C); mean, rstd (N) (either may be NULL).
   out = (x - mean) * rstd * weight + bias, rstd = 1 / sqrt(biased variance + eps) */
REF void ref_layernorm_forward(double *out, double *mean, double *rstd, const double *inp,
                               const double *weight, const double *bias, int64_t N, int64_t C,
                               double eps) {
    for (int64_t n = 0; n < N; n++) {
        const double *x = inp + n * C;
        double m = 0, var = 0;
        for (int64_t c = 0; c < C; c++) m += x[c];
        m /= (double)C;
        for (int64_t c = 0; c < C; c++) var += (x[c] - m) * (x[c] - m);
        var /= (double)C;
        double rs = 1.0 / sqrt(var + eps);
        for (int64_t c = 0; c < C; c++) out[n * C + c] = (x[c] - m) * rs * weight[c] + bias[c];
        if (mean) mean[n] = m;
        if (rstd) rstd[n] = rs;
    }
}

/* dinp (N,C) += ..., dweight, dbias (C) += ...; mean and rstd recomputed here in double */
REF void ref_layernorm_backward(double *dinp, double *dweight, double *dbias, const double *dout,
                                const double *inp, const double *weight, int64_t N, int64_t C,
                                double eps) {
    for (int64_t n = 0; n < N; n++) {
        const double *x = inp + n * C, *dy = dout + n * C;
        double m = 0, var = 0;
        for (int64_t c = 0; c < C; c++) m += x[c];
        m /= (double)C;
        for (int64_t c = 0; c < C; c++) var += (x[c] - m) * (x[c] - m);
        var /= (double)C;
        double rs = 1.0 / sqrt(var + eps);
        /* dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * weight */
        double mg = 0, mgx = 0;
        for (int64_t c = 0; c < C; c++) {
            double xhat = (x[c] - m) * rs, g = dy[c] * weight[c];
            mg += g;
            mgx += g * xhat;
        }
        mg /= (double)C;
        mgx /= (double)C;
        for (int64_t c = 0; c < C; c++) {
            double xhat = (x[c] - m) * rs, g = dy[c] * weight[c];
            dinp[n * C + c] += rs * (g - mg - xhat * mgx);
            dweight[c] += dy[c] * xhat;
            dbias[c] += dy[c];
        }
    }
}

/* inp (N,C), weight (C) -> out (N,C) = x * rstd * weight, rstd (N) = 1 / sqrt(mean(x^2) + eps) */
REF void ref_rmsnorm_forward(double *out, double *rstd, const double *inp, const double *weight,
                             int64_t N, int64_t C, double eps) {
    for (int64_t n = 0; n < N; n++) {
        const double *x = inp + n * C;
        double ms = 0;
        for (int64_t c = 0; c < C; c++) ms += x[c] * x[c];
        double rs = 1.0 / sqrt(ms / (double)C + eps);
        for (int64_t c = 0; c < C; c++) out[n * C + c] = x[c] * rs * weight[c];
        if (rstd) rstd[n] = rs;
    }
}

REF void ref_rmsnorm_backward(double *dinp, double *dweight, const double *dout, const double *inp,
                              const double *weight, int64_t N, int64_t C, double eps) {
    for (int64_t n = 0; n < N; n++) {
        const double *x = inp + n * C, *dy = dout + n * C;
        double ms = 0;
        for (int64_t c = 0; c < C; c++) ms += x[c] * x[c];
        double rs = 1.0 / sqrt(ms / (double)C + eps);
        /* dx = rstd * (g - xhat * mean(g * xhat)), g = dy * weight */
        double mgx = 0;
        for (int64_t c = 0; c < C; c++) mgx += dy[c] * weight[c] * x[c] * rs;
        mgx /= (double)C;
        for (int64_t c = 0; c < C; c++) {
            double xhat = x[c] * rs;
            dinp[n * C + c] += rs * (dy[c] * weight[c] - xhat * mgx);
            dweight[c] += dy[c] * xhat;
        }
    }
}

/* GPT-2's gelu_new: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
REF double ref_gelu(double x) {
    double s = sqrt(2.0 / 3.14159265358979323846);
    return 0.5 * x * (1.0 + tanh(s * (x + 0.044715 * x * x * x)));
}
REF double ref_gelu_grad(double x) {
    double s = sqrt(2.0 / 3.14159265358979323846);
    double t = tanh(s * (x + 0.044715 * x * x * x));
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * s * (1.0 + 3.0 * 0.044715 * x * x);
}
REF void ref_gelu_forward(double *out, const double *inp, int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = ref_gelu(inp[i]);
}
REF void ref_gelu_backward(double *dinp, const double *dout, const double *inp, int64_t n) {
    for (int64_t i = 0; i < n; i++) dinp[i] += dout[i] * ref_gelu_grad(inp[i]);
}
/* torch's nn.GELU(): 0.5 x (1 + erf(x / sqrt 2)); its derivative Phi(x) + x phi(x) */
REF void ref_gelu_erf_forward(double *out, const double *inp, int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = 0.5 * inp[i] * (1.0 + erf(inp[i] / sqrt(2.0)));
}
REF void ref_gelu_erf_backward(double *dinp, const double *dout, const double *inp, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        double x = inp[i];
        dinp[i] += dout[i] * (0.5 * (1.0 + erf(x / sqrt(2.0))) + x * exp(-0.5 * x * x) / sqrt(2.0 * 3.14159265358979323846));
    }
}

REF double ref_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
REF double ref_silu(double x) { return x * ref_sigmoid(x); }
REF double ref_silu_grad(double x) {
    double sg = ref_sigmoid(x);
    return sg * (1.0 + x * (1.0 - sg));
}
REF void ref_silu_forward(double *out, const double *inp, int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = ref_silu(inp[i]);
}
REF void ref_silu_backward(double *dinp, const double *dout, const double *inp, int64_t n) {
    for (int64_t i = 0; i < n; i++) dinp[i] += dout[i] * ref_silu_grad(inp[i]);
}

/* inp (N,2H) rows [gate | up] -> out (N,H) = silu(gate) * up */
REF void ref_swiglu_forward(double *out, const double *inp, int64_t N, int64_t H) {
    for (int64_t n = 0; n < N; n++)
        for (int64_t h = 0; h < H; h++)
            out[n * H + h] = ref_silu(inp[n * 2 * H + h]) * inp[n * 2 * H + H + h];
}
/* gpt-oss's: inp (N,2H) rows [g0 u0 g1 u1 ...] -> out (N,H) = (clamp(u, -L, L) + 1) g' sigmoid(alpha g'),
   g' = min(g, L); no gradient where a clamp cuts */
REF void ref_swiglu_clamped_forward(double *out, const double *inp, int64_t N, int64_t H, double alpha, double L) {
    for (int64_t n = 0; n < N; n++)
        for (int64_t h = 0; h < H; h++) {
            double g = fmin(inp[n * 2 * H + 2 * h], L), u = fmax(-L, fmin(inp[n * 2 * H + 2 * h + 1], L));
            out[n * H + h] = (u + 1) * g / (1 + exp(-alpha * g));
        }
}
REF void ref_swiglu_clamped_backward(double *dinp, const double *dout, const double *inp, int64_t N, int64_t H,
                                     double alpha, double L) {
    for (int64_t n = 0; n < N; n++)
        for (int64_t h = 0; h < H; h++) {
            double g0 = inp[n * 2 * H + 2 * h], u0 = inp[n * 2 * H + 2 * h + 1], dy = dout[n * H + h];
            double g = fmin(g0, L), u = fmax(-L, fmin(u0, L)), sg = 1 / (1 + exp(-alpha * g));
            if (g0 <= L) dinp[n * 2 * H + 2 * h] += dy * (u + 1) * (sg + alpha * g * sg * (1 - sg));
            if (u0 >= -L && u0 <= L) dinp[n * 2 * H + 2 * h + 1] += dy * g * sg;
        }
}
REF void ref_swiglu_backward(double *dinp, const double *dout, const double *inp, int64_t N,
                             int64_t H) {
    for (int64_t n = 0; n < N; n++)
        for (int64_t h = 0; h < H; h++) {
            double g = inp[n * 2 * H + h], u = inp[n * 2 * H + H + h], dy = dout[n * H + h];
            dinp[n * 2 * H + h] += dy * u * ref_silu_grad(g);
            dinp[n * 2 * H + H + h] += dy * ref_silu(g);
        }
}

/* The rotary angle of position pos, pair i of HD: computed in f32 exactly as transformers does
   (inv_freq = 1 / theta^(2i/HD) in f32, angle = f32(pos) * inv_freq), then used in double. */
REF double ref_rope_angle(int32_t pos, int64_t i, int64_t HD, float theta) {
    float inv_freq = 1.0f / powf(theta, (float)(2 * i) / (float)HD);
    float angle = (float)pos * inv_freq;
    return (double)angle;
}

/* x (R,H,HD) with R = B*T rows, pos (R) -> out (R,H,HD), rotate-half: for i < HD/2,
   out[i] = x[i] cos - x[i+HD/2] sin, out[i+HD/2] = x[i+HD/2] cos + x[i] sin. out may alias inp. */
/* rd: only the first rd dimensions of each head rotate (pairs i and i + rd/2, the angles of a head of rd), the
   rest pass as they are (Phi-3's partial_rotary_factor); rd = HD: the whole head. il: the pairs are 2i and 2i + 1
   instead (interleaved: GLM's) */
REF void ref_rope_il_forward(double *out, const double *inp, const int32_t *pos, int64_t R, int64_t H, int64_t HD,
                             int64_t rd, int il, float theta) {
    int64_t half = rd / 2;
    for (int64_t r = 0; r < R; r++) {
        for (int64_t h = 0; h < H; h++)
            for (int64_t c = rd; c < HD; c++) out[(r * H + h) * HD + c] = inp[(r * H + h) * HD + c];
        for (int64_t i = 0; i < half; i++) {
            double a = ref_rope_angle(pos[r], i, rd, theta), c = cos(a), s = sin(a);
            int64_t p0 = il ? 2 * i : i, p1 = il ? 2 * i + 1 : i + half;
            for (int64_t h = 0; h < H; h++) {
                const double *x = inp + (r * H + h) * HD;
                double x0 = x[p0], x1 = x[p1];
                out[(r * H + h) * HD + p0] = x0 * c - x1 * s;
                out[(r * H + h) * HD + p1] = x1 * c + x0 * s;
            }
        }
    }
}
REF void ref_rope_part_forward(double *out, const double *inp, const int32_t *pos, int64_t R, int64_t H,
                               int64_t HD, int64_t rd, float theta) {
    ref_rope_il_forward(out, inp, pos, R, H, HD, rd, 0, theta);
}
REF void ref_rope_forward(double *out, const double *inp, const int32_t *pos, int64_t R, int64_t H,
                          int64_t HD, float theta) {
    ref_rope_part_forward(out, inp, pos, R, H, HD, HD, theta);
}

/* dinp += R^T dout (the rotation by -angle; the passing dimensions' gradients pass) */
REF void ref_rope_il_backward(double *dinp, const double *dout, const int32_t *pos, int64_t R, int64_t H, int64_t HD,
                              int64_t rd, int il, float theta) {
    int64_t half = rd / 2;
    for (int64_t r = 0; r < R; r++) {
        for (int64_t h = 0; h < H; h++)
            for (int64_t c = rd; c < HD; c++) dinp[(r * H + h) * HD + c] += dout[(r * H + h) * HD + c];
        for (int64_t i = 0; i < half; i++) {
            double a = ref_rope_angle(pos[r], i, rd, theta), c = cos(a), s = sin(a);
            int64_t p0 = il ? 2 * i : i, p1 = il ? 2 * i + 1 : i + half;
            for (int64_t h = 0; h < H; h++) {
                const double *dy = dout + (r * H + h) * HD;
                dinp[(r * H + h) * HD + p0] += dy[p0] * c + dy[p1] * s;
                dinp[(r * H + h) * HD + p1] += dy[p1] * c - dy[p0] * s;
            }
        }
    }
}
REF void ref_rope_part_backward(double *dinp, const double *dout, const int32_t *pos, int64_t R,
                                int64_t H, int64_t HD, int64_t rd, float theta) {
    ref_rope_il_backward(dinp, dout, pos, R, H, HD, rd, 0, theta);
}
REF void ref_rope_backward(double *dinp, const double *dout, const int32_t *pos, int64_t R,
                           int64_t H, int64_t HD, float theta) {
    ref_rope_part_backward(dinp, dout, pos, R, H, HD, HD, theta);
}

/* inp (N,2H) rows [gate | up] -> out (N,H) = gelu(gate) * up (the tanh GELU) */
REF void ref_geglu_forward(double *out, const double *inp, int64_t N, int64_t H) {
    for (int64_t n = 0; n < N; n++)
        for (int64_t h = 0; h < H; h++)
            out[n * H + h] = ref_gelu(inp[n * 2 * H + h]) * inp[n * 2 * H + H + h];
}
REF void ref_geglu_backward(double *dinp, const double *dout, const double *inp, int64_t N, int64_t H) {
    for (int64_t n = 0; n < N; n++)
        for (int64_t h = 0; h < H; h++) {
            double g = inp[n * 2 * H + h], u = inp[n * 2 * H + H + h], dy = dout[n * H + h];
            dinp[n * 2 * H + h] += dy * u * ref_gelu_grad(g);
            dinp[n * 2 * H + H + h] += dy * ref_gelu(g);
        }
}

/* One token's k choices by c (E) among the experts whose group of per keep marks (NULL: all), the best first (ties:
   the lower expert), then in increasing order into ix (k); returns the sum of their p, in the order they were chosen */
REF double ref_moe_choose(int32_t *ix, const double *c, const double *p, const int *keep, int64_t per, int64_t E,
                          int64_t k) {
    double chosen = 0;
    for (int64_t j = 0; j < k; j++) {
        int64_t best = -1;
        for (int64_t e = 0; e < E; e++) {
            int taken = keep && !keep[e / per];
            for (int64_t i = 0; i < j; i++) taken |= ix[i] == e;
            if (!taken && (best < 0 || c[e] > c[best])) best = e;
        }
        ix[j] = (int32_t)best;
        chosen += p[best];
    }
    for (int64_t j = 1; j < k; j++)
        for (int64_t i = j; i > 0 && ix[i - 1] > ix[i]; i--) {
            int32_t v = ix[i];
            ix[i] = ix[i - 1], ix[i - 1] = v;
        }
    return chosen;
}

/* keep (groups): the topk_groups groups of E / groups experts whose two best c sum highest, or (group_max) whose best
   is highest (ties: the lower group) */
REF void ref_moe_keep_groups(int *keep, const double *c, int64_t per, int64_t groups, int64_t topk_groups,
                             int group_max) {
    double score[64];
    for (int64_t g = 0; g < groups; g++) {
        double b1 = -INFINITY, b2 = -INFINITY;
        keep[g] = 0;
        for (int64_t e = g * per; e < (g + 1) * per; e++)
            if (c[e] > b1) b2 = b1, b1 = c[e];
            else if (c[e] > b2) b2 = c[e];
        score[g] = group_max ? b1 : b1 + b2;
    }
    for (int64_t i = 0; i < topk_groups; i++) {
        int64_t best = -1;
        for (int64_t g = 0; g < groups; g++)
            if (!keep[g] && (best < 0 || score[g] > score[best])) best = g;
        keep[best] = 1;
    }
}
/* Mixture-of-experts routing: logits (N,E) -> probs (N,E) = softmax; idx (N,k), each token's k likeliest
   experts in increasing order (ties: the lower expert); weight (N,k), their probabilities, divided by their
   sum when normalize. */
REF void ref_moe_route_forward(int32_t *idx, double *weight, double *probs, const double *logits, int64_t N,
                               int64_t E, int64_t k, int normalize) {
    for (int64_t t = 0; t < N; t++) {
        const double *x = logits + t * E;
        double *p = probs + t * E, top = x[0], sum = 0, chosen;
        for (int64_t e = 1; e < E; e++) top = x[e] > top ? x[e] : top;
        for (int64_t e = 0; e < E; e++) sum += (p[e] = exp(x[e] - top));
        for (int64_t e = 0; e < E; e++) p[e] /= sum;
        int32_t *ix = idx + t * k;
        chosen = ref_moe_choose(ix, p, p, NULL, E, E, k);
        for (int64_t j = 0; j < k; j++) weight[t * k + j] = p[ix[j]] / (normalize ? chosen : 1.0);
    }
}
/* DeepSeek-V2's group_limited_greedy: probs (N,E) = softmax(logits); each token's k likeliest among the experts of its
   topk_groups groups whose best is likeliest; weight (N,k) their probabilities times scale, unnormalized */
REF void ref_moe_route_grouped_forward(int32_t *idx, double *weight, double *probs, const double *logits, int64_t N,
                                       int64_t E, int64_t k, int64_t groups, int64_t topk_groups, double scale) {
    int64_t per = E / groups;
    for (int64_t t = 0; t < N; t++) {
        const double *x = logits + t * E;
        double *p = probs + t * E, top = x[0], sum = 0;
        int keep[64];
        for (int64_t e = 1; e < E; e++) top = x[e] > top ? x[e] : top;
        for (int64_t e = 0; e < E; e++) sum += (p[e] = exp(x[e] - top));
        for (int64_t e = 0; e < E; e++) p[e] /= sum;
        ref_moe_keep_groups(keep, p, per, groups, topk_groups, 1);
        int32_t *ix = idx + t * k;
        ref_moe_choose(ix, p, p, keep, per, E, k);
        for (int64_t j = 0; j < k; j++) weight[t * k + j] = p[ix[j]] * scale;
    }
}
/* dlogits (N,E) += d(sum dweight * weight)/d logits, for the choices idx made */
REF void ref_moe_route_backward(double *dlogits, const double *dweight, const double *probs, const int32_t *idx,
                                int64_t N, int64_t E, int64_t k, int normalize) {
    for (int64_t t = 0; t < N; t++) {
        const double *p = probs + t * E, *dw = dweight + t * k;
        const int32_t *ix = idx + t * k;
        double S = 0, dp[1024] = {0}, pd = 0; /* dp: d loss / d p_e; E <= 1024 */
        for (int64_t j = 0; j < k; j++) S += p[ix[j]];
        for (int64_t j = 0; j < k; j++) /* weight_j = p_j / S with S the chosen p's sum: d/dp_i = (delta_ij - w_j) / S */
            for (int64_t i = 0; i < k; i++)
                dp[ix[i]] += normalize ? dw[j] * ((i == j) - p[ix[j]] / S) / S : (i == j) * dw[j];
        for (int64_t e = 0; e < E; e++) pd += dp[e] * p[e];
        for (int64_t e = 0; e < E; e++) dlogits[t * E + e] += p[e] * (dp[e] - pd); /* softmax's backward */
    }
}
/* DeepSeek-V3's and GLM-4.5's routing: probs (N,E) = sigmoid(logits); each token's k choices by probs + bias (E)
   among the experts of its topk_groups groups of E / groups whose two best (by probs + bias) sum highest (ties: the
   lower group, the lower expert), in increasing order; weight (N,k), their probabilities (divided by their sum when
   normalize), times scale. Backward through the chosen probabilities: dlogits += dp p (1 - p) for them alone. */
REF void ref_moe_route_sigmoid_forward(int32_t *idx, double *weight, double *probs, const double *logits,
                                       const double *bias, int64_t N, int64_t E, int64_t k, int64_t groups,
                                       int64_t topk_groups, double scale, int normalize) {
    int64_t per = E / groups;
    for (int64_t t = 0; t < N; t++) {
        double *p = probs + t * E, c[1024], chosen;
        int keep[64];
        for (int64_t e = 0; e < E; e++) p[e] = 1.0 / (1.0 + exp(-logits[t * E + e])), c[e] = p[e] + bias[e];
        ref_moe_keep_groups(keep, c, per, groups, topk_groups, 0);
        int32_t *ix = idx + t * k;
        chosen = ref_moe_choose(ix, c, p, keep, per, E, k);
        for (int64_t j = 0; j < k; j++) weight[t * k + j] = p[ix[j]] / (normalize ? chosen : 1.0) * scale;
    }
}
REF void ref_moe_route_sigmoid_backward(double *dlogits, const double *dweight, const double *probs, const int32_t *idx,
                                        int64_t N, int64_t E, int64_t k, double scale, int normalize) {
    for (int64_t t = 0; t < N; t++) {
        const double *p = probs + t * E, *dw = dweight + t * k;
        const int32_t *ix = idx + t * k;
        double S = 0, dp[1024] = {0};
        for (int64_t j = 0; j < k; j++) S += p[ix[j]];
        for (int64_t j = 0; j < k; j++)
            for (int64_t i = 0; i < k; i++)
                dp[ix[i]] += scale * (normalize ? dw[j] * ((i == j) - p[ix[j]] / S) / S : (i == j) * dw[j]);
        for (int64_t j = 0; j < k; j++) dlogits[t * E + ix[j]] += dp[ix[j]] * p[ix[j]] * (1 - p[ix[j]]);
    }
}
/* The load-balancing loss's part through the probabilities: sums (E) = each expert's probability summed over the
   tokens; backward: dlogits (N,E) += d(sum_e dsums_e * sums_e) / d logits, softmax's backward of dsums on each row */
REF void ref_moe_prob_sums(double *sums, const double *probs, int64_t N, int64_t E) {
    for (int64_t e = 0; e < E; e++) sums[e] = 0;
    for (int64_t t = 0; t < N; t++)
        for (int64_t e = 0; e < E; e++) sums[e] += probs[t * E + e];
}
REF void ref_moe_balance_backward(double *dlogits, const double *probs, const double *dsums, int64_t N, int64_t E) {
    for (int64_t t = 0; t < N; t++) {
        const double *p = probs + t * E;
        double pd = 0;
        for (int64_t e = 0; e < E; e++) pd += p[e] * dsums[e];
        for (int64_t e = 0; e < E; e++) dlogits[t * E + e] += p[e] * (dsums[e] - pd);
    }
}
/* order, where (n = N*k), counts (E): the choices grouped by expert, each expert's in token order */
REF void ref_moe_sort(int32_t *order, int32_t *where, int32_t *counts, const int32_t *idx, int64_t n, int64_t E) {
    int64_t r = 0;
    for (int64_t e = 0; e < E; e++) {
        counts[e] = 0;
        for (int64_t i = 0; i < n; i++)
            if (idx[i] == e) order[r] = (int32_t)i, where[i] = (int32_t)r, r++, counts[e]++;
    }
}
/* out (N,C) = sum_j weight[t,j] * ys[where[t*k+j]]; backward: dys += weight * dout, dweight += dout . ys */
REF void ref_moe_combine_forward(double *out, const double *ys, const double *weight, const int32_t *where,
                                 int64_t N, int64_t C, int64_t k) {
    for (int64_t t = 0; t < N; t++)
        for (int64_t c = 0; c < C; c++) {
            double acc = 0;
            for (int64_t j = 0; j < k; j++) acc += weight[t * k + j] * ys[where[t * k + j] * C + c];
            out[t * C + c] = acc;
        }
}
REF void ref_moe_combine_backward(double *dys, double *dweight, const double *dout, const double *ys,
                                  const double *weight, const int32_t *where, int64_t N, int64_t C, int64_t k) {
    for (int64_t t = 0; t < N; t++)
        for (int64_t j = 0; j < k; j++) {
            int64_t r = where[t * k + j];
            for (int64_t c = 0; c < C; c++) {
                dys[r * C + c] += weight[t * k + j] * dout[t * C + c];
                dweight[t * k + j] += dout[t * C + c] * ys[r * C + c];
            }
        }
}

/* out (N,C) += sigmoid(gate (N)) * y (N,C); backward: dy += sigmoid(gate) * dout, dgate += sigmoid' * dout . y */
REF void ref_gated_add_forward(double *out, const double *y, const double *gate, int64_t N, int64_t C) {
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++) out[n * C + c] += y[n * C + c] / (1.0 + exp(-gate[n]));
}
REF void ref_gated_add_backward(double *dy, double *dgate, const double *dout, const double *y, const double *gate,
                                int64_t N, int64_t C) {
    for (int64_t n = 0; n < N; n++) {
        double sg = 1.0 / (1.0 + exp(-gate[n]));
        for (int64_t c = 0; c < C; c++) {
            dy[n * C + c] += sg * dout[n * C + c];
            dgate[n] += sg * (1.0 - sg) * dout[n * C + c] * y[n * C + c];
        }
    }
}

/* a score scaled and, with cap > 0, capped: cap * tanh(s / cap) */
REF double ref_attn_score(double dot, double scale, double cap) {
    double s = dot * scale;
    return cap > 0 ? cap * tanh(s / cap) : s;
}

/* First key query t of batch b may see: its document's first, or with window > 0 at most window keys back. */
REF int64_t ref_attn_first(const int32_t *starts, int64_t b, int64_t t, int64_t T, int64_t window) {
    int64_t s = starts ? (int64_t)starts[b * T + t] : 0;
    return window > 0 && t - window + 1 > s ? t - window + 1 : s;
}

/* q (B,T,NH,HD), k, v (B,T,NKV,HD), starts (B,T) or NULL -> out (B,T,NH,HD), lse (B,NH,T) (may be
   NULL). Query head h reads key/value head h / (NH/NKV); query t sees keys [starts[t], t]; scores
   are scaled by 1/sqrt(HD); lse is the natural log-sum-exp of the scaled scores. z (B,NH,T,T) or NULL:
   dropout's factors, probability (b, h, t, j) times z[((b NH + h) T + t) T + j] before it weighs v. */
/* sinks (NH) or NULL: a logit per head in every row's softmax, with no value (gpt-oss) */
REF void ref_attention_sink_forward(double *out, double *lse, const double *q, const double *k,
                                    const double *v, const int32_t *starts, int64_t B, int64_t T,
                                    int64_t NH, int64_t NKV, int64_t HD, double scale, double cap,
                                    int64_t window, const double *z, const double *sinks) {
    if (scale == 0) scale = 1.0 / sqrt((double)HD);
    int64_t rep = NH / NKV;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < NH; h++)
            for (int64_t t = 0; t < T; t++) {
                const double *qr = q + ((b * T + t) * NH + h) * HD;
                int64_t kh = h / rep, j0 = ref_attn_first(starts, b, t, T, window);
                double mx = -INFINITY;
                for (int64_t j = j0; j <= t; j++) {
                    const double *kr = k + ((b * T + j) * NKV + kh) * HD;
                    double sc = 0;
                    for (int64_t d = 0; d < HD; d++) sc += qr[d] * kr[d];
                    sc = ref_attn_score(sc, scale, cap);
                    if (sc > mx) mx = sc;
                }
                if (sinks && sinks[h] > mx) mx = sinks[h];
                double sum = sinks ? exp(sinks[h] - mx) : 0;
                double *o = out + ((b * T + t) * NH + h) * HD;
                for (int64_t d = 0; d < HD; d++) o[d] = 0;
                for (int64_t j = j0; j <= t; j++) {
                    const double *kr = k + ((b * T + j) * NKV + kh) * HD;
                    const double *vr = v + ((b * T + j) * NKV + kh) * HD;
                    double sc = 0;
                    for (int64_t d = 0; d < HD; d++) sc += qr[d] * kr[d];
                    double p = exp(ref_attn_score(sc, scale, cap) - mx);
                    sum += p;
                    if (z) p *= z[((b * NH + h) * T + t) * T + j];
                    for (int64_t d = 0; d < HD; d++) o[d] += p * vr[d];
                }
                for (int64_t d = 0; d < HD; d++) o[d] /= sum;
                if (lse) lse[(b * NH + h) * T + t] = mx + log(sum);
            }
}
REF void ref_attention_drop_forward(double *out, double *lse, const double *q, const double *k,
                                    const double *v, const int32_t *starts, int64_t B, int64_t T,
                                    int64_t NH, int64_t NKV, int64_t HD, double scale, double cap,
                                    int64_t window, const double *z) {
    ref_attention_sink_forward(out, lse, q, k, v, starts, B, T, NH, NKV, HD, scale, cap, window, z, NULL);
}
REF void ref_attention_ex_forward(double *out, double *lse, const double *q, const double *k,
                                  const double *v, const int32_t *starts, int64_t B, int64_t T,
                                  int64_t NH, int64_t NKV, int64_t HD, double scale, double cap,
                                  int64_t window) {
    ref_attention_drop_forward(out, lse, q, k, v, starts, B, T, NH, NKV, HD, scale, cap, window, NULL);
}
REF void ref_attention_forward(double *out, double *lse, const double *q, const double *k,
                               const double *v, const int32_t *starts, int64_t B, int64_t T,
                               int64_t NH, int64_t NKV, int64_t HD) {
    ref_attention_ex_forward(out, lse, q, k, v, starts, B, T, NH, NKV, HD, 0, 0, 0);
}

/* dq (B,T,NH,HD), dk, dv (B,T,NKV,HD) += gradients of sum(dout * out); recomputes the softmax. With sinks,
   dsinks (NH) += theirs. */
REF void ref_attention_sink_backward(double *dq, double *dk, double *dv, double *dsinks, const double *dout,
                                     const double *q, const double *k, const double *v,
                                     const int32_t *starts, int64_t B, int64_t T, int64_t NH,
                                     int64_t NKV, int64_t HD, double scale, double cap, int64_t window,
                                     const double *z, const double *sinks) {
    if (scale == 0) scale = 1.0 / sqrt((double)HD);
    int64_t rep = NH / NKV;
    double *p = (double *)malloc(sizeof(double) * (size_t)T);
    double *dp = (double *)malloc(sizeof(double) * (size_t)T);
    double *dc = (double *)malloc(sizeof(double) * (size_t)T); /* d capped / d scaled score */
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < NH; h++)
            for (int64_t t = 0; t < T; t++) {
                const double *qr = q + ((b * T + t) * NH + h) * HD;
                const double *dy = dout + ((b * T + t) * NH + h) * HD;
                int64_t kh = h / rep, j0 = ref_attn_first(starts, b, t, T, window);
                double mx = -INFINITY, sum = 0, dsum = 0;
                for (int64_t j = j0; j <= t; j++) {
                    const double *kr = k + ((b * T + j) * NKV + kh) * HD;
                    double sc = 0;
                    for (int64_t d = 0; d < HD; d++) sc += qr[d] * kr[d];
                    p[j] = ref_attn_score(sc, scale, cap);
                    dc[j] = cap > 0 ? 1.0 - (p[j] / cap) * (p[j] / cap) : 1.0;
                    if (p[j] > mx) mx = p[j];
                }
                if (sinks && sinks[h] > mx) mx = sinks[h];
                if (sinks) sum = exp(sinks[h] - mx);
                for (int64_t j = j0; j <= t; j++) sum += (p[j] = exp(p[j] - mx));
                const double *zr = z ? z + ((b * NH + h) * T + t) * T : NULL;
                for (int64_t j = j0; j <= t; j++) {
                    const double *vr = v + ((b * T + j) * NKV + kh) * HD;
                    p[j] /= sum;
                    dp[j] = 0;
                    for (int64_t d = 0; d < HD; d++) dp[j] += dy[d] * vr[d];
                    if (zr) dp[j] *= zr[j]; /* d out / d p_j: z_j v_j */
                    dsum += p[j] * dp[j];
                }
                /* softmax backward: dscore_j = p_j (dp_j - sum_i p_i dp_i), the sink's dp 0 */
                if (sinks && dsinks) dsinks[h] -= exp(sinks[h] - mx) / sum * dsum;
                for (int64_t j = j0; j <= t; j++) {
                    double ds = p[j] * (dp[j] - dsum) * dc[j] * scale, pz = zr ? p[j] * zr[j] : p[j];
                    const double *kr = k + ((b * T + j) * NKV + kh) * HD;
                    double *dkr = dk + ((b * T + j) * NKV + kh) * HD;
                    double *dvr = dv + ((b * T + j) * NKV + kh) * HD;
                    double *dqr = dq + ((b * T + t) * NH + h) * HD;
                    for (int64_t d = 0; d < HD; d++) {
                        dqr[d] += ds * kr[d];
                        dkr[d] += ds * qr[d];
                        dvr[d] += pz * dy[d];
                    }
                }
            }
    free(p);
    free(dp);
    free(dc);
}
REF void ref_attention_drop_backward(double *dq, double *dk, double *dv, const double *dout,
                                     const double *q, const double *k, const double *v,
                                     const int32_t *starts, int64_t B, int64_t T, int64_t NH,
                                     int64_t NKV, int64_t HD, double scale, double cap, int64_t window,
                                     const double *z) {
    ref_attention_sink_backward(dq, dk, dv, NULL, dout, q, k, v, starts, B, T, NH, NKV, HD, scale, cap, window, z, NULL);
}
REF void ref_attention_ex_backward(double *dq, double *dk, double *dv, const double *dout,
                                   const double *q, const double *k, const double *v,
                                   const int32_t *starts, int64_t B, int64_t T, int64_t NH,
                                   int64_t NKV, int64_t HD, double scale, double cap, int64_t window) {
    ref_attention_drop_backward(dq, dk, dv, dout, q, k, v, starts, B, T, NH, NKV, HD, scale, cap, window, NULL);
}
REF void ref_attention_backward(double *dq, double *dk, double *dv, const double *dout,
                                const double *q, const double *k, const double *v,
                                const int32_t *starts, int64_t B, int64_t T, int64_t NH,
                                int64_t NKV, int64_t HD) {
    ref_attention_ex_backward(dq, dk, dv, dout, q, k, v, starts, B, T, NH, NKV, HD, 0, 0, 0);
}

/* logits (N,Vp), only columns [0, vocab) real; targets (N) -> losses (N) = -log softmax[target] (0 for
   ignore_index rows). dlogits (N,Vp) or NULL is written (not accumulated): (softmax - onehot) *
   dloss[n], 0 in padding columns and ignored rows. dloss (N) per row, so finite differences can check
   it with a random weighting; zt's kernel takes one scalar. */
/* with label smoothing e (transformers' LabelSmoother, per token): (1 - e) (lse - x_t) + e (lse - mean_c x_c) */
REF void ref_crossentropy_smoothed(double *losses, double *dlogits, const double *logits,
                                   const int32_t *targets, const double *dloss, int64_t N, int64_t Vp,
                                   int64_t vocab, int ignore_index, double cap, double e) {
    double *xc = (double *)malloc(sizeof(double) * (size_t)Vp);
    for (int64_t n = 0; n < N; n++) {
        const double *x = xc; /* the logits through the cap (cap > 0: cap * tanh(x / cap)) */
        for (int64_t c = 0; c < Vp; c++) xc[c] = cap > 0 ? cap * tanh(logits[n * Vp + c] / cap) : logits[n * Vp + c];
        double *dx = dlogits ? dlogits + n * Vp : NULL;
        if (dx)
            for (int64_t c = 0; c < Vp; c++) dx[c] = 0;
        if (targets[n] == ignore_index) {
            losses[n] = 0;
            continue;
        }
        double mx = -INFINITY, sum = 0;
        for (int64_t c = 0; c < vocab; c++)
            if (x[c] > mx) mx = x[c];
        for (int64_t c = 0; c < vocab; c++) sum += exp(x[c] - mx);
        double lse = mx + log(sum), mean = 0;
        for (int64_t c = 0; c < vocab; c++) mean += x[c] / (double)vocab;
        losses[n] = (1 - e) * (lse - x[targets[n]]) + e * (lse - mean);
        if (dx)
            for (int64_t c = 0; c < vocab; c++)
                dx[c] = (exp(x[c] - lse) - (c == targets[n] ? 1.0 - e : 0.0) - e / (double)vocab) * dloss[n] *
                        (cap > 0 ? 1.0 - (x[c] / cap) * (x[c] / cap) : 1.0);
    }
    free(xc);
}
REF void ref_crossentropy_capped(double *losses, double *dlogits, const double *logits,
                                 const int32_t *targets, const double *dloss, int64_t N, int64_t Vp,
                                 int64_t vocab, int ignore_index, double cap) {
    ref_crossentropy_smoothed(losses, dlogits, logits, targets, dloss, N, Vp, vocab, ignore_index, cap, 0);
}
REF void ref_crossentropy(double *losses, double *dlogits, const double *logits,
                          const int32_t *targets, const double *dloss, int64_t N, int64_t Vp,
                          int64_t vocab, int ignore_index) {
    ref_crossentropy_capped(losses, dlogits, logits, targets, dloss, N, Vp, vocab, ignore_index, 0);
}

/* The output layer and loss: logits = hidden (N,C) @ weight (Vp,C)^T, then ref_crossentropy.
   dhidden (N,C) and dweight (Vp,C) += (either may be NULL); dloss (N) per row. */
REF void ref_output_loss_capped(double *losses, double *dhidden, double *dweight, const double *hidden,
                                const double *weight, const int32_t *targets, const double *dloss,
                                int64_t N, int64_t C, int64_t Vp, int64_t vocab, int ignore_index, double cap) {
    double *logits = (double *)calloc((size_t)(N * Vp), sizeof(double)); /* zeroed: gcc -O3 cannot see it written */
    double *dlogits = (double *)malloc(sizeof(double) * (size_t)(N * Vp));
    ref_matmul_forward(logits, hidden, weight, NULL, N, C, Vp);
    int backward = dhidden || dweight;
    ref_crossentropy_capped(losses, backward ? dlogits : NULL, logits, targets, dloss, N, Vp, vocab,
                            ignore_index, cap);
    if (backward)
        ref_matmul_backward(dhidden, dweight, NULL, dlogits, hidden, weight, N, C, Vp);
    free(logits);
    free(dlogits);
}
REF void ref_output_loss(double *losses, double *dhidden, double *dweight, const double *hidden,
                         const double *weight, const int32_t *targets, const double *dloss,
                         int64_t N, int64_t C, int64_t Vp, int64_t vocab, int ignore_index) {
    ref_output_loss_capped(losses, dhidden, dweight, hidden, weight, targets, dloss, N, C, Vp, vocab, ignore_index, 0);
}

/* One AdamW step (PyTorch's formula), in double: p *= 1 - lr wd; m = b1 m + (1-b1) g;
   v = b2 v + (1-b2) g^2; p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps), g = grad * scale.
   With l2, torch.optim.Adam's weight decay instead: g += wd p, and p is not decayed. */
REF void ref_adamw(double *p, double *m, double *v, const double *grad, int64_t n, double lr,
                   double b1, double b2, double eps, double wd, double grad_scale, int64_t step, int l2) {
    double bc1 = 1.0 - pow(b1, (double)step), bc2 = 1.0 - pow(b2, (double)step);
    for (int64_t i = 0; i < n; i++) {
        double g = grad[i] * grad_scale;
        if (l2) g += wd * p[i];
        else p[i] *= 1.0 - lr * wd;
        m[i] = b1 * m[i] + (1.0 - b1) * g;
        v[i] = b2 * v[i] + (1.0 - b2) * g * g;
        p[i] -= lr / bc1 * m[i] / (sqrt(v[i]) / sqrt(bc2) + eps);
    }
}

/* One Lion step (Chen et al. 2023), in double: c = b1 m + (1-b1) g; p = p (1 - lr wd) - lr sign(c), sign(0) = 0;
   m = b2 m + (1-b2) g, g = grad * scale. */
REF void ref_lion(double *p, double *m, const double *grad, int64_t n, double lr, double b1, double b2, double wd,
                  double grad_scale) {
    for (int64_t i = 0; i < n; i++) {
        double g = grad[i] * grad_scale, c = b1 * m[i] + (1.0 - b1) * g;
        p[i] = p[i] * (1.0 - lr * wd) - lr * (double)((c > 0) - (c < 0));
        m[i] = b2 * m[i] + (1.0 - b2) * g;
    }
}

/* One Adagrad step (torch.optim.Adagrad), in double: g = grad * scale + wd p; sum += g^2;
   p -= lr / (1 + (step - 1) lr_decay) * g / (sqrt(sum) + eps). */
REF void ref_adagrad(double *p, double *sum, const double *grad, int64_t n, double lr, double lr_decay, double eps,
                     double wd, double grad_scale, int64_t step) {
    double clr = lr / (1.0 + (double)(step - 1) * lr_decay);
    for (int64_t i = 0; i < n; i++) {
        double g = grad[i] * grad_scale + wd * p[i];
        sum[i] += g * g;
        p[i] -= clr * g / (sqrt(sum[i]) + eps);
    }
}

REF double ref_sumsq(const double *x, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += x[i] * x[i];
    return s;
}

/* Round-to-nearest-even f32 -> bf16 bits, written independently of zt's to check zt's cast. */
REF uint16_t ref_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
REF float ref_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Round-to-nearest-even f32 -> f16 bits, overflow to infinity, subnormals kept. */
REF uint16_t ref_f32_to_f16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); /* quiet NaN */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 (inf included) -> inf */
    if (a < 0x38800000u) {                                   /* below 2^-14: f16 subnormal or 0 */
        int e = (int)(a >> 23);
        if (e < 102) return sign;                            /* below 2^-25: rounds to zero */
        uint32_t m = (a & 0x7fffffu) | 0x800000u;            /* value = m * 2^(e-150) */
        int shift = 126 - e;                                 /* in units of 2^-24 */
        uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1u))) q++;
        return (uint16_t)(sign | q);
    }
    uint32_t r = a - (112u << 23);                           /* rebias the exponent 127 -> 15 */
    r += 0xfffu + ((r >> 13) & 1u);
    return (uint16_t)(sign | (r >> 13));
}
REF float ref_f16_to_f32(uint16_t h) {
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v;
    if (e == 0) v = ldexp((double)m, -24);
    else if (e == 31) v = m ? NAN : INFINITY;
    else v = ldexp((double)(1024 + m), e - 25);
    return (float)((h & 0x8000) ? -v : v);
}

#endif
