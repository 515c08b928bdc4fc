//! The board as a look found it ([`BoardView`]): decoded tasks, or, when
//! the board index was the board (whole, or with the team watcher's
//! account of the few files that changed since), the index's bytes read in
//! place with those files' tasks over them.
//!
//! A one-shot `status` or `task list` at 10,000 tasks spent most of its
//! time decoding the index into 3 MB of fresh memory (issue 25, item 6):
//! the first touch of a fresh page costs more here than the decode that
//! fills it. A view prints or counts the tasks where they lie and decodes
//! only the few it keeps ([`BoardView::owned_open`]); [`BoardView::into_list`]
//! decodes the rest for a caller that needs every [`Task`].

use super::index::{Row, Rows, Seen, Strs};
use super::{Status, Task, TaskList};
use crate::atomic_file::Mapped;
use std::iter::Peekable;
use std::path::PathBuf;

/// Every readable task of the board, in id order, and the files that were
/// not readable and were copied aside by the look.
pub struct BoardView {
    tasks: Tasks,
    pub quarantined: Vec<PathBuf>,
}

/// A task read again over the index's entry for its id (`None`: its file
/// is gone), with what was seen of it.
pub(crate) type Fresh = (u64, Option<(Seen, Task)>);

enum Tasks {
    Decoded(Vec<Task>),
    /// The index's checked `rows` in `bytes`, under `fresh` (in id order).
    Mapped {
        bytes: Mapped,
        rows: Rows,
        fresh: Vec<Fresh>,
    },
}

impl BoardView {
    pub fn decoded(list: TaskList) -> BoardView {
        BoardView {
            tasks: Tasks::Decoded(list.tasks),
            quarantined: list.quarantined,
        }
    }

    /// The index `bytes` (checked into `rows`) with `fresh` (ids in order)
    /// over it.
    pub(crate) fn mapped(
        bytes: Mapped,
        rows: Rows,
        fresh: Vec<Fresh>,
        quarantined: Vec<PathBuf>,
    ) -> BoardView {
        debug_assert!(fresh.is_sorted_by_key(|f| f.0));
        BoardView {
            tasks: Tasks::Mapped { bytes, rows, fresh },
            quarantined,
        }
    }

    /// The tasks in id order, each where it lies.
    pub fn iter(&self) -> impl Iterator<Item = TaskView<'_>> {
        match &self.tasks {
            Tasks::Decoded(tasks) => Iter::Decoded(tasks.iter()),
            Tasks::Mapped { bytes, rows, fresh } => Iter::Mapped {
                rows: rows.iter(bytes),
                fresh: fresh.iter().peekable(),
                held: None,
            },
        }
    }

    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }

    /// The tasks that have an owner and are not completed, decoded: all
    /// that the orphan rules (`team::orphans`) and the owners' index
    /// (`team::status::ByOwner`) look at.
    pub fn owned_open(&self) -> Vec<Task> {
        self.iter()
            .filter(|t| t.owner().is_some() && t.status() != Status::Completed)
            .map(|t| t.task())
            .collect()
    }

    /// `task` as it now is (given back to the board after this look),
    /// over what the look found under its id.
    pub fn replace(&mut self, task: Task) {
        match &mut self.tasks {
            Tasks::Decoded(tasks) => {
                if let Some(t) = tasks.iter_mut().find(|t| t.id == task.id) {
                    *t = task;
                }
            }
            Tasks::Mapped { fresh, .. } => {
                let id = task.number();
                // Never settled: its file was written after the look.
                let seen = Seen {
                    id,
                    stamp: super::cache::Stamp::from_words([0; 7]),
                    settled: false,
                };
                match fresh.binary_search_by_key(&id, |f| f.0) {
                    Ok(at) => fresh[at].1 = Some((seen, task)),
                    Err(at) => fresh.insert(at, (id, Some((seen, task)))),
                }
            }
        }
    }

    /// Every task, decoded.
    pub fn into_list(self) -> TaskList {
        let quarantined = self.quarantined;
        let tasks = match self.tasks {
            Tasks::Decoded(tasks) => tasks,
            Tasks::Mapped { bytes, rows, fresh } => decode(&bytes, rows, fresh),
        };
        TaskList { tasks, quarantined }
    }
}

/// The index's rows decoded, with `fresh` put in their places.
fn decode(bytes: &[u8], rows: Rows, fresh: Vec<Fresh>) -> Vec<Task> {
    let mut seen = Vec::with_capacity(rows.len() + fresh.len());
    let mut tasks = Vec::with_capacity(rows.len() + fresh.len());
    for row in rows.iter(bytes) {
        seen.push(row.seen());
        tasks.push(row.task());
    }
    put_fresh(seen, tasks, fresh).1
}

