//! Work the server does without a request: expiring approvals nobody
//! decided in time, and deleting events every consumer is done with.
//! Both read the state's clock, so a test that moves the clock sees them
//! act, and both read what the database holds, so they pick up after a
//! restart where the last process left off.

use std::time::Duration;

use crate::AppState;
use crate::ledger::EXPIRY_BATCH;
use crate::store::StoreError;
use crate::store::approvals;

/// How often pending approvals are checked for expiry.
const APPROVAL_TICK: Duration = Duration::from_millis(250);
/// How often old events are pruned.
const PRUNE_TICK: Duration = Duration::from_secs(60);
/// Most events one prune deletes.
const PRUNE_BATCH: u32 = 10_000;

/// Expires approvals once they lapse: reads when the next one does, and
/// when that time has come, expires every lapsed one.
pub async fn expire_approvals(state: AppState) {
    let mut ticks = tokio::time::interval(APPROVAL_TICK);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let next = state
            .store
            .lookup(|conn| Ok::<_, StoreError>(approvals::next_expiry(conn)?))
            .await;
        let due = match next {
            Ok(next) => next.is_some_and(|at| at <= state.clock.now().ms()),
            Err(error) => {
                tracing::warn!(%error, "reading the next approval to expire failed");
                false
            }
        };
        if !due {
            continue;
        }
        loop {
            let now = state.clock.now();
            match state.write(move |ledger| ledger.expire_due(now)).await {
                Ok(expired) => {
                    for aar_id in &expired {
                        crate::spans::export(&state, aar_id);
                    }
                    if expired.len() < EXPIRY_BATCH as usize {
                        break;
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, "expiring approvals failed");
                    break;
                }
            }
        }
    }
}

/// Deletes events older than `[events] retain_hours` that every webhook of
/// their organisation has been sent.
pub async fn prune_events(state: AppState) {
    let retain_ms = i64::try_from(
        state
            .config
            .events
            .retain_hours
            .get()
            .saturating_mul(3_600_000),
    )
    .unwrap_or(i64::MAX);
    let mut ticks = tokio::time::interval(PRUNE_TICK);
    loop {
        ticks.tick().await;
        let before = state.clock.now().ms().saturating_sub(retain_ms);
        let pruned = state
            .store
            .write(move |ledger| ledger.prune_events(before, PRUNE_BATCH))
            .await;
        if let Err(error) = pruned {
            tracing::warn!(%error, "pruning old events failed");
        }
    }
}
