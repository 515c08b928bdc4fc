//! Lead signatures for Claude Code teammates (reference §4): one ed25519 key
//! pair per teammate inbox, persisted 0600 under `Root::keys_dir(team)` so a
//! restarted lead still signs; `lead_sig` over the exact bytes of §4.3; the
//! `--lead-verify-key <ms>.<base64url SPKI>` value; and a verifier (used by
//! tests and by anyone checking an inbox).
//!
//! The key file `<name>.key` holds the 32-byte secret seed, base64url without
//! padding, and nothing else. The `<ms>` of the verify key is not part of the
//! key: it is the launch time, taken fresh at every launch (a Claude Code
//! teammate refuses entries older than its start when `<ms>` is stale, §4.5).

use crate::atomic_file;
use crate::mailbox::Entry;
use crate::paths::Root;
use anyhow::{Context, Result, bail};
use base64::Engine;
use base64::engine::general_purpose::{URL_SAFE, URL_SAFE_NO_PAD};
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use std::io::Read;
use std::path::PathBuf;

/// The DER prefix of an Ed25519 SubjectPublicKeyInfo (§4.1): the SPKI is
/// this followed by the 32-byte raw key, 44 bytes in all.
const SPKI_PREFIX: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];

/// The first element of the signed tuple.
const DOMAIN: &str = "claude-team-lead-entry-v1";

/// Entries from these senders are signed when the inbox is keyed (§4.2).
pub const SIGNED_SENDERS: [&str; 3] = [crate::names::LEAD_NAME, "user", "system"];

/// Whether entries from `from` are signed for a keyed inbox: the one test
/// of [`SIGNED_SENDERS`] the signer and the sender both ask.
pub fn is_signed_sender(from: &str) -> bool {
    SIGNED_SENDERS.contains(&from)
}

/// A lead's signing key for one teammate inbox.
pub struct LeadKey {
    key: SigningKey,
}

impl std::fmt::Debug for LeadKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeadKey")
            .field("public", &self.public_spki())
            .finish_non_exhaustive()
    }
}

