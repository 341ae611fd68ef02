//! One definition per table column: its header, how it is aligned and how a row's cell is
//! written. A table is a list of [`Col`]s; its terminal header, rows and alignment and its
//! HTML header, rows and alignment all follow from that list, so no header is counted and
//! no column is named by its position. What a narrow table (`show` without `--wide`) leaves
//! out is said by each column ([`Narrow`]), never by a list of headers.

use comfy_table::{presets, CellAlignment, ContentArrangement, Table};

/// Which side of its cell a column's values sit on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Text, and the columns that name the row.
    Left,
    /// Numbers.
    Right,
}

/// How a column is aligned in the terminal and in the HTML report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Align {
    /// In `schedlab show`.
    pub terminal: Side,
    /// In the HTML report.
    pub html: Side,
}

impl Align {
    /// Text: left everywhere.
    pub const TEXT: Align = Align { terminal: Side::Left, html: Side::Left };
    /// A figure: right everywhere.
    pub const NUM: Align = Align { terminal: Side::Right, html: Side::Right };
    /// A number that names the row (processes, utilisation): left with the other names in
    /// the terminal, right with the numbers in HTML.
    pub const KEY_NUM: Align = Align { terminal: Side::Left, html: Side::Right };
    /// Text after the figures that the terminal aligns with them (notes, shares), left in HTML.
    pub const TRAILING_TEXT: Align = Align { terminal: Side::Right, html: Side::Left };
}

/// Whether a narrow terminal table (`show`, `trace` without `--wide`) draws a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Narrow {
    /// Always.
    Keep,
    /// No: a row label the cell's key stands for (workload, policy, processes, ...).
    Label,
    /// No: a secondary figure, for `--wide`.
    Wide,
    /// Until the table is too wide: then the spare columns go, lowest rank first
    /// ([`crate::cells::fit`]).
    Spare(u8),
}

/// Writes one row's cell of a column.
pub type CellFn<R> = Box<dyn Fn(&R) -> String>;

/// One column of a table whose rows are `R`s.
pub struct Col<R> {
    /// The header.
    pub header: String,
    /// Where its values sit.
    pub align: Align,
    /// Writes a row's cell.
    pub cell: CellFn<R>,
    /// Whether a narrow table draws it.
    pub narrow: Narrow,
}

impl<R> Col<R> {
    /// A column of text.
    pub fn text(header: impl Into<String>, cell: impl Fn(&R) -> String + 'static) -> Col<R> {
        Col {
            header: header.into(),
            align: Align::TEXT,
            cell: Box::new(cell),
            narrow: Narrow::Keep,
        }
    }

    /// A column of figures.
    pub fn num(header: impl Into<String>, cell: impl Fn(&R) -> String + 'static) -> Col<R> {
        Col { header: header.into(), align: Align::NUM, cell: Box::new(cell), narrow: Narrow::Keep }
    }

    /// The same column aligned otherwise.
    pub fn aligned(self, align: Align) -> Col<R> {
        Col { align, ..self }
    }

    /// The same column, drawn in a narrow table as `narrow` says.
    pub fn narrowed(self, narrow: Narrow) -> Col<R> {
        Col { narrow, ..self }
    }
}

/// The headers of `cols`.
pub fn header<R>(cols: &[Col<R>]) -> Vec<&str> {
    cols.iter().map(|c| c.header.as_str()).collect()
}

/// One row's cells.
pub fn cells<R>(cols: &[Col<R>], row: &R) -> Vec<String> {
    cols.iter().map(|c| (c.cell)(row)).collect()
}

/// Every row's cells.
pub fn rows<R>(cols: &[Col<R>], rows: &[R]) -> Vec<Vec<String>> {
    rows.iter().map(|r| cells(cols, r)).collect()
}

/// Per column: its values are right-aligned numbers in HTML.
pub fn html_numeric<R>(cols: &[Col<R>]) -> Vec<bool> {
    cols.iter().map(|c| c.align.html == Side::Right).collect()
}

/// The Markdown line under the header: `---:` for right-aligned (terminal) columns.
pub fn markdown_rule<R>(cols: &[Col<R>]) -> String {
    cols.iter()
        .map(|c| if c.align.terminal == Side::Right { "---:|" } else { "---|" })
        .collect::<Vec<_>>()
        .concat()
}

/// An empty terminal table with the columns' headers and alignment.
pub fn terminal<R>(cols: &[Col<R>]) -> Table {
    let mut t = Table::new();
    t.load_style(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header(cols));
    for (i, c) in cols.iter().enumerate() {
        if c.align.terminal == Side::Right {
            if let Some(col) = t.column_mut(i) {
                col.set_cell_alignment(CellAlignment::Right);
            }
        }
    }
    t
}

/// A terminal table of `rows`.
pub fn table<R>(cols: &[Col<R>], items: &[R]) -> Table {
    table_of(cols, rows(cols, items))
}

/// A terminal table of `cols` with rows already written (by [`rows`], then perhaps changed).
pub fn table_of<R>(cols: &[Col<R>], rows: Vec<Vec<String>>) -> Table {
    let mut t = terminal(cols);
    for row in rows {
        t.add_row(row);
    }
    t
}

/// A Markdown table of `cols` with rows already written: header, rule, one line per row.
pub fn markdown<R>(cols: &[Col<R>], rows: &[Vec<String>]) -> String {
    let line = |cells: Vec<&str>| {
        let cells: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
        format!("| {} |\n", cells.join(" | "))
    };
    let mut out = line(header(cols));
    out.push_str(&format!("|{}\n", markdown_rule(cols)));
    for r in rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols() -> Vec<Col<(u32, &'static str)>> {
        vec![
            Col::text("name", |r: &(u32, &str)| r.1.to_string()),
            Col::num("count", |r: &(u32, &str)| r.0.to_string()),
            Col::text("note", |_: &(u32, &str)| "x".into()).aligned(Align::TRAILING_TEXT),
        ]
    }

    #[test]
    fn header_rows_and_alignment_follow_the_columns() {
        let cols = cols();
        let cols = cols.as_slice();
        assert_eq!(header(cols), ["name", "count", "note"]);
        assert_eq!(rows(cols, &[(3, "a")]), [["a", "3", "x"]]);
        assert_eq!(html_numeric(cols), [false, true, false]);
        assert_eq!(markdown_rule(cols), "---|---:|---:|");
        let t = table(cols, &[(3, "a"), (12345, "bb")]).to_string();
        assert!(t.contains("│ a    ┆     3 ┆    x │"), "{t}");
        let md = markdown(cols, &[vec!["a|b".into(), "3".into(), "x".into()]]);
        assert_eq!(md, "| name | count | note |\n|---|---:|---:|\n| a\\|b | 3 | x |\n");
    }
}
