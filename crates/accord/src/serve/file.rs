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
use clap::{ArgAction, ArgMatches, Command, CommandFactory as _};

use super::ServeError;

/// The flags of `accord serve` that name a file: in an agent file's tables, a relative path is
/// relative to the agent file, like every other path the file names.
const PATH_FLAGS: &[&str] =
    &["signing-key", "mpp-secret-file", "push-key-file", "tls-cert", "tls-key", "tls-client-ca"];

/// `table` (an agent file's `[serve]` or `[payments]`) with its relative paths made relative to
/// `base`, the agent file's directory: the values of [`PATH_FLAGS`] and a `store` of the form
/// `sqlite://PATH`. Other values are kept as they are.
fn with_paths_from(table: &toml::Table, base: &std::path::Path) -> toml::Table {
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
/// (the one that flattens [`ServeArgs`](super::ServeArgs)) whose parse of the real command line
/// is `matches`. `[payments]` holds the payment flags
/// ([`PaymentArgs::FLAGS`](super::PaymentArgs::FLAGS)) and `[serve]` every other flag of
/// [`ServeArgs`](super::ServeArgs) but `config`; a flag the program adds beside them is not a
/// setting of the file. Flags the command line or the environment set are left out, so
/// that they win. Every problem is returned at once, one line each, named by `file` and key.
fn agent_file_flags(
    command: &Command,
    matches: &ArgMatches,
    serve: Option<&toml::Table>,
    payments: Option<&toml::Table>,
    file: &str,
) -> Result<Vec<OsString>, Vec<String>> {
    let payment_flag = |key: &str| super::PaymentArgs::FLAGS.contains(&key);
    // Only the settings of a server: not `--config` itself, nor the flags the program adds.
    let server_flags: Vec<String> = super::args::ServeOnly::command()
        .get_arguments()
        .filter_map(|arg| arg.get_long().map(str::to_owned))
        .filter(|long| long != "config")
        .collect();
    let server_flag = |key: &str| server_flags.iter().any(|long| long == key);
    let empty = toml::Table::new();
    let serve = flags_from_table(command, matches, serve.unwrap_or(&empty), file, "serve", &|key| {
        server_flag(key) && !payment_flag(key)
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
fn flags_from_table(
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

/// `T`'s command line (the process's), with the agent file its `--config FILE` names: `T` is
/// your clap parser, which flattens [`ServeArgs`](super::ServeArgs) (in itself or in the
/// innermost subcommand of the command line). Without `--config`, this is `T::parse()` and no
/// file. With it, the file is read and its `[serve]` and `[payments]` tables become the flags
/// they stand for, under those of the command line and the `ACCORD_*` variables, which win;
/// their relative paths are relative to the file. Serve the file's agent with
/// [`Serve::from_agent_file`](super::Serve::from_agent_file), as `accord serve --config` does.
///
/// Like clap's `Parser::parse`, a mistake in the command line (or a request for help) prints it
/// and exits the process. A file that cannot be read, or a table with a key that is no setting
/// of the server or a value of the wrong shape, is a usage error naming the file and every key
/// at fault, one per line.
///
/// ```no_run
/// use accord::{Serve, ServeArgs};
///
/// #[derive(clap::Parser)]
/// struct Cli {
///     #[command(flatten)]
///     serve: ServeArgs,
/// }
///
/// # async fn main_() -> Result<(), accord::serve::ServeError> {
/// let (cli, file) = accord::serve::parse_with_agent_file::<Cli>()?;
/// let file = file.ok_or_else(|| accord::serve::ServeError::usage("--config FILE is required"))?;
/// Serve::from_agent_file(&file, cli.serve).await?.run().await
/// # }
/// ```
pub fn parse_with_agent_file<T: clap::Parser>() -> Result<(T, Option<accord_backends::AgentFile>), ServeError> {
    parse_with_agent_file_from(std::env::args_os())
}

/// [`parse_with_agent_file`] of `argv` (the program's name first) instead of the process's
/// command line.
pub fn parse_with_agent_file_from<T, I, A>(argv: I) -> Result<(T, Option<accord_backends::AgentFile>), ServeError>
where
    T: clap::Parser,
    I: IntoIterator<Item = A>,
    A: Into<OsString>,
{
    let argv: Vec<OsString> = argv.into_iter().map(Into::into).collect();
    let command = T::command();
    let matches = command.clone().get_matches_from(argv.clone());
    let Some((level, level_matches, path)) = serve_level(&command, &matches) else {
        return Ok((T::from_arg_matches(&matches).unwrap_or_else(|error| error.exit()), None));
    };
    let name = path.display().to_string();
    let file = accord_backends::AgentFile::load(&path).map_err(|errors| ServeError::usage(errors.to_string()))?;
    let base = path.parent().filter(|dir| !dir.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    let serve_table = file.serve_table().map(|table| with_paths_from(table, base));
    let payments_table = file.payments_table().map(|table| with_paths_from(table, base));
    let extra = agent_file_flags(level, level_matches, serve_table.as_ref(), payments_table.as_ref(), &name)
        .map_err(|problems| ServeError::usage(problems.join("\n")))?;
    // The command line alone parsed, so a mistake now is in the file's tables.
    let in_the_file = |error: clap::Error| {
        let kind = error.kind().to_string();
        let detail = error.to_string();
        let detail = detail.lines().next().unwrap_or(&kind).trim_start_matches("error: ").to_owned();
        ServeError::usage(format!("{name}: [serve]/[payments]: {detail}"))
    };
    let matches = command.try_get_matches_from(argv.into_iter().chain(extra)).map_err(in_the_file)?;
    let cli = T::from_arg_matches(&matches).map_err(in_the_file)?;
    Ok((cli, Some(file)))
}

/// The command that holds [`ServeArgs`](super::ServeArgs)' `--config` (the top one or a
/// subcommand the command line chose), its matches, and the file it names.
fn serve_level<'a>(
    command: &'a Command,
    matches: &'a ArgMatches,
) -> Option<(&'a Command, &'a ArgMatches, std::path::PathBuf)> {
    if command.get_arguments().any(|arg| arg.get_id() == "config")
        && let Ok(path) = matches.try_get_one::<std::path::PathBuf>("config")
    {
        return path.map(|path| (command, matches, path.clone()));
    }
    let (name, sub_matches) = matches.subcommand()?;
    serve_level(command.find_subcommand(name)?, sub_matches)
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
    use crate::serve::ServeArgs;
    use crate::serve::args::ServeOnly;

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
mod library_tests {
    use super::*;
    use crate::serve::ServeArgs;

    /// A program of one's own: a flag of its own, and `accord serve`'s flags in a subcommand.
    #[derive(Debug, clap::Parser)]
    struct Program {
        #[arg(long)]
        verbose: bool,
        #[command(subcommand)]
        command: Sub,
    }

    #[derive(Debug, clap::Subcommand)]
    enum Sub {
        Run {
            #[arg(long)]
            dry_run: bool,
            #[command(flatten)]
            serve: Box<ServeArgs>,
        },
        Other,
    }

    fn agent_file(name: &str, tables: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("accord-parse-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("agent.toml");
        let file = format!("[agent]\nname = \"t\"\n\n[[skill]]\nid = \"echo\"\ncommand = [\"cat\"]\n\n{tables}");
        std::fs::write(&path, file).expect("agent file");
        path
    }

    fn parse(argv: &[&str]) -> Result<(Program, Option<accord_backends::AgentFile>), ServeError> {
        parse_with_agent_file_from::<Program, _, _>(argv.iter().copied())
    }

    #[test]
    fn the_file_under_a_subcommand_sets_the_server_flags_and_the_command_line_wins() {
        let path = agent_file("sub", "[serve]\nport = 9100\nhost = \"0.0.0.0\"\nstore = \"sqlite://tasks.db\"\n");
        let config = path.display().to_string();
        let (program, file) =
            parse(&["prog", "--verbose", "run", "--config", &config, "--host", "127.0.0.2"]).expect("parsed");
        assert_eq!(file.expect("the file").name(), "t");
        let Sub::Run { serve, dry_run } = program.command else { panic!("run") };
        assert!(program.verbose && !dry_run);
        assert_eq!(serve.port, 9100, "from the file");
        assert_eq!(serve.host, "127.0.0.2", "the command line wins");
        let dir = path.parent().expect("dir");
        assert_eq!(serve.store, format!("sqlite://{}", dir.join("tasks.db").display()).parse().expect("store"));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn without_config_no_file_is_read() {
        let (program, file) = parse(&["prog", "run", "--port", "1"]).expect("parsed");
        assert!(file.is_none());
        let Sub::Run { serve, .. } = program.command else { panic!("run") };
        assert_eq!(serve.port, 1);
        let (program, file) = parse(&["prog", "other"]).expect("parsed");
        assert!(file.is_none() && matches!(program.command, Sub::Other));
    }

    #[test]
    fn the_programs_own_flags_and_config_are_no_settings_of_the_file() {
        let path = agent_file("own", "[serve]\ndry-run = true\nconfig = \"other.toml\"\nport = \"x\"\n");
        let config = path.display().to_string();
        let error = parse(&["prog", "run", "--config", &config]).expect_err("refused");
        let text = error.to_string();
        assert!(text.contains("[serve].dry-run: not a setting of the server"), "{text}");
        assert!(text.contains("[serve].config: not a setting of the server"), "{text}");
        assert_eq!(error.kind(), crate::serve::ServeErrorKind::Usage);
        let _ = std::fs::remove_dir_all(path.parent().expect("dir"));

        let path = agent_file("value", "[serve]\nport = 99999999\n");
        let config = path.display().to_string();
        let text = parse(&["prog", "run", "--config", &config]).expect_err("refused").to_string();
        assert!(text.starts_with(&format!("{config}: [serve]/[payments]: ")) && text.contains("--port"), "{text}");
        let _ = std::fs::remove_dir_all(path.parent().expect("dir"));
    }

    #[test]
    fn a_file_that_does_not_load_is_a_usage_error() {
        let error = parse(&["prog", "run", "--config", "/nonexistent/agent.toml"]).expect_err("refused");
        assert_eq!(error.kind(), crate::serve::ServeErrorKind::Usage);
        assert!(error.to_string().contains("agent.toml"), "{error}");
    }
}

#[cfg(test)]
mod path_tests {
    use super::*;

    #[test]
    fn the_tls_files_of_serve_are_relative_to_the_agent_file() {
        let table: toml::Table =
            toml::from_str("tls-cert = \"tls/cert.pem\"\ntls-key = \"/etc/accord/key.pem\"\n").expect("toml");
        let resolved = with_paths_from(&table, std::path::Path::new("/srv/shop"));
        assert_eq!(resolved["tls-cert"].as_str(), Some("/srv/shop/tls/cert.pem"));
        assert_eq!(resolved["tls-key"].as_str(), Some("/etc/accord/key.pem"), "an absolute path stays");
    }

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
