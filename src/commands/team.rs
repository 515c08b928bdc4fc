//! `swarm team create | delete | list`.

use super::{Context, Exit, print_acted, print_json};
use crate::cli::TeamCmd;
use crate::team::{Roster, list_teams};
use crate::text::escape_line;
use anyhow::{Context as _, Result};
use serde_json::json;

pub fn run(ctx: &Context, cmd: TeamCmd) -> Result<Exit> {
    match cmd {
        TeamCmd::Create {
            name,
            description,
            json,
        } => {
            let cwd = std::env::current_dir().context("reading the current directory")?;
            Roster::new(&ctx.root, &name)
                .create(description.as_deref(), &cwd.to_string_lossy())
                .with_context(|| format!("creating team {}", crate::names::shown(&name)))?;
            if json {
                print_acted(json!({ "created": name, "root": ctx.root.dir() }));
            } else {
                println!(
                    "created team {} in {}",
                    escape_line(&name),
                    escape_line(&ctx.root.dir().display().to_string())
                );
            }
            Ok(Exit::Ok)
        }
        TeamCmd::Delete { name, force, json } => {
            Roster::new(&ctx.root, &name)
                .delete(force)
                .with_context(|| format!("deleting team {}", crate::names::shown(&name)))?;
            if json {
                print_acted(json!({ "deleted": name }));
            } else {
                println!("deleted team {}", escape_line(&name));
            }
            Ok(Exit::Ok)
        }
        TeamCmd::List { json } => {
            let teams = list_teams(&ctx.root)
                .with_context(|| format!("listing teams under {}", ctx.root.dir().display()))?;
            if json {
                print_json(&teams);
            } else if teams.is_empty() {
                eprintln!("no teams under {}", ctx.root.dir().display());
            } else {
                for t in teams {
                    println!("{}", escape_line(&t));
                }
            }
            Ok(Exit::Ok)
        }
    }
}
