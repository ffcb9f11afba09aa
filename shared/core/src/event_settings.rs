//! An event's settings ([`EventSettings`]), each declared once in [`EVENT_FIELDS`] as a job's
//! options are ([`crate::spec::Field`]): its name, range, default, label and hint. The doors
//! read them from it: an event's creation (multipart text, [`EventSettings::from_fields`]), a
//! change of settings (JSON, [`EventSettings::change`]), the API document and the pages' inputs.

use serde::{Deserialize, Serialize};

use crate::error_code::ErrorCode;
use crate::spec::{Field, Kind, OptionValue, Place, SpecError, Value};

/// How an event takes photos.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct EventSettings {
    /// Photos wait for the owner's approval (true), or are in at once.
    pub approval: bool,
    /// Most photos one guest may send (0: no limit).
    pub per_guest: u32,
    /// Whether guests may still send photos.
    pub open: bool,
    /// A new mosaic is made on its own once the photos in it have changed and then stayed as
    /// they are this many seconds (0: only when the owner asks). Absent on events made before
    /// it existed: those make mosaics only when asked.
    #[serde(default)]
    pub auto_after_seconds: u32,
    /// Most photos the event holds, from every guest together: the cap no client id resets.
    /// Absent on events made before it existed: its declared default.
    #[serde(default = "default_max_photos")]
    pub max_photos: u32,
    /// Photos are screened as they are prepared: a blank frame, a near duplicate of a photo
    /// the event has, or a screenshot waits for the owner, with the reason. Absent on events
    /// made before it existed: on.
    #[serde(default = "screened")]
    pub screen: bool,
    /// What a mosaic does with more approved photos than its grid has cells. Absent on events
    /// made before it existed: the grid grows.
    #[serde(default)]
    pub overflow: Overflow,
    /// Each prepared photo is offered to the service's classifier on the `photoreview` queue
    /// and waits for its verdict. Absent on events made before it existed: off.
    #[serde(default)]
    pub review: bool,
    /// The owner's consent line, which a guest agrees to before sending (recorded with each
    /// photo); empty: none asked. Absent on events made before it existed: none.
    #[serde(default)]
    pub consent: String,
    /// Days the guests' photos are kept after the event stops taking them (0: they go at
    /// once); its mosaics keep their pixels only. Absent on events made before it existed:
    /// its declared default.
    #[serde(default = "default_retention_days")]
    pub retention_days: u32,
}

/// The longest consent line, in characters.
pub const MAX_CONSENT_CHARS: usize = 500;

impl OptionValue for String {
    fn to_value(&self) -> Value {
        Value::Text(Some(self.clone()).filter(|t| !t.is_empty()))
    }
    fn from_value(value: Value) -> Result<Self, SpecError> {
        let text = value.into_text().unwrap_or_default().trim().to_string();
        if text.chars().count() > MAX_CONSENT_CHARS
            || text.chars().any(|c| c.is_control() && c != '\n')
        {
            return Err(SpecError::invalid(
                ErrorCode::InvalidParameter,
                format!("consent must be at most {MAX_CONSENT_CHARS} characters of text"),
            ));
        }
        Ok(text)
    }
}

impl SettingWords for String {
    fn words(&self) -> String {
        if self.is_empty() {
            "none".into()
        } else {
            self.clone()
        }
    }
}

/// What an event's mosaic does with more approved photos than its grid has cells.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Overflow {
    /// The grid grows so that every photo has a cell, up to the service's output limit (past
    /// it, the best-fitting photos are in).
    #[default]
    Grow,
    /// The grid stays: the photos that fit the picture best are in.
    Best,
    /// The grid stays: each mosaic takes the next photos in turn, so that successive mosaics
    /// (and the wall) show every photo.
    Turns,
}

impl Overflow {
    const ALL: [Overflow; 3] = [Overflow::Grow, Overflow::Best, Overflow::Turns];

    pub fn as_str(self) -> &'static str {
        match self {
            Overflow::Grow => "grow",
            Overflow::Best => "best",
            Overflow::Turns => "turns",
        }
    }
}

impl OptionValue for Overflow {
    fn to_value(&self) -> Value {
        Value::Text(Some(self.as_str().into()))
    }
    fn from_value(value: Value) -> Result<Self, SpecError> {
        let Some(text) = value.into_text() else {
            return Ok(Overflow::default());
        };
        Overflow::ALL
            .into_iter()
            .find(|o| o.as_str() == text.trim())
            .ok_or_else(|| {
                SpecError::invalid(
                    ErrorCode::InvalidParameter,
                    format!("overflow must be grow, best or turns, not {text:?}"),
                )
            })
    }
}

impl SettingWords for Overflow {
    fn words(&self) -> String {
        match self {
            Overflow::Grow => "the grid grows to fit every photo",
            Overflow::Best => "the best-fitting photos",
            Overflow::Turns => "every photo in turn",
        }
        .into()
    }
}

fn screened() -> bool {
    true
}

