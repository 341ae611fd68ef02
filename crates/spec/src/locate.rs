//! Finds keys in the spec's text itself, for checks against the machine that run after
//! validation and still want to point at the line they are about.

use crate::validate::Location;
use toml::de::{DeTable, DeValue};

/// Every key named one of `names`, anywhere in the document (tables, arrays of tables, inline
/// tables), with the span of the key and its value, in the order they appear.
pub(crate) fn keys<'a>(src: &'a str, names: &[&str]) -> Vec<(Location, DeValue<'a>, Location)> {
    fn walk<'a>(t: &DeTable<'a>, names: &[&str], out: &mut Vec<(Location, DeValue<'a>, Location)>) {
        for (k, v) in t {
            if names.contains(&k.get_ref().as_ref()) {
                out.push((k.span(), v.get_ref().clone(), v.span()));
            }
            value(v.get_ref(), names, out);
        }
    }
    fn value<'a>(
        v: &DeValue<'a>,
        names: &[&str],
        out: &mut Vec<(Location, DeValue<'a>, Location)>,
    ) {
        match v {
            DeValue::Table(t) => walk(t, names, out),
            DeValue::Array(a) => a.iter().for_each(|x| value(x.get_ref(), names, out)),
            _ => {}
        }
    }
    let Ok(doc) = DeTable::parse(src) else { return Vec::new() };
    let mut out = Vec::new();
    walk(doc.get_ref(), names, &mut out);
    out.sort_by_key(|(k, _, _)| k.start);
    out
}

/// The integer a value holds, if it is one (in any radix TOML allows).
pub(crate) fn int(v: &DeValue) -> Option<i64> {
    match v {
        DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix()).ok(),
        _ => None,
    }
}

/// The span of the first of `names` whose value is, or is an array holding, `want`; else of
/// the first of `names` at all.
pub(crate) fn int_value(src: &str, names: &[&str], want: i64) -> Option<Location> {
    let found = keys(src, names);
    for (_, v, span) in &found {
        match v {
            DeValue::Array(a) => {
                if let Some(x) = a.iter().find(|x| int(x.get_ref()) == Some(want)) {
                    return Some(x.span());
                }
            }
            v if int(v) == Some(want) => return Some(span.clone()),
            _ => {}
        }
    }
    found.first().map(|(k, _, _)| k.clone())
}
