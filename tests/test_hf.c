/* tests/test_hf.c - Hugging Face model directories written by transformers (tests/ref/hf, made by
   tests/ref/make_hf_fixtures.py): zt loads each (GPT-2 with new and old names, LLaMA in f32 and bf16 and
   with LLaMA-3.1's rope scaling, Mistral whole and in shards, Qwen2) and its loss on the fixture's rows is the one transformers
   computed; a load-then-export round trip gives back every tensor byte for byte; damaged files get one
   clear error each. */
#define _POSIX_C_SOURCE 200809L
#include "test.h"
#include <stdio.h>
#include <unistd.h>
#include <sys/stat.h>

enum { ROWS = 4, T = 16 };

static int spew(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    int ok = fwrite(data, 1, len, f) == len;
    return fclose(f) == 0 && ok;
}

static zt_engine *engine_for(const char *dir, zt_precision precision) {
    zt_model_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.config_path = dir;
    zt_options o = zt_options_default();
    o.micro_batch = ROWS;
    o.seq_len = T;
    o.threads = 2;
    o.precision = precision;
    zt_engine *e = NULL;
    return zt_init_options(&e, &spec, &o) == ZT_OK ? e : NULL;
}

/* the mean next-token loss over the fixture's rows, as transformers computes it with labels=input_ids */
static double rows_loss(zt_engine *e, const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/tokens.bin", dir);
    size_t len = 0;
    char *b = test_slurp(path, &len);
    if (!b || len != 1024 + 2 * ROWS * T) return -1;
    int32_t tok[ROWS * T];
    for (int i = 0; i < ROWS * T; i++) tok[i] = (int32_t)((uint8_t)b[1024 + 2 * i] | (uint8_t)b[1025 + 2 * i] << 8);
    free(b);
    double sum = 0;
    int64_t count = 0;
    zt_eval(e, tok, NULL, NULL, ROWS, &sum, &count);
    return sum / (double)count;
}

static double expected_loss(const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/expected.json", dir);
    char *b = test_slurp(path, NULL);
    double v = -1;
    if (b && strstr(b, "\"loss\":")) v = atof(strstr(b, "\"loss\":") + 7);
    free(b);
    return v;
}

