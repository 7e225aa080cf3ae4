/* The C ABI's promises, from C: every mode by name, error codes with
 * messages, misuse answered by a code, reservations outliving their pool,
 * and concurrent picks from threads with one handle each. */
#include "workerpick.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n",        \
                    __FILE__, __LINE__, #cond, wp_last_error());                 \
            failures++;                                                          \
        }                                                                        \
    } while (0)

#define OK(call) CHECK((call) == WP_OK)

static wp_pool *pool_of(uint64_t n) {
    wp_pool *pool = NULL;
    OK(wp_pool_new(0, &pool));
    for (uint64_t w = 0; w < n; w++) OK(wp_pool_insert(pool, w));
    return pool;
}

static uint32_t load_of(const wp_pool *pool, uint64_t w) {
    uint32_t load = 12345;
    OK(wp_pool_in_flight(pool, w, &load));
    return load;
}

static void every_mode_by_name(void) {
    wp_pool *pool = pool_of(4);
    wp_handle *h = NULL;
    OK(wp_handle_new(pool, &h));
    size_t n = wp_mode_count();
    CHECK(n >= 5);
    for (size_t i = 0; i < n; i++) {
        const char *name = wp_mode_name(i);
        CHECK(name != NULL);
        wp_selector *sel = NULL;
        OK(wp_selector_new(name, NULL, &sel));
        wp_reservation *r[8];
        for (int k = 0; k < 8; k++) OK(wp_reserve(h, sel, 2, &r[k]));
        uint32_t total = 0;
        for (uint64_t w = 0; w < 4; w++) total += load_of(pool, w);
        CHECK(total == 16);
        for (int k = 0; k < 8; k++) {
            uint64_t w = 99;
            OK(wp_reservation_worker(r[k], &w));
            CHECK(w < 4);
            OK(wp_reservation_release(r[k]));
            OK(wp_reservation_free(r[k]));
        }
        for (uint64_t w = 0; w < 4; w++) CHECK(load_of(pool, w) == 0);
        OK(wp_selector_free(sel));
    }
    CHECK(wp_mode_name(n) == NULL);
    wp_selector *sel = NULL;
    OK(wp_selector_new("Power_Of_Two_Choices", "", &sel));
    OK(wp_selector_free(sel));
    OK(wp_selector_new("device-aware", "cpu-ratio=4", &sel));
    OK(wp_selector_free(sel));
    OK(wp_handle_free(h));
    OK(wp_pool_free(pool));
}

