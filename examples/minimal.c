/* examples/minimal.c - a byte-level language model trained with zt's ops, in one page.

   The model predicts the next byte of a text from the CTX = 3 bytes before it:
       x = E[c_t] + E[256 + c_(t-1)] + E[512 + c_(t-2)]   E (3*256,C): one table, one part per offset
       h = gelu(x @ W1^T + b1)                            W1 (H,C), b1 (H)
       loss = cross-entropy(h @ W2^T, c_(t+1))            W2 (256,H)
   trained with AdamW on sentences this program makes up, so no data file is needed. It shows the
   whole contract of the ops API: device memory from the backend's arena, host buffers from its pinned
   arena, work queued on a stream, host reads only after a sync, gradients zeroed before the backward
   ops accumulate into them. (Once zt_train exists, a page over the engine API takes this place.) */
#include "../zt.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

#ifdef __CUDACC__ /* build/minimal_cuda */
#  define BACKEND "cuda"
#else
#  define BACKEND "cpu"
#endif

enum { CTX = 3, C = 64, H = 256, V = 256, N = 512, STEPS = 300, PRINT_EVERY = 25, TEXT_BYTES = 1 << 16 };

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rng(void) { /* xorshift64* */
    rng_state ^= rng_state >> 12, rng_state ^= rng_state << 25, rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 0x2545F4914F6CDD1Dull) >> 32);
}
static float rng_uniform(void) { return (float)rng() / 4294967296.0f; } /* [0, 1) */

/* sentences from a tiny grammar: "the old man finds a red ball. " */
static int64_t make_text(char *text, int64_t cap) {
    static const char *subj[] = {"the cat", "a dog", "the old man", "my sister", "a bird", "the king"};
    static const char *verb[] = {"sees", "likes", "eats", "finds", "chases", "draws"};
    static const char *obj[] = {"the fish", "a red ball", "the moon", "some bread", "a small mouse"};
    int64_t n = 0;
    while (n + 64 < cap)
        n += snprintf(text + n, (size_t)(cap - n), "%s %s %s. ", subj[rng() % 6], verb[rng() % 6],
                      obj[rng() % 5]);
    return n;
}

typedef struct param { zt_tensor w, grad, m, v; float decay; } param;

static param param_new(zt_backend *be, zt_shape shape, float init_scale, float decay) {
    zt_arena *dev = zt_backend_device_arena(be), pinned = *zt_backend_pinned_arena(be); /* scratch */
    zt_stream *s = zt_backend_stream(be);
    param p;
    p.w = zt_tensor_new(dev, ZT_F32, ZT_DEVICE, shape);
    p.grad = zt_tensor_new(dev, ZT_F32, ZT_DEVICE, shape);
    p.m = zt_tensor_new(dev, ZT_F32, ZT_DEVICE, shape);
    p.v = zt_tensor_new(dev, ZT_F32, ZT_DEVICE, shape);
    p.decay = decay;
    zt_tensor init = zt_tensor_new(&pinned, ZT_F32, ZT_HOST, shape);
    for (int64_t i = 0; i < zt_numel(init); i++)
        ((float *)init.data)[i] = (2.0f * rng_uniform() - 1.0f) * init_scale;
    zt_copy(s, p.w, init);
    zt_fill(s, p.m, 0.0f);
    zt_fill(s, p.v, 0.0f);
    zt_stream_sync(s); /* init's memory goes back to the arena on return */
    return p;
}

