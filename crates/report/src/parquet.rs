//! The Parquet export: the same flat rows as every other format, as one table with a typed
//! column per field (types inferred from the rows' JSON values: integers, floats, strings,
//! booleans; a field null in every row is Parquet's null type), in the order the other formats
//! list them, zstd-compressed. Written with the parquet crate's column writers, without Arrow:
//! pyarrow and pandas read the types back from the Parquet schema alone.

use parquet::basic::{Compression, LogicalType, Repetition, Type as Physical, ZstdLevel};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int32Type, Int64Type};
use parquet::errors::ParquetError;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::{SerializedColumnWriter, SerializedFileWriter};
use parquet::schema::types::Type;
use serde_json::Value;
use std::io::Write;
use std::sync::Arc;

/// Rows per row group: bounded memory for large exports.
const GROUP_ROWS: usize = 65_536;

/// A column's type, the narrowest that holds every value of the field.
#[derive(Clone, Copy, Debug, PartialEq)]
enum ParquetKind {
    /// Null in every row so far.
    Null,
    Bool,
    Int,
    Float,
    /// Strings, or values of mixed kinds (written as their JSON text).
    Str,
}

impl ParquetKind {
    fn of(v: &Value) -> ParquetKind {
        match v {
            Value::Null => ParquetKind::Null,
            Value::Bool(_) => ParquetKind::Bool,
            Value::Number(n) if n.is_i64() => ParquetKind::Int,
            Value::Number(_) => ParquetKind::Float,
            _ => ParquetKind::Str,
        }
    }

    fn merge(self, other: ParquetKind) -> ParquetKind {
        match (self, other) {
            (a, b) if a == b => a,
            (ParquetKind::Null, b) | (b, ParquetKind::Null) => b,
            (ParquetKind::Int, ParquetKind::Float) | (ParquetKind::Float, ParquetKind::Int) => {
                ParquetKind::Float
            }
            _ => ParquetKind::Str,
        }
    }

    fn column(self, name: &str) -> Result<Type, ParquetError> {
        let (physical, logical) = match self {
            ParquetKind::Null => (Physical::INT32, Some(LogicalType::Unknown)),
            ParquetKind::Bool => (Physical::BOOLEAN, None),
            ParquetKind::Int => (Physical::INT64, None),
            ParquetKind::Float => (Physical::DOUBLE, None),
            ParquetKind::Str => (Physical::BYTE_ARRAY, Some(LogicalType::String)),
        };
        Type::primitive_type_builder(name, physical)
            .with_repetition(Repetition::OPTIONAL)
            .with_logical_type(logical)
            .build()
    }
}

/// Writes `rows` (flat JSON objects, all with the same fields) as one Parquet file. Errors on
/// no rows.
pub fn write(rows: &[Value], out: impl Write + Send) -> Result<(), ParquetError> {
    let first = rows
        .first()
        .and_then(|r| r.as_object())
        .ok_or_else(|| ParquetError::General("no rows to write".into()))?;
    // In the rows' own field order, as csv and json list them.
    let names: Vec<&String> = first.keys().collect();
    let kinds: Vec<ParquetKind> = names
        .iter()
        .map(|k| {
            rows.iter().fold(ParquetKind::Null, |acc, r| acc.merge(ParquetKind::of(&r[k.as_str()])))
        })
        .collect();
    let fields = names
        .iter()
        .zip(&kinds)
        .map(|(name, kind)| kind.column(name).map(Arc::new))
        .collect::<Result<Vec<_>, _>>()?;
    let schema = Arc::new(Type::group_type_builder("schema").with_fields(fields).build()?);
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(3)?))
        .build();
    let mut writer = SerializedFileWriter::new(out, schema, Arc::new(props))?;
    for group in rows.chunks(GROUP_ROWS) {
        let mut rg = writer.next_row_group()?;
        for (name, kind) in names.iter().zip(&kinds) {
            let mut col = rg
                .next_column()?
                .ok_or_else(|| ParquetError::General(format!("no column writer for {name}")))?;
            let values = group.iter().map(|r| &r[name.as_str()]);
            write_column(&mut col, *kind, values)?;
            col.close()?;
        }
        rg.close()?;
    }
    writer.close()?;
    Ok(())
}

