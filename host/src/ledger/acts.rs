//! What agents and humans do with records: attempt an action (record it in
//! one step, or authorize it and complete it later), complete it, rate it.

use std::sync::Arc;

use mandate_core::webhook::EventType;
use mandate_core::{
    AarId, Action, ApprovalId, Args, ArgsRules, ChainArgsDenial, Claims, CompletionSpendRefused,
    Decision, DenyReason, Jkt, Jti, Outcome, Rating, RecordEvent, RecordOrigin, RecordState,
    Resource, ResultHash, Usd, chain_requires_approval_with_args, check_chain_args,
    check_chain_budgets, check_completion_spend, transition,
};

use super::log::Logged;
use super::outbox::ChargedBy;
use super::{Ledger, LedgerError, Token, internal, new_aar_id};
use crate::clock::Now;
use crate::recordlog::events;
use crate::store::Owned;
use crate::store::approvals as approval_rows;
use crate::store::orgs::Org;
use crate::store::records::{self, Credential, NewRecord, Record, SummaryKey, micros};
use mandate_core::ProvenanceRef;
use mandate_core::limits::MAX_BULK_RATINGS;
use mandate_core::trust::meets_trust_floor;

/// What an agent asks to do.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub jti: Jti,
    pub credential: Credential,
    pub action: Action,
    pub resource: Resource,
    pub spend: Usd,
    /// Random bits of the record id.
    pub random: [u8; 10],
    /// The W3C `traceparent` the call carried, kept on the record.
    pub traceparent: Option<String>,
    /// The arguments the act is (or was) done with, judged against the
    /// chain's argument rules; the record keeps their hash.
    pub args: Option<Args>,
    /// The arguments as the record stores them (`[records] redact_args`
    /// applied), as canonical JSON; `None` when none were given.
    pub stored_args: Option<String>,
    /// The relay key of the gate that authorized it for a client (the
    /// client's proof forwarded with its own), kept on the record.
    pub relay_jkt: Option<Jkt>,
}

/// One action of a batch, as `record/action` takes it: the attempt and
/// what came of it.
#[derive(Debug, Clone)]
pub struct ActionReport {
    pub attempt: Attempt,
    pub result: Outcome,
    pub result_hash: Option<ResultHash>,
}

/// What came of an attempt that reached a token: a record, allowed or
/// denied.
#[derive(Debug, Clone)]
pub struct Attempted {
    pub aar_id: AarId,
    pub claims: Arc<Claims>,
    /// How the caller held the token: a refusal tells a holder more.
    pub credential: Credential,
    /// `None` when allowed; otherwise why the attempt was denied.
    pub denied: Option<DenyReason>,
    /// The approval an allowed attempt waits for, when a grant requires
    /// one.
    pub approval: Option<AwaitedApproval>,
    /// The trust in force the attempt was judged with; `None` when it was
    /// refused before trust (an inactive token, out of scope).
    pub trust_in_force: Option<f64>,
    /// Which argument rule and statement refused the attempt, when its
    /// arguments did: told to the token's holder only.
    pub args_denial: Option<ChainArgsDenial>,
}

/// What came of an AuthZEN evaluation.
#[derive(Debug, Clone)]
pub struct Evaluated {
    /// The record it made or used, and the decision.
    pub attempted: Attempted,
    /// Whether a record was written or changed (not when it was told of an
    /// approval still awaited).
    pub written: bool,
}

/// Why an attempt was denied, as judged.
enum Denied {
    Reason(DenyReason),
    /// By an argument rule of the chain: which one is told its holder.
    Args(ChainArgsDenial),
}

/// The approval an authorized attempt waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AwaitedApproval {
    pub approval_id: ApprovalId,
    /// Unix milliseconds.
    pub expires_at: i64,
}

