//! `cargo run -p accord-grpc-codegen`: rewrites `crates/accord-grpc/src/gen/lf.a2a.v1.rs`.

use std::process::ExitCode;

fn main() -> ExitCode {
    let out_dir = accord_grpc_codegen::grpc_crate().join("src/gen");
    match accord_grpc_codegen::generate(&out_dir) {
        Ok(file) => {
            println!("wrote {}", file.display());
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("accord-grpc-codegen: {error}");
            ExitCode::FAILURE
        }
    }
}
