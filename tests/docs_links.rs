//! README.md and docs/*.md stay true to the repository. Every relative link resolves: to a
//! file or folder, and, when it carries a `#fragment` into a Markdown page, to a heading of that
//! page (the anchor GitHub gives it). Links inside code are not links; absolute URLs are not
//! checked (no network in tests). And every `schedlab COMMAND --flag` written in code exists:
//! the command is one `schedlab --help` lists, and each flag is one its `--help` names.

mod common;

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};

use common::tree::{files_under, repo};

/// README.md and every Markdown file under docs/, as paths relative to the repository.
fn pages() -> Vec<PathBuf> {
    let mut out = vec![PathBuf::from("README.md")];
    out.extend(files_under("docs", "md"));
    out
}

/// Fails listing `failures`, counted as `what`, if there are any.
#[track_caller]
fn assert_none(failures: &[String], what: &str) {
    assert!(
        failures.is_empty(),
        "{} {what}:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Whether a line opens or closes a fenced code block (``` or ~~~, indented at most 3).
fn is_fence(line: &str) -> bool {
    let indent = line.len() - line.trim_start_matches(' ').len();
    let rest = line.trim_start_matches(' ');
    indent <= 3 && (rest.starts_with("```") || rest.starts_with("~~~"))
}

/// A page's lines, numbered from 1, each with whether it is inside a fenced code block; the
/// fence lines themselves left out.
fn lines_by_fence(text: &str) -> impl Iterator<Item = (usize, &str, bool)> {
    let mut in_fence = false;
    text.lines().enumerate().filter_map(move |(n, line)| {
        if is_fence(line) {
            in_fence = !in_fence;
            return None;
        }
        Some((n + 1, line, in_fence))
    })
}

/// The line with its inline code spans blanked out, so that `[a](b)` in code is not a link.
fn without_code_spans(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let run = chars[i..].iter().take_while(|c| **c == '`').count();
        // The closing run has exactly as many backticks.
        let mut j = i + run;
        let mut close = None;
        while j < chars.len() {
            if chars[j] == '`' {
                let n = chars[j..].iter().take_while(|c| **c == '`').count();
                if n == run {
                    close = Some(j + n);
                    break;
                }
                j += n;
            } else {
                j += 1;
            }
        }
        match close {
            Some(end) => {
                out.extend(std::iter::repeat_n(' ', end - i));
                i = end;
            }
            None => {
                // An unclosed run is literal text.
                out.extend(&chars[i..i + run]);
                i += run;
            }
        }
    }
    out
}

/// The destinations of the inline links and images on one line (code spans removed).
fn inline_destinations(line: &str) -> Vec<String> {
    let chars: Vec<char> = line.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < chars.len() {
        let opens_destination = chars[i] == ']' && chars[i + 1] == '(';
        if !(opens_destination && chars[..i].contains(&'[')) {
            i += 1;
            continue;
        }
        let mut j = i + 2;
        let mut dest = String::new();
        if chars.get(j) == Some(&'<') {
            j += 1;
            while j < chars.len() && chars[j] != '>' {
                dest.push(chars[j]);
                j += 1;
            }
        } else {
            // Up to whitespace (a title follows) or the closing parenthesis, nesting allowed.
            let mut depth = 0;
            while j < chars.len() && !chars[j].is_whitespace() {
                match chars[j] {
                    '(' => depth += 1,
                    ')' if depth == 0 => break,
                    ')' => depth -= 1,
                    _ => {}
                }
                dest.push(chars[j]);
                j += 1;
            }
        }
        out.push(dest);
        i = j;
    }
    out
}

/// A reference definition, `[label]: destination`, if the line is one.
fn reference_destination(line: &str) -> Option<String> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    let rest = line.trim_start_matches(' ');
    if indent > 3 || !rest.starts_with('[') || rest.starts_with("[^") {
        return None;
    }
    let close = rest.find("]:")?;
    let dest = rest[close + 2..].split_whitespace().next()?;
    Some(
        dest.trim_start_matches('<')
            .trim_end_matches('>')
            .to_owned(),
    )
}

/// Every link destination of a page, with its line number, outside code.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line, fenced) in lines_by_fence(text) {
        if fenced {
            continue;
        }
        let line = without_code_spans(line);
        if let Some(dest) = reference_destination(&line) {
            out.push((n, dest));
            continue;
        }
        out.extend(inline_destinations(&line).into_iter().map(|d| (n, d)));
    }
    out
}

