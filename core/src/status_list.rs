//! Token status at the edge: the IETF Token Status List
//! (draft-ietf-oauth-status-list), as Mandate uses it.
//!
//! A token may carry a `status` claim naming one entry of a status list:
//! `{"status_list": {"idx": <entry>, "uri": "<base>/v1/vat/status/<list>"}}`
//! ([`StatusClaim`]). The server publishes each list as a status list token,
//! a compact JWS with the header
//! `{"alg":"EdDSA","typ":"statuslist+jwt","kid":<a key of the JWKS>}` and the
//! claims `sub` (the list's URI), `iat`, `exp`, `ttl` and
//! `status_list: {bits, lst}`, where `lst` is the base64url (no padding) of
//! the list's bytes compressed with DEFLATE in the ZLIB format. An offline
//! verifier that holds a fresh list refuses a revoked token without asking
//! the server.
//!
//! - [`StatusList`]: the bytes, `bits` per token packed from the least
//!   significant bit of each byte up (draft §4.1), [`StatusList::get`] and
//!   [`StatusList::set`]; Mandate writes 1-bit lists (0 VALID, 1 INVALID),
//!   and reads lists of 1, 2, 4 or 8 bits;
//! - [`compress`] and [`decompress`], the latter with a hard cap on the
//!   inflated size ([`MAX_STATUS_LIST_BYTES`]), so a small `lst` cannot
//!   inflate into a large allocation;
//! - where a token's entry lives: [`location`] splits the deployment's
//!   sequence of entries into lists of [`STATUS_LIST_SIZE`], and
//!   [`StatusUri::for_list`] names list `n` under a base URL;
//! - [`sign_status_list`] and [`verify_status_list`], the latter with the
//!   strictness of token verification (the same code checks the compact form,
//!   the header and the signature; only `typ` and the size limit differ);
//! - [`check_status`]: a verified token's status in a verified list, failing
//!   closed on a mismatched, expired or stale list.
//!
//! It refuses to know where lists come from: fetching, caching and choosing
//! which URIs may be fetched belong to the caller (the SDK). Nor does it
//! allocate entries: the server picks a token's index and core carries it.
//!
//! Deliberately stricter than the draft, which lets a status list token and
//! a `status` claim carry other members: Mandate reads only its own lists
//! and tokens, so every unknown member is refused, as in a token's claims.
//! `exp` and `ttl`, which the draft recommends, are required.

use std::fmt;

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::b64;
use crate::json::{NumericDate, has_duplicate_member};
use crate::keys::{Jwks, SigningKey};
use crate::limits::{
    DEFAULT_LEEWAY_SECONDS, MAX_STATUS_INDEX, MAX_STATUS_LIST_BYTES, MAX_STATUS_LIST_TOKEN_BYTES,
    MAX_STATUS_URI_LEN, STATUS_LIST_SIZE,
};
use crate::token::{Claims, Kind, SignError, VerifyError, sign_payload, verify_signature};

/// The JWS `typ` of a status list token.
pub const STATUS_LIST_TYP: &str = "statuslist+jwt";
/// The media type a status list token is served and asked for with.
pub const STATUS_LIST_MEDIA_TYPE: &str = "application/statuslist+jwt";
/// The path of list `n` under a deployment's base URL is this, then `n`.
pub const STATUS_LIST_PATH: &str = "/v1/vat/status/";

/// A status list token as a kind of compact JWS.
const STATUS_LIST_KIND: Kind = Kind {
    typ: STATUS_LIST_TYP,
    max_bytes: MAX_STATUS_LIST_TOKEN_BYTES,
};

/// The highest compression level miniz_oxide offers (its "uber"
/// compression), as the draft recommends. It writes the same bytes as zlib's
/// level 9 for the draft's examples.
const COMPRESSION_LEVEL: u8 = 10;

/// Why a status list, its token or a status URI was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StatusListError {
    #[error("the status list token is longer than {MAX_STATUS_LIST_TOKEN_BYTES} bytes")]
    TooLarge,
    #[error("typ must be statuslist+jwt")]
    InvalidTyp,
    /// The compact form, header or signature, as token verification says it.
    #[error(transparent)]
    Jws(VerifyError),
    #[error("the claims are not exactly sub, iat, exp, ttl and status_list {{bits, lst}}")]
    MalformedClaims,
    #[error("a claim appears twice")]
    DuplicateClaim,
    #[error("claim `{claim}` {reason}")]
    InvalidClaim {
        claim: &'static str,
        reason: &'static str,
    },
    #[error("the status list's sub is not the uri the token names")]
    SubjectMismatch,
    #[error("the status list token has expired")]
    Expired,
    #[error("the status list token was issued in the future")]
    NotYetValid,
    #[error("bits must be 1, 2, 4 or 8")]
    InvalidBits,
    #[error("lst is not strict unpadded base64url")]
    InvalidLst,
    #[error("lst is not DEFLATE data in the ZLIB format")]
    InvalidCompression,
    #[error("the status list would be larger than {MAX_STATUS_LIST_BYTES} bytes")]
    ListTooLarge,
    #[error("the index is beyond the end of the status list")]
    IndexOutOfRange,
    #[error("the status value does not fit the list's bits")]
    ValueTooWide,
    #[error(
        "a status list uri must be an absolute http(s) URI of at most {MAX_STATUS_URI_LEN} characters, without user information or fragment"
    )]
    InvalidUri,
    #[error("a status list index must be at most 2^53 - 1")]
    InvalidIndex,
}

