/* tests/test_comm.c - the collectives, in processes forked from the test: every collective and dtype at
   1 to 4 ranks against a serial reference, through the shared segment and over TCP, the same bits on
   every run, and a rank killed during a collective, or one whose host went silent, stopping the others,
   promptly, with its number. */
#define _GNU_SOURCE 1 /* unshare, struct ifreq */
#include "test.h"
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <arpa/inet.h>
#include <linux/if_tun.h>
#include <sched.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

/* what rank r contributes at element i (exactly representable in bf16 and f16) */
static float value(int r, int64_t i) { return (float)((int)((i * 7 + r * 13) % 31) - 15) * 0.25f; }

/* 0: the ranks share a segment (fd); else they meet over TCP at rank 0, on 127.0.0.1 at this port */
static int tcp_port;

static zt_result join(zt_comm **c, int fd, int rank, int world) {
    return tcp_port ? zt_comm_tcp_connect(c, "127.0.0.1", tcp_port, "test", rank, world) : zt_comm_shm_attach(c, fd, rank, world);
}

static zt_backend *rank_backend(void) {
    zt_backend *be = NULL;
    zt_backend_desc d = zt_backend_desc_default();
    d.device_bytes = 64 << 20;
    d.threads = 1;
    if (zt_backend_create(&be, "cpu", &d) != ZT_OK) _exit(90);
    return be;
}

static void fill(zt_stream *s, zt_tensor t, int r, float *host) {
    int64_t n = zt_numel(t);
    for (int64_t i = 0; i < n; i++) host[i] = value(r, i);
    zt_tensor f = zt_tensor_new(zt_backend_device_arena(zt_stream_backend(s)), ZT_F32, ZT_DEVICE, t.shape);
    zt_copy(s, f, zt_tensor_make(host, ZT_F32, ZT_HOST, t.shape));
    zt_cast(s, t, f);
}

static int64_t read_back(zt_stream *s, zt_tensor t, float *host) {
    zt_tensor f = zt_tensor_new(zt_backend_device_arena(zt_stream_backend(s)), ZT_F32, ZT_DEVICE, t.shape);
    zt_cast(s, f, t);
    zt_copy(s, zt_tensor_make(host, ZT_F32, ZT_HOST, t.shape), f);
    zt_stream_sync(s);
    return zt_numel(t);
}

/* one rank's side of the checks; returns the exit status (0: all right). share 1: the ranks map each
   other's device memory (zt_comm_share_device), so the collectives go directly, not through the slots;
   share 2: the backend stages every collective through a small host buffer, as the CUDA backend does */