TEST(hf_models_load_with_transformers_loss) {
    static const struct { const char *name; double tol; } cases[] = {
        {"gpt2", 2e-6}, {"gpt2_old", 2e-6}, {"llama", 2e-6}, {"mistral", 2e-6}, {"mistral_shards", 2e-6}, {"qwen2", 2e-6},
        {"qwen3", 2e-6}, /* per-head q and k norms */
        {"phi3", 2e-6},  /* fused projections */
        {"gemma", 2e-6}, {"gemma2", 2e-6}, /* scaled embeddings, norms of 1 + weight; capped scores and logits */
        {"gemma3_text", 2e-6},             /* per-head norms, a rope for each layer type */
        {"mixtral", 2e-6}, {"qwen3_moe", 2e-6}, {"qwen2_moe", 2e-6}, /* experts, by the checkpoints' names */
        {"smollm3", 2e-6}, /* layers without a rope */
        {"olmo2", 2e-6}, {"olmo3", 2e-6}, /* norms after the attention and the MLP alone, q's and k's over all heads */
        {"olmoe", 2e-6}, {"granite", 2e-6}, /* Granite's multipliers */
        {"glm", 2e-6}, {"glm4", 2e-6}, /* an interleaved rope on half the head, one gate_up_proj */
        {"seed_oss", 2e-6}, {"internlm3", 2e-6}, {"ernie4_5", 2e-6}, {"exaone4", 2e-6},
        {"cohere", 2e-6}, {"cohere2", 2e-6}, {"cohere_qk_norm", 2e-6}, /* LayerNorms without a bias, the MLP beside the attention, logit_scale */
        {"stablelm", 2e-6}, {"stablelm_qk_norm", 2e-6}, /* LayerNorms with biases, a partial rope; q and k norms a head apiece */
        {"starcoder2", 2e-6}, /* the MLP without a gate, biases everywhere, windows */
        {"phi", 2e-6}, /* Phi-2's layer: one LayerNorm, the MLP beside the attention, the output layer's bias */
        {"gpt_neox", 2e-6}, {"gpt_neox_buffers", 2e-6}, /* Pythia's: each head's q, k, v rows together; buffers */
        {"glm4_moe", 2e-6}, /* GLM-4.5's sigmoid router with its correction, groups and scale, the shared expert */
        {"minimax_m2", 2e-6}, /* its sigmoid router, the correction on the block, rotary_dim */
        {"ernie4_5_moe", 2e-6}, /* a softmax router with a correction, (1, E), in moe_statics; shared experts */
        {"deepseek_v3", 2e-6}, /* MLA: q through its bottleneck, keys and values from the latent; GLM-4.5's router */
        {"deepseek_v2", 2e-6}, /* MLA without q's bottleneck; softmax routing in groups by their best, times a scale */
        {"glm4_moe_lite", 2e-6}, /* GLM-4.7-Flash: MLA and GLM-4.5's router, its layers' kinds by mlp_layer_types */
        {"dots1", 2e-6}, /* dots.llm1: Qwen3's attention and windows, DeepSeek-V3's router */
        {"hunyuan_v1_dense", 2e-6}, /* q and k normed after the rope, its base stretched by alpha */
        {"hunyuan_v1_moe", 2e-6}, /* its experts, the router mlp.gate.wg, shared_mlp */
        {"ministral", 2e-6}, /* Mistral's layer, windows by layer_types */
        {"gpt_oss", 2e-6}, /* sinks, packed experts with biases and a clamped SwiGLU, the router's bias */
        {"gpt_oss_mxfp4", 2e-6}, /* its experts in MXFP4, as the released files: transformers' dequantized loss */
        {"deepseek_v3_fp8", 2e-6}, /* its projections in fine-grained FP8, as DeepSeek-V3's files: the same */
        {"qwen3_fp8", 2e-6}, /* FP8 in blocks partial at the rows' and columns' ends: DeepSeek's weight_dequant's */
        {"llama31_rope", 2e-6}, /* LLaMA-3.1's rope scaling */
        {"llama_bf16", 5e-4}, /* transformers computed in bf16, zt in fp32 from the same bf16 weights */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char dir[256];
        snprintf(dir, sizeof dir, "tests/ref/hf/%s", cases[i].name);
        zt_engine *e = engine_for(dir, ZT_PRECISION_FP32);
        CHECK_MSG(e != NULL, "%s: %s", dir, zt_last_error());
        CHECK(zt_hf_has_weights(dir));
        CHECK_MSG(zt_load_hf(e, dir) == ZT_OK, "%s: %s", dir, zt_last_error());
        double got = rows_loss(e, dir), want = expected_loss(dir);
        zt_shutdown(e);
        if (getenv("ZT_TEST_VERBOSE")) printf("     %-15s loss %.7f, transformers %.7f\n", cases[i].name, got, want);
        CHECK_MSG(want > 0 && fabs(got - want) <= cases[i].tol * want, "%s: loss %.7f, transformers %.7f", cases[i].name,
                  got, want);
    }
}

/* the byte range of tensor `name` in a safetensors file zt or transformers wrote (compact JSON) */
static const char *tensor_bytes(const char *file, size_t len, const char *name, size_t *n) {
    uint64_t hlen = 0;
    for (int i = 0; i < 8; i++) hlen |= (uint64_t)(uint8_t)file[i] << (8 * i);
    char key[300];
    snprintf(key, sizeof key, "\"%s\":{", name);
    const char *k = strstr(file + 8, key), *o = k ? strstr(k, "\"data_offsets\":[") : NULL;
    long long b = -1, e = -1;
    if (!o || sscanf(o + 16, "%lld,%lld", &b, &e) != 2 || b < 0 || e < b || 8 + hlen + (uint64_t)e > len) return NULL;
    *n = (size_t)(e - b);
    return file + 8 + hlen + b;
}

