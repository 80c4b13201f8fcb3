#![no_main]
//! situations.json, the wide CSV and tidy CSVs: errors, never panics; what parses is valid.
use emotionbench::domain::situation::{EMOTIONS, parse_situations};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(file) = parse_situations(text) {
        let mut keys = std::collections::HashSet::new();
        for s in &file.situations {
            assert!(EMOTIONS.contains(&s.emotion.as_str()));
            assert!(!s.text.trim().is_empty());
            assert!(keys.insert(s.key.clone()), "duplicate key accepted");
        }
    }
});
