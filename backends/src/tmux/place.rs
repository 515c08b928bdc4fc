//! Where a teammate's pane goes on a tmux server: beside the lead (the
//! lead pinned on the left, teammates stacked in the right column), into
//! an overflow window when panes would be too small to read, or a window
//! of its own; and the layout kept readable as panes leave and come back
//! (a shown pane rejoins its column, a closed one's column is evened out).
//! The plans are pure functions, tested on recorded layouts.

use super::layout::{self, WindowPane};
use super::panes::{self, Launch, Split};
use super::{Finish, LEAD_PERCENT, MIN_COLS, MIN_ROWS, SplitError, TmuxBackend};
use super::{commands, options, sessions};
use crate::error::{BackendError, Result};
use crate::{PaneId, SpawnSpec};

/// Where the next teammate goes beside the lead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SplitPlan {
    /// The lead is alone: split it side by side, the lead keeping ~35%.
    First,
    /// Stack below the last teammate of the right column, then re-tile.
    Column { below: PaneId },
    /// Panes would be too small: use another window.
    Overflow,
}

/// Plans a split of the lead's window (pure: tested on recorded layouts).
pub fn plan_split(window: &[WindowPane], lead: &PaneId) -> SplitPlan {
    let Some(first) = window.first() else {
        return SplitPlan::Overflow;
    };
    let (w, h) = (first.window_width, first.window_height);
    let lead_cols = w * LEAD_PERCENT / 100;
    let right_cols = w.saturating_sub(lead_cols + 1);
    let teammates: Vec<&WindowPane> = window.iter().filter(|p| &p.pane != lead).collect();
    let n = teammates.len() as u32 + 1;
    // n panes stacked in the column: n-1 separators and a title line each.
    let rows = h.saturating_sub(n - 1) / n;
    let rows = rows.saturating_sub(1);
    if right_cols < MIN_COLS || rows < MIN_ROWS {
        return SplitPlan::Overflow;
    }
    match teammates.last() {
        None => SplitPlan::First,
        Some(last) => SplitPlan::Column {
            below: last.pane.clone(),
        },
    }
}

/// True when a tiled window of `panes` + 1 panes keeps each readable.
pub fn tiled_fits(window_width: u32, window_height: u32, panes: u32) -> bool {
    let n = panes + 1;
    let mut cols = 1;
    while cols * cols < n {
        cols += 1;
    }
    let rows = n.div_ceil(cols);
    let w = window_width.saturating_sub(cols - 1) / cols;
    let h = (window_height.saturating_sub(rows - 1) / rows).saturating_sub(1);
    w >= MIN_COLS && h >= MIN_ROWS
}

/// The pane a pane being hidden rejoins when shown: the last other
/// teammate of its column (it goes back under it), or, when it was alone
/// beside the lead, the lead (it goes back to the lead's right). The first
/// pane of a window is its main one (the lead, split first).
pub(super) fn rejoin_target(window: &[WindowPane], hidden: &PaneId) -> Option<PaneId> {
    let others: Vec<&WindowPane> = window.iter().filter(|p| &p.pane != hidden).collect();
    match others.as_slice() {
        [] => None,
        [only] => Some(only.pane.clone()),
        [.., last] => Some(last.pane.clone()),
    }
}

