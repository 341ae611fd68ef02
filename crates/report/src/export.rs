//! Exporters: one small trait, one implementation per format. All write the same flat
//! rows (one per process, or one per job of a periodic task), so a row looks the same in
//! every format.

use crate::flat::FlatSample;
use serde::Serialize;
use std::io::{self, Write};

/// Writes flat rows in one format.
pub trait Exporter {
    /// Writes every row (each a JSON object, fields in order) to `out`.
    fn write_values(&self, rows: &[serde_json::Value], out: &mut dyn Write) -> io::Result<()>;

    /// Writes every flat sample to `out`.
    fn write(&self, rows: &[FlatSample], out: &mut dyn Write) -> io::Result<()> {
        self.write_values(&values(rows), out)
    }
}

/// Rows of any flat record type as JSON objects, for [`Exporter::write_values`].
pub fn values<T: Serialize>(rows: &[T]) -> Vec<serde_json::Value> {
    rows.iter().map(|r| serde_json::to_value(r).expect("flat rows serialise")).collect()
}

/// The formats [`by_name`] knows: (name, other names, what it writes).
pub const FORMATS: [(&str, &[&str], &str); 3] = [
    ("csv", &[], "comma-separated values, one header line"),
    ("json", &[], "one JSON array of objects"),
    ("markdown", &["md"], "a Markdown table"),
];

/// Picks the exporter for a format name (one of [`FORMATS`], or another name of one).
pub fn by_name(name: &str) -> Option<Box<dyn Exporter>> {
    let (format, _, _) = FORMATS.iter().find(|(f, also, _)| *f == name || also.contains(&name))?;
    Some(match *format {
        "csv" => Box::new(Csv),
        "json" => Box::new(Json),
        _ => Box::new(Markdown),
    })
}

/// Field names and values of a row, in declaration order, from its serde form.
fn fields(row: &serde_json::Value) -> Vec<(String, String)> {
    let obj = row.as_object().expect("a struct serialises to an object");
    obj.iter()
        .map(|(k, v)| {
            let s = match v {
                serde_json::Value::Null => String::new(),
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (k.clone(), s)
        })
        .collect()
}

/// Comma-separated values with a header row (RFC 4180 quoting).
pub struct Csv;

/// A CSV field, quoted when it must be (RFC 4180).
pub(crate) fn csv_quote(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

impl Exporter for Csv {
    fn write_values(&self, rows: &[serde_json::Value], out: &mut dyn Write) -> io::Result<()> {
        let syntax = Syntax { open: "", sep: ",", close: "", escape: csv_quote, rule: false };
        syntax.write(rows, out)
    }
}

/// A JSON array, one object per process.
pub struct Json;

impl Exporter for Json {
    fn write_values(&self, rows: &[serde_json::Value], out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, rows)?;
        writeln!(out)
    }
}

/// A GitHub-flavoured Markdown table.
pub struct Markdown;

impl Exporter for Markdown {
    fn write_values(&self, rows: &[serde_json::Value], out: &mut dyn Write) -> io::Result<()> {
        let escape = |v: &str| v.replace('|', "\\|");
        Syntax { open: "| ", sep: " | ", close: " |", escape, rule: true }.write(rows, out)
    }
}

/// How a table format writes a line of cells: what opens it, separates two cells and closes
/// it, how a value is escaped (field names need not be), and whether a rule (Markdown's) goes
/// under the header.
struct Syntax {
    open: &'static str,
    sep: &'static str,
    close: &'static str,
    escape: fn(&str) -> String,
    rule: bool,
}

impl Syntax {
    /// Writes the first row's field names as the header, then every row's values.
    fn write(&self, rows: &[serde_json::Value], out: &mut dyn Write) -> io::Result<()> {
        let line = |out: &mut dyn Write, cells: Vec<String>| {
            writeln!(out, "{}{}{}", self.open, cells.join(self.sep), self.close)
        };
        for (i, r) in rows.iter().enumerate() {
            let f = fields(r);
            if i == 0 {
                line(out, f.iter().map(|(k, _)| k.clone()).collect())?;
                if self.rule {
                    writeln!(out, "|{}", "---|".repeat(f.len()))?;
                }
            }
            line(out, f.iter().map(|(_, v)| (self.escape)(v)).collect())?;
        }
        Ok(())
    }
}