TEST(hf_load_then_export_gives_back_every_tensor) {
    static const char *names[] = {"gpt2", "llama", "mistral", "qwen2", "qwen3", "phi3", "gemma", "gemma2", "gemma3_text",
                                  "mixtral", "qwen3_moe", "qwen2_moe", "smollm3", "olmo2", "olmo3", "olmoe", "granite", "glm", "glm4",
                                  "seed_oss", "internlm3", "ernie4_5", "exaone4", "cohere", "cohere2", "cohere_qk_norm",
                                  "stablelm", "stablelm_qk_norm", "starcoder2", "phi", "gpt_neox", "glm4_moe", "minimax_m2", "ernie4_5_moe",
                                  "deepseek_v3", "deepseek_v2", "glm4_moe_lite", "dots1", "hunyuan_v1_dense",
                                  "hunyuan_v1_moe", "ministral", "gpt_oss"};
    for (int m = 0; m < (int)(sizeof names / sizeof names[0]); m++) {
        char dir[256], out[256], a[300], b[300];
        snprintf(dir, sizeof dir, "tests/ref/hf/%s", names[m]);
        snprintf(out, sizeof out, "/tmp/zt_hf_export_%d_%s", (int)getpid(), names[m]);
        zt_engine *e = engine_for(dir, ZT_PRECISION_FP32);
        CHECK(e != NULL && zt_load_hf(e, dir) == ZT_OK);
        CHECK_MSG(zt_export_hf(e, out, ZT_F32) == ZT_OK, "%s", zt_last_error());
        snprintf(a, sizeof a, "%s/model.safetensors", dir);
        snprintf(b, sizeof b, "%s/model.safetensors", out);
        size_t la = 0, lb = 0;
        char *fa = test_slurp(a, &la), *fb = test_slurp(b, &lb);
        CHECK(fa && fb);
        int tensors = 0;
        for (int p = 0; p < zt_param_count(e); p++) {
            const char *name = zt_param_name(e, p, NULL);
            if (!name) continue;
            size_t na = 0, nb = 0;
            const char *ta = tensor_bytes(fa, la, name, &na), *tb = tensor_bytes(fb, lb, name, &nb);
            CHECK_MSG(ta && tb && na == nb && memcmp(ta, tb, na) == 0, "%s: tensor %s differs after the round trip",
                      names[m], name);
            tensors++;
        }
        CHECK(strstr(fb + 8, "\"__metadata__\":{\"format\":\"pt\"}") != NULL);
        char *ca = NULL, *cb = NULL;
        snprintf(a, sizeof a, "%s/config.json", dir);
        snprintf(b, sizeof b, "%s/config.json", out);
        ca = test_slurp(a, NULL), cb = test_slurp(b, NULL);
        /* the model's config.json, its dtype the weights' (first, as save_pretrained has it), every other line kept */
        static const char first[] = "{\n  \"dtype\": \"float32\",";
        CHECK(ca && cb && strncmp(cb, first, sizeof first - 1) == 0);
        CHECK(cb && !strstr(cb + sizeof first - 1, "dtype\""));
        for (char *line = ca, *end; line && *line; line = end ? end + 1 : NULL) {
            end = strchr(line, '\n');
            if (end) *end = 0;
            if (!strstr(line, "dtype\"") && strcmp(line, "{") != 0) CHECK_MSG(cb && strstr(cb, line), "%s: %s", names[m], line);
        }
        free(ca), free(cb), free(fa), free(fb);
        zt_shutdown(e);
        /* and it loads back, bf16 too */
        e = engine_for(out, ZT_PRECISION_FP32);
        CHECK(e && zt_load_hf(e, out) == ZT_OK && zt_export_hf(e, out, ZT_BF16) == ZT_OK && zt_load_hf(e, out) == ZT_OK);
        zt_shutdown(e);
        cb = test_slurp(b, NULL);
        static const char bf16[] = "{\n  \"dtype\": \"bfloat16\",";
        CHECK(cb && strncmp(cb, bf16, sizeof bf16 - 1) == 0 && !strstr(cb + sizeof bf16 - 1, "dtype\""));
        free(cb);
        unlink(b);
        snprintf(b, sizeof b, "%s/model.safetensors", out);
        unlink(b);
        rmdir(out);
        CHECK(tensors > 10);
    }
}

/* replaces the first `from` in the header by `to` (the same length) */
static void patch(char *file, const char *from, const char *to) {
    char *p = strstr(file + 8, from);
    if (p) memcpy(p, to, strlen(to));
}

/* A quantized directory (gpt-oss's MXFP4 experts, DeepSeek-V3's fine-grained FP8): loaded, then exported plain (f32
   tensors of the parameters' names, `plain` one of them, config.json without quantization_config, every other key as
   it was); the export loads back with the same loss. */
