//! The flags of `tessera render` that set a job's options, made from the job specification's
//! declaration ([`tessera_shared::spec::FIELDS`]): each option with a flag is one, with its
//! label, hint, range and default in its help; the values are read as the service reads a form
//! ([`JobSpec::from_fields`]), so the command line and the service refuse the same things.

use clap::{Arg, ArgAction, ArgMatches, Command, FromArgMatches};
use tessera_shared::spec::{Defaults, FIELDS, JobField, JobSpec, Kind, SpecError};

/// The options `tessera render` has its own flag for (a file or folder, not a library id).
const OWN: &[&str] = &["library"];

/// The job options given on the command line, by name.
#[derive(Debug, Clone, Default)]
pub struct JobFlags {
    given: Vec<(&'static str, String)>,
}

impl JobFlags {
    /// The job specification they ask for (the library and slices are this machine's).
    pub fn spec(&self) -> Result<JobSpec, SpecError> {
        let defaults = Defaults {
            library: "local".into(),
            slices: 1,
        };
        let mut spec = JobSpec::from_fields(
            |name| {
                self.given
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.as_str())
            },
            &defaults,
        )?;
        spec.library.version = 1;
        Ok(spec)
    }

    /// Whether option `name` was given.
    pub fn gave(&self, name: &str) -> bool {
        self.given.iter().any(|(n, _)| *n == name)
    }
}

fn flagged() -> impl Iterator<Item = (&'static JobField, &'static str)> {
    FIELDS.iter().filter_map(|field| {
        let flag = field.flag.ok()?.strip_prefix("--")?;
        (!OWN.contains(&field.name)).then_some((field, flag))
    })
}

/// The option's help: its label and hint, then its range and default as the declaration has
/// them.
fn help(field: &JobField) -> String {
    let mut facts = Vec::new();
    if let Kind::Whole { min, max, .. } = field.kind {
        let unit = if field.unit.is_empty() {
            String::new()
        } else {
            format!(" {}", field.unit)
        };
        facts.push(if max == u32::MAX {
            format!("at least {min}{unit}")
        } else {
            format!("{min} to {max}{unit}")
        });
    }
    let default = field.default_text();
    if !default.is_empty() && !matches!(field.kind, Kind::Switch { .. }) {
        facts.push(format!("default: {default}"));
    } else if matches!(field.kind, Kind::Whole { .. }) && !field.placeholder.is_empty() {
        facts.push(format!("default: {}", field.placeholder));
    }
    let facts = if facts.is_empty() {
        String::new()
    } else {
        format!(" [{}]", facts.join("; "))
    };
    format!("{}{facts}", field.hint)
}

fn arg(field: &'static JobField, flag: &'static str) -> Arg {
    let arg = Arg::new(field.name).long(flag).help(help(field));
    match field.kind {
        Kind::Switch { .. } => arg.action(ArgAction::SetTrue),
        Kind::Whole { .. } => arg.value_name("N"),
        Kind::Text { example, .. } => arg.value_name(example.unwrap_or("TEXT")),
        Kind::Choice { .. } => arg.value_name("NAME"),
    }
}

impl FromArgMatches for JobFlags {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut flags = JobFlags::default();
        flags.update_from_arg_matches(matches)?;
        Ok(flags)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        for (field, _) in flagged() {
            let value = match field.kind {
                Kind::Switch { .. } => matches.get_flag(field.name).then(|| "true".to_string()),
                _ => matches.get_one::<String>(field.name).cloned(),
            };
            if let Some(value) = value {
                self.given.retain(|(n, _)| *n != field.name);
                self.given.push((field.name, value));
            }
        }
        Ok(())
    }
}

impl clap::Args for JobFlags {
    fn augment_args(cmd: Command) -> Command {
        cmd.args(flagged().map(|(field, flag)| arg(field, flag)))
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}
