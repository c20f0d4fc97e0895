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

/// A fault of the machine or the network met while reading an input, said with that input's
/// name (exit code 4, never 3: the input is not to blame).
#[derive(Debug)]
pub struct Machine {
    /// The input and what happened.
    pub message: String,
    /// Which fault it was.
    pub fault: cudist_fs::Fault,
}

impl std::fmt::Display for Machine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Machine {}

/// The fault of the machine or the network an error reports (exit code 4), anywhere in its
/// cause chain: an operating-system error that says so ([`cudist_fs::fault`]), or the index
/// client's network failure.
pub fn machine_fault(e: &anyhow::Error) -> Option<cudist_fs::Fault> {
    if let Some(m) = e.downcast_ref::<Machine>() {
        return Some(m.fault);
    }
    e.chain()
        .find_map(|c| match c.downcast_ref::<cudist_index::IndexError>() {
            Some(cudist_index::IndexError::Network { fault, .. }) => Some(*fault),
            _ => None,
        })
        .or_else(|| cudist_analysis::error::machine_fault(e.chain()))
}

/// An error of the index client, classified: the network's or the machine's fault, and a cache
/// that cannot be written, keep their type (exit code 4, or 1); an index that answered what
/// cannot be used is a bad input (3).
pub fn index(e: cudist_index::IndexError) -> anyhow::Error {
    match e {
        cudist_index::IndexError::Network { .. } | cudist_index::IndexError::Cache { .. } => {
            anyhow::Error::new(e)
        }
        e => input(e.to_string()),
    }
}

/// An error reading a remote or local input (`what` names it), classified: the machine's fault
/// (exit code 4) or the input's (3).
pub fn reading(what: &str, e: &(dyn std::error::Error + 'static)) -> anyhow::Error {
    let message = format!("{what}: {}", cudist_analysis::error::message(e));
    match cudist_analysis::error::machine_fault(cudist_analysis::error::chain(e)) {
        Some(fault) => Machine { message, fault }.into(),
        None => input(message),
    }
}

/// A hint for well-known failure kinds, found anywhere in the cause chain; a fault of the
/// machine says so first.
pub fn hint(e: &anyhow::Error) -> Option<&'static str> {
    if let Some(f) = machine_fault(e) {
        return Some(f.hint());
    }
    cudist_analysis::error::hint(e.chain())
}
