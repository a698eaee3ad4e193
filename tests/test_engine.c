/* tests/test_engine.c - the engine: token weighting across micro-batches, activation checkpointing,
   gradients against finite differences, a custom block, learning, and errors in configs and flags. */
#include "test.h"
#include <setjmp.h>
#include <unistd.h>

/* GPT-2 with transformers' default dropouts (0.1 on the embeddings, the residual branches and the attention) */
static const char *GPT2_JSON =
    "{\"model_type\": \"gpt2\", \"n_layer\": 2, \"n_head\": 4, \"n_embd\": 32, \"n_positions\": 32,"
    " \"vocab_size\": 61}";
/* ... and without: zt_eval's loss is then training's (finite differences) */
static const char *GPT2_NODROP_JSON =
    "{\"model_type\": \"gpt2\", \"n_layer\": 2, \"n_head\": 4, \"n_embd\": 32, \"n_positions\": 32,"
    " \"vocab_size\": 61, \"resid_pdrop\": 0.0, \"embd_pdrop\": 0, \"attn_pdrop\": 0.0}";
/* Phi-3 with dropout on the residual branches and the attention (grouped heads) */
static const char *PHI3_DROP_JSON =
    "{\"model_type\": \"phi3\", \"num_hidden_layers\": 2, \"num_attention_heads\": 4,"
    " \"num_key_value_heads\": 2, \"hidden_size\": 32, \"intermediate_size\": 48, \"max_position_embeddings\": 32,"
    " \"vocab_size\": 61, \"resid_pdrop\": 0.2, \"attention_dropout\": 0.3, \"embd_pdrop\": 0.5}";
static const char *LLAMA_JSON =
    "{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"num_attention_heads\": 4,"
    " \"num_key_value_heads\": 2, \"hidden_size\": 32, \"intermediate_size\": 48,"
    " \"max_position_embeddings\": 32, \"vocab_size\": 61, \"rms_norm_eps\": 1e-5, \"tie_word_embeddings\": true}";

/* Qwen3-MoE: 8 experts of 24, 2 per token, layer 1 dense */
static const char *MOE_JSON =
    "{\"model_type\": \"qwen3_moe\", \"num_hidden_layers\": 2, \"num_attention_heads\": 4,"
    " \"num_key_value_heads\": 2, \"hidden_size\": 32, \"intermediate_size\": 48, \"head_dim\": 8,"
    " \"num_experts\": 8, \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 24, \"mlp_only_layers\": [1],"
    " \"max_position_embeddings\": 32, \"vocab_size\": 61, \"rms_norm_eps\": 1e-5, \"tie_word_embeddings\": true}";
/* Mixtral: 4 experts, 2 per token, with the routers' load-balancing loss */
static const char *MOE_BALANCE_JSON =
    "{\"model_type\": \"mixtral\", \"num_hidden_layers\": 2, \"num_attention_heads\": 4,"
    " \"num_key_value_heads\": 2, \"hidden_size\": 32, \"intermediate_size\": 24, \"num_local_experts\": 4,"
    " \"output_router_logits\": true, \"router_aux_loss_coef\": 0.05,"
    " \"max_position_embeddings\": 32, \"vocab_size\": 61, \"rms_norm_eps\": 1e-5}";

static zt_model_config config_of(const char *json) {
    zt_model_config c;
    zt_result r = zt_model_config_parse(&c, json, strlen(json), "test config");
    if (r != ZT_OK) zt_fatal("%s", zt_last_error());
    return c;
}

static zt_options small_options(int64_t micro, int64_t T) {
    zt_options o = zt_options_default();
    o.micro_batch = micro;
    o.seq_len = T;
    o.threads = 2;
    o.lr = 1e-3f;
    o.max_steps = 100;
    o.schedule = ZT_SCHED_CONSTANT;
    o.weight_decay = 0.1f;
    return o;
}

static zt_engine *engine_for(const zt_model_config *c, const zt_options *o) {
    zt_model_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.config = c;
    zt_engine *e = NULL;
    if (zt_init_options(&e, &spec, o) != ZT_OK) zt_fatal("%s", zt_last_error());
    return e;
}

static void fill_tokens(int32_t *tok, int64_t n, uint32_t seed, int vocab) {
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        tok[i] = (int32_t)((seed >> 8) % (uint32_t)vocab);
    }
}

/* 4 rows in one micro-batch or in four: the same step, because gradients are weighted by tokens */
TEST(engine_token_weighting_across_micro_batches) {
    zt_model_config c = config_of(GPT2_JSON);
    enum { T = 16 };
    int32_t tok[4 * T];
    uint8_t mask[4 * T];
    fill_tokens(tok, 4 * T, 7, 61);
    for (int i = 0; i < 4 * T; i++) mask[i] = (uint8_t)((i / T) == 2 ? i % T < 3 : 1); /* row 2: 3 tokens */
    zt_options o1 = small_options(4, T), o4 = small_options(1, T);
    zt_engine *one = engine_for(&c, &o1), *four = engine_for(&c, &o4);
    float l1 = zt_forward_backward(one, tok, NULL, mask, 4);
    double sum = 0;
    for (int r = 0; r < 4; r++) sum += zt_forward_backward(four, tok + r * T, NULL, mask + r * T, 1);
    (void)sum;
    int64_t n = test_read_params(one, NULL, 0, 0);
    float *g1 = (float *)malloc((size_t)n * 4), *g4 = (float *)malloc((size_t)n * 4);
    test_read_params(one, g1, n, 1);
    test_read_params(four, g4, n, 1);
    double worst = 0, scale = 0;
    for (int64_t i = 0; i < n; i++) {
        worst = fmax(worst, fabs((double)g1[i] - g4[i]));
        scale = fmax(scale, fabs((double)g1[i]));
    }
    zt_step_info s1 = zt_step(one), s4 = zt_step(four);
    CHECK_NEAR(s1.loss, l1, 1e-6);
    CHECK_NEAR(s4.loss, s1.loss, 1e-5); /* token-weighted means of the same tokens */
    CHECK_EQ_INT(s1.tokens, s4.tokens);
    CHECK_NEAR(s4.grad_norm, s1.grad_norm, 1e-5 * s1.grad_norm);
    test_read_params(one, g1, n, 0);
    test_read_params(four, g4, n, 0);
    double pw = 0;
    for (int64_t i = 0; i < n; i++) pw = fmax(pw, fabs((double)g1[i] - g4[i]));
    free(g1);
    free(g4);
    zt_shutdown(one);
    zt_shutdown(four);
    /* f32 sums in another order: differences of a few ulps of the largest gradient */
    CHECK_MSG(worst <= 1e-5 * scale, "gradients differ by %g (largest %g)", worst, scale);
    CHECK_MSG(pw <= 1e-6, "parameters after one step differ by %g", pw);
}

/* the routers' balance loss over a short micro-batch sees its rows alone, as transformers' load_balancing_loss_func
   sees the batch's rows: one row in a micro-batch of 4 gives the loss and gradients of a micro-batch of 1 */
TEST(engine_balance_loss_ignores_filler_rows) {
    zt_model_config c = config_of(MOE_BALANCE_JSON);
    enum { T = 16 };
    int32_t tok[T];
    fill_tokens(tok, T, 11, 61);
    zt_options o4 = small_options(4, T), o1 = small_options(1, T);
    o4.threads = o1.threads = 1;
    zt_engine *four = engine_for(&c, &o4), *one = engine_for(&c, &o1);
    float l4 = zt_forward_backward(four, tok, NULL, NULL, 1), l1 = zt_forward_backward(one, tok, NULL, NULL, 1);
    int64_t n = test_read_params(one, NULL, 0, 0);
    float *g1 = (float *)malloc((size_t)n * 4), *g4 = (float *)malloc((size_t)n * 4);
    test_read_params(one, g1, n, 1);
    test_read_params(four, g4, n, 1);
    double worst = 0, scale = 0;
    for (int64_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)g1[i] - g4[i])), scale = fmax(scale, fabs((double)g1[i]));
    free(g1);
    free(g4);
    zt_shutdown(one);
    zt_shutdown(four);
    CHECK_MSG(fabsf(l4 - l1) <= 1e-6f * fabsf(l1), "loss %.9g with filler rows, %.9g without", (double)l4, (double)l1);
    CHECK_MSG(worst <= 1e-5 * scale, "gradients differ by %g (largest %g)", worst, scale);
}

/* recomputing each block in backward changes memory, never results */
static void checkpointing_is_bitwise(const char *json, zt_precision prec) {
    zt_model_config c = config_of(json);
    enum { T = 16, B = 2 };
    zt_options a = small_options(B, T), b = small_options(B, T);
    a.precision = b.precision = prec;
    b.gradient_checkpointing = 1;
    zt_engine *plain = engine_for(&c, &a), *ckpt = engine_for(&c, &b);
    int32_t tok[B * T];
    for (int step = 0; step < 3; step++) {
        fill_tokens(tok, B * T, (uint32_t)step + 1, 61);
        float la = zt_forward_backward(plain, tok, NULL, NULL, B), lb = zt_forward_backward(ckpt, tok, NULL, NULL, B);
        CHECK(memcmp(&la, &lb, 4) == 0);
        zt_step(plain);
        zt_step(ckpt);
    }
    int64_t n = test_read_params(plain, NULL, 0, 0);
    float *pa = (float *)malloc((size_t)n * 4), *pb = (float *)malloc((size_t)n * 4);
    test_read_params(plain, pa, n, 0);
    test_read_params(ckpt, pb, n, 0);
    int same = memcmp(pa, pb, (size_t)n * 4) == 0;
    free(pa);
    free(pb);
    zt_shutdown(plain);
    zt_shutdown(ckpt);
    CHECK_MSG(same, "parameters differ with activation checkpointing");
}

TEST(engine_checkpointing_is_bitwise_gpt2) { checkpointing_is_bitwise(GPT2_JSON, ZT_PRECISION_FP32); }
TEST(engine_checkpointing_is_bitwise_phi3_dropout_bf16) { checkpointing_is_bitwise(PHI3_DROP_JSON, ZT_PRECISION_BF16); }
TEST(engine_checkpointing_is_bitwise_llama_bf16) { checkpointing_is_bitwise(LLAMA_JSON, ZT_PRECISION_BF16); }
TEST(engine_checkpointing_is_bitwise_moe_bf16) { checkpointing_is_bitwise(MOE_JSON, ZT_PRECISION_BF16); }
TEST(engine_checkpointing_is_bitwise_moe_balance) { checkpointing_is_bitwise(MOE_BALANCE_JSON, ZT_PRECISION_FP32); }

/* the engine's gradient of the mean loss against central differences of zt_eval, in fp32 */
static void gradients_match_differences(const char *json) {
    zt_model_config c = config_of(json);
    enum { T = 8, B = 2 };
    zt_options o = small_options(B, T);
    zt_engine *e = engine_for(&c, &o);
    int32_t tok[B * T];
    fill_tokens(tok, B * T, 99, 61);
    zt_forward_backward(e, tok, NULL, NULL, B);
    int checked = 0;
    for (int i = 0; i < zt_param_count(e); i++) {
        zt_shape s;
        const char *name = zt_param_name(e, i, &s);
        if (!name) continue;
        int64_t k = 1;
        for (int d = 0; d < s.ndim; d++) k *= s.d[d];
        float *w = (float *)malloc((size_t)k * 4), *g = (float *)malloc((size_t)k * 4);
        CHECK(zt_param_get(e, name, w, k, 0) == ZT_OK);
        CHECK(zt_param_get(e, name, g, k, 1) == ZT_OK);
        /* the element with the largest gradient, and one more */
        int64_t big = 0;
        for (int64_t j = 1; j < k; j++) if (fabsf(g[j]) > fabsf(g[big])) big = j;
        int64_t picks[2] = {big, (big * 7 + 3) % k};
        for (int q = 0; q < 2; q++) {
            int64_t j = picks[q];
            float keep = w[j], h = 1e-2f;
            w[j] = keep + h;
            zt_param_set(e, name, w, k);
            float lp = zt_eval(e, tok, NULL, NULL, B, NULL, NULL);
            w[j] = keep - h;
            zt_param_set(e, name, w, k);
            float lm = zt_eval(e, tok, NULL, NULL, B, NULL, NULL);
            w[j] = keep;
            zt_param_set(e, name, w, k);
            double fd = ((double)lp - lm) / (2.0 * h);
            /* f32 losses differenced over 2h: about 1e-7 / 2e-2 of noise, plus curvature */
            CHECK_MSG(fabs(fd - g[j]) <= 2e-4 + 3e-2 * fabs(g[j]), "%s[%lld]: gradient %g, differences %g", name,
                      (long long)j, (double)g[j], fd);
            checked++;
        }
        free(w);
        free(g);
    }
    zt_shutdown(e);
    CHECK(checked > 20);
}

TEST(engine_gradients_match_finite_differences_gpt2) { gradients_match_differences(GPT2_NODROP_JSON); }
TEST(engine_gradients_match_finite_differences_llama) { gradients_match_differences(LLAMA_JSON); }
/* (no such test for an MoE model: a step of 1e-2 moves tokens between experts, where the loss jumps; its gradients
   are checked against transformers' in tests/test_models.c, and the routing's by differences in tests/test_ops.c) */

/* ---- a block of the user's own, between the built-in embedding and head ---- */

typedef struct mlp_config { int64_t C, H; } mlp_config;
typedef struct mlp_saved { zt_tensor h, a; } mlp_saved;
enum { MLP_W1, MLP_B1, MLP_W2 };

static void mlp_declare(zt_block_def *def, const void *config) {
    const mlp_config *c = (const mlp_config *)config;
    char name[64];
    snprintf(name, sizeof name, "mlp%d.fc1.weight", zt_block_def_index(def));
    zt_block_param(def, name, zt_shape2(c->H, c->C), ZT_PARAM_DECAY, ZT_INIT_NORMAL, 0.02f);
    snprintf(name, sizeof name, "mlp%d.fc1.bias", zt_block_def_index(def));
    zt_block_param(def, name, zt_shape1(c->H), 0, ZT_INIT_ZEROS, 0);
    snprintf(name, sizeof name, "mlp%d.fc2.weight", zt_block_def_index(def));
    zt_block_param(def, name, zt_shape2(c->C, c->H), ZT_PARAM_DECAY, ZT_INIT_NORMAL, 0.02f);
}

/* out = inp + fc2(gelu(fc1(inp))) */
static void mlp_forward(zt_block_ctx *ctx, zt_tensor out, zt_tensor inp) {
    const mlp_config *c = (const mlp_config *)ctx->config;
    mlp_saved *sv = (mlp_saved *)ctx->saved;
    int64_t N = zt_rows(inp);
    sv->h = zt_block_keep(ctx, ctx->act, zt_shape2(N, c->H));
    sv->a = zt_block_keep(ctx, ctx->act, zt_shape2(N, c->H));
    zt_matmul_forward(ctx->stream, sv->h, inp, ctx->param[MLP_W1], &ctx->param[MLP_B1]);
    zt_gelu_forward(ctx->stream, sv->a, sv->h);
    zt_tensor y = zt_block_temp(ctx, ctx->act, zt_shape2(N, c->C));
    zt_matmul_forward(ctx->stream, y, sv->a, ctx->param[MLP_W2], NULL);
    zt_add(ctx->stream, out, inp, y);
}

static void mlp_backward(zt_block_ctx *ctx, zt_tensor dinp, zt_tensor dout, zt_tensor inp) {
    const mlp_config *c = (const mlp_config *)ctx->config;
    mlp_saved *sv = (mlp_saved *)ctx->saved;
    int64_t N = zt_rows(inp);
    zt_tensor da = zt_block_temp(ctx, ctx->act, zt_shape2(N, c->H)), dh = zt_block_temp(ctx, ctx->act, zt_shape2(N, c->H));
    zt_fill(ctx->stream, da, 0.0f);
    zt_fill(ctx->stream, dh, 0.0f);
    zt_matmul_backward(ctx->stream, &da, &ctx->grad[MLP_W2], NULL, dout, sv->a, ctx->param[MLP_W2]);
    zt_gelu_backward(ctx->stream, dh, da, sv->h);
    zt_add(ctx->stream, dinp, dinp, dout); /* the residual path */
    zt_matmul_backward(ctx->stream, &dinp, &ctx->grad[MLP_W1], &ctx->grad[MLP_B1], dh, inp, ctx->param[MLP_W1]);
}

static const zt_block_type mlp_block = {"test.mlp", sizeof(mlp_saved), mlp_declare, mlp_forward, mlp_backward};

TEST(engine_trains_a_custom_block) {
    zt_model_config c = config_of(GPT2_NODROP_JSON);
    mlp_config mc = {32, 64};
    const zt_block_type *blocks[4] = {zt_gpt2_embedding_block(), &mlp_block, &mlp_block, zt_gpt2_head_block()};
    const void *configs[4] = {&c, &mc, &mc, &c};
    zt_model_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.n_blocks = 4;
    spec.blocks = blocks;
    spec.block_configs = configs;
    spec.hidden = 32;
    spec.vocab = 61;
    spec.max_seq = 32;
    zt_options o = small_options(4, 16);
    o.lr = 3e-3f;
    zt_engine *e = NULL;
    CHECK(zt_init_options(&e, &spec, &o) == ZT_OK);
    CHECK(zt_engine_model_config(e) == NULL);
    int32_t tok[4 * 16];
    float first = 0, last = 0;
    for (int step = 0; step < 40; step++) {
        for (int i = 0; i < 4 * 16; i++) tok[i] = (int32_t)((i * 5 + step) % 11); /* next token = this + 5 mod 11 */
        float l = zt_forward_backward(e, tok, NULL, NULL, 4);
        zt_step(e);
        if (step == 0) first = l;
        last = l;
    }
    zt_shutdown(e);
    CHECK_MSG(last < 0.5f * first, "loss went from %g to %g", first, last);
}

/* misuse of the engine gets one sentence: a model of one's own blocks with no width or a missing block (zt_init's
   error), a checkpoint between a step's micro-batches, sampling arguments out of range, and (the process stops,
   here caught) a step with no micro-batch, too many rows, and a bad token named where it is */
