//! The owner's pages through an event's photos: one shelf or every shelf, one guest's or
//! everyone's, newest or oldest first, a page at a time. The shelves are listings of marker
//! names; only the page's own records are read, so a page of an event of 100,000 photos costs
//! what a page of forty does, plus the listing.

use std::collections::HashMap;

use uuid::Uuid;

use super::{EventError, EventPhoto, EventStore, Shelf};
use crate::owner::Owner;

/// Which of an event's photos a page shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PhotoFilter {
    /// One shelf only; none: every shelf.
    pub shelf: Option<Shelf>,
    /// One guest's photos only.
    pub guest: Option<Owner>,
    /// Oldest first; else newest first.
    pub oldest_first: bool,
    /// Photos passed over before the page.
    pub offset: usize,
    /// Photos on the page at most.
    pub limit: usize,
}

/// One page of an event's photos.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhotoPage {
    /// Photos the filter takes, on every page.
    pub total: usize,
    pub photos: Vec<EventPhoto>,
}

impl EventStore {
    /// The page of the event's photos that `filter` asks for. Photos come newest (or oldest)
    /// on their shelf first; one guest's, newest (or oldest) sent first.
    pub async fn browse(&self, event: Uuid, filter: &PhotoFilter) -> Result<PhotoPage, EventError> {
        let on_shelf = |p: &EventPhoto| filter.shelf.is_none_or(|s| Shelf::of(p) == s);
        if let Some(guest) = &filter.guest {
            // A guest holds few photos (their cap): their records are read whole.
            let mut photos = self.photos_of(event, guest).await?;
            photos.retain(on_shelf);
            if !filter.oldest_first {
                photos.reverse();
            }
            let total = photos.len();
            let photos = photos
                .into_iter()
                .skip(filter.offset)
                .take(filter.limit)
                .collect();
            return Ok(PhotoPage { total, photos });
        }
        let shelves = match filter.shelf {
            Some(shelf) => vec![shelf],
            None => Shelf::ALL.to_vec(),
        };
        // A photo moving between shelves is on both for a moment (its new marker is written
        // before the old goes): it counts once, where it came last.
        let mut newest: HashMap<Uuid, time::OffsetDateTime> = HashMap::new();
        for shelf in shelves {
            for listed in self.shelf(event, shelf).await? {
                let since = newest.entry(listed.id).or_insert(listed.since);
                *since = (*since).max(listed.since);
            }
        }
        let mut listed: Vec<(time::OffsetDateTime, Uuid)> =
            newest.into_iter().map(|(id, since)| (since, id)).collect();
        listed.sort();
        if !filter.oldest_first {
            listed.reverse();
        }
        let total = listed.len();
        let page = listed
            .into_iter()
            .skip(filter.offset)
            .take(filter.limit)
            .map(|(_, id)| id);
        let mut photos = self.records_of(event, page).await?;
        photos.retain(on_shelf);
        Ok(PhotoPage { total, photos })
    }
}
