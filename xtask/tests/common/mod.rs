//! Running the `xtask` binary from the integration tests.

use std::process::Command;

/// The `xtask` binary of this build, as a command to add arguments to.
pub fn xtask() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
}

/// Runs `command` to the end: its exit code (−1 when a signal ended it), stdout and stderr.
pub fn run(command: &mut Command) -> (i32, String, String) {
    let output = command.output().expect("the xtask binary runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}
