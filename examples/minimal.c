/* examples/minimal.c - the zt API in one page: a training loop you own, as with Accelerate's prepare,
   backward and step.

       build/minimal                          a model with a block of your own, on generated text
       build/minimal MODEL_DIR DATA [flags]   a built-in model (a config.json, and its weights when the
                                              directory has them) on a token or text file, the same
                                              losses, bit for bit, as zt_train with those flags

   The flags are Transformers TrainingArguments names: --max_steps 50 --learning_rate 1e-3 ... */
#include "../zt.h"
#include <stdlib.h>
#include <string.h>

/* A block of your own: out = inp + W2 gelu(W1 inp + b1). It declares its parameters, keeps what its
   backward needs, and accumulates gradients; the engine owns memory, optimizer state and the rest. */
typedef struct mlp { int64_t C, H; } mlp;
typedef struct mlp_saved { zt_tensor h, a; } mlp_saved;

static void mlp_declare(zt_block_def *def, const void *config) {
    const mlp *m = (const mlp *)config;
    char name[64]; /* unique in the model: checkpoints and exports find parameters by name */
    int b = zt_block_def_index(def);
    snprintf(name, sizeof name, "layers.%d.mlp.fc1.weight", b);
    zt_block_param(def, name, zt_shape2(m->H, m->C), ZT_PARAM_DECAY, ZT_INIT_NORMAL, 0.02f);
    snprintf(name, sizeof name, "layers.%d.mlp.fc1.bias", b);
    zt_block_param(def, name, zt_shape1(m->H), 0, ZT_INIT_ZEROS, 0);
    snprintf(name, sizeof name, "layers.%d.mlp.fc2.weight", b);
    zt_block_param(def, name, zt_shape2(m->C, m->H), ZT_PARAM_DECAY, ZT_INIT_NORMAL, 0.02f);
}

static void mlp_forward(zt_block_ctx *ctx, zt_tensor out, zt_tensor inp) {
    const mlp *m = (const mlp *)ctx->config;
    mlp_saved *sv = (mlp_saved *)ctx->saved;
    int64_t N = zt_rows(inp);
    sv->h = zt_block_keep(ctx, ctx->act, zt_shape2(N, m->H));
    sv->a = zt_block_keep(ctx, ctx->act, zt_shape2(N, m->H));
    zt_tensor y = zt_block_temp(ctx, ctx->act, zt_shape2(N, m->C));
    zt_matmul_forward(ctx->stream, sv->h, inp, ctx->param[0], &ctx->param[1]);
    zt_gelu_forward(ctx->stream, sv->a, sv->h);
    zt_matmul_forward(ctx->stream, y, sv->a, ctx->param[2], NULL);
    zt_add(ctx->stream, out, inp, y);
}

static void mlp_backward(zt_block_ctx *ctx, zt_tensor dinp, zt_tensor dout, zt_tensor inp) {
    const mlp *m = (const mlp *)ctx->config;
    mlp_saved *sv = (mlp_saved *)ctx->saved;
    int64_t N = zt_rows(inp);
    zt_tensor da = zt_block_temp(ctx, ctx->act, zt_shape2(N, m->H)), dh = zt_block_temp(ctx, ctx->act, zt_shape2(N, m->H));
    zt_fill(ctx->stream, da, 0.0f); /* backward ops accumulate */
    zt_fill(ctx->stream, dh, 0.0f);
    zt_matmul_backward(ctx->stream, &da, &ctx->grad[2], NULL, dout, sv->a, ctx->param[2]);
    zt_gelu_backward(ctx->stream, dh, da, sv->h);
    zt_add(ctx->stream, dinp, dinp, dout); /* the residual */
    zt_matmul_backward(ctx->stream, &dinp, &ctx->grad[0], &ctx->grad[1], dh, inp, ctx->param[0]);
}

static const zt_block_type MLP = {"minimal.mlp", sizeof(mlp_saved), mlp_declare, mlp_forward, mlp_backward};

/* generated text to learn from: sentences from a tiny grammar, as bytes */
static int64_t make_text(char *buf, int64_t cap) {
    static const char *who[] = {"the cat", "a dog", "my friend", "the old man", "her sister"};
    static const char *did[] = {"saw", "liked", "followed", "found", "called"};
    static const char *what[] = {"the ball", "a red box", "the moon", "his hat", "a small bird"};
    int64_t n = 0;
    for (unsigned i = 0; n + 64 < cap; i++)
        n += snprintf(buf + n, (size_t)(cap - n), "%s %s %s. ", who[i % 5], did[(i * 3 + i / 5) % 5], what[(i * 7 + i / 3) % 5]);
    return n;
}