static void errors_have_codes_and_messages(void) {
    wp_selector *sel = NULL;
    CHECK(wp_selector_new("fastest", NULL, &sel) == WP_ERR_UNKNOWN_MODE);
    CHECK(strstr(wp_last_error(), "round-robin") != NULL);
    CHECK(wp_selector_new("device-aware", "cpu-ratio=0", &sel) == WP_ERR_INVALID_CONFIG);
    CHECK(strlen(wp_last_error()) > 0);
    CHECK(wp_selector_new("random", "bogus=1", &sel) == WP_ERR_INVALID_CONFIG);
    CHECK(wp_selector_new("\xff", NULL, &sel) == WP_ERR_INVALID_ARGUMENT);
    CHECK(strcmp(wp_status_message(WP_ERR_DRAINING), "") != 0);
    CHECK(strcmp(wp_status_message(-7), "unknown status") == 0);

    wp_pool *empty = NULL;
    CHECK(wp_pool_new(SIZE_MAX, &empty) == WP_ERR_INVALID_CONFIG);
    OK(wp_pool_new(2, &empty));
    wp_handle *h = NULL;
    OK(wp_handle_new(empty, &h));
    OK(wp_selector_new("least-loaded", NULL, &sel));
    wp_reservation *r = NULL;
    CHECK(wp_reserve(h, sel, 1, &r) == WP_ERR_NO_WORKERS);
    CHECK(strstr(wp_last_error(), "insert workers") != NULL);
    OK(wp_pool_insert(empty, 1));
    CHECK(wp_pool_insert(empty, 1) == WP_ERR_DUPLICATE_WORKER);
    OK(wp_pool_insert(empty, 2));
    CHECK(wp_pool_insert(empty, 3) == WP_ERR_CAPACITY_EXCEEDED);
    CHECK(wp_pool_remove(empty, 42) == WP_ERR_UNKNOWN_WORKER);
    CHECK(wp_pool_set_capacity(empty, 1, 0) == WP_ERR_INVALID_CONFIG);
    OK(wp_pool_set_capacity(empty, 1, 3));
    OK(wp_pool_set_draining(empty, 2, 1));
    CHECK(wp_reserve_worker(h, 2, 1, &r) == WP_ERR_DRAINING);
    for (int k = 0; k < 5; k++) {
        uint64_t w = 0;
        OK(wp_reserve(h, sel, 1, &r));
        OK(wp_reservation_worker(r, &w));
        CHECK(w == 1);
        OK(wp_reservation_free(r)); /* frees and releases in one */
    }
    OK(wp_pool_set_draining(empty, 2, 0));
    OK(wp_pool_set_healthy(empty, 1, 0));
    OK(wp_reserve(h, sel, 1, &r));
    uint64_t w = 0;
    OK(wp_reservation_worker(r, &w));
    CHECK(w == 2);
    OK(wp_reservation_free(r));
    OK(wp_pool_set_healthy(empty, 1, 1)); /* an unhealthy worker counts a large load */
    OK(wp_reserve_worker(h, 1, UINT32_MAX, &r));
    wp_reservation *r2 = NULL;
    CHECK(wp_reserve_worker(h, 1, 1, &r2) == WP_ERR_LOAD_OVERFLOW);
    OK(wp_reservation_free(r));
    OK(wp_pool_report_load(empty, 1, 10));
    CHECK(wp_pool_report_load(empty, 9, 10) == WP_ERR_UNKNOWN_WORKER);
    size_t len = 0;
    OK(wp_pool_len(empty, &len));
    CHECK(len == 2);
    OK(wp_selector_free(sel));
    OK(wp_handle_free(h));
    OK(wp_pool_free(empty));
}