/// Writes one column of a row group: a definition level per row (0 for null) and the values
/// that are present.
fn write_column<'v>(
    col: &mut SerializedColumnWriter<'_>,
    kind: ParquetKind,
    values: impl Iterator<Item = &'v Value>,
) -> Result<(), ParquetError> {
    let values: Vec<&Value> = values.collect();
    let defs: Vec<i16> = values.iter().map(|v| i16::from(!v.is_null())).collect();
    let present = values.iter().filter(|v| !v.is_null());
    let written = match kind {
        ParquetKind::Null => col.typed::<Int32Type>().write_batch(&[], Some(&defs), None)?,
        ParquetKind::Bool => {
            let v: Vec<bool> = present.map(|v| v.as_bool().unwrap_or_default()).collect();
            col.typed::<BoolType>().write_batch(&v, Some(&defs), None)?
        }
        ParquetKind::Int => {
            let v: Vec<i64> = present.map(|v| v.as_i64().unwrap_or_default()).collect();
            col.typed::<Int64Type>().write_batch(&v, Some(&defs), None)?
        }
        ParquetKind::Float => {
            let v: Vec<f64> = present.map(|v| v.as_f64().unwrap_or(f64::NAN)).collect();
            col.typed::<DoubleType>().write_batch(&v, Some(&defs), None)?
        }
        ParquetKind::Str => {
            let v: Vec<ByteArray> = present
                .map(|v| match v {
                    Value::String(s) => ByteArray::from(s.as_str()),
                    other => ByteArray::from(other.to_string().as_str()),
                })
                .collect();
            col.typed::<ByteArrayType>().write_batch(&v, Some(&defs), None)?
        }
    };
    debug_assert_eq!(written, values.iter().filter(|v| !v.is_null()).count());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;
    use serde_json::json;

    #[test]
    fn rows_come_back_typed_in_their_order_with_nulls() {
        let rows: Vec<Value> = (0..70_000)
            .map(|i| {
                json!({"pid": i, "wall_s": i as f64 / 4.0,
                "policy": if i % 2 == 0 { "fifo" } else { "other" }, "ok": i != 3,
                "signal": if i == 7 { json!(9) } else { json!(null) }, "never": null,
                "mixed": if i == 1 { json!(1) } else { json!(0.5) }})
            })
            .collect();
        let mut file = tempfile::tempfile().unwrap();
        write(&rows, &mut file).unwrap();
        let reader = SerializedFileReader::new(file).unwrap();
        let meta = reader.metadata();
        assert_eq!(meta.num_row_groups(), 2, "GROUP_ROWS rows per group");
        let schema = meta.file_metadata().schema_descr();
        let cols: Vec<(String, Physical)> =
            schema.columns().iter().map(|c| (c.name().to_string(), c.physical_type())).collect();
        let want = [
            ("pid", Physical::INT64),
            ("wall_s", Physical::DOUBLE),
            ("policy", Physical::BYTE_ARRAY),
            ("ok", Physical::BOOLEAN),
            ("signal", Physical::INT64),
            ("never", Physical::INT32),
            ("mixed", Physical::DOUBLE),
        ];
        assert_eq!(cols, want.map(|(n, t)| (n.to_string(), t)));
        assert_eq!(schema.column(2).logical_type_ref(), Some(&LogicalType::String));
        assert_eq!(schema.column(5).logical_type_ref(), Some(&LogicalType::Unknown));
        let got: Vec<Vec<Field>> = reader
            .get_row_iter(None)
            .unwrap()
            .map(|r| r.unwrap().get_column_iter().map(|(_, f)| f.clone()).collect())
            .collect();
        assert_eq!(got.len(), 70_000);
        for (i, row) in got.iter().enumerate() {
            assert_eq!(row[0], Field::Long(i as i64));
            assert_eq!(row[1], Field::Double(i as f64 / 4.0));
            let policy = if i % 2 == 0 { "fifo" } else { "other" };
            assert_eq!(row[2], Field::Str(policy.into()));
            assert_eq!(row[3], Field::Bool(i != 3));
            assert_eq!(row[4], if i == 7 { Field::Long(9) } else { Field::Null });
            assert_eq!(row[5], Field::Null);
            assert_eq!(row[6], Field::Double(if i == 1 { 1.0 } else { 0.5 }));
        }
    }

    #[test]
    fn a_field_of_mixed_kinds_is_written_as_text() {
        assert_eq!(ParquetKind::Int.merge(ParquetKind::Str), ParquetKind::Str);
        assert_eq!(ParquetKind::Bool.merge(ParquetKind::Int), ParquetKind::Str);
        assert_eq!(ParquetKind::Null.merge(ParquetKind::Bool), ParquetKind::Bool);
    }

    #[test]
    fn no_rows_is_an_error() {
        assert!(write(&[], Vec::new()).is_err());
    }
}