/// The commands that add a pane for each of `specs` to the tiled window
/// `window`, one split each: the first made by `first` (a split of a pane
/// the list can name), each other below the one before; each pane joined
/// ([`panes::joined`]) and the window tiled again after it.
fn tiled_splits(
    window: &str,
    specs: &[SpawnSpec],
    first: impl Fn(&Launch<'_>) -> Result<Vec<String>>,
) -> Result<Vec<Vec<String>>> {
    let mut cmds = Vec::new();
    for (k, spec) in specs.iter().enumerate() {
        spec.validate()?;
        let launch = Launch::of(spec);
        cmds.push(match k {
            0 => first(&launch)?,
            _ => panes::split_below_last(window, &launch)?,
        });
        cmds.extend(panes::joined(window, spec)?);
        cmds.push(layout::select_layout(window, "tiled"));
    }
    Ok(cmds)
}

impl TmuxBackend {
    /// A pane that shares `pane`'s column, to even the column out through
    /// once `pane` is closed (see [`rejoin_target`]: the window's first
    /// pane, the lead, is not in the column). `None` when it was alone, or
    /// the window cannot be listed.
    pub(super) async fn column_sibling(&self, pane: &PaneId) -> Option<PaneId> {
        let window = self.window_of(pane).await.ok()?;
        let target = rejoin_target(&window, pane)?;
        (window.first().map(|p| &p.pane) != Some(&target)).then_some(target)
    }

    /// Spreads the column of `sibling` out evenly after a teammate's pane
    /// in it closed (tmux gives the whole space to one neighbour). The
    /// kill has succeeded whatever this does: a window that cannot be laid
    /// out again (gone meanwhile) keeps tmux's layout, uneven but whole,
    /// so the error is not the kill's.
    pub(super) async fn even_out(&self, sibling: Option<PaneId>) {
        if let Some(Ok(argv)) = sibling.as_ref().map(layout::select_layout_even) {
            let _uneven_at_worst = self.tmux(argv).await;
        }
    }

    pub(super) async fn window_of(&self, pane: &PaneId) -> Result<Vec<WindowPane>> {
        let out = self.tmux(layout::list_window_panes(pane)?).await?;
        layout::parse_window_panes(&out.stdout)
    }

    pub(super) async fn next_window_index(&self, session: &str) -> Result<u32> {
        let out = self.tmux(sessions::list_window_indexes(session)?).await?;
        sessions::parse_next_window_index(&out.stdout)
    }

    /// A new window in `session`, remain-on-exit set before the program can
    /// exit, finished by `finish` (the window target names its only pane).
    pub(super) async fn spawn_window(
        &self,
        session: &str,
        launch: &Launch<'_>,
        finish: &Finish<'_>,
    ) -> Result<PaneId> {
        Ok(self.spawn_window_listed(session, launch, finish).await?.0)
    }

    /// [`spawn_window`](Self::spawn_window), and the new window as the
    /// same invocation lists it. The index is the one after the last
    /// window this backend opened in `session` when it knows one (no
    /// `list-windows` of its own); taken meanwhile, the windows are listed
    /// and the next free index used.
    pub(super) async fn spawn_window_listed(
        &self,
        session: &str,
        launch: &Launch<'_>,
        finish: &Finish<'_>,
    ) -> Result<(PaneId, Vec<WindowPane>)> {
        let guess = match &self.state.lock().await.next_window {
            Some((s, index)) if s == session => Some(*index),
            _ => None,
        };
        let opened = match guess {
            Some(index) => match self.new_window_at(session, index, launch, finish).await {
                Err(SplitError::NotCreated(_)) => None,
                other => Some(other.map_err(SplitError::into_inner)?),
            },
            None => None,
        };
        let (pane, index, rest) = match opened {
            Some(done) => done,
            None => {
                let index = self.next_window_index(session).await?;
                self.new_window_at(session, index, launch, finish)
                    .await
                    .map_err(SplitError::into_inner)?
            }
        };
        self.state.lock().await.next_window = Some((session.to_string(), index + 1));
        let window = layout::parse_window_panes(&rest)?;
        Ok((pane, window))
    }

    /// A new window at `index` of `session`, and its listing.
    async fn new_window_at(
        &self,
        session: &str,
        index: u32,
        launch: &Launch<'_>,
        finish: &Finish<'_>,
    ) -> std::result::Result<(PaneId, u32, String), SplitError> {
        let target = commands::window_target(session, Some(index))?;
        // One invocation: tmux runs the queue before it handles the child's
        // exit, so the option is in place whatever the program does.
        let mut cmds = vec![
            sessions::new_window(session, index, "swarm", launch)?,
            options::set_window_remain_on_exit(&target, true),
            options::border_status_top(Some(&target)),
        ];
        cmds.extend(finish(Some(&target))?);
        cmds.push(layout::list_panes_window(&target));
        let (pane, rest) = self.run_spawn(cmds).await?;
        Ok((pane, index, rest))
    }

    pub(super) async fn spawn_beside(
        &self,
        lead: &PaneId,
        launch: &Launch<'_>,
        finish: &Finish<'_>,
    ) -> Result<PaneId> {
        let cached = {
            let mut state = self.state.lock().await;
            match state.window.take() {
                Some((l, w)) if &l == lead => Some(w),
                _ => None,
            }
        };
        if let Some(window) = cached {
            // The layout may have changed since (a pane closed, the window
            // resized): a split that fails before creating anything is
            // planned again on a fresh listing.
            match self.split_beside(lead, window, launch, finish).await {
                Ok(pane) => return Ok(pane),
                Err(SplitError::NotCreated(_)) => {}
                Err(SplitError::Other(e)) => return Err(e),
            }
        }
        let window = self.window_of(lead).await?;
        self.split_beside(lead, window, launch, finish)
            .await
            .map_err(SplitError::into_inner)
    }

    pub(super) async fn split_beside(
        &self,
        lead: &PaneId,
        window: Vec<WindowPane>,
        launch: &Launch<'_>,
        finish: &Finish<'_>,
    ) -> std::result::Result<PaneId, SplitError> {
        let Some(lead_row) = window.iter().find(|p| &p.pane == lead) else {
            return Err(SplitError::NotCreated(BackendError::invalid(
                "lead pane",
                lead.as_str(),
                "is not on this tmux server",
            )));
        };
        let (session, window_width) = (lead_row.session.clone(), lead_row.window_width);
        self.state.lock().await.lead = Some(lead.clone());
        let mut cmds = match plan_split(&window, lead) {
            SplitPlan::First => self.first_split(lead, &lead_row.window_id, launch).await?,
            SplitPlan::Column { below } => {
                vec![panes::split_window(&below, Split::Vertical, launch)?]
            }
            SplitPlan::Overflow => {
                let pane = self.spawn_overflow(&session, launch, finish).await?;
                // The lead's window is as it was: the next split of a
                // burst plans on this listing again.
                self.state.lock().await.window = Some((lead.clone(), window));
                return Ok(pane);
            }
        };
        // The new pane is the list's current pane until the focus goes back.
        cmds.extend(finish(None)?);
        cmds.push(panes::restore_focus());
        cmds.push(layout::select_layout(&lead_row.window_id, "main-vertical"));
        cmds.push(layout::resize_pane_width(
            lead,
            window_width * LEAD_PERCENT / 100,
        )?);
        // The window as this split leaves it, for the next split of a burst.
        cmds.push(layout::list_window_panes(lead)?);
        let (pane, rest) = self.run_spawn(cmds).await?;
        if let Ok(after) = layout::parse_window_panes(&rest)
            && after.iter().any(|p| &p.pane == lead)
        {
            self.state.lock().await.window = Some((lead.clone(), after));
        }
        Ok(pane)
    }

    /// The commands of the first split beside `lead` (alone in window
    /// `window_id`): side by side, the lead keeping ~35%. The lead's window
    /// may be the user's: only pane options go on the new pane, and the
    /// one window option swarm needs (titles on the borders) is saved
    /// first, for restore_host; the home session's window, which swarm
    /// made with titles on, needs neither.
    async fn first_split(
        &self,
        lead: &PaneId,
        window_id: &str,
        launch: &Launch<'_>,
    ) -> Result<Vec<Vec<String>>> {
        let mut cmds = Vec::new();
        if self.state.lock().await.home_window.as_deref() != Some(window_id) {
            let shown = self.tmux(options::show_window_options(lead)?).await?;
            cmds.extend(options::save_border(lead, &shown.stdout)?);
            cmds.push(options::border_status_top(Some(commands::check_pane_id(
                lead,
            )?)));
        }
        cmds.push(panes::split_window(
            lead,
            Split::Horizontal {
                percent: (100 - LEAD_PERCENT) as u8,
            },
            launch,
        )?);
        Ok(cmds)
    }

    /// Opens panes for `specs` (each placed beside `lead`) in the lead's
    /// column with one tmux call: as many as the column takes, each split
    /// planned as [`split_beside`](Self::split_beside) would plan it after
    /// the one before, and finished, the focus given back and the window
    /// laid out after each, as one split would. Returns the ids opened, in
    /// order; empty (nothing opened) when fewer than two fit, and the
    /// caller opens them one by one. A call that fails closes every pane it
    /// opened before it returns the error.
    pub(super) async fn spawn_column(
        &self,
        lead: &PaneId,
        specs: &[SpawnSpec],
    ) -> Result<Vec<PaneId>> {
        let cached = {
            let mut state = self.state.lock().await;
            match state.window.take() {
                Some((l, w)) if &l == lead => Some(w),
                other => {
                    state.window = other;
                    None
                }
            }
        };
        let window = match cached {
            Some(w) => w,
            None => self.window_of(lead).await?,
        };
        let Some(lead_row) = window.iter().find(|p| &p.pane == lead).cloned() else {
            return Ok(Vec::new());
        };
        // Each split planned on the window as the ones before leave it.
        let mut planned = window.clone();
        let mut plans = Vec::new();
        for _ in specs {
            match plan_split(&planned, lead) {
                SplitPlan::Overflow => break,
                plan => plans.push(plan),
            }
            planned.push(WindowPane {
                pane: PaneId::new("%0"),
                ..lead_row.clone()
            });
        }
        if plans.len() < 2 {
            self.state.lock().await.window = Some((lead.clone(), window));
            return Ok(Vec::new());
        }
        let w = lead_row.window_id.as_str();
        let mut cmds = Vec::new();
        for (k, (spec, plan)) in specs.iter().zip(&plans).enumerate() {
            spec.validate()?;
            let launch = Launch::of(spec);
            let split = match (k, plan) {
                (0, SplitPlan::First) => self.first_split(lead, w, &launch).await?,
                (0, SplitPlan::Column { below }) => {
                    vec![panes::split_window(below, Split::Vertical, &launch)?]
                }
                // Below the pane the split before made: the window's last
                // pane once the focus went back.
                _ => vec![panes::split_below_last(w, &launch)?],
            };
            cmds.extend(split);
            cmds.extend(panes::joined(w, spec)?);
            cmds.push(layout::select_layout(w, "main-vertical"));
            cmds.push(layout::resize_pane_width(
                lead,
                lead_row.window_width * LEAD_PERCENT / 100,
            )?);
        }
        cmds.push(layout::list_window_panes(lead)?);
        self.state.lock().await.lead = Some(lead.clone());
        let (opened, listing) = self.run_opening(cmds, plans.len()).await?;
        if let Ok(after) = layout::parse_window_panes(&listing)
            && after.iter().any(|p| &p.pane == lead)
        {
            self.state.lock().await.window = Some((lead.clone(), after));
        }
        Ok(opened)
    }

    /// Opens panes for `specs` (placed beside `lead`, whose column is
    /// full) in the overflow window with one tmux call: into the one this
    /// backend last filled while it has room, else a new one (planned on
    /// the lead window's size, which a window of the same session has), as
    /// many as keep its tiled panes readable, each finished, the focus
    /// given back and the window tiled after each, as
    /// [`spawn_overflow`](Self::spawn_overflow) does one at a time. Returns
    /// the ids opened, in order, or empty (nothing opened) when fewer than
    /// two go, and the caller opens them one by one. A call that fails
    /// closes every pane it opened before it returns the error.
    pub(super) async fn spawn_overflow_window(
        &self,
        lead: &PaneId,
        specs: &[SpawnSpec],
    ) -> Result<Vec<PaneId>> {
        let cached = match &self.state.lock().await.window {
            Some((l, w)) if l == lead => Some(w.clone()),
            _ => None,
        };
        let window = match cached {
            Some(w) => w,
            None => self.window_of(lead).await?,
        };
        let Some(lead_row) = window.iter().find(|p| &p.pane == lead).cloned() else {
            return Ok(Vec::new());
        };
        let session = lead_row.session.clone();
        let (known, listed, guess) = {
            let state = self.state.lock().await;
            let guess = match &state.next_window {
                Some((s, index)) if *s == session => Some(*index),
                _ => None,
            };
            (state.overflow.clone(), state.overflow_panes.clone(), guess)
        };
        if !matches!(plan_split(&window, lead), SplitPlan::Overflow) {
            return Ok(Vec::new());
        }
        // The overflow window while it has room (as its last split listed
        // it), else a new one.
        let room = |panes: &[WindowPane], more: usize| {
            panes.first().is_some_and(|f| {
                tiled_fits(f.window_width, f.window_height, (panes.len() + more) as u32)
            })
        };
        let into = match (known, listed) {
            (Some(id), Some(panes)) if room(&panes, 0) => Some((id, panes)),
            (Some(_), Some(_)) | (None, _) => None,
            // Not listed (a pane of it moved): one by one, which lists it.
            (Some(_), None) => return Ok(Vec::new()),
        };
        let Some((id, panes)) = into else {
            return self.spawn_window_of(&lead_row, guess, specs).await;
        };
        let fit = (0..specs.len()).take_while(|&k| room(&panes, k)).count();
        let Some(last) = panes.last().filter(|_| fit >= 2) else {
            return Ok(Vec::new());
        };
        let mut cmds = tiled_splits(&id, &specs[..fit], |launch| {
            panes::split_window(&last.pane, Split::Vertical, launch)
        })?;
        cmds.push(layout::list_panes_window(&id));
        let (opened, listing) = self.run_opening(cmds, fit).await?;
        self.state.lock().await.overflow_panes = Some(layout::parse_window_panes(&listing)?);
        for pane in &opened {
            self.note_apart(pane, last.window_index).await;
        }
        Ok(opened)
    }

    /// [`spawn_overflow_window`](Self::spawn_overflow_window) in a new
    /// window of the lead's session (`lead_row`), at index `guess` when
    /// known: as many panes as it holds tiled and readable.
    async fn spawn_window_of(
        &self,
        lead_row: &WindowPane,
        guess: Option<u32>,
        specs: &[SpawnSpec],
    ) -> Result<Vec<PaneId>> {
        let session = lead_row.session.clone();
        let (w, h) = (lead_row.window_width, lead_row.window_height);
        let fit = (1..specs.len())
            .take_while(|&k| tiled_fits(w, h, k as u32))
            .count()
            + 1;
        if fit < 2 {
            return Ok(Vec::new());
        }
        let index = match guess {
            Some(i) => i,
            None => self.next_window_index(&session).await?,
        };
        let target = commands::window_target(&session, Some(index))?;
        let first = &specs[0];
        first.validate()?;
        let mut cmds = vec![
            sessions::new_window(&session, index, "swarm", &Launch::of(first))?,
            options::set_window_remain_on_exit(&target, true),
            options::border_status_top(Some(&target)),
        ];
        cmds.extend(panes::finish_spec(Some(&target), first)?);
        // The window's only pane is its active one.
        cmds.extend(tiled_splits(&target, &specs[1..fit], |launch| {
            panes::split_below_active(&target, launch)
        })?);
        cmds.push(layout::list_panes_window(&target));
        let (opened, listing) = self.run_opening(cmds, fit).await?;
        let after = layout::parse_window_panes(&listing)?;
        {
            let mut state = self.state.lock().await;
            state.next_window = Some((session, index + 1));
            if let Some(row) = after.first() {
                state.overflow = Some(row.window_id.clone());
            }
            state.overflow_panes = Some(after);
        }
        for pane in &opened {
            self.note_apart(pane, index).await;
        }
        Ok(opened)
    }

    /// Runs a command list that opens `panes` panes (each split or window
    /// printing its id) and ends with a listing; returns the ids in order
    /// and the listing's lines. If it fails, or opens another number, every
    /// pane it opened is closed and its error returned.
    async fn run_opening(
        &self,
        cmds: Vec<Vec<String>>,
        panes: usize,
    ) -> Result<(Vec<PaneId>, String)> {
        let inv = self.invocation(commands::chain(cmds)?);
        let out = inv.output().await?;
        let opened = panes::printed_pane_ids(&out.stdout);
        if !out.success() || opened.len() != panes {
            if !opened.is_empty() {
                let kills = opened
                    .iter()
                    .map(panes::kill_pane)
                    .collect::<Result<Vec<_>>>()?;
                // The list's own failure is the error reported.
                let _ = self.invocation(commands::chain(kills)?).output().await;
            }
            return Err(inv.failed(&out));
        }
        let listing: Vec<&str> = out.stdout.lines().filter(|l| l.contains(' ')).collect();
        Ok((opened, listing.join("\n")))
    }

    /// A teammate's pane in the overflow window, tiled there while panes
    /// stay readable, else in a new overflow window. Like the lead's window
    /// (`spawn_beside`), the overflow window is listed in the invocation
    /// that splits it, and the next spawn of a burst plans on that listing
    /// instead of running a `list-panes` of its own (one tmux client a pane,
    /// not two); a split that fails before creating anything (the listing
    /// was stale) is planned again on a fresh one.
    pub(super) async fn spawn_overflow(
        &self,
        session: &str,
        launch: &Launch<'_>,
        finish: &Finish<'_>,
    ) -> Result<PaneId> {
        let (overflow, cached) = {
            let mut state = self.state.lock().await;
            (state.overflow.clone(), state.overflow_panes.take())
        };
        if let Some(window_id) = overflow {
            let mut full = false;
            if let Some(panes) = cached {
                match self.split_overflow(&window_id, panes, launch, finish).await {
                    Ok(Some(pane)) => return Ok(pane),
                    // Full as the last split left it: a new window.
                    Ok(None) => full = true,
                    Err(SplitError::NotCreated(_)) => {}
                    Err(SplitError::Other(e)) => return Err(e),
                }
            }
            let all = match full {
                true => None,
                false => Some(self.tmux(layout::list_panes_window(&window_id)).await),
            };
            if let Some(Ok(out)) = all {
                let panes = layout::parse_window_panes(&out.stdout)?;
                if let Some(pane) = self
                    .split_overflow(&window_id, panes, launch, finish)
                    .await?
                {
                    return Ok(pane);
                }
            }
        }
        let (pane, window) = self.spawn_window_listed(session, launch, finish).await?;
        if let Some(row) = window.first() {
            let mut state = self.state.lock().await;
            state.overflow = Some(row.window_id.clone());
            state.overflow_panes = Some(window.clone());
            drop(state);
            self.note_apart(&pane, row.window_index).await;
        }
        Ok(pane)
    }

    /// Splits the last pane of the overflow window `window_id` (listed as
    /// `panes`) and tiles the window, if one more pane keeps them all
    /// readable (`Ok(None)`: it would not). Records the window as the split
    /// leaves it, listed in the same invocation.
    async fn split_overflow(
        &self,
        window_id: &str,
        panes: Vec<WindowPane>,
        launch: &Launch<'_>,
        finish: &Finish<'_>,
    ) -> std::result::Result<Option<PaneId>, SplitError> {
        let Some(first) = panes.first() else {
            return Ok(None);
        };
        if !tiled_fits(first.window_width, first.window_height, panes.len() as u32) {
            return Ok(None);
        }
        let last = panes.last().unwrap_or(first).pane.clone();
        let mut cmds = vec![panes::split_window(&last, Split::Vertical, launch)?];
        cmds.extend(finish(None)?);
        cmds.push(panes::restore_focus());
        cmds.push(layout::select_layout(window_id, "tiled"));
        cmds.push(layout::list_panes_window(window_id));
        let (pane, rest) = self.run_spawn(cmds).await?;
        if let Ok(after) = layout::parse_window_panes(&rest)
            && after.iter().any(|p| p.pane == pane)
        {
            self.state.lock().await.overflow_panes = Some(after);
        }
        self.note_apart(&pane, first.window_index).await;
        Ok(Some(pane))
    }

    /// Drops the listings kept for the next split of a burst: a pane moved
    /// to or from a window (hidden, shown) leaves them stale, and a split
    /// below a pane that moved would land in that pane's new window.
    pub(super) async fn forget_layouts(&self) {
        let mut state = self.state.lock().await;
        state.window = None;
        state.overflow_panes = None;
    }

    /// Remembers that `pane` went to the overflow window `index`, for
    /// [`Layout::placed_apart`](crate::Layout::placed_apart).
    pub(super) async fn note_apart(&self, pane: &PaneId, index: u32) {
        self.state
            .lock()
            .await
            .apart
            .insert(pane.clone(), format!("window {index}"));
    }
}

// The private tmux server of the integration tests (a self-contained file).
#[cfg(test)]
#[allow(dead_code)]
#[path = "../../../tests/util/tmux_server.rs"]
pub(super) mod tmux_server;

/// A backend on the private server `tmux` whose every client run is
/// recorded, one line of arguments each, in the returned log.
#[cfg(test)]
pub(super) fn recording_backend(
    tmux: &tmux_server::TmuxServer,
) -> (TmuxBackend, std::path::PathBuf) {
    let log = tmux.dir.path().join("runs.log");
    let wrapper = tmux.dir.path().join("tmux");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\nexec tmux \"$@\"\n",
            log.display()
        ),
    )
    .expect("writing the tmux wrapper");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755))
        .expect("making the wrapper executable");
    let mut backend = TmuxBackend::new(super::TmuxServer::socket(&tmux.sock));
    backend.program = wrapper.to_string_lossy().into_owned();
    (backend, log)
}

