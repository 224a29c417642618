//! A kind that exists only in tests, to show what adding a kind takes: this file (its
//! parameters, its command line, its work) and its entry in the registry (a variant of
//! `WorkloadKind` named as it, its place in `KINDS` and `kind_of`), nothing else. The picker, scenario
//! files and `--help` find it from there: the tests of those modules look for it.

use anyhow::Result;

use super::params::{refused, Flag, Param, Params, Ty};
use super::{parsed, Cli, Ends, Kind};

static PARAMS: Params = Params::new(&[Param {
    key: "spins",
    label: "spins",
    help: "times it spins before it ends",
    unit: "",
    ty: Ty::Count {
        range: 1..=1000,
        absent: super::Absent::Is(3),
        why_max: None,
    },
    flag: Flag::Named("--spins"),
}]);

/// Arguments of `schedlab toy`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(long, default_value_t = PARAMS.param("spins").default_count(),
          help = PARAMS.param("spins").cli_help())]
    pub spins: u32,
}

pub fn main(args: Args) -> Result<()> {
    PARAMS
        .param("spins")
        .check_count(i64::from(args.spins))
        .map_err(refused)?;
    Ok(())
}

pub(super) static KIND: Kind = Kind {
    word: "toy",
    aliases: &["plaything"],
    about: "a kind that exists only in tests",
    unit: "spin",
    params: &PARAMS,
    ends: Ends::Always,
    cli: Some(Cli::of::<Args>(|m| main(parsed(m)?))),
    ..super::PLAIN
};
