//! Keys and mouse to actions. The help screen is drawn from [`KEYS`], so it lists every key
//! this file handles and cannot drift from it.

use crossterm::event::{
    Event as TermEvent, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent,
    MouseEventKind,
};

use super::app::{App, Mode};
use super::form::Outcome;
use super::picker::{Template, TEMPLATES};
use crate::engine::Playback;

/// Every key of the main screen and what it does, grouped as the help screen shows them.
/// One row a key, as a table reads (rustfmt would fold the longer rows over four lines).
#[rustfmt::skip]
pub(crate) const KEYS: &[(&str, &str, &str)] = &[
    ("View", "↑ ↓  k j  ← → h l", "select a workload (or click a row)"),
    ("View", "space  f", "freeze / unfreeze the screen"),
    ("View", "+  -", "longer / shorter sampling interval"),
    ("View", "z  Z   <  >", "zoom the time window in / out"),
    ("View", "L  c  x", "latency panel, per-CPU view, rest groups: show or hide"),
    ("View", "?  m", "this help / the last messages, in full"),
    ("Workloads", "a  X", "add from the picker / attach the rest's busiest group"),
    ("Workloads", "s", "stop it, or start it again"),
    ("Workloads", "r", "restart it"),
    ("Workloads", "d d  K", "remove it (twice) / kill attached processes (asks)"),
    ("Workloads", "v  E", "its stderr if it failed / the kernel's events, 3 s (root)"),
    ("Workloads", "o", "loop a finite run: restart when it finishes"),
    ("Knobs", "e  Enter", "edit nice, policy, CPUs, placement, weight"),
    ("Knobs", "[  ]", "nice -1 / +1 (also F7 / F8)"),
    ("Knobs", "p", "policy: other → batch → idle"),
    ("Knobs", "g", "placement: shared → own session → own cgroup (restarts)"),
    ("Knobs", "w  W", "halve / double its cgroup weight"),
    ("Quit", "q  Ctrl-C", "quit: stops every workload"),
    // Replay only: the help shows this group instead of Workloads and Knobs in a replay.
    ("Replay", "space", "pause / resume playback (f freezes)"),
    ("Replay", ",  .", "one interval back / forward (pauses)"),
    ("Replay", "PgUp  PgDn", "a tenth of the recording back / forward"),
];

/// The groups of [`KEYS`] that only a replay has.
pub(crate) const REPLAY_GROUP: &str = "Replay";

/// The keys the help lists: a replay cannot change workloads, a live run cannot seek.
pub fn keys_for(
    replay: bool,
) -> impl Iterator<Item = &'static (&'static str, &'static str, &'static str)> {
    KEYS.iter().filter(move |(g, _, _)| {
        if replay {
            !matches!(*g, "Workloads" | "Knobs")
        } else {
            *g != REPLAY_GROUP
        }
    })
}

/// Handles one terminal event.
pub fn handle(app: &mut App, ev: &TermEvent) {
    match ev {
        TermEvent::Key(key) if key.kind != KeyEventKind::Release => on_key(app, *key),
        TermEvent::Mouse(m) => on_mouse(app, *m),
        _ => {}
    }
}

fn is_ctrl_c(key: &KeyEvent) -> bool {
    key.modifiers.contains(KeyModifiers::CONTROL) && matches!(key.code, KeyCode::Char('c' | 'C'))
}

pub fn on_key(app: &mut App, key: KeyEvent) {
    if is_ctrl_c(&key) {
        app.quit = true;
        return;
    }
    let pending_remove = app.pending_remove.take();
    match std::mem::take(&mut app.mode) {
        Mode::Normal => normal_key(app, key, pending_remove),
        // Any key closes the help, a failed workload's stderr and the messages.
        Mode::Help | Mode::Stderr(_) | Mode::Messages | Mode::Evidence(_) => {}
        Mode::ConfirmKill(id) => app.confirm_kill(id, key.code == KeyCode::Char('y')),
        Mode::Picker(i) => {
            let n = TEMPLATES.len();
            app.mode = match key.code {
                KeyCode::Esc | KeyCode::Char('q') => Mode::Normal,
                KeyCode::Up | KeyCode::Char('k') => Mode::Picker((i + n - 1) % n),
                KeyCode::Down | KeyCode::Char('j') | KeyCode::Tab => Mode::Picker((i + 1) % n),
                KeyCode::Enter | KeyCode::Right | KeyCode::Char('l') => {
                    Mode::NewWorkload(TEMPLATES[i], TEMPLATES[i].form(app.cpus))
                }
                KeyCode::Char(c) => match Template::of_key(c) {
                    Some(t) => Mode::NewWorkload(t, t.form(app.cpus)),
                    None => Mode::Picker(i),
                },
                _ => Mode::Picker(i),
            };
        }
        Mode::NewWorkload(t, mut form) => match form.handle_key(key) {
            Outcome::Editing => app.mode = Mode::NewWorkload(t, form),
            Outcome::Cancel => {
                app.mode = Mode::Picker(TEMPLATES.iter().position(|x| *x == t).unwrap_or(0))
            }
            Outcome::Submit => app.submit_new(t, form),
        },
        Mode::EditKnobs(id, mut form) => match form.handle_key(key) {
            Outcome::Editing => app.mode = Mode::EditKnobs(id, form),
            Outcome::Cancel => app.mode = Mode::Normal,
            Outcome::Submit => app.submit_knobs(id, form),
        },
    }
}