impl StatusListError {
    /// Stable snake_case code for this error.
    pub fn code(&self) -> &'static str {
        match self {
            StatusListError::TooLarge => "status_list_too_large",
            StatusListError::InvalidTyp => "invalid_typ",
            StatusListError::Jws(error) => error.code(),
            StatusListError::MalformedClaims => "malformed_claims",
            StatusListError::DuplicateClaim => "duplicate_claim",
            StatusListError::InvalidClaim { .. } => "invalid_claim",
            StatusListError::SubjectMismatch => "subject_mismatch",
            StatusListError::Expired => "status_list_expired",
            StatusListError::NotYetValid => "status_list_not_yet_valid",
            StatusListError::InvalidBits => "invalid_bits",
            StatusListError::InvalidLst => "invalid_lst",
            StatusListError::InvalidCompression => "invalid_compression",
            StatusListError::ListTooLarge => "list_too_large",
            StatusListError::IndexOutOfRange => "index_out_of_range",
            StatusListError::ValueTooWide => "status_value_too_wide",
            StatusListError::InvalidUri => "invalid_status_uri",
            StatusListError::InvalidIndex => "invalid_status_index",
        }
    }

    /// The refusals of the compact form that name a token where a status
    /// list token was checked get the status list's own variants.
    fn from_jws(error: VerifyError) -> StatusListError {
        match error {
            VerifyError::TokenTooLarge => StatusListError::TooLarge,
            VerifyError::InvalidTyp => StatusListError::InvalidTyp,
            other => StatusListError::Jws(other),
        }
    }
}

/// Why a verified token's status refuses it, or could not be established.
/// Every variant refuses: a status that cannot be read is no statement that
/// the token is valid (the draft's "no statement can be made").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StatusCheckError {
    /// The caller holds no verified list for the token's uri.
    #[error("no verified status list is held for the token's status uri")]
    Unknown,
    #[error("the status list is for another uri than the token names")]
    UriMismatch,
    #[error("the token's status index is beyond the end of its status list")]
    IndexOutOfRange,
    #[error("the token is revoked (its status list says INVALID)")]
    Revoked,
    #[error("the token is suspended (its status list says SUSPENDED)")]
    Suspended,
    #[error("the token's status is {0:#04x}, a value Mandate does not define")]
    Unrecognised(u8),
    #[error("the status list was issued longer ago than the verifier accepts")]
    Stale,
    #[error("the status list token has expired")]
    ListExpired,
    /// The token's status uri is on an origin its verifier was not told
    /// the issuer serves lists from: a list fetched there proves nothing
    /// (a `Host` header forged at issue once named such origins).
    #[error("the token's status list is not on an origin of its issuer")]
    OriginNotAllowed,
}

impl StatusCheckError {
    /// Stable snake_case code for this error.
    pub fn code(&self) -> &'static str {
        match self {
            StatusCheckError::Unknown => "status_unknown",
            StatusCheckError::UriMismatch => "status_uri_mismatch",
            StatusCheckError::IndexOutOfRange => "status_index_out_of_range",
            StatusCheckError::Revoked => "token_revoked",
            StatusCheckError::Suspended => "token_suspended",
            StatusCheckError::Unrecognised(_) => "status_unrecognised",
            StatusCheckError::Stale => "status_stale",
            StatusCheckError::ListExpired => "status_list_expired",
            StatusCheckError::OriginNotAllowed => "status_origin_not_allowed",
        }
    }
}

/// How many bits of a list hold one token's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(into = "u8")]
pub enum Bits {
    One,
    Two,
    Four,
    Eight,
}

impl Bits {
    /// `1`, `2`, `4` or `8`; `None` for anything else.
    pub fn from_number(bits: u64) -> Option<Bits> {
        match bits {
            1 => Some(Bits::One),
            2 => Some(Bits::Two),
            4 => Some(Bits::Four),
            8 => Some(Bits::Eight),
            _ => None,
        }
    }

    /// The number of bits.
    pub fn get(self) -> u8 {
        match self {
            Bits::One => 1,
            Bits::Two => 2,
            Bits::Four => 4,
            Bits::Eight => 8,
        }
    }

    /// Tokens per byte.
    fn per_byte(self) -> u64 {
        u64::from(8 / self.get())
    }

    /// The largest value an entry holds.
    fn mask(self) -> u8 {
        match self {
            Bits::One => 0x01,
            Bits::Two => 0x03,
            Bits::Four => 0x0f,
            Bits::Eight => 0xff,
        }
    }
}

impl From<Bits> for u8 {
    fn from(bits: Bits) -> u8 {
        bits.get()
    }
}

/// A token's status as a list holds it (draft §7): 0x00 VALID, 0x01
/// INVALID (revoked), 0x02 SUSPENDED; other values are refused by
/// [`check_status`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct StatusType(pub u8);

impl StatusType {
    /// The token is valid.
    pub const VALID: StatusType = StatusType(0x00);
    /// The token is revoked.
    pub const INVALID: StatusType = StatusType(0x01);
    /// The token is temporarily invalid. Mandate's 1-bit lists cannot hold
    /// it; a 2-bit list could.
    pub const SUSPENDED: StatusType = StatusType(0x02);
}

/// The statuses of many tokens, `bits` each, packed into bytes from the
/// least significant bit up: with 1 bit, token `i` is bit `i % 8` of byte
/// `i / 8`. A list holds a whole number of bytes, so its length is a
/// multiple of the tokens per byte.
#[derive(Clone, PartialEq, Eq)]
pub struct StatusList {
    bits: Bits,
    bytes: Vec<u8>,
}

