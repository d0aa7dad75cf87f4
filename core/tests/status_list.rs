//! Status lists through the public API: signing and verifying lists,
//! tokens that carry their entry, the check of a token's status, and the
//! laws of the packed list.

mod common;

use common::{NOW, key, request, root, root_with, ulid};
use mandate_core::limits::{DEFAULT_LEEWAY_SECONDS, MAX_STATUS_LIST_TOKEN_BYTES, STATUS_LIST_SIZE};
use mandate_core::status_list::{STATUS_LIST_TYP, compress, decompress};
use mandate_core::{
    Bits, Claims, Jwks, StatusCheckError, StatusClaim, StatusList, StatusListClaims,
    StatusListError, StatusType, StatusUri, VerifyError, VerifyOptions, check_status,
    check_status_origin, delegate, sign, sign_status_list, verify, verify_status_list,
};
use proptest::prelude::*;

const BASE: &str = "https://mandate.test";

fn jwks() -> Jwks {
    Jwks::from_signing_keys([&key(1)])
}

fn uri(list: u64) -> StatusUri {
    StatusUri::for_list(BASE, list).unwrap()
}

fn list_claims(list: u64, iat: i64) -> StatusListClaims {
    StatusListClaims {
        sub: uri(list),
        iat,
        exp: iat + 3600,
        ttl: 300,
    }
}

/// A root token carrying entry `index` of the deployment.
fn token_at(index: u64) -> Claims {
    let mut claims = root();
    claims.status = Some(StatusClaim::for_index(BASE, index).unwrap());
    claims
}

/// A list of `len` 1-bit entries with `revoked` of them revoked, spread by
/// a fixed pseudo-random sequence (xorshift), and how many were set.
fn revoked_at_random(len: u64, revoked: u64, seed: u64) -> StatusList {
    let mut list = StatusList::new(len).unwrap();
    let mut state = seed | 1;
    let mut set = 0;
    while set < revoked {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let idx = state % len;
        if list.get(idx) == Some(StatusType::VALID) {
            list.set(idx, StatusType::INVALID).unwrap();
            set += 1;
        }
    }
    list
}

#[test]
fn a_signed_list_verifies_and_says_what_was_set() {
    let mut list = StatusList::new(STATUS_LIST_SIZE).unwrap();
    list.set(42, StatusType::INVALID).unwrap();
    let jwt = sign_status_list(&list, &list_claims(0, NOW), &key(1)).unwrap();
    let verified = verify_status_list(&jwt, &jwks(), NOW, Some(uri(0).as_str())).unwrap();
    assert_eq!(verified.kid, key(1).kid());
    assert_eq!(verified.uri, uri(0));
    assert_eq!(
        (verified.iat, verified.exp, verified.ttl),
        (NOW, NOW + 3600, 300)
    );
    assert_eq!(verified.list, list);
    assert_eq!(verified.list.bits(), Bits::One);

    // The header and the claims, in the draft's names and Mandate's order.
    let segment = |n: usize| {
        let text = jwt.split('.').nth(n).unwrap();
        let bytes = base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, text)
            .unwrap();
        String::from_utf8(bytes).unwrap()
    };
    assert_eq!(
        segment(0),
        format!(
            r#"{{"alg":"EdDSA","typ":"{STATUS_LIST_TYP}","kid":"{}"}}"#,
            key(1).kid()
        )
    );
    assert_eq!(
        segment(1),
        format!(
            r#"{{"sub":"{BASE}/v1/vat/status/0","iat":{NOW},"exp":{},"ttl":300,"status_list":{{"bits":1,"lst":"{}"}}}}"#,
            NOW + 3600,
            list.lst()
        )
    );
}

