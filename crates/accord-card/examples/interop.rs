//! Reads and writes the files that `scripts/interop-signatures` exchanges with independent
//! ML-DSA / SLH-DSA implementations: PEM keys, card JSON and signed envelopes.
//!
//! Run with: `cargo run -p accord-card --example interop -- <command> …`
//!
//! ```text
//! keygen <ml-dsa-87|slh-dsa-shake-256f|ed25519> <dir>     writes <dir>/private.pem and <dir>/public.pem
//! pem-roundtrip <in.pem> <out.pem>                       reads a private or public PEM and writes it back
//! sign-card <private.pem> <card.json> <input> <out.json> signs; <input> is shake256-digest or raw-canonical
//! verify-card <public.pem> <envelope.json> <input>       exit 0 only if valid and signed over <input>
//! ```

use std::process::ExitCode;
use std::{env, fs};

use accord_card::{
    Algorithm, Card, PrivateKey, PublicKey, SignOptions, SigningInput, VerifyOptions, sign_card, verify_card_json,
};

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    match run(&args) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("interop: {message}");
            ExitCode::from(2)
        }
    }
}

fn read(path: &str) -> Result<String, String> {
    fs::read_to_string(path).map_err(|error| format!("{path}: {error}"))
}

fn write(path: &str, contents: &str) -> Result<(), String> {
    fs::write(path, contents).map_err(|error| format!("{path}: {error}"))
}

fn signing_input(name: &str) -> Result<SigningInput, String> {
    serde_json::from_value(serde_json::Value::String(name.to_owned()))
        .map_err(|_| format!("unknown signing input {name}"))
}

fn run(args: &[String]) -> Result<ExitCode, String> {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["keygen", algorithm, dir] => {
            let algorithm: Algorithm = algorithm.parse().map_err(|error| format!("{error}"))?;
            let key = PrivateKey::generate(algorithm).map_err(|error| error.to_string())?;
            fs::create_dir_all(dir).map_err(|error| format!("{dir}: {error}"))?;
            write(&format!("{dir}/private.pem"), &key.to_pem().map_err(|error| error.to_string())?)?;
            write(&format!("{dir}/public.pem"), &key.public_key().to_pem().map_err(|error| error.to_string())?)?;
            Ok(ExitCode::SUCCESS)
        }
        ["pem-roundtrip", input, output] => {
            let pem = read(input)?;
            let rewritten = if pem.contains("PRIVATE KEY") {
                PrivateKey::from_pem(&pem).and_then(|key| key.to_pem()).map(|pem| pem.to_string())
            } else {
                PublicKey::from_pem(&pem).and_then(|key| key.to_pem())
            };
            write(output, &rewritten.map_err(|error| format!("{input}: {error}"))?)?;
            Ok(ExitCode::SUCCESS)
        }
        ["sign-card", key, card, input, output] => {
            let key = PrivateKey::from_pem(&read(key)?).map_err(|error| format!("{key}: {error}"))?;
            let card: Card = serde_json::from_str(&read(card)?).map_err(|error| format!("{card}: {error}"))?;
            let options = SignOptions::new().with_signing_input(signing_input(input)?);
            let envelope = sign_card(&card, &key, &options).map_err(|error| error.to_string())?;
            let json = serde_json::to_string_pretty(&envelope.to_value()).map_err(|error| error.to_string())?;
            write(output, &json)?;
            Ok(ExitCode::SUCCESS)
        }
        ["verify-card", key, envelope, input] => {
            let expected = signing_input(input)?;
            let outcome = verify_card_json(read(envelope)?.as_bytes(), &read(key)?, &VerifyOptions::new());
            let summary = serde_json::json!({
                "valid": outcome.valid,
                "reason": outcome.reason,
                "signingInput": outcome.signing_input,
                "algorithm": outcome.algorithm,
            });
            println!("{summary}");
            let ok = outcome.valid && outcome.signing_input == Some(expected);
            Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        _ => Err("usage: keygen | pem-roundtrip | sign-card | verify-card (see the source header)".into()),
    }
}