impl fmt::Debug for StatusList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StatusList")
            .field("bits", &self.bits.get())
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

impl StatusList {
    /// A 1-bit list of at least `len` tokens (rounded up to whole bytes), all
    /// VALID.
    pub fn new(len: u64) -> Result<StatusList, StatusListError> {
        StatusList::with_bits(Bits::One, len)
    }

    /// A list of at least `len` tokens of `bits` each, all VALID.
    pub fn with_bits(bits: Bits, len: u64) -> Result<StatusList, StatusListError> {
        let bytes = usize::try_from(len.div_ceil(bits.per_byte()))
            .ok()
            .filter(|bytes| *bytes <= MAX_STATUS_LIST_BYTES)
            .ok_or(StatusListError::ListTooLarge)?;
        Ok(StatusList {
            bits,
            bytes: vec![0; bytes],
        })
    }

    /// A list over bytes already packed.
    pub fn from_bytes(bits: Bits, bytes: Vec<u8>) -> Result<StatusList, StatusListError> {
        if bytes.len() > MAX_STATUS_LIST_BYTES {
            return Err(StatusListError::ListTooLarge);
        }
        Ok(StatusList { bits, bytes })
    }

    /// Bits per token.
    pub fn bits(&self) -> Bits {
        self.bits
    }

    /// How many tokens the list holds.
    pub fn len(&self) -> u64 {
        // At most 2^20 bytes of 8 tokens each.
        (self.bytes.len() as u64).saturating_mul(self.bits.per_byte())
    }

    /// Whether the list holds no token.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The packed bytes, uncompressed.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The byte holding token `idx` and the shift of its lowest bit.
    fn place(&self, idx: u64) -> Option<(usize, u64)> {
        let per_byte = self.bits.per_byte();
        let byte = usize::try_from(idx / per_byte).ok()?;
        (byte < self.bytes.len()).then(|| (byte, (idx % per_byte) * u64::from(self.bits.get())))
    }

    /// The status of token `idx`; `None` beyond the end of the list.
    pub fn get(&self, idx: u64) -> Option<StatusType> {
        let (byte, shift) = self.place(idx)?;
        let byte = *self.bytes.get(byte)?;
        Some(StatusType((byte >> shift) & self.bits.mask()))
    }

    /// Sets the status of token `idx`. Refused beyond the end of the list
    /// and for a value wider than the list's bits.
    pub fn set(&mut self, idx: u64, value: StatusType) -> Result<(), StatusListError> {
        let mask = self.bits.mask();
        if value.0 > mask {
            return Err(StatusListError::ValueTooWide);
        }
        let (byte, shift) = self.place(idx).ok_or(StatusListError::IndexOutOfRange)?;
        let byte = self
            .bytes
            .get_mut(byte)
            .ok_or(StatusListError::IndexOutOfRange)?;
        *byte = (*byte & !(mask << shift)) | (value.0 << shift);
        Ok(())
    }

    /// The list compressed (DEFLATE in the ZLIB format, highest level).
    pub fn compress(&self) -> Vec<u8> {
        compress(&self.bytes)
    }

    /// A list of `bits` per token from its compressed bytes, inflated to at
    /// most [`MAX_STATUS_LIST_BYTES`].
    pub fn decompress(bits: Bits, compressed: &[u8]) -> Result<StatusList, StatusListError> {
        Ok(StatusList {
            bits,
            bytes: decompress(compressed, MAX_STATUS_LIST_BYTES)?,
        })
    }

    /// `lst` as a status list token carries it: base64url, no padding, of
    /// the compressed bytes.
    pub fn lst(&self) -> String {
        b64::encode(self.compress())
    }

    /// A list of `bits` per token from its `lst`.
    pub fn from_lst(bits: Bits, lst: &str) -> Result<StatusList, StatusListError> {
        let compressed = b64::ENGINE
            .decode(lst)
            .map_err(|_| StatusListError::InvalidLst)?;
        StatusList::decompress(bits, &compressed)
    }
}

/// Bytes compressed with DEFLATE (RFC 1951) in the ZLIB format (RFC 1950)
/// at the highest level.
pub fn compress(bytes: &[u8]) -> Vec<u8> {
    miniz_oxide::deflate::compress_to_vec_zlib(bytes, COMPRESSION_LEVEL)
}

/// Inflates ZLIB-wrapped DEFLATE data, its checksum checked, to at most
/// `max_bytes`: past that it stops and refuses ([`StatusListError::ListTooLarge`]),
/// having allocated no more than `max_bytes`.
pub fn decompress(compressed: &[u8], max_bytes: usize) -> Result<Vec<u8>, StatusListError> {
    use miniz_oxide::inflate::{TINFLStatus, decompress_to_vec_zlib_with_limit};
    decompress_to_vec_zlib_with_limit(compressed, max_bytes).map_err(|error| match error.status {
        TINFLStatus::HasMoreOutput => StatusListError::ListTooLarge,
        _ => StatusListError::InvalidCompression,
    })
}

/// Where entry `index` of a deployment's sequence lives: list
/// `index / STATUS_LIST_SIZE`, at offset `index % STATUS_LIST_SIZE` (the
/// `idx` its token carries).
pub fn location(index: u64) -> (u64, u64) {
    (index / STATUS_LIST_SIZE, index % STATUS_LIST_SIZE)
}

/// Whether a byte may appear in a URI's authority (RFC 3986: registered
/// names, IP literals and a port; user information is refused).
fn authority_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:[]%".contains(&b)
}

