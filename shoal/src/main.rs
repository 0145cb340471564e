//! The `shoal` binary; the program itself is `shoal::entry`.

fn main() -> std::process::ExitCode {
    shoal::entry::main()
}