static jmp_buf misuse_jump;
static char misuse_message[1024];
static void misuse_fatal(const char *msg, void *user) {
    (void)user;
    snprintf(misuse_message, sizeof misuse_message, "%s", msg);
    longjmp(misuse_jump, 1);
}
TEST(engine_misuse_is_named) {
    zt_model_config c = config_of(GPT2_NODROP_JSON);
    mlp_config mc = {32, 64};
    const zt_block_type *blocks[4] = {zt_gpt2_embedding_block(), &mlp_block, NULL, zt_gpt2_head_block()};
    const void *configs[4] = {&c, &mc, &mc, &c};
    zt_model_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.n_blocks = 4, spec.blocks = blocks, spec.block_configs = configs, spec.vocab = 61, spec.max_seq = 32;
    zt_options o = small_options(2, 16);
    zt_engine *e = NULL;
    CHECK(zt_init_options(&e, &spec, &o) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "needs hidden, vocab and max_seq of 1 or more; found 0, 61 and 32");
    spec.hidden = 32;
    CHECK(zt_init_options(&e, &spec, &o) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "block 2 of 4 is NULL");
    blocks[2] = &mlp_block;
    CHECK_MSG(zt_init_options(&e, &spec, &o) == ZT_OK, "%s", zt_last_error());
    int32_t tok[2 * 16];
    for (int i = 0; i < 2 * 16; i++) tok[i] = i % 11;
    zt_forward_backward(e, tok, NULL, NULL, 2);
    CHECK(zt_save(e, "/tmp/zt_misuse_never_written", NULL) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "zt_save after 1 zt_forward_backward of step 1 and before its zt_step");
    CHECK(zt_load(e, "/tmp/zt_misuse_never_written", NULL) == ZT_ERROR_INVALID);
    CHECK(access("/tmp/zt_misuse_never_written", F_OK) != 0);
    zt_step(e);
    int32_t out[8];
    CHECK(zt_generate(e, tok, 2, out, 2, NAN, 0, 1.0f, 1) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "temperature nan");
    CHECK(zt_generate(e, tok, 2, out, 2, 1.0f, 0, -1.0f, 1) == ZT_ERROR_INVALID);
    CHECK(zt_generate(e, tok, 2, out, -3, 1.0f, 0, 1.0f, 1) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "n_new is -3");
    CHECK(zt_generate(e, tok, 2, out, 2, 0.0f, 0, 1.0f, 1) == ZT_OK);
    zt_set_fatal_handler(misuse_fatal, NULL);
    static const char *const want[3] = {"zt_step without a zt_forward_backward since the last step",
                                        "3 rows for a micro-batch of 2 (--per_device_train_batch_size): give 0 to 2 rows",
                                        "token 300 at row 0, position 5 is outside the vocabulary [0, 61)"};
    for (volatile int k = 0; k < 3; k++) {
        misuse_message[0] = 0;
        if (setjmp(misuse_jump) == 0) {
            if (k == 0) zt_step(e);
            if (k == 1) zt_forward_backward(e, tok, NULL, NULL, 3);
            if (k == 2) tok[5] = 300, zt_forward_backward(e, tok, NULL, NULL, 2);
        }
        CHECK_STR_CONTAINS(misuse_message, want[k]);
    }
    zt_set_fatal_handler(NULL, NULL);
    zt_shutdown(e);
}

/* ---- a block of many parameters (an MoE layer has hundreds), and one whose declare is not repeatable ---- */

enum { MANY = 300 };
static void many_declare(zt_block_def *def, const void *config) {
    (void)config;
    char name[64];
    for (int i = 0; i < MANY; i++) {
        snprintf(name, sizeof name, "many%d.bias.%d", zt_block_def_index(def), i);
        zt_block_param(def, name, zt_shape1(32), 0, ZT_INIT_ZEROS, 0);
    }
}
/* out = inp + the sum of every bias */
static void many_forward(zt_block_ctx *ctx, zt_tensor out, zt_tensor inp) {
    zt_copy(ctx->stream, out, inp);
    zt_tensor o2 = zt_view(out, 0, zt_shape2(zt_rows(out), 32));
    for (int i = 0; i < MANY; i++) {
        zt_tensor b = zt_view(ctx->param[i], 0, zt_shape2(1, 32));
        for (int64_t r = 0; r < zt_rows(o2); r++) zt_add(ctx->stream, zt_slice(o2, r, 1), zt_slice(o2, r, 1), b);
    }
}
static void many_backward(zt_block_ctx *ctx, zt_tensor dinp, zt_tensor dout, zt_tensor inp) {
    (void)inp;
    zt_add(ctx->stream, dinp, dinp, dout);
    for (int i = 0; i < MANY; i++) zt_sum_rows(ctx->stream, ctx->grad[i], zt_view(dout, 0, zt_shape2(zt_rows(dout), 32)));
}
static const zt_block_type many_block = {"test.many", 0, many_declare, many_forward, many_backward};

static int fickle_calls;
static void fickle_declare(zt_block_def *def, const void *config) { /* one more parameter each time */
    (void)config;
    for (int i = 0; i <= fickle_calls; i++) zt_block_param(def, NULL, zt_shape1(4), 0, ZT_INIT_ZEROS, 0);
    fickle_calls++;
}
static const zt_block_type fickle_block = {"test.fickle", 0, fickle_declare, many_forward, many_backward};

static zt_model_spec spec_of(const zt_block_type **blocks, const void **configs) {
    zt_model_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.n_blocks = 4;
    spec.blocks = blocks;
    spec.block_configs = configs;
    spec.hidden = 32;
    spec.vocab = 61;
    spec.max_seq = 32;
    return spec;
}

TEST(engine_takes_blocks_of_many_parameters) {
    zt_model_config c = config_of(GPT2_NODROP_JSON);
    const zt_block_type *blocks[4] = {zt_gpt2_embedding_block(), &many_block, &many_block, zt_gpt2_head_block()};
    const void *configs[4] = {&c, NULL, NULL, &c};
    zt_model_spec spec = spec_of(blocks, configs);
    zt_options o = small_options(2, 8);
    o.lr = 1e-2f;
    zt_engine *e = NULL;
    CHECK(zt_init_options(&e, &spec, &o) == ZT_OK);
    int32_t tok[2 * 8];
    for (int i = 0; i < 2 * 8; i++) tok[i] = (int32_t)(i % 7);
    float first = zt_forward_backward(e, tok, NULL, NULL, 2);
    zt_step(e);
    float second = zt_forward_backward(e, tok, NULL, NULL, 2);
    zt_shutdown(e);
    CHECK_MSG(isfinite(first) && second < first, "loss %g, then %g", first, second);

    const zt_block_type *fickle[4] = {zt_gpt2_embedding_block(), &fickle_block, &many_block, zt_gpt2_head_block()};
    spec = spec_of(fickle, configs);
    CHECK(zt_init_options(&e, &spec, &o) == ZT_ERROR_INVALID);
    CHECK_MSG(strstr(zt_last_error(), "declare must declare the same ones each time"), "%s", zt_last_error());
}

/* ---- a block that adds an auxiliary loss, w^2 / 2 of its one parameter, through zt_batch.aux and .shared ---- */

typedef struct penalty_shared { float w, dw; int forwards; } penalty_shared;
static void penalty_declare(zt_block_def *def, const void *config) {
    (void)config;
    zt_block_param(def, "penalty.w", zt_shape1(1), 0, ZT_INIT_ZEROS, 0);
}
static void penalty_forward(zt_block_ctx *ctx, zt_tensor out, zt_tensor inp) {
    penalty_shared *sh = (penalty_shared *)ctx->batch->shared;
    zt_copy(ctx->stream, out, inp);
    zt_copy(ctx->stream, zt_tensor_make(&sh->w, ZT_F32, ZT_HOST, zt_shape1(1)), ctx->param[0]);
    zt_stream_sync(ctx->stream);
    *ctx->batch->aux = 0.5f * sh->w * sh->w;
    sh->forwards++;
}
static void penalty_backward(zt_block_ctx *ctx, zt_tensor dinp, zt_tensor dout, zt_tensor inp) {
    (void)inp;
    const zt_batch *b = ctx->batch;
    penalty_shared *sh = (penalty_shared *)b->shared;
    zt_add(ctx->stream, dinp, dinp, dout);
    sh->dw = b->dloss * (float)b->counted * sh->w; /* d(total)/d(aux) times d(aux)/dw */
    zt_tensor d = zt_block_temp(ctx, ZT_F32, zt_shape1(1));
    zt_copy(ctx->stream, d, zt_tensor_make(&sh->dw, ZT_F32, ZT_HOST, zt_shape1(1)));
    zt_add(ctx->stream, ctx->grad[0], ctx->grad[0], d);
}
static const zt_block_type penalty_block = {"test.penalty", 0, penalty_declare, penalty_forward, penalty_backward};

TEST(engine_takes_an_auxiliary_loss_from_a_block) {
    zt_model_config c = config_of(GPT2_NODROP_JSON);
    const zt_block_type *blocks[4] = {zt_gpt2_embedding_block(), &many_block, &penalty_block, zt_gpt2_head_block()};
    const void *configs[4] = {&c, NULL, NULL, &c};
    zt_model_spec spec = spec_of(blocks, configs);
    spec.shared_bytes = sizeof(penalty_shared);
    zt_options o = small_options(1, 8);
    zt_engine *e = NULL;
    CHECK(zt_init_options(&e, &spec, &o) == ZT_OK);
    int32_t tok[2 * 8];
    uint8_t mask[2 * 8];
    for (int i = 0; i < 2 * 8; i++) tok[i] = (int32_t)(i % 7), mask[i] = i < 8 || i % 8 < 3; /* row 1: 3 tokens */
    float without = zt_eval(e, tok, NULL, mask, 1, NULL, NULL), w = 0.75f;
    CHECK(zt_param_set(e, "penalty.w", &w, 1) == ZT_OK);
    double sum;
    int64_t count;
    float with = zt_eval(e, tok, NULL, mask, 1, &sum, &count);
    CHECK_NEAR(with - without, 0.5 * 0.75 * 0.75, 1e-6); /* the mean loss, and the sum counts it per token */
    CHECK_NEAR(sum / (double)count, with, 1e-6);
    /* two micro-batches of 7 and 3 counted tokens: the penalty, the same in each, is the step's too */
    float l0 = zt_forward_backward(e, tok, NULL, mask, 1), l1 = zt_forward_backward(e, tok + 8, NULL, mask + 8, 1);
    float g = 0;
    CHECK(zt_param_get(e, "penalty.w", &g, 1, 1) == ZT_OK);
    CHECK_NEAR(g, 0.75, 1e-6);
    zt_step_info info = zt_step(e);
    CHECK_EQ_INT(info.tokens, 10);
    CHECK_NEAR(info.loss, (7.0 * l0 + 3.0 * l1) / 10.0, 1e-5);
    zt_shutdown(e);
}

/* a few hundred steps on a task with a rule to learn: each token determines the next */
TEST(engine_learns_a_sequence_rule) {
    zt_model_config c = config_of(LLAMA_JSON);
    enum { T = 32, B = 4 };
    zt_options o = small_options(B, T);
    o.lr = 3e-3f;
    o.max_steps = 200;
    o.schedule = ZT_SCHED_LINEAR;
    o.warmup_steps = 20;
    zt_engine *e = engine_for(&c, &o);
    int32_t tok[B * T];
    uint32_t seed = 5;
    float l = 0, first = 0;
    for (int step = 0; step < 200; step++) {
        for (int r = 0; r < B; r++) { /* a random start, then t -> (3t + 1) mod 61 */
            seed = seed * 1664525u + 1013904223u;
            tok[r * T] = (int32_t)((seed >> 8) % 61);
            for (int t = 1; t < T; t++) tok[r * T + t] = (tok[r * T + t - 1] * 3 + 1) % 61;
        }
        l = zt_forward_backward(e, tok, NULL, NULL, B);
        if (step == 0) first = l;
        zt_step(e);
    }
    int32_t prompt[1] = {10}, out[6], top1[6], nucleus[6];
    CHECK(zt_generate(e, prompt, 1, out, 5, 0.0f, 0, 1.0f, 1) == ZT_OK);
    /* top-k 1, and a tiny nucleus, sample the greedy token whatever the temperature */
    CHECK(zt_generate(e, prompt, 1, top1, 5, 1.5f, 1, 1.0f, 7) == ZT_OK);
    CHECK(zt_generate(e, prompt, 1, nucleus, 5, 1.0f, 0, 0.01f, 9) == ZT_OK);
    zt_shutdown(e);
    CHECK(memcmp(out, top1, sizeof out) == 0);
    CHECK(memcmp(out, nucleus, sizeof out) == 0);
    /* a row's first token is random: 1/32 of the tokens cost ln 61 = 4.1 at best, a floor of 0.13 */
    CHECK_MSG(first > 3.5f && l < 0.3f, "loss went from %g to %g after 200 steps", first, l);
    for (int i = 1; i < 6; i++) CHECK_MSG(out[i] == (out[i - 1] * 3 + 1) % 61, "sampled %d after %d", out[i], out[i - 1]);
}

/* ---- configs and flags that are wrong say which key and why ---- */

static void config_error(const char *json, const char *expect) {
    zt_model_config c;
    zt_result r = zt_model_config_parse(&c, json, strlen(json), "config.json");
    if (r == ZT_OK) {
        zt_test_fail(__FILE__, __LINE__, "accepted: %s", json);
        return;
    }
    if (!strstr(zt_last_error(), expect))
        zt_test_fail(__FILE__, __LINE__, "for %s: \"%s\" does not say \"%s\"", json, zt_last_error(), expect);
}

