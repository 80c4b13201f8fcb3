//! The report's table types, shared by the report writers (`export::report`) and the
//! psychometrics block (`export::psychometrics`) without either importing the other.

/// One row of a report table: its label and a cell per column (in the Table-2 layout, one per
/// cohort × category).
pub struct TableRow {
    pub label: String,
    pub cells: Vec<String>,
}

/// A table with its numbered caption ("Table 2. …").
pub struct Numbered {
    pub caption: String,
    pub header: Vec<String>,
    pub rows: Vec<TableRow>,
}
