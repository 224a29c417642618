//! Fuzzing, bounded in time (a few hundred cases each, seconds in CI): the scenario parser,
//! the recording reader, the results reader and the chat protocol decoder must never panic on
//! any input; what they refuse is an error naming the input, never a crash.

use proptest::prelude::*;

use schedlab::record::recording::Recording;
use schedlab::record::results::RunResults;
use schedlab::scenario::Scenario;
use schedlab::workload::chat::protocol::{self, StartMessage};

const PRESETS: &[&str] = &[
    include_str!("../assets/scenarios/chat-30x1000.toml"),
    include_str!("../assets/scenarios/contest-fork-load.toml"),
    include_str!("../assets/scenarios/fork-load-own-session.toml"),
    include_str!("../assets/scenarios/hackbench.toml"),
    include_str!("../assets/scenarios/mix.toml"),
    include_str!("../assets/scenarios/sysv-pingpong-per-cpu.toml"),
];

/// Tokens that make the scenario parser take its deeper paths.
const TOKENS: &[&str] = &[
    "[[workload]]\n",
    "name = \"w\"\n",
    "kind = \"chat\"\n",
    "kind = \"hackbench\"\n",
    "kind = \"pingpong\"\n",
    "kind = \"command\"\n",
    "kind = \"fork-load\"\n",
    "rooms = ",
    "messages = ",
    "groups = ",
    "pairs = ",
    "nice = ",
    "policy = \"fifo\"\n",
    "cpus = [0, 1]\n",
    "argv = []\n",
    "start_delay = ",
    "duration = ",
    "interval_ms = ",
    "threads = true\n",
    "-1\n",
    "0\n",
    "2147483647\n",
    "9223372036854775807\n",
    "1e308\n",
    "nan\n",
    "inf\n",
    "\"x\"\n",
    "[]\n",
    "{}\n",
    "= =\n",
    "\u{0}",
    "é",
    "\n",
    "#",
];

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 300,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// A preset with a span of it replaced by `insert`: mostly valid TOML, wrong in one place.
fn mutated() -> impl Strategy<Value = String> {
    (
        0..PRESETS.len(),
        any::<prop::sample::Index>(),
        any::<prop::sample::Index>(),
        prop::collection::vec(prop::sample::select(TOKENS), 0..4),
    )
        .prop_map(|(p, a, b, ins)| {
            let src = PRESETS[p];
            let (mut a, mut b) = (a.index(src.len() + 1), b.index(src.len() + 1));
            if a > b {
                std::mem::swap(&mut a, &mut b);
            }
            while !src.is_char_boundary(a) {
                a -= 1;
            }
            while !src.is_char_boundary(b) {
                b -= 1;
            }
            format!("{}{}{}", &src[..a], ins.concat(), &src[b..])
        })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn scenario_parser_never_panics_on_any_text(src in ".{0,400}") {
        let _ = Scenario::from_toml(&src, "fuzz.toml");
    }

    #[test]
    fn scenario_parser_never_panics_on_mutated_presets(src in mutated()) {
        if let Err(e) = Scenario::from_toml(&src, "fuzz.toml") {
            // An error names the file it is about.
            prop_assert!(e.to_string().contains("fuzz.toml"), "{}", e);
        }
    }

    #[test]
    fn scenario_parser_never_panics_on_token_soup(
        toks in prop::collection::vec(prop::sample::select(TOKENS), 0..40)
    ) {
        let _ = Scenario::from_toml(&toks.concat(), "fuzz.toml");
    }

    #[test]
    fn recording_reader_never_panics_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        if let Err(e) = Recording::from_reader(&bytes[..], "fuzz.jsonl") {
            prop_assert!(format!("{e:#}").contains("fuzz.jsonl"), "{:#}", e);
        }
    }

    #[test]
    fn recording_reader_never_panics_on_json_lines(
        lines in prop::collection::vec(prop::sample::select(&[
            "{\"schedlab_recording\":1}",
            "{\"schedlab_recording\":99}",
            "{\"schedlab_recording\":1,\"scenario\":{}}",
            "{\"repeat\":1}",
            "{\"repeat\":-1}",
            "{\"end\":true}",
            "{\"t\":1e400}",
            "{}",
            "[]",
            "null",
            "",
            "{\"schedlab_recording\":1,",
        ][..]), 0..12)
    ) {
        let text = lines.join("\n");
        let _ = Recording::from_reader(text.as_bytes(), "fuzz.jsonl");
    }

    #[test]
    fn results_reader_never_panics(text in "[{}\\[\\]\":,0-9a-z_ .-]{0,300}") {
        let _ = RunResults::from_json(&text, "fuzz.json");
    }

    #[test]
    fn chat_start_message_decodes_and_validates_without_panic(bytes in any::<[u8; 8]>(), max in any::<u32>()) {
        let m = StartMessage::decode(bytes);
        prop_assert_eq!(StartMessage::decode(m.encode()), m);
        match m.validate(max) {
            Ok(size) => {
                prop_assert!(size.rooms >= 1 && size.rooms <= max);
                prop_assert!(size.messages >= 1 && size.messages <= protocol::MAX_MESSAGES);
                prop_assert!(size.received() == size.sent() * 19);
            }
            Err(why) => prop_assert!(why.contains("must be 1..="), "{}", why),
        }
    }

    #[test]
    fn chat_counts_parse_without_panic(text in ".{0,30}") {
        let _ = protocol::parse_count("rooms", &text);
    }
}

/// A real recording header with a tail of noise still reads or refuses cleanly.
#[test]
fn a_real_header_followed_by_garbage_is_refused_or_read() {
    let header = "{\"schedlab_recording\":1}\n";
    for tail in ["\u{0}\u{0}\n", "{\"repeat\":\n", "]]]\n", "\n\n\n"] {
        let _ = Recording::from_reader(format!("{header}{tail}").as_bytes(), "x.jsonl");
    }
}
