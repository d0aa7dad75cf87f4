//! Mandate's reference identity verifier, a WebAssembly plugin.
//!
//! It shows the plugin ABI (docs/plugins.md) end to end and the shape of a
//! verdict. Its rule stands in for a biometric engine: evidence names a
//! subject and one capture per modality with a match score, and it is
//! verified when all six modalities of the spec (face liveness, deepfake
//! detection, voice, gesture, geolocation, behavioural) are present with a
//! score of at least 0.9. It does not — cannot — check that the captures are
//! genuine; a production engine would, inside the same ABI.

use serde::{Deserialize, Serialize};

/// The modalities the spec's L3 names.
pub const MODALITIES: [&str; 6] = [
    "face_liveness",
    "deepfake_detection",
    "voice",
    "gesture",
    "geolocation",
    "behavioural",
];

/// Lowest score that counts as a match.
pub const THRESHOLD: f64 = 0.9;

#[derive(Deserialize)]
struct Input {
    evidence: Evidence,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Evidence {
    subject: String,
    captures: Vec<Capture>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Capture {
    modality: String,
    score: f64,
}

/// A verdict, as the ABI defines it.
#[derive(Debug, PartialEq, Serialize)]
pub struct Verdict {
    pub verified: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub modalities: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

fn refuse(reason: String) -> Verdict {
    Verdict {
        verified: false,
        subject: None,
        modalities: Vec::new(),
        reason: Some(reason),
    }
}

fn valid_subject(subject: &str) -> bool {
    !subject.is_empty()
        && subject.len() <= 128
        && subject
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'@' | b'-'))
}

/// Judges one request (the JSON the host sends).
pub fn judge(input: &[u8]) -> Verdict {
    let evidence = match serde_json::from_slice::<Input>(input) {
        Ok(input) => input.evidence,
        Err(error) => return refuse(format!("the evidence is not subject + captures: {error}")),
    };
    if !valid_subject(&evidence.subject) {
        return refuse("the subject must be 1 to 128 characters of A-Z a-z 0-9 . _ : @ -".into());
    }
    for modality in MODALITIES {
        let mut matching = evidence.captures.iter().filter(|c| c.modality == modality);
        let (Some(capture), None) = (matching.next(), matching.next()) else {
            return refuse(format!("exactly one `{modality}` capture is required"));
        };
        if !(THRESHOLD..=1.0).contains(&capture.score) {
            return refuse(format!("the `{modality}` score is below {THRESHOLD}"));
        }
    }
    if let Some(other) = evidence.captures.iter().find(|c| !MODALITIES.contains(&c.modality.as_str())) {
        return refuse(format!("unknown modality `{}`", other.modality));
    }
    Verdict {
        verified: true,
        subject: Some(evidence.subject),
        modalities: MODALITIES.iter().map(|m| (*m).to_owned()).collect(),
        reason: None,
    }
}

/// Hands a buffer to the host as `(ptr << 32) | len`; it is never freed (each
/// call runs in a fresh instance).
fn hand_over(bytes: Vec<u8>) -> i64 {
    let bytes = Box::leak(bytes.into_boxed_slice());
    ((bytes.as_ptr() as usize as i64) << 32) | bytes.len() as i64
}

/// ABI: room for `len` input bytes.
#[unsafe(no_mangle)]
pub extern "C" fn mandate_alloc(len: i32) -> i32 {
    let buffer = Box::leak(vec![0u8; usize::try_from(len).unwrap_or(0)].into_boxed_slice());
    buffer.as_mut_ptr() as usize as i32
}

/// ABI: what this plugin is.
#[unsafe(no_mangle)]
pub extern "C" fn mandate_describe() -> i64 {
    hand_over(br#"{"abi":1,"kind":"identity-verifier","name":"reference"}"#.to_vec())
}

/// ABI: judge the input at `ptr`/`len`; returns the verdict's JSON.
///
/// # Safety
/// `ptr` and `len` must describe memory returned by `mandate_alloc` and
/// filled by the host, as the ABI requires.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mandate_call(ptr: i32, len: i32) -> i64 {
    // SAFETY: the host wrote `len` bytes at `ptr`, which `mandate_alloc` gave it.
    let input = unsafe { std::slice::from_raw_parts(ptr as usize as *const u8, usize::try_from(len).unwrap_or(0)) };
    let verdict = judge(input);
    hand_over(serde_json::to_vec(&verdict).unwrap_or_else(|_| br#"{"verified":false}"#.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evidence(score: f64, skip: Option<&str>) -> Vec<u8> {
        let captures: Vec<_> = MODALITIES
            .iter()
            .filter(|m| Some(**m) != skip)
            .map(|m| serde_json::json!({"modality": m, "score": score}))
            .collect();
        serde_json::to_vec(&serde_json::json!({
            "verifier": "reference",
            "evidence": {"subject": "person-42", "captures": captures}
        }))
        .unwrap()
    }

    #[test]
    fn verifies_six_good_captures() {
        let verdict = judge(&evidence(0.95, None));
        assert!(verdict.verified);
        assert_eq!(verdict.subject.as_deref(), Some("person-42"));
        assert_eq!(verdict.modalities.len(), 6);
    }

    #[test]
    fn refuses_weak_missing_or_malformed() {
        assert!(!judge(&evidence(0.5, None)).verified);
        assert!(!judge(&evidence(0.95, Some("voice"))).verified);
        assert!(!judge(b"not json").verified);
        assert!(judge(&evidence(0.95, Some("voice"))).reason.unwrap().contains("voice"));
    }
}
