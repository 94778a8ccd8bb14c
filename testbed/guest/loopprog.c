/* Testbed scenario k-loop's program (testbed/README.md): the "record → plan → apply → record
 * again → run --plan" loop of issue 14 acts on it. Dynamically linked, so that the allocation
 * shim (LD_PRELOAD) sees its two allocation sites; built -O0 so every site is its own frame.
 *
 *   loopprog SECONDS HOLD [bind0]
 *
 * A setup thread, pinned to cpu 0, allocates `shared` (8 MiB, site alloc_shared) and first
 * touches it; four workers, pinned to cpus 0-3 (one per node in the guest), read and write one
 * word per page of it for SECONDS; worker 3 also first-touches and uses `local` (4 MiB, site
 * alloc_local). Then the program holds for HOLD seconds (so that a plan can be applied to it
 * and it can be recorded again) and exits. With `bind0` the shared buffer is bound to node 0
 * with MPOL_BIND | MPOL_F_NUMA_BALANCING before it is touched: automatic NUMA balancing then
 * scans it (hinting faults: access samples without a PMU) without moving it. Without `bind0`
 * nothing is bound, so a placement set by `numascope run --plan` (the shim's mbind at
 * allocation) is what the pages get.
 *
 * stdout (line-buffered): `pid=PID`, `ADDR NAME HEX BYTES` per buffer, `working`, `holding`. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SHARED_BYTES (8u << 20)
#define LOCAL_BYTES (4u << 20)
#define PAGE 4096ul
#define MPOL_BIND_ 2
#define MPOL_F_NUMA_BALANCING_ (1 << 13)

static char *shared;
static char *volatile local; /* set by worker 3, read by main */
static double seconds;

__attribute__((noinline)) static char *alloc_shared(void) {
    return malloc(SHARED_BYTES); /* SITE:shared */
}
__attribute__((noinline)) static char *alloc_local(void) {
    return malloc(LOCAL_BYTES); /* SITE:local */
}

static void pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    sched_setaffinity(0, sizeof s, &s);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* The shared buffer is allocated and first-touched by a setup thread that then exits: the shim
 * writes a thread's allocation records to its file when its 64 KiB buffer fills or the thread
 * exits, and a recording stopped while the program keeps running reads the file as it is then
 * (records still buffered in a live thread are not in the trace; testbed/README.md, k-loop). */
static int bind0;
static void *setup(void *arg) {
    (void)arg;
    pin(0);
    shared = alloc_shared();
    if (!shared) return NULL;
    if (bind0) {
        unsigned long lo = ((unsigned long)shared + PAGE - 1) & ~(PAGE - 1);
        unsigned long hi = ((unsigned long)shared + SHARED_BYTES) & ~(PAGE - 1);
        unsigned long mask = 1;
        if (syscall(SYS_mbind, lo, hi - lo, MPOL_BIND_ | MPOL_F_NUMA_BALANCING_, &mask, 64, 0) != 0) perror("mbind");
        else printf("bound\n");
    }
    memset(shared, 1, SHARED_BYTES);
    return NULL;
}

static void *worker(void *arg) {
    int i = (int)(long)arg;
    pin(i);
    if (i == 3) {
        local = alloc_local();
        if (local) memset(local, 3, LOCAL_BYTES);
    }
    double end = now() + seconds;
    volatile unsigned long sum = 0;
    while (now() < end) {
        for (unsigned long o = 0; o < SHARED_BYTES; o += PAGE) {
            sum += (unsigned char)shared[o];
            shared[o + 8 * i] = (char)sum;
        }
        if (i == 3 && local)
            for (unsigned long o = 0; o < LOCAL_BYTES; o += PAGE) local[o]++;
    }
    return NULL;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 3) {
        fprintf(stderr, "usage: loopprog SECONDS HOLD [bind0]\n");
        return 2;
    }
    seconds = atof(argv[1]);
    int hold = atoi(argv[2]);
    pin(0);
    printf("pid=%d\n", (int)getpid());
    bind0 = argc > 3 && strcmp(argv[3], "bind0") == 0;
    pthread_t s;
    if (pthread_create(&s, NULL, setup, NULL) != 0) return 2;
    pthread_join(s, NULL);
    if (!shared) return 1;
    pthread_t t[4];
    for (long i = 0; i < 4; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)i) != 0) return 2;
    /* `local` is allocated by worker 3: wait until it is there before printing the addresses */
    for (int k = 0; k < 1000 && !local; k++) usleep(1000);
    printf("ADDR shared %lx %u\nADDR local %lx %u\nworking\n", (unsigned long)shared, SHARED_BYTES,
           (unsigned long)local, LOCAL_BYTES);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    printf("holding\n");
    sleep(hold);
    return 0;
}
