//! The log of an MCP server going down and coming back, read through the default filter a
//! process using the backends sets (`info` plus `accord_backends::LOG_DIRECTIVES`): one WARN with
//! the cause, one INFO when it is back, and no line per progress step; and a WARN naming a tool
//! left out because it requires MCP tasks. Alone in its file, so
//! that its subscriber is the process's and no other test's events mix in.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use accord_backends::AgentFile;
use serde_json::json;

/// The log lines written.
#[derive(Clone, Default)]
struct Capture(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Capture {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("log").extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Capture {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("log")).into_owned()
    }
}

#[tokio::test]
async fn going_down_is_a_warning_coming_back_is_info_and_progress_is_not_logged_at_info() {
    let capture = Capture::default();
    let writer = capture.clone();
    // The default filter a server using the backends sets: INFO, with the SDK's own chatter off.
    let filter = tracing_subscriber::EnvFilter::new(format!("info,{}", accord_backends::LOG_DIRECTIVES));
    let subscriber =
        tracing_subscriber::fmt().with_ansi(false).with_env_filter(filter).with_writer(move || writer.clone()).finish();
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/mcp_tools.py");
    let text = format!(
        "[agent]\nname = \"logs\"\n[[mcp]]\nname = \"tools\"\ncommand = {{ argv = [\"python3\", {:?}], env_set = {{ MCP_TASK_TOOL = \"1\" }} }}\n",
        script.display().to_string()
    );
    let env = HashMap::from([("PATH", std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()))]);
    let file = AgentFile::parse_with_env(&text, "logs.toml", ".", &|name| env.get(name).cloned()).expect("file");
    let built = file.build_with_servers().await.expect("agent");
    let (agent, server) = (&built.agent, &built.mcp_servers[0]);
    // A tool that requires MCP tasks is left out with a WARN naming it.
    let log = capture.text();
    let left_out =
        log.lines().find(|line| line.contains("are left out")).unwrap_or_else(|| panic!("no left-out line: {log}"));
    assert!(left_out.contains(" WARN ") && left_out.contains("tools \"render\" of mcp server 'tools'"), "{left_out}");
    // Progress steps are not INFO lines.
    let valid = agent.skill("slow").expect("slow").validate_input(json!({"seconds": 0.3})).expect("valid");
    agent.invoke(valid).await.expect("slow");
    assert!(!capture.text().contains("step 1 of 3"), "{}", capture.text());
    let pid = server.pid().await.expect("pid");
    let status = std::process::Command::new("kill").args(["-9", &pid.to_string()]).status().expect("kill");
    assert!(status.success());
    for _ in 0..250 {
        if capture.text().contains("is back") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let log = capture.text();
    let down = log.lines().find(|line| line.contains("is down")).unwrap_or_else(|| panic!("no down line: {log}"));
    assert!(down.contains(" WARN "), "{down}");
    assert!(
        down.contains(
            "MCP server 'tools' is down: the server process exited (killed by signal 9); bringing it back in 0.5 s"
        ),
        "{down}"
    );
    let back = log.lines().find(|line| line.contains("is back")).unwrap_or_else(|| panic!("no back line: {log}"));
    assert!(back.contains(" INFO ") && back.contains("MCP server 'tools' is back"), "{back}");
}