/// Whether a byte may appear in a URI's path or query (RFC 3986 `pchar`,
/// `/` and `?`).
pub(crate) fn path_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/?%".contains(&b)
}

/// Whether every `%` of `text` starts a triplet of two hex digits.
pub(crate) fn percent_ok(text: &[u8]) -> bool {
    text.iter().enumerate().all(|(i, b)| {
        *b != b'%'
            || (text.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && text.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
    })
}

/// The URI of a status list: an absolute `http` or `https` URI (RFC 3986
/// `absolute-URI`, so no fragment), with a host and no user information,
/// of at most [`MAX_STATUS_URI_LEN`] characters. The scheme is lower case,
/// as Mandate writes it. Two URIs name the same list only when they are
/// equal character for character (the draft's rule for `sub` and `uri`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct StatusUri(String);

impl StatusUri {
    /// Whether `text` is an origin, `http(s)://host[:port]` in any ASCII case
    /// (a trailing `/` allowed), as a status list URI begins: what a
    /// verifier's list of its issuer's status origins holds.
    pub fn is_origin(text: &str) -> bool {
        let origin = text.trim_end_matches('/').to_ascii_lowercase();
        StatusUri::parse(&origin).is_ok_and(|uri| uri.origin() == origin)
    }

    /// Checks the form of a status list URI.
    pub fn parse(uri: &str) -> Result<StatusUri, StatusListError> {
        if uri.len() > MAX_STATUS_URI_LEN {
            return Err(StatusListError::InvalidUri);
        }
        let rest = uri
            .strip_prefix("https://")
            .or_else(|| uri.strip_prefix("http://"))
            .ok_or(StatusListError::InvalidUri)?;
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(end);
        let valid = !authority.is_empty()
            && authority.bytes().all(authority_byte)
            && path.bytes().all(path_byte)
            && percent_ok(rest.as_bytes());
        if !valid {
            return Err(StatusListError::InvalidUri);
        }
        Ok(StatusUri(uri.to_owned()))
    }

    /// The URI of list `list` under a deployment's base URL (its public
    /// address, with any path prefix; trailing slashes are dropped):
    /// `<base>/v1/vat/status/<list>`.
    pub fn for_list(base: &str, list: u64) -> Result<StatusUri, StatusListError> {
        StatusUri::parse(&format!(
            "{}{STATUS_LIST_PATH}{list}",
            base.trim_end_matches('/')
        ))
    }

    /// The URI as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Its origin: the scheme, `://` and the authority, as written
    /// (`https://mandate.example.com:8443`).
    pub fn origin(&self) -> &str {
        let scheme = self.0.find("://").map_or(0, |at| at + 3);
        let end = self
            .0
            .get(scheme..)
            .and_then(|rest| rest.find(['/', '?']))
            .map_or(self.0.len(), |at| scheme + at);
        self.0.get(..end).unwrap_or(&self.0)
    }

    /// Whether its origin is one of `origins` (each `scheme://host[:port]`,
    /// compared without regard to ASCII case; a trailing `/` is ignored).
    pub fn on_origin<S: AsRef<str>>(&self, origins: &[S]) -> bool {
        let origin = self.origin();
        origins.iter().any(|o| {
            o.as_ref()
                .trim_end_matches('/')
                .eq_ignore_ascii_case(origin)
        })
    }
}

/// Refuses a token whose status list is not on one of `origins`, the
/// origins its issuer serves status lists from (`status_origin_not_allowed`).
/// A token without a `status` claim passes. Verifiers that are told their
/// issuer's origins call it before [`check_status`]: a token issued with a
/// forged `Host` names a list its holder may keep signed and unrevoked.
pub fn check_status_origin<S: AsRef<str>>(
    claims: &Claims,
    origins: &[S],
) -> Result<(), StatusCheckError> {
    match &claims.status {
        Some(status) if !status.status_list.uri.on_origin(origins) => {
            Err(StatusCheckError::OriginNotAllowed)
        }
        _ => Ok(()),
    }
}

impl fmt::Display for StatusUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for StatusUri {
    type Error = StatusListError;
    fn try_from(uri: String) -> Result<StatusUri, StatusListError> {
        StatusUri::parse(&uri)
    }
}

impl From<StatusUri> for String {
    fn from(uri: StatusUri) -> String {
        uri.0
    }
}

/// The `status` claim of a token: where its status is published.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatusClaim {
    pub status_list: StatusListRef,
}

impl StatusClaim {
    /// The claim of entry `index` of the deployment whose public address is
    /// `base`: the list and offset of [`location`].
    pub fn for_index(base: &str, index: u64) -> Result<StatusClaim, StatusListError> {
        let (list, idx) = location(index);
        Ok(StatusClaim {
            status_list: StatusListRef::new(idx, StatusUri::for_list(base, list)?)?,
        })
    }

    /// The entry's index within its list.
    pub fn idx(&self) -> u64 {
        self.status_list.idx
    }

    /// The list's URI.
    pub fn uri(&self) -> &StatusUri {
        &self.status_list.uri
    }
}

/// One entry of one status list: `idx` in the list at `uri`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawStatusListRef")]
pub struct StatusListRef {
    idx: u64,
    uri: StatusUri,
}

impl StatusListRef {
    /// Entry `idx` (at most [`MAX_STATUS_INDEX`]) of the list at `uri`.
    pub fn new(idx: u64, uri: StatusUri) -> Result<StatusListRef, StatusListError> {
        if idx > MAX_STATUS_INDEX {
            return Err(StatusListError::InvalidIndex);
        }
        Ok(StatusListRef { idx, uri })
    }

