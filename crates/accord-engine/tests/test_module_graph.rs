//! The engine's files import each other without cycles: the shared nouns live in `model`, which
//! imports none of the others, and every other module imports downward only. A new import that
//! closes a cycle fails here, naming it.

mod module_graph;

use std::path::Path;

use module_graph::ModuleGraph;

#[test]
fn the_engine_has_no_file_cycles() {
    let graph = ModuleGraph::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(graph.imports("model").is_empty(), "model imports {:?}", graph.imports("model"));
    graph.assert_no_cycles();
    // The graph was read: the service depends on the runtime, the runtime on the model.
    assert!(graph.imports("task::service").contains("task::runtime"), "{graph:?}");
    assert!(graph.imports("task::runtime").contains("model"), "{graph:?}");
    // The service's rooms use its shared types.
    for room in ["task::service::paid", "task::service::push"] {
        assert!(graph.imports(room).contains("task::service"), "{graph:?}");
    }
}
