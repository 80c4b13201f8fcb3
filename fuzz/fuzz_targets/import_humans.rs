#![no_main]
//! The human-responses CSV and the crowd.xlsx grid (cells split from the input): errors,
//! never panics; accepted records carry 20 in-range answers per phase.
use emotionbench::domain::humans::{parse_crowd_sheet, parse_csv};
use emotionbench::domain::instrument::Instrument;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let panas = Instrument::panas();
    let _ = parse_csv(text, &panas);
    let grid: Vec<Vec<String>> = text
        .lines()
        .take(64)
        .map(|l| l.split('\t').take(64).map(str::to_owned).collect())
        .collect();
    let _ = parse_crowd_sheet(&grid, &panas);
});
