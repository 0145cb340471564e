//! The `shoal` program for the end-to-end tests (see `Cargo.toml`): exactly what the `shoal`
//! binary runs.

fn main() -> std::process::ExitCode {
    shoal::entry::main()
}