fn default_retention_days() -> u32 {
    EventSettings::default().retention_days
}

fn default_max_photos() -> u32 {
    EventSettings::default().max_photos
}

/// A setting that `tessera render` has no flag for.
const NO_FLAG: Result<&str, &str> = Err("an event's setting, not a job's");

/// [`EVENT_FIELDS`] from each setting's declaration: its field of [`EventSettings`], kind,
/// unit and sample, then its label, hint and description.
macro_rules! event_fields {
    ($($name:ident: $kind:expr, $unit:literal, $sample:literal,
        $label:literal, $hint:literal, $description:literal;)*) => {
        /// Every setting of an event, in the order its pages give them.
        pub const EVENT_FIELDS: &[Field<EventSettings>] = &[$(Field {
            name: stringify!($name),
            flag: NO_FLAG,
            kind: $kind,
            label: $label,
            hint: $hint,
            description: $description,
            unit: $unit,
            placeholder: "",
            place: Place::Main,
            sample: $sample,
            get: |s| OptionValue::to_value(&s.$name),
            set: |s, v| {
                s.$name = OptionValue::from_value(v)?;
                Ok(())
            },
            words: |s| Some(SettingWords::words(&s.$name)),
        }),*];
    };
}

/// How a setting reads on the event's page.
trait SettingWords {
    fn words(&self) -> String;
}

impl SettingWords for bool {
    fn words(&self) -> String {
        if *self { "yes" } else { "no" }.into()
    }
}

impl SettingWords for u32 {
    fn words(&self) -> String {
        self.to_string()
    }
}

event_fields! {
    approval: Kind::Switch { default: true }, "", "true",
        "Approve each photo first",
        "Photos wait until you approve them; off: they are in at once.",
        "Photos wait for the owner's approval (true, the default), or are in at once. Photos already waiting keep waiting.";
    per_guest: Kind::whole(0, 10_000, Some(20)), "", "8",
        "Photos per guest",
        "Most photos one guest may send; 0: no limit. Photos already sent stay.",
        "Most photos one guest may send: 20 by default, 0 for no limit. Photos already sent stay.";
    max_photos: Kind::whole(1, 1_000_000, Some(5_000)), "", "5000",
        "Photos in all",
        "Most photos the event holds, from every guest together. Photos already sent stay.",
        "Most photos the event holds, from every guest together: 5,000 by default. Photos already sent stay.";
    auto_after_seconds: Kind::whole(0, 86_400, Some(300)), "s", "300",
        "New mosaic after a quiet spell (seconds)",
        "A new mosaic is made on its own once the photos have changed and then stayed as they are this long; 0: only when you ask.",
        "A new mosaic is made on its own once the photos in it have changed and then stayed as they are this many seconds (at most a day); 0 makes mosaics only when asked. 300 by default.";
    overflow: Kind::Choice {
        choices: &[
            ("grow", "Grow the grid to fit every photo"),
            ("best", "Keep the grid: the best-fitting photos"),
            ("turns", "Keep the grid: every photo in turn"),
        ],
        default: "grow",
    }, "", "turns",
        "More photos than cells",
        "Grow the grid so every photo has a cell, or keep it and show the best-fitting photos, or every photo in turn.",
        "What a mosaic does with more approved photos than its grid has cells: grow (the default) makes the grid larger so that every photo has a cell, up to the service's output limit; best keeps the grid and takes the photos that fit the picture best; turns keeps the grid and takes the next photos in turn at each mosaic, so that successive mosaics (and the wall) show every photo.";
    screen: Kind::Switch { default: true }, "", "true",
        "Hold doubtful photos for me",
        "A blank frame, the same photo twice or a screenshot waits for you, with the reason, even when photos go in at once.",
        "Photos are screened as they are prepared (true, the default): a blank or near-uniform frame, a near duplicate of a photo the event has (by a perceptual hash) or a screenshot (a PNG of a screen's shape) waits for the owner's approval with the reason, even when approval is off.";
    review: Kind::Switch { default: false }, "", "false",
        "Ask the classifier about each photo",
        "Each photo waits for the service's classifier (a content-safety check) before it shows; its verdict puts it in, holds it for you or leaves it out.",
        "Each prepared photo is offered to the service's classifier on the photoreview queue and waits until its verdict comes back through POST /api/v1/events/{id}/photos/{photo}/verdict: approve puts it in (or lets it wait for the owner's approval, when approval is on), hold keeps it waiting for the owner with the reason, reject leaves it out. Off by default.";
    consent: Kind::Text {
        pattern: "^[^\\u0000-\\u0009\\u000b-\\u001f]{0,500}$",
        default: None,
        example: Some("I agree that my photo may be shown in the mosaic and on the wall."),
        choices: &[],
        required: false,
        max_length: Some(MAX_CONSENT_CHARS),
    }, "", "I agree that my photo may be shown in the mosaic and on the wall.",
        "Consent line",
        "Words each guest agrees to before sending photos, recorded with each photo; empty: none asked.",
        "The owner's consent line (at most 500 characters): the contribute page asks each guest to agree to it, a photo sent without agreeing is refused (consent_required), and the words agreed to are recorded with each photo. Empty (the default): none asked.";
    retention_days: Kind::whole(0, 3_650, Some(30)), "d", "30",
        "Keep the photos after closing (days)",
        "Once the event stops taking photos, its guests' photos go after this many days; the mosaics keep their pixels. 0: at once.",
        "Days the guests' photos, thumbnails and tiles are kept after the event stops taking photos (30 by default, at most 3,650; 0: at the next sweep). Then they go, with the event's library; its mosaics keep their pixels only, without the list of whose photo is in which cell.";
    open: Kind::Switch { default: true }, "", "true",
        "Taking photos",
        "Whether guests may still send photos.",
        "Whether guests may still send photos (true, the default).";
}

