//! The built-in `shell` agent: no AI, no network. A task runs its
//! `metadata.command` (else its description, else its subject) as
//! `sh -c COMMAND` in the member's cwd; a plain message's text runs the same
//! way and its output is the reply.

use crate::tasks::Task;

/// The command a task asks for.
pub fn task_command(task: &Task) -> String {
    if let Some(c) = task
        .metadata
        .as_ref()
        .and_then(|m| m.get("command"))
        .and_then(|c| c.as_str())
        .filter(|c| !c.trim().is_empty())
    {
        return c.to_string();
    }
    if !task.description.trim().is_empty() {
        return task.description.clone();
    }
    task.subject.clone()
}

/// `sh -c COMMAND`.
pub fn argv(command: &str) -> Vec<String> {
    vec!["sh".into(), "-c".into(), command.into()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_command_wins_over_the_description() {
        let mut t = Task::new("1", "count");
        t.description = "wc -l *".into();
        assert_eq!(task_command(&t), "wc -l *");
        let mut md = serde_json::Map::new();
        md.insert("command".into(), "echo hi".into());
        t.metadata = Some(md);
        assert_eq!(task_command(&t), "echo hi");
    }
}