/// The anchor GitHub gives a heading: its text without Markdown, lower case, spaces as
/// hyphens, and every character that is not a letter, digit, `-` or `_` dropped.
fn slug(heading: &str) -> String {
    // Links keep their text; code spans keep their content.
    let mut text = String::new();
    let mut rest = heading;
    while let Some(open) = rest.find('[') {
        let Some(mid) = rest[open..].find("](") else {
            break;
        };
        let Some(end) = rest[open + mid..].find(')') else {
            break;
        };
        text.push_str(&rest[..open]);
        text.push_str(&rest[open + 1..open + mid]);
        rest = &rest[open + mid + end + 1..];
    }
    text.push_str(rest);
    text.chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .flat_map(char::to_lowercase)
        .collect()
}

/// The anchors of a page's headings (ATX `#` headings outside code), numbered `-1`, `-2`
/// when a heading's text repeats, as GitHub numbers them.
fn anchors(text: &str) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    for (_, line, fenced) in lines_by_fence(text) {
        let trimmed = line.trim_start_matches(' ');
        if fenced || line.len() - trimmed.len() > 3 {
            continue;
        }
        let hashes = trimmed.chars().take_while(|c| *c == '#').count();
        let after = &trimmed[hashes..];
        if !(1..=6).contains(&hashes) || !(after.is_empty() || after.starts_with(' ')) {
            continue;
        }
        let title = after.trim().trim_end_matches('#').trim_end();
        let base = slug(title);
        let n = seen.entry(base.clone()).or_insert(0);
        out.push(if *n == 0 { base } else { format!("{base}-{n}") });
        *n += 1;
    }
    out
}

/// Whether a destination is an absolute URL (`https:`, `mailto:`, ...), not a path.
fn is_absolute_url(dest: &str) -> bool {
    match dest.split_once(':') {
        Some((scheme, _)) => {
            !scheme.is_empty()
                && scheme.chars().next().unwrap().is_ascii_alphabetic()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        }
        None => false,
    }
}

/// `%20` and friends, as a browser would read them in a path.
fn percent_decoded(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
            if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A path as the repository names it.
fn shown(path: &Path) -> String {
    path.strip_prefix(repo())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Why a relative link from `page` (relative to the repository) does not resolve, if it
/// does not.
fn broken(page: &Path, dest: &str) -> Option<String> {
    if dest.is_empty() {
        return Some("empty link".into());
    }
    let (path, fragment) = match dest.split_once('#') {
        Some((p, f)) => (p, Some(f)),
        None => (dest, None),
    };
    let target = if path.is_empty() {
        repo().join(page)
    } else {
        let path = percent_decoded(path);
        if path.starts_with('/') {
            return Some("a path from the site's root: write it relative to the page".into());
        }
        repo().join(page.parent().unwrap()).join(path)
    };
    if !target.exists() {
        return Some(format!("no such file or folder: {}", shown(&target)));
    }
    let fragment = fragment?;
    if target.extension() != Some(OsStr::new("md")) {
        // Anchors into other files (source lines, say) are the host's business.
        return None;
    }
    let text = fs::read_to_string(&target).unwrap();
    let known = anchors(&text);
    if known.iter().any(|a| a == fragment) {
        None
    } else {
        Some(format!(
            "no heading with anchor #{fragment} in {}; its anchors: {}",
            shown(&target),
            known.join(", ")
        ))
    }
}

/// The code of a page, line by line: whole lines of fenced blocks, and inline code spans.
fn code_segments(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line, fenced) in lines_by_fence(text) {
        if fenced {
            out.push((n, line.to_owned()));
        } else {
            let mut rest = line;
            while let Some(open) = rest.find('`') {
                let run = rest[open..].chars().take_while(|c| *c == '`').count();
                let fence = &rest[open..open + run];
                let body = &rest[open + run..];
                let Some(close) = body.find(fence) else {
                    break;
                };
                out.push((n, body[..close].trim().to_owned()));
                rest = &body[close + run..];
            }
        }
    }
    out
}

/// `schedlab SUBCOMMAND ARGS...` in a piece of code: the subcommand, the flags written after
/// it, up to the end of the command (a shell pipe, `;`, `&`, a redirection, a comment), and
/// whether the code starts with it (`$ ` aside), so it can only be a command. Output lines such
/// as `schedlab run: error: ...` name a command but no flags.
fn commands_in(code: &str) -> Vec<(String, Vec<String>, bool)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("schedlab ") {
        let start = from + at;
        from = start + "schedlab ".len();
        let before = code[..start].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || "_-:.".contains(c)) {
            continue;
        }
        let mut words = code[from..].split_whitespace();
        let Some(sub) = words.next() else {
            continue;
        };
        let output_line = sub.ends_with(':');
        let sub = sub.trim_end_matches(':');
        let is_word = sub.starts_with(|c: char| c.is_ascii_lowercase())
            && sub.chars().all(|c| c.is_ascii_lowercase() || c == '-');
        if !is_word {
            continue;
        }
        let mut flags = Vec::new();
        let mut depth = 0i32;
        for word in words.take_while(|_| !output_line) {
            let ends_command = ["|", "||", "&", "&&", ";"].contains(&word)
                || word.starts_with('>')
                || word.starts_with('#');
            if ends_command && depth <= 0 {
                break;
            }
            depth += word.matches('[').count() as i32 - word.matches(']').count() as i32;
            for piece in word.split('|') {
                let flag = piece
                    .trim_start_matches('[')
                    .trim_end_matches(['[', ']', '.', ',', ')', ';'])
                    .split('=')
                    .next()
                    .unwrap();
                let name = flag.trim_start_matches('-');
                let dashes = flag.len() - name.len();
                if (1..=2).contains(&dashes) && name.starts_with(|c: char| c.is_ascii_alphabetic())
                {
                    flags.push(flag.to_owned());
                }
            }
        }
        let leading = code.trim_start().trim_start_matches("$ ").len() == code[start..].len();
        out.push((sub.to_owned(), flags, leading));
    }
    out
}

