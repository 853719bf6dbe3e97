//! A vector whose clones share storage until written: what lets `advise` try many candidates
//! on one editable graph without copying the whole graph for each.
//!
//! The elements sit in fixed-size chunks behind reference counts. A clone copies one pointer
//! per chunk; a write copies only the chunk it lands in, the first time that clone writes
//! there (`Arc::make_mut`). A model that scales a few hundred kernels of a million-task
//! window so copies a few hundred chunks, not the window: at 1 GB of trace, copying the
//! whole editable graph per candidate (and the page faults of its fresh memory) was most of
//! `advise`'s time.

use std::ops::{Index, IndexMut};
use std::sync::Arc;

/// Elements per chunk (a power of two): small enough that a scattered write copies little,
/// large enough that a clone of a million elements copies a thousand pointers.
const CHUNK_BITS: u32 = 10;
const CHUNK_LEN: usize = 1 << CHUNK_BITS;
const CHUNK_MASK: usize = CHUNK_LEN - 1;

/// A growable vector of chunks shared copy-on-write between clones.
#[derive(Clone)]
pub(crate) struct CowVec<T> {
    chunks: Vec<Arc<Vec<T>>>,
    len: usize,
}

impl<T: Clone> CowVec<T> {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn get(&self, index: usize) -> Option<&T> {
        if index < self.len {
            Some(&self.chunks[index >> CHUNK_BITS][index & CHUNK_MASK])
        } else {
            None
        }
    }

    pub(crate) fn push(&mut self, value: T) {
        match self.chunks.last_mut() {
            Some(last) if last.len() < CHUNK_LEN => Arc::make_mut(last).push(value),
            _ => {
                let mut chunk = Vec::with_capacity(CHUNK_LEN);
                chunk.push(value);
                self.chunks.push(Arc::new(chunk));
            }
        }
        self.len += 1;
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        self.chunks.iter().flat_map(|chunk| chunk.iter())
    }

    /// Whether this vector is `other` unwritten: the same length and every chunk still
    /// shared (a write copies the chunk it lands in, even of an equal value).
    pub(crate) fn shares_all_with(&self, other: &CowVec<T>) -> bool {
        self.len == other.len
            && self
                .chunks
                .iter()
                .zip(&other.chunks)
                .all(|(a, b)| Arc::ptr_eq(a, b))
    }

    /// How many chunks this vector does not share with `other` (a clone it was made from):
    /// the copies its writes made. For tests.
    #[cfg(test)]
    fn chunks_not_shared_with(&self, other: &CowVec<T>) -> usize {
        self.chunks
            .iter()
            .enumerate()
            .filter(|(i, chunk)| other.chunks.get(*i).is_none_or(|o| !Arc::ptr_eq(chunk, o)))
            .count()
    }
}

impl<T: Clone> FromIterator<T> for CowVec<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> CowVec<T> {
        let mut out = CowVec {
            chunks: Vec::new(),
            len: 0,
        };
        for value in iter {
            out.push(value);
        }
        out
    }
}

impl<T> Index<usize> for CowVec<T> {
    type Output = T;

    fn index(&self, index: usize) -> &T {
        assert!(index < self.len, "index {index} out of {}", self.len);
        &self.chunks[index >> CHUNK_BITS][index & CHUNK_MASK]
    }
}

impl<T: Clone> IndexMut<usize> for CowVec<T> {
    fn index_mut(&mut self, index: usize) -> &mut T {
        assert!(index < self.len, "index {index} out of {}", self.len);
        &mut Arc::make_mut(&mut self.chunks[index >> CHUNK_BITS])[index & CHUNK_MASK]
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for CowVec<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.chunks.iter().flat_map(|chunk| chunk.iter()))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clone_shares_until_written_and_a_write_copies_one_chunk() {
        let original: CowVec<u64> = (0..5 * CHUNK_LEN as u64 + 7).collect();
        let mut copy = original.clone();
        assert_eq!(copy.chunks_not_shared_with(&original), 0);
        copy[2 * CHUNK_LEN + 3] = 99;
        copy[2 * CHUNK_LEN + 4] = 98;
        assert_eq!(copy.chunks_not_shared_with(&original), 1);
        // The original is unchanged, the copy changed only where written.
        assert_eq!(original[2 * CHUNK_LEN + 3], 2 * CHUNK_LEN as u64 + 3);
        assert_eq!(copy[2 * CHUNK_LEN + 3], 99);
        let differing = original.iter().zip(copy.iter()).filter(|(a, b)| a != b);
        assert_eq!(differing.count(), 2);
        // A push into a shared last chunk copies that chunk only.
        copy.push(1);
        assert_eq!(copy.len(), original.len() + 1);
        assert_eq!(copy.chunks_not_shared_with(&original), 2);
        assert_eq!(original.len(), 5 * CHUNK_LEN + 7);
        assert_eq!(copy.get(original.len()), Some(&1));
        assert_eq!(original.get(original.len()), None);
        let all: Vec<u64> = copy.iter().copied().collect();
        assert_eq!(all.len(), copy.len());
        assert_eq!(all[5 * CHUNK_LEN + 6], 5 * CHUNK_LEN as u64 + 6);
    }
}