impl LeadKey {
    /// A fresh random key (from the OS's random source).
    pub fn generate() -> Result<LeadKey> {
        let mut seed = [0u8; 32];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut seed))
            .context("reading 32 random bytes from /dev/urandom for a signing key")?;
        Ok(LeadKey {
            key: SigningKey::from_bytes(&seed),
        })
    }

    /// `keys/<name>.key` under the team's swarm state.
    pub fn path(root: &Root, team: &str, name: &str) -> Result<PathBuf> {
        crate::names::validate_member(name)
            .map_err(|e| anyhow::anyhow!("signing key for {name:?}: {e}"))?;
        Ok(root.keys_dir(team)?.join(format!("{name}.key")))
    }

    /// The key for `name`'s inbox, if one was ever created.
    pub fn load(root: &Root, team: &str, name: &str) -> Result<Option<LeadKey>> {
        let path = Self::path(root, team, name)?;
        let Some(bytes) = atomic_file::read_optional(&path)
            .with_context(|| format!("reading signing key {}", path.display()))?
        else {
            return Ok(None);
        };
        let text = String::from_utf8_lossy(&bytes);
        let seed = URL_SAFE_NO_PAD
            .decode(text.trim())
            .ok()
            .and_then(|v| <[u8; 32]>::try_from(v).ok())
            .with_context(|| format!("signing key {} is not 32 base64url bytes", path.display()))?;
        Ok(Some(LeadKey {
            key: SigningKey::from_bytes(&seed),
        }))
    }

    /// The key for `name`'s inbox, created (0600, atomically) if missing.
    pub fn load_or_create(root: &Root, team: &str, name: &str) -> Result<LeadKey> {
        if let Some(k) = Self::load(root, team, name)? {
            return Ok(k);
        }
        let key = Self::generate()?;
        let path = Self::path(root, team, name)?;
        if let Some(dir) = path.parent() {
            atomic_file::ensure_dir(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let seed = URL_SAFE_NO_PAD.encode(key.key.to_bytes());
        // create_new: if another process created it first, use theirs.
        if !atomic_file::create_new(&path, seed.as_bytes())
            .with_context(|| format!("writing signing key {}", path.display()))?
        {
            return Self::load(root, team, name)?
                .with_context(|| format!("signing key {} vanished", path.display()));
        }
        Ok(key)
    }

    /// The public key as base64url SPKI without padding (59 chars,
    /// `MCowBQYDK2VwAyEA…`).
    pub fn public_spki(&self) -> String {
        spki_b64(&self.key.verifying_key())
    }

    /// `--lead-verify-key`'s value: `<ms>.<base64url SPKI>`.
    pub fn verify_key_arg(&self, ms: u64) -> String {
        format!("{ms}.{}", self.public_spki())
    }

    /// `lead_sig` for `entry`: base64url (no padding) of the Ed25519
    /// signature over [`signed_bytes`].
    pub fn sign(&self, entry: &Entry) -> String {
        URL_SAFE_NO_PAD.encode(self.key.sign(&signed_bytes(entry)).to_bytes())
    }

    /// Sets `entry.lead_sig` when its sender is one the lead signs for
    /// (`team-lead`, `user`, `system`); a `msg_id` is added if missing,
    /// since it is part of the signed bytes.
    pub fn sign_entry(&self, entry: &mut Entry) {
        if !is_signed_sender(&entry.from) {
            return;
        }
        entry
            .msg_id
            .get_or_insert_with(|| uuid::Uuid::new_v4().to_string());
        entry.lead_sig = Some(self.sign(entry));
    }
}

/// The exact signed bytes of reference §4.3: compact JSON of
/// `["claude-team-lead-entry-v1", msg_id, from, timestamp, text, summary,
/// color, from_plugin]`, absent values as `null`.
pub fn signed_bytes(entry: &Entry) -> Vec<u8> {
    let tuple: [Option<&str>; 8] = [
        Some(DOMAIN),
        entry.msg_id.as_deref(),
        Some(&entry.from),
        Some(&entry.timestamp),
        Some(&entry.text),
        entry.summary.as_deref(),
        entry.color.as_deref(),
        entry.from_plugin.as_deref(),
    ];
    serde_json::to_vec(&tuple).expect("an array of strings serializes")
}

fn spki_b64(key: &VerifyingKey) -> String {
    let mut der = SPKI_PREFIX.to_vec();
    der.extend_from_slice(key.as_bytes());
    URL_SAFE_NO_PAD.encode(der)
}

/// A public key parsed from `--lead-verify-key` (`<ms>.<key>`) or a bare
/// base64url SPKI.
#[derive(Debug, Clone)]
pub struct LeadVerifier {
    pub ms: Option<u64>,
    key: VerifyingKey,
}

impl LeadVerifier {
    pub fn parse(arg: &str) -> Result<LeadVerifier> {
        let (ms, b64) = match arg.split_once('.') {
            Some((ms, k)) if !ms.is_empty() && ms.bytes().all(|b| b.is_ascii_digit()) => {
                (Some(ms.parse::<u64>().context("verify key timestamp")?), k)
            }
            _ => (None, arg),
        };
        let der = URL_SAFE_NO_PAD
            .decode(b64)
            .with_context(|| format!("verify key {b64:?} is not base64url without padding"))?;
        let Some(raw) = der.strip_prefix(&SPKI_PREFIX[..]) else {
            bail!("verify key {b64:?} is not an Ed25519 SubjectPublicKeyInfo");
        };
        let raw: [u8; 32] = raw
            .try_into()
            .with_context(|| format!("verify key {b64:?} has {} key bytes, not 32", raw.len()))?;
        let key =
            VerifyingKey::from_bytes(&raw).context("verify key is not a valid Ed25519 point")?;
        Ok(LeadVerifier { ms, key })
    }

    /// Whether `entry.lead_sig` is a valid signature of `entry` by this key.
    /// The signature is decoded leniently (padding allowed), as Claude Code does.
    pub fn verifies(&self, entry: &Entry) -> bool {
        let Some(sig) = entry.lead_sig.as_deref() else {
            return false;
        };
        let bytes = URL_SAFE_NO_PAD
            .decode(sig.trim_end_matches('='))
            .or_else(|_| URL_SAFE.decode(sig));
        let Ok(bytes) = bytes else { return false };
        let Ok(sig) = Signature::from_slice(&bytes) else {
            return false;
        };
        self.key.verify(&signed_bytes(entry), &sig).is_ok()
    }

    pub fn raw_hex(&self) -> String {
        self.key
            .as_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn fixture() -> Value {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/claude-code/teammate-launch.json"
        );
        serde_json::from_slice(&std::fs::read(path).expect("fixture")).expect("fixture JSON")
    }

    fn entry_of(v: &Value) -> Entry {
        Entry::from_value(v.clone()).expect("fixture entry")
    }

    #[test]
    fn the_fixtures_real_signatures_verify_with_the_researchers_key() {
        let f = fixture();
        let key = LeadVerifier::parse(f["lead_verify_key"].as_str().unwrap()).unwrap();
        assert_eq!(key.ms, Some(1796022860317));
        assert_eq!(
            key.raw_hex(),
            "2bbb1bb7230bf56fceaccd697002cdac09cb7cc8af5c460576c18e2ee7b9a055"
        );
        let examples = f["signed_examples"].as_array().unwrap();
        assert_eq!(examples.len(), 2);
        for ex in examples {
            let entry = entry_of(&ex["entry"]);
            assert_eq!(
                String::from_utf8(signed_bytes(&entry)).unwrap(),
                ex["signed_bytes_utf8"].as_str().unwrap(),
                "signed bytes differ from the reference's"
            );
            assert!(key.verifies(&entry), "fixture signature must verify: {ex}");
            let mut tampered = entry.clone();
            tampered.text.push('!');
            assert!(!key.verifies(&tampered), "a changed text must not verify");
        }
    }

    #[test]
    fn another_teammates_key_does_not_verify_the_researchers_entries() {
        let f = fixture();
        for (name, arg) in f["lead_verify_keys_by_teammate"].as_object().unwrap() {
            if name == "researcher" {
                continue;
            }
            let other = LeadVerifier::parse(arg.as_str().unwrap()).unwrap();
            for ex in f["signed_examples"].as_array().unwrap() {
                assert!(
                    !other.verifies(&entry_of(&ex["entry"])),
                    "{name}'s key verified an entry signed for researcher"
                );
            }
        }
    }

    #[test]
    fn our_signatures_verify_with_our_verify_key_and_persist_0600() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let key = LeadKey::load_or_create(&root, "t", "alice").unwrap();
        let again = LeadKey::load_or_create(&root, "t", "alice").unwrap();
        assert_eq!(key.public_spki(), again.public_spki(), "key must persist");
        let bob = LeadKey::load_or_create(&root, "t", "bob").unwrap();
        assert_ne!(key.public_spki(), bob.public_spki(), "one key per inbox");
        let mode = std::fs::metadata(LeadKey::path(&root, "t", "alice").unwrap())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);

        let arg = key.verify_key_arg(1234);
        assert!(arg.starts_with("1234.MCowBQYDK2VwAyEA"), "{arg}");
        assert_eq!(arg.len(), "1234.".len() + 59);
        let mut e = Entry::new("team-lead", "hi \"there\"\n".into(), Some("s".into()), None);
        key.sign_entry(&mut e);
        let sig = e.lead_sig.clone().unwrap();
        assert_eq!(sig.len(), 86);
        assert!(LeadVerifier::parse(&arg).unwrap().verifies(&e));
        assert!(
            !LeadVerifier::parse(&bob.verify_key_arg(1))
                .unwrap()
                .verifies(&e)
        );

        let mut peer = Entry::new("bob", "x".into(), None, None);
        key.sign_entry(&mut peer);
        assert_eq!(
            peer.lead_sig, None,
            "only lead/user/system entries are signed"
        );
    }
}
