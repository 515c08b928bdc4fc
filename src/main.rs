//! The `swarm` binary: a switchboard. It parses, initialises logging, runs
//! the command, prints any error once and maps the outcome to an exit code
//! (0 ok, 1 "the answer is no", 2 error).

use clap::Parser;
use std::process::ExitCode;
use swarm::cli::Cli;
use swarm::commands::{self, Exit};
use swarm::text::escape_line;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The lead and the teammate runtime log to their own files (they own a
    // terminal someone watches); every other command to stderr if asked.
    use swarm::cli::Command;
    if !matches!(
        cli.command,
        Command::Up(_) | Command::Lead(_) | Command::Teammate(_)
    ) {
        swarm::logging::init_stderr();
    }
    match commands::run(cli) {
        Ok(Exit::Ok) => ExitCode::SUCCESS,
        Ok(Exit::No(why)) => {
            eprintln!("swarm: {}", escape_line(&why));
            ExitCode::from(1)
        }
        Err(err) => {
            if is_broken_pipe(&err) {
                // The reader went away (`swarm inbox --follow | head`): not an error.
                return ExitCode::SUCCESS;
            }
            // One line, and nothing in it a terminal would obey: errors echo
            // names and text from outside.
            eprintln!("swarm: {}", escape_line(&format!("{err:#}")));
            ExitCode::from(2)
        }
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
