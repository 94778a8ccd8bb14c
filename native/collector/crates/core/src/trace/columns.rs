//! Dictionary-encoded string columns ([`DictColumn`]) and the Arrow column codecs the writer,
//! the reader and the allocation-site tables (alloc.rs) share. Below all three: it imports
//! none of them.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef, DictionaryArray, Int16Array, Int8Array, RecordBatch, StringArray};
use arrow_schema::DataType;

use super::TraceError;

// ---------------------------------------------------------------------------------------------
// Dictionary columns
// ---------------------------------------------------------------------------------------------

/// A dictionary-encoded string column: `values[keys[i]]` is row i.
///
/// Equality compares the decoded strings, not the keys.
#[derive(Clone, Debug, Default)]
pub struct DictColumn {
    pub values: Vec<String>,
    pub keys: Vec<u16>,
    index: HashMap<String, u16>,
}

impl DictColumn {
    pub fn new() -> Self {
        Self::default()
    }

    /// The key of `s`, adding it to the dictionary if new.
    pub fn intern(&mut self, s: &str) -> u16 {
        if let Some(&k) = self.index.get(s) {
            return k;
        }
        let k = u16::try_from(self.values.len()).expect("dictionary with more than 65535 values");
        self.values.push(s.to_string());
        self.index.insert(s.to_string(), k);
        k
    }

    pub fn push(&mut self, s: &str) {
        let k = self.intern(s);
        self.keys.push(k);
    }

    /// Appends a row by key (the key must come from [`DictColumn::intern`]).
    pub fn push_key(&mut self, k: u16) {
        debug_assert!((k as usize) < self.values.len());
        self.keys.push(k);
    }

    pub fn get(&self, row: usize) -> &str {
        &self.values[self.keys[row] as usize]
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        self.keys.iter().map(move |&k| self.values[k as usize].as_str())
    }

    /// Builds a column from decoded values and keys (used by the reader).
    pub fn from_parts(values: Vec<String>, keys: Vec<u16>) -> Self {
        let index = values.iter().enumerate().map(|(i, v)| (v.clone(), i as u16)).collect();
        DictColumn { values, keys, index }
    }
}

impl PartialEq for DictColumn {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl<'a> FromIterator<&'a str> for DictColumn {
    fn from_iter<T: IntoIterator<Item = &'a str>>(iter: T) -> Self {
        let mut c = DictColumn::new();
        for s in iter {
            c.push(s);
        }
        c
    }
}

// ---- column helpers -------------------------------------------------------------------------

macro_rules! prim {
    ($name:ident, $ty:ty, $arrow:ty) => {
        pub fn $name(batch: &RecordBatch, col: &str) -> Vec<$ty> {
            batch
                .column_by_name(col)
                .unwrap_or_else(|| panic!("no column {col}"))
                .as_primitive::<$arrow>()
                .values()
                .to_vec()
        }
    };
}
prim!(col_u64, u64, UInt64Type);
prim!(col_u32, u32, UInt32Type);
prim!(col_u16, u16, UInt16Type);
prim!(col_i64, i64, Int64Type);
prim!(col_i32, i32, Int32Type);
prim!(col_i16, i16, Int16Type);
prim!(col_i8, i8, Int8Type);
prim!(col_f64, f64, Float64Type);

/// A utf8 column; nulls become `None`.
pub fn col_str(batch: &RecordBatch, col: &str) -> Vec<Option<String>> {
    let a = batch.column_by_name(col).unwrap_or_else(|| panic!("no column {col}")).as_string::<i32>();
    (0..a.len()).map(|i| if a.is_null(i) { None } else { Some(a.value(i).to_string()) }).collect()
}

/// A dictionary column decoded to a [`DictColumn`].
pub fn col_dict(batch: &RecordBatch, col: &str) -> DictColumn {
    let a = batch.column_by_name(col).unwrap_or_else(|| panic!("no column {col}"));
    let (keys, values): (Vec<u16>, ArrayRef) = match a.data_type() {
        DataType::Dictionary(k, _) if **k == DataType::Int8 => {
            let d = a.as_dictionary::<Int8Type>();
            (d.keys().values().iter().map(|&k| k as u16).collect(), d.values().clone())
        }
        DataType::Dictionary(k, _) if **k == DataType::Int16 => {
            let d = a.as_dictionary::<Int16Type>();
            (d.keys().values().iter().map(|&k| k as u16).collect(), d.values().clone())
        }
        other => panic!("column {col} is {other}, not a dictionary"),
    };
    let values = values.as_string::<i32>();
    let values: Vec<String> = (0..values.len()).map(|i| values.value(i).to_string()).collect();
    DictColumn::from_parts(values, keys)
}

// ---- dictionary columns written ----------------------------------------------------------

/// A Dictionary<Int8, Utf8> column (also the allocation tables', trace/alloc.rs).
pub(super) fn dict8(col: &DictColumn, table: &str, column: &str) -> Result<ArrayRef, TraceError> {
    if col.values.len() > 128 {
        return Err(TraceError::Invalid(format!(
            "{table}.{column}: {} distinct strings do not fit a Dictionary<Int8, Utf8>",
            col.values.len()
        )));
    }
    let keys = Int8Array::from_iter_values(col.keys.iter().map(|&k| k as i8));
    let values = Arc::new(StringArray::from_iter_values(col.values.iter()));
    Ok(Arc::new(DictionaryArray::<Int8Type>::try_new(keys, values)?))
}

pub(super) fn dict16(col: &DictColumn, table: &str, column: &str) -> Result<ArrayRef, TraceError> {
    if col.values.len() > i16::MAX as usize + 1 {
        return Err(TraceError::Invalid(format!(
            "{table}.{column}: {} distinct strings do not fit a Dictionary<Int16, Utf8>",
            col.values.len()
        )));
    }
    let keys = Int16Array::from_iter_values(col.keys.iter().map(|&k| k as i16));
    let values = Arc::new(StringArray::from_iter_values(col.values.iter()));
    Ok(Arc::new(DictionaryArray::<Int16Type>::try_new(keys, values)?))
}
