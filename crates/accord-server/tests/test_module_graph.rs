//! The server's files import each other without cycles, and the layers below the faces name no
//! face: authentication, rate limits, version negotiation, refusals, body reading, event-stream
//! framing, client addresses, metrics, the serving loop, the payment rail's side and push delivery
//! are shared by every face, so a face may import them and never the other way round. The Lucid
//! error shape is the Lucid face's (`lucid::error`): a layer that names it, even through the
//! crate root's re-export (`crate::LucidError`), imports a face. A new binding adds a face (and its refusal
//! renderer) without editing a layer; an import that breaks that fails here, naming it.

#[path = "../../accord-engine/tests/module_graph/mod.rs"]
mod module_graph;

use std::path::Path;

use module_graph::ModuleGraph;

/// The layers below the faces.
const LAYERS: &[&str] =
    &["auth", "limits", "version", "refusal", "body", "sse", "client_address", "observe", "serve", "payments", "push"];

/// The faces: each protocol's routes, the card routes, the OpenAPI document and the landing page.
const FACES: &[&str] = &["lucid", "jsonrpc_tasks", "a2a", "card", "openapi", "landing"];

fn graph() -> ModuleGraph {
    ModuleGraph::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

#[test]
fn the_server_has_no_file_cycles() {
    graph().assert_no_cycles();
}

#[test]
fn no_layer_imports_a_face() {
    let graph = graph();
    for layer in LAYERS {
        assert!(graph.modules().any(|module| module == *layer), "no layer {layer}");
    }
    let upward = graph.upward_imports(LAYERS, FACES);
    assert!(upward.is_empty(), "layers import faces:\n{}", upward.join("\n"));
    // The graph was read: faces import the layers they are mounted on.
    assert!(graph.imports("a2a::rest").contains("version"), "{graph:?}");
    assert!(graph.imports("a2a::jsonrpc").contains("refusal"), "{graph:?}");
    assert!(graph.imports("jsonrpc_tasks").contains("sse"), "{graph:?}");
    assert!(graph.imports("lucid::invoke").contains("lucid::error"), "{graph:?}");
}
