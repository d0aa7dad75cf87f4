//! `webhooks.json`: Standard Webhooks signatures made by core, messages a
//! receiver must accept or refuse (with the code core gives), secrets read
//! or refused, and Mandate's event payloads written canonically.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mandate_core::webhook::{
    AnyObject, Headers, Secret, WEBHOOK_TOLERANCE_SECONDS, parse_event, payload, sign,
    sign_headers, verify,
};
use mandate_core::{EventTime, EventType, MessageId};
use serde_json::{Value, json};

use crate::{NOW, Rng};

/// The example every Standard Webhooks library tests its signer with.
const STANDARD_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const STANDARD_ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
const STANDARD_TIMESTAMP: i64 = 1_614_265_330;
const STANDARD_BODY: &str = r#"{"test": 2432232314}"#;

fn secret_text(bytes: &[u8]) -> String {
    format!("whsec_{}", STANDARD.encode(bytes))
}

fn secret(text: &str) -> Secret {
    Secret::parse(text).expect("vector secrets are valid")
}

fn id(text: &str) -> MessageId {
    MessageId::parse(text).expect("vector ids are valid")
}

/// The payload of an event at `at_ms` with `data`.
fn event_body(event_type: EventType, at_ms: i64, data: &Value) -> String {
    let at = EventTime::from_unix_millis(at_ms).expect("vector times are in range");
    String::from_utf8(payload(event_type, at, data).expect("vector data is an object"))
        .expect("payloads are UTF-8")
}

/// A message: its headers (pairs) and body.
#[derive(Clone)]
struct Message {
    headers: Vec<(String, String)>,
    body: String,
}

impl Message {
    fn signed(secrets: &[&str], message_id: &str, timestamp: i64, body: &str) -> Message {
        let secrets: Vec<Secret> = secrets.iter().map(|s| secret(s)).collect();
        let signed = sign_headers(&secrets, &id(message_id), timestamp, body.as_bytes())
            .expect("vector messages sign");
        Message {
            headers: signed
                .pairs()
                .iter()
                .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
                .collect(),
            body: body.to_owned(),
        }
    }

    /// The message with the value of every header `name` replaced, or
    /// removed when `value` is `None`.
    fn with(&self, name: &str, value: Option<&str>) -> Message {
        let mut message = self.clone();
        message.headers = match value {
            Some(value) => message
                .headers
                .into_iter()
                .map(|(n, v)| {
                    if n == name {
                        (n, value.to_owned())
                    } else {
                        (n, v)
                    }
                })
                .collect(),
            None => message
                .headers
                .into_iter()
                .filter(|(n, _)| n != name)
                .collect(),
        };
        message
    }

    fn header(&self, name: &str) -> &str {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .expect("the header is there")
    }

    fn plus(&self, name: &str, value: &str) -> Message {
        let mut message = self.clone();
        message.headers.push((name.to_owned(), value.to_owned()));
        message
    }

    fn body(&self, body: &str) -> Message {
        let mut message = self.clone();
        body.clone_into(&mut message.body);
        message
    }
}

struct Cases {
    cases: Vec<Value>,
}

impl Cases {
    /// A case, its verdict computed by core: `verify`, then `parse_event`.
    /// A case at [`NOW`] under the default tolerance.
    fn add(
        &mut self,
        name: &str,
        description: &str,
        secrets: &[&str],
        message: &Message,
        expect_error: Option<&str>,
    ) {
        self.add_at(
            name,
            description,
            secrets,
            message,
            (NOW, None),
            expect_error,
        );
    }

