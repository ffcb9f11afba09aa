//! One declared option ([`Field`]): its name, kind with range and default, label, hint and
//! description, how it is read from text or JSON and how it is written to the thing it belongs
//! to (a job's [`crate::spec::JobSpec`], an event's settings), and its JSON Schema. The lists of
//! fields are their owners': `spec::FIELDS` for a job, `event_settings::EVENT_FIELDS`.

use crate::error_code::ErrorCode;

/// What kind of value an option takes, with its range and default.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// A whole number from `min` to `max`. With a `limit`, the operator's limit replaces `max`
    /// at the service's doors (`max` is its default); on one machine (`tessera render`) the
    /// limit does not apply.
    Whole {
        min: u32,
        max: u32,
        default: Option<u32>,
        limit: Option<Limit>,
    },
    /// `true` or `false`; absent is `default`.
    Switch { default: bool },
    /// Text of a form its parser checks; `pattern` is the regular expression the API document
    /// gives for it, and `choices` the values the form offers (value, label), if it offers a
    /// list. Sent empty, it is absent unless `required` (then its parser refuses it);
    /// `max_length` bounds it in the API document.
    Text {
        pattern: &'static str,
        default: Option<&'static str>,
        example: Option<&'static str>,
        choices: &'static [(&'static str, &'static str)],
        required: bool,
        max_length: Option<usize>,
    },
    /// One of a few names (value, label).
    Choice {
        choices: &'static [(&'static str, &'static str)],
        default: &'static str,
    },
}

/// An operator's limit that bounds a whole-number option at the service's doors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// `limits.max_cells`.
    Cells,
    /// `limits.max_repeat_radius`.
    RepeatRadius,
}

/// Where the home form offers an option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Among the first choices (library, size), laid out by hand with the declaration's words.
    Main,
    /// Under "More options", an input made from the declaration alone.
    More,
    /// Not offered (the operator's default serves).
    Nowhere,
}

/// An option's value, as read from a spec or parsed from a field's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Whole(Option<u32>),
    Switch(bool),
    Text(Option<String>),
}

impl Value {
    pub(super) fn text(text: impl ToString) -> Value {
        Value::Text(Some(text.to_string()))
    }

    /// A whole number's value (`None`: absent, or not a whole number).
    pub fn as_whole(&self) -> Option<u32> {
        match self {
            Value::Whole(v) => *v,
            _ => None,
        }
    }

    /// A text's value (`None`: absent, or not a text).
    pub fn into_text(self) -> Option<String> {
        match self {
            Value::Text(t) => t,
            _ => None,
        }
    }
}

impl Kind {
    /// A switch that is off unless given.
    pub const SWITCH: Kind = Kind::Switch { default: false };

    /// A whole number from `min` to `max`, `default` when not given.
    pub const fn whole(min: u32, max: u32, default: Option<u32>) -> Kind {
        Kind::Whole {
            min,
            max,
            default,
            limit: None,
        }
    }

    /// This whole number with the operator's `limit` in place of its `max` at the doors.
    pub const fn limited_by(self, limit: Limit) -> Kind {
        match self {
            Kind::Whole {
                min, max, default, ..
            } => Kind::Whole {
                min,
                max,
                default,
                limit: Some(limit),
            },
            other => other,
        }
    }
}

/// One option of a job ([`crate::spec::JobSpec`]) or of another thing declared the same way (an event's
/// settings).
#[derive(Debug)]
pub struct Field<T: 'static> {
    /// The form's and the API's name.
    pub name: &'static str,
    /// The `tessera render` flag that sets it, or why a render on one machine has none.
    pub flag: Result<&'static str, &'static str>,
    pub kind: Kind,
    /// What the form and the job page call it.
    pub label: &'static str,
    /// A sentence under the form's input and in `tessera render --help`.
    pub hint: &'static str,
    /// What the API document says of it.
    pub description: &'static str,
    /// The unit after a number (`px`, `%`), or empty.
    pub unit: &'static str,
    /// What an empty input means, as the form shows it (`no limit`, `auto`), or empty.
    pub placeholder: &'static str,
    pub place: Place,
    /// A value it takes, for a submission made of every field at once (tests, examples).
    pub sample: &'static str,
    /// The value in `spec` (`Whole(None)`, `Text(None)`: not given).
    pub get: fn(&T) -> Value,
    /// Sets the value in `spec` (parsed and in range); cross-field rules come later.
    pub set: fn(&mut T, Value) -> Result<(), SpecError>,
    /// How the value reads on the job page, or `None` to leave it out there (a default that
    /// says nothing, or a line the page writes itself).
    pub words: fn(&T) -> Option<String>,
}