static void misuse_is_an_error_code(void) {
    /* NULL everywhere. */
    CHECK(wp_pool_new(0, NULL) == WP_ERR_NULL);
    CHECK(wp_pool_free(NULL) == WP_ERR_NULL);
    CHECK(wp_pool_insert(NULL, 1) == WP_ERR_NULL);
    CHECK(wp_handle_new(NULL, NULL) == WP_ERR_NULL);
    CHECK(wp_selector_new(NULL, NULL, NULL) == WP_ERR_NULL);
    CHECK(wp_reserve(NULL, NULL, 1, NULL) == WP_ERR_NULL);
    CHECK(wp_reservation_release(NULL) == WP_ERR_NULL);
    CHECK(wp_reservation_free(NULL) == WP_ERR_NULL);
    CHECK(wp_reservation_worker(NULL, NULL) == WP_ERR_NULL);

    wp_pool *a = pool_of(3), *b = pool_of(3);
    wp_handle *h = NULL;
    OK(wp_handle_new(a, &h));
    wp_selector *sel = NULL;
    OK(wp_selector_new("round-robin", NULL, &sel));
    wp_reservation *r = NULL;
    CHECK(wp_reserve(h, sel, 1, NULL) == WP_ERR_NULL);
    OK(wp_reserve(h, sel, 5, &r));
    uint64_t w = 0;
    OK(wp_reservation_worker(r, &w));

    /* A handle of the wrong kind. */
    CHECK(wp_reservation_release((const wp_reservation *)a) == WP_ERR_INVALID_HANDLE);
    wp_reservation *unused = NULL;
    CHECK(wp_reserve((wp_handle *)sel, sel, 1, &unused) == WP_ERR_INVALID_HANDLE);

    /* A reservation passed with another pool. */
    CHECK(wp_reservation_retarget(b, r, 0) == WP_ERR_FOREIGN_RESERVATION);
    CHECK(load_of(a, w) == 5);
    OK(wp_reservation_retarget(a, r, (w + 1) % 3));
    CHECK(load_of(a, w) == 0 && load_of(a, (w + 1) % 3) == 5);
    CHECK(wp_reservation_retarget(a, r, 77) == WP_ERR_UNKNOWN_WORKER);

    /* Double release: the second changes nothing. */
    OK(wp_reservation_release(r));
    CHECK(wp_reservation_release(r) == WP_ERR_ALREADY_RELEASED);
    CHECK(wp_reservation_retarget(a, r, 0) == WP_ERR_ALREADY_RELEASED);
    OK(wp_reservation_worker(r, &w)); /* still readable after the release */
    for (uint64_t k = 0; k < 3; k++) CHECK(load_of(a, k) == 0);
    OK(wp_reservation_free(r));

    /* The pool freed while a handle and reservations live. */
    wp_reservation *live1 = NULL, *live2 = NULL;
    OK(wp_reserve(h, sel, 1, &live1));
    OK(wp_reserve(h, sel, 1, &live2));
    OK(wp_pool_free(a));
    wp_reservation *late = NULL;
    OK(wp_reserve(h, sel, 1, &late)); /* the handle keeps the storage */
    OK(wp_reservation_release(live1));
    CHECK(wp_reservation_release(live1) == WP_ERR_ALREADY_RELEASED);
    OK(wp_reservation_free(live1));
    OK(wp_handle_free(h));
    OK(wp_reservation_free(late));
    OK(wp_reservation_free(live2)); /* the last owner: storage goes here */

    OK(wp_selector_free(sel));
    OK(wp_pool_free(b));
}

struct job {
    wp_pool *pool;
    const wp_selector *sel;
    int rounds;
    int errors;
};

static void *hammer(void *arg) {
    struct job *job = arg;
    wp_handle *h = NULL;
    if (wp_handle_new(job->pool, &h) != WP_OK) {
        job->errors++;
        return NULL;
    }
    wp_reservation *held[4] = {0};
    for (int i = 0; i < job->rounds; i++) {
        wp_reservation **slot = &held[i % 4];
        if (*slot && wp_reservation_free(*slot) != WP_OK) job->errors++;
        if (wp_reserve(h, job->sel, 1 + i % 3, slot) != WP_OK) {
            job->errors++;
            *slot = NULL;
        }
    }
    for (int k = 0; k < 4; k++)
        if (held[k] && wp_reservation_free(held[k]) != WP_OK) job->errors++;
    wp_handle_free(h);
    return NULL;
}

static void threads_share_a_pool(void) {
    wp_pool *pool = pool_of(16);
    wp_selector *sel = NULL;
    OK(wp_selector_new("power-of-two", NULL, &sel));
    pthread_t t[4];
    struct job jobs[4];
    for (int k = 0; k < 4; k++) {
        jobs[k] = (struct job){pool, sel, 50000, 0};
        CHECK(pthread_create(&t[k], NULL, hammer, &jobs[k]) == 0);
    }
    for (int k = 0; k < 4; k++) {
        pthread_join(t[k], NULL);
        CHECK(jobs[k].errors == 0);
    }
    for (uint64_t w = 0; w < 16; w++) CHECK(load_of(pool, w) == 0);
    OK(wp_selector_free(sel));
    OK(wp_pool_free(pool));
}

int main(void) {
    every_mode_by_name();
    errors_have_codes_and_messages();
    misuse_is_an_error_code();
    threads_share_a_pool();
    if (failures) {
        fprintf(stderr, "%d checks failed\n", failures);
        return 1;
    }
    printf("capi_test: all checks passed\n");
    return 0;
}
