//! Adding a workload without leaving the screen: a list of every kind schedlab can launch,
//! then a form with its parameters and knobs, which becomes a `WorkloadDecl`. The knob part
//! of the form is also the editor for a running workload's knobs.

use crate::knobs::{
    cpus_text, parse_cpus, Knobs, Placement, Policy, CGROUP_WEIGHT, DEFAULT_CGROUP_WEIGHT,
    MAX_CPU_QUOTA, NICE, RT_PRIORITY,
};
use crate::scenario::WorkloadDecl;
use crate::workload::registry::{self, Absent, Ends, Kind, Param, Ty, Value, WorkloadKind};

use super::form::{Field, Form};

/// One line of the picker: a kind of the registry, by its place in [`registry::KINDS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Template(usize);

/// Every line of the picker, in the registry's order.
/// The picker's key for attach.
const ATTACH_KEY: char = 'a';

pub static TEMPLATES: std::sync::LazyLock<Vec<Template>> =
    std::sync::LazyLock::new(|| (0..registry::KINDS.len()).map(Template).collect());

impl Template {
    /// The line a key opens at once: 1-9 the first nine, 0 the last (so that ten lines all
    /// have a key; a test keeps the registry at ten kinds or fewer).
    /// `a` attaches (watches processes schedlab did not start); digits start a kind.
    pub(crate) fn of_key(c: char) -> Option<Template> {
        let mut numbered = TEMPLATES.iter().copied().filter(|t| !t.attaches());
        match c {
            ATTACH_KEY => TEMPLATES.iter().copied().find(|t| t.attaches()),
            '0' => numbered.next_back(),
            '1'..='9' => numbered.nth(c as usize - '1' as usize),
            _ => None,
        }
    }

    /// Its key in the list: `a` for attach; else its number among the first nine kinds, or
    /// 0 for the last.
    pub fn key(self) -> Option<char> {
        if self.attaches() {
            return Some(ATTACH_KEY);
        }
        let numbered: Vec<Template> = TEMPLATES
            .iter()
            .copied()
            .filter(|t| !t.attaches())
            .collect();
        match numbered.iter().position(|t| *t == self)? {
            i @ 0..=8 => char::from_digit(i as u32 + 1, 10),
            i if i + 1 == numbered.len() => Some('0'),
            _ => None,
        }
    }

    /// Whether it attaches to processes rather than starting a workload.
    fn attaches(self) -> bool {
        self.kind().word == "attach"
    }

    /// The kind it starts.
    pub fn kind(self) -> &'static Kind {
        registry::KINDS[self.0]
    }

    /// Its name in the list: the kind's, which its workloads get too.
    pub fn label(self) -> &'static str {
        self.kind().word
    }

    pub fn about(self) -> &'static str {
        self.kind().about
    }

    /// Finite runs can loop: restart when they finish.
    pub fn finite(self) -> bool {
        self.kind().ends != Ends::Never
    }

    /// The picker's form for this kind: its parameters with their defaults, then the knobs.
    pub fn form(self, _cpus: usize) -> Form {
        let mut fields = vec![Field::text(
            "name",
            "name",
            "",
            "empty: the kind's name (made unique)",
        )];
        fields.extend(self.kind().params.iter().map(param_field));
        if !self.attaches() {
            // What schedlab did not start is watched as it is: no knobs.
            fields.extend(knob_fields(&Knobs::default()));
        }
        if self.finite() {
            fields.push(Field::toggle(
                "loop",
                "loop",
                false,
                "start it again each time it finishes",
            ));
        }
        Form::new(format!("new {}", self.label()), fields)
    }

    /// The workload this form describes, or why not.
    pub fn decl(self, form: &Form, taken: &[String]) -> Result<WorkloadDecl, String> {
        let kind = self.kind();
        let values = kind
            .params
            .iter()
            .map(|p| field_value(p, form))
            .collect::<Result<Vec<_>, _>>()?;
        let kind = kind.build(values);
        let knobs = if self.attaches() {
            Knobs::default()
        } else {
            knobs_from(form, crate::supervisor::usable_cpus())?
        };
        let wanted = form.text("name");
        let selector = kind.selector().transpose()?;
        let base = if wanted.is_empty() {
            match &kind {
                _ if selector.is_some() => selector.map(|s| s.to_string()).unwrap_or_default(),
                WorkloadKind::Command { argv } => {
                    argv[0].rsplit('/').next().unwrap_or("command").to_string()
                }
                k => k.label().to_string(),
            }
        } else {
            wanted.to_string()
        };
        if !wanted.is_empty() && taken.iter().any(|t| t == wanted) {
            return Err(format!("name: `{wanted}` is already taken"));
        }
        Ok(WorkloadDecl {
            name: unique_name(&base, taken),
            kind,
            knobs,
            start_delay: 0.0,
            duration: None,
        })
    }
}

