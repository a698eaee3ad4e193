/* tests/fuzz/fuzz_chat.c - libFuzzer target for zt's chat templates: the input is a template, and after
   a NUL byte (when there is one) the JSON of its variables; the template is compiled and, when it
   compiles, rendered with those variables (or a small conversation), then run through zt_tokenize_chat's
   prefix rendering. Errors are fine; a crash, a leak or undefined behaviour is not. Built and run by
   ./build.sh fuzz; seeds: tests/ref/chat/templates and tests/fuzz/corpus_chat. */
#define ZT_IMPLEMENTATION
#include "../../zt.h"

static const char conversation[] =
    "{\"messages\": [{\"role\": \"system\", \"content\": \"be brief\"}, {\"role\": \"user\", \"content\": \"hi \\u00e9\"}, "
    "{\"role\": \"assistant\", \"content\": \" hello \", \"tool_calls\": null}, {\"role\": \"user\", \"content\": \"2+2?\"}, "
    "{\"role\": \"assistant\", \"content\": \"4\", \"reasoning\": \"add\"}], \"bos_token\": \"<s>\", \"eos_token\": \"</s>\", "
    "\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {\"x\": [1, 2.5, true, null]}}}]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data, *nul = (const char *)memchr(data, 0, size);
    size_t tn = nul ? (size_t)(nul - text) : size;
    const char *json = nul ? nul + 1 : conversation;
    size_t jn = nul ? size - tn - 1 : sizeof conversation - 1;
    zt_chat_template *c = NULL;
    if (zt_chat_template_compile(&c, text, tn, "fuzz.jinja") != ZT_OK) return 0;
    zt_chat_text out;
    if (zt_chat_render(c, json, jn, &out) == ZT_OK && out.len) ZT_ASSERT(out.text[out.len] == 0);
    zt_chat_template_free(c);
    static zt_tokenizer *t;
    if (!t && zt_tokenizer_load(&t, "tests/ref/tokenizers/qwen2") != ZT_OK) t = NULL;
    if (t && zt_tokenizer_set_chat_template(t, text, tn, "fuzz.jinja") == ZT_OK) {
        static int32_t ids[1 << 14];
        static uint8_t mask[1 << 14];
        int64_t count;
        zt_tokenize_chat(t, json, jn, ids, mask, 1 << 14, &count);
    }
    return 0;
}
