//! The tree as C2SP tlog-tiles stores it, and the hashes and proofs read
//! from it.
//!
//! A tile is up to 256 consecutive hashes of one level. Level 0 holds the
//! leaf hashes; entry `i` of level `L` is the root of the `i`-th full tile
//! of level `L-1`, that is MTH(D[i·256^L : (i+1)·256^L]). Tile `n` of level
//! `L` holds entries `n·256 ..` of that level: 256 of them when full, and in
//! a tree of `size` leaves the last tile of a level is partial, with
//! `⌊size / 256^L⌋ mod 256` entries (none: no tile).
//!
//! Storage is the caller's: it implements [`TileReader`] over its tables.
//! Any complete aligned subtree of height `h` is read from one tile of level
//! `⌊h/8⌋` (its `2^(h mod 8)` entries hashed up); any other range is split
//! as RFC 6962 §2.1 splits it, at the largest power of two below its
//! length. One computation reads each tile once.

use std::collections::BTreeMap;

use super::error::{LogError, ReadError};
use super::hash::{Hash, empty_root, node_hash, perfect_root};
use crate::limits::{LOG_TILE_HEIGHT, LOG_TILE_WIDTH, MAX_TILE_LEVEL};

/// Reads tiles from wherever the log keeps them.
pub trait TileReader {
    /// The reader's own failure (a database error, a missing row).
    type Error;

    /// The first `width` hashes (1 to 256) of tile `index` of `level`:
    /// exactly `width` hashes, or an error.
    fn tile(&mut self, level: u8, index: u64, width: u16) -> Result<Vec<Hash>, Self::Error>;
}

/// One tile of a tree: its level, its index within the level and its
/// width (256 for a full tile).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TileId {
    pub level: u8,
    pub index: u64,
    pub width: u16,
}

impl TileId {
    /// A tile at a level up to 63 with 1 to 256 hashes.
    pub fn new(level: u8, index: u64, width: u16) -> Result<TileId, LogError> {
        if level > MAX_TILE_LEVEL || width == 0 || usize::from(width) > LOG_TILE_WIDTH {
            return Err(LogError::TileInvalid);
        }
        Ok(TileId {
            level,
            index,
            width,
        })
    }

    /// Whether the tile holds all 256 hashes.
    pub fn is_full(&self) -> bool {
        usize::from(self.width) == LOG_TILE_WIDTH
    }

    /// The tile's path per tlog-tiles: `tile/<L>/<N>[.p/<W>]`, the index in
    /// zero-padded groups of three digits, all but the last prefixed `x`
    /// (`tile/0/x001/x234/067.p/12`).
    pub fn path(&self) -> String {
        let mut groups = Vec::new();
        let mut rest = self.index;
        loop {
            groups.push(rest % 1000);
            rest /= 1000;
            if rest == 0 {
                break;
            }
        }
        let mut path = format!("tile/{}", self.level);
        let last = groups.len().saturating_sub(1);
        for (i, group) in groups.iter().rev().enumerate() {
            let x = if i == last { "" } else { "x" };
            path.push_str(&format!("/{x}{group:03}"));
        }
        if !self.is_full() {
            path.push_str(&format!(".p/{}", self.width));
        }
        path
    }

