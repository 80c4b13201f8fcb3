//! The monitor's completions-over-time chart (issue #15, point 5): a bar chart as inline SVG
//! with both axes labelled and ticked, a title and a description for screen readers (the page
//! also has the numbers as a table). Only numbers and dates go into it, never stored text.

use crate::store::monitor::Timeline;

/// Narrow, so that on a phone (about 330 px for it) the 12 px labels stay about 12 px; a
/// desktop shows it at most 32rem wide (assets/app.css).
const W: i64 = 340;
const H: i64 = 230;
/// Left, right, top and bottom margins (the axes' labels live there).
const ML: i64 = 42;
const MR: i64 = 10;
const MT: i64 = 12;
const MB: i64 = 50;

/// 1, 2 or 5 times a power of ten, at least `n` (the y axis' top).
fn nice_ceiling(n: i64) -> i64 {
    let mut p = 1;
    loop {
        for m in [1, 2, 5] {
            if m * p >= n {
                return m * p;
            }
        }
        p *= 10;
    }
}

/// "hour", "15 minutes", "day" ... for the axis title.
pub fn width_words(seconds: i64) -> String {
    match seconds {
        60 => "minute".into(),
        3600 => "hour".into(),
        86_400 => "day".into(),
        604_800 => "week".into(),
        s if s % 86_400 == 0 => format!("{} days", s / 86_400),
        s if s % 3600 == 0 => format!("{} hours", s / 3600),
        s => format!("{} minutes", s / 60),
    }
}

fn label(t: chrono::NaiveDateTime, width: i64) -> String {
    if width >= 86_400 {
        t.format("%Y-%m-%d").to_string()
    } else {
        t.format("%m-%d %H:%M").to_string()
    }
}

/// The chart, or `None` when nothing was completed yet.
pub fn completions_svg(t: &Timeline) -> Option<String> {
    let n = t.buckets.len() as i64;
    if n == 0 {
        return None;
    }
    let max = t.buckets.iter().map(|b| b.1).max().unwrap_or(0).max(1);
    let top = nice_ceiling(max);
    let (pw, ph) = (W - ML - MR, H - MT - MB);
    let total: i64 = t.buckets.iter().map(|b| b.1).sum();
    let per = width_words(t.width_seconds);
    let first = label(t.buckets[0].0, t.width_seconds);
    let last = label(t.buckets[t.buckets.len() - 1].0, t.width_seconds);
    let mut s = format!(
        "<svg class=\"monitor-chart\" viewBox=\"0 0 {W} {H}\" role=\"img\" \
         aria-labelledby=\"tl-title tl-desc\" xmlns=\"http://www.w3.org/2000/svg\">\
         <title id=\"tl-title\">Completions per {per} (UTC)</title>\
         <desc id=\"tl-desc\">{total} completions from {first} to {last}; at most {max} in one \
         {per}.</desc>"
    );
    // Y axis: 0, half, top, with grid lines.
    for (i, v) in [0, top / 2, top].into_iter().enumerate() {
        if i == 1 && top < 2 {
            continue;
        }
        let y = MT + ph - v * ph / top;
        s.push_str(&format!(
            "<line x1=\"{ML}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" class=\"grid\"/>\
             <text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"tick\">{v}</text>",
            W - MR,
            ML - 6,
            y + 4
        ));
    }
    // Bars.
    let slot = pw as f64 / n as f64;
    let bar = (slot * 0.8).max(1.0);
    for (i, (at, c)) in t.buckets.iter().enumerate() {
        if *c == 0 {
            continue;
        }
        let h = (c * ph) as f64 / top as f64;
        s.push_str(&format!(
            "<rect class=\"bar\" x=\"{:.1}\" y=\"{:.1}\" width=\"{bar:.1}\" height=\"{h:.1}\">\
             <title>{}: {c}</title></rect>",
            ML as f64 + slot * i as f64 + (slot - bar) / 2.0,
            (MT + ph) as f64 - h,
            label(*at, t.width_seconds)
        ));
    }
    // Axes, the first and last bucket's labels, the axis titles.
    let base = MT + ph;
    s.push_str(&format!(
        "<line x1=\"{ML}\" y1=\"{MT}\" x2=\"{ML}\" y2=\"{base}\" class=\"axis\"/>\
         <line x1=\"{ML}\" y1=\"{base}\" x2=\"{}\" y2=\"{base}\" class=\"axis\"/>\
         <text x=\"{ML}\" y=\"{}\" text-anchor=\"start\" class=\"tick\">{first}</text>",
        W - MR,
        base + 16
    ));
    if n > 1 {
        s.push_str(&format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"tick\">{last}</text>",
            W - MR,
            base + 16
        ));
    }
    s.push_str(&format!(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"axis-title\">Time (UTC), one bar \
         per {per}</text>\
         <text x=\"14\" y=\"{}\" text-anchor=\"middle\" class=\"axis-title\" \
         transform=\"rotate(-90 14 {})\">Completions</text></svg>",
        ML + pw / 2,
        H - 8,
        MT + ph / 2,
        MT + ph / 2
    ));
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chart_has_axes_labels_and_one_bar_per_nonempty_bucket() {
        let t0 = chrono::DateTime::from_timestamp(1_764_633_600, 0)
            .unwrap()
            .naive_utc();
        let t = Timeline {
            width_seconds: 3600,
            buckets: vec![
                (t0, 3),
                (t0 + chrono::Duration::hours(1), 0),
                (t0 + chrono::Duration::hours(2), 7),
            ],
        };
        let svg = completions_svg(&t).unwrap();
        assert_eq!(svg.matches("<rect").count(), 2);
        assert!(svg.contains("Completions per hour (UTC)"));
        assert!(svg.contains(">10</text>"), "top tick 10: {svg}");
        assert!(
            svg.contains("12-02 00:00") && svg.contains("12-02 02:00"),
            "{svg}"
        );
        assert!(svg.contains("10 completions"), "{svg}");
        assert!(completions_svg(&Timeline::default()).is_none());
        assert_eq!(nice_ceiling(7), 10);
        assert_eq!(nice_ceiling(101), 200);
        assert_eq!(nice_ceiling(1), 1);
        assert_eq!(width_words(900), "15 minutes");
    }
}
