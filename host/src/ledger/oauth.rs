//! OAuth on the write side: an owner registers and deletes its
//! organisation's public clients; a human's approval stores a code; a
//! code's redemption stores the grant; a refresh rotates the grant's
//! refresh token (core's `oauth::family` judges each step); a revocation
//! ends a grant or one access token. Every write takes its organisation's
//! lock first (PostgreSQL), as every write does.

use std::sync::Arc;

use mandate_core::audience::Audience;
use mandate_core::oauth::client_document::ClientIdUrl;
use mandate_core::oauth::family::{
    FamilyError, FamilyEvent, FamilyState, RevokeReason, transition,
};
use mandate_core::{
    Claims, DpopError, IssueError, Jkt, Jti, Renewal, SigningKey, Ulid, renew, renew_within,
};

use super::Revoker;
use super::{Ledger, LedgerError, internal};
use crate::clock::Now;
use crate::store::oauth::{self as rows, OAuthClient, OAuthCode, OAuthGrant, OAuthResource};
use crate::store::orgs::Org;
use crate::store::tokens;

/// The most clients an organisation may have registered at once.
pub const MAX_CLIENTS_PER_ORG: u64 = 100;

/// The most resources an organisation may have registered at once.
pub const MAX_RESOURCES_PER_ORG: usize = 100;

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

    /// Registers a resource (`resource.org`'s): refused when the
    /// organisation has one naming the same resource (RFC 3986
    /// equivalence, as tokens' audiences are compared).
    pub fn create_resource(
        &mut self,
        resource: &OAuthResource,
    ) -> Result<OAuthResource, LedgerError> {
        self.enter(resource.org)?;
        let existing = rows::resources(&self.conn, resource.org)?;
        if existing.len() >= MAX_RESOURCES_PER_ORG {
            return Err(LedgerError::TooManyResources);
        }
        let audience = Audience::parse(&resource.resource).map_err(internal)?;
        if existing.iter().any(|row| audience.matches(&row.resource)) {
            return Err(LedgerError::ResourceExists);
        }
        rows::insert_resource(&self.conn, resource)?;
        Ok(resource.clone())
    }

    /// Deletes the resource `resource_id` of `org`: its relay keys relay
    /// nothing from now on. Another organisation's is unknown.
    pub fn delete_resource(&mut self, org: Org, resource_id: &str) -> Result<(), LedgerError> {
        self.enter(org)?;
        match rows::delete_resource(&self.conn, org, resource_id)? {
            true => Ok(()),
            false => Err(LedgerError::UnknownResource),
        }
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
#[derive(Debug, Clone)]
pub struct Redemption {
    /// SHA-256 of the code.
    pub code_hash: Vec<u8>,
    /// The grant root, as core made it from the code's choice (its `aud`
    /// the request's `resource`); signed and stored here.
    pub root: Claims,
    /// The API key that approved.
    pub issued_by: Option<String>,
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
    /// The key of the token request's proof: the access token is bound to
    /// it (the grant row's `cnf_jkt` says the same).
    pub holder: Option<Jkt>,
    /// SHA-256 of the refresh token to store as generation 0; none when
    /// the client may not refresh.
    pub refresh_hash: Option<Vec<u8>>,
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

impl Ledger {
    /// Redeems a code, in one transaction: unused and unexpired, its grant
    /// root is stored (the path every root token takes: its agent
    /// registered to the human, a status entry, a log leaf, its workflow
    /// opened), the human labelled, the first access token stored as the
    /// root's renewal, the grant row written with its first refresh token
    /// (when the client may refresh) and the code marked used. A code used
    /// before revokes its grant's root — and with it every token the grant
    /// issued — and marks the grant revoked.
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
                self.end_grant(grant_id, RevokeReason::CodeReplayed, now)?;
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
            holder,
            refresh_hash,
            status_base,
            key,
            ..
        } = redemption;
        let (root, _) = self.store_root(
            org,
            root,
            &key,
            issued_by.as_deref(),
            for_anyone,
            &status_base,
            now,
        )?;
        self.label_human(org, &root.svc_human, &label, now)?;
        let mut access = renew(
            &root,
            Renewal {
                now: now.s(),
                ttl_seconds: access_ttl_seconds,
                holder,
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
        if let Some(refresh_hash) = &refresh_hash {
            rows::insert_refresh_token(&self.conn, refresh_hash, &grant.grant_id, 0, now.ms())?;
        }
        rows::use_code(&self.conn, &code.code_hash, now.ms(), &grant.grant_id)?;
        Ok(Redeemed::Issued {
            access: Box::new(access),
            compact,
        })
    }

    /// Ends the grant `grant_id` for `reason`, unless it ended before
    /// (core's family: revoking a revoked grant is refused, and changes
    /// nothing): its root is revoked — and with it every token the grant
    /// issued, their status bits and log leaves — and the grant row marked.
    /// The caller holds the grant's organisation's lock.
    fn end_grant(
        &mut self,
        grant_id: &str,
        reason: RevokeReason,
        now: Now,
    ) -> Result<(), LedgerError> {
        let grant =
            rows::grant(&self.conn, grant_id)?.ok_or_else(|| internal("a grant row vanished"))?;
        if transition(family_state(&grant, None), FamilyEvent::Revoke(reason)).is_err() {
            return Ok(());
        }
        let root = Jti::parse(&grant.root_jti).map_err(internal)?;
        self.revoke(
            &root,
            Some(reason.as_str()),
            &Revoker::ApiKey(grant.org),
            now,
        )?;
        rows::revoke_grant(&self.conn, grant_id, now.ms(), reason.as_str())?;
        Ok(())
    }
}

/// A family's state from its grant row: revoked when the row says so,
/// else active at the current generation (`current`, none before any
/// refresh token).
fn family_state(grant: &OAuthGrant, current: Option<u64>) -> FamilyState {
    match (&grant.revoked_at, &grant.revoke_reason) {
        (Some(_), reason) => FamilyState::Revoked(
            reason
                .as_deref()
                .and_then(|text| serde_json::from_value(serde_json::Value::from(text)).ok())
                .unwrap_or(RevokeReason::Revoked),
        ),
        (None, _) => FamilyState::Active {
            generation: current.unwrap_or(0),
            last_used_at: grant.last_used_at.div_euclid(1000),
            expires_at: grant.expires_at.div_euclid(1000),
        },
    }
}

/// A refresh (RFC 6749 §6) as the token endpoint read it, for
/// [`Ledger::refresh`].
#[derive(Debug, Clone)]
pub struct Refresh {
    /// SHA-256 of the refresh token presented.
    pub token_hash: Vec<u8>,
    pub client_id: String,
    /// The `resource` parameter, if sent.
    pub resource: Option<String>,
    /// The `scope` parameter read against nothing yet: the scope asked
    /// for is made of it and the grant's (`RequestedScope::within`) here.
    pub scope: Option<mandate_core::oauth::scope::RequestedScope>,
    /// SHA-256 of the next generation's refresh token.
    pub next_hash: Vec<u8>,
    /// `[oauth] refresh_idle_days`, in seconds.
    pub idle_seconds: i64,
    pub access_ttl_seconds: u64,
    pub access_jti: Ulid,
    /// The key of the request's proof, checked (signature, endpoint, time,
    /// once) but not yet against the grant's binding, which is read here.
    pub holder: Option<Jkt>,
    pub status_base: String,
    pub key: Arc<SigningKey>,
}

/// What a refresh did.
#[derive(Debug)]
pub enum Refreshed {
    /// The presented token is used, the next one stored, and a new access
    /// token issued.
    Issued {
        access: Box<Claims>,
        compact: String,
    },
    /// Refused; a reused token's refusal revoked the grant, in this
    /// transaction.
    Refused(RefreshRefusal),
}

/// Why a refresh was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefreshRefusal {
    /// No such refresh token, another client's, or its client deleted.
    Unknown,
    /// `resource` is not the grant's (RFC 8707 §2.2).
    Resource,
    /// `scope` is wider than the grant (RFC 6749 §6); the widening.
    Scope(String),
    /// The proof does not fit the grant's binding (RFC 9449 §5): none for
    /// a bound grant, another key's, or one for an unbound grant.
    Proof(DpopError),
    /// What core's family said: reused, expired, idle, revoked.
    Family(FamilyError),
}

/// What RFC 7009 revocation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientRevocation {
    /// The token is revoked, or was already, or is unknown here: the same
    /// answer (RFC 7009 §2.2).
    Done,
    /// `client_id` was given and the token's grant is another client's:
    /// nothing revoked (RFC 7009 §2.1).
    OtherClient,
}