    /// Parses a tile path, accepting only the one spelling [`TileId::path`]
    /// writes for it (no leading zeroes, no `.p/256`, no spare groups).
    pub fn parse(path: &str) -> Result<TileId, LogError> {
        let malformed = || LogError::TilePathMalformed;
        let rest = path.strip_prefix("tile/").ok_or_else(malformed)?;
        let (level, rest) = rest.split_once('/').ok_or_else(malformed)?;
        let level: u8 = decimal(level)
            .and_then(|l| u8::try_from(l).ok())
            .ok_or_else(malformed)?;
        let (index, width) = match rest.split_once(".p/") {
            Some((index, width)) => {
                let width = decimal(width)
                    .and_then(|w| u16::try_from(w).ok())
                    .filter(|w| (1..LOG_TILE_WIDTH as u16).contains(w))
                    .ok_or_else(malformed)?;
                (index, width)
            }
            None => (rest, LOG_TILE_WIDTH as u16),
        };
        let mut value: u64 = 0;
        let groups: Vec<&str> = index.split('/').collect();
        let last = groups.len().saturating_sub(1);
        for (i, group) in groups.iter().enumerate() {
            let digits = if i == last {
                *group
            } else {
                group.strip_prefix('x').ok_or_else(malformed)?
            };
            if digits.len() != 3 || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(malformed());
            }
            let group: u64 = digits.parse().map_err(|_| malformed())?;
            value = value
                .checked_mul(1000)
                .and_then(|v| v.checked_add(group))
                .ok_or_else(malformed)?;
        }
        let tile = TileId::new(level, value, width).map_err(|_| malformed())?;
        // Spare leading groups (`x000/067`) are another spelling.
        if tile.path() != path {
            return Err(malformed());
        }
        Ok(tile)
    }
}

/// A decimal number with no leading zeroes (`0` alone is zero).
fn decimal(text: &str) -> Option<u64> {
    let canonical = !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'));
    canonical.then(|| text.parse().ok()).flatten()
}

/// The path of a tile: [`TileId::path`] after checking the level (0 to 63)
/// and the width (1 to 256).
pub fn tile_path(level: u8, index: u64, width: u16) -> Result<String, LogError> {
    TileId::new(level, index, width).map(|tile| tile.path())
}

/// Parses a tile path: [`TileId::parse`].
pub fn parse_tile_path(path: &str) -> Result<TileId, LogError> {
    TileId::parse(path)
}

/// How many hashes level `level` has in a tree of `size` leaves:
/// `⌊size / 256^level⌋`.
fn level_len(level: u8, size: u64) -> u64 {
    size.checked_shr(LOG_TILE_HEIGHT * u32::from(level))
        .unwrap_or(0)
}

/// The width of tile `index` of `level` in a tree of `size` leaves: 256 for
/// a full tile, 1 to 255 for the partial one, `None` when the tree has no
/// such tile.
pub fn tile_width(level: u8, index: u64, size: u64) -> Option<u16> {
    if level > MAX_TILE_LEVEL {
        return None;
    }
    let entries = level_len(level, size);
    let width = LOG_TILE_WIDTH as u64;
    let full = entries / width;
    if index < full {
        Some(LOG_TILE_WIDTH as u16)
    } else if index == full && !entries.is_multiple_of(width) {
        u16::try_from(entries % width).ok()
    } else {
        None
    }
}

/// Every tile a tree of `size` leaves has, level by level, left to right.
pub fn tiles(size: u64) -> impl Iterator<Item = TileId> {
    (0..=MAX_TILE_LEVEL).flat_map(move |level| {
        let count = level_len(level, size).div_ceil(LOG_TILE_WIDTH as u64);
        (0..count).filter_map(move |index| {
            tile_width(level, index, size).map(|width| TileId {
                level,
                index,
                width,
            })
        })
    })
}

/// The partial tiles of a tree of `size` leaves, lowest level first: the
/// ones a checkpoint at that size needs beyond the full tiles.
pub fn partial_tiles(size: u64) -> Vec<TileId> {
    (0..=MAX_TILE_LEVEL)
        .filter_map(|level| {
            let entries = level_len(level, size);
            let index = entries / LOG_TILE_WIDTH as u64;
            tile_width(level, index, size)
                .filter(|width| usize::from(*width) < LOG_TILE_WIDTH)
                .map(|width| TileId {
                    level,
                    index,
                    width,
                })
        })
        .collect()
}

/// The largest power of two strictly below `n` (`n` ≥ 2): where RFC 6962
/// splits a list of `n` leaves.
pub(crate) fn split_point(n: u64) -> u64 {
    1u64 << (63 - n.saturating_sub(1).leading_zeros().min(63))
}

/// A tree of a given size over a reader, with the tiles read so far.
pub(crate) struct Tree<'r, R: TileReader> {
    reader: &'r mut R,
    size: u64,
    cache: BTreeMap<(u8, u64), Vec<Hash>>,
}

