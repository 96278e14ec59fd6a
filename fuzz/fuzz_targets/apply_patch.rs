//! apply_patch's parser and applier (the property: plugins/apply_patch/tests/common/fuzzed.rs).
#![no_main]

#[path = "../../plugins/apply_patch/tests/common/fuzzed.rs"]
mod fuzzed;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzzed::check(data));