/// How many client runs recorded in `log` ran `subcommand`.
#[cfg(test)]
pub(super) fn runs(log: &std::path::Path, subcommand: &str) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.split(' ').any(|w| w == subcommand))
        .count()
}

#[cfg(test)]
mod tests {
    use super::tmux_server;
    use super::*;
    use crate::{PaneBackendExecutor, Placement, SpawnSpec};

    #[tokio::test]
    async fn a_burst_of_overflow_panes_runs_one_tmux_client_a_pane() {
        if !tmux_server::tmux_available("a_burst_of_overflow_panes_runs_one_tmux_client_a_pane") {
            return;
        }
        let tmux = tmux_server::TmuxServer::start();
        let lead = PaneId::new(tmux.new_session("lead", (200, 50), &["sleep", "100000"]));
        // tmux through a wrapper that records each client run.
        let (backend, log) = recording_backend(&tmux);
        let spec = || {
            SpawnSpec::new("sleep", ["100000"], tmux.dir.path())
                .env("PATH", "/usr/bin:/bin")
                .placement(Placement::RightOfLead { lead: lead.clone() })
        };
        let mut windows = std::collections::BTreeSet::new();
        for _ in 0..24 {
            let p = backend.spawn(&spec()).await.expect("spawn");
            windows.insert(tmux.display(p.id.as_str(), "#{window_id}"));
        }
        // 5 beside the lead in 200x50, then overflow windows of 15 panes.
        assert_eq!(windows.len(), 3, "{}", tmux.dump());
        let opened = runs(&log, "split-window") + runs(&log, "new-window");
        assert_eq!(opened, 24, "{}", std::fs::read_to_string(&log).unwrap());
        // Listings: the lead's window once, each new overflow window once
        // after it opened (and planned on afterwards from the listing each
        // split prints), never one a pane.
        let listed = runs(&log, "list-panes") - runs(&log, "split-window");
        assert!(
            listed <= 3,
            "{listed} separate listings for 24 panes:\n{}",
            std::fs::read_to_string(&log).unwrap()
        );
        for p in tmux.panes() {
            assert!(!p.dead, "{}", tmux.dump());
        }
    }
}
