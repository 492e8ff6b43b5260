//! Payment rails from flags: how a server collects for its priced skills.
//!
//! Without `--pay-rail` a server collects nothing, and an agent with a priced skill does not
//! start (a priced skill that nobody can pay for would refuse every caller). With it, the rail
//! named collects every price, on every face that serves priced skills (Lucid's paid routes and
//! the x402 extension of the official A2A faces).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use accord_payments::{LocalRail, MppRail, PaymentRail, X402Rail};
use accord_server::PaymentsConfig;
use zeroize::Zeroizing;

use super::budgets::parse_duration;

/// The rails a server can collect with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RailKind {
    /// An x402 facilitator verifies and settles each payment (`--x402-facilitator`).
    X402,
    /// The `Payment` HTTP authentication scheme (MPP), verified and settled in process with
    /// `accord-voucher` vouchers (`--mpp-realm`, `--mpp-secret-file`).
    Mpp,
    /// The local development rail: `accord-voucher` vouchers signed by any `accord wallet`,
    /// verified in process. For trying paid flows; it moves no money.
    Local,
}

/// The payment flags. `--pay-rail` turns collection on; the others describe it.
#[derive(clap::Args, Debug, Clone)]
pub struct PaymentArgs {
    /// Collect for priced skills with this rail: `x402`, `mpp` or `local`. Without it, an agent
    /// with a priced skill does not start.
    #[arg(long, value_enum, env = "ACCORD_PAY_RAIL")]
    pub pay_rail: Option<RailKind>,
    /// Who is paid: the payee's address or account on `--pay-network`.
    #[arg(long, env = "ACCORD_PAY_TO", requires = "pay_rail")]
    pub pay_to: Option<String>,
    /// The network payments settle on, as a CAIP-2 id (`eip155:8453`, `accord:local`).
    #[arg(long, env = "ACCORD_PAY_NETWORK", requires = "pay_rail")]
    pub pay_network: Option<String>,
    /// The asset prices are in (a token address, or a currency code); prices are integers in its
    /// smallest unit.
    #[arg(long, env = "ACCORD_PAY_ASSET", requires = "pay_rail")]
    pub pay_asset: Option<String>,
    /// How long a paid task's reservation waits for its payment to settle before it is given up.
    #[arg(long, default_value = "5m", value_parser = parse_duration, env = "ACCORD_PAY_ADMISSION_TTL")]
    pub pay_admission_ttl: Duration,
    /// The x402 facilitator's base URL (`/verify` and `/settle` are appended).
    #[arg(long, env = "ACCORD_X402_FACILITATOR")]
    pub x402_facilitator: Option<String>,
    /// The x402 scheme the requirements name (`exact`; `accord-voucher` for the development
    /// facilitator).
    #[arg(long, default_value = "exact", env = "ACCORD_X402_SCHEME")]
    pub x402_scheme: String,
    /// The requirements' `maxTimeoutSeconds`: how long a payer's authorization may take.
    #[arg(long, default_value = "60s", value_parser = parse_duration, env = "ACCORD_X402_MAX_TIMEOUT")]
    pub x402_max_timeout: Duration,
    /// How long the facilitator may take to answer `/verify`.
    #[arg(long, default_value = "10s", value_parser = parse_duration, env = "ACCORD_X402_VERIFY_TIMEOUT")]
    pub x402_verify_timeout: Duration,
    /// How long the facilitator may take to answer `/settle`.
    #[arg(long, default_value = "30s", value_parser = parse_duration, env = "ACCORD_X402_SETTLE_TIMEOUT")]
    pub x402_settle_timeout: Duration,
    /// The MPP protection space (`realm`), usually the server's host name.
    #[arg(long, env = "ACCORD_MPP_REALM")]
    pub mpp_realm: Option<String>,
    /// A file holding the secret MPP challenges are bound with (at least 32 bytes; keep it the
    /// same across restarts and workers so that outstanding challenges stay valid).
    #[arg(long, env = "ACCORD_MPP_SECRET_FILE")]
    pub mpp_secret_file: Option<PathBuf>,
}