    /// The entry's index within its list.
    pub fn idx(&self) -> u64 {
        self.idx
    }

    /// The list's URI.
    pub fn uri(&self) -> &StatusUri {
        &self.uri
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStatusListRef {
    idx: u64,
    uri: StatusUri,
}

impl TryFrom<RawStatusListRef> for StatusListRef {
    type Error = StatusListError;
    fn try_from(raw: RawStatusListRef) -> Result<StatusListRef, StatusListError> {
        StatusListRef::new(raw.idx, raw.uri)
    }
}

/// What a status list token says about its list, besides the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusListClaims {
    /// The list's URI, the `uri` its tokens name.
    pub sub: StatusUri,
    /// When the list was signed (unix seconds).
    pub iat: i64,
    /// When the list stops being good (unix seconds).
    pub exp: i64,
    /// How long a verifier may keep the list before fetching it again
    /// (seconds, at least 1).
    pub ttl: u64,
}

/// A status list token whose signature, claims and lifetime passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedStatusList {
    /// The key that signed it.
    pub kid: String,
    /// Its `sub`: the URI of the list.
    pub uri: StatusUri,
    pub iat: i64,
    pub exp: i64,
    pub ttl: u64,
    pub list: StatusList,
}

#[derive(Serialize)]
struct PayloadOut<'a> {
    sub: &'a StatusUri,
    iat: i64,
    exp: i64,
    ttl: u64,
    status_list: ListOut<'a>,
}

#[derive(Serialize)]
struct ListOut<'a> {
    bits: Bits,
    lst: &'a str,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClaims {
    sub: String,
    #[serde(default)]
    iat: NumericDate,
    #[serde(default)]
    exp: NumericDate,
    #[serde(default)]
    ttl: NumericDate,
    status_list: RawList,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawList {
    bits: u64,
    lst: String,
}

/// Signs `list` into a status list token with `key`, under the header
/// `{"alg":"EdDSA","typ":"statuslist+jwt","kid":…}`. Refused when `ttl` is
/// 0, `iat` is after `exp`, or the token would be longer than
/// [`MAX_STATUS_LIST_TOKEN_BYTES`].
pub fn sign_status_list(
    list: &StatusList,
    claims: &StatusListClaims,
    key: &SigningKey,
) -> Result<String, StatusListError> {
    if claims.ttl == 0 {
        return Err(StatusListError::InvalidClaim {
            claim: "ttl",
            reason: "must be a positive integer",
        });
    }
    if claims.iat > claims.exp {
        return Err(StatusListError::InvalidClaim {
            claim: "iat",
            reason: "is after exp",
        });
    }
    let lst = list.lst();
    let payload = PayloadOut {
        sub: &claims.sub,
        iat: claims.iat,
        exp: claims.exp,
        ttl: claims.ttl,
        status_list: ListOut {
            bits: list.bits(),
            lst: &lst,
        },
    };
    let payload = serde_json::to_vec(&payload).map_err(|_| StatusListError::MalformedClaims)?;
    sign_payload(&payload, key, STATUS_LIST_KIND).map_err(|error| match error {
        SignError::TooLarge => StatusListError::TooLarge,
        SignError::Serialize => StatusListError::MalformedClaims,
    })
}

/// Verifies a status list token against a key set at `now` (unix seconds),
/// stopping at the first failure:
///
/// 1. size (over [`MAX_STATUS_LIST_TOKEN_BYTES`] is refused before
///    decoding), three strict base64url segments;
/// 2. header: `alg` exactly `EdDSA`; no `jwk`, `jku`, `x5u`, `x5c`, `x5t`,
///    `x5t#S256` or `crit`; `typ` exactly `statuslist+jwt`; `kid` in the key
///    set; no other member, none twice;
/// 3. a signature that passes `verify_strict`;
/// 4. claims: exactly `sub` (a status list URI), `iat`, `exp` (integers,
///    `iat` not after `exp`), `ttl` (a positive integer) and `status_list`
///    of exactly `bits` (1, 2, 4 or 8) and `lst`, none twice;
/// 5. `sub` equal to `expected_uri`, the `uri` of the token whose status is
///    wanted, when the caller names one (without it, [`check_status`]
///    compares them);
/// 6. time, with [`DEFAULT_LEEWAY_SECONDS`] of skew: not expired
///    (`now < exp + leeway`) and not issued in the future
///    (`iat <= now + leeway`);
/// 7. `lst`: strict base64url of ZLIB data inflating to at most
///    [`MAX_STATUS_LIST_BYTES`].
pub fn verify_status_list(
    jwt: &str,
    keys: &Jwks,
    now: i64,
    expected_uri: Option<&str>,
) -> Result<VerifiedStatusList, StatusListError> {
    let signed =
        verify_signature(jwt, keys, STATUS_LIST_KIND).map_err(StatusListError::from_jws)?;
    let raw: RawClaims = match serde_json::from_slice(&signed.payload) {
        Ok(raw) => raw,
        Err(_) if has_duplicate_member(&signed.payload) => {
            return Err(StatusListError::DuplicateClaim);
        }
        Err(_) => return Err(StatusListError::MalformedClaims),
    };
    let (NumericDate::Int(iat), NumericDate::Int(exp), NumericDate::Int(ttl)) =
        (raw.iat, raw.exp, raw.ttl)
    else {
        return Err(StatusListError::MalformedClaims);
    };
    let ttl =
        u64::try_from(ttl)
            .ok()
            .filter(|ttl| *ttl > 0)
            .ok_or(StatusListError::InvalidClaim {
                claim: "ttl",
                reason: "must be a positive integer",
            })?;
    let uri = StatusUri::parse(&raw.sub).map_err(|_| StatusListError::InvalidClaim {
        claim: "sub",
        reason: "must be an absolute http(s) URI",
    })?;
    if iat > exp {
        return Err(StatusListError::InvalidClaim {
            claim: "iat",
            reason: "is after exp",
        });
    }
    let bits = Bits::from_number(raw.status_list.bits).ok_or(StatusListError::InvalidBits)?;
    if expected_uri.is_some_and(|expected| expected != uri.as_str()) {
        return Err(StatusListError::SubjectMismatch);
    }
    let leeway = i64::try_from(DEFAULT_LEEWAY_SECONDS).unwrap_or(i64::MAX);
    if now >= exp.saturating_add(leeway) {
        return Err(StatusListError::Expired);
    }
    if iat > now.saturating_add(leeway) {
        return Err(StatusListError::NotYetValid);
    }
    let list = StatusList::from_lst(bits, &raw.status_list.lst)?;
    Ok(VerifiedStatusList {
        kid: signed.kid,
        uri,
        iat,
        exp,
        ttl,
        list,
    })
}