fn normal_key(app: &mut App, key: KeyEvent, pending_remove: Option<u32>) {
    match key.code {
        KeyCode::Char('q') => app.quit = true,
        KeyCode::Esc => app.message = None,
        KeyCode::Char('?') | KeyCode::F(1) => app.mode = Mode::Help,
        KeyCode::Up | KeyCode::Char('k') | KeyCode::Left | KeyCode::Char('h') => app.select_prev(),
        KeyCode::Down | KeyCode::Char('j') | KeyCode::Right | KeyCode::Char('l') => {
            app.select_next()
        }
        KeyCode::Home => app.select(0),
        KeyCode::End => app.select(usize::MAX),
        KeyCode::Char(' ') => app.pause_or_freeze(),
        KeyCode::Char('f') => app.toggle_freeze(),
        KeyCode::Char(',') => app.playback(Playback::Step(-1)),
        KeyCode::Char('.') => app.playback(Playback::Step(1)),
        KeyCode::PageUp => app.playback(Playback::SeekFraction(-0.1)),
        KeyCode::PageDown => app.playback(Playback::SeekFraction(0.1)),
        KeyCode::Char('+') | KeyCode::Char('=') => app.step_interval(true),
        KeyCode::Char('-') | KeyCode::Char('_') => app.step_interval(false),
        KeyCode::Char('z') | KeyCode::Char('<') => app.zoom(true),
        KeyCode::Char('Z') | KeyCode::Char('>') => app.zoom(false),
        KeyCode::Char('L') => app.toggle_latency(),
        KeyCode::Char('c') => app.toggle_cpu_view(),
        KeyCode::Char('x') => app.rest_expanded = !app.rest_expanded,
        KeyCode::Char('X') => app.promote_rest(),
        KeyCode::Char('a') | KeyCode::Insert => app.open_picker(),
        KeyCode::Char('s') => app.toggle_run(),
        KeyCode::Char('r') => app.restart(),
        KeyCode::Char('d') | KeyCode::Delete => {
            app.pending_remove = pending_remove;
            app.remove();
        }
        KeyCode::Char('K') => app.ask_kill(),
        KeyCode::Char('o') => app.toggle_loop(),
        KeyCode::Char('v') => app.open_stderr(),
        KeyCode::Char('E') => app.record_evidence(),
        KeyCode::Char('m') => app.open_messages(),
        KeyCode::Char('e') | KeyCode::Enter => app.open_knob_editor(),
        KeyCode::Char('[') | KeyCode::F(7) => app.nice_step(-1),
        KeyCode::Char(']') | KeyCode::F(8) => app.nice_step(1),
        KeyCode::Char('p') => app.cycle_policy(),
        KeyCode::Char('g') => app.cycle_placement(),
        KeyCode::Char('w') => app.weight_step(false),
        KeyCode::Char('W') => app.weight_step(true),
        _ => {}
    }
}

fn on_mouse(app: &mut App, m: MouseEvent) {
    if app.mode != Mode::Normal {
        return;
    }
    match m.kind {
        MouseEventKind::Down(MouseButton::Left) => {
            let g = app.table_geometry.get();
            let r = g.rows;
            if m.column >= r.x && m.column < r.x + r.width && m.row >= r.y && m.row < r.y + r.height
            {
                let index = g.offset + usize::from(m.row - r.y);
                if index < app.workloads.len() {
                    app.select(index);
                }
            }
        }
        MouseEventKind::ScrollDown => app.select_next(),
        MouseEventKind::ScrollUp => app.select_prev(),
        _ => {}
    }
}

/// Reads the terminal's events on a thread of its own and sends each as `wrap(event)`, or the
/// reason it stopped as `gone(reason)`: the UI thread then waits on one channel for the
/// terminal and its lab alike.
pub(crate) fn spawn_reader<M: Send + 'static>(
    tx: std::sync::mpsc::Sender<M>,
    wrap: fn(crossterm::event::Event) -> M,
    gone: fn(String) -> M,
) -> anyhow::Result<()> {
    use anyhow::Context;
    std::thread::Builder::new()
        .name("schedlab-input".into())
        .spawn(move || loop {
            match crossterm::event::read() {
                Ok(ev) => {
                    if tx.send(wrap(ev)).is_err() {
                        break;
                    }
                }
                Err(e) => {
                    let _ = tx.send(gone(e.to_string()));
                    break;
                }
            }
        })
        .context("starting the input thread")?;
    Ok(())
}
