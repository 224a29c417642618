//! Colours and styles, in one place. One colour per workload, used in every panel; verdict
//! colours for the fairness ratio. With NO_COLOR set (no-color.org), no colour at all: the
//! verdict is also spelled out, and selection uses reverse video.

use ratatui::style::{Color, Modifier, Style};

use crate::model::WorkloadFrame;

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
    pub fn from_env() -> Self {
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

    pub fn verdict(&self, v: Verdict) -> Style {
        match v {
            Verdict::Starved => self.fg(Color::Red).add_modifier(Modifier::BOLD),
            Verdict::Short => self.fg(Color::Yellow),
            Verdict::Fair => self.fg(Color::Green),
            Verdict::Ahead => self.fg(Color::LightBlue),
            Verdict::Idle => self.dim(),
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

    pub fn dim(&self) -> Style {
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

    pub fn border(&self) -> Style {
        self.fg(Color::DarkGray)
    }

    pub fn popup(&self) -> Style {
        if self.colour {
            Style::new().fg(Color::White).bg(Color::Black)
        } else {
            Style::new()
        }
    }

    pub fn field_focus(&self) -> Style {
        if self.colour {
            Style::new().fg(Color::Black).bg(Color::LightCyan)
        } else {
            Style::new().add_modifier(Modifier::REVERSED)
        }
    }
}

/// What a fairness ratio means, in one word and one colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Due too little CPU for a ratio to mean anything.
    Idle,
    /// Received under 60% of its fair share: fork_load in the 2002 contest thread (8% of 20%
    /// due = 0.4).
    Starved,
    /// 60% to 90%.
    Short,
    /// 90% to 115%.
    Fair,
    /// More than 115% of its due: someone else pays for it.
    Ahead,
}

/// A fair share below this (CPUs) makes the ratio noise.
const MIN_FAIR: f64 = 0.02;

impl Verdict {
    pub fn of(w: &WorkloadFrame) -> Verdict {
        Self::from_shares(w.cpu_received, w.cpu_fair)
    }

    pub fn from_shares(received: f64, fair: f64) -> Verdict {
        if fair.is_nan() || fair < MIN_FAIR {
            return Verdict::Idle;
        }
        let r = received / fair;
        if r < 0.6 {
            Verdict::Starved
        } else if r < 0.9 {
            Verdict::Short
        } else if r <= 1.15 {
            Verdict::Fair
        } else {
            Verdict::Ahead
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            Verdict::Idle => "",
            Verdict::Starved => "STARVED",
            Verdict::Short => "short",
            Verdict::Fair => "fair",
            Verdict::Ahead => "ahead",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeds_fork_load_is_starved() {
        // 8% received where 20% was due.
        assert_eq!(Verdict::from_shares(0.08, 0.20), Verdict::Starved);
        assert_eq!(Verdict::from_shares(0.40, 0.40), Verdict::Fair);
        assert_eq!(Verdict::from_shares(0.30, 0.40), Verdict::Short);
        assert_eq!(Verdict::from_shares(0.60, 0.40), Verdict::Ahead);
        assert_eq!(Verdict::from_shares(0.0, 0.0), Verdict::Idle);
        assert_eq!(Verdict::from_shares(0.1, f64::NAN), Verdict::Idle);
    }
}
