#!/usr/bin/env python3
"""Reference fixtures for tests/test_models.c: tiny GPT-2, LLaMA, Mistral, Qwen2, Qwen3, Phi-3, SmolLM3, Gemma, Gemma 2,
Gemma 3 (text), OLMo 2, OLMo 3, Granite, GLM, GLM-4, Seed-OSS, InternLM3, ERNIE 4.5, EXAONE 4, Mixtral, Qwen3-MoE,
Qwen2-MoE, OLMoE and gpt-oss models (and Mixtral, Qwen3-MoE and gpt-oss with the routers' load-balancing loss: the
*_balance fixtures; gpt-oss with its SwiGLU's clamps cutting: gpt_oss_clamped;
GPT-2, Gemma and Granite with NEFTune's noise: the *_neftune fixtures; Mixtral with router_jitter_noise:
mixtral_jitter; Qwen2 with YaRN's rope: qwen2_yarn*; Phi-3 with longrope: phi3_longrope*; LLaMA with the dynamic NTK
rope: llama_dynamic; Phi-3 with a partial rotation (Phi-4-mini's): phi3_partial; GPT-2, Phi-3 and Seed-OSS with
dropout: the *_dropout fixtures) built with transformers, their loss, every parameter gradient and the losses of 10
AdamW steps, in float32.

    python3 tests/ref/make_model_fixtures.py        (from the repository root; rerun with the same torch, the same files)
    python3 tests/ref/make_model_fixtures.py qwen3  (only these fixtures)

For each fixture it writes tests/ref/<name>/config.json (what transformers writes) and
tests/ref/<type>/fixture.bin, a list of named tensors:

    "ZTFIXT01"                      8 bytes, the magic and format version
    u32 count                       number of tensors
    count times:
        u32 name_len, name_len bytes of name (UTF-8, no terminator)
        u32 dtype                   0 = f32, 1 = i32
        u32 ndim, ndim x i64 dims
        numel x 4 bytes of data     row-major
    all integers little-endian

Tensors:
    input_ids          i32 (B, T)      the batch of the gradient check
    logits             f32 (B, T, V)   model(input_ids).logits (V: the real vocabulary)
    loss               f32 (1)         model(input_ids, labels=input_ids).loss: mean over B*(T-1) predictions
                                       (with output_router_logits: plus router_aux_loss_coef * aux_loss)
    param.<name>       f32             every parameter, zt's layout (below), at the start
    grad.<name>        f32             d loss / d param, same layout
    steps.input_ids    i32 (S, B, T)   the batch of each optimizer step
    steps.loss         f32 (S)         the loss of each step's batch, before that step's update
    steps.grad_norm    f32 (S)         the global gradient norm before clipping
    neftune_alpha      f32 (1)         *_neftune only: NEFTune's alpha; loss, gradients and steps are with its noise
    eval_loss          f32 (1)         *_neftune, mixtral_jitter and *_dropout only: the loss in eval mode, without the
                                       noise

NEFTune: transformers' hook on the token embedding module (integrations/neftune.py) adds uniform noise of
magnitude alpha / sqrt(T * hidden) to its output in training; here the hook adds zt's noise instead of torch's
draws (zt_add_uniform_noise over the (B, T, hidden) output, with the seed zt_forward_backward gives the
micro-batch: zt_options' default seed 42, optimizer step k, micro-batch 0), so that the two runs see the same
numbers and the test can ask for the same loss and gradients. router_jitter_noise (mixtral_jitter) likewise:
Mixtral's sparse block multiplies its input by uniform noise in [1 - j, 1 + j) in training; a pre-hook multiplies
by zt's (zt_mul_uniform_noise, seeded by the micro-batch's seed and the layer) and the block's own draw is off.
Dropout (*_dropout) likewise: every torch dropout (nn.Dropout's and the eager attention's alike go through
torch.nn.functional.dropout) multiplies by zt's factors instead of torch's draws (zt_dropout and zt_attention_opts'
dropout: 0 or 1 / (1 - p) by zt_noise_uniform >= p), seeded as zt seeds each site (the step's seed, the site, the
block) and drawn by the element's place in the (B, T, C) activations or the (B, heads, T, T) probabilities.

zt's layout: transformers' state_dict names; every weight (out, in) as in nn.Linear, so GPT-2's
Conv1D weights (attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj) are transposed; no buffers
(GPT-2's attn.bias / attn.masked_bias); with tied embeddings no lm_head.weight (the embedding's
gradient holds both uses); an MoE layer's experts by expert, as checkpoints name them (experts_by_name).

Training: torch.optim.AdamW(lr=1e-3, betas=(0.9, 0.999), eps=1e-8), weight decay 0.1 on 2-D
weights only (embedding tables and the experts' 3-D tensors included), 0 on biases and norm weights (Cohere's 2-D
q and k norms too, as the Trainer names them); clip_grad_norm_(1.0)
before each step; constant learning rate. Parameters are not transformers' initialisation but
seeded draws of a useful size (weights ~ 1/sqrt(fan_in), biases and norm weights perturbed) so
that every path (biases, norm weights, non-uniform attention) shows up in the gradients.
"""
import os
import struct
import sys

import torch
import transformers

