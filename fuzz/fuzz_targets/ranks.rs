#![no_main]

use libfuzzer_sys::fuzz_target;
use workerpick_fuzz::ranks::{Input, run};

fuzz_target!(|input: Input| run(input));
