//! Every blob path Tessera writes, in one place, so no path is formatted twice.

use uuid::Uuid;

/// A blob's place in storage. [`BlobKey::path`] gives the `container/name` key of the storage port.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum BlobKey {
    /// The uploaded target of a job.
    ImageInput { job: Uuid },
    /// What one slice needs to render (its rows of the plan).
    SliceInput { job: Uuid, seq: u32 },
    /// One rendered slice.
    SliceOutput { job: Uuid, seq: u32 },
    /// The finished mosaic, a PNG (`imageoutput/<job>.png`; before the extension was added,
    /// `imageoutput/<job>`, which records and messages of that time still name).
    ImageOutput { job: Uuid },
    /// The finished mosaic in the file format the job asked for, when not PNG (`jpg`, `tif`),
    /// made from the PNG.
    ImageFile { job: Uuid, extension: &'static str },
    /// A downscaled JPEG of the finished mosaic, made on first request.
    ImagePreview { job: Uuid },
    /// The seek index of a stitched PNG (at `output`): where inflating can start afresh.
    SeekIndex { output: String },
    /// One tile of a finished mosaic's pyramid (level 0: full resolution), made on request.
    ImageTile {
        job: Uuid,
        level: u32,
        x: u32,
        y: u32,
    },
    /// Which tile went in each cell of a job's mosaic, with names and captions (an engine
    /// `CellMap`), kept as long as the job.
    CellMap { job: Uuid },
    /// A job's record: state, progress, parameters.
    JobRecord { job: Uuid },
    /// A tile library's index at one version.
    LibraryIndex { library: String, version: u32 },
    /// A contact sheet (PNG) of a spread of one library version's tiles, made on first request.
    LibrarySheet { library: String, version: u32 },
    /// A message body too large for its queue, stored aside.
    MessageBody { queue: String, id: Uuid },
    /// An empty marker naming one job of one client (a browser), listed by [`BlobKey::client_jobs_prefix`].
    ClientJob { client: Uuid, job: Uuid },
    /// An empty marker naming a job that has not ended yet, listed by [`BlobKey::ACTIVE_JOBS_PREFIX`].
    ActiveJob { job: Uuid },
    /// A running process's registration: its role and where its health and metrics answer,
    /// listed by [`BlobKey::ROLE_REGISTRATIONS_PREFIX`].
    RoleRegistration { id: Uuid },
    /// A signed-in browser's session, by the SHA-256 (hex) of its token: which key it signed in
    /// with and until when. Sign-out deletes it.
    Session { digest: String },
    /// The last version a deleted library had, so that a new library of its name starts
    /// after it and never takes an old job's version.
    RetiredLibrary { library: String },
    /// A notification a job's end owes (its webhook call), kept until it is delivered.
    OutboxEvent { job: Uuid },
    /// A notification still undelivered when its retry period ended, kept for the operator.
    UndeliveredEvent { job: Uuid },
    /// An event's record: its settings, its mosaics (its photos have records of their own).
    EventRecord { event: Uuid },
    /// One contributed photo's record: its state, guest, colour; written alone.
    EventPhotoRecord { event: Uuid, photo: Uuid },
    /// An empty marker listing a photo on one shelf of its event (`received`, `waiting`,
    /// `approved`, `rejected`), its name the photo's id and, once prepared, its colour
    /// (`{id}.{rrggbb}`): counts, lists and the wish list are read from these names.
    EventShelf {
        event: Uuid,
        shelf: String,
        entry: String,
    },
    /// A guest's claim on one of the photos the event takes from them (the per-guest cap):
    /// made only if absent, so two photos never take one slot; it holds the photo's id.
    EventGuestSlot {
        event: Uuid,
        guest: String,
        slot: u32,
    },
    /// An empty marker filing a prepared photo under one of the four 16-bit bands of its
    /// perceptual hash (`{id}.{hash}`): where the pre-screen finds its near duplicates.
    EventLikeness {
        event: Uuid,
        band: u32,
        bits: u16,
        entry: String,
    },
    /// An empty blob rewritten whenever the photos in an event's mosaics change: its time is
    /// when they last changed.
    EventChanged { event: Uuid },
    /// A contributed photo prepared as a tile of its event's library (a library index of one
    /// tile), made once when the photo is prepared: the event's library versions are edited
    /// from these, never from the photos.
    EventTile { event: Uuid, photo: Uuid },
    /// The photos one mosaic of an event is made of (their ids, a line each), listed by the
    /// web when the mosaic is asked for: the controller makes the event's library from them.
    EventEdition { event: Uuid, job: Uuid },
    /// An event's target photo, as uploaded.
    EventTarget { event: Uuid },
    /// A photo a guest contributed to an event, as sent.
    EventPhoto { event: Uuid, photo: Uuid },
    /// A contributed photo's thumbnail (a PNG square), made once when the photo came in.
    EventThumbnail { event: Uuid, photo: Uuid },
    /// An empty marker naming one event of one owner (by the SHA-256, hex, of the owner), listed
    /// by [`BlobKey::owner_events_prefix`] to count the events an owner keeps.
    OwnerEvent { owner: String, event: Uuid },
    /// A content-addressed part of library indexes (by the SHA-256, hex, of its bytes): an
    /// index is stored as a list of parts, so versions share the parts they have in common.
    LibraryPart { library: String, digest: String },
    /// The manifest of a library version being published, naming the parts it writes before
    /// the version's own blob names them (so that a collection meanwhile keeps them).
    LibraryPending { library: String, id: Uuid },
}