TEST(model_config_errors_name_the_key) {
    config_error("{\"model_type\": \"bert\"}", "\"model_type\" is \"bert\"");
    config_error("{\"n_layer\": 2}", "\"model_type\" is \"(missing)\"");
    config_error("{\"model_type\": \"gpt2\", \"n_layer\": 2, \"n_head\": 4, \"n_embd\": 32, \"n_positions\": 32}",
                 "\"vocab_size\" must be a positive integer");
    config_error("{\"model_type\": \"gpt2\", \"n_layer\": \"2\"}", "\"n_layer\" must be an integer, found \"2\"");
    config_error("{\"model_type\": \"gpt2\", \"n_layer\": 2.5}", "\"n_layer\" must be an integer");
    config_error("{\"model_type\": \"gpt2\", \"activation_function\": \"relu\"}", "\"activation_function\" is \"relu\"");
    config_error("{\"model_type\": \"gpt2\", \"scale_attn_by_inverse_layer_idx\": true}", "scale_attn_by_inverse_layer_idx");
    config_error("{\"model_type\": \"llama\", \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0}}",
                 "rope_scaling of type llama3 needs \"low_freq_factor\"");
    config_error("{\"model_type\": \"llama\", \"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 8.0, "
                 "\"original_max_position_embeddings\": 0}}", "original_max_position_embeddings must be 1 or more, found 0");
    config_error("{\"model_type\": \"phi3\", \"num_attention_heads\": 2, \"hidden_size\": 8, \"max_position_embeddings\": 64, "
                 "\"rope_scaling\": {\"type\": \"su\", \"short_factor\": [1, 1], \"long_factor\": [1, 2, 3]}}",
                 "of type longrope needs \"long_factor\", a list of 2 numbers");
    config_error("{\"model_type\": \"phi3\", \"rope_scaling\": {\"rope_type\": \"llama3\"}}",
                 "of type \"llama3\": Phi-3 takes default and longrope");
    config_error("{\"model_type\": \"qwen2\", \"rope_scaling\": {\"rope_type\": \"yarn\"}}",
                 "rope_scaling of type yarn needs \"factor\"");
    config_error("{\"model_type\": \"phi3\", \"num_attention_heads\": 2, \"hidden_size\": 8, \"max_position_embeddings\": 64, "
                 "\"rope_scaling\": {\"type\": \"longrope\", \"short_factor\": [1, 0], \"long_factor\": [1, 2]}}",
                 "rope_scaling.short_factor[1] must be a positive number, found 0");
    config_error("{\"model_type\": \"llama\", \"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 8.0, "
                 "\"original_max_position_embeddings\": 4096, \"beta_fast\": -1}}", "of type yarn needs factor > 0");
    config_error("{\"model_type\": \"llama\", \"rope_scaling\": {\"rope_type\": \"proportional\", \"factor\": 8.0}}",
                 "\"rope_scaling\" of type \"proportional\" is not implemented in zt (default, llama3, linear, dynamic, yarn "
                 "and longrope are)");
    config_error("{\"model_type\": \"llama\", \"rope_scaling\": {\"rope_type\": \"dynamic\"}}",
                 "rope_scaling of type dynamic needs \"factor\"");
    config_error("{\"model_type\": \"llama\", \"rope_scaling\": {\"type\": \"dynamic\", \"factor\": \"2\"}}",
                 "\"factor\" must be a number, found \"2\"");
    config_error("{\"model_type\": \"llama\", \"hidden_act\": \"gelu\"}", "\"hidden_act\" is \"gelu\"");
    config_error("{\"model_type\": \"llama\", \"num_hidden_layers\": 1, \"num_attention_heads\": 6, "
                 "\"num_key_value_heads\": 4, \"hidden_size\": 48, \"intermediate_size\": 8, "
                 "\"max_position_embeddings\": 8, \"vocab_size\": 8}", "not a multiple of num_key_value_heads");
    config_error("{\"model_type\": \"llama\", \"rope_parameters\": {\"rope_type\": \"default\", \"partial_rotary_factor\": 0.75}}",
                 "\"partial_rotary_factor\" is 0.75; zt rotates a part of a head for phi, phi3, glm, glm4, glm4_moe, minimax_m2, "
                 "stablelm and gpt_neox only, as transformers does (its llama rotates whole heads)");
    config_error("{\"model_type\": \"phi3\", \"num_attention_heads\": 2, \"hidden_size\": 20, \"partial_rotary_factor\": 0.3}",
                 "\"partial_rotary_factor\" 0.3 of a head of 10 rotates 3 dimensions; zt takes a factor in (0, 1] that "
                 "rotates an even number of them, at least 2");
    config_error("{\"model_type\": \"llama\", \"num_hidden_layers\": 1, \"num_attention_heads\": 2, \"hidden_size\": 8, "
                 "\"intermediate_size\": 8, \"max_position_embeddings\": 8, \"vocab_size\": 8, \"pad_token_id\": 8}",
                 "\"pad_token_id\" 8 is not a token of the vocabulary of 8");
    config_error("{\"model_type\": \"qwen2\", \"num_hidden_layers\": 2, \"layer_types\": [\"full_attention\", "
                 "\"chunked_attention\"], \"sliding_window\": 8, \"use_sliding_window\": true}",
                 "layer_types[1] is \"chunked_attention\"");
    /* MoE: router noise below 1 (Mixtral's: the Qwens' configs carry the key unused, as transformers leaves it); a
       coefficient of 0 or more; sizes within what the kernels take */
    for (int qwen = 0; qwen < 2; qwen++) {
        char json[512];
        zt_model_config moe;
        snprintf(json, sizeof json, "{\"model_type\": \"%s\", \"num_hidden_layers\": 1, "
                 "\"num_attention_heads\": 2, \"hidden_size\": 8, \"intermediate_size\": 8, "
                 "\"moe_intermediate_size\": 8, \"num_experts\": 4, \"num_experts_per_tok\": 2, "
                 "\"max_position_embeddings\": 8, \"vocab_size\": 8, \"router_jitter_noise\": 0.01}",
                 qwen ? "qwen3_moe" : "mixtral");
        CHECK_MSG(zt_model_config_parse(&moe, json, strlen(json), "config.json") == ZT_OK, "%s", zt_last_error());
        CHECK_MSG(moe.router_jitter == (qwen ? 0.0f : 0.01f), "%s: router_jitter %g", json, (double)moe.router_jitter);
    }
    /* Phi-3's original_max_position_embeddings is its config's own (4096 unless given), whatever its rope says */
    for (int top = 0; top < 2; top++) {
        char json[512];
        zt_model_config phi3;
        snprintf(json, sizeof json, "{\"model_type\": \"phi3\", \"num_hidden_layers\": 1, \"num_attention_heads\": "
                 "2, \"hidden_size\": 8, \"intermediate_size\": 8, \"max_position_embeddings\": 131072, \"vocab_size\": 8, "
                 "%s\"rope_scaling\": {\"type\": \"longrope\", \"original_max_position_embeddings\": 8192, "
                 "\"short_factor\": [1, 1], \"long_factor\": [1, 2]}}", top ? "\"original_max_position_embeddings\": 2048, " : "");
        CHECK_MSG(zt_model_config_parse(&phi3, json, strlen(json), "config.json") == ZT_OK, "%s", zt_last_error());
        CHECK_MSG(phi3.rope_scaling.original_max_positions == (top ? 2048.0f : 4096.0f), "%s: original %g", json,
                  (double)phi3.rope_scaling.original_max_positions);
    }
    /* llama3's original_max_position_embeddings as transformers' standardize_rope_params takes it: a single rope the
       config's own before its section's, else max_position_embeddings; a rope of a layer type (Gemma 3) its section's */
    for (int k = 0; k < 7; k++) { /* LLaMA: the config's and none, both, the section's, neither; Gemma 3 likewise */
        const char *own = ", \"original_max_position_embeddings\": 8", *with[7] = {"", own, own, "", "", own, ""};
        static const float want[7] = {64, 64, 8, 32, 32, 8, 32};
        char json[1024];
        zt_model_config m;
        if (k < 4)
            snprintf(json, sizeof json, "{\"model_type\": \"llama\", \"num_hidden_layers\": 1, \"num_attention_heads\": 2, "
                     "\"hidden_size\": 8, \"intermediate_size\": 8, \"max_position_embeddings\": 32, \"vocab_size\": 8, %s"
                     "\"rope_parameters\": {\"rope_type\": \"llama3\", \"rope_theta\": 100.0, \"factor\": 8.0, "
                     "\"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0%s}}",
                     k < 2 ? "\"original_max_position_embeddings\": 64, " : "", with[k]);
        else
            snprintf(json, sizeof json, "{\"model_type\": \"gemma3_text\", \"num_hidden_layers\": 2, \"num_attention_heads\": "
                     "2, \"hidden_size\": 8, \"intermediate_size\": 8, \"max_position_embeddings\": 32, \"vocab_size\": 8, "
                     "\"sliding_window\": 4, %s\"rope_parameters\": {\"full_attention\": {\"rope_type\": \"yarn\", "
                     "\"rope_theta\": 1e4, \"factor\": 4.0%s}, \"sliding_attention\": {\"rope_type\": \"default\", "
                     "\"rope_theta\": 1e4}}}", k < 6 ? "\"original_max_position_embeddings\": 64, " : "", with[k]);
        CHECK_MSG(zt_model_config_parse(&m, json, strlen(json), "config.json") == ZT_OK, "%s", zt_last_error());
        CHECK_MSG(m.rope_scaling.original_max_positions == want[k], "%s: original %g, want %g", json,
                  (double)m.rope_scaling.original_max_positions, (double)want[k]);
    }
    /* attention_bias and mlp_bias where transformers' class reads them: Qwen2's q, k and v always have biases and its
       o_proj and MLP none, Mistral's none, whatever the keys say; LLaMA's mlp_bias is read (and refused) */
    static const char *const bias_types[2] = {"qwen2", "mistral"};
    for (int k = 0; k < 2; k++) {
        char json[512];
        snprintf(json, sizeof json, "{\"model_type\": \"%s\", \"num_hidden_layers\": 1, \"num_attention_heads\": 2, "
                 "\"hidden_size\": 8, \"intermediate_size\": 8, \"max_position_embeddings\": 32, \"vocab_size\": 8, "
                 "\"attention_bias\": true, \"mlp_bias\": true}", bias_types[k]);
        zt_model_config b = config_of(json);
        CHECK_MSG(b.qkv_bias == !k && !b.out_bias && !b.mlp_bias, "%s: biases %d %d %d", bias_types[k], b.qkv_bias,
                  b.out_bias, b.mlp_bias);
    }
    config_error("{\"model_type\": \"llama\", \"mlp_bias\": true}", "\"mlp_bias\" is true");
    config_error("{\"model_type\": \"mixtral\", \"output_router_logits\": true, \"router_aux_loss_coef\": -0.01}",
                 "\"router_aux_loss_coef\" must be 0 or more (at most 1e6), found -0.01");
    config_error("{\"model_type\": \"mixtral\", \"router_jitter_noise\": 1.5}", "\"router_jitter_noise\" must be 0 (none) or more, below 1");
    config_error("{\"model_type\": \"mixtral\", \"num_local_experts\": 4, \"num_experts_per_tok\": 5}",
                 "\"num_experts_per_tok\" is 5; it must be 1 to the 4 experts");
    config_error("{\"model_type\": \"qwen3_moe\", \"num_experts\": 2000}", "\"num_experts\" is 2000; zt takes 1 to 1024");
    config_error("{\"model_type\": \"qwen3_moe\", \"decoder_sparse_step\": 0}", "\"decoder_sparse_step\" must be at least 1");
    config_error("{\"model_type\": \"qwen3_moe\", \"mlp_only_layers\": 3}", "\"mlp_only_layers\" must be a list of layer numbers");
    config_error("{\"model_type\": \"qwen2_moe\", \"shared_expert_intermediate_size\": 0}",
                 "\"shared_expert_intermediate_size\" must be 1 to 200000, found 0");
    /* Gemma: the tanh GELU only (Gemma's legacy "gelu" means it; Gemma 2's does not), causal only */
    config_error("{\"model_type\": \"gemma\", \"hidden_act\": \"relu\"}", "the activation is \"relu\"");
    config_error("{\"model_type\": \"gemma2\", \"hidden_activation\": \"gelu\"}", "the activation is \"gelu\"");
    config_error("{\"model_type\": \"gemma2\", \"use_bidirectional_attention\": true}", "use_bidirectional_attention");
    config_error("{\"model_type\": \"gemma2\", \"query_pre_attn_scalar\": 0}", "\"query_pre_attn_scalar\" must be positive");
    config_error("{\"model_type\": \"gemma2\", \"attn_logit_softcapping\": -1}",
                 "\"attn_logit_softcapping\" must be a positive number or null, found -1");
    const char *all = "{\"model_type\": \"qwen3\", \"num_hidden_layers\": 2, \"num_attention_heads\": 2, \"hidden_size\": 16, "
                      "\"intermediate_size\": 8, \"max_position_embeddings\": 16, \"vocab_size\": 8, \"head_dim\": 16, "
                      "\"sliding_window\": 8, \"use_sliding_window\": %s, \"max_window_layers\": %d}";
    for (int k = 0; k < 3; k++) {
        char json[512];
        snprintf(json, sizeof json, all, k ? "true" : "false", k == 2 ? 2 : 0);
        zt_model_config c;
        CHECK_MSG(zt_model_config_parse(&c, json, strlen(json), "config.json") == ZT_OK, "%s", zt_last_error());
        CHECK_EQ_INT(c.sliding_window, k == 1 ? 8 : 0); /* every layer, or (from layer 2 of 2) none */
        CHECK(c.qk_norm && !c.qkv_bias && c.head_dim == 16);
    }
    /* some layers windowed: from layer 1 of 2, or by layer_types (which count only with use_sliding_window) */
    const char *some[2] = {"\"use_sliding_window\": true, \"max_window_layers\": 1",
                           "\"use_sliding_window\": true, \"layer_types\": [\"full_attention\", \"sliding_attention\"]"};
    for (int k = 0; k < 2; k++) {
        char json[512];
        snprintf(json, sizeof json, "{\"model_type\": \"qwen2\", \"num_hidden_layers\": 2, \"num_attention_heads\": 2, "
                 "\"hidden_size\": 16, \"intermediate_size\": 8, \"max_position_embeddings\": 16, \"vocab_size\": 8, "
                 "\"sliding_window\": 8, %s}", some[k]);
        zt_model_config c;
        CHECK_MSG(zt_model_config_parse(&c, json, strlen(json), "config.json") == ZT_OK, "%s", zt_last_error());
        CHECK_EQ_INT(c.sliding_window, 8);
        CHECK_EQ_INT((int64_t)c.windowed[0], 2); /* layer 1 of 2 */
    }
    config_error("{\"model_type\": \"gemma2\", \"num_hidden_layers\": 3, \"layer_types\": [\"full_attention\"]}",
                 "\"layer_types\" names 1 layers; num_hidden_layers is 3");
    /* with use_sliding_window and no layer_types, the layers transformers' configs window: Qwen2's and Qwen3's from
       max_window_layers (28 unless given), Qwen2-MoE's even layers below it, Qwen3-MoE's all (it reads neither key) */
    struct { const char *type, *extra; uint64_t windowed; } rules[] = {
        {"qwen2", "", ~(((uint64_t)1 << 28) - 1) & 0xffffffffu}, {"qwen3", "", ~(((uint64_t)1 << 28) - 1) & 0xffffffffu},
        {"qwen2_moe", ", \"max_window_layers\": 6", 0x15}, {"qwen2_moe", "", 0x5555555 & (((uint64_t)1 << 28) - 1)},
        {"qwen3_moe", ", \"max_window_layers\": 6, \"layer_types\": [\"full_attention\"]", 0xffffffffu}};
    for (size_t k = 0; k < sizeof rules / sizeof rules[0]; k++) {
        char json[512];
        snprintf(json, sizeof json, "{\"model_type\": \"%s\", \"num_hidden_layers\": 32, \"num_attention_heads\": 2, "
                 "\"hidden_size\": 16, \"intermediate_size\": 8, \"max_position_embeddings\": 16, \"vocab_size\": 8, "
                 "\"sliding_window\": 8, \"use_sliding_window\": true%s}", rules[k].type, rules[k].extra);
        zt_model_config c = config_of(json);
        CHECK_MSG(c.windowed[0] == rules[k].windowed && c.sliding_window == 8, "%s%s: windowed %llx, want %llx",
                  rules[k].type, rules[k].extra, (unsigned long long)c.windowed[0],
                  (unsigned long long)rules[k].windowed);
    }
}

/* dropout: each model's keys with transformers' defaults (GPT-2: 0.1 each; Phi-3's embd_pdrop unread, as its model
   leaves it), probabilities in [0, 1) */
/* hidden_act: transformers' "swish" is SiLU; another activation is refused, naming it */
TEST(llama_activation_names) {
    zt_model_config c;
    static const char *const base = "{\"model_type\": \"llama\", \"num_hidden_layers\": 1, \"num_attention_heads\": 2, "
                                    "\"hidden_size\": 16, \"intermediate_size\": 32, \"vocab_size\": 64, "
                                    "\"max_position_embeddings\": 32, \"hidden_act\": ";
    char json[512];
    snprintf(json, sizeof json, "%s\"swish\"}", base);
    CHECK_MSG(zt_model_config_parse(&c, json, strlen(json), "config.json") == ZT_OK, "%s", zt_last_error());
    snprintf(json, sizeof json, "%s\"relu\"}", base);
    config_error(json, "\"hidden_act\" is \"relu\"; zt implements silu only");
}

TEST(dropout_configs_take_transformers_defaults) {
    zt_model_config c = config_of(GPT2_JSON);
    CHECK(c.embd_dropout == 0.1f && c.resid_dropout == 0.1f && c.attn_dropout == 0.1f);
    c = config_of(GPT2_NODROP_JSON);
    CHECK(c.embd_dropout == 0 && c.resid_dropout == 0 && c.attn_dropout == 0);
    c = config_of(PHI3_DROP_JSON);
    CHECK(c.embd_dropout == 0 && c.resid_dropout == 0.2f && c.attn_dropout == 0.3f);
    c = config_of(LLAMA_JSON);
    CHECK(c.embd_dropout == 0 && c.resid_dropout == 0 && c.attn_dropout == 0);
    const char *llama = "{\"model_type\": \"llama\", \"num_hidden_layers\": 1, \"num_attention_heads\": 2, "
                        "\"hidden_size\": 16, \"intermediate_size\": 8, \"max_position_embeddings\": 16, "
                        "\"vocab_size\": 8, \"attention_dropout\": 0.25, \"resid_pdrop\": 0.5}";
    c = config_of(llama);
    CHECK(c.attn_dropout == 0.25f && c.resid_dropout == 0); /* LLaMA has no residual dropout */
    char json[512];
    snprintf(json, sizeof json, "%.*s, \"attn_pdrop\": 1.5}", (int)strlen(GPT2_JSON) - 1, GPT2_JSON);
    config_error(json, "\"attn_pdrop\" must be a probability in [0, 1], found 1.5");
    snprintf(json, sizeof json, "%.*s, \"embd_pdrop\": -0.1}", (int)strlen(GPT2_JSON) - 1, GPT2_JSON);
    config_error(json, "\"embd_pdrop\" must be a probability in [0, 1], found -0.1");
    snprintf(json, sizeof json, "%.*s, \"resid_pdrop\": 1, \"attn_pdrop\": null}", (int)strlen(GPT2_JSON) - 1, GPT2_JSON);
    c = config_of(json); /* 1 drops everything, as torch's; null is the default */
    CHECK(c.resid_dropout == 1.0f && c.attn_dropout == 0.1f && c.embd_dropout == 0.1f);
    snprintf(json, sizeof json, "%.*s, \"attention_dropout\": \"0.1\"}", (int)strlen(LLAMA_JSON) - 1, LLAMA_JSON);
    config_error(json, "\"attention_dropout\" must be a number, found \"0.1\"");
}

/* dst's parameters = src's (engines of one model) */
static void copy_params(zt_engine *dst, zt_engine *src) {
    for (int i = 0; i < zt_param_count(src); i++) {
        zt_shape s;
        const char *name = zt_param_name(src, i, &s);
        if (!name) continue;
        int64_t k = 1;
        for (int d = 0; d < s.ndim; d++) k *= s.d[d];
        float *w = (float *)malloc((size_t)k * 4);
        CHECK(zt_param_get(src, name, w, k, 0) == ZT_OK && zt_param_set(dst, name, w, k) == ZT_OK);
        free(w);
    }
}

/* dropout is training's alone: zt_eval's loss is the model's without it, zt_forward_backward's is not; the masks
   are the seed's (the same run twice gives the same bits, another seed other numbers) and the step's */
TEST(engine_dropout_in_training_only) {
    enum { T = 16, B = 2 };
    int32_t tok[B * T];
    fill_tokens(tok, B * T, 5, 61);
    zt_model_config drop = config_of(GPT2_JSON), none = config_of(GPT2_NODROP_JSON);
    zt_options o = small_options(B, T), o2 = o;
    o2.seed = 43;
    zt_engine *a = engine_for(&drop, &o), *b = engine_for(&drop, &o), *c = engine_for(&drop, &o2);
    zt_engine *d = engine_for(&none, &o);
    copy_params(c, a); /* the seed draws the weights too: the same ones, so that only the masks differ */
    copy_params(d, a);
    float ea = zt_eval(a, tok, NULL, NULL, B, NULL, NULL), ed = zt_eval(d, tok, NULL, NULL, B, NULL, NULL);
    float la = zt_forward_backward(a, tok, NULL, NULL, B), lb = zt_forward_backward(b, tok, NULL, NULL, B);
    float lc = zt_forward_backward(c, tok, NULL, NULL, B), ld = zt_forward_backward(d, tok, NULL, NULL, B);
    CHECK_MSG(ea == ed, "zt_eval with dropout %.7g, without %.7g: evaluation has no dropout", (double)ea, (double)ed);
    CHECK_MSG(ld == ed, "without dropout, training's loss %.7g and evaluation's %.7g", (double)ld, (double)ed);
    CHECK_MSG(fabsf(la - ea) > 1e-4f, "training's loss %.7g with dropout is evaluation's %.7g", (double)la, (double)ea);
    CHECK_MSG(memcmp(&la, &lb, 4) == 0, "the same run twice: losses %.9g and %.9g", (double)la, (double)lb);
    CHECK_MSG(la != lc, "seeds 42 and 43 drop the same (loss %.9g)", (double)la);
    /* at a learning rate of 0 the weights stay: the second step's loss on the same rows differs by its masks alone */
    zt_options still = o;
    still.lr = 0.0f, still.weight_decay = 0.0f;
    zt_engine *e = engine_for(&drop, &still);
    float first = zt_forward_backward(e, tok, NULL, NULL, B);
    zt_step(e);
    float second = zt_forward_backward(e, tok, NULL, NULL, B);
    CHECK_MSG(memcmp(&first, &la, 4) == 0 && first != second, "steps 1 and 2 at learning rate 0: losses %.9g and %.9g",
              (double)first, (double)second);
    zt_shutdown(e);
    zt_shutdown(a);
    zt_shutdown(b);
    zt_shutdown(c);
    zt_shutdown(d);
}

/* an older file's rope_scaling, where given, replaces a rope_parameters beside it whole (its theta too), as
   transformers' convert_rope_params_to_dict takes them; an empty one does not */