#[test]
fn signing_refuses_what_verification_would() {
    let list = StatusList::new(8).unwrap();
    let mut claims = list_claims(0, NOW);
    claims.ttl = 0;
    assert_eq!(
        sign_status_list(&list, &claims, &key(1)),
        Err(StatusListError::InvalidClaim {
            claim: "ttl",
            reason: "must be a positive integer"
        })
    );
    let mut claims = list_claims(0, NOW);
    claims.exp = NOW - 1;
    assert!(matches!(
        sign_status_list(&list, &claims, &key(1)),
        Err(StatusListError::InvalidClaim { claim: "iat", .. })
    ));
    // A list too random to fit the token limit.
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let noise: Vec<u8> = (0..MAX_STATUS_LIST_TOKEN_BYTES)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect();
    let noisy = StatusList::from_bytes(Bits::Eight, noise).unwrap();
    assert_eq!(
        sign_status_list(&noisy, &list_claims(0, NOW), &key(1)),
        Err(StatusListError::TooLarge)
    );
}

#[test]
fn mandates_worst_list_fits_its_token() {
    // Half of a full list revoked at random: the least compressible list a
    // deployment can publish.
    let list = revoked_at_random(STATUS_LIST_SIZE, STATUS_LIST_SIZE / 2, 7);
    let jwt = sign_status_list(&list, &list_claims(0, NOW), &key(1)).unwrap();
    // 8 KiB of noise, base64url twice over (lst, then the payload).
    assert!(jwt.len() < 16 * 1024, "{}", jwt.len());
    assert_eq!(
        verify_status_list(&jwt, &jwks(), NOW, None).unwrap().list,
        list
    );
}

#[test]
fn compressed_sizes() {
    let full = STATUS_LIST_SIZE;
    let size = |list: &StatusList| list.compress().len();
    assert!(size(&StatusList::new(full).unwrap()) < 64);
    let mut all = StatusList::new(full).unwrap();
    for idx in 0..full {
        all.set(idx, StatusType::INVALID).unwrap();
    }
    assert!(size(&all) < 64);
    // 1 % and 10 % revoked: about 1.0 KB and 4.7 KB (the draft's table,
    // scaled to one list of 65,536).
    let one = size(&revoked_at_random(full, full / 100, 1));
    let ten = size(&revoked_at_random(full, full / 10, 2));
    assert!((600..1_200).contains(&one), "{one}");
    assert!((3_800..5_000).contains(&ten), "{ten}");
}

#[test]
fn tokens_carry_the_entry_the_server_gives_them() {
    let status = StatusClaim::for_index(BASE, STATUS_LIST_SIZE + 9).unwrap();
    assert_eq!((status.idx(), status.uri()), (9, &uri(1)));
    let mut issue = common::root_issue();
    issue.status = Some(status.clone());
    let parent =
        mandate_core::issue_root(request(&["crm:*"], &["read", "delegate"]), issue).unwrap();
    assert_eq!(parent.status.as_ref(), Some(&status));

    // A child gets its own entry, never its parent's; or none.
    let own = StatusClaim::for_index(BASE, 10).unwrap();
    let child = delegate(
        &parent,
        request(&["crm:*"], &["read"]),
        NOW,
        ulid(3),
        Some(own.clone()),
    )
    .unwrap();
    assert_eq!(child.status, Some(own));
    let bare = delegate(&parent, request(&["crm:*"], &["read"]), NOW, ulid(4), None).unwrap();
    assert_eq!(bare.status, None);

    // Signed and verified, the claim survives; it is written after cnf.
    let token = sign(&child, &key(1)).unwrap();
    let verified = verify(&token, &jwks(), NOW, &VerifyOptions::default()).unwrap();
    assert_eq!(verified.claims, child);
    let json = serde_json::to_string(&child).unwrap();
    let at = |member: &str| json.find(&format!("\"{member}\":")).unwrap();
    assert!(at("svc_chain") < at("status") && at("status") < at("act"));
}