/// What an agent reports when completing a pending record.
#[derive(Debug, Clone)]
pub struct Completion {
    pub aar_id: AarId,
    pub result: Outcome,
    pub result_hash: Option<ResultHash>,
    /// The actual spend; `None` keeps the reservation.
    pub spend: Option<Usd>,
    /// The token presented with the call (verified, with its proof when
    /// bound), if any.
    pub presented: Option<Jti>,
    /// The relay key whose proof stood in for the client's (a gate
    /// completing what it authorized): it must be the record's
    /// `relay_jkt`, and it completes within the reservation only.
    pub relay: Option<Jkt>,
}

/// The records of a workflow to rate at once: those completed with
/// `result` that await a rating.
#[derive(Debug, Clone)]
pub struct BulkRating {
    pub provenance_ref: ProvenanceRef,
    pub result: Outcome,
    pub rating: Rating,
    pub note: Option<String>,
}

/// A rating given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rated {
    pub aar_id: AarId,
    pub rating: Rating,
    /// Unix milliseconds.
    pub at: i64,
}

impl Ledger {
    /// Authorize, record and complete in one step (`record/action`), or
    /// record the denial. An unknown token writes nothing.
    pub fn record_action(
        &mut self,
        attempt: &Attempt,
        result: Outcome,
        result_hash: Option<&ResultHash>,
        now: Now,
    ) -> Result<Attempted, LedgerError> {
        self.attempt(
            attempt,
            result_hash,
            now,
            RecordOrigin::RecordAction,
            |decision, needs_approval| RecordEvent::record_action(decision, needs_approval, result),
        )
    }

    /// Records a batch of actions in one transaction, each exactly as
    /// [`Ledger::record_action`] records one and in the order given, so a
    /// record's budgets see the spend of those before it. A record refused
    /// without a record written (an unknown token, a bound token named by
    /// its jti, a quota used up) is that record's answer and the others go
    /// on; a failure of the store, or one after something was written,
    /// fails the whole batch and the writer rolls its group back.
    pub fn record_actions(
        &mut self,
        reports: &[ActionReport],
        now: Now,
    ) -> Result<Vec<Result<Attempted, LedgerError>>, LedgerError> {
        let mut outcomes = Vec::with_capacity(reports.len());
        for report in reports {
            let before = Owned::changes(self);
            match self.record_action(
                &report.attempt,
                report.result,
                report.result_hash.as_ref(),
                now,
            ) {
                Err(error @ LedgerError::Store(_)) => return Err(error),
                Err(error) if Owned::changes(self) != before => return Err(error),
                outcome => outcomes.push(outcome),
            }
        }
        Ok(outcomes)
    }

    /// Pre-flight check (`authorize`): a pending record, a denied one, or
    /// one awaiting a human's approval (with its spend reserved).
    pub fn authorize(&mut self, attempt: &Attempt, now: Now) -> Result<Attempted, LedgerError> {
        self.attempt(
            attempt,
            None,
            now,
            RecordOrigin::Authorize,
            RecordEvent::authorize,
        )
    }

