//! What keeps the agent inside the lines the user drew: the sandbox policy and the kernel
//! confinement of the commands it runs (Landlock, seccomp, mount namespaces; never the agent
//! itself), the approval rules the user remembered, and which repositories the user trusts.
//! No UI: questions for the user go out as agent events, through the host.
