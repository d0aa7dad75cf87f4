//! Checking proofs: the algorithms of RFC 9162 §2.1.3.2 (inclusion) and
//! §2.1.4.2 (consistency), which accept exactly the RFC 6962 proofs.
//!
//! A proof of the wrong length for its index and sizes is
//! [`LogError::ProofInvalid`]; one of the right length that leads to
//! another root is [`LogError::RootMismatch`]. Proofs longer than
//! [`MAX_PROOF_HASHES`] are refused before any hashing.

use super::error::LogError;
use super::hash::{Hash, empty_root, node_hash};
use crate::limits::MAX_PROOF_HASHES;

/// Shifts both numbers right until the first is odd or zero.
fn shift_while_even(f: &mut u64, s: &mut u64) {
    while *f & 1 == 0 && *f != 0 {
        *f >>= 1;
        *s >>= 1;
    }
}

/// Checks that `leaf` (a leaf hash) is leaf `index` of the tree of `size`
/// leaves whose root is `root`.
pub fn verify_inclusion(
    leaf: &Hash,
    index: u64,
    size: u64,
    proof: &[Hash],
    root: &Hash,
) -> Result<(), LogError> {
    if proof.len() > MAX_PROOF_HASHES {
        return Err(LogError::ProofTooLong);
    }
    if index >= size {
        return Err(LogError::IndexOutOfRange);
    }
    let (mut f, mut s) = (index, size - 1);
    let mut r = *leaf;
    for p in proof {
        if s == 0 {
            return Err(LogError::ProofInvalid);
        }
        if f & 1 == 1 || f == s {
            r = node_hash(p, &r);
            shift_while_even(&mut f, &mut s);
        } else {
            r = node_hash(&r, p);
        }
        f >>= 1;
        s >>= 1;
    }
    if s != 0 {
        return Err(LogError::ProofInvalid);
    }
    if r != *root {
        return Err(LogError::RootMismatch);
    }
    Ok(())
}

/// Checks that the tree of `new_size` leaves with root `new_root` extends
/// the tree of `old_size` leaves with root `old_root`. Equal sizes take an
/// empty proof and equal roots; an old size of 0 takes an empty proof and
/// the empty tree's root.
pub fn verify_consistency(
    old_size: u64,
    new_size: u64,
    old_root: &Hash,
    new_root: &Hash,
    proof: &[Hash],
) -> Result<(), LogError> {
    if proof.len() > MAX_PROOF_HASHES {
        return Err(LogError::ProofTooLong);
    }
    if old_size > new_size {
        return Err(LogError::SizesOutOfOrder);
    }
    if old_size == new_size || old_size == 0 {
        if !proof.is_empty() {
            return Err(LogError::ProofInvalid);
        }
        let expected = if old_size == 0 {
            empty_root()
        } else {
            *new_root
        };
        // Both roots are checked: with both sizes 0, the new root too must be
        // the empty tree's.
        if *old_root != expected || (new_size == 0 && *new_root != empty_root()) {
            return Err(LogError::RootMismatch);
        }
        return Ok(());
    }
    let (first, rest) = match proof.split_first() {
        None => return Err(LogError::ProofInvalid),
        // When the old tree is a complete subtree, its root is the proof's
        // implicit first hash.
        Some(_) if old_size.is_power_of_two() => (old_root, proof),
        Some((first, rest)) => (first, rest),
    };
    let (mut f, mut s) = (old_size - 1, new_size - 1);
    while f & 1 == 1 {
        f >>= 1;
        s >>= 1;
    }
    let (mut fr, mut sr) = (*first, *first);
    for c in rest {
        if s == 0 {
            return Err(LogError::ProofInvalid);
        }
        if f & 1 == 1 || f == s {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            shift_while_even(&mut f, &mut s);
        } else {
            sr = node_hash(&sr, c);
        }
        f >>= 1;
        s >>= 1;
    }
    if s != 0 {
        return Err(LogError::ProofInvalid);
    }
    if fr != *old_root || sr != *new_root {
        return Err(LogError::RootMismatch);
    }
    Ok(())
}
