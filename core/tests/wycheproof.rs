//! Wycheproof's Ed25519 vectors through the exact signature check core uses
//! (`VerifyingKey::from_bytes` + `verify_strict` on a 64-byte signature).

use ed25519_dalek::{Signature, VerifyingKey};
use wycheproof::TestResult;
use wycheproof::eddsa::{TestName, TestSet};

fn core_accepts(public: &[u8], message: &[u8], signature: &[u8]) -> bool {
    let Ok(public) = <[u8; 32]>::try_from(public) else {
        return false;
    };
    let Ok(signature) = <[u8; 64]>::try_from(signature) else {
        return false;
    };
    let Ok(key) = VerifyingKey::from_bytes(&public) else {
        return false;
    };
    key.verify_strict(message, &Signature::from_bytes(&signature))
        .is_ok()
}

#[test]
fn wycheproof_ed25519() {
    let set = TestSet::load(TestName::Ed25519).unwrap();
    let mut total = 0;
    let mut mismatches = Vec::new();
    for group in &set.test_groups {
        for test in &group.tests {
            total += 1;
            let expected = match test.result {
                TestResult::Valid => true,
                TestResult::Invalid => false,
                TestResult::Acceptable => continue,
            };
            let got = core_accepts(&group.key.pk, &test.msg, &test.sig);
            if got != expected {
                mismatches.push((test.tc_id, test.comment.clone()));
            }
        }
    }
    assert!(total >= 145, "only {total} vectors");
    assert!(mismatches.is_empty(), "verdicts differ: {mismatches:?}");
}
