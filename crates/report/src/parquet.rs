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
enum Kind {
    /// Null in every row so far.
    Null,
    Bool,
    Int,
    Float,
    /// Strings, or values of mixed kinds (written as their JSON text).
    Str,
}

impl Kind {
    fn of(v: &Value) -> Kind {
        match v {
            Value::Null => Kind::Null,
            Value::Bool(_) => Kind::Bool,
            Value::Number(n) if n.is_i64() => Kind::Int,
            Value::Number(_) => Kind::Float,
            _ => Kind::Str,
        }
    }

    fn merge(self, other: Kind) -> Kind {
        match (self, other) {
            (a, b) if a == b => a,
            (Kind::Null, b) | (b, Kind::Null) => b,
            (Kind::Int, Kind::Float) | (Kind::Float, Kind::Int) => Kind::Float,
            _ => Kind::Str,
        }
    }

    fn column(self, name: &str) -> Result<Type, ParquetError> {
        let (physical, logical) = match self {
            Kind::Null => (Physical::INT32, Some(LogicalType::Unknown)),
            Kind::Bool => (Physical::BOOLEAN, None),
            Kind::Int => (Physical::INT64, None),
            Kind::Float => (Physical::DOUBLE, None),
            Kind::Str => (Physical::BYTE_ARRAY, Some(LogicalType::String)),
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
    let kinds: Vec<Kind> = names
        .iter()
        .map(|k| rows.iter().fold(Kind::Null, |acc, r| acc.merge(Kind::of(&r[k.as_str()]))))
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
    kind: Kind,
    values: impl Iterator<Item = &'v Value>,
) -> Result<(), ParquetError> {
    let values: Vec<&Value> = values.collect();
    let defs: Vec<i16> = values.iter().map(|v| i16::from(!v.is_null())).collect();
    let present = values.iter().filter(|v| !v.is_null());
    let written = match kind {
        Kind::Null => col.typed::<Int32Type>().write_batch(&[], Some(&defs), None)?,
        Kind::Bool => {
            let v: Vec<bool> = present.map(|v| v.as_bool().unwrap_or_default()).collect();
            col.typed::<BoolType>().write_batch(&v, Some(&defs), None)?
        }
        Kind::Int => {
            let v: Vec<i64> = present.map(|v| v.as_i64().unwrap_or_default()).collect();
            col.typed::<Int64Type>().write_batch(&v, Some(&defs), None)?
        }
        Kind::Float => {
            let v: Vec<f64> = present.map(|v| v.as_f64().unwrap_or(f64::NAN)).collect();
            col.typed::<DoubleType>().write_batch(&v, Some(&defs), None)?
        }
        Kind::Str => {
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
        assert_eq!(Kind::Int.merge(Kind::Str), Kind::Str);
        assert_eq!(Kind::Bool.merge(Kind::Int), Kind::Str);
        assert_eq!(Kind::Null.merge(Kind::Bool), Kind::Bool);
    }

    #[test]
    fn no_rows_is_an_error() {
        assert!(write(&[], Vec::new()).is_err());
    }
}
