//! OAuth on the write side: an owner registers and deletes its
//! organisation's public clients; a human's approval stores a code. Every
//! write takes its organisation's lock first (PostgreSQL), as every write
//! does.

use std::sync::Arc;

use mandate_core::{Claims, Jti, Renewal, SigningKey, Ulid, renew};

use super::Revoker;
use super::{Ledger, LedgerError, internal};
use crate::clock::Now;
use crate::store::oauth::{self as rows, OAuthClient, OAuthCode, OAuthGrant};
use crate::store::orgs::Org;

/// The most clients an organisation may have registered at once.
pub const MAX_CLIENTS_PER_ORG: u64 = 100;

impl Ledger {
    /// Registers a client (`client.org`'s).
    pub fn create_client(&mut self, client: &OAuthClient) -> Result<OAuthClient, LedgerError> {
        self.enter(client.org)?;
        if rows::count_clients(&self.conn, client.org)? >= MAX_CLIENTS_PER_ORG {
            return Err(LedgerError::TooManyClients);
        }
        rows::insert_client(&self.conn, client)?;
        rows::client(&self.conn, client.org, &client.client_id)?.ok_or(LedgerError::UnknownClient)
    }

    /// Deletes the client `client_id` of `org`: it is unknown from now on.
    /// Another organisation's client, or one deleted before, is unknown.
    pub fn delete_client(
        &mut self,
        org: Org,
        client_id: &str,
        now: Now,
    ) -> Result<(), LedgerError> {
        self.enter(org)?;
        rows::client(&self.conn, org, client_id)?.ok_or(LedgerError::UnknownClient)?;
        rows::delete_client(&self.conn, client_id, now.ms())?;
        Ok(())
    }

    /// Stores the code an approval makes: one per sealed request (its
    /// hash), so approving the same request twice is refused
    /// ([`LedgerError::RequestAnswered`]); the organisation's lock makes
    /// the check and the insert one step on every host.
    pub fn approve(&mut self, code: &OAuthCode) -> Result<(), LedgerError> {
        self.enter(code.org)?;
        if rows::request_answered(&self.conn, &code.request_hash)? {
            return Err(LedgerError::RequestAnswered);
        }
        rows::insert_code(&self.conn, code)?;
        Ok(())
    }
}

/// A code's redemption: what the token endpoint checked and built, for
/// [`Ledger::redeem_code`] to make durable in one transaction.
#[derive(Debug)]
pub struct Redemption {
    /// SHA-256 of the code.
    pub code_hash: Vec<u8>,
    /// The grant root, as core made it from the code's choice (its `aud`
    /// the request's `resource`); signed and stored here.
    pub root: Claims,
    /// The API key that approved.
    pub issued_by: String,
    /// Whether that key may issue for another human's agent.
    pub for_anyone: bool,
    /// What the organisation knows the human by.
    pub label: String,
    /// The grant row; its `root_jti` is the root's.
    pub grant: OAuthGrant,
    /// The access token's lifetime, in seconds (ended early at the root's
    /// `exp`).
    pub access_ttl_seconds: u64,
    /// The access token's id.
    pub access_jti: Ulid,
    /// The server's public address, for the status lists.
    pub status_base: String,
    pub key: Arc<SigningKey>,
}

/// What a redemption did.
#[derive(Debug)]
pub enum Redeemed {
    /// The grant root and its first access token are stored.
    Issued {
        /// The access token's claims and its compact form.
        access: Box<Claims>,
        compact: String,
    },
    /// The code was redeemed before: what it issued is revoked now (RFC
    /// 6749 §4.1.2) and the request refused.
    Replayed,
    /// The code expired, or there is no such code.
    Invalid,
}

/// Why a grant was revoked when its code came back.
pub const CODE_REPLAYED: &str = "code_replayed";

impl Ledger {
    /// Redeems a code, in one transaction: unused and unexpired, its grant
    /// root is stored (the path every root token takes: its agent
    /// registered to the human, a status entry, a log leaf, its workflow
    /// opened), the human labelled, the first access token stored as the
    /// root's renewal, the grant row written and the code marked used.
    /// A code used before revokes its grant's root — and with it every
    /// token the grant issued — and marks the grant revoked.
    pub fn redeem_code(
        &mut self,
        redemption: Redemption,
        now: Now,
    ) -> Result<Redeemed, LedgerError> {
        let Some(code) = rows::code(&self.conn, &redemption.code_hash)? else {
            return Ok(Redeemed::Invalid);
        };
        self.enter(code.org)?;
        // Read again under the organisation's lock (PostgreSQL).
        let Some(code) = rows::code(&self.conn, &redemption.code_hash)? else {
            return Ok(Redeemed::Invalid);
        };
        if code.used_at.is_some() {
            if let Some(grant_id) = &code.grant_id {
                self.revoke_grant_root(code.org, grant_id, now)?;
            }
            return Ok(Redeemed::Replayed);
        }
        if now.ms() >= code.expires_at {
            return Ok(Redeemed::Invalid);
        }
        let org = code.org;
        let Redemption {
            root,
            issued_by,
            for_anyone,
            label,
            grant,
            access_ttl_seconds,
            access_jti,
            status_base,
            key,
            ..
        } = redemption;
        let (root, _) =
            self.store_root(org, root, &key, &issued_by, for_anyone, &status_base, now)?;
        self.label_human(org, &root.svc_human, &label, now)?;
        let mut access = renew(
            &root,
            Renewal {
                now: now.s(),
                ttl_seconds: access_ttl_seconds,
                holder: None,
                jti: access_jti,
                status: None,
            },
        )
        .map_err(internal)?;
        let compact = self.issue_renewal(org, &root, &mut access, &status_base, &key, now.ms())?;
        let grant = OAuthGrant {
            root_jti: root.jti.as_str().to_owned(),
            ..grant
        };
        rows::insert_grant(&self.conn, &grant)?;
        rows::use_code(&self.conn, &code.code_hash, now.ms(), &grant.grant_id)?;
        Ok(Redeemed::Issued {
            access: Box::new(access),
            compact,
        })
    }

    /// Revokes what a grant issued (its root, and so the chain) and marks
    /// the grant revoked because its code was replayed.
    fn revoke_grant_root(&mut self, org: Org, grant_id: &str, now: Now) -> Result<(), LedgerError> {
        if let Some(root) = rows::grant_root(&self.conn, grant_id)? {
            let root = Jti::parse(&root).map_err(internal)?;
            self.revoke(&root, Some(CODE_REPLAYED), &Revoker::ApiKey(org), now)?;
        }
        rows::revoke_grant(&self.conn, grant_id, now.ms(), CODE_REPLAYED)?;
        Ok(())
    }
}