TEST(rope_scaling_replaces_rope_parameters) {
    const char *base = "{\"model_type\": \"llama\", \"num_hidden_layers\": 1, \"num_attention_heads\": 2, "
                       "\"hidden_size\": 32, \"intermediate_size\": 8, \"max_position_embeddings\": 64, \"vocab_size\": 8, "
                       "\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 5000}%s}";
    char json[512];
    snprintf(json, sizeof json, base, ", \"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 2}");
    zt_model_config c = config_of(json);
    CHECK(c.rope_theta == 10000.0f && c.rope_scaling.factor == 2.0f && c.rope_scaling.linear);
    snprintf(json, sizeof json, base, ", \"rope_theta\": 7000, \"rope_scaling\": {\"type\": \"linear\", \"factor\": 2}");
    CHECK(config_of(json).rope_theta == 7000.0f);
    snprintf(json, sizeof json, base, ", \"rope_scaling\": {}");
    c = config_of(json);
    CHECK(c.rope_theta == 5000.0f && c.rope_scaling.factor == 0);
    snprintf(json, sizeof json, base, ", \"rope_scaling\": null");
    CHECK(config_of(json).rope_theta == 5000.0f);
}

/* Phi-4-mini's config: a top-level partial_rotary_factor, the rope's own where it has one (Phi3Config's setdefault);
   longrope's factors for the rotated pairs only */
TEST(phi3_partial_rotation_configs) {
    const char *base = "{\"model_type\": \"phi3\", \"num_hidden_layers\": 1, \"num_attention_heads\": 2, "
                       "\"hidden_size\": 32, \"intermediate_size\": 8, \"max_position_embeddings\": 64, \"vocab_size\": 8%s}";
    char json[512];
    snprintf(json, sizeof json, base, ", \"partial_rotary_factor\": 0.75, \"original_max_position_embeddings\": 16, "
             "\"rope_scaling\": {\"type\": \"longrope\", \"short_factor\": [1, 1, 1, 1, 1, 1], "
             "\"long_factor\": [1, 2, 3, 4, 5, 6]}");
    zt_model_config c = config_of(json);
    CHECK(c.rotary_dim == 12 && c.head_dim == 16 && c.longrope && c.rope_long[5] == 6.0f && c.rope_scaling.factor == 4.0f);
    snprintf(json, sizeof json, base, ", \"partial_rotary_factor\": 0.75, \"rope_parameters\": {\"rope_type\": \"default\", "
             "\"partial_rotary_factor\": 0.5}");
    c = config_of(json);
    CHECK_EQ_INT(c.rotary_dim, 8); /* the rope's own */
    snprintf(json, sizeof json, base, ", \"partial_rotary_factor\": 1.0");
    c = config_of(json);
    CHECK_EQ_INT(c.rotary_dim, 0); /* the whole head */
    snprintf(json, sizeof json, base, ", \"partial_rotary_factor\": 0.75, \"rope_scaling\": {\"type\": \"longrope\", "
             "\"short_factor\": [1, 1, 1, 1, 1, 1, 1, 1], \"long_factor\": [1, 2, 3, 4, 5, 6, 7, 8]}");
    config_error(json, "of type longrope needs \"short_factor\", a list of 6 numbers");
}

/* SmolLM3: a NoPE layer every no_rope_layer_interval (4 by default) or as no_rope_layers says; with
   use_sliding_window, windows on the layers layer_types names, else on the NoPE ones; SmolLM3Config's defaults */
TEST(smollm3_configs_take_transformers_defaults) {
    const char *base = "{\"model_type\": \"smollm3\", \"num_hidden_layers\": 8, \"num_attention_heads\": 8, "
                       "\"hidden_size\": 32, \"intermediate_size\": 8, \"max_position_embeddings\": 64, \"vocab_size\": 8%s}";
    char json[768];
    snprintf(json, sizeof json, base, ", \"pad_token_id\": 1");
    zt_model_config c = config_of(json);
    CHECK(c.nope[0] == 0x88 && c.sliding_window == 0 && c.rope_theta == 2e6f && c.tied_embeddings && c.pad_token_id == 1);
    CHECK_EQ_INT(c.n_kv_head, 4); /* absent: SmolLM3Config's 4; null: one a head */
    snprintf(json, sizeof json, base, ", \"pad_token_id\": 1, \"num_key_value_heads\": null");
    CHECK_EQ_INT(config_of(json).n_kv_head, 8);
    /* null layer_types: windows on the NoPE layers, whatever max_window_layers says; a longer no_rope_layers' first 8 */
    snprintf(json, sizeof json, base, ", \"pad_token_id\": 1, \"use_sliding_window\": true, \"sliding_window\": 16, "
             "\"layer_types\": null, \"max_window_layers\": 2, \"no_rope_layers\": [1, 1, 1, 1, 1, 0, 1, 1, 0, 0]");
    c = config_of(json);
    CHECK(c.nope[0] == 0x20 && c.windowed[0] == 0x20 && c.sliding_window == 16);
    snprintf(json, sizeof json, base, ", \"pad_token_id\": 1, \"sliding_window\": 16, \"layer_types\": [\"full_attention\", "
             "\"full_attention\", \"full_attention\", \"sliding_attention\", \"full_attention\", \"full_attention\", "
             "\"full_attention\", \"full_attention\"]");
    config_error(json, "layer_types[3] is \"sliding_attention\" and use_sliding_window is false; transformers windows");
    snprintf(json, sizeof json, base, ", \"pad_token_id\": null, \"use_sliding_window\": true, \"sliding_window\": 16, "
             "\"no_rope_layers\": [1, 0, 1, 1, 0, 1, 1, 1]");
    c = config_of(json);
    CHECK(c.nope[0] == 0x12 && c.windowed[0] == 0x12 && c.sliding_window == 16 && !c.has_pad_token);
    snprintf(json, sizeof json, base, ", \"pad_token_id\": 0, \"use_sliding_window\": true, \"sliding_window\": 16, "
             "\"layer_types\": [\"sliding_attention\", \"full_attention\", \"full_attention\", \"full_attention\", "
             "\"full_attention\", \"full_attention\", \"full_attention\", \"full_attention\"]");
    c = config_of(json);
    CHECK(c.nope[0] == 0x88 && c.windowed[0] == 1);
    snprintf(json, sizeof json, base, ", \"pad_token_id\": 0, \"sliding_window\": 16");
    c = config_of(json);
    CHECK_EQ_INT(c.sliding_window, 0); /* without use_sliding_window: none */
    snprintf(json, sizeof json, base, ", \"pad_token_id\": 0, \"no_rope_layers\": [1, 0]");
    config_error(json, "\"no_rope_layers\" must be a list of at least 8 0s and 1s (one a layer)");
    snprintf(json, sizeof json, base, ", \"pad_token_id\": 0, \"no_rope_layers\": [1, 0, 1, 1, 2, 1, 1, 1]");
    config_error(json, "no_rope_layers[4] is 2; 1 rotates, 0 does not");
    snprintf(json, sizeof json, base, "");
    config_error(json, "\"pad_token_id\" 128004 is not a token of the vocabulary of 8");
}

/* OLMo 2, 3 and OLMoE: Olmo2Config's, Olmo3Config's and OlmoeConfig's defaults; OLMo 3's windows on all but every fourth layer, its
   older files' rope_theta and rope_scaling for the full attention layers alone (the sliding ones keep 5e5); the
   parameter counts transformers gives OLMo-2-7B, OLMo-3-7B and OLMoE-1B-7B */
TEST(olmo_configs_take_transformers_defaults) {
    const char *base = "{\"model_type\": \"%s\", \"num_hidden_layers\": %d, \"num_attention_heads\": 32, "
                       "\"hidden_size\": 4096, \"intermediate_size\": 11008, \"max_position_embeddings\": 4096, "
                       "\"vocab_size\": %d%s}";
    char json[768];
    snprintf(json, sizeof json, base, "olmo2", 32, 100352, ", \"rope_theta\": 500000");
    zt_model_config c = config_of(json);
    CHECK(c.post_norms_only && c.sandwich_norms && c.qk_norm == 2 && !c.tied_embeddings && c.sliding_window == 0);
    CHECK(c.norm_eps == 1e-5f && c.has_pad_token && c.pad_token_id == 1 && c.rope_theta == 5e5f && c.n_kv_head == 32);
    CHECK_EQ_INT(zt_model_config_params(&c), 7298617344);
    snprintf(json, sizeof json, base, "olmo3", 32, 100278, "");
    c = config_of(json);
    CHECK_EQ_INT(zt_model_config_params(&c), 7298011136);
    CHECK(c.sliding_window == 4096 && c.windowed[0] == 0x77777777u && c.rope_theta == 5e5f && c.local_rope_theta == 5e5f);
    snprintf(json, sizeof json, base, "olmo3", 4, 64, ", \"rope_theta\": 10000, \"rope_scaling\": {\"rope_type\": "
             "\"linear\", \"factor\": 2}");
    c = config_of(json);
    CHECK(c.rope_theta == 1e4f && c.local_rope_theta == 5e5f && c.rope_scaling.factor == 2.0f && c.windowed[0] == 7);
    snprintf(json, sizeof json, base, "olmo3", 2, 64, ", \"sliding_window\": null");
    config_error(json, "\"sliding_window\" is null or not positive while layers are sliding_attention");
    snprintf(json, sizeof json, base, "olmo3", 2, 64, ", \"sliding_window\": null, \"layer_types\": [\"full_attention\", "
             "\"full_attention\"]");
    c = config_of(json);
    CHECK(c.sliding_window == 0 && c.windowed[0] == 0);
    snprintf(json, sizeof json, base, "olmo3", 2, 64, ", \"rope_parameters\": {\"full_attention\": {\"rope_type\": "
             "\"default\"}, \"sliding_attention\": {\"rope_type\": \"linear\", \"factor\": 2}}");
    config_error(json, "rope_parameters.sliding_attention is scaled");
    /* one rope a layer type, an older rope_scaling going into the full layers'; a single rope refused */
    snprintf(json, sizeof json, base, "olmo3", 4, 64, ", \"rope_parameters\": {\"full_attention\": {\"rope_type\": "
             "\"default\", \"rope_theta\": 1e4}, \"sliding_attention\": {\"rope_type\": \"default\", \"rope_theta\": 2e4}}, "
             "\"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 2}");
    c = config_of(json);
    CHECK(c.rope_theta == 1e4f && c.local_rope_theta == 2e4f && c.rope_scaling.factor == 2.0f && c.rope_scaling.linear);
    snprintf(json, sizeof json, base, "olmo3", 4, 64, ", \"rope_parameters\": {\"sliding_attention\": {\"rope_type\": "
             "\"default\", \"rope_theta\": 1e4}}");
    c = config_of(json);
    CHECK(c.rope_theta == 5e5f && c.local_rope_theta == 1e4f);
    snprintf(json, sizeof json, base, "olmo3", 4, 64, ", \"rope_parameters\": {\"rope_type\": \"default\", "
             "\"rope_theta\": 1234}");
    config_error(json, "\"rope_parameters\" of olmo3 is one rope a layer type");
    /* OLMoE-1B-7B: 64 experts of intermediate_size, 8 a token, unnormalized; the balance loss's coefficient 0.01 */
    snprintf(json, sizeof json, "{\"model_type\": \"olmoe\", \"num_hidden_layers\": 16, \"num_attention_heads\": 16, "
             "\"hidden_size\": 2048, \"intermediate_size\": 1024, \"max_position_embeddings\": 4096, \"vocab_size\": "
             "50304, \"output_router_logits\": true, \"moe_intermediate_size\": 7, \"decoder_sparse_step\": 2}");
    c = config_of(json);
    CHECK(c.n_experts == 64 && c.experts_per_token == 8 && c.expert_intermediate == 1024 && !c.norm_topk);
    CHECK(c.router_aux_coef == 0.01f && c.qk_norm == 2 && !c.post_norms_only && c.norm_eps == 1e-5f && c.pad_token_id == 1);
    CHECK_EQ_INT((int64_t)c.sparse[0], 0xffff); /* every layer: the Qwens' keys are not OLMoE's */
    CHECK_EQ_INT(zt_model_config_params(&c), 6919161856);
    snprintf(json, sizeof json, "{\"model_type\": \"olmoe\", \"clip_qkv\": 8}");
    config_error(json, "\"clip_qkv\"");
}

/* Granite: GraniteConfig's multipliers of 1 (the scores' scale 1 too, not 1/sqrt(head_dim)); Granite-3.1-8B's shape
   and the parameter count transformers gives it */
TEST(granite_configs_take_transformers_defaults) {
    const char *base = "{\"model_type\": \"granite\", \"num_hidden_layers\": 40, \"num_attention_heads\": 32, "
                       "\"num_key_value_heads\": 8, \"hidden_size\": 4096, \"intermediate_size\": 12800, "
                       "\"max_position_embeddings\": 131072, \"vocab_size\": 49155%s}";
    char json[768];
    snprintf(json, sizeof json, base, "");
    zt_model_config c = config_of(json);
    CHECK(c.attn_scale == 1.0f && c.embed_scale == 0 && c.residual_scale == 1.0f && c.logit_scale == 1.0f);
    CHECK(!c.tied_embeddings && !c.has_pad_token && c.norm_eps == 1e-6f);
    snprintf(json, sizeof json, base, ", \"tie_word_embeddings\": true, \"embedding_multiplier\": 12, "
             "\"attention_multiplier\": 0.0078125, \"residual_multiplier\": 0.22, \"logits_scaling\": 16");
    c = config_of(json);
    CHECK(c.embed_scale == 12.0f && c.embed_scale_exact && c.attn_scale == 0.0078125f && c.residual_scale == 0.22f);
    CHECK(c.logit_scale == 0.0625f);
    CHECK_EQ_INT(zt_model_config_params(&c), 8170848256);
    snprintf(json, sizeof json, base, ", \"logits_scaling\": 0");
    config_error(json, "\"logits_scaling\" must be a positive number, found 0");
    snprintf(json, sizeof json, base, ", \"residual_multiplier\": null");
    config_error(json, "residual_multiplier");
}

/* GLM and GLM-4: GlmConfig's defaults (2 kv heads of 128, half of each head rotated in interleaved pairs, q, k and v
   biases, pad token 151329) and the parameter counts transformers gives GLM-4-9B */
TEST(glm_configs_take_transformers_defaults) {
    const char *base = "{\"model_type\": \"%s\", \"num_hidden_layers\": 40, \"num_attention_heads\": 32, "
                       "\"hidden_size\": 4096, \"intermediate_size\": 13696, \"max_position_embeddings\": 131072, "
                       "\"vocab_size\": 151552%s}";
    char json[768];
    snprintf(json, sizeof json, base, "glm", "");
    zt_model_config c = config_of(json);
    CHECK(c.n_kv_head == 2 && c.head_dim == 128 && c.rotary_dim == 64 && c.rope_interleaved && c.fused_mlp && !c.fused);
    CHECK(c.qkv_bias && !c.out_bias && !c.sandwich_norms && c.pad_token_id == 151329 && c.norm_eps == 1.5625e-7f);
    CHECK_EQ_INT(zt_model_config_params(&c), 9399951360);
    snprintf(json, sizeof json, base, "glm4", "");
    c = config_of(json);
    CHECK(c.sandwich_norms && !c.post_norms_only && c.rope_interleaved);
    CHECK_EQ_INT(zt_model_config_params(&c), 9400279040);
    snprintf(json, sizeof json, base, "glm4", ", \"attention_bias\": false, \"partial_rotary_factor\": 1.0");
    c = config_of(json);
    CHECK(!c.qkv_bias && c.rotary_dim == 0);
}

/* Seed-OSS, InternLM3 and ERNIE 4.5: their configs' defaults and the parameter counts transformers gives them */
TEST(seed_internlm_ernie_configs_take_transformers_defaults) {
    char json[768];
    snprintf(json, sizeof json, "{\"model_type\": \"seed_oss\", \"num_hidden_layers\": 64, \"num_attention_heads\": 80, "
             "\"hidden_size\": 4096, \"intermediate_size\": 27648, \"max_position_embeddings\": 524288, "
             "\"vocab_size\": 155136}");
    zt_model_config c = config_of(json);
    CHECK(c.n_kv_head == 8 && c.head_dim == 128 && c.qkv_bias && !c.out_bias && c.pad_token_id == 1);
    CHECK(c.resid_dropout == 0.1f && c.attn_dropout == 0.1f && !c.tied_embeddings);
    CHECK_EQ_INT(zt_model_config_params(&c), 28921040896);
    snprintf(json, sizeof json, "{\"model_type\": \"internlm3\", \"num_hidden_layers\": 48, \"num_attention_heads\": 32, "
             "\"hidden_size\": 4096, \"intermediate_size\": 10240, \"max_position_embeddings\": 32768, "
             "\"vocab_size\": 128512, \"qkv_bias\": false, \"bias\": false}");
    c = config_of(json);
    CHECK(c.n_kv_head == 2 && c.head_dim == 128 && !c.qkv_bias && c.norm_eps == 1e-5f && c.pad_token_id == 2);
    CHECK_EQ_INT(zt_model_config_params(&c), 8804241408);
    snprintf(json, sizeof json, "{\"model_type\": \"seed_oss\", \"num_hidden_layers\": 2, \"num_attention_heads\": 8, "
             "\"hidden_size\": 512, \"intermediate_size\": 64, \"max_position_embeddings\": 64, \"vocab_size\": 64, "
             "\"head_dim\": null, \"num_key_value_heads\": null}");
    c = config_of(json); /* null: as their __post_init__ has it, hidden_size / heads and one kv head a head */
    CHECK(c.head_dim == 64 && c.n_kv_head == 8);
    snprintf(json, sizeof json, "{\"model_type\": \"internlm3\", \"bias\": true}");
    config_error(json, "\"bias\" is true");
    snprintf(json, sizeof json, "{\"model_type\": \"ernie4_5\", \"num_hidden_layers\": 18, \"num_attention_heads\": 16, "
             "\"hidden_size\": 1024, \"intermediate_size\": 3072, \"max_position_embeddings\": 131072, "
             "\"vocab_size\": 103424}");
    c = config_of(json);
    CHECK(c.rope_interleaved && c.rotary_dim == 0 && c.rope_theta == 5e5f && c.tied_embeddings && c.pad_token_id == 0);
    CHECK_EQ_INT(zt_model_config_params(&c), 360748032);
    snprintf(json, sizeof json, "{\"model_type\": \"ernie4_5\", \"use_bias\": true}");
    config_error(json, "\"use_bias\" is true");
}