impl<T> Clone for Field<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Field<T> {}

impl<T> Field<T> {
    /// The default a whole-number option takes when not given (`None`: absent means none, or
    /// the operator's).
    pub fn default_whole(&self) -> Option<u32> {
        match self.kind {
            Kind::Whole { default, .. } => default,
            _ => None,
        }
    }

    /// The value a whole number or a switch takes when not given, as [`Field::set`] takes it.
    pub fn default_value(&self) -> Option<Value> {
        match self.kind {
            Kind::Whole {
                default: Some(d), ..
            } => Some(Value::Whole(Some(d))),
            Kind::Switch { default } => Some(Value::Switch(default)),
            _ => None,
        }
    }

    /// The value the form's input starts at, as text (empty: none).
    pub fn default_text(&self) -> String {
        match self.kind {
            Kind::Whole { default, .. } => default.map(|d| d.to_string()).unwrap_or_default(),
            Kind::Switch { default } => default.to_string(),
            Kind::Text { default, .. } => default.unwrap_or_default().into(),
            Kind::Choice { default, .. } => default.into(),
        }
    }

    /// Reads the field's text as its kind: 400 when it is not one, or (for a whole number
    /// without an operator's limit) out of range. An empty text is absent for the options
    /// that say what empty means.
    pub fn parse(&self, text: &str) -> Result<Value, SpecError> {
        let name = self.name;
        match self.kind {
            Kind::Whole { limit, .. } => {
                let value = text.parse::<u32>().map_err(|_| {
                    SpecError::invalid(
                        ErrorCode::InvalidParameter,
                        format!("{name} must be a whole number, not {text:?}"),
                    )
                })?;
                if limit.is_none() {
                    self.check_range(value, None)?;
                }
                Ok(Value::Whole(Some(value)))
            }
            Kind::Switch { .. } => match text {
                "true" => Ok(Value::Switch(true)),
                "false" => Ok(Value::Switch(false)),
                other => Err(SpecError::invalid(
                    ErrorCode::InvalidParameter,
                    format!("{name} must be true or false, not {other:?}"),
                )),
            },
            Kind::Text { required: true, .. } => Ok(Value::text(text)),
            Kind::Text { .. } | Kind::Choice { .. } => Ok(Value::Text(
                Some(text.trim())
                    .filter(|t| !t.is_empty())
                    .map(|_| text.to_string()),
            )),
        }
    }

    /// A parsed value against the option's own range (the operator's limits aside).
    pub fn check(&self, value: &Value) -> Result<(), SpecError> {
        match value {
            Value::Whole(Some(v)) => self.check_range(*v, None),
            _ => Ok(()),
        }
    }

    /// Reads a JSON value as the option's kind (`None`: null, not given): 400 when it is not
    /// one. Its range is [`Field::check`]'s.
    pub fn from_json(&self, json: &serde_json::Value) -> Result<Option<Value>, SpecError> {
        use serde_json::Value as Json;
        let name = self.name;
        let wrong = |what: &str| {
            SpecError::invalid(
                ErrorCode::InvalidParameter,
                format!("{name} must be {what}, not {json}"),
            )
        };
        match (self.kind, json) {
            (_, Json::Null) => Ok(None),
            (Kind::Whole { .. }, Json::Number(n)) => n
                .as_f64()
                .filter(|f| f.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(f))
                .map(|f| Some(Value::Whole(Some(f as u32))))
                .ok_or_else(|| wrong("a whole number")),
            (Kind::Whole { .. }, _) => Err(wrong("a whole number")),
            (Kind::Switch { .. }, Json::Bool(b)) => Ok(Some(Value::Switch(*b))),
            (Kind::Switch { .. }, _) => Err(wrong("true or false")),
            (Kind::Text { .. } | Kind::Choice { .. }, Json::String(text)) => {
                self.parse(text).map(Some)
            }
            (Kind::Text { .. } | Kind::Choice { .. }, _) => Err(wrong("text")),
        }
    }

