/* tests/events_dump.c - prints a TensorBoard event file's scalars, one "STEP TAG VALUE" line each (the value as
   %.9g: the float exactly), and texts ("STEP TAG text FIRST-40-BYTES"), after checking every record
   (tests/events.h). ./build.sh test reads zt_train's
   --report_to tensorboard files with it. Exit 1 for a damaged file. */
#include "events.h"

int main(int argc, char **argv) {
    static test_event ev[4096];
    char why[256];
    if (argc != 2) return fprintf(stderr, "usage: events_dump FILE\n"), 2;
    int n = test_read_events(argv[1], ev, 4096, why, sizeof why);
    if (n < 0) return fprintf(stderr, "events_dump: %s: %s\n", argv[1], why), 1;
    for (int i = 0; i < n; i++)
        if (ev[i].has_value) printf("%lld %s %.9g\n", (long long)ev[i].step, ev[i].tag, (double)ev[i].value);
        else if (ev[i].has_text) { /* its start, on the line */
            printf("%lld %s text ", (long long)ev[i].step, ev[i].tag);
            for (int k = 0; k < 40 && ev[i].text[k]; k++) putchar((unsigned char)ev[i].text[k] < ' ' ? ' ' : ev[i].text[k]);
            putchar('\n');
        }
    return 0;
}
