//! The agent a consent names when the human names none.
//!
//! `oauth-` followed by the first 20 characters (100 bits) of the
//! lowercase Crockford base32 of SHA-256(`client_id` ‖ 0x0A ‖ `human_ref`):
//! one agent per client and human, the same on every consent, so one human
//! consenting twice to one client gets one agent with two grant roots,
//! and two humans consenting to one public client get two agents
//! (DESIGN §14: an agent has one owner). The newline cannot occur in
//! either part (a `client_id` is a URI or an `mcl_` id; a `human_ref` is
//! `sha256:<hex>`), so the input reads one way. 26 characters of
//! `a-z 0-9 -`: a valid [`AgentId`].

use sha2::{Digest as _, Sha256};

use crate::ids::{AgentId, CROCKFORD, HumanRef};
use crate::limits::OAUTH_AGENT_CHARS;

/// The prefix of every agent id a consent makes.
pub const OAUTH_AGENT_PREFIX: &str = "oauth-";

/// The agent id of `client_id`'s grants from `human`.
pub fn oauth_agent_id(client_id: &str, human: &HumanRef) -> AgentId {
    let digest = Sha256::new()
        .chain_update(client_id.as_bytes())
        .chain_update([0x0A])
        .chain_update(human.as_str().as_bytes())
        .finalize();
    let mut id = String::with_capacity(OAUTH_AGENT_PREFIX.len() + OAUTH_AGENT_CHARS);
    id.push_str(OAUTH_AGENT_PREFIX);
    // Base32 over the digest's bits, most significant first (RFC 4648 §6
    // order, Crockford's alphabet): character i holds bits 5i..5i+5.
    for i in 0..OAUTH_AGENT_CHARS {
        let bit = i * 5;
        let hi = digest.get(bit / 8).copied().unwrap_or(0);
        let lo = digest.get(bit / 8 + 1).copied().unwrap_or(0);
        let window = (u16::from(hi) << 8) | u16::from(lo);
        let shift = 11 - (bit % 8);
        let digit = usize::from((window >> shift) & 0x1f);
        id.push(char::from(CROCKFORD.get(digit).copied().unwrap_or(b'0')));
    }
    AgentId::built(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn human(byte: u8) -> HumanRef {
        HumanRef::from_digest(&[byte; 32])
    }

    /// Fixed vector, computed apart from this code (Python's hashlib and
    /// base64.b32encode with the alphabet swapped for Crockford's).
    #[test]
    fn fixed_vector() {
        let id = oauth_agent_id("https://client.example/oauth/metadata.json", &human(0xab));
        assert_eq!(id.as_str(), "oauth-wmr4cpxfybhf47djvk5w");
        assert_eq!(AgentId::parse(id.as_str()).unwrap(), id);
        let id = oauth_agent_id("mcl_01jd0000000000000000000000", &human(0x01));
        assert_eq!(id.as_str(), "oauth-8mp0pxk955k6a33rfa7s");
    }

    #[test]
    fn one_agent_per_client_and_human() {
        let a = oauth_agent_id("https://a.example/c.json", &human(1));
        assert_eq!(a, oauth_agent_id("https://a.example/c.json", &human(1)));
        assert_ne!(a, oauth_agent_id("https://a.example/c.json", &human(2)));
        assert_ne!(a, oauth_agent_id("https://b.example/c.json", &human(1)));
        for id in [a, oauth_agent_id("", &human(0))] {
            assert_eq!(
                id.as_str().len(),
                OAUTH_AGENT_PREFIX.len() + OAUTH_AGENT_CHARS
            );
            assert!(id.as_str().starts_with(OAUTH_AGENT_PREFIX));
            assert_eq!(AgentId::parse(id.as_str()), Ok(id.clone()));
        }
    }
}
