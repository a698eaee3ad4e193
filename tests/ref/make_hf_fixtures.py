#!/usr/bin/env python3
"""Hugging Face model directories for tests/test_hf.c, written by transformers itself.

    python3 tests/ref/make_hf_fixtures.py                 (from the repository root; the same files each run)
    python3 tests/ref/make_hf_fixtures.py qwen3           (only these model types' plain directories, or VARIANTS')
    python3 tests/ref/make_hf_fixtures.py --check DIR NAME
        loads a directory zt exported (zt_train --export DIR) in transformers and compares its logits on
        tests/ref/hf/NAME/tokens.bin with those of tests/ref/hf/NAME; prints the largest difference

For each case it writes tests/ref/hf/<name>/: what save_pretrained writes (config.json,
model.safetensors, or shards with model.safetensors.index.json), tokens.bin (llm.c v1: a 1024-byte
header, then uint16 tokens; ROWS rows of T tokens), and expected.json: {"loss": L}, the mean next-token
loss transformers computes over those rows (labels=input_ids), which `zt_train --eval --seq_len 16` (T) must print.

Cases: the model types of tests/ref/make_model_fixtures.py (same configurations and seeded
parameters), plus
    cohere_qk_norm the Cohere case with use_qk_norm (Command R+'s): q and k norms of (heads, head_dim)
    stablelm_qk_norm the StableLM case with use_parallel_residual and qk_layernorm (StableLM 2 12B's): q and k
                   norms of a tensor a head (q_layernorm.norms.{h}.weight)
    llama_bf16     the LLaMA case saved in bfloat16 (zt converts on load)
    llama31_rope   a LLaMA with LLaMA-3.1's "llama3" rope scaling (original context 64, so all three bands show)
    mistral_shards the Mistral case in shards of at most 20 kB, with an index
    gpt2_old       the GPT-2 case with the names of old GPT-2 files (no "transformer." prefix) and their
                   attn.bias / attn.masked_bias buffers, which zt skips
    gpt_neox_buffers the GPT-NeoX case with Pythia's files' attention.bias, attention.masked_bias and
                   rotary_emb.inv_freq buffers in each layer, which zt skips, and the output layer under transformers
                   5's name in memory, lm_head.weight (its files, and zt's, name it embed_out.weight)
    qwen2_tok      a Qwen2 with the vocabulary of tests/ref/tokenizers/qwen2 and that tokenizer.json beside it
    gpt_oss_mxfp4  the gpt-oss case (its experts 32 wide, as MXFP4 needs) with its experts in MXFP4, as gpt-oss's
                   released files hold them (name_blocks and name_scales, quantization_config's mxfp4); its loss is
                   transformers' with Mxfp4Config(dequantize=True)
    deepseek_v3_fp8 the DeepSeek-V3 case with its projections in fine-grained FP8, as DeepSeek-V3's and R1's released
                   files hold them (F8_E4M3 weights beside weight_scale_inv, quantization_config's fp8; blocks of 4 x 4
                   here, which divide every projection, 128 x 128 there); its loss is transformers' dequantized one
    qwen3_fp8      the Qwen3 case in fine-grained FP8 (as Qwen3's -FP8 files) in blocks of 24 x 24, partial at the end
                   of every row and column of 32 or 64: transformers derives its blocks from the grid and cannot read
                   these, so the loss is transformers' on the weights dequantized as DeepSeek's weight_dequant does
                   (a partial block takes its block's scale), here in torch
"""
import json
import os
import struct
import sys

import torch
import transformers
from safetensors.torch import load_file, save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_model_fixtures import make_config, randomize  # noqa: E402

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hf")
ROWS, T = 4, 16
SEEDS = {"gpt2": 1, "llama": 2, "mistral": 3, "qwen2": 4, "qwen3": 7, "phi3": 8, "gemma": 9, "gemma2": 10, "gemma3_text": 11,
         "mixtral": 12, "qwen3_moe": 13, "qwen2_moe": 14, "smollm3": 15, "olmo2": 16, "olmo3": 17, "olmoe": 18, "granite": 19, "glm": 20, "glm4": 21, "seed_oss": 22,
         "internlm3": 23, "ernie4_5": 24, "exaone4": 25, "cohere": 26, "cohere2": 27, "stablelm": 29,
         "starcoder2": 30, "phi": 32,
         "gpt_neox": 33, "glm4_moe": 34, "minimax_m2": 35,
         "ernie4_5_moe": 36, "deepseek_v3": 37, "deepseek_v2": 38, "glm4_moe_lite": 39, "dots1": 40, "hunyuan_v1_dense": 41, "hunyuan_v1_moe": 42, "ministral": 43,
         "gpt_oss": 44}


