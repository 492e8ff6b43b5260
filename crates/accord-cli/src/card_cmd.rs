//! `accord card keygen|sign|verify|lint|jwks`.
//!
//! Private keys are read from and written to files only: they are never printed, and the files
//! written are created afresh with mode 0600.

use std::fs::{self, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use accord_card::{
    Algorithm, Card, PrivateKey, PublicKey, RejectReason, SignOptions, SigningInput, VerifyOptions, VerifyOutcome,
    card_problems, sign_card, verify_card_json,
};
use accord_client::ClientError;
use serde_json::Value;
use zeroize::Zeroizing;

use crate::{EXIT_FAILED, EXIT_UNREACHABLE, Failure, usage};

/// A signature algorithm, as named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum AlgorithmArg {
    /// ML-DSA-87 (FIPS 204): post-quantum, 4.6 KB signatures.
    #[value(name = "ml-dsa-87")]
    MlDsa87,
    /// SLH-DSA-SHAKE-256f (FIPS 205): hash-based, 49 KB signatures, slow to sign.
    #[value(name = "slh-dsa-shake-256f")]
    SlhDsaShake256f,
    /// Ed25519: small and fast, not post-quantum (JWS `EdDSA`).
    #[value(name = "ed25519")]
    Ed25519,
    /// ECDSA P-256 with SHA-256: JWS `ES256`, what most JOSE libraries verify; not post-quantum.
    #[value(name = "ecdsa-p256", alias = "es256")]
    EcdsaP256,
}

impl From<AlgorithmArg> for Algorithm {
    fn from(algorithm: AlgorithmArg) -> Self {
        match algorithm {
            AlgorithmArg::MlDsa87 => Algorithm::MlDsa87,
            AlgorithmArg::SlhDsaShake256f => Algorithm::SlhDsaShake256f,
            AlgorithmArg::Ed25519 => Algorithm::Ed25519,
            AlgorithmArg::EcdsaP256 => Algorithm::EcdsaP256,
        }
    }
}

/// `accord card keygen`.
#[derive(Debug, clap::Args)]
pub(crate) struct KeygenArgs {
    /// The signature algorithm.
    #[arg(long, value_enum, default_value = "ml-dsa-87")]
    alg: AlgorithmArg,
    /// The directory to write `<alg>.private.pem` (mode 0600) and `<alg>.public.pem` into; created
    /// when missing.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Replace key files that already exist.
    #[arg(long)]
    force: bool,
}

/// `accord card sign`.
#[derive(Debug, clap::Args)]
pub(crate) struct SignArgs {
    /// The private key: a PKCS#8 PEM, as written by `accord card keygen`.
    #[arg(long, value_name = "KEY")]
    key: PathBuf,
    /// The identity card to sign, as JSON (`-` reads standard input).
    #[arg(value_name = "CARD.json")]
    card: String,
    /// Write the envelope to this file instead of standard output.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// How long the signed card stays valid, in seconds (default 86400, one day).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    ttl: Option<u64>,
    /// Sign the canonical bytes themselves instead of their SHAKE256 digest (what blamejs's
    /// shipped code verifies).
    #[arg(long, conflicts_with = "jws")]
    raw: bool,
    /// Sign an A2A agent card with a JWS instead (`AgentCard.signatures`, appended to those it
    /// has): the key must be ml-dsa-87 (ML-DSA-87), ed25519 (EdDSA) or ecdsa-p256 (ES256).
    #[arg(long, conflicts_with = "ttl")]
    jws: bool,
    /// The JWS `kid` [default: the key's RFC 7638 JWK thumbprint].
    #[arg(long, value_name = "KID", requires = "jws")]
    kid: Option<String>,
    /// The JWS `jku`: the https URL of a JWKS holding the public key.
    #[arg(long, value_name = "URL", requires = "jws")]
    jku: Option<String>,
}

/// `accord card verify`.
#[derive(Debug, clap::Args)]
pub(crate) struct VerifyArgs {
    /// The signed card: a file or `-` for standard input (an envelope `{card, signedAt,
    /// expiresAt, signature}`, or an A2A agent card with `signatures`, told apart by shape), or
    /// an agent's URL (its signed envelope, or with `--jws` its card, is fetched).
    #[arg(value_name = "CARD.json")]
    envelope: String,
    /// A public key: an SPKI PEM, as written by `accord card keygen`. An envelope needs exactly
    /// one; for a JWS card each is trusted under any `kid` (repeatable).
    #[arg(long = "pub", value_name = "PUB")]
    public_key: Vec<PathBuf>,
    /// A JWKS (file or https URL) whose keys are trusted under their `kid` (JWS cards;
    /// repeatable).
    #[arg(long, value_name = "FILE|URL")]
    jwks: Vec<String>,
    /// The JWS algorithms accepted, comma-separated [default: ES256,EdDSA,ML-DSA-87].
    #[arg(long, value_name = "ALGS", value_delimiter = ',')]
    algorithms: Vec<String>,
    /// For a URL: verify the JWS signatures of its agent card instead of its signed envelope.
    #[arg(long)]
    jws: bool,
    /// Refuse the card unless its issuer is this one (envelopes only).
    #[arg(long, value_name = "ISSUER")]
    issuer: Option<String>,
    /// Print the verification outcome as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    tls: accord_cli::tls_args::TlsArgs,
}