static void quantized_exports_plain(const char *dir, const char *plain, const char *quantized) {
    char out[256], path[300];
    snprintf(out, sizeof out, "/tmp/zt_hf_quantized_%d", (int)getpid());
    zt_engine *e = engine_for(dir, ZT_PRECISION_FP32);
    CHECK_MSG(e && zt_load_hf(e, dir) == ZT_OK, "%s", zt_last_error());
    double want = rows_loss(e, dir);
    CHECK_MSG(zt_export_hf(e, out, ZT_F32) == ZT_OK, "%s", zt_last_error());
    zt_shutdown(e);
    snprintf(path, sizeof path, "%s/config.json", out);
    char src_path[300];
    snprintf(src_path, sizeof src_path, "%s/config.json", dir);
    char *config = test_slurp(path, NULL), *src = test_slurp(src_path, NULL);
    CHECK(config && src && !strstr(config, "quantization_config") && strstr(src, "quantization_config"));
    CHECK(config && strstr(config, "\"vocab_size\": 61") && strstr(config, "\"model_type\""));
    free(config), free(src);
    snprintf(path, sizeof path, "%s/model.safetensors", out);
    size_t len = 0;
    char *st = test_slurp(path, &len);
    CHECK_MSG(st && strstr(st + 8, plain) && !strstr(st + 8, quantized), "%s: the export's header lacks %s or has %s", dir,
              plain, quantized);
    free(st);
    e = engine_for(out, ZT_PRECISION_FP32);
    CHECK_MSG(e && zt_load_hf(e, out) == ZT_OK, "%s", zt_last_error());
    double got = rows_loss(e, dir); /* the source's rows */
    zt_shutdown(e);
    CHECK_MSG(fabs(got - want) <= 1e-7 * want && fabs(got - expected_loss(dir)) <= 2e-6 * got, "%s: export %.7f, loaded "
              "%.7f", dir, got, want);
    unlink(path);
    snprintf(path, sizeof path, "%s/config.json", out);
    unlink(path);
    rmdir(out);
}

/* a copy of quantized directory `dir` whose safetensors header has each from[k] replaced by to[k] (the same length,
   the same bytes after it): loading it must fail saying said[k] */
static void quantized_damaged(const char *dir, int n, const char *const *from, const char *const *to,
                              const char *const *said) {
    char out[256], path[300];
    snprintf(out, sizeof out, "/tmp/zt_hf_quantized_damaged_%d", (int)getpid());
    mkdir(out, 0755);
    size_t len = 0;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    char *good = test_slurp(path, &len), *bad = (char *)malloc(len ? len : 1);
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *config = test_slurp(path, NULL);
    snprintf(path, sizeof path, "%s/config.json", out);
    CHECK(good && bad && config && spew(path, config, strlen(config)));
    for (int k = 0; k < n && good && bad; k++) {
        memcpy(bad, good, len);
        CHECK(strstr(bad + 8, from[k]) != NULL);
        patch(bad, from[k], to[k]);
        snprintf(path, sizeof path, "%s/model.safetensors", out);
        CHECK(spew(path, bad, len));
        zt_engine *e = engine_for(out, ZT_PRECISION_FP32);
        CHECK(e != NULL && zt_load_hf(e, out) != ZT_OK);
        CHECK_STR_CONTAINS(zt_last_error(), said[k]);
        zt_shutdown(e);
    }
    free(good), free(bad), free(config);
    unlink(path);
    snprintf(path, sizeof path, "%s/config.json", out);
    unlink(path);
    rmdir(out);
}

