//! Organisations and their API keys: made, listed and revoked through the
//! writer like every other change, so an organisation and its first owner
//! key are stored together, and a quota changed is the one the next write
//! is judged by.

use crate::store::database::ORGS_LOCK;
use crate::store::sql::{Connection, Dialect, params};
use mandate_core::{OrgId, Role};

use super::{Ledger, LedgerError};
use crate::apikeys::{self, KeyInfo, NewKey, NotRevoked};
use crate::clock::Now;
use crate::store::orgs::{self, NotCreated, Org, OrgRow, Quotas};

/// An organisation to create.
#[derive(Debug, Clone)]
pub struct NewOrg {
    pub id: OrgId,
    pub name: String,
    pub quotas: Quotas,
    /// The e-mail of its first owner key, if given.
    pub owner_email: Option<String>,
}

/// An organisation created, with its first owner key (shown once).
#[derive(Debug, Clone)]
pub struct OrgCreated {
    pub org: OrgRow,
    pub owner: KeyInfo,
    pub owner_key: String,
}

/// Creates an organisation and its first `owner` key through `conn` (the
/// ledger's, or an operator command's in its own transaction).
pub fn create_org(conn: &Connection, new: &NewOrg, now: Now) -> Result<OrgCreated, LedgerError> {
    if conn.dialect() == Dialect::Postgres {
        // Hosts hand out organisation numbers one at a time.
        conn.execute("SELECT pg_advisory_xact_lock(?1)", params![ORGS_LOCK])?;
    }
    let org = orgs::create(conn, &new.id, &new.name, new.quotas, now.ms())?.map_err(|refused| {
        match refused {
            NotCreated::NameTaken => LedgerError::OrgExists,
            NotCreated::Full => LedgerError::TooManyOrgs,
        }
    })?;
    let (owner, owner_key) = apikeys::create(
        conn,
        NewKey {
            org: org.org,
            role: Role::Owner,
            email: new.owner_email.as_deref(),
            is_admin: false,
        },
        now,
    )?;
    Ok(OrgCreated {
        org,
        owner,
        owner_key,
    })
}

impl Ledger {
    /// Creates an organisation and its first `owner` key.
    pub fn create_org(&mut self, new: &NewOrg, now: Now) -> Result<OrgCreated, LedgerError> {
        let created = create_org(&self.conn, new, now)?;
        self.quotas.insert(created.org.org, created.org.quotas);
        Ok(created)
    }

    /// Replaces the quotas of the organisation with this id.
    pub fn set_quotas(&mut self, id: &OrgId, quotas: Quotas) -> Result<OrgRow, LedgerError> {
        let mut org = orgs::by_id(&self.conn, id.as_str())?.ok_or(LedgerError::UnknownOrg)?;
        self.enter(org.org)?;
        orgs::set_quotas(&self.conn, org.org, quotas)?;
        self.quotas.insert(org.org, quotas);
        self.days.remove(&org.org);
        org.quotas = quotas;
        Ok(org)
    }

    /// Creates an API key of an organisation; returns it as listed and the
    /// key, which is shown once.
    pub fn create_key(
        &mut self,
        new: NewKey<'_>,
        now: Now,
    ) -> Result<(KeyInfo, String), LedgerError> {
        Ok(apikeys::create(&self.conn, new, now)?)
    }

    /// Revokes an API key of `org`, unless it is the admin key or the
    /// organisation's last active owner.
    pub fn revoke_key(&mut self, org: Org, id: &str, now: Now) -> Result<KeyInfo, LedgerError> {
        self.enter(org)?;
        apikeys::revoke(&self.conn, Some(org), id, now)?.map_err(|refused| match refused {
            NotRevoked::Unknown => LedgerError::UnknownKey,
            NotRevoked::AdminKey => LedgerError::AdminKey,
            NotRevoked::LastOwner => LedgerError::LastOwner,
        })
    }
}