/// `schedlab ARGS`'s standard output (help text).
fn schedlab_help(args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(args)
        .output()
        .expect("cannot run schedlab");
    assert!(out.status.success(), "schedlab {args:?} failed: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The subcommands `schedlab --help` lists.
fn subcommands() -> Vec<String> {
    schedlab_help(&["--help"])
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

/// Whether `flag` appears in `help` as a word of its own (`-g,`, `--pipe `, `` `-pipe` ``).
fn names_flag(help: &str, flag: &str) -> bool {
    help.match_indices(flag).any(|(i, _)| {
        let before = help[..i].chars().next_back();
        let after = help[i + flag.len()..].chars().next();
        let part_of_word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '-');
        !part_of_word(before) && !part_of_word(after)
    })
}

#[test]
fn every_command_and_flag_named_in_code_exists() {
    let known = subcommands();
    assert!(known.iter().any(|s| s == "run"), "no commands in {known:?}");
    let mut helps: HashMap<String, String> = HashMap::new();
    let mut failures = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = fs::read_to_string(repo().join(&page)).unwrap();
        for (line, code) in code_segments(&text) {
            for (sub, flags, leading) in commands_in(&code) {
                let at = format!("{}:{line}: `{code}`", page.display());
                if !known.contains(&sub) {
                    // Mid-line, `schedlab median` is a table's column, not a command.
                    if leading {
                        failures.push(format!("{at}: no command `schedlab {sub}`"));
                    }
                    continue;
                }
                let help = helps
                    .entry(sub.clone())
                    .or_insert_with(|| schedlab_help(&[&sub, "--help"]));
                for flag in flags {
                    checked += 1;
                    if !names_flag(help, &flag) {
                        failures.push(format!("{at}: `schedlab {sub} --help` names no {flag}"));
                    }
                }
            }
        }
    }
    assert_none(&failures, "command(s) or flag(s) that do not exist");
    assert!(checked >= 30, "only {checked} flags found");
}

#[test]
fn commands_are_read_as_a_shell_would() {
    assert_eq!(
        commands_in("schedlab hackbench [-p|--pipe] [-T|--threads | -P|--process] [GROUPS]"),
        [(
            "hackbench".to_owned(),
            ["-p", "--pipe", "-T", "--threads", "-P", "--process"]
                .map(String::from)
                .to_vec(),
            true
        )]
    );
    assert_eq!(
        commands_in("schedlab chat-client 127.0.0.1 30 1000 9999 | grep -v Average"),
        [("chat-client".to_owned(), vec![], true)]
    );
    assert_eq!(
        commands_in("target/release/schedlab run x.toml --format=csv >/dev/null & pid=$!"),
        [("run".to_owned(), vec!["--format".to_owned()], false)]
    );
    assert_eq!(
        commands_in("$ schedlab run: error: bad.toml:1:15: interval_ms --not-a-flag"),
        [("run".to_owned(), vec![], true)]
    );
    assert!(commands_in("schedlab-nil, schedlab's, `schedlab`, schedlab_x -y").is_empty());
    assert_eq!(
        commands_in("size  C median  schedlab median  schedlab/C"),
        [("median".to_owned(), vec![], false)]
    );
    assert_eq!(
        code_segments("a `schedlab run -o F` b ``x ` y``\n```\nschedlab cleanup\n```\n"),
        [
            (1, "schedlab run -o F".to_owned()),
            (1, "x ` y".to_owned()),
            (3, "schedlab cleanup".to_owned())
        ]
    );
    assert!(names_flag("  -g, --groups <GROUPS>", "-g"));
    assert!(names_flag("(the original's `-pipe`)", "-pipe"));
    assert!(!names_flag("  --pipe-size", "--pipe"));
}

#[test]
fn every_relative_link_resolves() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = fs::read_to_string(repo().join(&page)).unwrap();
        for (line, dest) in links(&text) {
            if is_absolute_url(&dest) {
                continue;
            }
            checked += 1;
            if let Some(why) = broken(&page, &dest) {
                failures.push(format!("{}:{line}: ({dest}) {why}", page.display()));
            }
        }
    }
    assert_none(&failures, "broken link(s)");
    // The README links to each part of docs/: far fewer found means the parser broke.
    assert!(checked >= 20, "only {checked} relative links found");
}

