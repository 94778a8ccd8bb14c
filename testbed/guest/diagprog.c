/* Testbed scenario j-diagnose's program (testbed/README.md): one of each NUMA issue that issue 16's
 * diagnostics must name from NUMA hinting faults, with its allocation site. Dynamically linked, so
 * that the allocation shim (LD_PRELOAD) records the sites; built -O0 so every site is its own frame.
 *
 *   diagprog SECONDS HOLD
 *
 * - `blocks` (12 MiB, site SITE:blocks): allocated and first-touched by the main thread on cpu 0
 *   (node 0), bound there with MPOL_BIND | MPOL_F_NUMA_BALANCING (the balancer scans it, hinting
 *   faults, without moving it); workers 1-3, pinned to cpus 1-3 (nodes 1-3), each read and write
 *   only their own 4 MiB block: remote access to disjoint blocks (fix: block-wise interleave with
 *   the threads bound).
 * - `table` (4 MiB, site SITE:table): allocated, filled and bound to node 0 the same way, then only
 *   read, by workers 0-3 (one per node): a read-mostly object shared by all nodes (fix: a copy per
 *   node, a code change).
 * - a `migrator` thread that moves itself to the next cpu (node) over and over, for the whole
 *   run, touching a small buffer of its own and one page of `table` per move (thread migration,
 *   fix: binding).
 * Workers stop after SECONDS and stay alive (blocked) so that a plan can pin them; the program
 * holds HOLD seconds, then exits. SIGUSR1 prints, per 4 MiB block of `blocks`, the node of each of
 * its whole pages (move_pages query) as `BLOCK i N<node>=<pages>...`.
 *
 * stdout (line-buffered): `pid=PID`, `ADDR NAME HEX BYTES`, `TID NAME TID` per thread, `working`,
 * `holding`. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define BLOCK_BYTES (4ul << 20)
#define BLOCKS_BYTES (3 * BLOCK_BYTES)
#define TABLE_BYTES (4ul << 20)
#define PAGE 4096ul
#define MPOL_BIND_ 2
#define MPOL_F_NUMA_BALANCING_ (1 << 13)

static char *blocks;
static char *table;
static double seconds;
static volatile int report;

__attribute__((noinline)) static char *alloc_blocks(void) {
    return malloc(BLOCKS_BYTES); /* SITE:blocks */
}
__attribute__((noinline)) static char *alloc_table(void) {
    return malloc(TABLE_BYTES); /* SITE:table */
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

static void bind0(char *p, unsigned long bytes) {
    unsigned long lo = ((unsigned long)p + PAGE - 1) & ~(PAGE - 1);
    unsigned long hi = ((unsigned long)p + bytes) & ~(PAGE - 1);
    unsigned long mask = 1;
    if (syscall(SYS_mbind, lo, hi - lo, MPOL_BIND_ | MPOL_F_NUMA_BALANCING_, &mask, 64, 0) != 0) perror("mbind");
}

static void *worker(void *arg) {
    int i = (int)(long)arg;
    pin(i);
    printf("TID worker%d %ld\n", i, (long)syscall(SYS_gettid));
    char *mine = i > 0 ? blocks + (i - 1) * BLOCK_BYTES : NULL;
    double end = now() + seconds;
    volatile unsigned long sum = 0;
    /* Each worker sweeps `table` from its own quarter on, so that which of them touches a page
     * first after the balancer unmaps it (the one hinting fault the page gives per pass) changes
     * from pass to pass; and sleeps 1 ms after each sweep: a page gives one hinting fault per scan
     * pass (a second or more apart) however often it is touched, and the idle time lets the
     * migrator, arriving on this cpu, run at once (in the TCG guest a move to a cpu whose vcpu is
     * busy took 8-14 ms: about 70-120 moves a second, below the migration threshold). */
    unsigned long start = (unsigned long)i * (TABLE_BYTES / 4);
    while (now() < end) {
        for (unsigned long k = 0; k < TABLE_BYTES; k += PAGE) sum += (unsigned char)table[(start + k) % TABLE_BYTES]; /* LOOP:table */
        if (mine)
            for (unsigned long o = 0; o < BLOCK_BYTES; o += PAGE) {
                sum += (unsigned char)mine[o]; /* LOOP:blocks */
                mine[o] = (char)sum; /* LOOP:blocks */
            }
        usleep(1000);
    }
    for (;;) pause(); /* alive, so that a plan can pin it */
    return NULL;
}

static void *migrator(void *arg) {
    (void)arg;
    printf("TID migrator %ld\n", (long)syscall(SYS_gettid));
    static char own[16384];
    /* No sleep between moves: in the TCG guest a usleep(2000) between them gave ~30 moves a
     * second (timer wake-ups of an emulated, shared vcpu), below the migration threshold. */
    volatile unsigned long sum = 0;
    for (unsigned long k = 0;; k++) {
        pin((int)(k % 4));
        for (unsigned long o = 0; o < sizeof own; o += 64) own[o]++;
        sum += (unsigned char)table[(k * PAGE) % TABLE_BYTES]; /* a reader of the table too, from every node */
    }
    return NULL;
}

static void on_usr1(int sig) {
    (void)sig;
    report = 1;
}

/* The node of each whole page of block i (move_pages with no target nodes: a query). */
static void print_block(int i) {
    unsigned long lo = ((unsigned long)(blocks + i * BLOCK_BYTES) + PAGE - 1) & ~(PAGE - 1);
    unsigned long hi = ((unsigned long)(blocks + (i + 1) * BLOCK_BYTES)) & ~(PAGE - 1);
    unsigned long n = (hi - lo) / PAGE;
    void **pages = malloc(n * sizeof *pages);
    int *status = malloc(n * sizeof *status);
    int count[64] = {0};
    int other = 0;
    for (unsigned long k = 0; k < n; k++) pages[k] = (void *)(lo + k * PAGE);
    if (syscall(SYS_move_pages, 0, n, pages, NULL, status, 0) != 0) perror("move_pages");
    for (unsigned long k = 0; k < n; k++) {
        if (status[k] >= 0 && status[k] < 64) count[status[k]]++;
        else other++;
    }
    printf("BLOCK %d", i);
    for (int d = 0; d < 64; d++)
        if (count[d]) printf(" N%d=%d", d, count[d]);
    if (other) printf(" other=%d", other);
    printf("\n");
    free(pages);
    free(status);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 3) {
        fprintf(stderr, "usage: diagprog SECONDS HOLD\n");
        return 2;
    }
    seconds = atof(argv[1]);
    int hold = atoi(argv[2]);
    pin(0);
    signal(SIGUSR1, on_usr1);
    printf("pid=%d\n", (int)getpid());
    blocks = alloc_blocks();
    table = alloc_table();
    if (!blocks || !table) return 1;
    bind0(blocks, BLOCKS_BYTES);
    bind0(table, TABLE_BYTES);
    memset(blocks, 1, BLOCKS_BYTES);
    memset(table, 2, TABLE_BYTES);
    printf("ADDR blocks %lx %lu\nADDR table %lx %lu\n", (unsigned long)blocks, BLOCKS_BYTES, (unsigned long)table, TABLE_BYTES);
    pthread_t t[5];
    if (pthread_create(&t[4], NULL, migrator, NULL) != 0) return 2;
    for (long i = 0; i < 4; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)i) != 0) return 2;
    printf("working\n");
    usleep((useconds_t)(seconds * 1e6) + 200000);
    printf("holding\n");
    double end = now() + hold;
    while (now() < end) {
        usleep(100000);
        if (report) {
            report = 0;
            for (int i = 0; i < 3; i++) print_block(i);
            printf("REPORTED\n");
        }
    }
    return 0;
}