impl BlobKey {
    /// Where versions before the `.png` extension wrote a job's mosaic.
    pub fn unnamed_image_output(job: Uuid) -> String {
        format!("imageoutput/{job}")
    }

    pub fn path(&self) -> String {
        match self {
            BlobKey::ImageInput { job } => format!("imageinput/{job}"),
            BlobKey::SliceInput { job, seq } => format!("sliceinput/{job}/{seq:05}"),
            BlobKey::SliceOutput { job, seq } => format!("sliceoutput/{job}/{seq:05}"),
            BlobKey::ImageOutput { job } => format!("imageoutput/{job}.png"),
            BlobKey::ImageFile { job, extension } => format!("imageoutput/{job}.{extension}"),
            BlobKey::ImagePreview { job } => format!("imagepreview/{job}"),
            BlobKey::SeekIndex { output } => format!("seekindex/{output}"),
            BlobKey::ImageTile { job, level, x, y } => {
                format!("{}{level}/{x}-{y}", Self::image_tiles_prefix(*job))
            }
            BlobKey::CellMap { job } => format!("cellmaps/{job}"),
            BlobKey::JobRecord { job } => format!("{}{job}.json", Self::JOB_RECORDS_PREFIX),
            BlobKey::LibraryIndex { library, version } => {
                format!("{}v{version}/index", Self::library_prefix(library))
            }
            BlobKey::LibrarySheet { library, version } => {
                format!("{}v{version}.png", Self::library_sheets_prefix(library))
            }
            BlobKey::MessageBody { queue, id } => format!("messagebodies/{queue}/{id}"),
            BlobKey::ClientJob { client, job } => format!("clients/{client}/{job}"),
            BlobKey::ActiveJob { job } => format!("{}{job}", Self::ACTIVE_JOBS_PREFIX),
            BlobKey::RoleRegistration { id } => {
                format!("{}{id}.json", Self::ROLE_REGISTRATIONS_PREFIX)
            }
            BlobKey::Session { digest } => format!("{}{digest}.json", Self::SESSIONS_PREFIX),
            BlobKey::RetiredLibrary { library } => format!("retiredlibraries/{library}"),
            BlobKey::OutboxEvent { job } => format!("{}{job}.json", Self::OUTBOX_PREFIX),
            BlobKey::UndeliveredEvent { job } => {
                format!("{}{job}.json", Self::UNDELIVERED_PREFIX)
            }
            BlobKey::EventRecord { event } => format!("events/{event}/event.json"),
            BlobKey::EventTarget { event } => format!("events/{event}/target"),
            BlobKey::EventPhotoRecord { event, photo } => {
                format!("events/{event}/records/{photo}.json")
            }
            BlobKey::EventShelf {
                event,
                shelf,
                entry,
            } => format!("{}{entry}", Self::event_shelf_prefix(*event, shelf)),
            BlobKey::EventGuestSlot { event, guest, slot } => {
                format!("{}{slot:05}", Self::event_guest_prefix(*event, guest))
            }
            BlobKey::EventLikeness {
                event,
                band,
                bits,
                entry,
            } => format!(
                "{}{entry}",
                Self::event_likeness_prefix(*event, *band, *bits)
            ),
            BlobKey::EventChanged { event } => format!("events/{event}/changed"),
            BlobKey::EventTile { event, photo } => format!("events/{event}/tiles/{photo}"),
            BlobKey::EventEdition { event, job } => format!("events/{event}/editions/{job}"),
            BlobKey::EventPhoto { event, photo } => format!("events/{event}/photos/{photo}"),
            BlobKey::EventThumbnail { event, photo } => {
                format!("events/{event}/thumbnails/{photo}.jpg")
            }
            BlobKey::OwnerEvent { owner, event } => {
                format!("{}{event}", Self::owner_events_prefix(owner))
            }
            BlobKey::LibraryPart { library, digest } => {
                format!("{}{digest}", Self::library_parts_prefix(library))
            }
            BlobKey::LibraryPending { library, id } => {
                format!("{}{id}", Self::library_pending_prefix(library))
            }
        }
    }

