//! A small, fixed, platform-independent 64-bit hash (FNV-1a) for content digests and identities.
//! Never seeded from the clock, so digests are stable across runs and machines.

#[derive(Clone, Copy)]
pub struct Fnv(u64);

impl Fnv {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;

    pub fn new() -> Self {
        Fnv(Self::OFFSET)
    }

    pub fn with_seed(seed: u64) -> Self {
        let mut h = Self::new();
        h.update(&seed.to_le_bytes());
        h
    }

    #[inline]
    pub fn update(&mut self, bytes: &[u8]) {
        // Eight bytes per step: FNV-1a on 64-bit words, then a final avalanche, is far faster on
        // large blobs than byte-wise FNV and just as deterministic.
        let mut h = self.0;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            h ^= u64::from_le_bytes(c.try_into().expect("8 bytes"));
            h = h.wrapping_mul(Self::PRIME);
            h ^= h >> 29;
        }
        for &b in chunks.remainder() {
            h ^= b as u64;
            h = h.wrapping_mul(Self::PRIME);
        }
        self.0 = h;
    }

    pub fn finish(&self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }

    pub fn digest(bytes: &[u8]) -> u64 {
        let mut h = Self::new();
        h.update(bytes);
        h.finish()
    }

    pub fn digest_seeded(bytes: &[u8], seed: u64) -> u64 {
        let mut h = Self::with_seed(seed);
        h.update(bytes);
        h.finish()
    }
}

/// [`Fnv::digest`] of bytes that come in parts of any length: equal to the digest of them all
/// at once (the hash takes eight bytes a step, so parts are joined at word boundaries).
#[derive(Default)]
pub struct FnvStream {
    fnv: Fnv,
    /// The last part's bytes past its last whole word, fewer than eight.
    carry: Vec<u8>,
}

impl FnvStream {
    pub fn update(&mut self, mut bytes: &[u8]) {
        if !self.carry.is_empty() {
            let take = (8 - self.carry.len()).min(bytes.len());
            self.carry.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.carry.len() < 8 {
                return;
            }
            self.fnv.update(&self.carry);
            self.carry.clear();
        }
        let whole = bytes.len() / 8 * 8;
        self.fnv.update(&bytes[..whole]);
        self.carry.extend_from_slice(&bytes[whole..]);
    }

    pub fn finish(mut self) -> u64 {
        let carry = std::mem::take(&mut self.carry);
        self.fnv.update(&carry);
        self.fnv.finish()
    }
}

impl Default for Fnv {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_in_any_parts_digests_as_the_whole() {
        let bytes: Vec<u8> = (0..1000u32).map(|i| (i * 7 + i / 13) as u8).collect();
        let whole = Fnv::digest(&bytes);
        for cuts in [
            vec![],
            vec![1],
            vec![3, 5, 8, 17],
            vec![7, 7, 7, 990],
            vec![999],
        ] {
            let mut stream = FnvStream::default();
            let mut at = 0;
            for cut in cuts {
                let end = (at + cut).min(bytes.len());
                stream.update(&bytes[at..end]);
                at = end;
            }
            stream.update(&bytes[at..]);
            assert_eq!(stream.finish(), whole);
        }
    }
}