# cases of a model type with other settings: (its type, the settings, a seed)
VARIANTS = {"cohere_qk_norm": ("cohere", dict(use_qk_norm=True), 28),  # Command R+'s q and k norms, (heads, head_dim)
            # StableLM 2 12B's layer: the MLP beside the attention, q and k norms of a tensor a head
            "stablelm_qk_norm": ("stablelm", dict(use_parallel_residual=True, qk_layernorm=True), 31)}


def model_for(name):
    model_type, settings, seed = VARIANTS.get(name, (name, {}, SEEDS.get(name)))
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    config = make_config(model_type)
    for key, value in settings.items():
        setattr(config, key, value)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    randomize(model, gen)
    return model.eval()


def rows(name):
    gen = torch.Generator().manual_seed(100 + (VARIANTS[name][2] if name in VARIANTS else SEEDS[name]))
    return torch.randint(0, 61, (ROWS, T), generator=gen)


def write_tokens(path, ids):
    flat = ids.flatten().tolist()
    header = [20240520, 1, len(flat)] + [0] * 253
    with open(path, "wb") as f:
        f.write(struct.pack("<256i", *header))
        f.write(struct.pack(f"<{len(flat)}H", *flat))


def read_tokens(path):
    with open(path, "rb") as f:
        header = struct.unpack("<256i", f.read(1024))
        return list(struct.unpack(f"<{header[2]}H", f.read(2 * header[2])))


def write_loss(out, model, ids):
    """out/expected.json: model's mean next-token loss on ids (labels=input_ids)"""
    with torch.no_grad():
        loss = model(ids, labels=ids).loss.item()
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump({"loss": loss}, f)
        f.write("\n")


def requantize(out, quantize, quantization_config):
    """out's model.safetensors with each tensor replaced by quantize(name, tensor) (a dict of what to write in its
    place), and its config.json with quantization_config"""
    path = os.path.join(out, "model.safetensors")
    tensors = {}
    for name, t in load_file(path).items():
        tensors.update(quantize(name, t))
    save_file(tensors, path, metadata={"format": "pt"})
    with open(os.path.join(out, "config.json")) as f:
        config = json.load(f)
    config["quantization_config"] = quantization_config
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")


def save(name, model, ids, **kwargs):
    out = os.path.join(HERE, name)
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        os.remove(os.path.join(out, f))
    model.save_pretrained(out, safe_serialization=True, **kwargs)
    write_loss(out, model, ids)
    write_tokens(os.path.join(out, "tokens.bin"), ids)
    for extra in ("generation_config.json",):
        p = os.path.join(out, extra)
        if os.path.exists(p):
            os.remove(p)
    return out


FP4 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])


