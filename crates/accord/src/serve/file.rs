//! The `[serve]` and `[payments]` tables of an agent file: the same settings as the flags, under
//! their long names without `--` (`store = "sqlite://shop.db"`, `grpc-port = 0`,
//! `webhook-allow = ["loopback"]`; `pay-rail = "x402"` under `[payments]`).
//!
//! A flag given on the command line, or its `ACCORD_*` variable, overrides the file; the file
//! overrides the defaults. This module turns the table into the flags it stands for, leaving out
//! those the command line or the environment already set, so that one parse applies everything
//! with clap's own checks and messages.

use std::ffi::OsString;

use clap::parser::ValueSource;
use clap::{ArgAction, ArgMatches, Command};

/// The flags of `accord serve` that name a file: in an agent file's tables, a relative path is
/// relative to the agent file, like every other path the file names.
pub const PATH_FLAGS: &[&str] = &["signing-key", "mpp-secret-file", "push-key-file"];

/// `table` (an agent file's `[serve]` or `[payments]`) with its relative paths made relative to
/// `base`, the agent file's directory: the values of [`PATH_FLAGS`] and a `store` of the form
/// `sqlite://PATH`. Other values are kept as they are.
pub fn with_paths_from(table: &toml::Table, base: &std::path::Path) -> toml::Table {
    let mut table = table.clone();
    for (key, value) in &mut table {
        let toml::Value::String(text) = value else { continue };
        if PATH_FLAGS.contains(&key.as_str()) {
            let path = std::path::Path::new(text.as_str());
            if path.is_relative() {
                *text = base.join(path).display().to_string();
            }
        } else if key == "store"
            && let Some(rest) = text.strip_prefix("sqlite://")
        {
            let (file, query) = rest.split_once('?').map_or((rest, None), |(file, query)| (file, Some(query)));
            if !file.is_empty() && std::path::Path::new(file).is_relative() {
                let joined = base.join(file).display().to_string();
                *text = match query {
                    Some(query) => format!("sqlite://{joined}?{query}"),
                    None => format!("sqlite://{joined}"),
                };
            }
        }
    }
    table
}

/// The flags an agent file's `[serve]` and `[payments]` tables stand for, for the `command`
/// (`accord serve`, or a program of your own that flattens [`ServeArgs`](super::ServeArgs))
/// whose parse of the real command line is `matches`. `[payments]` holds the payment flags
/// ([`PaymentArgs::FLAGS`](super::PaymentArgs::FLAGS)) and `[serve]` every other flag of the
/// command but those in `skip`. Flags the command line or the environment set are left out, so
/// that they win. Every problem is returned at once, one line each, named by `file` and key.
pub fn agent_file_flags(
    command: &Command,
    matches: &ArgMatches,
    serve: Option<&toml::Table>,
    payments: Option<&toml::Table>,
    file: &str,
    skip: &[&str],
) -> Result<Vec<OsString>, Vec<String>> {
    let payment_flag = |key: &str| super::PaymentArgs::FLAGS.contains(&key);
    let empty = toml::Table::new();
    let serve = flags_from_table(command, matches, serve.unwrap_or(&empty), file, "serve", &|key| {
        !skip.contains(&key) && !payment_flag(key)
    });
    let payments = flags_from_table(command, matches, payments.unwrap_or(&empty), file, "payments", &payment_flag);
    match (serve, payments) {
        (Ok(mut serve), Ok(payments)) => {
            serve.extend(payments);
            Ok(serve)
        }
        (serve, payments) => Err(serve.err().into_iter().chain(payments.err()).flatten().collect()),
    }
}

/// The flags `table` (the agent file's `[section]`) stands for, for the `command` whose parse of
/// the real command line is `matches`. Keys that are not a long flag of `command` or that
/// `accept` refuses, and values of a shape no flag takes, are problems, each named by `file` and
/// `[section].<key>`; all are returned at once.
pub fn flags_from_table(
    command: &Command,
    matches: &ArgMatches,
    table: &toml::Table,
    file: &str,
    section: &str,
    accept: &dyn Fn(&str) -> bool,
) -> Result<Vec<OsString>, Vec<String>> {
    let mut flags = Vec::new();
    let mut problems = Vec::new();
    for (key, value) in table {
        let arg = command.get_arguments().find(|arg| arg.get_long() == Some(key.as_str()));
        let Some(arg) = arg.filter(|_| accept(key)) else {
            let what = if section == "payments" { "a payment setting" } else { "a setting of the server" };
            problems.push(format!("{file}: [{section}].{key}: not {what} (flags are named without --)"));
            continue;
        };
        let id = arg.get_id().as_str();
        let overridden = matches!(matches.value_source(id), Some(ValueSource::CommandLine | ValueSource::EnvVariable));
        let takes_no_value = matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse);
        let takes_list = matches!(arg.get_action(), ArgAction::Append) || arg.get_value_delimiter().is_some();
        // Each value as the flag carries it; an empty text is a switch given without a value.
        let values: Option<Vec<String>> = match value {
            toml::Value::Array(items) if takes_list => items.iter().map(scalar).collect(),
            toml::Value::Boolean(true) if takes_no_value => Some(vec![String::new()]),
            toml::Value::Boolean(false) if takes_no_value => Some(Vec::new()),
            toml::Value::Array(_) => None,
            _ if takes_no_value => None,
            other => scalar(other).map(|text| vec![text]),
        };
        let shaped = values.is_some();
        if !shaped {
            let wanted = match (takes_no_value, takes_list) {
                (true, _) => "true or false",
                (false, true) => "a string, a number or a list of them",
                (false, false) => "a string or a number",
            };
            problems.push(format!("{file}: [{section}].{key}: expected {wanted}"));
            continue;
        }
        if overridden {
            continue;
        }
        for text in values.unwrap_or_default() {
            flags.push(OsString::from(if text.is_empty() && takes_no_value {
                format!("--{key}")
            } else {
                format!("--{key}={text}")
            }));
        }
    }
    if problems.is_empty() { Ok(flags) } else { Err(problems) }
}