#[test]
fn a_status_uri_off_the_issuers_origins_is_refused() {
    let honest = token_at(3);
    assert_eq!(check_status_origin(&honest, &[BASE]), Ok(()));
    assert_eq!(
        check_status_origin(&honest, &["HTTPS://Mandate.Test/"]),
        Ok(())
    );
    assert_eq!(
        check_status_origin(&honest, &["https://other.test", "https://mandate.test"]),
        Ok(())
    );
    // A token issued with a forged Host: its list is the attacker's to keep.
    let mut forged = root();
    forged.status = Some(StatusClaim::for_index("http://evil.example", 3).unwrap());
    for origins in [
        &[BASE][..],
        &["http://mandate.test"][..],
        &["https://mandate.test:8443"][..],
        &["https://mandate.test.evil.example"][..],
        &[][..],
    ] {
        assert_eq!(
            check_status_origin(&forged, origins),
            Err(StatusCheckError::OriginNotAllowed),
            "{origins:?}"
        );
    }
    assert_eq!(
        StatusCheckError::OriginNotAllowed.code(),
        "status_origin_not_allowed"
    );
    // A prefix is not an origin: `https://mandate.test.evil` is not under it.
    let mut lookalike = root();
    lookalike.status = Some(StatusClaim::for_index("https://mandate.test.evil", 3).unwrap());
    assert_eq!(
        check_status_origin(&lookalike, &[BASE]),
        Err(StatusCheckError::OriginNotAllowed)
    );
    // A token without a status claim has no list to check.
    assert_eq!(check_status_origin(&root(), &[BASE]), Ok(()));
    let with_path = StatusUri::parse("https://mandate.test:8443/prefix/v1/vat/status/0").unwrap();
    assert_eq!(with_path.origin(), "https://mandate.test:8443");
}

#[test]
fn the_check() {
    let mut bits = StatusList::new(STATUS_LIST_SIZE).unwrap();
    bits.set(7, StatusType::INVALID).unwrap();
    let jwt = sign_status_list(&bits, &list_claims(0, NOW - 100), &key(1)).unwrap();
    let list = verify_status_list(&jwt, &jwks(), NOW, None).unwrap();
    let check = |claims: &Claims, now: i64, max: Option<u64>| check_status(claims, &list, now, max);

    assert_eq!(check(&token_at(3), NOW, None), Ok(()));
    assert_eq!(
        check(&token_at(7), NOW, None),
        Err(StatusCheckError::Revoked)
    );
    // A token issued without a status claim is not looked up at all.
    assert_eq!(check(&root(), NOW, Some(0)), Ok(()));
    // Another list's token.
    assert_eq!(
        check(&token_at(STATUS_LIST_SIZE + 3), NOW, None),
        Err(StatusCheckError::UriMismatch)
    );
    // Staleness counts from the list's iat, inclusive.
    assert_eq!(check(&token_at(3), NOW, Some(100)), Ok(()));
    assert_eq!(
        check(&token_at(3), NOW, Some(99)),
        Err(StatusCheckError::Stale)
    );
    assert_eq!(
        check(&token_at(7), NOW, Some(99)),
        Err(StatusCheckError::Stale)
    );
    // The list's exp is checked again at the moment of the check.
    let leeway = DEFAULT_LEEWAY_SECONDS as i64;
    let exp = NOW - 100 + 3600;
    assert_eq!(check(&token_at(3), exp + leeway - 1, None), Ok(()));
    assert_eq!(
        check(&token_at(3), exp + leeway, None),
        Err(StatusCheckError::ListExpired)
    );
    // A list shorter than the token's index (a deployment of smaller lists).
    let short =
        sign_status_list(&StatusList::new(8).unwrap(), &list_claims(0, NOW), &key(1)).unwrap();
    let short = verify_status_list(&short, &jwks(), NOW, None).unwrap();
    assert_eq!(check_status(&token_at(7), &short, NOW, None), Ok(()));
    assert_eq!(
        check_status(&token_at(8), &short, NOW, None),
        Err(StatusCheckError::IndexOutOfRange)
    );
}

#[test]
fn status_values_beyond_revoked() {
    let mut bits = StatusList::with_bits(Bits::Eight, 300).unwrap();
    for value in 0..=255u8 {
        bits.set(u64::from(value), StatusType(value)).unwrap();
    }
    let jwt = sign_status_list(&bits, &list_claims(0, NOW), &key(1)).unwrap();
    let list = verify_status_list(&jwt, &jwks(), NOW, None).unwrap();
    for value in 0..=255u8 {
        let expected = match StatusType(value) {
            StatusType::VALID => Ok(()),
            StatusType::INVALID => Err(StatusCheckError::Revoked),
            StatusType::SUSPENDED => Err(StatusCheckError::Suspended),
            StatusType(other) => Err(StatusCheckError::Unrecognised(other)),
        };
        assert_eq!(
            check_status(&token_at(u64::from(value)), &list, NOW, None),
            expected
        );
    }
}