    /// A case at `now`, under `tolerance` when given.
    fn add_at(
        &mut self,
        name: &str,
        description: &str,
        secrets: &[&str],
        message: &Message,
        (now, tolerance): (i64, Option<u64>),
        expect_error: Option<&str>,
    ) {
        let parsed: Vec<Secret> = secrets.iter().map(|s| secret(s)).collect();
        let headers = Headers::from_pairs(
            message
                .headers
                .iter()
                .map(|(n, v)| (n.as_str(), v.as_str())),
        );
        let tolerance_seconds = tolerance.unwrap_or(WEBHOOK_TOLERANCE_SECONDS);
        let verdict = headers
            .and_then(|headers| {
                verify(
                    &parsed,
                    &headers,
                    message.body.as_bytes(),
                    now,
                    tolerance_seconds,
                )
            })
            .and_then(|verified| {
                let event = parse_event::<AnyObject>(message.body.as_bytes())?;
                Ok((verified, event.event_type))
            });
        let expect = match &verdict {
            Ok((verified, _)) => json!({
                "valid": true,
                "id": verified.id,
                "timestamp": verified.timestamp,
                "secret_index": verified.secret_index,
                "event": serde_json::from_str::<Value>(&message.body).expect("a valid payload is JSON"),
            }),
            Err(error) => json!({ "valid": false, "error": error.code() }),
        };
        let got = verdict.as_ref().err().map(|e| e.code());
        assert_eq!(got, expect_error, "webhook case {name}");
        let mut case = json!({
            "name": name,
            "description": description,
            "secrets": secrets,
            "headers": message.headers.iter().map(|(n, v)| json!([n, v])).collect::<Vec<_>>(),
            "body": message.body,
            "now": now,
        });
        if let Some(tolerance) = tolerance {
            case["tolerance_seconds"] = json!(tolerance);
        }
        case["expect"] = expect;
        self.cases.push(case);
    }
}

/// Sample data of each event type. What each event's `data` holds is the
/// server's to define; these only give the payloads realistic members.
fn sample_data(event_type: EventType) -> Value {
    let aar = "aar_01kf8d1xq0a6hbjcg5n6y7r2tv";
    let workflow = "prov_01kf8d1xq0a6hbjcg5n6y7r2tw";
    match event_type {
        EventType::RecordDenied => json!({
            "aar_id": aar, "agent_id": "research-bot", "action": "write",
            "resource": "crm:contacts", "deny_reason": "scope_violation", "provenance_ref": workflow,
        }),
        EventType::RecordFailed => json!({
            "aar_id": aar, "agent_id": "research-bot", "action": "summarise",
            "resource": "files:/reports/q3.pdf", "provenance_ref": workflow,
        }),
        EventType::RecordRated => json!({
            "aar_id": aar, "agent_id": "research-bot", "rating": "approved", "provenance_ref": workflow,
        }),
        EventType::TokenRevoked => json!({
            "jth": "c2hhMjU2IG9mIGEgand0IGlkIGZvciB0aGUgdmVjdG9y", "reason": "compromised",
            "descendants": 3,
        }),
        EventType::ApprovalRequested => json!({
            "approval_id": "apr_01kf8d1xq0a6hbjcg5n6y7r2tx", "agent_id": "courier", "action": "pay",
            "resource": "billing:invoice-42", "amount_usd": 1250.5,
        }),
        EventType::ApprovalDecided => json!({
            "approval_id": "apr_01kf8d1xq0a6hbjcg5n6y7r2tx", "decision": "approved",
        }),
        EventType::BudgetThreshold => json!({
            "agent_id": "courier", "threshold": 0.8, "spent_usd": 40.0, "max_spend_usd": 50.0,
        }),
    }
}

