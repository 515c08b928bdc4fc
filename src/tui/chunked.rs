//! A sequence shared between snapshots and changed one element at a time:
//! held in chunks of [`CHUNK`], so that replacing one element copies one
//! chunk and the list of chunks, not the whole sequence. The lead's board
//! of 10,000 tasks changes a task at a time; copying 10,000 `Arc`s on each
//! change touched 10,000 allocations (a quarter of the lead's CPU per task
//! update).

use std::sync::Arc;

/// Elements per chunk (8 in tests, so that the board tests' few dozen
/// tasks span several chunks).
const CHUNK: usize = if cfg!(test) { 8 } else { 256 };

/// Every chunk holds [`CHUNK`] elements but the last, so element `i` is in
/// chunk `i / CHUNK`.
#[derive(Debug)]
pub struct Chunked<T> {
    chunks: Arc<[Arc<[T]>]>,
    len: usize,
}

impl<T> Clone for Chunked<T> {
    fn clone(&self) -> Self {
        Chunked {
            chunks: self.chunks.clone(),
            len: self.len,
        }
    }
}

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked {
            chunks: Arc::from(Vec::new()),
            len: 0,
        }
    }
}

impl<T: Clone> Chunked<T> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn get(&self, i: usize) -> Option<&T> {
        self.chunks.get(i / CHUNK)?.get(i % CHUNK)
    }

    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.chunks.iter().flat_map(|c| c.iter())
    }

    /// This sequence with element `i` replaced by `value` (`None` past the
    /// end): one chunk copied, the others shared.
    pub fn with(&self, i: usize, value: T) -> Option<Chunked<T>> {
        let mut chunk: Vec<T> = self.chunks.get(i / CHUNK)?.to_vec();
        *chunk.get_mut(i % CHUNK)? = value;
        let mut chunks: Vec<Arc<[T]>> = self.chunks.to_vec();
        chunks[i / CHUNK] = chunk.into();
        Some(Chunked {
            chunks: chunks.into(),
            len: self.len,
        })
    }

    /// Whether `other` is this very sequence (shared, not an equal copy).
    pub fn ptr_eq(&self, other: &Chunked<T>) -> bool {
        Arc::ptr_eq(&self.chunks, &other.chunks)
    }
}

impl<T> FromIterator<T> for Chunked<T> {
    fn from_iter<I: IntoIterator<Item = T>>(items: I) -> Self {
        let mut chunks: Vec<Arc<[T]>> = Vec::new();
        let mut len = 0;
        let mut chunk = Vec::with_capacity(CHUNK);
        for item in items {
            chunk.push(item);
            len += 1;
            if chunk.len() == CHUNK {
                chunks.push(std::mem::replace(&mut chunk, Vec::with_capacity(CHUNK)).into());
            }
        }
        if !chunk.is_empty() {
            chunks.push(chunk.into());
        }
        Chunked {
            chunks: chunks.into(),
            len,
        }
    }
}

impl<T: PartialEq + Clone> PartialEq for Chunked<T> {
    fn eq(&self, other: &Self) -> bool {
        self.ptr_eq(other) || (self.len == other.len && self.iter().eq(other.iter()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replaced_element_shares_every_other_chunk_and_reads_like_a_vec() {
        for n in [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 7] {
            let v: Vec<usize> = (0..n).collect();
            let c: Chunked<usize> = v.iter().copied().collect();
            assert_eq!(
                (c.len(), c.iter().copied().collect::<Vec<_>>()),
                (n, v.clone())
            );
            assert_eq!(c.get(n), None);
            for i in [0, n / 2, n.saturating_sub(1)]
                .into_iter()
                .filter(|&i| i < n)
            {
                let d = c.with(i, usize::MAX).unwrap();
                let mut w = v.clone();
                w[i] = usize::MAX;
                assert_eq!(d.iter().copied().collect::<Vec<_>>(), w);
                assert_eq!(d.get(i), Some(&usize::MAX));
                assert_ne!(d, c);
                let shared = (0..c.chunks.len())
                    .filter(|&k| Arc::ptr_eq(&c.chunks[k], &d.chunks[k]))
                    .count();
                assert_eq!(
                    shared,
                    c.chunks.len() - 1,
                    "only chunk {} copied",
                    i / CHUNK
                );
            }
            assert!(c.with(n, 0).is_none());
            assert_eq!(c, v.iter().copied().collect::<Chunked<_>>());
        }
    }
}
