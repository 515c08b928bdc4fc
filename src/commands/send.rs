//! `swarm send`: a plain message, or a protocol message (shutdown request,
//! shutdown response, plan response), to one member or to everyone (`*`).

use super::{Context, Exit};
use crate::cli::SendArgs;
use crate::clock;
use crate::names::LEAD_NAME;
use crate::ops::TeamOps;
use crate::ops::mail::check_length;
use crate::protocol::{self, Message};
use crate::session::Location;
use crate::team::TeamFile;
use crate::text::escape_line;
use anyhow::{Context as _, Result, bail};
use std::io::{BufRead, Read};

pub fn run(ctx: &Context, args: SendArgs) -> Result<Exit> {
    let team = ctx.team()?;
    let me = ctx.me()?;
    let ops = TeamOps::new(Location::of(&ctx.root, &team.name), me);
    let roster = &ops.roster_with_me()?;
    if args.stdin {
        let input = std::io::BufReader::with_capacity(1 << 16, std::io::stdin());
        return send_lines(&team, me, &args, input);
    }
    let to = args.to.as_deref().context("--to NAME is needed")?;
    if let Some(msg) = protocol_message(ctx, &args, roster, me, to)? {
        let d = team.send_protocol(me, to, &msg, args.force)?;
        report(&args, std::slice::from_ref(&d))?;
        return Ok(Exit::Ok);
    }
    let text = match args.text.as_deref() {
        Some("-") => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .context("reading the message from stdin")?;
            s
        }
        Some(t) => t.to_string(),
        None => bail!("nothing to send: give TEXT (or '-' to read standard input)"),
    };
    let delivered = match ops.send_on(roster, to, &text, args.summary.as_deref(), args.force) {
        // A teammate that left, its conversation recorded: brought back
        // first, then sent to.
        Err(e) if roster.member(to).is_none() && ops.can_revive(to)? => {
            let _ = e;
            let sent = crate::session::runtime()?.block_on(ops.send_or_revive(
                to,
                &text,
                args.summary.as_deref(),
                args.force,
            ))?;
            if let Some(note) = &sent.revived {
                eprintln!("{}", escape_line(note));
            }
            sent.delivered
        }
        Err(e) => {
            // A broadcast some did not get: those that did are said as
            // any send's are, then the error says who did not.
            if let Some(b) = crate::team::post::Incomplete::in_error(&e) {
                report(&args, &b.delivered)?;
            }
            return Err(e);
        }
        Ok(d) => d,
    };
    report(&args, &delivered)?;
    Ok(Exit::Ok)
}

/// One line of `swarm send --stdin` in its JSON form.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    to: Option<String>,
    text: String,
    summary: Option<String>,
}

/// Most messages `swarm send --stdin` puts in one inbox write.
const MAX_BATCH: usize = 500;

/// `swarm send --stdin`: one message per line of `input` (see the flag's
/// help). Consecutive lines to the same one recipient that are already
/// buffered go in one inbox write; each message is reported once on disk,
/// and a line still to come is never waited for before sending what was
/// read. The first failure ends it, naming its line: exit 2 whatever it
/// was (a recipient off the roster too: the stream stopped part way, which
/// is not "the answer is no"), or 3 for a message still pending.
fn send_lines<R: Read>(
    team: &crate::team::Team,
    me: &str,
    args: &SendArgs,
    input: std::io::BufReader<R>,
) -> Result<Exit> {
    send_stream(team, me, args, input).map_err(|e| {
        if crate::mailbox::MailboxError::still_pending_in(&e) {
            e
        } else {
            // Its text only: the chain would make a member off the roster
            // the "not found" answer (exit 1) of a command that names one.
            anyhow::anyhow!("{e:#}")
        }
    })
}

fn send_stream<R: Read>(
    team: &crate::team::Team,
    me: &str,
    args: &SendArgs,
    mut input: std::io::BufReader<R>,
) -> Result<Exit> {
    let mut batch = Batch::default();
    let mut n = 0;
    loop {
        let mut line = String::new();
        let read = input
            .read_line(&mut line)
            .with_context(|| format!("reading line {} of standard input", n + 1))?;
        if read == 0 {
            break;
        }
        n += 1;
        let line = line.trim_end_matches(['\n', '\r']);
        if line.trim().is_empty() {
            continue;
        }
        // A bad line ends the stream, after the lines before it are sent.
        let (msg, to) = match checked(line, n, args) {
            Ok(ok) => ok,
            Err(e) => {
                batch.flush(team, me, args)?;
                return Err(e);
            }
        };
        if to == "*" {
            batch.flush(team, me, args)?;
            let delivered = team
                .send_text(me, &to, &msg.text, msg.summary.as_deref(), args.force)
                .with_context(|| format!("line {n}"))?;
            report(args, &delivered)?;
            continue;
        }
        if batch.to.as_deref() != Some(to.as_str()) {
            batch.flush(team, me, args)?;
            batch.to = Some(to);
        }
        batch.lines.push(n);
        batch.texts.push((msg.text, msg.summary));
        if input.buffer().is_empty() || batch.texts.len() >= MAX_BATCH {
            batch.flush(team, me, args)?;
        }
    }
    batch.flush(team, me, args)?;
    Ok(Exit::Ok)
}