pub(crate) fn webhook_vectors(rng: &mut Rng) -> Value {
    let current = secret_text(&rng.bytes::<32>("webhook secret current"));
    let previous = secret_text(&rng.bytes::<32>("webhook secret previous"));
    let other = secret_text(&rng.bytes::<32>("webhook secret other"));
    let short = secret_text(&rng.bytes::<24>("webhook secret 24 bytes"));
    let long = secret_text(&rng.bytes::<64>("webhook secret 64 bytes"));
    let at_ms = NOW * 1000 - 1_234;
    let message_id = MessageId::new(rng.ulid_ms(at_ms as u64, "webhook message id")).to_string();
    let body = event_body(
        EventType::RecordDenied,
        at_ms,
        &sample_data(EventType::RecordDenied),
    );

    let known = |name: &str, secret_text: &str, message: &str, timestamp: i64, body: &str| {
        json!({
            "name": name,
            "secret": secret_text,
            "id": message,
            "timestamp": timestamp,
            "body": body,
            "signature": sign(&secret(secret_text), &id(message), timestamp, body.as_bytes()),
        })
    };
    let unicode_body = event_body(
        EventType::RecordRated,
        at_ms,
        &json!({"note": "très bien ✓ 𝄞", "rating": "approved"}),
    );
    let signatures = vec![
        known(
            "standard_webhooks_example",
            STANDARD_SECRET,
            STANDARD_ID,
            STANDARD_TIMESTAMP,
            STANDARD_BODY,
        ),
        known("mandate_event", &current, &message_id, NOW, &body),
        known("secret_of_24_bytes", &short, &message_id, NOW, &body),
        known("secret_of_64_bytes", &long, &message_id, NOW, &body),
        known("empty_body", &current, &message_id, NOW, ""),
        known("non_ascii_body", &current, &message_id, NOW, &unicode_body),
    ];

    let standard_bytes = STANDARD
        .decode(STANDARD_SECRET.trim_start_matches("whsec_"))
        .expect("the standard's secret is base64");
    let secret_case = |name: &str, text: &str| {
        let expect = match Secret::parse(text) {
            Ok(_) => json!({"valid": true}),
            Err(error) => json!({"valid": false, "error": error.code()}),
        };
        json!({"name": name, "secret": text, "expect": expect})
    };
    let bytes32 = rng.bytes::<32>("webhook secret parsing");
    let bytes65 = [7u8; 65];
    let secrets = vec![
        secret_case("valid_32_bytes", &secret_text(&bytes32)),
        secret_case("valid_24_bytes", STANDARD_SECRET),
        secret_case("valid_64_bytes", &long),
        secret_case("too_short_23_bytes", &secret_text(&bytes32[..23])),
        secret_case("too_long_65_bytes", &secret_text(&bytes65)),
        secret_case("no_prefix", current.trim_start_matches("whsec_")),
        secret_case("prefix_upper_case", &current.replace("whsec_", "WHSEC_")),
        secret_case("asymmetric_prefix", &current.replace("whsec_", "whsk_")),
        secret_case("prefix_only", "whsec_"),
        secret_case("empty", ""),
        secret_case(
            "url_safe_alphabet",
            &format!(
                "whsec_{}",
                base64::engine::general_purpose::URL_SAFE.encode([0xfb; 33])
            ),
        ),
        secret_case("missing_padding", current.trim_end_matches('=')),
        secret_case("extra_padding", &format!("{current}=")),
        secret_case("trailing_space", &format!("{current} ")),
        secret_case(
            "line_break_inside",
            &format!("{}\n{}", &current[..20], &current[20..]),
        ),
    ];
    assert_eq!(standard_bytes.len(), 24);

    let mut cases = Cases { cases: Vec::new() };
    let good = Message::signed(&[&current], &message_id, NOW, &body);
    let rotating = Message::signed(&[&current, &previous], &message_id, NOW, &body);
    let v1 = good.header("webhook-signature").to_owned();
    let v1_b64 = v1.trim_start_matches("v1,").to_owned();
    let c = &mut cases;
    c.add(
        "valid",
        "a message signed with the receiver's secret",
        &[&current],
        &good,
        None,
    );
    c.add(
        "rotation_sender_signs_with_both_receiver_has_new",
        "during a rotation the sender signs with the new and the old secret; a receiver holding the new one accepts",
        &[&current],
        &rotating,
        None,
    );
    c.add(
        "rotation_sender_signs_with_both_receiver_has_old",
        "the same message; a receiver still holding the old secret accepts",
        &[&previous],
        &rotating,
        None,
    );
    c.add(
        "rotation_receiver_holds_both",
        "a receiver holding the old and the new secret accepts a message signed with the new one only (secret_index 1)",
        &[&previous, &current],
        &good,
        None,
    );
    c.add(
        "rotation_over_receiver_has_old_only",
        "after the rotation the sender signs with the new secret only; a receiver that kept only the old one refuses",
        &[&previous],
        &good,
        Some("webhook_signature_invalid"),
    );
    let cased = Message {
        headers: good
            .headers
            .iter()
            .map(|(n, v)| (n.to_ascii_uppercase(), v.clone()))
            .collect(),
        body: body.clone(),
    };
    c.add(
        "header_names_in_upper_case",
        "header names are case-insensitive",
        &[&current],
        &cased,
        None,
    );
    c.add(
        "other_headers_ignored",
        "headers other than the three are not looked at",
        &[&current],
        &good
            .plus("content-type", "application/json")
            .plus("user-agent", "Mandate-Webhooks/1"),
        None,
    );
    let v1a = STANDARD.encode([9u8; 64]);
    c.add(
        "other_schemes_skipped",
        "signatures of other schemes (v1a, v2) are skipped; the v1 one matches",
        &[&current],
        &good.with(
            "webhook-signature",
            Some(&format!("v1a,{v1a} v2,{v1_b64} {v1}")),
        ),
        None,
    );
    c.add(
        "several_spaces",
        "empty entries of the list (repeated spaces) are skipped",
        &[&current],
        &good.with(
            "webhook-signature",
            Some(&format!("v1,{}  {v1}", STANDARD.encode([1u8; 32]))),
        ),
        None,
    );
    c.add(
        "oldest_accepted",
        "a timestamp exactly the tolerance (300 s) old",
        &[&current],
        &Message::signed(&[&current], &message_id, NOW - 300, &body),
        None,
    );
    c.add(
        "latest_accepted",
        "a timestamp exactly the tolerance (300 s) ahead",
        &[&current],
        &Message::signed(&[&current], &message_id, NOW + 300, &body),
        None,
    );
    c.add_at(
        "wider_tolerance",
        "an hour-old message under a tolerance of two hours",
        &[&current],
        &Message::signed(&[&current], &message_id, NOW - 3600, &body),
        (NOW, Some(7200)),
        None,
    );
    for event_type in EventType::ALL {
        let name = format!("event_{}", event_type.as_str().replace('.', "_"));
        let event_body = event_body(event_type, at_ms, &sample_data(event_type));
        c.add(
            &name,
            &format!("a {event_type} event"),
            &[&current],
            &Message::signed(&[&current], &message_id, NOW, &event_body),
            None,
        );
    }
    c.add(
        "non_ascii_payload",
        "a payload with accents and characters beyond the BMP",
        &[&current],
        &Message::signed(&[&current], &message_id, NOW, &unicode_body),
        None,
    );
    let spaced = serde_json::to_string_pretty(
        &serde_json::from_str::<Value>(&body).expect("the body is JSON"),
    )
    .expect("JSON serialises");
    c.add(
        "payload_in_any_form",
        "a payload signed as sent, with spaces and another member order, reads",
        &[&current],
        &Message::signed(&[&current], &message_id, NOW, &spaced),
        None,
    );
    // Refusals of the signature.
    let mut tampered = body.clone();
    tampered = tampered.replace("scope_violation", "scope_violatioN");
    c.add(
        "tampered_body",
        "one character of the body changed",
        &[&current],
        &good.body(&tampered),
        Some("webhook_signature_invalid"),
    );
    c.add(
        "body_parsed_and_serialised_again",
        "the body re-serialised (with spaces) by a receiver: the bytes signed are the bytes sent",
        &[&current],
        &good.body(&spaced),
        Some("webhook_signature_invalid"),
    );
    c.add(
        "wrong_secret",
        "the receiver holds another secret",
        &[&other],
        &good,
        Some("webhook_signature_invalid"),
    );
    c.add(
        "wrong_secrets",
        "none of the receiver's secrets is the sender's",
        &[&other, &previous],
        &good,
        Some("webhook_signature_invalid"),
    );
    let other_id =
        MessageId::new(rng.ulid_ms(at_ms as u64, "webhook other message id")).to_string();
    c.add(
        "tampered_id",
        "webhook-id changed",
        &[&current],
        &good.with("webhook-id", Some(&other_id)),
        Some("webhook_signature_invalid"),
    );
    c.add(
        "tampered_timestamp",
        "webhook-timestamp moved by one second, within the tolerance",
        &[&current],
        &good.with("webhook-timestamp", Some(&(NOW + 1).to_string())),
        Some("webhook_signature_invalid"),
    );
    c.add(
        "signature_truncated",
        "the signature cut short",
        &[&current],
        &good.with("webhook-signature", Some(&v1[..v1.len() - 4])),
        Some("webhook_signature_invalid"),
    );
    c.add(
        "signature_without_padding",
        "the base64 of the signature without its `=`",
        &[&current],
        &good.with("webhook-signature", Some(v1.trim_end_matches('='))),
        Some("webhook_signature_invalid"),
    );
    c.add(
        "signature_in_hex",
        "the right HMAC in hex instead of base64",
        &[&current],
        &good.with(
            "webhook-signature",
            Some(&format!(
                "v1,{}",
                crate::hex(&STANDARD.decode(&v1_b64).expect("base64"))
            )),
        ),
        Some("webhook_signature_invalid"),
    );
    c.add(
        "signature_of_another_scheme_only",
        "the right HMAC labelled v2: no v1 signature",
        &[&current],
        &good.with("webhook-signature", Some(&format!("v2,{v1_b64}"))),
        Some("webhook_signature_missing"),
    );
    c.add(
        "signature_version_upper_case",
        "`V1,…` is not `v1,…`",
        &[&current],
        &good.with("webhook-signature", Some(&format!("V1,{v1_b64}"))),
        Some("webhook_signature_missing"),
    );
    c.add(
        "signature_without_version",
        "the base64 alone",
        &[&current],
        &good.with("webhook-signature", Some(&v1_b64)),
        Some("webhook_signature_missing"),
    );
    c.add(
        "signature_header_missing",
        "no webhook-signature",
        &[&current],
        &good.with("webhook-signature", None),
        Some("webhook_signature_missing"),
    );
    c.add(
        "signature_header_empty",
        "an empty webhook-signature",
        &[&current],
        &good.with("webhook-signature", Some("")),
        Some("webhook_signature_missing"),
    );
    // Refusals of the headers.
    c.add(
        "id_missing",
        "no webhook-id",
        &[&current],
        &good.with("webhook-id", None),
        Some("webhook_header_missing"),
    );
    c.add(
        "timestamp_missing",
        "no webhook-timestamp",
        &[&current],
        &good.with("webhook-timestamp", None),
        Some("webhook_header_missing"),
    );
    // Signed as a careless sender would, so only the id's form refuses it.
    let dotted = {
        use hmac::{Hmac, Mac as _};
        let key = STANDARD
            .decode(current.trim_start_matches("whsec_"))
            .expect("base64");
        let mut mac = <Hmac<sha2::Sha256> as hmac::digest::KeyInit>::new_from_slice(&key)
            .expect("any key length");
        mac.update(format!("msg_1.5.{NOW}.{body}").as_bytes());
        let signature = format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()));
        Message {
            headers: vec![
                ("webhook-id".into(), "msg_1.5".into()),
                ("webhook-timestamp".into(), NOW.to_string()),
                ("webhook-signature".into(), signature),
            ],
            body: body.clone(),
        }
    };
    c.add(
        "id_with_a_dot",
        "a webhook-id holding `.`, which would make the signed text ambiguous, signed correctly",
        &[&current],
        &dotted,
        Some("webhook_header_malformed"),
    );
    c.add(
        "id_empty",
        "an empty webhook-id",
        &[&current],
        &good.with("webhook-id", Some("")),
        Some("webhook_header_malformed"),
    );
    c.add(
        "id_too_long",
        "a webhook-id of 129 characters",
        &[&current],
        &good.with("webhook-id", Some(&"m".repeat(129))),
        Some("webhook_header_malformed"),
    );
    for (name, description, timestamp) in [
        (
            "timestamp_not_a_number",
            "webhook-timestamp is not a number",
            "yesterday".to_owned(),
        ),
        (
            "timestamp_leading_zero",
            "a leading zero",
            format!("0{NOW}"),
        ),
        ("timestamp_plus_sign", "a plus sign", format!("+{NOW}")),
        ("timestamp_negative", "a negative number", format!("-{NOW}")),
        (
            "timestamp_fraction",
            "a fraction of a second",
            format!("{NOW}.5"),
        ),
        (
            "timestamp_rfc3339",
            "a date instead of unix seconds",
            "2027-01-15T08:00:00Z".to_owned(),
        ),
        (
            "timestamp_with_space",
            "a space inside (HTTP trims the ends only)",
            "1800 000000".to_owned(),
        ),
        (
            "timestamp_empty",
            "an empty webhook-timestamp",
            String::new(),
        ),
        (
            "timestamp_beyond_64_bits",
            "a number beyond i64",
            "99999999999999999999".to_owned(),
        ),
    ] {
        c.add(
            name,
            description,
            &[&current],
            &good.with("webhook-timestamp", Some(&timestamp)),
            Some("webhook_header_malformed"),
        );
    }
    c.add(
        "id_given_twice",
        "two webhook-id headers",
        &[&current],
        &good.plus("webhook-id", &message_id),
        Some("webhook_header_malformed"),
    );
    c.add(
        "signature_given_twice",
        "two webhook-signature headers (names differing in case)",
        &[&current],
        &good.plus("Webhook-Signature", &v1),
        Some("webhook_header_malformed"),
    );
    // Refusals of the moment.
    c.add(
        "timestamp_too_old",
        "signed 301 s before now",
        &[&current],
        &Message::signed(&[&current], &message_id, NOW - 301, &body),
        Some("webhook_timestamp_too_old"),
    );
    c.add(
        "timestamp_in_future",
        "signed 301 s after now",
        &[&current],
        &Message::signed(&[&current], &message_id, NOW + 301, &body),
        Some("webhook_timestamp_in_future"),
    );
    c.add(
        "timestamp_in_milliseconds",
        "a sender writing milliseconds, signed correctly",
        &[&current],
        &Message::signed(&[&current], &message_id, NOW * 1000, &body),
        Some("webhook_timestamp_in_future"),
    );
    c.add_at(
        "replayed_an_hour_later",
        "a valid message presented again an hour later",
        &[&current],
        &good,
        (NOW + 3600, None),
        Some("webhook_timestamp_too_old"),
    );
    c.add(
        "old_and_tampered",
        "an old message with a changed body: the timestamp is checked first",
        &[&current],
        &Message::signed(&[&current], &message_id, NOW - 301, &body).body(&tampered),
        Some("webhook_timestamp_too_old"),
    );
    c.add(
        "no_secret",
        "the receiver gives no secret",
        &[],
        &good,
        Some("webhook_no_secret"),
    );
    // Signed messages whose payload is not a Mandate event.
    let at = EventTime::from_unix_millis(at_ms)
        .expect("in range")
        .to_string();
    for (name, description, payload, code) in [
        (
            "payload_not_json",
            "the body is not JSON",
            "hello".to_owned(),
            "webhook_payload_invalid",
        ),
        (
            "payload_empty",
            "an empty body",
            String::new(),
            "webhook_payload_invalid",
        ),
        (
            "payload_an_array",
            "a JSON array",
            "[]".to_owned(),
            "webhook_payload_invalid",
        ),
        (
            "payload_unknown_type",
            "an event type Mandate does not send",
            format!(r#"{{"data":{{}},"timestamp":"{at}","type":"record.created"}}"#),
            "webhook_event_type_unknown",
        ),
        (
            "payload_type_not_a_string",
            "type is a number",
            format!(r#"{{"data":{{}},"timestamp":"{at}","type":7}}"#),
            "webhook_payload_invalid",
        ),
        (
            "payload_extra_member",
            "a member besides type, timestamp and data",
            format!(r#"{{"data":{{}},"id":"x","timestamp":"{at}","type":"record.denied"}}"#),
            "webhook_payload_invalid",
        ),
        (
            "payload_without_data",
            "no data",
            format!(r#"{{"timestamp":"{at}","type":"record.denied"}}"#),
            "webhook_payload_invalid",
        ),
        (
            "payload_data_not_an_object",
            "data is an array",
            format!(r#"{{"data":[1],"timestamp":"{at}","type":"record.denied"}}"#),
            "webhook_payload_invalid",
        ),
        (
            "payload_timestamp_without_milliseconds",
            "timestamp without its three decimals",
            r#"{"data":{},"timestamp":"2027-01-15T07:59:58Z","type":"record.denied"}"#.to_owned(),
            "webhook_payload_invalid",
        ),
        (
            "payload_timestamp_with_offset",
            "timestamp with an offset instead of Z",
            r#"{"data":{},"timestamp":"2027-01-15T08:59:58.766+01:00","type":"record.denied"}"#
                .to_owned(),
            "webhook_payload_invalid",
        ),
        (
            "payload_timestamp_not_a_date",
            "timestamp on 30 February",
            r#"{"data":{},"timestamp":"2027-02-30T07:59:58.766Z","type":"record.denied"}"#
                .to_owned(),
            "webhook_payload_invalid",
        ),
        (
            "payload_member_twice",
            "type given twice",
            format!(
                r#"{{"data":{{}},"timestamp":"{at}","type":"record.denied","type":"record.failed"}}"#
            ),
            "webhook_payload_invalid",
        ),
    ] {
        c.add(
            name,
            description,
            &[&current],
            &Message::signed(&[&current], &message_id, NOW, &payload),
            Some(code),
        );
    }

    json!({
        "description": "Standard Webhooks vectors (symmetric v1 signatures) and Mandate's event payloads. `signatures`: sign `body` (UTF-8) with `secret` for `id` and `timestamp`; expect `signature` (the first is the standard's own example). `secrets`: read each `secret`; expect validity or the code. `cases`: verify the message (`headers` as [name, value] pairs in the order sent; `body` UTF-8) with the receiver's `secrets` at `now` (unix seconds), under `tolerance_seconds` when given, else 300; then read the payload. Expect `valid` with the message's `id`, `timestamp`, the index of the secret that matched and the event, or the code of the first refusal. `payloads`: write the payload of `type` at `at_ms` with `data`; expect `body` or the code. `event_times`: unix milliseconds and their RFC 3339 text, and texts refused.",
        "generator": "cargo xtask vectors",
        "event_types": EventType::ALL.iter().map(|e| e.as_str()).collect::<Vec<_>>(),
        "tolerance_seconds": WEBHOOK_TOLERANCE_SECONDS,
        "signatures": signatures,
        "secrets": secrets,
        "cases": cases.cases,
        "payloads": payload_vectors(at_ms),
        "event_times": event_time_vectors(),
    })
}

fn payload_vectors(at_ms: i64) -> Value {
    let case = |name: &str, event_type: &str, at_ms: i64, data: Value| {
        let expect = event_type
            .parse::<EventType>()
            .and_then(|event_type| {
                let at = EventTime::from_unix_millis(at_ms)?;
                payload(event_type, at, &data)
            })
            .map(|bytes| String::from_utf8(bytes).expect("payloads are UTF-8"));
        let expect = match expect {
            Ok(body) => json!({"body": body}),
            Err(error) => json!({"error": error.code()}),
        };
        json!({"name": name, "type": event_type, "at_ms": at_ms, "data": data, "expect": expect})
    };
    let mut cases: Vec<Value> = EventType::ALL
        .iter()
        .map(|event_type| {
            case(
                &event_type.as_str().replace('.', "_"),
                event_type.as_str(),
                at_ms,
                sample_data(*event_type),
            )
        })
        .collect();
    cases.extend([
        case(
            "members_sorted_at_every_level",
            "record.failed",
            at_ms,
            json!({"z": {"b": 1, "a": [{"d": 0, "c": 0}]}, "a": null, "B": true, "_": false}),
        ),
        case(
            "members_sorted_by_utf16",
            "record.failed",
            at_ms,
            json!({"\u{e000}": 1, "\u{1d11e}": 2, "é": 3, "e": 4}),
        ),
        case(
            "numbers_as_ecmascript",
            "budget.threshold",
            at_ms,
            json!({"whole": 50.0, "half": 0.5, "tiny": 1e-7, "small": 0.000001, "big": 1e21, "sum": 0.30000000000000004, "neg": -0.0, "int": -9_007_199_254_740_991i64}),
        ),
        case(
            "string_escapes",
            "record.failed",
            at_ms,
            json!({"text": "quote \" backslash \\ slash / tab \t nl \n nul \u{0} del \u{7f} é ✓ 𝄞"}),
        ),
        case("empty_data", "approval.decided", at_ms, json!({})),
        case("epoch", "token.revoked", 0, json!({})),
        case("last_millisecond", "token.revoked", 253_402_300_799_999, json!({})),
        case("data_an_array", "record.denied", at_ms, json!([1])),
        case("data_a_string", "record.denied", at_ms, json!("x")),
        case("integer_beyond_2_53", "record.denied", at_ms, json!({"n": 9_007_199_254_740_992u64})),
        case("negative_integer_beyond_2_53", "record.denied", at_ms, json!({"n": -9_007_199_254_740_992i64})),
        case("before_1970", "record.denied", -1, json!({})),
        case("year_10000", "record.denied", 253_402_300_800_000, json!({})),
        case("unknown_type", "record.created", at_ms, json!({})),
    ]);
    json!(cases)
}

fn event_time_vectors() -> Value {
    let valid: Vec<Value> = [
        0,
        951_782_400_000,
        1_800_000_000_000,
        1_835_481_599_999,
        4_107_542_400_000,
        253_402_300_799_999,
    ]
    .into_iter()
    .map(|ms| {
        let text = EventTime::from_unix_millis(ms)
            .expect("in range")
            .to_string();
        json!({"at_ms": ms, "text": text})
    })
    .collect();
    let invalid: Vec<Value> = [
        "2027-01-15T08:00:00Z",
        "2027-01-15T08:00:00.0Z",
        "2027-01-15T08:00:00.000000Z",
        "2027-01-15T08:00:00.000+00:00",
        "2027-01-15t08:00:00.000Z",
        "2027-01-15T08:00:00.000z",
        "2027-01-15 08:00:00.000Z",
        "2027-02-29T08:00:00.000Z",
        "2100-02-29T08:00:00.000Z",
        "2027-13-01T08:00:00.000Z",
        "2027-00-10T08:00:00.000Z",
        "2027-01-00T08:00:00.000Z",
        "2027-04-31T08:00:00.000Z",
        "2027-01-15T24:00:00.000Z",
        "2027-01-15T08:60:00.000Z",
        "2027-01-15T08:00:60.000Z",
        "1969-12-31T23:59:59.999Z",
        "+027-01-15T08:00:00.000Z",
        "",
    ]
    .into_iter()
    .map(|text| {
        let error = EventTime::parse(text).expect_err("the text is refused");
        json!({"text": text, "error": error.code()})
    })
    .collect();
    json!({"valid": valid, "invalid": invalid})
}