    /// The prefix under which the markers of one shelf of an event's photos live.
    pub fn event_shelf_prefix(event: Uuid, shelf: &str) -> String {
        format!("events/{event}/index/{shelf}/")
    }

    /// The prefix under which one guest's slots (by the SHA-256, hex, of the guest) live.
    /// The prefix of the photos filed under `bits` in band `band` of their hash.
    pub fn event_likeness_prefix(event: Uuid, band: u32, bits: u16) -> String {
        format!("events/{event}/likeness/{band}/{bits:04x}/")
    }

    pub fn event_guest_prefix(event: Uuid, guest: &str) -> String {
        format!("events/{event}/guests/{guest}/")
    }

    /// The prefix under which the markers of jobs not ended yet live.
    pub const ACTIVE_JOBS_PREFIX: &str = "activejobs/";
    /// The prefix under which browser sessions live.
    pub const SESSIONS_PREFIX: &str = "sessions/";
    /// The prefix under which running processes register.
    pub const ROLE_REGISTRATIONS_PREFIX: &str = "roles/";
    /// The prefix under which notifications owed live.
    pub const OUTBOX_PREFIX: &str = "outbox/";
    /// The prefix under which notifications that could not be delivered are kept.
    pub const UNDELIVERED_PREFIX: &str = "outbox-undelivered/";
    /// The prefix under which job records live.
    pub const JOB_RECORDS_PREFIX: &str = "jobs/";

    /// The job an active marker's key names.
    pub fn active_job_of(key: &str) -> Option<Uuid> {
        key.strip_prefix(Self::ACTIVE_JOBS_PREFIX)?.parse().ok()
    }

    /// The job a record's key names.
    pub fn job_of_record(key: &str) -> Option<Uuid> {
        key.strip_prefix(Self::JOB_RECORDS_PREFIX)?
            .strip_suffix(".json")?
            .parse()
            .ok()
    }

    /// The prefix under which a finished mosaic's zoom tiles live.
    pub fn image_tiles_prefix(job: Uuid) -> String {
        format!("imagetiles/{job}/")
    }

    /// The prefix under which a library's record and indexes live.
    pub fn library_prefix(library: &str) -> String {
        format!("libraries/{library}/")
    }

    /// The prefix under which an owner's event markers live (`owner`: a hex digest).
    pub fn owner_events_prefix(owner: &str) -> String {
        format!("events/owners/{owner}/")
    }

    /// The prefix under which the parts of a library's indexes live.
    pub fn library_parts_prefix(library: &str) -> String {
        format!("{}parts/", Self::library_prefix(library))
    }

    /// The prefix under which the pending manifests of a library's publishes live.
    pub fn library_pending_prefix(library: &str) -> String {
        format!("{}pending/", Self::library_prefix(library))
    }

    /// The prefix under which a library's contact sheets live.
    pub fn library_sheets_prefix(library: &str) -> String {
        format!("librarysheets/{library}/")
    }

    /// The version a key of `library`'s index or contact sheet names (`None` for its record).
    pub fn library_version_of(key: &str, library: &str) -> Option<u32> {
        let rest = key
            .strip_prefix(&Self::library_prefix(library))
            .or_else(|| key.strip_prefix(&Self::library_sheets_prefix(library)))?;
        rest.strip_prefix('v')?
            .split(['/', '.'])
            .next()?
            .parse()
            .ok()
    }

    /// The prefix under which a client's job markers live.
    pub fn client_jobs_prefix(client: Uuid) -> String {
        format!("clients/{client}/")
    }

    /// The prefix under which all of a job's slice inputs (plan rows) live.
    pub fn slice_inputs_prefix(job: Uuid) -> String {
        format!("sliceinput/{job}/")
    }