static int rank_main(int fd, int rank, int world, int64_t n, int share) {
    zt_comm *c = NULL;
    if (join(&c, fd, rank, world) != ZT_OK) return 2;
    if (share == 2) setenv("ZT_TEST_COMM_STAGE", "1000", 1); /* 1000 bytes: chunks of odd sizes */
    zt_backend *be = rank_backend();
    if (share == 2) share = 0;
    if (share && (zt_comm_share_device(c, be) != ZT_OK || zt_comm_is_direct(c) != (world > 1))) return 3;
    zt_stream *s = zt_backend_stream(be);
    zt_arena *dev = zt_backend_device_arena(be);
    float *h = (float *)malloc(sizeof(float) * (size_t)(n * world)), *w = (float *)malloc(sizeof(float) * (size_t)(n * world));
    zt_dtype types[3] = {ZT_F32, ZT_BF16, ZT_F16};
    int bad = 0;
    for (int ti = 0; ti < 3 && !bad; ti++) {
        size_t mark = zt_arena_mark(dev);
        zt_dtype t = types[ti];
        /* all_reduce, sum and mean */
        for (int avg = 0; avg <= 1; avg++) {
            zt_tensor x = zt_tensor_new(dev, t, ZT_DEVICE, zt_shape1(n));
            fill(s, x, rank, h);
            zt_all_reduce(s, c, x, avg ? ZT_REDUCE_AVG : ZT_REDUCE_SUM);
            read_back(s, x, h);
            for (int64_t i = 0; i < n && !bad; i++) {
                float want = 0;
                for (int r = 0; r < world; r++) want += value(r, i);
                if (avg) want *= 1.0f / (float)world;
                float tol = t == ZT_F32 ? 0 : fabsf(want) * 1e-2f + 1e-3f;
                if (fabsf(h[i] - want) > tol) bad = 10 + ti;
            }
        }
        /* reduce_scatter: every rank sends world * n, gets its slice summed */
        zt_tensor in = zt_tensor_new(dev, t, ZT_DEVICE, zt_shape1(n * world)), out = zt_tensor_new(dev, t, ZT_DEVICE, zt_shape1(n));
        fill(s, in, rank, w);
        zt_reduce_scatter(s, c, out, in, ZT_REDUCE_SUM);
        read_back(s, out, h);
        for (int64_t i = 0; i < n && !bad; i++) {
            float want = 0;
            for (int r = 0; r < world; r++) want += value(r, rank * n + i);
            if (fabsf(h[i] - want) > (t == ZT_F32 ? 0 : fabsf(want) * 1e-2f + 1e-3f)) bad = 20 + ti;
        }
        /* all_gather, then broadcast from the last rank */
        zt_tensor part = zt_tensor_new(dev, t, ZT_DEVICE, zt_shape1(n)), all = zt_tensor_new(dev, t, ZT_DEVICE, zt_shape1(n * world));
        fill(s, part, rank, h);
        zt_all_gather(s, c, all, part);
        read_back(s, all, w);
        for (int r = 0; r < world && !bad; r++)
            for (int64_t i = 0; i < n; i++)
                if (w[r * n + i] != value(r, i)) bad = 30 + ti;
        fill(s, part, rank, h);
        zt_broadcast(s, c, part, world - 1);
        read_back(s, part, h);
        for (int64_t i = 0; i < n && !bad; i++)
            if (h[i] != value(world - 1, i)) bad = 40 + ti;
        zt_arena_reset(dev, mark);
    }
    if (!bad && zt_barrier(c) != ZT_OK) bad = 50;
    free(h);
    free(w);
    zt_backend_destroy(be);
    zt_comm_destroy(c);
    return bad;
}

/* forks `world` ranks running fn; returns how many exited 0 */
static int run_ranks(int world, size_t chunk, int64_t n, int share) {
    int fd = -1;
    if (zt_comm_shm_create(world, chunk, &fd) != ZT_OK) return -1;
    pid_t pids[8];
    for (int r = 0; r < world; r++) {
        pids[r] = fork();
        if (pids[r] == 0) _exit(rank_main(fd, r, world, n, share));
    }
    int ok = 0;
    for (int r = 0; r < world; r++) {
        int status = 0;
        waitpid(pids[r], &status, 0);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) ok++;
        else fprintf(stderr, "  rank %d of %d: status %d\n", r, world, status);
    }
    close(fd);
    return ok;
}

TEST(comm_collectives_match_a_serial_reference) {
    tcp_port = 0;
    for (int world = 1; world <= 4; world++) {
        /* 1001 elements through 4 KiB slots: many chunks, and sizes that do not divide by the world */
        CHECK_EQ_INT(run_ranks(world, 4096, 1001, 0), world);
        CHECK_EQ_INT(run_ranks(world, 1 << 20, 37, 0), world);
        /* and directly between the ranks' device memory */
        CHECK_EQ_INT(run_ranks(world, 4096, 1001, 1), world);
        CHECK_EQ_INT(run_ranks(world, 4096, 37, 1), world);
        /* and staged through a host buffer, a chunk at a time */
        CHECK_EQ_INT(run_ranks(world, 4096, 1001, 2), world);
    }
}

/* over TCP: the same sums (f32 exactly: rank order), in one round and in many (256-byte slots) */
TEST(comm_tcp_collectives_match_a_serial_reference) {
    for (int world = 1; world <= 4; world++)
        for (int small = 0; small <= 1; small++) {
            if (small) setenv("ZT_TEST_TCP_CHUNK", "256", 1);
            tcp_port = zt_test_free_port();
            int ok = run_ranks(world, 4096, 1001, 0);
            tcp_port = zt_test_free_port();
            int ok2 = run_ranks(world, 4096, 37, 2); /* staged through a small host buffer, as on a GPU */
            unsetenv("ZT_TEST_TCP_CHUNK");
            tcp_port = 0;
            CHECK_MSG(ok == world && ok2 == world, "world %d%s: %d and %d ranks ended well", world,
                      small ? ", small slots" : "", ok, ok2);
        }
}