B, T, STEPS, VOCAB = 2, 16, 10, 61
LR, BETAS, EPS, WD, MAX_NORM = 1e-3, (0.9, 0.999), 1e-8, 0.1, 1.0
HERE = os.path.dirname(os.path.abspath(__file__))
CONV1D = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")
# fixtures of a model type with other settings: the routers' load-balancing loss joins the loss (a coefficient
# far above the usual 0.001-0.02, so that its gradient is far above the tolerances; Qwen3-MoE's layer 1 is dense,
# so the loss averages over one sparse layer, Mixtral's over two)
VARIANTS = {"mixtral_balance": ("mixtral", dict(output_router_logits=True, router_aux_loss_coef=0.1)),
            "qwen3_moe_balance": ("qwen3_moe", dict(output_router_logits=True, router_aux_loss_coef=0.1)),
            "gpt2_neftune": ("gpt2", {}), "gemma_neftune": ("gemma", {}), "granite_neftune": ("granite", {}),
            "mixtral_jitter": ("mixtral", dict(router_jitter_noise=0.1)),
            # YaRN from an original context of 8 positions to the 32 of max_position_embeddings (T is 16): of the
            # head's 4 pairs the first is extrapolated (kept), the others interpolated (divided by the factor)
            "qwen2_yarn": ("qwen2", dict(rope_parameters={"rope_type": "yarn", "rope_theta": 1e6, "factor": 4.0,
                                                          "original_max_position_embeddings": 8})),
            # ... and with its other keys: a ramp from pair 0 to 1.4, not rounded out (pair 1 is 71% interpolated)
            "qwen2_yarn_keys": ("qwen2", dict(rope_parameters={"rope_type": "yarn", "rope_theta": 1e6, "factor": 4.0,
                                                               "original_max_position_embeddings": 8, "beta_fast": 16,
                                                               "beta_slow": 0.01, "truncate": False,
                                                               "attention_factor": 1.3})),
            # Phi-3's longrope (its 128k models), original_max_position_embeddings beside the rope as Phi-3 keeps it:
            # past an original context of 8 positions the long factors (T is 16), within one of 16 the short ones
            "phi3_longrope": ("phi3", dict(original_max_position_embeddings=8, rope_parameters={
                "rope_type": "longrope", "rope_theta": 10000.0, "original_max_position_embeddings": 8, "partial_rotary_factor": 1.0,
                "short_factor": [1.0, 1.1, 1.5, 2.5], "long_factor": [1.0, 1.7, 3.5, 6.0]})),
            "phi3_longrope_short": ("phi3", dict(original_max_position_embeddings=16, rope_parameters={
                "rope_type": "longrope", "rope_theta": 10000.0, "original_max_position_embeddings": 16, "partial_rotary_factor": 1.0,
                "short_factor": [1.0, 1.1, 1.5, 2.5], "long_factor": [1.0, 1.7, 3.5, 6.0]})),
            # dropout at 0.2 (GPT-2's default is 0.1): GPT-2's on the embeddings, the residual branches and the
            # attention; Phi-3's on the residual branches and the attention (its embd_pdrop, 0.2 here too, is never read)
            "gpt2_dropout": ("gpt2", dict(embd_pdrop=0.2, resid_pdrop=0.2, attn_pdrop=0.2)),
            # Phi-4-mini's rope: longrope on a partial rotation (0.75: 6 of the head's 8 dimensions, 3 pairs)
            "phi3_partial": ("phi3", dict(original_max_position_embeddings=8, rope_parameters={
                "rope_type": "longrope", "rope_theta": 10000.0, "original_max_position_embeddings": 8,
                "partial_rotary_factor": 0.75, "short_factor": [1.0, 1.2, 2.0], "long_factor": [1.0, 2.5, 5.0]})),
            # the dynamic NTK rope: scaled only past max_position_embeddings (32; T is 16), as zt's rows never are
            "llama_dynamic": ("llama", dict(rope_parameters={"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 4.0})),
            "phi3_dropout": ("phi3", dict(resid_pdrop=0.2, attention_dropout=0.2, embd_pdrop=0.2)),
            # Seed-OSS's dropouts (its defaults are 0.1): on the residual branches and the attention
            "seed_oss_dropout": ("seed_oss", dict(residual_dropout=0.2, attention_dropout=0.2)),
            # Command R+'s LayerNorm on each head of q and k, a weight a head
            "cohere_qk_norm": ("cohere", dict(use_qk_norm=True)),
            # StableLM 2 12B's layer: the MLP beside the attention on the one norm, a LayerNorm on each head of q and
            # k (a weight a head, each its own parameter); its hidden_dropout (the MLP's output alone) and the
            # attention's at 0.2 (both 0 by default)
            "stablelm_dropout": ("stablelm", dict(use_parallel_residual=True, qk_layernorm=True, hidden_dropout=0.2,
                                                  attention_dropout=0.2)),
            # Starcoder2's dropouts at 0.2 (0 by default): the embeddings, the residual branches, the attention
            "phi_dropout": ("phi", dict(embd_pdrop=0.2, resid_pdrop=0.2, attention_dropout=0.2)),  # Phi's likewise
            # GPT-NeoX's sequential layer (Pythia's is parallel), and its hidden_dropout (on the embeddings and both
            # branches) and attention_dropout at 0.2
            "gpt_neox_sequential": ("gpt_neox", dict(use_parallel_residual=False)),
            # gpt-oss's SwiGLU clamped at 1.5, where the clamps cut both gate and up (at its 7 they seldom do here)
            "gpt_oss_clamped": ("gpt_oss", dict(swiglu_limit=1.5)),
            # ... and with its routers' load-balancing loss (over a softmax of the biased logits), far above its 0.001
            "gpt_oss_balance": ("gpt_oss", dict(output_router_logits=True, router_aux_loss_coef=0.1)),
            "gpt_neox_dropout": ("gpt_neox", dict(hidden_dropout=0.2, attention_dropout=0.2)),
            # GPT-NeoX without the attention's biases (query_key_value's and dense's)
            "gpt_neox_nobias": ("gpt_neox", dict(attention_bias=False)),
            "starcoder2_dropout": ("starcoder2", dict(embedding_dropout=0.2, residual_dropout=0.2,
                                                      attention_dropout=0.2))}
# mixtral_jitter's seed: its routers' second and third logits are at least 0.04 apart on the gradient batch (at
# 1016, its index's, 0.011: bf16 then picks another expert for one token, which tests tie-breaking, not arithmetic)
SEEDS = {"mixtral_jitter": 1616, "deepseek_v3": 2006, "deepseek_v2": 2005, "deepseek_v3_plain": 2001,
         "dots1": 2003, "hunyuan_v1_moe": 2005, "gpt_oss": 2021}  # seeds whose gradient batch has no near tie in
# bf16 routing
NEFTUNE_ALPHA = 5.0  # NEFTune's paper's value; GPT-2 adds the noise before its position embeddings, Gemma after its scale,
# Granite before its embedding_multiplier
MASK64 = (1 << 64) - 1


def zt_mix(x):
    """zt.h's zt__mix (splitmix64's finalizer after its increment)"""
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def zt_batch_seed(step, seed=42):
    """zt_batch.seed as zt_forward_backward sets it"""
    return zt_mix(seed ^ zt_mix((step << 20) ^ 0x6E6F697365))


def zt_uniform(seed, shape):
    """zt_noise_uniform(seed, i) for every i of the shape, in float32"""
    n = 1
    for d in shape:
        n *= d
    u = []
    for i in range(n):
        z = (seed + (i + 1) * 0x9E3779B97F4A7C15) & MASK64
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        u.append((z ^ (z >> 31)) >> 40)
    return (torch.tensor(u, dtype=torch.float32) * (1.0 / 16777216.0)).reshape(shape)  # exact: 24 bits, a power of two


def zt_noise(seed, shape, magnitude):
    """zt_add_uniform_noise's noise, in float32: (2 u - 1) * magnitude (2u - 1 exact, one rounding in the product)"""
    return (2.0 * zt_uniform(seed, shape) - 1.0) * magnitude


def zt_jitter(seed, shape, jitter):
    """zt_mul_uniform_noise's factors, in float32: u * 2j + (1 - j), rounded step by step"""
    j = torch.tensor(jitter, dtype=torch.float32)
    return zt_uniform(seed, shape) * (2.0 * j) + (1.0 - j)


class Clock:
    """the optimizer step the next forward belongs to: zt seeds each micro-batch's noise by it"""
    step = 0


class ZtJitter:
    """router_jitter_noise with zt's draws: a forward pre-hook on layer `layer`'s sparse block"""

    def __init__(self, jitter, layer, clock):
        self.jitter, self.layer, self.clock = jitter, layer, clock

    def __call__(self, module, args):
        if not module.training:
            return None
        x = args[0]
        seed = zt_mix(zt_batch_seed(self.clock.step) ^ (self.layer + 1))  # zt's block index: the embedding is 0
        return ((x * zt_jitter(seed, tuple(x.shape), self.jitter)).to(x.dtype),) + tuple(args[1:])  # zt: f32, rounded


# zt's dropout sites (zt.h's ZT__DROP_*) and the seed of one in a block (zt__drop_seed)
DROP_ATTN, DROP_RESID_ATTN, DROP_RESID_MLP, DROP_EMBD = 1, 2, 3, 4


class ZtDropout:
    """torch.nn.functional.dropout with zt's factors: forward pre-hooks name the site that drops next"""

    def __init__(self, clock):
        self.clock, self.site, self.block = clock, None, None
        self.torch_dropout = torch.nn.functional.dropout

    def at(self, module, site, block):
        def hook(_module, _args):
            self.site, self.block = site, block
        module.register_forward_pre_hook(hook)

    def __call__(self, input, p=0.5, training=True, inplace=False):
        if not training or p == 0:
            return input
        assert self.site is not None and not inplace, "a dropout no hook names"
        seed = zt_mix(zt_batch_seed(self.clock.step) ^ (self.site << 56) ^ self.block)
        p32 = torch.tensor(p, dtype=torch.float32)
        scale = torch.tensor(1.0, dtype=torch.float32) / (1.0 - p32)  # zt: 1.0f / (1.0f - p)
        z = torch.where(zt_uniform(seed, tuple(input.shape)) >= p32, scale, torch.zeros((), dtype=torch.float32))
        return input * z


class ZtNeftune:
    """transformers' neftune_post_forward_hook with zt's noise"""

    def __init__(self, alpha, clock):
        self.alpha, self.clock = alpha, clock

    def __call__(self, module, inputs, output):
        if not module.training:
            return output
        magnitude = torch.tensor(self.alpha, dtype=torch.float32) / torch.sqrt(
            torch.tensor(float(output.size(1) * output.size(2)), dtype=torch.float32))
        return output + zt_noise(zt_batch_seed(self.clock.step), tuple(output.shape), magnitude)


def make_config(model_type):
    common_llama = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                        intermediate_size=64, vocab_size=VOCAB, max_position_embeddings=32, rms_norm_eps=1e-6,
                        attention_dropout=0.0, bos_token_id=1, eos_token_id=2)
    if model_type == "gpt2":
        return transformers.GPT2Config(n_embd=32, n_layer=2, n_head=4, n_inner=64, n_positions=32, vocab_size=VOCAB,
                                       activation_function="gelu_new", resid_pdrop=0.0, embd_pdrop=0.0,
                                       attn_pdrop=0.0, summary_first_dropout=0.0, bos_token_id=0, eos_token_id=0,
                                       tie_word_embeddings=True)
    if model_type == "llama":  # untied, no biases, the default rope theta
        return transformers.LlamaConfig(**common_llama, tie_word_embeddings=False)
    if model_type == "mistral":  # untied; a sliding window on every layer, well below T
        return transformers.MistralConfig(**common_llama, tie_word_embeddings=False, sliding_window=7)
    if model_type == "qwen2":  # tied, q/k/v biases, Qwen2's rope theta of 1e6
        return transformers.Qwen2Config(**common_llama, tie_word_embeddings=True, rope_theta=1e6,
                                        use_sliding_window=False)
    if model_type == "qwen3":  # tied, no biases, RMSNorm on each head of q and k, heads wider than hidden / heads;
        # a pad token: the embedding's padding_idx, whose row learns from the tied head only
        return transformers.Qwen3Config(**common_llama, head_dim=16, tie_word_embeddings=True, rope_theta=1e6,
                                        use_sliding_window=False, pad_token_id=0)
    if model_type == "phi3":  # untied; q, k and v in one qkv_proj, gate and up in one gate_up_proj; a pad token
        return transformers.Phi3Config(**common_llama, tie_word_embeddings=False, pad_token_id=0,
                                       resid_pdrop=0.0, embd_pdrop=0.0)
    if model_type == "smollm3":  # tied; LLaMA's layer without a rope on every second layer (NoPE; SmolLM3-3B: every
        # fourth), those layers windowed, well below T; SmolLM3's rope theta of 2e6; a pad token
        return transformers.SmolLM3Config(**common_llama, tie_word_embeddings=True, pad_token_id=0,
                                          no_rope_layer_interval=2, use_sliding_window=True, sliding_window=6)
    if model_type == "olmo2":  # untied; norms on the attention's and the MLP's outputs only, none before them; an
        # RMSNorm over all of q's heads at once and one over k's; a pad token
        return transformers.Olmo2Config(**common_llama, tie_word_embeddings=False, pad_token_id=0)
    if model_type == "olmo3":  # tied; OLMo 2's layer, layer 0 windowed, well below T, with a rope of its own theta,
        # layer 1's rope YaRN-scaled (as OLMo 3's long-context models have it on their full attention layers)
        rope = {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                "full_attention": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8,
                                   "rope_theta": 500000.0}}
        return transformers.Olmo3Config(**common_llama, tie_word_embeddings=True, pad_token_id=0, sliding_window=6,
                                        layer_types=["sliding_attention", "full_attention"], rope_parameters=rope)
    if model_type == "granite":  # tied; LLaMA's layer with Granite's four multipliers: the embeddings', the scores'
        # scale, the outputs' before each residual add, and the logits divided by logits_scaling
        return transformers.GraniteConfig(**common_llama, tie_word_embeddings=True, embedding_multiplier=1.7,
                                          attention_multiplier=0.3, residual_multiplier=0.6, logits_scaling=2.5)
    if model_type in ("glm", "glm4"):  # untied; q, k and v biases (GlmConfig's attention_bias), gate and up in one
        # gate_up_proj, a rope on half of each head in interleaved pairs; GLM-4: norms on the attention's and the
        # MLP's outputs too; heads wider than hidden / heads
        cls = transformers.GlmConfig if model_type == "glm" else transformers.Glm4Config
        return cls(**common_llama, head_dim=16, tie_word_embeddings=False, pad_token_id=0)
    if model_type == "seed_oss":  # untied; q, k and v biases and o_proj's own (attention_out_bias); heads wider than
        # hidden / heads; its dropouts off (0.1 by default: seed_oss_dropout has them)
        return transformers.SeedOssConfig(**common_llama, head_dim=16, tie_word_embeddings=False, pad_token_id=0,
                                          attention_out_bias=True, residual_dropout=0.0)
    if model_type == "internlm3":  # untied; LLaMA's layer with InternLM3's defaults
        return transformers.InternLM3Config(**common_llama, head_dim=16, tie_word_embeddings=False, pad_token_id=0)
    if model_type == "ernie4_5":  # tied; LLaMA's layer with the rope in interleaved pairs over the whole head
        return transformers.Ernie4_5Config(**common_llama, head_dim=16, pad_token_id=0)
    if model_type == "exaone4":  # untied; OLMo 2's norms after the attention and the MLP alone, Qwen3's norm on each
        # head of q and k; layer 0 windowed, well below T, with the rope, layer 1 full without it (global NoPE)
        return transformers.Exaone4Config(**common_llama, tie_word_embeddings=False, pad_token_id=0, sliding_window=6,
                                          layer_types=["sliding_attention", "full_attention"])
    if model_type == "cohere":  # tied; one LayerNorm without a bias before the attention and the MLP side by side,
        # q, k, v and o biases, the rope in interleaved pairs, the logits times logit_scale (0.0625 by default)
        return transformers.CohereConfig(**{k: v for k, v in common_llama.items() if k != "rms_norm_eps"},
                                         layer_norm_eps=1e-5, attention_bias=True, pad_token_id=0, logit_scale=0.5)
    if model_type == "cohere2":  # Cohere's layer; layer 0 windowed, well below T, with the rope, layer 1 full without it
        return transformers.Cohere2Config(**{k: v for k, v in common_llama.items() if k != "rms_norm_eps"},
                                          layer_norm_eps=1e-5, pad_token_id=0, logit_scale=0.5, sliding_window=6,
                                          layer_types=["sliding_attention", "full_attention"])
    if model_type == "stablelm":  # untied; LayerNorms with biases, q, k and v biases (use_qkv_bias), the rope on the
        # first half of each head (StableLM's default is a quarter: 2 of these heads' 8 dimensions)
        return transformers.StableLmConfig(**{k: v for k, v in common_llama.items() if k != "rms_norm_eps"},
                                           layer_norm_eps=1e-5, use_qkv_bias=True, partial_rotary_factor=0.5,
                                           hidden_dropout=0.0)
    if model_type == "starcoder2":  # tied; LayerNorms with biases, biases on every projection (use_bias), an MLP
        # of c_fc, the tanh GELU and c_proj without a gate; a sliding window on every layer, well below T
        return transformers.Starcoder2Config(**{k: v for k, v in common_llama.items() if k != "rms_norm_eps"},
                                             norm_epsilon=1e-5, use_bias=True, sliding_window=7, residual_dropout=0.0,
                                             embedding_dropout=0.0)
    if model_type == "ernie4_5_moe":  # tied; ERNIE 4.5's layer (the rope in interleaved pairs over the whole head);
        # layer 0 dense, layer 1 4 experts of 24, 2 a token by softmax probability + a fixed correction, weights
        # normalized, beside 2 ungated shared experts
        return transformers.Ernie4_5_MoeConfig(**common_llama, head_dim=16, pad_token_id=0, moe_num_experts=4, moe_k=2,
                                               moe_intermediate_size=24, moe_num_shared_experts=2,
                                               moe_layer_start_index=1)
    if model_type == "minimax_m2":  # untied; MiniMax-M2's layer: an RMSNorm over all of q's heads and one over k's (OLMo
        # 2's), the rope on half of each head (its files' rotary_dim), every layer 4 experts of 24, 2 a token chosen by
        # sigmoid score + a fixed correction, weights normalized
        return transformers.MiniMaxM2Config(**dict(common_llama, intermediate_size=24), head_dim=16, rotary_dim=8,
                                            tie_word_embeddings=False, pad_token_id=0, num_local_experts=4,
                                            num_experts_per_tok=2)
    if model_type == "hunyuan_v1_dense":  # untied; Hunyuan's LLaMA layer with biases on q, k, v and o, an RMSNorm on each
        # head of q and k after the rotation (query_layernorm, key_layernorm), its rope's base stretched by a fixed
        # alpha (the "dynamic" type with alpha: transformers' ntk_alpha)
        return transformers.HunYuanDenseV1Config(**common_llama, head_dim=16, attention_bias=True, pad_token_id=0,
                                                 rope_parameters={"rope_type": "dynamic", "rope_theta": 10000.0,
                                                                  "factor": 1.0, "alpha": 1000.0})
    if model_type == "ministral":  # untied; Ministral's Mistral layer with a window of 7 on the layers layer_types names
        # (here the second alone)
        return transformers.MinistralConfig(**common_llama, head_dim=8, sliding_window=7,
                                            layer_types=["full_attention", "sliding_attention"])
    if model_type == "gpt_oss":  # untied; gpt-oss's layer: q, k, v and o with biases, a sink per head, a window of 7 on
        # the even layers (layer_types' default), its default yarn rope; 4 experts of 24, 2 a token by a softmax over the
        # router's (biased) top logits, packed (gate_up_proj (E, C, 2I), gate and up interleaved, down_proj (E, I, C),
        # with biases), their SwiGLU clamped at the released models' 7 (gpt_oss_clamped: at 1.5)
        return transformers.GptOssConfig(**dict(common_llama, intermediate_size=24), head_dim=8, sliding_window=7,
                                         num_local_experts=4, num_experts_per_tok=2)
    if model_type == "hunyuan_v1_moe":  # untied; Hunyuan-A13B's layer: Hunyuan's attention (q and k normed after the
        # rope, its base stretched by alpha) and in every layer 4 experts of intermediate_size, 2 a token by softmax
        # probability, normalized, beside a shared MLP of that size (shared_mlp), the router mlp.gate.wg
        return transformers.HunYuanMoEV1Config(**dict(common_llama, intermediate_size=24), head_dim=16, pad_token_id=0,
                                               num_experts=4, moe_topk=2,
                                               rope_parameters={"rope_type": "dynamic", "rope_theta": 10000.0,
                                                                "factor": 1.0, "alpha": 1000.0})
    if model_type == "dots1":  # untied; dots.llm1's layer: Qwen3's attention (an RMSNorm on each head of q and k) with
        # a window of 7 on the layers from max_window_layers (here layer 1), DeepSeek-V3's experts: layer 0 dense, layer
        # 1 8 of 24, 3 a token by sigmoid score + a correction among the 2 best of 4 groups, unnormalized, times 2
        return transformers.Dots1Config(**common_llama, head_dim=16, n_routed_experts=8, num_experts_per_tok=3,
                                        moe_intermediate_size=24, n_shared_experts=1, n_group=4, topk_group=2,
                                        routed_scaling_factor=2.0, first_k_dense_replace=1, norm_topk_prob=False,
                                        sliding_window=7, max_window_layers=1)
    if model_type == "glm4_moe_lite":  # untied; GLM-4.7-Flash's layer: DeepSeek-V3's attention (q through 12, a latent
        # of 16, keys of 8 + 4 rotated, values as wide as the keys) with GLM-4.5's experts (8 of 24, 3 a token by sigmoid
        # score + a correction, one group, times 1.8, a shared expert), its layers' kinds from mlp_layer_types (here
        # the first sparse, the second dense: the reverse of its default)
        return transformers.Glm4MoeLiteConfig(**dict(common_llama, num_key_value_heads=4, rms_norm_eps=1e-5),
                                              q_lora_rank=12, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=4,
                                              v_head_dim=12, n_routed_experts=8, num_experts_per_tok=3,
                                              moe_intermediate_size=24, n_shared_experts=1, n_group=1, topk_group=1,
                                              routed_scaling_factor=1.8, mlp_layer_types=["sparse", "dense"],
                                              rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})
    if model_type == "deepseek_v2":  # untied; DeepSeek-V2's attention (V3's, the rope as a complex product: interleaved
        # pairs) without q's bottleneck (V2-Lite's), values of 6 against keys of 12; yarn's rope with its mscales equal
        # (V2's); layer 0 dense, layer 1 8 experts of 24 in 4 groups: each token's 3 likeliest by softmax within its 2
        # groups whose best is likeliest (group_limited_greedy), unnormalized, times 4, beside 2 ungated shared experts
        return transformers.DeepseekV2Config(**dict(common_llama, num_key_value_heads=4), tie_word_embeddings=False,
                                             q_lora_rank=None, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=4,
                                             v_head_dim=6, n_routed_experts=8, num_experts_per_tok=3,
                                             moe_intermediate_size=24, n_shared_experts=2, n_group=4, topk_group=2,
                                             topk_method="group_limited_greedy", routed_scaling_factor=4.0,
                                             first_k_dense_replace=1,
                                             rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                                                              "original_max_position_embeddings": 8, "mscale": 0.707,
                                                              "mscale_all_dim": 0.707})
    if model_type == "deepseek_v3":  # untied; DeepSeek-V3's multi-head latent attention: q through a bottleneck of 12
        # with its RMSNorm, keys and values out of a latent of 16 with its RMSNorm, each head's key 8 dimensions from
        # there and 4 rotated ones (in interleaved pairs) every head shares, values of 6 (not the keys' 12); yarn's
        # rope with DeepSeek's two mscales (the scores' scale times mscale_all_dim's squared); layer 0 dense, layer 1
        # GLM-4.5's experts (8 of 24 in 4 groups, 3 a token among the 2 best groups, times 2.5, a shared expert)
        return transformers.DeepseekV3Config(**dict(common_llama, num_key_value_heads=4), tie_word_embeddings=False,
                                             q_lora_rank=12, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=4,
                                             v_head_dim=6, n_routed_experts=8, num_experts_per_tok=3,
                                             moe_intermediate_size=24, n_shared_experts=1, n_group=4, topk_group=2,
                                             routed_scaling_factor=2.5, first_k_dense_replace=1, norm_topk_prob=True,
                                             rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                                                              "original_max_position_embeddings": 8, "mscale": 0.8,
                                                              "mscale_all_dim": 1.0})
    if model_type == "deepseek_v3_plain":  # DeepSeek-V3's attention without q's bottleneck (q_lora_rank null: q_proj,
        # DeepSeek-V2-Lite's), its rope in halves (rope_interleave false) and unscaled, values as wide as the keys;
        # both layers sparse, unnormalized weights, one group
        return transformers.DeepseekV3Config(**dict(common_llama, num_key_value_heads=4), tie_word_embeddings=False,
                                             q_lora_rank=None, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=8,
                                             v_head_dim=16, rope_interleave=False, n_routed_experts=4,
                                             num_experts_per_tok=2, moe_intermediate_size=24, n_shared_experts=2,
                                             n_group=1, topk_group=1, routed_scaling_factor=1.0,
                                             first_k_dense_replace=0, norm_topk_prob=False)
    if model_type == "glm4_moe":  # untied; GLM-4.5's layer: LLaMA's norms, q, k and v biases, an RMSNorm on each head
        # of q and k, the rope on half of each head; layer 0 dense, layer 1 8 experts of 24 in 4 groups: each token
        # chooses 3 by sigmoid score + a fixed correction among its 2 best groups, weights normalized and times 2.5,
        # beside an ungated shared expert
        return transformers.Glm4MoeConfig(**common_llama, head_dim=16, tie_word_embeddings=False, pad_token_id=0,
                                          attention_bias=True, use_qk_norm=True, n_routed_experts=8,
                                          num_experts_per_tok=3, moe_intermediate_size=24, n_shared_experts=1,
                                          n_group=4, topk_group=2, routed_scaling_factor=2.5, first_k_dense_replace=1,
                                          norm_topk_prob=True)
    if model_type == "gpt_neox":  # untied; Pythia's layer: the attention and the MLP side by side, each with its own
        # LayerNorm (with biases) of the layer's input, q, k and v in one matrix (each head's rows together), every
        # bias, the erf GELU; the rope on half of each head (rotary_pct: Pythia's is a quarter)
        return transformers.GPTNeoXConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                          intermediate_size=64, vocab_size=VOCAB, max_position_embeddings=32,
                                          layer_norm_eps=1e-5, hidden_dropout=0.0, attention_dropout=0.0,
                                          rotary_pct=0.5, bos_token_id=1, eos_token_id=2)
    if model_type == "phi":  # untied; one LayerNorm with a bias before the attention and the MLP side by side, biases
        # on every projection and on the output layer, fc1, gelu_new and fc2 without a gate, the rope on half of
        # each head (PhiConfig's default)
        return transformers.PhiConfig(**{k: v for k, v in common_llama.items() if k != "rms_norm_eps"},
                                      layer_norm_eps=1e-5, resid_pdrop=0.0, embd_pdrop=0.0)
    if model_type == "gemma":  # tied; embeddings times sqrt(hidden), norms of (1 + weight), GeGLU, wide heads
        return transformers.GemmaConfig(**common_llama, head_dim=16, tie_word_embeddings=True, pad_token_id=0,
                                        hidden_act="gelu_pytorch_tanh")
    if model_type == "gemma2":  # + norms on the attention's and the MLP's outputs, its own attention scale, and
        # caps on the scores and the logits small enough to bend them; every other layer windowed, well below T
        return transformers.Gemma2Config(**common_llama, head_dim=16, tie_word_embeddings=True, pad_token_id=0,
                                         hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=24,
                                         attn_logit_softcapping=2.0, final_logit_softcapping=3.0,
                                         sliding_window=6)
    if model_type == "gemma3_text":  # Gemma 2's layer with an RMSNorm on each head of q and k; the windowed
        # layer's rope has its own theta, the full one a linear scaling (as Gemma 3 4B and up have); capped logits
        rope = {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                "full_attention": {"rope_type": "linear", "factor": 4.0, "rope_theta": 1000000.0}}
        return transformers.Gemma3TextConfig(**common_llama, head_dim=16, tie_word_embeddings=True, pad_token_id=0,
                                             hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=24,
                                             final_logit_softcapping=3.0, sliding_window=6,
                                             layer_types=["sliding_attention", "full_attention"], rope_parameters=rope)
    if model_type == "mixtral":  # untied; 4 experts, 2 per token, weights normalized; Mistral's window
        return transformers.MixtralConfig(**common_llama, tie_word_embeddings=False, sliding_window=9,
                                          num_local_experts=4, num_experts_per_tok=2)
    if model_type == "qwen3_moe":  # tied; Qwen3's layer with 6 experts of 24, 3 per token, weights not normalized
        # (the default); layer 1 keeps a dense MLP (mlp_only_layers)
        return transformers.Qwen3MoeConfig(**common_llama, head_dim=16, tie_word_embeddings=True, rope_theta=1e6,
                                           use_sliding_window=False, num_experts=6, num_experts_per_tok=3,
                                           moe_intermediate_size=24, norm_topk_prob=False, mlp_only_layers=[1])
    if model_type == "olmoe":  # untied; OLMo's norm over all of q's heads (and k's) after LLaMA's pre-norms; 4
        # experts of intermediate_size, 2 per token, weights not normalized (the default)
        return transformers.OlmoeConfig(**dict(common_llama, intermediate_size=24), tie_word_embeddings=False,
                                        pad_token_id=0, num_experts=4, num_experts_per_tok=2)
    if model_type == "qwen2_moe":  # tied; Qwen2's attention with q/k/v biases, 4 experts of 24, 2 per token,
        # normalized, beside a shared expert of 40 under a sigmoid gate; layer 0 keeps a dense MLP
        return transformers.Qwen2MoeConfig(**common_llama, tie_word_embeddings=True, rope_theta=1e6,
                                           use_sliding_window=False, num_experts=4, num_experts_per_tok=2,
                                           moe_intermediate_size=24, shared_expert_intermediate_size=40,
                                           norm_topk_prob=True, mlp_only_layers=[0])
    raise ValueError(model_type)