impl Ledger {
    /// A refresh, in one transaction (plan §3.2): the presented refresh
    /// token, its grant and the grant root read under the organisation's
    /// lock; core's `family::transition` judges it. The current token,
    /// for the grant's client and `resource`, with a proof by the grant's
    /// key when it is bound and none when it is not, rotates: it is marked used,
    /// the next generation stored, the grant's last use moved, and an
    /// access token issued as a renewal of the grant root (narrowed to
    /// `scope` by core's delegation rules when asked). An older token is
    /// reuse (RFC 9700 §4.14.2): the grant is ended here — root and every
    /// token under it revoked — and the refresh refused; that refusal
    /// commits. A grant whose root was revoked by another path ends as
    /// `root_revoked`.
    pub fn refresh(&mut self, refresh: Refresh, now: Now) -> Result<Refreshed, LedgerError> {
        let refuse = |why| Ok(Refreshed::Refused(why));
        let Some(presented) = rows::refresh_token(&self.conn, &refresh.token_hash)? else {
            return refuse(RefreshRefusal::Unknown);
        };
        let org = rows::grant(&self.conn, &presented.grant_id)?
            .ok_or_else(|| internal("a refresh token's grant vanished"))?
            .org;
        self.enter(org)?;
        // Read again under the organisation's lock (PostgreSQL).
        let presented = rows::refresh_token(&self.conn, &refresh.token_hash)?
            .ok_or_else(|| internal("a refresh token vanished"))?;
        let grant = rows::grant(&self.conn, &presented.grant_id)?
            .ok_or_else(|| internal("a refresh token's grant vanished"))?;
        let current = rows::current_generation(&self.conn, &grant.grant_id)?;
        let root_jti = Jti::parse(&grant.root_jti).map_err(internal)?;
        let root = self
            .token(&root_jti)?
            .ok_or_else(|| internal("a grant root vanished"))?;
        // The current token's request is checked before the family moves,
        // and a refusal leaves it current; any presentation of an older
        // one is reuse, whatever it asks.
        if presented.used_at.is_none() {
            // A registered client deleted since refreshes nothing; a
            // client named by its metadata document has no row (its
            // refresh token came of what its document said at consent).
            if refresh.client_id != grant.client_id
                || (!ClientIdUrl::is_url(&grant.client_id)
                    && rows::client(&self.conn, org, &grant.client_id)?.is_none())
            {
                return refuse(RefreshRefusal::Unknown);
            }
            if let Some(resource) = &refresh.resource
                && Some(resource) != grant.resource.as_ref()
            {
                return refuse(RefreshRefusal::Resource);
            }
            let proof = refresh.holder.as_ref().map(Jkt::as_str);
            match (grant.cnf_jkt.as_deref(), proof) {
                (None, None) => {}
                (Some(bound), Some(jkt)) if bound == jkt => {}
                (Some(_), Some(_)) => return refuse(RefreshRefusal::Proof(DpopError::KeyMismatch)),
                (Some(_), None) => return refuse(RefreshRefusal::Proof(DpopError::Required)),
                (None, Some(_)) => return refuse(RefreshRefusal::Proof(DpopError::NotBound)),
            }
        }
        if grant.revoked_at.is_none() && root.standing.revoked {
            self.end_grant(&grant.grant_id, RevokeReason::RootRevoked, now)?;
            return refuse(RefreshRefusal::Family(FamilyError::Revoked));
        }
        let event = FamilyEvent::Refresh {
            presented: presented.generation,
            now: now.s(),
            idle_seconds: refresh.idle_seconds,
        };
        let next = match transition(family_state(&grant, current), event) {
            Ok(FamilyState::Active { generation, .. }) => generation,
            Ok(_) => return Err(internal("a refresh left its family inactive")),
            Err(refusal) => {
                if let FamilyState::Revoked(reason) = refusal.state
                    && grant.revoked_at.is_none()
                {
                    self.end_grant(&grant.grant_id, reason, now)?;
                }
                return refuse(RefreshRefusal::Family(refusal.error));
            }
        };
        let renewal = Renewal {
            now: now.s(),
            ttl_seconds: refresh.access_ttl_seconds,
            holder: refresh.holder,
            jti: refresh.access_jti,
            status: None,
        };
        let renewed = match refresh
            .scope
            .as_ref()
            .map(|asked| asked.within(&root.claims.svc_scope))
        {
            None => renew(&root.claims, renewal),
            Some(Ok(scope)) => renew_within(&root.claims, renewal, scope),
            Some(Err(why)) => return refuse(RefreshRefusal::Scope(why.to_string())),
        };
        let mut access = match renewed {
            Ok(access) => access,
            Err(IssueError::Widening(widening)) => {
                return refuse(RefreshRefusal::Scope(widening.to_string()));
            }
            Err(IssueError::ParentExpired) => {
                return refuse(RefreshRefusal::Family(FamilyError::Expired));
            }
            Err(other) => return Err(internal(other)),
        };
        let compact = self.issue_renewal(
            org,
            &root.claims,
            &mut access,
            &refresh.status_base,
            &refresh.key,
            now.ms(),
        )?;
        rows::insert_refresh_token(
            &self.conn,
            &refresh.next_hash,
            &grant.grant_id,
            next,
            now.ms(),
        )?;
        rows::use_refresh_token(
            &self.conn,
            &presented.token_hash,
            now.ms(),
            &refresh.next_hash,
        )?;
        rows::touch_grant(&self.conn, &grant.grant_id, now.ms())?;
        Ok(Refreshed::Issued {
            access: Box::new(access),
            compact,
        })
    }

