//! The record log's laws: a frontier and the tiles it completes agree with
//! RFC 6962 at every size; generated proofs verify and fail when anything
//! they bind is changed; leaves are read back only in their canonical form.

use std::collections::BTreeMap;
use std::convert::Infallible;

use mandate_core::tlog::{
    Frontier, Hash, LogError, ReadError, TileReader, consistency_proof, empty_root,
    inclusion_proof, leaf_hash, node_hash, tree_root, verify_consistency, verify_inclusion,
};
use proptest::prelude::*;

/// Tiles kept in memory, filled only from what `Frontier::push` returns
/// (and the leaf hashes, which are the level-0 entries).
#[derive(Default)]
struct MemoryTiles {
    entries: BTreeMap<u8, Vec<Hash>>,
    frontier: Frontier,
    reads: usize,
}

impl MemoryTiles {
    fn push(&mut self, leaf: Hash) {
        self.entries.entry(0).or_default().push(leaf);
        for entry in self.frontier.push(leaf).unwrap() {
            let level = self.entries.entry(entry.level).or_default();
            assert_eq!(level.len() as u64, entry.index, "entries arrive in order");
            level.push(entry.hash);
        }
    }
}

impl TileReader for MemoryTiles {
    type Error = Infallible;

    fn tile(&mut self, level: u8, index: u64, width: u16) -> Result<Vec<Hash>, Infallible> {
        self.reads += 1;
        let start = index as usize * 256;
        Ok(self.entries[&level][start..start + width as usize].to_vec())
    }
}

/// RFC 6962's MTH, straight from its definition.
fn mth(leaves: &[Hash]) -> Hash {
    match leaves.len() {
        0 => empty_root(),
        1 => leaves[0],
        n => {
            let k = 1 << (usize::BITS - 1 - (n - 1).leading_zeros());
            node_hash(&mth(&leaves[..k]), &mth(&leaves[k..]))
        }
    }
}

fn log_of(n: usize) -> (MemoryTiles, Vec<Hash>) {
    let mut tiles = MemoryTiles::default();
    let leaves: Vec<Hash> = (0..n as u32).map(|i| leaf_hash(&i.to_be_bytes())).collect();
    for leaf in &leaves {
        tiles.push(*leaf);
    }
    (tiles, leaves)
}

#[test]
fn roots_agree_with_rfc_6962_at_every_size() {
    let mut tiles = MemoryTiles::default();
    let mut leaves = Vec::new();
    assert_eq!(tree_root(&mut tiles, 0), Ok(empty_root()));
    for i in 0u32..1100 {
        let leaf = leaf_hash(&i.to_le_bytes());
        leaves.push(leaf);
        tiles.push(leaf);
        let size = leaves.len() as u64;
        let root = tiles.frontier.root();
        assert_eq!(tree_root(&mut tiles, size), Ok(root), "size {size}");
        if size.is_multiple_of(97) || size < 40 {
            assert_eq!(root, mth(&leaves), "size {size}");
        }
        let read = Frontier::read(&mut tiles, size).unwrap();
        assert_eq!(read, tiles.frontier, "size {size}");
    }
}

#[test]
fn one_proof_reads_each_tile_once() {
    let (mut tiles, _) = log_of(70_000 / 64);
    tiles.reads = 0;
    let proof = inclusion_proof(&mut tiles, 5, 1093).unwrap();
    assert_eq!(proof.len(), 11);
    // The partial level-0 tile, the first level-0 tile, and the level-1 tile.
    assert_eq!(tiles.reads, 3);
}

#[test]
fn reader_errors_and_short_tiles() {
    struct Broken(usize);
    impl TileReader for Broken {
        type Error = &'static str;
        fn tile(&mut self, _: u8, _: u64, width: u16) -> Result<Vec<Hash>, &'static str> {
            match self.0 {
                0 => Err("down"),
                _ => Ok(vec![[0; 32]; width as usize - 1]),
            }
        }
    }
    assert_eq!(tree_root(&mut Broken(0), 3), Err(ReadError::Reader("down")));
    assert_eq!(
        tree_root(&mut Broken(1), 3),
        Err(ReadError::Log(LogError::TileInvalid))
    );
    assert_eq!(
        inclusion_proof(&mut Broken(1), 3, 3),
        Err(ReadError::Log(LogError::IndexOutOfRange))
    );
    assert_eq!(
        consistency_proof(&mut Broken(1), 4, 3),
        Err(ReadError::Log(LogError::SizesOutOfOrder))
    );
    assert_eq!(
        ReadError::<&str>::Reader("down").code(),
        "log_tile_unreadable"
    );
}