/// `accord card lint`.
#[derive(Debug, clap::Args)]
pub(crate) struct LintArgs {
    /// An identity card or a signed envelope: a file, `-` for standard input, or a URL (an
    /// agent's signed card is fetched from the well-known paths).
    #[arg(value_name = "FILE|URL")]
    target: String,
    #[command(flatten)]
    tls: accord_cli::tls_args::TlsArgs,
}

/// `accord card jwks`.
#[derive(Debug, clap::Args)]
pub(crate) struct JwksArgs {
    /// Public keys (SPKI PEM): ml-dsa-87, ed25519 or ecdsa-p256.
    #[arg(value_name = "PUB.pem", required = true)]
    public_keys: Vec<PathBuf>,
    /// The `kid` of each key, in order [default: each key's RFC 7638 thumbprint].
    #[arg(long, value_name = "KID")]
    kid: Vec<String>,
}

/// `accord card jwks`: prints the JWKS.
pub(crate) fn jwks(args: JwksArgs) -> Result<(), Failure> {
    crate::card_jws::jwks(&args.public_keys, &args.kid)
}

/// `accord card keygen`: a fresh key pair in `DIR`.
pub(crate) fn keygen(args: KeygenArgs) -> Result<(), Failure> {
    let algorithm = Algorithm::from(args.alg);
    let private_path = args.out.join(format!("{}.private.pem", algorithm.name()));
    let public_path = args.out.join(format!("{}.public.pem", algorithm.name()));
    if !args.force {
        for path in [&private_path, &public_path] {
            if path.symlink_metadata().is_ok() {
                return Err(failed(format!("{} already exists (pass --force to replace it)", path.display())));
            }
        }
    }
    fs::create_dir_all(&args.out).map_err(|error| failed(format!("cannot create {}: {error}", args.out.display())))?;
    let key = PrivateKey::generate(algorithm).map_err(|error| failed(format!("cannot generate a key: {error}")))?;
    let private_pem = key.to_pem().map_err(|error| failed(format!("cannot encode the private key: {error}")))?;
    let public_key = key.public_key();
    let public_pem = public_key.to_pem().map_err(|error| failed(format!("cannot encode the public key: {error}")))?;
    write_private(&private_path, private_pem.as_bytes())?;
    fs::write(&public_path, public_pem.as_bytes())
        .map_err(|error| failed(format!("cannot write {}: {error}", public_path.display())))?;
    println!("private key: {} (keep it secret)", private_path.display());
    println!("public key:  {}", public_path.display());
    println!("algorithm:   {algorithm}");
    println!("fingerprint: {}", public_key.fingerprint().unwrap_or("unavailable"));
    Ok(())
}

/// Writes a private key to a file created afresh with mode 0600 (an existing file is removed
/// first, so its old permissions never carry over, and a symbolic link is never followed).
fn write_private(path: &Path, contents: &[u8]) -> Result<(), Failure> {
    let cannot = |error: std::io::Error| failed(format!("cannot write {}: {error}", path.display()));
    match fs::remove_file(path) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(cannot(error)),
    }
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).map_err(cannot)?;
    file.write_all(contents).and_then(|()| file.sync_all()).map_err(cannot)
}

/// `accord card sign`: the card in an envelope, on standard output or in `--out`.
pub(crate) fn sign(args: SignArgs) -> Result<(), Failure> {
    let text = read_source(&args.card)?;
    if args.jws {
        return sign_jws(&args, &text);
    }
    let value: Value = serde_json::from_slice(&text)
        .map_err(|error| failed(format!("{} is not JSON: {error}", source_name(&args.card))))?;
    let problems = card_problems(&value);
    if !problems.is_empty() {
        for problem in &problems {
            eprintln!("{problem}");
        }
        return Err(failed(format!("{} is not a valid card ({} problems)", source_name(&args.card), problems.len())));
    }
    let card: Card = serde_json::from_value(value).map_err(|error| failed(format!("not a card: {error}")))?;
    let key = read_private_key(&args.key, "--key")?;
    let mut options = SignOptions::new();
    if let Some(ttl) = args.ttl {
        options = options.with_ttl(Duration::from_secs(ttl));
    }
    if args.raw {
        options = options.with_signing_input(SigningInput::RawCanonical);
    }
    let envelope = sign_card(&card, &key, &options).map_err(|error| failed(format!("cannot sign: {error}")))?;
    let mut text = serde_json::to_string_pretty(&envelope).map_err(|error| failed(error.to_string()))?;
    text.push('\n');
    match &args.out {
        Some(path) => {
            fs::write(path, text).map_err(|error| failed(format!("cannot write {}: {error}", path.display())))?;
            eprintln!(
                "signed {} / {} with {} ({}), expires at {} ms: {}",
                envelope.card.issuer,
                envelope.card.agent_id,
                key.algorithm(),
                options.signing_input(),
                envelope.expires_at,
                path.display()
            );
        }
        None => print!("{text}"),
    }
    Ok(())
}

