//! The workflow summary of the spec's section 2.4, folded from records.
//!
//! Input rows are `(agent, action, result key, count)`: one row per record
//! with a count of 1, or pre-grouped rows from a database — the fold is the
//! same. The result key of a record is [`crate::RecordState::result_key`]:
//! its result, `denied` or `pending`.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

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

#[cfg(test)]
mod tests {
    use super::*;

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
