/* bench/comm.c - shared-memory collectives: all_reduce and reduce_scatter bus bandwidth (NCCL's
   convention: algorithm bandwidth x 2(n-1)/n and x (n-1)/n) for 1 MiB to 256 MiB of f32 at 2 and 4
   ranks (processes), next to this machine's memcpy bandwidth measured in the same run; then the same
   over TCP on this host's loopback (path "tcp": what ranks on several hosts run, without the network).
   One JSON line each. Goal: at least half of memcpy at 2 ranks through the shared segment. */
#define _POSIX_C_SOURCE 200809L
#include "../zt.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

static double memcpy_gbs(size_t bytes) {
    char *a = (char *)malloc(bytes), *b = (char *)malloc(bytes);
    memset(a, 1, bytes);
    memset(b, 2, bytes);
    double best = 0;
    for (int i = 0; i < 5; i++) {
        uint64_t t0 = zt_time_ns();
        memcpy(b, a, bytes);
        double s = (double)(zt_time_ns() - t0) / 1e9;
        best = bytes / s / 1e9 > best ? bytes / s / 1e9 : best;
    }
    free(a);
    free(b);
    return best;
}

/* rank 0 writes its timings (seconds per collective) to fdout */
/* path 0: the shared segment's slots; 1: directly between the ranks' memory; 2: TCP at this port */
static void rank_main(int fd, int rank, int world, size_t bytes, int fdout, int direct, int port) {
    zt_comm *c = NULL;
    if ((direct == 2 ? zt_comm_tcp_connect(&c, "127.0.0.1", port, "bench", rank, world)
                     : zt_comm_shm_attach(&c, fd, rank, world)) != ZT_OK)
        _exit(2);
    zt_backend *be = NULL;
    zt_backend_desc d = zt_backend_desc_default();
    d.device_bytes = bytes * 2 + (1 << 20);
    d.threads = 1;
    if (zt_backend_create(&be, "cpu", &d) != ZT_OK) _exit(3);
    if (direct == 1 && (zt_comm_share_device(c, be) != ZT_OK || !zt_comm_is_direct(c))) _exit(5);
    zt_stream *s = zt_backend_stream(be);
    int64_t n = (int64_t)(bytes / 4);
    zt_tensor x = zt_tensor_new(zt_backend_device_arena(be), ZT_F32, ZT_DEVICE, zt_shape1(n));
    zt_tensor y = zt_tensor_new(zt_backend_device_arena(be), ZT_F32, ZT_DEVICE, zt_shape1(n / world));
    zt_fill(s, x, 1.0f);
    double t[2];
    for (int what = 0; what < 2; what++) {
        int iters = bytes >= (64u << 20) ? 2 : 5;
        what ? zt_reduce_scatter(s, c, y, x, ZT_REDUCE_SUM) : zt_all_reduce(s, c, x, ZT_REDUCE_SUM); /* warm-up */
        zt_stream_sync(s);
        zt_barrier(c);
        uint64_t t0 = zt_time_ns();
        for (int i = 0; i < iters; i++) {
            if (what) zt_reduce_scatter(s, c, y, x, ZT_REDUCE_SUM);
            else zt_all_reduce(s, c, x, ZT_REDUCE_SUM);
        }
        zt_stream_sync(s);
        zt_barrier(c);
        t[what] = (double)(zt_time_ns() - t0) / 1e9 / iters;
    }
    if (rank == 0 && write(fdout, t, sizeof t) != (ssize_t)sizeof t) _exit(4);
    zt_backend_destroy(be);
    zt_comm_destroy(c);
    _exit(0);
}

int main(void) {
    double copy = memcpy_gbs(256u << 20);
    printf("{\"bench\":\"memcpy\",\"bytes\":%u,\"gbs\":%.2f}\n", 256u << 20, copy);
    fflush(stdout);
    int worlds[2] = {2, 4};
    size_t sizes[4] = {1u << 20, 16u << 20, 64u << 20, 256u << 20};
    for (int direct = 0; direct <= 2; direct++)
    for (int wi = 0; wi < 2; wi++) {
        for (int si = 0; si < 4; si++) {
            int world = worlds[wi], fd = -1, p[2], port = 20000 + (int)((getpid() * 7 + direct * 8 + wi * 4 + si) % 30000);
            size_t bytes = sizes[si];
            if (world == 4 && bytes > (64u << 20)) continue; /* 4 ranks x 256 MiB is too much for 24 GiB with the rest */
            if (direct == 2 && bytes > (64u << 20)) continue; /* TCP: 64 MiB tells its rate */
            if (zt_comm_shm_create(world, 4u << 20, &fd) != ZT_OK || pipe(p) != 0) return 1;
            pid_t pids[4];
            for (int r = 0; r < world; r++)
                if ((pids[r] = fork()) == 0) rank_main(fd, r, world, bytes, p[1], direct, port);
            for (int r = 0; r < world; r++) waitpid(pids[r], NULL, 0);
            double t[2] = {0, 0};
            if (read(p[0], t, sizeof t) != (ssize_t)sizeof t) return 1;
            close(p[0]), close(p[1]), close(fd);
            const char *names[2] = {"all_reduce", "reduce_scatter"};
            double factor[2] = {2.0 * (world - 1) / world, (double)(world - 1) / world};
            for (int k = 0; k < 2; k++) {
                double bus = bytes / t[k] / 1e9 * factor[k];
                printf("{\"bench\":\"comm\",\"op\":\"%s\",\"path\":\"%s\",\"ranks\":%d,\"bytes\":%zu,\"ms\":%.3f,"
                       "\"busbw_gbs\":%.2f,\"memcpy_gbs\":%.2f,\"ratio\":%.3f}\n", names[k], direct == 2 ? "tcp" : direct ? "direct" : "staged", world,
                       bytes, t[k] * 1e3, bus, copy, bus / copy);
            }
            fflush(stdout);
        }
    }
    return 0;
}
