//! A read-only sandbox that takes over from the configured one while the host says so (the
//! agent's plan mode): every command and hook started meanwhile is confined read-only, also
//! under `danger-full-access`, and nothing runs outside it.

use std::sync::Arc;

use crate::confine::Sandbox;

type Active = dyn Fn() -> bool + Send + Sync;

/// Shared by everything that starts commands; cheap to clone.
#[derive(Clone)]
pub struct Restriction {
    sandbox: Arc<Sandbox>,
    active: Arc<Active>,
}

impl Restriction {
    /// `sandbox` is the read-only one; `active` is asked before each command.
    pub fn new(sandbox: Arc<Sandbox>, active: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        Self {
            sandbox,
            active: Arc::new(active),
        }
    }

    /// The sandbox that must confine the next command instead of the configured one, while
    /// the restriction holds.
    pub fn active(&self) -> Option<&Arc<Sandbox>> {
        (self.active)().then_some(&self.sandbox)
    }

    /// The read-only sandbox, whether or not it holds now.
    pub fn sandbox(&self) -> &Arc<Sandbox> {
        &self.sandbox
    }
}

impl std::fmt::Debug for Restriction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Restriction")
            .field("policy", &self.sandbox.policy().mode)
            .field("active", &(self.active)())
            .finish()
    }
}
