//! The `connect_records` fuzz target's committed inputs, replayed as a regular test:
//! every file in `fuzz/seeds/connect_records/` and `fuzz/regressions/connect_records/`
//! goes once through `sluice_connect::fuzzing::records` (the function
//! `fuzz/fuzz_targets/connect_records.rs` calls). Long runs are by hand:
//! `fuzz/run.sh 600 connect_records`, see `docs/fuzzing.md`.

use std::path::{Path, PathBuf};

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.is_file() && path.extension().is_none_or(|ext| ext != "md"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_seed_and_regression_passes_the_connect_records_target() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let seeds = files_in(&fuzz.join("seeds/connect_records"));
    assert!(seeds.len() >= 10, "the connect_records seeds are missing");
    let regressions = files_in(&fuzz.join("regressions/connect_records"));
    for input in seeds.iter().chain(&regressions) {
        let data = std::fs::read(input).expect("read a fuzz input");
        let outcome = std::panic::catch_unwind(|| sluice_connect::fuzzing::records(&data));
        assert!(outcome.is_ok(), "{} fails its target", input.display());
    }
}