    /// The prefix under which all of a job's slice outputs live.
    pub fn slice_outputs_prefix(job: Uuid) -> String {
        format!("sliceoutput/{job}/")
    }
}

impl std::fmt::Display for BlobKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.path())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::split_blob_key;

    #[test]
    fn every_key_is_a_valid_storage_key() {
        let job = Uuid::new_v4();
        let keys = [
            BlobKey::ImageInput { job },
            BlobKey::SliceInput { job, seq: 3 },
            BlobKey::SliceOutput { job, seq: 3 },
            BlobKey::ImageOutput { job },
            BlobKey::ImageFile {
                job,
                extension: "tif",
            },
            BlobKey::ImagePreview { job },
            BlobKey::SeekIndex {
                output: BlobKey::ImageOutput { job }.path(),
            },
            BlobKey::ImageTile {
                job,
                level: 2,
                x: 3,
                y: 4,
            },
            BlobKey::CellMap { job },
            BlobKey::JobRecord { job },
            BlobKey::LibraryIndex {
                library: "emoji".into(),
                version: 2,
            },
            BlobKey::LibrarySheet {
                library: "emoji".into(),
                version: 2,
            },
            BlobKey::MessageBody {
                queue: "slicerequest".into(),
                id: job,
            },
            BlobKey::ClientJob {
                client: Uuid::new_v4(),
                job,
            },
            BlobKey::ActiveJob { job },
            BlobKey::RoleRegistration { id: job },
            BlobKey::Session {
                digest: "ab".repeat(32),
            },
            BlobKey::OutboxEvent { job },
            BlobKey::UndeliveredEvent { job },
            BlobKey::RetiredLibrary {
                library: "emoji".into(),
            },
            BlobKey::EventThumbnail {
                event: job,
                photo: job,
            },
            BlobKey::EventPhotoRecord {
                event: job,
                photo: job,
            },
            BlobKey::EventShelf {
                event: job,
                shelf: "approved".into(),
                entry: format!("{job}.a0b1c2"),
            },
            BlobKey::EventGuestSlot {
                event: job,
                guest: "ab".repeat(32),
                slot: 3,
            },
            BlobKey::EventChanged { event: job },
            BlobKey::EventLikeness {
                event: job,
                band: 2,
                bits: 0xa0b1,
                entry: format!("{job}.00ff00ff00ff00ff"),
            },
            BlobKey::EventTile {
                event: job,
                photo: job,
            },
            BlobKey::EventEdition { event: job, job },
            BlobKey::OwnerEvent {
                owner: "ab".repeat(32),
                event: job,
            },
            BlobKey::LibraryPart {
                library: "emoji".into(),
                digest: "cd".repeat(32),
            },
            BlobKey::LibraryPending {
                library: "emoji".into(),
                id: job,
            },
        ];
        for key in keys {
            split_blob_key(&key.path()).unwrap();
        }
    }

    #[test]
    fn the_job_a_key_names_is_read_back() {
        let job = Uuid::new_v4();
        let record = BlobKey::JobRecord { job }.path();
        let marker = BlobKey::ActiveJob { job }.path();
        assert_eq!(BlobKey::job_of_record(&record), Some(job));
        assert_eq!(BlobKey::active_job_of(&marker), Some(job));
        assert_eq!(BlobKey::job_of_record(&marker), None);
        assert_eq!(BlobKey::active_job_of("activejobs/not-a-uuid"), None);
        let index = BlobKey::LibraryIndex {
            library: "emoji".into(),
            version: 7,
        };
        let sheet = BlobKey::LibrarySheet {
            library: "emoji".into(),
            version: 12,
        };
        assert_eq!(BlobKey::library_version_of(&index.path(), "emoji"), Some(7));
        assert_eq!(
            BlobKey::library_version_of(&sheet.path(), "emoji"),
            Some(12)
        );
        assert_eq!(BlobKey::library_version_of(&index.path(), "emo"), None);
        assert_eq!(
            BlobKey::library_version_of("libraries/emoji/library.json", "emoji"),
            None
        );
    }

    #[test]
    fn slice_keys_sort_in_sequence_order() {
        let job = Uuid::new_v4();
        let nine = BlobKey::SliceOutput { job, seq: 9 }.path();
        let ten = BlobKey::SliceOutput { job, seq: 10 }.path();
        assert!(nine < ten);
        assert!(nine.starts_with(&BlobKey::slice_outputs_prefix(job)));
    }
}