impl PaymentArgs {
    /// The flags of this group, by their long names: the keys of an agent file's `[payments]`.
    pub const FLAGS: &'static [&'static str] = &[
        "pay-rail",
        "pay-to",
        "pay-network",
        "pay-asset",
        "pay-admission-ttl",
        "x402-facilitator",
        "x402-scheme",
        "x402-max-timeout",
        "x402-verify-timeout",
        "x402-settle-timeout",
        "mpp-realm",
        "mpp-secret-file",
    ];

    /// The payments these flags describe; `None` without `--pay-rail`. Every missing or
    /// inconsistent setting is named at once, one per line.
    pub fn payments(&self) -> Result<Option<PaymentsConfig>, String> {
        let Some(kind) = self.pay_rail else {
            return Ok(None);
        };
        let mut problems = Vec::new();
        let mut need = |value: &Option<String>, flag: &str| -> String {
            match value.as_deref().map(str::trim).filter(|value| !value.is_empty()) {
                Some(value) => value.to_owned(),
                None => {
                    problems.push(format!("--pay-rail {}: --{flag} is required", kind_name(kind)));
                    String::new()
                }
            }
        };
        let (pay_to, network, asset) = match kind {
            // The development rail has its own defaults: nothing real is paid.
            RailKind::Local => (
                self.pay_to.clone().unwrap_or_else(|| "accord".into()),
                self.pay_network.clone().unwrap_or_else(|| "accord:local".into()),
                self.pay_asset.clone().unwrap_or_else(|| "accord-credit".into()),
            ),
            _ => (
                need(&self.pay_to, "pay-to"),
                need(&self.pay_network, "pay-network"),
                need(&self.pay_asset, "pay-asset"),
            ),
        };
        let rail: Option<Arc<dyn PaymentRail>> = match kind {
            RailKind::X402 => {
                let facilitator = need(&self.x402_facilitator, "x402-facilitator");
                if facilitator.is_empty() {
                    None
                } else {
                    match X402Rail::new(&facilitator) {
                        Ok(rail) => Some(Arc::new(
                            rail.with_scheme(self.x402_scheme.trim())
                                .with_max_timeout_seconds(self.x402_max_timeout.as_secs().max(1))
                                .with_verify_timeout(self.x402_verify_timeout)
                                .with_settle_timeout(self.x402_settle_timeout),
                        )),
                        Err(error) => {
                            problems.push(format!("--x402-facilitator: {error}"));
                            None
                        }
                    }
                }
            }
            RailKind::Mpp => {
                let realm = need(&self.mpp_realm, "mpp-realm");
                let secret = match &self.mpp_secret_file {
                    None => {
                        problems.push("--pay-rail mpp: --mpp-secret-file is required".into());
                        None
                    }
                    Some(path) => match std::fs::read(path) {
                        Ok(bytes) => Some(Zeroizing::new(bytes)),
                        Err(error) => {
                            problems.push(format!("--mpp-secret-file {}: {}", path.display(), error.kind()));
                            None
                        }
                    },
                };
                match (realm.is_empty(), secret) {
                    (false, Some(secret)) => match MppRail::new(realm, trim_line_end(&secret)) {
                        Ok(rail) => Some(Arc::new(rail) as Arc<dyn PaymentRail>),
                        Err(error) => {
                            problems.push(format!("--pay-rail mpp: {error}"));
                            None
                        }
                    },
                    _ => None,
                }
            }
            RailKind::Local => Some(Arc::new(LocalRail::new())),
        };
        if kind != RailKind::X402 && self.x402_facilitator.is_some() {
            problems.push(format!("--x402-facilitator is for --pay-rail x402, not {}", kind_name(kind)));
        }
        if kind != RailKind::Mpp && (self.mpp_realm.is_some() || self.mpp_secret_file.is_some()) {
            problems.push(format!("--mpp-realm and --mpp-secret-file are for --pay-rail mpp, not {}", kind_name(kind)));
        }
        match rail {
            Some(rail) if problems.is_empty() => {
                let mut payments = PaymentsConfig::new(rail, asset, network, pay_to);
                payments.admission_ttl = self.pay_admission_ttl;
                Ok(Some(payments))
            }
            _ => Err(problems.join("\n")),
        }
    }

    /// One line for the start-up summary: the rail and where it pays, never a secret.
    pub fn describe(&self) -> Option<String> {
        let kind = self.pay_rail?;
        Some(match kind {
            RailKind::X402 => format!(
                "payments: x402 through {} ({} on {})",
                self.x402_facilitator.as_deref().unwrap_or("?"),
                self.pay_asset.as_deref().unwrap_or("?"),
                self.pay_network.as_deref().unwrap_or("?"),
            ),
            RailKind::Mpp => format!(
                "payments: MPP, realm {} ({} on {})",
                self.mpp_realm.as_deref().unwrap_or("?"),
                self.pay_asset.as_deref().unwrap_or("?"),
                self.pay_network.as_deref().unwrap_or("?"),
            ),
            RailKind::Local => "payments: local development rail (vouchers of any `accord wallet`)".into(),
        })
    }
}