    /// An AuthZEN evaluation by a gateway in front of the tool: judged
    /// exactly as [`Ledger::authorize`] judges an attempt, but recorded as
    /// made by an evaluation — permitted and completed (`success`) in one
    /// step, since a gateway never completes, or denied, or awaiting a
    /// human's approval — so it counts once against budgets and
    /// `max_actions` and never stays pending. An attempt that needs
    /// approval is asked once: while the evaluation that asked still waits,
    /// a matching one (same token, action, resource and `args_hash`) is
    /// told of the same approval and writes nothing; once it is approved,
    /// the first matching evaluation uses it (its record completes) and is
    /// permitted. An approved record whose token is no longer active is
    /// not used: the attempt is judged anew and refused.
    fn evaluate(&mut self, attempt: &Attempt, now: Now) -> Result<Evaluated, LedgerError> {
        self.share();
        let token = self
            .token(&attempt.jti)?
            .ok_or(LedgerError::TokenInactive)?;
        // Only an act a grant of the chain gates can have an approval to
        // wait for or to use: the others are judged without a look-up.
        let budgeted = self.budgeted(&token.claims)?;
        let gated = chain_requires_approval_with_args(
            budgeted.iter().map(|(_, constraints)| constraints),
            &attempt.action,
            &attempt.resource,
            attempt.spend,
            attempt.args.as_ref(),
        );
        // Only the look-up reads records: an ungated evaluation leaves the
        // group's records held, to be written with the group's others by
        // one statement.
        let open = match gated {
            true => {
                // One approval asked across hosts: matching evaluations
                // take turns.
                let org = token.standing.org;
                let args_hash = attempt.args.as_ref().map(Args::hash);
                self.touch(
                    org,
                    crate::store::locks::gate(
                        attempt.jti.as_str(),
                        attempt.action.as_str(),
                        attempt.resource.as_str(),
                        &args_hash
                            .as_ref()
                            .map(ToString::to_string)
                            .unwrap_or_default(),
                    ),
                )?;
                self.store_records()?;
                records::open_evaluation(
                    &self.conn,
                    attempt.jti.as_str(),
                    attempt.action.as_str(),
                    attempt.resource.as_str(),
                    attempt.args.as_ref().map(Args::hash).as_ref(),
                )?
            }
            false => None,
        };
        match open {
            Some(record) if record.state == RecordState::AwaitingApproval => {
                let approval = approval_rows::by_record(&self.conn, &record.aar_id)?
                    .ok_or_else(|| internal("a record awaiting approval has no approval"))?;
                Ok(Evaluated {
                    attempted: Attempted {
                        aar_id: AarId::parse(&record.aar_id).map_err(internal)?,
                        claims: token.claims,
                        credential: attempt.credential,
                        denied: None,
                        approval: Some(AwaitedApproval {
                            approval_id: ApprovalId::parse(&approval.id).map_err(internal)?,
                            expires_at: approval.expires_at,
                        }),
                        trust_in_force: record.trust_in_force,
                        args_denial: None,
                    },
                    written: false,
                })
            }
            Some(record) if token.inactive_reason(now.s()).is_none() => {
                let completion = Completion {
                    aar_id: AarId::parse(&record.aar_id).map_err(internal)?,
                    result: Outcome::Success,
                    result_hash: None,
                    spend: None,
                    presented: Some(attempt.jti.clone()),
                    relay: None,
                };
                let completed = self.complete(&completion, now)?;
                Ok(Evaluated {
                    attempted: Attempted {
                        aar_id: completion.aar_id,
                        claims: token.claims,
                        credential: attempt.credential,
                        denied: None,
                        approval: None,
                        trust_in_force: completed.trust_in_force,
                        args_denial: None,
                    },
                    written: true,
                })
            }
            _ => Ok(Evaluated {
                attempted: self.attempt_by(
                    token,
                    attempt,
                    None,
                    now,
                    RecordOrigin::Evaluation,
                    RecordEvent::evaluate,
                )?,
                written: true,
            }),
        }
    }

    /// [`Ledger::evaluate`] as one evaluation of a request that may hold
    /// several: a refusal that wrote nothing (an unknown token, a quota
    /// used up) is this evaluation's answer (`Ok(Err(…))`) and the others
    /// go on; a failure of the store, or one after something was written,
    /// fails the whole request and the writer rolls its group back.
    pub fn evaluate_one(
        &mut self,
        attempt: &Attempt,
        now: Now,
    ) -> Result<Result<Evaluated, LedgerError>, LedgerError> {
        let before = Owned::changes(self);
        match self.evaluate(attempt, now) {
            Err(error @ LedgerError::Store(_)) => Err(error),
            Err(error) if Owned::changes(self) != before => Err(error),
            outcome => Ok(outcome),
        }
    }

