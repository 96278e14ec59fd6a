//! The fuzz target `apply_patch`'s property on every input of its seed
//! corpus and every crash it found.

mod common {
    pub mod fuzzed;
}
#[path = "../../../fuzz/replay.rs"]
mod replay;

#[test]
fn the_corpus_and_every_crash_found_pass() {
    let fuzz = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    replay::replay(&fuzz, "apply_patch", common::fuzzed::check);
}
