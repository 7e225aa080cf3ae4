/* wp_reserve + wp_reservation_free through the C ABI, ns per request, for
 * the modes and pool sizes of examples/rust_baseline.rs (the same calls
 * from Rust). Usage: bench [milliseconds-per-case] (1 to 60000, default 300) */
#define _POSIX_C_SOURCE 199309L
#include "workerpick.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* This thread's CPU time: on a shared machine, time spent waiting for a
 * core is not the call's (examples/rust_baseline.rs reads the same clock). */
static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    long ms = 300;
    if (argc > 1) {
        char *end;
        ms = strtol(argv[1], &end, 10);
        if (end == argv[1] || *end != '\0' || ms < 1 || ms > 60000) {
            fprintf(stderr, "bench: milliseconds-per-case must be a whole number from 1 to 60000, not '%s'\n", argv[1]);
            return 2;
        }
    }
    double seconds = ms / 1000.0;
    const char *modes[] = {"least-loaded", "power-of-two", "round-robin"};
    const uint64_t sizes[] = {8, 64, 1024};
    for (size_t m = 0; m < 3; m++) {
        for (size_t s = 0; s < 3; s++) {
            wp_pool *pool = NULL;
            wp_handle *h = NULL;
            wp_selector *sel = NULL;
            if (wp_pool_new(0, &pool) || wp_selector_new(modes[m], NULL, &sel)) return 1;
            for (uint64_t w = 0; w < sizes[s]; w++) wp_pool_insert(pool, w);
            if (wp_handle_new(pool, &h)) return 1;
            long n = 0;
            double start = now(), elapsed;
            do {
                for (int i = 0; i < 1000; i++) {
                    wp_reservation *r;
                    if (wp_reserve(h, sel, 1, &r) != WP_OK) return 1;
                    wp_reservation_free(r);
                }
                n += 1000;
            } while ((elapsed = now() - start) < seconds);
            printf("%s/%llu %.1f\n", modes[m], (unsigned long long)sizes[s], elapsed / n * 1e9);
            wp_handle_free(h);
            wp_selector_free(sel);
            wp_pool_free(pool);
        }
    }
    return 0;
}
