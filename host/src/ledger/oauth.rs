//! OAuth on the write side. Today: an owner registers and deletes its
//! organisation's public clients. Every write takes its organisation's
//! lock first (PostgreSQL), as every write does.

use super::{Ledger, LedgerError};
use crate::clock::Now;
use crate::store::oauth::{self as rows, OAuthClient};
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
}
