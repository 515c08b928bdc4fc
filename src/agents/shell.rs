//! The built-in `shell` agent: no AI, no network. A task runs its
//! `metadata.command` as `sh -c COMMAND` in the member's cwd, and a shell
//! teammate claims only tasks that carry one ([`crate::tasks::Takes`]):
//! a task's subject and description are words, never run. A plain
//! message's text runs the same way and its output is the reply.

use crate::tasks::Task;

/// The command a task asks for: its `metadata.command`, if it carries one.
pub fn task_command(task: &Task) -> Option<&str> {
    task.command()
}

/// `sh -c COMMAND`.
pub fn argv(command: &str) -> Vec<String> {
    vec!["sh".into(), "-c".into(), command.into()]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 24, item 1: `swarm task create "touch SUBJECT_RAN"` with a
    /// shell teammate on the team created the file; `--description
    /// manual` ran `manual`. Only `metadata.command` is a command.
    #[test]
    fn only_metadata_command_is_a_command_never_the_subject_or_description() {
        let mut t = Task::new("1", "touch SUBJECT_RAN");
        t.description = "manual".into();
        assert_eq!(task_command(&t), None);
        let mut md = serde_json::Map::new();
        md.insert("command".into(), "  ".into());
        t.metadata = Some(md.clone());
        assert_eq!(task_command(&t), None, "a blank command is none");
        md.insert("command".into(), "echo hi".into());
        t.metadata = Some(md);
        assert_eq!(task_command(&t), Some("echo hi"));
    }
}
