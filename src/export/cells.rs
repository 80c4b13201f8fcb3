//! Formula neutralisation of CSV text cells (OWASP "CSV injection").
//!
//! Spreadsheets evaluate a cell that begins with `=`, `+`, `-` or `@` as a formula (and a
//! leading tab or carriage return is stripped by some before they look), so a participant's
//! Prolific id, an imported country or a model name such as `=HYPERLINK("http://…")` would run
//! when a researcher opens the export. Every *text* cell that begins so is prefixed with `'`,
//! which spreadsheets read as "this is text" and show without the quote. Numeric columns are
//! never touched (a score of -1.5 stays a number), and a text cell that is a plain decimal
//! number (`-3`, `+1.5e3`) is left alone too: no spreadsheet evaluates that as anything but the
//! number itself. [`Cells::Raw`] turns this off for pipelines that read the values as stored.

use std::borrow::Cow;

/// How text cells are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Cells {
    /// Text cells that a spreadsheet would evaluate are prefixed with `'` (the default).
    #[default]
    Neutralised,
    /// Every cell exactly as stored (`--raw-cells`, `?raw=1`): for scripts, not spreadsheets.
    Raw,
}

impl Cells {
    /// `raw` from a flag or a query parameter.
    pub fn raw_if(raw: bool) -> Cells {
        if raw { Cells::Raw } else { Cells::Neutralised }
    }

    /// A text cell as it is written.
    pub fn text<'a>(self, cell: &'a str) -> Cow<'a, str> {
        match self {
            Cells::Neutralised => neutralise(cell),
            Cells::Raw => Cow::Borrowed(cell),
        }
    }

    /// What the codebook says about text columns.
    pub fn note(self) -> &'static str {
        match self {
            Cells::Neutralised => {
                "Text cells that begin with =, +, -, @, a tab or a carriage return (and are not a \
                 plain number) are prefixed with ' so that spreadsheets show them instead of \
                 running them as formulas; export with --raw-cells (web: ?raw=1) for the values \
                 as stored."
            }
            Cells::Raw => {
                "Exported raw (--raw-cells): text cells are exactly as stored and may begin with \
                 =, +, -, @; do not open this file in a spreadsheet."
            }
        }
    }
}

/// The characters that make a spreadsheet evaluate a cell (OWASP), plus their full-width forms,
/// which some spreadsheet locales accept as well.
const TRIGGERS: [char; 10] = [
    '=', '+', '-', '@', '\t', '\r', '\u{FF1D}', '\u{FF0B}', '\u{FF0D}', '\u{FF20}',
];

/// `'` + `cell` when a spreadsheet would evaluate `cell`, else `cell` unchanged.
pub fn neutralise(cell: &str) -> Cow<'_, str> {
    match cell.chars().next() {
        Some(c) if TRIGGERS.contains(&c) && !plain_number(cell) => Cow::Owned(format!("'{cell}")),
        _ => Cow::Borrowed(cell),
    }
}

/// A decimal number and nothing else: `[+-]digits[.digits][e[+-]digits]`.
fn plain_number(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let mut n = digits(&mut i);
    if i < b.len() && b[i] == b'.' {
        i += 1;
        n += digits(&mut i);
    }
    if n == 0 {
        return false;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// A cell for `csv::Writer::write_record` without copying cells that need no prefix.
pub struct Cell<'a>(pub Cow<'a, str>);

impl AsRef<[u8]> for Cell<'_> {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

/// Writes one record whose column `i` is text when `text[i]`: text cells go through `cells`,
/// the others (numbers, booleans, times, enum values) as they are.
pub fn write_record<'a, W: std::io::Write>(
    w: &mut csv::Writer<W>,
    cells: Cells,
    text: &[bool],
    record: impl IntoIterator<Item = &'a str>,
) -> csv::Result<()> {
    w.write_record(record.into_iter().enumerate().map(|(i, c)| {
        if text.get(i).copied().unwrap_or(true) {
            Cell(cells.text(c))
        } else {
            Cell(Cow::Borrowed(c))
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formulas_get_a_quote_and_plain_text_and_numbers_do_not() {
        for (cell, out) in [
            (
                "=HYPERLINK(\"http://x\",\"y\")",
                "'=HYPERLINK(\"http://x\",\"y\")",
            ),
            ("+1+1", "'+1+1"),
            ("-2+3+cmd|' /C calc'!A0", "'-2+3+cmd|' /C calc'!A0"),
            ("@SUM(A1)", "'@SUM(A1)"),
            ("\t=1", "'\t=1"),
            ("\r=1", "'\r=1"),
            ("\u{FF1D}1+1", "'\u{FF1D}1+1"),
            ("-", "'-"),
            ("-abc", "'-abc"),
            ("-1e", "'-1e"),
            ("-inf", "'-inf"),
            ("United Kingdom", "United Kingdom"),
            ("a=b", "a=b"),
            ("", ""),
            ("-1.5", "-1.5"),
            ("+2", "+2"),
            ("-0.25e-3", "-0.25e-3"),
            ("-.5", "-.5"),
        ] {
            assert_eq!(neutralise(cell), out, "{cell:?}");
        }
    }

    #[test]
    fn raw_cells_are_untouched_and_numeric_columns_never_change() {
        assert_eq!(Cells::Raw.text("=1+1"), "=1+1");
        let mut w = csv::Writer::from_writer(Vec::new());
        write_record(&mut w, Cells::Neutralised, &[true, false], ["=1+1", "-1+1"]).unwrap();
        let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
        assert_eq!(text, "'=1+1,-1+1\n");
    }
}
