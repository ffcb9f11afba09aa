//! Libraries that grow: images added and tiles taken out one change at a time, each a new
//! version, on both storage backends.

use reqwest::StatusCode;
use reqwest::multipart::{Form, Part};
use serde_json::Value;

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_library_grows_and_shrinks_by_versions_on_the_embedded_store() {
    grows_and_shrinks(&spawn_app().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_library_grows_and_shrinks_by_versions_on_azurite() {
    grows_and_shrinks(&spawn_app_on_azurite().await).await;
}

/// A form of the fixture tiles `from..to` as files.
fn files(from: usize, to: usize) -> Form {
    tiles(to)
        .into_iter()
        .skip(from)
        .fold(Form::new(), |form, (name, bytes)| {
            form.part("files", Part::bytes(bytes).file_name(name))
        })
}

fn names(list: &Value) -> Vec<String> {
    list["tiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

fn pick(all: &[String], at: &[usize]) -> Vec<String> {
    at.iter().map(|&i| all[i].clone()).collect()
}

impl TestApp {
    async fn remove_tile(&self, id: &str, name: &str, client: &str) -> reqwest::Response {
        self.client
            .delete(self.url(&format!("/api/v1/libraries/{id}/tiles?name={name}")))
            .header("X-Client-Id", client)
            .send()
            .await
            .unwrap()
    }

    async fn edit_tiles(&self, id: &str, form: Form, client: &str) -> reqwest::Response {
        self.client
            .post(self.url(&format!("/api/v1/libraries/{id}/tiles")))
            .header("X-Client-Id", client)
            .multipart(form)
            .send()
            .await
            .unwrap()
    }

    async fn tile_names(&self, id: &str) -> Vec<String> {
        let res = self.get(&format!("/api/v1/libraries/{id}/tiles")).await;
        assert_eq!(res.status(), StatusCode::OK);
        names(&res.json().await.unwrap())
    }
}

async fn grows_and_shrinks(app: &TestApp) {
    let all: Vec<String> = tiles(12).into_iter().map(|(name, _)| name).collect();
    // A name of its own: Azurite keeps the libraries of earlier runs.
    let id = format!(
        "growing-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let res = app.post_library(files(0, 4).text("name", id.clone())).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    assert_eq!(app.tile_names(&id).await, all[..4]);

    // A job on version 1, then two photos added and one taken out in one change: version 2.
    let job = app
        .submit(
            Form::new()
                .part("image", Part::bytes(astronaut()).file_name("astronaut.png"))
                .text("library", id.clone())
                .text("tile_size", "8")
                .text("cells", "12"),
        )
        .await;
    let res = app
        .edit_tiles(&id, files(4, 6).text("remove", all[1].clone()), &app.owner)
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    let edited: Value = res.json().await.unwrap();
    assert_eq!(edited["library"]["version"], 2, "{edited}");
    assert_eq!(edited["library"]["tiles"], 5);
    assert_eq!(
        (&edited["report"]["added"], &edited["report"]["removed"]),
        (&2.into(), &1.into())
    );
    assert_eq!(app.tile_names(&id).await, pick(&all, &[0, 2, 3, 4, 5]));
    // The job keeps the version it named.
    let done = app.wait_until_finished(&job).await;
    assert_eq!(done["state"], "done", "{done}");
    assert_eq!(done["params"]["library"]["version"], 1, "{done}");
    // Four pictures are too few for the default radius: the job says it used a smaller one.
    let adapted = done["adapted"][0].as_str().unwrap();
    assert!(adapted.contains("only 4 pictures"), "{done}");
    assert_eq!(done["params"]["repeat_radius"], 0, "{done}");

    // Only the owner edits; another's edit and a stranger's removal change nothing.
    let stranger = uuid::Uuid::new_v4().to_string();
    let res = app.edit_tiles(&id, files(6, 7), &stranger).await;
    assert_refused(res, StatusCode::FORBIDDEN, "not_library_owner").await;
    let res = app.remove_tile(&id, &all[0], &stranger).await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);

    // A name the library lacks is refused on its field, and nothing is published.
    let res = app
        .edit_tiles(&id, Form::new().text("remove", "not-there.png"), &app.owner)
        .await;
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["code"], "tile_not_found", "{body}");
    assert_eq!(body["error"]["field"], "remove", "{body}");
    // A copy of a tile under another name is left out, and named with the tile it copies.
    let copy = Form::new().part(
        "files",
        Part::bytes(tiles(1).remove(0).1).file_name("copy.png"),
    );
    let edited: Value = app
        .edit_tiles(&id, copy, &app.owner)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(edited["report"]["duplicates"][0]["kept"], all[0].as_str());
    assert_eq!(edited["library"]["tiles"], 5, "{edited}");

    // One tile out by its name.
    let res = app.remove_tile(&id, &all[0], &app.owner).await;
    assert_eq!(res.status(), StatusCode::OK);
    let edited: Value = res.json().await.unwrap();
    assert_eq!(edited["library"]["tiles"], 4);

    // Edits racing each other all land: each is made again from the version before it.
    let version = edited["library"]["version"].as_u64().unwrap();
    let (a, b, c) = tokio::join!(
        app.edit_tiles(&id, files(6, 7), &app.owner),
        app.edit_tiles(&id, files(7, 8), &app.owner),
        app.edit_tiles(&id, files(8, 9), &app.owner),
    );
    for res in [a, b, c] {
        assert_eq!(res.status(), StatusCode::OK);
    }
    let got: Value = app.get_library(&id).await.json().await.unwrap();
    assert_eq!(got["version"], version + 3, "{got}");
    let held = app.tile_names(&id).await;
    assert_eq!(held, pick(&all, &[2, 3, 4, 5, 6, 7, 8]));

    // Taking out every tile is refused: that is deleting the library.
    let every = held
        .iter()
        .fold(Form::new(), |form, name| form.text("remove", name.clone()));
    let res = app.edit_tiles(&id, every, &app.owner).await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(app.tile_names(&id).await.len(), 7);
}
