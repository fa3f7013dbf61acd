//! Gradient mechanisms on the command line: one parser over privrl-privacy's list of names
//! and aliases ([`MechanismKind`]), so that every command accepts the same spellings and its
//! `--help` lists them.

use std::ffi::OsStr;

use clap::builder::{PossibleValue, TypedValueParser};
use clap::error::ErrorKind;
use privrl_privacy::MechanismKind;

/// The mechanisms the PGC commands run: the paper's two and the non-private baseline.
pub const PGC_MECHANISMS: [MechanismKind; 3] = [
    MechanismKind::None,
    MechanismKind::Laplace,
    MechanismKind::Prs,
];

/// A clap value parser for a [`MechanismKind`] among `allowed`, by name or alias.
#[derive(Clone, Copy, Debug)]
pub struct MechanismParser(pub &'static [MechanismKind]);

impl TypedValueParser for MechanismParser {
    type Value = MechanismKind;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<MechanismKind, clap::Error> {
        let text = value.to_string_lossy();
        match text.parse::<MechanismKind>() {
            Ok(kind) if self.0.contains(&kind) => Ok(kind),
            _ => {
                let accepted: Vec<String> = self
                    .0
                    .iter()
                    .map(|k| match k.aliases() {
                        [] => k.name().to_string(),
                        aliases => format!("{} ({})", k.name(), aliases.join(", ")),
                    })
                    .collect();
                let flag = arg.map_or_else(|| "value".to_string(), |a| a.to_string());
                Err(clap::Error::raw(
                    ErrorKind::InvalidValue,
                    format!(
                        "invalid mechanism {text:?} for {flag}: expected one of {}\n",
                        accepted.join(", ")
                    ),
                )
                .with_cmd(cmd))
            }
        }
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.0.iter().map(|kind| {
            PossibleValue::new(kind.name())
                .aliases(kind.aliases().iter().copied())
                .help(kind.about())
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Cli {
        #[arg(long, value_parser = MechanismParser(&PGC_MECHANISMS), value_delimiter = ',')]
        mechanisms: Vec<MechanismKind>,
    }

    #[test]
    fn names_and_aliases_parse_and_others_are_refused() {
        let cli = Cli::try_parse_from(["x", "--mechanisms", "lap,prs,none"]).unwrap();
        assert_eq!(
            cli.mechanisms,
            vec![
                MechanismKind::Laplace,
                MechanismKind::Prs,
                MechanismKind::None
            ]
        );
        let error = Cli::try_parse_from(["x", "--mechanisms", "dp-sgd"]).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidValue);
        assert!(error.to_string().contains("laplace (lap)"), "{error}");
    }
}
