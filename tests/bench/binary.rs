//! What `cargo install --path host` puts on a person's disk: the
//! `toolhost` binary of this build (the bench profile is the release
//! profile, which installs), against the same binary with its embedded
//! components unpacked (what it weighed before they were packed) and the
//! 60 MB target; then the cost of unpacking, the one a compile pays.

use std::time::Instant;

pub fn run() {
    println!(
        "\n== binary: the installed toolhost, embedded components packed with zstd against one base"
    );
    let path = env!("CARGO_BIN_EXE_toolhost");
    let size = std::fs::metadata(path).map_or(0, |m| m.len());
    let components = toolhost::builtins().iter().chain(toolhost::runners());
    let (packed, unpacked): (u64, u64) = components.fold((0, 0), |(p, u), b| {
        (p + b.packed.len() as u64, u + b.len as u64)
    });
    let mb = |bytes: u64| bytes as f64 / 1e6;
    println!("binary {path}: {:.1} MB (target <= 60 MB)", mb(size));
    println!(
        "embedded components: {:.1} MB packed, {:.1} MB unpacked ({:.2}x smaller)",
        mb(packed),
        mb(unpacked),
        unpacked as f64 / packed.max(1) as f64
    );
    println!(
        "the same binary with them unpacked: {:.1} MB; packed / unpacked {:.2}x",
        mb(size - packed + unpacked),
        size as f64 / (size - packed + unpacked) as f64
    );
    // The baseline of the packing: each component packed alone, at the
    // level the first packing used.
    let alone: u64 = toolhost::builtins()
        .iter()
        .chain(toolhost::runners())
        .map(|b| {
            let wasm = b.wasm().expect("unpacks");
            zstd::bulk::compress(&wasm, 12).map_or(0, |p| p.len() as u64)
        })
        .sum();
    println!(
        "packed against the base component: {:.1} MB; each packed alone (level 12): {:.1} MB \
         ({:.2}x); the binary so packed: {:.1} MB",
        mb(packed),
        mb(alone),
        packed as f64 / alone.max(1) as f64,
        mb(size - packed + alone)
    );
    let largest = toolhost::builtins()
        .iter()
        .max_by_key(|b| b.len)
        .expect("built-ins");
    let started = Instant::now();
    let wasm = largest.wasm().expect("unpacks");
    println!(
        "unpacking the largest ({}, {:.1} MB): {:.1} ms, paid only when it is compiled",
        largest.crate_name,
        mb(wasm.len() as u64),
        started.elapsed().as_secs_f64() * 1e3
    );
}