/* Cohere: CohereConfig's defaults (Command-R's 35B shape), its LayerNorm's eps key, logit_scale, use_qk_norm
   (Command R+'s) and what is refused; Cohere 2's windows */
TEST(cohere_configs_take_transformers_defaults) {
    const char *base = "{\"model_type\": \"cohere\", \"num_hidden_layers\": %d, \"num_attention_heads\": 64, "
                       "\"hidden_size\": 8192, \"intermediate_size\": 22528, \"max_position_embeddings\": 8192, "
                       "\"vocab_size\": 256000%s}";
    char json[768];
    snprintf(json, sizeof json, base, 40, "");
    zt_model_config c = config_of(json);
    CHECK(c.layernorm && c.parallel_block && c.rope_interleaved && c.tied_embeddings && c.n_kv_head == 64);
    CHECK(c.logit_scale == 0.0625f && c.norm_eps == 1e-5f && c.rope_theta == 5e5f && c.has_pad_token && c.pad_token_id == 0);
    CHECK(!c.qkv_bias && !c.out_bias && !c.qk_norm);
    CHECK_EQ_INT(zt_model_config_params(&c), 34980831232);
    snprintf(json, sizeof json, base, 2, ", \"num_key_value_heads\": 8, \"attention_bias\": true, "
             "\"layer_norm_eps\": 1e-3, \"rms_norm_eps\": 0.5, \"use_qk_norm\": null");
    c = config_of(json); /* the LayerNorm's eps by its own key */
    CHECK(c.qkv_bias && c.out_bias && c.norm_eps == 1e-3f && c.n_kv_head == 8);
    CHECK_EQ_INT(zt_model_config_params(&c), 3506499584);
    snprintf(json, sizeof json, base, 2, ", \"num_key_value_heads\": 8, \"attention_bias\": true, \"use_qk_norm\": true");
    c = config_of(json); /* a LayerNorm on each head of q and k, a weight a head: 64 x 128 and 8 x 128 more a layer */
    CHECK(c.qk_norm == 3);
    CHECK_EQ_INT(zt_model_config_params(&c), 3506518016);
    snprintf(json, sizeof json, "{\"model_type\": \"cohere\", \"num_hidden_layers\": 64, \"num_attention_heads\": 96, "
             "\"num_key_value_heads\": 8, \"hidden_size\": 12288, \"intermediate_size\": 33792, "
             "\"max_position_embeddings\": 8192, \"vocab_size\": 256000, \"use_qk_norm\": true}");
    c = config_of(json); /* Command R+'s shape */
    CHECK_EQ_INT(zt_model_config_params(&c), 103810674688);
    snprintf(json, sizeof json, base, 2, ", \"logit_scale\": null");
    config_error(json, "\"logit_scale\" must be a number, found null");
    snprintf(json, sizeof json, base, 2, ", \"logit_scale\": 0");
    config_error(json, "\"logit_scale\" must be a positive number, found 0");
    /* Cohere 2 (Command R7B's shape): windows on all but every fourth layer, the rope on those alone */
    snprintf(json, sizeof json, "{\"model_type\": \"cohere2\", \"num_hidden_layers\": 32, \"num_attention_heads\": 32, "
             "\"num_key_value_heads\": 8, \"hidden_size\": 4096, \"intermediate_size\": 14336, "
             "\"max_position_embeddings\": 8192, \"vocab_size\": 256000, \"head_dim\": 256, \"use_qk_norm\": true}");
    c = config_of(json); /* use_qk_norm: not Cohere 2's, unread */
    CHECK(c.layernorm && c.parallel_block && c.sliding_window == 4096 && c.windowed[0] == 0x77777777u);
    CHECK(c.nope[0] == 0x88888888u && c.rope_theta == 1e4f && c.logit_scale == 0.0625f && c.head_dim == 256);
    CHECK_EQ_INT(zt_model_config_params(&c), 9370210304);
    snprintf(json, sizeof json, "{\"model_type\": \"cohere2\", \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
             "\"hidden_size\": 32, \"intermediate_size\": 64, \"max_position_embeddings\": 64, \"vocab_size\": 64, "
             "\"sliding_window\": null, \"layer_types\": [\"full_attention\", \"full_attention\"]}");
    c = config_of(json); /* no window: no layer has the rope, as transformers builds it */
    CHECK(c.sliding_window == 0 && c.windowed[0] == 0 && c.nope[0] == 3);
    snprintf(json, sizeof json, "{\"model_type\": \"cohere2\", \"sliding_window\": null}");
    config_error(json, "\"sliding_window\" is null or not positive while layers are sliding_attention");
}

/* StableLM and Starcoder2: their configs' defaults (StableLM-3B-4E1T's and StarCoder2-3B's shapes, parameters as
   transformers counts them), their own bias and norm keys, and what is refused */
TEST(stablelm_starcoder2_configs_take_transformers_defaults) {
    char json[768];
    const char *stablelm = "{\"model_type\": \"stablelm\", \"num_hidden_layers\": %d, \"num_attention_heads\": 32, "
                           "\"hidden_size\": 2560, \"intermediate_size\": 6912, \"max_position_embeddings\": 4096, "
                           "\"vocab_size\": 50304%s}";
    snprintf(json, sizeof json, stablelm, 32, "");
    zt_model_config c = config_of(json);
    CHECK(c.layernorm && c.norm_bias && !c.plain_mlp && !c.parallel_block && !c.qkv_bias && !c.out_bias && !c.mlp_bias);
    CHECK(c.rotary_dim == 20 && c.n_kv_head == 32 && c.norm_eps == 1e-5f && c.rope_theta == 1e4f && !c.tied_embeddings);
    CHECK(!c.qk_norm && !c.has_pad_token && c.mlp_dropout == 0.0f && c.attn_dropout == 0.0f);
    CHECK_EQ_INT(zt_model_config_params(&c), 2795443200);
    snprintf(json, sizeof json, stablelm, 2, ", \"use_parallel_residual\": true, \"qk_layernorm\": true, "
             "\"use_qkv_bias\": true, \"num_key_value_heads\": 8, \"attention_bias\": false, \"head_dim\": 64, "
             "\"hidden_dropout\": 0.25, \"rms_norm_eps\": 0.5, \"layer_norm_eps\": 1e-3");
    c = config_of(json); /* use_qkv_bias decides, head_dim is always hidden / heads, the LayerNorm's eps by its key */
    CHECK(c.parallel_block && c.qk_norm == 3 && c.qk_norm_heads && c.qkv_bias && !c.out_bias && c.n_kv_head == 8);
    CHECK(c.head_dim == 80 && c.mlp_dropout == 0.25f && c.resid_dropout == 0.0f && c.norm_eps == 1e-3f);
    CHECK_EQ_INT(zt_model_config_params(&c), 396522240);
    snprintf(json, sizeof json, stablelm, 2, ", \"partial_rotary_factor\": 0.3125");
    config_error(json, "\"partial_rotary_factor\" 0.3125 of a head of 80 rotates 25 dimensions");
    snprintf(json, sizeof json, stablelm, 2, ", \"use_parallel_residual\": 1");
    config_error(json, "\"use_parallel_residual\"");
    snprintf(json, sizeof json, stablelm, 2, ", \"hidden_act\": \"gelu\"");
    config_error(json, "\"hidden_act\" is \"gelu\"");
    config_error("{\"model_type\": \"stablelm\", \"num_hidden_layers\": 2, \"num_attention_heads\": 40, \"hidden_size\": "
                 "2580, \"intermediate_size\": 64, \"max_position_embeddings\": 64, \"vocab_size\": 64}",
                 "hidden_size 2580 is not a multiple of num_attention_heads 40");

    const char *starcoder2 = "{\"model_type\": \"starcoder2\", \"num_hidden_layers\": %d, \"num_attention_heads\": 24, "
                             "\"hidden_size\": 3072, \"intermediate_size\": 12288, \"max_position_embeddings\": 4096, "
                             "\"vocab_size\": 49152%s}";
    snprintf(json, sizeof json, starcoder2, 30, "");
    c = config_of(json);
    CHECK(c.layernorm && c.norm_bias && c.plain_mlp && c.qkv_bias && c.out_bias && c.mlp_bias && c.tied_embeddings);
    CHECK(c.n_kv_head == 2 && c.rotary_dim == 0 && c.sliding_window == 0 && c.windowed[0] == 0 && c.norm_eps == 1e-5f);
    CHECK(c.init_std == 0.018042f && c.embd_dropout == 0.0f && c.resid_dropout == 0.0f);
    CHECK_EQ_INT(zt_model_config_params(&c), 3030371328);
    snprintf(json, sizeof json, starcoder2, 2, ", \"use_bias\": false, \"attention_bias\": true, \"sliding_window\": 4096, "
             "\"norm_epsilon\": 1e-3, \"residual_dropout\": 0.1, \"embedding_dropout\": 0.05");
    c = config_of(json); /* use_bias decides; a window on every layer */
    CHECK(!c.qkv_bias && !c.out_bias && !c.mlp_bias && c.sliding_window == 4096 && c.windowed[0] == 3);
    CHECK(c.norm_eps == 1e-3f && c.resid_dropout == 0.1f && c.embd_dropout == 0.05f);
    CHECK_EQ_INT(zt_model_config_params(&c), 342915072);
    snprintf(json, sizeof json, starcoder2, 2, ", \"hidden_act\": \"gelu\"");
    config_error(json, "zt implements Starcoder2's gelu_pytorch_tanh");
    snprintf(json, sizeof json, starcoder2, 2, ", \"partial_rotary_factor\": 0.5");
    config_error(json, "\"partial_rotary_factor\" is 0.5");
}

/* GPT-NeoX (Pythia): GPTNeoXConfig's defaults (GPT-NeoX-20B's shape) and Pythia-160M's older keys (rotary_pct,
   rotary_emb_base), parameters as transformers counts them, and what is refused */
TEST(gpt_neox_configs_take_transformers_defaults) {
    char json[768];
    const char *neox = "{\"model_type\": \"gpt_neox\", \"num_hidden_layers\": %d, \"num_attention_heads\": %d, "
                       "\"hidden_size\": %d, \"intermediate_size\": %d, \"max_position_embeddings\": 2048, "
                       "\"vocab_size\": %d%s}";
    snprintf(json, sizeof json, neox, 44, 64, 6144, 24576, 50432, "");
    zt_model_config c = config_of(json);
    CHECK(c.layernorm && c.norm_bias && c.parallel_block == 2 && c.plain_mlp && c.gelu_erf && c.qkv_bias && c.out_bias);
    CHECK(c.mlp_bias && !c.head_bias && !c.tied_embeddings && c.n_kv_head == 64 && c.rotary_dim == 24);
    CHECK(c.rope_theta == 1e4f && c.norm_eps == 1e-5f && c.embd_dropout == 0.0f && c.resid_dropout == 0.0f);
    CHECK_EQ_INT(zt_model_config_params(&c), 20554567680);
    snprintf(json, sizeof json, neox, 12, 12, 768, 3072, 50304, ", \"rotary_pct\": 0.25, \"rotary_emb_base\": 10000, "
             "\"use_parallel_residual\": true, \"hidden_act\": \"gelu\", \"hidden_dropout\": 0.1, "
             "\"num_key_value_heads\": 4, \"head_dim\": 32");
    c = config_of(json); /* Pythia-160M; the keys GPTNeoXConfig has no use for are left alone */
    CHECK(c.rotary_dim == 16 && c.n_kv_head == 12 && c.head_dim == 64 && c.embd_dropout == 0.1f && c.resid_dropout == 0.1f);
    CHECK_EQ_INT(zt_model_config_params(&c), 162322944);
    snprintf(json, sizeof json, neox, 2, 4, 64, 256, 128, ", \"rotary_pct\": 1.0, \"rotary_emb_base\": 500, "
             "\"rope_parameters\": {\"rope_theta\": 20000, \"partial_rotary_factor\": 0.5}, "
             "\"use_parallel_residual\": false, \"hidden_act\": \"gelu_new\", \"attention_bias\": false");
    c = config_of(json); /* rope_parameters' keys win over the older ones */
    CHECK(c.rotary_dim == 8 && c.rope_theta == 2e4f && c.parallel_block == 0 && !c.gelu_erf && !c.qkv_bias && !c.out_bias);
    CHECK(c.mlp_bias);
    snprintf(json, sizeof json, neox, 2, 4, 64, 256, 128, ", \"rotary_pct\": 0.5, \"rotary_emb_base\": 1000, "
             "\"rope_theta\": 5000, \"partial_rotary_factor\": 1.0, \"pad_token_id\": 1000");
    c = config_of(json); /* top-level rope_theta and partial_rotary_factor unread; embed_in has no padding_idx */
    CHECK(c.rotary_dim == 8 && c.rope_theta == 1e3f && !c.has_pad_token);
    snprintf(json, sizeof json, neox, 2, 4, 64, 256, 128, ", \"hidden_act\": \"relu\"");
    config_error(json, "zt implements GPT-NeoX's gelu");
    snprintf(json, sizeof json, neox, 2, 8, 84, 256, 128, "");
    config_error(json, "hidden_size 84 is not a multiple of num_attention_heads 8");
}

/* GLM-4.5 (glm4_moe): Glm4MoeConfig's defaults (its 106B shape), DeepSeek-V3's group routing, parameters as transformers
   counts them (the routers' corrections are buffers there), and what is refused */
TEST(glm4_moe_configs_take_transformers_defaults) {
    char json[1024];
    const char *glm = "{\"model_type\": \"glm4_moe\", \"num_hidden_layers\": %d, \"num_attention_heads\": 96, "
                      "\"hidden_size\": 4096, \"intermediate_size\": 10944, \"max_position_embeddings\": 131072, "
                      "\"vocab_size\": 151552%s}";
    snprintf(json, sizeof json, glm, 46, ", \"head_dim\": 128"); /* as GLM-4.5's (4096 / 96 would rotate 21 dimensions) */
    zt_model_config c = config_of(json);
    CHECK(c.moe_sigmoid && c.n_experts == 128 && c.experts_per_token == 8 && c.expert_intermediate == 1408 && c.norm_topk);
    CHECK(c.moe_groups == 1 && c.moe_topk_groups == 1 && c.moe_scale == 1.0f && c.shared_ungated);
    CHECK(c.shared_intermediate == 1408 && c.sparse[0] == (((uint64_t)1 << 46) - 2) && c.n_kv_head == 8); /* 0 dense */
    CHECK(c.rotary_dim == 64 && !c.rope_interleaved && !c.qkv_bias && !c.qk_norm && !c.tied_embeddings);
    CHECK(c.router_aux_coef == 0.0f && c.norm_eps == 1e-5f);
    CHECK_EQ_INT(zt_model_config_params(&c), 106851586048);
    snprintf(json, sizeof json, glm, 2, ", \"n_group\": 8, \"topk_group\": 4, \"n_routed_experts\": 64, "
             "\"num_experts_per_tok\": 6, \"n_shared_experts\": 2, \"use_qk_norm\": true, \"attention_bias\": true, "
             "\"head_dim\": 128, \"first_k_dense_replace\": 0, \"routed_scaling_factor\": 2.5, "
             "\"output_router_logits\": true");
    c = config_of(json); /* no load-balancing loss: transformers' glm4_moe adds none */
    CHECK(c.moe_groups == 8 && c.moe_topk_groups == 4 && c.n_experts == 64 && c.experts_per_token == 6);
    CHECK(c.shared_intermediate == 2 * 1408 && c.sparse[0] == 3 && c.qk_norm == 1 && c.qkv_bias && !c.out_bias);
    CHECK(c.moe_scale == 2.5f && c.head_dim == 128 && c.rotary_dim == 64 && c.router_aux_coef == 0.0f);
    CHECK_EQ_INT(zt_model_config_params(&c), 3743990272);
    snprintf(json, sizeof json, glm, 2, ", \"head_dim\": 128, \"n_group\": 3");
    config_error(json, "\"n_group\" 3 and \"topk_group\" 1 do not fit 128 experts, 8 a token");
    snprintf(json, sizeof json, glm, 2, ", \"head_dim\": 128, \"n_group\": 64, \"topk_group\": 3");
    config_error(json, "\"n_group\" 64 and \"topk_group\" 3 do not fit 128 experts, 8 a token");
    snprintf(json, sizeof json, glm, 2, ", \"head_dim\": 128, \"num_local_experts\": 16");
    CHECK(config_of(json).n_experts == 16); /* Glm4MoeConfig's attribute_map */
    snprintf(json, sizeof json, glm, 2, ", \"head_dim\": 128, \"first_k_dense_replace\": -100");
    CHECK(config_of(json).sparse[0] == 3); /* every layer, as transformers' layer_idx >= first_k_dense_replace */
    snprintf(json, sizeof json, glm, 2, ", \"head_dim\": 128, \"routed_scaling_factor\": 0");
    config_error(json, "\"routed_scaling_factor\" must be a positive number, found 0");
}

/* DeepSeek-V3 (deepseek_v3): DeepseekV3Config's defaults (its 671B shape: MLA, 256 experts in 8 groups), parameters as
   transformers counts them (meta device; the routers' corrections are buffers), and what is refused */