    /// Judges an attempt — the token's standing, then scope, then the
    /// trust in force of its chain against the token's `min_trust`, then every budget of
    /// its chain, then whether a grant of the chain requires approval — and
    /// records the outcome as made by `origin`.
    fn attempt(
        &mut self,
        attempt: &Attempt,
        result_hash: Option<&ResultHash>,
        now: Now,
        origin: RecordOrigin,
        event: impl FnOnce(Decision, bool) -> RecordEvent,
    ) -> Result<Attempted, LedgerError> {
        self.share();
        let token = self
            .token(&attempt.jti)?
            .ok_or(LedgerError::TokenInactive)?;
        self.attempt_by(token, attempt, result_hash, now, origin, event)
    }

    /// [`Ledger::attempt`] with the attempt's token read already, in this
    /// group (an evaluation reads it first to see whether an approval is
    /// involved).
    fn attempt_by(
        &mut self,
        token: Token,
        attempt: &Attempt,
        result_hash: Option<&ResultHash>,
        now: Now,
        origin: RecordOrigin,
        event: impl FnOnce(Decision, bool) -> RecordEvent,
    ) -> Result<Attempted, LedgerError> {
        if attempt.credential == Credential::Jti && token.claims.cnf.is_some() {
            return Err(LedgerError::DpopRequired);
        }
        let org = token.standing.org;
        let at = self.record_time(org, now.ms())?;
        self.check_record_quota(org, at)?;
        let (judged, budgeted, trust) = self.judge(&token, attempt, at / 1000)?;
        let (decision, args_denial) = match judged {
            Ok(()) => (Ok(()), None),
            Err(Denied::Reason(reason)) => (Err(reason), None),
            Err(Denied::Args(denial)) => (Err(denial.denial.into()), Some(denial)),
        };
        let needs_approval = decision.is_ok()
            && chain_requires_approval_with_args(
                budgeted.iter().map(|(_, constraints)| constraints),
                &attempt.action,
                &attempt.resource,
                attempt.spend,
                attempt.args.as_ref(),
            );
        let state = transition(None, event(decision, needs_approval)).map_err(internal)?;
        let aar_id = new_aar_id(at, attempt.random)?;
        let allowed = !matches!(state, RecordState::Denied { .. });
        let spend = if allowed { attempt.spend } else { Usd::ZERO };
        let args_hash = attempt.args.as_ref().map(Args::hash);
        // Without `keep_args`, arguments are kept only while a human has
        // them to decide on.
        let kept = self.keep_args || state == RecordState::AwaitingApproval;
        let record = NewRecord {
            aar_id: &aar_id,
            token: &token.claims,
            action: attempt.action.as_str(),
            resource: attempt.resource.as_str(),
            state,
            result_hash: if allowed { result_hash } else { None },
            spend,
            created_at: at,
            delegated_jti: None,
            credential: attempt.credential,
            traceparent: attempt.traceparent.as_deref(),
            origin,
            trust,
            args_hash: args_hash.as_ref(),
            args: attempt.stored_args.as_deref().filter(|_| kept),
            relay_jkt: attempt.relay_jkt.as_ref().map(Jkt::as_str),
        };
        self.insert_record(org, &record)?;
        let approval = match state {
            RecordState::AwaitingApproval => {
                Some(self.request_approval(org, &record, token.claims.exp)?)
            }
            _ => None,
        };
        if allowed {
            let by = ChargedBy {
                org,
                aar_id: &aar_id,
                at_ms: at,
            };
            self.charge(&budgeted, micros(spend), 1, by)?;
        }
        Ok(Attempted {
            aar_id,
            claims: token.claims,
            credential: attempt.credential,
            denied: state.deny_reason(),
            approval,
            trust_in_force: trust,
            args_denial,
        })
    }