def mxfp4(w):
    """w (E, in, out) -> (blocks (E, out, in / 32, 16) u8, scales (E, out, in / 32) u8): each block of 32 along in
    by a power of two that fits its largest into FP4's 6, each value the nearest of FP4's, two a byte, low first"""
    x = w.float().transpose(1, 2).contiguous()
    E, R, K = x.shape
    x = x.reshape(E, R, K // 32, 32)
    exp = torch.ceil(torch.log2(x.abs().amax(-1).clamp(min=1e-30) / 6.0)).to(torch.int32)
    idx = (x / torch.pow(2.0, exp.float())[..., None])[..., None].sub(FP4).abs().argmin(-1).to(torch.uint8)
    return (idx[..., 0::2] | (idx[..., 1::2] << 4)).to(torch.uint8), (exp + 127).to(torch.uint8)


def save_gpt_oss_mxfp4():
    cfg = make_config("gpt_oss")
    cfg.intermediate_size = 32  # down_proj's blocks run along it
    torch.manual_seed(45)
    model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="eager")
    randomize(model, torch.Generator().manual_seed(45))
    ids = rows("gpt_oss")
    out = save("gpt_oss_mxfp4", model.eval(), ids)

    def quantize(name, t):
        if not name.endswith((".mlp.experts.gate_up_proj", ".mlp.experts.down_proj")):
            return {name: t}
        blocks, scales = mxfp4(t)
        return {name + "_blocks": blocks, name + "_scales": scales}
    requantize(out, quantize, {"modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                          "model.embed_tokens", "lm_head"], "quant_method": "mxfp4"})
    deq = transformers.AutoModelForCausalLM.from_pretrained(out, attn_implementation="eager", dtype=torch.float32,
                                                            quantization_config=transformers.Mxfp4Config(dequantize=True))
    write_loss(out, deq.eval(), ids)


FP8_CONFIG = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8"}  # DeepSeek-V3's, less its blocks


def fp8(w, block):
    """w (R, C) -> (e4m3 weight, f32 scale_inv (ceil(R / rows), ceil(C / cols))): each block, a partial one at the end of
    a row or column too, scaled so that its largest is e4m3's 448"""
    R, C = w.shape
    SR, SC = -(-R // block[0]), -(-C // block[1])
    pad = torch.zeros(SR * block[0], SC * block[1])
    pad[:R, :C] = w.float()
    b = pad.reshape(SR, block[0], SC, block[1])
    scale = b.abs().amax(dim=(1, 3)).clamp(min=1e-12) / 448.0
    q = (b / scale[:, None, :, None]).reshape(SR * block[0], SC * block[1])[:R, :C].contiguous().to(torch.float8_e4m3fn)
    return q, scale.float()


def fp8_dequant(q, scale, block):
    """DeepSeek's weight_dequant: element (i, j) = q (i, j) * scale (i / rows, j / cols), in f32"""
    s = scale.repeat_interleave(block[0], 0).repeat_interleave(block[1], 1)[:q.shape[0], :q.shape[1]]
    return q.float() * s


def save_deepseek_v3_fp8():
    block = [4, 4]
    model = model_for("deepseek_v3")
    ids = rows("deepseek_v3")
    out = save("deepseek_v3_fp8", model, ids)

    def quantize(name, t):  # the projections, the experts' too; not embeddings, norms, the router, the output layer
        if not name.endswith(("_proj.weight", "_proj_with_mqa.weight")):
            return {name: t}
        q, scale = fp8(t, block)
        return {name: q, name + "_scale_inv": scale}
    requantize(out, quantize, FP8_CONFIG | {"weight_block_size": block})
    deq = transformers.AutoModelForCausalLM.from_pretrained(
        out, attn_implementation="eager", dtype=torch.float32,
        quantization_config=transformers.FineGrainedFP8Config(dequantize=True, weight_block_size=tuple(block)))
    write_loss(out, deq.eval(), ids)


def save_qwen3_fp8():
    block = [24, 24]
    model = model_for("qwen3")
    ids = rows("qwen3")
    out = save("qwen3_fp8", model, ids)
    plain = {}  # the weights as DeepSeek's weight_dequant reads them back

    def quantize(name, t):
        plain[name] = t
        if not name.endswith("_proj.weight"):
            return {name: t}
        q, scale = fp8(t, block)
        plain[name] = fp8_dequant(q, scale, block)
        return {name: q, name + "_scale_inv": scale}
    requantize(out, quantize, FP8_CONFIG | {"weight_block_size": block})
    missing, unexpected = model.load_state_dict(plain, strict=False)
    assert not unexpected and all(k == "lm_head.weight" for k in missing), (missing, unexpected)  # tied
    write_loss(out, model.eval(), ids)


def save_neox_buffers():
    """GPT-NeoX with the attention's buffers of Pythia's files, and its output layer named lm_head.weight"""
    out = save("gpt_neox_buffers", model_for("gpt_neox"), rows("gpt_neox"))
    path = os.path.join(out, "model.safetensors")
    old = {("lm_head." + k[len("embed_out."):] if k.startswith("embed_out.") else k): v for k, v in load_file(path).items()}
    assert "lm_head.weight" in old
    cfg = make_config("gpt_neox")
    for layer in range(cfg.num_hidden_layers):
        n = cfg.max_position_embeddings
        old[f"gpt_neox.layers.{layer}.attention.bias"] = torch.tril(torch.ones(n, n, dtype=torch.bool)).view(1, 1, n, n)
        old[f"gpt_neox.layers.{layer}.attention.masked_bias"] = torch.tensor(-1e9)
        old[f"gpt_neox.layers.{layer}.attention.rotary_emb.inv_freq"] = 1.0 / (10000 ** (torch.arange(0, 4, 2).float() / 4))
    save_file(old, path, metadata={"format": "pt"})


def main():
    torch.use_deterministic_algorithms(True)
    for name in list(SEEDS) + list(VARIANTS):
        save(name, model_for(name), rows(name))
    save("llama_bf16", model_for("llama").to(torch.bfloat16), rows("llama"))
    # LLaMA-3.1's rope scaling, with an original context small enough that every band of wavelengths shows
    cfg = make_config("llama")
    cfg.rope_parameters = {"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0, "low_freq_factor": 1.0,
                           "high_freq_factor": 4.0, "original_max_position_embeddings": 64}
    torch.manual_seed(6)
    scaled = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="eager")
    randomize(scaled, torch.Generator().manual_seed(6))
    save("llama31_rope", scaled.eval(), rows("llama"))
    save("mistral_shards", model_for("mistral"), rows("mistral"), max_shard_size="20KB")
    # old GPT-2 names: no "transformer." prefix, the causal-mask buffers kept
    out = save("gpt2_old", model_for("gpt2"), rows("gpt2"))
    path = os.path.join(out, "model.safetensors")
    tensors = load_file(path)
    old = {k[len("transformer."):] if k.startswith("transformer.") else k: v for k, v in tensors.items()}
    cfg = make_config("gpt2")
    for layer in range(cfg.n_layer):
        old[f"h.{layer}.attn.bias"] = torch.tril(torch.ones(cfg.n_positions, cfg.n_positions)).view(
            1, 1, cfg.n_positions, cfg.n_positions)
        old[f"h.{layer}.attn.masked_bias"] = torch.tensor(-1e4)
    save_file(old, path, metadata={"format": "pt"})
    save_neox_buffers()
    save_gpt_oss_mxfp4()
    save_deepseek_v3_fp8()
    save_qwen3_fp8()
    # a Qwen2 whose vocabulary is the Qwen2-style tokenizer's of tests/ref/tokenizers (the end-to-end check:
    # tokenize an instruction set with the model's own tokenizer.json, fine-tune, export)
    tok = os.path.join(os.path.dirname(HERE), "tokenizers", "qwen2", "tokenizer.json")
    with open(tok) as f:
        vocab = len(json.load(f)["model"]["vocab"]) + 3
    cfg = make_config("qwen2")
    cfg.vocab_size = vocab
    torch.manual_seed(5)
    model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="eager")
    randomize(model, torch.Generator().manual_seed(5))
    gen = torch.Generator().manual_seed(105)
    out = save("qwen2_tok", model.eval(), torch.randint(0, vocab, (ROWS, T), generator=gen))
    with open(tok) as src, open(os.path.join(out, "tokenizer.json"), "w") as dst:
        dst.write(src.read())


def check(exported, name):
    ref = transformers.AutoModelForCausalLM.from_pretrained(os.path.join(HERE, name), attn_implementation="eager")
    got = transformers.AutoModelForCausalLM.from_pretrained(exported, attn_implementation="eager",
                                                            torch_dtype=torch.float32)
    ids = torch.tensor(read_tokens(os.path.join(HERE, name, "tokens.bin"))).view(ROWS, T)
    with torch.no_grad():
        a = ref.float()(ids).logits
        b = got.float()(ids).logits
    print(f"{name}: largest logit difference {(a - b).abs().max().item():.3g} (logits up to {a.abs().max().item():.3g})")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--check":
        check(sys.argv[2], sys.argv[3])
    elif len(sys.argv) > 1:
        torch.use_deterministic_algorithms(True)
        for model_type in sys.argv[1:]:
            if model_type == "gpt_neox_buffers":
                save_neox_buffers()
            elif model_type == "gpt_oss_mxfp4":
                save_gpt_oss_mxfp4()
            elif model_type == "deepseek_v3_fp8":
                save_deepseek_v3_fp8()
            elif model_type == "qwen3_fp8":
                save_qwen3_fp8()
            else:
                save(model_type, model_for(model_type), rows(model_type))
    else:
        main()
