//! The adaptive plan's blob: its leaves as they travel between the controller and the
//! processors.

use super::*;

pub(super) const MAGIC: &[u8; 8] = b"TSRADPT\n";

/// Bytes of a saved adaptive plan before its leaves: magic, version, sizes, mosaic size, held
/// rows of blocks, blend, library version and leaf count.
pub(super) const HEADER_BYTES: usize = 8 + 4 + 6 * 4 + 1 + 8 + 4;

/// Bytes of one saved leaf: x, y, size, tile, transform, colour.
pub(super) const LEAF_BYTES: usize = 4 * 4 + 1 + 3;

impl AdaptivePlan {
    /// Serializes the plan: magic, format version, header (sizes, the mosaic's size, the rows of
    /// blocks held, blend, library version, leaf count), the leaves and a digest.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_BYTES + self.leaves.len() * LEAF_BYTES + 8);
        out.extend_from_slice(MAGIC);
        let held = self.block_row_range();
        for v in [
            ADAPTIVE_PLAN_FORMAT_VERSION,
            self.sizes.min,
            self.sizes.max,
            self.width,
            self.height,
            held.start,
            held.len() as u32,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.push(self.blend);
        out.extend_from_slice(&self.library_version.to_le_bytes());
        out.extend_from_slice(&(self.leaves.len() as u32).to_le_bytes());
        for leaf in &self.leaves {
            for v in [leaf.x, leaf.y, leaf.size, leaf.tile] {
                out.extend_from_slice(&v.to_le_bytes());
            }
            out.push(leaf.transform.as_u8());
            out.extend_from_slice(&leaf.colour);
        }
        let d = Fnv::digest(&out);
        out.extend_from_slice(&d.to_le_bytes());
        out
    }

    /// Loads a plan saved by [`AdaptivePlan::to_bytes`], checking all of it: every leaf is a
    /// square of the plan's sizes on the quadtree's grid, inside the rows of blocks held, and
    /// the leaves cover those rows.
    pub fn from_bytes(bytes: &[u8]) -> Result<AdaptivePlan, Error> {
        let bad = |m: &str| Error::BadPlan(format!("adaptive plan: {m}"));
        if !Self::is_blob(bytes) {
            return Err(bad("not an adaptive plan (bad magic)"));
        }
        if bytes.len() < HEADER_BYTES + 8 {
            return Err(bad("truncated"));
        }
        let (body, tail) = bytes.split_at(bytes.len() - 8);
        let u32_at = |at: usize| u32::from_le_bytes(body[at..at + 4].try_into().expect("4 bytes"));
        let version = u32_at(8);
        if version != ADAPTIVE_PLAN_FORMAT_VERSION {
            return Err(bad(&format!(
                "format version {version}, this build reads {ADAPTIVE_PLAN_FORMAT_VERSION}"
            )));
        }
        if Fnv::digest(body) != u64::from_le_bytes(tail.try_into().expect("8 bytes")) {
            return Err(bad("digest mismatch: the plan is corrupt or truncated"));
        }
        let [min, max, width, height, first_row, count] = [12, 16, 20, 24, 28, 32].map(u32_at);
        let blend = body[36];
        let library_version = u64::from_le_bytes(body[37..45].try_into().expect("8 bytes"));
        let n = u32_at(45) as usize;
        if Some(body.len()) != n.checked_mul(LEAF_BYTES).map(|b| b + HEADER_BYTES) {
            return Err(bad("the leaf count does not match the plan's length"));
        }
        let sizes = AdaptiveSizes::new(min, max).map_err(|e| bad(&e.to_string()))?;
        if width == 0
            || height == 0
            || !width.is_multiple_of(max)
            || !height.is_multiple_of(max)
            || u64::from(first_row) + u64::from(count) > u64::from(height / max)
            || blend > 100
        {
            return Err(bad("inconsistent header"));
        }
        let mut leaves = Vec::with_capacity(n);
        let mut area = 0u64;
        for raw in body[HEADER_BYTES..].chunks_exact(LEAF_BYTES) {
            let v = |i: usize| u32::from_le_bytes(raw[i * 4..i * 4 + 4].try_into().expect("4"));
            let (x, y, size, tile) = (v(0), v(1), v(2), v(3));
            let transform = Transform::from_u8(raw[16])
                .ok_or_else(|| bad("a leaf's transform is not one of the 8 (0 to 7)"))?;
            if !sizes.holds(size)
                || !x.is_multiple_of(size)
                || !y.is_multiple_of(size)
                || u64::from(x) + u64::from(size) > u64::from(width)
            {
                return Err(bad(&format!(
                    "a leaf of {size} px at {x}, {y} is not a square of the quadtree"
                )));
            }
            area += u64::from(size) * u64::from(size);
            leaves.push(Leaf {
                x,
                y,
                size,
                tile,
                transform,
                colour: [raw[17], raw[18], raw[19]],
            });
        }
        let row_starts = index_rows(&leaves, max, first_row..first_row + count)
            .map_err(|e| bad(&e.to_string()))?;
        if area != u64::from(count) * u64::from(max) * u64::from(width) {
            return Err(bad("the leaves do not cover the rows of blocks held"));
        }
        Ok(AdaptivePlan {
            sizes,
            width,
            height,
            blend,
            library_version,
            first_row,
            leaves,
            row_starts,
        })
    }

    /// Whether `bytes` hold an adaptive plan (by their magic), rather than a uniform one.
    pub fn is_blob(bytes: &[u8]) -> bool {
        bytes.starts_with(MAGIC)
    }
}
