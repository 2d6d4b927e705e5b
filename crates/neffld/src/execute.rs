//! What an execution request gets from a runtime whose device runs
//! nothing: the caller's tensors checked against the model as the
//! reference runtime checks them before it starts (every input and output
//! bound under its own name with exactly its size, nothing bound that the
//! model lacks), then a refusal. The C library's `nrt_execute` family and
//! Python's `neffld.nrtpy` both ask here, so a binding mistake reads
//! alike in both and neither can pretend to have run the model.

use thiserror::Error;

use crate::api::{TensorInfo, TensorUsage};
use crate::NrtStatus;

/// Why an execution did not happen.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExecuteError {
    /// A tensor of the model is not in the caller's set.
    #[error("{} tensor \"{name}\" is missing from the {} set", .usage.name(), .usage.name())]
    Missing {
        /// Input or output.
        usage: TensorUsage,
        /// The model's tensor.
        name: String,
    },
    /// The tensor bound has no bytes (a tensor without storage).
    #[error("{} tensor \"{name}\" is not a live tensor with storage", .usage.name())]
    NoStorage {
        /// Input or output.
        usage: TensorUsage,
        /// The model's tensor.
        name: String,
    },
    /// The tensor bound is not the model's tensor's size.
    #[error("{} tensor \"{name}\" has {size} bytes; the model expects {expected}", .usage.name())]
    WrongSize {
        /// Input or output.
        usage: TensorUsage,
        /// The model's tensor.
        name: String,
        /// Bytes of the tensor bound.
        size: u64,
        /// Bytes of the model's tensor.
        expected: u64,
    },
    /// The set holds a name that is not one of the model's tensors of
    /// that usage.
    #[error("the {} set holds \"{name}\", which is not an {} of the model", .usage.name(), .usage.name())]
    Unknown {
        /// Input or output.
        usage: TensorUsage,
        /// The name bound.
        name: String,
    },
    /// The binding is right; the simulated device executes nothing.
    #[error("not supported by neffld (it loads models on a simulated device; nothing executes)")]
    Unsupported,
}

impl ExecuteError {
    /// `NRT_INVALID` for a binding mistake (`nrt_status.h`: "input tensor
    /// name/size does not match the model"), `NRT_FAILURE` for the refusal
    /// itself: the public status set has no "unsupported" code.
    pub fn status(&self) -> NrtStatus {
        match self {
            ExecuteError::Unsupported => NrtStatus::Failure,
            _ => NrtStatus::Invalid,
        }
    }
}

/// The caller's tensors of one usage: each name with its size in bytes.
pub type Bound<'a> = &'a [(&'a str, u64)];

/// Checks `bound` against the model's `tensors` of `usage`.
pub fn check_binding(
    tensors: &[TensorInfo],
    usage: TensorUsage,
    bound: Bound<'_>,
) -> Result<(), ExecuteError> {
    let expected = tensors.iter().filter(|t| t.usage == usage);
    for t in expected.clone() {
        let Some(&(_, size)) = bound.iter().find(|(n, _)| *n == t.name) else {
            return Err(ExecuteError::Missing {
                usage,
                name: t.name.clone(),
            });
        };
        if size == 0 {
            return Err(ExecuteError::NoStorage {
                usage,
                name: t.name.clone(),
            });
        }
        if size != t.size {
            return Err(ExecuteError::WrongSize {
                usage,
                name: t.name.clone(),
                size,
                expected: t.size,
            });
        }
    }
    if let Some((name, _)) = bound
        .iter()
        .find(|(n, _)| !expected.clone().any(|t| t.name == *n))
    {
        return Err(ExecuteError::Unknown {
            usage,
            name: name.to_string(),
        });
    }
    Ok(())
}

/// What an execution of a model with `tensors` gets: the first binding
/// mistake of `inputs`, then of `outputs` (`None`: outputs the caller
/// lets the runtime allocate, which fit by construction), else
/// [`ExecuteError::Unsupported`].
pub fn refusal(
    tensors: &[TensorInfo],
    inputs: Bound<'_>,
    outputs: Option<Bound<'_>>,
) -> ExecuteError {
    let checked = check_binding(tensors, TensorUsage::Input, inputs).and_then(|()| match outputs {
        Some(outputs) => check_binding(tensors, TensorUsage::Output, outputs),
        None => Ok(()),
    });
    checked.err().unwrap_or(ExecuteError::Unsupported)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::NrtDtype;

    fn info(name: &str, usage: TensorUsage, size: u64) -> TensorInfo {
        TensorInfo {
            name: name.into(),
            usage,
            size,
            dtype: NrtDtype::Float32,
            shape: vec![(size / 4) as u32],
        }
    }

    #[test]
    fn every_mistake_is_named_and_a_right_binding_is_refused() {
        let model = [
            info("a", TensorUsage::Input, 8),
            info("out", TensorUsage::Output, 4),
        ];
        let out = [("out", 4)];
        let cases: [(&[(&str, u64)], ExecuteError); 5] = [
            (
                &[],
                ExecuteError::Missing {
                    usage: TensorUsage::Input,
                    name: "a".into(),
                },
            ),
            (
                &[("a", 0)],
                ExecuteError::NoStorage {
                    usage: TensorUsage::Input,
                    name: "a".into(),
                },
            ),
            (
                &[("a", 4)],
                ExecuteError::WrongSize {
                    usage: TensorUsage::Input,
                    name: "a".into(),
                    size: 4,
                    expected: 8,
                },
            ),
            (
                &[("a", 8), ("b", 8)],
                ExecuteError::Unknown {
                    usage: TensorUsage::Input,
                    name: "b".into(),
                },
            ),
            (&[("a", 8)], ExecuteError::Unsupported),
        ];
        for (inputs, want) in cases {
            assert_eq!(refusal(&model, inputs, Some(&out)), want);
        }
        assert_eq!(
            refusal(&model, &[("a", 8)], Some(&[])).to_string(),
            "output tensor \"out\" is missing from the output set"
        );
        assert_eq!(
            refusal(&model, &[("a", 8)], None),
            ExecuteError::Unsupported
        );
        assert_eq!(ExecuteError::Unsupported.status(), NrtStatus::Failure);
        assert_eq!(refusal(&model, &[], None).status(), NrtStatus::Invalid);
    }
}
