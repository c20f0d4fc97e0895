//! What the one reporting layer needs to know of an error: whether it is the input's fault
//! (exit code 3) and a hint for well-known failures. The judgements are cudist-analysis's
//! ([`cudist_analysis::error`]), applied to an `anyhow` cause chain.

use cudist_analysis::error::{bad_input, BadInput};

/// An error that says the input is bad (exit code 3): the library's [`bad_input`].
pub fn input(message: impl Into<String>) -> anyhow::Error {
    bad_input(message).into()
}

/// A command line that asks for what cannot be done (exit code 2, as clap's own usage errors).
#[derive(Debug)]
pub struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// An error in how cudist was called (exit code 2): a missing or contradictory option.
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    Usage(message.into()).into()
}

/// Whether an error is a usage error ([`usage`]).
pub fn is_usage(e: &anyhow::Error) -> bool {
    e.downcast_ref::<Usage>().is_some()
}

/// Whether an error comes from a bad input (exit code 3) rather than from cudist or the machine
/// (exit code 1).
pub fn is_bad_input(e: &anyhow::Error) -> bool {
    // A BadInput given as context (`input_context`) is found by downcasting the error itself.
    e.downcast_ref::<BadInput>().is_some() || cudist_analysis::error::is_bad_input(e.chain())
}

/// A hint for well-known failure kinds, found anywhere in the cause chain.
pub fn hint(e: &anyhow::Error) -> Option<&'static str> {
    cudist_analysis::error::hint(e.chain())
}
