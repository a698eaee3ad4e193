/* tests/main.c - runs every registered test, or those whose name contains an argument.
   Prints one line per failure and ends with "N passed, N failed". */
#include "test.h"
#include <stdio.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#define MAX_TESTS 1024
static struct { const char *name, *file; zt_test_fn fn; } tests[MAX_TESTS];
static int n_tests, current_failed;

void zt_test_register(const char *name, const char *file, zt_test_fn fn) {
    if (n_tests == MAX_TESTS) { fprintf(stderr, "too many tests\n"); exit(2); }
    tests[n_tests].name = name, tests[n_tests].file = file, tests[n_tests].fn = fn;
    n_tests++;
}

void zt_test_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "  %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    current_failed = 1;
}

int zt_test_failed(void) { return current_failed; }

int zt_test_free_port(void) {
    int s = socket(AF_INET, SOCK_STREAM, 0), port = 0;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t l = sizeof a;
    if (s >= 0 && bind(s, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(s, (struct sockaddr *)&a, &l) == 0)
        port = ntohs(a.sin_port);
    if (s >= 0) close(s);
    return port;
}

static int matches(const char *name, int argc, char **argv) {
    if (argc < 2) return 1;
    for (int i = 1; i < argc; i++)
        if (strstr(name, argv[i])) return 1;
    return 0;
}

int main(int argc, char **argv) {
    int passed = 0, failed = 0;
    int verbose = getenv("ZT_TEST_VERBOSE") != NULL;
    for (int i = 0; i < n_tests; i++) {
        if (!matches(tests[i].name, argc, argv)) continue;
        current_failed = 0;
        uint64_t t0 = zt_time_ns();
        tests[i].fn();
        double ms = (double)(zt_time_ns() - t0) / 1e6;
        if (current_failed) {
            failed++;
            printf("FAIL %s (%s, %.0f ms)\n", tests[i].name, tests[i].file, ms);
        } else {
            passed++;
            if (verbose) printf("ok   %s (%.0f ms)\n", tests[i].name, ms);
        }
        fflush(stdout);
    }
    printf("%d passed, %d failed\n", passed, failed);
    fflush(stdout); /* before LeakSanitizer, which may end the process from an exit handler */
    return failed ? 1 : 0;
}
