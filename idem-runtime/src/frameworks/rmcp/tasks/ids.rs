//! Task ids: HMAC-SHA256 of one run of one action (namespace, key, token) under a secret
//! the store keeps, truncated to 128 bits.
//!
//! - Every call that meets the same run gets the same id, on every worker that shares the
//!   store and after restarts, without a lookup: the secret is in the store.
//! - A new run of the action (after its key was released, or cancelled) has a new token,
//!   so a new id: a task that ended stays ended.
//! - An id reveals nothing of the key and cannot be computed without the secret: a client
//!   can only ask about tasks it was given.

use sha2::{Digest, Sha256};

use crate::store::Token;

/// What every id starts with: a version, so that a later scheme can tell its ids apart.
const PREFIX: &str = "idem2.";
/// 128 bits in unpadded base64url.
const ENCODED_LEN: usize = 22;

/// The id of the task for the run of `namespace`'s record `key` held by `token`.
pub(super) fn task_id(secret: &[u8], namespace: &str, key: &str, token: Token) -> String {
    id_of(secret, &[namespace.as_bytes(), &[0], key.as_bytes(), &[0], &token.0.to_be_bytes()])
}

/// The id of the task of a call that waits for the approval of `namespace`'s action `key`
/// asked at `asked_at_ms`: one per request, never one of a run's (another length of input).
pub(super) fn approval_task_id(secret: &[u8], namespace: &str, key: &str, asked_at_ms: i64) -> String {
    let asked = asked_at_ms.to_be_bytes();
    id_of(secret, &[namespace.as_bytes(), &[0], key.as_bytes(), &[0], b"approval", &asked])
}

fn id_of(secret: &[u8], parts: &[&[u8]]) -> String {
    let mac = hmac_sha256(secret, parts);
    let mut id = String::with_capacity(PREFIX.len() + ENCODED_LEN);
    id.push_str(PREFIX);
    base64url(&mac[..16], &mut id);
    id
}

/// What every `requestState` starts with.
const STATE_PREFIX: &str = "idem2.approval.";

/// The `requestState` sent with the approval question of `namespace`'s action `key`, asked
/// in round `round` at `asked_at_ms` with the compared fields `request` (MCP 2026-07-28):
/// the client echoes it with its answer, and the answer counts only when it is the state of
/// the request waiting now. It cannot be made without the secret, and it names one round of
/// one action of one scope (the key carries the scope's prefix) with exactly these fields.
///
/// The MAC's input starts with a byte no UTF-8 text starts with, so it is never the input
/// of a task id (which starts with the namespace): a task id is never a state.
pub(super) fn request_state(
    secret: &[u8],
    (namespace, key): (&str, &str),
    (round, asked_at_ms): (u32, i64),
    request: &str,
) -> String {
    let lengths =
        [namespace.len(), key.len(), request.len()].map(|len| u64::try_from(len).unwrap_or(u64::MAX).to_be_bytes());
    let mac = hmac_sha256(
        secret,
        &[
            b"\xffidem approval request state",
            &lengths[0],
            namespace.as_bytes(),
            &lengths[1],
            key.as_bytes(),
            &round.to_be_bytes(),
            &asked_at_ms.to_be_bytes(),
            &lengths[2],
            request.as_bytes(),
        ],
    );
    let mut state = String::with_capacity(STATE_PREFIX.len() + ENCODED_LEN);
    state.push_str(STATE_PREFIX);
    base64url(&mac[..16], &mut state);
    state
}

/// Whether `a` and `b` are the same text, in a time that depends on their lengths only: a
/// client that sends states one character at a time learns nothing from the answer's time.
pub(super) fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |differ, (x, y)| differ | (x ^ y)) == 0
}

/// Whether `id` has the shape of an id this module gives out: others are unknown without
/// a store read.
pub(super) fn well_formed(id: &str) -> bool {
    id.strip_prefix(PREFIX).is_some_and(|rest| {
        rest.len() == ENCODED_LEN && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    })
}

/// A new secret, from the operating system's random source.
pub(super) fn new_secret() -> Result<[u8; 32], getrandom::Error> {
    let mut secret = [0; 32];
    getrandom::fill(&mut secret)?;
    Ok(secret)
}