    /// RFC 7009 for a refresh token: its whole grant ends
    /// (`client_revoked`; §2.1: the access tokens of the grant go with it).
    /// `client_id`, when given, must be the grant's client.
    pub fn revoke_refresh_token(
        &mut self,
        token_hash: &[u8],
        client_id: Option<&str>,
        now: Now,
    ) -> Result<ClientRevocation, LedgerError> {
        let Some(presented) = rows::refresh_token(&self.conn, token_hash)? else {
            return Ok(ClientRevocation::Done);
        };
        let grant = rows::grant(&self.conn, &presented.grant_id)?
            .ok_or_else(|| internal("a refresh token's grant vanished"))?;
        self.enter(grant.org)?;
        if client_id.is_some_and(|client| client != grant.client_id) {
            return Ok(ClientRevocation::OtherClient);
        }
        self.end_grant(&grant.grant_id, RevokeReason::ClientRevoked, now)?;
        Ok(ClientRevocation::Done)
    }

    /// RFC 7009 for an access token (`access`, verified by the caller): if
    /// it is a grant's — a renewal of a grant root — it is revoked, and
    /// nothing else. `client_id`, when given, must be the grant's client.
    /// A token of no grant is none of the authorization server's: nothing.
    pub fn revoke_access_token(
        &mut self,
        access: &Claims,
        client_id: Option<&str>,
        now: Now,
    ) -> Result<ClientRevocation, LedgerError> {
        let Some(parent) = &access.svc_parent else {
            return Ok(ClientRevocation::Done);
        };
        let Some(root) = tokens::jti_by_jth(&self.conn, parent)? else {
            return Ok(ClientRevocation::Done);
        };
        let Some(grant) = rows::grant_of_root(&self.conn, root.as_str())? else {
            return Ok(ClientRevocation::Done);
        };
        self.enter(grant.org)?;
        if client_id.is_some_and(|client| client != grant.client_id) {
            return Ok(ClientRevocation::OtherClient);
        }
        match self.revoke(
            &access.jti,
            Some(RevokeReason::ClientRevoked.as_str()),
            &Revoker::ApiKey(grant.org),
            now,
        ) {
            Ok(_) | Err(LedgerError::UnknownToken) => Ok(ClientRevocation::Done),
            Err(other) => Err(other),
        }
    }

    /// Revokes the grant `grant_id` of `org` (a person, by the API): its
    /// root and everything under it. Another organisation's grant is
    /// unknown; one revoked before stays as it was.
    pub fn revoke_grant(&mut self, org: Org, grant_id: &str, now: Now) -> Result<(), LedgerError> {
        self.enter(org)?;
        match rows::grant(&self.conn, grant_id)? {
            Some(grant) if grant.org == org => self.end_grant(grant_id, RevokeReason::Revoked, now),
            _ => Err(LedgerError::UnknownGrant),
        }
    }
}
