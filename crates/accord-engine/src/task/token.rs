//! Access tokens and the owner hashes stored in their place.
//!
//! A task belongs to whoever holds its access token. The store keeps only the SHA-256 of the
//! trimmed token (the [`OwnerHash`]); the token itself never prints, never reaches a log and is
//! compared only through its hash, in constant time.

use sha2::{Digest, Sha256};
use subtle::{Choice, ConstantTimeEq};

/// The shortest accepted token, after trimming.
pub const MIN_TOKEN_CHARS: usize = 20;
/// The longest accepted token, after trimming.
pub const MAX_TOKEN_CHARS: usize = 256;

/// A task access token: a bearer capability for one or more tasks. `Debug` and `Display` never
/// show it; use [`AccessToken::expose`] where the token must be sent.
#[derive(Clone)]
pub struct AccessToken(String);

impl std::fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AccessToken(<redacted>)")
    }
}

/// A token that is not 20 to 256 characters after trimming.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidToken;

impl std::fmt::Display for InvalidToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Task-Access-Token must contain {MIN_TOKEN_CHARS} to {MAX_TOKEN_CHARS} characters")
    }
}

impl std::error::Error for InvalidToken {}

impl AccessToken {
    /// Accepts a caller's token: trimmed, then 20 to 256 characters.
    pub fn parse(token: &str) -> Result<Self, InvalidToken> {
        let token = token.trim();
        if (MIN_TOKEN_CHARS..=MAX_TOKEN_CHARS).contains(&token.chars().count()) {
            Ok(Self(token.to_owned()))
        } else {
            Err(InvalidToken)
        }
    }

    /// A fresh token with 256 bits from the operating system's random source, as 64 hex digits.
    pub fn generate() -> Self {
        let mut bytes = [0u8; 32];
        // The OS random source failing is not recoverable for a capability system: refuse to
        // hand out a guessable token.
        #[allow(clippy::expect_used)]
        getrandom::fill(&mut bytes).expect("the operating system's random source is unavailable");
        Self(hex::encode(bytes))
    }

    /// The token itself, to send to its holder. Never log it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The owner hash stored for this token.
    pub fn owner(&self) -> OwnerHash {
        OwnerHash(Sha256::digest(self.0.as_bytes()).into())
    }
}

/// The SHA-256 of a trimmed access token: who owns a task. Compared in constant time.
#[derive(Clone, Copy, Eq)]
pub struct OwnerHash([u8; 32]);

impl PartialEq for OwnerHash {
    fn eq(&self, other: &Self) -> bool {
        self.0.ct_eq(&other.0).into()
    }
}

impl std::fmt::Debug for OwnerHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A prefix is enough to tell owners apart in a log.
        write!(f, "OwnerHash({}…)", hex::encode(&self.0[..4]))
    }
}

impl OwnerHash {
    /// The hash as 64 lowercase hex digits (how stores persist it).
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// Reads a hash written by [`OwnerHash::to_hex`] (64 hex digits, either case).
    pub fn from_hex(text: &str) -> Option<Self> {
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(text, &mut bytes).ok()?;
        Some(Self(bytes))
    }

    /// The hash whose raw digest is `digest` (a SHA-256 the caller computed over its own
    /// domain-separated input, as [`OwnerHash::of_principal`] does).
    pub fn from_digest(digest: [u8; 32]) -> Self {
        Self(digest)
    }

    /// The raw digest.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Whether this caller is `stored`, the owner a store keeps for a task — `None` when there is
    /// no such task. Constant time either way: a missing task's owner is a stand-in hash that no
    /// token or principal has, compared just like a real one, so that refusing a missing task and
    /// refusing another owner's task do the same work.
    pub fn owns(&self, stored: Option<&OwnerHash>) -> bool {
        // All zeros: finding a token whose SHA-256 is all zeros is a preimage attack.
        const NOBODY: OwnerHash = OwnerHash([0; 32]);
        let exists = Choice::from(u8::from(stored.is_some()));
        let stored = stored.unwrap_or(&NOBODY);
        (self.0.ct_eq(&stored.0) & exists).into()
    }