impl<'r, R: TileReader> Tree<'r, R> {
    pub(crate) fn new(reader: &'r mut R, size: u64) -> Tree<'r, R> {
        Tree {
            reader,
            size,
            cache: BTreeMap::new(),
        }
    }

    /// Entries `first .. first + count` of `level`, which lie in one tile.
    fn entries(
        &mut self,
        level: u8,
        first: u64,
        count: usize,
    ) -> Result<Vec<Hash>, ReadError<R::Error>> {
        let width = LOG_TILE_WIDTH as u64;
        let index = first / width;
        let offset = usize::try_from(first % width).map_err(|_| LogError::TileInvalid)?;
        let tile_width = tile_width(level, index, self.size).ok_or(LogError::TileInvalid)?;
        if !self.cache.contains_key(&(level, index)) {
            let hashes = self
                .reader
                .tile(level, index, tile_width)
                .map_err(ReadError::Reader)?;
            if hashes.len() != usize::from(tile_width) {
                return Err(LogError::TileInvalid.into());
            }
            self.cache.insert((level, index), hashes);
        }
        self.cache
            .get(&(level, index))
            .and_then(|tile| tile.get(offset..offset + count))
            .map(<[Hash]>::to_vec)
            .ok_or_else(|| LogError::TileInvalid.into())
    }

    /// MTH(D[lo:hi]) for `lo < hi ≤ size`.
    pub(crate) fn hash(&mut self, lo: u64, hi: u64) -> Result<Hash, ReadError<R::Error>> {
        let n = hi.checked_sub(lo).filter(|n| *n > 0 && hi <= self.size);
        let n = n.ok_or(LogError::TileInvalid)?;
        if n.is_power_of_two() && lo.is_multiple_of(n) {
            let height = n.trailing_zeros();
            let level = height / LOG_TILE_HEIGHT;
            let up = height % LOG_TILE_HEIGHT;
            let first = lo >> (level * LOG_TILE_HEIGHT);
            let level = u8::try_from(level).map_err(|_| LogError::TileInvalid)?;
            let hashes = self.entries(level, first, 1 << up)?;
            return Ok(perfect_root(&hashes).ok_or(LogError::TileInvalid)?);
        }
        let k = split_point(n);
        let left = self.hash(lo, lo + k)?;
        let right = self.hash(lo + k, hi)?;
        Ok(node_hash(&left, &right))
    }
}

/// The root of the tree of the first `size` leaves.
pub fn tree_root<R: TileReader>(reader: &mut R, size: u64) -> Result<Hash, ReadError<R::Error>> {
    if size == 0 {
        return Ok(empty_root());
    }
    Tree::new(reader, size).hash(0, size)
}

/// The inclusion proof of leaf `index` in the tree of `size` leaves
/// (RFC 6962 §2.1.1 PATH): the leaf's sibling first, the root's child last.
pub fn inclusion_proof<R: TileReader>(
    reader: &mut R,
    index: u64,
    size: u64,
) -> Result<Vec<Hash>, ReadError<R::Error>> {
    if index >= size {
        return Err(LogError::IndexOutOfRange.into());
    }
    let mut tree = Tree::new(reader, size);
    let mut path = Vec::new();
    let (mut lo, mut hi) = (0, size);
    while hi - lo > 1 {
        let k = split_point(hi - lo);
        if index < lo + k {
            path.push(tree.hash(lo + k, hi)?);
            hi = lo + k;
        } else {
            path.push(tree.hash(lo, lo + k)?);
            lo += k;
        }
    }
    path.reverse();
    Ok(path)
}

/// The consistency proof from the tree of `old` leaves to the tree of `new`
/// (RFC 6962 §2.1.2 PROOF and SUBPROOF). Empty when `old` is 0 or `new`.
pub fn consistency_proof<R: TileReader>(
    reader: &mut R,
    old: u64,
    new: u64,
) -> Result<Vec<Hash>, ReadError<R::Error>> {
    if old > new {
        return Err(LogError::SizesOutOfOrder.into());
    }
    if old == 0 || old == new {
        return Ok(Vec::new());
    }
    let mut tree = Tree::new(reader, new);
    let mut proof = Vec::new();
    let (mut lo, mut hi) = (0, new);
    // Whether the subtree being proved is a complete subtree of the old tree
    // whose root the verifier already has (SUBPROOF's `b`).
    let mut known = true;
    loop {
        let n = hi - lo;
        let m = old - lo;
        if m == n {
            if !known {
                proof.push(tree.hash(lo, hi)?);
            }
            break;
        }
        let k = split_point(n);
        if m <= k {
            proof.push(tree.hash(lo + k, hi)?);
            hi = lo + k;
        } else {
            proof.push(tree.hash(lo, lo + k)?);
            lo += k;
            known = false;
        }
    }
    proof.reverse();
    Ok(proof)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        let cases = [
            ((0, 0, 256), "tile/0/000"),
            ((0, 1_234_067, 12), "tile/0/x001/x234/067.p/12"),
            ((1, 67, 256), "tile/1/067"),
            ((2, 1000, 1), "tile/2/x001/000.p/1"),
            (
                (63, u64::MAX, 255),
                "tile/63/x018/x446/x744/x073/x709/x551/615.p/255",
            ),
        ];
        for ((level, index, width), path) in cases {
            assert_eq!(tile_path(level, index, width).unwrap(), path);
            assert_eq!(
                parse_tile_path(path),
                Ok(TileId {
                    level,
                    index,
                    width
                })
            );
        }
        for bad in [
            "tile/0/67",
            "tile/0/x000/067",
            "tile/00/067",
            "tile/0/067.p/256",
            "tile/0/067.p/0",
            "tile/0/067.p/012",
            "tile/64/000",
            "tile/0/001/067",
            "tile/0/x067",
            "tile/entries/000",
            "tile/0/x018/x446/x744/x073/x709/x551/616",
            "/tile/0/000",
            "tile/0/000/",
            "tile/0/",
        ] {
            assert_eq!(
                parse_tile_path(bad),
                Err(LogError::TilePathMalformed),
                "{bad}"
            );
        }
        assert_eq!(tile_path(64, 0, 1), Err(LogError::TileInvalid));
        assert_eq!(tile_path(0, 0, 0), Err(LogError::TileInvalid));
        assert_eq!(tile_path(0, 0, 257), Err(LogError::TileInvalid));
    }