/// The decoded index (`seen[i]` of `tasks[i]`, in id order) with `fresh`
/// put in their places: a task read again takes its old place, and only a
/// task that came or went (other than at the end) moves the others, in one
/// pass. At 10,000 tasks a copy of the list is 2 MB of fresh memory, more
/// than the rest of a look after a change.
pub(crate) fn put_fresh(
    mut seen: Vec<Seen>,
    mut tasks: Vec<Task>,
    fresh: Vec<Fresh>,
) -> (Vec<Seen>, Vec<Task>) {
    // The tasks that came or went (ids in order), with what is there now.
    let mut moved: Vec<Fresh> = Vec::new();
    for (n, now) in fresh {
        let at = seen.partition_point(|s| s.id < n);
        let had = seen.get(at).is_some_and(|s| s.id == n);
        match now {
            Some((s, task)) if had => {
                seen[at] = s;
                tasks[at] = task;
            }
            None if !had => {}
            now => moved.push((n, now)),
        }
    }
    if moved
        .iter()
        .all(|(n, now)| now.is_some() && seen.last().is_none_or(|s| s.id < *n))
    {
        // New tasks past the last one (a create): added at the end.
        for (s, task) in moved.into_iter().filter_map(|(_, now)| now) {
            seen.push(s);
            tasks.push(task);
        }
        return (seen, tasks);
    }
    let mut kept = seen.into_iter().zip(tasks).peekable();
    let (mut seen_out, mut tasks_out) = (Vec::new(), Vec::new());
    for (n, now) in moved {
        while let Some((s, task)) = kept.next_if(|(s, _)| s.id < n) {
            seen_out.push(s);
            tasks_out.push(task);
        }
        // What it held before: gone, or replaced by what is there now.
        kept.next_if(|(s, _)| s.id == n);
        if let Some((s, task)) = now {
            seen_out.push(s);
            tasks_out.push(task);
        }
    }
    for (s, task) in kept {
        seen_out.push(s);
        tasks_out.push(task);
    }
    (seen_out, tasks_out)
}

enum Iter<'a, R: Iterator<Item = Row<'a>>> {
    Decoded(std::slice::Iter<'a, Task>),
    Mapped {
        rows: R,
        fresh: Peekable<std::slice::Iter<'a, Fresh>>,
        /// A row read while a fresh task went first.
        held: Option<Row<'a>>,
    },
}

impl<'a, R: Iterator<Item = Row<'a>>> Iterator for Iter<'a, R> {
    type Item = TaskView<'a>;
    fn next(&mut self) -> Option<TaskView<'a>> {
        let (rows, fresh, held) = match self {
            Iter::Decoded(tasks) => return tasks.next().map(TaskView::Task),
            Iter::Mapped { rows, fresh, held } => (rows, fresh, held),
        };
        loop {
            let row = held.take().or_else(|| rows.next());
            match fresh.peek().map(|f| f.0) {
                Some(f) if row.is_none_or(|r| f <= r.id) => {
                    // The fresh task goes first; a row of its id is gone.
                    if let Some(r) = row
                        && r.id != f
                    {
                        *held = Some(r);
                    }
                    if let Some((_, Some((_, task)))) = fresh.next() {
                        return Some(TaskView::Task(task));
                    }
                }
                _ => return row.map(TaskView::Row),
            }
        }
    }
}

/// One task of a [`BoardView`]: decoded, or where it lies in the index.
#[derive(Clone, Copy)]
pub enum TaskView<'a> {
    Task(&'a Task),
    Row(Row<'a>),
}

impl<'a> TaskView<'a> {
    /// Its id: the digits of its number.
    pub fn id(&self) -> Id<'a> {
        match self {
            TaskView::Task(t) => Id::Text(&t.id),
            TaskView::Row(r) => Id::Number(r.id),
        }
    }

    pub fn status(&self) -> Status {
        match self {
            TaskView::Task(t) => t.status,
            TaskView::Row(r) => r.status,
        }
    }

    pub fn owner(&self) -> Option<&'a str> {
        match self {
            TaskView::Task(t) => t.owner.as_deref(),
            TaskView::Row(r) => r.owner(),
        }
    }

    pub fn subject(&self) -> &'a str {
        match self {
            TaskView::Task(t) => &t.subject,
            TaskView::Row(r) => r.subject(),
        }
    }

    /// Its `blockedBy`, in order.
    pub fn blocked_by(&self) -> impl Iterator<Item = &'a str> + use<'a> {
        enum Of<'a> {
            Task(std::slice::Iter<'a, String>),
            Row(Strs<'a>),
        }
        let mut of = match self {
            TaskView::Task(t) => Of::Task(t.blocked_by.iter()),
            TaskView::Row(r) => Of::Row(r.blocked_by()),
        };
        std::iter::from_fn(move || match &mut of {
            Of::Task(i) => i.next().map(String::as_str),
            Of::Row(i) => i.next(),
        })
    }

    /// Pending and marked failed by its runner
    /// ([`Task::failed`]).
    pub fn failed(&self) -> bool {
        match self {
            TaskView::Task(t) => t.failed(),
            TaskView::Row(r) => r.failed(),
        }
    }

    /// The task, decoded.
    pub fn task(&self) -> Task {
        match self {
            TaskView::Task(t) => (*t).clone(),
            TaskView::Row(r) => r.task(),
        }
    }
}

