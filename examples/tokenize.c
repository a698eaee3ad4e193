/* examples/tokenize.c - zt_tokenize: text or an instruction set into the token files zt_train reads,
   with a model's own tokenizer.json.

       zt_tokenize --tokenizer MODEL_DIR --input corpus.txt --output train.bin --eot "<|endoftext|>"
       zt_tokenize --tokenizer MODEL_DIR --input sft.jsonl --output sft.bin --prompt_key instruction \
                   --response_key output --eot "</s>"        (also writes sft.bin.mask)
       zt_tokenize --tokenizer MODEL_DIR --input fineweb.jsonl --output train.bin --eot "<|endoftext|>" \
                   --shard_size 1e8 --mask none
                   (lines {"text": ...}, each a document learned whole, --text_key names the field; into
                    train_000000.bin, train_000001.bin, ...: zt_train --data "train_*.bin")
       zt_tokenize --tokenizer MODEL_DIR --input chats.jsonl --output chats.bin
                   (lines {"messages": [{"role": ..., "content": ...}, ...]}: through the model's chat template,
                    the assistant's turns learned; --chat_template FILE.jinja gives a template of your own)
       zt_tokenize --tokenizer MODEL_DIR --decode sft.bin    (prints the text back)
       --add_special_tokens true: the special tokens the tokenizer's post-processor puts around a text (LLaMA-3's
       <|begin_of_text|>, Gemma's <bos>) around each document, or prompt and response, as transformers' tokenizer(text)
       --shard_size N: files of N tokens, train_000000.bin, train_000001.bin, ... for --output train.bin (llm.c's
       shards; then zt_train --data "train_*.bin" --mask "train_*.bin.mask"); one file holds at most 2^31 - 1
       --num_proc N: N threads (default: every core), for JSON Lines and for a text in parts (cut where added tokens
       end, or after a newline or before a word where the tokenizer allows); the files are the same at any N
       --sample_by line: each line of a text a document, its newline kept (paragraph: the pieces between blank lines;
       document, the default: the whole text), as datasets' text loader gives a .txt to run_clm.py, which tokenizes
       each line with the special tokens: --sample_by line --add_special_tokens true and no --eot give its tokens
       (--keep_linebreaks false: the lines without their newlines)
       --mask none: no mask file (every token learned, a prompt's and a conversation's other turns too: for a
       pretraining set, where it would be all ones)

   Then: zt_train --model MODEL_DIR --data sft.bin --mask sft.bin.mask ... */
#include "../zt.h"
#include <stdlib.h>
#include <string.h>

static const char *flag(int argc, char **argv, const char *name, const char *def) {
    size_t n = strlen(name);
    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], "--", 2) == 0 && strncmp(argv[i] + 2, name, n) == 0) {
            if (argv[i][2 + n] == '=') return argv[i] + 3 + n;
            if (argv[i][2 + n] == 0 && i + 1 < argc) return argv[i + 1];
        }
    return def;
}