#[test]
fn the_readme_and_docs_are_found() {
    let pages = pages();
    for expected in ["README.md", "docs/workloads.md", "docs/results-schema.md"] {
        assert!(
            pages.iter().any(|p| p == Path::new(expected)),
            "{expected} not among {pages:?}"
        );
    }
}

#[test]
fn links_in_code_are_not_links() {
    let text = "see [a](a.md) and `[b](b.md)` and ``[c](`c`)``\n\
                ```\n[d](d.md)\n```\n\
                [e]: e.md \"title\"\n\
                ![f](img/f.png) [g](<g h.md>) [i](i.md#frag \"title\") [j](j_(k).md)\n";
    let found: Vec<String> = links(text).into_iter().map(|(_, d)| d).collect();
    assert_eq!(
        found,
        [
            "a.md",
            "e.md",
            "img/f.png",
            "g h.md",
            "i.md#frag",
            "j_(k).md"
        ]
    );
}

#[test]
fn anchors_are_githubs() {
    let text = "# Title\n## Scale: 200 chat rooms, 16,000 threads\n## `schedlab run`\n\
                ### fork-load\n## Why placement changes the answer\n## Title\n\
                ```\n# not a heading\n```\n#not-a-heading-either\n\
                ## [docs/x.md](docs/x.md) and more ##\n## Fair share, in one paragraph\n";
    assert_eq!(
        anchors(text),
        [
            "title",
            "scale-200-chat-rooms-16000-threads",
            "schedlab-run",
            "fork-load",
            "why-placement-changes-the-answer",
            "title-1",
            "docsxmd-and-more",
            "fair-share-in-one-paragraph",
        ]
    );
}

#[test]
fn a_broken_link_is_named() {
    let page = Path::new("README.md");
    assert!(broken(page, "docs/workloads.md").is_none());
    assert!(broken(page, "docs/").is_none());
    assert!(broken(page, "docs/no-such-page.md")
        .unwrap()
        .contains("no such file"));
    assert!(broken(page, "#no-such-heading")
        .unwrap()
        .contains("no heading with anchor #no-such-heading"));
    assert!(broken(Path::new("docs/testing.md"), "../README.md#commands").is_none());
    assert!(broken(page, "/docs/workloads.md").is_some());
    assert!(is_absolute_url("https://insta.rs"));
    assert!(is_absolute_url("mailto:someone@example.org"));
    assert!(!is_absolute_url("docs/workloads.md#contest"));
    assert_eq!(percent_decoded("a%20b.md"), "a b.md");
}