/// Line `n`, read and checked, with its recipient.
fn checked(line: &str, n: usize, args: &SendArgs) -> Result<(Line, String)> {
    let mut msg = parse_line(line, n)?;
    let to = msg
        .to
        .take()
        .or_else(|| args.to.clone())
        .with_context(|| format!("line {n}: no recipient (give \"to\" or --to)"))?;
    check_length(&msg.text).with_context(|| format!("line {n}"))?;
    Ok((msg, to))
}

fn parse_line(line: &str, n: usize) -> Result<Line> {
    if !line.trim_start().starts_with('{') {
        return Ok(Line {
            to: None,
            text: line.to_owned(),
            summary: None,
        });
    }
    serde_json::from_str::<Line>(line).with_context(|| {
        format!("line {n}: not a message object {{\"to\", \"text\", \"summary\"}}")
    })
}

/// Lines of `swarm send --stdin` waiting to go to one recipient together.
#[derive(Default)]
struct Batch {
    to: Option<String>,
    lines: Vec<usize>,
    texts: Vec<(String, Option<String>)>,
}

impl Batch {
    /// Sends what waits; reports each message sent, and fails with the
    /// first line that was not.
    fn flush(&mut self, team: &crate::team::Team, me: &str, args: &SendArgs) -> Result<()> {
        let (Some(to), false) = (self.to.take(), self.texts.is_empty()) else {
            return Ok(());
        };
        let texts = std::mem::take(&mut self.texts);
        let lines = std::mem::take(&mut self.lines);
        let first = lines[0];
        let sent = team
            .send_texts(me, &to, &texts, args.force)
            .with_context(|| format!("line {first}"))?;
        let mut failed = None;
        for (r, n) in sent.into_iter().zip(lines) {
            match r {
                Ok(d) => report(args, std::slice::from_ref(&d))?,
                Err(e) => {
                    failed.get_or_insert((n, e));
                }
            }
        }
        match failed {
            Some((n, e)) => Err(e.context(format!("line {n}"))),
            None => Ok(()),
        }
    }
}

fn report(args: &SendArgs, delivered: &[crate::team::post::Delivered]) -> Result<()> {
    if args.json {
        // One envelope per send, on one line (with --stdin, a line per
        // message as it is on disk).
        let sent: Vec<_> = delivered
            .iter()
            .map(|d| serde_json::json!({"to": d.to, "msg_id": d.entry.msg_id, "entry": d.entry}))
            .collect();
        println!(
            "{}",
            super::envelope(true, serde_json::json!({ "sent": sent }))
        );
        return Ok(());
    }
    for d in delivered {
        if let Some(q) = &d.appended.quarantined {
            eprintln!(
                "swarm: warning: inbox of {} was corrupt; copied to {}",
                escape_line(&d.to),
                escape_line(&q.display().to_string())
            );
        }
        if d.appended.dropped > 0 {
            eprintln!(
                "swarm: note: inbox of {} was compacted; {} old protocol/read entr(y/ies) moved to its history",
                escape_line(&d.to),
                d.appended.dropped
            );
        }
        println!(
            "sent to {} ({})",
            escape_line(&d.to),
            escape_line(d.entry.msg_id.as_deref().unwrap_or("-"))
        );
    }
    Ok(())
}

/// The structured message the flags ask for, if any.
fn protocol_message(
    ctx: &Context,
    args: &SendArgs,
    roster: &TeamFile,
    me: &str,
    to: &str,
) -> Result<Option<Message>> {
    if args.shutdown_request {
        return shutdown_request(args, me, to).map(Some);
    }
    if let Some(request_id) = &args.shutdown_response {
        return shutdown_response(args, roster, me, request_id).map(Some);
    }
    if let Some(mode) = &args.mode_set {
        return mode_set(args, roster, me, to, mode).map(Some);
    }
    if let Some(request_id) = &args.plan_response {
        return plan_response(ctx, args, me, request_id).map(Some);
    }
    Ok(None)
}