/// A parameter's field, pre-filled with its default.
fn param_field(p: &'static Param) -> Field {
    let hint = match &p.ty {
        Ty::Count {
            absent: Absent::Auto { word, means },
            ..
        } => match word {
            Some(w) => format!("{}; {w}: {means}", p.help),
            None => format!("{}; empty: {means}", p.help),
        },
        _ => p.help.to_string(),
    };
    match &p.ty {
        Ty::Switch => Field::toggle(p.key, p.label, false, hint),
        Ty::Choice { words, default } => Field::choice(p.key, p.label, words, default, hint),
        Ty::Count { .. } | Ty::Amount { .. } | Ty::Words | Ty::Text => {
            Field::text(p.key, p.label, p.default_text(), hint)
        }
    }
}

/// A parameter's value from its field, checked by the registry as every source is.
fn field_value(p: &Param, form: &Form) -> Result<Value, String> {
    let text = form.text(p.key);
    match &p.ty {
        Ty::Count {
            absent: Absent::Auto { .. } | Absent::Omitted(_),
            ..
        } if text.is_empty() => Ok(Value::Count(None)),
        Ty::Count { .. } => p.parse_count(text).map(Value::Count),
        Ty::Amount { .. } => match text.parse::<f64>() {
            Ok(x) => p.check_amount(x).map(Value::Amount),
            Err(_) => Err(format!("{}: `{text}` is not a number", p.key)),
        },
        Ty::Switch => Ok(Value::Switch(form.toggle(p.key))),
        Ty::Choice { .. } => p.check_word(form.choice(p.key)).map(Value::Word),
        Ty::Text => Ok(Value::Text((!text.is_empty()).then(|| text.to_owned()))),
        Ty::Words => {
            let argv = split_words(text)?;
            if argv.is_empty() {
                return Err(format!("{}: type the program to run", p.label));
            }
            Ok(Value::Words(argv))
        }
    }
}

/// The knob fields, filled from `k`.
pub(crate) fn knob_fields(k: &Knobs) -> Vec<Field> {
    let weight = match k.placement {
        Placement::Cgroup { weight } => weight,
        _ => DEFAULT_CGROUP_WEIGHT,
    };
    vec![
        Field::text(
            "nice",
            "nice",
            k.nice.to_string(),
            "-20 (favoured) .. 19 (nicest); weight ×1.25 per step",
        ),
        Field::choice(
            "policy",
            "policy",
            &Policy::words(),
            k.policy.word(),
            "fifo and rr are real-time: they need root or CAP_SYS_NICE",
        ),
        Field::text(
            "rtprio",
            "rt priority",
            k.rt_priority.max(*RT_PRIORITY.start()).to_string(),
            "1..99, for fifo and rr",
        ),
        Field::text(
            "affinity",
            "CPUs",
            k.affinity.as_deref().map(cpus_text).unwrap_or_default(),
            "empty: every CPU; else e.g. 0 or 0,1 or 0-3",
        ),
        Field::choice(
            "placement",
            "placement",
            &Placement::FORM_WORDS,
            k.placement.form_word(),
            "shared: one autogroup with the others; own session: its own autogroup",
        ),
        Field::text(
            "weight",
            "cgroup weight",
            weight.to_string(),
            "1..10000 (100 = default), for own cgroup",
        ),
        Field::text(
            "quota",
            "cpu quota %",
            k.cpu_quota.map(|q| q.to_string()).unwrap_or_default(),
            "empty: no limit; else % of one CPU (20 = a fifth), for own cgroup",
        ),
    ]
}