/// Checks a verified token's status in a verified list at `now`, after
/// everything else about the token has passed (the draft's order: a token
/// refused for its own reasons is refused before its status is looked at).
///
/// A token without a `status` claim passes: tokens issued before Mandate
/// published status lists carry none, and stay valid until they expire (the
/// server still refuses them once revoked). Otherwise, in this order: the
/// list is for the token's `uri` (else `status_uri_mismatch`); the list has
/// not expired (`now < exp + leeway`, else `status_list_expired`); with
/// `max_staleness_s`, the list was signed at most that long ago
/// (`now - iat <= max_staleness_s`, else `status_stale`); the token's `idx`
/// is within the list (else `status_index_out_of_range`); and its status is
/// VALID — INVALID is `token_revoked`, SUSPENDED `token_suspended`, any other
/// value `status_unrecognised`. Every failure refuses the token.
pub fn check_status(
    claims: &Claims,
    list: &VerifiedStatusList,
    now: i64,
    max_staleness_s: Option<u64>,
) -> Result<(), StatusCheckError> {
    check_status_with(claims, |_| Some(list), now, max_staleness_s)
}

/// [`check_status`] with the list found by the token's `uri` in the
/// caller's store: `find` returning none is `status_unknown`. A token
/// without a `status` claim passes without asking.
pub fn check_status_with<'a>(
    claims: &Claims,
    find: impl FnOnce(&StatusUri) -> Option<&'a VerifiedStatusList>,
    now: i64,
    max_staleness_s: Option<u64>,
) -> Result<(), StatusCheckError> {
    let Some(status) = &claims.status else {
        return Ok(());
    };
    let reference = &status.status_list;
    let list = find(&reference.uri).ok_or(StatusCheckError::Unknown)?;
    if list.uri != reference.uri {
        return Err(StatusCheckError::UriMismatch);
    }
    let leeway = i64::try_from(DEFAULT_LEEWAY_SECONDS).unwrap_or(i64::MAX);
    if now >= list.exp.saturating_add(leeway) {
        return Err(StatusCheckError::ListExpired);
    }
    if let Some(max) = max_staleness_s {
        let max = i64::try_from(max).unwrap_or(i64::MAX);
        if now.saturating_sub(list.iat) > max {
            return Err(StatusCheckError::Stale);
        }
    }
    match list.list.get(reference.idx) {
        None => Err(StatusCheckError::IndexOutOfRange),
        Some(StatusType::VALID) => Ok(()),
        Some(StatusType::INVALID) => Err(StatusCheckError::Revoked),
        Some(StatusType::SUSPENDED) => Err(StatusCheckError::Suspended),
        Some(StatusType(other)) => Err(StatusCheckError::Unrecognised(other)),
    }
}

