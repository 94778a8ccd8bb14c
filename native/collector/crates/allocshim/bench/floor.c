/* The floor for bench/overhead.rs: the cheapest possible interposition, a preloaded library
 * whose malloc family jumps straight on to glibc's (no state, no threshold, no sampler). What
 * a shim costs above this is its own work; this much any LD_PRELOAD interposer costs. */
#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

void *malloc(size_t n) { return __libc_malloc(n); }
void *calloc(size_t n, size_t s) { return __libc_calloc(n, s); }
void *realloc(void *p, size_t n) { return __libc_realloc(p, n); }
void free(void *p) { __libc_free(p); }
