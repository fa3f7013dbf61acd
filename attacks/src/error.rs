//! Typed errors of the attacks and metrics. Each names the parameter or the shape at fault.

use thiserror::Error;

/// Why an attack, a victim gradient or a metric could not be computed.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum AttackError {
    /// A parameter outside its allowed range.
    #[error("`{name}` = {value} is out of range: expected {expected}")]
    OutOfRange {
        /// Parameter name.
        name: &'static str,
        /// Value given.
        value: f64,
        /// The accepted range, in words.
        expected: &'static str,
    },
    /// An input whose size does not match the victim network.
    #[error("{what}: expected {expected} values, got {got}")]
    ShapeMismatch {
        /// What was checked.
        what: &'static str,
        /// Size the network expects.
        expected: usize,
        /// Size given.
        got: usize,
    },
    /// A sample carries an image that the network has no branch for, or lacks one it needs.
    #[error("sample {index}: the network {expectation} a {image} image")]
    ImagePresence {
        /// Index of the sample in its batch.
        index: usize,
        /// `"rgb"` or `"depth"`.
        image: &'static str,
        /// `"needs"` or `"has no branch for"`.
        expectation: &'static str,
    },
    /// An action index outside the action space.
    #[error("sample {index}: action {action} is outside the {num_actions} actions")]
    ActionOutOfRange {
        /// Index of the sample in its batch.
        index: usize,
        /// Action given.
        action: usize,
        /// Size of the action space.
        num_actions: usize,
    },
    /// An empty batch of samples.
    #[error("the batch of samples is empty")]
    EmptyBatch,
    /// The shared gradient lacks a parameter that the attack needs.
    #[error("the shared gradient has no entry `{name}`")]
    MissingGradient {
        /// Parameter path.
        name: String,
    },
    /// A shared gradient entry whose length differs from the parameter.
    #[error("the shared gradient of `{name}` has {got} values; the parameter has {expected}")]
    GradientShape {
        /// Parameter path.
        name: String,
        /// Values of the parameter.
        expected: usize,
        /// Values in the record.
        got: usize,
    },
    /// The victim's output layer has no bias, which the error-direction surrogate (eq. 6) and
    /// the action rules (eq. 7, eq. 8) read.
    #[error("the victim's last layer has no bias; {needed_by} needs ∇b_last")]
    NoLastBias {
        /// The part of the attack that needs the bias.
        needed_by: &'static str,
    },
    /// The model declares no linear part ([`crate::InvertibleModel::linear_split`]), which
    /// this step needs.
    #[error("the model has no linear part; {needed_by} needs one (a model without one is attacked by joint optimisation)")]
    NoLinearPart {
        /// What needs the linear part.
        needed_by: &'static str,
    },
    /// An [`ImagePrior::Registered`](crate::ImagePrior::Registered) whose name was not
    /// registered for the attack's backend ([`crate::register_image_prior`]).
    #[error("image prior `{name}` is not registered for backend {backend} (registered there: [{known}])")]
    UnknownPrior {
        /// The name asked for.
        name: String,
        /// The backend the attack's free variables live on.
        backend: &'static str,
        /// The names registered for it.
        known: String,
    },
    /// `SignalRule::Registered { name }` names a rule that was not registered
    /// ([`crate::register_signal_rule`]).
    #[error("signal rule `{name}` is not registered (registered: [{known}])")]
    UnknownSignalRule {
        /// The name asked for.
        name: String,
        /// The names registered.
        known: String,
    },
    /// A safetensors file that could not be written or read, or whose tensors do not fit the
    /// model.
    #[error("safetensors file {path}: {message}")]
    Store {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// Two attack parts that cannot be combined.
    #[error("incompatible attack configuration: {0}")]
    Incompatible(String),
    /// The model has a layer whose backward Burn 0.21 cannot differentiate again, which the
    /// attack needs (it differentiates the weight gradient with respect to the
    /// reconstruction); found up front, before the autodiff thread would panic on it.
    #[error(
        "parameter `{parameter}` belongs to a {layer}, whose backward cannot be differentiated \
         again (the attack needs second-order gradients): use {fix} instead"
    )]
    NotTwiceDifferentiable {
        /// Dotted path of the parameter (`fc1.weight`).
        parameter: String,
        /// The layer type.
        layer: &'static str,
        /// The twice-differentiable replacement.
        fix: &'static str,
    },
    /// A defence could not privatise the gradient (a bad parameter, a mechanism error).
    #[error("defence: {0}")]
    Defence(String),
    /// Two lists that must have the same length.
    #[error("{what}: {left} vs {right} entries")]
    LengthMismatch {
        /// What was compared.
        what: &'static str,
        /// Length of the first list.
        left: usize,
        /// Length of the second list.
        right: usize,
    },
}

/// Checks `value > 0` and finite.
pub(crate) fn check_positive(name: &'static str, value: f64) -> Result<(), AttackError> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(AttackError::OutOfRange {
            name,
            value,
            expected: "> 0 and finite",
        })
    }
}

/// Checks `value >= 0` and finite.
pub(crate) fn check_non_negative(name: &'static str, value: f64) -> Result<(), AttackError> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(AttackError::OutOfRange {
            name,
            value,
            expected: ">= 0 and finite",
        })
    }
}

/// Checks `0 <= value < 1`.
pub(crate) fn check_unit_interval_open(name: &'static str, value: f64) -> Result<(), AttackError> {
    if (0.0..1.0).contains(&value) {
        Ok(())
    } else {
        Err(AttackError::OutOfRange {
            name,
            value,
            expected: "in [0, 1)",
        })
    }
}