    /// The decision on an attempt — the token's standing, then scope,
    /// then the argument rules of its chain, then the trust in force
    /// against `min_trust`, then every budget of its chain — the budgeted
    /// tokens to charge when it is allowed, and the trust in force it was
    /// judged with (the minimum over the token's chain; `None` when
    /// refused before trust).
    #[allow(clippy::type_complexity, reason = "one private caller")]
    fn judge(
        &mut self,
        token: &Token,
        attempt: &Attempt,
        now_s: i64,
    ) -> Result<(Result<(), Denied>, super::Budgeted, Option<f64>), LedgerError> {
        let refused = |reason: DenyReason| Err(Denied::Reason(reason));
        if let Some(reason) = token.inactive_reason(now_s) {
            return Ok((refused(reason), Vec::new(), None));
        }
        if let Err(denial) = token
            .claims
            .svc_scope
            .check(&attempt.action, &attempt.resource)
        {
            return Ok((refused(denial.into()), Vec::new(), None));
        }
        let budgeted = self.budgeted(&token.claims)?;
        // The token's own rules first (they hold its ancestors' too, so a
        // holder is told the rule by its place in its own grant), then
        // each ancestor's.
        let none = ArgsRules::default();
        let own = token
            .claims
            .svc_constraints
            .as_ref()
            .map_or(&none, |constraints| &constraints.args);
        let jth = token.claims.jth();
        let ancestors = budgeted
            .iter()
            .rev()
            .filter(|(ancestor, _)| *ancestor != jth)
            .map(|(_, constraints)| &constraints.args);
        if let Err(denial) = check_chain_args(
            std::iter::once(own).chain(ancestors),
            &attempt.action,
            &attempt.resource,
            attempt.args.as_ref(),
        ) {
            return Ok((Err(Denied::Args(denial)), Vec::new(), None));
        }
        let trust = self.trust_in_force(token, now_s)?;
        if !meets_trust_floor(token.claims.svc_constraints.as_ref(), Some(trust)) {
            return Ok((refused(DenyReason::TrustTooLow), Vec::new(), Some(trust)));
        }
        let decision = check_chain_budgets(&self.usage(&budgeted)?, attempt.spend)
            .map_err(|exceeded| Denied::Reason(exceeded.into()));
        Ok((decision, budgeted, Some(trust)))
    }

    /// A stored record, with the token it was made with.
    /// The organisation a record belongs to (not found as for any call that
    /// names a record).
    pub fn record_org(&mut self, aar_id: &AarId) -> Result<Org, LedgerError> {
        self.record(aar_id).map(|(record, _)| record.org())
    }

    fn record(&mut self, aar_id: &AarId) -> Result<(Record, Token), LedgerError> {
        self.store_records()?;
        let mut record =
            records::by_id(&self.conn, aar_id.as_str())?.ok_or(LedgerError::UnknownRecord)?;
        let org = record.org();
        let entered = self.enter(org)?;
        if self.touch(org, crate::store::locks::record(aar_id.as_str()))? || entered {
            // Read again under the keys: another host may have changed it
            // since.
            record =
                records::by_id(&self.conn, aar_id.as_str())?.ok_or(LedgerError::UnknownRecord)?;
        }
        let jti = Jti::parse(&record.jti).map_err(internal)?;
        let token = self
            .token(&jti)?
            .ok_or_else(|| internal("the record's token is missing"))?;
        Ok((record, token))
    }

    /// Closes a pending record. A record made with the token itself is
    /// completed only with that token or an ancestor's; one made with a bare
    /// `vat_jti` by its `aar_id`, as the spec shows. A caller that may not
    /// complete it and whose organisation cannot see it (another
    /// organisation's token, or none for a record made with a token) is told
    /// it does not exist. Spend up to what was authorized (the reservation,
    /// which is what an approval was granted for) is settled and the rest
    /// released; spend above it is judged again (`judge_extra_spend`). Once
    /// the record's token is revoked or expired, a completion still reports
    /// what happened, but may report spend up to the reservation and no
    /// more. A refusal changes nothing. A delegation's record (one waiting
    /// for approval) is the delegation's to close: its child, or its
    /// refusal, comes from repeating the delegation, so closing it here is
    /// refused (a repeat would otherwise answer 202 for ever).
    pub fn complete(&mut self, completion: &Completion, now: Now) -> Result<Record, LedgerError> {
        self.share();
        self.close(completion, now, false)
    }