int main(int argc, char **argv) {
    int builtin = argc >= 3;
    /* the model: a built-in one from its config.json, or the built-in embedding and head around ours */
    zt_model_config cfg;
    const char *json = "{\"model_type\": \"gpt2\", \"n_layer\": 1, \"n_head\": 1, \"n_embd\": 64, "
                       "\"n_positions\": 64, \"vocab_size\": 256, \"embd_pdrop\": 0}"; /* no embedding dropout (GPT-2's
                                                                                        default is 0.1) */
    if (zt_model_config_parse(&cfg, json, strlen(json), "minimal") != ZT_OK) return puts(zt_last_error()), 1;
    mlp m = {64, 256};
    const zt_block_type *blocks[4] = {zt_gpt2_embedding_block(), &MLP, &MLP, zt_gpt2_head_block()};
    const void *configs[4] = {&cfg, &m, &m, &cfg};
    zt_model_spec spec;
    memset(&spec, 0, sizeof spec);
    if (builtin) {
        spec.config_path = argv[1];
    } else {
        spec.n_blocks = 4, spec.blocks = blocks, spec.block_configs = configs;
        spec.hidden = 64, spec.vocab = 256, spec.max_seq = 64;
    }
    zt_options o = zt_options_default();
    if (!builtin) o.max_steps = 300, o.lr = 3e-3f, o.micro_batch = 8, o.seq_len = 32, o.warmup_steps = 20;
    if (zt_options_parse_args(&o, builtin ? argc - 2 : argc, builtin ? argv + 2 : argv) != ZT_OK)
        return puts(zt_last_error()), 2;
    zt_engine *e = NULL; /* plans memory, allocates it once, initialises the weights */
    if (zt_init_options(&e, &spec, &o) != ZT_OK) return puts(zt_last_error()), 1;
    if (builtin && zt_hf_has_weights(argv[1]) && zt_load_hf(e, argv[1]) != ZT_OK) /* its model.safetensors, if any */
        return puts(zt_last_error()), 1;
    o = *zt_engine_options(e); /* the settings the engine resolved (a seq_len of 0 became the model's context) */
    int64_t B = o.micro_batch, T = o.seq_len;
    int32_t *tok = (int32_t *)malloc(sizeof(int32_t) * (size_t)(2 * B * T)), *tgt = tok + B * T;

    /* the data: zt's loader for a file (as zt_train reads it), or windows of our generated text */
    zt_data *data = NULL;
    static char text[1 << 16];
    int64_t text_len = make_text(text, sizeof text);
    if (builtin) {
        zt_data_desc d;
        memset(&d, 0, sizeof d);
        d.path = argv[2], d.vocab = zt_engine_model_config(e)->vocab, d.seq_len = T, d.rows = B;
        d.seed = o.seed, d.shuffle = 1;
        if (zt_data_open(&data, &d) != ZT_OK) return puts(zt_last_error()), 1;
    }
    uint64_t rng = o.seed;
    for (int64_t step = 0; step < o.max_steps; step++) {
        for (int64_t micro = 0; micro < o.grad_accum; micro++) {
            int64_t rows = B;
            if (data) {
                rows = zt_data_next(data, tok, tgt, o.ignore_index);
            } else {
                for (int64_t r = 0; r < B; r++) { /* T+1 bytes from a random place: inputs and targets */
                    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
                    int64_t at = (int64_t)((rng >> 33) % (uint64_t)(text_len - T - 1));
                    for (int64_t t = 0; t < T; t++) tok[r * T + t] = (uint8_t)text[at + t], tgt[r * T + t] = (uint8_t)text[at + t + 1];
                }
            }
            zt_forward_backward(e, tok, tgt, NULL, rows); /* forward, backward, gradients accumulate */
        }
        zt_step_info s = zt_step(e); /* clip, AdamW, schedule */
        if (builtin || s.step % 50 == 0 || s.step == 1) printf("step %lld loss %.9g\n", (long long)s.step, s.loss);
    }
    const zt_model_config *mc = zt_engine_model_config(e); /* NULL for blocks of our own: bytes, as our text */
    if (!mc || mc->vocab == 256) { /* a sample, where token ids are bytes (zt_train --sample shows tokenizers) */
        int32_t prompt[4] = {'T', 'h', 'e', ' '}, out[4 + 60];
        if (zt_generate(e, prompt, 4, out, 60, 0.7f, 20, 0.95f, 1) != ZT_OK) return puts(zt_last_error()), 1;
        printf("sample: ");
        for (int i = 0; i < 4 + 60; i++) putchar(out[i] >= 32 && out[i] < 127 ? out[i] : '?');
        printf("\n");
    }
    zt_data_close(data);
    zt_shutdown(e);
    free(tok);
    return 0;
}