TEST(deepseek_v3_configs_take_transformers_defaults) {
    char json[1024];
    const char *ds = "{\"model_type\": \"deepseek_v3\", \"num_hidden_layers\": %d, \"num_attention_heads\": 128, "
                     "\"hidden_size\": 7168, \"intermediate_size\": 18432, \"max_position_embeddings\": 4096, "
                     "\"vocab_size\": 129280, \"head_dim\": 64%s}"; /* head_dim: the rope's, as its config writes it */
    snprintf(json, sizeof json, ds, 61, "");
    zt_model_config c = config_of(json);
    CHECK(c.q_lora_rank == 1536 && c.kv_lora_rank == 512 && c.head_dim == 192 && c.qk_rope_dim == 64);
    CHECK(c.v_head_dim == 128 && c.n_kv_head == 128 && c.rope_interleaved && c.rotary_dim == 0);
    CHECK(fabsf(c.attn_scale - 1.0f / sqrtf(192.0f)) < 1e-9f && c.norm_eps == 1e-6f);
    CHECK(c.moe_sigmoid && c.moe_correction && c.n_experts == 256 && c.experts_per_token == 8);
    CHECK(c.expert_intermediate == 2048 && c.moe_groups == 8 && c.moe_topk_groups == 4 && c.moe_scale == 2.5f);
    CHECK(c.norm_topk && c.shared_ungated && c.shared_intermediate == 2048 && c.sparse[0] == ((((uint64_t)1 << 61) - 1) & ~(uint64_t)7));
    CHECK(c.sparse[1] == 0 && !c.tied_embeddings && !c.qkv_bias && !c.out_bias && c.router_aux_coef == 0.0f);
    CHECK_EQ_INT(zt_model_config_params(&c), 671026404352);
    snprintf(json, sizeof json, ds, 2, ", \"q_lora_rank\": null, \"first_k_dense_replace\": 1, "
             "\"n_routed_experts\": 64, \"num_experts_per_tok\": 6, \"n_group\": 1, \"topk_group\": 1, "
             "\"rope_interleave\": false, \"rope_scaling\": {\"type\": \"yarn\", \"factor\": 40, "
             "\"original_max_position_embeddings\": 4096, \"mscale\": 1.0, \"mscale_all_dim\": 1.0}");
    c = config_of(json); /* q_proj; DeepSeek-V3's own rope_scaling: the scores times mscale(40, 1) squared */
    CHECK(c.q_lora_rank == 0 && !c.rope_interleaved && c.sparse[0] == 2 && c.n_experts == 64 && c.rope_scaling.yarn);
    CHECK(fabsf(c.attn_scale - (float)(pow(192, -0.5) * pow(0.1 * log(40.0) + 1, 2))) < 1e-7f);
    CHECK(c.rope_scaling.attention_factor == 1.0f);
    CHECK_EQ_INT(zt_model_config_params(&c), 5741842432);
    snprintf(json, sizeof json, ds, 2, ", \"num_key_value_heads\": 8");
    config_error(json, "\"num_key_value_heads\" is 8; DeepSeek's attention gives every one of its 128 heads");
    snprintf(json, sizeof json, ds, 2, ", \"attention_bias\": true");
    config_error(json, "\"attention_bias\" is true (biases on q_a_proj");
    snprintf(json, sizeof json, ds, 2, ", \"qk_nope_head_dim\": 256");
    config_error(json, "qk_nope_head_dim + qk_rope_head_dim up to 256");
    snprintf(json, sizeof json, ds, 2, ", \"v_head_dim\": 0");
    config_error(json, "v_head_dim 0");
}

/* DeepSeek-V2 (deepseek_v2): DeepSeek-V2-Lite's shape (its files' keys), its parameters as transformers counts them,
   group_limited_greedy, and what is refused */
TEST(deepseek_v2_configs_take_transformers_defaults) {
    char json[1024];
    const char *ds = "{\"model_type\": \"deepseek_v2\", \"num_hidden_layers\": %d, \"num_attention_heads\": 16, "
                     "\"hidden_size\": 2048, \"intermediate_size\": 10944, \"max_position_embeddings\": 163840, "
                     "\"vocab_size\": 102400, \"moe_intermediate_size\": 1408%s}";
    snprintf(json, sizeof json, ds, 27, ", \"q_lora_rank\": null, \"num_experts_per_tok\": 6, \"first_k_dense_replace\": 1, "
             "\"norm_topk_prob\": false, \"topk_method\": \"greedy\", \"n_group\": 1, \"topk_group\": 1");
    zt_model_config c = config_of(json);
    CHECK(c.q_lora_rank == 0 && c.kv_lora_rank == 512 && c.head_dim == 192 && c.qk_rope_dim == 64 && c.v_head_dim == 128);
    CHECK(c.rope_interleaved && c.n_kv_head == 16 && !c.moe_sigmoid && !c.moe_correction && c.router_f32);
    CHECK(c.n_experts == 64 && c.experts_per_token == 6 && c.moe_groups == 1 && !c.moe_group_max && !c.norm_topk);
    CHECK(c.moe_scale == 1.0f && c.shared_ungated && c.shared_intermediate == 2 * 1408);
    CHECK(c.sparse[0] == ((((uint64_t)1 << 27) - 1) & ~(uint64_t)1) && c.router_aux_coef == 0.0f);
    CHECK_EQ_INT(zt_model_config_params(&c), 15706484224);
    snprintf(json, sizeof json, ds, 2, ", \"num_experts_per_tok\": 6, \"topk_method\": \"group_limited_greedy\", "
             "\"n_group\": 8, \"topk_group\": 3, \"n_routed_experts\": 160, \"routed_scaling_factor\": 16.0, "
             "\"norm_topk_prob\": true");
    c = config_of(json); /* DeepSeek-V2's routing; norm_topk_prob is unread by its router (a warning) */
    CHECK(c.moe_group_max && c.moe_groups == 8 && c.moe_topk_groups == 3 && c.n_experts == 160 && c.moe_scale == 16.0f);
    CHECK(!c.norm_topk && c.sparse[0] == 3 && c.q_lora_rank == 1536);
    snprintf(json, sizeof json, ds, 2, ", \"num_experts_per_tok\": 6, \"topk_method\": \"noaux_tc\"");
    config_error(json, "\"topk_method\" is \"noaux_tc\"; transformers' deepseek_v2 takes greedy and group_limited_greedy");
    snprintf(json, sizeof json, ds, 2, ", \"num_experts_per_tok\": 6, \"topk_method\": \"group_limited_greedy\"");
    config_error(json, "group_limited_greedy needs \"n_group\" and \"topk_group\"");
    snprintf(json, sizeof json, ds, 2, "");
    config_error(json, "\"num_experts_per_tok\" is 0");
    snprintf(json, sizeof json, ds, 2, ", \"num_experts_per_tok\": 6, \"mlp_bias\": true");
    config_error(json, "\"mlp_bias\" is true");
}

/* GLM-4.7-Flash (glm4_moe_lite): Glm4MoeLiteConfig's defaults (its 30B shape: DeepSeek-V3's attention with heads of
   256, GLM-4.5's experts), parameters as transformers counts them, mlp_layer_types, and what is refused */
TEST(glm4_moe_lite_configs_take_transformers_defaults) {
    char json[1024];
    const char *lite = "{\"model_type\": \"glm4_moe_lite\", \"num_hidden_layers\": %d, \"num_attention_heads\": 20, "
                       "\"hidden_size\": 2048, \"intermediate_size\": 10240, \"max_position_embeddings\": 202752, "
                       "\"vocab_size\": 154880%s}";
    snprintf(json, sizeof json, lite, 47, "");
    zt_model_config c = config_of(json);
    CHECK(c.q_lora_rank == 768 && c.kv_lora_rank == 512 && c.head_dim == 256 && c.qk_rope_dim == 64 && c.v_head_dim == 256);
    CHECK(c.rope_interleaved && c.n_kv_head == 20 && c.norm_eps == 1e-5f && c.moe_sigmoid && c.moe_correction);
    CHECK(c.n_experts == 64 && c.experts_per_token == 4 && c.expert_intermediate == 1536 && c.moe_scale == 1.8f);
    CHECK(c.norm_topk && c.shared_intermediate == 1536 && c.sparse[0] == ((((uint64_t)1 << 47) - 1) & ~(uint64_t)1));
    CHECK_EQ_INT(zt_model_config_params(&c), 29943390976);
    snprintf(json, sizeof json, lite, 3, ", \"mlp_layer_types\": [\"dense\", \"dense\", \"sparse\"], \"q_lora_rank\": null, "
             "\"first_k_dense_replace\": 0, \"head_dim\": 32, \"qk_nope_head_dim\": 224");
    c = config_of(json); /* first_k_dense_replace unread; head_dim its name for qk_rope_head_dim when that is absent */
    CHECK(c.sparse[0] == 4 && c.q_lora_rank == 0 && c.qk_rope_dim == 32 && c.head_dim == 256);
    snprintf(json, sizeof json, lite, 3, ", \"mlp_layer_types\": [\"dense\", \"dense\", \"sparse\"], \"q_lora_rank\": null");
    c = config_of(json);
    CHECK_EQ_INT(zt_model_config_params(&c), 1453997568);
    snprintf(json, sizeof json, lite, 3, ", \"mlp_layer_types\": [\"dense\", \"sparse\"]");
    config_error(json, "\"mlp_layer_types\" names 2 layers; num_hidden_layers is 3");
    snprintf(json, sizeof json, lite, 2, ", \"mlp_layer_types\": [\"dense\", \"moe\"]");
    config_error(json, "mlp_layer_types[1] is \"moe\"; it must be \"dense\" or \"sparse\"");
}

/* dots.llm1 (dots1): its 142B shape, parameters as transformers counts them, its windows past max_window_layers (62
   by default: none on a 62-layer model), and the keys Dots1Config has no default for */
TEST(dots1_configs_take_transformers_defaults) {
    char json[1024];
    const char *dots = "{\"model_type\": \"dots1\", \"num_hidden_layers\": %d, \"num_attention_heads\": 32, "
                       "\"num_key_value_heads\": 32, \"hidden_size\": 4096, \"intermediate_size\": 10944, "
                       "\"moe_intermediate_size\": 1408, \"max_position_embeddings\": 32768, \"vocab_size\": 152064, "
                       "\"n_routed_experts\": 128, \"num_experts_per_tok\": 6, \"n_shared_experts\": 2%s}";
    snprintf(json, sizeof json, dots, 62, ", \"first_k_dense_replace\": 1, \"routed_scaling_factor\": 2.5, "
             "\"norm_topk_prob\": true");
    zt_model_config c = config_of(json);
    CHECK(c.qk_norm == 1 && c.head_dim == 128 && c.sliding_window == 0 && c.moe_sigmoid && c.moe_correction);
    CHECK(c.moe_groups == 1 && c.moe_scale == 2.5f && c.norm_topk && c.shared_intermediate == 2816 && c.router_f32);
    CHECK(c.sparse[0] == ((((uint64_t)1 << 62) - 1) & ~(uint64_t)1));
    CHECK_EQ_INT(zt_model_config_params(&c), 142774373888);
    snprintf(json, sizeof json, dots, 4, ", \"max_window_layers\": 2, \"sliding_window\": 512");
    c = config_of(json); /* Dots1Config's: norm_topk_prob false, every layer sparse, windows from layer 2 */
    CHECK(!c.norm_topk && c.sparse[0] == 15 && c.sliding_window == 512 && c.windowed[0] == 12);
    snprintf(json, sizeof json, dots, 4, ", \"max_window_layers\": 2");
    CHECK(config_of(json).sliding_window == 4096); /* its default window */
    const char *need = "{\"model_type\": \"dots1\", \"num_hidden_layers\": 2, \"num_attention_heads\": 32, "
                       "\"hidden_size\": 4096, \"intermediate_size\": 10944, \"max_position_embeddings\": 32768, "
                       "\"vocab_size\": 152064, \"n_routed_experts\": 128, \"num_experts_per_tok\": 6}";
    config_error(need, "dots1 needs \"n_shared_experts\" (Dots1Config has no default for it)");
}

/* Hunyuan (hunyuan_v1_dense): Hunyuan-7B's shape, its parameters as transformers counts them, the rope's base
   stretched by alpha (the "dynamic" type with alpha: transformers' ntk_alpha, for Hunyuan alone) */
TEST(hunyuan_configs_take_transformers_defaults) {
    char json[1024];
    const char *hy = "{\"model_type\": \"hunyuan_v1_dense\", \"num_hidden_layers\": %d, \"num_attention_heads\": 32, "
                     "\"num_key_value_heads\": 8, \"head_dim\": 128, \"hidden_size\": 4096, \"intermediate_size\": 14336, "
                     "\"max_position_embeddings\": 32768, \"vocab_size\": 128167%s}";
    snprintf(json, sizeof json, hy, 32, ", \"tie_word_embeddings\": true, \"rope_scaling\": {\"type\": \"dynamic\", "
             "\"alpha\": 1000.0, \"factor\": 1.0, \"beta_fast\": 32, \"beta_slow\": 1, \"mscale\": 1.0}");
    zt_model_config c = config_of(json);
    CHECK(c.qk_norm == 1 && c.qk_norm_after_rope && c.norm_eps == 1e-5f && c.has_pad_token && c.pad_token_id == 0);
    CHECK(c.rope_theta == (float)(1e4 * pow(1000.0, 128.0 / 126.0)) && c.rope_scaling.factor == 0 && !c.qkv_bias);
    CHECK_EQ_INT(zt_model_config_params(&c), 7504568320);
    snprintf(json, sizeof json, hy, 2, ", \"rope_scaling\": {\"type\": \"dynamic\", \"alpha\": -1, \"factor\": 1.0}");
    config_error(json, "rope_scaling's \"alpha\" must be positive, found -1");
    snprintf(json, sizeof json, hy, 2, ", \"rope_parameters\": {\"rope_type\": \"dynamic\", \"rope_theta\": 5e5, \"factor\": 2}");
    CHECK(config_of(json).rope_theta == 5e5f); /* no alpha: the dynamic rope, plain below max_position_embeddings */
    const char *llama = "{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                        "\"hidden_size\": 64, \"intermediate_size\": 128, \"max_position_embeddings\": 64, "
                        "\"vocab_size\": 100, \"rope_scaling\": {\"type\": \"dynamic\", \"factor\": 2, \"alpha\": 1000}}";
    CHECK(config_of(llama).rope_theta == 1e4f); /* LLaMA's rope reads no alpha */
}

/* Hunyuan MoE (hunyuan_v1_moe): Hunyuan-A13B's shape, its parameters as transformers counts them, per-layer lists
   refused */
TEST(hunyuan_moe_configs_take_transformers_defaults) {
    char json[1024];
    const char *hy = "{\"model_type\": \"hunyuan_v1_moe\", \"num_hidden_layers\": %d, \"num_attention_heads\": 32, "
                     "\"num_key_value_heads\": 8, \"head_dim\": 128, \"hidden_size\": 4096, \"intermediate_size\": 3072, "
                     "\"max_position_embeddings\": 32768, \"vocab_size\": 128167%s}";
    snprintf(json, sizeof json, hy, 32, ", \"tie_word_embeddings\": true, \"num_experts\": 64, \"moe_topk\": 8");
    zt_model_config c = config_of(json);
    CHECK(c.qk_norm_after_rope && c.n_experts == 64 && c.experts_per_token == 8 && c.expert_intermediate == 3072);
    CHECK(c.shared_intermediate == 3072 && c.shared_ungated && c.norm_topk && !c.moe_sigmoid && !c.router_f32);
    CHECK(c.sparse[0] == 0xffffffffull && c.router_aux_coef == 0.0f);
    CHECK_EQ_INT(zt_model_config_params(&c), 80393183232);
    snprintf(json, sizeof json, hy, 2, "");
    c = config_of(json); /* HunYuanMoEV1Config's: one expert, one a token */
    CHECK(c.n_experts == 1 && c.experts_per_token == 1);
    snprintf(json, sizeof json, hy, 2, ", \"num_experts\": 8, \"moe_topk\": [2, 2]");
    config_error(json, "\"moe_topk\" is a list (a number for each layer); zt does not implement it");
    snprintf(json, sizeof json, hy, 2, ", \"num_experts\": 8, \"moe_topk\": 9");
    config_error(json, "\"moe_topk\" is 9; it must be 1 to the 8 experts");
}

/* gpt-oss (gpt_oss): gpt-oss-20b's config.json as the hub has it (its rope in rope_scaling, its experts_per_token and
   initial_context_length beside transformers' keys; quantization_config left out), gpt-oss-120b's with GptOssConfig's
   defaults for the rest (128 experts, 4 a token, heads of 64, 8 kv heads; no rope given: yarn by 32 over 4096 positions, the even layers windowed at 128), and their
   parameters as transformers counts them on the meta device */
TEST(gpt_oss_configs_take_transformers_defaults) {
    char json[1024];
    const char *g20 = "{\"model_type\": \"gpt_oss\", \"attention_bias\": true, \"experts_per_token\": 4, \"head_dim\": 64, "
                      "\"hidden_act\": \"silu\", \"hidden_size\": 2880, \"initial_context_length\": 4096, "
                      "\"intermediate_size\": 2880, \"max_position_embeddings\": 131072, \"num_attention_heads\": 64, "
                      "\"num_experts_per_tok\": 4, \"num_hidden_layers\": 24, \"num_key_value_heads\": 8, "
                      "\"num_local_experts\": 32, \"output_router_logits\": false, \"pad_token_id\": 199999, "
                      "\"rms_norm_eps\": 1e-05, \"rope_scaling\": {\"beta_fast\": 32.0, \"beta_slow\": 1.0, \"factor\": "
                      "32.0, \"original_max_position_embeddings\": 4096, \"rope_type\": \"yarn\", \"truncate\": false}, "
                      "\"rope_theta\": 150000, \"router_aux_loss_coef\": 0.9, \"sliding_window\": 128, \"swiglu_limit\": 7.0, "
                      "\"tie_word_embeddings\": false, \"vocab_size\": 201088}";
    zt_model_config c = config_of(g20);
    CHECK(c.attn_sinks && c.experts_packed && c.n_experts == 32 && c.experts_per_token == 4 && c.expert_intermediate == 2880);
    CHECK(c.norm_topk && !c.moe_sigmoid && !c.router_f32 && c.router_aux_coef == 0.0f && c.sparse[0] == 0xffffffull);
    CHECK(c.qkv_bias && c.out_bias && c.sliding_window == 128 && c.windowed[0] == 0x555555ull && c.head_dim == 64);
    CHECK(c.rope_scaling.yarn && c.rope_scaling.factor == 32.0f && !c.rope_scaling.truncate && c.rope_theta == 150000.0f);
    CHECK(c.swiglu_alpha == 1.702f && c.swiglu_limit == 7.0f && c.has_pad_token && c.pad_token_id == 199999);
    CHECK_EQ_INT(zt_model_config_params(&c), 20914757184);
    const char *g = "{\"model_type\": \"gpt_oss\", \"num_hidden_layers\": 36, \"hidden_size\": 2880, \"intermediate_size\": "
                    "2880, \"num_attention_heads\": 64, \"max_position_embeddings\": 131072, \"vocab_size\": 201088, "
                    "\"pad_token_id\": 199999%s}";
    snprintf(json, sizeof json, g, "");
    c = config_of(json); /* GptOssConfig's: 36 layers of 128 experts, 4 a token, and its rope */
    CHECK(c.n_layer == 36 && c.n_experts == 128 && c.experts_per_token == 4 && c.hidden == 2880 && c.n_kv_head == 8);
    CHECK(c.rope_scaling.yarn && c.rope_scaling.factor == 32.0f && c.rope_scaling.original_max_positions == 4096.0f &&
          !c.rope_scaling.truncate && fabsf(c.rope_scaling.attention_factor - 1.3465736f) < 1e-6f);
    CHECK(c.sliding_window == 128 && c.windowed[0] == 0x555555555ull && c.norm_eps == 1e-5f);
    CHECK_EQ_INT(zt_model_config_params(&c), 116829156672);
    snprintf(json, sizeof json, g, ", \"swiglu_limit\": 0");
    config_error(json, "\"swiglu_alpha\" must be finite and \"swiglu_limit\" positive, found 1.702 and 0");
    snprintf(json, sizeof json, g, ", \"quantization_config\": {\"quant_method\": \"mxfp4\"}");
    CHECK(config_of(json).mxfp4); /* its released files: the experts dequantized on load */
    snprintf(json, sizeof json, g, ", \"quantization_config\": {\"quant_method\": \"bitsandbytes\"}");
    config_error(json, "\"quantization_config\" is set (bitsandbytes)");
    const char *qwen = "{\"model_type\": \"qwen2\", \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"hidden_size\": 64, "
                       "\"intermediate_size\": 128, \"max_position_embeddings\": 64, \"vocab_size\": 100, "
                       "\"quantization_config\": {\"quant_method\": \"mxfp4\"}}";
    config_error(qwen, "\"quantization_config\" is set (mxfp4): the checkpoint's weights are quantized"); /* gpt-oss's alone */
}

