// A Go router core over the C ABI with cgo: every mode by name, then
// goroutines reserving concurrently, one handle each. Build the C library
// first (cargo build --release in capi/); ci/capi.sh runs this when Go is
// installed.
package main

/*
#cgo CFLAGS: -I${SRCDIR}/../include
#cgo LDFLAGS: ${SRCDIR}/../target/release/libworkerpick_c.a -lpthread -ldl -lm
#include <stdlib.h>
#include "workerpick.h"
*/
import "C"

import (
	"fmt"
	"os"
	"sync"
	"unsafe"
)

func check(status C.enum_wp_status, what string) {
	if status != C.WP_OK {
		fmt.Fprintf(os.Stderr, "%s: %s\n", what, C.GoString(C.wp_last_error()))
		os.Exit(1)
	}
}

func main() {
	var pool *C.wp_pool
	check(C.wp_pool_new(0, &pool), "pool")
	for w := 0; w < 8; w++ {
		check(C.wp_pool_insert(pool, C.uint64_t(w)), "insert")
	}
	for i := C.size_t(0); i < C.wp_mode_count(); i++ {
		var sel *C.wp_selector
		check(C.wp_selector_new(C.wp_mode_name(i), nil, &sel), "selector")
		var h *C.wp_handle
		check(C.wp_handle_new(pool, &h), "handle")
		var r *C.wp_reservation
		check(C.wp_reserve(h, sel, 1, &r), "reserve")
		var w C.uint64_t
		check(C.wp_reservation_worker(r, &w), "worker")
		fmt.Printf("%s picked worker %d\n", C.GoString(C.wp_mode_name(i)), w)
		check(C.wp_reservation_free(r), "free")
		C.wp_handle_free(h)
		C.wp_selector_free(sel)
	}

	name := C.CString("power-of-two")
	defer C.free(unsafe.Pointer(name))
	var sel *C.wp_selector
	check(C.wp_selector_new(name, nil, &sel), "selector")
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var h *C.wp_handle // one per goroutine: used by one thread at a time
			check(C.wp_handle_new(pool, &h), "handle")
			defer C.wp_handle_free(h)
			for i := 0; i < 20000; i++ {
				var r *C.wp_reservation
				check(C.wp_reserve(h, sel, 1, &r), "reserve")
				check(C.wp_reservation_free(r), "free")
			}
		}()
	}
	wg.Wait()
	for w := 0; w < 8; w++ {
		var load C.uint32_t
		check(C.wp_pool_in_flight(pool, C.uint64_t(w), &load), "in_flight")
		if load != 0 {
			fmt.Fprintf(os.Stderr, "worker %d still has load %d\n", w, load)
			os.Exit(1)
		}
	}
	C.wp_selector_free(sel)
	C.wp_pool_free(pool)
	fmt.Println("go: 80000 concurrent reservations, all released")
}