/* a rank of another job (another name) is refused and the job goes on; a wrong world is refused */
TEST(comm_tcp_refuses_strays) {
    int port = zt_test_free_port(), p[2];
    CHECK(pipe(p) == 0);
    pid_t zero = fork();
    if (zero == 0) {
        zt_comm *c = NULL;
        _exit(zt_comm_tcp_connect(&c, "127.0.0.1", port, "job a", 0, 2) == ZT_OK && zt_barrier(c) == ZT_OK ? 0 : 1);
    }
    zt_comm *c = NULL;
    pid_t stray = fork();
    if (stray == 0) {
        dup2(p[1], 2);
        _exit(zt_comm_tcp_connect(&c, "127.0.0.1", port, "job b", 1, 2) == ZT_OK ? 0 : (fprintf(stderr, "%s\n", zt_last_error()), 1));
    }
    int status = 0;
    waitpid(stray, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 1);
    CHECK(zt_comm_tcp_connect(&c, "127.0.0.1", port, "job a", 1, 3) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "world size 3, but the job has 2 ranks");
    CHECK(zt_comm_tcp_connect(&c, "127.0.0.1", port, "job a", 1, 2) == ZT_OK);
    CHECK(zt_barrier(c) == ZT_OK);
    zt_comm_destroy(c);
    waitpid(zero, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char err[1024] = "";
    close(p[1]);
    ssize_t got = read(p[0], err, sizeof err - 1);
    err[got > 0 ? got : 0] = 0;
    close(p[0]);
    CHECK_STR_CONTAINS(err, "refused rank 1: the job token differs");
    setenv("ZT_RDZV_TIMEOUT", "1", 1);
    CHECK(zt_comm_tcp_connect(&c, "127.0.0.1", zt_test_free_port(), "job a", 1, 2) == ZT_ERROR_IO);
    unsetenv("ZT_RDZV_TIMEOUT");
    CHECK_STR_CONTAINS(zt_last_error(), "cannot reach the main process at 127.0.0.1:");
}

/* a rank that registers and dies before the others come ends rank 0's wait, named, in about a second */
TEST(comm_tcp_rank_lost_during_the_rendezvous_is_named) {
    int port = zt_test_free_port();
    pid_t one = fork();
    if (one == 0) {
        zt_comm *c = NULL;
        _exit(zt_comm_tcp_connect(&c, "127.0.0.1", port, "job", 1, 3) == ZT_OK ? 0 : 1); /* rank 2 never comes */
    }
    pid_t killer = fork();
    if (killer == 0) {
        struct timespec ts = {0, 300 * 1000 * 1000};
        nanosleep(&ts, NULL);
        kill(one, SIGKILL);
        _exit(0);
    }
    zt_comm *c = NULL;
    uint64_t t0 = zt_time_ns();
    CHECK(zt_comm_tcp_connect(&c, "127.0.0.1", port, "job", 0, 3) == ZT_ERROR_IO);
    double seconds = (double)(zt_time_ns() - t0) / 1e9;
    waitpid(one, NULL, 0);
    waitpid(killer, NULL, 0);
    CHECK_STR_CONTAINS(zt_last_error(), "rank 1 left the rendezvous at 127.0.0.1:");
    CHECK_MSG(seconds < 5, "rank 0 took %.1f s to notice", seconds);
}

TEST(comm_single_rank_is_a_copy) {
    zt_comm *c = NULL;
    CHECK(zt_comm_single(&c) == ZT_OK);
    zt_backend *be = rank_backend();
    zt_stream *s = zt_backend_stream(be);
    zt_arena *dev = zt_backend_device_arena(be);
    float h[8];
    zt_tensor x = zt_tensor_new(dev, ZT_F32, ZT_DEVICE, zt_shape1(8)), y = zt_tensor_new(dev, ZT_F32, ZT_DEVICE, zt_shape1(8));
    fill(s, x, 0, h);
    zt_all_reduce(s, c, x, ZT_REDUCE_AVG);
    zt_all_gather(s, c, y, x);
    read_back(s, y, h);
    for (int i = 0; i < 8; i++) CHECK(h[i] == value(0, i));
    CHECK(zt_barrier(c) == ZT_OK);
    zt_backend_destroy(be);
    zt_comm_destroy(c);
}

/* rank 2 is killed while the others wait in an all_reduce: they stop within seconds, naming it */
static int victim_main(int fd, int rank, int world, int errfd) {
    dup2(errfd, 2);
    zt_comm *c = NULL;
    if (join(&c, fd, rank, world) != ZT_OK) return 2;
    zt_backend *be = rank_backend();
    zt_stream *s = zt_backend_stream(be);
    zt_tensor x = zt_tensor_new(zt_backend_device_arena(be), ZT_F32, ZT_DEVICE, zt_shape1(1000));
    zt_fill(s, x, 1.0f);
    zt_all_reduce(s, c, x, ZT_REDUCE_SUM); /* once together */
    zt_stream_sync(s);
    if (rank == 2) raise(SIGKILL);
    zt_all_reduce(s, c, x, ZT_REDUCE_SUM); /* rank 2 never comes */
    zt_stream_sync(s);
    return 0;
}

/* a rank alive but elsewhere (stopped, stuck) past the timeout: the others name it */
static int late_main(int fd, int rank, int world, int errfd) {
    zt_comm *c = NULL;
    if (join(&c, fd, rank, world) != ZT_OK) return 2;
    zt_comm_set_timeout(c, 1);
    if (zt_barrier(c) != ZT_OK) return 3; /* once together */
    if (rank == 1) return sleep(3), 0;
    if (zt_barrier(c) == ZT_OK) return 4;
    dprintf(errfd, "%s\n", zt_last_error());
    return 0;
}

/* world ranks of `body` forked on a new shared segment (fd, rank, world, a pipe for their errors): how many
   exited 0, what they wrote (err, cap bytes), and the seconds until the last ended */
static int fork_ranks(int world, int (*body)(int, int, int, int), char *err, size_t cap, double *seconds) {
    int fd = -1, pipefd[2];
    if (zt_comm_shm_create(world, 1 << 16, &fd) != ZT_OK || pipe(pipefd) != 0) return -1;
    pid_t pids[8];
    uint64_t t0 = zt_time_ns();
    for (int r = 0; r < world && r < 8; r++)
        if ((pids[r] = fork()) == 0) {
            close(pipefd[0]);
            _exit(body(fd, r, world, pipefd[1]));
        }
    close(pipefd[1]);
    int ok = 0;
    for (int r = 0; r < world && r < 8; r++) {
        int status = 0;
        waitpid(pids[r], &status, 0);
        ok += WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    *seconds = (double)(zt_time_ns() - t0) / 1e9;
    ssize_t got = read(pipefd[0], err, cap - 1);
    err[got > 0 ? got : 0] = 0;
    close(pipefd[0]);
    close(fd);
    return ok;
}

TEST(comm_a_rank_that_does_not_come_is_named_at_the_timeout) {
    char err[4096];
    double seconds;
    CHECK_EQ_INT(fork_ranks(3, late_main, err, sizeof err, &seconds), 3);
    CHECK_STR_CONTAINS(err, "waited 1 s at a collective for rank 1, which did not come (the timeout)");
}

TEST(comm_a_killed_rank_stops_the_others_with_its_number) {
    for (int tcp = 0; tcp <= 1; tcp++) { /* the shared segment, then TCP */
        char err[4096];
        double seconds;
        tcp_port = tcp ? zt_test_free_port() : 0;
        int ok = fork_ranks(3, victim_main, err, sizeof err, &seconds);
        tcp_port = 0;
        CHECK_EQ_INT(ok, 0); /* the killed one, and the two that waited for it */
        CHECK_MSG(seconds < 10, "the others took %.1f s to stop", seconds);
        CHECK_STR_CONTAINS(err, tcp ? "rank 2 is gone: its connection closed" : "rank 2 (pid");
        CHECK_STR_CONTAINS(err, "is gone");
    }
}

TEST(comm_refuses_a_rank_twice_and_bad_slots) {
    int fd = -1;
    CHECK(zt_comm_shm_create(2, 0, &fd) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "a shared-memory slot is 4 KiB to 1 GiB");
    CHECK(zt_comm_shm_create(2, 1 << 16, &fd) == ZT_OK);
    pid_t pid = fork();
    if (pid == 0) {
        zt_comm *c = NULL;
        _exit(zt_comm_shm_attach(&c, fd, 1, 2) == ZT_OK ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    zt_comm *c = NULL;
    CHECK(zt_comm_shm_attach(&c, fd, 1, 2) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "rank 1 of 2 has already joined this job");
    CHECK(c == NULL);
    close(fd);
}

/* ranks that disagree about a collective stop with a message instead of summing the wrong things */
static int mismatch_main(int fd, int rank, int errfd) {
    dup2(errfd, 2);
    zt_comm *c = NULL;
    if (join(&c, fd, rank, 2) != ZT_OK) return 2;
    zt_backend *be = rank_backend();
    zt_stream *s = zt_backend_stream(be);
    zt_tensor x = zt_tensor_new(zt_backend_device_arena(be), ZT_F32, ZT_DEVICE, zt_shape1(rank ? 20 : 10));
    zt_fill(s, x, 1.0f);
    zt_all_reduce(s, c, x, ZT_REDUCE_SUM);
    zt_stream_sync(s);
    return 0;
}

TEST(comm_mismatched_collectives_are_named) {
    for (int tcp = 0; tcp <= 1; tcp++) { /* the shared segment, then TCP */
    int fd = -1, p[2];
    tcp_port = tcp ? zt_test_free_port() : 0;
    CHECK(zt_comm_shm_create(2, 1 << 16, &fd) == ZT_OK);
    CHECK(pipe(p) == 0);
    pid_t pids[2];
    for (int r = 0; r < 2; r++)
        if ((pids[r] = fork()) == 0) {
            close(p[0]);
            _exit(mismatch_main(fd, r, p[1]));
        }
    close(p[1]);
    int failed = 0;
    for (int r = 0; r < 2; r++) {
        int status = 0;
        waitpid(pids[r], &status, 0);
        failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    char err[4096] = "";
    ssize_t got = read(p[0], err, sizeof err - 1);
    err[got > 0 ? got : 0] = 0;
    close(p[0]);
    close(fd);
    tcp_port = 0;
    CHECK_EQ_INT(failed, 2);
    CHECK_STR_CONTAINS(err, "collective #1 differs between ranks");
    }
}

/* the loopback of this network namespace up or down */
static int loopback(int up) {
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
    int s = socket(AF_INET, SOCK_DGRAM, 0), ok = s >= 0 && ioctl(s, SIOCGIFFLAGS, &ifr) == 0;
    ifr.ifr_flags = (short)(up ? ifr.ifr_flags | IFF_UP : ifr.ifr_flags & ~IFF_UP);
    ok = ok && ioctl(s, SIOCSIFFLAGS, &ifr) == 0;
    if (s >= 0) close(s);
    return ok;
}

/* a network namespace of this process's own, or 0 (then errno says why) */
static int own_network(void) { return unshare(CLONE_NEWNET) == 0 || unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0; }

/* runs fn(errfd) in a child process: its exit status, and what it wrote to errfd in err */
static int in_child(int (*fn)(int errfd), char *err, size_t n) {
    int p[2], status = -1;
    if (pipe(p) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        _exit(fn(p[1]));
    }
    close(p[1]);
    waitpid(pid, &status, 0);
    ssize_t got = read(p[0], err, n - 1);
    err[got > 0 ? got : 0] = 0;
    close(p[0]);
    return status;
}

/* In a network namespace of its own: rank 1 joins and then does nothing, rank 0 waits for it in a
   barrier, and the network goes down under them (as when rank 1's host loses power: no connection is
   closed). Exit 0 with rank 0's error in errfd, 77 where no namespace can be made. */
static int silent_host_main(int errfd) {
    if (!own_network()) {
        dprintf(errfd, "%s", strerror(errno));
        return 77;
    }
    if (!loopback(1)) return 3;
    setenv("ZT_TEST_TCP_KEEPALIVE", "1", 1);
    int port = zt_test_free_port();
    pid_t one = fork();
    if (one == 0) {
        zt_comm *c = NULL;
        if (zt_comm_tcp_connect(&c, "127.0.0.1", port, "job", 1, 2) != ZT_OK) _exit(1);
        pause(); /* joined, and then silent */
        _exit(0);
    }
    zt_comm *c = NULL;
    if (zt_comm_tcp_connect(&c, "127.0.0.1", port, "job", 0, 2) != ZT_OK) return 4;
    zt_comm_set_timeout(c, 15);
    pid_t cut = fork();
    if (cut == 0) { /* once rank 0 waits in the barrier */
        struct timespec ts = {0, 300 * 1000 * 1000};
        nanosleep(&ts, NULL);
        _exit(loopback(0) ? 0 : 1);
    }
    uint64_t t0 = zt_time_ns();
    zt_result r = zt_barrier(c);
    double seconds = (double)(zt_time_ns() - t0) / 1e9;
    dprintf(errfd, "%s (after %.1f s)", r == ZT_OK ? "the barrier passed" : zt_last_error(), seconds);
    kill(one, SIGKILL);
    waitpid(one, NULL, 0);
    int status = 0;
    waitpid(cut, &status, 0);
    zt_comm_destroy(c);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 5;
}

TEST(comm_tcp_a_silent_host_is_named_by_keepalive) {
    char err[1024] = "";
    int status = in_child(silent_host_main, err, sizeof err);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77) { /* said, not passed silently */
        fprintf(stderr, "  not run: this machine makes no network namespace for the test (%s)\n", err);
        return;
    }
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d: %s", status, err);
    CHECK_STR_CONTAINS(err, "rank 1 stopped answering during a collective: its host is down or cut off");
    double seconds = atof(strstr(err, "(after ") + 7);
    CHECK_MSG(seconds < 10, "found after %.1f s (keepalive: about 3)", seconds);
}

/* In a network namespace of its own with a TUN device at 10.9.9.1/24 that nobody reads, so whatever
   goes to 10.9.9.2 is lost without an answer (a firewall that drops, a host that is off): rank 1 looks
   for its main process there. Exit 0 with its error and seconds in errfd, 77 where no namespace or TUN
   device can be made. */
static int unanswered_main(int errfd) {
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    int tun = -1, s = -1;
    if (own_network()) tun = open("/dev/net/tun", O_RDWR);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "zt0");
    ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
    if (tun < 0 || ioctl(tun, TUNSETIFF, &ifr) != 0 || (s = socket(AF_INET, SOCK_DGRAM, 0)) < 0) {
        dprintf(errfd, "%s", strerror(errno));
        return 77;
    }
    struct sockaddr_in *a = (struct sockaddr_in *)&ifr.ifr_addr;
    a->sin_family = AF_INET;
    inet_pton(AF_INET, "10.9.9.1", &a->sin_addr);
    int ok = ioctl(s, SIOCSIFADDR, &ifr) == 0;
    inet_pton(AF_INET, "255.255.255.0", &a->sin_addr);
    ok = ok && ioctl(s, SIOCSIFNETMASK, &ifr) == 0 && ioctl(s, SIOCGIFFLAGS, &ifr) == 0;
    ifr.ifr_flags |= IFF_UP;
    ok = ok && ioctl(s, SIOCSIFFLAGS, &ifr) == 0;
    close(s);
    if (!ok) {
        dprintf(errfd, "%s", strerror(errno));
        return 77;
    }
    setenv("ZT_RDZV_TIMEOUT", "2", 1);
    zt_comm *c = NULL;
    uint64_t t0 = zt_time_ns();
    zt_result r = zt_comm_tcp_connect(&c, "10.9.9.2", 29500, "job", 1, 2);
    dprintf(errfd, "%s (after %.1f s)", r == ZT_OK ? "it connected" : zt_last_error(), (double)(zt_time_ns() - t0) / 1e9);
    close(tun);
    return r == ZT_OK ? 4 : 0;
}

TEST(comm_tcp_an_unanswering_main_host_is_named_in_time) {
    char err[1024] = "";
    int status = in_child(unanswered_main, err, sizeof err);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
        fprintf(stderr, "  not run: this machine makes no network namespace with a TUN device for the test (%s)\n", err);
        return;
    }
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d: %s", status, err);
    CHECK_STR_CONTAINS(err, "cannot reach the main process at 10.9.9.2:29500 for 2 s: Connection timed out: that host "
                            "does not answer");
    double seconds = atof(strstr(err, "(after ") + 7);
    CHECK_MSG(seconds < 5, "refused after %.1f s (ZT_RDZV_TIMEOUT 2)", seconds);
}
