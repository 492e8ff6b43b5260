//! Regenerates `accord-grpc`'s Rust code from `crates/accord-grpc/proto/a2a/a2a.proto`.
//!
//! The generated code is checked in (`crates/accord-grpc/src/gen/lf.a2a.v1.rs`), so building
//! Accord needs neither `protoc` nor this crate: `cargo run -p accord-grpc-codegen` rewrites it
//! after the proto changes, and this crate's test fails while the checked-in code is stale.
//! The proto is compiled by [`protox`] (a protobuf compiler written in Rust) and the Rust code
//! written by `tonic-prost-build` (prost messages, the tonic client and server).

use std::path::{Path, PathBuf};

/// The A2A package, the only one whose code is generated: `google.protobuf` maps onto
/// `prost-types`, and the `google.api` options do not change the generated code.
pub const PACKAGE: &str = "lf.a2a.v1";

/// The `accord-grpc` crate's directory.
pub fn grpc_crate() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../accord-grpc")
}

/// Writes `<PACKAGE>.rs` into `out_dir`.
///
/// # Errors
/// The proto does not compile, or the directory cannot be written.
pub fn generate(out_dir: &Path) -> Result<PathBuf, Box<dyn std::error::Error>> {
    let proto_dir = grpc_crate().join("proto");
    let set = protox::compile(["a2a/a2a.proto"], [&proto_dir])?;
    // The comments come from the proto's source info and become the items' docs.
    tonic_prost_build::configure()
        // Only options, never referenced by an A2A message: no module is generated for it.
        .extern_path(".google.api", "::prost_types")
        .build_client(true)
        .build_server(true)
        .build_transport(false)
        .emit_rerun_if_changed(false)
        .out_dir(out_dir)
        .compile_fds(set)?;
    let file = out_dir.join(format!("{PACKAGE}.rs"));
    if !file.is_file() {
        return Err(format!("tonic-prost-build wrote no {}", file.display()).into());
    }
    Ok(file)
}
