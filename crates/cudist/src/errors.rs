//! What the one reporting layer needs to know of an error: whether it is the input's fault
//! (exit code 3) and a hint for well-known failures. The judgements are cudist-analysis's
//! ([`cudist_analysis::error`]), applied to an `anyhow` cause chain.

use cudist_analysis::error::{bad_input, BadInput};

/// An error that says the input is bad (exit code 3): the library's [`bad_input`].
pub fn input(message: impl Into<String>) -> anyhow::Error {
    bad_input(message).into()
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
