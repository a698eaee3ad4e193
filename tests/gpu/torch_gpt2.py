#!/usr/bin/env python3
"""tests/gpu/torch_gpt2.py - GPT-2 124M training throughput in PyTorch on this GPU, eager and torch.compile: the
yardstick tests/gpu/run.sh holds bench/gpu.c's zt numbers against.

The model and settings are bench/gpu.c's: 12 layers, 12 heads, width 768, context 1024, vocabulary 50257 padded to
50304 (as zt pads it; the loss here runs over all 50304 columns, as nanoGPT's does), tied embeddings, gelu (tanh),
f32 weights under bf16 autocast, AdamW fused, clipping at 1.0, F.scaled_dot_product_attention (causal), no activation
checkpointing, micro-batch B rows of 1024 tokens. Each mode: warm-up steps (torch.compile compiles in them), then steps
for --seconds (3 to 20), timed with the wall clock after torch.cuda.synchronize().

One JSON line per mode: {"bench":"torch_gpt2","mode":"eager"|"compile",...,"tokens_per_s":...}. Without torch or
without CUDA in torch: one {"bench":"torch_gpt2","skipped":"..."} line, exit status 0.

    python3 tests/gpu/torch_gpt2.py [--batch 32] [--seconds 8] [--modes eager,compile]
"""
import argparse
import json
import math
import sys
import time


def emit(**fields):
    print(json.dumps({"bench": "torch_gpt2", **fields}, separators=(",", ":")), flush=True)  # run.sh greps "k":v


def build_model(torch, n_layer=12, n_head=12, n_embd=768, n_ctx=1024, vocab=50304):
    nn = torch.nn
    F = torch.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(n_embd)
            self.c_attn = nn.Linear(n_embd, 3 * n_embd)
            self.c_proj = nn.Linear(n_embd, n_embd)
            self.ln_2 = nn.LayerNorm(n_embd)
            self.c_fc = nn.Linear(n_embd, 4 * n_embd)
            self.mlp_proj = nn.Linear(4 * n_embd, n_embd)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, n_head, C // n_head).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))
            return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab, n_embd)
            self.wpe = nn.Embedding(n_ctx, n_embd)
            self.h = nn.ModuleList(Block() for _ in range(n_layer))
            self.ln_f = nn.LayerNorm(n_embd)
            self.lm_head = nn.Linear(n_embd, vocab, bias=False)
            self.lm_head.weight = self.wte.weight  # tied, as GPT-2's
            for name, p in self.named_parameters():
                if p.dim() == 2:
                    std = 0.02 / math.sqrt(2 * n_layer) if name.endswith("proj.weight") else 0.02
                    nn.init.normal_(p, 0.0, std)
                elif name.endswith("bias"):
                    nn.init.zeros_(p)

        def forward(self, idx, targets):
            T = idx.shape[1]
            x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
            for block in self.h:
                x = block(x)
            logits = self.lm_head(self.ln_f(x))
            return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))  # f32 under autocast

    return GPT()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--modes", default="eager,compile")
    args = ap.parse_args()
    try:
        import torch
    except ImportError as e:
        emit(skipped=f"no torch: {e}")
        return 0
    if not torch.cuda.is_available():
        emit(skipped=f"torch {torch.__version__} sees no CUDA device")
        return 0
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    dev = torch.device("cuda")
    gpu = torch.cuda.get_device_name(dev)
    model = build_model(torch, n_ctx=max(1024, args.seq)).to(dev)
    n_params = sum(p.numel() for p in model.parameters()) - (50304 - 50257) * 768  # real vocabulary, as zt counts
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4, weight_decay=0.0, fused=True)
    B, T = args.batch, args.seq
    g = torch.Generator(device=dev).manual_seed(1)
    x = torch.randint(0, 50257, (B, T), device=dev, generator=g)
    y = torch.randint(0, 50257, (B, T), device=dev, generator=g)

    for mode in args.modes.split(","):
        fwd = torch.compile(model) if mode == "compile" else model

        def step():
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                loss = fwd(x, y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            return loss

        try:
            t0 = time.time()
            for _ in range(3):
                loss = step()
            torch.cuda.synchronize()
            warm_s = time.time() - t0
            steps, t0, sec = 0, time.time(), 0.0
            while steps < 20 and (steps < 3 or sec < args.seconds):
                loss = step()
                torch.cuda.synchronize()
                steps += 1
                sec = time.time() - t0
        except Exception as e:  # out of memory, or a compiler failure: say which mode, go on
            emit(mode=mode, error=f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", **{"pass": False})
            torch.cuda.empty_cache()
            continue
        flops_per_token = 6 * n_params + 12 * 12 * 768 * T
        emit(mode=mode, gpu=gpu, torch=torch.__version__, batch=B, seq=T, params=n_params, warmup_s=round(warm_s, 2),
             steps=steps, step_ms=round(1e3 * sec / steps, 1), tokens_per_s=round(B * T * steps / sec),
             flops_per_token=flops_per_token, loss=round(loss.item(), 4),
             max_memory_gib=round(torch.cuda.max_memory_allocated() / 2**30, 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