def experts_by_name(model_type, name, t):
    """transformers 5 holds an MoE layer's experts as two 3-D tensors (gate_up_proj (E, 2I, C), down_proj
    (E, C, I)); checkpoints, and zt, have each expert's weights by name (Mixtral: w1 gate, w3 up, w2 down, under
    block_sparse_moe; MiniMax-M2 as Mixtral, its router's correction buffer on the block). [(name, tensor)] in zt's
    names for one of transformers' parameters (or of GLM-4.5's and MiniMax-M2's correction buffers)."""
    mixtral = model_type in ("mixtral", "minimax_m2")
    if name.endswith(".mlp.e_score_correction_bias") and mixtral:
        return [(name.replace(".mlp.", ".block_sparse_moe."), t)]
    if name.endswith(".mlp.gate.moe_statics.e_score_correction_bias"):  # ERNIE 4.5's, as its files name it
        return [(name.replace(".gate.moe_statics.", ".moe_statics."), t)]
    if model_type == "gpt_neox" and name == "lm_head.weight":  # transformers 5's name in memory; its files' (and zt's)
        return [("embed_out.weight", t)]
    if model_type == "gpt_oss":  # its files', zt's and transformers' names and layouts are one
        return [(name, t)]
    if ".mlp.gate." in name and mixtral:
        return [(name.replace(".mlp.gate.", ".block_sparse_moe.gate."), t)]
    if not name.endswith((".mlp.experts.gate_up_proj", ".mlp.experts.down_proj")):
        return [(name, t)]
    base = name.rsplit(".", 1)[0].replace(".mlp.", ".block_sparse_moe." if mixtral else ".mlp.")
    gate, up, down = ("w1", "w3", "w2") if mixtral else ("gate_proj", "up_proj", "down_proj")
    out = []
    for e in range(t.shape[0]):
        if name.endswith("gate_up_proj"):
            half = t.shape[1] // 2
            out += [(f"{base}.{e}.{gate}.weight", t[e, :half]), (f"{base}.{e}.{up}.weight", t[e, half:])]
        else:
            out.append((f"{base}.{e}.{down}.weight", t[e]))
    return out