#[test]
fn consistency_edge_cases() {
    let (mut tiles, leaves) = log_of(10);
    let root = |n: usize| mth(&leaves[..n]);
    assert_eq!(consistency_proof(&mut tiles, 0, 10), Ok(vec![]));
    assert_eq!(consistency_proof(&mut tiles, 10, 10), Ok(vec![]));
    assert_eq!(
        verify_consistency(0, 10, &empty_root(), &root(10), &[]),
        Ok(())
    );
    assert_eq!(
        verify_consistency(0, 0, &empty_root(), &empty_root(), &[]),
        Ok(())
    );
    assert_eq!(
        verify_consistency(0, 10, &root(1), &root(10), &[]),
        Err(LogError::RootMismatch)
    );
    // An empty tree has one root: a size-0 checkpoint with any other is refused.
    assert_eq!(
        verify_consistency(0, 0, &empty_root(), &root(1), &[]),
        Err(LogError::RootMismatch)
    );
    assert_eq!(
        verify_consistency(10, 10, &root(10), &root(10), &[]),
        Ok(())
    );
    assert_eq!(
        verify_consistency(10, 10, &root(9), &root(10), &[]),
        Err(LogError::RootMismatch)
    );
    assert_eq!(
        verify_consistency(10, 10, &root(10), &root(10), &[root(1)]),
        Err(LogError::ProofInvalid)
    );
    assert_eq!(
        verify_consistency(4, 10, &root(4), &root(10), &[]),
        Err(LogError::ProofInvalid)
    );
    assert_eq!(
        verify_consistency(10, 4, &root(10), &root(4), &[]),
        Err(LogError::SizesOutOfOrder)
    );
    assert_eq!(
        verify_consistency(4, 10, &root(4), &root(10), &[[0; 32]; 65]),
        Err(LogError::ProofTooLong)
    );
    assert_eq!(
        verify_inclusion(&leaves[0], 0, 10, &[[0; 32]; 65], &root(10)),
        Err(LogError::ProofTooLong)
    );
    assert_eq!(verify_inclusion(&leaves[0], 0, 1, &[], &root(1)), Ok(()));
    assert_eq!(
        verify_inclusion(&leaves[0], 1, 1, &[], &root(1)),
        Err(LogError::IndexOutOfRange)
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn proofs_verify_and_bind_everything(
        n in 1usize..1300,
        picks in prop::collection::vec((any::<u64>(), any::<u64>()), 4),
        flip in any::<u8>(),
        seed in any::<u64>(),
    ) {
        let mut tiles = MemoryTiles::default();
        let leaves: Vec<Hash> = (0..n as u64).map(|i| leaf_hash(&(i ^ seed).to_be_bytes())).collect();
        for leaf in &leaves {
            tiles.push(*leaf);
        }
        for (a, b) in picks {
            // Inclusion of leaf `index` in the tree of `size`.
            let size = 1 + b % n as u64;
            let index = a % size;
            let root = mth(&leaves[..size as usize]);
            prop_assert_eq!(tree_root(&mut tiles, size), Ok(root));
            let proof = inclusion_proof(&mut tiles, index, size).unwrap();
            let leaf = leaves[index as usize];
            prop_assert_eq!(verify_inclusion(&leaf, index, size, &proof, &root), Ok(()));
            for i in 0..proof.len() {
                let mut bad = proof.clone();
                bad[i][usize::from(flip) % 32] ^= 1;
                prop_assert!(verify_inclusion(&leaf, index, size, &bad, &root).is_err());
            }
            if size > 1 {
                let other = (index + 1 + u64::from(flip) % (size - 1)) % size;
                prop_assert!(verify_inclusion(&leaf, other, size, &proof, &root).is_err());
            }
            // Another size, with that tree's own root (a checkpoint binds
            // the two together).
            let root_of = |size: u64| mth(&leaves[..size as usize]);
            if size < n as u64 {
                prop_assert!(verify_inclusion(&leaf, index, size + 1, &proof, &root_of(size + 1)).is_err());
            }
            if index < size - 1 {
                prop_assert!(verify_inclusion(&leaf, index, size - 1, &proof, &root_of(size - 1)).is_err());
            }
            prop_assert!(verify_inclusion(&leaves[(index as usize + 1) % n], index, size, &proof, &root).is_err() || n == 1);
            let mut short = proof.clone();
            if short.pop().is_some() {
                prop_assert_eq!(verify_inclusion(&leaf, index, size, &short, &root), Err(LogError::ProofInvalid));
            }
            let mut long = proof.clone();
            long.push(root);
            prop_assert_eq!(verify_inclusion(&leaf, index, size, &long, &root), Err(LogError::ProofInvalid));

            // Consistency from the tree of `old` to the tree of `size`.
            let old = 1 + a % size;
            let old_root = mth(&leaves[..old as usize]);
            let proof = consistency_proof(&mut tiles, old, size).unwrap();
            prop_assert_eq!(verify_consistency(old, size, &old_root, &root, &proof), Ok(()));
            for i in 0..proof.len() {
                let mut bad = proof.clone();
                bad[i][usize::from(flip) % 32] ^= 1;
                prop_assert!(verify_consistency(old, size, &old_root, &root, &bad).is_err());
            }
            let mut wrong_old = old_root;
            wrong_old[0] ^= 1;
            prop_assert!(verify_consistency(old, size, &wrong_old, &root, &proof).is_err());
            let mut wrong_new = root;
            wrong_new[31] ^= 1;
            prop_assert!(verify_consistency(old, size, &old_root, &wrong_new, &proof).is_err());
            if old < size {
                prop_assert!(verify_consistency(old + 1, size, &root_of(old + 1), &root, &proof).is_err());
                if size < n as u64 {
                    prop_assert!(verify_consistency(old, size + 1, &old_root, &root_of(size + 1), &proof).is_err());
                }
                prop_assert_eq!(
                    verify_consistency(size, old, &root, &old_root, &proof),
                    Err(LogError::SizesOutOfOrder)
                );
            }
            if old > 1 {
                prop_assert!(verify_consistency(old - 1, size, &root_of(old - 1), &root, &proof).is_err());
            }
            if size > old + 1 {
                prop_assert!(verify_consistency(old, size - 1, &old_root, &root_of(size - 1), &proof).is_err());
            }
        }
    }
}