/// `accord card sign --jws`: the agent card with one more JWS signature.
fn sign_jws(args: &SignArgs, text: &[u8]) -> Result<(), Failure> {
    let key = read_private_key(&args.key, "--key")?;
    let name = source_name(&args.card);
    let (signed, kid) = crate::card_jws::sign(text, &name, &key, args.kid.as_deref(), args.jku.as_deref())?;
    let mut text = serde_json::to_string_pretty(&signed).map_err(|error| failed(error.to_string()))?;
    text.push('\n');
    match &args.out {
        Some(path) => {
            fs::write(path, text).map_err(|error| failed(format!("cannot write {}: {error}", path.display())))?;
            let count = signed["signatures"].as_array().map_or(0, Vec::len);
            eprintln!("signed {name} with {} (kid {kid}); {count} signature(s): {}", key.algorithm(), path.display());
        }
        None => print!("{text}"),
    }
    Ok(())
}

/// Whether `value` is a blamejs envelope rather than an agent card.
fn is_envelope(value: &Value) -> bool {
    value.as_object().is_some_and(|fields| fields.contains_key("card") && fields.contains_key("signature"))
}

/// `accord card verify`: prints `valid` and what matched, or `invalid: <reason>`; fails unless
/// valid.
pub(crate) async fn verify(args: VerifyArgs) -> Result<(), Failure> {
    let url = is_url(&args.envelope);
    let local = if url { None } else { Some(read_source(&args.envelope)?) };
    let jws = match &local {
        None => args.jws,
        Some(body) => !serde_json::from_slice::<Value>(body).is_ok_and(|value| is_envelope(&value)),
    };
    if jws {
        let body = match local {
            Some(body) => body,
            None => {
                let card_url = format!("{}{}", args.envelope.trim_end_matches('/'), "/.well-known/agent-card.json");
                let body = crate::card_jws::fetch(&card_url, "agent card", &args.tls).await?;
                eprintln!("fetched {card_url}");
                body
            }
        };
        let trust = crate::card_jws::trust_store(&args.public_key, &args.jwks, &args.tls).await?;
        return crate::card_jws::verify(&body, &trust, crate::card_jws::algorithms(&args.algorithms)?, args.json);
    }
    let [public_key] = args.public_key.as_slice() else {
        return Err(usage("a signed envelope is verified against exactly one --pub key"));
    };
    let pem = read_text(public_key, "--pub")?;
    let body = if let Some(body) = local {
        body
    } else if url {
        let client = args.tls.client().map_err(client_failure)?;
        let fetched = client.fetch_signed_envelope(&args.envelope).await.map_err(client_failure)?;
        eprintln!("fetched {}", fetched.url);
        fetched.body
    } else {
        read_source(&args.envelope)?
    };
    let mut options = VerifyOptions::new();
    if let Some(issuer) = &args.issuer {
        options = options.with_expected_issuer(issuer);
    }
    let outcome = verify_card_json(&body, pem.as_str(), &options);
    if args.json {
        crate::print_json(&serde_json::to_value(&outcome).unwrap_or(Value::Null), true);
    } else {
        print_outcome(&outcome);
    }
    match outcome.reason {
        None if outcome.valid => Ok(()),
        reason => {
            let reason = reason.unwrap_or(RejectReason::EnvelopeShape);
            let mut message = format!("the signed card is not valid: {reason}");
            if matches!(reason, RejectReason::KeyMalformed | RejectReason::KeyUnsupported)
                && let Err(error) = PublicKey::from_pem(&pem)
            {
                message.push_str(&format!(" ({}: {error})", public_key.display()));
            }
            Err(failed(message))
        }
    }
}