/* gpt-oss's MXFP4 experts; blocks of the wrong shape or scales of another dtype are refused by name */
TEST(hf_gpt_oss_mxfp4_loads_and_exports_plain) {
    quantized_exports_plain("tests/ref/hf/gpt_oss_mxfp4",
                            "\"model.layers.0.mlp.experts.gate_up_proj\":{\"dtype\":\"F32\",\"shape\":[4,32,64]", "_blocks");
    static const char *const from[2] = {
        "\"model.layers.0.mlp.experts.down_proj_scales\":{\"dtype\":\"U8\"",
        "\"model.layers.1.mlp.experts.gate_up_proj_blocks\":{\"dtype\":\"U8\",\"shape\":[4,64,1,16]"};
    static const char *const to[2] = {
        "\"model.layers.0.mlp.experts.down_proj_scales\":{\"dtype\":\"I8\"",
        "\"model.layers.1.mlp.experts.gate_up_proj_blocks\":{\"dtype\":\"U8\",\"shape\":[4,16,1,64]"};
    static const char *const said[2] = {
        "\"model.layers.0.mlp.experts.down_proj_blocks\" and \"model.layers.0.mlp.experts.down_proj_scales\" should be U8 "
        "of shapes [4, 32, 1, 16] and [4, 32, 1] (MXFP4 of a tensor [4, 32, 32], config.json)",
        "\"model.layers.1.mlp.experts.gate_up_proj_blocks\" and"};
    quantized_damaged("tests/ref/hf/gpt_oss_mxfp4", 2, from, to, said);
}

/* DeepSeek-V3's fine-grained FP8: its scales of another shape, or missing (renamed), are refused by name */
TEST(hf_deepseek_v3_fp8_loads_and_exports_plain) {
    quantized_exports_plain("tests/ref/hf/deepseek_v3_fp8",
                            "\"model.layers.0.self_attn.q_a_proj.weight\":{\"dtype\":\"F32\",\"shape\":[12,32]",
                            "_scale_inv");
    static const char *const from[2] = {"\"model.layers.0.self_attn.q_a_proj.weight_scale_inv\":{\"dtype\":\"F32\",\"shape\":[3,8]",
                                        "\"model.layers.0.self_attn.o_proj.weight_scale_inv\""};
    static const char *const to[2] = {"\"model.layers.0.self_attn.q_a_proj.weight_scale_inv\":{\"dtype\":\"F32\",\"shape\":[8,3]",
                                      "\"model.layers.0.self_attn.o_proj.weight_scale_inx\""};
    static const char *const said[2] = {
        "tensor \"model.layers.0.self_attn.q_a_proj.weight\" is F8_E4M3: zt reads it as a 2-D weight beside "
        "\"model.layers.0.self_attn.q_a_proj.weight_scale_inv\", F32 or BF16 of shape [3, 8] (blocks of 4 x 4, "
        "quantization_config.weight_block_size)",
        "\"model.layers.0.self_attn.o_proj.weight_scale_inv\", F32 or BF16 of shape [8, 6] (blocks of 4 x 4, "
        "quantization_config.weight_block_size), which the files do not have"};
    quantized_damaged("tests/ref/hf/deepseek_v3_fp8", 2, from, to, said);
}

/* Kimi K2's files: DeepSeek-V3's model under model_type kimi_k2 (the DeepSeek-V3 directory with that name) give
   transformers' DeepSeek-V3 loss, and an export keeps the name */
TEST(hf_kimi_k2_is_deepseek_v3) {
    char out[128], path[300], model[300];
    snprintf(out, sizeof out, "/tmp/zt_hf_kimi_%d", (int)getpid());
    mkdir(out, 0755);
    char *config = test_slurp("tests/ref/hf/deepseek_v3/config.json", NULL);
    char *at = config ? strstr(config, "\"model_type\": \"deepseek_v3\"") : NULL;
    CHECK(at != NULL);
    if (!at) return;
    static const char kimi[] = "\"model_type\": \"kimi_k2\",    "; /* spaces where deepseek_v3 was longer */
    memcpy(at, kimi, strlen(kimi)); /* over "model_type": "deepseek_v3", (its comma included) */
    snprintf(path, sizeof path, "%s/config.json", out);
    CHECK(spew(path, config, strlen(config)));
    free(config);
    snprintf(model, sizeof model, "%s/model.safetensors", out);
    size_t len = 0;
    char *weights = test_slurp("tests/ref/hf/deepseek_v3/model.safetensors", &len);
    CHECK(weights && spew(model, weights, len));
    free(weights);
    zt_engine *e = engine_for(out, ZT_PRECISION_FP32);
    CHECK_MSG(e && zt_load_hf(e, out) == ZT_OK, "%s", zt_last_error());
    double got = rows_loss(e, "tests/ref/hf/deepseek_v3"), want = expected_loss("tests/ref/hf/deepseek_v3");
    CHECK_MSG(fabs(got - want) <= 2e-6 * want, "kimi_k2: loss %.7f, transformers' DeepSeek-V3 %.7f", got, want);
    char exported[160];
    snprintf(exported, sizeof exported, "%s/export", out);
    CHECK(e && zt_export_hf(e, exported, ZT_BF16) == ZT_OK);
    zt_shutdown(e);
    snprintf(path, sizeof path, "%s/config.json", exported);
    config = test_slurp(path, NULL);
    CHECK(config && strstr(config, "\"model_type\": \"kimi_k2\""));
    free(config);
    unlink(path);
    snprintf(path, sizeof path, "%s/model.safetensors", exported);
    unlink(path);
    rmdir(exported);
    unlink(model);
    snprintf(path, sizeof path, "%s/config.json", out);
    unlink(path);
    rmdir(out);
}

