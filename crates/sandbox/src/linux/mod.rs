//! The Linux sandbox: Landlock, seccomp and namespaces, probed once ([`probe`]), prepared in
//! the agent and applied in each command's child between fork and exec ([`confine`], with the
//! system calls of the child in [`child`]).

pub(crate) mod child;
pub(crate) mod confine;
pub(crate) mod mounts;
pub(crate) mod probe;