/// `--shutdown-request`: the lead asks `to` to end.
fn shutdown_request(args: &SendArgs, me: &str, to: &str) -> Result<Message> {
    if me != LEAD_NAME {
        bail!("only {LEAD_NAME} may send a shutdown request (you are {me:?})");
    }
    Ok(Message::ShutdownRequest(protocol::ShutdownRequest {
        request_id: protocol::shutdown_request_id(clock::now_ms(), to),
        from: me.to_string(),
        reason: args.reason.clone(),
        timestamp: clock::now_iso(),
    }))
}

/// `--shutdown-response ID --approve|--reject`: a teammate's answer; an
/// approval names the teammate's pane, a rejection needs a reason.
fn shutdown_response(
    args: &SendArgs,
    roster: &TeamFile,
    me: &str,
    request_id: &str,
) -> Result<Message> {
    if args.approve == args.reject {
        bail!("--shutdown-response needs exactly one of --approve or --reject");
    }
    let now = clock::now_iso();
    if args.approve {
        let mine = roster.member(me);
        let pane = mine
            .map(|m| m.tmux_pane_id.clone())
            .filter(|p| !p.is_empty());
        return Ok(Message::ShutdownApproved(protocol::ShutdownApproved {
            request_id: request_id.to_owned(),
            from: me.to_string(),
            timestamp: now,
            pane_id: pane,
            backend_type: mine.and_then(|m| m.backend_type.clone()),
        }));
    }
    let Some(reason) = args.reason.clone() else {
        bail!("--reject needs --reason TEXT, so the lead knows why");
    };
    Ok(Message::ShutdownRejected(protocol::ShutdownRejected {
        request_id: request_id.to_owned(),
        from: me.to_string(),
        reason,
        timestamp: now,
    }))
}

/// `--mode-set MODE`: the lead changes `to`'s permission mode.
fn mode_set(args: &SendArgs, roster: &TeamFile, me: &str, to: &str, mode: &str) -> Result<Message> {
    if me != LEAD_NAME {
        bail!("only {LEAD_NAME} may change a teammate's permission mode (you are {me:?})");
    }
    let mode = crate::agents::PermissionMode::parse(mode)?;
    // A teammate whose agent ignores the request is refused with the
    // reason (the same rule as the TeamsDialog's Shift+Tab), unless
    // --force: reporting success would be a lie.
    if !args.force
        && to != "*"
        && let Some(m) = roster.member(to)
        && let crate::agents::ModeChange::Unsupported(why) = crate::agents::mode_change(m)
    {
        bail!("cannot change the mode of {to}: {why}");
    }
    Ok(Message::ModeSetRequest(protocol::ModeSetRequest {
        mode: mode.name().to_string(),
        from: me.to_string(),
    }))
}

/// `--plan-response ID --approve|--reject`: the lead answers a plan
/// approval request, carrying its plan's digest when it can find it.
fn plan_response(ctx: &Context, args: &SendArgs, me: &str, request_id: &str) -> Result<Message> {
    if args.approve == args.reject {
        bail!("--plan-response needs exactly one of --approve or --reject");
    }
    if me != LEAD_NAME {
        bail!("only {LEAD_NAME} may answer a plan approval request (you are {me:?})");
    }
    let request = find_plan_request(ctx, request_id)?;
    if request.is_none() {
        eprintln!(
            "swarm: warning: no plan approval request {} in the lead's inbox or history; \
             the response carries no plan digest",
            crate::text::escape_line(request_id)
        );
    }
    Ok(Message::PlanApprovalResponse(
        protocol::PlanApprovalResponse::answering(
            request_id,
            request.as_ref(),
            args.approve,
            args.feedback.clone(),
            clock::now_iso(),
        ),
    ))
}

/// The plan approval request `request_id`, from the lead's inbox or its
/// history, so the answer carries the plan's digest.
fn find_plan_request(
    ctx: &Context,
    request_id: &str,
) -> Result<Option<protocol::PlanApprovalRequest>> {
    let mb = ctx.team()?.mailbox();
    let mut all = mb.read(LEAD_NAME)?.entries;
    all.extend(mb.history(LEAD_NAME)?);
    Ok(all
        .iter()
        .filter_map(|e| e.protocol())
        .find_map(|m| match m {
            Message::PlanApprovalRequest(p) if p.request_id == request_id => Some(p),
            _ => None,
        }))
}
