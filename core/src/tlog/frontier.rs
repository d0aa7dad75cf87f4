//! Appending: the right edge of the tree as a compact range.
//!
//! A tree of `size` leaves is, left to right, one complete subtree for each
//! set bit of `size`, largest first. The [`Frontier`] keeps their roots: the
//! tree's root is them folded from the right, and one more leaf merges the
//! subtrees of equal height it completes. Each merge that completes a
//! subtree of height `8·L` (L ≥ 1) completes entry of level `L` of the
//! tiles, which [`Frontier::push`] returns for the caller to store.

use super::error::{LogError, ReadError};
use super::hash::{Hash, empty_root, node_hash};
use super::tiles::{TileReader, Tree};
use crate::limits::LOG_TILE_HEIGHT;

/// The version byte of [`Frontier::to_bytes`].
const FRONTIER_FORMAT: u8 = 1;

/// A hash of level ≥ 1 of the tiles, completed by a leaf: entry `index` of
/// `level`, the root of leaves `index·256^level .. (index+1)·256^level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TileEntry {
    pub level: u8,
    pub index: u64,
    pub hash: Hash,
}

/// The size of a tree and the roots of its complete subtrees, largest
/// first: everything needed to append a leaf and to compute the root.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Frontier {
    size: u64,
    roots: Vec<Hash>,
}

impl Frontier {
    /// The frontier of the empty tree.
    pub fn new() -> Frontier {
        Frontier::default()
    }

    /// How many leaves the tree has.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The tree's root (RFC 6962 MTH), the empty tree's for size 0.
    pub fn root(&self) -> Hash {
        let mut roots = self.roots.iter().rev();
        let Some(last) = roots.next() else {
            return empty_root();
        };
        roots.fold(*last, |right, left| node_hash(left, &right))
    }

    /// Appends a leaf by its hash (its level-0 tile entry, index
    /// `size() - 1` afterwards). Returns the tile entries of level ≥ 1 it
    /// completes, lowest level first.
    pub fn push(&mut self, leaf: Hash) -> Result<Vec<TileEntry>, LogError> {
        let size = self.size.checked_add(1).ok_or(LogError::LogFull)?;
        let mut hash = leaf;
        let mut height: u32 = 0;
        let mut entries = Vec::new();
        while self.size.checked_shr(height).unwrap_or(0) & 1 == 1 {
            let left = self.roots.pop().ok_or(LogError::FrontierMalformed)?;
            hash = node_hash(&left, &hash);
            height += 1;
            if height.is_multiple_of(LOG_TILE_HEIGHT) {
                entries.push(TileEntry {
                    level: u8::try_from(height / LOG_TILE_HEIGHT)
                        .map_err(|_| LogError::FrontierMalformed)?,
                    index: (size >> height) - 1,
                    hash,
                });
            }
        }
        self.roots.push(hash);
        self.size = size;
        Ok(entries)
    }

    /// The frontier of the first `size` leaves of a stored tree.
    pub fn read<R: TileReader>(reader: &mut R, size: u64) -> Result<Frontier, ReadError<R::Error>> {
        let mut tree = Tree::new(reader, size);
        let mut roots = Vec::new();
        let mut lo = 0u64;
        for height in (0..64).rev() {
            let span = 1u64 << height;
            if size & span != 0 {
                roots.push(tree.hash(lo, lo + span)?);
                lo += span;
            }
        }
        Ok(Frontier { size, roots })
    }

    /// The stored form: a version byte (1), the size as 8 bytes big-endian,
    /// and the roots, 32 bytes each, largest subtree first.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(9 + 32 * self.roots.len());
        bytes.push(FRONTIER_FORMAT);
        bytes.extend_from_slice(&self.size.to_be_bytes());
        for root in &self.roots {
            bytes.extend_from_slice(root);
        }
        bytes
    }

    /// Reads [`Frontier::to_bytes`]'s form back, refusing any other bytes:
    /// another version, or not one root per set bit of the size.
    pub fn from_bytes(bytes: &[u8]) -> Result<Frontier, LogError> {
        let malformed = || LogError::FrontierMalformed;
        let (version, rest) = bytes.split_first().ok_or_else(malformed)?;
        let (size, roots) = rest.split_at_checked(8).ok_or_else(malformed)?;
        let size = u64::from_be_bytes(size.try_into().map_err(|_| malformed())?);
        if *version != FRONTIER_FORMAT || roots.len() != 32 * size.count_ones() as usize {
            return Err(malformed());
        }
        let roots = roots
            .chunks_exact(32)
            .map(|chunk| Hash::try_from(chunk).map_err(|_| malformed()))
            .collect::<Result<Vec<Hash>, LogError>>()?;
        Ok(Frontier { size, roots })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tlog::hash::leaf_hash;

    #[test]
    fn small_trees() {
        let leaves: Vec<Hash> = (0u8..4).map(|i| leaf_hash(&[i])).collect();
        let mut frontier = Frontier::new();
        assert_eq!(frontier.root(), empty_root());
        frontier.push(leaves[0]).unwrap();
        assert_eq!(frontier.root(), leaves[0]);
        frontier.push(leaves[1]).unwrap();
        let ab = node_hash(&leaves[0], &leaves[1]);
        assert_eq!(frontier.root(), ab);
        frontier.push(leaves[2]).unwrap();
        assert_eq!(frontier.root(), node_hash(&ab, &leaves[2]));
        frontier.push(leaves[3]).unwrap();
        assert_eq!(
            frontier.root(),
            node_hash(&ab, &node_hash(&leaves[2], &leaves[3]))
        );
        assert_eq!(frontier.size(), 4);
    }

    #[test]
    fn tile_entries_complete_at_256_leaves() {
        let mut frontier = Frontier::new();
        let mut completed = Vec::new();
        for i in 0u32..512 {
            completed.extend(frontier.push(leaf_hash(&i.to_be_bytes())).unwrap());
        }
        assert_eq!(
            completed
                .iter()
                .map(|e| (e.level, e.index))
                .collect::<Vec<_>>(),
            vec![(1, 0), (1, 1)]
        );
    }

    #[test]
    fn bytes_round_trip_and_refuse_others() {
        let mut frontier = Frontier::new();
        for i in 0u8..11 {
            frontier.push(leaf_hash(&[i])).unwrap();
        }
        let bytes = frontier.to_bytes();
        assert_eq!(bytes.len(), 9 + 3 * 32);
        assert_eq!(Frontier::from_bytes(&bytes), Ok(frontier.clone()));
        assert_eq!(
            Frontier::from_bytes(&Frontier::new().to_bytes()),
            Ok(Frontier::new())
        );
        let mut version = bytes.clone();
        version[0] = 2;
        let mut size = bytes.clone();
        size[8] = 12;
        for bad in [
            &[][..],
            &bytes[..8],
            &bytes[..bytes.len() - 1],
            &[bytes.clone(), vec![0; 32]].concat(),
            &version,
            &size,
        ] {
            assert_eq!(Frontier::from_bytes(bad), Err(LogError::FrontierMalformed));
        }
    }

    #[test]
    fn a_full_log_refuses_a_leaf() {
        let mut frontier = Frontier {
            size: u64::MAX,
            roots: vec![[0; 32]; 64],
        };
        assert_eq!(frontier.push([1; 32]), Err(LogError::LogFull));
    }
}