    /// The JSON Schema of the option in a JSON body (null: not given).
    pub fn json_schema(&self) -> serde_json::Value {
        let mut schema = field_schema(self);
        if let Some(kind) = schema["type"].as_str().map(str::to_string) {
            schema["type"] = serde_json::json!([kind, "null"]);
        }
        schema
    }

    /// A whole number against the option's range (`limit_value`: the operator's limit's value,
    /// for an option it bounds, if known; `None`: its lower bound alone for those).
    pub(super) fn check_range(
        &self,
        value: u32,
        limit_value: Option<u32>,
    ) -> Result<(), SpecError> {
        let Kind::Whole {
            min, max, limit, ..
        } = self.kind
        else {
            return Ok(());
        };
        let max = match (limit, limit_value) {
            (Some(_), Some(value)) => value,
            (Some(_), None) => u32::MAX,
            (None, _) => max,
        };
        if (min..=max).contains(&value) {
            return Ok(());
        }
        let range = if max == u32::MAX {
            format!("at least {min}")
        } else {
            format!("{min} to {max}")
        };
        Err(SpecError::invalid(
            ErrorCode::OutOfRange,
            format!("{} must be {range}, not {value}", self.name),
        ))
    }
}

/// Why a job specification is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// A field is malformed, out of range or given with one it excludes (HTTP 400).
    #[error("{message}")]
    Invalid { code: ErrorCode, message: String },
    /// Well formed, but unusable with this photo, this library or these limits (HTTP 422).
    #[error("{message}")]
    Unusable { code: ErrorCode, message: String },
}

impl SpecError {
    pub(crate) fn invalid(code: ErrorCode, message: impl Into<String>) -> Self {
        SpecError::Invalid {
            code,
            message: message.into(),
        }
    }

    pub(crate) fn unusable(code: ErrorCode, message: impl Into<String>) -> Self {
        SpecError::Unusable {
            code,
            message: message.into(),
        }
    }

    /// The field the error is about (its code's).
    pub fn field(&self) -> Option<&'static str> {
        self.code().field()
    }

    /// The stable error code clients see.
    pub fn code(&self) -> ErrorCode {
        match self {
            SpecError::Invalid { code, .. } | SpecError::Unusable { code, .. } => *code,
        }
    }
}

/// The JSON Schema of one option in the API document (as multipart text: numbers and booleans
/// as their words).
pub fn field_schema<T>(field: &Field<T>) -> serde_json::Value {
    use serde_json::json;
    let mut schema = match field.kind {
        Kind::Whole { min, max, .. } => {
            // Past int32's range (an option without an upper bound takes any u32), int64: a
            // client holds int32 to 2^31 - 1, which would not say what the server takes.
            let format = if i32::try_from(max).is_ok() {
                "int32"
            } else {
                "int64"
            };
            json!({"type": "integer", "format": format, "minimum": min, "maximum": max})
        }
        Kind::Switch { default } => json!({"type": "boolean", "default": default}),
        Kind::Text { pattern, .. } => json!({"type": "string", "pattern": pattern}),
        Kind::Choice { choices, default } => json!({
            "type": "string",
            "enum": choices.iter().map(|(v, _)| *v).chain([""]).collect::<Vec<_>>(),
            "default": default,
        }),
    };
    schema["description"] = json!(field.description);
    if let Some(default) = field.default_whole() {
        schema["default"] = json!(default);
    }
    if let Kind::Text {
        default,
        example,
        max_length,
        ..
    } = field.kind
    {
        if let Some(d) = default {
            schema["default"] = json!(d);
        }
        if let Some(e) = example {
            schema["example"] = json!(e);
        }
        if let Some(n) = max_length {
            schema["maxLength"] = json!(n);
        }
    }
    schema
}

/// The JSON Schema of one option as the job's `params` give it (null: not given).
pub fn params_schema<T>(field: &Field<T>) -> serde_json::Value {
    use serde_json::json;
    let (kind, nullable) = match field.kind {
        Kind::Whole { .. } => ("integer", true),
        Kind::Switch { .. } => ("boolean", false),
        Kind::Text { .. } => ("string", true),
        Kind::Choice { .. } => ("string", false),
    };
    let mut schema = if nullable {
        json!({"type": [kind, "null"]})
    } else {
        json!({"type": kind})
    };
    schema["description"] = json!(field.label);
    if let Kind::Whole { min, max, .. } = field.kind {
        schema["minimum"] = json!(min);
        schema["maximum"] = json!(max);
    }
    schema
}
