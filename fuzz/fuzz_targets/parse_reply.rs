#![no_main]
//! Any reply text, with a PANAS-sized spec whose display order comes from the input's first
//! bytes: parse_reply must never panic, and anything it accepts must be in range and complete.
use emotionbench::domain::parse::{ParseSpec, parse_reply};
use libfuzzer_sys::fuzz_target;

const WORDS: [&str; 20] = [
    "Interested", "Distressed", "Excited", "Upset", "Strong", "Guilty", "Scared", "Hostile",
    "Enthusiastic", "Proud", "Irritable", "Alert", "Ashamed", "Inspired", "Nervous",
    "Determined", "Attentive", "Jittery", "Active", "Afraid",
];

fuzz_target!(|data: &[u8]| {
    let (head, rest) = data.split_at(data.len().min(2));
    let rotate = head.first().copied().unwrap_or(0) as usize % 20;
    let (min, max) = if head.get(1).is_some_and(|b| b % 2 == 0) { (0, 3) } else { (1, 5) };
    let mut order: Vec<u32> = (1..=20).collect();
    order.rotate_left(rotate);
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let spec = ParseSpec { display_order: &order, item_texts: &WORDS, min, max };
    if let Ok(p) = parse_reply(text, &spec) {
        assert_eq!(p.scores.len(), 20);
        assert!(p.scores.iter().all(|s| (min..=max).contains(s)));
    }
});
