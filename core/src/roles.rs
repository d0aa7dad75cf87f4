//! Who may do what inside an organisation: the five roles of an API key and
//! the permissions each holds, in one table ([`Role::permissions`]). The
//! server checks every API-key call against it; the dashboard shows only
//! what a role allows. An agent token holds no role: it acts with its own
//! scope and never rates, revokes by key or reads.

use serde::{Deserialize, Serialize};

/// The role of an API key within its organisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Manages the organisation's keys, and may do all the others may.
    Owner,
    /// Issues tokens for its own e-mail, and reads.
    Developer,
    /// Reads, rates records, revokes tokens, decides approvals and vouches
    /// for agents.
    Reviewer,
    /// Reads.
    Auditor,
    /// Asks for decisions (AuthZEN evaluations) and nothing else: the key
    /// of a gateway in front of tools.
    Gateway,
}

/// Something an API key may be allowed to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Permission {
    /// Read records, workflows, graphs, reputation and token status.
    Read,
    /// Issue root tokens for the key's own e-mail.
    Issue,
    /// Issue root tokens for any `developer_email`.
    IssueForAnyone,
    /// Give a completed record its human rating.
    Rate,
    /// Revoke a token and its descendants.
    Revoke,
    /// Create, list and revoke the organisation's API keys.
    ManageKeys,
    /// Approve or deny an action awaiting a human's approval.
    Decide,
    /// Create, change and delete the organisation's webhooks.
    ManageWebhooks,
    /// Vouch for an agent, and withdraw one's own vouches (the verified
    /// persons of the organisation: owners and reviewers).
    Vouch,
    /// Ask for a decision on an agent's act (an AuthZEN evaluation), which
    /// is recorded as the agent's act.
    Evaluate,
    /// Register and delete the organisation's OAuth clients (public
    /// clients registered in advance, docs/oauth.md).
    ManageClients,
}

impl Permission {
    /// Every permission, in the order the table lists them.
    pub const ALL: [Permission; 11] = [
        Permission::Read,
        Permission::Issue,
        Permission::IssueForAnyone,
        Permission::Rate,
        Permission::Revoke,
        Permission::ManageKeys,
        Permission::Decide,
        Permission::ManageWebhooks,
        Permission::Vouch,
        Permission::Evaluate,
        Permission::ManageClients,
    ];

    /// The permission's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Permission::Read => "read",
            Permission::Issue => "issue",
            Permission::IssueForAnyone => "issue_for_anyone",
            Permission::Rate => "rate",
            Permission::Revoke => "revoke",
            Permission::ManageKeys => "manage_keys",
            Permission::Decide => "decide",
            Permission::ManageWebhooks => "manage_webhooks",
            Permission::Vouch => "vouch",
            Permission::Evaluate => "evaluate",
            Permission::ManageClients => "manage_clients",
        }
    }
}

/// A role name that is none of the four.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("role must be owner, developer, reviewer, auditor or gateway")]
pub struct UnknownRole;

impl Role {
    /// Every role, most powerful first.
    pub const ALL: [Role; 5] = [
        Role::Owner,
        Role::Developer,
        Role::Reviewer,
        Role::Auditor,
        Role::Gateway,
    ];

    /// The role's name on the wire and in storage.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Developer => "developer",
            Role::Reviewer => "reviewer",
            Role::Auditor => "auditor",
            Role::Gateway => "gateway",
        }
    }

    /// The permission table: what each role may do.
    pub fn permissions(self) -> &'static [Permission] {
        use Permission::{
            Decide, Evaluate, Issue, IssueForAnyone, ManageClients, ManageKeys, ManageWebhooks,
            Rate, Read, Revoke, Vouch,
        };
        match self {
            Role::Owner => &[
                Read,
                Issue,
                IssueForAnyone,
                Rate,
                Revoke,
                ManageKeys,
                Decide,
                ManageWebhooks,
                Vouch,
                Evaluate,
                ManageClients,
            ],
            Role::Developer => &[Read, Issue],
            Role::Reviewer => &[Read, Rate, Revoke, Decide, Vouch],
            Role::Auditor => &[Read],
            Role::Gateway => &[Evaluate],
        }
    }

    /// Whether the role holds `permission`.
    pub fn allows(self, permission: Permission) -> bool {
        self.permissions().contains(&permission)
    }
}

impl std::str::FromStr for Role {
    type Err = UnknownRole;

    fn from_str(text: &str) -> Result<Role, UnknownRole> {
        Role::ALL
            .into_iter()
            .find(|role| role.as_str() == text)
            .ok_or(UnknownRole)
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_match_serde() {
        for role in Role::ALL {
            assert_eq!(role.as_str().parse::<Role>(), Ok(role));
            assert_eq!(serde_json::to_value(role).unwrap(), role.as_str());
        }
        for permission in Permission::ALL {
            assert_eq!(
                serde_json::to_value(permission).unwrap(),
                permission.as_str()
            );
        }
        assert_eq!("admin".parse::<Role>(), Err(UnknownRole));
        assert_eq!("Owner".parse::<Role>(), Err(UnknownRole));
    }

    #[test]
    fn an_owner_may_do_everything_the_others_may() {
        for role in Role::ALL {
            for permission in role.permissions() {
                assert!(Role::Owner.allows(*permission), "{role} {permission:?}");
            }
        }
    }
}
