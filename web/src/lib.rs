//! Tessera's front end: the browser upload form, the REST API and the job broker that turns an
//! upload into an `ImageRequest` on the `imagerequest` queue and finishes jobs from `imageresponse`.