int main(void) {
    zt_backend *be = NULL;
    zt_backend_desc desc = zt_backend_desc_default();
    desc.device_bytes = (size_t)32 << 20;
    desc.pinned_bytes = (size_t)4 << 20;
    if (zt_backend_create(&be, BACKEND, &desc) != ZT_OK) { fprintf(stderr, "%s\n", zt_last_error()); return 1; }
    zt_arena *dev = zt_backend_device_arena(be), *pinned = zt_backend_pinned_arena(be);
    zt_stream *s = zt_backend_stream(be);

    char *text = ZT_PUSH(pinned, char, TEXT_BYTES);
    int64_t text_len = make_text(text, TEXT_BYTES);

    param E = param_new(be, zt_shape2(CTX * V, C), 0.5f, 0.0f);
    param W1 = param_new(be, zt_shape2(H, C), 1.0f / sqrtf((float)C), 0.01f);
    param b1 = param_new(be, zt_shape1(H), 0.0f, 0.0f);
    param W2 = param_new(be, zt_shape2(V, H), 1.0f / sqrtf((float)H), 0.01f);
    param *params[] = {&E, &W1, &b1, &W2};

    /* row k < CTX: byte t-k, offset into part k of E; row CTX: the target, byte t+1 */
    zt_tensor ids_host = zt_tensor_new(pinned, ZT_I32, ZT_HOST, zt_shape2(CTX + 1, N));
    zt_tensor loss_host = zt_tensor_new(pinned, ZT_F32, ZT_HOST, zt_shape1(N));
    zt_tensor logit_host = zt_tensor_new(pinned, ZT_F32, ZT_HOST, zt_shape1(V));
    zt_tensor ids = zt_tensor_new(dev, ZT_I32, ZT_DEVICE, zt_shape2(CTX + 1, N)), ctx[CTX];
    for (int k = 0; k < CTX; k++) ctx[k] = zt_view(ids, k * N, zt_shape1(N));
    zt_tensor next = zt_view(ids, CTX * N, zt_shape1(N));
    zt_tensor x = zt_tensor_new(dev, ZT_F32, ZT_DEVICE, zt_shape2(N, C));
    zt_tensor pre = zt_tensor_new(dev, ZT_F32, ZT_DEVICE, zt_shape2(N, H));
    zt_tensor h = zt_tensor_new(dev, ZT_F32, ZT_DEVICE, zt_shape2(N, H));
    zt_tensor dx = zt_tensor_new(dev, ZT_F32, ZT_DEVICE, zt_shape2(N, C));
    zt_tensor dpre = zt_tensor_new(dev, ZT_F32, ZT_DEVICE, zt_shape2(N, H));
    zt_tensor dh = zt_tensor_new(dev, ZT_F32, ZT_DEVICE, zt_shape2(N, H));
    zt_tensor losses = zt_tensor_new(dev, ZT_F32, ZT_DEVICE, zt_shape1(N));
    zt_tensor logits = zt_tensor_new(dev, ZT_F32, ZT_DEVICE, zt_shape2(64, V)); /* 64 rows at a time */
    int32_t *host_ids = (int32_t *)ids_host.data;

    zt_adamw_params opt;
    memset(&opt, 0, sizeof opt); /* fields added later stay off */
    opt.lr = 3e-3f, opt.beta1 = 0.9f, opt.beta2 = 0.999f, opt.eps = 1e-8f, opt.grad_scale = 1.0f;

    printf("byte-level model on %s, %lld bytes of text, batch %d, %d steps\n", BACKEND,
           (long long)text_len, N, STEPS);
    uint64_t t0 = zt_time_ns();
    double loss_sum = 0;
    int loss_steps = 0;
    for (int step = 1; step <= STEPS; step++) {
        for (int i = 0; i < N; i++) {
            int64_t t = CTX - 1 + (int64_t)(rng() % (uint32_t)(text_len - CTX));
            for (int k = 0; k < CTX; k++) host_ids[k * N + i] = k * V + (unsigned char)text[t - k];
            host_ids[CTX * N + i] = (unsigned char)text[t + 1];
        }
        zt_copy(s, ids, ids_host);
        for (int k = 0; k < CTX; k++) zt_embedding_forward(s, x, ctx[k], E.w, k > 0);
        zt_matmul_forward(s, pre, x, W1.w, &b1.w);
        zt_gelu_forward(s, h, pre);

        for (int i = 0; i < 4; i++) zt_fill(s, params[i]->grad, 0.0f);
        zt_fill(s, dh, 0.0f), zt_fill(s, dpre, 0.0f), zt_fill(s, dx, 0.0f);
        zt_output_loss(s, losses, &dh, &W2.grad, h, W2.w, next, logits, V, -1, 1.0f / N);
        zt_gelu_backward(s, dpre, dh, pre);
        zt_matmul_backward(s, &dx, &W1.grad, &b1.grad, dpre, x, W1.w);
        for (int k = 0; k < CTX; k++) zt_embedding_backward(s, E.grad, dx, ctx[k]);

        for (int i = 0; i < 4; i++) {
            opt.weight_decay = params[i]->decay, opt.step = step;
            zt_adamw(s, params[i]->w, params[i]->m, params[i]->v, params[i]->grad, NULL, opt);
        }
        zt_copy(s, loss_host, losses);
        zt_stream_sync(s); /* loss_host is valid, and ids_host may be overwritten */
        for (int i = 0; i < N; i++) loss_sum += ((float *)loss_host.data)[i];
        loss_steps++;
        if (step == 1 || step % PRINT_EVERY == 0) { /* the mean since the last line */
            printf("step %3d/%d | loss %.6f | %.0f ms\n", step, STEPS, loss_sum / (loss_steps * N),
                   (double)(zt_time_ns() - t0) / 1e6);
            loss_sum = 0, loss_steps = 0;
        }
    }

    /* sample 120 bytes from the trained model, one position at a time */
    int last[CTX] = {' ', 'e', 'h'}; /* the prompt "the " backwards */
    printf("sample: the ");
    for (int i = 0; i < 120; i++) {
        for (int k = 0; k < CTX; k++) host_ids[k * N] = k * V + last[k];
        zt_copy(s, ids, ids_host);
        for (int k = 0; k < CTX; k++)
            zt_embedding_forward(s, zt_slice(x, 0, 1), zt_slice(ctx[k], 0, 1), E.w, k > 0);
        zt_matmul_forward(s, zt_slice(pre, 0, 1), zt_slice(x, 0, 1), W1.w, &b1.w);
        zt_gelu_forward(s, zt_slice(h, 0, 1), zt_slice(pre, 0, 1));
        zt_matmul_forward(s, zt_slice(logits, 0, 1), zt_slice(h, 0, 1), W2.w, NULL);
        zt_copy(s, logit_host, zt_slice(logits, 0, 1));
        zt_stream_sync(s);
        const float *l = (const float *)logit_host.data;
        float max = l[0], sum = 0, r;
        for (int j = 1; j < V; j++) max = l[j] > max ? l[j] : max;
        for (int j = 0; j < V; j++) sum += expf(l[j] - max);
        r = rng_uniform() * sum;
        int c = 0;
        while (c < V - 1 && (r -= expf(l[c] - max)) > 0) c++;
        putchar(c >= 32 && c < 127 ? c : '?');
        for (int k = CTX - 1; k > 0; k--) last[k] = last[k - 1];
        last[0] = c;
    }
    printf("\n");
    zt_backend_destroy(be);
    return 0;
}
