//! The clipboard of the display the agent runs on, through the tool each system has for it:
//! `pbcopy` on macOS, `clip.exe` on Windows, `wl-copy` under Wayland and `xclip` or `xsel`
//! under X11 elsewhere. Over SSH there is no such display here (the user's clipboard is on
//! the other machine: OSC 52 through the terminal is the way there).

use std::io::Write;
use std::process::{Command, Stdio};

/// The tools to try, in order, for the display this process runs on; empty when it has
/// none (SSH, a console without a display server).
fn tools(env: impl Fn(&str) -> Option<String>) -> Vec<(&'static str, &'static [&'static str])> {
    let set = |name: &str| env(name).is_some_and(|v| !v.is_empty());
    if set("SSH_CONNECTION") || set("SSH_TTY") {
        return Vec::new();
    }
    if cfg!(target_os = "macos") {
        return vec![("pbcopy", &[])];
    }
    if cfg!(windows) {
        return vec![("clip.exe", &[])];
    }
    let mut tools = Vec::new();
    if set("WAYLAND_DISPLAY") {
        tools.push(("wl-copy", &[][..]));
    }
    if set("DISPLAY") {
        tools.push(("xclip", &["-selection", "clipboard"][..]));
        tools.push(("xsel", &["--clipboard", "--input"][..]));
    }
    tools
}

/// Why no clipboard of this machine's can be read, when none can: over SSH (the user's
/// clipboard is on the other machine) or with no display server.
fn no_display(env: impl Fn(&str) -> Option<String>) -> Option<&'static str> {
    let set = |name: &str| env(name).is_some_and(|v| !v.is_empty());
    if set("SSH_CONNECTION") || set("SSH_TTY") {
        return Some(
            "over SSH the clipboard is on your own machine: save the image and paste or drop its file, or name it with @",
        );
    }
    if cfg!(any(target_os = "macos", windows)) || set("WAYLAND_DISPLAY") || set("DISPLAY") {
        return None;
    }
    Some("there is no display server here, so no clipboard to paste an image from")
}

/// The image on this display's clipboard: width, height and RGBA pixels. `Err` says why
/// there is none (no display, nothing or no image copied).
pub fn image() -> Result<(u32, u32, Vec<u8>), String> {
    if let Some(why) = no_display(|name| std::env::var(name).ok()) {
        return Err(why.into());
    }
    // arboard speaks each system's clipboard protocol itself (X11, Wayland's data control,
    // NSPasteboard, the Win32 clipboard), where no command-line tool reads images everywhere.
    let mut clipboard = arboard::Clipboard::new()
        .map_err(|err| format!("the clipboard cannot be opened: {err}"))?;
    match clipboard.get_image() {
        Ok(image) => Ok((
            u32::try_from(image.width).map_err(|_| "the clipboard's image is too wide")?,
            u32::try_from(image.height).map_err(|_| "the clipboard's image is too tall")?,
            image.bytes.into_owned(),
        )),
        Err(arboard::Error::ContentNotAvailable) => {
            Err("the clipboard holds no image (copy one first, or drop its file)".into())
        }
        Err(err) => Err(format!("the clipboard's image cannot be read: {err}")),
    }
}

/// Puts `text` on this display's clipboard. `Ok`: the tool that took it; `Err`: why nothing
/// did (no local display, no tool installed, the tool failed).
pub fn copy(text: &str) -> Result<&'static str, String> {
    let tools = tools(|name| std::env::var(name).ok());
    if tools.is_empty() {
        return Err(
            "no display of this machine's to copy to (over SSH, or no display server)".into(),
        );
    }
    let mut tried = Vec::new();
    for (tool, args) in tools {
        match run(tool, args, text) {
            Ok(()) => return Ok(tool),
            Err(why) => tried.push(format!("{tool}: {why}")),
        }
    }
    Err(tried.join("; "))
}

fn run(tool: &str, args: &[&str], text: &str) -> Result<(), String> {
    let mut child = Command::new(tool)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let written = child
        .stdin
        .take()
        .map(|mut stdin| stdin.write_all(text.as_bytes()))
        .unwrap_or(Ok(()));
    let status = child.wait().map_err(|e| e.to_string())?;
    written.map_err(|e| e.to_string())?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("exited with {status}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(env: &[(&str, &str)]) -> Vec<&'static str> {
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        tools(|name| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
            .into_iter()
            .map(|(tool, _)| tool)
            .collect()
    }

    #[test]
    fn an_image_is_not_looked_for_over_ssh_or_without_a_display() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        let ssh = no_display(env(&[("SSH_TTY", "/dev/pts/1"), ("DISPLAY", ":0")]));
        assert!(ssh.is_some_and(|why| why.contains("SSH")));
        if cfg!(any(target_os = "macos", windows)) {
            return;
        }
        assert!(no_display(env(&[])).is_some_and(|why| why.contains("no display server")));
        assert_eq!(no_display(env(&[("WAYLAND_DISPLAY", "wayland-0")])), None);
    }

    #[test]
    fn the_tool_follows_the_display_and_ssh_has_none() {
        assert!(names(&[("SSH_CONNECTION", "1 2 3 4"), ("DISPLAY", ":0")]).is_empty());
        if cfg!(any(target_os = "macos", windows)) {
            return;
        }
        assert!(names(&[]).is_empty());
        assert_eq!(names(&[("WAYLAND_DISPLAY", "wayland-0")]), ["wl-copy"]);
        assert_eq!(names(&[("DISPLAY", ":0")]), ["xclip", "xsel"]);
        assert_eq!(
            names(&[("DISPLAY", ":0"), ("WAYLAND_DISPLAY", "w")]),
            ["wl-copy", "xclip", "xsel"]
        );
    }
}
