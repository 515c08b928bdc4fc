//! `swarm team create | delete | list`.

use super::{Context, Exit, print_acted, print_json};
use crate::cli::TeamCmd;
use crate::ops::teams;
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
            teams::create(&ctx.root, &name, description.as_deref(), &cwd)?;
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
            teams::delete(&ctx.root, &name, force)?;
            if json {
                print_acted(json!({ "deleted": name }));
            } else {
                println!("deleted team {}", escape_line(&name));
            }
            Ok(Exit::Ok)
        }
        TeamCmd::List { json } => {
            let teams = teams::list(&ctx.root)?;
            if json {
                let names: Vec<&str> = teams.iter().map(|t| t.name.as_str()).collect();
                print_json(&names);
            } else if teams.is_empty() {
                eprintln!("no teams under {}", ctx.root.dir().display());
            } else {
                for t in teams {
                    let whose = if t.foreign {
                        "  (not swarm's: read and send only)"
                    } else {
                        ""
                    };
                    println!("{}{whose}", escape_line(&t.name));
                }
            }
            Ok(Exit::Ok)
        }
    }
}