fn print_outcome(outcome: &VerifyOutcome) {
    match (&outcome.claims, outcome.reason) {
        (Some(claims), None) if outcome.valid => {
            println!("valid");
            if let Some(signing_input) = outcome.signing_input {
                println!("signing input: {signing_input}");
            }
            if let Some(algorithm) = outcome.algorithm {
                println!("algorithm: {algorithm}");
            }
            println!("issuer: {}", claims.issuer);
            println!("agent id: {}", claims.agent_id);
            println!("capabilities: {}", claims.capabilities.join(", "));
        }
        (_, reason) => println!("invalid: {}", reason.unwrap_or(RejectReason::EnvelopeShape)),
    }
}

/// `accord card lint`: every problem of the card (or of an envelope's card), one per line.
pub(crate) async fn lint(args: LintArgs) -> Result<(), Failure> {
    let (value, name) = if is_url(&args.target) {
        let client = args.tls.client().map_err(client_failure)?;
        let fetched = client.fetch_signed_envelope(&args.target).await.map_err(client_failure)?;
        (fetched.envelope, fetched.url)
    } else {
        let text = read_source(&args.target)?;
        let value = serde_json::from_slice(&text)
            .map_err(|error| failed(format!("{} is not JSON: {error}", source_name(&args.target))))?;
        (value, source_name(&args.target))
    };
    let problems = lint_problems(&value);
    for problem in &problems {
        println!("{problem}");
    }
    if problems.is_empty() {
        println!("{name}: no problems");
        Ok(())
    } else {
        let count = problems.len();
        Err(failed(format!("{name}: {count} problem{}", if count == 1 { "" } else { "s" })))
    }
}

/// The problems of an identity card, or of an envelope (an object with `card` and `signature`):
/// its shape, then its card's problems.
fn lint_problems(value: &Value) -> Vec<String> {
    let Some(envelope) =
        value.as_object().filter(|fields| fields.contains_key("card") && fields.contains_key("signature"))
    else {
        return card_problems(value).iter().map(ToString::to_string).collect();
    };
    let mut problems = Vec::new();
    if envelope["signature"].as_str().is_none_or(str::is_empty) {
        problems.push("envelope-shape: signature must be a non-empty base64 string".to_owned());
    }
    for field in ["signedAt", "expiresAt"] {
        if !envelope.get(field).is_some_and(Value::is_number) {
            problems.push(format!("envelope-shape: {field} must be a number (ms since the epoch)"));
        }
    }
    problems.extend(card_problems(&envelope["card"]).iter().map(ToString::to_string));
    problems
}

/// A client error as a failure: a signed card that is nowhere to be found counts as unreachable,
/// like a card that is nowhere to be found.
fn client_failure(error: ClientError) -> Failure {
    match error {
        ClientError::SignedCardNotFound { .. } => Failure { code: EXIT_UNREACHABLE, message: error.to_string() },
        other => Failure::from(other),
    }
}

fn read_private_key(path: &Path, flag: &str) -> Result<PrivateKey, Failure> {
    accord::serve::read_private_key(path, flag).map_err(usage)
}

/// A text file that may hold key material, wiped from memory after use.
fn read_text(path: &Path, flag: &str) -> Result<Zeroizing<String>, Failure> {
    fs::read_to_string(path)
        .map(Zeroizing::new)
        .map_err(|error| usage(format!("{flag}: cannot read {}: {error}", path.display())))
}

/// The bytes of a file, or of standard input for `-`.
fn read_source(source: &str) -> Result<Vec<u8>, Failure> {
    if source == "-" {
        let mut buffer = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buffer)
            .map_err(|error| usage(format!("cannot read standard input: {error}")))?;
        return Ok(buffer);
    }
    fs::read(source).map_err(|error| usage(format!("cannot read {source}: {error}")))
}

fn source_name(source: &str) -> String {
    if source == "-" { "standard input".to_owned() } else { source.to_owned() }
}

pub(crate) fn is_url(target: &str) -> bool {
    let lower = target.get(..8).unwrap_or(target).to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

fn failed(message: impl Into<String>) -> Failure {
    Failure { code: EXIT_FAILED, message: message.into() }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn urls_are_told_from_files() {
        assert!(is_url("http://127.0.0.1:8787"));
        assert!(is_url("HTTPS://agent.example.com/"));
        assert!(!is_url("card.json"));
        assert!(!is_url("http"));
        assert!(!is_url("-"));
    }

    #[test]
    fn envelopes_are_linted_for_their_shape_and_their_card() {
        let problems = lint_problems(&json!({"card": {"issuer": "a b"}, "signature": "", "signedAt": 1}));
        assert_eq!(problems.len(), 6, "{problems:?}");
        assert!(problems[0].starts_with("envelope-shape: signature"));
        assert!(problems[1].starts_with("envelope-shape: expiresAt"));
        assert!(problems.iter().any(|problem| problem.starts_with("a2a/missing-field")));
        assert!(
            lint_problems(&json!({"issuer": "i", "agentId": "a", "version": "1.0", "capabilities": []})).is_empty()
        );
    }
}
