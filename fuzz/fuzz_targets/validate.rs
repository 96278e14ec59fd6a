//! See `toolhost::fuzz::validate` for the input and the property checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = toolhost::fuzz::validate(data);
});