/// A scalar's text as a flag would carry it.
fn scalar(value: &toml::Value) -> Option<String> {
    match value {
        toml::Value::String(text) => Some(text.clone()),
        toml::Value::Integer(number) => Some(number.to_string()),
        toml::Value::Float(number) => Some(number.to_string()),
        toml::Value::Boolean(set) => Some(set.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory as _, FromArgMatches as _};

    use super::*;
    use crate::serve::{ServeArgs, ServeOnly};

    fn parse(argv: &[&str], file: &str) -> Result<ServeArgs, Vec<String>> {
        let command = ServeOnly::command().mut_args(|arg| arg.env(None::<&str>));
        let matches = command.clone().try_get_matches_from(argv).map_err(|error| vec![error.to_string()])?;
        let table: toml::Table = file.parse().map_err(|error: toml::de::Error| vec![error.to_string()])?;
        let flags = agent_file_flags(
            &command,
            &matches,
            table.get("serve").and_then(toml::Value::as_table),
            table.get("payments").and_then(toml::Value::as_table),
            "agent.toml",
            &[],
        )?;
        let argv: Vec<OsString> = argv.iter().map(OsString::from).chain(flags).collect();
        let matches = command.try_get_matches_from(argv).map_err(|error| vec![error.to_string()])?;
        ServeArgs::from_arg_matches(&matches).map_err(|error| vec![error.to_string()])
    }

    #[test]
    fn the_file_sets_what_the_command_line_leaves_alone() {
        let file = r#"
            [serve]
            store = "memory"
            port = 9000
            grpc-port = 0
            no-landing = true
            anonymous-list = false
            webhook-allow = ["loopback", "10.0.0.0/8"]
            lease-ttl = 2.5
            [payments]
            pay-rail = "local"
            pay-admission-ttl = "90s"
        "#;
        let args = parse(&["serve", "--port", "7000"], file).expect("valid");
        assert_eq!(args.store, crate::StoreSpec::Memory);
        assert_eq!(args.port, 7000, "the command line wins");
        assert_eq!(args.grpc_port, Some(0));
        assert!(args.no_landing && !args.anonymous_list);
        assert_eq!(args.push.webhook_allow, ["loopback", "10.0.0.0/8"]);
        assert!((args.workers.lease_ttl - 2.5).abs() < f64::EPSILON);
        assert_eq!(args.payments.pay_rail, Some(crate::serve::RailKind::Local));
        assert_eq!(args.payments.pay_admission_ttl, std::time::Duration::from_secs(90));
    }

    #[test]
    fn every_mistake_of_the_table_is_named() {
        let file = r#"
            [serve]
            stroe = "memory"
            no-landing = "yes"
            port = [1, 2]
            host = { a = 1 }
            pay-rail = "x402"
            [payments]
            port = 1
        "#;
        let problems = parse(&["serve"], file).expect_err("refused");
        assert_eq!(problems.len(), 6, "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("[serve].pay-rail: not a setting")), "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("[payments].port: not a payment setting")), "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("[serve].stroe: not a setting")), "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("[serve].no-landing: expected true or false")), "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("[serve].port: expected a string")), "{problems:?}");
        assert!(problems.iter().all(|p| p.starts_with("agent.toml: ")), "{problems:?}");
    }

    #[test]
    fn a_value_clap_refuses_is_refused() {
        let problems = parse(&["serve"], "[serve]\nport = 99999999").expect_err("refused");
        assert!(problems[0].contains("--port"), "{problems:?}");
    }
}

#[cfg(test)]
mod path_tests {
    use super::*;

    #[test]
    fn relative_paths_in_the_tables_are_relative_to_the_agent_file() {
        let table: toml::Table = toml::from_str(
            "store = \"sqlite://tasks.db?mode=rwc\"\npush-key-file = \"keys/push.key\"\nsigning-key = \"/etc/accord/key.pem\"\ngrpc-port = 0\n",
        )
        .expect("toml");
        let resolved = with_paths_from(&table, std::path::Path::new("/srv/shop"));
        assert_eq!(resolved["store"].as_str(), Some("sqlite:///srv/shop/tasks.db?mode=rwc"));
        assert_eq!(resolved["push-key-file"].as_str(), Some("/srv/shop/keys/push.key"));
        assert_eq!(resolved["signing-key"].as_str(), Some("/etc/accord/key.pem"), "an absolute path stays");
        assert_eq!(resolved["grpc-port"].as_integer(), Some(0));
        let postgres: toml::Table = toml::from_str("store = \"postgres://db/accord\"\n").expect("toml");
        assert_eq!(
            with_paths_from(&postgres, std::path::Path::new("/srv"))["store"].as_str(),
            Some("postgres://db/accord")
        );
    }
}
