//! The fuzz target `apply_patch`'s property on every input of its seed
//! corpus and every crash it found (fuzz/corpus/apply_patch,
//! fuzz/regressions/apply_patch), so a fixed crash stays fixed.

mod common {
    pub mod fuzzed;
}

#[test]
fn the_corpus_and_every_crash_found_pass() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut ran = 0;
    for dir in ["corpus/apply_patch", "regressions/apply_patch"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            let data = std::fs::read(&path).expect("a corpus file");
            let outcome = std::panic::catch_unwind(|| common::fuzzed::check(&data));
            assert!(outcome.is_ok(), "{} fails", path.display());
            ran += 1;
        }
    }
    assert!(ran >= 4, "the seed corpus is missing: {ran} inputs");
}
