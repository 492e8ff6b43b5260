//! The page's markup: `page.html` with its `{{slots}}` filled from the card. Every value that
//! comes from the agent or the request is HTML-escaped here; the skills the script needs travel in
//! a JSON data block escaped so that it cannot close its element.

use std::fmt::Write as _;

use accord_engine::{Agent, SkillOperation};
use accord_types::a2a::card::{PROTOCOL_BINDING_GRPC, PROTOCOL_BINDING_HTTP_JSON, PROTOCOL_BINDING_JSONRPC};
use accord_types::card::{AgentCard, LUCID_BINDING};
use serde_json::{Value, json};

use super::{SCRIPT, STYLE};
use crate::JSONRPC_TASKS_BINDING;
use crate::card::SIGNED_CARD_PATH;

const TEMPLATE: &str = include_str!("page.html");

/// What the page is made from.
pub(super) struct PageInput<'a> {
    /// The card as the card route builds it for this request.
    pub(super) card: &'a AgentCard,
    /// The same card as the card route serves it (signed when a signer is configured): the raw view.
    pub(super) served: &'a Value,
    /// The agent, for what its card does not say: which operations each skill has.
    pub(super) agent: &'a Agent,
    /// The path the agent is mounted under (`""` at the root), without a trailing `/`.
    pub(super) base_path: &'a str,
    /// Whether the Lucid face is served (the try-it forms call it).
    pub(super) lucid: bool,
    /// Whether the Lucid task routes are served (the task panel calls them).
    pub(super) tasks: bool,
    /// Whether a signed card envelope is served.
    pub(super) signed_card: bool,
}

/// The page as HTML.
pub(super) fn render(input: &PageInput<'_>) -> String {
    let card = input.card;
    let base = escape(input.base_path);
    let card_json = serde_json::to_string_pretty(input.served).unwrap_or_default();
    let fill = |slot: &str, out: &mut String| match slot {
        "name" => out.push_str(&escape(&card.name)),
        "description" => out.push_str(&escape(card.description.as_deref().unwrap_or_default())),
        "version" => out.push_str(&escape(card.version.as_deref().unwrap_or("unversioned"))),
        "base" => out.push_str(&base),
        "script" => out.push_str(&SCRIPT.name),
        "style" => out.push_str(&STYLE.name),
        "lucid" => out.push_str(if input.lucid { "on" } else { "off" }),
        "tasks" => out.push_str(if input.tasks { "on" } else { "off" }),
        "signed-link" if input.signed_card => {
            let _ = write!(
                out,
                ", and signed: <a id=\"signed-card-link\" href=\"{base}{SIGNED_CARD_PATH}\">{base}{SIGNED_CARD_PATH}</a>"
            );
        }
        "signed-view" if input.signed_card => {
            let _ = write!(
                out,
                "<details id=\"card-signed\" data-src=\"{base}{SIGNED_CARD_PATH}\">\n<summary>The signed card \
                 envelope (JSON)</summary>\n<pre><code>Open <a href=\"{base}{SIGNED_CARD_PATH}\">the envelope</a> \
                 to read it.</code></pre>\n</details>"
            );
        }
        "interfaces" => interfaces(card, out),
        "card-json" => out.push_str(&escape(&card_json)),
        "lucid-notice" if !input.lucid => out.push_str(
            "<p class=\"notice\" id=\"lucid-off\">The Lucid HTTP profile is turned off on this agent, so this page \
             offers no try-it forms: call the skills through the interfaces listed on the card.</p>",
        ),
        "skills" => skills(input, out),
        "tasks-panel" => tasks_panel(input, out),
        "skills-json" => out.push_str(&script_json(&skills_data(input))),
        _ => {}
    };
    fill_template(TEMPLATE, fill)
}