def randomize(model, gen):
    """Seeded parameters: weights N(0, 1/fan_in), embeddings N(0, 0.2^2), biases N(0, 0.1^2), norm
    weights 1 + N(0, 0.1^2); then the MoE routers' fixed corrections N(0, 0.05^2)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 2 and ("wte" in name or "wpe" in name or "embed_tokens" in name):
                p.copy_(torch.randn(p.shape, generator=gen) * 0.2)
            elif name.endswith(".sinks"):  # gpt-oss's sinks: logits of the scores' size
                p.copy_(torch.randn(p.shape, generator=gen))
            elif name.endswith(".gate_up_proj_bias") or name.endswith(".down_proj_bias"):  # gpt-oss's 2-D biases
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
            elif name.endswith((".gate_up_proj", ".down_proj")) and model.config.model_type == "gpt_oss":  # (E, in, out)
                p.copy_(torch.randn(p.shape, generator=gen) / p.shape[1] ** 0.5)
            elif p.dim() >= 2 and "norm" not in name:  # an MoE layer's experts: (E, out, in); Cohere's q and k
                # norms are (heads, head_dim), norms
                fan_in = p.shape[0] if conv1d(model, name) else p.shape[-1]
                p.copy_(torch.randn(p.shape, generator=gen) / fan_in ** 0.5)
            elif "norm" in name or ".ln_" in name:  # Gemma's norm weights are stored as their difference from 1
                one = 0.0 if model.config.model_type.startswith("gemma") else 1.0
                p.copy_(one + 0.1 * torch.randn(p.shape, generator=gen) if name.endswith("weight")
                        else 0.1 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
        for name, b in list(model.named_buffers()) + list(model.named_parameters()):  # the routers' fixed corrections
            if name.endswith("e_score_correction_bias"):  # (0 at initialisation), of a size that moves choices
                b.copy_(0.05 * torch.randn(b.shape, generator=gen))


def neox_qkv(model, name):
    """GPT-NeoX's query_key_value: its rows (heads, 3, head_dim); zt's (3, heads, head_dim), as GPT-2's c_attn"""
    return model.config.model_type == "gpt_neox" and ".attention.query_key_value." in name


