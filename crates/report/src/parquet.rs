//! The Parquet export: the same flat rows as every other format, as one table with a typed
//! column per field (Arrow's types inferred from the rows' JSON values: integers, floats,
//! strings, booleans), in the order the other formats list them, zstd-compressed.

use arrow_schema::{ArrowError, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use std::io::Write;
use std::sync::Arc;

/// Rows per record batch (and row group page run): bounded memory for large exports.
const BATCH_ROWS: usize = 8192;

/// Writes `rows` (flat JSON objects, all with the same fields) as one Parquet file. A field
/// with no value in any row is of Arrow's Null type. Errors on no rows.
pub fn write(rows: &[serde_json::Value], out: impl Write + Send) -> Result<(), ArrowError> {
    let first = rows
        .first()
        .and_then(|r| r.as_object())
        .ok_or_else(|| ArrowError::InvalidArgumentError("no rows to write".into()))?;
    let inferred =
        arrow_json::reader::infer_json_schema_from_iterator(rows.iter().map(Ok::<_, ArrowError>))?;
    // In the rows' own field order, as csv and json list them.
    let fields: Vec<Arc<Field>> = first
        .keys()
        .map(|k| inferred.field_with_name(k).map(|f| Arc::new(f.clone())))
        .collect::<Result<_, _>>()?;
    let schema = Arc::new(Schema::new(fields));
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(3)?))
        .build();
    let mut writer = ArrowWriter::try_new(out, schema.clone(), Some(props))
        .map_err(|e| ArrowError::ExternalError(Box::new(e)))?;
    let mut decoder =
        arrow_json::ReaderBuilder::new(schema).with_batch_size(BATCH_ROWS).build_decoder()?;
    for chunk in rows.chunks(BATCH_ROWS) {
        decoder.serialize(chunk)?;
        if let Some(batch) = decoder.flush()? {
            writer.write(&batch).map_err(|e| ArrowError::ExternalError(Box::new(e)))?;
        }
    }
    writer.close().map_err(|e| ArrowError::ExternalError(Box::new(e)))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, Int64Type};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use serde_json::json;

    #[test]
    fn rows_come_back_typed_in_their_order_with_nulls() {
        let rows: Vec<serde_json::Value> = (0..10_000)
            .map(|i| json!({"pid": i, "wall_s": i as f64 / 4.0, "policy": if i % 2 == 0 { "fifo" } else { "other" }, "ok": i != 3, "signal": if i == 7 { json!(9) } else { json!(null) }, "never": null}))
            .collect();
        let mut file = tempfile::tempfile().unwrap();
        write(&rows, &mut file).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(file).unwrap().build().unwrap();
        let batches: Vec<_> = reader.map(Result::unwrap).collect();
        let schema = batches[0].schema();
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, ["pid", "wall_s", "policy", "ok", "signal", "never"]);
        assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 10_000);
        // Row by row across batches (the file holds several: BATCH_ROWS each).
        let pid: Vec<i64> = batches
            .iter()
            .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
            .collect();
        let wall: Vec<f64> = batches
            .iter()
            .flat_map(|b| b.column(1).as_primitive::<Float64Type>().values().to_vec())
            .collect();
        let policy: Vec<String> = batches
            .iter()
            .flat_map(|b| {
                b.column(2)
                    .as_string::<i32>()
                    .iter()
                    .map(|v| v.unwrap().to_string())
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(pid, (0..10_000).collect::<Vec<i64>>());
        assert_eq!(
            (wall[8193], policy[8193].as_str(), policy[8192].as_str()),
            (8193.0 / 4.0, "other", "fifo")
        );
        let first = &batches[0];
        assert!(
            first.column(4).is_null(0) && first.column(4).as_primitive::<Int64Type>().value(7) == 9
        );
        assert!(!first.column(3).as_boolean().value(3) && first.column(3).as_boolean().value(4));
        let never: usize = batches.iter().map(|b| b.column(5).logical_null_count()).sum();
        assert_eq!(never, 10_000);
    }

    #[test]
    fn no_rows_is_an_error() {
        assert!(write(&[], Vec::new()).is_err());
    }
}
