//! The trust graph's writes: a vouch by a person (an `owner`'s or a
//! `reviewer`'s API key) or by an agent (with its token, for an agent it
//! delegated to), and its withdrawal; each a leaf of the record log. And
//! the trust an attempt is judged with (`min_trust`): the minimum over the
//! agents of the acting token's chain of their scores in force
//! (`crate::trust`), an agent with no history of its own counting as its
//! delegator's.

use mandate_core::tlog::VouchPrincipal;
use mandate_core::trust::Voucher;
use mandate_core::{AgentId, Jti, KeyId, Ulid, VouchId, chain_trust};

use super::log::Logged;
use super::{Ledger, LedgerError, Token, internal};
use crate::clock::Now;
use crate::recordlog::events;
use crate::store::agents;
use crate::store::orgs::Org;
use crate::store::trust::{self as rows, Vouch, Withdrawal};
use crate::trust::Board;

/// Why a token's agent may not vouch or withdraw as it.
pub const NOT_ITS_AGENT: &str = "this token does not hold its agent's identity: it was delegated or issued under an agent id registered to another owner, before the registry";

/// Who vouches, or withdraws a vouch.
#[derive(Debug, Clone)]
pub enum VouchBy {
    /// A person's API key of organisation `org`; an `owner`'s may withdraw
    /// anyone's vouch.
    Key {
        org: Org,
        key_id: KeyId,
        owner: bool,
    },
    /// An agent, with its token (verified, with its proof when bound): it
    /// vouches only for agents holding a token delegated from it.
    Token(Jti),
}

/// A vouch to make.
#[derive(Debug, Clone)]
pub struct NewVouch {
    pub by: VouchBy,
    pub agent_id: AgentId,
    /// Millionths: 1 to 1,000,000.
    pub weight_ppm: u64,
    pub reason: Option<String>,
    /// Unix milliseconds, after `now`.
    pub expires_at: Option<i64>,
    /// Random bits of the vouch id.
    pub random: [u8; 10],
}

fn principal(voucher: &Voucher) -> VouchPrincipal {
    match voucher {
        Voucher::Human { key_id } => VouchPrincipal {
            by_key: Some(key_id.clone()),
            by_agent: None,
        },
        Voucher::Agent { agent_id } => VouchPrincipal {
            by_key: None,
            by_agent: Some(agent_id.clone()),
        },
    }
}

impl Ledger {
    /// Stores a vouch and logs it. The target must be an agent of the
    /// organisation (else unknown, as another organisation's); an agent
    /// vouches only for an agent holding a token delegated from the one it
    /// presents; a voucher holds one vouch in force per agent.
    pub fn vouch(&mut self, new: &NewVouch, now: Now) -> Result<Vouch, LedgerError> {
        let (org, voucher, presented) = self.voucher(&new.by, now)?;
        self.enter(org)?;
        let target = new.agent_id.as_str();
        if !rows::agent_exists(&self.conn, org, target)? {
            return Err(LedgerError::UnknownAgent);
        }
        if let (Voucher::Agent { agent_id }, Some(presented)) = (&voucher, &presented)
            && (agent_id == &new.agent_id
                || !rows::delegated_to(&self.conn, presented.as_str(), target)?)
        {
            return Err(LedgerError::VouchNotAllowed(
                "an agent vouches only for an agent it delegated to (one holding a token delegated from the token presented)",
            ));
        }
        if let Some(existing) = rows::active_from(&self.conn, org, &voucher, target, now.ms())? {
            return Err(LedgerError::VouchExists(format!(
                "this voucher has a vouch in force for this agent ({}); withdraw it first",
                existing.id
            )));
        }
        let ulid = Ulid::new(u64::try_from(now.ms()).unwrap_or(0), new.random).map_err(internal)?;
        let by = principal(&voucher);
        let mut vouch = Vouch {
            id: VouchId::new(ulid).as_str().to_owned(),
            org,
            by_key: by.by_key.as_ref().map(|k| k.as_str().to_owned()),
            by_agent: by.by_agent.as_ref().map(|a| a.as_str().to_owned()),
            agent_id: target.to_owned(),
            weight_ppm: new.weight_ppm,
            reason: new.reason.clone(),
            created_at: now.ms(),
            expires_at: new.expires_at,
            withdrawn_at: None,
            withdrawn_by_key: None,
            withdrawn_by_agent: None,
            log_created: None,
            log_withdrawn: None,
        };
        vouch.log_created = self.append(org, now.ms(), events::vouch_created(&vouch)?)?;
        self.logged_in(Logged::Vouches, &vouch.id)?;
        rows::insert(&self.conn, &vouch)?;
        self.touched.insert(org);
        Ok(vouch)
    }

