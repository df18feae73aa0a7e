//! A trusted repository's MCP servers start only once the user approved each one for that
//! repository, its command or URL shown. Trusting a repository's instructions is not agreeing
//! to run its programs or to connect where it says: the interactive mode asks, on the
//! terminal before the UI starts; headless modes never ask and leave an unapproved server
//! out, saying how to approve it. An approval covers the server's whole launch (`sandbox`'s
//! `ServerStore`): a server whose command, arguments, environment or URL change is asked about
//! again.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

use sandbox::ServerStore;
use session::Home;

use crate::config::Config;
use crate::setup::Fail;

/// Keeps in `config` only the repository's servers the user approved (asking when `may_ask`
/// and the terminal allows); the others are removed with a notice.
pub fn gate(config: &mut Config, home: &Home, cwd: &Path, may_ask: bool) -> Result<(), Fail> {
    if config.project_mcp_servers.is_empty() {
        return Ok(());
    }
    let root = session::repository_root(cwd);
    let store = ServerStore::new(home.root());
    let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    for name in std::mem::take(&mut config.project_mcp_servers) {
        let Some(server) = config.mcp_servers.get(&name) else {
            continue;
        };
        if !server.enabled() {
            continue;
        }
        let launch = launch(&name, server);
        let approved = store
            .approved(&root, &launch)
            .map_err(|e| Fail(format!("cannot read the approved MCP servers: {e}")))?;
        if approved {
            continue;
        }
        if may_ask && terminal && ask(&root, &name, server) {
            store
                .approve(&root, &name, &launch)
                .map_err(|e| Fail(format!("cannot remember the answer: {e}")))?;
            continue;
        }
        config.notices.push(format!(
            "MCP server `{name}` ({}) from {} was not started: it is not approved for this \
             repository. Run coding-agent here once to approve it, or name it in the home \
             config.toml.",
            shown(server),
            root.join(".coding-agent/config.toml").display()
        ));
        config.mcp_servers.remove(&name);
    }
    Ok(())
}

/// The whole launch of a server, as remembered: what it runs or where it connects, and with
/// what. Starts with the name and a space (the store replaces a name's older launch).
fn launch(name: &str, server: &mcp::ServerConfig) -> String {
    match server.transport() {
        Ok(mcp::Transport::Stdio { command, args }) => format!(
            "{name} stdio {command:?} {args:?} env {:?} cwd {:?}",
            server.env, server.cwd
        ),
        Ok(mcp::Transport::Http { url }) => {
            format!("{name} http {url:?} headers {:?}", server.headers)
        }
        Err(err) => format!("{name} invalid {err:?}"),
    }
}

/// The server as the user is shown it.
fn shown(server: &mcp::ServerConfig) -> String {
    match server.transport() {
        Ok(mcp::Transport::Stdio { command, args }) => {
            let mut line = format!(
                "runs `{}`",
                [command]
                    .iter()
                    .chain(&args)
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            if !server.env.is_empty() {
                let env: Vec<String> = server.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
                line.push_str(&format!(" with {}", env.join(" ")));
            }
            line.push_str(", in the sandbox");
            line
        }
        Ok(mcp::Transport::Http { url }) => format!("connects to {url}"),
        Err(err) => err,
    }
}

/// The question, on the terminal: yes only on an explicit `y`.
fn ask(root: &Path, name: &str, server: &mcp::ServerConfig) -> bool {
    let mut err = std::io::stderr();
    let _ = writeln!(
        err,
        "{} names an MCP server `{name}`: it {}.",
        root.join(".coding-agent/config.toml").display(),
        shown(server)
    );
    let _ = write!(
        err,
        "Start it (remembered for this repository until it changes)? [y/N] "
    );
    let _ = err.flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() {
        return false;
    }
    matches!(line.trim(), "y" | "Y" | "yes" | "Yes")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(toml_text: &str) -> mcp::ServerConfig {
        toml::from_str(toml_text).unwrap()
    }

    #[test]
    fn a_launch_covers_what_the_server_runs_and_with_what() {
        let base = server("command = \"npx\"\nargs = [\"-y\", \"docs\"]\n");
        let other_args = server("command = \"npx\"\nargs = [\"-y\", \"evil\"]\n");
        let other_env = server(
            "command = \"npx\"\nargs = [\"-y\", \"docs\"]\nenv = { NODE_OPTIONS = \"--require=x\" }\n",
        );
        let launches = [
            launch("docs", &base),
            launch("docs", &other_args),
            launch("docs", &other_env),
        ];
        assert_ne!(launches[0], launches[1]);
        assert_ne!(launches[0], launches[2]);
        assert!(launches.iter().all(|l| l.starts_with("docs ")));
        let http = server("url = \"http://127.0.0.1:9/mcp\"\n");
        assert!(launch("api", &http).contains("http://127.0.0.1:9/mcp"));
        assert_eq!(shown(&http), "connects to http://127.0.0.1:9/mcp");
        assert_eq!(
            shown(&other_env),
            "runs `npx -y docs` with NODE_OPTIONS=--require=x, in the sandbox"
        );
    }

    /// Headless, nobody can approve: the repository's server is left out, with a notice
    /// that says how to approve it; one approved (as the question would) starts.
    #[test]
    fn an_unapproved_server_is_left_out_and_an_approved_one_kept() {
        let home = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        let home = Home::new(home.path());
        let mut config = Config::default();
        let evil = server("url = \"http://127.0.0.1:9/mcp\"\n");
        config.mcp_servers.insert("x".into(), evil.clone());
        config
            .mcp_servers
            .insert("mine".into(), server("command = \"mine\"\n"));
        config.project_mcp_servers = vec!["x".into()];
        gate(&mut config, &home, repo.path(), false).unwrap();
        assert!(!config.mcp_servers.contains_key("x"));
        assert!(
            config.mcp_servers.contains_key("mine"),
            "the home's servers are not asked about"
        );
        assert!(
            config.notices[0].contains("MCP server `x` (connects to http://127.0.0.1:9/mcp)")
                && config.notices[0].contains("not approved"),
            "{:?}",
            config.notices
        );
        let root = session::repository_root(repo.path());
        ServerStore::new(home.root())
            .approve(&root, "x", &launch("x", &evil))
            .unwrap();
        let mut config = Config::default();
        config.mcp_servers.insert("x".into(), evil);
        config.project_mcp_servers = vec!["x".into()];
        gate(&mut config, &home, repo.path(), false).unwrap();
        assert!(config.mcp_servers.contains_key("x"));
        assert!(config.notices.is_empty());
    }
}
