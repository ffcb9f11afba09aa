//! A blob read as a file, one ranged read at a time, for decoders on a blocking thread.

use std::io::{BufReader, Read, Seek, SeekFrom};
use std::ops::Range;
use std::sync::Arc;

use super::BlobStore;

/// A blob (or a range of it) as `Read + Seek`: each read is one ranged get, run on `handle`. A
/// storage error comes back as an `io::Error` whose inner error is the [`super::StorageError`]
/// ([`BlobReader::storage_error`] finds it again).
pub struct BlobReader {
    blobs: Arc<dyn BlobStore>,
    key: String,
    handle: tokio::runtime::Handle,
    at: u64,
    end: u64,
}

impl BlobReader {
    /// Reads `range` of the blob (to its end at most; `u64::MAX` for an end not known), buffered
    /// `capacity` bytes at a time.
    pub fn new(
        blobs: Arc<dyn BlobStore>,
        key: String,
        handle: tokio::runtime::Handle,
        (range, capacity): (Range<u64>, usize),
    ) -> BufReader<Self> {
        let reader = Self {
            blobs,
            key,
            handle,
            at: range.start,
            end: range.end,
        };
        BufReader::with_capacity(capacity, reader)
    }

    /// The storage error an `io::Error` from a reader carries, if it carries one.
    pub fn storage_error(e: &std::io::Error) -> Option<super::StorageError> {
        e.get_ref()?.downcast_ref::<super::StorageError>().cloned()
    }
}

impl Read for BlobReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let to = (self.at + buf.len() as u64).min(self.end);
        if to <= self.at {
            return Ok(0);
        }
        let got = self
            .handle
            .block_on(self.blobs.get_range(&self.key, self.at..to))
            .map_err(std::io::Error::other)?;
        let n = got.len().min(buf.len());
        buf[..n].copy_from_slice(&got[..n]);
        self.at += n as u64;
        if n == 0 {
            // Past the blob's end.
            self.end = self.at;
        }
        Ok(n)
    }
}

impl Seek for BlobReader {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        self.at = match to {
            SeekFrom::Start(n) => n,
            SeekFrom::Current(d) => self.at.saturating_add_signed(d),
            SeekFrom::End(d) => {
                if self.end == u64::MAX {
                    self.end = self
                        .handle
                        .block_on(self.blobs.head(&self.key))
                        .map_err(std::io::Error::other)?
                        .size;
                }
                self.end.saturating_add_signed(d)
            }
        };
        Ok(self.at)
    }
}
