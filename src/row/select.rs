//! A batch of some of another batch's rows (`RowBatch::select`): what the flush thread spools of
//! a batch whose other rows are already inserted or dead-lettered.

use std::ops::Range;

use super::batch::RowBatch;
use super::columns::{KINDS, REGIONS};

impl RowBatch {
    /// A batch of the rows in `runs` (in ascending order, not overlapping), byte for byte as
    /// this batch holds them: each region's bytes of those rows back to back, array end
    /// offsets counted again from the new batch's first row. It has no quota ticket and no
    /// group index (as a batch read back from the spool), and is checked as one
    /// (`from_parts`); `Err` only for runs out of order or past the batch's end.
    pub fn select(&self, runs: &[Range<usize>]) -> Result<RowBatch, &'static str> {
        let mut cuts = Vec::with_capacity(runs.len());
        let (mut row, mut at) = (0, [0usize; REGIONS]);
        for r in runs {
            if r.start < row || r.end < r.start || r.end > self.len() {
                return Err("rows out of order or past the batch");
            }
            let start = self.cut_from(row, &at, r.start);
            let end = self.cut_from(r.start, &start, r.end);
            (row, at) = (r.end, end);
            cuts.push((r, start, end));
        }
        let size: usize = cuts
            .iter()
            .map(|(_, s, e)| e.iter().zip(s).map(|(e, s)| e - s).sum::<usize>())
            .sum();
        let mut data = Vec::with_capacity(size);
        let mut bounds = [0u32; REGIONS + 1];
        for i in 0..REGIONS {
            let (c, region) = (i / 2, &self.data()[self.region(i)]);
            let offsets = i % 2 == 0 && KINDS[c].is_array();
            // Elements of the rows selected so far: where the next run's start in the tail.
            let mut elems = 0u64;
            for (r, s, e) in &cuts {
                let bytes = &region[s[i]..e[i]];
                if !offsets {
                    data.extend_from_slice(bytes);
                    continue;
                }
                let before = self.elems_before(c, r.start) as u64;
                for o in bytes.chunks_exact(8) {
                    let o = u64::from_le_bytes(o.try_into().expect("8 bytes"));
                    data.extend_from_slice(&(o - before + elems).to_le_bytes());
                }
                elems += self.elems_before(c, r.end) as u64 - before;
            }
            bounds[i + 1] = u32::try_from(data.len()).map_err(|_| "a batch over 4 GiB")?;
        }
        let rows = runs.iter().map(ExactSizeIterator::len).sum();
        RowBatch::from_parts(rows, bounds, data)
    }
}