/// The setting called `name`.
pub fn event_field(name: &str) -> Option<&'static Field<EventSettings>> {
    EVENT_FIELDS.iter().find(|f| f.name == name)
}

impl Default for EventSettings {
    /// Every setting's declared default.
    fn default() -> Self {
        let mut settings = EventSettings {
            approval: false,
            per_guest: 0,
            open: false,
            auto_after_seconds: 0,
            max_photos: 0,
            screen: false,
            overflow: Overflow::default(),
            review: false,
            consent: String::new(),
            retention_days: 0,
        };
        for field in EVENT_FIELDS {
            if let Some(value) = field.default_value() {
                // Defaults are in range.
                let _ = (field.set)(&mut settings, value);
            }
        }
        settings
    }
}

impl EventSettings {
    /// The settings an event's creation gives (`field(name)`: the field's text, if given), the
    /// others at their defaults.
    pub fn from_fields<'a>(
        field: impl Fn(&str) -> Option<&'a str>,
    ) -> Result<EventSettings, SpecError> {
        let mut settings = EventSettings::default();
        for declared in EVENT_FIELDS {
            let Some(text) = field(declared.name)
                .map(str::trim)
                .filter(|t| !t.is_empty())
            else {
                continue;
            };
            let value = declared.parse(text)?;
            (declared.set)(&mut settings, value)?;
        }
        Ok(settings)
    }

    /// Applies a change of settings (a JSON object of settings by name; one left out, or null,
    /// keeps its value). A name that is no setting, or a value of the wrong kind or out of its
    /// range, is refused and nothing changes.
    pub fn change(
        &self,
        change: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<EventSettings, SpecError> {
        let mut settings = self.clone();
        for (name, json) in change {
            let declared = event_field(name).ok_or_else(|| {
                SpecError::invalid(
                    ErrorCode::UnknownField,
                    format!(
                        "{name} is not a setting of an event: {}",
                        EVENT_FIELDS
                            .iter()
                            .map(|f| f.name)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })?;
            if let Some(value) = declared.from_json(json)? {
                declared.check(&value)?;
                (declared.set)(&mut settings, value)?;
            }
        }
        Ok(settings)
    }

    /// The JSON Schema of a change of settings: each setting as JSON types it, none required.
    pub fn change_schema() -> serde_json::Value {
        let properties: serde_json::Map<String, serde_json::Value> = EVENT_FIELDS
            .iter()
            .map(|f| (f.name.to_string(), f.json_schema()))
            .collect();
        serde_json::json!({
            "type": "object",
            "description": "A change to an event's settings: a setting left out keeps its value.",
            "properties": properties,
            "additionalProperties": false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_take_their_declared_defaults_and_ranges_at_both_doors() {
        let made = EventSettings::from_fields(|_| None).unwrap();
        assert_eq!(
            made,
            EventSettings {
                approval: true,
                per_guest: 20,
                open: true,
                auto_after_seconds: 300,
                max_photos: 5_000,
                screen: true,
                overflow: Overflow::Grow,
                review: false,
                consent: String::new(),
                retention_days: 30,
            }
        );
        let err =
            EventSettings::from_fields(|n| (n == "per_guest").then_some("10001")).unwrap_err();
        assert_eq!(err.to_string(), "per_guest must be 0 to 10000, not 10001");
        let change = |json: serde_json::Value| made.change(json.as_object().unwrap());
        let turns = change(serde_json::json!({"overflow": "turns"})).unwrap();
        assert_eq!(turns.overflow, Overflow::Turns);
        assert!(change(serde_json::json!({"overflow": "rotate"})).is_err());
        assert_eq!(
            change(serde_json::json!({"per_guest": 5.0, "open": false}))
                .unwrap()
                .per_guest,
            5
        );
        for bad in [
            serde_json::json!({"auto_after_seconds": 86_401}),
            serde_json::json!({"max_photos": 0}),
            serde_json::json!({"per_guest": "many"}),
            serde_json::json!({"per_guest": 2.5}),
            serde_json::json!({"colour": "red"}),
        ] {
            assert!(change(bad.clone()).is_err(), "{bad}");
        }
    }
}
