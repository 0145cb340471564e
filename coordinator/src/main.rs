//! The `shoal` binary; the program itself is `shoal_coordinator::entry`.

fn main() -> std::process::ExitCode {
    shoal_coordinator::entry::main()
}