    #[test]
    fn the_tiles_of_a_size() {
        // The example of tlog-tiles: 70,000 leaves.
        let partial = partial_tiles(70_000);
        assert_eq!(
            partial,
            vec![
                TileId {
                    level: 0,
                    index: 273,
                    width: 112
                },
                TileId {
                    level: 1,
                    index: 1,
                    width: 17
                },
                TileId {
                    level: 2,
                    index: 0,
                    width: 1
                },
            ]
        );
        let all: Vec<TileId> = tiles(70_000).collect();
        assert_eq!(all.len(), 273 + 1 + 1 + 1 + 1);
        assert_eq!(all.iter().filter(|t| t.is_full()).count(), 274);
        // 256 leaves: a full level-0 tile and a level-1 tile of width 1.
        assert_eq!(
            tiles(256).collect::<Vec<_>>(),
            vec![
                TileId {
                    level: 0,
                    index: 0,
                    width: 256
                },
                TileId {
                    level: 1,
                    index: 0,
                    width: 1
                },
            ]
        );
        assert_eq!(tiles(0).count(), 0);
        assert_eq!(tile_width(0, 1, 256), None);
        assert_eq!(tile_width(0, 0, 255), Some(255));
        assert_eq!(tile_width(7, 0, u64::MAX), Some(255));
        assert_eq!(tile_width(8, 0, u64::MAX), None);
    }

    #[test]
    fn split_points() {
        for (n, k) in [
            (2, 1),
            (3, 2),
            (4, 2),
            (5, 4),
            (8, 4),
            (9, 8),
            (u64::MAX, 1 << 63),
        ] {
            assert_eq!(split_point(n), k, "{n}");
        }
    }
}
