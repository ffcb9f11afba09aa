//! How many photos each event holds, as this process counts them: what an event's cap
//! (`max_photos`) is checked against without listing every photo at each contribution. A
//! count is a listing of the event's shelves; the photos this process takes meanwhile are added
//! to it. It is made again after `RECOUNT` (two seconds) once this process has taken a quarter
//! of the room the last count left, and after `LONGEST` (fifteen seconds) whatever it took: a
//! listing of a hundred thousand names is not made every few seconds while the cap is far.
//! Photos other web processes take are seen at the next count, so the cap may be passed by as
//! many as they take meanwhile.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use uuid::Uuid;

use tessera_shared::events::{EventError, EventStore};

/// How long a count is used at least before the event's shelves are listed again...
const RECOUNT: Duration = Duration::from_secs(2);
/// ... and at most.
const LONGEST: Duration = Duration::from_secs(15);

#[derive(Debug, Default, Clone)]
pub struct EventCounts {
    counts: Arc<Mutex<HashMap<Uuid, Count>>>,
}

#[derive(Debug)]
struct Count {
    listed: usize,
    added: usize,
    at: Instant,
    /// A recount is under way: the others use this count meanwhile.
    recounting: bool,
}

impl EventCounts {
    /// How many photos `event`, which takes `max`, holds, about.
    pub async fn held(
        &self,
        events: &EventStore,
        event: Uuid,
        max: usize,
    ) -> Result<usize, EventError> {
        {
            let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(count) = counts.get_mut(&event) {
                let age = count.at.elapsed();
                let room = max.saturating_sub(count.listed);
                let due = age >= LONGEST || (age >= RECOUNT && count.added * 4 >= room);
                if !due || count.recounting {
                    return Ok(count.listed + count.added);
                }
                count.recounting = true;
            }
        }
        let listed = events.count_photos(event).await;
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        match listed {
            Ok(listed) => {
                counts.insert(
                    event,
                    Count {
                        listed,
                        added: 0,
                        at: Instant::now(),
                        recounting: false,
                    },
                );
                Ok(listed)
            }
            Err(e) => {
                if let Some(count) = counts.get_mut(&event) {
                    count.recounting = false;
                }
                Err(e)
            }
        }
    }

    /// Notes `photos` more photos taken by this process.
    pub fn add(&self, event: Uuid, photos: usize) {
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = counts.get_mut(&event) {
            count.added += photos;
        }
    }

    /// Notes one photo taken out.
    pub fn remove_one(&self, event: Uuid) {
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = counts.get_mut(&event) {
            if count.added > 0 {
                count.added -= 1;
            } else {
                count.listed = count.listed.saturating_sub(1);
            }
        }
    }
}