def conv1d(model, name):
    """GPT-2's Conv1D weights ((in, out); Starcoder2's c_fc and c_proj are nn.Linear's of the same names)"""
    return model.config.model_type == "gpt2" and name.endswith(CONV1D)


def zt_layout(model, name, t):
    """A parameter (or gradient) as zt stores it: GPT-2's Conv1D weights transposed to (out, in)."""
    t = t.detach().clone()  # a copy: the optimizer later updates the parameters in place
    if neox_qkv(model, name):
        heads = model.config.num_attention_heads
        t = t.reshape(heads, 3, -1, *t.shape[1:]).transpose(0, 1).reshape(t.shape)
    if conv1d(model, name):
        t = t.t()
    return t.contiguous()


def write_fixture(path, tensors):
    with open(path, "wb") as f:
        f.write(b"ZTFIXT01")
        f.write(struct.pack("<I", len(tensors)))
        for name, t in tensors:
            t = t.detach().contiguous()
            if t.dtype == torch.float32:
                code, fmt = 0, "<f4"
            elif t.dtype in (torch.int32, torch.int64):
                code, fmt = 1, "<i4"
                t = t.to(torch.int32)
            else:
                raise TypeError(f"{name}: {t.dtype}")
            nb = name.encode()
            f.write(struct.pack("<I", len(nb)) + nb)
            f.write(struct.pack("<II", code, t.dim()))
            f.write(struct.pack(f"<{t.dim()}q", *t.shape))
            f.write(t.numpy().astype(fmt).tobytes())