    /// [`Ledger::complete`] by the delegation whose record this is.
    pub(super) fn complete_delegation(
        &mut self,
        completion: &Completion,
        now: Now,
    ) -> Result<Record, LedgerError> {
        self.close(completion, now, true)
    }

    fn close(
        &mut self,
        completion: &Completion,
        now: Now,
        by_delegation: bool,
    ) -> Result<Record, LedgerError> {
        let (mut record, token) = self.record(&completion.aar_id)?;
        match (&completion.presented, record.credential) {
            (Some(jti), _) => {
                if !token.claims.is_governed_by(jti) {
                    let org = crate::store::tokens::org_by_jth(&self.conn, &jti.hash())?;
                    return Err(if org == Some(record.org()) {
                        LedgerError::NotTheRecordsToken
                    } else {
                        LedgerError::UnknownRecord
                    });
                }
            }
            (None, Credential::Token) => return Err(LedgerError::UnknownRecord),
            (None, Credential::Jti) => {}
        }
        if let Some(relay) = &completion.relay
            && record.relay_jkt.as_deref() != Some(relay.as_str())
        {
            return Err(LedgerError::NotTheRelaysRecord);
        }
        if record.action == mandate_core::scope::DELEGATE_ACTION && !by_delegation {
            return Err(LedgerError::DelegationCloses);
        }
        let state = transition(Some(record.state), RecordEvent::Complete(completion.result))
            .map_err(LedgerError::Lifecycle)?;
        let budgeted = self.budgeted(&token.claims)?;
        let spend = completion.spend.unwrap_or(record.spend);
        if spend > record.spend {
            self.judge_extra_spend(completion, &record, &token, &budgeted, spend, now)?;
        }
        let at = now.ms();
        let aar_id = completion.aar_id.clone();
        let by = ChargedBy {
            org: record.org(),
            aar_id: &aar_id,
            at_ms: at,
        };
        self.charge(&budgeted, micros(spend) - micros(record.spend), 0, by)?;
        let before = record.state;
        record.state = state;
        record.result_hash = completion.result_hash.as_ref().map(ResultHash::to_string);
        record.spend = spend;
        record.completed_at = Some(at);
        let completed = events::record_completed(&record)?;
        record.log.completed = self.append(record.org(), at, completed)?;
        self.logged_in(Logged::Records, &record.aar_id)?;
        records::complete(
            &self.conn,
            &record.aar_id,
            &records::Completed {
                state,
                result_hash: completion.result_hash.as_ref(),
                spend,
                at,
                log: record.log.completed,
            },
        )?;
        self.counters.record_moved(
            record.org(),
            &record.agent_id,
            at,
            record.origin,
            Some(&before),
            &state,
        );
        if state
            .result()
            .is_some_and(|result| result != Outcome::Success)
        {
            self.emit_record(EventType::RecordFailed, &record, at)?;
        }
        self.counters.touch_workflow(&record.provenance_ref, 0, at);
        for (state, change) in [(before, -1), (state, 1)] {
            self.counters.count_in_summary(
                &SummaryKey {
                    provenance_ref: &record.provenance_ref,
                    agent_id: &record.agent_id,
                    action: &record.action,
                    result_key: state.result_key(),
                },
                change,
            );
        }
        Ok(record)
    }

