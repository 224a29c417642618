//! A drawn screen as text, for the dashboard tests that draw with ratatui's TestBackend.

use ratatui::backend::TestBackend;
use ratatui::Terminal;

/// The screen's symbols, a line per row.
pub fn text_of(term: &Terminal<TestBackend>) -> String {
    let buf = term.backend().buffer();
    let mut s = String::new();
    for y in 0..buf.area.height {
        for x in 0..buf.area.width {
            s.push_str(buf[(x, y)].symbol());
        }
        s.push('\n');
    }
    s
}
