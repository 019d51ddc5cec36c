//! traceingest patch: array columns given flat, as all the values back to back plus each row's
//! end offset, the layout ClickHouse sends them in. Building from these allocates nothing per
//! row, unlike `Vec<Vec<T>>`, which needs a vector for every row's array.

/// An `Array(T)` column of numbers: row `i` holds `values[offsets[i-1]..offsets[i]]` (from 0
/// for the first row). `offsets` has one entry per row and never decreases.
pub struct FlatArrays<T> {
    pub values: Vec<T>,
    pub offsets: Vec<u64>,
}

/// An `Array(String)` column, laid out as in [`FlatArrays`].
pub struct FlatStringArrays<'a> {
    pub values: Vec<&'a [u8]>,
    pub offsets: Vec<u64>,
}