/* a copy of the GPT-2 fixture with model.safetensors replaced by `bytes`; loading it must fail with `want` */
static void damaged(const char *bytes, size_t len, const char *want) {
    char dir[256], path[300];
    snprintf(dir, sizeof dir, "/tmp/zt_hf_damaged_%d", (int)getpid());
    mkdir(dir, 0755);
    char *config = test_slurp("tests/ref/hf/gpt2/config.json", NULL);
    snprintf(path, sizeof path, "%s/config.json", dir);
    CHECK(config && spew(path, config, strlen(config)));
    free(config);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    CHECK(spew(path, bytes, len));
    zt_engine *e = engine_for(dir, ZT_PRECISION_FP32);
    CHECK(e != NULL);
    zt_result r = zt_load_hf(e, dir);
    zt_shutdown(e);
    unlink(path);
    snprintf(path, sizeof path, "%s/config.json", dir);
    unlink(path);
    rmdir(dir);
    CHECK_MSG(r != ZT_OK, "accepted: should have said \"%s\"", want);
    CHECK_STR_CONTAINS(zt_last_error(), want);
}

TEST(hf_damaged_files_get_one_clear_error) {
    size_t len = 0;
    char *good = test_slurp("tests/ref/hf/gpt2/model.safetensors", &len);
    CHECK(good != NULL && len > 1000);
    char *b = (char *)malloc(len);
    damaged(good, 5, "does not fit in the file's 5 bytes");
    memcpy(b, good, len);
    b[0] = (char)0xff, b[1] = (char)0xff, b[2] = (char)0xff;
    damaged(b, len, "the header length");
    damaged(good, len - 100, "should be"); /* truncated: the last tensor runs past the end */
    static const struct { const char *from, *to, *want; } edits[] = { /* one change to the header each */
        {"\"dtype\":\"F32\"", "\"dtype\":\"X32\"", "unknown dtype \"X32\""},
        {"\"dtype\":\"F32\"", "\"dtype\":\"I32\"", "found I32 of shape ["},
        {"\"shape\":[32,96]", "\"shape\":[96,32]", "should be F32, F16 or BF16 of shape [32, 96]"},
        {"\"data_offsets\":[0,", "\"data_offsets\":[8,", "should be"},
        {"transformer.ln_f.weight", "transformer.ln_g.weight", "has no tensor \"transformer.ln_f.weight\""},
        {"{\"__metadata__\"", "[\"__metadata__\"", "model.safetensors"},
    };
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
        memcpy(b, good, len);
        patch(b, edits[i].from, edits[i].to);
        damaged(b, len, edits[i].want);
    }
    free(b);
    free(good);
}

/* a safetensors file of this header and data_bytes zero bytes of data (malloc'd; its length in *len) */
static char *file_of(const char *hdr, size_t data_bytes, size_t *len) {
    size_t h = strlen(hdr);
    *len = 8 + h + data_bytes;
    char *b = (char *)calloc(1, *len);
    for (int i = 0; i < 8; i++) b[i] = (char)((uint64_t)h >> (8 * i));
    memcpy(b + 8, hdr, h);
    return b;
}