    /// The owner standing for an authenticated principal named `principal_id` (for example a
    /// JWT's issuer and subject): the SHA-256 of a domain-separated, length-prefixed encoding of
    /// the id, so that it never collides with the hash of an access token (which has no prefix)
    /// nor with another principal's id.
    pub fn of_principal(principal_id: &str) -> OwnerHash {
        let mut digest = Sha256::new();
        digest.update(b"accord:principal\0");
        digest.update((principal_id.len() as u64).to_be_bytes());
        digest.update(principal_id.as_bytes());
        OwnerHash(digest.finalize().into())
    }

    /// The owner this owner is inside `scope` (an A2A tenant, say): a different hash for every
    /// scope, so that one caller's tasks in one scope are invisible from another. Deterministic,
    /// and one-way like the hash itself.
    pub fn within(&self, scope: &str) -> OwnerHash {
        let mut digest = Sha256::new();
        digest.update(b"accord:scope\0");
        digest.update((scope.len() as u64).to_be_bytes());
        digest.update(scope.as_bytes());
        digest.update(self.0);
        OwnerHash(digest.finalize().into())
    }

    /// A stable name for this owner to hand to code outside the engine (a skill backend, say):
    /// 64 hex digits of a domain-separated SHA-256 of the hash. The same owner always gets the
    /// same pseudonym; it is neither the token nor the hash the store keeps.
    pub fn pseudonym(&self) -> String {
        let mut digest = Sha256::new();
        digest.update(b"accord:pseudonym\0");
        digest.update(self.0);
        hex::encode(digest.finalize())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn scoped_owners_differ_per_scope_and_are_stable() {
        let owner = AccessToken::generate().owner();
        assert_eq!(owner.within("acme"), owner.within("acme"));
        assert_ne!(owner.within("acme"), owner.within("globex"));
        assert_ne!(owner.within("acme"), owner);
        // The length prefix keeps "ab" + owner apart from "a" + a shifted owner.
        assert_ne!(owner.within("ab"), owner.within("a"));
    }

    use super::*;

    #[test]
    fn tokens_are_trimmed_and_bounded() {
        assert!(AccessToken::parse("short").is_err());
        assert!(AccessToken::parse(&"x".repeat(257)).is_err());
        let token = AccessToken::parse(&format!("  {}  ", "t".repeat(20))).expect("valid");
        assert_eq!(token.expose(), "t".repeat(20));
        assert_eq!(token.owner(), AccessToken::parse(&"t".repeat(20)).expect("valid").owner());
    }

    #[test]
    fn tokens_never_print_themselves() {
        let token = AccessToken::parse("secret-secret-secret-1").expect("valid");
        assert_eq!(format!("{token:?}"), "AccessToken(<redacted>)");
        assert!(!format!("{:?}", token.owner()).contains("secret"));
    }

    #[test]
    fn generated_tokens_are_long_random_and_valid() {
        let a = AccessToken::generate();
        let b = AccessToken::generate();
        assert_eq!(a.expose().len(), 64);
        assert_ne!(a.expose(), b.expose());
        assert!(AccessToken::parse(a.expose()).is_ok());
    }

    #[test]
    fn owner_hash_is_the_sha256_of_the_token_in_hex_and_round_trips() {
        let owner = AccessToken::parse("abcdefghijklmnopqrstuvwxyz").expect("valid").owner();
        assert_eq!(owner.to_hex(), "71c480df93d6ae2f1efad1447c66c9525e316218cf51fc8d9ed832f2daf18b73");
        assert_eq!(OwnerHash::from_hex(&owner.to_hex()), Some(owner));
        assert_eq!(OwnerHash::from_hex("zz"), None);
    }

    #[test]
    fn a_missing_task_is_owned_by_nobody() {
        let owner = AccessToken::generate().owner();
        assert!(owner.owns(Some(&owner)));
        assert!(!owner.owns(Some(&AccessToken::generate().owner())));
        assert!(!owner.owns(None));
        assert!(!OwnerHash([0; 32]).owns(None), "not even the stand-in's own bytes own a missing task");
    }

    #[test]
    fn a_principal_owner_differs_by_id_and_from_the_same_text_as_a_token() {
        let id = "abcdefghijklmnopqrstuvwxyz";
        let principal = OwnerHash::of_principal(id);
        assert_eq!(principal, OwnerHash::of_principal(id), "deterministic");
        assert_ne!(principal, OwnerHash::of_principal("abcdefghijklmnopqrstuvwxy"));
        assert_ne!(principal, AccessToken::parse(id).expect("valid").owner());
    }
}
