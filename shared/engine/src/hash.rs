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

impl Default for Fnv {
    fn default() -> Self {
        Self::new()
    }
}