/* Kimi K2 (kimi_k2): its config.json as the hub has it (DeepSeek-V3's keys and model, its FP8 blocks) read as
   DeepSeek-V3's, and its parameters as transformers' DeepseekV3Config counts them on the meta device */
TEST(kimi_k2_configs_are_deepseek_v3s) {
    const char *k2 = "{\"architectures\": [\"DeepseekV3ForCausalLM\"], \"attention_bias\": false, \"aux_loss_alpha\": 0.001, "
                     "\"first_k_dense_replace\": 1, \"hidden_act\": \"silu\", \"hidden_size\": 7168, \"intermediate_size\": 18432, "
                     "\"kv_lora_rank\": 512, \"max_position_embeddings\": 131072, \"model_type\": \"kimi_k2\", "
                     "\"moe_intermediate_size\": 2048, \"moe_layer_freq\": 1, \"n_group\": 1, \"n_routed_experts\": 384, "
                     "\"n_shared_experts\": 1, \"norm_topk_prob\": true, \"num_attention_heads\": 64, \"num_experts_per_tok\": 8, "
                     "\"num_hidden_layers\": 61, \"num_key_value_heads\": 64, \"num_nextn_predict_layers\": 0, "
                     "\"q_lora_rank\": 1536, \"qk_nope_head_dim\": 128, \"qk_rope_head_dim\": 64, \"quantization_config\": "
                     "{\"activation_scheme\": \"dynamic\", \"fmt\": \"e4m3\", \"quant_method\": \"fp8\", \"weight_block_size\": "
                     "[128, 128]}, \"rms_norm_eps\": 1e-06, \"rope_scaling\": {\"beta_fast\": 1.0, \"beta_slow\": 1.0, "
                     "\"factor\": 32.0, \"mscale\": 1.0, \"mscale_all_dim\": 1.0, \"original_max_position_embeddings\": 4096, "
                     "\"type\": \"yarn\"}, \"rope_theta\": 50000.0, \"routed_scaling_factor\": 2.827, \"scoring_func\": "
                     "\"sigmoid\", \"seq_aux\": true, \"tie_word_embeddings\": false, \"topk_group\": 1, \"topk_method\": "
                     "\"noaux_tc\", \"v_head_dim\": 128, \"vocab_size\": 163840}";
    zt_model_config c = config_of(k2);
    CHECK(strcmp(c.model_type, "deepseek_v3") == 0 && c.kv_lora_rank == 512 && c.q_lora_rank == 1536 && c.head_dim == 192);
    CHECK(c.moe_sigmoid && c.moe_correction && c.n_experts == 384 && c.experts_per_token == 8 && c.moe_groups == 1);
    CHECK(fabsf(c.moe_scale - 2.827f) < 1e-6f && c.norm_topk && c.shared_intermediate == 2048 && (c.sparse[0] & 1) == 0);
    CHECK(c.fp8_block[0] == 128 && c.fp8_block[1] == 128 && c.rope_scaling.yarn && c.rope_theta == 50000.0f);
    CHECK_EQ_INT(zt_model_config_params(&c), 1026408209408);
}

/* Fine-grained FP8 (DeepSeek-V3's, Qwen3's -FP8 files): read by any model, its blocks 128 x 128 unless given; e5m2 or
   ue8m0 scales, and blocks that are no two sizes, refused by name */
TEST(fp8_configs_take_their_blocks) {
    char json[1024];
    const char *q = "{\"model_type\": \"qwen3\", \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"hidden_size\": 64, "
                    "\"intermediate_size\": 128, \"max_position_embeddings\": 64, \"vocab_size\": 100, "
                    "\"quantization_config\": {\"quant_method\": \"fp8\"%s}}";
    snprintf(json, sizeof json, q, ", \"activation_scheme\": \"dynamic\", \"fmt\": \"e4m3\", \"weight_block_size\": [128, 64]");
    zt_model_config c = config_of(json);
    CHECK(c.fp8_block[0] == 128 && c.fp8_block[1] == 64 && !c.mxfp4);
    snprintf(json, sizeof json, q, "");
    c = config_of(json);
    CHECK(c.fp8_block[0] == 128 && c.fp8_block[1] == 128);
    snprintf(json, sizeof json, q, ", \"fmt\": \"float8_e4m3fn\"");
    CHECK(config_of(json).fp8_block[0] == 128); /* torch's name for e4m3 */
    snprintf(json, sizeof json, q, ", \"fmt\": \"e5m2\"");
    config_error(json, "quantization_config's fp8 has fmt \"e5m2\" and scale_fmt \"float\"; zt reads e4m3 weights");
    snprintf(json, sizeof json, q, ", \"scale_fmt\": \"ue8m0\"");
    config_error(json, "scale_fmt \"ue8m0\"");
    snprintf(json, sizeof json, q, ", \"weight_block_size\": [128]");
    config_error(json, "quantization_config.weight_block_size");
    snprintf(json, sizeof json, q, ", \"weight_block_size\": [0, 128]");
    config_error(json, "quantization_config.weight_block_size[0] must be 1 to 65536, found 0");
}

/* Ministral (ministral) and Mistral: their configs' window of 4096 where the key is absent (MistralConfig's and
   MinistralConfig's default; null: none); Ministral's every layer unless layer_types names them */
TEST(ministral_windows_as_transformers) {
    char json[768];
    const char *m = "{\"model_type\": \"%s\", \"num_hidden_layers\": 3, \"num_attention_heads\": 4, \"head_dim\": 16, "
                    "\"hidden_size\": 64, \"intermediate_size\": 128, \"max_position_embeddings\": 8192, "
                    "\"vocab_size\": 100%s}";
    snprintf(json, sizeof json, m, "ministral", "");
    zt_model_config c = config_of(json);
    CHECK(c.sliding_window == 4096 && c.windowed[0] == 7);
    snprintf(json, sizeof json, m, "mistral", "");
    c = config_of(json);
    CHECK(c.sliding_window == 4096 && c.windowed[0] == 7);
    snprintf(json, sizeof json, m, "mistral", ", \"sliding_window\": null");
    CHECK(config_of(json).sliding_window == 0);
    snprintf(json, sizeof json, m, "ministral", ", \"sliding_window\": 512, \"layer_types\": [\"sliding_attention\", "
             "\"full_attention\", \"sliding_attention\"]");
    c = config_of(json);
    CHECK(c.sliding_window == 512 && c.windowed[0] == 5);
}

/* a quantized checkpoint's config (GPTQ's, AWQ's, bitsandbytes': all but gpt-oss's MXFP4 and fine-grained FP8) is refused
   before any weight is read */
TEST(quantized_checkpoints_are_refused_by_their_config) {
    config_error("{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"hidden_size\": 64, "
                 "\"intermediate_size\": 128, \"max_position_embeddings\": 64, \"vocab_size\": 100, "
                 "\"quantization_config\": {\"bits\": 4, \"group_size\": 128, \"quant_method\": \"gptq\"}}",
                 "\"quantization_config\" is set (gptq): the checkpoint's weights are quantized, and zt trains f32, bf16 or "
                 "f16 weights; dequantize it to bf16 first");
    config_error("{\"model_type\": \"qwen2\", \"quantization_config\": 4}", "\"quantization_config\" is set (its "
                 "quant_method not named)");
    zt_model_config c = config_of("{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                                  "\"hidden_size\": 64, \"intermediate_size\": 128, \"max_position_embeddings\": 64, "
                                  "\"vocab_size\": 100, \"quantization_config\": null}");
    CHECK(c.n_layer == 2); /* null: none */
}

/* MiniMax-M2 (minimax_m2): MiniMaxM2Config's defaults (its 230B shape), its files' rotary_dim, parameters as transformers
   counts them, and what is refused */
TEST(minimax_m2_configs_take_transformers_defaults) {
    char json[768];
    const char *mm = "{\"model_type\": \"minimax_m2\", \"num_hidden_layers\": %d, \"num_attention_heads\": 48, "
                     "\"hidden_size\": 3072, \"intermediate_size\": 1536, \"max_position_embeddings\": 196608, "
                     "\"vocab_size\": 200064%s}";
    snprintf(json, sizeof json, mm, 62, "");
    zt_model_config c = config_of(json);
    CHECK(c.moe_sigmoid && c.n_experts == 256 && c.experts_per_token == 8 && c.expert_intermediate == 1536 && c.norm_topk);
    CHECK(c.head_dim == 128 && c.n_kv_head == 8 && c.qk_norm == 2 && c.rotary_dim == 0 && c.rope_theta == 5e6f);
    CHECK(c.shared_intermediate == 0 && c.moe_groups == 1 && c.router_aux_coef == 0.0f && !c.tied_embeddings);
    CHECK_EQ_INT(zt_model_config_params(&c), 228689748992);
    snprintf(json, sizeof json, mm, 2, ", \"rotary_dim\": 64, \"num_local_experts\": 32, \"num_experts_per_tok\": 4, "
             "\"norm_topk_prob\": false, \"router_jitter_noise\": 0.1, \"output_router_logits\": false");
    c = config_of(json); /* rotary_dim 64 of 128; always normalized; the jitter read, as Mixtral's */
    CHECK(c.rotary_dim == 64 && c.n_experts == 32 && c.experts_per_token == 4 && c.norm_topk && c.router_jitter == 0.1f);
    CHECK_EQ_INT(zt_model_config_params(&c), 2223469568);
    snprintf(json, sizeof json, mm, 2, ", \"output_router_logits\": true");
    config_error(json, "\"output_router_logits\" is true");
}

/* ERNIE 4.5 MoE (ernie4_5_moe): Ernie4_5_MoeConfig's defaults (ERNIE-4.5-21B-A3B's shape), its layer range and interval,
   parameters as transformers counts them (its routers' corrections are parameters there), and what is refused */
TEST(ernie4_5_moe_configs_take_transformers_defaults) {
    char json[768];
    const char *ernie = "{\"model_type\": \"ernie4_5_moe\", \"num_hidden_layers\": %d, \"num_attention_heads\": 20, "
                        "\"hidden_size\": 2560, \"intermediate_size\": 12288, \"max_position_embeddings\": 131072, "
                        "\"vocab_size\": 103424%s}";
    snprintf(json, sizeof json, ernie, 28, "");
    zt_model_config c = config_of(json);
    CHECK(!c.moe_sigmoid && c.moe_correction && c.n_experts == 64 && c.experts_per_token == 6 && c.norm_topk);
    CHECK(c.expert_intermediate == 1536 && c.shared_intermediate == 3072 && c.shared_ungated && c.head_dim == 128);
    CHECK(c.n_kv_head == 4 && c.rope_interleaved && c.tied_embeddings && c.rope_theta == 5e5f && c.pad_token_id == 0);
    CHECK(c.sparse[0] == (((uint64_t)1 << 28) - 2)); /* layer 0 dense */
    CHECK_EQ_INT(zt_model_config_params(&c), 21825437888);
    snprintf(json, sizeof json, ernie, 4, ", \"moe_layer_start_index\": 0, \"moe_layer_end_index\": 2, "
             "\"moe_layer_interval\": 2, \"moe_num_shared_experts\": 0, \"moe_num_experts\": 16, \"moe_k\": 4");
    c = config_of(json); /* every second layer from 0 to 2: layer 1 alone */
    CHECK(c.sparse[0] == 2 && c.n_experts == 16 && c.experts_per_token == 4 && c.shared_intermediate == 0);
    CHECK_EQ_INT(zt_model_config_params(&c), 799603216);
    snprintf(json, sizeof json, ernie, 4, ", \"num_local_experts\": 8, \"num_experts\": 32");
    c = config_of(json); /* num_experts, its attribute_map's name for moe_num_experts; num_local_experts no key of its */
    CHECK(c.n_experts == 32);
    snprintf(json, sizeof json, ernie, 4, ", \"output_router_logits\": true");
    config_error(json, "\"output_router_logits\" is true");
    snprintf(json, sizeof json, ernie, 4, ", \"use_bias\": true");
    config_error(json, "\"use_bias\" is true");
}

/* Phi (phi-1, 1.5 and 2): PhiConfig's defaults (phi-1.5's shape) and phi-2's, parameters as transformers counts them
   (the output layer's bias among them), and what is refused */
TEST(phi_configs_take_transformers_defaults) {
    char json[768];
    const char *phi = "{\"model_type\": \"phi\", \"num_hidden_layers\": %d, \"num_attention_heads\": 32, "
                      "\"hidden_size\": %d, \"intermediate_size\": %d, \"max_position_embeddings\": 2048, "
                      "\"vocab_size\": 51200%s}";
    snprintf(json, sizeof json, phi, 24, 2048, 8192, "");
    zt_model_config c = config_of(json);
    CHECK(c.layernorm && c.norm_bias && c.parallel_block && c.plain_mlp && c.qkv_bias && c.out_bias && c.mlp_bias);
    CHECK(c.head_bias && !c.tied_embeddings && c.n_kv_head == 32 && c.rotary_dim == 32 && c.norm_eps == 1e-5f);
    CHECK(c.embd_dropout == 0.0f && c.resid_dropout == 0.0f && c.attn_dropout == 0.0f && !c.qk_norm);
    CHECK_EQ_INT(zt_model_config_params(&c), 1418270720);
    snprintf(json, sizeof json, phi, 32, 2560, 10240, ", \"partial_rotary_factor\": 0.4, \"resid_pdrop\": 0.1, "
             "\"embd_pdrop\": 0.05, \"attention_bias\": false, \"qk_layernorm\": false, \"layer_norm_eps\": 1e-3");
    c = config_of(json); /* phi-2; Phi's projections always have biases */
    CHECK(c.rotary_dim == 32 && c.qkv_bias && c.out_bias && c.resid_dropout == 0.1f && c.embd_dropout == 0.05f);
    CHECK(c.norm_eps == 1e-3f);
    CHECK_EQ_INT(zt_model_config_params(&c), 2779683840);
    snprintf(json, sizeof json, phi, 2, 2048, 8192, ", \"qk_layernorm\": true");
    config_error(json, "\"qk_layernorm\" is true");
    snprintf(json, sizeof json, phi, 2, 2048, 8192, ", \"hidden_act\": \"relu\"");
    config_error(json, "zt implements Phi's gelu_new");
}

/* EXAONE 4: Exaone4Config's windows on all but every fourth layer, those without one going without the rope (its
   global NoPE), older files' "LLLG" pattern beside layer_types, and the parameter count of its default config */
TEST(exaone4_configs_take_transformers_defaults) {
    const char *base = "{\"model_type\": \"exaone4\", \"num_hidden_layers\": %d, \"num_attention_heads\": 32, "
                       "\"hidden_size\": 4096, \"intermediate_size\": 16384, \"max_position_embeddings\": 2048, "
                       "\"vocab_size\": 102400%s}";
    char json[768];
    snprintf(json, sizeof json, base, 32, "");
    zt_model_config c = config_of(json);
    CHECK(c.post_norms_only && c.qk_norm == 1 && c.sliding_window == 4096 && c.windowed[0] == 0x77777777u);
    CHECK(c.nope[0] == 0x88888888u && c.norm_eps == 1e-5f && !c.has_pad_token && c.n_kv_head == 32);
    CHECK_EQ_INT(zt_model_config_params(&c), 9429069824);
    snprintf(json, sizeof json, base, 2, ", \"sliding_window_pattern\": \"LG\", \"layer_types\": [\"sliding_attention\", "
             "\"full_attention\"]");
    c = config_of(json);
    CHECK(c.windowed[0] == 1 && c.nope[0] == 2);
    snprintf(json, sizeof json, base, 2, ", \"sliding_window\": null, \"layer_types\": [\"full_attention\", "
             "\"full_attention\"]");
    c = config_of(json);
    CHECK(c.sliding_window == 0 && c.windowed[0] == 0 && c.nope[0] == 0); /* no window: the rope everywhere */
    snprintf(json, sizeof json, base, 2, ", \"sliding_window\": null");
    config_error(json, "\"sliding_window\" is null or not positive while layers are sliding_attention");
    snprintf(json, sizeof json, base, 2, ", \"sliding_window_pattern\": \"LG\"");
    config_error(json, "\"sliding_window_pattern\" must be");
}

