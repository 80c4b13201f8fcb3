#![no_main]
//! questionnaires.json: errors, never panics; every accepted instrument validates.
use emotionbench::domain::instrument::parse_questionnaires_json;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(list) = parse_questionnaires_json(text) {
        for i in &list {
            assert!(i.validate().is_ok(), "{:?}", i.validate());
        }
    }
});
