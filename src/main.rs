//! The `swarm` binary: a switchboard. It parses, initialises logging, runs
//! the command, prints any error once and maps the outcome to an exit code
//! (0 ok, 1 "the answer is no", 2 error).

use std::process::ExitCode;
use swarm::cli::Cli;
use swarm::commands::{self, Exit};
use swarm::text::escape_line;

fn main() -> ExitCode {
    swarm::logging::install_panic_hook();
    let mut cli = Cli::from_env();
    // A pane's first process: once its pane is ready it becomes the pane's
    // program, exec'd, or run right here when that is this executable's
    // own teammate runtime (before anything else of this process starts).
    if let swarm::cli::Command::PaneExec(args) = cli.command {
        cli = match swarm::ops::spawn::pane_exec(args) {
            Ok(own) => own,
            Err(err) => return failed(&err),
        };
    }
    // The lead, the teammate runtime and the MCP server log to their own
    // files (they own a terminal someone watches, or stdout is a
    // protocol); every other command to stderr if asked.
    use swarm::cli::Command;
    let short_lived = !matches!(
        cli.command,
        Command::Up(_) | Command::Lead(_) | Command::Teammate(_) | Command::Mcp(_)
    );
    if matches!(cli.command, Command::Send(_)) {
        // A directory that passed the path rule is not walked again by a
        // send (see `atomic_file::safe_path`): a send walks the same ~8
        // components five times.
        swarm::atomic_file::hold_checks();
    }
    if short_lived {
        swarm::logging::init_stderr();
        end_quietly_on_a_closed_pipe();
    }
    swarm::ops::ring::install();
    let outcome = commands::run(cli);
    // A ring through another machine this command started (a send to a
    // teammate there) is made before the process ends.
    swarm::ops::ring::flush();
    match outcome {
        Ok(Exit::Ok) => ExitCode::SUCCESS,
        Ok(Exit::No(why)) => {
            say(&format!("swarm: {}", escape_line(&why)));
            ExitCode::from(1)
        }
        Err(err) => failed(&err),
    }
}

/// The exit of a command that failed, its error said in one line.
fn failed(err: &anyhow::Error) -> ExitCode {
    if is_broken_pipe(err) {
        // The reader went away (`swarm inbox --follow | head`): not an error.
        return ExitCode::SUCCESS;
    }
    // One line, and nothing in it a terminal would obey: errors echo
    // names and text from outside.
    say(&format!("swarm: {}", escape_line(&format!("{err:#}"))));
    let pending = match swarm::team::post::Incomplete::in_error(err) {
        // A broadcast: 3 if it is pending for anyone, else 2.
        Some(b) => b.any_pending(),
        None => swarm::mailbox::MailboxError::still_pending_in(err),
    };
    if pending {
        // Not failed, not delivered yet: a stopped holder took the
        // message and will write it once when it resumes (or the
        // next send will). Exit 3, so a script does not resend.
        return ExitCode::from(3);
    }
    ExitCode::from(2)
}

/// The one line `main` prints. A terminal that went away (the lead's, when
/// its tmux server died) makes `eprintln!` panic; the exit code still says
/// what happened.
fn say(line: &str) {
    use std::io::Write;
    // A stderr that is gone has no one to tell.
    swarm::dropped::ignore(writeln!(std::io::stderr(), "{line}"), "writing to stderr");
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// A short-lived command whose reader went away (`swarm task list | head -1`)
/// ends there, quietly, the way `cat` and `grep` do: SIGPIPE is put back to
/// its default action, so the first write to the closed pipe ends the
/// process (status 128 + 13 to the shell, which prints nothing).
///
/// Rust ignores SIGPIPE, which turns that write into an `EPIPE` error and
/// every `println!` into a panic. Restoring the signal, rather than writing
/// through a helper that maps `BrokenPipe` to a quiet exit, covers every
/// writer at once: `println!`, `eprintln!`, `print_json`, code in other
/// modules and code not written yet. It is safe for these commands: they
/// write to no pipe of a child (children start with SIGPIPE at its default
/// anyway), and being ended at any point is already a case they survive
/// (Ctrl-C, `kill -9`: every write is temp + rename, a dead holder's lock is
/// detected). The lead and the teammate runtime keep SIGPIPE ignored: they
/// own pipes to agents and to tmux, where `EPIPE` is an error to handle
/// (`is_broken_pipe` above), not a reason to die.
fn end_quietly_on_a_closed_pipe() {
    #[cfg(unix)]
    // SAFETY: called once at start-up on the main thread, before any other
    // thread exists; SIG_DFL installs no handler, so no handler code runs.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