def make(fixture, seed):
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model_type, settings = VARIANTS.get(fixture, (fixture, {}))
    config = make_config(model_type)
    for key, value in settings.items():
        setattr(config, key, value)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    model = model.to(torch.float32)
    if "rope_parameters" in settings:  # the rope the settings ask for is the one the model built
        rotary = model.model.rotary_emb
        assert rotary.rope_type == settings["rope_parameters"]["rope_type"]
        assert rotary.attention_scaling != 1.0 or rotary.rope_type == "dynamic"
    model.train()  # every dropout is 0 but the *_dropout fixtures': train mode is what training uses
    randomize(model, gen)
    buffers = [(n, b) for n, b in model.named_buffers() if n.endswith("e_score_correction_bias")]
    # ERNIE 4.5's correction is a parameter without a gradient: zt's frozen parameters, as the buffers
    buffers += [(n, p) for n, p in model.named_parameters() if not p.requires_grad]
    params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]  # tied weights appear once
    names = [n for n, _ in params]
    tied = bool(getattr(model.config, "tie_word_embeddings", False))
    assert ("lm_head.weight" in names) != tied, (model_type, tied)
    if model_type == "gpt2":
        assert sum(n.endswith(CONV1D) for n in names) == 4 * config.n_layer

    out = []
    input_ids = torch.randint(0, VOCAB, (B, T), generator=gen)
    out.append(("input_ids", input_ids))
    clock = Clock()
    neftune = ZtNeftune(NEFTUNE_ALPHA, clock) if fixture.endswith("_neftune") else None
    if neftune:
        model.get_input_embeddings().register_forward_hook(neftune)
        out.append(("neftune_alpha", torch.tensor([NEFTUNE_ALPHA], dtype=torch.float32)))
    jitter = settings.get("router_jitter_noise", 0.0)
    for layer, block in enumerate(model.model.layers if jitter else []):
        block.mlp.jitter_noise = 0.0  # transformers' own draw off; the hook multiplies by zt's
        block.mlp.register_forward_pre_hook(ZtJitter(jitter, layer, clock))
    dropout = ZtDropout(clock) if fixture.endswith("_dropout") else None
    if dropout and model_type == "gpt2":
        dropout.at(model.transformer.drop, DROP_EMBD, 0)
        for layer, block in enumerate(model.transformer.h):
            dropout.at(block.attn, DROP_ATTN, layer + 1)
            dropout.at(block.attn.resid_dropout, DROP_RESID_ATTN, layer + 1)
            dropout.at(block.mlp.dropout, DROP_RESID_MLP, layer + 1)
    elif dropout and model_type in ("seed_oss", "starcoder2"):  # dropouts called inside the attention's and the MLP's
        # forward (Starcoder2's on the embeddings in the model's)
        if model_type == "starcoder2":
            dropout.at(model.model.embed_tokens, DROP_EMBD, 0)
        for layer, block in enumerate(model.model.layers):
            dropout.at(block.self_attn, DROP_ATTN, layer + 1)
            dropout.at(block.self_attn.o_proj, DROP_RESID_ATTN, layer + 1)  # the attention's probabilities are past
            dropout.at(block.mlp.down_proj if model_type == "seed_oss" else block.mlp.c_proj, DROP_RESID_MLP, layer + 1)
    elif dropout and model_type == "gpt_neox":  # hidden_dropout's modules: the embeddings' and both branches'
        dropout.at(model.gpt_neox.emb_dropout, DROP_EMBD, 0)
        for layer, block in enumerate(model.gpt_neox.layers):
            dropout.at(block.attention, DROP_ATTN, layer + 1)
            dropout.at(block.post_attention_dropout, DROP_RESID_ATTN, layer + 1)
            dropout.at(block.post_mlp_dropout, DROP_RESID_MLP, layer + 1)
    elif dropout and model_type == "phi":  # one resid_dropout module for both outputs: named by what ran last
        dropout.at(model.model.embed_dropout, DROP_EMBD, 0)
        for layer, block in enumerate(model.model.layers):
            dropout.at(block.self_attn, DROP_ATTN, layer + 1)
            dropout.at(block.self_attn.dense, DROP_RESID_ATTN, layer + 1)  # its output goes through resid_dropout
            dropout.at(block.mlp, DROP_RESID_MLP, layer + 1)  # and so does this one's
    elif dropout and model_type == "stablelm":  # hidden_dropout, a module, on the MLP's output alone
        for layer, block in enumerate(model.model.layers):
            dropout.at(block.self_attn, DROP_ATTN, layer + 1)
            dropout.at(block.dropout, DROP_RESID_MLP, layer + 1)
    elif dropout:
        for layer, block in enumerate(model.model.layers):
            dropout.at(block.self_attn, DROP_ATTN, layer + 1)
            dropout.at(block.resid_attn_dropout, DROP_RESID_ATTN, layer + 1)
            dropout.at(block.resid_mlp_dropout, DROP_RESID_MLP, layer + 1)
    if dropout:
        torch.nn.functional.dropout = dropout
    for name, p in params:
        out += [("param." + n, t) for n, t in experts_by_name(model_type, name, zt_layout(model, name, p))]
    out += [("param." + n, t) for name, b in buffers  # zt's frozen parameters
            for n, t in experts_by_name(model_type, name, b.detach().clone())]

    model.zero_grad(set_to_none=True)
    res = model(input_ids=input_ids, labels=input_ids)
    res.loss.backward()
    out.append(("logits", res.logits.detach()[..., :VOCAB].contiguous()))
    out.append(("loss", res.loss.detach().reshape(1)))
    for name, p in params:
        out += [("grad." + n, t) for n, t in experts_by_name(model_type, name, zt_layout(model, name, p.grad))]
    if neftune or jitter or dropout:  # evaluation: no noise
        model.eval()
        with torch.no_grad():
            out.append(("eval_loss", model(input_ids=input_ids, labels=input_ids).loss.detach().reshape(1)))
        model.train()

    # the Trainer's rule: not biases or norms (experts decay; Cohere's q and k norms are 2-D, norms by their names;
    # gpt-oss's experts' biases are 2-D, biases by their names, and its sinks 1-D, neither)
    def decayed(n, p):
        return (p.dim() >= 2 or n.endswith(".sinks")) and "_norm." not in n and not n.endswith("_bias")
    decay = [p for n, p in params if decayed(n, p)]
    no_decay = [p for n, p in params if not decayed(n, p)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": WD}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=LR, betas=BETAS, eps=EPS)
    step_ids = torch.randint(0, VOCAB, (STEPS, B, T), generator=gen)
    losses, norms = [], []
    for k in range(STEPS):
        clock.step = k
        opt.zero_grad(set_to_none=True)
        loss = model(input_ids=step_ids[k], labels=step_ids[k]).loss
        loss.backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM)))
        losses.append(loss.item())
        opt.step()
    out.append(("steps.input_ids", step_ids))
    out.append(("steps.loss", torch.tensor(losses, dtype=torch.float32)))
    out.append(("steps.grad_norm", torch.tensor(norms, dtype=torch.float32)))

    d = os.path.join(HERE, fixture)
    os.makedirs(d, exist_ok=True)
    model.config.architectures = [type(model).__name__]
    model.config.save_pretrained(d)  # config.json only, as save_pretrained writes it
    if model_type in ("mixtral", "qwen2_moe", "qwen3_moe", "olmoe", "glm4_moe", "minimax_m2", "ernie4_5_moe",
                      "deepseek_v3", "deepseek_v3_plain", "deepseek_v2", "glm4_moe_lite", "dots1",
                      "hunyuan_v1_moe", "gpt_oss"):  # the split
        # save_pretrained writes
        import tempfile
        from safetensors.torch import load_file
        with tempfile.TemporaryDirectory() as tmp:
            model.save_pretrained(tmp)
            saved = load_file(os.path.join(tmp, "model.safetensors"))
        mine = dict(t for name, p in model.named_parameters() for t in experts_by_name(model_type, name, p.detach()))
        mine.update(t for name, b in buffers for t in experts_by_name(model_type, name, b.detach()))
        assert sorted(mine) == sorted(k for k in saved if k != "lm_head.weight" or not tied), (sorted(mine), sorted(saved))
        assert all(torch.equal(mine[k], saved[k]) for k in mine)
    if dropout:
        torch.nn.functional.dropout = dropout.torch_dropout
    write_fixture(os.path.join(d, "fixture.bin"), out)
    print(f"{fixture}: loss {res.loss.item():.6f}, step losses {losses[0]:.6f} .. {losses[-1]:.6f}, "
          f"{os.path.getsize(os.path.join(d, 'fixture.bin'))} bytes")


