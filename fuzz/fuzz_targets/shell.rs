//! See `toolhost::fuzz::shell` for the input and the property checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = toolhost::fuzz::shell(data);
});
