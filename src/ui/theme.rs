//! Colours and styles, in one place. One colour per workload, used in every panel; verdict
//! colours for the fairness ratio. With NO_COLOR set (no-color.org), no colour at all: the
//! verdict is also spelled out, and selection uses reverse video.

use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::Marker;

/// Without colour, each workload's chart lines have a shape of their own, and the same shape
/// names it in legends and in the table: braille dots, full blocks, lower half blocks.
const SHAPES: [(Marker, &str); 3] = [
    (Marker::Braille, "⣿"),
    (Marker::Block, "█"),
    (Marker::Bar, "▄"),
];

/// Workload colours: distinct on dark and light terminals, none of them the verdict red.
const PALETTE: [Color; 8] = [
    Color::Cyan,
    Color::Yellow,
    Color::Magenta,
    Color::Green,
    Color::LightBlue,
    Color::LightRed,
    Color::White,
    Color::LightGreen,
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Theme {
    pub colour: bool,
}

impl Default for Theme {
    fn default() -> Self {
        Theme { colour: true }
    }
}

impl Theme {
    /// Colour unless NO_COLOR is set to a non-empty value.
    pub(crate) fn from_env() -> Self {
        Theme {
            colour: !matches!(std::env::var_os("NO_COLOR"), Some(v) if !v.is_empty()),
        }
    }

    fn fg(&self, c: Color) -> Style {
        if self.colour {
            Style::new().fg(c)
        } else {
            Style::new()
        }
    }

    /// The colour of workload number `slot` (its order of arrival), in every panel.
    pub fn workload(&self, slot: usize) -> Style {
        self.fg(PALETTE[slot % PALETTE.len()])
    }

    /// How workload `slot`'s chart lines are drawn: braille in its colour; without colour,
    /// in a shape of its own.
    pub fn marker(&self, slot: usize) -> Marker {
        if self.colour {
            Marker::Braille
        } else {
            SHAPES[slot % SHAPES.len()].0
        }
    }

    /// What names workload `slot` in a legend or its table row: ■ in its colour; without
    /// colour, the shape of its lines.
    pub fn mark(&self, slot: usize) -> &'static str {
        if self.colour {
            "■"
        } else {
            SHAPES[slot % SHAPES.len()].1
        }
    }

    pub fn verdict(&self, v: Verdict) -> Style {
        match v {
            Verdict::Starved => self.fg(Color::Red).add_modifier(Modifier::BOLD),
            Verdict::Short => self.fg(Color::Yellow),
            Verdict::Fair => self.fg(Color::Green),
            Verdict::Ahead => self.fg(Color::LightBlue),
            Verdict::None => self.dim(),
        }
    }

    pub fn title(&self) -> Style {
        Style::new().add_modifier(Modifier::BOLD)
    }

    pub fn header(&self) -> Style {
        self.fg(Color::Gray)
            .add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
    }

    pub fn selected(&self) -> Style {
        if self.colour {
            Style::new()
                .bg(Color::DarkGray)
                .add_modifier(Modifier::BOLD)
        } else {
            Style::new().add_modifier(Modifier::REVERSED)
        }
    }

    pub(crate) fn dim(&self) -> Style {
        if self.colour {
            Style::new().fg(Color::DarkGray)
        } else {
            Style::new().add_modifier(Modifier::DIM)
        }
    }

    pub fn key(&self) -> Style {
        self.fg(Color::LightCyan).add_modifier(Modifier::BOLD)
    }

    pub fn warn(&self) -> Style {
        self.fg(Color::Yellow).add_modifier(Modifier::BOLD)
    }

    pub fn error(&self) -> Style {
        self.fg(Color::LightRed).add_modifier(Modifier::BOLD)
    }

    pub fn frozen(&self) -> Style {
        if self.colour {
            Style::new()
                .fg(Color::Black)
                .bg(Color::LightBlue)
                .add_modifier(Modifier::BOLD)
        } else {
            Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD)
        }
    }

    pub(crate) fn border(&self) -> Style {
        self.fg(Color::DarkGray)
    }

    pub(crate) fn popup(&self) -> Style {
        if self.colour {
            Style::new().fg(Color::White).bg(Color::Black)
        } else {
            Style::new()
        }
    }

    pub(crate) fn field_focus(&self) -> Style {
        if self.colour {
            Style::new().fg(Color::Black).bg(Color::LightCyan)
        } else {
            Style::new().add_modifier(Modifier::REVERSED)
        }
    }
}

pub use crate::model::Verdict;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_2002_contest_fork_load_is_starved() {
        // 8% received where 20% was due.
        assert_eq!(Verdict::from_shares(0.08, 0.20), Verdict::Starved);
        assert_eq!(Verdict::from_shares(0.40, 0.40), Verdict::Fair);
        assert_eq!(Verdict::from_shares(0.30, 0.40), Verdict::Short);
        assert_eq!(Verdict::from_shares(0.60, 0.40), Verdict::Ahead);
        assert_eq!(Verdict::from_shares(0.0, 0.0), Verdict::None);
        assert_eq!(Verdict::from_shares(0.1, f64::NAN), Verdict::None);
    }
}