/* two tensors claiming the same bytes */
TEST(hf_overlapping_tensors_are_refused) {
    size_t len = 0;
    char *b = file_of("{\"a.weight\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                      "\"b.weight\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 16, &len);
    damaged(b, len, "overlap");
    free(b);
    /* an empty tensor between two that overlap hides nothing */
    b = file_of("{\"a.weight\":{\"dtype\":\"F32\",\"shape\":[25],\"data_offsets\":[0,100]},"
                "\"b.weight\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[50,50]},"
                "\"c.weight\":{\"dtype\":\"F32\",\"shape\":[5],\"data_offsets\":[60,80]}}", 100, &len);
    damaged(b, len, "overlap");
    free(b);
}

/* an export into a directory another model's files are in: their tokenizer files, which this model lacks, go */
TEST(hf_export_removes_another_models_tokenizer) {
    char out[256], path[300];
    snprintf(out, sizeof out, "/tmp/zt_hf_export_stale_%d", (int)getpid());
    mkdir(out, 0755);
    snprintf(path, sizeof path, "%s/tokenizer.json", out);
    CHECK(spew(path, "{}", 2));
    zt_engine *e = engine_for("tests/ref/hf/llama", ZT_PRECISION_FP32);
    CHECK(e && zt_export_hf(e, out, ZT_F32) == ZT_OK);
    zt_shutdown(e);
    struct stat st;
    CHECK(stat(path, &st) != 0);
    snprintf(path, sizeof path, "%s/model.safetensors", out);
    CHECK(stat(path, &st) == 0);
    unlink(path);
    snprintf(path, sizeof path, "%s/config.json", out);
    unlink(path);
    rmdir(out);
}

/* a config that ties the output layer to the embeddings, over a file whose lm_head.weight differs from them:
   transformers unties them, so zt says so instead of training another model */
TEST(hf_tied_config_over_a_separate_head_is_refused) {
    char dir[256], path[300];
    snprintf(dir, sizeof dir, "/tmp/zt_hf_tied_%d", (int)getpid());
    mkdir(dir, 0755);
    char *config = test_slurp("tests/ref/hf/llama/config.json", NULL);
    size_t len = 0;
    char *weights = test_slurp("tests/ref/hf/llama/model.safetensors", &len);
    CHECK(config && weights && strstr(config, "\"tie_word_embeddings\": false"));
    if (!config || !weights) return;
    patch(config, "\"tie_word_embeddings\": false", "\"tie_word_embeddings\": true ");
    snprintf(path, sizeof path, "%s/config.json", dir);
    CHECK(spew(path, config, strlen(config)));
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    CHECK(spew(path, weights, len));
    zt_engine *e = engine_for(dir, ZT_PRECISION_FP32);
    CHECK(e != NULL && zt_load_hf(e, dir) == ZT_ERROR_UNSUPPORTED);
    CHECK_STR_CONTAINS(zt_last_error(), "the file's lm_head.weight differs from model.embed_tokens.weight");
    zt_shutdown(e);
    unlink(path);
    snprintf(path, sizeof path, "%s/config.json", dir);
    unlink(path);
    rmdir(dir);
    free(config), free(weights);
}

/* a file without tensors (an empty header, or metadata alone) names the first tensor the model misses */
TEST(hf_file_without_tensors_names_the_first_missing) {
    size_t len = 0;
    char *b = file_of("{}", 0, &len);
    damaged(b, len, "has no tensor \"transformer.wte.weight\"");
    free(b);
    b = file_of("{\"__metadata__\":{\"format\":\"pt\"}}", 0, &len);
    damaged(b, len, "has no tensor \"transformer.wte.weight\"");
    free(b);
}

/* which layers attend within the window: Gemma 2's every other one (its layer_types), Mistral's every one */
TEST(hf_sliding_windows_follow_the_layer_types) {
    zt_model_config c;
    CHECK_MSG(zt_model_config_read(&c, "tests/ref/hf/gemma2") == ZT_OK, "%s", zt_last_error());
    CHECK_EQ_INT(c.sliding_window, 6);
    CHECK_EQ_INT((int64_t)c.windowed[0], 1); /* layer 0 of 2 */
    CHECK_MSG(zt_model_config_read(&c, "tests/ref/hf/mistral") == ZT_OK, "%s", zt_last_error());
    CHECK_EQ_INT(c.sliding_window, 7);
    CHECK_EQ_INT((int64_t)c.windowed[0], 3); /* both layers */
}
