//! What a bench reads of the agent's process from `/proc` (the benches measure Linux:
//! BENCHMARKS.md): CPU time and peak resident memory.
// Each bench uses what it measures.
#![allow(dead_code)]

/// The process's user + system CPU time so far, in seconds.
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line: 11 and 12 after the name.
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    #[cfg(unix)]
    // SAFETY: sysconf has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    // `/proc` is Linux's: the bench measures Linux (BENCHMARKS.md).
    #[cfg(not(unix))]
    let per_second = 100.0;
    ticks / per_second
}

/// The process's peak resident set (`VmHWM`), in MB.
pub fn peak_rss_mb(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: f64 = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    kb / 1024.0
}