    /// Judges a completion reporting `spend` above what `record` was
    /// authorized for. Only the token's holder may raise it — anyone who
    /// has seen the `aar_id` of a record made with a bare `vat_jti` may
    /// complete it — and only while the token is active; then core judges
    /// it as the attempt was judged: the chain's budgets, then its approval
    /// requirements.
    fn judge_extra_spend(
        &mut self,
        completion: &Completion,
        record: &Record,
        token: &Token,
        budgeted: &super::Budgeted,
        spend: Usd,
        now: Now,
    ) -> Result<(), LedgerError> {
        let aar_id = || completion.aar_id.clone();
        if completion.presented.is_none() {
            return Err(LedgerError::BeyondReservationWithoutToken {
                reserved: record.spend,
            });
        }
        if completion.relay.is_some() {
            return Err(LedgerError::BeyondReservationByRelay {
                reserved: record.spend,
            });
        }
        if let Some(reason) = token.inactive_reason(now.s()) {
            return Err(LedgerError::BeyondReservation {
                aar_id: aar_id(),
                expired: reason == DenyReason::TokenExpired,
            });
        }
        let action = Action::parse(&record.action).map_err(internal)?;
        let resource = Resource::parse(&record.resource).map_err(internal)?;
        let usage = self.usage(budgeted)?;
        check_completion_spend(&usage, &action, &resource, record.spend, spend).map_err(|refused| {
            match refused {
                CompletionSpendRefused::Budget(exceeded) => LedgerError::OverBudget {
                    aar_id: aar_id(),
                    exceeded,
                },
                CompletionSpendRefused::ApprovalRequired => LedgerError::CompletionNeedsApproval {
                    aar_id: aar_id(),
                    authorized: record.spend,
                    spend,
                },
            }
        })
    }

    /// Gives a completed record of `org` its one human rating, by the API
    /// key `by`. A record of another organisation is unknown.
    pub fn rate(
        &mut self,
        org: Org,
        aar_id: &AarId,
        rating: Rating,
        note: Option<&str>,
        by: &str,
        now: Now,
    ) -> Result<Rated, LedgerError> {
        self.share();
        self.enter(org)?;
        self.touch(org, crate::store::locks::record(aar_id.as_str()))?;
        self.store_records()?;
        let mut record = records::by_id(&self.conn, aar_id.as_str())?
            .filter(|record| record.org() == org)
            .ok_or(LedgerError::UnknownRecord)?;
        let before = record.state;
        let rated: RecordState =
            transition(Some(before), RecordEvent::Rate(rating)).map_err(LedgerError::Lifecycle)?;
        let at = now.ms();
        record.state = rated;
        record.note = note.map(str::to_owned);
        record.rated_by = Some(by.to_owned());
        let event = events::record_rated(&record)?;
        let log = self.append(org, at, event)?;
        self.logged_in(Logged::Records, aar_id.as_str())?;
        records::rate(
            &self.conn,
            aar_id.as_str(),
            &records::NewRating {
                rating,
                note,
                by,
                at,
                log,
            },
        )?;
        self.counters.record_moved(
            org,
            &record.agent_id,
            at,
            record.origin,
            Some(&before),
            &rated,
        );
        self.emit_record(EventType::RecordRated, &record, at)?;
        Ok(Rated {
            aar_id: aar_id.clone(),
            rating,
            at,
        })
    }

    /// Rates every completed record of a workflow of `org` with `result`
    /// that awaits a rating, each exactly as [`Ledger::rate`] rates one,
    /// in one transaction; more than `MAX_BULK_RATINGS` of them rates
    /// none. A record rated already is left alone, so a second call rates
    /// nothing.
    pub fn rate_workflow(
        &mut self,
        org: Org,
        bulk: &BulkRating,
        by: &str,
        now: Now,
    ) -> Result<Vec<AarId>, LedgerError> {
        self.enter(org)?;
        let workflow = bulk.provenance_ref.as_str();
        self.store_records()?;
        if !records::workflow_exists(&self.conn, org, workflow)? {
            return Err(LedgerError::UnknownWorkflow);
        }
        let limit = i64::try_from(MAX_BULK_RATINGS).unwrap_or(i64::MAX) + 1;
        let found = records::unrated_of_workflow(&self.conn, org, workflow, bulk.result, limit)?;
        if found.len() > MAX_BULK_RATINGS {
            return Err(LedgerError::TooManyRecords);
        }
        found
            .iter()
            .map(|id| {
                let aar_id = AarId::parse(id).map_err(internal)?;
                self.rate(org, &aar_id, bulk.rating, bulk.note.as_deref(), by, now)
                    .map(|rated| rated.aar_id)
            })
            .collect()
    }
}