/// `template` with each `{{slot}}` replaced by what `fill` writes for it, in one pass (a value
/// that contains `{{…}}` stays as it is).
fn fill_template(template: &str, mut fill: impl FnMut(&str, &mut String)) -> String {
    let mut out = String::with_capacity(template.len() * 4);
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find("}}") {
            Some(end) => {
                fill(&after[..end], &mut out);
                rest = &after[end + 2..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// A readable name for a binding.
fn binding_name(binding: &str) -> &str {
    match binding {
        LUCID_BINDING => "Lucid HTTP profile",
        PROTOCOL_BINDING_JSONRPC => "A2A JSON-RPC",
        PROTOCOL_BINDING_HTTP_JSON => "A2A HTTP+JSON",
        PROTOCOL_BINDING_GRPC => "A2A gRPC",
        JSONRPC_TASKS_BINDING => "JSON-RPC tasks",
        other => other,
    }
}

fn interfaces(card: &AgentCard, out: &mut String) {
    if card.supported_interfaces.is_empty() {
        out.push_str("<p>The card lists no interface.</p>");
        return;
    }
    out.push_str(
        "<table class=\"interfaces\">\n<thead><tr><th>binding</th><th>URL</th><th>version</th></tr></thead>\n<tbody>\n",
    );
    for interface in &card.supported_interfaces {
        let _ = writeln!(
            out,
            "<tr><td>{}<br><code>{}</code></td><td><code>{}</code></td><td>{}</td></tr>",
            escape(binding_name(&interface.protocol_binding)),
            escape(&interface.protocol_binding),
            escape(&interface.url),
            escape(interface.protocol_version.as_deref().unwrap_or("")),
        );
    }
    out.push_str("</tbody>\n</table>");
}

/// The skill's operations, as the engine has them (an unknown skill — an extended card's entry —
/// has none).
fn operations(agent: &Agent, key: &str) -> Vec<SkillOperation> {
    agent.skill(key).map(|skill| skill.operations()).unwrap_or_default()
}

/// Where `key` is reachable: one line per interface of the card that runs it.
fn bindings(card: &AgentCard, key: &str, operations: &[SkillOperation], tasks: bool) -> Vec<String> {
    let mut lines = Vec::new();
    let task = operations.contains(&SkillOperation::Task);
    for interface in &card.supported_interfaces {
        let url = escape(&interface.url);
        let key = escape(key);
        if interface.protocol_binding == LUCID_BINDING {
            let root = url.trim_end_matches('/');
            if operations.contains(&SkillOperation::Invoke) {
                lines.push(format!("Lucid invoke: <code>POST {root}/entrypoints/{key}/invoke</code>"));
            }
            if operations.contains(&SkillOperation::Stream) {
                lines.push(format!("Lucid stream: <code>POST {root}/entrypoints/{key}/stream</code>"));
            }
            if task && tasks {
                lines.push(format!("Lucid task: <code>POST {root}/tasks</code> with <code>skillId: \"{key}\"</code>"));
            }
        } else if task {
            let mut name = escape(binding_name(&interface.protocol_binding));
            // An A2A interface of another version than 1.0 (the 0.3 dialect) says so.
            if let Some(version) = interface.protocol_version.as_deref().filter(|version| *version != "1.0") {
                let _ = write!(name, " {}", escape(version));
            }
            let how = if interface.protocol_binding == JSONRPC_TASKS_BINDING {
                format!("<code>tasks/send</code> with <code>skill: \"{key}\"</code>")
            } else {
                format!("a message with <code>metadata.skillId: \"{key}\"</code>")
            };
            lines.push(format!("{name}: <code>{url}</code>, {how}"));
        }
    }
    lines
}

fn skills(input: &PageInput<'_>, out: &mut String) {
    let card = input.card;
    if card.skills.is_empty() {
        out.push_str("<p>This agent has no skills.</p>");
        return;
    }
    for skill in &card.skills {
        let key = escape(&skill.id);
        let operations = operations(input.agent, &skill.id);
        let _ = writeln!(out, "<article class=\"skill\" id=\"skill-{key}\" data-skill=\"{key}\">");
        let _ = writeln!(out, "<h3><code>{key}</code></h3>");
        if let Some(description) = &skill.description {
            let _ = writeln!(out, "<p class=\"skill-description\">{}</p>", escape(description));
        }
        if !skill.tags.is_empty() {
            out.push_str("<p class=\"tags\">");
            for tag in &skill.tags {
                let _ = write!(out, "<span class=\"tag\">{}</span> ", escape(tag));
            }
            out.push_str("</p>\n");
        }
        out.push_str("<dl class=\"facts\">\n");
        let price = match card.skill_pricing(&skill.id).and_then(Value::as_object) {
            Some(prices) if !prices.is_empty() => {
                let list: Vec<String> = prices
                    .iter()
                    .map(|(operation, amount)| {
                        let amount = amount.as_str().map_or_else(|| amount.to_string(), str::to_owned);
                        format!("{} {}", escape(operation), escape(&amount))
                    })
                    .collect();
                // The Lucid entrypoint names the rail's protocol and network when payments are set.
                let entrypoint = card.entrypoints.get(&skill.id).map(|entrypoint| &entrypoint.extra);
                let member = |name: &str| entrypoint.and_then(|extra| extra.get(name)).and_then(Value::as_str);
                let rail = match (member("payment_protocol"), member("network")) {
                    (Some(protocol), Some(network)) => format!(" ({} on {})", escape(protocol), escape(network)),
                    _ => String::new(),
                };
                format!("{}{rail}", list.join(", "))
            }
            _ => "free".to_owned(),
        };
        let _ = writeln!(out, "<dt>Price</dt><dd class=\"price\">{price}</dd>");
        let bindings = bindings(card, &skill.id, &operations, input.tasks);
        out.push_str("<dt>Reachable on</dt><dd><ul class=\"bindings\">");
        if bindings.is_empty() {
            out.push_str("<li>no interface of this card runs it</li>");
        }
        for line in bindings {
            let _ = write!(out, "<li>{line}</li>");
        }
        out.push_str("</ul></dd>\n</dl>\n");
        for (title, class, schema) in [
            ("Input schema", "input-schema", card.skill_input_schema(&skill.id)),
            ("Output schema", "output-schema", card.skill_output_schema(&skill.id)),
        ] {
            let text = match schema {
                Some(schema) => escape(&serde_json::to_string_pretty(schema).unwrap_or_default()),
                None => "none declared: any JSON".to_owned(),
            };
            let _ = writeln!(
                out,
                "<details class=\"{class}\"><summary>{title}</summary><pre><code>{text}</code></pre></details>"
            );
        }
        if input.lucid && !operations.is_empty() {
            let _ = writeln!(out, "<div class=\"try\" data-try=\"{key}\"></div>");
        }
        out.push_str("</article>\n");
    }
}

fn tasks_panel(input: &PageInput<'_>, out: &mut String) {
    if !input.tasks {
        let why = if input.lucid { "Tasks are not enabled on this agent" } else { "The Lucid task routes are off" };
        let _ = write!(out, "<p class=\"notice\" id=\"tasks-off\">{why}: the task panel is not offered.</p>");
        return;
    }
    out.push_str(
        "<p>A task runs a skill in the background: start one from a skill's form above (<em>Start task</em>), \
         then watch it, cancel it, or list your tasks here. Your tasks are owned by a token that this page \
         keeps in memory only: reloading the page forgets it.</p>\n\
         <div id=\"task-panel\" class=\"task-panel\"><noscript><p class=\"notice\">The task panel needs \
         JavaScript.</p></noscript></div>",
    );
}

/// What the script needs of each skill: its key, input schema and operations.
fn skills_data(input: &PageInput<'_>) -> Value {
    let skills: Vec<Value> = input
        .card
        .skills
        .iter()
        .map(|skill| {
            let operations = operations(input.agent, &skill.id);
            json!({
                "key": skill.id,
                "inputSchema": input.card.skill_input_schema(&skill.id).cloned().unwrap_or_else(|| json!({})),
                "invoke": operations.contains(&SkillOperation::Invoke),
                "stream": operations.contains(&SkillOperation::Stream),
                "task": operations.contains(&SkillOperation::Task) && input.tasks,
                "priced": input.card.skill_pricing(&skill.id).is_some(),
            })
        })
        .collect();
    Value::Array(skills)
}

/// JSON safe inside a `<script type="application/json">` element: `<`, `>` and `&` are written
/// as `\u` escapes, so no value can end the element or open a comment.
fn script_json(value: &Value) -> String {
    let text = serde_json::to_string(value).unwrap_or_else(|_| "[]".to_owned());
    let mut out = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            // Line separators are valid JSON but not valid in older JavaScript strings.
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            other => out.push(other),
        }
    }
    out
}

/// `text` escaped for HTML text and quoted attribute values.
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_covers_markup_and_quotes() {
        assert_eq!(
            escape("<a href=\"x\" title='y'>&</a>"),
            "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;"
        );
    }

    #[test]
    fn script_json_cannot_close_its_element() {
        let text = script_json(&json!({"d": "</script><!-- & \u{2028}"}));
        assert!(!text.contains('<') && !text.contains('>') && !text.contains('&'), "{text}");
        let back: Value = serde_json::from_str(&text).expect("still JSON");
        assert_eq!(back["d"], "</script><!-- & \u{2028}");
    }

    #[test]
    fn slots_are_filled_once() {
        let filled = fill_template("a {{x}} b {{y}} {{unclosed", |slot, out| {
            out.push_str(if slot == "x" { "{{y}}" } else { "Y" });
        });
        assert_eq!(filled, "a {{y}} b Y {{unclosed");
    }
}