static int truth(const char *s) { /* 1, 0, or -1 for neither */
    if (strcmp(s, "true") == 0 || strcmp(s, "True") == 0 || strcmp(s, "1") == 0) return 1;
    return strcmp(s, "false") == 0 || strcmp(s, "False") == 0 || strcmp(s, "0") == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
    static const char *known[] = {"tokenizer", "input", "output", "mask", "prompt_key", "response_key", "text_key",
                                  "eot", "decode", "chat_template", "add_special_tokens", "shard_size", "num_proc", "sample_by",
                                  "keep_linebreaks"};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strncmp(argv[i], "--", 2) != 0) {
            fprintf(stderr, "usage: zt_tokenize --tokenizer DIR (--input FILE --output FILE [--mask FILE|none] [--prompt_key K] "
                    "[--response_key K] [--text_key K] [--eot TOKEN] [--chat_template FILE] [--add_special_tokens true] "
                    "[--shard_size N] [--num_proc N] [--sample_by line|paragraph|document] [--keep_linebreaks false] | "
                    "--decode FILE)\n");
            return strcmp(argv[i], "--help") == 0 ? 0 : 2;
        }
        int ok = 0;
        for (size_t k = 0; k < sizeof known / sizeof known[0] && !ok; k++)
            ok = strncmp(argv[i] + 2, known[k], strlen(known[k])) == 0 &&
                 (argv[i][2 + strlen(known[k])] == 0 || argv[i][2 + strlen(known[k])] == '=');
        if (!ok) return fprintf(stderr, "zt_tokenize: unknown flag %s (see --help)\n", argv[i]), 2;
        if (!strchr(argv[i], '=')) i++;
    }
    const char *dir = flag(argc, argv, "tokenizer", NULL);
    if (!dir) return fprintf(stderr, "zt_tokenize: --tokenizer is required (a tokenizer.json or its directory)\n"), 2;
    zt_tokenizer *t = NULL;
    if (zt_tokenizer_load(&t, dir) != ZT_OK) return fprintf(stderr, "zt_tokenize: %s\n", zt_last_error()), 1;
    const char *chat = flag(argc, argv, "chat_template", NULL);
    if (chat) { /* a Jinja file of your own in place of the tokenizer's */
        FILE *f = fopen(chat, "rb");
        char *src = NULL;
        long n = -1;
        if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 && (src = (char *)malloc((size_t)n + 1)))
            n = (long)fread(src, 1, (size_t)n, f);
        if (f) fclose(f);
        if (!src || n < 0) return fprintf(stderr, "zt_tokenize: cannot read the chat template %s\n", chat), 1;
        zt_result r = zt_tokenizer_set_chat_template(t, src, (size_t)n, chat);
        free(src);
        if (r != ZT_OK || !zt_tokenizer_chat_template(t)) return fprintf(stderr, "zt_tokenize: %s\n", zt_last_error()), 1;
    }
    const char *decode = flag(argc, argv, "decode", NULL);
    if (decode) { /* an llm.c token file back into text: the header's count against the file's size */
        FILE *f = fopen(decode, "rb");
        int32_t h[256];
        long size = -1;
        if (!f || fread(h, 4, 256, f) != 256 || (h[0] != 20240520 && h[0] != 20240801) || fseek(f, 0, SEEK_END) != 0 ||
            (size = ftell(f)) < 1024 || fseek(f, 1024, SEEK_SET) != 0)
            return fprintf(stderr, "zt_tokenize: %s is not an llm.c token file\n", decode), 1;
        int width = h[0] == 20240520 ? 2 : 4;
        if (h[2] < 0 || (long)h[2] != (size - 1024) / width || (size - 1024) % width)
            return fprintf(stderr, "zt_tokenize: %s: its header says %d tokens of %d bytes, and the file holds %ld bytes "
                           "after its 1024-byte header\n", decode, h[2], width, size - 1024), 1;
        int32_t *ids = (int32_t *)calloc((size_t)h[2] + 1, 4);
        if (!ids) return fprintf(stderr, "zt_tokenize: out of memory for %d tokens\n", h[2]), 1;
        for (int32_t i = 0; i < h[2]; i++) {
            uint16_t s = 0;
            if (width == 2 ? fread(&s, 2, 1, f) != 1 : fread(&ids[i], 4, 1, f) != 1)
                return fprintf(stderr, "zt_tokenize: %s: cannot read token %d\n", decode, i), 1;
            if (width == 2) ids[i] = s;
        }
        fclose(f);
        size_t n = zt_detokenize(t, ids, h[2], NULL, 0);
        char *text = (char *)malloc(n + 1);
        if (!text) return fprintf(stderr, "zt_tokenize: out of memory for %zu bytes of text\n", n), 1;
        zt_detokenize(t, ids, h[2], text, n + 1);
        fwrite(text, 1, n, stdout);
        free(text), free(ids);
        zt_tokenizer_free(t);
        return 0;
    }
    zt_tokenize_desc d;
    memset(&d, 0, sizeof d);
    d.input = flag(argc, argv, "input", NULL);
    d.output = flag(argc, argv, "output", NULL);
    d.mask = flag(argc, argv, "mask", NULL);
    d.no_mask = d.mask && strcmp(d.mask, "none") == 0; /* every token learned: no mask file */
    if (d.no_mask) d.mask = NULL;
    d.prompt_key = flag(argc, argv, "prompt_key", NULL);
    d.response_key = flag(argc, argv, "response_key", NULL);
    d.text_key = flag(argc, argv, "text_key", NULL);
    const char *special = flag(argc, argv, "add_special_tokens", "false"); /* the post-processor's, as tokenizer(text) */
    const char *keep = flag(argc, argv, "keep_linebreaks", "true");
    if ((d.special = truth(special)) < 0)
        return fprintf(stderr, "zt_tokenize: --add_special_tokens takes true or false, not \"%s\"\n", special), 2;
    if (truth(keep) < 0) return fprintf(stderr, "zt_tokenize: --keep_linebreaks takes true or false, not \"%s\"\n", keep), 2;
    d.strip_linebreaks = !truth(keep);
    const char *by = flag(argc, argv, "sample_by", "document");
    d.sample_by = strcmp(by, "line") == 0 ? ZT_SAMPLE_LINE : strcmp(by, "paragraph") == 0 ? ZT_SAMPLE_PARAGRAPH : ZT_SAMPLE_DOCUMENT;
    if (d.sample_by == ZT_SAMPLE_DOCUMENT && strcmp(by, "document"))
        return fprintf(stderr, "zt_tokenize: --sample_by takes line, paragraph or document, not \"%s\"\n", by), 2;
    if (d.strip_linebreaks && d.sample_by != ZT_SAMPLE_LINE)
        return fprintf(stderr, "zt_tokenize: --keep_linebreaks false is for --sample_by line\n"), 2;
    static const char *const counts[2] = {"shard_size", "num_proc"};
    for (int k = 0; k < 2; k++) { /* whole numbers: 100000000 or 1e8 */
        const char *s = flag(argc, argv, counts[k], NULL);
        char *end = NULL;
        double v = s ? strtod(s, &end) : 0;
        if (s && (end == s || *end || !(v >= (k ? 0 : 1) && v <= 2147483647.0) || v != (double)(long long)v))
            return fprintf(stderr, "zt_tokenize: --%s takes a whole number of %s, not \"%s\"\n", counts[k],
                           k ? "threads (0: every core)" : "tokens from 1 to 2147483647", s), 2;
        if (k) d.threads = (int)v;
        else d.shard_size = (int64_t)v;
    }
    const char *eot = flag(argc, argv, "eot", NULL);
    d.eot = eot ? zt_tokenizer_id(t, eot) : -1;
    if (!d.input || !d.output) return fprintf(stderr, "zt_tokenize: --input and --output are required\n"), 2;
    if (eot && d.eot < 0) return fprintf(stderr, "zt_tokenize: --eot \"%s\" is not a token of %s\n", eot, dir), 2;
    int64_t n = 0;
    uint64_t t0 = zt_time_ns();
    if (zt_tokenize_file(t, &d, &n) != ZT_OK) {
        const char *why = zt_last_error();
        fprintf(stderr, "zt_tokenize: %s%s\n", why, strstr(why, "no chat template") ? "; --chat_template FILE gives one" : "");
        return 1;
    }
    double s = (double)(zt_time_ns() - t0) * 1e-9;
    FILE *in = fopen(d.input, "rb");
    long bytes = in && fseek(in, 0, SEEK_END) == 0 ? ftell(in) : 0;
    if (in) fclose(in);
    if (d.shard_size > 0)
        printf("%s: %lld tokens into %lld files, the shards of %s (%lld tokens each), in %.1f s, %.1f MB/s\n", d.input,
               (long long)n, (long long)(n ? (n + d.shard_size - 1) / d.shard_size : 1), d.output, (long long)d.shard_size, s,
               (double)bytes / s * 1e-6);
    else
        printf("%s: %lld tokens into %s in %.1f s, %.1f MB/s\n", d.input, (long long)n, d.output, s,
               (double)bytes / s * 1e-6);
    if (eot) /* zt_train takes the id: there the documents are packed (positions restart, attention stops) */
        printf("--eot \"%s\" is token %d: zt_train --eot %d packs the documents at it\n", eot, d.eot, d.eot);
    zt_tokenizer_free(t);
    return 0;
}
