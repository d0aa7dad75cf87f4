//! RFC 6962 §2.1 hashing: a leaf is SHA-256(0x00 ‖ bytes), an interior node
//! SHA-256(0x01 ‖ left ‖ right), and the empty tree's root SHA-256 of
//! nothing. The prefixes keep a leaf from ever being read as a node.

use sha2::{Digest as _, Sha256};

/// A SHA-256 digest: a leaf hash, a node hash or a tree's root.
pub type Hash = [u8; 32];

/// The root of the tree of no leaves: SHA-256 of the empty string.
pub fn empty_root() -> Hash {
    Sha256::digest([]).into()
}

/// The hash of a leaf whose bytes are `bytes`.
pub fn leaf_hash(bytes: &[u8]) -> Hash {
    Sha256::new()
        .chain_update([0x00])
        .chain_update(bytes)
        .finalize()
        .into()
}

/// The hash of an interior node over its two children.
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    Sha256::new()
        .chain_update([0x01])
        .chain_update(left)
        .chain_update(right)
        .finalize()
        .into()
}

/// The root of a complete subtree from its `2^k` leaf-level hashes, left
/// to right, by hashing pairs until one is left. `None` when the count is
/// not a power of two (or zero).
pub(crate) fn perfect_root(hashes: &[Hash]) -> Option<Hash> {
    if !hashes.len().is_power_of_two() {
        return None;
    }
    let mut level: Vec<Hash> = hashes.to_vec();
    while level.len() > 1 {
        level = level
            .chunks_exact(2)
            .map(|pair| match pair {
                [left, right] => node_hash(left, right),
                // chunks_exact(2) yields pairs only.
                _ => [0; 32],
            })
            .collect();
    }
    level.first().copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(hash: &Hash) -> String {
        hash.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn known_values() {
        // The empty tree's root and the hash of the empty leaf, as every
        // RFC 6962 implementation has them.
        assert_eq!(
            hex(&empty_root()),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            hex(&leaf_hash(b"")),
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"
        );
    }

    #[test]
    fn perfect_roots() {
        let a = leaf_hash(b"a");
        let b = leaf_hash(b"b");
        let c = leaf_hash(b"c");
        let d = leaf_hash(b"d");
        assert_eq!(perfect_root(&[a]), Some(a));
        assert_eq!(perfect_root(&[a, b]), Some(node_hash(&a, &b)));
        assert_eq!(
            perfect_root(&[a, b, c, d]),
            Some(node_hash(&node_hash(&a, &b), &node_hash(&c, &d)))
        );
        assert_eq!(perfect_root(&[a, b, c]), None);
        assert_eq!(perfect_root(&[]), None);
    }
}