/// HMAC-SHA256 (RFC 2104) of the concatenation of `parts`.
fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut block = [0u8; BLOCK];
    if key.len() > BLOCK {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block.map(|b| b ^ byte);
    let mut inner = Sha256::new();
    inner.update(pad(0x36));
    for part in parts {
        inner.update(part);
    }
    let mut outer = Sha256::new();
    outer.update(pad(0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn base64url(bytes: &[u8], out: &mut String) {
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
        }
    }
}

/// Hex, as the secret is stored.
pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of [`hex`]'s text, if it is that.
pub(super) fn unhex(text: &str) -> Option<Vec<u8>> {
    (text.len().is_multiple_of(2) && text.is_ascii())
        .then(|| (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok()).collect())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231() {
        // Test cases 1, 2 and 6 (a key longer than the block).
        let cases: [(&[u8], &[u8], &str); 3] = [
            (&[0x0b; 20], b"Hi There", "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
            (
                b"Jefe",
                b"what do ya want for nothing?",
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
            ),
            (
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First",
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
            ),
        ];
        for (key, data, expected) in cases {
            assert_eq!(hex(&hmac_sha256(key, &[data])), expected);
            let (a, b) = data.split_at(3);
            assert_eq!(hex(&hmac_sha256(key, &[a, b])), expected, "parts are concatenated");
        }
    }

    #[test]
    fn ids_name_one_run_and_reveal_nothing() {
        let secret = [7u8; 32];
        let id = task_id(&secret, "billing::send_invoice", "invoice:acme:2026-10", Token(4));
        assert!(well_formed(&id), "{id}");
        assert!(!id.contains("acme") && !id.contains("invoice"), "{id}");
        assert_eq!(id, task_id(&secret, "billing::send_invoice", "invoice:acme:2026-10", Token(4)));
        assert_ne!(id, task_id(&secret, "billing::send_invoice", "invoice:acme:2026-10", Token(5)), "a new run");
        assert_ne!(id, task_id(&secret, "billing::send_invoice", "invoice:acme:2026-11", Token(4)));
        assert_ne!(task_id(&secret, "a", "bc", Token(1)), task_id(&secret, "ab", "c", Token(1)));
        assert_ne!(id, task_id(&[8u8; 32], "billing::send_invoice", "invoice:acme:2026-10", Token(4)), "per store");
        for foreign in
            ["", "idem2.", "idem1.YQ.YQ", "idem2.AAAAAAAAAAAAAAAAAAAAA!", "550e8400-e29b-41d4-a716-446655440000"]
        {
            assert!(!well_formed(foreign), "{foreign}");
        }
    }

    #[test]
    fn a_request_state_names_one_round_of_one_request() {
        let secret = [7u8; 32];
        let action = ("billing::pay", "a1b2/pay:acme");
        let state = request_state(&secret, action, (0, 1_000), r#"{"amount":2000.0}"#);
        assert!(state.starts_with(STATE_PREFIX) && state.len() == STATE_PREFIX.len() + ENCODED_LEN, "{state}");
        assert!(!state.contains("acme") && !state.contains("pay:"), "{state}");
        assert_eq!(
            state,
            request_state(&secret, action, (0, 1_000), r#"{"amount":2000.0}"#),
            "the same for every call"
        );
        for other in [
            request_state(&secret, action, (1, 1_000), r#"{"amount":2000.0}"#),
            request_state(&secret, action, (0, 1_001), r#"{"amount":2000.0}"#),
            request_state(&secret, action, (0, 1_000), r#"{"amount":2000.1}"#),
            request_state(&secret, ("billing::pay", "c3d4/pay:acme"), (0, 1_000), r#"{"amount":2000.0}"#),
            request_state(&secret, ("billing::refund", "a1b2/pay:acme"), (0, 1_000), r#"{"amount":2000.0}"#),
            request_state(&[8u8; 32], action, (0, 1_000), r#"{"amount":2000.0}"#),
            // Lengths are part of the input: moving a byte from one part to another is another state.
            request_state(&secret, ("billing::pa", "ya1b2/pay:acme"), (0, 1_000), r#"{"amount":2000.0}"#),
        ] {
            assert_ne!(state, other);
        }
        assert!(same(&state, &state.clone()));
        let last = if state.ends_with('A') { 'B' } else { 'A' };
        assert!(!same(&state, &format!("{}{last}", &state[..state.len() - 1])));
        assert!(!same(&state, ""));
    }

    #[test]
    fn secrets_round_trip_through_hex() {
        let secret = new_secret().unwrap();
        assert_eq!(unhex(&hex(&secret)).unwrap(), secret);
        assert_ne!(secret, new_secret().unwrap());
        assert_eq!(unhex("0g"), None);
        assert_eq!(unhex("abc"), None);
    }
}
