#![no_main]

use libfuzzer_sys::fuzz_target;
use workerpick_fuzz::kv_events::run_bytes;

fuzz_target!(|data: &[u8]| run_bytes(data));
