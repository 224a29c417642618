//! A small form: labelled fields edited in place (text, a choice among words, a toggle).
//! Used by the picker for a new workload's parameters and by the knob editor.

use std::borrow::Cow;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Text(String),
    Choice {
        options: Vec<&'static str>,
        index: usize,
    },
    Toggle(bool),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// What the code looks it up by.
    pub key: &'static str,
    pub label: &'static str,
    pub value: Value,
    /// One line shown under the form while this field has the focus.
    pub hint: Cow<'static, str>,
}

impl Field {
    pub fn text(
        key: &'static str,
        label: &'static str,
        value: impl Into<String>,
        hint: impl Into<Cow<'static, str>>,
    ) -> Self {
        Field {
            key,
            label,
            value: Value::Text(value.into()),
            hint: hint.into(),
        }
    }

    pub(crate) fn choice(
        key: &'static str,
        label: &'static str,
        options: &[&'static str],
        selected: &str,
        hint: impl Into<Cow<'static, str>>,
    ) -> Self {
        Field {
            key,
            label,
            value: Value::Choice {
                options: options.to_vec(),
                index: options.iter().position(|o| *o == selected).unwrap_or(0),
            },
            hint: hint.into(),
        }
    }

    pub(crate) fn toggle(
        key: &'static str,
        label: &'static str,
        on: bool,
        hint: impl Into<Cow<'static, str>>,
    ) -> Self {
        Field {
            key,
            label,
            value: Value::Toggle(on),
            hint: hint.into(),
        }
    }

    /// The value as shown.
    pub fn display(&self) -> String {
        match &self.value {
            Value::Text(s) => s.clone(),
            Value::Choice { options, index } => format!("◂ {} ▸", options[*index]),
            Value::Toggle(on) => (if *on { "[x]" } else { "[ ]" }).into(),
        }
    }
}

/// What a key did to the form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Editing,
    Submit,
    Cancel,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Form {
    pub title: String,
    pub fields: Vec<Field>,
    pub focus: usize,
    /// Why the last submit was refused.
    pub error: Option<String>,
}

impl Form {
    pub fn new(title: impl Into<String>, fields: Vec<Field>) -> Self {
        Form {
            title: title.into(),
            fields,
            focus: 0,
            error: None,
        }
    }

    pub(crate) fn handle_key(&mut self, key: KeyEvent) -> Outcome {
        let n = self.fields.len();
        match key.code {
            KeyCode::Esc => return Outcome::Cancel,
            KeyCode::Enter => return Outcome::Submit,
            KeyCode::Tab | KeyCode::Down => self.focus = (self.focus + 1) % n.max(1),
            KeyCode::BackTab | KeyCode::Up => self.focus = (self.focus + n.max(1) - 1) % n.max(1),
            _ => {
                let Some(field) = self.fields.get_mut(self.focus) else {
                    return Outcome::Editing;
                };
                match (&mut field.value, key.code) {
                    (Value::Text(s), KeyCode::Char(c))
                        if !key
                            .modifiers
                            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) =>
                    {
                        s.push(c)
                    }
                    (Value::Text(s), KeyCode::Backspace) => {
                        s.pop();
                    }
                    (Value::Text(s), KeyCode::Char('u'))
                        if key.modifiers.contains(KeyModifiers::CONTROL) =>
                    {
                        s.clear()
                    }
                    (
                        Value::Choice { options, index },
                        KeyCode::Right | KeyCode::Char(' ') | KeyCode::Char('l'),
                    ) => *index = (*index + 1) % options.len(),
                    (Value::Choice { options, index }, KeyCode::Left | KeyCode::Char('h')) => {
                        *index = (*index + options.len() - 1) % options.len()
                    }
                    (Value::Toggle(on), KeyCode::Char(' ') | KeyCode::Left | KeyCode::Right) => {
                        *on = !*on
                    }
                    _ => {}
                }
            }
        }
        self.error = None;
        Outcome::Editing
    }

    fn field(&self, key: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.key == key)
    }

    /// A text field's content, trimmed ("" when absent).
    pub fn text(&self, key: &str) -> &str {
        match self.field(key).map(|f| &f.value) {
            Some(Value::Text(s)) => s.trim(),
            _ => "",
        }
    }

    pub(crate) fn choice(&self, key: &str) -> &'static str {
        match self.field(key).map(|f| &f.value) {
            Some(Value::Choice { options, index }) => options[*index],
            _ => "",
        }
    }

    pub(crate) fn toggle(&self, key: &str) -> bool {
        matches!(self.field(key).map(|f| &f.value), Some(Value::Toggle(true)))
    }

    /// A whole number in `range`, with a message naming the field when it is not one.
    pub fn number<T>(&self, key: &str, range: std::ops::RangeInclusive<T>) -> Result<T, String>
    where
        T: std::str::FromStr + PartialOrd + std::fmt::Display + Copy,
    {
        let label = self.field(key).map_or(key, |f| f.label);
        let text = self.text(key);
        match text.parse::<T>() {
            Ok(v) if range.contains(&v) => Ok(v),
            _ => Err(format!(
                "{label}: `{text}` is not a number from {} to {}",
                range.start(),
                range.end()
            )),
        }
    }

    pub(crate) fn focused_hint(&self) -> &str {
        self.fields.get(self.focus).map_or("", |f| &f.hint)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    #[test]
    fn typing_cycling_and_validation() {
        let mut f = Form::new(
            "t",
            vec![
                Field::text("n", "rooms", "10", ""),
                Field::choice("p", "policy", &["other", "batch"], "other", ""),
                Field::toggle("l", "loop", false, ""),
            ],
        );
        f.handle_key(key(KeyCode::Backspace));
        f.handle_key(key(KeyCode::Char('x')));
        assert_eq!(f.text("n"), "1x");
        assert!(f.number::<u32>("n", 1..=100).unwrap_err().contains("rooms"));
        f.handle_key(key(KeyCode::Tab));
        f.handle_key(key(KeyCode::Right));
        assert_eq!(f.choice("p"), "batch");
        f.handle_key(key(KeyCode::Down));
        f.handle_key(key(KeyCode::Char(' ')));
        assert!(f.toggle("l"));
        assert_eq!(f.handle_key(key(KeyCode::Enter)), Outcome::Submit);
        assert_eq!(f.handle_key(key(KeyCode::Esc)), Outcome::Cancel);
    }
}