fn kind_name(kind: RailKind) -> &'static str {
    match kind {
        RailKind::X402 => "x402",
        RailKind::Mpp => "mpp",
        RailKind::Local => "local",
    }
}

/// A secret file written with `echo` ends in a newline that is not part of the secret.
fn trim_line_end(bytes: &[u8]) -> &[u8] {
    let mut end = bytes.len();
    while end > 0 && matches!(bytes[end - 1], b'\n' | b'\r') {
        end -= 1;
    }
    &bytes[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        pay: PaymentArgs,
    }

    fn parse(args: &[&str]) -> PaymentArgs {
        let command = <Flags as clap::CommandFactory>::command().mut_args(|arg| arg.env(None::<&str>));
        let matches = command.try_get_matches_from(std::iter::once("t").chain(args.iter().copied())).expect("flags");
        <Flags as clap::FromArgMatches>::from_arg_matches(&matches).expect("flags").pay
    }

    #[test]
    fn no_rail_collects_nothing() {
        assert!(parse(&[]).payments().expect("no rail").is_none());
    }

    #[test]
    fn x402_names_every_missing_setting() {
        let error = parse(&["--pay-rail", "x402"]).payments().expect_err("incomplete");
        for flag in ["--pay-to", "--pay-network", "--pay-asset", "--x402-facilitator"] {
            assert!(error.contains(flag), "{error}");
        }
        assert_eq!(error.lines().count(), 4, "{error}");
    }

    #[test]
    fn x402_with_its_settings_is_a_rail() {
        let args = parse(&[
            "--pay-rail=x402",
            "--pay-to=0xabc",
            "--pay-network=eip155:84532",
            "--pay-asset=USDC",
            "--x402-facilitator=http://127.0.0.1:9/",
            "--pay-admission-ttl=2m",
        ]);
        let payments = args.payments().expect("rail").expect("some");
        assert_eq!((payments.pay_to.as_str(), payments.network.as_str()), ("0xabc", "eip155:84532"));
        assert_eq!(payments.admission_ttl, Duration::from_secs(120));
        assert!(args.describe().expect("line").contains("http://127.0.0.1:9/"));
    }

    #[test]
    fn a_facilitator_url_with_credentials_or_a_wrong_rail_is_refused() {
        let base = ["--pay-rail=x402", "--pay-to=a", "--pay-network=b:c", "--pay-asset=d"];
        let with = |url: &str| parse(&[&base[..], &[url]].concat()).payments().expect_err("refused");
        assert!(with("--x402-facilitator=http://user:pw@host/").contains("credentials"));
        assert!(with("--x402-facilitator=ftp://host/").contains("not an absolute http(s) URL"));
        let error = parse(&["--pay-rail=local", "--x402-facilitator=http://h/"]).payments().expect_err("wrong rail");
        assert!(error.contains("for --pay-rail x402"), "{error}");
    }

    #[test]
    fn mpp_reads_its_secret_from_a_file_and_refuses_a_short_one() {
        let dir = std::env::temp_dir().join(format!("accord-pay-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let long = dir.join("long");
        let short = dir.join("short");
        std::fs::write(&long, "0123456789abcdef0123456789abcdef\n").expect("write");
        std::fs::write(&short, "short\n").expect("write");
        let base = ["--pay-rail=mpp", "--pay-to=a", "--pay-network=b:c", "--pay-asset=d", "--mpp-realm=shop.example"];
        let with = |path: &std::path::Path| {
            let flag = format!("--mpp-secret-file={}", path.display());
            parse(&[&base[..], &[flag.as_str()]].concat()).payments()
        };
        assert!(with(&long).expect("rail").is_some());
        let error = with(&short).expect_err("short");
        assert!(error.contains("at least 32 bytes") && !error.contains("short\n"), "{error}");
        assert!(with(&dir.join("missing")).expect_err("missing").contains("not found"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