    /// Withdraws a vouch of the withdrawer's organisation and logs it: by
    /// its voucher (the same API key, or the same agent), or an owner's
    /// key. A vouch withdrawn before is `vouch_withdrawn`.
    pub fn withdraw_vouch(
        &mut self,
        id: &VouchId,
        by: &VouchBy,
        now: Now,
    ) -> Result<Vouch, LedgerError> {
        let (org, voucher, _) = self.voucher(by, now)?;
        let owner = matches!(by, VouchBy::Key { owner: true, .. });
        self.enter(org)?;
        let mut vouch = rows::by_id(&self.conn, id.as_str())?
            .filter(|vouch| vouch.org == org)
            .ok_or(LedgerError::UnknownVouch)?;
        let allowed = owner
            || match &voucher {
                Voucher::Human { key_id } => vouch.by_key.as_deref() == Some(key_id.as_str()),
                Voucher::Agent { agent_id } => vouch.by_agent.as_deref() == Some(agent_id.as_str()),
            };
        if !allowed {
            return Err(LedgerError::VouchNotAllowed(
                "a vouch is withdrawn by its voucher (the same API key, or the same agent's token) or an owner's key",
            ));
        }
        if vouch.withdrawn_at.is_some() {
            return Err(LedgerError::VouchWithdrawn);
        }
        vouch.withdrawn_at = Some(now.ms());
        match &voucher {
            Voucher::Human { key_id } => vouch.withdrawn_by_key = Some(key_id.as_str().into()),
            Voucher::Agent { agent_id } => {
                vouch.withdrawn_by_agent = Some(agent_id.as_str().into());
            }
        }
        vouch.log_withdrawn = self.append(org, now.ms(), events::vouch_withdrawn(&vouch)?)?;
        self.logged_in(Logged::Vouches, &vouch.id)?;
        rows::withdraw(
            &self.conn,
            &vouch.id,
            &Withdrawal {
                at: now.ms(),
                by_key: vouch.withdrawn_by_key.as_deref(),
                by_agent: vouch.withdrawn_by_agent.as_deref(),
                log: vouch.log_withdrawn,
            },
        )?;
        self.touched.insert(org);
        Ok(vouch)
    }

    /// The organisation, the voucher and the token presented of `by`: an
    /// agent's token must be one this server holds, neither revoked nor
    /// expired, that speaks for its agent as registered (an agent vouches
    /// and withdraws by its own identity only: a token minted before the
    /// registry under a name another owns vouches as no one).
    fn voucher(
        &mut self,
        by: &VouchBy,
        now: Now,
    ) -> Result<(Org, Voucher, Option<Jti>), LedgerError> {
        match by {
            VouchBy::Key { org, key_id, .. } => Ok((
                *org,
                Voucher::Human {
                    key_id: key_id.clone(),
                },
                None,
            )),
            VouchBy::Token(jti) => {
                let token = self.token(jti)?.ok_or(LedgerError::TokenInactive)?;
                if let Some(reason) = token.inactive_reason(now.s()) {
                    return Err(LedgerError::HolderInactive {
                        expired: reason == mandate_core::DenyReason::TokenExpired,
                    });
                }
                if !agents::speaks_for_its_agent(&self.conn, token.standing.org, jti.as_str())? {
                    return Err(LedgerError::AgentNotYours(NOT_ITS_AGENT));
                }
                let agent_id = token.claims.agent_id().clone();
                Ok((
                    token.standing.org,
                    Voucher::Agent { agent_id },
                    Some(jti.clone()),
                ))
            }
        }
    }

    /// The trust in force for an act of `token` at `now_s`: the minimum
    /// over the agents of its chain (core's `chain_trust`), each agent's
    /// score in force, where an agent with no history of its own counts
    /// as its delegator's. The root's agent counts with its score, or,
    /// before the scores hold it, what the rule gives a new agent.
    pub(super) fn trust_in_force(&mut self, token: &Token, now_s: i64) -> Result<f64, LedgerError> {
        let org = token.standing.org;
        let scores = self.trust.org(org);
        let mut agents = Vec::with_capacity(token.claims.ancestors().len() + 1);
        for jth in token.claims.ancestors() {
            let ancestor = self
                .claims(jth)?
                .ok_or_else(|| internal("an ancestor token is missing"))?;
            agents.push(ancestor.agent_id().clone());
        }
        agents.push(token.claims.agent_id().clone());
        let score = |agent: &AgentId| {
            scores
                .as_ref()
                .and_then(|scores| scores.get(agent.as_str()).map(|score| score.trust))
        };
        let mut own = Vec::with_capacity(agents.len());
        for (i, agent) in agents.iter().enumerate() {
            own.push(if i == 0 {
                Some(score(agent).unwrap_or_else(|| Board::trust_of_new(1.0, now_s)))
            } else if scores
                .as_ref()
                .is_some_and(|scores| scores.has_history(agent.as_str()))
            {
                score(agent)
            } else {
                None
            });
        }
        // In whole millionths, as records keep it, and never above the
        // exact value: a value at the floor's edge is refused.
        Ok((chain_trust(own, 0.0) * 1_000_000.0).floor() / 1_000_000.0)
    }
}