/// A task's id as a [`TaskView`] holds it.
pub enum Id<'a> {
    Text(&'a str),
    Number(u64),
}

impl Id<'_> {
    /// `f` of the id's text.
    pub fn with<R>(&self, f: impl FnOnce(&str) -> R) -> R {
        match self {
            Id::Text(t) => f(t),
            Id::Number(n) => f(super::index::digits(*n, &mut [0; 20])),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::cache::Stamp;
    use crate::tasks::index::Index;

    fn task(id: u64, subject: &str) -> Task {
        Task::new(id.to_string(), subject)
    }

    /// A view of an index of tasks 1, 2, 3, 4, 6, 8 with `fresh` over it.
    fn view(fresh: Vec<Fresh>) -> (tempfile::TempDir, BoardView) {
        let d = tempfile::tempdir().unwrap();
        let stamp = Stamp::from_words([1; 7]);
        let mut failed = task(8, "eight");
        failed.owner = Some("bob".into());
        failed.metadata = Some(serde_json::from_str(r#"{"failed":true}"#).unwrap());
        let tasks: Vec<Task> = [1, 2, 3, 4, 6]
            .into_iter()
            .map(|n| task(n, &format!("was {n}")))
            .chain([failed])
            .collect();
        let bytes = Index::encode(
            stamp,
            true,
            1,
            (1, 1),
            tasks.iter().map(|t| (stamp, true, t)),
        );
        let path = d.path().join("index");
        std::fs::write(&path, &bytes).unwrap();
        let mapped = crate::atomic_file::map_cache(&path).unwrap().unwrap();
        let rows = Rows::of(&mapped).unwrap();
        (d, BoardView::mapped(mapped, rows, fresh, Vec::new()))
    }

    fn fresh(n: u64, subject: Option<&str>) -> Fresh {
        let seen = Seen {
            id: n,
            stamp: Stamp::from_words([2; 7]),
            settled: false,
        };
        (n, subject.map(|s| (seen, task(n, s))))
    }

    fn shown(v: &BoardView) -> Vec<(String, String)> {
        v.iter()
            .map(|t| (t.id().with(str::to_owned), t.subject().to_owned()))
            .collect()
    }

    #[test]
    fn the_tasks_read_again_go_over_the_index_in_id_order_in_place_and_decoded() {
        // Replaced, gone, new in a gap, gone though never indexed, new past
        // the last.
        let (_d, v) = view(vec![
            fresh(2, Some("now 2")),
            fresh(3, None),
            fresh(5, Some("new 5")),
            fresh(7, None),
            fresh(9, Some("new 9")),
        ]);
        let want = [
            ("1", "was 1"),
            ("2", "now 2"),
            ("4", "was 4"),
            ("5", "new 5"),
            ("6", "was 6"),
            ("8", "eight"),
            ("9", "new 9"),
        ];
        let want: Vec<_> = want
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        assert_eq!(shown(&v), want);
        let streamed: Vec<Task> = v.iter().map(|t| t.task()).collect();
        assert_eq!(v.into_list().tasks, streamed, "decoded as read in place");
    }

    #[test]
    fn a_task_given_back_shows_as_it_now_is_and_only_owned_open_tasks_are_decoded() {
        let (_d, mut v) = view(vec![fresh(5, Some("new 5"))]);
        let row = v.iter().find(|t| t.id().with(|id| id == "8")).unwrap();
        assert!(matches!(row, TaskView::Row(_)));
        assert!(row.failed(), "pending with metadata.failed, read in place");
        assert_eq!(row.owner(), Some("bob"));
        let owned = v.owned_open();
        assert_eq!(owned.len(), 1);
        assert_eq!(owned[0].id, "8");
        let mut back = owned[0].clone();
        back.owner = None;
        back.subject = "given back".into();
        v.replace(back);
        // Over the index, and over a task read again.
        let mut five = task(5, "five again");
        five.status = Status::Completed;
        v.replace(five);
        let shown = shown(&v);
        assert_eq!(shown[4], ("5".into(), "five again".into()));
        assert_eq!(shown[6], ("8".into(), "given back".into()));
        assert_eq!(shown.len(), 7);
        assert!(v.owned_open().is_empty());
        let statuses: Vec<Status> = v.iter().map(|t| t.status()).collect();
        assert_eq!(
            statuses.iter().filter(|s| **s == Status::Completed).count(),
            1
        );
        assert!(!v.is_empty());
        assert!(BoardView::decoded(TaskList::default()).is_empty());
    }
}