TEST(gemma_configs_take_transformers_defaults) {
    const char *base = "{\"model_type\": \"%s\", \"num_hidden_layers\": 3, \"num_attention_heads\": 2, \"hidden_size\": 16, "
                       "\"intermediate_size\": 8, \"max_position_embeddings\": 16, \"vocab_size\": 8, \"head_dim\": 32%s}";
    char json[512];
    zt_model_config c;
    snprintf(json, sizeof json, base, "gemma", ", \"hidden_act\": \"gelu\"");
    CHECK_MSG(zt_model_config_parse(&c, json, strlen(json), "config.json") == ZT_OK, "%s", zt_last_error());
    CHECK(c.geglu && c.norm_offset == 1.0f && c.embed_scale == 4.0f && c.tied_embeddings && !c.sandwich_norms);
    CHECK(c.has_pad_token && c.pad_token_id == 0 && c.attn_scale == 0 && c.attn_softcap == 0 && c.head_dim == 32);
    snprintf(json, sizeof json, base, "gemma2", "");
    CHECK_MSG(zt_model_config_parse(&c, json, strlen(json), "config.json") == ZT_OK, "%s", zt_last_error());
    CHECK(c.geglu && c.sandwich_norms && c.attn_scale == 1.0f / 16 && c.attn_softcap == 50 && c.logit_softcap == 30);
    CHECK_EQ_INT(c.sliding_window, 4096);
    CHECK_EQ_INT((int64_t)c.windowed[0], 5); /* layers 0 and 2 of 3 */
    snprintf(json, sizeof json, base, "gemma2", ", \"attn_logit_softcapping\": null, \"final_logit_softcapping\": null, "
             "\"sliding_window\": null, \"query_pre_attn_scalar\": 144");
    CHECK_MSG(zt_model_config_parse(&c, json, strlen(json), "config.json") == ZT_OK, "%s", zt_last_error());
    CHECK(c.attn_softcap == 0 && c.logit_softcap == 0 && c.sliding_window == 0 && c.attn_scale == 1.0f / 12);
    /* 16 + 2 * 16 norm weights more per layer than Gemma */
    zt_model_config g = c;
    snprintf(json, sizeof json, base, "gemma", "");
    CHECK_MSG(zt_model_config_parse(&c, json, strlen(json), "config.json") == ZT_OK, "%s", zt_last_error());
    CHECK_EQ_INT(zt_model_config_params(&g) - zt_model_config_params(&c), 3 * 2 * 16);
    /* Gemma 3 as its first configs write it: rope_theta for the full layers (scaled), rope_local_base_freq for the
       windowed ones, a window on all but every sliding_window_pattern-th layer; no score cap (its attention
       never reads attn_logit_softcapping), per-head norms */
    snprintf(json, sizeof json, "{\"model_type\": \"gemma3_text\", \"num_hidden_layers\": 7, \"num_attention_heads\": 2, "
             "\"hidden_size\": 16, \"intermediate_size\": 8, \"max_position_embeddings\": 16, \"vocab_size\": 8, "
             "\"head_dim\": 32, \"sliding_window\": 512, \"sliding_window_pattern\": 3, \"rope_local_base_freq\": 20000, "
             "\"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 8.0}, \"attn_logit_softcapping\": 50}");
    CHECK_MSG(zt_model_config_parse(&c, json, strlen(json), "config.json") == ZT_OK, "%s", zt_last_error());
    CHECK(c.qk_norm && c.sandwich_norms && c.geglu && c.attn_softcap == 0 && c.logit_softcap == 0);
    CHECK(c.rope_theta == 1e6f && c.local_rope_theta == 20000 && c.rope_scaling.linear && c.rope_scaling.factor == 8);
    CHECK_EQ_INT(c.sliding_window, 512);
    CHECK_EQ_INT((int64_t)c.windowed[0], 1 + 2 + 8 + 16 + 64); /* layers 2 and 5 are full */
    config_error("{\"model_type\": \"gemma3\", \"text_config\": {}}", "zt trains the text model alone, model_type \"gemma3_text\"");
    config_error("{\"model_type\": \"gemma3_text\", \"rope_parameters\": {\"full_attention\": {\"rope_type\": \"default\"}, "
                 "\"sliding_attention\": {\"rope_type\": \"linear\", \"factor\": 2}}}",
                 "rope_parameters.sliding_attention is scaled");
    config_error("{\"model_type\": \"llama\", \"rope_scaling\": {\"rope_type\": \"linear\"}}",
                 "rope_scaling of type linear needs \"factor\"");
}

TEST(malformed_json_is_refused_with_its_place) {
    config_error("{\"model_type\": \"gpt2\",}", "line 1, column 22: a comma before the closing bracket");
    config_error("{\"model_type\": \"gpt2\", \"a\": [1, 2,]}", "line 1, column 34: a comma before the closing bracket");
    config_error("{\"model_type\" \"gpt2\"}", "expected a colon");
    config_error("{\"model_type\": \"gpt2\", \"x\": tru}", "not a number, true, false or null");
    config_error("{\"model_type\": \"gpt2\", \"n_layer\": 01}", "not a number");
    config_error("{\"model_type\": \"gpt2\", \"n_layer\": 1.2.3}", "not a number");
    config_error("{\"model_type\": \"gpt2\",\n \"model_type\": \"gpt2\"}", "line 2, column 2: duplicate key \"model_type\"");
    config_error("{\"model_type\": \"gpt2\"} x", "line 1, column 24");
    config_error("{\"model_type\": \"gpt2\"} {}", "text after the end of the object");
    config_error("{\"model_type\": \"gp\\q\"}", "line 1, column 16");
    config_error("[1, 2]", "the file must hold one object");
    config_error("{\"model_type\": \"gpt2\"", "unexpected end of file");
    config_error("", "empty file");
}

TEST(model_config_reads_files_and_says_which) {
    zt_model_config c;
    CHECK(zt_model_config_read(&c, "/nonexistent/dir") == ZT_ERROR_IO);
    CHECK_STR_CONTAINS(zt_last_error(), "/nonexistent/dir/config.json");
    c = config_of(LLAMA_JSON);
    CHECK_EQ_INT(c.vocab_padded, 128);
    CHECK_EQ_INT(c.head_dim, 8);
    CHECK_EQ_INT(c.n_kv_head, 2);
    CHECK(c.tied_embeddings);
    CHECK(!c.qkv_bias);
    c = config_of("{\"model_type\": \"qwen2\", \"num_hidden_layers\": 1, \"num_attention_heads\": 2, "
                  "\"hidden_size\": 8, \"intermediate_size\": 8, \"max_position_embeddings\": 8, "
                  "\"vocab_size\": 8, \"sliding_window\": 4, \"use_sliding_window\": false}");
    CHECK(c.qkv_bias && !c.out_bias);
    CHECK_EQ_INT(c.sliding_window, 0);
}

TEST(flags_are_checked) {
    zt_options o = zt_options_default();
    char *ok[] = {(char *)"prog", (char *)"--learning_rate", (char *)"3e-4", (char *)"--bf16",
                  (char *)"--per_device_train_batch_size=4", (char *)"--gradient_checkpointing"};
    CHECK(zt_options_parse_args(&o, 6, ok) == ZT_OK);
    CHECK_NEAR(o.lr, 3e-4, 1e-10);
    CHECK(o.precision == ZT_PRECISION_BF16);
    CHECK_EQ_INT(o.micro_batch, 4);
    CHECK(o.gradient_checkpointing);
    char *bad1[] = {(char *)"prog", (char *)"--learning_rat", (char *)"1"};
    CHECK(zt_options_parse_args(&o, 3, bad1) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "unknown flag --learning_rat");
    char *bad2[] = {(char *)"prog", (char *)"--max_steps", (char *)"ten"};
    CHECK(zt_options_parse_args(&o, 3, bad2) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "--max_steps expects a non-negative integer, found \"ten\"");
    char *bad3[] = {(char *)"prog", (char *)"--seed"};
    CHECK(zt_options_parse_args(&o, 2, bad3) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "--seed needs a value");
}

/* switches take values as HfArgumentParser's do (--bf16 True), --optim takes AdamW's names, --tf32 is taken */
/* --bf16 and --fp16 together are refused, as transformers refuses them; a switch's false takes back its own true */
TEST(flags_bf16_and_fp16_are_one_or_the_other) {
    zt_options o = zt_options_default();
    char *both[] = {(char *)"p", (char *)"--bf16", (char *)"--fp16"};
    CHECK(zt_options_parse_args(&o, 3, both) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "--bf16 and --fp16 are both true");
    o = zt_options_default();
    char *back[] = {(char *)"p", (char *)"--bf16", (char *)"--fp16", (char *)"True", (char *)"--bf16", (char *)"false"};
    CHECK_MSG(zt_options_parse_args(&o, 6, back) == ZT_OK, "%s", zt_last_error());
    CHECK(o.precision == ZT_PRECISION_FP16 && !zt_options_given(&o, "bf16") && zt_options_given(&o, "fp16"));
    o = zt_options_default();
    char *off[] = {(char *)"p", (char *)"--bf16", (char *)"--bf16=false"};
    CHECK(zt_options_parse_args(&o, 3, off) == ZT_OK && o.precision == ZT_PRECISION_FP32);
}

TEST(flags_take_the_transformers_scripts_forms) {
    zt_options o = zt_options_default();
    char *hf[] = {(char *)"prog", (char *)"--bf16", (char *)"True", (char *)"--gradient_checkpointing", (char *)"yes",
                  (char *)"--optim", (char *)"adamw_torch_fused", (char *)"--tf32", (char *)"False", (char *)"--seed", (char *)"7"};
    CHECK_MSG(zt_options_parse_args(&o, 11, hf) == ZT_OK, "%s", zt_last_error());
    CHECK(o.precision == ZT_PRECISION_BF16 && o.gradient_checkpointing && o.seed == 7);
    o = zt_options_default();
    char *off[] = {(char *)"prog", (char *)"--bf16", (char *)"FALSE", (char *)"--gradient_checkpointing", (char *)"n",
                   (char *)"--fp16", (char *)"--max_steps", (char *)"3"};
    CHECK_MSG(zt_options_parse_args(&o, 8, off) == ZT_OK, "%s", zt_last_error());
    CHECK(o.precision == ZT_PRECISION_FP16 && !o.gradient_checkpointing && o.max_steps == 3); /* --fp16: next is a flag */
    CHECK(!zt_options_given(&o, "bf16") && zt_options_given(&o, "fp16"));
    char *bad[] = {(char *)"prog", (char *)"--bf16", (char *)"maybe"};
    CHECK(zt_options_parse_args(&o, 3, bad) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "--bf16 expects true or false, found \"maybe\"");
    char *opt[] = {(char *)"prog", (char *)"--optim", (char *)"adafactor"};
    CHECK(zt_options_parse_args(&o, 3, opt) == ZT_ERROR_UNSUPPORTED);
    CHECK_STR_CONTAINS(zt_last_error(), "--optim adafactor is not built");
    int takes = -1;
    CHECK(zt_options_is_flag("bf16", &takes) && takes == 2);
    CHECK(zt_options_is_flag("gradient_checkpointing", &takes) && takes == 2);
    CHECK(zt_options_is_flag("optim", &takes) && takes == 1);
    CHECK(zt_options_is_flag("tf32=true", &takes) && takes == 2);
}

TEST(engine_refuses_bad_settings) {
    zt_model_config c = config_of(GPT2_JSON);
    zt_model_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.config = &c;
    zt_options o = small_options(2, 64); /* the model's context is 32 */
    zt_engine *e = NULL;
    CHECK(zt_init_options(&e, &spec, &o) == ZT_ERROR_INVALID);
    CHECK(e == NULL);
    CHECK_STR_CONTAINS(zt_last_error(), "--seq_len 64 must be in [2, 32]");
    o = small_options(2, 16);
    o.device_bytes = 1000;
    CHECK(zt_init_options(&e, &spec, &o) == ZT_ERROR_MEMORY);
    CHECK_STR_CONTAINS(zt_last_error(), "MiB were given");
}

/* a block whose first weight is frozen: it never changes and has no gradient */
static void frozen_declare(zt_block_def *def, const void *config) {
    const mlp_config *c = (const mlp_config *)config;
    zt_block_param(def, "frozen.fc1.weight", zt_shape2(c->H, c->C), ZT_PARAM_FROZEN, ZT_INIT_NORMAL, 0.02f);
    zt_block_param(def, "frozen.fc1.bias", zt_shape1(c->H), 0, ZT_INIT_ZEROS, 0);
    zt_block_param(def, "frozen.fc2.weight", zt_shape2(c->C, c->H), ZT_PARAM_DECAY, ZT_INIT_NORMAL, 0.02f);
}
static const zt_block_type frozen_block = {"test.frozen", sizeof(mlp_saved), frozen_declare, mlp_forward,
                                           mlp_backward};

TEST(engine_frozen_parameters_stay_put) {
    zt_model_config c = config_of(GPT2_NODROP_JSON);
    mlp_config mc = {32, 48};
    const zt_block_type *blocks[3] = {zt_gpt2_embedding_block(), &frozen_block, zt_gpt2_head_block()};
    const void *configs[3] = {&c, &mc, &c};
    zt_model_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.n_blocks = 3, spec.blocks = blocks, spec.block_configs = configs;
    spec.hidden = 32, spec.vocab = 61, spec.max_seq = 32;
    zt_options o = small_options(2, 16);
    zt_engine *e = NULL;
    CHECK(zt_init_options(&e, &spec, &o) == ZT_OK);
    float w0[48 * 32], w1[48 * 32], f0[32 * 48], f1[32 * 48];
    CHECK(zt_param_get(e, "frozen.fc1.weight", w0, 48 * 32, 0) == ZT_OK);
    CHECK(zt_param_get(e, "frozen.fc2.weight", f0, 32 * 48, 0) == ZT_OK);
    int32_t tok[2 * 16];
    fill_tokens(tok, 32, 3, 61);
    for (int step = 0; step < 3; step++) {
        zt_forward_backward(e, tok, NULL, NULL, 2);
        if (step == 2) {
            CHECK(zt_param_get(e, "frozen.fc1.weight", w1, 48 * 32, 1) == ZT_ERROR_INVALID);
            CHECK_STR_CONTAINS(zt_last_error(), "is frozen");
        }
        zt_step(e);
    }
    CHECK(zt_param_get(e, "frozen.fc1.weight", w1, 48 * 32, 0) == ZT_OK);
    CHECK(zt_param_get(e, "frozen.fc2.weight", f1, 32 * 48, 0) == ZT_OK);
    zt_shutdown(e);
    CHECK(memcmp(w0, w1, sizeof w0) == 0);
    CHECK(memcmp(f0, f1, sizeof f0) != 0);
}

/* a block with every parameter frozen: its group holds no gradient, master or Adam state, in the plan
   and so in memory, at every ZeRO stage */
static void all_frozen_declare(zt_block_def *def, const void *config) {
    const mlp_config *c = (const mlp_config *)config;
    zt_block_param(def, "frozen.fc1.weight", zt_shape2(c->H, c->C), ZT_PARAM_FROZEN, ZT_INIT_NORMAL, 0.02f);
    zt_block_param(def, "frozen.fc1.bias", zt_shape1(c->H), ZT_PARAM_FROZEN, ZT_INIT_ZEROS, 0);
    zt_block_param(def, "frozen.fc2.weight", zt_shape2(c->C, c->H), ZT_PARAM_FROZEN, ZT_INIT_NORMAL, 0.02f);
}
static const zt_block_type all_frozen_block = {"test.all_frozen", sizeof(mlp_saved), all_frozen_declare, mlp_forward,
                                               mlp_backward};

TEST(engine_frozen_groups_hold_no_optimizer_state) {
    zt_model_config c = config_of(GPT2_NODROP_JSON);
    mlp_config mc = {32, 48};
    const zt_block_type *frozen[3] = {zt_gpt2_embedding_block(), &all_frozen_block, zt_gpt2_head_block()};
    const zt_block_type *trained[3] = {zt_gpt2_embedding_block(), &mlp_block, zt_gpt2_head_block()};
    const void *configs[3] = {&c, &mc, &c};
    zt_model_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.n_blocks = 3, spec.block_configs = configs;
    spec.hidden = 32, spec.vocab = 61, spec.max_seq = 32;
    for (int stage = 0; stage <= 2; stage += 2) {
        zt_options o = small_options(2, 16);
        o.precision = ZT_PRECISION_BF16;
        o.zero_stage = stage;
        zt_memory_plan pf, pt;
        spec.blocks = frozen;
        CHECK(zt_plan_memory(&pf, &spec, &o, 2) == ZT_OK);
        spec.blocks = trained;
        CHECK(zt_plan_memory(&pt, &spec, &o, 2) == ZT_OK);
        /* the block's 3120 elements padded to 2 x 1568 (two ranks' slices), each rank's 1568 at stage 2 */
        int64_t grads = stage ? 1568 : 3136, owned = stage ? 1568 : 3136;
        CHECK_EQ_INT(pt.bytes[ZT_MEM_PARAMS], pf.bytes[ZT_MEM_PARAMS]);
        /* the bytes of the tensors it would hold, each up to 128 bytes of alignment (and ASan's red zone) */
        int64_t dg = (int64_t)(pt.bytes[ZT_MEM_GRADS] - pf.bytes[ZT_MEM_GRADS]);
        int64_t dm = (int64_t)(pt.bytes[ZT_MEM_MASTER] - pf.bytes[ZT_MEM_MASTER]);
        int64_t da = (int64_t)(pt.bytes[ZT_MEM_OPTIM] - pf.bytes[ZT_MEM_OPTIM]);
        CHECK_MSG(dg >= grads * 4 && dg < grads * 4 + 128, "gradients: %lld bytes more", (long long)dg);
        CHECK_MSG(dm >= owned * 4 && dm < owned * 4 + 128, "master: %lld bytes more", (long long)dm);
        CHECK_MSG(da >= owned * 8 && da < owned * 8 + 256, "Adam: %lld bytes more", (long long)da);
    }
    /* and it trains (bf16 at stage 3, the frozen group's 16-bit weights split): they stay put */
    spec.blocks = frozen;
    zt_options o = small_options(2, 16);
    o.precision = ZT_PRECISION_BF16;
    o.zero_stage = 3;
    o.persistence_threshold = 0;
    zt_engine *e = NULL;
    CHECK(zt_init_options(&e, &spec, &o) == ZT_OK);
    float w0[48 * 32], w1[48 * 32];
    CHECK(zt_param_get(e, "frozen.fc2.weight", w0, 48 * 32, 0) == ZT_OK);
    int32_t tok[2 * 16];
    fill_tokens(tok, 32, 5, 61);
    zt_forward_backward(e, tok, NULL, NULL, 2);
    zt_step_info info = zt_step(e);
    CHECK(zt_param_get(e, "frozen.fc2.weight", w1, 48 * 32, 0) == ZT_OK);
    zt_shutdown(e);
    CHECK(info.loss > 0 && memcmp(w0, w1, sizeof w0) == 0);
}
