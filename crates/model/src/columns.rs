//! One definition per stored figure: [`record!`](crate::record) declares a record's struct
//! and, from the same lines, a table of its plain columns ([`Column`]). The store's insert
//! and select and the report's flat export rows are derived from that table, so a new
//! per-process figure is one field here plus one migration in the store.

/// What a column holds, which fixes its SQL type and its export form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An integer, possibly NULL.
    Int,
    /// A real number.
    Real,
    /// A flag (stored 0 or 1, exported true or false).
    Bool,
    /// Text.
    Text,
    /// A set of CPUs (stored as a JSON list, exported space-separated).
    Cpus,
}

impl Kind {
    /// The SQL type of the column in the store.
    pub fn sql(self) -> &'static str {
        match self {
            Kind::Int | Kind::Bool => "INTEGER",
            Kind::Real => "REAL",
            Kind::Text | Kind::Cpus => "TEXT",
        }
    }
}

/// The value of one plain column, typed by its [`Kind`].
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnValue {
    /// An integer (None: NULL).
    Int(Option<i64>),
    /// A real number (None: NULL).
    Real(Option<f64>),
    /// A flag.
    Bool(bool),
    /// Text.
    Text(String),
    /// A set of CPUs.
    Cpus(Vec<u32>),
}

/// A Rust field type that can be a plain column.
pub trait ColumnType: Sized {
    /// What the column holds.
    const KIND: Kind;
    /// The field's value as a column value.
    fn to_column(&self) -> ColumnValue;
    /// The field's value back from a column value (None: the wrong kind or out of range).
    fn from_column(v: ColumnValue) -> Option<Self>;
}

macro_rules! int_column {
    ($($t:ty),*) => {$(
        impl ColumnType for $t {
            const KIND: Kind = Kind::Int;
            fn to_column(&self) -> ColumnValue {
                ColumnValue::Int(Some(i64::from(*self)))
            }
            fn from_column(v: ColumnValue) -> Option<Self> {
                match v {
                    ColumnValue::Int(Some(i)) => <$t>::try_from(i).ok(),
                    _ => None,
                }
            }
        }
    )*};
}
int_column!(u32, i32, i64);

/// An optional integer field: None is stored as NULL and exported empty.
macro_rules! optional_int_column {
    ($($t:ty),*) => {$(
        impl ColumnType for Option<$t> {
            const KIND: Kind = Kind::Int;
            fn to_column(&self) -> ColumnValue {
                ColumnValue::Int(self.map(i64::from))
            }
            fn from_column(v: ColumnValue) -> Option<Self> {
                match v {
                    ColumnValue::Int(Some(i)) => <$t>::try_from(i).ok().map(Some),
                    ColumnValue::Int(None) => Some(None),
                    _ => None,
                }
            }
        }
    )*};
}
optional_int_column!(i32, i64);

impl ColumnType for f64 {
    const KIND: Kind = Kind::Real;
    fn to_column(&self) -> ColumnValue {
        ColumnValue::Real(Some(*self))
    }
    fn from_column(v: ColumnValue) -> Option<Self> {
        match v {
            ColumnValue::Real(Some(x)) => Some(x),
            _ => None,
        }
    }
}

impl ColumnType for Option<f64> {
    const KIND: Kind = Kind::Real;
    fn to_column(&self) -> ColumnValue {
        ColumnValue::Real(*self)
    }
    fn from_column(v: ColumnValue) -> Option<Self> {
        match v {
            ColumnValue::Real(x) => Some(x),
            _ => None,
        }
    }
}

/// A field type held whole in one variant of [`ColumnValue`].
macro_rules! plain_column {
    ($($t:ty => $kind:ident),*) => {$(
        impl ColumnType for $t {
            const KIND: Kind = Kind::$kind;
            fn to_column(&self) -> ColumnValue {
                ColumnValue::$kind(self.clone())
            }
            fn from_column(v: ColumnValue) -> Option<Self> {
                match v {
                    ColumnValue::$kind(x) => Some(x),
                    _ => None,
                }
            }
        }
    )*};
}
plain_column!(bool => Bool, String => Text, Vec<u32> => Cpus);

/// One plain column of record `R`: its export name, its store column, and how to read it
/// from and write it into a record.
pub struct Column<R> {
    /// The field's name, also the export column's name.
    pub name: &'static str,
    /// The store's column name (differs where the field's name is an SQL keyword).
    pub db: &'static str,
    /// What it holds.
    pub kind: Kind,
    /// Reads the field.
    pub get: fn(&R) -> ColumnValue,
    /// Writes the field; false if the value is of the wrong kind or out of range.
    pub set: fn(&mut R, ColumnValue) -> bool,
}

/// Declares a record struct whose `columns { .. }` fields are plain columns, listed in
/// `COLUMNS` in declaration order, and whose `other { .. }` fields are kept by hand.
/// `field: Type => "db_name"` stores the field under another column name.
#[macro_export]
macro_rules! record {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            columns {
                $( $(#[doc = $cdoc:literal])* $col:ident : $cty:ty $(=> $db:literal)? , )*
            }
            other {
                $( $(#[$ometa:meta])* $other:ident : $oty:ty , )*
            }
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $( $(#[doc = $cdoc])* pub $col: $cty, )*
            $( $(#[$ometa])* pub $other: $oty, )*
        }

        impl $name {
            /// The plain columns, in declaration (and export) order.
            pub const COLUMNS: &'static [$crate::columns::Column<$name>] = &[
                $( $crate::columns::Column {
                    name: stringify!($col),
                    db: $crate::record!(@db $col $(, $db)?),
                    kind: <$cty as $crate::columns::ColumnType>::KIND,
                    get: |r| $crate::columns::ColumnType::to_column(&r.$col),
                    set: |r, v| match <$cty as $crate::columns::ColumnType>::from_column(v) {
                        Some(x) => { r.$col = x; true }
                        None => false,
                    },
                }, )*
            ];
        }
    };
    (@db $col:ident) => { stringify!($col) };
    (@db $col:ident, $db:literal) => { $db };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Sample;

    #[test]
    fn every_sample_column_reads_back_what_it_wrote() {
        let mut s = Sample {
            index: 3,
            group: "g".into(),
            allowed_cpus: vec![1, 2],
            exit_code: Some(-1),
            wall_s: 1.5,
            ..Default::default()
        };
        s.background = true;
        let mut back = Sample::default();
        for c in Sample::COLUMNS {
            assert!(
                (c.set)(&mut back, (c.get)(&s)),
                "column {} does not take its own value",
                c.name
            );
            assert_eq!((c.get)(&back), (c.get)(&s), "column {}", c.name);
        }
        assert_eq!(back, s);
    }

    #[test]
    fn a_column_refuses_a_value_of_another_kind() {
        let mut s = Sample::default();
        let index = Sample::COLUMNS.iter().find(|c| c.name == "index").unwrap();
        assert!(!(index.set)(&mut s, ColumnValue::Text("x".into())));
        assert!(
            !(index.set)(&mut s, ColumnValue::Int(Some(-1))),
            "a negative index is out of range for u32"
        );
        assert!(!(index.set)(&mut s, ColumnValue::Int(None)));
    }

    #[test]
    fn sample_column_names_are_unique() {
        for names in [
            Sample::COLUMNS.iter().map(|c| c.name).collect::<Vec<_>>(),
            Sample::COLUMNS.iter().map(|c| c.db).collect(),
        ] {
            let mut unique = names.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), names.len(), "{names:?}");
        }
    }
}