/// Knobs from the knob fields of `form`, its CPUs among the `cpus` schedlab may use: every
/// mistake is found here, while the form is still open with what was typed.
pub(crate) fn knobs_from(form: &Form, cpus: usize) -> Result<Knobs, String> {
    let policy = Policy::from_word(form.choice("policy")).unwrap_or_default();
    let rt_priority = if policy.is_realtime() {
        form.number::<u8>("rtprio", RT_PRIORITY)?
    } else {
        0
    };
    let affinity = match form.text("affinity") {
        "" => None,
        text => Some(parse_cpus(text, cpus).map_err(|e| format!("CPUs: {e}"))?),
    };
    let placement = match Placement::from_word(form.choice("placement"), 0) {
        Some(Placement::Cgroup { .. }) => Placement::Cgroup {
            weight: form.number("weight", CGROUP_WEIGHT)?,
        },
        p => p.unwrap_or_default(),
    };
    let cpu_quota = match form.text("quota") {
        "" => None,
        _ if !matches!(placement, Placement::Cgroup { .. }) => {
            return Err("cpu quota %: applies only to an own cgroup".into())
        }
        _ => Some(form.number("quota", 1..=MAX_CPU_QUOTA)?),
    };
    Ok(Knobs {
        nice: form.number("nice", NICE)?,
        policy,
        rt_priority,
        affinity,
        placement,
        cpu_quota,
    })
}

/// `base`, or `base-2`, `base-3`... whichever is not taken.
pub(crate) fn unique_name(base: &str, taken: &[String]) -> String {
    if !taken.iter().any(|t| t == base) {
        return base.to_string();
    }
    (2..)
        .map(|n| format!("{base}-{n}"))
        .find(|c| !taken.iter().any(|t| t == c))
        .unwrap()
}

/// Splits a command line into words: blanks separate, single and double quotes group,
/// a backslash escapes the next character. No expansion of any kind.
pub(crate) fn split_words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') | (None, '\\') => {
                cur.extend(chars.next());
                in_word = true;
            }
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (None, c) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return Err("command: a quote is not closed".into());
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_builds_with_its_defaults() {
        for &t in TEMPLATES.iter() {
            let mut form = t.form(2);
            if t.kind().word == "command" {
                form.fields[1].value = super::super::form::Value::Text("make -j4".into());
            }
            if t.kind().word == "attach" {
                form.fields[1].value = super::super::form::Value::Text("1".into());
            }
            let decl = t.decl(&form, &[]).unwrap_or_else(|e| panic!("{t:?}: {e}"));
            assert!(!decl.name.is_empty());
            assert_eq!(decl.knobs, Knobs::default());
        }
    }

    #[test]
    fn every_line_has_a_key() {
        assert_eq!(TEMPLATES.len(), registry::KINDS.len());
        assert!(
            TEMPLATES.len() <= 11,
            "a kind past the tenth (besides attach, on `a`) would have no key in the picker"
        );
        for t in TEMPLATES.iter() {
            let k = t
                .key()
                .unwrap_or_else(|| panic!("{} has no key", t.label()));
            assert_eq!(Template::of_key(k), Some(*t));
        }
        assert_eq!(Template::of_key('0'), TEMPLATES.last().copied());
    }

    /// The registry's test-only kind (workload/registry/toy.rs) is offered with nothing
    /// written for it here: a line, a key, a form with its parameter.
    #[test]
    fn a_kind_in_the_registry_is_in_the_picker() {
        let toy = *TEMPLATES
            .iter()
            .find(|t| t.label() == "toy")
            .expect("the picker offers the test-only kind");
        let key = toy.key().expect("a key");
        assert_eq!(Template::of_key(key), Some(toy));
        let decl = toy.decl(&toy.form(2), &[]).unwrap();
        assert_eq!(decl.kind, WorkloadKind::Toy { spins: 3 });
        assert_eq!(decl.name, "toy");
    }

    #[test]
    fn names_are_unique() {
        let taken = vec!["chat".to_string(), "chat-2".to_string()];
        assert_eq!(unique_name("chat", &taken), "chat-3");
        assert_eq!(unique_name("hackbench", &taken), "hackbench");
    }

    #[test]
    fn words_split_like_a_shell_without_expansion() {
        assert_eq!(
            split_words(r#"sh -c 'echo $HOME "x"' a\ b"#).unwrap(),
            vec!["sh", "-c", r#"echo $HOME "x""#, "a b"]
        );
        assert!(split_words("echo 'x").is_err());
        assert_eq!(split_words("  ").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn knobs_round_trip_through_the_form() {
        let k = Knobs {
            nice: 5,
            policy: Policy::Rr,
            rt_priority: 10,
            affinity: Some(vec![0, 1]),
            placement: Placement::Cgroup { weight: 300 },
            cpu_quota: None,
        };
        let form = Form::new("k", knob_fields(&k));
        assert_eq!(knobs_from(&form, 2).unwrap(), k);
        let quota = Knobs {
            cpu_quota: Some(20),
            ..k
        };
        let form = Form::new("k", knob_fields(&quota));
        assert_eq!(knobs_from(&form, 2).unwrap(), quota);
    }
}
