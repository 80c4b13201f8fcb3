#![no_main]
//! The released model-answer CSV layout: errors, never panics.
use emotionbench::domain::instrument::Instrument;
use emotionbench::domain::model_results::parse_results_csv;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = parse_results_csv(text, &Instrument::panas());
});
