//! The `rivumi-mcp` binary: everything lives in the library
//! (`src/lib.rs`), so that the fuzz targets and tests build the same code.

fn main() -> std::process::ExitCode {
    rivumi_mcp::main()
}
