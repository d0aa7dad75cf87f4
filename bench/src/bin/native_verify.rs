//! Native verification, side by side in one process: `mandate_core::verify`
//! of a typical token, the bare `verify_strict` of the same signing input
//! (the ceiling), the `jsonwebtoken` crate verifying an equivalent EdDSA
//! token into the same claims type (a peer), and what a bound token's call
//! costs: the token and its DPoP proof (and the proof alone). Prints JSON.
//!
//! `native_verify [--quick]`

use std::hint::black_box;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::{Signature, VerifyingKey};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use mandate_bench::{Spread, interleave, ratios};
use mandate_core::{
    AgentId, AssuranceLevel, Claims, Constraints, Framework, HumanRef, Jwks, NewProof, Policy,
    ProofRequest, RootIssue, Scope, SigningKey, TokenRequest, Ulid, Usd, check_binding, issue_root,
    sign, sign_proof, verify, verify_proof,
};

const SECRET: [u8; 32] = [9; 32];

/// A typical root token: a handful of resources and actions, constraints and
/// a policy, as issue/l1 makes them.
fn typical_claims(now: i64) -> Claims {
    issue_root(
        TokenRequest {
            agent_id: AgentId::parse("research-bot").expect("valid"),
            scope: Scope::parse(
                &["crm:*", "mail:inbox", "files:/reports/q3.pdf"],
                &["read", "write", "summarise", "delegate"],
            )
            .expect("valid"),
            constraints: Constraints {
                min_trust: None,
                max_spend_usd: Some(Usd::from_f64(50.0).expect("valid")),
                max_spend_per_action_usd: None,
                max_actions: Some(100),
                require_approval: None,
                args: Default::default(),
            },
            policy: Policy::new(vec![Framework::parse("gdpr").expect("valid")]).expect("valid"),
            ttl_seconds: Some(3600),
            holder: None,
        },
        RootIssue {
            issuer: "mandate".into(),
            human: HumanRef::from_digest(&[1; 32]),
            level: AssuranceLevel::L1,
            now,
            jti: Ulid::new(1, [1; 10]).expect("valid"),
            provenance: Ulid::new(1, [2; 10]).expect("valid"),
            status: None,
        },
    )
    .expect("issues")
}

fn main() -> anyhow::Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    let (rounds, calls) = if quick { (3, 200) } else { (15, 4000) };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs() as i64;
    let key = SigningKey::from_secret(&SECRET);
    let claims = typical_claims(now);
    let token = sign(&claims, &key)?;
    let jwks = Jwks::from_signing_keys([&key]);
    let options = mandate_core::VerifyOptions::default();
    verify(&token, &jwks, now, &options).map_err(|e| anyhow::anyhow!("{e}"))?;

    let (signing_input, signature) = token
        .rsplit_once('.')
        .ok_or_else(|| anyhow::anyhow!("three segments"))?;
    let signature = Signature::from_slice(&URL_SAFE_NO_PAD.decode(signature)?)?;
    let verifying = VerifyingKey::from_bytes(&key.public_bytes())?;

    // The same claims, signed by jsonwebtoken with the same key.
    let mut der = vec![
        0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04,
        0x20,
    ];
    der.extend_from_slice(&SECRET);
    let mut header = Header::new(Algorithm::EdDSA);
    header.typ = Some("vat+jwt".into());
    header.kid = Some(key.kid().to_owned());
    let peer_token = jsonwebtoken::encode(&header, &claims, &EncodingKey::from_ed_der(&der))?;
    let x = key.public_jwk().x;
    let decoding = DecodingKey::from_ed_components(&x)?;
    let mut validation = Validation::new(Algorithm::EdDSA);
    validation.leeway = 60;
    validation.validate_aud = false;
    validation.set_required_spec_claims(&["exp"]);
    jsonwebtoken::decode::<Claims>(&peer_token, &decoding, &validation)?;

    let mut core = || {
        black_box(verify(black_box(&token), &jwks, now, &options).is_ok());
    };
    let mut bare = || {
        black_box(
            verifying
                .verify_strict(black_box(signing_input.as_bytes()), &signature)
                .is_ok(),
        );
    };
    let mut peer = || {
        black_box(
            jsonwebtoken::decode::<Claims>(black_box(&peer_token), &decoding, &validation).is_ok(),
        );
    };
    // A bound token's call: the token, then its DPoP proof (made once; the
    // replay memory is the caller's, not core's).
    let holder = SigningKey::from_secret(&[7; 32]);
    let mut bound_claims = claims.clone();
    bound_claims.cnf = Some(mandate_core::Confirmation {
        jkt: holder.holder_key().jkt().clone(),
    });
    let bound_token = sign(&bound_claims, &key)?;
    let url = "https://mandate.example/v1/vat/record/action";
    let proof = sign_proof(
        &holder,
        &NewProof {
            method: "POST",
            url,
            access_token: Some(&bound_token),
            now,
            jti_random: [3; 16],
        },
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let request = ProofRequest {
        method: "POST",
        url,
        now,
    };
    let mut bound = || {
        let verified = verify(black_box(&bound_token), &jwks, now, &options);
        let checked = verified.map(|v| {
            check_binding(&v.claims, &bound_token, Some(black_box(&proof)), &request).is_ok()
        });
        black_box(checked.is_ok_and(|ok| ok));
    };
    let mut proof_only = || {
        black_box(
            verify_proof(
                black_box(&proof),
                &bound_token,
                holder.holder_key().jkt(),
                &request,
            )
            .is_ok(),
        );
    };
    let samples = interleave(
        rounds,
        calls,
        &mut [&mut core, &mut bare, &mut peer, &mut bound, &mut proof_only],
    );
    let [core, bare, peer, bound, proof_ns] = [
        &samples[0],
        &samples[1],
        &samples[2],
        &samples[3],
        &samples[4],
    ];
    let report = serde_json::json!({
        "rounds": rounds,
        "calls": calls,
        "token_bytes": token.len(),
        "core_ns": Spread::of(core).json(),
        "bare_ns": Spread::of(bare).json(),
        "jsonwebtoken_ns": Spread::of(peer).json(),
        "core_over_bare": Spread::of(&ratios(core, bare)).json(),
        "core_over_jsonwebtoken": Spread::of(&ratios(core, peer)).json(),
        "bound_ns": Spread::of(bound).json(),
        "proof_ns": Spread::of(proof_ns).json(),
        "bound_over_bearer": Spread::of(&ratios(bound, core)).json(),
    });
    #[allow(clippy::print_stdout, reason = "the report is the program's output")]
    {
        println!("{report}");
    }
    Ok(())
}
