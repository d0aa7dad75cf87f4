//! Token status lists as served (`GET /v1/vat/status/{list}`): each list
//! signed as an IETF Token Status List token (`statuslist+jwt`) by the
//! active signing key, from the bits the ledger keeps (`store::status_lists`).
//!
//! A signed list is kept and served again while its bits are unchanged
//! (same revision), the same key signs, it names the same URI (its `sub`:
//! a cache is keyed by everything it signs), and it is younger than half
//! its `ttl`; otherwise it is signed anew. Every host signs its own copies;
//! a signed copy's `ETag` names its bits' revision and when it was signed,
//! so a verifier that asks again with `If-None-Match` gets 304 only for the
//! copy it holds, and a newer copy (younger, for its staleness limit) as
//! soon as there is one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mandate_core::SigningKey;
use mandate_core::limits::STATUS_LIST_SIZE;
use mandate_core::status_list::{
    Bits, StatusList, StatusListClaims, StatusListError, StatusUri, sign_status_list,
};

use crate::store::status_lists::StoredList;

/// How long a served list stays valid (`exp - iat`), seconds: a verifier
/// that cannot reach the server keeps a list this long at most, whatever
/// staleness it accepts.
pub const LIST_LIFETIME_S: i64 = 86_400;

/// Most signed lists kept at once (one per list number: 65,536 tokens each).
const KEPT: usize = 4096;

/// A list as signed.
#[derive(Debug, Clone)]
pub struct Signed {
    pub revision: u64,
    kid: String,
    /// The URI it is signed for (`sub`).
    uri: StatusUri,
    /// When it was signed (unix seconds).
    pub iat: i64,
    pub jwt: Arc<str>,
}

/// Lists signed lately, by list number.
#[derive(Debug, Default)]
pub struct SignedLists {
    kept: Mutex<HashMap<u64, Signed>>,
}

impl SignedLists {
    /// List `list` (`stored` as the database holds it, `None` when no token
    /// of it was ever revoked), signed by `key` at `now_s` under `uri`, or
    /// the copy signed lately if it is still good.
    pub fn get(
        &self,
        list: u64,
        stored: Option<StoredList>,
        uri: &StatusUri,
        key: &SigningKey,
        ttl: u64,
        now_s: i64,
    ) -> Result<Signed, StatusListError> {
        let revision = stored.as_ref().map_or(0, |stored| stored.revision);
        let fresh_for = i64::try_from(ttl / 2).unwrap_or(i64::MAX);
        {
            let kept = match self.kept.lock() {
                Ok(kept) => kept,
                Err(poisoned) => poisoned.into_inner(),
            };
            if let Some(signed) = kept.get(&list)
                && signed.revision == revision
                && signed.kid == key.kid()
                && signed.uri == *uri
                && (signed.iat..signed.iat.saturating_add(fresh_for)).contains(&now_s)
            {
                return Ok(signed.clone());
            }
        }
        let bits = match stored {
            Some(stored) => StatusList::from_bytes(Bits::One, stored.bytes)?,
            None => StatusList::new(STATUS_LIST_SIZE)?,
        };
        let jwt = sign_status_list(
            &bits,
            &StatusListClaims {
                sub: uri.clone(),
                iat: now_s,
                exp: now_s.saturating_add(LIST_LIFETIME_S),
                ttl,
            },
            key,
        )?;
        let signed = Signed {
            revision,
            kid: key.kid().to_owned(),
            uri: uri.clone(),
            iat: now_s,
            jwt: jwt.into(),
        };
        let mut kept = match self.kept.lock() {
            Ok(kept) => kept,
            Err(poisoned) => poisoned.into_inner(),
        };
        if kept.len() >= KEPT {
            kept.clear();
        }
        kept.insert(list, signed.clone());
        Ok(signed)
    }
}
