/* Floors for bench/overhead.rs, built by overhead.sh.
 *
 * Plain: the cheapest possible interposition, a preloaded library whose malloc family jumps
 * straight on to glibc's (no state, no threshold, no sampler). What a shim costs above this is
 * its own work; this much any LD_PRELOAD interposer costs.
 *
 * With -DCHECK ("check" peer): the same plus the least a filtering shim does on each call, a
 * threshold compare in malloc and glibc's chunk word compared with it in free (no sampler, no
 * recording: larger blocks and frees of larger chunks only go through a second function). */
#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

#ifdef CHECK
__attribute__((visibility("hidden"))) size_t threshold = 64 * 1024;

__attribute__((noinline, visibility("hidden"))) void *malloc_large(size_t n) {
    __asm__ volatile("");
    return __libc_malloc(n);
}

__attribute__((noinline, visibility("hidden"))) void free_large(void *p) {
    __asm__ volatile("");
    __libc_free(p);
}

void *malloc(size_t n) {
    if (__builtin_expect(n < threshold, 1))
        return __libc_malloc(n);
    return malloc_large(n);
}

void free(void *p) {
    if (p && ((size_t *)p)[-1] < threshold) {
        __libc_free(p);
        return;
    }
    free_large(p);
}
#else
void *malloc(size_t n) { return __libc_malloc(n); }
void free(void *p) { __libc_free(p); }
#endif

void *calloc(size_t n, size_t s) { return __libc_calloc(n, s); }
void *realloc(void *p, size_t n) { return __libc_realloc(p, n); }