def main():
    torch.set_default_dtype(torch.float32)
    torch.set_num_threads(1)  # the same reduction order on every run
    torch.use_deterministic_algorithms(True)
    only = sys.argv[1:]
    for i, fixture in enumerate(["gpt2", "llama", "mistral", "qwen2", "qwen3", "phi3", "gemma", "gemma2",
                                 "gemma3_text", "mixtral", "qwen3_moe", "qwen2_moe", "mixtral_balance",
                                 "qwen3_moe_balance", "gpt2_neftune", "gemma_neftune", "mixtral_jitter",
                                 "qwen2_yarn", "qwen2_yarn_keys", "phi3_longrope",
                                 "phi3_longrope_short", "gpt2_dropout", "phi3_dropout", "llama_dynamic",
                                 "phi3_partial", "smollm3", "olmo2", "olmo3", "olmoe", "granite", "glm", "glm4", "seed_oss", "internlm3", "ernie4_5",
                                 "seed_oss_dropout", "exaone4", "granite_neftune", "cohere", "stablelm", "stablelm_dropout",
                                 "starcoder2", "starcoder2_dropout", "phi", "phi_dropout",
                                 "gpt_neox", "gpt_neox_sequential", "gpt_neox_dropout", "glm4_moe",
                                 "minimax_m2", "ernie4_5_moe", "cohere2", "cohere_qk_norm", "deepseek_v3",
                                 "deepseek_v3_plain", "deepseek_v2", "glm4_moe_lite", "dots1",
                                 "hunyuan_v1_dense", "hunyuan_v1_moe", "ministral", "gpt_oss", "gpt_oss_clamped",
                                 "gpt_oss_balance", "gpt_neox_nobias"]):
        if not only or fixture in only:
            make(fixture, SEEDS.get(fixture, 1000 + i))


if __name__ == "__main__":
    main()
