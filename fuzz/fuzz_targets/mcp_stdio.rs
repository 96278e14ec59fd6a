//! See `toolhost::fuzz::mcp_stdio` for the input and the property checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = toolhost::fuzz::mcp_stdio(data);
});
