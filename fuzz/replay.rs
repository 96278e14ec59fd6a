//! A fuzz target's seed corpus and every crash it found, replayed through
//! the target's property by `cargo test` (included by host/src/fuzz.rs's
//! tests and by plugins/apply_patch/tests/fuzz_corpus.rs), so a fixed
//! crash stays fixed.

use std::path::Path;

/// Every file of `fuzz/corpus/TARGET` and `fuzz/regressions/TARGET` (under
/// `fuzz`) through `check`; fails naming the first input whose check
/// panics, or when the seed corpus is missing.
pub fn replay(fuzz: &Path, target: &str, check: impl Fn(&[u8]) + std::panic::RefUnwindSafe) {
    let mut ran = 0;
    for dir in [
        fuzz.join("corpus").join(target),
        fuzz.join("regressions").join(target),
    ] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            let data = std::fs::read(&path).expect("a corpus file");
            let outcome = std::panic::catch_unwind(|| check(&data));
            assert!(outcome.is_ok(), "{} fails", path.display());
            ran += 1;
        }
    }
    assert!(
        ran >= 4,
        "the seed corpus of {target} is missing: {ran} inputs"
    );
}