#[test]
fn lists_and_tokens_are_never_confused() {
    let list =
        sign_status_list(&StatusList::new(8).unwrap(), &list_claims(0, NOW), &key(1)).unwrap();
    assert_eq!(
        verify(&list, &jwks(), NOW, &VerifyOptions::default()),
        Err(VerifyError::InvalidTyp)
    );
    let token = sign(&token_at(1), &key(1)).unwrap();
    assert_eq!(
        verify_status_list(&token, &jwks(), NOW, None),
        Err(StatusListError::InvalidTyp)
    );
    // The same key set and the same rules for the compact form.
    let other = Jwks::from_signing_keys([&key(2)]);
    assert_eq!(
        verify_status_list(&list, &other, NOW, None),
        Err(StatusListError::Jws(VerifyError::UnknownKid))
    );
    assert_eq!(
        verify_status_list("a.b", &jwks(), NOW, None),
        Err(StatusListError::Jws(VerifyError::MalformedToken))
    );
}

#[test]
fn lifetime_edges() {
    let jwt =
        sign_status_list(&StatusList::new(8).unwrap(), &list_claims(0, NOW), &key(1)).unwrap();
    let leeway = DEFAULT_LEEWAY_SECONDS as i64;
    let at = |now: i64| verify_status_list(&jwt, &jwks(), now, None).map(|_| ());
    assert_eq!(at(NOW - leeway), Ok(()));
    assert_eq!(at(NOW - leeway - 1), Err(StatusListError::NotYetValid));
    assert_eq!(at(NOW + 3600 + leeway - 1), Ok(()));
    assert_eq!(at(NOW + 3600 + leeway), Err(StatusListError::Expired));
    assert_eq!(
        verify_status_list(
            &jwt,
            &jwks(),
            NOW,
            Some("https://mandate.test/v1/vat/status/00")
        ),
        Err(StatusListError::SubjectMismatch)
    );
}

proptest! {
    #[test]
    fn set_then_get(
        bits in prop_oneof![Just(Bits::One), Just(Bits::Two), Just(Bits::Four), Just(Bits::Eight)],
        len in 1u64..2_000,
        writes in proptest::collection::vec((0u64..2_000, any::<u8>()), 0..64),
    ) {
        let mut list = StatusList::with_bits(bits, len).unwrap();
        let mut model = vec![0u8; list.len() as usize];
        let mask = u8::MAX >> (8 - bits.get());
        for (idx, value) in writes {
            let outcome = list.set(idx, StatusType(value));
            if value > mask {
                prop_assert_eq!(outcome, Err(StatusListError::ValueTooWide));
            } else if idx >= list.len() {
                prop_assert_eq!(outcome, Err(StatusListError::IndexOutOfRange));
            } else {
                prop_assert_eq!(outcome, Ok(()));
                model[idx as usize] = value;
            }
        }
        for (idx, value) in model.iter().enumerate() {
            prop_assert_eq!(list.get(idx as u64), Some(StatusType(*value)));
        }
        prop_assert_eq!(list.get(list.len()), None);
        let read = StatusList::from_lst(bits, &list.lst()).unwrap();
        prop_assert_eq!(read, list);
    }

    #[test]
    fn inflating_never_exceeds_its_cap(bytes in proptest::collection::vec(any::<u8>(), 0..4_096), cap in 0usize..8_192) {
        let compressed = compress(&bytes);
        match decompress(&compressed, cap) {
            Ok(inflated) => {
                prop_assert!(inflated.len() <= cap);
                prop_assert_eq!(inflated, bytes);
            }
            Err(error) => {
                prop_assert!(bytes.len() > cap);
                prop_assert_eq!(error, StatusListError::ListTooLarge);
            }
        }
    }
}

#[test]
fn root_with_is_unchanged_by_status() {
    // Tokens issued as before carry no status claim and verify as before.
    let claims = root_with(request(&["crm:*"], &["read"]));
    assert_eq!(claims.status, None);
    let json = serde_json::to_value(&claims).unwrap();
    assert!(json.get("status").is_none());
}
