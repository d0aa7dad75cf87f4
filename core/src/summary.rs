//! The workflow summary of the spec's section 2.4, folded from records.
//!
//! Input rows are `(agent, action, result key, count)`: one row per record
//! with a count of 1, or pre-grouped rows from a database — the fold is the
//! same. The result key of a record is [`crate::RecordState::result_key`]:
//! its result, `denied` or `pending`.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::record::{Outcome, Status, result_key};

/// Records of one agent, action and result key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SummaryRow<'a> {
    pub agent_id: &'a str,
    pub action: &'a str,
    pub result: &'a str,
    pub count: u64,
}

/// Every action by every agent of one workflow, counted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkflowSummary {
    pub provenance_ref: String,
    pub total_records: u64,
    pub unique_agents: u64,
    pub actions_by_type: BTreeMap<String, u64>,
    pub results_by_type: BTreeMap<String, u64>,
}

/// Folds rows into the summary of the workflow `provenance_ref`.
pub fn summarize<'a>(
    provenance_ref: &str,
    rows: impl IntoIterator<Item = SummaryRow<'a>>,
) -> WorkflowSummary {
    let mut agents = BTreeSet::new();
    let mut summary = WorkflowSummary {
        provenance_ref: provenance_ref.to_owned(),
        total_records: 0,
        unique_agents: 0,
        actions_by_type: BTreeMap::new(),
        results_by_type: BTreeMap::new(),
    };
    for row in rows {
        if row.count == 0 {
            continue;
        }
        agents.insert(row.agent_id);
        summary.total_records = summary.total_records.saturating_add(row.count);
        for (map, key) in [
            (&mut summary.actions_by_type, row.action),
            (&mut summary.results_by_type, row.result),
        ] {
            let slot = map.entry(key.to_owned()).or_insert(0);
            *slot = slot.saturating_add(row.count);
        }
    }
    summary.unique_agents = agents.len() as u64;
    summary
}

/// A record as an offline summary reads it (the members of the server's
/// records that matter to it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordRow<'a> {
    pub agent_id: &'a str,
    pub action: &'a str,
    pub status: Status,
    pub result: Option<Outcome>,
    pub provenance_ref: Option<&'a str>,
}

/// Why records cannot be summarised as one workflow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SummaryError {
    #[error("give provenance_ref or records that carry provenance_ref")]
    MissingProvenance,
    #[error("a record belongs to another workflow than {0}")]
    ProvenanceMismatch(String),
}

impl SummaryError {
    /// Stable snake_case code.
    pub fn code(&self) -> &'static str {
        match self {
            SummaryError::MissingProvenance => "missing_provenance_ref",
            SummaryError::ProvenanceMismatch(_) => "provenance_mismatch",
        }
    }
}

/// The summary of one workflow from its records, as an offline SDK folds
/// records it holds: the workflow is `provenance_ref`, or else the first
/// one a record carries; a record of another workflow refuses them all.
pub fn summarize_records(
    records: &[RecordRow<'_>],
    provenance_ref: Option<&str>,
) -> Result<WorkflowSummary, SummaryError> {
    let provenance = provenance_ref
        .or_else(|| records.iter().find_map(|r| r.provenance_ref))
        .ok_or(SummaryError::MissingProvenance)?;
    if records
        .iter()
        .any(|r| r.provenance_ref.is_some_and(|p| p != provenance))
    {
        return Err(SummaryError::ProvenanceMismatch(provenance.to_owned()));
    }
    Ok(summarize(
        provenance,
        records.iter().map(|record| SummaryRow {
            agent_id: record.agent_id,
            action: record.action,
            result: result_key(record.status, record.result),
            count: 1,
        }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_of_one_workflow_are_summarised_and_others_refused() {
        let row = |agent_id, provenance_ref| RecordRow {
            agent_id,
            action: "read",
            status: Status::Completed,
            result: Some(Outcome::Success),
            provenance_ref,
        };
        let records = [row("a", Some("p")), row("b", None), row("a", Some("p"))];
        let summary = summarize_records(&records, None).unwrap();
        assert_eq!(
            (
                summary.provenance_ref.as_str(),
                summary.total_records,
                summary.unique_agents
            ),
            ("p", 3, 2)
        );
        assert_eq!(summarize_records(&records, Some("p")), Ok(summary));
        let mismatch = summarize_records(&records, Some("q")).unwrap_err();
        assert_eq!(mismatch.code(), "provenance_mismatch");
        let none = summarize_records(&[row("a", None)], None).unwrap_err();
        assert_eq!(none.code(), "missing_provenance_ref");
        assert_eq!(summarize_records(&[], Some("p")).unwrap().total_records, 0);
    }

    fn row<'a>(agent_id: &'a str, action: &'a str, result: &'a str, count: u64) -> SummaryRow<'a> {
        SummaryRow {
            agent_id,
            action,
            result,
            count,
        }
    }

    #[test]
    fn folds_rows() {
        let s = summarize(
            "prov_x",
            [
                row("a", "read", "success", 3),
                row("a", "write", "error", 1),
                row("b", "read", "success", 2),
                row("b", "delegate", "success", 1),
                row("c", "write", "denied", 1),
                row("d", "read", "success", 0),
            ],
        );
        assert_eq!(s.provenance_ref, "prov_x");
        assert_eq!(s.total_records, 8);
        assert_eq!(s.unique_agents, 3);
        assert_eq!(s.actions_by_type.get("read"), Some(&5));
        assert_eq!(s.actions_by_type.get("write"), Some(&2));
        assert_eq!(s.actions_by_type.get("delegate"), Some(&1));
        assert_eq!(s.results_by_type.get("success"), Some(&6));
        assert_eq!(s.results_by_type.get("denied"), Some(&1));
        assert_eq!(s.results_by_type.get("error"), Some(&1));
    }

    #[test]
    fn empty_workflow() {
        let s = summarize("prov_y", []);
        assert_eq!((s.total_records, s.unique_agents), (0, 0));
        assert!(s.actions_by_type.is_empty() && s.results_by_type.is_empty());
    }

    #[test]
    fn one_row_per_record_equals_grouped() {
        let single: Vec<_> = (0..3).map(|_| row("a", "read", "success", 1)).collect();
        assert_eq!(
            summarize("p", single),
            summarize("p", [row("a", "read", "success", 3)])
        );
    }
}
