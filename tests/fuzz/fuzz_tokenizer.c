/* tests/fuzz/fuzz_tokenizer.c - libFuzzer target for zt's tokenizer.json reader and its encoder: a
   tokenizer from arbitrary bytes, and when one loads, those bytes tokenized and decoded again. Built
   and run by ./build.sh fuzz. */
#define ZT_IMPLEMENTATION
#include "../../zt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    zt_tokenizer *t = NULL;
    if (zt__tokenizer_parse(&t, (const char *)data, size, "fuzz.json") != ZT_OK) return 0;
    static int32_t ids[1 << 16];
    static char text[1 << 18];
    int64_t n = zt_tokenize(t, (const char *)data, size < 4096 ? size : 4096, ids, 1 << 16);
    zt_detokenize(t, ids, n < (1 << 16) ? n : (1 << 16), text, sizeof text);
    zt_tokenize(t, "Hello world 我们 123 <|endoftext|>", 36, ids, 1 << 16);
    zt_tokenizer_free(t);
    return 0;
}