/// Why [`check_status_in_list`] refused: the list itself, or the token's
/// status in it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenStatusError {
    #[error(transparent)]
    List(#[from] StatusListError),
    #[error(transparent)]
    Status(#[from] StatusCheckError),
}

/// The status of a verified token in the status list token `list_jwt`,
/// checked the way an offline verifier given one list does it: a token
/// without a `status` claim passes and its list is not looked at; with
/// `origins`, the token's list must be on one of them
/// ([`check_status_origin`]); the list is verified against `keys` for the
/// token's uri ([`verify_status_list`]); then [`check_status`].
pub fn check_status_in_list(
    claims: &Claims,
    list_jwt: &str,
    keys: &Jwks,
    now: i64,
    max_staleness_s: Option<u64>,
    origins: Option<&[String]>,
) -> Result<(), TokenStatusError> {
    let Some(status) = &claims.status else {
        return Ok(());
    };
    if let Some(origins) = origins {
        check_status_origin(claims, origins)?;
    }
    let list = verify_status_list(list_jwt, keys, now, Some(status.uri().as_str()))?;
    Ok(check_status(claims, &list, now, max_staleness_s)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The draft's 16-entry 1-bit example (§4.1).
    const DRAFT_1BIT: [u8; 16] = [1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 0, 0, 0, 1, 0, 1];
    /// The draft's 12-entry 2-bit example (§4.1).
    const DRAFT_2BIT: [u8; 12] = [1, 2, 0, 3, 0, 1, 0, 1, 1, 2, 3, 3];

    #[test]
    fn the_drafts_1_bit_example() {
        let mut list = StatusList::new(16).unwrap();
        for (idx, value) in DRAFT_1BIT.iter().enumerate() {
            list.set(idx as u64, StatusType(*value)).unwrap();
        }
        assert_eq!(list.as_bytes(), &[0xb9, 0xa3]);
        assert_eq!(hex(&list.compress()), "78dadbb918000217015d");
        assert_eq!(list.lst(), "eNrbuRgAAhcBXQ");
        let read = StatusList::from_lst(Bits::One, "eNrbuRgAAhcBXQ").unwrap();
        assert_eq!(read, list);
        for (idx, value) in DRAFT_1BIT.iter().enumerate() {
            assert_eq!(read.get(idx as u64), Some(StatusType(*value)), "{idx}");
        }
        assert_eq!(read.len(), 16);
        assert_eq!(read.get(16), None);
    }

    #[test]
    fn the_drafts_2_bit_example() {
        let mut list = StatusList::with_bits(Bits::Two, 12).unwrap();
        for (idx, value) in DRAFT_2BIT.iter().enumerate() {
            list.set(idx as u64, StatusType(*value)).unwrap();
        }
        assert_eq!(list.as_bytes(), &[0xc9, 0x44, 0xf9]);
        assert_eq!(hex(&list.compress()), "78da3be9f2130003df0207");
        assert_eq!(list.lst(), "eNo76fITAAPfAgc");
        assert_eq!(list.get(1), Some(StatusType::SUSPENDED));
    }

    #[test]
    fn set_clears_and_refuses() {
        for bits in [Bits::One, Bits::Two, Bits::Four, Bits::Eight] {
            let mut list = StatusList::with_bits(bits, 64).unwrap();
            let top = StatusType(bits.mask());
            for idx in 0..list.len() {
                list.set(idx, top).unwrap();
            }
            assert!(list.as_bytes().iter().all(|b| *b == 0xff));
            list.set(5, StatusType::VALID).unwrap();
            assert_eq!(list.get(5), Some(StatusType::VALID));
            assert_eq!(list.get(4), Some(top));
            assert_eq!(list.get(6), Some(top));
            assert_eq!(
                list.set(list.len(), StatusType::VALID),
                Err(StatusListError::IndexOutOfRange)
            );
            assert_eq!(list.get(u64::MAX), None);
        }
        let mut one = StatusList::new(8).unwrap();
        assert_eq!(
            one.set(0, StatusType::SUSPENDED),
            Err(StatusListError::ValueTooWide)
        );
        assert_eq!(one.len(), 8);
        assert_eq!(StatusList::new(9).unwrap().len(), 16);
        assert!(StatusList::new(0).unwrap().is_empty());
    }

    #[test]
    fn size_caps() {
        let most = MAX_STATUS_LIST_BYTES as u64 * 8;
        assert_eq!(
            StatusList::new(most).unwrap().as_bytes().len(),
            MAX_STATUS_LIST_BYTES
        );
        assert_eq!(
            StatusList::new(most + 1),
            Err(StatusListError::ListTooLarge)
        );
        assert_eq!(
            StatusList::new(u64::MAX),
            Err(StatusListError::ListTooLarge)
        );
        // A zip bomb: 4 MiB of zeros compress to a few KiB.
        let bomb = compress(&vec![0; 4 * MAX_STATUS_LIST_BYTES]);
        assert!(bomb.len() < 8 * 1024, "{}", bomb.len());
        assert_eq!(
            decompress(&bomb, MAX_STATUS_LIST_BYTES),
            Err(StatusListError::ListTooLarge)
        );
        let exact = compress(&vec![0; MAX_STATUS_LIST_BYTES]);
        assert_eq!(
            decompress(&exact, MAX_STATUS_LIST_BYTES).unwrap().len(),
            MAX_STATUS_LIST_BYTES
        );
    }

    #[test]
    fn bad_compression() {
        let good = compress(&[0xb9, 0xa3]);
        let mut checksum = good.clone();
        if let Some(last) = checksum.last_mut() {
            *last ^= 1;
        }
        // Raw DEFLATE without the ZLIB header, a broken checksum, a
        // truncated stream, nothing at all.
        let raw = miniz_oxide::deflate::compress_to_vec(&[0xb9, 0xa3], 10);
        for bad in [&raw[..], &checksum[..], &good[..good.len() - 2], &[][..]] {
            assert_eq!(
                decompress(bad, MAX_STATUS_LIST_BYTES),
                Err(StatusListError::InvalidCompression),
                "{bad:?}"
            );
        }
        for lst in ["eNrbuRgAAhcBXQ==", "eNrbuRgAAhcBXQ ", "eNr/uRgAAhcBXQ"] {
            assert!(StatusList::from_lst(Bits::One, lst).is_err(), "{lst}");
        }
    }

    #[test]
    fn locations_and_uris() {
        assert_eq!(location(0), (0, 0));
        assert_eq!(location(65_535), (0, 65_535));
        assert_eq!(location(65_536), (1, 0));
        assert_eq!(location(3 * 65_536 + 7), (3, 7));
        assert_eq!(
            StatusUri::for_list("https://mandate.example/", 3)
                .unwrap()
                .as_str(),
            "https://mandate.example/v1/vat/status/3"
        );
        assert_eq!(
            StatusUri::for_list("http://127.0.0.1:8080/prefix", 0)
                .unwrap()
                .as_str(),
            "http://127.0.0.1:8080/prefix/v1/vat/status/0"
        );
        let claim = StatusClaim::for_index("https://mandate.example", 65_537).unwrap();
        assert_eq!(claim.idx(), 1);
        assert_eq!(
            claim.uri().as_str(),
            "https://mandate.example/v1/vat/status/1"
        );
        assert_eq!(
            serde_json::to_string(&claim).unwrap(),
            r#"{"status_list":{"idx":1,"uri":"https://mandate.example/v1/vat/status/1"}}"#
        );
    }

    #[test]
    fn origins() {
        for good in [
            "https://mandate.example",
            "HTTPS://Mandate.Example/",
            "http://127.0.0.1:3000",
        ] {
            assert!(StatusUri::is_origin(good), "{good}");
        }
        for bad in [
            "https://mandate.example/v1",
            "ftp://x",
            "mandate.example",
            "",
        ] {
            assert!(!StatusUri::is_origin(bad), "{bad}");
        }
    }

    #[test]
    fn uri_forms() {
        for good in [
            "https://mandate.example/v1/vat/status/0",
            "http://127.0.0.1:3000/v1/vat/status/12",
            "https://[::1]:8443/s?list=1",
            "https://example.com",
            "https://example.com/a%20b",
        ] {
            assert!(StatusUri::parse(good).is_ok(), "{good}");
        }
        let long = format!("https://example.com/{}", "a".repeat(MAX_STATUS_URI_LEN));
        for bad in [
            "",
            "/v1/vat/status/0",
            "ftp://example.com/0",
            "HTTPS://example.com/0",
            "https://",
            "https:///v1",
            "https://user@example.com/0",
            "https://example.com/0#frag",
            "https://example.com/a b",
            "https://example.com/%zz",
            "https://example.com/%2",
            "https://exämple.com/0",
            "https://example.com/\n",
            long.as_str(),
        ] {
            assert_eq!(
                StatusUri::parse(bad),
                Err(StatusListError::InvalidUri),
                "{bad}"
            );
        }
    }

    #[test]
    fn references_refuse_unknown_members_and_large_indexes() {
        let read = |json: &str| serde_json::from_str::<StatusClaim>(json);
        assert!(read(r#"{"status_list":{"idx":0,"uri":"https://a.example/s/0"}}"#).is_ok());
        for bad in [
            r#"{"status_list":{"idx":0,"uri":"https://a.example/s/0","x":1}}"#,
            r#"{"status_list":{"idx":0,"uri":"https://a.example/s/0"},"other":{}}"#,
            r#"{"status_list":{"idx":-1,"uri":"https://a.example/s/0"}}"#,
            r#"{"status_list":{"idx":1.0,"uri":"https://a.example/s/0"}}"#,
            r#"{"status_list":{"idx":"1","uri":"https://a.example/s/0"}}"#,
            r#"{"status_list":{"idx":9007199254740992,"uri":"https://a.example/s/0"}}"#,
            r#"{"status_list":{"idx":0,"uri":"s/0"}}"#,
            r#"{"status_list":{"idx":0}}"#,
            r#"{"status_list":{"idx":0,"idx":1,"uri":"https://a.example/s/0"}}"#,
            r#"{}"#,
        ] {
            assert!(read(bad).is_err(), "{bad}");
        }
        assert!(
            read(r#"{"status_list":{"idx":9007199254740991,"uri":"https://a.example/s/0"}}"#)
                .is_ok()
        );
        assert_eq!(
            StatusListRef::new(
                MAX_STATUS_INDEX + 1,
                StatusUri::parse("https://a.example").unwrap()
            ),
            Err(StatusListError::InvalidIndex)
        );
    }

    #[test]
    fn codes_are_snake_case() {
        let list_errors = [
            StatusListError::TooLarge,
            StatusListError::InvalidTyp,
            StatusListError::Jws(VerifyError::InvalidSignature),
            StatusListError::MalformedClaims,
            StatusListError::DuplicateClaim,
            StatusListError::InvalidClaim {
                claim: "ttl",
                reason: "x",
            },
            StatusListError::SubjectMismatch,
            StatusListError::Expired,
            StatusListError::NotYetValid,
            StatusListError::InvalidBits,
            StatusListError::InvalidLst,
            StatusListError::InvalidCompression,
            StatusListError::ListTooLarge,
            StatusListError::IndexOutOfRange,
            StatusListError::ValueTooWide,
            StatusListError::InvalidUri,
            StatusListError::InvalidIndex,
        ];
        let check_errors = [
            StatusCheckError::Unknown,
            StatusCheckError::UriMismatch,
            StatusCheckError::IndexOutOfRange,
            StatusCheckError::Revoked,
            StatusCheckError::Suspended,
            StatusCheckError::Unrecognised(3),
            StatusCheckError::Stale,
            StatusCheckError::ListExpired,
        ];
        let list_codes: Vec<&str> = list_errors.iter().map(StatusListError::code).collect();
        let check_codes: Vec<&str> = check_errors.iter().map(StatusCheckError::code).collect();
        for codes in [list_codes, check_codes] {
            for code in &codes {
                assert!(
                    code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                    "{code}"
                );
            }
            let mut unique = codes.clone();
            unique.sort_unstable();
            unique.dedup();
            assert_eq!(unique.len(), codes.len(), "{codes:?}");
        }
        // An expired list is refused with one code, whether verification or
        // the later check finds it.
        assert_eq!(
            StatusListError::Expired.code(),
            StatusCheckError::ListExpired.code()
        );
    }
}
